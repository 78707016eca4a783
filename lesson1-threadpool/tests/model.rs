//! # Every interleaving: the queue, the pool and the seen-set under `loom`
//!
//! The other tests run real threads and catch a race only when the race
//! happens. These run a few threads over the lesson's own `queue.rs`,
//! `pool.rs` and `crawler.rs` under [`loom`], which runs each test again and
//! again, switching threads at every lock, wait and notify in every order
//! that can happen (up to [`schedule::PREEMPTIONS`] switches the running
//! thread did not ask for, in each run), and fails the test on the first
//! interleaving that breaks it. A thread that sleeps with no one left to wake
//! it is a failure too (a deadlock), found without waiting for a timeout.
//!
//! The lesson's files are compiled here, not linked: `tests/model/sync.rs`
//! stands in for the lesson's `src/sync.rs`, with `loom`'s `Mutex`,
//! `Condvar`, `Arc` and threads in place of `std`'s.
//!
//! ```text
//! cargo test -p lesson1-threadpool --test model
//! ```

// The lesson's files, as the lesson's library declares them.
#[allow(dead_code, unused_imports)]
#[path = "../src/crawler.rs"]
mod crawler;
#[allow(dead_code)]
#[path = "../src/fetch.rs"]
mod fetch;
#[allow(dead_code)]
#[path = "../src/polite.rs"]
mod polite;
#[allow(dead_code)]
#[path = "../src/pool.rs"]
mod pool;
#[allow(dead_code)]
#[path = "../src/queue.rs"]
mod queue;
#[path = "model/schedule.rs"]
mod schedule;
// What `std` offers, whether or not the lesson's code (or yours) uses it.
#[allow(dead_code, unused_imports)]
#[path = "model/sync.rs"]
mod sync;

use std::collections::BTreeSet;

// The test's own bookkeeping is `std`'s: only the lesson's locks, waits and
// threads are `loom`'s (see `model/sync.rs` on `Arc`).
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use loom::thread;
use schedule::call;
use shared::links::Link;
use shared::Config;
use url::Url;

use crate::crawler::Crawler;
use crate::pool::ThreadPool;
use crate::queue::{Queue, ShutDown};

// ---------------------------------------------------------------- the queue

/// `join` returns only once the item taken has been marked done, however the
/// two threads interleave.
#[test]
fn queue_join_waits_for_task_done_not_for_an_empty_queue() {
    schedule::check(
        "`join` must wait until every item put has been marked done \
         (`task_done`), not for an empty queue: an item taken is \
         still being worked on",
        || {
            let queue = Arc::new(Queue::new());
            let worked = Arc::new(AtomicBool::new(false));
            call("put(1)", || queue.put(1)).expect("`put` on an open queue is `Ok`");
            let worker = {
                let (queue, worked) = (Arc::clone(&queue), Arc::clone(&worked));
                schedule::start("worker", move || {
                    call("get()", || queue.get());
                    // The work takes a while: `loom` may run the
                    // other thread here.
                    schedule::step("works on the item".into());
                    thread::yield_now();
                    worked.store(true, Ordering::SeqCst);
                    call("task_done()", || queue.task_done());
                })
            };
            call("join()", || queue.join());
            assert!(
                worked.load(Ordering::SeqCst),
                "`join` returned while the worker was still working on the item it took"
            );
            schedule::finish(worker);
        },
    );
}

/// When the last task is done, every thread asleep in `join` wakes.
#[test]
fn queue_every_join_wakes_when_the_last_task_is_done() {
    schedule::check(
        "when the last task is done, `task_done` must wake every thread in \
         `join` (`notify_all`, not `notify_one`)",
        || {
            let queue = Arc::new(Queue::new());
            call("put(1)", || queue.put(1)).expect("`put` on an open queue is `Ok`");
            let joiners: Vec<_> = (1..=2)
                .map(|i| {
                    let queue = Arc::clone(&queue);
                    schedule::start(format!("joiner-{i}"), move || {
                        call("join()", || queue.join())
                    })
                })
                .collect();
            call("get()", || queue.get());
            call("task_done()", || queue.task_done());
            for joiner in joiners {
                schedule::finish(joiner);
            }
        },
    );
}

// ANCHOR: each_get
/// Two threads each `get` one of two items: each gets one, whichever order
/// the `put`s, the wakeups and the other `get` come in.
#[test]
fn queue_each_get_gets_an_item() {
    schedule::check(
        "a `get` woken from `wait` must look at the queue again, in a \
         `while` loop that re-checks the queue, not an `if`: another thread \
         may have taken the item first",
        || {
            let queue = Arc::new(Queue::new());
            let getters: Vec<_> = (1..=2)
                .map(|i| {
                    let queue = Arc::clone(&queue);
                    schedule::start(format!("getter-{i}"), move || call("get()", || queue.get()))
                })
                .collect();
            call("put(1)", || queue.put(1)).expect("`put` on an open queue is `Ok`");
            call("put(2)", || queue.put(2)).expect("`put` on an open queue is `Ok`");
            let got: BTreeSet<_> = getters
                .into_iter()
                .map(|getter| {
                    schedule::finish(getter).expect(
                        "a `get` on a queue that is not shut down returned `None` \
                         instead of an item",
                    )
                })
                .collect();
            assert_eq!(got, BTreeSet::from([1, 2]), "each item must be taken once");
        },
    );
}
// ANCHOR_END: each_get

/// `shutdown(false)` wakes every `get`, which drain the item still queued
/// and then return `None`; none is lost or taken twice.
#[test]
fn queue_shutdown_wakes_every_get_and_drains_the_queue() {
    schedule::check(
        "`shutdown` must wake every sleeping `get` (`notify_all`), and `get` \
         must still hand out the items queued before it, then `None`",
        || {
            let queue = Arc::new(Queue::new());
            let getters: Vec<_> = (1..=2)
                .map(|i| {
                    let queue = Arc::clone(&queue);
                    schedule::start(format!("getter-{i}"), move || {
                        let mut got = Vec::new();
                        while let Some(item) = call("get()", || queue.get()) {
                            got.push(item);
                            call("task_done()", || queue.task_done());
                        }
                        got
                    })
                })
                .collect();
            call("put(1)", || queue.put(1)).expect("`put` on an open queue is `Ok`");
            call("shutdown(false)", || queue.shutdown(false));
            assert_eq!(
                call("put(2)", || queue.put(2)),
                Err(ShutDown),
                "`put` after `shutdown` must be refused"
            );
            let mut got: Vec<_> = getters.into_iter().flat_map(schedule::finish).collect();
            got.sort();
            assert_eq!(
                got,
                [1],
                "the item put before `shutdown` must be taken exactly once"
            );
        },
    );
}

/// `shutdown(true)` drops the queued items, which count as done, and wakes
/// a `get` asleep on the empty queue: `join` waits only for the item a
/// thread took.
#[test]
fn queue_immediate_shutdown_leaves_join_only_the_items_taken() {
    schedule::check(
        "`shutdown(true)` must throw the queued items away and count them \
         done, waking `join` when no task is left and every sleeping `get`; \
         `join` still waits for an item a thread has taken",
        || {
            let queue = Arc::new(Queue::new());
            // Started on an empty queue: it may be asleep in `get` when the
            // items come, or when the shutdown does.
            let worker = {
                let queue = Arc::clone(&queue);
                schedule::start("worker", move || {
                    while let Some(_item) = call("get()", || queue.get()) {
                        call("task_done()", || queue.task_done());
                    }
                })
            };
            for i in 1..=2 {
                call(&format!("put({i})"), || queue.put(i))
                    .expect("`put` on an open queue is `Ok`");
            }
            call("shutdown(true)", || queue.shutdown(true));
            call("join()", || queue.join());
            assert_eq!(
                call("qsize()", || queue.qsize()),
                0,
                "no item may be left queued"
            );
            assert_eq!(
                call("unfinished_tasks()", || queue.unfinished_tasks()),
                0,
                "`join` returned with tasks unfinished"
            );
            schedule::finish(worker);
        },
    );
}

// ----------------------------------------------------------------- the pool

/// Work that puts more work: every item is done before `wait_completion`
/// returns, with two threads.
#[test]
fn pool_wait_completion_waits_for_work_that_puts_more_work() {
    schedule::check(
        "`wait_completion` must wait for the work (`join`) before it stops \
         the threads: work still running may put more items",
        || {
            let done = Arc::new(Mutex::new(Vec::new()));
            let pool = {
                let done = Arc::clone(&done);
                ThreadPool::new(2, move |tasks: &Queue<u32>, item| {
                    if item < 2 {
                        // Refused only once the queue has been shut down:
                        // the assertion below then names the item lost.
                        let _ = call(&format!("put({})", item + 1), || tasks.put(item + 1));
                    }
                    done.lock().expect("not poisoned").push(item);
                })
                .expect("loom starts the threads")
            };
            call("add_task(0)", || pool.add_task(0)).expect("the pool is open");
            call("wait_completion()", || {
                pool.wait_completion().map_err(|e| e.to_string())
            })
            .expect("no work panicked");
            let mut done = done.lock().expect("not poisoned").clone();
            done.sort();
            assert_eq!(
                done,
                [0, 1, 2],
                "every item put, by `add_task` or by work, must be done; one was not: \
                 the queue was shut down while work was still putting items"
            );
        },
    );
}

/// A panic in `work`: its item is still marked done, and `wait_completion`
/// returns the panic as its error.
#[test]
fn pool_a_panic_in_work_still_marks_its_item_done() {
    schedule::check(
        "`task_done` must run even when `work` panics (the `TaskDone` guard's \
         `Drop` runs while the panic unwinds), and `wait_completion` must \
         return the panic as its error",
        || {
            let pool = ThreadPool::new(1, |_: &Queue<u32>, item| {
                schedule::step("panics".into());
                panic!("bad item {item}");
            })
            .expect("loom starts the thread");
            call("add_task(7)", || pool.add_task(7)).expect("the pool is open");
            let error = call("wait_completion()", || {
                pool.wait_completion().map_err(|e| e.to_string())
            })
            .expect_err("`wait_completion` must be an error when `work` panicked");
            assert!(
                error.contains("bad item 7"),
                "the error must hold the panic's message, a `String` payload here \
                 (`panic!` with arguments), but is: {error}"
            );
        },
    );
}

/// A panic in `work` with one thread and an item still queued: no thread is
/// left to take it, so the panic must stop the queue.
#[test]
fn pool_a_panic_in_work_stops_the_queue() {
    schedule::check(
        "when `work` panics, the guard stops the queue at once \
         (`shutdown(true)`): its thread is about to end, and the items still \
         queued may have no thread left to take them",
        || {
            let pool = ThreadPool::new(1, |_: &Queue<u32>, item| {
                if item == 7 {
                    schedule::step("panics".into());
                    panic!("bad item {item}");
                }
            })
            .expect("loom starts the thread");
            call("add_task(7)", || pool.add_task(7)).expect("the pool is open");
            // Refused if the thread has already panicked and stopped the queue.
            let _ = call("add_task(8)", || pool.add_task(8));
            call("wait_completion()", || {
                pool.wait_completion().map_err(|e| e.to_string())
            })
            .expect_err("`wait_completion` must be an error when `work` panicked");
        },
    );
}

// ------------------------------------------------------------- the seen-set

/// Two threads find the same link: it is new to exactly one of them, and
/// queued once.
#[test]
fn seen_set_a_url_is_new_to_exactly_one_thread() {
    schedule::check(
        "\"is it new?\" and \"mark it seen\" must be one step under one lock \
         (`HashSet::insert` answers both): two threads that found the same \
         link both take it as new otherwise",
        || {
            let config = Config::new(shared::Lesson::One, ["http://h/"]);
            let crawler = Arc::new(
                Crawler::new(&config, 1).expect("`Crawler::new` must accept a valid root"),
            );
            let urls_todo = Arc::new(Queue::new());
            let link = Link::from(Url::parse("http://h/a").expect("a valid URL"));
            let finders: Vec<_> = (1..=2)
                .map(|i| {
                    let (crawler, urls_todo, link) =
                        (Arc::clone(&crawler), Arc::clone(&urls_todo), link.clone());
                    schedule::start(format!("finder-{i}"), move || {
                        call("add_urls([http://h/a])", || {
                            crawler.add_urls(&urls_todo, &[link], 1)[0]
                        })
                    })
                })
                .collect();
            let new = finders
                .into_iter()
                .map(schedule::finish)
                .filter(|&new| new)
                .count();
            assert_eq!(
                new, 1,
                "http://h/a must be new to exactly one of the two threads"
            );
            assert_eq!(
                urls_todo.qsize(),
                1,
                "http://h/a must be queued exactly once"
            );
        },
    );
}
