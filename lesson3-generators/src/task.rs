//! # `Task`: what drives a coroutine
//!
//! A coroutine does nothing by itself; somebody has to resume it, and resume
//! it again whenever what it waits for has happened. In the tutorial that is
//! `Task`:
//!
//! ```python
//! class Task:
//!     def __init__(self, coro):
//!         self.coro = coro
//!         f = Future()
//!         f.set_result(None)
//!         self.step(f)
//!
//!     def step(self, future):
//!         try:
//!             next_future = self.coro.send(future.result)
//!         except StopIteration:
//!             return
//!         next_future.add_done_callback(self.step)
//! ```
//!
//! Here the coroutine is an `async fn`'s future (or the hand-written state
//! machine of `fetch_by_hand.rs`: anything that implements
//! [`std::future::Future`]), and [`Task::step`] is one `poll` of it. What
//! changes is how "resume me when that future is done" is said. The Python
//! coroutine yields the future it waits on, and `step` adds itself as its
//! done-callback. A Rust coroutine does not hand the future out: `poll` gets
//! a [`Waker`], each future the coroutine waits on keeps a clone of it (see
//! `Future::poll` in `future.rs`), and `set_result` calls `wake`. The effect
//! is the same: the task is resumed when, and only when, something it waits
//! for happened.
//!
//! Our waker does not step the task on the spot. It pushes the task's id on
//! the event loop's queue of woken tasks, and the loop steps it on its next
//! turn — asyncio's `call_soon(self._step)`. Stepping on the spot would run
//! a coroutine from inside whatever callback set the result, possibly from
//! inside the same coroutine (a task that wakes itself).
//!
//! The waker is built with [`std::task::Wake`], with no `unsafe` and no
//! executor crate. `Wake` demands `Send + Sync` (a waker may be sent to
//! another thread), so the queue it pushes onto is an `Arc<Mutex<..>>` even
//! though the whole lesson runs on one thread; the tasks themselves, which
//! are not `Send`, stay in the loop and are found by id.
//!
//! A task is also a future: [`Task::done`] is resolved when its coroutine
//! returns, so one coroutine can wait for another task to finish.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use crate::future::Future;

/// What a task runs: any future with no result, boxed (its size is only
/// known to the compiler, and tasks of different coroutines share one table)
/// and pinned (an `async fn` future may point into itself once started, so
/// it must not move again). From here on a coroutine is anything that
/// implements `std::future::Future`; the `Coroutine` trait of
/// `generator.rs` was step 1's stand-in for it.
pub type BoxedCoroutine = Pin<Box<dyn std::future::Future<Output = ()>>>;

/// Names a task in the event loop's table of tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub usize);

// ANCHOR: ready_queue
/// The ids of tasks that were woken and wait for their next step, in the
/// order they were woken. The event loop pops them; wakers push them.
#[derive(Debug, Clone, Default)]
pub struct ReadyQueue {
    /// Shared by the loop and every waker. A `Mutex` because `Wake` requires
    /// `Send + Sync`; on one thread it is never contended.
    ids: Arc<Mutex<VecDeque<TaskId>>>,
}

impl ReadyQueue {
    pub fn new() -> Self {
        ReadyQueue::default()
    }

    /// Schedule a step of task `id`.
    pub fn push(&self, id: TaskId) {
        // A poisoned lock means a panic elsewhere already broke the loop.
        self.ids.lock().expect("ready queue lock").push_back(id);
    }

    /// The next task to step, if any.
    pub fn pop(&self) -> Option<TaskId> {
        self.ids.lock().expect("ready queue lock").pop_front()
    }

    /// How many steps are scheduled.
    pub fn len(&self) -> usize {
        self.ids.lock().expect("ready queue lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The waker of one task: waking it schedules the task's next step.
struct TaskWaker {
    /// Which task to step.
    id: TaskId,
    /// Where to schedule it: the event loop's queue.
    ready: ReadyQueue,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.ready.push(self.id);
    }
}
// ANCHOR_END: ready_queue

// ANCHOR: task
/// A coroutine and what it takes to resume it.
pub struct Task {
    /// This task's name in the loop's table (and in its waker).
    id: TaskId,
    /// The coroutine; `None` once it returned, so its frame — sockets,
    /// buffers, everything it held — is dropped the moment it finishes, and a
    /// stray `step` afterwards does nothing. (Polling a finished `async fn`
    /// again would panic: the compiler's version of `Err(Finished)`.)
    coro: Option<BoxedCoroutine>,
    /// Built once and handed to every `poll`: futures that compare wakers
    /// (`will_wake`) then see the same waker each time.
    waker: Waker,
    /// Resolved when the coroutine returns: a task is a future too.
    done: Future<()>,
}

impl Task {
    /// Wrap `coro` in a task whose wake-ups go to `ready`. Nothing runs yet:
    /// the loop schedules the first step (the tutorial's `Task.__init__`
    /// runs it at once; asyncio, like us, schedules it).
    pub fn new(id: TaskId, coro: BoxedCoroutine, ready: &ReadyQueue) -> Task {
        let waker = Waker::from(Arc::new(TaskWaker {
            id,
            ready: ready.clone(),
        }));
        Task {
            id,
            coro: Some(coro),
            waker,
            done: Future::new(),
        }
    }

    pub fn id(&self) -> TaskId {
        self.id
    }

    /// Resume the coroutine until it next waits or returns. `true` once it
    /// has returned (then [`Task::done`] is resolved).
    pub fn step(&mut self) -> bool {
        let Some(coro) = self.coro.as_mut() else {
            return true;
        };
        let mut cx = Context::from_waker(&self.waker);
        match coro.as_mut().poll(&mut cx) {
            Poll::Pending => false,
            Poll::Ready(()) => {
                self.coro = None;
                self.done.set_result(());
                true
            }
        }
    }

    /// A future resolved when the coroutine returns.
    pub fn done(&self) -> Future<()> {
        self.done.clone()
    }
}
// ANCHOR_END: task

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.id)
            .field("finished", &self.coro.is_none())
            .finish()
    }
}
