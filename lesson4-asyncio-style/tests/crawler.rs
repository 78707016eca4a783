//! Lesson 4's crawler, after the original 500-lines crawler's `test.py`:
//! redirects through the queue (chains, the limit, cycles, chains that
//! meet), the number of workers, retries, encodings, content types, links
//! that are not followed — and what only this lesson has, keep-alive.
//!
//! Every test runs the crawler against an in-process scripted server on
//! `127.0.0.1:0` and asserts on URL-keyed results and log lines.

use std::collections::BTreeSet;
use std::time::Duration;

use lesson4_asyncio_style::crawl;
use lesson4_asyncio_style::crawler::Crawler;
use shared::fixtures::server::{Route, Site, TestServer};
use shared::fixtures::sitegen::{generate, SiteSpec};
use shared::log::{Level, Log};
use shared::{Config, CrawlReport, FailKind, FetchStatistic, Lesson};

/// A configuration crawling `server` from `path`, logging into a capture.
fn config(server: &TestServer, path: &str) -> Config {
    let mut config = Config::new(Lesson::Four, [server.url(path)]);
    config.log = Log::capture(Level::Debug);
    config.timeout = Duration::from_secs(10);
    config
}

fn run(config: &Config) -> CrawlReport {
    let report = crawl(config).expect("the crawl must return its report for a root that answers");
    assert_eq!(
        report.todo, 0,
        "Todo: URLs seen but not fetched once the crawl ended (queue items never marked done)"
    );
    assert!(
        !report.stats.is_empty(),
        "the crawl ended with nothing left to do and not one URL in its report, not even \
         the root: its item was marked done before the root was finished, so `join` \
         returned while the root waited for its turn (robots.txt). An item is marked done \
         after its URL is finished or queued again: in `wait_for_turn`, `put_nowait` \
         first, then `task_done`"
    );
    assert_eq!(
        report.urls().len(),
        report.stats.len(),
        "distinct URLs in the report against its lines: a URL was reported twice"
    );
    report
}

fn stat<'a>(report: &'a CrawlReport, url: &str) -> &'a FetchStatistic {
    report
        .get(url)
        .unwrap_or_else(|| panic!("{url} not in report:\n{}", report.render()))
}

fn urls(server: &TestServer, paths: &[&str]) -> BTreeSet<String> {
    paths.iter().map(|p| server.url(p)).collect()
}

fn has_line(config: &Config, line: &str) -> bool {
    config.log.lines().iter().any(|l| l == line)
}

#[test]
fn redirect_chain_is_followed_through_the_queue() {
    let server = TestServer::start(
        Site::new()
            .route("/", Route::redirect(301, "/a"))
            .route("/a", Route::redirect(302, "/b"))
            .route("/b", Route::redirect(307, "/page"))
            .page("/page", "the end of the chain"),
    );
    let config = config(&server, "/");
    let report = run(&config);
    assert_eq!(
        report.urls(),
        urls(&server, &["/", "/a", "/b", "/page"]),
        "URLs reported: every hop of the chain, each fetched through the queue"
    );
    assert_eq!(
        stat(&report, &server.url("/a")).next_url.as_deref(),
        Some(server.url("/b").as_str()),
        "/a's redirect target in the report"
    );
    assert_eq!(
        stat(&report, &server.url("/page")).status,
        Some(200),
        "status of the chain's end"
    );
    for (from, to) in [("/", "/a"), ("/a", "/b"), ("/b", "/page")] {
        let line = format!("redirect to {} from {}", server.url(to), server.url(from));
        assert!(
            has_line(&config, &line),
            "no log line {line:?} (info level, one per redirect queued)"
        );
    }
}

#[test]
fn redirect_limit_cuts_a_long_chain() {
    let server = TestServer::start(
        Site::new()
            .route("/", Route::redirect(302, "/1"))
            .route("/1", Route::redirect(302, "/2"))
            .route("/2", Route::redirect(302, "/3"))
            .route("/3", Route::redirect(302, "/4"))
            .page("/4", "too far"),
    );
    let mut config = config(&server, "/");
    config.max_redirect = 2;
    let report = run(&config);
    assert_eq!(
        report.urls(),
        urls(&server, &["/", "/1", "/2"]),
        "URLs reported with --max-redirect 2: the root may redirect twice \
         (to /1, then /1 to /2); /2's redirect is recorded, its target not fetched"
    );
    assert_eq!(
        server.request_count("/3"),
        0,
        "requests for /3, past the redirect limit"
    );
    let line = format!(
        "redirect limit reached for {} from {}",
        server.url("/3"),
        server.url("/2")
    );
    assert!(
        has_line(&config, &line),
        "no log line {line:?} (error level) in {:#?}",
        config.log.lines()
    );
    assert_eq!(
        report.counts().get("redirect"),
        Some(&3),
        "redirects counted in the report: /, /1 and /2"
    );
}

#[test]
fn redirect_limit_zero_follows_nothing() {
    let server = TestServer::start(
        Site::new()
            .route("/", Route::redirect(301, "/next"))
            .page("/next", "never fetched"),
    );
    let mut config = config(&server, "/");
    config.max_redirect = 0;
    let report = run(&config);
    assert_eq!(
        report.urls(),
        urls(&server, &["/"]),
        "URLs reported with --max-redirect 0: the root only"
    );
    assert_eq!(
        server.request_count("/next"),
        0,
        "requests for the redirect's target with --max-redirect 0"
    );
}

#[test]
fn redirect_cycle_ends() {
    let server = TestServer::start(
        Site::new()
            .route("/", Route::redirect(302, "/x"))
            .route("/x", Route::redirect(302, "/y"))
            .route("/y", Route::redirect(302, "/")),
    );
    let config = config(&server, "/");
    let report = run(&config);
    assert_eq!(
        report.urls(),
        urls(&server, &["/", "/x", "/y"]),
        "URLs reported for a cycle / → /x → /y → /"
    );
    for path in ["/", "/x", "/y"] {
        assert_eq!(
            server.request_count(path),
            1,
            "requests for {path} in a redirect cycle: once each"
        );
    }
    assert!(
        !config
            .log
            .lines()
            .iter()
            .any(|l| l.starts_with("redirect limit reached")),
        "a line starting \"redirect limit reached\": the cycle must be closed \
         by the seen-set, not by the limit"
    );
}

#[test]
fn redirect_chains_that_meet_are_fetched_once() {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/r1">1</a> <a href="/r2">2</a>"#)
            .route("/r1", Route::redirect(301, "/target"))
            .route("/r2", Route::redirect(302, "/target"))
            .page("/target", "both roads lead here"),
    );
    let report = run(&config(&server, "/"));
    assert_eq!(
        report.urls(),
        urls(&server, &["/", "/r1", "/r2", "/target"]),
        "URLs reported for two redirects to one target"
    );
    assert_eq!(
        server.request_count("/target"),
        1,
        "requests for the target two redirect chains meet at: once (the seen-set)"
    );
    for path in ["/r1", "/r2"] {
        assert_eq!(
            stat(&report, &server.url(path)).next_url.as_deref(),
            Some(server.url("/target").as_str()),
            "{path}'s redirect target in the report (recorded, fetched or not)"
        );
    }
}

/// A root linking to `n` pages that each answer after `delay`.
fn slow_fanout(n: usize, delay: Duration) -> Site {
    let links: String = (0..n)
        .map(|i| format!(r#"<a href="/p{i}">{i}</a> "#))
        .collect();
    (0..n).fold(Site::new().page("/", links), |site, i| {
        site.route(&format!("/p{i}"), Route::html("leaf").delay(delay))
    })
}

#[test]
fn max_tasks_bounds_the_fetches_in_flight_and_is_reached() {
    let server = TestServer::start(slow_fanout(30, Duration::from_millis(100)));
    let mut config = config(&server, "/");
    config.max_tasks = 4;
    let report = run(&config);
    assert_eq!(
        report.stats.len(),
        31,
        "URLs reported: the root and its 30 links"
    );
    assert_eq!(
        server.peak_in_flight(),
        4,
        "most requests the server had at once with --max-tasks 4: four workers, \
         and every one busy"
    );
    assert_eq!(
        report.peak_in_flight, 4,
        "the report's achieved concurrency (InFlight's peak) with --max-tasks 4"
    );
    assert_eq!(report.max_tasks, 4, "the report's max_tasks");
    assert!(
        report.render().contains("(max_tasks=4)"),
        "the report does not show \"(max_tasks=4)\""
    );
}

#[test]
fn one_task_fetches_one_url_at_a_time() {
    let server = TestServer::start(slow_fanout(5, Duration::from_millis(20)));
    let mut config = config(&server, "/");
    config.max_tasks = 1;
    let report = run(&config);
    assert_eq!(
        report.stats.len(),
        6,
        "URLs reported: the root and its 5 links"
    );
    assert_eq!(
        server.peak_in_flight(),
        1,
        "most requests the server had at once with --max-tasks 1"
    );
    assert_eq!(
        server.connections(),
        2,
        "connections the server saw with one worker: robots.txt's own (closed \
         once the rules are in), then one keep-alive connection for every page"
    );
}

/// `--delay` on two hosts with two workers: host a's eight pages are
/// queued before host b's three (b's root answers later), and each URL must
/// wait for its host's slot. A worker that slept until a's slots came would
/// keep b's pages in the queue behind all of a's; waiting aside, b's pages
/// go at b's own pace and b is done long before a.
#[test]
fn a_url_waiting_for_its_hosts_slot_holds_no_worker() {
    let a = TestServer::start(slow_fanout(8, Duration::ZERO));
    let b = TestServer::start(
        slow_fanout(3, Duration::ZERO).route(
            "/",
            Route::html(r#"<a href="/p0">0</a> <a href="/p1">1</a> <a href="/p2">2</a>"#)
                .delay(Duration::from_millis(50)),
        ),
    );
    let mut config = config(&a, "/");
    config.roots.push(b.url("/"));
    config.max_tasks = 2;
    config.delay = Duration::from_millis(100);
    let report = run(&config);
    assert_eq!(
        report.stats.len(),
        1 + 8 + 1 + 3,
        "URLs reported: each host's root and its links"
    );
    let last = |server: &TestServer| server.requests().last().map(|r| r.received);
    assert!(
        last(&b) < last(&a),
        "host b's pages waited behind host a's:\n{}",
        report.render()
    );
}

#[test]
fn max_tries_retries_network_errors_until_success() {
    // The root's connection is new, so each dropped request is a real
    // failure (not a stale pooled connection): tries 1 and 2 fail, 3 works.
    let server = TestServer::start(Site::new().route("/", Route::html("finally").drop_first(2)));
    let config = config(&server, "/");
    let report = run(&config);
    let root = server.url("/");
    assert_eq!(
        stat(&report, &root).status,
        Some(200),
        "the root's status after two dropped requests and a third that works"
    );
    assert_eq!(
        server.request_count("/"),
        3,
        "requests for the root: two failed tries and the one that worked"
    );
    let lines = config.log.lines();
    for n in [1, 2] {
        let start = format!("try {n} for {root} raised ");
        assert!(
            lines.iter().any(|l| l.starts_with(&start)),
            "no log line starting {start:?} (info level, one per failed try) in {lines:#?}"
        );
    }
    let success = format!("try 3 for {root} success");
    assert!(
        has_line(&config, &success),
        "no log line {success:?} (info level, a success after a failure) in {lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("failed after")),
        "a \"failed after\" line for a URL that succeeded on its third try"
    );
}

#[test]
fn max_tries_one_fails_at_the_first_error() {
    let server = TestServer::start(Site::new().route("/", Route::html("too late").drop_first(1)));
    let mut config = config(&server, "/");
    config.max_tries = 1;
    let report = run(&config);
    let root = server.url("/");
    let err = stat(&report, &root).error.clone().expect("a failure");
    assert_eq!(
        err.kind,
        FailKind::Reset,
        "the kind of the root's failure (its request dropped unanswered)"
    );
    let line = format!("{root} failed after 1 tries");
    assert!(
        has_line(&config, &line),
        "no log line {line:?} (error level, giving up) in {:#?}",
        config.log.lines()
    );
    assert_eq!(
        server.request_count("/"),
        1,
        "requests for the root with --max-tries 1"
    );
    assert_eq!(
        report.counts().get("fail_reset"),
        Some(&1),
        "fail_reset in the report's counts"
    );
}

#[test]
fn timeouts_are_retried_each_with_its_own_deadline() {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/stuck">s</a>"#)
            .route("/stuck", Route::stall()),
    );
    let mut config = config(&server, "/");
    config.timeout = Duration::from_millis(200);
    config.max_tries = 2;
    let report = run(&config);
    let stuck = server.url("/stuck");
    assert_eq!(
        stat(&report, &stuck).error.as_ref().map(|e| e.kind),
        Some(FailKind::Timeout),
        "the failure kind of a page that never answers"
    );
    assert_eq!(
        server.request_count("/stuck"),
        2,
        "requests for the stalled page with --max-tries 2: a timeout is retried, \
         each attempt with its own deadline"
    );
    let line = format!("{stuck} failed after 2 tries");
    assert!(
        has_line(&config, &line),
        "no log line {line:?} (error level) in {:#?}",
        config.log.lines()
    );
}

#[test]
fn errors_that_would_repeat_are_not_retried() {
    let server = TestServer::start(
        Site::new()
            .page(
                "/",
                r#"<a href="/big">b</a> <a href="https://127.0.0.1/s">s</a>"#,
            )
            .route("/big", Route::body("text/plain", vec![b'x'; 2000])),
    );
    let mut config = config(&server, "/");
    config.limits.max_body_bytes = 1000;
    let report = run(&config);
    assert_eq!(
        server.request_count("/big"),
        1,
        "requests for a body over the limit: not retried, it would fail the same way"
    );
    let big = server.url("/big");
    assert_eq!(
        stat(&report, &big).error.as_ref().map(|e| e.kind),
        Some(FailKind::TooLarge),
        "the failure kind of a body over --max-body-bytes"
    );
    let line = format!("{big} failed after 1 tries");
    assert!(
        has_line(&config, &line),
        "no log line {line:?} (error level) in {:#?}",
        config.log.lines()
    );
    let https = stat(&report, "https://127.0.0.1/s");
    assert_eq!(
        https.error.as_ref().map(|e| e.message.as_str()),
        Some("https not supported"),
        "the failure message of an https link"
    );
}

#[test]
fn a_stale_pooled_connection_is_resent_without_counting_a_try() {
    // One worker, so /flaky goes out on the connection the root used. The
    // server drops that request unanswered: to the crawler the pooled
    // connection looks closed while idle, so it resends on a new one.
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/flaky">f</a>"#)
            .route("/flaky", Route::html("served").drop_first(1)),
    );
    let mut config = config(&server, "/");
    config.max_tasks = 1;
    config.max_tries = 1;
    let report = run(&config);
    assert_eq!(
        stat(&report, &server.url("/flaky")).status,
        Some(200),
        "/flaky's status with --max-tries 1: the stale connection's resend is not a try"
    );
    assert_eq!(
        server.request_count("/flaky"),
        2,
        "requests for /flaky: the one on the stale pooled connection, and the resend"
    );
    assert_eq!(
        server.connections(),
        3,
        "connections: robots.txt's own, the root's (reused, found stale), the resend's"
    );
    assert!(
        !config.log.lines().iter().any(|l| l.starts_with("try ")),
        "a line starting \"try \": a stale connection's resend counts no try"
    );
}

#[test]
fn encodings_come_from_the_content_type() {
    let server = TestServer::start(
        Site::new()
            .page(
                "/",
                r#"<a href="/latin">l</a> <a href="/quoted">q</a> <a href="/none">n</a>"#,
            )
            .route(
                "/latin",
                Route::body("text/html; charset=ISO-8859-1", b"caf\xe9".to_vec()),
            )
            .route(
                "/quoted",
                Route::body("text/html; charset=\"Shift_JIS\"", "x"),
            )
            .route("/none", Route::body("text/html", "no charset")),
    );
    let report = run(&config(&server, "/"));
    let encoding = |p: &str| stat(&report, &server.url(p)).encoding.clone();
    assert_eq!(
        encoding("/latin").as_deref(),
        Some("iso-8859-1"),
        "encoding from `charset=ISO-8859-1`, lower-cased"
    );
    assert_eq!(
        encoding("/quoted").as_deref(),
        Some("shift_jis"),
        "encoding from a quoted charset, unquoted and lower-cased"
    );
    assert_eq!(
        encoding("/none").as_deref(),
        Some("utf-8"),
        "encoding of text/html without a charset: the default"
    );
    assert_eq!(
        stat(&report, &server.url("/latin")).size,
        4,
        "size of /latin's body in bytes"
    );
}

#[test]
fn content_types_are_reported_without_parameters() {
    let server = TestServer::start(
        Site::new()
            .page(
                "/",
                r#"<a href="/json">j</a> <a href="/png">p</a> <a href="/upper">u</a>"#,
            )
            .route("/json", Route::body("application/json", "{}"))
            .route(
                "/png",
                Route::body("image/png", vec![0x89, b'P', b'N', b'G']),
            )
            .route("/upper", Route::body("Text/HTML; Charset=UTF-8", "hi")),
    );
    let report = run(&config(&server, "/"));
    let kind = |p: &str| stat(&report, &server.url(p)).content_type.clone();
    assert_eq!(
        kind("/json").as_deref(),
        Some("application/json"),
        "/json's content type"
    );
    assert_eq!(
        kind("/png").as_deref(),
        Some("image/png"),
        "/png's content type"
    );
    assert_eq!(
        kind("/upper").as_deref(),
        Some("text/html"),
        "content type of `Text/HTML; Charset=UTF-8`: lower-cased, without parameters"
    );
    assert_eq!(
        report.counts().get("other"),
        Some(&2),
        "pages counted as other (not HTML): /json and /png"
    );
    assert_eq!(
        report.counts().get("html"),
        Some(&2),
        "pages counted as html: / and /upper"
    );
}

#[test]
fn non_html_bodies_are_not_searched_for_links() {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/data.txt">d</a>"#)
            .route(
                "/data.txt",
                Route::body("text/plain", r#"<a href="/hidden">not a link here</a>"#),
            )
            .page("/hidden", "unreachable"),
    );
    let report = run(&config(&server, "/"));
    assert_eq!(
        report.urls(),
        urls(&server, &["/", "/data.txt"]),
        "URLs reported: a text/plain body is not searched for links"
    );
    assert_eq!(
        server.request_count("/hidden"),
        0,
        "requests for a 'link' found only in a text/plain body"
    );
}

#[test]
fn non_http_links_are_not_followed() {
    let server = TestServer::start(Site::new().page(
        "/",
        r#"<a href="mailto:someone@example.com">m</a> <a href="ftp://127.0.0.1/f">f</a>
           <a href="javascript:void(0)">j</a> <a href="/ok">ok</a>"#,
    ));
    let report = run(&config(&server, "/"));
    assert_eq!(
        report.urls(),
        urls(&server, &["/", "/ok"]),
        "URLs reported: mailto:, ftp: and javascript: links are not followed"
    );
    assert_eq!(
        stat(&report, &server.url("/")).num_urls,
        1,
        "links the root's line counts: only the http one"
    );
}

#[test]
fn keep_alive_reuses_a_few_connections_for_many_pages() {
    let site = generate(&SiteSpec::new(200));
    let server = TestServer::start(site.to_site());
    let mut config = config(&server, "/");
    config.max_tasks = 10;
    let report = run(&config);
    assert_eq!(
        report.urls(),
        site.expected_urls(&server.origin()),
        "URLs reported: the generated site's"
    );
    assert!(
        report.stats.len() >= 200,
        "URLs reported: fewer than the 200 pages"
    );
    assert!(
        server.connections() <= 20,
        "{} connections for {} requests",
        server.connections(),
        server.requests_total()
    );
    assert!(
        report.stats.iter().all(|s| s.error.is_none()),
        "a page failed:\n{}",
        report.render()
    );
}

#[test]
fn a_root_that_does_not_parse_is_an_error() {
    let mut config = Config::new(Lesson::Four, ["http://[not a host/"]);
    config.log = Log::capture(Level::Debug);
    assert!(
        crawl(&config).is_err(),
        "crawl with a root that does not parse should be an error"
    );
}

#[test]
fn a_connection_the_server_closes_is_not_reused() {
    // One worker: / then /a share a connection; /a's answer says
    // `Connection: close`, so /b needs a new one.
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/a">a</a>"#)
            .route(
                "/a",
                Route::html(r#"<a href="/b">b</a>"#).header("Connection", "close"),
            )
            .page("/b", "b"),
    );
    let mut config = config(&server, "/");
    config.max_tasks = 1;
    let report = run(&config);
    assert_eq!(
        report.urls(),
        urls(&server, &["/", "/a", "/b"]),
        "URLs reported"
    );
    assert_eq!(
        server.connections(),
        3,
        "connections: robots.txt's own (closed after it), / and /a's, then a \
         new one for /b after /a's `Connection: close`"
    );
    assert!(
        report.stats.iter().all(|s| s.error.is_none()),
        "a page failed:\n{}",
        report.render()
    );
    assert!(
        !config.log.lines().iter().any(|l| l.contains("resending")),
        "a \"resending\" line: a connection the server closes must not be \
         kept, reused and found stale"
    );
}

#[test]
fn roots_are_normalized_deduplicated_and_queued_once() {
    let config = Config::new(
        Lesson::Four,
        [
            "127.0.0.1:1/a",
            "http://127.0.0.1:1/a#x",
            "http://127.0.0.1:1/b",
        ],
    );
    let crawler =
        Crawler::new(&config, 100).expect("`Crawler::new` must accept a valid configuration");
    let roots: Vec<&str> = crawler.roots().iter().map(url::Url::as_str).collect();
    assert_eq!(
        roots,
        ["http://127.0.0.1:1/a", "http://127.0.0.1:1/b"],
        "the crawler's roots: normalized (scheme added, fragment dropped) and deduplicated"
    );
    assert_eq!(
        crawler.report(crawler.held()).todo,
        2,
        "Todo before crawling: both roots queued, once each"
    );
}

#[test]
fn held_and_all_done_name_a_fetch_in_flight_and_what_the_loop_still_holds() {
    use lesson4_asyncio_style::event_loop::{self, get_running_loop};
    use lesson4_asyncio_style::sleep::sleep;
    use std::rc::Rc;
    use std::sync::Arc;

    let server = Arc::new(TestServer::start(Site::new().route("/", Route::stall())));
    let mut config = config(&server, "/");
    config.obey_robots = false;
    config.max_tries = 1;
    config.timeout = Duration::from_millis(500);
    let crawler = Rc::new(
        Crawler::new(&config, 1).expect("`Crawler::new` must accept a valid configuration"),
    );
    let probe = {
        let crawler = Rc::clone(&crawler);
        let server = Arc::clone(&server);
        async move {
            let event_loop = get_running_loop();
            // A timer and a socket that are not the crawl's, still set and
            // registered when it ends: what the loop holds then is counted.
            let _timer = event_loop.call_later(Duration::from_secs(60), || {});
            let mut listener = mio::net::TcpListener::bind("127.0.0.1:0".parse()?)?;
            let token = event_loop.register(&mut listener)?;
            let crawl = event_loop.create_task(Rc::clone(&crawler).crawl());
            while server.requests().is_empty() {
                sleep(Duration::from_millis(5)).await?;
            }
            let during = crawler.held();
            let stranded = crawler.all_done(during);
            crawl.await?;
            let after = crawler.held();
            event_loop.deregister(&mut listener, token);
            anyhow::Ok((during, stranded, after))
        }
    };
    let (during, stranded, after) =
        event_loop::run(probe).expect("`run` must return Ok once the probe and its crawl are done");
    assert_eq!(
        (during.in_flight, during.sockets),
        (1, 1),
        "while the root's fetch waits for its answer, the crawl holds it in flight and \
         holds its place in the socket budget: held() said {during}"
    );
    let stranded = match stranded {
        Err(stranded) => stranded,
        Ok(()) => panic!(
            "all_done said every URL was finished while the root was still being fetched: \
             it counts the queue's unfinished items"
        ),
    };
    assert_eq!(
        (
            stranded.queued,
            stranded.waiting_for_socket,
            stranded.in_flight
        ),
        (0, 0, 1),
        "all_done in the middle of the crawl: the one URL left is in flight, not queued and \
         not waiting for a socket ({stranded})"
    );
    assert_eq!(
        (
            after.in_flight,
            after.sockets,
            after.workers_lost,
            after.robots_pending
        ),
        (0, 0, 0, 0),
        "once the root has failed (a timeout), the crawl holds no fetch and no socket: {after}"
    );
    assert_eq!(
        (after.timers, after.registered),
        (1, 1),
        "held() counts what the loop still holds as the crawl ends: here the test's own \
         timer and socket, which the crawl does not own ({after})"
    );
}

#[test]
fn held_counts_a_robots_txt_not_answered_yet() {
    use lesson4_asyncio_style::event_loop::{self, get_running_loop};
    use lesson4_asyncio_style::sleep::sleep;
    use std::rc::Rc;
    use std::sync::Arc;

    let server = Arc::new(TestServer::start(
        Site::new()
            .page("/", "a page")
            .route("/robots.txt", Route::stall()),
    ));
    let mut config = config(&server, "/");
    config.max_tries = 1;
    config.timeout = Duration::from_millis(300);
    let crawler = Rc::new(
        Crawler::new(&config, 2).expect("`Crawler::new` must accept a valid configuration"),
    );
    let probe = {
        let crawler = Rc::clone(&crawler);
        let server = Arc::clone(&server);
        async move {
            let crawl = get_running_loop().create_task(Rc::clone(&crawler).crawl());
            while server.request_count("/robots.txt") == 0 {
                sleep(Duration::from_millis(5)).await?;
            }
            let during = crawler.held();
            crawl.await?;
            anyhow::Ok(during)
        }
    };
    let during =
        event_loop::run(probe).expect("`run` must return Ok once the probe and its crawl are done");
    assert_eq!(
        during.robots_pending, 1,
        "while the host's robots.txt has not answered, held() counts it: {during}"
    );
    let after = crawler.held();
    assert!(
        after.is_clear(),
        "once robots.txt has failed (twice, each a timeout) and the page is settled, the \
         crawl holds nothing: {after}"
    );
}
