//! The exercises at the end of the lesson 1 chapter, one test each.
//!
//! Each test is `#[ignore]`d because it fails on the lesson's code as
//! written: it describes a feature the lesson does not have yet. Do the
//! exercise, then switch its test on:
//!
//! ```text
//! cargo test -p lesson1-threadpool --test exercises -- --ignored exercise_per_host_limit
//! ```

use std::time::Duration;

use lesson1_threadpool::crawl;
use shared::fixtures::server::{Route, Site, TestServer};
use shared::log::{Level, Log};
use shared::{Config, Lesson};

fn config(server: &TestServer, threads: usize) -> Config {
    let mut config = Config::new(Lesson::One, [server.url("/")]);
    config.log = Log::capture(Level::Info);
    config.threads = threads;
    config.timeout = Duration::from_secs(10);
    config
}

/// Exercise 1: at most four fetches to one host at a time, however many
/// threads there are. Ten threads crawl twenty slow pages of one server:
/// the server must never see more than four requests at once, must see
/// four (the limit is a limit, not one fetch at a time), and every page
/// must still be fetched.
#[test]
#[ignore = "exercise: limit fetches to one host to 4 at a time"]
fn exercise_per_host_limit() {
    let links: String = (0..20)
        .map(|i| format!(r#"<a href="/slow/{i}">{i}</a> "#))
        .collect();
    let site = (0..20).fold(Site::new().page("/", links), |site, i| {
        site.route(
            &format!("/slow/{i}"),
            Route::html("slow").delay(Duration::from_millis(300)),
        )
    });
    let server = TestServer::start(site);
    let report = crawl(&config(&server, 10)).expect("the crawl must run to its report");
    assert_eq!(report.urls().len(), 21, "every page is still fetched");
    assert_eq!(
        server.peak_in_flight(),
        4,
        "the server saw this many requests from one host at once"
    );
}

/// Exercise 2: retry a fetch that failed on the network (connection
/// refused or reset, timeout) up to `--max-tries` times in all, as
/// lesson 4 does. `/flaky` drops its first two connections and answers the
/// third; `/dead` never answers.
#[test]
#[ignore = "exercise: retry network errors up to --max-tries times"]
fn exercise_retry_network_errors() {
    shared::behaviour::exercise_retry_network_errors(Lesson::One, crawl);
}

/// Exercise 3: a queue that fills up. A producer thread puts fifty numbers
/// into a queue of at most three while a consumer takes them a little more
/// slowly: the queue never holds more than three, the producer has to wait
/// for room, and the numbers come out complete and in order. Then a thread
/// waiting to put into a full queue is woken by `shutdown` with
/// `Err(ShutDown)`. Each part runs on threads watched by a deadline, so a
/// `put` that never wakes fails the test instead of hanging it.
#[cfg(feature = "exercise-bounded-queue")]
#[test]
#[ignore = "exercise: Queue::with_maxsize, and a put that waits for room"]
fn exercise_bounded_queue() {
    use lesson1_threadpool::queue::{Queue, ShutDown};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc};
    use std::thread;

    /// Runs `f` on a thread and waits at most ten seconds for its answer.
    fn within_ten_seconds<T: Send + 'static>(
        what: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (done, answer) = mpsc::channel();
        thread::spawn(move || {
            let _ = done.send(f());
        });
        answer
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{what} did not finish within 10 s: does a full queue's put wake when a get makes room?"))
    }

    let queue = Arc::new(Queue::with_maxsize(3));
    let most = Arc::new(AtomicUsize::new(0));
    let waited = Arc::new(AtomicBool::new(false));
    let producer = {
        let (queue, most, waited) = (Arc::clone(&queue), Arc::clone(&most), Arc::clone(&waited));
        thread::spawn(move || {
            for i in 0..50 {
                if queue.qsize() == 3 {
                    waited.store(true, Ordering::SeqCst);
                }
                queue
                    .put(i)
                    .expect("`put` must accept an item on a queue not shut down");
                most.fetch_max(queue.qsize(), Ordering::SeqCst);
            }
        })
    };
    let consumer = Arc::clone(&queue);
    let got = within_ten_seconds("the producer and the consumer", move || {
        let mut got = Vec::new();
        while got.len() < 50 {
            thread::sleep(Duration::from_millis(1));
            got.extend(consumer.get());
        }
        got
    });
    producer.join().expect("the producer panicked");
    assert_eq!(got, (0..50).collect::<Vec<_>>(), "every number, in order");
    let most = most.load(Ordering::SeqCst);
    assert!(
        most <= 3,
        "the queue held {most} items, more than its maxsize of 3"
    );
    assert!(
        waited.load(Ordering::SeqCst),
        "the producer never found the queue full"
    );

    // A put waiting on a full queue is woken by shutdown, and refused.
    let full = Arc::new(Queue::with_maxsize(1));
    full.put(0)
        .expect("`put` on a queue not shut down must accept the item");
    let (started, waiting) = mpsc::channel();
    let putter = {
        let full = Arc::clone(&full);
        thread::spawn(move || {
            started.send(()).unwrap();
            full.put(1)
        })
    };
    waiting.recv().unwrap();
    thread::sleep(Duration::from_millis(50));
    assert!(
        !putter.is_finished(),
        "put returned while the queue was full"
    );
    full.shutdown(false);
    let refused = within_ten_seconds("a put waiting when the queue was shut down", move || {
        putter.join().expect("the putter panicked")
    });
    assert_eq!(
        refused,
        Err(ShutDown),
        "a `put` waiting on a full queue when it is shut down: woken and refused"
    );
    assert_eq!(full.qsize(), 1, "the refused item was not queued");
}
