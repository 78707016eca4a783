//! Lesson 2's promise: concurrency without threads. A page with thousands of
//! links gets thousands of fetches in flight at once, on one thread — and a
//! socket budget caps them without losing a URL.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shared::fixtures::server::{Route, Site, TestServer};
use shared::log::{Level, Log};
use shared::{Config, Lesson};

/// A root page linking to `n` pages that each answer after `delay`.
fn slow_site(n: usize, delay: Duration) -> Site {
    let links: String = (0..n)
        .map(|i| format!("<a href=\"/slow/{i}\">{i}</a>\n"))
        .collect();
    let mut site = Site::new().page("/", links);
    for i in 0..n {
        site = site.route(&format!("/slow/{i}"), Route::html("slow").delay(delay));
    }
    site
}

/// A loopback listener whose accept queue holds 4,096 connections (the
/// kernel caps it at `net.core.somaxconn`), not the standard library's 128.
/// The crawls of these tests open thousands of connections at once; a
/// queue that overflows makes the kernel reset one now and then, which
/// would fail a test for the server's sake, not the crawler's.
fn roomy_listener() -> std::net::TcpListener {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("a TCP socket");
    socket
        .bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .expect("bind 127.0.0.1:0");
    socket.listen(4096).expect("listen");
    socket.into()
}

/// The `Threads:` line of a process's `/proc/PID/status`.
fn threads_of(pid: u32) -> Option<usize> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Threads:"))?;
    line["Threads:".len()..].trim().parse().ok()
}

#[test]
fn five_thousand_slow_pages_are_in_flight_at_once_on_one_thread() {
    const N: usize = 5000;
    let server = TestServer::start_on(roomy_listener(), slow_site(N, Duration::from_secs(1)))
        .expect("start the test server");
    // The crawler runs as its own process (the `lesson2` program), so its
    // threads can be counted apart from the test server's.
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lesson2"))
        .args(["-q", "--timeout", "60", &server.url("/")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lesson2");
    let pid = child.id();
    // Drain the pipes while the child runs: a report of 5,001 lines is more
    // than a pipe holds, and a child blocked on a full pipe never exits.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let mut most_threads = 0;
    let status = loop {
        if let Some(n) = threads_of(pid) {
            most_threads = most_threads.max(n);
        }
        if let Some(status) = child.try_wait().expect("wait for lesson2") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("lesson2 did not finish a 1-second-deep crawl in 120 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stdout = stdout.join().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(status.success(), "lesson2 failed: {stderr}");
    // The report's end, from its `Finished` line: what the checks below
    // read, without the 5,001 lines before it.
    let tail = stdout
        .find("Finished ")
        .map_or(stdout.as_str(), |at| &stdout[at..]);

    assert!(
        stdout.contains(&format!("Finished {} urls", N + 1)),
        "no `Finished {} urls` line (the root and its {N} links); the report ends:\n{tail}",
        N + 1
    );
    assert!(
        stdout.contains("Todo: 0"),
        "no `Todo: 0` line: URLs were seen and not fetched; the report ends:\n{tail}"
    );
    let achieved: usize = stdout
        .lines()
        .find_map(|l| l.split("achieved concurrency = ").nth(1))
        .and_then(|k| k.trim().parse().ok())
        .expect("an achieved concurrency line");
    // The root's callback starts every link's fetch before any can finish,
    // so all of them are in flight at once — unless the open-file limit
    // caps the crawler's sockets lower (the child's budget, from its own
    // limit: see `shared::net::socket_budget`).
    match shared::net::open_files_limit() {
        Some(limit) if limit < N + 100 => {
            assert!(
                achieved < limit,
                "{achieved} sockets under a limit of {limit}"
            );
            assert!(
                achieved >= limit / 2,
                "achieved concurrency {achieved} under an open-file limit of {limit}: the \
                 budget should let at least half as many fetches run at once"
            );
        }
        _ => assert_eq!(
            achieved, N,
            "achieved concurrency with no descriptor limit in the way: all {N} links in \
             flight at once, since the root's callback starts every fetch before any can \
             finish; the report ends:\n{tail}"
        ),
    }
    assert_eq!(
        most_threads, 1,
        "the most threads /proc saw lesson2 run: one, the event loop's"
    );
    assert!(
        server.peak_in_flight() >= achieved.min(1000),
        "the server saw at most {} requests at once, the crawler reports {achieved}",
        server.peak_in_flight()
    );
    println!(
        "{} URLs, achieved concurrency {achieved}, in {:?}",
        N + 1,
        started.elapsed()
    );
}

#[test]
fn ten_thousand_links_under_ulimit_1024() {
    // The spec's descriptor promise: a page with 10,000 links, crawled by a
    // process that may open only 1,024 files.
    shared::behaviour::many_links_under_fd_limit(
        env!("CARGO_BIN_EXE_lesson2"),
        10_000,
        1024,
        roomy_listener(),
    );
}

#[test]
fn a_socket_budget_of_50_crawls_500_links_with_at_most_50_in_flight() {
    const N: usize = 500;
    let server = TestServer::start(slow_site(N, Duration::from_millis(20)));
    let mut config = Config::new(Lesson::Two, [server.url("/")]);
    config.log = Log::capture(Level::Error);
    config.timeout = Duration::from_secs(30);
    let report = lesson2_callbacks::crawl_with_budget(&config, 50)
        .expect("the crawl must return its report for a root that answers");
    assert_eq!(
        report.stats.len(),
        N + 1,
        "URLs reported: the root and its {N} links, every one, budget or not"
    );
    assert!(
        report.stats.iter().all(|s| s.status == Some(200)),
        "{}",
        report.render()
    );
    assert_eq!(
        report.todo, 0,
        "Todo: URLs seen but never fetched; none after a complete crawl"
    );
    // The root's links all arrive at once: 50 start, 450 wait in line.
    assert_eq!(
        report.peak_in_flight, 50,
        "achieved concurrency with a socket budget of 50 and {N} links at once: the \
         budget, reached and never passed"
    );
    assert_eq!(
        report.max_tasks, 50,
        "M on the Finished line (`max_tasks=M`): lesson 2's peak of fetches in flight"
    );
    assert!(
        server.peak_in_flight() <= 50,
        "the server saw {} requests at once under a socket budget of 50",
        server.peak_in_flight()
    );
    // Every page once, and robots.txt.
    assert_eq!(
        server.requests().len(),
        N + 2,
        "requests in all: robots.txt, the root and its {N} links, each once"
    );
}

/// A crawl whose loop ran out of work with URLs left says where they were:
/// `all_done` names those queued for their turn, waiting for a socket, and
/// in flight. (No correct crawl strands a URL, so this makes one: the loop
/// is never run.)
#[test]
fn urls_left_when_the_loop_stops_are_named_by_where_they_wait() {
    use lesson2_callbacks::crawler::Crawler;
    use lesson2_callbacks::event_loop::EventLoop;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let mut config = Config::new(Lesson::Two, [format!("{origin}/")]);
    config.log = Log::capture(Level::Error);
    config.obey_robots = false;
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let crawler =
        Crawler::new(&config, 1).expect("`Crawler::new` must accept a valid configuration");
    {
        let mut crawler = crawler.borrow_mut();
        assert_eq!(
            crawler.all_done(crawler.held(&event_loop)),
            Ok(()),
            "nothing queued yet: all done"
        );
        for path in ["/a", "/b"] {
            let url = url::Url::parse(&format!("{origin}{path}")).unwrap();
            crawler.fetch(&event_loop, url, 0);
        }
        // A budget of one: /a is in flight (its socket is open), /b waits.
        let held = crawler.held(&event_loop);
        assert_eq!(
            (held.in_flight, held.registered, held.timers),
            (1, 1, 1),
            "what the crawl holds with /a in flight: its place in the budget, its socket on \
             the loop and its deadline ({held})"
        );
        let stranded = crawler
            .all_done(crawler.held(&event_loop))
            .expect_err("two URLs started and never finished: not all done");
        assert_eq!(
            (
                stranded.queued,
                stranded.waiting_for_socket,
                stranded.in_flight
            ),
            (0, 1, 1),
            "where the two URLs were: none queued for a turn, one waiting for the one socket, \
             one in flight ({stranded})"
        );
    }
    event_loop.close();
}

/// While a host's robots.txt is being fetched, the crawl holds that host's
/// turn: `held` counts it, so that a robots.txt fetch whose end forgot to
/// hand the host its rules is named when the crawl stops with URLs left.
#[test]
fn held_counts_a_robots_txt_not_answered_yet() {
    use lesson2_callbacks::crawler::Crawler;
    use lesson2_callbacks::event_loop::EventLoop;
    // Accepts connections (the backlog) and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let mut config = Config::new(Lesson::Two, [format!("{origin}/")]);
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
