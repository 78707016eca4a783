//! The model tests' `sync`: the lesson's `crate::sync`, with `loom`'s types
//! in place of `std`'s, each step recorded for the schedule a failure shows.
//!
//! It has what `std`'s `Mutex`, `Condvar` and threads offer that a lesson's
//! queue, pool or seen-set may use: `lock`, `try_lock`, `wait`,
//! `wait_while`, `wait_timeout` (which never times out here: `loom` does not
//! model time), `notify_one`, `notify_all`, `Builder`, `spawn`, `join`.
//!
//! `queue.rs`, `pool.rs` and `crawler.rs` are compiled into this test with
//! this module as their `crate::sync`. Every `lock`, `wait` and `notify`
//! goes to `loom`, which decides which thread runs at each of them, and is
//! written down in [`crate::schedule`] as a step of the thread that made it.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::sync::{LockResult, TryLockError, TryLockResult};
use std::time::Duration;

// `std`'s `Arc`, not `loom`'s: when `loom` finds a deadlock it unwinds
// every thread's stack, and a `loom::sync::Arc` dropped then aborts the test
// instead of letting it report. Sharing is not what these tests check.
pub use std::sync::{Arc, PoisonError};

use crate::schedule;

/// `std::sync::Mutex` on `loom`'s, named after the field it is made for.
pub struct Mutex<T> {
    inner: loom::sync::Mutex<T>,
    name: String,
}

impl<T> Mutex<T> {
    #[track_caller]
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            inner: loom::sync::Mutex::new(value),
            name: schedule::field_at(Location::caller()),
        }
    }

    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        // `loom` never poisons a lock: a panic under it fails the model.
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        schedule::step(format!("locks `{}`", self.name));
        Ok(MutexGuard {
            inner: Some(inner),
            name: &self.name,
        })
    }

    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        match self.inner.try_lock() {
            Ok(inner) => {
                schedule::step(format!("locks `{}`", self.name));
                Ok(MutexGuard {
                    inner: Some(inner),
                    name: &self.name,
                })
            }
            Err(_) => {
                schedule::step(format!("finds `{}` locked", self.name));
                Err(TryLockError::WouldBlock)
            }
        }
    }

    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        self.inner.get_mut()
    }

    pub fn into_inner(self) -> LockResult<T> {
        self.inner.into_inner()
    }
}

impl<T: Default> Default for Mutex<T> {
    #[track_caller]
    fn default() -> Mutex<T> {
        Mutex::new(T::default())
    }
}

impl<T> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Mutex({})", self.name)
    }
}

/// What [`Mutex::lock`] gives; says when it lets go.
pub struct MutexGuard<'a, T> {
    /// `None` only while a [`Condvar::wait`] has it.
    inner: Option<loom::sync::MutexGuard<'a, T>>,
    name: &'a str,
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.inner
            .as_deref()
            .expect("a guard is whole outside `wait`")
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.inner
            .as_deref_mut()
            .expect("a guard is whole outside `wait`")
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        if self.inner.take().is_some() {
            schedule::step(format!("unlocks `{}`", self.name));
        }
    }
}

/// `std::sync::Condvar` on `loom`'s, named after the field it is made for.
pub struct Condvar {
    inner: loom::sync::Condvar,
    name: String,
}

impl Condvar {
    #[track_caller]
    pub fn new() -> Condvar {
        Condvar {
            inner: loom::sync::Condvar::new(),
            name: schedule::field_at(Location::caller()),
        }
    }

    #[track_caller]
    pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
        Ok(self.wait_at(guard, Location::caller()))
    }

    fn wait_at<'a, T>(&self, mut guard: MutexGuard<'a, T>, at: &Location<'_>) -> MutexGuard<'a, T> {
        let at = schedule::place(at);
        let lock = guard.name;
        schedule::step(format!(
            "sleeps on `{}` and unlocks `{lock}` ({at})",
            self.name
        ));
        let inner = guard.inner.take().expect("a guard is whole outside `wait`");
        let inner = self
            .inner
            .wait(inner)
            .unwrap_or_else(PoisonError::into_inner);
        schedule::step(format!("wakes on `{}`, locks `{lock}`", self.name));
        guard.inner = Some(inner);
        guard
    }

    #[track_caller]
    pub fn wait_while<'a, T, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        mut condition: F,
    ) -> LockResult<MutexGuard<'a, T>>
    where
        F: FnMut(&mut T) -> bool,
    {
        let at = Location::caller();
        while condition(&mut *guard) {
            guard = self.wait_at(guard, at);
        }
        Ok(guard)
    }

    /// `loom` does not model time: the wait ends on a notify, never on the
    /// timeout. Code that relies on a timeout to go on fails here as a
    /// deadlock.
    #[track_caller]
    pub fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        _timeout: Duration,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        let guard = self.wait_at(guard, Location::caller());
        Ok((guard, WaitTimeoutResult(false)))
    }

    /// As [`Condvar::wait_timeout`]: never times out.
    #[track_caller]
    pub fn wait_timeout_while<'a, T, F>(
        &self,
        guard: MutexGuard<'a, T>,
        _timeout: Duration,
        condition: F,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)>
    where
        F: FnMut(&mut T) -> bool,
    {
        let mut guard = guard;
        let mut condition = condition;
        let at = Location::caller();
        while condition(&mut *guard) {
            guard = self.wait_at(guard, at);
        }
        Ok((guard, WaitTimeoutResult(false)))
    }

    #[track_caller]
    pub fn notify_one(&self) {
        let at = schedule::place(Location::caller());
        schedule::step(format!("`notify_one` on `{}` ({at})", self.name));
        self.inner.notify_one();
    }

    #[track_caller]
    pub fn notify_all(&self) {
        let at = schedule::place(Location::caller());
        schedule::step(format!("`notify_all` on `{}` ({at})", self.name));
        self.inner.notify_all();
    }
}

impl Default for Condvar {
    #[track_caller]
    fn default() -> Condvar {
        Condvar::new()
    }
}

/// What `wait_timeout` gives: never a timeout here (see
/// [`Condvar::wait_timeout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    pub fn timed_out(&self) -> bool {
        self.0
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Condvar({})", self.name)
    }
}

/// `std::thread` on `loom`'s threads. A thread's panic ends the thread, not
/// the model, and comes back from `join` as an `Err`, as with `std`: the
/// pool's panic path is part of what the model tests.
pub mod thread {
    use std::io;
    use std::panic::{self, AssertUnwindSafe};

    use crate::schedule;

    pub use loom::thread::yield_now;
    pub use std::thread::panicking;

    /// `std::thread::spawn`: [`Builder::spawn`] with no name.
    pub fn spawn<F, T>(f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        Builder::new()
            .spawn(f)
            .expect("loom starts every thread it is asked to")
    }

    pub struct Builder {
        name: Option<String>,
    }

    impl Builder {
        #[allow(clippy::new_without_default)]
        pub fn new() -> Builder {
            Builder { name: None }
        }

        pub fn name(self, name: String) -> Builder {
            Builder { name: Some(name) }
        }

        pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
        where
            F: FnOnce() -> T + Send + 'static,
            T: Send + 'static,
        {
            let mut builder = loom::thread::Builder::new();
            if let Some(name) = self.name {
                builder = builder.name(name);
            }
            builder
                .spawn(move || {
                    let result = panic::catch_unwind(AssertUnwindSafe(f));
                    match &result {
                        Ok(_) => schedule::step("ends".to_string()),
                        Err(_) => schedule::step("ends by its panic".to_string()),
                    }
                    result
                })
                .map(|inner| JoinHandle { inner })
        }
    }

    /// A thread started by [`Builder::spawn`].
    pub struct JoinHandle<T> {
        inner: loom::thread::JoinHandle<std::thread::Result<T>>,
    }

    impl<T> std::fmt::Debug for JoinHandle<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "JoinHandle({:?})", self.inner.thread().name())
        }
    }

    impl<T> JoinHandle<T> {
        pub fn join(self) -> std::thread::Result<T> {
            let name = self.inner.thread().name().unwrap_or("?").to_string();
            schedule::step(format!("joins `{name}`"));
            self.inner.join().and_then(|result| result)
        }
    }
}
