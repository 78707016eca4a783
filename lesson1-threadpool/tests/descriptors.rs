//! Descriptors: a crawl never fails or stalls for want of file descriptors.
//!
//! - `slow_site_under_ulimit_64` and `demo_under_ulimit_64` run the
//!   `lesson1` program with `--threads 100` in a shell limited to 64 open files: the
//!   socket budget keeps it under the limit, and fetches wait their turn.
//! - `out_of_descriptors_waits_for_a_free_one` takes the budget's safety
//!   away: the test uses up nearly every descriptor of its own process, then
//!   crawls with a budget far above what is left, so that making a socket
//!   fails with "too many open files" (`EMFILE`) and the crawl must wait for
//!   one of its own sockets to close.
//! - `no_descriptor_and_nothing_in_flight_is_a_connect_error` (this file):
//!   with no descriptor at all and no other fetch in flight, none will be
//!   freed, so the fetch gives up instead of waiting for ever.
//!
//! The other checks live in `shared::behaviour`.

shared::descriptor_suite!(
    shared::Lesson::One,
    lesson1_threadpool::crawl_with_budget,
    env!("CARGO_BIN_EXE_lesson1"),
    ["--threads", "100"]
);

/// Set in the child process `no_descriptor_and_nothing_in_flight_is_a_connect_error`
/// starts (this test binary again, under a low `ulimit -n`).
const NO_FD_CHILD: &str = "LESSON1_CRAWL_NO_FD_CHILD";

/// One thread, every descriptor in use: the root's socket cannot be made,
/// and no other fetch is in flight to free one, so `Crawler::get` returns a
/// `connect` error, `too many open files`, instead of waiting. It runs in a
/// child process under `ulimit -n 64`, because using up the descriptors
/// would fail every other test of this process meanwhile.
#[test]
fn no_descriptor_and_nothing_in_flight_is_a_connect_error() {
    use shared::fixtures::server::{Site, TestServer};
    use shared::log::{Level, Log};
    use std::time::Duration;

    if std::env::var_os(NO_FD_CHILD).is_some() {
        let server = TestServer::start(Site::new().page("/", "no links"));
        let root = server.url("/");
        let mut config = shared::Config::new(shared::Lesson::One, [root.clone()]);
        config.log = Log::capture(Level::Debug);
        config.threads = 1;
        config.obey_robots = false;
        config.timeout = Duration::from_secs(5);
        // Use up every descriptor left (at most the 64 of the limit).
        let mut held = Vec::new();
        while let Ok(file) = std::fs::File::open("/dev/null") {
            held.push(file);
            assert!(held.len() < 1_000, "ulimit -n 64 did not limit the files");
        }
        let report = lesson1_threadpool::crawl(&config);
        drop(held);
        let report =
            report.expect("the crawl must return its report, even when descriptors run short");
        let error = report
            .get(&root)
            .and_then(|s| s.error.clone())
            .unwrap_or_else(|| panic!("{root} is not a failed URL in:\n{}", report.render()));
        assert_eq!(
            (error.kind, error.message.as_str()),
            (shared::FailKind::Connect, "too many open files"),
            "the root's error with no descriptor left and no other fetch in flight: \
             `Crawler::get` gives up with a `connect` error, `too many open files`, when \
             the guard's `out_of_descriptors()` says no other fetch will free one"
        );
        return;
    }
    // One URL, answered at once: done in well under a second, so a child
    // still running after 20 s waits for a descriptor no fetch will free.
    shared::behaviour::rerun_test_under_limit_within(
        "no_descriptor_and_nothing_in_flight_is_a_connect_error",
        NO_FD_CHILD,
        64,
        "a one-thread crawl with no descriptor left, where `Crawler::get` must return a \
         `connect` error, `too many open files`, instead of waiting for a descriptor no \
         fetch will free",
        std::time::Duration::from_secs(20),
    );
}
