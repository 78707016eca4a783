//! # `Future`: a result that is not there yet
//!
//! In lesson 2 the code that waited for a socket and the code that ran when
//! it was ready were two different callbacks, and everything they shared had
//! to live in an object on the side. A future breaks that pair apart: the
//! waiting code creates a [`Future`], hands a clone to whoever will produce
//! the result (here, a reader callback of the event loop, or a timer), and
//! waits on its own copy. The producer calls [`Future::set_result`]; every
//! callback added with [`Future::add_done_callback`] then runs. That is the
//! tutorial's whole `Future` class: a result slot and a list of callbacks.
//! Like asyncio's, ours *schedules* those callbacks with the loop's
//! `call_soon` rather than calling them: whoever completes a future — a
//! socket callback, another task — is never re-entered by the code waiting
//! on it.
//!
//! The second half of this file is what makes the lesson's `Future` usable
//! from an `async fn`: it implements [`std::future::Future`], so a coroutine
//! can write `f.await`. That is the counterpart of the tutorial's
//! `Future.__iter__` (`yield self; return self.result`), which lets
//! `yield from` wait on a future and on a sub-coroutine alike. Awaiting a
//! future that is already done returns its result at once; awaiting one that
//! is not records the task's waker, so that `set_result` wakes the task.
//!
//! The tutorial's `add_done_callback` has a bug worth naming: it only appends
//! to the list, and `set_result` runs the list once. A callback added *after*
//! the result was set never runs, so a task that yields an already-finished
//! future is never resumed. Here a callback added to a done future is
//! scheduled at once, and `await` on a done future does not wait at all.

use std::cell::RefCell;
use std::fmt;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::event_loop::EventLoop;

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

    /// Has the result been set?
    pub fn done(&self) -> bool {
        !matches!(self.inner.core.borrow().state, State::Pending)
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
}

impl<T: Clone + 'static> Future<T> {
    /// The result, if it has been set.
    pub fn result(&self) -> Option<T> {
        match &self.inner.core.borrow().state {
            State::Result(value) => Some(value.clone()),
            State::Pending => None,
        }
    }
}

// ANCHOR: poll
/// Waiting on a future: the tutorial's `Future.__iter__`.
///
/// ```python
/// def __iter__(self):
///     yield self          # the task's step adds itself as a done-callback
///     return self.result  # resumed by set_result
/// ```
///
/// `poll` is both halves. If the result is set it returns it: no suspension
/// at all, which is what the tutorial gets wrong for a future that finished
/// before it was waited on. If not, it records the waker of the task that
/// polled — the Rust spelling of "add the task's `step` as a done-callback"
/// — and returns `Pending`, which suspends the coroutine all the way up to
/// whatever drives it.
impl<T: Clone + 'static> std::future::Future for Future<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(result) = self.result() {
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

impl<T: 'static> fmt::Debug for Future<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.done() { "finished" } else { "pending" };
        f.debug_struct("Future").field("state", &state).finish()
    }
}
