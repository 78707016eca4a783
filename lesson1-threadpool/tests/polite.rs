//! Tests of `src/polite.rs`: waiting for a URL's turn on threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use lesson1_threadpool::polite::Turns;
use shared::http::Response;
use shared::polite::Turn;
use shared::{Config, FetchError, Lesson};
use url::Url;

fn url(path: &str) -> Url {
    Url::parse(&format!("http://site.test{path}")).unwrap()
}

/// A robots.txt answer with `body`.
fn robots(status: u16, body: &str) -> Result<Response, FetchError> {
    Ok(Response {
        status,
        reason: String::new(),
        headers: Default::default(),
        body: body.as_bytes().to_vec(),
        reusable: false,
    })
}

fn config() -> Config {
    let mut config = Config::new(Lesson::One, ["http://site.test/"]);
    config.log = shared::log::Log::capture(shared::log::Level::Error);
    config
}

/// Four threads meet one host at once: one of them fetches its robots.txt
/// (slowly), the other three wait for it and then obey it too.
#[test]
fn one_thread_fetches_robots_txt_while_the_others_wait_for_it() {
    shared::fixtures::bound::within(
        10,
        "the threads waiting for the host's robots.txt were not all woken within 10 s of its \
         fetch: they sleep on `rules_known` until someone wakes them, and `Answering`'s \
         `Drop` must do it (`notify_all`) however the fetch ended, an answer as much as a \
         panic",
        one_fetch_three_waiters,
    );
}

fn one_fetch_three_waiters() {
    let turns = Arc::new(Turns::new(&config()));
    let fetches = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let (turns, fetches, start) = (turns.clone(), fetches.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                let get = |_: &Url| {
                    fetches.fetch_add(1, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(100));
                    robots(200, "User-agent: *\nDisallow: /no\n")
                };
                let path = if i == 0 {
                    "/no".to_string()
                } else {
                    format!("/{i}")
                };
                turns.wait(&url(&path), get)
            })
        })
        .collect();
    let turns_got: Vec<Turn> = threads
        .into_iter()
        .map(|t| {
            t.join()
                .unwrap_or_else(|_| panic!("a thread in `Turns::wait` panicked: see above"))
        })
        .collect();
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "robots.txt fetched once");
    assert!(
        matches!(turns_got[0], Turn::Blocked(_)),
        "{:?}",
        turns_got[0]
    );
    assert!(turns_got[1..].iter().all(|t| matches!(t, Turn::Fetch)));
}

/// With `--delay`, a host's turns come a delay apart, robots.txt first.
#[test]
fn a_hosts_turns_are_a_delay_apart() {
    let mut config = config();
    config.delay = Duration::from_millis(100);
    let turns = Turns::new(&config);
    let started = Instant::now();
    let mut times = Vec::new();
    for i in 0..3 {
        let turn = turns.wait(&url(&format!("/{i}")), |_| robots(404, ""));
        assert!(matches!(turn, Turn::Fetch));
        times.push(started.elapsed());
    }
    // robots.txt at 0, then the pages at 100, 200 and 300 ms.
    for (i, time) in times.iter().enumerate() {
        let due = Duration::from_millis(100 * (i as u64 + 1));
        assert!(*time >= due, "turn {i} came at {time:?}, before {due:?}");
    }
}

/// `--max-pages 1`: the second page is skipped, not waited for.
#[test]
fn past_the_page_limit_a_url_is_skipped() {
    let mut config = config();
    config.max_pages = Some(1);
    let turns = Turns::new(&config);
    assert!(matches!(
        turns.wait(&url("/a"), |_| robots(404, "")),
        Turn::Fetch
    ));
    assert!(matches!(
        turns.wait(&url("/b"), |_| robots(404, "")),
        Turn::Skip
    ));
}

/// A panic in the thread fetching a host's robots.txt ends the crawl with
/// that panic's error, as a panic in a page fetch does: the threads waiting
/// for the host's rules wake (the host now refuses everything) instead of
/// sleeping forever, and the pool's `join` returns.
#[test]
fn a_panic_while_fetching_robots_txt_ends_the_crawl_with_its_error() {
    use lesson1_threadpool::pool::ThreadPool;
    let err = shared::fixtures::bound::within(
        10,
        "the crawl did not end after the thread fetching robots.txt panicked: the threads \
         waiting for the host's rules sleep on `rules_known` until someone wakes them. The \
         thread that fetches them must wake them however it ends: `Answering`'s `Drop` runs \
         while the panic unwinds, marking the host's fetch abandoned \
         (`Politeness::robots_abandoned`, or they wake to rules still unknown and sleep \
         again) and calling `notify_all`",
        || {
            let turns = Arc::new(Turns::new(&config()));
            let pool = ThreadPool::new(4, move |_queue, path: String| {
                turns.wait(&url(&path), |_robots| {
                    // Long enough for the other threads to be waiting.
                    thread::sleep(Duration::from_millis(100));
                    panic!("the robots.txt fetch broke");
                });
            })
            .expect("`ThreadPool::new` must start its threads");
            for path in ["/a", "/b", "/c", "/d"] {
                pool.add_task(path.to_string())
                    .expect("`add_task` must queue a path on a running pool");
            }
            pool.wait_completion()
                .map_err(|e| e.to_string())
                .expect_err("a thread panicked, so the crawl ends with an error")
        },
    );
    assert!(
        err.contains("the robots.txt fetch broke"),
        "the crawl's error must carry the panic's message; it was: {err}"
    );
}

/// A thread asleep until its host's slot (`--delay`) holds no lock: another
/// thread, for another host, goes on meanwhile (here: fetches that host's
/// robots.txt before the sleeper wakes).
#[test]
fn a_thread_asleep_until_its_slot_does_not_hold_up_another_host() {
    let mut config = config();
    config.delay = Duration::from_millis(1500);
    let turns = Arc::new(Turns::new(&config));
    // What happened, in order: the other host's robots.txt fetch, and the
    // sleeper's wake-up.
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (robots_in, robots_fetched) = std::sync::mpsc::channel();
    let sleeper = {
        let (turns, events) = (Arc::clone(&turns), Arc::clone(&events));
        thread::spawn(move || {
            let turn = turns.wait(&url("/a"), |_| {
                let _ = robots_in.send(());
                robots(404, "")
            });
            events
                .lock()
                .unwrap()
                .push("site.test's thread woke for its slot");
            turn
        })
    };
    robots_fetched
        .recv_timeout(Duration::from_secs(10))
        .expect("the first thread's robots.txt fetch for site.test");
    // The first thread now sleeps until its page's slot, 1.5 s after its
    // robots.txt.
    thread::sleep(Duration::from_millis(100));
    let other = Url::parse("http://other.test/b").unwrap();
    let turn = turns.wait(&other, |_| {
        events
            .lock()
            .unwrap()
            .push("other.test's robots.txt fetched");
        robots(404, "")
    });
    assert!(matches!(turn, Turn::Fetch), "{turn:?}");
    assert!(matches!(
        sleeper.join().unwrap_or_else(|_| panic!(
            "a thread running the lesson\'s code panicked: its message is above"
        )),
        Turn::Fetch
    ));
    assert_eq!(
        *events.lock().unwrap(),
        [
            "other.test's robots.txt fetched",
            "site.test's thread woke for its slot"
        ],
        "while a thread slept until site.test's slot (1.5 s away), another host's robots.txt \
         fetch had to wait for it: that thread slept holding the lock. Drop the guard before \
         `sleep_until`; holding it while asleep stops every other thread"
    );
}
