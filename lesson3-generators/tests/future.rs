//! Tests of `src/future.rs`: a result slot, done-callbacks scheduled on the
//! loop, and `.await`.

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use lesson3_generators::event_loop::EventLoop;
use lesson3_generators::future::Future;

/// A waker that counts its wake-ups.
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn poll_once<F: std::future::Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

#[test]
fn callbacks_are_scheduled_in_order_and_see_the_result() {
    let event_loop = EventLoop::new().unwrap();
    let f = event_loop.create_future();
    let seen = Rc::new(RefCell::new(Vec::new()));
    for name in ["first", "second"] {
        let seen = Rc::clone(&seen);
        f.add_done_callback(move |f: Future<u32>| {
            seen.borrow_mut().push(format!("{name} {:?}", f.result()))
        });
    }
    assert!(!f.done());
    assert!(f.set_result(7));
    // Scheduled, not called: whoever set the result is not re-entered.
    assert!(seen.borrow().is_empty());
    event_loop.run_once().unwrap();
    assert_eq!(*seen.borrow(), ["first Some(7)", "second Some(7)"]);
    assert_eq!(f.result(), Some(7));
}

#[test]
fn a_callback_added_to_a_done_future_still_runs() {
    // The tutorial's `add_done_callback` would store it and never call it.
    let event_loop = EventLoop::new().unwrap();
    let f = event_loop.create_future();
    f.set_result("done");
    let ran = Rc::new(RefCell::new(false));
    let flag = Rc::clone(&ran);
    f.add_done_callback(move |_| *flag.borrow_mut() = true);
    event_loop.run_once().unwrap();
    assert!(*ran.borrow());
}

#[test]
fn the_first_result_wins() {
    let event_loop = EventLoop::new().unwrap();
    let f = event_loop.create_future();
    assert!(f.set_result(1));
    assert!(!f.set_result(2));
    assert_eq!(f.result(), Some(1));
}

#[test]
fn await_records_each_waker_once_and_set_result_wakes_it() {
    let event_loop = EventLoop::new().unwrap();
    let counter = Arc::new(Counter(AtomicUsize::new(0)));
    let waker = Waker::from(Arc::clone(&counter));
    let f: Future<u8> = event_loop.create_future();
    let mut waiting = f.clone();
    assert_eq!(poll_once(&mut waiting, &waker), Poll::Pending);
    assert_eq!(poll_once(&mut waiting, &waker), Poll::Pending);
    f.set_result(3);
    assert_eq!(counter.0.load(Ordering::SeqCst), 1);
    assert_eq!(poll_once(&mut waiting, &waker), Poll::Ready(3));
}
