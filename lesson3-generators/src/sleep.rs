//! # `sleep`: a task woken by a timer
//!
//! asyncio's `sleep(delay)` makes a future, asks the loop to resolve it
//! `delay` from now (`call_later`), and awaits it. The task sleeps because
//! nothing wakes it; the timer's callback completes the future, the future
//! wakes the task.
//!
//! The timer is cancelled if the sleep is abandoned (a `wait_for` around it
//! finished first), so the loop is not left holding a timer for nobody.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::event_loop::{get_running_loop, TimerHandle};
use crate::future::Future;

// ANCHOR: sleep
/// Suspend the calling coroutine for `delay`.
pub fn sleep(delay: Duration) -> Sleep {
    Sleep::Unpolled(delay)
}

/// The future [`sleep`] returns: the delay until its first poll sets the
/// timer, then the timer. (An `enum`, so it holds one or the other, not both.)
pub enum Sleep {
    /// Not polled yet: how long to sleep, counted from the first poll.
    Unpolled(Duration),
    /// The timer, and the future it resolves.
    Waiting(TimerHandle, Future<()>),
}

impl std::future::Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut *self {
            Sleep::Waiting(_, fired) => Pin::new(fired).poll(cx),
            // First poll: set the timer.
            Sleep::Unpolled(delay) => {
                let event_loop = get_running_loop();
                let fired = event_loop.create_future();
                let done = fired.clone();
                let timer = event_loop.call_later(*delay, move || {
                    done.set_result(());
                });
                *self = Sleep::Waiting(timer, fired);
                self.poll(cx)
            }
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Sleep::Waiting(timer, _) = self {
            timer.cancel();
        }
    }
}
// ANCHOR_END: sleep
