//! # `Task`: a coroutine wrapped in a future
//!
//! In lesson 3 a `Task` stepped a coroutine each time it was woken (its
//! waker is asyncio's `Task.__wakeup`: `call_soon(step)`), and it was a
//! future resolved with the coroutine's value. Here the coroutine returns a
//! result, so the task completes with a value *or an error*, and it can be
//! **cancelled**. Stepping is unchanged: the task polls its coroutine (a
//! `Pin<Box<dyn std::future::Future>>`) with a waker built with
//! `std::task::Wake`. Two savings for a crawl with ten thousand tasks: the
//! task's future is made only when someone asks for it, and its step is
//! queued as the task itself rather than a boxed closure.
//!
//! ## Cancellation
//!
//! asyncio's `Task.cancel()` throws `CancelledError` into the coroutine at
//! the `await` where it is suspended, so the coroutine can clean up (a
//! `finally`, an `except CancelledError`). A Rust coroutine cannot have an
//! error thrown into it from outside, but it can be handed one by what it
//! awaits.
//! <!-- how -->
//! So `cancel()` marks the task and schedules a step; during that step the
//! mark is visible to every future the runtime provides ([`Future`] and so
//! the queue; sleeps; socket waits), and the first one polled returns
//! `Err(Cancelled)` instead of waiting.
//! <!-- /how -->
//! The coroutine sees the error come out of its `.await`, exactly where
//! Python would raise it; `?` carries it up, running destructors (Rust's
//! `finally`) on the way, and the task ends cancelled.

use std::cell::{Cell, OnceCell, RefCell};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use crate::event_loop::{try_get_running_loop, EventLoop, Remote};
use crate::future::{is_cancelled, Future};

/// A task's number in its loop's task table.
pub type TaskId = u64;

/// The coroutine a task steps: any `async` block or `async fn` call that
/// returns a result. Boxed and pinned, because it may hold references into
/// itself across `.await`s and so must not move.
type Coroutine<T> = Pin<Box<dyn std::future::Future<Output = anyhow::Result<T>>>>;

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

thread_local! {
    /// Set while a task that was asked to cancel is being stepped, and
    /// cleared by the first future that delivers the cancellation.
    static CANCEL_REQUESTED: Cell<bool> = const { Cell::new(false) };
}

/// Called by a future when it is polled: has the task being stepped been
/// cancelled? If so, the request is consumed (delivered once, as asyncio
/// throws `CancelledError` once) and the future should return
/// `Err(Cancelled)`. Futures written outside this crate can call it too.
pub fn take_cancel_request() -> bool {
    CANCEL_REQUESTED.with(|requested| requested.replace(false))
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
    /// Made when first asked for (or when the task finishes): a worker that
    /// nobody awaits until the end of the crawl does not carry one while it
    /// works.
    future: OnceCell<Future<T>>,
    /// Has the coroutine finished (returned, failed, or been cancelled)?
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
    /// `cancel()` was called and the coroutine has not been told yet.
    must_cancel: Cell<bool>,
    /// Has the coroutine run at all? A task cancelled before its first step
    /// never starts, as in asyncio.
    started: Cell<bool>,
}

impl<T> Clone for Task<T> {
    fn clone(&self) -> Self {
        Task {
            inner: self.inner.clone(),
        }
    }
}

impl<T: 'static> Task<T> {
    /// Wrap `coro` and schedule its first step (asyncio's `Task.__init__`
    /// does `call_soon(self.__step)` too). Usually called as
    /// `event_loop.create_task(coro)`.
    pub fn new(
        event_loop: &EventLoop,
        coro: impl std::future::Future<Output = anyhow::Result<T>> + 'static,
    ) -> Task<T> {
        let id = event_loop.next_task_id();
        let inner = Rc::new(TaskInner {
            event_loop: event_loop.clone(),
            future: OnceCell::new(),
            finished: Cell::new(false),
            coro: RefCell::new(Some(Box::pin(coro))),
            waker: Arc::new(TaskWaker {
                loop_id: event_loop.id(),
                task: id,
                remote: event_loop.remote(),
            }),
            scheduled: Cell::new(false),
            must_cancel: Cell::new(false),
            started: Cell::new(false),
        });
        event_loop.insert_task(id, inner.clone());
        inner.clone().schedule();
        Task { inner }
    }

    // ANCHOR: cancel
    /// Ask the task to stop: the coroutine gets `Err(Cancelled)` from the
    /// `.await` it is suspended at, on the task's next step (scheduled now).
    /// Returns `false` when the task is already done.
    pub fn cancel(&self) -> bool {
        if self.inner.finished.get() {
            return false;
        }
        self.inner.must_cancel.set(true);
        self.inner.clone().schedule();
        true
    }
    // ANCHOR_END: cancel

    /// Has the coroutine finished (returned, failed, or been cancelled)?
    pub fn done(&self) -> bool {
        self.inner.finished.get()
    }

    /// Did the task end cancelled?
    pub fn cancelled(&self) -> bool {
        self.inner.future.get().is_some_and(Future::cancelled)
    }

    /// See [`Future::add_done_callback`].
    pub fn add_done_callback(&self, callback: impl FnOnce(Future<T>) + 'static) {
        self.inner.future().add_done_callback(callback);
    }

    /// See [`Future::take_result`].
    pub fn take_result(&self) -> Option<anyhow::Result<T>> {
        self.inner.future().take_result()
    }
}

impl<T: 'static> Step for TaskInner<T> {
    fn schedule(self: Rc<Self>) {
        if self.scheduled.replace(true) {
            return;
        }
        self.event_loop.call_soon_step(self.clone());
    }

    fn abandon(&self) {
        let coro = self.coro.borrow_mut().take();
        drop(coro);
    }

    // ANCHOR: step
    fn step(self: Rc<Self>) {
        self.scheduled.set(false);
        // Taken out of its cell while it runs, so that the coroutine may do
        // anything with its own task (await it, cancel it) without finding
        // the cell borrowed.
        let coro = self.coro.borrow_mut().take();
        let Some(mut coro) = coro else { return };

        if self.must_cancel.get() && !self.started.get() {
            drop(coro);
            self.finish(Err(crate::future::Cancelled.into()));
            return;
        }
        self.started.set(true);

        // Make the cancellation visible to the futures this poll reaches.
        let outer = CANCEL_REQUESTED.with(|c| c.replace(self.must_cancel.replace(false)));
        let waker = Waker::from(self.waker.clone());
        let poll = coro.as_mut().poll(&mut Context::from_waker(&waker));
        // If no future took the request (the coroutine finished, or waits on
        // something that does not look), keep it for the next step.
        if CANCEL_REQUESTED.with(|c| c.replace(outer)) {
            self.must_cancel.set(true);
        }

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

impl<T: 'static> TaskInner<T> {
    /// The task's future, made on first use.
    fn future(&self) -> &Future<T> {
        self.future.get_or_init(|| Future::new(&self.event_loop))
    }

    /// The coroutine returned: resolve the task's own future with its outcome.
    fn finish(&self, result: anyhow::Result<T>) {
        self.finished.set(true);
        self.event_loop.remove_task(self.waker.task);
        let future = self.future();
        match result {
            Ok(value) => future.set_result(value),
            Err(err) if is_cancelled(&err) => future.cancel(),
            Err(err) => future.set_exception(err),
        };
    }
}

impl<T: 'static> std::future::Future for Task<T> {
    type Output = anyhow::Result<T>;

    /// Awaiting a task awaits its outcome.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut future = self.inner.future().clone();
        Pin::new(&mut future).poll(cx)
    }
}

impl<T: 'static> std::fmt::Debug for Task<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Through `done`, not the fields: what a task keeps is its own
        // business (and the learner's design).
        f.debug_struct("Task")
            .field("done", &self.done())
            .finish_non_exhaustive()
    }
}
