//! # The work queue: `put`, `get`, `task_done`, `join`
//!
//! The tutorial's thread crawler leans on Python's `queue.Queue`, and on two
//! of its methods most of all: a fetcher calls `task_done()` when it has
//! finished an item, and the main thread's `join()` returns once every item
//! ever `put` has been marked done. This module builds that queue from the
//! two primitives every thread library has, a [`Mutex`] and a [`Condvar`].
//!
//! The point to take away is what `join` waits for. It is *not* "the queue is
//! empty": the queue is empty every time the last URL has been taken, even
//! though the thread that took it is about to discover fifty more links. It
//! waits for a counter, `unfinished_tasks`, that `put` raises and `task_done`
//! lowers. A fetcher puts its new links *before* it calls `task_done` for the
//! page they came from, so the counter cannot touch zero while any work is
//! left anywhere — in the queue or in a thread's hands.
//!
//! Python 3.13 added `Queue.shutdown()`, and this queue has it too: it is how
//! the pool's threads, blocked in `get` once the crawl is over, learn that no
//! more work will come and return instead of sleeping forever.
//!
//! Lesson 4 builds this same queue again for coroutines (`put_nowait`, `get`,
//! `task_done`, `join`), where "blocked" means a suspended task instead of a
//! sleeping thread — and no lock is needed, because only one task runs at a time.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// What `put` returns once the queue has been shut down (Python raises
/// `queue.ShutDown`): the item was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutDown;

impl fmt::Display for ShutDown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the queue has been shut down")
    }
}

impl std::error::Error for ShutDown {}

// ANCHOR: queue
/// A first-in, first-out queue shared by threads, with `task_done`/`join`.
#[derive(Debug)]
pub struct Queue<T> {
    /// Everything the queue knows, behind one lock. One lock for all of it,
    /// because `put` must change the items and the counter together: a
    /// `join` that saw one updated and not the other could return early.
    state: Mutex<State<T>>,
    /// Where `get` sleeps while there is nothing to take. `put` wakes one
    /// sleeper; `shutdown` wakes them all.
    not_empty: Condvar,
    /// Where `join` sleeps while tasks are unfinished. Woken when the
    /// counter reaches zero.
    all_tasks_done: Condvar,
}

/// The state behind the queue's lock.
#[derive(Debug)]
struct State<T> {
    /// Items put and not yet taken, oldest first.
    items: VecDeque<T>,
    /// Items put and not yet marked done, *including* those a thread has
    /// taken and is still working on. `join` waits for this, not for
    /// `items` to be empty.
    unfinished_tasks: usize,
    /// Set by `shutdown`: `put` refuses, and `get` returns `None` once
    /// `items` is empty instead of sleeping.
    is_shutdown: bool,
}
// ANCHOR_END: queue

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue::new()
    }
}

impl<T> Queue<T> {
    /// An empty, unbounded queue (Python's `Queue(maxsize=0)`).
    pub fn new() -> Self {
        Queue {
            state: Mutex::new(State {
                items: VecDeque::new(),
                unfinished_tasks: 0,
                is_shutdown: false,
            }),
            not_empty: Condvar::new(),
            all_tasks_done: Condvar::new(),
        }
    }

    /// Take the lock. No code panics while holding it (the queue never runs
    /// a caller's code under its lock), so even a poisoned lock guards a
    /// consistent state — and recovering matters here: `task_done` runs in a
    /// drop guard *during* a panic (see `pool.rs`), where a second panic
    /// would abort the whole process.
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    // ANCHOR: put_get
    /// Add `item` at the back, and count it as one more unfinished task.
    pub fn put(&self, item: T) -> Result<(), ShutDown> {
        let mut state = self.lock();
        if state.is_shutdown {
            return Err(ShutDown);
        }
        state.items.push_back(item);
        state.unfinished_tasks += 1;
        // One new item can satisfy one sleeper; waking all of them would
        // only have the rest find the queue empty and go back to sleep.
        self.not_empty.notify_one();
        Ok(())
    }

    /// Take the oldest item, sleeping while there is none. `None` once the
    /// queue has been shut down and emptied: the signal for a thread to stop.
    pub fn get(&self) -> Option<T> {
        let mut state = self.lock();
        // A loop, not an `if`: `wait` may return without a `notify` (a
        // "spurious wakeup"), and another thread may have taken the item
        // between the notify and this thread getting the lock back.
        loop {
            if let Some(item) = state.items.pop_front() {
                return Some(item);
            }
            if state.is_shutdown {
                return None;
            }
            // `wait` releases the lock while asleep and takes it again
            // before returning; that is what lets `put` get in meanwhile.
            state = self
                .not_empty
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
    // ANCHOR_END: put_get

    // ANCHOR: task_done_join
    /// Mark one item taken by `get` as finished. Call it exactly once per
    /// item, *after* putting any new items that item produced.
    ///
    /// # Panics
    ///
    /// When called more times than items were put — a bug in the caller;
    /// Python raises `ValueError` for the same mistake.
    pub fn task_done(&self) {
        let mut state = self.lock();
        let Some(left) = state.unfinished_tasks.checked_sub(1) else {
            // Release the lock before panicking so the queue stays usable.
            drop(state);
            panic!("task_done() called more times than there were items");
        };
        state.unfinished_tasks = left;
        if left == 0 {
            // Several threads may be waiting in `join`; all of them may go.
            self.all_tasks_done.notify_all();
        }
    }

    /// Sleep until every item ever put has been marked done. Returns at once
    /// when nothing was ever put.
    pub fn join(&self) {
        let mut state = self.lock();
        while state.unfinished_tasks > 0 {
            state = self
                .all_tasks_done
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
    // ANCHOR_END: task_done_join

    // ANCHOR: shutdown
    /// Stop the queue (Python 3.13's `Queue.shutdown`). From now on `put`
    /// fails, and every `get` — those asleep now included — returns the
    /// items still queued and then `None`.
    ///
    /// With `immediate`, the queued items are thrown away as well, and count
    /// as done: `join` then waits only for the items threads are still
    /// working on. The pool uses this when a thread panics, so that the
    /// crawl stops instead of waiting for work that may never be taken.
    pub fn shutdown(&self, immediate: bool) {
        let mut state = self.lock();
        state.is_shutdown = true;
        if immediate {
            let dropped = state.items.len();
            state.items.clear();
            // Every queued item was counted by `put` and not yet by
            // `task_done`, so this cannot go below zero.
            state.unfinished_tasks -= dropped;
            if state.unfinished_tasks == 0 {
                self.all_tasks_done.notify_all();
            }
        }
        self.not_empty.notify_all();
    }
    // ANCHOR_END: shutdown

    /// How many items are waiting to be taken (Python's `qsize`).
    pub fn qsize(&self) -> usize {
        self.lock().items.len()
    }

    /// How many items were put and not yet marked done.
    pub fn unfinished_tasks(&self) -> usize {
        self.lock().unfinished_tasks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::thread;

    #[test]
    fn items_come_out_in_the_order_they_went_in() {
        let q = Queue::new();
        for i in 0..5 {
            q.put(i).unwrap();
        }
        assert_eq!(q.qsize(), 5);
        let out: Vec<i32> = (0..5).map(|_| q.get().unwrap()).collect();
        assert_eq!(out, [0, 1, 2, 3, 4]);
        // Taken is not done: all five are still unfinished.
        assert_eq!(q.unfinished_tasks(), 5);
    }

    #[test]
    fn join_on_a_queue_that_never_had_an_item_returns_at_once() {
        let q: Queue<()> = Queue::new();
        q.join();
        assert_eq!(q.unfinished_tasks(), 0);
    }

    #[test]
    fn join_waits_for_task_done_not_for_an_empty_queue() {
        let q = Arc::new(Queue::new());
        let finished = Arc::new(AtomicBool::new(false));
        q.put("page").unwrap();
        let worker = {
            let (q, finished) = (Arc::clone(&q), Arc::clone(&finished));
            thread::spawn(move || {
                let _item = q.get().unwrap();
                // The queue is empty now, but the task is not done: a
                // `join` that returned here would be the bug this tests.
                thread::sleep(std::time::Duration::from_millis(50));
                finished.store(true, Ordering::SeqCst);
                q.task_done();
            })
        };
        q.join();
        assert!(finished.load(Ordering::SeqCst), "join returned early");
        worker.join().unwrap();
    }

    #[test]
    fn get_sleeps_until_an_item_is_put() {
        let q = Arc::new(Queue::new());
        let taker = {
            let q = Arc::clone(&q);
            thread::spawn(move || q.get())
        };
        q.put(42).unwrap();
        assert_eq!(taker.join().unwrap(), Some(42));
    }

    #[test]
    fn shutdown_wakes_every_sleeping_get_with_none() {
        let q: Arc<Queue<u8>> = Arc::new(Queue::new());
        let takers: Vec<_> = (0..4)
            .map(|_| {
                let q = Arc::clone(&q);
                thread::spawn(move || q.get())
            })
            .collect();
        q.shutdown(false);
        for taker in takers {
            assert_eq!(taker.join().unwrap(), None);
        }
    }

    #[test]
    fn shutdown_lets_queued_items_drain_and_refuses_new_ones() {
        let q = Queue::new();
        q.put(1).unwrap();
        q.put(2).unwrap();
        q.shutdown(false);
        assert_eq!(q.put(3), Err(ShutDown));
        assert_eq!(q.get(), Some(1));
        assert_eq!(q.get(), Some(2));
        assert_eq!(q.get(), None);
        assert_eq!(q.unfinished_tasks(), 2);
    }

    #[test]
    fn immediate_shutdown_drops_queued_items_and_join_waits_only_for_running_ones() {
        let q = Queue::new();
        for i in 0..3 {
            q.put(i).unwrap();
        }
        let running = q.get().unwrap();
        assert_eq!(running, 0);
        q.shutdown(true);
        assert_eq!(q.qsize(), 0);
        assert_eq!(q.unfinished_tasks(), 1, "only the taken item is left");
        assert_eq!(q.get(), None);
        q.task_done();
        q.join();
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
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let q = Arc::clone(&q);
                thread::spawn(move || {
                    let mut got = Vec::new();
                    while let Some(item) = q.get() {
                        got.push(item);
                        q.task_done();
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
                        q.put(p * PER_PRODUCER + i).unwrap();
                    }
                })
            })
            .collect();
        for producer in producers {
            producer.join().unwrap();
        }
        q.join();
        q.shutdown(false);
        let mut seen = HashSet::new();
        for consumer in consumers {
            for item in consumer.join().unwrap() {
                assert!(seen.insert(item), "item {item} came out twice");
            }
        }
        assert_eq!(seen.len(), PRODUCERS * PER_PRODUCER);
        assert_eq!(q.unfinished_tasks(), 0);
    }

    /// Workers that put new items before marking their own done, as the
    /// crawler does with links: `join` must wait for the whole tree, though
    /// the queue runs empty many times along the way.
    #[test]
    fn join_waits_for_work_that_creates_more_work() {
        const DEPTH: u32 = 11;
        let q = Arc::new(Queue::new());
        let handled = Arc::new(AtomicUsize::new(0));
        q.put(DEPTH).unwrap();
        let workers: Vec<_> = (0..8)
            .map(|_| {
                let (q, handled) = (Arc::clone(&q), Arc::clone(&handled));
                thread::spawn(move || {
                    while let Some(depth) = q.get() {
                        if depth > 0 {
                            q.put(depth - 1).unwrap();
                            q.put(depth - 1).unwrap();
                        }
                        handled.fetch_add(1, Ordering::SeqCst);
                        q.task_done();
                    }
                })
            })
            .collect();
        q.join();
        // A binary tree of depth 11 has 2^12 - 1 nodes.
        assert_eq!(handled.load(Ordering::SeqCst), (1 << (DEPTH + 1)) - 1);
        q.shutdown(false);
        for worker in workers {
            worker.join().unwrap();
        }
    }
}
