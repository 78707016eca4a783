//! Tests of `src/queue.rs`, through its public API.

use lesson1_threadpool::queue::*;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// How long a test waits for `join` before it calls the queue stuck: far
/// longer than any of these tests needs.
const JOIN_LIMIT: Duration = Duration::from_secs(10);

/// `q.join()`, with a bound: a `join` that never returns fails the test
/// with `why` (what should have let it return) instead of hanging the
/// whole test run.
fn join_within<T: Send + 'static>(q: &Arc<Queue<T>>, why: &str) {
    let (done, joined) = mpsc::channel();
    let q = Arc::clone(q);
    thread::spawn(move || {
        q.join();
        let _ = done.send(());
    });
    match joined.recv_timeout(JOIN_LIMIT) {
        Ok(()) => {}
        Err(RecvTimeoutError::Timeout) => panic!(
            "`join` did not return within {} s: {why}. (If a thread panicked, its message \
             is above: an item it took is never marked done.)",
            JOIN_LIMIT.as_secs()
        ),
        Err(RecvTimeoutError::Disconnected) => {
            panic!("`join` panicked (its message is above)")
        }
    }
}

/// `handle.join()` for a thread that loops on `get` until `None`, with a
/// bound: a thread still running `JOIN_LIMIT` after `shutdown(false)` fails
/// the test instead of hanging the whole test run.
fn ended_within<R>(handle: thread::JoinHandle<R>) -> R {
    let give_up = Instant::now() + JOIN_LIMIT;
    while !handle.is_finished() {
        assert!(
            Instant::now() < give_up,
            "a thread looping on `get` did not end within {} s of `shutdown(false)`: \
             `shutdown` must wake every `get` asleep waiting for an item (`notify_all`), and \
             `get` on a shut-down, empty queue must return `None`",
            JOIN_LIMIT.as_secs()
        );
        thread::sleep(Duration::from_millis(10));
    }
    handle.join().unwrap_or_else(|_| {
        panic!("a thread running the lesson\'s code panicked: its message is above")
    })
}

#[test]
fn items_come_out_in_the_order_they_went_in() {
    let q = Queue::new();
    for i in 0..5 {
        q.put(i)
            .expect("`put` on a queue not shut down must accept the item");
    }
    assert_eq!(q.qsize(), 5, "qsize: the five items put and not yet taken");
    let out: Vec<i32> = (0..5)
        .map(|_| {
            q.get().expect(
                "`get` on a queue not shut down must give an item (not `None`) once one is put",
            )
        })
        .collect();
    assert_eq!(
        out,
        [0, 1, 2, 3, 4],
        "the items in the order `get` returned them: a queue is first in, first out"
    );
    // Taken is not done: all five are still unfinished.
    assert_eq!(
        q.unfinished_tasks(),
        5,
        "unfinished tasks: each `put` counts one, only `task_done` uncounts it (a `get` \
         does not), so all five taken items are still unfinished"
    );
}

#[test]
fn join_on_a_queue_that_never_had_an_item_returns_at_once() {
    let q: Arc<Queue<()>> = Arc::new(Queue::new());
    join_within(
        &q,
        "nothing was ever put, so no task is unfinished: `join` sleeps \
         only while tasks are unfinished",
    );
    assert_eq!(
        q.unfinished_tasks(),
        0,
        "unfinished tasks of a queue nothing was ever put into"
    );
}

#[test]
fn join_waits_for_task_done_not_for_an_empty_queue() {
    let q = Arc::new(Queue::new());
    let finished = Arc::new(AtomicBool::new(false));
    q.put("page")
        .expect("`put` on a queue not shut down must accept the item");
    let (took, taken) = mpsc::channel();
    let worker = {
        let (q, finished) = (Arc::clone(&q), Arc::clone(&finished));
        thread::spawn(move || {
            let _item = q.get().expect(
                "`get` on a queue not shut down must give an item (not `None`) once one is put",
            );
            let _ = took.send(());
            // The queue is empty now, but the task is not done: a
            // `join` that returned here would be the bug this tests.
            thread::sleep(std::time::Duration::from_millis(200));
            finished.store(true, Ordering::SeqCst);
            q.task_done();
        })
    };
    // `join` starts once the item is taken: the queue is empty, the task
    // is not done.
    taken
        .recv_timeout(JOIN_LIMIT)
        .expect("the worker's `get` must return the one item put");
    join_within(
        &q,
        "the worker took the one item (`get`) and marked it done (`task_done`), which must \
         uncount it and, at zero, wake `join` (`notify_all` on the condvar `join` sleeps on)",
    );
    assert!(
        finished.load(Ordering::SeqCst),
        "`join` returned while the worker still held its item: it must wait for \
         `task_done`, not for an empty queue (sleep while tasks are unfinished, not while \
         items are queued)"
    );
    worker.join().unwrap_or_else(|_| {
        panic!("a thread running the lesson\'s code panicked: its message is above")
    });
}

/// A thread that calls `q.get()`; its result comes on the receiver.
fn taker<T: Send + 'static>(q: &Arc<Queue<T>>) -> mpsc::Receiver<Option<T>> {
    let (sender, taken) = mpsc::channel();
    let q = Arc::clone(q);
    thread::spawn(move || {
        let _ = sender.send(q.get());
    });
    taken
}

/// What the `taker`'s `get` returned, with a bound: a `get` that never
/// returns fails the test with `why` (what should have woken it) instead of
/// hanging the whole test run.
fn taken_within<T>(taken: &mpsc::Receiver<Option<T>>, why: &str) -> Option<T> {
    match taken.recv_timeout(JOIN_LIMIT) {
        Ok(item) => item,
        Err(RecvTimeoutError::Timeout) => panic!(
            "a `get` asleep on an empty queue did not return within {} s: {why}",
            JOIN_LIMIT.as_secs()
        ),
        Err(RecvTimeoutError::Disconnected) => {
            panic!("`get` panicked (its message is above)")
        }
    }
}

#[test]
fn get_sleeps_until_an_item_is_put() {
    let q = Arc::new(Queue::new());
    let taken = taker(&q);
    q.put(42)
        .expect("`put` on a queue not shut down must accept the item");
    assert_eq!(
        taken_within(
            &taken,
            "`put` must add the item and wake a sleeping `get` (`notify_one` on the condvar a `get` sleeps on)"
        ),
        Some(42),
        "what a `get` that was waiting on an empty queue returns once 42 is put"
    );
}

#[test]
fn shutdown_wakes_every_sleeping_get_with_none() {
    let q: Arc<Queue<u8>> = Arc::new(Queue::new());
    let takers: Vec<_> = (0..4).map(|_| taker(&q)).collect();
    // Let the four reach their wait: a `shutdown` that wakes one sleeper
    // is only caught when there are several asleep.
    thread::sleep(Duration::from_millis(200));
    q.shutdown(false);
    for taken in &takers {
        assert_eq!(
            taken_within(
                taken,
                "`shutdown` must wake every `get` asleep waiting for an item (`notify_all`), \
                 and a `get` on a shut-down, empty queue must return `None`"
            ),
            None,
            "a `get` sleeping on an empty queue returns None when the queue is shut down \
             (`shutdown` must wake every sleeper, not one)"
        );
    }
}

#[test]
fn shutdown_lets_queued_items_drain_and_refuses_new_ones() {
    let q = Queue::new();
    q.put(1)
        .expect("`put` on a queue not shut down must accept the item");
    q.put(2)
        .expect("`put` on a queue not shut down must accept the item");
    q.shutdown(false);
    assert_eq!(
        q.put(3),
        Err(ShutDown),
        "a `put` after `shutdown` is refused"
    );
    assert_eq!(
        q.get(),
        Some(1),
        "first `get` after `shutdown(false)`: queued items still come out, in order"
    );
    assert_eq!(
        q.get(),
        Some(2),
        "second `get` after `shutdown(false)`: the other queued item"
    );
    assert_eq!(
        q.get(),
        None,
        "`get` on a shut-down queue that has run empty: None at once, no sleep"
    );
    assert_eq!(
        q.unfinished_tasks(),
        2,
        "unfinished tasks: 1 and 2 were taken, not marked done; the refused 3 never counted"
    );
}

#[test]
fn immediate_shutdown_drops_queued_items_and_join_waits_only_for_running_ones() {
    let q = Arc::new(Queue::new());
    for i in 0..3 {
        q.put(i)
            .expect("`put` on a queue not shut down must accept the item");
    }
    // Checked first, so that a `put` that adds nothing fails here instead
    // of leaving the `get` below asleep for ever.
    assert_eq!(q.qsize(), 3, "qsize after three `put`s: three items queued");
    let running = q
        .get()
        .expect("`get` on a queue not shut down must give an item (not `None`) once one is put");
    assert_eq!(running, 0, "the first item out: the first put");
    q.shutdown(true);
    assert_eq!(
        q.qsize(),
        0,
        "qsize after `shutdown(true)`: the two items still queued are dropped"
    );
    assert_eq!(
        q.unfinished_tasks(),
        1,
        "unfinished tasks after `shutdown(true)`: only the taken item is left (dropping \
         an item uncounts it)"
    );
    assert_eq!(
        q.get(),
        None,
        "`get` after `shutdown(true)`: None, the queued items are gone"
    );
    q.task_done();
    join_within(
        &q,
        "`shutdown(true)` dropped the two queued items, uncounting them, and the taken one \
         was marked done: no task is unfinished",
    );
}

/// `shutdown(true)` with nothing taken leaves no task unfinished, so it must
/// wake the threads asleep in `join` itself: no `task_done` will come.
#[test]
fn immediate_shutdown_wakes_a_join_waiting_for_queued_items() {
    let q = Arc::new(Queue::new());
    for i in 0..3 {
        q.put(i)
            .expect("`put` on a queue not shut down must accept the item");
    }
    let (done, joined) = mpsc::channel();
    {
        let q = Arc::clone(&q);
        thread::spawn(move || {
            q.join();
            let _ = done.send(());
        });
    }
    // Give the joiner time to fall asleep on the three unfinished items.
    assert_eq!(
        joined.recv_timeout(Duration::from_millis(200)),
        Err(RecvTimeoutError::Timeout),
        "`join` with three items put and none done: it must keep sleeping"
    );
    q.shutdown(true);
    assert_eq!(
        q.unfinished_tasks(),
        0,
        "unfinished tasks after `shutdown(true)` dropped all three queued items: dropping \
         an item uncounts it, one each"
    );
    assert_eq!(
        joined.recv_timeout(JOIN_LIMIT),
        Ok(()),
        "`join` after `shutdown(true)` dropped all three queued items (none taken): no \
         task is left, so `shutdown` must wake `join` (`notify_all` on the condvar `join` sleeps on, when \
         the count reaches 0); a timeout means it slept on"
    );
}

/// Three threads wait in `join` for one item; when it is marked done, all
/// three must wake, not one of them.
#[test]
fn every_thread_waiting_in_join_wakes_when_the_last_task_is_done() {
    let q = Arc::new(Queue::new());
    q.put(1)
        .expect("`put` on a queue not shut down must accept the item");
    let (done, joined) = mpsc::channel();
    for _ in 0..3 {
        let (q, done) = (Arc::clone(&q), done.clone());
        thread::spawn(move || {
            q.join();
            let _ = done.send(());
        });
    }
    // Give the three time to fall asleep in `join`.
    thread::sleep(Duration::from_millis(100));
    q.get()
        .expect("`get` on a queue not shut down must give an item (not `None`) once one is put");
    q.task_done();
    for woken in 0..3 {
        assert!(
            joined.recv_timeout(JOIN_LIMIT).is_ok(),
            "only {woken} of the three threads waiting in `join` woke when the last task was \
             done: every sleeper must wake then (`notify_all`, not `notify_one`, on \
             the condvar `join` sleeps on)"
        );
    }
}

#[test]
#[should_panic(expected = "task_done() called more times")]
fn task_done_without_an_item_is_a_bug() {
    let q: Queue<()> = Queue::new();
    q.task_done();
}

#[test]
fn many_producers_and_consumers_lose_and_duplicate_nothing() {
    const PRODUCERS: usize = 8;
    const PER_PRODUCER: usize = 2_000;
    const CONSUMERS: usize = 6;
    let q = Arc::new(Queue::new());
    // Set just before `shutdown`: a `None` from `get` before that is a `get`
    // that woke to an empty queue and did not go back to sleep.
    let shut_down = Arc::new(AtomicBool::new(false));
    let early_nones = Arc::new(AtomicUsize::new(0));
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let (q, shut_down, early_nones) = (
                Arc::clone(&q),
                Arc::clone(&shut_down),
                Arc::clone(&early_nones),
            );
            thread::spawn(move || {
                let mut got = Vec::new();
                loop {
                    match q.get() {
                        Some(item) => {
                            got.push(item);
                            q.task_done();
                        }
                        // Counted, and the consumer goes on, so that the
                        // items left are still taken and `join` returns.
                        None if !shut_down.load(Ordering::SeqCst) => {
                            early_nones.fetch_add(1, Ordering::SeqCst);
                        }
                        None => break,
                    }
                }
                got
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let q = Arc::clone(&q);
            thread::spawn(move || {
                for i in 0..PER_PRODUCER {
                    q.put(p * PER_PRODUCER + i)
                        .expect("`put` on a queue not shut down must accept the item");
                }
            })
        })
        .collect();
    for producer in producers {
        producer.join().unwrap_or_else(|_| {
            panic!("a thread running the lesson\'s code panicked: its message is above")
        });
    }
    join_within(
        &q,
        "every item put must reach a consumer (a `get` sleeping for an item is woken by \
         each `put`) and be marked done by `task_done`",
    );
    shut_down.store(true, Ordering::SeqCst);
    q.shutdown(false);
    let mut seen = HashSet::new();
    for consumer in consumers {
        for item in ended_within(consumer) {
            assert!(seen.insert(item), "item {item} came out twice");
        }
    }
    let early_nones = early_nones.load(Ordering::SeqCst);
    assert_eq!(
        early_nones, 0,
        "a `get` returned `None` {early_nones} times on a queue not shut down: it woke to an \
         empty queue (another thread took the item first, or the wakeup was spurious) and \
         gave up. Wait on the condvar in a `while` loop that re-checks the queue, not an `if`"
    );
    assert_eq!(
        seen.len(),
        PRODUCERS * PER_PRODUCER,
        "distinct items the consumers took: every item put ({PRODUCERS} producers × \
         {PER_PRODUCER}); fewer means items were lost"
    );
    assert_eq!(
        q.unfinished_tasks(),
        0,
        "unfinished tasks once `join` returned: every item was taken and marked done"
    );
}

/// Threads asleep in `get` are woken by each `put`, while other threads,
/// awake, take items too: a woken `get` often finds the item gone, and must
/// go back to sleep rather than return `None` (the queue is not shut down).
/// Rounds of it, since the race need not come in one.
#[test]
fn a_get_woken_to_an_empty_queue_sleeps_again() {
    const ROUNDS: usize = 8;
    const CONSUMERS: usize = 8;
    const ITEMS: usize = 4_000;
    for round in 0..ROUNDS {
        let q = Arc::new(Queue::new());
        let shut_down = Arc::new(AtomicBool::new(false));
        let early_nones = Arc::new(AtomicUsize::new(0));
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let (q, shut_down, early_nones) = (
                    Arc::clone(&q),
                    Arc::clone(&shut_down),
                    Arc::clone(&early_nones),
                );
                thread::spawn(move || loop {
                    match q.get() {
                        Some(()) => q.task_done(),
                        None if !shut_down.load(Ordering::SeqCst) => {
                            early_nones.fetch_add(1, Ordering::SeqCst);
                        }
                        None => break,
                    }
                })
            })
            .collect();
        let producers: Vec<_> = (0..2)
            .map(|_| {
                let q = Arc::clone(&q);
                thread::spawn(move || {
                    for _ in 0..ITEMS / 2 {
                        q.put(())
                            .expect("`put` on a queue not shut down must accept the item");
                    }
                })
            })
            .collect();
        for producer in producers {
            producer.join().unwrap_or_else(|_| {
                panic!("a thread running the lesson\'s code panicked: its message is above")
            });
        }
        join_within(
            &q,
            "every item put must reach a consumer and be marked done by `task_done`",
        );
        shut_down.store(true, Ordering::SeqCst);
        q.shutdown(false);
        for consumer in consumers {
            ended_within(consumer);
        }
        let early_nones = early_nones.load(Ordering::SeqCst);
        assert_eq!(
            early_nones, 0,
            "round {round}: a `get` returned `None` {early_nones} times on a queue not shut \
             down: it woke to an empty queue (another thread took the item first, or the \
             wakeup was spurious) and gave up. Wait on the condvar in a `while` loop that \
             re-checks the queue, not an `if`"
        );
    }
}

/// Workers that put new items before marking their own done, as the
/// crawler does with links: `join` must wait for the whole tree, though
/// the queue runs empty many times along the way.
#[test]
fn join_waits_for_work_that_creates_more_work() {
    const DEPTH: u32 = 11;
    let q = Arc::new(Queue::new());
    let handled = Arc::new(AtomicUsize::new(0));
    q.put(DEPTH)
        .expect("`put` on a queue not shut down must accept the item");
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (q, handled) = (Arc::clone(&q), Arc::clone(&handled));
            thread::spawn(move || {
                while let Some(depth) = q.get() {
                    if depth > 0 {
                        q.put(depth - 1)
                            .expect("`put` on a queue not shut down must accept the item");
                        q.put(depth - 1)
                            .expect("`put` on a queue not shut down must accept the item");
                    }
                    handled.fetch_add(1, Ordering::SeqCst);
                    q.task_done();
                }
            })
        })
        .collect();
    join_within(
        &q,
        "every item, and every child a worker puts while it holds its parent, must be taken \
         by `get` and marked done by `task_done`; `join` returns when the count of \
         unfinished tasks reaches zero",
    );
    // A binary tree of depth 11 has 2^12 - 1 nodes.
    assert_eq!(
        handled.load(Ordering::SeqCst),
        (1 << (DEPTH + 1)) - 1,
        "items handled when `join` returned: the whole tree of depth {DEPTH}, 2^{} - 1; \
         fewer means `join` returned when the queue ran empty while workers were still \
         putting children",
        DEPTH + 1
    );
    q.shutdown(false);
    for worker in workers {
        ended_within(worker);
    }
}
