//! Tests of `src/pool.rs`, through its public API.

use lesson1_threadpool::pool::*;
use lesson1_threadpool::queue::Queue;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::{Condvar, Mutex};
use std::thread::{self};
use std::time::{Duration, Instant};

/// `pool.wait_completion()`, run on a thread of its own and waited for with
/// a bound, so that a pool whose threads never take an item, or never mark
/// one done, fails the test with `why` instead of hanging the test run.
fn wait_completion_within<T: Send + 'static>(pool: ThreadPool<T>, why: &str) {
    let (done, outcome) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(pool.wait_completion().map_err(|e| format!("{e:#}")));
    });
    match outcome.recv_timeout(Duration::from_secs(10)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("wait_completion failed ({why}): {e}"),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
            "wait_completion did not return within 10 s ({why}): each thread's loop \
             (`fetcher`) must take items with `get` until it gives `None`, and mark each \
             one done (the `TaskDone` guard calls `task_done`)"
        ),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            panic!("wait_completion panicked (its message is above)")
        }
    }
}

#[test]
fn every_item_and_the_work_it_creates_is_done() {
    let handled = Arc::new(AtomicUsize::new(0));
    let pool = {
        let handled = Arc::clone(&handled);
        ThreadPool::new(4, move |tasks: &Queue<u32>, n| {
            // Each n > 0 puts two children: a binary tree, as links are. A
            // `put` refused (the queue shut down too early) is let go, as
            // the crawler does, and the count below says what went wrong.
            // The root takes its time, as a fetch does: a `wait_completion`
            // that does not wait for the work has stopped the queue by then.
            if n == 9 {
                thread::sleep(Duration::from_millis(100));
            }
            if n > 0 {
                let _ = tasks.put(n - 1);
                let _ = tasks.put(n - 1);
            }
            handled.fetch_add(1, Ordering::SeqCst);
        })
        .expect("`ThreadPool::new` must start its threads")
    };
    pool.add_task(9)
        .expect("`add_task` on a pool not shut down must accept the item");
    wait_completion_within(pool, "a tree of 1,023 items on four threads");
    assert_eq!(
        handled.load(Ordering::SeqCst),
        (1 << 10) - 1,
        "items handled when `wait_completion` returned: the whole tree from 9, 2^10 - 1. \
         Fewer: the queue was shut down while work was still putting items. Either \
         `wait_completion` did not first wait for every item put to be done (the queue's \
         `join`), or an item was marked done before its work ended (a `TaskDone` guard \
         bound to `_` is dropped at once: name it, `_done`), so `join` returned early"
    );
}

#[test]
fn waiting_on_a_pool_given_no_work_returns() {
    let pool = ThreadPool::new(3, |_: &Queue<()>, ()| {})
        .expect("`ThreadPool::new` must start its threads");
    pool.wait_completion()
        .expect("`wait_completion` of work that never panics must return `Ok`");
}

#[test]
fn the_threads_have_ended_when_wait_completion_returns() {
    // Each thread holds a clone of `work`, and with it of `token`. When
    // all threads have returned, their clones are gone.
    let token = Arc::new(());
    let pool = {
        let token = Arc::clone(&token);
        ThreadPool::new(4, move |_: &Queue<u8>, _| {
            let _ = &token;
        })
        .expect("`ThreadPool::new` must start its threads")
    };
    for i in 0..20 {
        pool.add_task(i)
            .expect("`add_task` on a pool not shut down must accept the item");
    }
    assert!(
        Arc::strong_count(&token) > 1,
        "before `wait_completion`, the pool's threads hold clones of the work"
    );
    wait_completion_within(pool, "twenty items whose work does nothing");
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "clones of the work still alive after `wait_completion`: only the test's own; \
         more means a thread is still running (shut the queue down and join every thread)"
    );
}

#[test]
fn dropping_a_pool_ends_its_threads_too() {
    let token = Arc::new(());
    let pool = {
        let token = Arc::clone(&token);
        ThreadPool::new(2, move |_: &Queue<u8>, _| {
            let _ = &token;
        })
        .expect("`ThreadPool::new` must start its threads")
    };
    pool.add_task(1)
        .expect("`add_task` on a pool not shut down must accept the item");
    drop(pool);
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "clones of the work alive after dropping the pool: only the test's own; more \
         means dropping a pool left its threads running"
    );
}

#[test]
fn a_panic_in_work_ends_the_crawl_with_an_error_instead_of_a_hang() {
    for threads in [1, 3] {
        // Waited for on another thread, so that the bug this test is
        // about fails the test instead of hanging the test run.
        let (done, outcome) = std::sync::mpsc::channel();
        thread::spawn(move || {
            let pool = ThreadPool::new(threads, |tasks: &Queue<u32>, n| {
                if n == 7 {
                    panic!("bad item {n}");
                }
                if n < 50 {
                    let _ = tasks.put(n + 10);
                }
            })
            .expect("`ThreadPool::new` must start its threads");
            for n in 0..10 {
                // A worker may reach item 7, panic and shut the pool down
                // before the last items are added: they are then refused,
                // which is the pool working, not what this test is about.
                if pool.add_task(n).is_err() {
                    break;
                }
            }
            let _ = done.send(pool.wait_completion().map_err(|e| e.to_string()));
        });
        let err = match outcome.recv_timeout(Duration::from_secs(30)) {
            Ok(result) => result.expect_err("it must be an error: a panic in work ends the crawl with an error instead of a hang"),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!(
                "--threads {threads}: the test's thread panicked before `wait_completion` \
                 returned: its message is above (a `todo!` not yet written, or a panic in \
                 `new`, `add_task` or `wait_completion` themselves)"
            ),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
                "--threads {threads}: wait_completion did not return within 30 s of a \
                 panic in `work`: the item being worked on was never marked done. \
                 `task_done` must run even when `work` panics — from a guard's `Drop`, \
                 which runs while the panic unwinds — and the guard stops the queue, so \
                 the items no thread is left to take do not keep `join` waiting. (A guard \
                 bound to `_` is dropped at once, before the work: name it, `_done`.)"
            ),
        };
        assert!(
            err.contains("bad item 7"),
            "--threads {threads}: the error must carry the panic's message `bad item 7`; \
             it was {err:?}"
        );
    }
}

/// Every item blocks until `THREADS` of them run at once (or 10 s pass):
/// the pool must run exactly `THREADS` items at a time, never more.
#[test]
fn the_pool_runs_as_many_items_at_once_as_it_has_threads_and_no_more() {
    const THREADS: usize = 3;
    #[derive(Default)]
    struct Gauge {
        counts: Mutex<(usize, usize)>, // (running now, most at once)
        changed: Condvar,
    }
    let gauge = Arc::new(Gauge::default());
    let pool = {
        let gauge = Arc::clone(&gauge);
        ThreadPool::new(THREADS, move |_: &Queue<u8>, _| {
            let mut counts = gauge.counts.lock().unwrap();
            counts.0 += 1;
            counts.1 = counts.1.max(counts.0);
            gauge.changed.notify_all();
            let give_up = Instant::now() + Duration::from_secs(10);
            while counts.1 < THREADS && Instant::now() < give_up {
                counts = gauge
                    .changed
                    .wait_timeout(counts, Duration::from_millis(100))
                    .unwrap()
                    .0;
            }
            counts.0 -= 1;
        })
        .expect("`ThreadPool::new` must start its threads")
    };
    for i in 0..12 {
        pool.add_task(i)
            .expect("`add_task` on a pool not shut down must accept the item");
    }
    wait_completion_within(pool, "twelve items on three threads");
    assert_eq!(
        gauge.counts.lock().unwrap().1,
        THREADS,
        "the most items running at once in a pool of {THREADS} threads given 12 items: \
         one per thread, every thread busy"
    );
}

#[test]
fn panic_messages_are_read_from_str_and_string_payloads() {
    assert_eq!(
        panic_message(&"static"),
        "static",
        "the message of `panic!(\"static\")`, a `&str` payload"
    );
    assert_eq!(
        panic_message(&String::from("owned")),
        "owned",
        "the message of a panic with a formatted message, a `String` payload"
    );
    assert_eq!(
        panic_message(&17_u8),
        "(a panic without a message)",
        "the text for a payload that is neither `&str` nor `String`"
    );
}

/// Every item a thread takes is marked done, so `wait_completion` returns.
/// Waited for with a bound, so that a thread loop that never takes an item,
/// or never marks one done, fails here with a message instead of hanging
/// the test run.
#[test]
fn wait_completion_returns_once_every_item_is_done() {
    let (done, outcome) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let pool = ThreadPool::new(2, |_: &Queue<u32>, _| {})
            .expect("`ThreadPool::new` must start its threads");
        for n in 0..10 {
            pool.add_task(n)
                .expect("`add_task` on a pool not shut down must accept the item");
        }
        let _ = done.send(pool.wait_completion().map_err(|e| format!("{e:#}")));
    });
    match outcome.recv_timeout(Duration::from_secs(5)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("wait_completion failed for ten items whose work does nothing: {e}"),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
            "wait_completion did not return within 5 s for ten items whose work does nothing: \
             each thread's loop (`fetcher`) must take items with `get` until it gives `None`, \
             and mark each one done (the `TaskDone` guard calls `task_done`)"
        ),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            panic!("the thread that made the pool panicked (see its message above)")
        }
    }
}
