//! Tests of `src/future.rs`, through its public API.

use lesson3_generators::future::*;
use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Wake;
use std::task::{Context, Poll, Waker};

/// A waker that counts its wake-ups.
struct Counter(std::sync::atomic::AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

fn poll_once<F: std::future::Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

#[test]
fn callbacks_run_in_order_with_the_result() {
    let f = Future::new();
    let seen = Rc::new(RefCell::new(Vec::new()));
    for name in ["first", "second"] {
        let seen = Rc::clone(&seen);
        f.add_done_callback(move |v: &u32| seen.borrow_mut().push(format!("{name} {v}")));
    }
    assert!(!f.done());
    assert!(seen.borrow().is_empty());
    f.set_result(7);
    assert_eq!(*seen.borrow(), ["first 7", "second 7"]);
    assert_eq!(f.result(), Some(7));
}

#[test]
fn a_callback_added_to_a_done_future_runs_at_once() {
    // The tutorial's `add_done_callback` would store it and never call it.
    let f = Future::new();
    f.set_result("done");
    let ran = Rc::new(RefCell::new(false));
    let flag = Rc::clone(&ran);
    f.add_done_callback(move |_| *flag.borrow_mut() = true);
    assert!(*ran.borrow());
}

#[test]
fn a_callback_may_use_its_own_future() {
    let f = Future::new();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let (again, log) = (f.clone(), Rc::clone(&seen));
    f.add_done_callback(move |v: &i32| {
        log.borrow_mut().push(*v);
        assert!(again.done());
        let log = Rc::clone(&log);
        again.add_done_callback(move |v| log.borrow_mut().push(v + 1));
    });
    f.set_result(1);
    assert_eq!(*seen.borrow(), [1, 2]);
}

#[test]
fn the_first_result_wins() {
    let f = Future::new();
    let calls = Rc::new(RefCell::new(0));
    let c = Rc::clone(&calls);
    f.add_done_callback(move |_| *c.borrow_mut() += 1);
    f.set_result(1);
    f.set_result(2);
    assert_eq!(f.result(), Some(1));
    assert_eq!(*calls.borrow(), 1);
}

#[test]
fn await_registers_each_waker_once_and_set_result_wakes_it() {
    let counter = Arc::new(Counter(Default::default()));
    let waker = Waker::from(Arc::clone(&counter));
    let f: Future<u8> = Future::new();
    let mut waiting = f.clone();
    assert_eq!(poll_once(&mut waiting, &waker), Poll::Pending);
    assert_eq!(poll_once(&mut waiting, &waker), Poll::Pending);
    f.set_result(3);
    assert_eq!(counter.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(poll_once(&mut waiting, &waker), Poll::Ready(3));
}

#[test]
fn race_returns_the_first_to_finish_and_prefers_the_left() {
    let counter = Arc::new(Counter(Default::default()));
    let waker = Waker::from(Arc::clone(&counter));
    let (a, b): (Future<i32>, Future<&str>) = (Future::new(), Future::new());
    let (mut left, mut right) = (a.clone(), b.clone());
    let mut r = Box::pin(race(Pin::new(&mut left), Pin::new(&mut right)));
    assert_eq!(poll_once(&mut r, &waker), Poll::Pending);
    b.set_result("deadline");
    assert_eq!(counter.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(
        poll_once(&mut r, &waker),
        Poll::Ready(Either::Right("deadline"))
    );

    let (a, b): (Future<i32>, Future<&str>) = (Future::new(), Future::new());
    a.set_result(1);
    b.set_result("both");
    let (mut left, mut right) = (a, b);
    let mut r = Box::pin(race(Pin::new(&mut left), Pin::new(&mut right)));
    assert_eq!(poll_once(&mut r, &waker), Poll::Ready(Either::Left(1)));
}
