//! # `Queue`: work for the workers, and knowing when it is all done
//!
//! The crawler of the original chapter is a pool of worker coroutines fed by
//! an asyncio `Queue`, and it stops with the queue's `join`. The pattern is
//! lesson 1's thread pool again — `put`, `get`, `task_done`, `join` — with
//! futures where lesson 1 had a `Condvar`:
//!
//! <!-- how -->
//! - `get().await` on an empty queue parks the caller on a *getter* future;
//!   `put_nowait` resolves the oldest getter, which wakes that worker.
//! <!-- /how -->
//! - every `put_nowait` adds one to the count of **unfinished tasks**, every
//!   `task_done` takes one away; `join().await` waits until the count is
//!   zero. An item is unfinished from when it is put until the worker that
//!   took it says it is done — so the count also covers work in progress,
//!   and a worker that finds new links puts them *before* it calls
//!   `task_done`: the count cannot touch zero while work remains.
//!
//! No lock anywhere: the loop runs one callback at a time, and a coroutine is
//! only interrupted at an `.await`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use crate::event_loop::get_running_loop;
use crate::future::Future;

/// An unbounded FIFO queue for coroutines on one loop: a cheap handle (`Rc`).
pub struct Queue<T> {
    /// Shared by every clone: the crawler and each worker hold one.
    inner: Rc<QueueInner<T>>,
}

struct QueueInner<T> {
    /// The items, oldest first.
    items: RefCell<VecDeque<T>>,
    /// Futures of the `get` calls waiting for an item, oldest first.
    getters: RefCell<VecDeque<Future<()>>>,
    /// Getters abandoned (cancelled) but still in `getters`; when they are
    /// half the list, the list is swept (see `GetterGuard`).
    abandoned_getters: Cell<usize>,
    /// Items put and not yet marked done with `task_done`.
    unfinished_tasks: Cell<usize>,
    /// Futures of the `join` calls waiting for `unfinished_tasks` to reach zero.
    finished: RefCell<Vec<Future<()>>>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Queue {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue::new()
    }
}

/// `task_done` was called more times than items were put: asyncio's
/// `ValueError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskDoneTooOften;

impl std::fmt::Display for TaskDoneTooOften {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("task_done() called too many times")
    }
}

impl std::error::Error for TaskDoneTooOften {}

impl<T> Queue<T> {
    /// An empty queue. It needs no loop until someone waits on it.
    pub fn new() -> Queue<T> {
        Queue {
            inner: Rc::new(QueueInner {
                items: RefCell::new(VecDeque::new()),
                getters: RefCell::new(VecDeque::new()),
                abandoned_getters: Cell::new(0),
                unfinished_tasks: Cell::new(0),
                finished: RefCell::new(Vec::new()),
            }),
        }
    }

    /// Items waiting to be taken.
    pub fn qsize(&self) -> usize {
        self.inner.items.borrow().len()
    }

    /// Is no item waiting?
    pub fn empty(&self) -> bool {
        self.qsize() == 0
    }

    /// Items put and not yet marked done.
    pub fn unfinished_tasks(&self) -> usize {
        self.inner.unfinished_tasks.get()
    }

    // ANCHOR: put_nowait
    /// Add an item (never waits: the queue is unbounded) and wake the
    /// oldest waiting `get`.
    pub fn put_nowait(&self, item: T) {
        self.inner.items.borrow_mut().push_back(item);
        self.inner
            .unfinished_tasks
            .set(self.inner.unfinished_tasks.get() + 1);
        self.wakeup_next_getter();
    }

    /// Resolve the oldest getter that is still waiting. Abandoned ones are
    /// done already (cancelled), so `set_result` refuses them and we move on.
    fn wakeup_next_getter(&self) {
        loop {
            let getter = self.inner.getters.borrow_mut().pop_front();
            match getter {
                Some(getter) if getter.set_result(()) => break,
                Some(_) => {}
                None => break,
            }
        }
    }
    // ANCHOR_END: put_nowait

    /// Take the oldest item, if there is one.
    pub fn get_nowait(&self) -> Option<T> {
        let mut items = self.inner.items.borrow_mut();
        let item = items.pop_front();
        // A page with ten thousand links fills the queue at once; give the
        // memory back as it drains, not only when the queue is dropped.
        if items.capacity() > 64 && items.len() < items.capacity() / 4 {
            let half = items.capacity() / 2;
            items.shrink_to(half);
        }
        item
    }

    // ANCHOR: get
    /// Take the oldest item, waiting for one if the queue is empty.
    pub async fn get(&self) -> anyhow::Result<T> {
        loop {
            if let Some(item) = self.get_nowait() {
                return Ok(item);
            }
            let getter = get_running_loop().create_future();
            self.inner.getters.borrow_mut().push_back(getter.clone());
            let mut guard = GetterGuard {
                queue: self,
                getter,
                armed: true,
            };
            // Woken by `put_nowait`; then loop, because a `get_nowait` may
            // have taken the item between the wake-up and now.
            let woken = guard.getter.clone().await;
            guard.armed = woken.is_err();
            woken?;
        }
    }
    // ANCHOR_END: get

    // ANCHOR: task_done
    /// The worker that took an item has finished with it. When no item is
    /// unfinished any more, every `join` returns.
    pub fn task_done(&self) -> Result<(), TaskDoneTooOften> {
        let unfinished = self.inner.unfinished_tasks.get();
        if unfinished == 0 {
            return Err(TaskDoneTooOften);
        }
        self.inner.unfinished_tasks.set(unfinished - 1);
        if unfinished == 1 {
            let joiners = std::mem::take(&mut *self.inner.finished.borrow_mut());
            for joiner in joiners {
                joiner.set_result(());
            }
        }
        Ok(())
    }

    /// Wait until every item put has been marked done.
    pub async fn join(&self) -> anyhow::Result<()> {
        if self.inner.unfinished_tasks.get() == 0 {
            return Ok(());
        }
        let joiner = get_running_loop().create_future();
        self.inner.finished.borrow_mut().push(joiner.clone());
        joiner.await
    }
    // ANCHOR_END: task_done
}

/// Cleans up after a `get` that stops waiting without its item — cancelled,
/// or dropped by a `wait_for` — as asyncio's `get` does in its `except`.
struct GetterGuard<'a, T> {
    /// The queue the getter waits on.
    queue: &'a Queue<T>,
    /// The getter future.
    getter: Future<()>,
    /// Still to clean up: the `get` did not end with a normal wake-up.
    armed: bool,
}

impl<T> Drop for GetterGuard<'_, T> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let inner = &self.queue.inner;
        if self.getter.cancel() {
            // Still in the list: mark it abandoned rather than search for it
            // (with thousands of workers cancelled at the end of a crawl, one
            // search each would be quadratic). Sweep when half are abandoned.
            let abandoned = inner.abandoned_getters.get() + 1;
            let mut getters = inner.getters.borrow_mut();
            if 2 * abandoned > getters.len() {
                getters.retain(|getter| !getter.done());
                inner.abandoned_getters.set(0);
            } else {
                inner.abandoned_getters.set(abandoned);
            }
        } else if !self.queue.empty() {
            // We were woken for an item we will not take: pass the wake-up
            // on, or that item could wait while another getter sleeps.
            self.queue.wakeup_next_getter();
        }
    }
}
