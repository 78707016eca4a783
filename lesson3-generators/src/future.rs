//! # `Future`: a result that is not there yet
//!
//! In lesson 2 the code that waited for a socket and the code that ran when
//! it was ready were two different callbacks, and everything they shared had
//! to live in an object on the side. A future breaks that pair apart: the
//! waiting code creates a [`Future`], hands a clone to whoever will produce
//! the result (here, a readiness callback of the event loop or a timer), and
//! waits on its own copy. The producer calls [`Future::set_result`]; every
//! callback added with [`Future::add_done_callback`] then runs. That is the
//! tutorial's whole `Future` class: a result slot and a list of callbacks.
//!
//! The second half of this file is what makes the lesson's `Future` usable
//! from an `async fn`: it implements [`std::future::Future`], so a coroutine
//! can write `f.await`. That is the counterpart of the tutorial's
//! `Future.__iter__` (`yield self; return self.result`), which lets
//! `yield from` wait on a future and on a sub-coroutine alike. Awaiting a
//! future that is already done returns its result at once; awaiting one that
//! is not registers the task's waker, so that `set_result` wakes the task.
//!
//! The tutorial's `add_done_callback` has a bug worth naming: it only appends
//! to the list, and `set_result` runs the list once. A callback added *after*
//! the result was set never runs, so a task that yields an already-finished
//! future is never resumed. Here a callback added to a done future runs at
//! once, and `await` on a done future does not wait at all.
//!
//! Finally [`race`]: wait for whichever of two futures finishes first. The crawler uses it to race a fetch against its deadline.

use std::cell::RefCell;
use std::fmt;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// A done-callback: gets the result when it is set.
type DoneCallback<T> = Box<dyn FnOnce(&T)>;

// ANCHOR: future
/// A result that will be set later, shared by its producer and whoever waits
/// for it. Cloning gives another handle to the same slot, like passing a
/// Python object around.
pub struct Future<T> {
    /// Shared by every clone: the producer sets the result through one
    /// handle, the waiting coroutine reads it through another. `Rc` and
    /// `RefCell`, not `Arc` and `Mutex`: everything runs on the loop's thread.
    inner: Rc<RefCell<Inner<T>>>,
}

/// The state behind every handle of one [`Future`].
struct Inner<T> {
    /// `None` until `set_result`; then the result, forever. In an `Rc` so a
    /// callback can hold it without holding a borrow of this slot.
    result: Option<Rc<T>>,
    /// What to run when the result is set (the tutorial's `_callbacks`).
    callbacks: Vec<DoneCallback<T>>,
    /// The wakers of the tasks awaiting this future. Kept apart from
    /// `callbacks` so that a task polled again while it still waits (a
    /// spurious wake-up, or a race polling both its sides) registers its
    /// waker once, not once per poll.
    wakers: Vec<Waker>,
}

impl<T> Future<T> {
    /// A future with no result yet.
    pub fn new() -> Self {
        Future {
            inner: Rc::new(RefCell::new(Inner {
                result: None,
                callbacks: Vec::new(),
                wakers: Vec::new(),
            })),
        }
    }

    /// Has the result been set?
    pub fn done(&self) -> bool {
        self.inner.borrow().result.is_some()
    }

    /// Set the result, then run the done-callbacks (in the order they were
    /// added) and wake the awaiting tasks.
    ///
    /// asyncio raises `InvalidStateError` on a second `set_result`. Here the
    /// first result wins and a second call does nothing: the producers are
    /// readiness callbacks, and an edge-triggered socket can report two
    /// events before the task they wake gets to run. Neither may crash the
    /// loop.
    pub fn set_result(&self, value: T) {
        let (callbacks, wakers) = {
            let mut inner = self.inner.borrow_mut();
            if inner.result.is_some() {
                return;
            }
            inner.result = Some(Rc::new(value));
            (
                std::mem::take(&mut inner.callbacks),
                std::mem::take(&mut inner.wakers),
            )
        };
        // The borrow is released before any callback runs: a callback may
        // well look at this future again (`done`, `result`, or add another
        // callback), and that must not find it borrowed.
        for callback in callbacks {
            self.call(callback);
        }
        for waker in wakers {
            waker.wake();
        }
    }

    /// Run `callback` when the result is set — at once if it already is.
    /// (The tutorial's version only appended; see the module notes.)
    pub fn add_done_callback(&self, callback: impl FnOnce(&T) + 'static) {
        if self.done() {
            self.call(Box::new(callback));
        } else {
            self.inner.borrow_mut().callbacks.push(Box::new(callback));
        }
    }

    /// Run one done-callback on the result, which is set. The callback gets
    /// its own `Rc` of the result, so no borrow of the slot is held while it
    /// runs.
    fn call(&self, callback: DoneCallback<T>) {
        let result = self.inner.borrow().result.clone();
        if let Some(result) = result {
            callback(&result);
        }
    }
}
// ANCHOR_END: future

impl<T: Clone> Future<T> {
    /// The result, if it has been set.
    pub fn result(&self) -> Option<T> {
        self.inner.borrow().result.as_deref().cloned()
    }
}

impl<T> Clone for Future<T> {
    fn clone(&self) -> Self {
        Future {
            inner: Rc::clone(&self.inner),
        }
    }
}

impl<T> Default for Future<T> {
    fn default() -> Self {
        Future::new()
    }
}

impl<T> fmt::Debug for Future<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.borrow();
        f.debug_struct("Future")
            .field("done", &inner.result.is_some())
            .field("callbacks", &inner.callbacks.len())
            .field("wakers", &inner.wakers.len())
            .finish()
    }
}

// ANCHOR: await
/// `f.await`: the tutorial's `Future.__iter__`.
///
/// ```python
/// def __iter__(self):
///     yield self          # Task.step adds itself as a done-callback
///     return self.result  # resumed by set_result
/// ```
///
/// `poll` is both halves. If the result is set it returns it: no suspension
/// at all, which is what the tutorial gets wrong for a future that finished
/// before it was waited on. If not, it registers the task's waker — the
/// Rust spelling of "add `Task.step` as a done-callback" — and returns
/// `Pending`, which suspends the coroutine all the way up to its `Task`.
impl<T: Clone> std::future::Future for Future<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut inner = self.inner.borrow_mut();
        if let Some(result) = &inner.result {
            return Poll::Ready(T::clone(result));
        }
        if !inner.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            inner.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
// ANCHOR_END: await

/// Which side of a [`race`] finished first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Either<A, B> {
    /// The first future finished first, with this output.
    Left(A),
    /// The second future finished first, with this output.
    Right(B),
}

// ANCHOR: race
/// Wait for whichever of `a` and `b` finishes first. The caller then drops
/// both, and with the unfinished one everything it held (a socket, a timer).
///
/// Written by hand with [`std::future::poll_fn`]: each time the task is
/// woken, poll both sides. Both register the same waker, so whichever side
/// makes progress wakes the task. When both are ready in the same poll, `a`
/// wins: the crawler passes the fetch as `a`, so a response that is complete
/// at the deadline is kept.
///
/// The futures come in pinned by the caller (`std::pin::pin!`), not by
/// value. An `async fn` keeps its arguments in its own frame, so taking two
/// futures by value and pinning them inside would store each twice — once
/// as the argument, once as the pinned local — and make every fetch's
/// coroutine that much bigger.
pub async fn race<A, B>(mut a: Pin<&mut A>, mut b: Pin<&mut B>) -> Either<A::Output, B::Output>
where
    A: std::future::Future + ?Sized,
    B: std::future::Future + ?Sized,
{
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(out));
        }
        if let Poll::Ready(out) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(out));
        }
        Poll::Pending
    })
    .await
}
// ANCHOR_END: race
