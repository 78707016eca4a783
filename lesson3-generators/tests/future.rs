//! Tests of `src/future.rs`: a result slot, done-callbacks scheduled on the
//! loop, and `.await`. The tests that run a turn of the loop are bounded
//! (see `shared::fixtures::bound`): a turn with nothing scheduled waits in
//! `poll` for ever.

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use lesson3_generators::event_loop::EventLoop;
use lesson3_generators::future::Future;
use shared::fixtures::bound::within;

/// What to look at when a turn of the loop never ends: it had nothing to run.
const NOTHING_SCHEDULED: &str = "a turn of the loop waited for ever, so no done-callback \
    was scheduled. set_result must store the result, return true on a pending future, and \
    schedule each done-callback with call_soon; add_done_callback keeps the callback while \
    the future is pending, and schedules it at once when it is done";

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
    within(10, NOTHING_SCHEDULED, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let f = event_loop.create_future();
        let seen = Rc::new(RefCell::new(Vec::new()));
        for name in ["first", "second"] {
            let seen = Rc::clone(&seen);
            f.add_done_callback(move |f: Future<u32>| {
                seen.borrow_mut().push(format!("{name} {:?}", f.result()))
            });
        }
        assert!(!f.done(), "done() of a future nobody has set a result on");
        assert!(
            f.set_result(7),
            "set_result on a pending future returns true"
        );
        assert!(f.done(), "done() after set_result(7)");
        assert!(
            seen.borrow().is_empty(),
            "a done-callback ran inside set_result: schedule callbacks with call_soon, \
             so that whoever set the result is not re-entered"
        );
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(
            *seen.borrow(),
            ["first Some(7)", "second Some(7)"],
            "the done-callbacks after one turn: each once, in the order they were added, \
             each seeing the result"
        );
        assert_eq!(f.result(), Some(7), "result() after set_result(7)");
    });
}

#[test]
fn a_callback_added_to_a_done_future_still_runs() {
    within(10, NOTHING_SCHEDULED, || {
        // The tutorial's `add_done_callback` would store it and never call it.
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let f = event_loop.create_future();
        f.set_result("done");
        let ran = Rc::new(RefCell::new(false));
        let flag = Rc::clone(&ran);
        f.add_done_callback(move |_| *flag.borrow_mut() = true);
        assert!(
            !*ran.borrow(),
            "a callback added to a done future ran inside add_done_callback: schedule it with call_soon"
        );
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert!(
            *ran.borrow(),
            "a callback added to a done future did not run on the next turn: \
             add_done_callback must schedule it at once when the result is already set"
        );
    });
}

#[test]
fn the_first_result_wins() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let f = event_loop.create_future();
    assert!(
        f.set_result(1),
        "set_result on a pending future returns true"
    );
    assert!(
        !f.set_result(2),
        "set_result on a done future returns false and changes nothing"
    );
    assert_eq!(
        f.result(),
        Some(1),
        "result() after set_result(1) then set_result(2): the first wins"
    );
}

#[test]
fn await_records_each_waker_once_and_set_result_wakes_it() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let counter = Arc::new(Counter(AtomicUsize::new(0)));
    let waker = Waker::from(Arc::clone(&counter));
    let f: Future<u8> = event_loop.create_future();
    let mut waiting = f.clone();
    assert_eq!(
        poll_once(&mut waiting, &waker),
        Poll::Pending,
        "poll of a future with no result yet"
    );
    assert_eq!(
        poll_once(&mut waiting, &waker),
        Poll::Pending,
        "a second poll, same waker, still no result"
    );
    f.set_result(3);
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        1,
        "wake-ups of a waker that polled twice: set_result wakes each distinct waker once \
         (poll keeps a waker only if no kept one will_wake the same task)"
    );
    assert_eq!(
        poll_once(&mut waiting, &waker),
        Poll::Ready(3),
        "poll after set_result(3) returns the result"
    );
}

#[test]
fn two_awaiters_are_both_woken() {
    // Two tasks awaiting one future (each through its own clone), as every
    // task for a host awaits that host's robots.txt future in polite.rs.
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let (first, second) = (
        Arc::new(Counter(AtomicUsize::new(0))),
        Arc::new(Counter(AtomicUsize::new(0))),
    );
    let f: Future<u8> = event_loop.create_future();
    let (mut a, mut b) = (f.clone(), f.clone());
    let first_waker = Waker::from(Arc::clone(&first));
    let second_waker = Waker::from(Arc::clone(&second));
    assert_eq!(
        poll_once(&mut a, &first_waker),
        Poll::Pending,
        "first awaiter's poll, no result yet"
    );
    assert_eq!(
        poll_once(&mut b, &second_waker),
        Poll::Pending,
        "second awaiter's poll, no result yet"
    );
    f.set_result(5);
    assert_eq!(
        first.0.load(Ordering::SeqCst),
        1,
        "wake-ups of the FIRST of two awaiters: set_result must wake every task that polled, \
         so poll must keep each distinct waker, not only the last one (the others go in the \
         callback list)"
    );
    assert_eq!(
        second.0.load(Ordering::SeqCst),
        1,
        "wake-ups of the SECOND of two awaiters: set_result must wake every task that polled, \
         so poll must keep each distinct waker, not only the first one"
    );
    assert_eq!(
        poll_once(&mut a, &first_waker),
        Poll::Ready(5),
        "first awaiter's poll after set_result(5)"
    );
    assert_eq!(
        poll_once(&mut b, &second_waker),
        Poll::Ready(5),
        "second awaiter's poll after set_result(5)"
    );
}
