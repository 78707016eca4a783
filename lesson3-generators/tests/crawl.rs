//! Whole crawls with lesson 3: the same URLs as lessons 1 and 2 on a
//! generated site, the socket budget, pages with more links than the
//! process has descriptors, and error lines that keep their context.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use shared::fixtures::server::{Route, Site, TestServer};
use shared::fixtures::sitegen::{generate, SiteSpec};
use shared::http::ResponseParser;
use shared::log::{Level, Log};
use shared::{Config, CrawlReport, Lesson};

/// A loopback listener whose accept queue holds 4,096 connections (the
/// kernel caps it at `net.core.somaxconn`), not the standard library's 128.
/// The crawls of these tests open hundreds to a thousand connections at
/// once; a queue that overflows makes the kernel reset one now and then,
/// which would fail a test for the server's sake, not the crawler's.
fn roomy_listener() -> std::net::TcpListener {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("a TCP socket");
    socket
        .bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .expect("bind 127.0.0.1:0");
    socket.listen(4096).expect("listen");
    socket.into()
}

fn config(lesson: Lesson, root: String) -> Config {
    let mut config = Config::new(lesson, [root]);
    config.log = Log::capture(Level::Info);
    config.timeout = Duration::from_secs(20);
    config
}

/// URL → status (or error kind), the part of a report every lesson shares.
fn outcomes(report: &CrawlReport) -> BTreeMap<String, String> {
    report
        .stats
        .iter()
        .map(|s| {
            let outcome = match (&s.error, s.status) {
                (Some(err), _) => format!("error {}", err.kind.key()),
                (None, Some(status)) => status.to_string(),
                (None, None) => "-".to_string(),
            };
            (s.url.clone(), outcome)
        })
        .collect()
}

#[test]
fn a_generated_site_gives_the_same_urls_as_lessons_1_and_2() {
    let site = generate(&SiteSpec::new(2000));
    let server =
        TestServer::start_on(roomy_listener(), site.to_site()).expect("start the test server");
    let root = server.url("/");

    let three = lesson3_generators::crawl(&config(Lesson::Three, root.clone()))
        .expect("the crawl must return its report for a root that answers");
    assert_eq!(
        three.urls(),
        site.expected_urls(&server.origin()),
        "the URLs lesson 3 reported: every URL the generated site links, each once"
    );
    assert_eq!(
        three.todo, 0,
        "Todo (URLs seen but not fetched) of a crawl with no --max-pages: none"
    );
    assert!(three.peak_in_flight > 1, "fetches ran one at a time");

    let one = lesson1_threadpool::crawl(&config(Lesson::One, root.clone()))
        .expect("the crawl must return its report for a root that answers");
    let two = lesson2_callbacks::crawl(&config(Lesson::Two, root))
        .expect("the crawl must return its report for a root that answers");
    assert_eq!(
        outcomes(&three),
        outcomes(&one),
        "each URL's outcome in lesson 3 (left) and lesson 1 (right): the same"
    );
    assert_eq!(
        outcomes(&three),
        outcomes(&two),
        "each URL's outcome in lesson 3 (left) and lesson 2 (right): the same"
    );
}

#[test]
fn the_socket_budget_bounds_the_fetches_in_flight() {
    let links: String = (0..40)
        .map(|i| format!("<a href=\"/slow/{i}\">{i}</a>\n"))
        .collect();
    let mut site = Site::new().page("/", links);
    for i in 0..40 {
        site = site.route(
            &format!("/slow/{i}"),
            Route::html("slow").delay(Duration::from_millis(30)),
        );
    }
    let server = TestServer::start(site);
    let report = lesson3_generators::crawl_with_budget(&config(Lesson::Three, server.url("/")), 5)
        .expect("the crawl must return its report for a root that answers");
    assert_eq!(
        report.stats.len(),
        41,
        "URLs reported: the root and its 40 pages"
    );
    assert!(
        report.stats.iter().all(|s| s.status == Some(200)),
        "a URL did not end with status 200"
    );
    assert!(
        report.peak_in_flight <= 5,
        "the report's peak in flight is {}, over the socket budget of 5",
        report.peak_in_flight
    );
    assert!(
        server.peak_in_flight() <= 5,
        "the server saw {} requests at once, over the socket budget of 5",
        server.peak_in_flight()
    );
}

#[test]
fn an_error_line_tells_where_the_fetch_failed() {
    let raw = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b";
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/short">s</a>"#)
            .route("/short", Route::raw(raw)),
    );
    let mut parser = ResponseParser::new();
    assert!(parser.feed(raw.as_bytes()).unwrap().is_none());
    let cause = parser
        .finish()
        .expect_err("it must be an error: an error line tells where the fetch failed");

    let config = config(Lesson::Three, server.url("/"));
    lesson3_generators::crawl(&config)
        .expect("the crawl must return its report for a root that answers");
    let url = server.url("/short");
    let line = format!("{url} error fetching {url}: reading response: {cause}");
    assert!(
        config.log.lines().contains(&line),
        "looked for the failed URL's log line {line:?} (the URL, `error`, then the \
         whole chain of context) and did not find it in {:#?}",
        config.log.lines()
    );
}

/// Each page of a chain links the next: when a page ends, its link is the
/// only URL left to do. The page must leave `urls_todo` only after its
/// links are in it, or `urls_todo` is empty for a moment and the loop stops.
#[test]
fn a_chain_of_pages_is_crawled_to_its_end() {
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/a">a</a>"#)
            .page("/a", r#"<a href="/b">b</a>"#)
            .page("/b", "the end"),
    );
    let report = match lesson3_generators::crawl(&config(Lesson::Three, server.url("/"))) {
        Ok(report) => report,
        Err(err) => panic!(
            "a crawl of a chain of pages (/ links /a, /a links /b) failed: {err:#}. If URLs \
             were left to do, a page was finished before its links were queued: `fetched` \
             must queue the page's links (`add_urls`) before it finishes the page \
             (`finished`, which stops the loop as soon as `urls_todo` is empty)"
        ),
    };
    assert_eq!(
        report.urls().len(),
        3,
        "URLs reported for a chain of three pages: all three ({:?})",
        report.urls()
    );
}

/// How many links the page crawled in a child process has.
const MANY_LINKS: usize = 1500;
/// The child's open-file limit: far fewer descriptors than links.
const LOW_LIMIT: usize = 200;

/// Crawl a page of [`MANY_LINKS`] links with `crawl_with_budget(budget)` in
/// a child process (the `child_crawl` test of this binary) whose open-file
/// limit is [`LOW_LIMIT`] (`ulimit -n`, so no `libc` is needed). The server
/// runs here, in the parent, so only the crawler's sockets count against
/// the child's limit. Returns how many times the crawl ran out of
/// descriptors.
fn crawl_in_a_child_with_few_descriptors(budget: &str) -> usize {
    let links: String = (0..MANY_LINKS)
        .map(|i| format!("<a href=\"/p/{i}\">{i}</a>\n"))
        .collect();
    let mut site = Site::new().page("/", links);
    for i in 0..MANY_LINKS {
        site = site.page(&format!("/p/{i}"), "a page");
    }
    let server = TestServer::start_on(roomy_listener(), site).expect("start the test server");
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {LOW_LIMIT} && exec \"$0\" \"$@\""))
        .arg(exe)
        .args([
            "--exact",
            "child_crawl",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LESSON3_CHILD_ROOT", server.url("/"))
        .env("LESSON3_CHILD_BUDGET", budget)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ran_out = stdout
        .lines()
        .find_map(|l| l.split("child crawl ok: ran out of descriptors ").nth(1))
        .and_then(|n| n.trim().parse().ok());
    match ran_out {
        Some(n) if out.status.success() => n,
        _ => panic!(
            "child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

#[test]
fn ten_thousand_links_under_ulimit_1024() {
    // The spec's descriptor promise, as lesson 2 keeps it: a page of 10,000
    // links, crawled by a process that may open only 1,024 files.
    shared::behaviour::many_links_under_fd_limit(
        env!("CARGO_BIN_EXE_lesson3"),
        10_000,
        1024,
        roomy_listener(),
    );
}

#[test]
fn running_out_of_descriptors_puts_the_url_back_in_line() {
    // A budget far above the limit: sockets run out (EMFILE), and the
    // crawler must wait for a free one instead of failing the URL.
    assert!(crawl_in_a_child_with_few_descriptors("10000") > 0);
}

/// The child half of the test above; does nothing useful on its own.
#[test]
#[ignore = "run in a child process by running_out_of_descriptors_puts_the_url_back_in_line"]
fn child_crawl() {
    let root = std::env::var("LESSON3_CHILD_ROOT").expect("run by a parent test");
    let budget: usize = std::env::var("LESSON3_CHILD_BUDGET")
        .expect("run by a parent test")
        .parse()
        .expect("a number");
    assert_eq!(
        shared::net::open_files_limit(),
        Some(LOW_LIMIT),
        "the child's open-file limit, set by its parent"
    );
    let mut config = config(Lesson::Three, root);
    config.log = Log::capture(Level::Debug);
    let report = lesson3_generators::crawl_with_budget(&config, budget)
        .expect("the crawl must return its report for a root that answers");
    let ran_out = config
        .log
        .lines()
        .iter()
        .filter(|l| l.ends_with("out of file descriptors"))
        .count();
    assert_eq!(
        report.stats.len(),
        MANY_LINKS + 1,
        "URLs reported: the root and every page it links"
    );
    let failed: Vec<_> = report.stats.iter().filter(|s| s.error.is_some()).collect();
    assert!(
        failed.is_empty(),
        "URLs failed when descriptors ran out (they must wait in line instead): {failed:#?}"
    );
    assert!(
        report.peak_in_flight < LOW_LIMIT,
        "the report's peak in flight is {}, not below the open-file limit {LOW_LIMIT}",
        report.peak_in_flight
    );
    println!("child crawl ok: ran out of descriptors {ran_out}");
}

/// A crawl whose loop ran out of work with URLs left says where they were:
/// `all_done` names those queued for their turn, waiting for a socket, and
/// in flight. (No correct crawl strands a URL, so this makes one: the loop
/// runs one turn and no more.)
#[test]
fn urls_left_when_the_loop_stops_are_named_by_where_they_wait() {
    use lesson3_generators::crawler::Crawler;
    use lesson3_generators::event_loop::EventLoop;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let mut config = Config::new(Lesson::Three, [format!("{origin}/")]);
    config.log = Log::capture(Level::Error);
    config.obey_robots = false;
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let crawler =
        Crawler::new(&config, 1).expect("`Crawler::new` must accept a valid configuration");
    assert_eq!(
        crawler
            .borrow()
            .all_done(crawler.borrow().held(&event_loop)),
        Ok(()),
        "nothing queued yet: all done"
    );
    for path in ["/a", "/b"] {
        let url = url::Url::parse(&format!("{origin}{path}")).unwrap();
        crawler.borrow_mut().fetch(&event_loop, url, 0);
    }
    // One turn: /a's task opens its socket; /b waits for the one socket.
    event_loop
        .run_once()
        .expect("`run_once` must return Ok on an open loop: one turn, whatever its callbacks do");
    let held = crawler.borrow().held(&event_loop);
    assert_eq!(
        (held.in_flight, held.sockets, held.registered, held.timers),
        (1, 1, 1, 1),
        "what the crawl holds with /a in flight: counted in flight, its place in the budget \
         (`started`), its socket on the loop and its deadline ({held})"
    );
    let stranded = crawler
        .borrow()
        .all_done(held)
        .expect_err("two URLs started and never finished: not all done");
    assert_eq!(
        (
            stranded.queued,
            stranded.waiting_for_socket,
            stranded.in_flight
        ),
        (0, 1, 1),
        "where the two URLs were: none queued for a turn, one waiting for the one socket, one \
         in flight ({stranded})"
    );
    event_loop.close();
}

/// Set in the child process that
/// `no_descriptor_and_nothing_in_flight_ends_robots_and_page_as_connect_errors`
/// starts (this test binary again, under a low `ulimit -n`).
const NO_FD_CHILD: &str = "LESSON3_CRAWL_NO_FD_CHILD";

/// Every descriptor in use and nothing in flight: neither the host's
/// robots.txt nor its page can have a socket, and no fetch will ever free
/// one. Each must end as a `connect` error, `too many open files` (the
/// robots.txt's leaves the host with no rules, so the page is fetched, and
/// fails the same way), not go back in line to wait for an end that never
/// comes. It runs in a child process under `ulimit -n 64`, because using up
/// the descriptors would fail every other test of this process meanwhile.
#[test]
fn no_descriptor_and_nothing_in_flight_ends_robots_and_page_as_connect_errors() {
    use lesson3_generators::crawler::Crawler;
    use lesson3_generators::event_loop::EventLoop;

    if std::env::var_os(NO_FD_CHILD).is_some() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let root = format!("http://{}/", listener.local_addr().unwrap());
        let mut config = Config::new(Lesson::Three, [root.clone()]);
        config.log = Log::capture(Level::Debug);
        // The loop's own descriptors first; then use up every one left.
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        event_loop.error_on_stall();
        let crawler =
            Crawler::new(&config, 100).expect("`Crawler::new` must accept a valid configuration");
        let mut held = Vec::new();
        while let Ok(file) = std::fs::File::open("/dev/null") {
            held.push(file);
            assert!(held.len() < 1_000, "ulimit -n 64 did not limit the files");
        }
        let url = url::Url::parse(&root).unwrap();
        crawler.borrow_mut().fetch(&event_loop, url, 0);
        let ran = event_loop.run_forever();
        drop(held);
        let held_at_end = crawler.borrow().held(&event_loop);
        let done = crawler.borrow().all_done(held_at_end);
        let lines = config.log.lines();
        assert!(
            ran.is_ok() && done.is_ok(),
            "with no descriptor left and nothing in flight, the crawl must end (robots.txt \
             and the page each a `connect` error, `too many open files`), not wait for a \
             descriptor no fetch will free: {ran:?} {done:?}\nlog lines:\n{}",
            lines.join("\n")
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("{root} error"))
                    && l.ends_with("too many open files")),
            "the page's line: `{root} error connect too many open files`\nlog lines:\n{}",
            lines.join("\n")
        );
        event_loop.close();
        return;
    }
    shared::behaviour::rerun_test_under_limit(
        "no_descriptor_and_nothing_in_flight_ends_robots_and_page_as_connect_errors",
        NO_FD_CHILD,
        64,
        "a crawl with no descriptor left and nothing in flight, whose robots.txt and page \
         must each end as a `connect` error, `too many open files`",
    );
}

/// While a host's robots.txt is being fetched, the crawl holds that host's
/// turn: `held` counts it, so that a robots.txt fetch whose end forgot to
/// hand the host its rules is named when the crawl stops with URLs left.
#[test]
fn held_counts_a_robots_txt_not_answered_yet() {
    use lesson3_generators::crawler::Crawler;
    use lesson3_generators::event_loop::EventLoop;
    // Accepts connections (the backlog) and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let mut config = Config::new(Lesson::Three, [format!("{origin}/")]);
    config.log = Log::capture(Level::Error);
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let crawler =
        Crawler::new(&config, 1).expect("`Crawler::new` must accept a valid configuration");
    let url = url::Url::parse(&format!("{origin}/")).unwrap();
    crawler.borrow_mut().fetch(&event_loop, url, 0);
    event_loop
        .run_once()
        .expect("`run_once` must return Ok on an open loop: one turn, whatever its callbacks do");
    let held = crawler.borrow().held(&event_loop);
    assert_eq!(
        held.robots_pending, 1,
        "the host's robots.txt is being fetched: the crawl holds its turn ({held})"
    );
    event_loop.close();
}
