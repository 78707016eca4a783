//! # `wait_for`: a deadline around any awaitable
//!
//! asyncio's `wait_for(aw, timeout)` runs `aw` and a timer side by side: if
//! the timer wins, `aw` is cancelled and `TimeoutError` is raised. The
//! crawler puts its `--timeout` around each whole fetch attempt this way —
//! connect, request and the complete response, whatever the server does.
//!
//! In Rust a coroutine that is not wrapped in a task is a plain value, and
//! *dropping it* is how it is cancelled: its destructors run (a waiting
//! socket stops waiting and closes, a pooled connection is given back as
//! closed), and it is never polled again. So `wait_for` polls the coroutine
//! and a [`sleep`](crate::sleep::sleep) in turn, and when the sleep is over it
//! returns, dropping both.

use std::fmt;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::Poll;
use std::time::Duration;

use crate::sleep::sleep;

/// The error of a `wait_for` whose deadline passed: asyncio's `TimeoutError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeoutError {
    /// The deadline that passed.
    pub timeout: Duration,
}

impl fmt::Display for TimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timed out after {:?}", self.timeout)
    }
}

impl std::error::Error for TimeoutError {}

// ANCHOR: wait_for
/// Await `fut`, but give up with [`TimeoutError`] after `timeout`.
///
/// `fut` must be `Unpin`: a [`Task`](crate::task::Task), a
/// [`Future`](crate::future::Future), or a coroutine pinned by the caller
/// (`wait_for(pin!(fetch()), t)`). Taking the coroutine by value and pinning
/// it here would work too, but the compiler would then reserve room for it
/// twice in `wait_for`'s state — once as the argument, once pinned — and a
/// fetch's coroutine is the bulk of what a waiting fetch costs in memory.
pub async fn wait_for<T>(
    mut fut: impl Future<Output = anyhow::Result<T>> + Unpin,
    timeout: Duration,
) -> anyhow::Result<T> {
    let mut timer = pin!(sleep(timeout));
    poll_fn(|cx| {
        // The awaitable first: if it and the timer are both ready, the work
        // that was done wins over the deadline.
        if let Poll::Ready(result) = Pin::new(&mut fut).poll(cx) {
            return Poll::Ready(result);
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(Err(TimeoutError { timeout }.into())),
            // The sleep delivered a cancellation of the calling task.
            Poll::Ready(Err(err)) => Poll::Ready(Err(err)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}
// ANCHOR_END: wait_for
