//! # `sleep`: a future resolved by a timer
//!
//! asyncio's `sleep(delay)` is the smallest example of how the pieces fit:
//! make a future, ask the loop to resolve it `delay` from now
//! (`call_later`), await it. The task sleeps because nothing wakes it; the
//! timer's callback completes the future, the future wakes the task.
//!
//! The timer is cancelled if the sleep is abandoned (the task was cancelled,
//! or a `wait_for` around it gave up), so the loop is not left holding a
//! timer for nobody.

use std::time::Duration;

use crate::event_loop::{get_running_loop, TimerHandle};

// ANCHOR: sleep
/// Suspend the calling coroutine for `delay` (loop time).
pub async fn sleep(delay: Duration) -> anyhow::Result<()> {
    let event_loop = get_running_loop();
    let future = event_loop.create_future();
    let waiter = future.clone();
    let timer = event_loop.call_later(delay, move || {
        waiter.set_result(());
    });
    let _timer = CancelOnDrop(timer);
    future.await
}
// ANCHOR_END: sleep

/// Cancels a timer when dropped: Rust's `finally: timer.cancel()`.
struct CancelOnDrop(TimerHandle);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}
