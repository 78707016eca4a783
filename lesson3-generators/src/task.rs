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
//! Our waker does not step the task on the spot. It does what asyncio's
//! `Task.__wakeup` does: `call_soon(step)`, so the step runs on the loop's
//! next turn, as one more callback of its ready queue. Stepping on the spot
//! would run a coroutine from inside whatever callback set the result,
//! possibly from inside the same coroutine (a task that wakes itself).
//!
//! The waker is built with [`std::task::Wake`], with no `unsafe` and no
//! executor crate. Turning an `Arc<W>` into a `Waker` requires `W: Wake +
//! Send + Sync` (a waker may be sent to another thread), so it cannot hold
//! the task, which is not `Send`: it holds the task's id, and the loop keeps
//! a table from ids to tasks.
//!
//! A task is also a future: [`Task::future`] is resolved with what its
//! coroutine returns, so one coroutine can wait for another task to finish.

use std::cell::{Cell, RefCell};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use crate::event_loop::{try_get_running_loop, EventLoop, Remote};
use crate::future::Future;

/// A task's number in its loop's task table.
pub type TaskId = u64;

/// What a task runs: any future, boxed (its size is only known to the
/// compiler, and tasks of different coroutines share one table) and pinned
/// (an `async fn` future may point into itself once started, so it must not
/// move again). From here on a coroutine is anything that implements
/// `std::future::Future`; the `Coroutine` trait of `generator.rs` was step
/// 1's stand-in for it.
type Coroutine<T> = Pin<Box<dyn std::future::Future<Output = T>>>;

/// What the loop can do with a task without knowing its result type.
pub(crate) trait Step {
    /// Run the coroutine to its next suspension point.
    fn step(self: Rc<Self>);
    /// Schedule a `step` with `call_soon`, unless one is already scheduled.
    fn schedule(self: Rc<Self>);
    /// The loop is closing: drop the coroutine (running its destructors),
    /// even if someone still holds the task.
    fn abandon(&self);
}

// ANCHOR: waker
/// A task's waker. `Waker::from` takes only an `Arc` of a `Send + Sync`
/// type, so it holds the task's id, not the task; the loop looks it up.
struct TaskWaker {
    /// Which loop the task belongs to.
    loop_id: u64,
    /// The task.
    task: TaskId,
    /// The way in from another thread (or from this thread while the loop
    /// is not running).
    remote: Arc<Remote>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    /// asyncio's `Task.__wakeup`: `call_soon(step)`.
    fn wake_by_ref(self: &Arc<Self>) {
        match try_get_running_loop() {
            Some(event_loop) if event_loop.id() == self.loop_id => event_loop.wake_task(self.task),
            _ => self.remote.wake(self.task),
        }
    }
}
// ANCHOR_END: waker

/// A task: a handle (`Rc`) to a coroutine that the loop steps, and to the
/// future that holds its outcome.
pub struct Task<T> {
    /// Shared with the loop's task table (until the task finishes) and
    /// with every other handle.
    inner: Rc<TaskInner<T>>,
}

struct TaskInner<T> {
    /// The loop that steps it.
    event_loop: EventLoop,
    /// The outcome: a task *is* a future, so awaiting a task awaits this.
    future: Future<T>,
    /// Has the coroutine returned?
    finished: Cell<bool>,
    /// The coroutine; `None` once it has returned (or while it is polled).
    coro: RefCell<Option<Coroutine<T>>>,
    /// The task's waker, made once: every poll passes the same one, and
    /// every future the coroutine waits on keeps a clone of it. Kept as its
    /// `Arc`, from which a `Waker` is made for each poll at the cost of a
    /// reference count; it also holds the task's number in the loop's table.
    waker: Arc<TaskWaker>,
    /// A step is in the ready queue: a second wake-up before it runs must
    /// not schedule a second step.
    scheduled: Cell<bool>,
}

impl<T> Clone for Task<T> {
    fn clone(&self) -> Self {
        Task {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Clone + 'static> Task<T> {
    /// Wrap `coro` and schedule its first step (asyncio's `Task.__init__`
    /// does `call_soon(self.__step)` too). Usually called as
    /// `event_loop.create_task(coro)`.
    pub fn new(
        event_loop: &EventLoop,
        coro: impl std::future::Future<Output = T> + 'static,
    ) -> Task<T> {
        let id = event_loop.next_task_id();
        let inner = Rc::new(TaskInner {
            event_loop: event_loop.clone(),
            future: Future::new(event_loop),
            finished: Cell::new(false),
            coro: RefCell::new(Some(Box::pin(coro))),
            waker: Arc::new(TaskWaker {
                loop_id: event_loop.id(),
                task: id,
                remote: event_loop.remote(),
            }),
            scheduled: Cell::new(false),
        });
        event_loop.insert_task(id, inner.clone());
        inner.clone().schedule();
        Task { inner }
    }

    /// The future holding the task's outcome.
    pub fn future(&self) -> &Future<T> {
        &self.inner.future
    }

    /// Has the coroutine returned?
    pub fn done(&self) -> bool {
        self.inner.finished.get()
    }

    /// See [`Future::add_done_callback`].
    pub fn add_done_callback(&self, callback: impl FnOnce(Future<T>) + 'static) {
        self.inner.future.add_done_callback(callback);
    }
}

impl<T: Clone + 'static> Step for TaskInner<T> {
    fn schedule(self: Rc<Self>) {
        if self.scheduled.replace(true) {
            return;
        }
        let task = self.clone();
        self.event_loop.call_soon(move || task.step());
    }

    fn abandon(&self) {
        let coro = self.coro.borrow_mut().take();
        drop(coro);
    }

    // ANCHOR: step
    fn step(self: Rc<Self>) {
        self.scheduled.set(false);
        // Taken out of its cell while it runs, so that the coroutine may do
        // anything with its own task (await it, say) without finding
        // the cell borrowed.
        let coro = self.coro.borrow_mut().take();
        let Some(mut coro) = coro else { return };
        let waker = Waker::from(self.waker.clone());
        let poll = coro.as_mut().poll(&mut Context::from_waker(&waker));

        match poll {
            Poll::Pending => *self.coro.borrow_mut() = Some(coro),
            Poll::Ready(result) => {
                drop(coro);
                self.finish(result);
            }
        }
    }
    // ANCHOR_END: step
}

impl<T: Clone + 'static> TaskInner<T> {
    /// The coroutine returned: resolve the task's own future with its value.
    fn finish(&self, value: T) {
        self.finished.set(true);
        self.event_loop.remove_task(self.waker.task);
        self.future.set_result(value);
    }
}

impl<T: Clone + 'static> std::future::Future for Task<T> {
    type Output = T;

    /// Awaiting a task awaits its outcome.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut future = self.inner.future.clone();
        Pin::new(&mut future).poll(cx)
    }
}

impl<T: Clone + 'static> std::fmt::Debug for Task<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Through `done`, not the fields: what a task keeps is its own
        // business (and the learner's design).
        f.debug_struct("Task")
            .field("done", &self.done())
            .finish_non_exhaustive()
    }
}
