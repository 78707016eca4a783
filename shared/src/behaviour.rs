//! # The behaviour suite: one set of expectations, four engines
//!
//! Every lesson must crawl a site the same way — the spec's "One crawler, four
//! engines". This module is that promise written as tests. Each case starts a
//! scripted [`TestServer`], runs a lesson's `crawl` against it and checks the
//! [`CrawlReport`]: which URLs were reported, with which status, error kind or
//! link counts. Cases assert on URL-keyed results, never on completion order.
//!
//! A lesson's `tests/behaviour.rs` is one line:
//!
//! ```ignore
//! shared::behaviour_suite!(shared::Lesson::One, lesson1_threadpool::crawl);
//! ```
//!
//! which expands to one `#[test]` per case, so a failure names its case.
//!
//! ## Which cases apply to which lesson
//!
//! All of them apply to all four lessons: the suite only uses behaviour the
//! spec gives every lesson. Where lessons legitimately differ, a case avoids
//! depending on the difference:
//!
//! | difference | lessons | how the suite stays neutral |
//! |---|---|---|
//! | retries on network errors | 4 only | cases with failing routes set `max_tries = 1` |
//! | redirect chain limit | 4 only | chains are shorter than the default limit (10) |
//! | connection reuse | 4 only | no case counts connections |
//! | `M` on the `Finished` line | differs | no case checks it |
//!
//! The suite itself is tested in `shared/tests/reference_crawl.rs` against a
//! tiny sequential crawler, so a broken case shows up before any lesson runs it.

pub mod faults;
pub mod hosts;

use std::collections::BTreeSet;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::cli::{Config, Lesson};
use crate::fixtures::server::{Handler, Request, Route, Site, TestServer};
use crate::fixtures::sitegen::{generate, SiteSpec};
use crate::log::{Level, Log};
use crate::report::CrawlReport;
use crate::stats::{FailKind, FetchStatistic};
use crate::CrawlFn;

/// No case may take longer than this: a lesson that hangs fails its test
/// instead of hanging the test run.
pub const CASE_DEADLINE: Duration = Duration::from_secs(60);

/// A configuration for crawling `server` from `path`, logging into a capture.
/// The timeout is short so that a broken lesson fails fast, but long enough
/// for a loaded 2-core CI machine.
pub fn config_for(lesson: Lesson, server: &TestServer, path: &str) -> Config {
    let mut config = Config::new(lesson, [server.url(path)]);
    config.log = Log::capture(Level::Debug);
    config.timeout = Duration::from_secs(10);
    config
}

/// Run `crawl` on another thread and wait at most [`CASE_DEADLINE`] for it.
pub fn crawl_within_deadline(crawl: CrawlFn, config: &Config) -> CrawlReport {
    crawl_within_deadline_with(crawl, config)
}

/// [`crawl_within_deadline`] for any crawl function.
fn crawl_within_deadline_with(
    crawl: impl FnOnce(&Config) -> anyhow::Result<CrawlReport> + Send + 'static,
    config: &Config,
) -> CrawlReport {
    match try_crawl_within_deadline(crawl, config, CASE_DEADLINE) {
        Ok(report) => report,
        Err(e) => panic!("{e}"),
    }
}

/// Run `crawl` on another thread and wait at most `deadline` for it: its
/// report, or what went wrong (its error, a panic, the deadline), for a
/// failure message that also names the case.
fn try_crawl_within_deadline(
    crawl: impl FnOnce(&Config) -> anyhow::Result<CrawlReport> + Send + 'static,
    config: &Config,
    deadline: Duration,
) -> Result<CrawlReport, String> {
    let (tx, rx) = mpsc::channel();
    let config = config.clone();
    std::thread::spawn(move || {
        let _ = tx.send(crawl(&config).map_err(|e| format!("{e:#}")));
    });
    match rx.recv_timeout(deadline) {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(e)) => Err(format!("crawl returned an error: {e}")),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "crawl did not finish within {deadline:?}. A crawl that never ends is most \
             often waiting for something a fetch took and never gave back: a place in the \
             socket budget, a host's robots.txt answer, a queue item never marked done"
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("crawl panicked".to_string()),
    }
}

/// The statistic of `url`, or a panic that lists what the report does hold.
pub fn stat<'a>(report: &'a CrawlReport, url: &str) -> &'a FetchStatistic {
    report
        .get(url)
        .unwrap_or_else(|| panic!("{url} not in report:\n{}", report.render()))
}

/// Checks every report must pass: one line per URL, counts that add up, a
/// finished queue, a sane achieved concurrency.
pub fn assert_consistent(report: &CrawlReport) {
    let urls = report.urls();
    assert_eq!(
        urls.len(),
        report.stats.len(),
        "a URL was reported twice:\n{}",
        report.render()
    );
    let counts = report.counts();
    let sum: usize = ["html", "other", "error", "redirect", "fail", "blocked"]
        .iter()
        .map(|k| counts.get(*k).copied().unwrap_or(0))
        .sum();
    assert_eq!(
        sum,
        report.stats.len(),
        "the stats table's html + other + error + redirect + fail + blocked must add up to \
         Done, the number of URLs reported: each URL's line is of exactly one kind\n{}",
        report.render()
    );
    assert_eq!(
        report.todo,
        0,
        "Todo: URLs seen but never finished; after a crawl with no --max-pages every URL \
         seen must have been fetched\n{}",
        report.render()
    );
    if !report.stats.is_empty() {
        assert!(
            report.peak_in_flight >= 1,
            "achieved concurrency (the most fetches in flight at once) is 0, yet {} URLs \
             were fetched: is the in-flight count kept?",
            report.stats.len()
        );
    }
    for s in &report.stats {
        assert!(s.num_new_urls <= s.num_urls, "{}: NEW > TOTAL", s.url);
    }
    assert!(
        report.held.is_clear(),
        "the crawl ended holding what its fetches took: {}. Every fetch, however it ends \
         (a page, an error, a timeout, a redirect), must give back what it took\n{}",
        report.held,
        report.render()
    );
}

fn set(urls: &[String]) -> BTreeSet<String> {
    urls.iter().cloned().collect()
}

fn kind_of(report: &CrawlReport, url: &str) -> Option<FailKind> {
    stat(report, url).error.as_ref().map(|e| e.kind)
}

/// How many log lines a failure message shows at each end of a long log.
const SHOWN_LINES: usize = 15;

/// `lines` for a failure message, one a line: all of them when there are
/// few, else the first and last [`SHOWN_LINES`] and how many were left out,
/// so that a failed check shows what the crawl did log without burying the
/// message under hundreds of lines.
pub fn show_lines(lines: &[String]) -> String {
    if lines.is_empty() {
        return "  (none: nothing was logged into `config.log`)\n".to_string();
    }
    let show = |lines: &[String]| -> String { lines.iter().map(|l| format!("  {l}\n")).collect() };
    if lines.len() <= 2 * SHOWN_LINES {
        return show(lines);
    }
    format!(
        "{}  ... {} lines left out ...\n{}",
        show(&lines[..SHOWN_LINES]),
        lines.len() - 2 * SHOWN_LINES,
        show(&lines[lines.len() - SHOWN_LINES..])
    )
}

/// What a program printed, for a failure message: its first and last
/// lines, as [`show_lines`] shows a log.
fn printed(text: &str) -> String {
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return String::new();
    }
    show_lines(&lines)
}

/// The lines of `lines` that contain `word`, for a failure message: a line
/// worded a little differently from the one a check looks for shows here.
pub fn lines_mentioning(lines: &[String], word: &str) -> String {
    let found: Vec<String> = lines.iter().filter(|l| l.contains(word)).cloned().collect();
    if found.is_empty() {
        format!("  (no line mentions `{word}`)\n")
    } else {
        show_lines(&found)
    }
}

/// How the URLs a crawl reported differ from those expected, for a failure
/// message: the expected URLs missing from the report, and the reported
/// URLs not expected (at most ten of each).
pub fn url_diff(got: &BTreeSet<String>, expected: &BTreeSet<String>) -> String {
    let list = |urls: Vec<&String>| -> String {
        let more = urls.len().saturating_sub(10);
        let shown: Vec<&str> = urls.iter().take(10).map(|u| u.as_str()).collect();
        match more {
            0 => format!("{shown:?}"),
            _ => format!("{shown:?} and {more} more"),
        }
    };
    format!(
        "\n  expected but not reported: {}\n  reported but not expected: {}",
        list(expected.difference(got).collect()),
        list(got.difference(expected).collect())
    )
}

/// Three pages that link in a cycle: each is fetched once, and `NEW/TOTAL`
/// shows which page discovered which.
pub fn link_cycle(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/a">a</a>"#)
            .page("/a", r#"<a href="/b">b</a> <a href="/">home</a>"#)
            .page("/b", r#"<a href="/">home</a> <a href="/a">a</a>"#),
    );
    let report = crawl_within_deadline(crawl, &config_for(lesson, &server, "/"));
    assert_consistent(&report);
    let u = |p: &str| server.url(p);
    let expected = set(&[u("/"), u("/a"), u("/b")]);
    assert_eq!(
        report.urls(),
        expected,
        "the URLs reported: the cycle's three pages, each once{}",
        url_diff(&report.urls(), &expected)
    );
    for path in ["/", "/a", "/b"] {
        assert_eq!(
            server.request_count(path),
            1,
            "requests for {path}: one, though the cycle links to it again (a URL already \
             seen is not queued again)"
        );
        let s = stat(&report, &u(path));
        assert_eq!(
            s.status,
            Some(200),
            "{path}: status of a page the server has"
        );
        assert_eq!(
            s.content_type.as_deref(),
            Some("text/html"),
            "{path}: content type, `text/html; charset=utf-8` without its parameters"
        );
        assert_eq!(
            s.encoding.as_deref(),
            Some("utf-8"),
            "{path}: encoding, the charset parameter of its Content-Type"
        );
    }
    let counts = |p: &str| {
        let s = stat(&report, &u(p));
        (s.num_new_urls, s.num_urls)
    };
    assert_eq!(
        counts("/"),
        (1, 1),
        "(NEW, TOTAL) on /'s line: it links only to /a, which nobody had seen"
    );
    assert_eq!(
        counts("/a"),
        (1, 2),
        "(NEW, TOTAL) on /a's line: it links to /b (new) and / (seen: a root)"
    );
    assert_eq!(
        counts("/b"),
        (0, 2),
        "(NEW, TOTAL) on /b's line: it links to / and /a, both seen before /b was fetched"
    );
}

/// A broken link gives a `404` line (`error`, `status_404`), not a failure.
pub fn not_found(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(Site::new().page("/", r#"<a href="/missing">x</a>"#));
    let report = crawl_within_deadline(crawl, &config_for(lesson, &server, "/"));
    assert_consistent(&report);
    let s = stat(&report, &server.url("/missing"));
    assert_eq!(
        s.status,
        Some(404),
        "/missing: the status the server answered for a page it does not have"
    );
    assert!(
        s.error.is_none(),
        "/missing: a 404 is an answer (an `error` line with its status), not a failed \
         fetch, yet it has the failure {:?}",
        s.error
    );
    assert_eq!(
        s.content_type, None,
        "/missing: only a 200's content type is recorded, not a 404's"
    );
    assert_eq!(
        report.counts().get("status_404"),
        Some(&1),
        "the stats table's `status_404`: the one URL that answered 404, /missing\n{}",
        report.render()
    );
}

/// Links to other hosts are not followed: another name, another IP literal.
pub fn prohibited_host(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(Site::new().page(
        "/",
        r#"<a href="http://elsewhere.invalid/x">a</a>
           <a href="http://127.0.0.2:1/y">b</a>
           <a href="http://localhost.invalid/z">c</a>
           <a href="/ok">ok</a>"#,
    ));
    let report = crawl_within_deadline(crawl, &config_for(lesson, &server, "/"));
    assert_consistent(&report);
    let expected = set(&[server.url("/"), server.url("/ok")]);
    assert_eq!(
        report.urls(),
        expected,
        "the URLs reported: / and /ok; links to another host (a name, 127.0.0.2, \
         localhost.invalid) are not followed{}",
        url_diff(&report.urls(), &expected)
    );
    assert_eq!(
        stat(&report, &server.url("/")).num_urls,
        1,
        "TOTAL on /'s line counts the links the crawl may follow: /ok, not the three to \
         other hosts"
    );
}

/// `--exclude` skips matching links, but never a root.
pub fn exclude(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page(
                "/private/",
                r#"<a href="/private/x">x</a> <a href="/public">p</a>"#,
            )
            .page("/public", "nothing"),
    );
    let mut config = config_for(lesson, &server, "/private/");
    config.exclude = Some(regex::Regex::new("private").expect("constant regex"));
    let report = crawl_within_deadline(crawl, &config);
    assert_consistent(&report);
    let expected = set(&[server.url("/private/"), server.url("/public")]);
    assert_eq!(
        report.urls(),
        expected,
        "the URLs reported: the root /private/ (a root is never excluded) and /public; \
         /private/x matches --exclude `private`{}",
        url_diff(&report.urls(), &expected)
    );
    assert_eq!(
        server.request_count("/private/x"),
        0,
        "requests for /private/x, which matches --exclude `private`: none"
    );
}

/// Fragments are dropped: `/a#one` and `/a#two` are one URL, and `#top` is
/// the page itself (already seen, so not NEW).
pub fn fragments(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page(
                "/",
                r##"<a href="/a#one">1</a> <a href="/a#two">2</a> <a href="#top">top</a>"##,
            )
            .page("/a", "a"),
    );
    let report = crawl_within_deadline(crawl, &config_for(lesson, &server, "/#start"));
    assert_consistent(&report);
    let expected = set(&[server.url("/"), server.url("/a")]);
    assert_eq!(
        report.urls(),
        expected,
        "the URLs reported: / and /a, since a URL's `#fragment` is dropped (the root \
         /#start is /, /a#one and /a#two are /a){}",
        url_diff(&report.urls(), &expected)
    );
    let root = stat(&report, &server.url("/"));
    assert_eq!(
        (root.num_new_urls, root.num_urls),
        (1, 2),
        "(NEW, TOTAL) on /'s line: its links are two URLs, /a (new; /a#one and /a#two \
         are one link) and / (#top: the page itself, seen)"
    );
    assert_eq!(
        server.request_count("/a"),
        1,
        "requests for /a: one, though it is linked as /a#one and /a#two"
    );
}

/// Relative links resolve against the page URL, or its `<base href>`.
pub fn relative_links(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="docs/guide/intro.html">go</a>"#)
            .page(
                "/docs/guide/intro.html",
                r#"<a href="next.html">n</a> <a href="../api/">api</a>
                   <a href='./img/'>img</a> <a href=?page=2>p2</a>"#,
            )
            .page("/docs/guide/next.html", "end")
            .page("/docs/api/", "api")
            .page("/docs/guide/img/", "img")
            .page("/docs/guide/intro.html?page=2", "page 2")
            .page(
                "/based/",
                r#"<base href="/docs/guide/"><a href="next.html">n</a>"#,
            ),
    );
    let mut config = config_for(lesson, &server, "/");
    config.roots.push(server.url("/based/"));
    let report = crawl_within_deadline(crawl, &config);
    assert_consistent(&report);
    let expected: Vec<String> = [
        "/",
        "/based/",
        "/docs/guide/intro.html",
        "/docs/guide/next.html",
        "/docs/api/",
        "/docs/guide/img/",
        "/docs/guide/intro.html?page=2",
    ]
    .iter()
    .map(|p| server.url(p))
    .collect();
    let expected = set(&expected);
    assert_eq!(
        report.urls(),
        expected,
        "the URLs reported: each relative href resolved against its page's URL (`../`, \
         `./`, `?page=2`), or against <base href> on /based/{}",
        url_diff(&report.urls(), &expected)
    );
    assert_eq!(
        stat(&report, &server.url("/based/")).num_urls,
        1,
        "TOTAL on /based/'s line: its one link, `next.html` resolved against \
         <base href=\"/docs/guide/\">"
    );
}

/// Only HTML and XML bodies are searched for links; every other 200 is an
/// `other` line with its content type, charset and size.
pub fn non_html_not_parsed(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page(
                "/",
                r#"<a href="/notes.txt">t</a> <a href="/feed.xml">x</a> <a href="/style.css">c</a>"#,
            )
            .route(
                "/notes.txt",
                Route::body("text/plain", r#"see href="/hidden-from-text""#),
            )
            .route(
                "/feed.xml",
                Route::body(
                    "application/xml; charset=ISO-8859-1",
                    r#"<link href="/from-xml"/>"#,
                ),
            )
            .route("/style.css", Route::body("text/css", "a { color: red }"))
            .page("/from-xml", "found through the XML feed"),
    );
    let report = crawl_within_deadline(crawl, &config_for(lesson, &server, "/"));
    assert_consistent(&report);
    let u = |p: &str| server.url(p);
    let expected = set(&[
        u("/"),
        u("/notes.txt"),
        u("/feed.xml"),
        u("/style.css"),
        u("/from-xml"),
    ]);
    assert_eq!(
        report.urls(),
        expected,
        "the URLs reported: /'s three links, and /from-xml found in the XML feed; not \
         /hidden-from-text (a text/plain body is not searched for links){}",
        url_diff(&report.urls(), &expected)
    );
    let txt = stat(&report, &u("/notes.txt"));
    assert_eq!(
        txt.content_type.as_deref(),
        Some("text/plain"),
        "/notes.txt: content type, from its Content-Type"
    );
    assert_eq!(
        txt.size,
        r#"see href="/hidden-from-text""#.len(),
        "/notes.txt: SIZE, its body's length in bytes"
    );
    let xml = stat(&report, &u("/feed.xml"));
    assert_eq!(
        xml.content_type.as_deref(),
        Some("application/xml"),
        "/feed.xml: content type, `application/xml; charset=ISO-8859-1` without its \
         parameters"
    );
    assert_eq!(
        xml.encoding.as_deref(),
        Some("iso-8859-1"),
        "/feed.xml: encoding, the charset parameter `ISO-8859-1` lowercased"
    );
    assert_eq!(
        report.counts().get("other"),
        Some(&3),
        "the stats table's `other`: 200s that are not text/html (/notes.txt, /feed.xml, \
         /style.css)\n{}",
        report.render()
    );
}

/// A redirect is recorded with its target; an allowed target is fetched, an
/// off-site one is not; a redirect without `Location` is a `redirect` failure.
pub fn redirect_recorded(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page(
                "/",
                r#"<a href="/old">o</a> <a href="/away">a</a> <a href="/nowhere">n</a>
                   <a href="/temp">t</a>"#,
            )
            .route("/old", Route::redirect(301, "/new#frag"))
            .route("/away", Route::redirect(302, "http://elsewhere.invalid/"))
            .route("/nowhere", Route::status(302))
            .route("/temp", Route::redirect(307, "{origin}/new"))
            .page("/new", "moved here"),
    );
    let mut config = config_for(lesson, &server, "/");
    config.max_tries = 1;
    let report = crawl_within_deadline(crawl, &config);
    assert_consistent(&report);
    let u = |p: &str| server.url(p);
    let expected = set(&[
        u("/"),
        u("/old"),
        u("/away"),
        u("/nowhere"),
        u("/temp"),
        u("/new"),
    ]);
    assert_eq!(
        report.urls(),
        expected,
        "the URLs reported: /'s four links and /new, the target of /old and /temp (not \
         /away's target, on another host){}",
        url_diff(&report.urls(), &expected)
    );
    let old = stat(&report, &u("/old"));
    assert_eq!(
        old.status,
        Some(301),
        "/old: the redirect's own status, not its target's"
    );
    assert_eq!(
        old.next_url.as_deref(),
        Some(u("/new").as_str()),
        "/old: the redirect's target, Location `/new#frag` resolved against /old and \
         without its fragment"
    );
    let away = stat(&report, &u("/away"));
    assert_eq!(
        away.next_url.as_deref(),
        Some("http://elsewhere.invalid/"),
        "/away: an off-site target is still recorded on the line (only not fetched)"
    );
    assert_eq!(
        kind_of(&report, &u("/nowhere")),
        Some(FailKind::Redirect),
        "/nowhere: a 302 without Location fails as `redirect`"
    );
    assert_eq!(
        server.request_count("/new"),
        1,
        "requests for /new: one, though both /old and /temp redirect to it (a target \
         already seen is not queued again)"
    );
    assert_eq!(
        report.counts().get("redirect"),
        Some(&3),
        "the stats table's `redirect`: the redirects with a target, /old, /away and /temp \
         (/nowhere, without Location, is a `fail`)\n{}",
        report.render()
    );
    let lines = config.log.lines();
    let wanted = format!("redirect to {} from {}", u("/new"), u("/old"));
    let wanted_temp = format!("redirect to {} from {}", u("/new"), u("/temp"));
    assert!(
        lines.iter().any(|l| *l == wanted || *l == wanted_temp),
        "no log line `{wanted}` (or `{wanted_temp}`): the crawl logs `redirect to TARGET \
         from URL` at info level when it queues a redirect's target; lines mentioning \
         `redirect`:\n{}",
        lines_mentioning(&lines, "redirect")
    );
}

/// Responses that do not parse, or stop short, are error lines for their URL
/// and the crawl goes on.
pub fn malformed_response(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page(
                "/",
                r#"<a href="/garbage">g</a> <a href="/short">s</a> <a href="/badchunk">c</a>
                   <a href="/empty">e</a> <a href="/ok">ok</a>"#,
            )
            .route("/garbage", Route::raw("SPDY/9 banana\r\n\r\n"))
            .route(
                "/short",
                Route::raw("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b"),
            )
            .route(
                "/badchunk",
                Route::raw(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
                ),
            )
            .route("/empty", Route::raw(""))
            .page("/ok", "fine"),
    );
    let mut config = config_for(lesson, &server, "/");
    config.max_tries = 1;
    let report = crawl_within_deadline(crawl, &config);
    assert_consistent(&report);
    let u = |p: &str| server.url(p);
    assert_eq!(
        kind_of(&report, &u("/garbage")),
        Some(FailKind::Protocol),
        "/garbage: `SPDY/9 banana` is not an HTTP status line, a `protocol` failure"
    );
    assert_eq!(
        kind_of(&report, &u("/short")),
        Some(FailKind::Reset),
        "/short: the connection closed 90 bytes before Content-Length's 100, a `reset` \
         failure"
    );
    assert_eq!(
        kind_of(&report, &u("/badchunk")),
        Some(FailKind::Protocol),
        "/badchunk: the chunk size `zz` is not hexadecimal, a `protocol` failure"
    );
    assert_eq!(
        kind_of(&report, &u("/empty")),
        Some(FailKind::Reset),
        "/empty: the connection closed before one byte of answer, a `reset` failure"
    );
    assert_eq!(
        stat(&report, &u("/ok")).status,
        Some(200),
        "/ok: fetched as usual, the crawl going on past the broken answers"
    );
    for path in ["/garbage", "/short", "/badchunk", "/empty"] {
        let line = crate::report::line(stat(&report, &u(path))).to_string();
        assert!(
            line.starts_with(&format!("{} error ", u(path))),
            "{path}: a failed URL's report line reads `URL error MESSAGE`; it was {line:?}"
        );
    }
}

/// A server that accepts and never answers ends as a `timeout` for that URL,
/// by the deadline, and the rest of the site is crawled.
pub fn stuck_server(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/stuck">s</a> <a href="/ok">ok</a>"#)
            .route("/stuck", Route::stall())
            .page("/ok", "fine"),
    );
    let mut config = config_for(lesson, &server, "/");
    config.timeout = Duration::from_secs(1);
    config.max_tries = 1;
    let started = Instant::now();
    let report = crawl_within_deadline(crawl, &config);
    let took = started.elapsed();
    assert_consistent(&report);
    assert_eq!(
        kind_of(&report, &server.url("/stuck")),
        Some(FailKind::Timeout),
        "/stuck: the server accepts and never answers, so with --timeout 1 the fetch \
         fails as `timeout`"
    );
    assert_eq!(
        stat(&report, &server.url("/ok")).status,
        Some(200),
        "/ok: fetched as usual while /stuck hangs"
    );
    assert!(
        took < Duration::from_secs(20),
        "a 1 s timeout took {took:?} to end the crawl"
    );
}

/// A body that is not UTF-8 still has its links found.
pub fn non_utf8_body(lesson: Lesson, crawl: CrawlFn) {
    let mut body = b"<p>caf\xe9 \xff\xfe na\xefve</p><a href=\"/latin\">\xe0</a>\x80".to_vec();
    body.extend_from_slice(b"<A HREF='/upper'>\xc3\x28</A>");
    let server = TestServer::start(
        Site::new()
            .route("/", Route::body("text/html; charset=iso-8859-1", body))
            .page("/latin", "ok")
            .page("/upper", "ok"),
    );
    let report = crawl_within_deadline(crawl, &config_for(lesson, &server, "/"));
    assert_consistent(&report);
    let root = stat(&report, &server.url("/"));
    assert_eq!(
        root.encoding.as_deref(),
        Some("iso-8859-1"),
        "/: encoding, the charset parameter of `text/html; charset=iso-8859-1`"
    );
    assert_eq!(
        root.num_urls, 2,
        "TOTAL on /'s line: /latin and /upper (`<A HREF=...>`: tag and attribute names \
         in any case), found in a body that is not valid UTF-8"
    );
    let expected = set(&[server.url("/"), server.url("/latin"), server.url("/upper")]);
    assert_eq!(
        report.urls(),
        expected,
        "the URLs reported: / and the two links found among its invalid UTF-8 bytes{}",
        url_diff(&report.urls(), &expected)
    );
}

/// The course has no TLS: an `https` link is kept and reported as an error.
pub fn https_unsupported(lesson: Lesson, crawl: CrawlFn) {
    // Same host as the root (any port of a root's host is allowed), so the
    // policy keeps it and the fetch must refuse it.
    let https = "https://127.0.0.1/secure";
    let server = TestServer::start(Site::new().page("/", format!(r#"<a href="{https}">s</a>"#)));
    let report = crawl_within_deadline(crawl, &config_for(lesson, &server, "/"));
    assert_consistent(&report);
    let s = stat(&report, https);
    let err = s.error.as_ref().expect("an https URL must be an error");
    assert_eq!(
        err.kind,
        FailKind::Unsupported,
        "{https}: the course has no TLS, so an https URL fails as `unsupported`"
    );
    assert!(
        err.message.contains("https not supported"),
        "{https}: the failure's message must say `https not supported`; it was {:?}",
        err.message
    );
}

/// Bodies over the limit are `too_large`; exactly the limit is fine.
pub fn too_large(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/big">b</a> <a href="/exact">e</a>"#)
            .route("/big", Route::body("text/plain", vec![b'x'; 4097]))
            .route("/exact", Route::body("text/plain", vec![b'x'; 4096])),
    );
    let mut config = config_for(lesson, &server, "/");
    config.limits.max_body_bytes = 4096;
    let report = crawl_within_deadline(crawl, &config);
    assert_consistent(&report);
    assert_eq!(
        kind_of(&report, &server.url("/big")),
        Some(FailKind::TooLarge),
        "/big: a body of 4097 bytes, one over the limit of 4096, fails as `too_large`"
    );
    assert_eq!(
        stat(&report, &server.url("/exact")).size,
        4096,
        "/exact: SIZE of a body of exactly the limit (4096 bytes), which is fetched whole"
    );
}

/// Chunked bodies are de-chunked: links inside are found, `SIZE` is the
/// de-chunked length.
pub fn chunked_body(lesson: Lesson, crawl: CrawlFn) {
    let body = r#"<a href="/one">1</a> and then <a href="/two">2</a>"#;
    let server = TestServer::start(
        Site::new()
            .route("/", Route::html(body).chunked())
            .page("/one", "1")
            .page("/two", "2"),
    );
    let report = crawl_within_deadline(crawl, &config_for(lesson, &server, "/"));
    assert_consistent(&report);
    assert_eq!(
        stat(&report, &server.url("/")).size,
        body.len(),
        "/: SIZE of a chunked body, its de-chunked length (without the chunk sizes)"
    );
    assert_eq!(
        report.urls().len(),
        3,
        "URLs reported: /, and /one and /two, the links inside its chunked body\n{}",
        report.render()
    );
}

/// A response that arrives a byte at a time is read to its end: each read
/// is fed to the parser, however many it takes.
pub fn response_in_pieces(lesson: Lesson, crawl: CrawlFn) {
    let body = format!(r#"<p>{}</p> <a href="/one">1</a>"#, "slow ".repeat(20));
    let server = TestServer::start(
        Site::new()
            .route(
                "/",
                Route::html(body.clone()).drip(Duration::from_millis(1)),
            )
            .page("/one", "1"),
    );
    let report = crawl_within_deadline(crawl, &config_for(lesson, &server, "/"));
    assert_consistent(&report);
    let root = stat(&report, &server.url("/"));
    assert_eq!(
        (root.status, root.size),
        (Some(200), body.len()),
        "/: (STATUS, SIZE) of a page whose response arrived one byte at a time: the whole \
         body, read across many reads (each read goes to the parser until the response is \
         complete)\n{}",
        report.render()
    );
    assert_eq!(
        report.urls().len(),
        2,
        "URLs reported: / and /one, the link at the end of its slow body\n{}",
        report.render()
    );
}

/// Duplicate roots are fetched once; a root without a scheme gets `http://`.
pub fn duplicate_roots(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(Site::new().page("/", "home"));
    let mut config = config_for(lesson, &server, "/");
    let bare = server.url("/").replacen("http://", "", 1);
    config.roots.push(bare);
    config.roots.push(server.url("/#again"));
    let report = crawl_within_deadline(crawl, &config);
    assert_consistent(&report);
    let expected = set(&[server.url("/")]);
    assert_eq!(
        report.urls(),
        expected,
        "the URLs reported: / alone; the roots `HOST:PORT/` (a root without a scheme gets \
         http://) and `/#again` are the same URL{}",
        url_diff(&report.urls(), &expected)
    );
    assert_eq!(
        server.request_count("/"),
        1,
        "requests for /: one, though it is given as a root three times"
    );
}

/// A root on a closed port: a `connect` failure, and no status received (the
/// program then exits 1).
pub fn closed_port(lesson: Lesson, crawl: CrawlFn) {
    let root = format!("http://{}/", crate::fixtures::server::refused_addr());
    let mut config = Config::new(lesson, [root.clone()]);
    config.log = Log::capture(Level::Debug);
    config.timeout = Duration::from_secs(5);
    config.max_tries = 1;
    let report = crawl_within_deadline(crawl, &config);
    assert_consistent(&report);
    assert_eq!(
        kind_of(&report, &root),
        Some(FailKind::Connect),
        "{root}: nothing listens on that port, so connecting fails: a `connect` failure"
    );
    assert!(
        !report.received_any_status(),
        "no URL can have received a status line from a closed port (the program then \
         exits 1), yet one has a status\n{}",
        report.render()
    );
}

/// A root whose server answers with a status line and then a broken head
/// (`Content-Length: many`): the URL fails as `protocol`, but a server did
/// answer — the status is kept, and the program exits 0, not 1 with the
/// "is a site running?" hint.
pub fn answered_but_broken(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(Site::new().route(
        "/",
        Route::raw("HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\nhello"),
    ));
    let mut config = config_for(lesson, &server, "/");
    config.max_tries = 1;
    let report = crawl_within_deadline(crawl, &config);
    assert_consistent(&report);
    let root = server.url("/");
    assert_eq!(
        kind_of(&report, &root),
        Some(FailKind::Protocol),
        "{root}: `Content-Length: many` is not a number, a `protocol` failure"
    );
    assert_eq!(
        stat(&report, &root).status,
        Some(200),
        "{root}: the status of `HTTP/1.1 200 OK`, received before the broken head, is kept \
         on the failed URL"
    );
    assert!(
        report.received_any_status(),
        "a status line was received, so the crawl counts as answered (exit 0)\n{}",
        report.render()
    );
    let line = crate::report::line(stat(&report, &root)).to_string();
    assert!(
        line.starts_with(&format!("{root} error ")),
        "{root}: a failed URL's report line reads `URL error MESSAGE`, status or not; it \
         was {line:?}"
    );
}

/// A generated site of a few hundred pages: exactly the URLs the generator
/// says a correct crawl reports.
pub fn generated_site(lesson: Lesson, crawl: CrawlFn) {
    let spec = SiteSpec {
        pages: 300,
        ..SiteSpec::default()
    };
    let site = generate(&spec);
    let server = TestServer::start(site.to_site());
    let report = crawl_within_deadline(crawl, &config_for(lesson, &server, "/"));
    assert_consistent(&report);
    let origin = server.url("");
    let expected = site.expected_urls(&origin);
    assert_eq!(
        report.urls(),
        expected,
        "the URLs reported: those the site generator says a correct crawl of its {} pages \
         reports{}",
        spec.pages,
        url_diff(&report.urls(), &expected)
    );
    let failed: Vec<String> = report
        .stats
        .iter()
        .filter(|s| s.error.is_some())
        .map(|s| crate::report::line(s).to_string())
        .collect();
    assert!(
        report.stats.iter().all(|s| s.error.is_none()),
        "no URL of the generated site may fail; these did:\n{}",
        show_lines(&failed)
    );
}

/// The one-line-per-URL `info` log lines are the report's lines.
pub fn info_lines(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/a">a</a> <a href="/gone">g</a>"#)
            .page("/a", "a"),
    );
    let config = config_for(lesson, &server, "/");
    let report = crawl_within_deadline(crawl, &config);
    let lines = config.log.lines();
    for s in &report.stats {
        let line = crate::report::line(s).to_string();
        assert!(
            lines.contains(&line),
            "no log line {line:?}: each URL's report line is also logged, at info level, \
             when it finishes; lines were:\n{}",
            show_lines(&lines)
        );
    }
}

/// The descriptor promise for the lessons that start a fetch per link at
/// once (2 and 3): a page with `links` links, crawled by the lesson's
/// *program* in a process that may open only `fd_limit` files, completes
/// with every URL fetched. The server stays in this process, which keeps its
/// own, higher limit, and serves on `listener`: the crawler opens nearly
/// `fd_limit` connections at once, so its queue must hold that many (see
/// [`TestServer::start_on`]).
pub fn many_links_under_fd_limit(
    program: &str,
    links: usize,
    fd_limit: usize,
    listener: std::net::TcpListener,
) {
    let _shared = sharing_descriptors();
    let page: String = (0..links)
        .map(|i| format!("<a href=\"/p/{i}\">{i}</a>\n"))
        .collect();
    let mut site = Site::new().page("/", page);
    for i in 0..links {
        site = site.page(&format!("/p/{i}"), "a page");
    }
    let server = match TestServer::start_on(listener, site) {
        Ok(server) => server,
        Err(e) => panic!("cannot serve on the listener given: {e}"),
    };
    let run = run_program(program, &["-q", &server.url("/")], Some(fd_limit));
    assert_complete(&run, &format!("{program} under ulimit -n {fd_limit}"));
    assert!(
        run.stdout.contains(&format!("Finished {} urls", links + 1)),
        "no `Finished {} urls` line (the root and its {links} links) in the report:\n{}",
        links + 1,
        run.stdout
    );
    let achieved = run.achieved_concurrency();
    assert!(
        achieved < fd_limit,
        "{achieved} sockets under ulimit -n {fd_limit}"
    );
}

/// What a lesson's program did: its exit status and what it printed.
#[derive(Debug)]
pub struct ProgramRun {
    /// The exit status (`None`: ended by a signal).
    pub code: Option<i32>,
    /// The report.
    pub stdout: String,
    /// The log lines and hints.
    pub stderr: String,
}

impl ProgramRun {
    /// The report, read back from what the program printed.
    pub fn report(&self) -> crate::report::PrintedReport {
        crate::report::PrintedReport::parse(&self.stdout)
    }

    /// The number on the report's `achieved concurrency = K` line.
    pub fn achieved_concurrency(&self) -> usize {
        match self.report().concurrency {
            Some(k) => k as usize,
            None => panic!("no achieved concurrency line in:\n{}", self.stdout),
        }
    }

    /// The URLs of the report's lines.
    pub fn urls(&self) -> BTreeSet<String> {
        self.report().urls.into_iter().collect()
    }
}

/// A command that runs `program` in a process that may open at most
/// `fd_limit` files (`None`: the inherited limit): `sh -c 'ulimit -n N &&
/// exec "$0" "$@"' program`, so no `libc` is needed, and the shell *becomes*
/// the program (`exec`): the child's PID is the program's own. Add the
/// program's arguments with `.args(...)`.
pub fn command_under_limit(
    program: impl AsRef<std::ffi::OsStr>,
    fd_limit: Option<usize>,
) -> std::process::Command {
    let script = match fd_limit {
        Some(n) => format!("ulimit -n {n} && exec \"$0\" \"$@\""),
        None => "exec \"$0\" \"$@\"".to_string(),
    };
    let mut command = std::process::Command::new("sh");
    command.arg("-c").arg(script).arg(program);
    command
}

/// Run the calling test again, alone, in a child process (this same test
/// binary) that may open at most `fd_limit` files, with the environment
/// variable `child_variable` set: the child sees it and does the test's
/// real work, which would fail every other test of this process if it used
/// up the descriptors here. The test fails, naming `what` and showing what
/// the child printed (its harness prints a failure's message on stdout),
/// when the child fails or runs past [`CASE_DEADLINE`].
pub fn rerun_test_under_limit(test: &str, child_variable: &str, fd_limit: usize, what: &str) {
    rerun_test_under_limit_within(test, child_variable, fd_limit, what, CASE_DEADLINE);
}

/// [`rerun_test_under_limit`] for a child that must be done well within
/// `deadline`: a test whose child does one fetch, not a crawl, need not
/// wait a whole crawl's deadline to say that it hangs.
pub fn rerun_test_under_limit_within(
    test: &str,
    child_variable: &str,
    fd_limit: usize,
    what: &str,
    deadline: Duration,
) {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => panic!("the test binary's path: {e}"),
    };
    let mut command = command_under_limit(exe, Some(fd_limit));
    command
        .args(["--exact", test, "--test-threads", "1"])
        .env(child_variable, "1");
    let what = format!("{what} (this test, rerun under ulimit -n {fd_limit})");
    let run = run_within(command, &what, deadline);
    assert_eq!(
        run.code,
        Some(0),
        "{what} failed; it printed:\n{}{}",
        run.stdout,
        run.stderr
    );
}

/// Run a lesson's `program` with `args` in a process that may open at most
/// `fd_limit` files (`None`: the inherited limit), for at most
/// [`CASE_DEADLINE`]. The limit is set with the shell's `ulimit -n`, so no
/// `libc` is needed; the program reads it back through
/// [`crate::net::socket_budget`].
pub fn run_program(program: &str, args: &[&str], fd_limit: Option<usize>) -> ProgramRun {
    let mut command = command_under_limit(program, fd_limit);
    command.args(args);
    run_within_deadline(
        command,
        &format!("{program} {args:?} (ulimit -n {fd_limit:?})"),
    )
}

/// Run `command` to its end, for at most [`CASE_DEADLINE`]: past it, the
/// process is killed and the test fails naming `what` and showing what it
/// printed, so a crawl that never ends (a depth that never grows, say) is
/// a red test with a message, not a hung one.
pub fn run_within_deadline(command: std::process::Command, what: &str) -> ProgramRun {
    run_within(command, what, CASE_DEADLINE)
}

/// [`run_within_deadline`] with a deadline of the caller's.
fn run_within(mut command: std::process::Command, what: &str, deadline: Duration) -> ProgramRun {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {what}: {e}"));
    // Drain both pipes while the child runs: a long report fills a pipe,
    // and a child blocked on a full pipe never exits.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the program") {
            break status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} did not finish within {deadline:?}; it printed:\n{}{}",
                printed(&stdout.join().unwrap_or_default()),
                printed(&stderr.join().unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    ProgramRun {
        code: status.code(),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// A crawl that ran to the end with every URL fetched: exit 0, `Todo: 0`,
/// no URL failed (the sites these checks use have no broken links), no hint.
pub(crate) fn assert_complete(run: &ProgramRun, what: &str) {
    assert_eq!(
        run.code,
        Some(0),
        "{what}: exit status of a crawl that ran to the end (None: killed by a signal); \
         it printed on stderr:\n{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("Todo: 0"),
        "{what}: no `Todo: 0` line, so URLs seen were left unfetched; the report:\n{}",
        run.stdout
    );
    let failed: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains(" error "))
        .collect();
    assert!(
        failed.is_empty(),
        "{what}: URLs failed on a site with no broken link (a fetch that found no free \
         descriptor must wait, not fail): {failed:#?}"
    );
}

/// The descriptor promise, for every lesson: `args` ask for more fetches at
/// once (`--threads 100`, `--max-tasks 100`, or lessons 2 and 3's burst)
/// than a process allowed `fd_limit` open files can hold sockets for. On a
/// slow site — every page answers after 50 ms, so fetches pile up — the
/// crawl is complete, no URL fails, and the concurrency is what the
/// descriptors allow: under the limit, and not far under it. The server
/// stays in this process, which keeps its own, higher limit.
pub fn slow_site_under_fd_limit(program: &str, args: &[&str], fd_limit: usize) {
    let _shared = sharing_descriptors();
    let spec = SiteSpec::new(150);
    let site = generate(&spec).to_site();
    let delay = Duration::from_millis(50);
    let server = TestServer::start_handler(
        move |req: &Request| site.respond(req).delay(delay),
        "127.0.0.1:0".parse().expect("an address"),
    )
    .expect("start the slow server");
    let mut all: Vec<&str> = args.to_vec();
    let root = server.url("/");
    all.extend(["-q", &root]);
    let run = run_program(program, &all, Some(fd_limit));
    assert_complete(&run, &format!("{program} under ulimit -n {fd_limit}"));
    let expected = generate(&spec).expected_urls(&server.origin());
    assert_eq!(
        run.urls(),
        expected,
        "the URLs {program} reported under ulimit -n {fd_limit}: every URL of the \
         generated site{}",
        url_diff(&run.urls(), &expected)
    );
    let achieved = run.achieved_concurrency();
    assert!(
        achieved < fd_limit,
        "achieved concurrency {achieved}: more sockets at once than ulimit -n {fd_limit} \
         allows open files"
    );
    assert!(
        achieved >= fd_limit / 2,
        "only {achieved} fetches at once under ulimit -n {fd_limit}"
    );
}

/// `--demo` under a tight descriptor limit: the demo server runs in the same
/// process and holds the other end of every connection, so the crawler may
/// use only half of what is left. The crawl is complete, as it is without a
/// limit, and at a concurrency that shows the budget was shared, not starved.
pub fn demo_under_fd_limit(program: &str, args: &[&str], fd_limit: usize) {
    let _shared = sharing_descriptors();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-q", "--demo"]);
    let free = run_program(program, &all, None);
    assert_complete(&free, &format!("{program} --demo"));
    let limited = run_program(program, &all, Some(fd_limit));
    assert_complete(
        &limited,
        &format!("{program} --demo under ulimit -n {fd_limit}"),
    );
    // The demo server's port differs between the runs; its paths do not.
    let paths = |run: &ProgramRun| -> BTreeSet<String> {
        run.urls()
            .iter()
            .map(|u| u.splitn(4, '/').nth(3).unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(
        paths(&limited),
        paths(&free),
        "the paths crawled under ulimit -n {fd_limit} must be those crawled without a \
         limit: the limit slows the crawl, it does not shorten it"
    );
    // The peak is measured, not computed: on a machine whose every core is
    // taken, the in-process server can fall so far behind that a short
    // crawl never has two fetches out at once (a CI run saw 1). A crawler
    // that gave itself one socket shows 1 every time, so the best of three
    // runs tells the two apart.
    let mut achieved = limited.achieved_concurrency();
    for _ in 0..2 {
        if achieved >= 2 {
            break;
        }
        let again = run_program(program, &all, Some(fd_limit));
        assert_complete(
            &again,
            &format!("{program} --demo under ulimit -n {fd_limit}, run again"),
        );
        achieved = achieved.max(again.achieved_concurrency());
    }
    assert!(
        (2..fd_limit / 2).contains(&achieved),
        "achieved concurrency of {program} --demo under ulimit -n {fd_limit}, the best of \
         three runs: {achieved}; the demo server in the same process holds the other end of \
         each connection, so the crawler may use about half of what the limit leaves, which \
         is at least 2 and below {}",
        fd_limit / 2
    );
}

/// `--demo` under a limit that leaves no room for one connection beside
/// the demo server (stdio and the server's three descriptors already use 6
/// of 9): the program says so and exits 1 at once, instead of connecting to
/// a server that cannot accept and waiting out its deadlines.
pub fn demo_below_its_floor(program: &str, args: &[&str]) {
    let _shared = sharing_descriptors();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-q", "--demo"]);
    let run = run_program(program, &all, Some(9));
    assert_eq!(
        run.code,
        Some(1),
        "exit status of --demo under ulimit -n 9, which leaves no descriptor for a \
         connection: 1, at once (None: killed, e.g. at the deadline)\nstdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        run.stderr.contains("cannot serve the demo site"),
        "no line saying `cannot serve the demo site` on stderr; it printed:\n{}",
        run.stderr
    );
}

/// The exit status follows the status-line rule, as a program: a root that
/// answered with a status line and a broken head exits 0; a root on a closed
/// port exits 1 with the hint on how to start a site.
pub fn exit_status_follows_status_lines(program: &str, args: &[&str]) {
    let _shared = sharing_descriptors();
    let server = TestServer::start(Site::new().route(
        "/",
        Route::raw("HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\nhello"),
    ));
    let root = server.url("/");
    let mut all: Vec<&str> = args.to_vec();
    all.push(&root);
    let run = run_program(program, &all, None);
    assert_eq!(
        run.code,
        Some(0),
        "exit status when the root answered a status line (then a broken head): 0, the \
         site answered; stderr:\n{}",
        run.stderr
    );
    assert!(
        run.stdout.contains(&format!("{root} error ")),
        "no report line `{root} error ...` (its head is broken) in:\n{}",
        run.stdout
    );
    assert!(
        !run.stderr.contains("Is a site running?"),
        "the hint `Is a site running?` is for a crawl that received no status line, and \
         this one did; stderr:\n{}",
        run.stderr
    );

    let closed = format!("http://{}/", crate::fixtures::server::refused_addr());
    let mut all: Vec<&str> = args.to_vec();
    all.push(&closed);
    let run = run_program(program, &all, None);
    assert_eq!(
        run.code,
        Some(1),
        "exit status when the only root, {closed}, is a closed port: 1, no status line \
         received; stderr:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("Is a site running?"),
        "no hint `Is a site running?` on stderr after a crawl that received no status \
         line; stderr:\n{}",
        run.stderr
    );
}

/// [`out_of_descriptors_waits_for_a_free_one`] uses up the descriptors of
/// the whole test process, and tests run on parallel threads: one that
/// started a server or a program meanwhile would fail for want of one. So
/// that check holds this lock's write side, and the other program checks of
/// this module hold its read side while they run.
static PROCESS_DESCRIPTORS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// The read side of [`PROCESS_DESCRIPTORS`], for a check that needs
/// descriptors of its own (a server, a program to run).
fn sharing_descriptors() -> std::sync::RwLockReadGuard<'static, ()> {
    PROCESS_DESCRIPTORS
        .read()
        .unwrap_or_else(|e| e.into_inner())
}

/// A lesson's `crawl_with_budget`: its crawl, with the socket budget given
/// rather than read from the open-file limit.
pub type CrawlWithBudget = fn(&Config, usize) -> anyhow::Result<CrawlReport>;

/// Set in the environment of the server process of
/// [`out_of_descriptors_waits_for_a_free_one`]: how many linked pages to
/// serve.
pub const DESCRIPTOR_SERVER_PAGES: &str = "COURSE_DESCRIPTOR_SERVER_PAGES";

/// How many hosts the server process of
/// [`out_of_descriptors_waits_for_a_free_one`] serves: each is a host of its
/// own (a port), so the crawl fetches that many robots.txt files, most of
/// them while the root's host's pages hold every free descriptor.
const DESCRIPTOR_SERVER_HOSTS: usize = 25;

/// The server process of [`out_of_descriptors_waits_for_a_free_one`]: when
/// [`DESCRIPTOR_SERVER_PAGES`] is set, serve a root linking to that many
/// pages, one in six on the other [`DESCRIPTOR_SERVER_HOSTS`] hosts, print `SERVER <url>`, and serve until standard input closes. A
/// lesson's test binary calls this from an ignored test, and the check
/// re-runs the binary with only that test.
pub fn descriptor_server_process() {
    use std::io::{Read, Write};
    let Some(pages) = std::env::var(DESCRIPTOR_SERVER_PAGES)
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
    else {
        return;
    };
    let (listeners, ports) = hosts::listen_on_loopback(DESCRIPTOR_SERVER_HOSTS);
    // Every sixth page on one of the other hosts, the rest on the root's.
    let host_of = |i: usize| {
        if i % 6 == 5 {
            1 + (i / 6) % (DESCRIPTOR_SERVER_HOSTS - 1)
        } else {
            0
        }
    };
    let links: String = (0..pages)
        .map(|i| {
            let port = ports[host_of(i)];
            format!("<a href=\"http://127.0.0.1:{port}/page/{i}\">{i}</a>\n")
        })
        .collect();
    let mut sites: Vec<Site> = (0..DESCRIPTOR_SERVER_HOSTS).map(|_| Site::new()).collect();
    sites[0] = std::mem::take(&mut sites[0]).page("/", links);
    for i in 0..pages {
        let site = &mut sites[host_of(i)];
        // The root's host's pages answer after a moment, so that its fetches
        // hold the free descriptors while the other hosts' robots.txt
        // fetches (and their second tries) look for one.
        let delay = if host_of(i) == 0 { 50 } else { 0 };
        let page = Route::html("a page").delay(Duration::from_millis(delay));
        *site = std::mem::take(site).route(&format!("/page/{i}"), page);
    }
    let servers: Vec<TestServer> = listeners
        .into_iter()
        .zip(sites)
        .map(
            |(listener, site)| match TestServer::start_on(listener, site) {
                Ok(server) => server,
                Err(e) => panic!("cannot serve a host of the descriptor site: {e}"),
            },
        )
        .collect();
    println!("SERVER {}", servers[0].url("/"));
    let _ = std::io::stdout().flush();
    // Serve until the parent closes our stdin (or dies).
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// Running out of file descriptors when the budget said there were some:
/// the crawl waits for one, it does not fail. The socket budget normally
/// keeps a lesson below the open-file limit; this check takes that safety
/// away. It uses up nearly every descriptor of the process *before* the
/// crawl, then crawls with a budget far above what is left, so that opening
/// sockets fails with "too many open files" (`EMFILE`) and the lesson must
/// wait for one of its own sockets to close. Every crawl must fetch every
/// URL; of up to three crawls, one must have waited (a crawl slowed down by
/// a busy machine may never hold more sockets than are free).
///
/// The server must not share the shortage (it needs a descriptor for every
/// connection it accepts), so it runs in a child process: this same test
/// binary, re-run with only the ignored test `server_test`, which calls
/// [`descriptor_server_process`].
pub fn out_of_descriptors_waits_for_a_free_one(
    lesson: Lesson,
    crawl_with_budget: CrawlWithBudget,
    server_test: &str,
) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    /// Descriptors left free for the crawl.
    const FREE: usize = 20;
    /// Links on the root page: far more than `FREE`.
    const PAGES: usize = 300;
    match crate::net::open_files_limit() {
        Some(limit) if limit <= 1 << 20 => {}
        other => {
            eprintln!("skipped: open-file limit {other:?} is too large to use up");
            return;
        }
    }
    let _alone = PROCESS_DESCRIPTORS
        .write()
        .unwrap_or_else(|e| e.into_inner());
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut server = Command::new(exe)
        .args([server_test, "--exact", "--ignored", "--nocapture"])
        .env(DESCRIPTOR_SERVER_PAGES, PAGES.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the server process");
    let mut lines = BufReader::new(server.stdout.take().expect("piped stdout")).lines();
    let root = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("SERVER ").map(str::to_string))
        .expect("the server process prints its URL");
    // Keep reading what the child prints, so it never writes to a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));

    // Up to three crawls: one that never ran short (on a busy machine a
    // crawl can go slowly enough never to hold more than the free
    // descriptors at once) tests nothing, and is run again. Every crawl must
    // fetch every URL; at least one must have waited for a descriptor.
    let mut waited = false;
    let mut last_lines = Vec::new();
    for _ in 0..3 {
        let lines = crawl_out_of_descriptors(lesson, crawl_with_budget, &root, FREE, PAGES);
        waited = lines
            .iter()
            .any(|l| l.starts_with("wait http") && l.ends_with(": out of file descriptors"));
        last_lines = lines;
        if waited {
            break;
        }
    }
    drop(server.stdin.take());
    let _ = server.wait();
    let lines = last_lines;
    assert!(
        waited,
        "no log line `wait URL: out of file descriptors` in three crawls: the crawl logs it \
         at debug level when opening a socket fails for want of a descriptor and the fetch \
         waits for one. Every URL was fetched, so if yours did wait, check the wording. \
         Lines mentioning `descriptor`:\n{}All lines:\n{}",
        lines_mentioning(&lines, "descriptor"),
        show_lines(&lines)
    );
}

/// One crawl of [`out_of_descriptors_waits_for_a_free_one`]: every
/// descriptor of the process but `free` in use, the crawl's budget far
/// above that. Checks the report and that no wait counted as a try, and
/// returns the log lines.
fn crawl_out_of_descriptors(
    lesson: Lesson,
    crawl_with_budget: CrawlWithBudget,
    root: &str,
    free: usize,
    pages: usize,
) -> Vec<String> {
    // Use up every descriptor, then give back a few.
    let mut hog = Vec::new();
    loop {
        match std::fs::File::open("/dev/null") {
            Ok(file) => hog.push(file),
            Err(err) if crate::net::is_out_of_descriptors(&err) => break,
            Err(err) => panic!("open /dev/null: {err}"),
        }
    }
    hog.truncate(hog.len().saturating_sub(free));

    let mut config = Config::new(lesson, [root.to_string()]);
    config.log = Log::capture(Level::Debug);
    config.timeout = Duration::from_secs(30);
    // Far more fetches at once than free descriptors, in every lesson.
    config.threads = 100;
    config.max_tasks = 100;
    let report = crawl_within_deadline_with(move |c| crawl_with_budget(c, 1000), &config);
    drop(hog);

    assert_eq!(
        report.stats.len(),
        pages + 1,
        "URLs reported: the root and its {pages} links, every one fetched though only \
         {free} descriptors were free (a fetch that finds none waits, it does not fail)\n{}",
        report.render()
    );
    assert!(
        report.stats.iter().all(|s| s.status == Some(200)),
        "every URL must end with status 200: out of descriptors, a fetch waits for one of \
         the crawl's own sockets to close instead of failing\n{}",
        report.render()
    );
    assert_eq!(
        report.todo, 0,
        "Todo: URLs seen but never finished; none after a complete crawl"
    );
    // And nothing held at the end: a place retired for want of a
    // descriptor leaves the budget for good, every other comes back.
    assert_consistent(&report);
    let lines = config.log.lines();
    // Each host's robots.txt is a 404 (everything allowed). One whose fetch
    // found no free descriptor and took that as the host's answer says
    // `unreachable (... too many open files)` instead.
    let robots_short: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("robots.txt for ") && l.contains("too many open files"))
        .collect();
    assert!(
        robots_short.is_empty(),
        "a robots.txt fetch that found no free descriptor was taken as its host's answer: \
         like a page's fetch, it waits for one of the crawl's own sockets to close, and then \
         asks the host. The lines:\n{}",
        robots_short
            .iter()
            .map(|l| format!("  {l}\n"))
            .collect::<String>()
    );
    // Every URL answers at its first try, so a line about a try means a
    // wait was counted as one: `try N for URL raised ...` (the wait itself
    // as a failed try) or `try N for URL success` (N above 1: the waits
    // before it counted).
    let tries: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("try ") && (l.contains(" raised ") || l.ends_with(" success")))
        .collect();
    assert!(
        tries.is_empty(),
        "a fetch that found no free descriptor was counted as a try of its URL (`try N \
         for URL raised ...`, or `try N for URL success` with N above 1): running out of \
         descriptors is a wait for one of the crawl's own sockets to close, and every URL \
         here answers at its first try. The lines:\n{}",
        tries.iter().map(|l| format!("  {l}\n")).collect::<String>()
    );
    lines
}

/// The check behind the "retry network errors" exercise of lessons 1–3
/// (lesson 4 has retries built in): with `max_tries = 3`, `/flaky` drops its
/// first two connections and answers the third, and `/dead` never answers —
/// so `/flaky` ends as a 200 after three requests, `/dead` as a `reset`
/// failure after three, and a page that answered is never fetched twice.
pub fn exercise_retry_network_errors(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page(
                "/",
                r#"<a href="/flaky">flaky</a> <a href="/dead">dead</a>"#,
            )
            .route("/flaky", Route::html("at last").drop_first(2))
            .route("/dead", Route::html("never").drop_first(usize::MAX)),
    );
    let mut config = config_for(lesson, &server, "/");
    config.max_tries = 3;
    let report = crawl_within_deadline(crawl, &config);

    let flaky = stat(&report, &server.url("/flaky"));
    assert_eq!(
        flaky.status,
        Some(200),
        "/flaky drops its first two connections and answers the third: with max_tries 3 \
         it ends as a 200; its statistic was {flaky:?}"
    );
    assert_eq!(
        server.request_count("/flaky"),
        3,
        "requests for /flaky: two dropped, then the third answered"
    );

    assert_eq!(
        kind_of(&report, &server.url("/dead")),
        Some(FailKind::Reset),
        "/dead drops every connection: after its last try it fails as `reset`"
    );
    assert_eq!(
        server.request_count("/dead"),
        3,
        "requests for /dead: max_tries is 3, so three tries, no more"
    );
    assert_eq!(
        server.request_count("/"),
        1,
        "requests for /: one, since a page that answered is never fetched again"
    );
}

// ---- politeness: robots.txt, --delay, --max-pages, --max-depth ----

/// The robots.txt of [`robots_rules`]: a group for another crawler, one for
/// this one (case-insensitive token, a wildcard, an end anchor, an `Allow`
/// that wins a tie by being longer), and a `*` group that must not apply.
const ROBOTS_TXT: &str = "\
User-agent: other-bot
Disallow: /

User-agent: Crawler-Course
Disallow: /private
Allow: /private/open
Disallow: /*.pdf$

User-agent: *
Disallow: /a
";

/// The site of [`robots_rules`]: a root linking to pages robots.txt allows
/// and refuses; a refused page's links must not be followed.
fn robots_site() -> Site {
    Site::new()
        .route("/robots.txt", Route::body("text/plain", ROBOTS_TXT))
        .page(
            "/",
            r#"<a href="/a">a</a> <a href="/private/x">x</a>
               <a href="/private/open">open</a> <a href="/doc.pdf">pdf</a>
               <a href="/doc.pdf?v=2">pdf 2</a>"#,
        )
        .page("/a", "a")
        .page("/private/x", r#"<a href="/behind">behind</a>"#)
        .page("/behind", "never linked from an allowed page")
        .page("/private/open", "open")
        .route("/doc.pdf", Route::body("application/pdf", "%PDF"))
        .route("/doc.pdf?v=2", Route::body("application/pdf", "%PDF"))
}

/// robots.txt is fetched once, before anything else on the host; its group
/// for this crawler decides; refused URLs are reported as `blocked robots`,
/// not fetched, and their links not followed; every request names the
/// crawler in `User-Agent`.
pub fn robots_rules(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(robots_site());
    let config = config_for(lesson, &server, "/");
    let report = crawl_within_deadline(crawl, &config);
    assert_consistent(&report);
    let url = |path: &str| server.url(path);
    for path in ["/", "/a", "/private/open", "/doc.pdf?v=2"] {
        assert_eq!(
            stat(&report, &url(path)).status,
            Some(200),
            "{path}: allowed by robots.txt's group for `Crawler-Course` (the `*` group, \
             which refuses /a, does not apply; `Allow: /private/open` is longer than \
             `Disallow: /private`; `/*.pdf$` does not match a query), so fetched"
        );
    }
    for path in ["/private/x", "/doc.pdf"] {
        let line = crate::report::line(stat(&report, &url(path))).to_string();
        assert_eq!(
            line,
            format!("{} blocked robots", url(path)),
            "{path}: refused by robots.txt, so its report line is `URL blocked robots`"
        );
        assert_eq!(
            server.request_count(path),
            0,
            "requests for {path}, which robots.txt refuses: none"
        );
    }
    assert!(
        report.get(&url("/behind")).is_none(),
        "/behind is linked only from /private/x, which robots.txt refuses: a refused \
         page is not fetched, so its links are never seen\n{}",
        report.render()
    );
    assert_eq!(
        report.counts().get("blocked"),
        Some(&2),
        "the stats table's `blocked`: the URLs robots.txt refused, /private/x and /doc.pdf\n{}",
        report.render()
    );
    let requests = server.requests();
    assert_eq!(
        requests[0].target, "/robots.txt",
        "the first request to a host: its robots.txt, before any page"
    );
    assert_eq!(
        server.request_count("/robots.txt"),
        1,
        "requests for robots.txt: one per host, its rules kept for the whole crawl"
    );
    let agents: BTreeSet<Option<&str>> = requests.iter().map(|r| r.header("user-agent")).collect();
    assert!(
        requests
            .iter()
            .all(|r| r.header("user-agent") == Some("crawler-course")),
        "every request must carry `User-Agent: crawler-course`; the server saw {agents:?}"
    );
    let said = config.log.lines();
    let wanted = format!("robots.txt for {}: status 200", server.addr());
    assert!(
        said.iter().any(|l| l.starts_with(&wanted)),
        "no log line beginning `{wanted}`: the crawl logs at info level what it read of a \
         host's robots.txt; lines mentioning `robots`:\n{}",
        lines_mentioning(&said, "robots")
    );

    // Another name picks another group: everything refused, and the crawl
    // still counts as answered (the site said so).
    let mut config = config_for(lesson, &server, "/");
    config.user_agent = "other-bot".into();
    let report = crawl_within_deadline(crawl, &config);
    assert_consistent(&report);
    let expected = set(&[url("/")]);
    assert_eq!(
        report.urls(),
        expected,
        "as `other-bot`, whose group says `Disallow: /`: only the root, refused{}",
        url_diff(&report.urls(), &expected)
    );
    assert_eq!(
        stat(&report, &url("/")).blocked,
        Some(crate::Blocked::Robots),
        "/ as `other-bot`: refused by robots.txt (`blocked robots`)"
    );
    assert!(
        report.received_any_status(),
        "a root robots.txt refused counts as answered (the site answered robots.txt), so \
         the program exits 0\n{}",
        report.render()
    );
}

/// `--robots ignore`: no robots.txt request, every page fetched.
pub fn robots_ignored(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(robots_site());
    let mut config = config_for(lesson, &server, "/");
    config.obey_robots = false;
    let report = crawl_within_deadline(crawl, &config);
    assert_consistent(&report);
    assert_eq!(
        server.request_count("/robots.txt"),
        0,
        "requests for robots.txt with --robots ignore: none"
    );
    assert_eq!(
        server.request_count("/private/x"),
        1,
        "requests for /private/x, which robots.txt would refuse: one, with --robots ignore"
    );
    assert_eq!(
        stat(&report, &server.url("/behind")).status,
        Some(200),
        "/behind, linked from /private/x: fetched with --robots ignore"
    );
    assert!(
        !report.counts().contains_key("blocked"),
        "with --robots ignore no URL is `blocked`\n{}",
        report.render()
    );
}

/// What robots.txt answers other than 200 mean: a 404 allows everything
/// (the crawl is the crawl without robots.txt, one request more); a 500
/// twice, or no answer twice, refuses everything as `robots-unavailable`; a
/// redirect is followed to the rules.
pub fn robots_statuses(lesson: Lesson, crawl: CrawlFn) {
    let site = || {
        Site::new()
            .page("/", r#"<a href="/a">a</a> <a href="/b">b</a>"#)
            .page("/a", "a")
            .page("/b", "b")
    };
    let crawl_with = |robots: Option<Route>, timeout: Duration| {
        let site = match robots {
            Some(route) => site().route("/robots.txt", route),
            None => site(),
        };
        let server = TestServer::start(site);
        let mut config = config_for(lesson, &server, "/");
        config.timeout = timeout;
        config.max_tries = 1;
        let report = crawl_within_deadline(crawl, &config);
        assert_consistent(&report);
        (server, report)
    };

    let (server, report) = crawl_with(None, Duration::from_secs(10));
    assert_eq!(
        report.urls().len(),
        3,
        "URLs reported when robots.txt is a 404 (no rules): all three pages\n{}",
        report.render()
    );
    assert!(
        report.stats.iter().all(|s| s.status == Some(200)),
        "robots.txt a 404 allows everything: every page ends as a 200\n{}",
        report.render()
    );
    assert_eq!(
        server.request_count("/robots.txt"),
        1,
        "requests for robots.txt when it is a 404: one (a 404 is an answer, not retried)"
    );
    assert_eq!(
        server.requests_total(),
        4,
        "requests in all: the three pages once, robots.txt once"
    );

    // (what robots.txt does, its route, the timeout, whether the site
    // answered: a crawl with no answer at all exits 1, as with a closed
    // port.)
    for (what, robots, timeout, answered) in [
        (
            "answers 503",
            Route::status(503),
            Duration::from_secs(10),
            true,
        ),
        (
            "answers 429",
            Route::status(429),
            Duration::from_secs(10),
            true,
        ),
        (
            "never answers",
            Route::stall(),
            Duration::from_millis(300),
            false,
        ),
    ] {
        let (server, report) = crawl_with(Some(robots), timeout);
        let root = server.url("/");
        let expected = set(std::slice::from_ref(&root));
        assert_eq!(
            report.urls(),
            expected,
            "robots.txt {what} twice: the root alone is reported, refused{}",
            url_diff(&report.urls(), &expected)
        );
        let line = crate::report::line(stat(&report, &root)).to_string();
        assert_eq!(
            line,
            format!("{root} blocked robots-unavailable"),
            "robots.txt {what} twice: the root's report line"
        );
        assert_eq!(
            server.request_count("/robots.txt"),
            2,
            "requests for robots.txt when it {what}: the first and one retry"
        );
        assert_eq!(
            server.request_count("/"),
            0,
            "requests for / when robots.txt {what}: none, every URL of the host refused"
        );
        assert_eq!(
            report.received_any_status(),
            answered,
            "robots.txt {what}: whether the crawl received a status line (exit 0 if so, \
             1 if not)"
        );
    }

    let (server, report) = crawl_with(
        Some(Route::redirect(301, "/rules.txt")),
        Duration::from_secs(10),
    );
    // `/rules.txt` is not served: a 404 there means no rules.
    assert_eq!(
        report.urls().len(),
        3,
        "robots.txt redirects to /rules.txt, a 404, so no rules: all three pages\n{}",
        report.render()
    );
    assert_eq!(
        server.request_count("/rules.txt"),
        1,
        "requests for /rules.txt, robots.txt's redirect target: one (the redirect is \
         followed)"
    );
}

/// `--delay`: the starts of two requests to one host are the delay apart,
/// robots.txt included, as the server sees them; two hosts (two ports) are
/// spaced each on its own, so their requests interleave. A host's
/// `Crawl-delay` longer than `--delay` wins.
///
/// The server sees a request some time after the crawler started its fetch
/// (a connect, a write, the scheduler), and on a busy machine that time
/// varies, by more than a hundred milliseconds when every core is taken
/// (a CI run saw two requests 71 ms apart with a 200 ms delay). So the
/// checks allow for it where it cannot hide a missing delay: each gap is at
/// least a quarter of the delay (without the delay, requests go out
/// back to back), and the span from a host's first request to its last,
/// which only the two ends can shorten, holds at least three of its four
/// delays (a delay kept at half its length gives two).
pub fn delay_per_host(lesson: Lesson, crawl: CrawlFn) {
    const DELAY: Duration = Duration::from_millis(300);
    let site = |robots: &str| {
        Site::new()
            .route("/robots.txt", Route::body("text/plain", robots))
            .page(
                "/",
                r#"<a href="/1">1</a> <a href="/2">2</a> <a href="/3">3</a>"#,
            )
            .page("/1", "1")
            .page("/2", "2")
            .page("/3", "3")
    };
    let a = TestServer::start(site(""));
    // Its own Crawl-delay: twice `--delay`.
    let b = TestServer::start(site("User-agent: *\nCrawl-delay: 0.6\n"));
    let mut config = config_for(lesson, &a, "/");
    config.roots.push(b.url("/"));
    config.delay = DELAY;
    let report = crawl_within_deadline(crawl, &config);
    assert_consistent(&report);
    assert_eq!(
        report.stats.len(),
        8,
        "URLs reported: / and its three links on each of the two hosts\n{}",
        report.render()
    );
    for (server, delay, whose) in [
        (&a, DELAY, "--delay 0.3"),
        (
            &b,
            Duration::from_millis(600),
            "its robots.txt's Crawl-delay: 0.6",
        ),
    ] {
        let times: Vec<Instant> = server.requests().iter().map(|r| r.received).collect();
        assert_eq!(
            times.len(),
            5,
            "requests to the host with {whose}: robots.txt and four pages"
        );
        for pair in times.windows(2) {
            let gap = pair[1].saturating_duration_since(pair[0]);
            assert!(
                gap >= delay / 4,
                "two requests to the host with {whose} came {gap:?} apart: a host's next \
                 turn is its last turn plus {delay:?} (the scheduling noise of a busy \
                 machine is allowed for, down to a quarter of it)"
            );
        }
        let span = times[4].saturating_duration_since(times[0]);
        assert!(
            span >= delay * 3,
            "the five requests to the host with {whose} spanned {span:?}: four turns after \
             the first, each {delay:?} after the one before, take {:?} (at least {:?} is \
             allowed, for a busy machine)",
            delay * 4,
            delay * 3
        );
    }
    // Interleaved: the faster host is done before the slower one is.
    let last = |server: &TestServer| server.requests().last().map(|r| r.received);
    assert!(last(&a) < last(&b), "host a waited for host b");
}

/// A crawl in which every URL answers 200 writes no error line: the
/// error level is for what went wrong (a URL that failed for good, a
/// worker that failed), not for the crawl's own shutdown.
pub fn clean_crawl_logs_no_error(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/a">a</a> <a href="/b">b</a>"#)
            .page("/a", r#"<a href="/b">b</a>"#)
            .page("/b", r#"<a href="/">home</a>"#),
    );
    let mut config = config_for(lesson, &server, "/");
    // Only the error level is captured.
    config.log = Log::capture(Level::Error);
    let report = crawl_within_deadline(crawl, &config);
    assert_eq!(
        report.stats.len(),
        3,
        "URLs reported for a site of three pages that link to each other\n{}",
        report.render()
    );
    let lines = config.log.lines();
    assert!(
        lines.is_empty(),
        "error lines written by a crawl in which every URL answered 200 (a crawler that \
         stops its workers or tasks at the end must not report their stopping as an \
         error):\n{}",
        show_lines(&lines)
    );
}

/// `-v`'s debug lines for a page's links (`log_queued`): `queue LINK from
/// URL` for a link new to the crawl, `skip LINK from URL: already seen` for
/// one it knew (a root is known from the start).
pub fn debug_lines_for_links(lesson: Lesson, crawl: CrawlFn) {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/a">a</a>"#)
            .page("/a", r#"<a href="/">home</a>"#),
    );
    // `config_for` shows debug lines and captures them.
    let config = config_for(lesson, &server, "/");
    crawl_within_deadline(crawl, &config);
    let (root, a) = (server.url("/"), server.url("/a"));
    let lines = config.log.lines();
    for (expected, what) in [
        (
            format!("queue {a} from {root}"),
            "/a, new when / links to it",
        ),
        (
            format!("skip {root} from {a}: already seen"),
            "/, a root, seen from the start when /a links back to it",
        ),
    ] {
        assert!(
            lines.contains(&expected),
            "no debug line `{expected}` ({what}): with debug lines shown, `log_queued` \
             writes one line per link of a page; the lines that mention `from`:\n{}",
            lines_mentioning(&lines, " from ")
        );
    }
}

/// `--max-pages N`: exactly N page fetches (robots.txt not counted), the
/// rest left in `Todo`. `--max-depth N`: the links of depth-N pages are not
/// followed (roots are depth 0), and the limit is exact.
pub fn page_and_depth_limits(lesson: Lesson, crawl: CrawlFn) {
    let fan = TestServer::start(
        Site::new()
            .page(
                "/",
                r#"<a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a>
                   <a href="/d">d</a> <a href="/e">e</a>"#,
            )
            .page("/a", "a")
            .page("/b", "b")
            .page("/c", "c")
            .page("/d", "d")
            .page("/e", "e"),
    );
    let mut config = config_for(lesson, &fan, "/");
    config.max_pages = Some(3);
    let report = crawl_within_deadline(crawl, &config);
    assert_eq!(
        report.stats.len(),
        3,
        "URLs reported with --max-pages 3: exactly three\n{}",
        report.render()
    );
    assert_eq!(
        report.todo, 3,
        "Todo: URLs seen but not fetched, including those --max-pages left (/ and its \
         five links are six URLs seen, three fetched)"
    );
    assert_eq!(
        fan.requests_total(),
        4,
        "requests in all with --max-pages 3: three pages and robots.txt (which is not a \
         page)"
    );
    assert!(
        report.get(&fan.url("/")).is_some(),
        "the root must be one of the three pages --max-pages 3 fetches\n{}",
        report.render()
    );

    let chain = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/1">1</a> <a href="/1b">1b</a>"#)
            .page("/1", r#"<a href="/2">2</a>"#)
            .page("/1b", r#"<a href="/1">1</a>"#)
            .page("/2", r#"<a href="/3">3</a>"#)
            .page("/3", "3"),
    );
    for (depth, paths) in [
        (0, &["/"][..]),
        (1, &["/", "/1", "/1b"][..]),
        (2, &["/", "/1", "/1b", "/2"][..]),
    ] {
        let mut config = config_for(lesson, &chain, "/");
        config.max_depth = Some(depth);
        let report = crawl_within_deadline(crawl, &config);
        assert_consistent(&report);
        let expected: Vec<String> = paths.iter().map(|p| chain.url(p)).collect();
        assert_eq!(
            report.urls(),
            expected.iter().cloned().collect(),
            "URLs reported with --max-depth {depth}: pages at most {depth} links from the \
             root (the root is depth 0){}",
            url_diff(&report.urls(), &set(&expected))
        );
        // The last depth's links are counted on its line, not queued.
        let last = stat(&report, &chain.url(paths[paths.len() - 1]));
        assert_eq!(
            last.num_new_urls,
            0,
            "NEW on {}'s line with --max-depth {depth}: it is at depth {depth}, so its \
             links are counted (TOTAL) but not queued, none new",
            paths[paths.len() - 1]
        );
    }
}

/// The live status line: on a terminal (a pseudo-terminal made by
/// `script(1)`), `program --demo` draws `done … · in flight …` in place
/// and prints no per-URL line before the report; piped, it prints the
/// per-URL lines and no status line.
pub fn status_line_on_a_terminal(program: &str) {
    let shell_quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let command = format!("{} --demo", shell_quote(program));
    let mut script = std::process::Command::new("script");
    script.args(["-q", "-e", "-c", &command, "/dev/null"]);
    let out = run_within_deadline(
        script,
        &format!("`{command}` on a pseudo-terminal (script(1), from util-linux)"),
    );
    assert_eq!(
        out.code,
        Some(0),
        "exit status of `{command}` on a terminal: 0, a crawl that finished\n{}{}",
        out.stdout,
        out.stderr
    );
    let text = out.stdout;
    let (before, _report) = text
        .split_once("*** Report ***")
        .unwrap_or_else(|| panic!("no report in {text:?}"));
    assert!(before.contains("\rdone "), "no status line in {before:?}");
    assert!(
        before.contains("· in flight "),
        "the status line reads `done N · in flight N · queued N · ...`; no `· in flight ` \
         in {before:?}"
    );
    assert!(
        before.contains("\x1b[K"),
        "the line is not redrawn in place"
    );
    assert!(
        !before.contains(" 200 text/html "),
        "per-URL lines on a terminal: {before:?}"
    );

    // Every lesson counts alike: with a delay, nothing is in flight when
    // the root's line is done, and all it queued is waiting. (No
    // `--max-pages`: lesson 1's other threads may refuse links over the
    // limit before the root's line is drawn, or after.)
    let command = format!("{} --demo --delay 0.25 --max-depth 1", shell_quote(program));
    let mut script = std::process::Command::new("script");
    script.args(["-q", "-e", "-c", &command, "/dev/null"]);
    let text = run_within_deadline(
        script,
        &format!(
            "`{command}` on a pseudo-terminal (the demo site's root and its links only: \
             a crawl that goes deeper, or never ends, has lost track of each URL's depth)"
        ),
    )
    .stdout;
    let root_new = text
        .lines()
        .find_map(|line| {
            let line = line.trim();
            let (url, rest) = line.split_once(' ')?;
            let path = url.strip_prefix("http://")?.split_once('/')?.1;
            let new = rest
                .strip_prefix("200 ")?
                .rsplit(' ')
                .next()?
                .split_once('/')?
                .0;
            (path.is_empty()).then(|| new.to_string())
        })
        .unwrap_or_else(|| panic!("no root line in {text:?}"));
    let first = format!("\rdone 1 · in flight 0 · queued {root_new} · ");
    assert!(text.contains(&first), "{first:?} not in {text:?}");

    let mut piped = std::process::Command::new(program);
    piped.arg("--demo");
    let stderr = run_within_deadline(piped, &format!("{program} --demo, piped")).stderr;
    assert!(
        stderr.contains(" 200 text/html "),
        "piped, `--demo` prints a line per URL on stderr (` 200 text/html ` for a page); \
         it printed:\n{stderr}"
    );
    assert!(
        !stderr.contains('\r'),
        "a status line on a pipe: {stderr:?}"
    );
}

/// Expands to one `#[test]` per behaviour case for a lesson's `crawl`.
#[macro_export]
macro_rules! behaviour_suite {
    ($lesson:expr, $crawl:path) => {
        $crate::behaviour_suite!(@cases $lesson, $crawl;
            link_cycle, not_found, prohibited_host, exclude, fragments,
            relative_links, non_html_not_parsed, redirect_recorded,
            malformed_response, stuck_server, non_utf8_body, https_unsupported,
            too_large, chunked_body, duplicate_roots, closed_port,
            answered_but_broken, generated_site, info_lines, robots_rules,
            robots_ignored, robots_statuses, delay_per_host, page_and_depth_limits,
            debug_lines_for_links, clean_crawl_logs_no_error, response_in_pieces);
    };
    (@cases $lesson:expr, $crawl:path; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::behaviour::$case($lesson, $crawl);
            }
        )*
    };
}

/// Expands to the descriptor checks for a lesson, one `#[test]` each:
/// its `program` under `ulimit -n 64` on a slow site and with `--demo`
/// (run with `args`), and its `crawl_with_budget` in a process out of
/// descriptors — with the ignored `server_process` that check re-runs the
/// test binary as.
#[macro_export]
macro_rules! descriptor_suite {
    ($lesson:expr, $crawl_with_budget:path, $program:expr, [$($arg:expr),* $(,)?]) => {
        #[test]
        #[ignore = "not a test: the server process of out_of_descriptors_waits_for_a_free_one"]
        fn server_process() {
            $crate::behaviour::descriptor_server_process();
        }

        #[test]
        fn out_of_descriptors_waits_for_a_free_one() {
            $crate::behaviour::out_of_descriptors_waits_for_a_free_one(
                $lesson,
                $crawl_with_budget,
                "server_process",
            );
        }

        #[test]
        fn slow_site_under_ulimit_64() {
            $crate::behaviour::slow_site_under_fd_limit($program, &[$($arg),*], 64);
        }

        #[test]
        fn demo_under_ulimit_64() {
            $crate::behaviour::demo_under_fd_limit($program, &[$($arg),*], 64);
        }

        #[test]
        fn many_hosts_under_ulimit() {
            $crate::behaviour::hosts::many_hosts_under_fd_limits($program, &[$($arg),*]);
        }

        #[test]
        #[ignore = "a sweep of host counts and descriptor limits, minutes long: run by hand"]
        fn many_hosts_sweep() {
            $crate::behaviour::hosts::many_hosts_sweep($program, &[$($arg),*]);
        }

        #[test]
        fn demo_below_its_floor() {
            $crate::behaviour::demo_below_its_floor($program, &[$($arg),*]);
        }
    };
}

/// The checkpoint a chapter shows: the end of the report of `crawl` on the
/// demo site, as `lessonN --demo -q` prints it.
/// `docs/src/generated/checkpoints/lessonN.txt` holds the output of a real
/// run (found beside this crate, so a starter crate outside the checkout
/// checks against the same file); the check crawls again and compares, numbers that change
/// from run to run (times, rates, concurrency) left out, so the book's
/// sample cannot drift from what the lesson prints. With the environment
/// variable `UPDATE_CHECKPOINTS=1` it writes `file` from this run instead.
pub fn checkpoint(lesson: Lesson, crawl: CrawlFn) {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/src/generated/checkpoints")
        .join(format!("{}.txt", lesson.bin_name()));
    let file = file.as_path();
    let site = crate::demo::DemoSite::start().expect("the demo site");
    let mut config = Config::new(lesson, [site.root()]);
    config.log = Log::capture(Level::Error);
    let report = crawl_within_deadline(crawl, &config).render();
    // The report's per-URL lines carry the demo server's port: the tail,
    // from the `Finished` line on, is what the chapter shows.
    let tail = match report.find("Finished ") {
        Some(at) => &report[at..],
        None => panic!("no Finished line in:\n{report}"),
    };
    if std::env::var_os("UPDATE_CHECKPOINTS").is_some() {
        std::fs::write(file, tail).expect("write the checkpoint");
        return;
    }
    let expected = std::fs::read_to_string(file).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_CHECKPOINTS=1 to write it)",
            file.display()
        )
    });
    assert_eq!(
        stable(&expected),
        stable(tail),
        "the lesson's report no longer ends as {} says (run with UPDATE_CHECKPOINTS=1 to update it)",
        file.display()
    );
}

/// A report's tail without what changes from run to run: the numbers on
/// the `Finished` line and on the last line.
fn stable(tail: &str) -> String {
    let digits = regex::Regex::new(r"[0-9]+(\.[0-9]+)?").expect("constant regex");
    tail.lines()
        .map(|line| {
            if line.starts_with("Finished ") || line.contains("achieved concurrency") {
                digits.replace_all(line, "#").into_owned()
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("line {i}")).collect()
    }

    #[test]
    fn a_short_log_is_shown_whole_and_a_long_one_by_its_ends() {
        let short = show_lines(&numbered(3));
        assert_eq!(
            short, "  line 0\n  line 1\n  line 2\n",
            "three lines, all shown"
        );
        let long = show_lines(&numbered(100));
        assert!(
            long.contains("  line 0\n") && long.contains("  line 99\n"),
            "a long log's first and last lines are shown: {long}"
        );
        assert!(
            !long.contains("  line 50\n") && long.contains("70 lines left out"),
            "a long log's middle is left out, and counted: {long}"
        );
        assert!(
            show_lines(&[]).contains("nothing was logged"),
            "an empty log says so, rather than showing nothing"
        );
    }

    #[test]
    fn lines_mentioning_a_word_are_picked_out() {
        let lines = vec![
            "http://h/ 200 text/html utf-8 10 1/1".to_string(),
            "wait http://h/a: no descriptor".to_string(),
        ];
        assert_eq!(
            lines_mentioning(&lines, "descriptor"),
            "  wait http://h/a: no descriptor\n",
            "only the line with the word"
        );
        assert!(
            lines_mentioning(&lines, "robots").contains("no line mentions `robots`"),
            "no line with the word: said so"
        );
    }

    #[test]
    fn a_url_diff_names_what_is_missing_and_what_is_extra() {
        let got = set(&["http://h/".into(), "http://h/extra".into()]);
        let expected = set(&["http://h/".into(), "http://h/missing".into()]);
        assert_eq!(
            url_diff(&got, &expected),
            "\n  expected but not reported: [\"http://h/missing\"]\
             \n  reported but not expected: [\"http://h/extra\"]",
            "one URL each way"
        );
        let many: BTreeSet<String> = (0..25).map(|i| format!("http://h/{i:02}")).collect();
        assert!(
            url_diff(&BTreeSet::new(), &many).contains("and 15 more"),
            "at most ten URLs listed, the rest counted"
        );
    }
}
