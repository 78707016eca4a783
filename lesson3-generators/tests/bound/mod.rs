//! A bound on a test that could wait for ever on a wrong answer.
//!
//! An event loop with nothing to do waits in `poll` with no timeout, so a
//! task whose waker schedules nothing, or a future that forgets a waker,
//! does not fail: it hangs, and `cargo test` only says the test "has been
//! running for over 60 seconds". [`within`] runs the test on a thread of its
//! own and, if it has not ended after `secs`, fails it with a message that
//! names the mechanism to look at.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

/// Run `test` on its own thread; fail with `stuck` if it runs longer than
/// `secs` seconds. A panic in `test` fails the test as it would have.
#[allow(dead_code)] // each test target uses what it needs
pub fn within<T: Send + 'static>(
    secs: u64,
    stuck: &str,
    test: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, finished) = mpsc::channel();
    let name = thread::current().name().unwrap_or("test").to_string();
    let runner = thread::Builder::new()
        .name(name)
        .spawn(move || {
            let out = test();
            let _ = done.send(());
            out
        })
        .expect("spawn the test's thread");
    match finished.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => runner.join().expect("the test's thread ended"),
        // The test panicked: pass its panic on.
        Err(RecvTimeoutError::Disconnected) => match runner.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        // Left running: it is blocked, and ends with the test binary.
        Err(RecvTimeoutError::Timeout) => {
            panic!("still waiting after {secs} s, so something was never woken: {stuck}")
        }
    }
}
