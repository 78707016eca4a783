//! The crawl on scoped threads (`examples/std_threads.rs`) behaves as the
//! lesson's crawl does: the same behaviour suite, the same many-hosts cases
//! and fault paths; and a panic in a fetch ends it with an error, not a
//! hang.

// The example's `main` is the program's, not called from here.
#[allow(dead_code)]
#[path = "../examples/std_threads.rs"]
mod std_threads;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use lesson1_threadpool::crawler::Crawler;
use lesson1_threadpool::queue::Queue;
use shared::fixtures::bound;
use shared::fixtures::server::{Site, TestServer};
use shared::log::{Level, Log};
use shared::Config;

shared::behaviour_suite!(shared::Lesson::One, std_threads::crawl);

// More hosts than sockets (see `shared::behaviour::hosts`); the random
// many-hosts property stays with the lesson's own `tests/behaviour.rs`,
// since these cases already cover the budget and robots.txt on scoped
// threads.
shared::hosts_suite!(shared::Lesson::One, std_threads::crawl_with_budget);

// Every path gives back what it took: crawls where fetches fail in every way
// a fetch can, with budgets of 1 to 3 sockets (see
// `shared::behaviour::faults`). The guarantee this example must keep, on
// threads it did not build a pool for.
shared::faults_property!(shared::Lesson::One, std_threads::crawl_with_budget);

/// A site of a root and nine pages below it, two links deep.
fn site() -> TestServer {
    let mut site = Site::new().page(
        "/",
        r#"<a href="/1">1</a> <a href="/2">2</a> <a href="/3">3</a>"#,
    );
    for parent in 1..=3 {
        let links: String = (1..=2)
            .map(|child| format!(r#"<a href="/{parent}/{child}">x</a> "#))
            .collect();
        site = site.page(&format!("/{parent}"), links);
    }
    for parent in 1..=3 {
        for child in 1..=2 {
            site = site.page(&format!("/{parent}/{child}"), "a leaf");
        }
    }
    TestServer::start(site)
}

/// A fetch that panics — with one thread, the last one, and with three —
/// ends the crawl with the panic's message as its error: the panicking
/// thread's guard marks its URL done and shuts the queue down, the other
/// threads finish their fetch and leave, and the scope ends with no URL
/// left unfinished or queued.
#[test]
fn a_panic_in_a_fetch_ends_the_crawl_with_an_error_instead_of_a_hang() {
    let server = site();
    for threads in [1, 3] {
        let root = server.url("/");
        let (err, unfinished, queued) = bound::within(
            30,
            "the crawl did not end after a fetch panicked: the panicking thread's URL \
             was never marked done, or the URLs still queued kept `join` waiting, or \
             a thread asleep in `get` kept the scope open",
            move || {
                let mut config = Config::new(shared::Lesson::One, [root]);
                config.log = Log::capture(Level::Error);
                let crawler = Crawler::new(&config, 100).expect("a valid root");
                let urls_todo = Queue::new();
                for root in crawler.roots() {
                    urls_todo.put((root.clone(), 0)).expect("a running queue");
                }
                let result = std_threads::run_fetchers(threads, &urls_todo, |urls_todo, item| {
                    if item.0.path() == "/2" {
                        panic!("a fetch that panics (on purpose): {}", item.0);
                    }
                    crawler.fetch(urls_todo, item)
                });
                let err = result
                    .map_err(|e| e.to_string())
                    .expect_err("a fetch panicked, so the crawl must end with an error");
                (err, urls_todo.unfinished_tasks(), urls_todo.qsize())
            },
        );
        assert!(
            err.contains("a fetch that panics (on purpose)") && err.contains("1 fetcher thread(s)"),
            "--threads {threads}: the error must count the one panic and carry its message; \
             it was {err:?}"
        );
        assert_eq!(
            (unfinished, queued),
            (0, 0),
            "--threads {threads}: URLs left unfinished or queued after the crawl ended"
        );
    }
}

/// Without a panic, every item put is worked on exactly once — items put
/// from inside `work` included, as a crawl's links are — and the queue
/// ends with nothing unfinished.
#[test]
fn every_item_is_worked_on_exactly_once() {
    bound::within(
        30,
        "`run_fetchers` did not return once every item was done",
        || {
            let counts: Vec<AtomicUsize> = (0..200).map(|_| AtomicUsize::new(0)).collect();
            let queue = Queue::new();
            for n in 0..10 {
                queue.put(n).expect("a running queue");
            }
            std_threads::run_fetchers(4, &queue, |queue, n: usize| {
                counts[n].fetch_add(1, Ordering::Relaxed);
                // Each item puts the one ten above it, up to the last.
                if n + 10 < counts.len() {
                    queue.put(n + 10).expect("a running queue");
                }
                thread::sleep(Duration::from_micros(50));
            })
            .expect("no thread panicked");
            for (n, count) in counts.iter().enumerate() {
                assert_eq!(
                    count.load(Ordering::Relaxed),
                    1,
                    "item {n} was not worked on exactly once"
                );
            }
            assert_eq!(
                queue.unfinished_tasks(),
                0,
                "unfinished items after the run"
            );
        },
    );
}
