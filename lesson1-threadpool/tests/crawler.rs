//! Tests of `src/crawler.rs`, through its public API.

use lesson1_threadpool::crawler::*;
use lesson1_threadpool::queue::Queue;
use shared::links::Link;
use shared::Config;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;
use url::Url;

/// Eight threads offer the same 2000 URLs at the same moment, as eight
/// fetchers that found the same links would. Each URL must be new to
/// exactly one of them and be queued exactly once. A version that
/// checked and inserted under two separate lockings fails this only when
/// two threads interleave just so — rarely on one round, hence twenty.
#[test]
fn each_url_is_new_to_exactly_one_thread() {
    const THREADS: usize = 8;
    const URLS: usize = 2000;
    let urls: Arc<Vec<Link>> = Arc::new(
        (0..URLS)
            .map(|i| Link::from(Url::parse(&format!("http://h/{i}")).unwrap()))
            .collect(),
    );
    for _round in 0..20 {
        let config = Config::new(shared::Lesson::One, ["http://h/"]);
        let crawler =
            Arc::new(Crawler::new(&config, 100).expect("`Crawler::new` must accept a valid root"));
        let urls_todo = Arc::new(Queue::new());
        let start = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (crawler, urls_todo, urls, start) = (
                    Arc::clone(&crawler),
                    Arc::clone(&urls_todo),
                    Arc::clone(&urls),
                    Arc::clone(&start),
                );
                thread::spawn(move || {
                    start.wait();
                    // One URL per call, so the threads interleave as
                    // finely as the lock allows.
                    urls.iter()
                        .filter(|url| crawler.add_urls(&urls_todo, std::slice::from_ref(url), 1)[0])
                        .count()
                })
            })
            .collect();
        let new_total: usize = threads
            .into_iter()
            .map(|t| {
                t.join().unwrap_or_else(|_| {
                    panic!("a thread running the lesson\'s code panicked: its message is above")
                })
            })
            .sum();
        assert!(
            new_total <= URLS,
            "{} URL(s) were new to two threads: \"is it new?\" and \"mark it seen\" must be \
             one step under one lock (`HashSet::insert` answers both), or two threads that \
             found the same link between the two steps both take it as new",
            new_total - URLS
        );
        assert_eq!(
            new_total, URLS,
            "URLs that were new to some thread: each of the {URLS} offered is new to exactly one"
        );
        assert_eq!(urls_todo.qsize(), URLS, "URLs queued");
        // And the root, seen from the start, is new to no one.
        let root = Link::from(Url::parse("http://h/").unwrap());
        assert_eq!(
            crawler.add_urls(&urls_todo, &[root], 1),
            [false],
            "`add_urls` of the root: not new (roots are in the seen-set from the start)"
        );
    }
}

#[test]
fn in_flight_counts_the_peak_not_the_total() {
    let in_flight = InFlight::new(usize::MAX);
    {
        let _a = in_flight.start();
        let _b = in_flight.start();
        assert_eq!(in_flight.now(), 2, "`now` with two guards alive");
    }
    let _c = in_flight.start();
    assert_eq!(
        in_flight.now(),
        1,
        "`now` after two guards were dropped and one more started: dropping a guard \
         ends its fetch"
    );
    assert_eq!(
        in_flight.peak(),
        2,
        "`peak`: the most in flight at once (2), not the number started (3)"
    );
}

/// With a budget of two sockets, a third fetch waits until one of the
/// two ends — it neither fails nor goes over.
#[test]
fn a_fetch_over_the_budget_waits_for_one_to_end() {
    let in_flight = Arc::new(InFlight::new(2));
    let a = in_flight.start();
    let _b = in_flight.start();
    let (started, third) = std::sync::mpsc::channel();
    let waiter = {
        let in_flight = Arc::clone(&in_flight);
        thread::spawn(move || {
            let _c = in_flight.start();
            started.send(()).unwrap();
        })
    };
    assert!(
        third.recv_timeout(Duration::from_millis(200)).is_err(),
        "a third fetch started while two held the budget"
    );
    drop(a);
    third.recv_timeout(Duration::from_secs(10)).unwrap();
    waiter.join().unwrap_or_else(|_| {
        panic!("a thread running the lesson\'s code panicked: its message is above")
    });
    assert_eq!(
        in_flight.peak(),
        2,
        "`peak` with a budget of 2: the third fetch waited, so never more than 2 at once"
    );
}

/// Out of descriptors with two others in flight: the budget becomes two.
/// Alone in flight: nothing will free one, so the fetch must not wait.
#[test]
fn running_out_of_descriptors_lowers_the_budget() {
    let in_flight = InFlight::new(100);
    {
        let alone = in_flight.start();
        assert!(
            !alone.out_of_descriptors(),
            "alone in flight, `out_of_descriptors` must say no other fetch will free a \
             descriptor (false), so the fetch does not wait forever"
        );
    }
    let _a = in_flight.start();
    let _b = in_flight.start();
    let c = in_flight.start();
    assert!(
        c.out_of_descriptors(),
        "with two other fetches in flight, `out_of_descriptors` must say one will free a \
         descriptor (true)"
    );
    assert_eq!(
        in_flight.budget(),
        2,
        "the budget after the third fetch found no descriptor: the two others in flight, \
         who hold the sockets the process can have"
    );
}

/// Once the pool's `join` has returned, every URL seen must be finished
/// or left by `--max-pages`: `all_done` names the others, as an internal
/// error. Here, with `--max-pages 1`: the root, seen and never fetched; one
/// link fetched (an `https` URL, which fails at once, with no network); one
/// left by the page limit.
#[test]
fn urls_seen_and_never_finished_are_named() {
    let mut config = Config::new(shared::Lesson::One, ["http://h/"]);
    config.max_pages = Some(1);
    config.log = shared::log::Log::capture(shared::log::Level::Error);
    let crawler = Crawler::new(&config, 100).expect("`Crawler::new` must accept a valid root");
    let urls_todo = Queue::new();
    let links: Vec<Link> = ["https://h/a", "https://h/b"]
        .iter()
        .map(|u| Link::from(Url::parse(u).unwrap()))
        .collect();
    crawler.add_urls(&urls_todo, &links, 1);
    for link in &links {
        crawler.fetch(&urls_todo, (link.to_url(), 1));
    }
    assert_eq!(
        crawler.held(),
        shared::Held::default(),
        "the https link failed before any socket, and nothing else was fetched: the crawl \
         holds nothing"
    );
    let stranded = crawler
        .all_done(crawler.held())
        .expect_err("the root is seen and was never fetched: not all done");
    assert_eq!(
        (
            stranded.queued,
            stranded.waiting_for_socket,
            stranded.in_flight
        ),
        (1, 0, 0),
        "three URLs seen, one finished (its line recorded), one left by --max-pages: one URL \
         left, queued ({stranded})"
    );
}

/// What the crawl holds while one thread fetches the root of `config` (once
/// `server` has seen its first request), and after that fetch has ended.
fn held_during_and_after_the_root(
    server: &shared::fixtures::server::TestServer,
    config: &Config,
    budget: usize,
) -> (shared::Held, shared::Held) {
    let crawler =
        Arc::new(Crawler::new(config, budget).expect("`Crawler::new` must accept a valid root"));
    let root = crawler.roots()[0].clone();
    let fetching = {
        let crawler = Arc::clone(&crawler);
        thread::spawn(move || crawler.fetch(&Queue::new(), (root, 0)))
    };
    assert!(
        server.wait_for_requests(1, Duration::from_secs(10)),
        "the root's fetch (or its robots.txt) never reached the server"
    );
    let during = crawler.held();
    fetching
        .join()
        .unwrap_or_else(|_| panic!("the thread fetching the root panicked: see above"));
    (during, crawler.held())
}

/// What the crawl holds while a fetch is in flight: its place in the socket
/// budget, which `held` names; and nothing once the fetch has ended, failed
/// as it is (the server never answers, the deadline passes).
#[test]
fn held_names_a_fetch_in_flight_and_nothing_after_it_ends() {
    use shared::fixtures::server::{Route, Site, TestServer};
    let server = TestServer::start(Site::new().route("/", Route::stall()));
    let mut config = Config::new(shared::Lesson::One, [server.url("/")]);
    config.obey_robots = false;
    config.timeout = Duration::from_millis(500);
    config.log = shared::log::Log::capture(shared::log::Level::Error);
    let (during, after) = held_during_and_after_the_root(&server, &config, 1);
    assert_eq!(
        during.in_flight, 1,
        "while the fetch waits for its answer, the crawl holds its place in the socket \
         budget ({during})"
    );
    assert_eq!(
        after,
        shared::Held::default(),
        "once the fetch has ended (a timeout), the crawl holds nothing ({after})"
    );
}

/// While a thread fetches a host's robots.txt, the crawl holds that host's
/// answer pending: `held` counts it, and nothing once it has come.
#[test]
fn held_counts_a_robots_txt_not_answered_yet() {
    use shared::fixtures::server::{Route, Site, TestServer};
    let server = TestServer::start(
        Site::new()
            .page("/", "a page")
            .route("/robots.txt", Route::stall()),
    );
    let mut config = Config::new(shared::Lesson::One, [server.url("/")]);
    config.timeout = Duration::from_millis(300);
    config.log = shared::log::Log::capture(shared::log::Level::Error);
    let (during, after) = held_during_and_after_the_root(&server, &config, 2);
    assert_eq!(
        during.robots_pending, 1,
        "while the host's robots.txt has not answered, held() counts it ({during})"
    );
    assert!(
        after.is_clear(),
        "once robots.txt has failed (twice, each a timeout) and the root is settled, the \
         crawl holds nothing ({after})"
    );
}
