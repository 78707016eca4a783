//! # `Future`: a result that is not there yet
//!
//! asyncio's `Future`, as lesson 3 built it, grown up. Lesson 3's future
//! held a value, scheduled its done-callbacks with `call_soon`, and woke the
//! task awaiting it. It knew no errors, and every awaiter got a clone of the
//! value. This one:
//!
//! - holds a **result or an error** (`set_result`, `set_exception`), or is
//!   **cancelled** (`cancel`): asyncio's three ways for a future to end;
//!   `.await` gives `anyhow::Result<T>`, and `?` carries an error up;
//! - moves its result out rather than sharing it (Rust's ownership, where
//!   Python shares one object): the first `.await` (or `take_result`) takes
//!   the value, so a result need not be `Clone`.
//!
//! Awaiting a future is also where a task learns it was cancelled: see
//! [`crate::task`].

use std::cell::RefCell;
use std::fmt;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::event_loop::EventLoop;
use crate::task;

/// The error a cancelled future or task ends with: asyncio's `CancelledError`.
/// It travels up a coroutine like any error (`?`), so a coroutine can catch
/// it to clean up, and [`is_cancelled`] finds it under any added context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// Is this error (or anything in its chain of causes) a cancellation?
pub fn is_cancelled(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| cause.is::<Cancelled>())
}

/// A future: a cheap handle (`Rc`), cloned to give the producer and the
/// consumer each their copy, as Python passes the same object around.
pub struct Future<T> {
    /// Shared by every clone: the producer and the consumer see one state.
    inner: Rc<FutureInner<T>>,
}

struct FutureInner<T> {
    /// The loop that runs this future's callbacks.
    event_loop: EventLoop,
    /// Everything that changes. One `RefCell`, never borrowed across a
    /// callback or a wake-up.
    core: RefCell<Core<T>>,
}

struct Core<T> {
    /// Pending, or how it ended.
    state: State<T>,
    /// The waker of the task awaiting this future (kept apart so that the
    /// usual single awaiter costs no allocation)...
    waker: Option<Waker>,
    /// ...and everyone else to tell when it completes.
    callbacks: Vec<Callback<T>>,
}

/// Someone to tell when a future completes, besides its first awaiter.
enum Callback<T> {
    /// An `add_done_callback` callback, scheduled with `call_soon`.
    Done(Box<dyn FnOnce(Future<T>)>),
    /// Another task awaiting the future through a clone (rare), woken.
    Wake(Waker),
}

enum State<T> {
    Pending,
    Result(T),
    Exception(anyhow::Error),
    Cancelled,
    /// The result (or error) was moved out by its consumer.
    Taken,
}

impl<T> Clone for Future<T> {
    fn clone(&self) -> Self {
        Future {
            inner: self.inner.clone(),
        }
    }
}

impl<T: 'static> Future<T> {
    /// A pending future whose callbacks run on `event_loop`.
    pub fn new(event_loop: &EventLoop) -> Future<T> {
        Future {
            inner: Rc::new(FutureInner {
                event_loop: event_loop.clone(),
                core: RefCell::new(Core {
                    state: State::Pending,
                    waker: None,
                    callbacks: Vec::new(),
                }),
            }),
        }
    }

    /// The loop this future belongs to.
    pub fn get_loop(&self) -> &EventLoop {
        &self.inner.event_loop
    }

    /// Has it a result, an error, or been cancelled?
    pub fn done(&self) -> bool {
        !matches!(self.inner.core.borrow().state, State::Pending)
    }

    /// Was it cancelled?
    pub fn cancelled(&self) -> bool {
        matches!(self.inner.core.borrow().state, State::Cancelled)
    }

    /// Are these two handles the same future?
    pub fn ptr_eq(&self, other: &Future<T>) -> bool {
        Rc::ptr_eq(&self.inner, &other.inner)
    }

    // ANCHOR: set_result
    /// Complete with `value`. Returns `false`, changing nothing, when the
    /// future is already done (asyncio raises `InvalidStateError`; here a
    /// socket callback that fires twice must simply be harmless).
    pub fn set_result(&self, value: T) -> bool {
        self.finish(State::Result(value))
    }

    /// Complete with an error.
    pub fn set_exception(&self, err: anyhow::Error) -> bool {
        self.finish(State::Exception(err))
    }

    /// Cancel: complete with [`Cancelled`]. Returns `false` when already done.
    pub fn cancel(&self) -> bool {
        self.finish(State::Cancelled)
    }

    fn finish(&self, state: State<T>) -> bool {
        let (waker, callbacks) = {
            let mut core = self.inner.core.borrow_mut();
            if !matches!(core.state, State::Pending) {
                return false;
            }
            core.state = state;
            (core.waker.take(), std::mem::take(&mut core.callbacks))
        };
        // Scheduled, not called: the code that completed this future carries
        // on undisturbed, and the callbacks run on the loop's next turn.
        // (Waking a task is scheduling its step, too.)
        for callback in callbacks {
            match callback {
                Callback::Done(callback) => {
                    let future = self.clone();
                    self.get_loop().call_soon(move || callback(future));
                }
                Callback::Wake(waker) => waker.wake(),
            }
        }
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }
    // ANCHOR_END: set_result

    /// Call `callback(future)` once the future is done — on a later turn of
    /// the loop, even if it is done already.
    pub fn add_done_callback(&self, callback: impl FnOnce(Future<T>) + 'static) {
        let mut core = self.inner.core.borrow_mut();
        if matches!(core.state, State::Pending) {
            core.callbacks.push(Callback::Done(Box::new(callback)));
        } else {
            drop(core);
            let future = self.clone();
            self.get_loop().call_soon(move || callback(future));
        }
    }

    /// Move the outcome out: `None` while pending; then the value or the
    /// error, once (a second call gets an error saying it was taken).
    /// A cancelled future gives [`Cancelled`] every time.
    pub fn take_result(&self) -> Option<anyhow::Result<T>> {
        let mut core = self.inner.core.borrow_mut();
        match &core.state {
            State::Pending => None,
            State::Cancelled => Some(Err(Cancelled.into())),
            State::Taken => Some(Err(anyhow::anyhow!(
                "the result of this future was already taken"
            ))),
            State::Result(_) | State::Exception(_) => {
                match std::mem::replace(&mut core.state, State::Taken) {
                    State::Result(value) => Some(Ok(value)),
                    State::Exception(err) => Some(Err(err)),
                    _ => None,
                }
            }
        }
    }
}

// ANCHOR: poll
impl<T: 'static> std::future::Future for Future<T> {
    type Output = anyhow::Result<T>;

    /// What `.await` does: take the result if there is one, else leave the
    /// task's waker and say "not yet". If the task awaiting here has been
    /// cancelled, the cancellation is delivered here, as asyncio throws
    /// `CancelledError` into the coroutine at its `await`.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if task::take_cancel_request() {
            return Poll::Ready(Err(Cancelled.into()));
        }
        if let Some(result) = self.take_result() {
            return Poll::Ready(result);
        }
        let mut core = self.inner.core.borrow_mut();
        let waker = cx.waker();
        match &core.waker {
            None => core.waker = Some(waker.clone()),
            Some(first) if first.will_wake(waker) => {}
            Some(_) => {
                let known = core.callbacks.iter().any(
                    |callback| matches!(callback, Callback::Wake(other) if other.will_wake(waker)),
                );
                if !known {
                    core.callbacks.push(Callback::Wake(waker.clone()));
                }
            }
        }
        Poll::Pending
    }
}
// ANCHOR_END: poll

impl<T> fmt::Debug for Future<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.inner.core.borrow().state {
            State::Pending => "pending",
            State::Result(_) => "finished",
            State::Exception(_) => "failed",
            State::Cancelled => "cancelled",
            State::Taken => "taken",
        };
        f.debug_struct("Future").field("state", &state).finish()
    }
}
