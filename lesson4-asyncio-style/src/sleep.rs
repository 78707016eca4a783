//! # `sleep`: a task woken by a timer
//!
//! asyncio's `sleep(delay)` makes a future, asks the loop to resolve it
//! `delay` from now (`call_later`), and awaits it. The task sleeps because
//! nothing wakes it; the timer's callback completes the future, the future
//! wakes the task.
//!
//! Lesson 3's `sleep` did just that. This one takes two steps out, to save
//! memory. The crawler keeps a deadline running for every fetch in flight —
//! ten thousand of them in the memory benchmark — and a future, a handle and
//! a boxed callback per deadline would be three more allocations each.
//! <!-- how -->
//! The timer wakes the task itself: its callback *is* the task's waker (the
//! loop's `wake_at`). And the sleep, polled again, compares the loop's clock
//! with its deadline.
//! <!-- /how -->
//!
//! The timer is cancelled if the sleep is abandoned (the task was cancelled,
//! or a `wait_for` around it finished first), so the loop is not left
//! holding a timer for nobody.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::event_loop::{get_running_loop, WakeTimer};
use crate::future::Cancelled;
use crate::task::take_cancel_request;

// ANCHOR: sleep
/// Suspend the calling coroutine for `delay` (loop time).
pub fn sleep(delay: Duration) -> Sleep {
    Sleep::Unpolled(delay)
}

/// The future [`sleep`] returns: the delay until its first poll sets the
/// timer, then the timer. (An `enum`, so it holds one or the other, not both.)
pub enum Sleep {
    /// Not polled yet: how long to sleep, counted from the first poll.
    Unpolled(Duration),
    /// The timer that wakes the task.
    Waiting(WakeTimer),
}

impl std::future::Future for Sleep {
    type Output = anyhow::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if take_cancel_request() {
            return Poll::Ready(Err(Cancelled.into()));
        }
        let event_loop = get_running_loop();
        match &*self {
            Sleep::Waiting(timer) if event_loop.time() >= timer.when() => Poll::Ready(Ok(())),
            // Still early. Usually the same task polls again; if another
            // one does, the timer must wake that one.
            Sleep::Waiting(timer) => {
                timer.set_waker(cx.waker());
                Poll::Pending
            }
            // First poll: set the timer.
            Sleep::Unpolled(delay) => {
                let when = event_loop.time() + *delay;
                *self = Sleep::Waiting(event_loop.wake_at(when, cx.waker()));
                Poll::Pending
            }
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Sleep::Waiting(timer) = self {
            timer.cancel();
        }
    }
}
// ANCHOR_END: sleep
