//! # `sleep`: a task woken by a timer
//!
//! asyncio's `sleep(delay)` makes a future, asks the loop to resolve it
//! `delay` from now (`call_later`), and awaits it. The task sleeps because
//! nothing wakes it; the timer's callback completes the future, the future
//! wakes the task.
//!
//! Ours takes one step out: the timer's callback wakes the task itself, and
//! the sleep, polled again, compares the loop's clock with its deadline.
//! The crawler keeps a deadline running for every fetch in flight — ten
//! thousand of them in the memory benchmark — and a future per deadline
//! would be one more allocation each.
//!
//! The timer is cancelled if the sleep is abandoned (the task was cancelled,
//! or a `wait_for` around it finished first), so the loop is not left
//! holding a timer for nobody.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::event_loop::{get_running_loop, TimerHandle};
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
    /// Once polled: the timer, and the waker its callback wakes.
    timer: Option<(TimerHandle, Waker)>,
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
        let when = match &self.timer {
            Some((timer, _)) if event_loop.time() >= timer.when() => return Poll::Ready(Ok(())),
            // Still early, and the same task waits: its waker is in place.
            Some((timer, waker)) if waker.will_wake(cx.waker()) => return Poll::Pending,
            Some((timer, _)) => timer.when(),
            None => event_loop.time() + self.delay,
        };
        // First poll (or a new task awaits this sleep): set the timer.
        if let Some((old, _)) = self.timer.take() {
            old.cancel();
        }
        let waker = cx.waker().clone();
        let wake = waker.clone();
        let timer = event_loop.call_at(when, move || wake.wake());
        self.timer = Some((timer, waker));
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some((timer, _)) = &self.timer {
            timer.cancel();
        }
    }
}
// ANCHOR_END: sleep
