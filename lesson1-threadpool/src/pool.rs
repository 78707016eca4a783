//! # The thread pool: a fixed number of threads sharing one queue
//!
//! The tutorial's `ThreadPool` is a `Queue` plus `n` `Fetcher` threads, each
//! looping forever: take a URL, fetch it, put the new links, `task_done`.
//! This is the same pool in Rust, with three things the Python version leaves
//! out, each of which a careful program needs:
//!
//! - **The threads end.** Python marks its fetchers `daemon = True` and lets
//!   them die with the interpreter, mid-`get`. No thread outlives the crawl.
//! - **A panic cannot hang `join`.** In the Python version an exception in
//!   `run` kills that thread before its `task_done`, and the main thread
//!   waits in `join` forever.
//! - **Starting a thread can fail** (the system is out of memory or of
//!   threads — see the chapter on what a thread costs), and that failure is a
//!   value, not a crash.
//!
//! <!-- how -->
//! Here, once the main thread's `join` returns, the queue is shut down,
//! every `get` returns `None`, each thread leaves its loop, and the pool
//! joins its threads before it returns.
//!
//! Here `task_done` is called by a guard's `Drop`, which runs on the way out
//! of a panic too — and that guard also shuts the queue down at once, so the
//! crawl stops instead of waiting on threads that are gone. The panic then
//! comes back out of [`ThreadPool::wait_completion`].
//! <!-- /how -->
//!
//! The pool knows nothing about crawling: it runs any `work(queue, item)`.
//! The crawler's `work` is "fetch this URL and put its new links"
//! (`crawler.rs`).

use std::any::Any;
use std::io;

use crate::queue::{Queue, ShutDown};
use crate::sync::thread::{self, JoinHandle};
use crate::sync::Arc;

// ANCHOR: pool
/// `num_threads` threads taking items from one shared [`Queue`].
#[derive(Debug)]
pub struct ThreadPool<T> {
    /// The work queue. Shared (`Arc`) because each thread holds it too: the
    /// threads are not tied to this stack frame, so nothing they use may be
    /// borrowed from it.
    tasks: Arc<Queue<T>>,
    /// One handle per thread, to wait for each to end and to learn whether it
    /// panicked. Emptied when the threads have been joined.
    workers: Vec<JoinHandle<()>>,
}
// ANCHOR_END: pool

impl<T: Send + 'static> ThreadPool<T> {
    // ANCHOR: new
    /// Start `num_threads` threads; each runs `work(queue, item)` for every
    /// item it takes. `work` gets the queue so that it can `put` more work.
    ///
    /// `work` is shared by all the threads at once, hence `Sync` and `Fn`
    /// (not `FnMut`): any state it changes must bring its own lock.
    pub fn new<F>(num_threads: usize, work: F) -> io::Result<ThreadPool<T>>
    where
        F: Fn(&Queue<T>, T) + Send + Sync + 'static,
    {
        let work = Arc::new(work);
        let mut pool = ThreadPool {
            tasks: Arc::new(Queue::new()),
            workers: Vec::with_capacity(num_threads),
        };
        for i in 0..num_threads {
            let tasks = Arc::clone(&pool.tasks);
            let work = Arc::clone(&work);
            // A named thread shows up as `fetcher-3` in a panic message, a
            // debugger and `top -H`.
            let handle = thread::Builder::new()
                .name(format!("fetcher-{i}"))
                .spawn(move || fetcher(&tasks, &*work))?;
            // If a later `spawn` fails, `?` drops `pool`, and its `Drop`
            // stops and joins the threads already started.
            pool.workers.push(handle);
        }
        Ok(pool)
    }
    // ANCHOR_END: new

    // ANCHOR: add_task
    /// Queue an item for the threads (the tutorial's `add_task`).
    pub fn add_task(&self, item: T) -> Result<(), ShutDown> {
        self.tasks.put(item)
    }
    // ANCHOR_END: add_task

    // ANCHOR: wait_completion
    /// Wait until every item put — by `add_task` or by `work` — is done, then
    /// stop the threads and wait for each to end (the tutorial's
    /// `wait_completion`, plus the part that Python's daemon threads skip).
    /// An error when a thread panicked.
    pub fn wait_completion(mut self) -> anyhow::Result<()> {
        self.tasks.join();
        let panics = self.stop(false);
        match panics.first() {
            None => Ok(()),
            Some(message) => anyhow::bail!(
                "{} fetcher thread(s) panicked, the first with: {message}",
                panics.len()
            ),
        }
    }
    // ANCHOR_END: wait_completion
}

impl<T> ThreadPool<T> {
    /// Shut the queue down (so that every thread's `get` returns `None`) and
    /// join every thread. The messages of the threads that panicked.
    fn stop(&mut self, immediate: bool) -> Vec<String> {
        self.tasks.shutdown(immediate);
        self.workers
            .drain(..)
            .filter_map(|handle| handle.join().err())
            .map(|payload| panic_message(payload.as_ref()))
            .collect()
    }
}

impl<T> Drop for ThreadPool<T> {
    /// A pool dropped without `wait_completion` (an early return, a failed
    /// `spawn`) still ends its threads: queued work is thrown away, work in
    /// progress is waited for. The threads' panics, if any, were already
    /// printed by the panic hook. (`stop` on a stopped pool has no thread
    /// left to join: a pool's `Drop` needs no look at its fields.)
    fn drop(&mut self) {
        self.stop(true);
    }
}

// ANCHOR: fetcher
/// The loop each thread runs: the tutorial's `Fetcher.run`. Public for
/// `examples/std_threads.rs`, whose scoped threads run this same loop.
pub fn fetcher<T>(tasks: &Queue<T>, work: &dyn Fn(&Queue<T>, T)) {
    while let Some(item) = tasks.get() {
        // Dropped at the end of this iteration — or while unwinding, when
        // `work` panics. Either way the item is marked done exactly once.
        let _done = TaskDone(tasks);
        work(tasks, item);
    }
    // `get` returned `None`: the queue was shut down, the crawl is over.
}

/// Calls `task_done` when dropped.
struct TaskDone<'a, T>(&'a Queue<T>);

impl<T> Drop for TaskDone<'_, T> {
    fn drop(&mut self) {
        if thread::panicking() {
            // This thread is about to die. If it were the last one, the items
            // still queued would never be taken and `join` would wait
            // forever; drop them (they count as done) so the crawl ends and
            // the panic is reported.
            self.0.shutdown(true);
        }
        self.0.task_done();
    }
}
// ANCHOR_END: fetcher

// ANCHOR: panic_message
/// The text of a panic: `panic!` gives a `&str` or a `String`.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_string()
    }
}
// ANCHOR_END: panic_message
