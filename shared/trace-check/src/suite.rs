//! The trace suite: what every lesson's `--trace` must show, checked on
//! crawls of scripted sites. A lesson's `tests/trace.rs` is one line:
//!
//! ```ignore
//! trace_check::trace_suite!(shared::Lesson::One, lesson1_threadpool::crawl);
//! ```
//!
//! | case | what it checks |
//! |---|---|
//! | [`one_slice_per_fetch`] | a valid trace; one fetch slice per report line, ending as the report says; phases in order inside their fetch |
//! | [`every_fetch_failed`] | a crawl that reached no server still leaves a complete trace |
//! | [`lanes_show_the_model`] | lesson 1: exactly `--threads` lanes; lessons 2–3: as many lanes as fetches were in flight at once; lesson 4: at most `--max-tasks`, and reused connections without a connect phase |
//! | [`loop_turns`] | lessons 2–4: the loop's turns on a lane of their own |
//! | [`one_slice_per_attempt`] | lesson 4: a retried URL has a slice per attempt |

use std::collections::BTreeMap;
use std::time::Duration;

use shared::behaviour::{config_for, crawl_within_deadline};
use shared::fixtures::server::{Route, Site, TestServer};
use shared::trace::Trace;
use shared::{Config, CrawlReport, Lesson};

use crate::TraceFile;

/// Crawl with `config` and the trace on; the report and the trace read back.
pub fn traced_crawl(
    lesson: Lesson,
    crawl: shared::CrawlFn,
    mut config: Config,
) -> (CrawlReport, TraceFile) {
    config.trace = Trace::capture(&format!("{}: traced", lesson.bin_name()));
    let report = crawl_within_deadline(crawl, &config);
    config
        .trace
        .finish()
        .expect("a trace in memory cannot fail to write");
    let text = config.trace.captured().expect("a captured trace");
    let trace =
        TraceFile::parse(&text).unwrap_or_else(|e| panic!("the trace is not valid: {e:#}\n{text}"));
    let problems = trace.problems();
    assert!(problems.is_empty(), "the trace is malformed: {problems:#?}");
    (report, trace)
}

/// A small site with pages, a 404 and a redirect.
fn small_site() -> Site {
    Site::new()
        .page(
            "/",
            r#"<a href="/a">a</a> <a href="/b">b</a> <a href="/gone">gone</a>"#,
        )
        .page("/a", r#"<a href="/b">b</a> <a href="/moved">moved</a>"#)
        .page("/b", r#"<a href="/">home</a>"#)
        .page("/c", "the end")
        .route("/moved", Route::redirect(302, "/c"))
        .route("/gone", Route::not_found())
}

/// One fetch slice per line of the report (no fetch needs a retry here),
/// each ending as its line says, with its phases in order inside it.
pub fn one_slice_per_fetch(lesson: Lesson, crawl: shared::CrawlFn) {
    let server = TestServer::start(small_site());
    let (report, trace) = traced_crawl(lesson, crawl, config_for(lesson, &server, "/"));
    let fetches: Vec<_> = trace.fetches().collect();
    assert_eq!(
        fetches.len(),
        report.stats.len(),
        "one fetch slice per report line"
    );
    let by_url: BTreeMap<&str, _> = fetches.iter().map(|f| (f.name.as_str(), *f)).collect();
    for stat in &report.stats {
        let fetch = by_url
            .get(stat.url.as_str())
            .unwrap_or_else(|| panic!("no slice for {}", stat.url));
        assert_eq!(
            fetch.arg_u64("status"),
            stat.status.map(u64::from),
            "{}",
            stat.url
        );
        let phases: Vec<&str> = trace
            .phases_of(fetch)
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        // Lesson 4 reuses connections: no resolve or connect then.
        let expected: &[&str] = match phases.first() {
            Some(&"send") => &["send", "wait", "read", "links"],
            _ => &["resolve", "connect", "send", "wait", "read", "links"],
        };
        assert_eq!(phases, expected, "the phases of {}", stat.url);
    }
}

/// A crawl whose only fetch fails still writes a complete trace, with the
/// failure's kind on the fetch.
pub fn every_fetch_failed(lesson: Lesson, crawl: shared::CrawlFn) {
    // Port 0, where nothing ever listens: a port closed a moment ago may be
    // handed to another test's server meanwhile (it was, under a loaded CI).
    let refused = shared::fixtures::server::refused_addr();
    let mut config = Config::new(lesson, [format!("http://{refused}/")]);
    config.log = shared::log::Log::capture(shared::log::Level::Debug);
    config.max_tries = 1;
    let (report, trace) = traced_crawl(lesson, crawl, config);
    assert_eq!(report.stats.len(), 1);
    let fetches: Vec<_> = trace.fetches().collect();
    assert_eq!(fetches.len(), 1, "one fetch slice");
    assert_eq!(fetches[0].arg_str("error"), Some("connect"));
}

/// A site of `n` pages linked from the root, each answering after `delay`.
fn slow_site(n: usize, delay: Duration) -> Site {
    let links: String = (0..n)
        .map(|i| format!(r#"<a href="/p{i}">{i}</a> "#))
        .collect();
    let mut site = Site::new().page("/", links);
    for i in 0..n {
        site = site.route(&format!("/p{i}"), Route::html("a page").delay(delay));
    }
    site
}

/// The lanes show the model: lesson 1 a lane per thread, lessons 2 and 3 a
/// lane per fetch in flight, lesson 4 a lane per worker (and a reused
/// connection skips the connect phase).
pub fn lanes_show_the_model(lesson: Lesson, crawl: shared::CrawlFn) {
    let server = TestServer::start(slow_site(12, Duration::from_millis(50)));
    let mut config = config_for(lesson, &server, "/");
    config.threads = 3;
    config.max_tasks = 3;
    let (report, trace) = traced_crawl(lesson, crawl, config);
    let lanes = trace.fetch_lanes();
    match lesson {
        Lesson::One => assert_eq!(lanes.len(), 3, "one lane per thread: {lanes:?}"),
        Lesson::Two | Lesson::Three => {
            // A fetch holds its lane until its links are queued, so the
            // page that named them is still open as they start: one more
            // than the report's peak, which counts sockets.
            let open = trace.counter_max("fetches in flight").unwrap_or(0.0) as usize;
            assert_eq!(lanes.len(), open, "a lane per fetch open at once");
            assert!(lanes.len() >= report.peak_in_flight);
            assert!(lanes.len() > 3, "every link at once: {lanes:?}");
        }
        Lesson::Four => {
            assert_eq!(lanes.len(), 3, "one lane per worker: {lanes:?}");
            let reused: Vec<_> = trace
                .fetches()
                .filter(|f| f.args.get("reused") == Some(&serde_json::Value::Bool(true)))
                .collect();
            assert!(!reused.is_empty(), "some fetch reuses a connection");
            for fetch in reused {
                assert!(fetch.arg_u64("connection").is_some());
                let phases = trace.phases_of(fetch);
                assert!(
                    phases.iter().all(|p| p.name != "connect"),
                    "a reused connection is not connected again: {}",
                    fetch.name
                );
            }
        }
    }
    for lane in &lanes {
        assert!(trace.lanes.contains_key(lane));
    }
    let in_flight = trace.counter_max("fetches in flight").unwrap_or(0.0);
    assert!(in_flight >= 1.0 && in_flight as usize <= lanes.len());
}

/// Lessons 2–4: the loop's turns are on a lane of their own, and the
/// loop spends its time in `poll`, waiting for the slow server.
pub fn loop_turns(lesson: Lesson, crawl: shared::CrawlFn) {
    let server = TestServer::start(slow_site(4, Duration::from_millis(100)));
    let (_, trace) = traced_crawl(lesson, crawl, config_for(lesson, &server, "/"));
    let turns: Vec<_> = trace.turns().collect();
    if lesson == Lesson::One {
        assert!(turns.is_empty(), "lesson 1 has no event loop");
        return;
    }
    assert!(!turns.is_empty(), "the loop's turns are traced");
    let lane = turns[0].tid;
    assert_eq!(
        trace.lanes.get(&lane).map(String::as_str),
        Some("event loop")
    );
    assert!(
        !trace.fetch_lanes().contains(&lane),
        "the loop has a lane of its own"
    );
    let polled = trace.time_in_poll();
    let turned: f64 = turns.iter().map(|t| t.dur).sum();
    assert!(
        polled > turned / 2.0,
        "waiting on a slow server, the loop is mostly in poll ({polled} of {turned} µs)"
    );
}

/// Lesson 4: a URL that fails and is tried again has a slice per attempt,
/// each failed one ending in its error, all on the worker's lane.
pub fn one_slice_per_attempt(lesson: Lesson, crawl: shared::CrawlFn) {
    if lesson != Lesson::Four {
        return;
    }
    // Two requests dropped: if the first went out on the root's pooled
    // connection, the fetch takes the drop for a stale connection and
    // resends at once (no new attempt), so the second drop is what fails
    // attempt 1. On a fresh connection the first drop already does.
    let site = Site::new()
        .page("/", r#"<a href="/flaky">flaky</a>"#)
        .route("/flaky", Route::html("at last").drop_first(2));
    let server = TestServer::start(site);
    let mut config = config_for(lesson, &server, "/");
    config.max_tries = 4;
    let (report, trace) = traced_crawl(lesson, crawl, config);
    let flaky = server.url("/flaky");
    assert_eq!(report.stats.len(), 2);
    let attempts: Vec<_> = trace.fetches().filter(|f| f.name == flaky).collect();
    assert!(attempts.len() >= 2, "one slice per attempt: {attempts:#?}");
    let (last, failed) = attempts.split_last().expect("attempts");
    for (n, attempt) in failed.iter().enumerate() {
        assert_eq!(attempt.arg_u64("attempt"), Some(n as u64 + 1));
        assert!(attempt.arg_str("error").is_some(), "{attempt:?}");
        assert_eq!(attempt.tid, last.tid, "every attempt on the worker's lane");
    }
    assert_eq!(last.arg_u64("attempt"), Some(attempts.len() as u64));
    assert_eq!(last.arg_u64("status"), Some(200));
}

/// Expands to the trace suite for a lesson, one `#[test]` per case.
#[macro_export]
macro_rules! trace_suite {
    ($lesson:expr, $crawl:path) => {
        $crate::trace_suite!(@cases $lesson, $crawl;
            one_slice_per_fetch, every_fetch_failed, lanes_show_the_model,
            loop_turns, one_slice_per_attempt);
    };
    (@cases $lesson:expr, $crawl:path; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::suite::$case($lesson, $crawl);
            }
        )*
    };
}
