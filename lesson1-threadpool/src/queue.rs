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

use crate::sync::{Condvar, Mutex, MutexGuard, PoisonError};

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
    // ANCHOR: new
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
    // ANCHOR_END: new

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

    // ANCHOR: sizes
    /// How many items are waiting to be taken (Python's `qsize`).
    pub fn qsize(&self) -> usize {
        self.lock().items.len()
    }

    /// How many items were put and not yet marked done.
    pub fn unfinished_tasks(&self) -> usize {
        self.lock().unfinished_tasks
    }
    // ANCHOR_END: sizes
}
