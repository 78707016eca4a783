//! Tests of `InFlight` in `src/crawler.rs`: the count of fetches in flight,
//! a semaphore in front of the sockets, and its guard, `InFlightGuard`,
//! whose `Drop` gives a fetch's place back however the fetch ends.
//!
//! Each test that waits for another thread waits with a bound, so that a
//! place never given back, or a sleeper never woken, fails the test with
//! what to look at instead of hanging the run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use lesson1_threadpool::crawler::InFlight;

/// `start` counts a fetch in flight until its guard is dropped, and `peak`
/// remembers the most at once.
#[test]
fn a_fetch_is_counted_from_start_until_its_guard_is_dropped() {
    let in_flight = InFlight::new(3);
    assert_eq!(
        (in_flight.now(), in_flight.peak(), in_flight.budget()),
        (0, 0, 3),
        "a new InFlight: (now, peak, budget)"
    );
    let first = in_flight.start();
    let second = in_flight.start();
    assert_eq!(
        (in_flight.now(), in_flight.peak()),
        (2, 2),
        "(now, peak) with two fetches started"
    );
    drop(first);
    assert_eq!(
        in_flight.now(),
        1,
        "fetches in flight after one guard was dropped: an `InFlightGuard`'s `Drop` takes \
         its fetch off the count"
    );
    drop(second);
    assert_eq!(
        (in_flight.now(), in_flight.peak()),
        (0, 2),
        "(now, peak) once both guards are dropped: none in flight, and the peak remembered"
    );
    assert_eq!(InFlight::new(0).budget(), 1, "a budget of 0 counts as 1");
}

/// With the budget spent, `start` sleeps until a guard is dropped, and the
/// guard's `Drop` wakes it.
#[test]
fn a_fetch_over_the_budget_waits_until_a_place_is_given_back() {
    let in_flight = Arc::new(InFlight::new(1));
    let held = in_flight.start();
    let started = Arc::new(AtomicBool::new(false));
    let (done, waited) = mpsc::channel();
    {
        let (in_flight, started) = (Arc::clone(&in_flight), Arc::clone(&started));
        thread::spawn(move || {
            let _second = in_flight.start();
            started.store(true, Ordering::SeqCst);
            let _ = done.send(in_flight.now());
        });
    }
    thread::sleep(Duration::from_millis(200));
    assert!(
        !started.load(Ordering::SeqCst),
        "a second fetch started while the budget of 1 was taken: `start` must wait while \
         `now` has reached the budget"
    );
    drop(held);
    match waited.recv_timeout(Duration::from_secs(10)) {
        Ok(now) => assert_eq!(now, 1, "in flight once the waiting fetch started"),
        Err(_) => panic!(
            "the fetch waiting in `start` was not woken within 10 s of the place being given \
             back: `InFlightGuard`'s `Drop` must notify the `Condvar` that `start` sleeps on \
             (and `start` wait in a loop, checking the count again each time it wakes)"
        ),
    }
}

/// Many threads taking and giving back places: never more in flight than
/// the budget, and nothing left counted at the end.
#[test]
fn many_threads_never_exceed_the_budget() {
    const THREADS: usize = 8;
    let in_flight = Arc::new(InFlight::new(3));
    let (done, finished) = mpsc::channel();
    for _ in 0..THREADS {
        let (in_flight, done) = (Arc::clone(&in_flight), done.clone());
        thread::spawn(move || {
            for _ in 0..200 {
                let _place = in_flight.start();
                thread::yield_now();
            }
            let _ = done.send(());
        });
    }
    for _ in 0..THREADS {
        finished
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| {
                panic!(
                    "eight threads taking and giving back a place 200 times each did not finish \
                 within 20 s: a place was not given back (`InFlightGuard`'s `Drop`) or a \
                 thread waiting in `start` was never woken"
                )
            });
    }
    assert!(
        in_flight.peak() <= 3,
        "the most fetches in flight at once was {}, over the budget of 3: `start` must \
         check and take a place under one locking",
        in_flight.peak()
    );
    assert_eq!(
        in_flight.now(),
        0,
        "fetches still counted in flight after every guard was dropped"
    );
}

/// A fetch that panics gives its place back: the guard's `Drop` runs while
/// the panic unwinds.
#[test]
fn a_fetch_that_panics_gives_its_place_back() {
    let in_flight = Arc::new(InFlight::new(2));
    let panicked = {
        let in_flight = Arc::clone(&in_flight);
        thread::spawn(move || {
            let _place = in_flight.start();
            panic!("a fetch that panics (on purpose)");
        })
        .join()
        .is_err()
    };
    assert!(panicked, "the test's thread was meant to panic");
    assert_eq!(
        in_flight.now(),
        0,
        "a fetch that panicked is still counted in flight: `InFlightGuard`'s `Drop` runs \
         while a panic unwinds too, and must give the place back then as well"
    );
}

/// Out of descriptors, the budget becomes what the other fetches hold; a
/// fetch alone says so, and leaves the budget as it was.
#[test]
fn out_of_descriptors_lowers_the_budget_to_the_other_fetches() {
    let in_flight = InFlight::new(10);
    let _a = in_flight.start();
    let _b = in_flight.start();
    let c = in_flight.start();
    assert!(
        c.out_of_descriptors(),
        "with two other fetches in flight, out_of_descriptors says one of them may free a \
         descriptor (true)"
    );
    assert_eq!(
        in_flight.budget(),
        2,
        "the budget once a third fetch found no descriptor: what the two others hold"
    );
    let alone = InFlight::new(10);
    let only = alone.start();
    assert!(
        !only.out_of_descriptors(),
        "with no other fetch in flight, out_of_descriptors says none will free a \
         descriptor (false)"
    );
    assert_eq!(
        alone.budget(),
        10,
        "a fetch alone that found no descriptor leaves the budget as it was: lowered to 0, \
         no fetch could ever start again"
    );
}
