//! The exercises at the end of the lesson 1 chapter, one test each.
//!
//! Each test is `#[ignore]`d because it fails on the lesson's code as
//! written: it describes a feature the lesson does not have yet. Do the
//! exercise, then switch its test on:
//!
//! ```text
//! cargo test -p lesson1-threadpool --test exercises -- --ignored exercise_per_host_limit
//! ```

use std::time::Duration;

use lesson1_threadpool::crawl;
use shared::fixtures::server::{Route, Site, TestServer};
use shared::log::{Level, Log};
use shared::{Config, Lesson};

fn config(server: &TestServer, threads: usize) -> Config {
    let mut config = Config::new(Lesson::One, [server.url("/")]);
    config.log = Log::capture(Level::Info);
    config.threads = threads;
    config.timeout = Duration::from_secs(10);
    config
}

/// Exercise 1: at most four fetches to one host at a time, however many
/// threads there are. Ten threads crawl twenty slow pages of one server:
/// the server must never see more than four requests at once, must see
/// four (the limit is a limit, not one fetch at a time), and every page
/// must still be fetched.
#[test]
#[ignore = "exercise: limit fetches to one host to 4 at a time"]
fn exercise_per_host_limit() {
    let links: String = (0..20)
        .map(|i| format!(r#"<a href="/slow/{i}">{i}</a> "#))
        .collect();
    let site = (0..20).fold(Site::new().page("/", links), |site, i| {
        site.route(
            &format!("/slow/{i}"),
            Route::html("slow").delay(Duration::from_millis(300)),
        )
    });
    let server = TestServer::start(site);
    let report = crawl(&config(&server, 10)).unwrap();
    assert_eq!(report.urls().len(), 21, "every page is still fetched");
    assert_eq!(
        server.peak_in_flight(),
        4,
        "the server saw this many requests from one host at once"
    );
}

/// Exercise 2: retry a fetch that failed on the network (connection
/// refused or reset, timeout) up to `--max-tries` times in all, as
/// lesson 4 does. `/flaky` drops its first two connections and answers the
/// third; `/dead` never answers.
#[test]
#[ignore = "exercise: retry network errors up to --max-tries times"]
fn exercise_retry_network_errors() {
    shared::behaviour::exercise_retry_network_errors(Lesson::One, crawl);
}
