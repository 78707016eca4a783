//! Running out of file descriptors: the crawl waits for one, it does not
//! fail.
//!
//! The socket budget normally keeps lesson 2 below the open-file limit. This
//! test takes that safety away: it uses up nearly every descriptor of the
//! process *before* the crawl, then crawls with a budget far above what is
//! left, so that opening sockets fails with "too many open files" (`EMFILE`)
//! and the crawler must put those URLs back in line.
//!
//! The test server must not share the shortage (it needs a descriptor for
//! every connection it accepts), so it runs in a child process: this same
//! test binary, re-run with only the ignored `server_process` "test".

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use shared::fixtures::server::{Site, TestServer};
use shared::log::{Level, Log};
use shared::net::{is_out_of_descriptors, open_files_limit};
use shared::{Config, Lesson};

/// Set in the child's environment: how many linked pages to serve.
const SERVER_PAGES: &str = "LESSON2_DESCRIPTORS_SERVER_PAGES";
/// Descriptors left free for the crawl.
const FREE: usize = 20;
/// Links on the root page: far more than `FREE`.
const PAGES: usize = 300;

#[test]
#[ignore = "not a test: the server process of out_of_descriptors_waits_for_a_free_one"]
fn server_process() {
    let Some(pages) = std::env::var(SERVER_PAGES)
        .ok()
        .and_then(|n| n.parse().ok())
    else {
        return;
    };
    let links: String = (0..pages)
        .map(|i| format!("<a href=\"/page/{i}\">{i}</a>\n"))
        .collect();
    let mut site = Site::new().page("/", links);
    for i in 0..pages {
        site = site.page(&format!("/page/{i}"), "a page");
    }
    let server = TestServer::start(site);
    println!("SERVER {}", server.url("/"));
    std::io::stdout().flush().unwrap();
    // Serve until the parent closes our stdin (or dies).
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

#[test]
fn out_of_descriptors_waits_for_a_free_one() {
    match open_files_limit() {
        Some(limit) if limit <= 1 << 20 => {}
        other => {
            eprintln!("skipped: open-file limit {other:?} is too large to use up");
            return;
        }
    }
    let mut server = Command::new(std::env::current_exe().unwrap())
        .args(["server_process", "--exact", "--ignored", "--nocapture"])
        .env(SERVER_PAGES, PAGES.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the server process");
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let root = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("SERVER ").map(str::to_string))
        .expect("the server process prints its URL");
    // Keep reading what the child prints, so it never writes to a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));

    // Use up every descriptor, then give back a few.
    let mut hog = Vec::new();
    loop {
        match File::open("/dev/null") {
            Ok(file) => hog.push(file),
            Err(err) if is_out_of_descriptors(&err) => break,
            Err(err) => panic!("open /dev/null: {err}"),
        }
    }
    hog.truncate(hog.len() - FREE);

    let mut config = Config::new(Lesson::Two, [root.clone()]);
    config.log = Log::capture(Level::Debug);
    config.timeout = Duration::from_secs(30);
    let report = lesson2_callbacks::crawl_with_budget(&config, 1000);
    drop(hog);
    drop(server.stdin.take());
    let _ = server.wait();

    let report = report.unwrap();
    assert_eq!(report.stats.len(), PAGES + 1, "{}", report.render());
    assert!(
        report.stats.iter().all(|s| s.status == Some(200)),
        "{}",
        report.render()
    );
    assert_eq!(report.todo, 0);
    // One of the free descriptors is the event loop's own.
    assert!(report.peak_in_flight < FREE, "{}", report.peak_in_flight);
    let lines = config.log.lines();
    assert!(
        lines.iter().any(|l| l.ends_with("out of file descriptors")),
        "no URL had to wait for a descriptor"
    );
}

/// A fetch for every link at once, far more than a process allowed 64 open files can hold sockets for: the crawl
/// waits for descriptors, completes, and fails no URL.
#[test]
fn slow_site_under_ulimit_64() {
    shared::behaviour::slow_site_under_fd_limit(env!("CARGO_BIN_EXE_lesson2"), &[], 64);
}

/// `--demo` under the same limit: the demo server shares the process's
/// descriptors, and the crawl leaves it its half.
#[test]
fn demo_under_ulimit_64() {
    shared::behaviour::demo_under_fd_limit(env!("CARGO_BIN_EXE_lesson2"), &[], 64);
}
