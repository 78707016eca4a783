//! Lesson 1's own tests: what the thread pool promises beyond the behaviour
//! suite — `--threads` bounds the fetches in flight (and is reached), a
//! stuck server costs one thread one timeout and no more, and the lock
//! around the seen-set lets every URL in exactly once however many threads
//! find it at the same moment.

use std::time::{Duration, Instant};

use lesson1_threadpool::crawl;
use shared::fixtures::server::{Route, Site, TestServer};
use shared::fixtures::sitegen::{generate, SiteSpec};
use shared::log::{Level, Log};
use shared::{Config, FailKind, Lesson};

fn config(server: &TestServer, threads: usize) -> Config {
    let mut config = Config::new(Lesson::One, [server.url("/")]);
    config.log = Log::capture(Level::Info);
    config.threads = threads;
    config.timeout = Duration::from_secs(10);
    config
}

/// A home page linking to `n` pages that each answer after `delay`.
fn slow_site(n: usize, delay: Duration) -> Site {
    let links: String = (0..n)
        .map(|i| format!(r#"<a href="/slow/{i}">{i}</a> "#))
        .collect();
    (0..n).fold(Site::new().page("/", links), |site, i| {
        site.route(&format!("/slow/{i}"), Route::html("slow").delay(delay))
    })
}

#[test]
fn three_threads_keep_exactly_three_requests_in_flight() {
    let server = TestServer::start(slow_site(9, Duration::from_millis(300)));
    let report = crawl(&config(&server, 3)).expect("the crawl must run to its report");
    assert_eq!(
        report.stats.len(),
        10,
        "URLs reported: / and its nine slow pages\n{}",
        report.render()
    );
    assert_eq!(
        server.peak_in_flight(),
        3,
        "the most requests the server had in flight at once with --threads 3 and nine \
         300 ms pages: one per thread, and every thread busy"
    );
    assert_eq!(
        report.peak_in_flight, 3,
        "achieved concurrency, the crawler's own count of fetches in flight at once: \
         --threads 3"
    );
    assert_eq!(
        report.max_tasks, 3,
        "M on the Finished line (`max_tasks=M`) is --threads in lesson 1"
    );
}

#[test]
fn one_thread_fetches_one_url_at_a_time() {
    let server = TestServer::start(slow_site(3, Duration::from_millis(50)));
    let report = crawl(&config(&server, 1)).expect("the crawl must run to its report");
    assert_eq!(
        report.stats.len(),
        4,
        "URLs reported: / and its three slow pages\n{}",
        report.render()
    );
    assert_eq!(
        server.peak_in_flight(),
        1,
        "the most requests the server had in flight at once with --threads 1"
    );
    assert_eq!(
        report.peak_in_flight, 1,
        "achieved concurrency with --threads 1: one fetch at a time"
    );
}

#[test]
fn a_stuck_server_ends_as_a_timeout_line_promptly() {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/stuck">s</a> <a href="/ok">ok</a>"#)
            .route("/stuck", Route::stall())
            .page("/ok", "fine"),
    );
    let mut config = config(&server, 4);
    config.timeout = Duration::from_secs(1);
    let started = Instant::now();
    let report = crawl(&config).expect("the crawl must run to its report");
    let took = started.elapsed();
    let stuck = server.url("/stuck");
    let error = report
        .get(&stuck)
        .and_then(|s| s.error.clone())
        .unwrap_or_else(|| panic!("{stuck} is not a failed URL in:\n{}", report.render()));
    assert_eq!(
        error.kind,
        FailKind::Timeout,
        "{stuck}: the server accepts and never answers; --timeout 1 ends it as `timeout`"
    );
    let lines = config.log.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("{stuck} error "))),
        "no log line beginning `{stuck} error `: a failed URL's report line is logged \
         when it finishes; lines were: {lines:#?}"
    );
    assert_eq!(
        report
            .get(&server.url("/ok"))
            .expect("/ok is in the report: every URL reached is reported")
            .status,
        Some(200),
        "/ok: fetched by another thread while one waits on /stuck"
    );
    // Generous: the deadline is 1 s; a hang or a per-read timeout that keeps
    // being renewed would take far longer.
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn a_server_that_drips_its_answer_ends_as_a_timeout_by_the_deadline() {
    // A byte every 50 ms: each read returns long before any per-read
    // timeout would fire; only the deadline for the whole fetch ends it.
    let server = TestServer::start(Site::new().page("/", r#"<a href="/drip">d</a>"#).route(
        "/drip",
        Route::html("x".repeat(10_000)).drip(Duration::from_millis(50)),
    ));
    let mut config = config(&server, 2);
    config.timeout = Duration::from_secs(1);
    let started = Instant::now();
    let report = crawl(&config).expect("the crawl must run to its report");
    let took = started.elapsed();
    let drip = report
        .get(&server.url("/drip"))
        .expect("/drip is in the report: every URL reached is reported");
    assert_eq!(
        drip.error.as_ref().map(|e| e.kind),
        Some(FailKind::Timeout),
        "/drip sends a byte every 50 ms: only a deadline for the whole fetch (--timeout 1), \
         not a per-read timeout, ends it as `timeout`"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn a_generated_site_gives_exactly_the_expected_urls() {
    let site = generate(&SiteSpec::new(200));
    let server = TestServer::start(site.to_site());
    let report = crawl(&config(&server, 6)).expect("the crawl must run to its report");
    let expected = site.expected_urls(&server.url(""));
    assert_eq!(
        report.urls(),
        expected,
        "the URLs reported: those the site generator says a correct crawl reports{}",
        shared::behaviour::url_diff(&report.urls(), &expected)
    );
    assert_eq!(
        report.todo, 0,
        "Todo: URLs seen but never fetched; none after a complete crawl"
    );
}

/// Eight hub pages, fetched at the same moment by eight threads, all link
/// to the same hundred leaves: the threads add the same links to the
/// seen-set at about the same moments. The lock must still let each URL in
/// once — fetched once, reported once, counted NEW on one page only. (The
/// race itself is hammered harder, without a network, by the unit test
/// `crawler::tests::each_url_is_new_to_exactly_one_thread`.)
#[test]
fn every_url_enters_the_seen_set_exactly_once() {
    const HUBS: usize = 8;
    const LEAVES: usize = 100;
    let hub_links: String = (0..HUBS)
        .map(|i| format!(r#"<a href="/hub/{i}">{i}</a> "#))
        .collect();
    let leaf_links: String = (0..LEAVES)
        .map(|i| format!(r#"<a href="/leaf/{i}">{i}</a> "#))
        .collect();
    let mut site = Site::new().page("/", hub_links);
    for i in 0..HUBS {
        // The delay lines the hubs' answers up: all eight requests arrive
        // within a moment of each other, and are answered together.
        let hub = Route::html(leaf_links.clone()).delay(Duration::from_millis(100));
        site = site.route(&format!("/hub/{i}"), hub);
    }
    for i in 0..LEAVES {
        site = site.page(&format!("/leaf/{i}"), "leaf");
    }
    let server = TestServer::start(site);
    let report = crawl(&config(&server, HUBS)).expect("the crawl must run to its report");
    assert_eq!(
        report.stats.len(),
        1 + HUBS + LEAVES,
        "report lines: the root, {HUBS} hubs and {LEAVES} leaves, one line each"
    );
    assert_eq!(
        report.urls().len(),
        report.stats.len(),
        "distinct URLs reported vs report lines: a URL reported twice"
    );
    for i in 0..LEAVES {
        assert_eq!(
            server.request_count(&format!("/leaf/{i}")),
            1,
            "requests for /leaf/{i}, linked from all {HUBS} hubs at once: one (checking the \
             seen-set and inserting must be one locked step)"
        );
    }
    // The root entered as a root; every other URL as a NEW link of one page.
    let new_links: usize = report.stats.iter().map(|s| s.num_new_urls).sum();
    assert_eq!(
        new_links + 1,
        report.stats.len(),
        "NEW summed over every line, plus the root: each URL is NEW on exactly one \
         page's line"
    );
}

#[test]
fn a_thread_count_the_system_cannot_give_is_an_error_not_an_abort() {
    let server = TestServer::start(Site::new().page("/", "home"));
    for threads in [0, lesson1_threadpool::MAX_THREADS + 1] {
        let err = crawl(&config(&server, threads)).expect_err("it must be an error: a thread count the system cannot give is an error not an abort").to_string();
        assert!(
            err.contains("--threads must be between"),
            "--threads {threads}: the error must say `--threads must be between ...`; it was \
             {err:?}"
        );
    }
    assert_eq!(
        server.requests_total(),
        0,
        "requests made with an impossible --threads: none, it is refused before crawling"
    );
}

/// The status line's drawing whose counts begin `done {done} ·`, from a
/// log made with `with_status_line` (each drawing is captured as a line
/// beginning with `\r`).
fn drawing_with_done(log: &Log, done: usize) -> String {
    let lines = log.lines();
    lines
        .iter()
        .find(|line| line.starts_with(&format!("\rdone {done} · ")))
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no status line drawn with `done {done}` (each URL's line redraws it); \
                 drawings: {lines:?}"
            )
        })
}

/// `queued` on the status line counts the URLs waiting, not those in
/// flight: when one of two pages is done and the other is still being
/// fetched, nothing is queued.
#[test]
fn the_status_line_does_not_count_a_fetch_in_flight_as_queued() {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/fast">f</a> <a href="/slow">s</a>"#)
            .route(
                "/fast",
                Route::html("fast").delay(Duration::from_millis(300)),
            )
            .route(
                "/slow",
                Route::html("slow").delay(Duration::from_millis(1_500)),
            ),
    );
    let mut config = config(&server, 2);
    config.log = Log::capture(Level::Info).with_status_line();
    let report = crawl(&config).expect("the crawl must run to its report");
    assert_eq!(
        report.stats.len(),
        3,
        "URLs reported: /, /fast and /slow\n{}",
        report.render()
    );
    let drawing = drawing_with_done(&config.log, 2);
    assert!(
        drawing.starts_with("\rdone 2 · in flight 1 · queued 0 · "),
        "the status line drawn when /fast's line is recorded (/ and /fast done, /slow \
         still in flight for over a second): expected `done 2 · in flight 1 · queued 0`, \
         queued being the URLs seen less those done, in flight and left by --max-pages; \
         drew {drawing:?}"
    );
}

/// `queued` on the status line leaves out the URLs `--max-pages` refused:
/// they will never be fetched.
#[test]
fn the_status_line_does_not_count_urls_over_max_pages_as_queued() {
    // A second for the one page fetched: time enough, on a busy machine,
    // for the other thread to find the two others over the limit first.
    let server = TestServer::start(slow_site(3, Duration::from_secs(1)));
    let mut config = config(&server, 2);
    config.max_pages = Some(2);
    config.log = Log::capture(Level::Info).with_status_line();
    let report = crawl(&config).expect("the crawl must run to its report");
    assert_eq!(
        report.stats.len(),
        2,
        "URLs reported with --max-pages 2: / and one slow page\n{}",
        report.render()
    );
    let drawing = drawing_with_done(&config.log, 2);
    assert!(
        drawing.starts_with("\rdone 2 · in flight 0 · queued 0 · "),
        "the status line drawn when the one slow page --max-pages 2 allows is recorded \
         (the other thread found the two others over the limit meanwhile): expected \
         `done 2 · in flight 0 · queued 0`, queued leaving out the URLs --max-pages left \
         (`turns.over_limit()`); drew {drawing:?}"
    );
}
