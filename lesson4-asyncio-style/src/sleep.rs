//! # `sleep`: a task woken by a timer
//!
//! asyncio's `sleep(delay)` makes a future, asks the loop to resolve it
//! `delay` from now (`call_later`), and awaits it. The task sleeps because
//! nothing wakes it; the timer's callback completes the future, the future
//! wakes the task.
//!
//! Ours takes two steps out: the timer wakes the task itself — its callback
//! *is* the task's waker ([`EventLoop::wake_at`]) — and the sleep, polled
//! again, compares the loop's clock with its deadline. The crawler keeps a
//! deadline running for every fetch in flight — ten thousand of them in the
//! memory benchmark — and a future and a boxed callback per deadline would
//! be three more allocations each.
//!
//! The timer is cancelled if the sleep is abandoned (the task was cancelled,
//! or a `wait_for` around it finished first), so the loop is not left
//! holding a timer for nobody.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

#[cfg(doc)]
use crate::event_loop::EventLoop;
use crate::event_loop::{get_running_loop, WakeTimer};
use crate::future::Cancelled;
use crate::task::take_cancel_request;

// ANCHOR: sleep
/// Suspend the calling coroutine for `delay` (loop time).
pub fn sleep(delay: Duration) -> Sleep {
    Sleep { delay, timer: None }
}

/// The future [`sleep`] returns.
pub struct Sleep {
    /// How long, counted from the first poll.
    delay: Duration,
    /// Once polled: the timer that wakes the task.
    timer: Option<WakeTimer>,
}

impl Sleep {
    /// How long this sleep lasts.
    pub fn delay(&self) -> Duration {
        self.delay
    }
}

impl std::future::Future for Sleep {
    type Output = anyhow::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if take_cancel_request() {
            return Poll::Ready(Err(Cancelled.into()));
        }
        let event_loop = get_running_loop();
        match &self.timer {
            Some(timer) if event_loop.time() >= timer.when() => Poll::Ready(Ok(())),
            // Still early. Usually the same task polls again; if another
            // one does, the timer must wake that one.
            Some(timer) => {
                timer.set_waker(cx.waker());
                Poll::Pending
            }
            // First poll: set the timer.
            None => {
                let when = event_loop.time() + self.delay;
                self.timer = Some(event_loop.wake_at(when, cx.waker()));
                Poll::Pending
            }
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(timer) = &self.timer {
            timer.cancel();
        }
    }
}
// ANCHOR_END: sleep
