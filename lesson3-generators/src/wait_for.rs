//! # `wait_for`: a deadline around any awaitable
//!
//! asyncio's `wait_for(aw, timeout)` runs `aw` and a timer side by side: if
//! the timer wins, `aw` is cancelled and `TimeoutError` is raised. The
//! crawler puts its `--timeout` around each whole fetch attempt this way —
//! connect, request and the complete response, whatever the server does.
//!
//! In Rust a coroutine that is not wrapped in a task is a plain value, and
//! *dropping it* is how it is cancelled: its destructors run (a waiting
//! socket is deregistered and closed), and it is never polled again.
//! <!-- how -->
//! So `wait_for` polls the coroutine and a [`sleep`] in turn, and when the
//! sleep is over it returns; whoever awaited it then drops both.
//! <!-- /how -->

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::sleep::{sleep, Sleep};

/// The error of a `wait_for` whose deadline passed: asyncio's `TimeoutError`.
/// Like asyncio's, it does not say which deadline: the caller knows, and
/// every fetch in flight would otherwise keep a copy of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeoutError;

impl fmt::Display for TimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("timed out")
    }
}

impl std::error::Error for TimeoutError {}

// ANCHOR: wait_for
/// Await `fut`, but give up with [`TimeoutError`] after `timeout`.
///
/// `fut` must be `Unpin`: a [`Task`](crate::task::Task), a
/// [`Future`](crate::future::Future), or a coroutine pinned by the caller
/// (`wait_for(pin!(fetch()), t)`). A coroutine taken by value would have to
/// be pinned in here, and it is the bulk of what a waiting fetch costs in
/// memory: better it stays where the caller made it.
pub fn wait_for<F>(fut: F, timeout: Duration) -> WaitFor<F> {
    WaitFor {
        fut,
        timer: sleep(timeout),
    }
}

/// The future [`wait_for`] returns: the awaitable and its deadline, polled
/// side by side. A plain struct rather than an `async fn`, whose state would
/// keep a second copy of its arguments.
pub struct WaitFor<F> {
    /// What is awaited.
    fut: F,
    /// The deadline.
    timer: Sleep,
}

impl<T, F> Future for WaitFor<F>
where
    F: Future<Output = anyhow::Result<T>> + Unpin,
{
    type Output = anyhow::Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        // The awaitable first: if it and the timer are both ready, the work
        // that was done wins over the deadline.
        if let Poll::Ready(result) = Pin::new(&mut this.fut).poll(cx) {
            return Poll::Ready(result);
        }
        match Pin::new(&mut this.timer).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(TimeoutError.into())),
            Poll::Pending => Poll::Pending,
        }
    }
}
// ANCHOR_END: wait_for
