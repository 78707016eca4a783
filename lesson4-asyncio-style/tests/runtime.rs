//! Tests of lesson 4's runtime, through its public API: the order callbacks
//! run in, timers on a test clock (no test sleeps), futures and tasks,
//! cancellation at an `.await`, the queue's `join`, `gather`, `wait_for`,
//! and the socket coroutines against a local listener.
//!
//! The tests come in the order of the chapter (and of the starter's
//! stages): the loop's callbacks and timers, wakers, futures, tasks,
//! cancellation, the three small tools, the queue, then sockets. A test uses only what
//! the stages up to its own have written.

use std::cell::{Cell, RefCell};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use lesson4_asyncio_style::event_loop::{
    get_running_loop, try_get_running_loop, EventLoop, TestClock,
};
use lesson4_asyncio_style::future::{is_cancelled, Cancelled, Future};
use lesson4_asyncio_style::gather::gather;
use lesson4_asyncio_style::queue::Queue;
use lesson4_asyncio_style::sleep::sleep;
use lesson4_asyncio_style::socket::Socket;
use lesson4_asyncio_style::wait_for::{wait_for, TimeoutError};
use shared::fixtures::bound::within;
use shared::fixtures::server::refused_addr;

// What to look at when a test's loop never returns. Each test that runs the
// loop is bounded by [`within`]: a turn with nothing to do waits in `poll`
// for ever, so a wrong answer would otherwise hang the test instead of
// failing it.

/// The loop's callbacks and timers (the first stage).
const LOOP_NEVER_RETURNED: &str = "the loop never returned. `run_forever` ends after a \
    turn in which `stop` was called; a turn waits in `poll` only when nothing is ready and \
    `stop` was not called, and then no longer than the first timer allows. Look at `stop`; \
    at `run_once` (its timeout, and every timer due at or before now moved to the ready \
    queue); at `call_soon`, `call_at` and `add_timer`, which must put the callback where a \
    turn finds it (`push_ready`, the timer table); and at `Handle::run`, which calls it";

/// Readers, writers and `wake_at` (the wakers stage).
const NEVER_WOKEN: &str = "a turn waited for ever, so a waker was never woken. \
    `add_reader`/`add_writer` keep the waker in the socket's slot, `run_once` wakes the \
    reader on a readable (or closed, or failed) event and the writer on a writable one, \
    and `wake_at`'s timer wakes its waker once it is due";

/// Done-callbacks (the futures stage).
const NO_CALLBACK_SCHEDULED: &str = "a turn waited for ever, so no done-callback was \
    scheduled. Future::finish (behind set_result, set_exception and cancel) schedules each \
    done-callback with call_soon and wakes each kept waker; add_done_callback keeps the \
    callback while the future is pending, and schedules it at once when it is done";

/// Tasks and cancellation.
const NEVER_STEPPED: &str = "a task was never stepped again. Look at the task's waker \
    (wake_by_ref must reach EventLoop::wake_task, which schedules a step unless one is \
    queued), at step (clear the `scheduled` flag, poll, keep the coroutine when Pending, \
    finish the task's future when Ready or cancelled), and at run_until_complete, whose \
    done-callback on the task stops the loop";

/// Cancelling a task that waits on a future nobody resolves.
const CANCEL_NEVER_DELIVERED: &str = "a cancelled task was never stepped again, so its \
    cancellation was never delivered. `Task::cancel` marks the task and schedules its step: \
    nothing else will ever wake a task that waits on a future nobody resolves, and the \
    request is delivered at that step, by the future its coroutine awaits. (Look too at the \
    task's waker, `step`, and run_until_complete's done-callback that stops the loop.)";

/// `sleep`, `gather` and `wait_for`.
const TOOL_NEVER_ENDED: &str = "a sleep, gather or wait_for never ended. Sleep::poll sets \
    a wake_at timer for its deadline on the loop's clock and keeps the latest waker; \
    gather's future is done when its last child is, or at the first error; \
    WaitFor::poll polls the awaitable, then its deadline, with the same context";

/// The queue.
const QUEUE_NEVER_WOKE: &str = "a getter or a join was never woken. put_nowait wakes the \
    next getter (wakeup_next_getter), task_done wakes join's waiters when the unfinished \
    count reaches 0, and a getter cancelled after its wake-up passes the wake-up on";

/// The socket coroutines.
const NEVER_READY: &str = "a socket operation waited for a readiness that never came. \
    Socket::wait installs the task's waker as the socket's reader or writer; an operation \
    tries first, and waits only after WouldBlock (mio's events are edge-triggered: an edge \
    that came before the wait is not sent again)";

/// The message of a caught panic (a `&str` or a `String`), or "".
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// A loop on a test clock, and the clock.
fn test_loop() -> (EventLoop, Rc<TestClock>) {
    let clock = TestClock::new();
    let event_loop = EventLoop::with_clock(clock.clone()).expect(
        "`EventLoop::with_clock` must return a loop (an Err here is the OS refusing a selector)",
    );
    (event_loop, clock)
}

/// A log the callbacks of a test append to.
#[derive(Clone, Default)]
struct Trace(Rc<RefCell<Vec<String>>>);

impl Trace {
    fn push(&self, line: impl Into<String>) {
        self.0.borrow_mut().push(line.into());
    }
    fn lines(&self) -> Vec<String> {
        self.0.borrow().clone()
    }
}

/// A waker that counts its wake-ups: a reader, a writer or a timer's
/// waker for a test, with no task behind it.
struct CountingWaker(AtomicUsize);

impl CountingWaker {
    fn new() -> Arc<CountingWaker> {
        Arc::new(CountingWaker(AtomicUsize::new(0)))
    }
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Sets its flag when dropped: the `finally` of a coroutine, or the proof
/// that a callback (and what it captured) was let go.
struct Cleanup(Rc<Cell<bool>>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// Counts its drops: the `finally` of several coroutines.
struct CountOnDrop(Rc<Cell<usize>>);

impl Drop for CountOnDrop {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

// ---------------------------------------------------------------------
// The event loop runs callbacks: handles, timers, a turn, run_forever, close
// ---------------------------------------------------------------------

#[test]
fn call_soon_runs_in_order_and_new_callbacks_wait_for_the_next_turn() {
    within(10, LOOP_NEVER_RETURNED, || {
        let (event_loop, _clock) = test_loop();
        let trace = Trace::default();
        for name in ["a", "b", "c"] {
            let (trace, lp) = (trace.clone(), event_loop.clone());
            event_loop.call_soon(move || {
                trace.push(name);
                let trace = trace.clone();
                lp.call_soon(move || trace.push(format!("{name} again")));
            });
        }
        let cancelled = {
            let trace = trace.clone();
            event_loop.call_soon(move || trace.push("cancelled"))
        };
        assert!(
            !cancelled.cancelled(),
            "Handle::cancelled: true before cancel was called"
        );
        cancelled.cancel();

        // Each callback calls `call_soon`: a turn that kept the ready queue
        // borrowed while it ran one would panic there.
        let turn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| event_loop.run_once()));
        if let Err(panic) = &turn {
            let message = panic_message(panic.as_ref());
            if message.contains("already") && message.contains("borrowed") {
                panic!(
                    "the first turn panicked with \"{message}\" when a callback called \
                     call_soon: the ready queue was still borrowed while a callback ran. \
                     `run_once` takes each entry out of the queue and lets the borrow end \
                     before it runs the entry"
                );
            }
        }
        match turn {
            Ok(turn) => turn.unwrap(),
            Err(panic) => std::panic::resume_unwind(panic),
        }
        assert_eq!(
            trace.lines(),
            ["a", "b", "c"],
            "callbacks run after the first turn: the three scheduled, in order; \
             not the ones they scheduled (next turn), not the cancelled one"
        );
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(
            trace.lines(),
            ["a", "b", "c", "a again", "b again", "c again"],
            "callbacks run after the second turn: the ones the first turn's \
             callbacks scheduled, in order"
        );
        assert!(
            cancelled.cancelled(),
            "Handle::cancelled: false after cancel was called"
        );
        event_loop.close();
    });
}

#[test]
fn timers_fire_in_deadline_order_on_the_test_clock() {
    within(10, LOOP_NEVER_RETURNED, || {
        let (event_loop, clock) = test_loop();
        let start = event_loop.time();
        let trace = Trace::default();
        // Two timers share the 2 s deadline: both fire, in the order they
        // were set.
        for (name, secs) in [("3", 3), ("1", 1), ("2", 2), ("5", 5), ("2 again", 2)] {
            let (trace, lp) = (trace.clone(), event_loop.clone());
            let handle = event_loop.call_later(Duration::from_secs(secs), move || {
                trace.push(format!("{name} at {:?}", lp.time() - start));
            });
            if secs == 5 {
                handle.cancel();
            }
        }
        assert_eq!(
            event_loop.pending_timers(),
            4,
            "pending_timers after five call_later (two with the same deadline) and one \
             cancel: a cancelled timer is removed at once, not left to expire, and two \
             timers due at the same time are two entries"
        );
        let lp = event_loop.clone();
        event_loop.call_later(Duration::from_secs(4), move || lp.stop());
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            trace.lines(),
            ["1 at 1s", "2 at 2s", "2 again at 2s", "3 at 3s"],
            "timers that fired, and the loop time of each: in deadline order, \
             each at its deadline, two with the same deadline in the order they were \
             set (the cancelled 5 s timer never)"
        );
        assert_eq!(
            clock.now_since(start),
            Duration::from_secs(4),
            "test clock when run_forever returned: the stop timer's deadline \
             (an idle loop moves the clock to its first timer, no further)"
        );
        assert_eq!(
            event_loop.pending_timers(),
            0,
            "pending_timers once every timer fired: fired timers are removed"
        );
        event_loop.close();
    });
}

/// The test clock's time since `start` (a helper so the test reads well).
trait NowSince {
    fn now_since(&self, start: std::time::Instant) -> Duration;
}

impl NowSince for TestClock {
    fn now_since(&self, start: std::time::Instant) -> Duration {
        use lesson4_asyncio_style::event_loop::Clock;
        self.now() - start
    }
}

#[test]
fn call_at_takes_loop_time_and_a_timer_handle_knows_its_deadline() {
    within(10, LOOP_NEVER_RETURNED, || {
        let (event_loop, _clock) = test_loop();
        let start = event_loop.time();
        let fired_at = Rc::new(Cell::new(None));
        let (at, lp) = (fired_at.clone(), event_loop.clone());
        let timer = event_loop.call_at(start + Duration::from_secs(5), move || {
            at.set(Some(lp.time() - start));
        });
        assert_eq!(
            timer.when(),
            start + Duration::from_secs(5),
            "TimerHandle::when of call_at(start + 5 s): the deadline it was given"
        );
        let later = event_loop.call_later(Duration::from_secs(2), || {});
        assert_eq!(
            later.when(),
            start + Duration::from_secs(2),
            "TimerHandle::when of call_later(2 s): the loop's time plus 2 s. A deadline is \
             loop time, read from the loop's clock (`EventLoop::time`), never the system's \
             `Instant::now()`: the test clock is not the system's"
        );
        assert!(
            !later.cancelled(),
            "TimerHandle::cancelled: true before cancel was called"
        );
        later.cancel();
        assert!(
            later.cancelled(),
            "TimerHandle::cancelled: false after cancel was called"
        );
        let lp = event_loop.clone();
        event_loop.call_later(Duration::from_secs(6), move || lp.stop());
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            fired_at.get(),
            Some(Duration::from_secs(5)),
            "loop time (since the start) at which call_at's callback ran: its deadline"
        );
        event_loop.close();
    });
}

#[test]
fn a_timer_does_not_fire_before_its_deadline() {
    within(10, LOOP_NEVER_RETURNED, || {
        let (event_loop, clock) = test_loop();
        let fired = Rc::new(Cell::new(false));
        let flag = fired.clone();
        event_loop.call_later(Duration::from_secs(10), move || flag.set(true));
        // Something else to do keeps the loop from idling to the deadline.
        event_loop.call_soon(|| {});
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert!(
            !fired.get(),
            "a 10 s timer fired at 0 s: a turn with callbacks ready must not wait, nor fire early"
        );
        clock.advance(Duration::from_secs(9));
        event_loop.call_soon(|| {});
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert!(
            !fired.get(),
            "a 10 s timer fired at 9 s, before its deadline"
        );
        clock.advance(Duration::from_secs(1));
        event_loop.call_soon(|| {});
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert!(
            fired.get(),
            "a 10 s timer did not fire in the turn at 10 s: an expired timer \
             joins the ready queue before the turn runs it"
        );
        event_loop.close();
    });
}

/// Code run by the loop finds it with `get_running_loop` (asyncio's rule:
/// only inside the loop); outside, there is none.
#[test]
fn callbacks_find_the_running_loop() {
    within(10, LOOP_NEVER_RETURNED, || {
        let (event_loop, _clock) = test_loop();
        assert!(
            try_get_running_loop().is_none(),
            "try_get_running_loop outside any loop: expected None"
        );
        let seen = Rc::new(RefCell::new(Vec::new()));
        for turn in ["run_once", "run_forever"] {
            let seen = seen.clone();
            event_loop.call_soon(move || {
                let running = try_get_running_loop().is_some_and(|lp| lp.is_running());
                seen.borrow_mut().push((turn, running));
                if turn == "run_forever" {
                    get_running_loop().stop();
                }
            });
            if turn == "run_once" {
                event_loop.run_once().expect("`run_once` must return Ok on an open loop: one turn, whatever its callbacks do");
            } else {
                event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
            }
            assert!(
                !event_loop.is_running() && try_get_running_loop().is_none(),
                "after {turn} returned, the loop still counts as running on this thread"
            );
        }
        assert_eq!(
            *seen.borrow(),
            [("run_once", true), ("run_forever", true)],
            "what a callback saw: (how it was run, whether try_get_running_loop \
             gave a loop that is running); expected a running loop both ways"
        );
        event_loop.close();
    });
}

/// `close` lets go of everything the loop holds — a callback's captures are
/// dropped with it — and refuses new work. Closing a running loop (from
/// one of its own callbacks) does nothing.
#[test]
fn close_drops_the_callbacks_and_timers_it_holds_and_refuses_new_work() {
    within(10, LOOP_NEVER_RETURNED, || {
        let (event_loop, _clock) = test_loop();
        assert_eq!(
            event_loop.registered(),
            0,
            "sockets registered on a new loop: none (`registered` counts the slots in use, \
             not the free ones)"
        );
        let lp = event_loop.clone();
        let closed_while_running = Rc::new(Cell::new(true));
        let seen = closed_while_running.clone();
        event_loop.call_soon(move || {
            lp.close();
            seen.set(lp.is_closed());
        });
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert!(
            !closed_while_running.get(),
            "close called by a callback closed the running loop: close must do nothing while it runs"
        );

        let (soon_dropped, timer_dropped) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(false)));
        let guard = Cleanup(soon_dropped.clone());
        event_loop.call_soon(move || drop(guard));
        let guard = Cleanup(timer_dropped.clone());
        event_loop.call_later(Duration::from_secs(60), move || drop(guard));
        event_loop.close();
        assert!(event_loop.is_closed(), "is_closed after close: false");
        assert!(
            soon_dropped.get(),
            "a callback still in the ready queue was kept after close: close drops the ready queue"
        );
        assert!(
            timer_dropped.get(),
            "a timer's callback was kept after close: close drops the timers"
        );
        assert_eq!(
            event_loop.pending_timers(),
            0,
            "pending_timers after close: a closed loop keeps no timer"
        );

        let ran = Rc::new(Cell::new(false));
        let flag = ran.clone();
        let handle = event_loop.call_soon(move || flag.set(true));
        assert!(
            handle.cancelled(),
            "call_soon on a closed loop: its handle should come back cancelled"
        );
        let flag = ran.clone();
        let timer = event_loop.call_later(Duration::from_secs(1), move || flag.set(true));
        assert!(
            timer.cancelled() && event_loop.pending_timers() == 0,
            "call_later on a closed loop: its handle should come back cancelled, and no timer be kept"
        );
        assert!(
            event_loop.run_forever().is_err(),
            "run_forever on a closed loop: expected an error"
        );
        assert!(!ran.get(), "a callback scheduled after close ran");
    });
}

// ---------------------------------------------------------------------
// Wakers: a socket's reader and writer, and timers that wake a waker
// ---------------------------------------------------------------------

#[test]
fn a_reader_is_woken_whenever_its_socket_is_readable_until_removed() {
    within(10, NEVER_WOKEN, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let mut stream = mio::net::TcpStream::connect(addr).unwrap();
        let token = event_loop
            .register(&mut stream)
            .expect("`register` must give an open socket a token");
        assert_eq!(event_loop.registered(), 1, "registered after one register");
        let (mut server, _) = listener.accept().unwrap();
        // Nothing else to do, so a turn waits for the socket; this timer only
        // bounds the wait if the test is broken.
        event_loop.call_later(Duration::from_secs(10), || {});

        let wakes = CountingWaker::new();
        event_loop
            .add_reader(token, &Waker::from(wakes.clone()))
            .expect("`add_reader` must install a reader for a registered socket");
        server.write_all(b"ping").unwrap();
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(
            wakes.count(),
            1,
            "reader wake-ups after the peer wrote and one turn ran"
        );
        // Still installed: more bytes are another readiness edge, another wake-up
        // (nobody read the first ones).
        server.write_all(b"pong").unwrap();
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(
            wakes.count(),
            2,
            "reader wake-ups after a second write: a reader stays installed until removed"
        );

        assert!(
            event_loop.remove_reader(token),
            "remove_reader with a reader installed should return true"
        );
        assert!(
            !event_loop.remove_reader(token),
            "remove_reader with none installed should return false"
        );
        // New bytes, no reader: nobody is woken (a timer ends the wait instead).
        server.write_all(b"more").unwrap();
        let lp = event_loop.clone();
        event_loop.call_later(Duration::from_millis(50), move || lp.stop());
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            wakes.count(),
            2,
            "reader wake-ups after remove_reader and more bytes: no more"
        );

        event_loop.deregister(&mut stream, token);
        assert_eq!(event_loop.registered(), 0, "registered after deregister");
        assert!(
            event_loop
                .add_reader(token, &Waker::from(wakes.clone()))
                .is_err(),
            "add_reader on a deregistered token should be an error"
        );
        // A second deregister of the same token frees nothing: its slot is
        // free once, so the next two sockets get two different slots. (The
        // tokens are checked first: with a token freed twice, `registered`
        // would subtract more free tokens than there are slots.)
        event_loop.deregister(&mut stream, token);
        let mut first = mio::net::TcpStream::connect(addr).unwrap();
        let mut second = mio::net::TcpStream::connect(addr).unwrap();
        let (a, b) = (
            event_loop
                .register(&mut first)
                .expect("`register` must give an open socket a token"),
            event_loop
                .register(&mut second)
                .expect("`register` must give an open socket a token"),
        );
        assert_ne!(
            a, b,
            "tokens of two sockets registered after a token was deregistered twice: the \
             same slot handed out twice (deregister must free only a slot in use)"
        );
        assert_eq!(
            event_loop.registered(),
            2,
            "registered after deregistering the same token twice, then two more registers"
        );
        event_loop.close();
    });
}

#[test]
fn a_writer_is_woken_when_its_socket_is_writable_until_removed() {
    within(10, NEVER_WOKEN, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let mut stream = mio::net::TcpStream::connect(addr).unwrap();
        let token = event_loop
            .register(&mut stream)
            .expect("`register` must give an open socket a token");
        let _server = listener.accept().unwrap();
        event_loop.call_later(Duration::from_secs(10), || {});
        let wakes = CountingWaker::new();
        event_loop
            .add_writer(token, &Waker::from(wakes.clone()))
            .expect("`add_writer` must install a writer for a registered socket");
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(
            wakes.count(),
            1,
            "writer wake-ups after one turn on a connected socket: writable, once"
        );
        assert!(
            event_loop.remove_writer(token),
            "remove_writer with a writer installed should return true"
        );
        assert!(
            !event_loop.remove_writer(token),
            "remove_writer with none installed should return false"
        );
        assert!(
            !event_loop.remove_reader(token),
            "remove_reader after add_writer: the writer's place is not the reader's"
        );
        event_loop.deregister(&mut stream, token);
        event_loop.close();
    });
}

/// `wake_at` is a timer whose callback is a waker: woken at the deadline,
/// not at all once cancelled, and `set_waker` changes whom it wakes.
#[test]
fn wake_at_wakes_its_waker_at_the_deadline_unless_cancelled() {
    within(10, NEVER_WOKEN, || {
        let (event_loop, _clock) = test_loop();
        let start = event_loop.time();
        let (first, cancelled, moved) = (
            CountingWaker::new(),
            CountingWaker::new(),
            CountingWaker::new(),
        );
        let at = |secs| start + Duration::from_secs(secs);
        let timer = event_loop.wake_at(at(2), &Waker::from(first.clone()));
        assert_eq!(
            timer.when(),
            at(2),
            "WakeTimer::when: the deadline wake_at was given"
        );
        let dropped = event_loop.wake_at(at(1), &Waker::from(cancelled.clone()));
        dropped.cancel();
        assert_eq!(
            event_loop.pending_timers(),
            1,
            "pending_timers after two wake_at and one cancel: a cancelled timer is removed at once"
        );
        let handed_on = event_loop.wake_at(at(3), &Waker::from(first.clone()));
        handed_on.set_waker(&Waker::from(moved.clone()));
        let lp = event_loop.clone();
        event_loop.call_at(at(4), move || lp.stop());
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            (first.count(), cancelled.count(), moved.count()),
            (1, 0, 1),
            "wake-ups of (the 2 s timer's waker, the cancelled timer's, the \
             waker set_waker gave the 3 s timer): the first is woken once by \
             its own timer only; set_waker replaces the waker"
        );
        event_loop.close();
    });
}

// ---------------------------------------------------------------------
// Futures that can fail
// ---------------------------------------------------------------------

/// A future ends once — with a result, an error or a cancellation — and the
/// first of them wins. Polled before it ends, it keeps the waker and says
/// "not yet"; ending it wakes that waker; polled after, it hands over its
/// outcome.
#[test]
fn a_future_ends_once_with_a_result_an_error_or_a_cancellation() {
    let (event_loop, _clock) = test_loop();
    let wakes = CountingWaker::new();
    let waker = Waker::from(wakes.clone());
    let mut cx = Context::from_waker(&waker);

    let ok: Future<u32> = event_loop.create_future();
    let mut awaited = ok.clone();
    let first = std::future::Future::poll(Pin::new(&mut awaited), &mut cx);
    assert!(first.is_pending(), "a pending future polled: {first:?}");
    assert!(!ok.done(), "Future::done on a pending future: true");
    assert_eq!(
        wakes.count(),
        0,
        "wake-ups of the waker a poll left, before the future ended: none yet"
    );
    assert!(
        ok.set_result(7),
        "set_result on a pending future returned false"
    );
    assert_eq!(
        wakes.count(),
        1,
        "wake-ups of the waker the poll left, after set_result: set_result must wake it once"
    );
    assert!(
        !ok.set_exception(anyhow::anyhow!("too late")),
        "the first outcome wins: set_exception after set_result must return false"
    );
    match std::future::Future::poll(Pin::new(&mut awaited), &mut cx) {
        Poll::Ready(Ok(7)) => {}
        other => panic!("expected Ready(Ok(7)) once the result is set, got {other:?}"),
    }

    let failed: Future<u32> = event_loop.create_future();
    assert!(
        failed.set_exception(anyhow::anyhow!("it broke")),
        "set_exception on a pending future returned false"
    );
    assert!(
        failed.done() && !failed.cancelled(),
        "a failed future: expected done and not cancelled"
    );
    assert!(!failed.cancel(), "a future that failed cannot be cancelled");
    let err = failed
        .take_result()
        .expect("`take_result` must give the result of a task that is done")
        .expect_err(
            "it must be an error: a future ends once with a result an error or a cancellation",
        );
    assert_eq!(
        err.to_string(),
        "it broke",
        "the error take_result gives a failed future: the one set_exception was given"
    );
    assert!(
        !is_cancelled(&err),
        "is_cancelled of a failed future's error (\"it broke\"): false, only a Cancelled \
         anywhere in the error's chain is a cancellation"
    );

    let cancelled: Future<u32> = event_loop.create_future();
    assert!(
        cancelled.cancel(),
        "cancel on a pending future returned false"
    );
    assert!(
        cancelled.done() && cancelled.cancelled(),
        "a cancelled future: expected done and cancelled"
    );
    assert!(
        !cancelled.set_result(1),
        "a cancelled future takes no result"
    );
    let err = cancelled
        .take_result()
        .expect("`take_result` must give the result of a task that is done")
        .expect_err(
            "it must be an error: a future ends once with a result an error or a cancellation",
        );
    assert!(
        is_cancelled(&err),
        "a cancelled future's error should be Cancelled: {err:#}"
    );
    event_loop.close();
}

/// Two tasks may await one future (through clones): each waker that polled
/// it is kept, and each is woken once when it ends.
#[test]
fn every_waker_that_polled_a_future_is_woken_once() {
    let (event_loop, _clock) = test_loop();
    let (first, second) = (CountingWaker::new(), CountingWaker::new());
    let future: Future<u32> = event_loop.create_future();
    for wakes in [&first, &second, &first] {
        let waker = Waker::from(wakes.clone());
        let mut awaited = future.clone();
        let polled =
            std::future::Future::poll(Pin::new(&mut awaited), &mut Context::from_waker(&waker));
        assert!(polled.is_pending(), "a pending future polled: {polled:?}");
    }
    future.set_result(1);
    assert_eq!(
        (first.count(), second.count()),
        (1, 1),
        "wake-ups of (the waker that polled twice, the second awaiter's): \
         each should be woken once; a future that keeps only the last \
         waker leaves the other task asleep forever"
    );
    event_loop.close();
}

#[test]
fn done_callbacks_are_scheduled_not_called() {
    within(10, NO_CALLBACK_SCHEDULED, || {
        let (event_loop, _clock) = test_loop();
        let trace = Trace::default();
        let future: Future<u32> = event_loop.create_future();
        let t = trace.clone();
        future.add_done_callback(move |f| {
            t.push(format!("done {:?}", f.take_result().map(|r| r.unwrap())))
        });
        assert!(
            future.set_result(7),
            "set_result on a pending future returned false"
        );
        trace.push("after set_result");
        // A second result is refused, and changes nothing.
        assert!(
            !future.set_result(8),
            "a second set_result must return false"
        );
        assert!(
            !future.cancel(),
            "cancel after set_result must return false"
        );
        assert_eq!(
            trace.lines(),
            ["after set_result"],
            "what happened before the next turn: the done callback must not have run yet; \
             it is scheduled with call_soon, not called inside set_result"
        );
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(
            trace.lines(),
            ["after set_result", "done Some(7)"],
            "what happened, in order: the done callback runs on the next turn \
             (scheduled with call_soon, not called inside set_result), and \
             sees the first result"
        );

        // A callback added to a done future is scheduled too.
        let t = trace.clone();
        future.add_done_callback(move |f| t.push(format!("late {}", f.done())));
        assert_eq!(
            trace.lines().len(),
            2,
            "lines right after add_done_callback on a done future: the callback \
             must wait for the next turn, not run at once"
        );
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(
            trace.lines()[2],
            "late true",
            "the line of a callback added to a done future, after a turn"
        );
        event_loop.close();
    });
}

// ---------------------------------------------------------------------
// Tasks
// ---------------------------------------------------------------------

#[test]
fn a_task_is_a_future_with_its_coroutine_outcome() {
    within(10, NEVER_STEPPED, || {
        let (event_loop, _clock) = test_loop();
        let answer = event_loop
            .run_until_complete(async {
                let lp = get_running_loop();
                let future: Future<&str> = lp.create_future();
                let setter = future.clone();
                lp.call_later(Duration::from_secs(1), move || {
                    setter.set_result("forty-two");
                });
                let child = lp.create_task(async move { Ok(future.await?.len() * 4 + 6) });
                assert!(
                    !child.done(),
                    "Task::done on a task that has not run yet: true"
                );
                assert_eq!(
                    lp.pending_tasks(),
                    2,
                    "pending_tasks while this task and the child it created are unfinished"
                );
                let got = child.clone().await;
                assert!(
                    child.done(),
                    "Task::done after its coroutine returned: false"
                );
                got
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            answer, 42,
            "what awaiting the child task gave: its coroutine's result"
        );

        let err = event_loop
            .run_until_complete(async {
                let child = get_running_loop()
                    .create_task(async { anyhow::bail!("the child failed") as anyhow::Result<()> });
                child.await
            })
            .expect_err("it must be an error: a task is a future with its coroutine outcome");
        assert_eq!(
            err.to_string(),
            "the child failed",
            "what awaiting a failing task gave: its coroutine's error"
        );
        assert_eq!(
            event_loop.pending_tasks(),
            0,
            "pending_tasks once every task finished: a finished task leaves the loop's table"
        );
        event_loop.close();
    });
}

/// A task that is woken twice before its step runs is stepped once: its
/// waker schedules a step only if none is scheduled yet.
#[test]
fn two_wake_ups_before_a_step_schedule_one_step() {
    within(10, NEVER_STEPPED, || {
        let (event_loop, _clock) = test_loop();
        let polls = event_loop
            .run_until_complete(async {
                let lp = get_running_loop();
                let waker_slot: Rc<RefCell<Option<Waker>>> = Rc::default();
                let go = Rc::new(Cell::new(false));
                let (slot, flag) = (waker_slot.clone(), go.clone());
                lp.call_later(Duration::from_secs(1), move || {
                    flag.set(true);
                    if let Some(waker) = slot.borrow_mut().take() {
                        waker.wake();
                    }
                });
                let mut polls = 0;
                std::future::poll_fn(move |cx| {
                    polls += 1;
                    if polls == 1 {
                        cx.waker().wake_by_ref();
                        cx.waker().wake_by_ref();
                        *waker_slot.borrow_mut() = Some(cx.waker().clone());
                        return Poll::Pending;
                    }
                    if go.get() {
                        Poll::Ready(Ok(polls))
                    } else {
                        Poll::Pending
                    }
                })
                .await
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            polls, 3,
            "polls of a coroutine woken twice in its first poll, then by a timer: \
             1, then one step for the two wake-ups, then the timer's; more \
             means each wake-up queued a step of its own (the `scheduled` flag); \
             fewer means the wake-ups during the first poll were lost (`step` clears \
             `scheduled` before it polls, not after)"
        );
        event_loop.close();
    });
}

/// `run_until_complete` of a coroutine that stops the loop, then awaits a
/// future nobody has set: what it returned, and that future.
fn stopped_before_its_future(event_loop: &EventLoop) -> (anyhow::Result<()>, Future<()>) {
    let never: Future<()> = event_loop.create_future();
    let awaited = never.clone();
    let outcome = event_loop.run_until_complete(async move {
        get_running_loop().stop();
        awaited.await
    });
    (outcome, never)
}

/// `run_until_complete` returns the coroutine's outcome, or an error if
/// the loop stopped first.
#[test]
fn run_until_complete_fails_when_the_loop_stops_first() {
    within(10, NEVER_STEPPED, || {
        let (event_loop, _clock) = test_loop();
        let (outcome, never) = stopped_before_its_future(&event_loop);
        let err = outcome
            .expect_err("it must be an error: run until complete fails when the loop stops first");
        assert!(
            err.to_string().contains("stopped before"),
            "run_until_complete when the loop stops first: expected the error \
             \"event loop stopped before the future completed\", got {err:#}"
        );
        // Let the task end, so that closing the loop finds nothing pending:
        // its future set by a callback (a turn), its step on the next turn.
        event_loop.call_soon(move || {
            never.set_result(());
        });
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        event_loop.close();
    });
}

/// A task that outlived its `run_until_complete` still leaves the loop's
/// table when it ends on a later turn.
#[test]
fn a_task_that_ends_after_its_loop_stopped_leaves_the_table() {
    within(10, NEVER_STEPPED, || {
        let (event_loop, _clock) = test_loop();
        let (outcome, never) = stopped_before_its_future(&event_loop);
        assert!(
            outcome.is_err(),
            "run_until_complete when the loop stops first"
        );
        assert_eq!(
            event_loop.pending_tasks(),
            1,
            "pending_tasks while the task waits on a future nobody has set"
        );
        never.set_result(());
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(
            event_loop.pending_tasks(),
            0,
            "pending_tasks once the waiting task's future was set and it had a turn: \
             a finished task leaves the loop's table (`finish` calls `remove_task`)"
        );
        event_loop.close();
    });
}

/// `run` is `asyncio.run`: a loop of its own, the coroutine's outcome.
#[test]
fn run_gives_the_coroutines_outcome() {
    within(10, NEVER_STEPPED, || {
        let answer = lesson4_asyncio_style::event_loop::run(async {
            let lp = get_running_loop();
            let child = lp.create_task(async { Ok(6 * 7) });
            child.await
        });
        assert_eq!(
            answer.ok(),
            Some(42),
            "run(coroutine) gave this, expected the coroutine's result"
        );
        let err = lesson4_asyncio_style::event_loop::run(async {
            anyhow::bail!("no luck") as anyhow::Result<()>
        })
        .expect_err("it must be an error: run gives the coroutines outcome");
        assert_eq!(
            err.to_string(),
            "no luck",
            "run(coroutine) of a failing coroutine: its error"
        );
        assert!(
            try_get_running_loop().is_none(),
            "a loop still counts as running after run returned"
        );
    });
}

/// `run` of a coroutine that waits for something nothing will ever do (a
/// future no one completes, no timer, no socket) ends with an error saying
/// the loop stalled, instead of sleeping in `poll` forever; a coroutine that
/// only sleeps is not stalled.
#[test]
fn run_says_so_when_the_loop_has_stalled() {
    within(
        10,
        "`run` of a coroutine awaiting a future that nothing completes did not return: with \
         no callback ready, no timer and no socket, the loop has stalled (`stalled()`), and \
         `run_forever` under `run` must end with an error rather than wait in `poll`",
        || {
            let err = lesson4_asyncio_style::event_loop::run(async {
                let never: Future<()> = Future::new(&get_running_loop());
                never.await?;
                Ok(())
            })
            .expect_err("it must be an error: run says so when the loop has stalled");
            assert!(
                format!("{err:#}").contains("stalled"),
                "the error of `run` when its loop has nothing left to run must say it \
                 stalled; it was: {err:#}"
            );
            let slept = lesson4_asyncio_style::event_loop::run(async {
                sleep(Duration::from_millis(20)).await?;
                Ok("slept")
            });
            assert_eq!(
                slept.ok(),
                Some("slept"),
                "a coroutine that sleeps has a timer to wait for: not stalled"
            );
        },
    );
}

/// A task woken twice before its step runs is stepped once: a step is
/// already queued, and a second would poll the coroutine again for nothing.
#[test]
fn a_task_woken_twice_before_its_step_is_stepped_once() {
    within(10, NEVER_STEPPED, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let polls = Rc::new(Cell::new(0));
        let counted = Rc::clone(&polls);
        let _task = event_loop.create_task(async move {
            std::future::poll_fn(|cx| {
                counted.set(counted.get() + 1);
                if counted.get() == 1 {
                    // Two wake-ups before the next step runs.
                    cx.waker().wake_by_ref();
                    cx.waker().wake_by_ref();
                }
                Poll::<()>::Pending
            })
            .await;
            Ok(())
        });
        // The first step, then the turn that runs what it queued (a third
        // turn would wait in `poll` for ever: nothing is left to do).
        for _ in 0..2 {
            event_loop.run_once().expect(
                "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
            );
        }
        assert_eq!(
            polls.get(),
            2,
            "polls of a coroutine woken twice in its first step: 2 (the first step, then one \
             more). A task woken while a step is already queued must not queue another: \
             `schedule` does nothing while the `scheduled` flag is set, and `step` clears it"
        );
        // Not closed: closing drops a pending task's coroutine, which is the
        // next stage's (`abandon`); the test's loop and task are freed with
        // the process.
    });
}

/// Bounded: the loop runs on a thread of its own, and a wake-up from
/// another thread that never reaches it fails the test with a message
/// instead of leaving the loop asleep in `poll` forever.
#[test]
fn a_waker_used_from_another_thread_still_steps_the_task() {
    const LIMIT: Duration = Duration::from_secs(10);
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let value = event_loop.run_until_complete(async {
            let flag = Arc::new(AtomicBool::new(false));
            let mut spawned = false;
            std::future::poll_fn(move |cx| {
                if flag.load(Ordering::SeqCst) {
                    return Poll::Ready(Ok("woken"));
                }
                if !spawned {
                    spawned = true;
                    let (flag, waker) = (flag.clone(), cx.waker().clone());
                    std::thread::spawn(move || {
                        flag.store(true, Ordering::SeqCst);
                        waker.wake();
                    });
                }
                Poll::Pending
            })
            .await
        });
        event_loop.close();
        let _ = done.send(value.map_err(|e| format!("{e:#}")));
    });
    let value = match finished.recv_timeout(LIMIT) {
        Ok(Ok(value)) => value,
        Ok(Err(e)) => panic!("run_until_complete failed for a task woken from another thread: {e}"),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
            "the task was not stepped again within {} s of a wake-up from another thread: a \
             waker used off the loop's thread goes through the loop's `Remote` (`Remote::wake` \
             queues the task's id and interrupts the loop's `poll` with its mio `Waker`), and \
             the next turn must step the tasks it queued. (If a thread panicked, its message \
             is above.)",
            LIMIT.as_secs()
        ),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            panic!("the thread running the loop panicked (its message is above)")
        }
    };
    assert_eq!(
        value, "woken",
        "the outcome of a task woken from another thread (through the loop's Remote)"
    );
}

#[test]
fn a_waker_woken_while_another_loop_runs_steps_its_own_task() {
    // A waker can be woken wherever its future is resolved, even inside a
    // callback of another loop on the same thread. It must reach its own
    // loop (through `Remote`), never the loop that happens to be running.
    within(
        10,
        "a task woken while another loop was running was never stepped: wake_by_ref may \
         call wake_task directly only when the running loop is the task's own (its id is \
         the waker's loop_id); otherwise the wake-up goes through Remote",
        || {
            let mine = EventLoop::new().expect(
                "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
            );
            let other = EventLoop::new().expect(
                "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
            );
            let f: Future<u8> = mine.create_future();
            let task = mine.create_task(f.clone());
            mine.run_once().expect(
                "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
            );
            assert!(
                !task.done(),
                "the task waits for a future nobody has resolved yet"
            );
            // Resolved inside a callback of `other`: the running loop is
            // `other` while the task's waker is woken.
            other.call_soon(move || {
                f.set_result(4);
            });
            other.run_once().expect(
                "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
            );
            assert_eq!(
                mine.run_until_complete(task)
                    .expect("`run_until_complete` must return Ok with what the coroutine returned"),
                4,
                "the task's result, once its own loop runs: the value set inside the other \
                 loop's callback"
            );
            other.close();
            mine.close();
        },
    );
}

// ---------------------------------------------------------------------
// Cancellation at the `.await`
// ---------------------------------------------------------------------

/// The simplest thing a task can wait on: a future that nobody will ever
/// resolve. Cancelling the task is the only way out, and it must come out
/// of that `.await` as `Cancelled`.
#[test]
fn cancel_reaches_a_task_waiting_on_a_future_nobody_resolves() {
    within(10, CANCEL_NEVER_DELIVERED, || {
        let (event_loop, _clock) = test_loop();
        let observed = Rc::new(RefCell::new(None));
        let cleaned = Rc::new(Cell::new(false));
        let (obs, clean) = (observed.clone(), cleaned.clone());
        let ended = event_loop
            .run_until_complete(async move {
                let lp = get_running_loop();
                let never: Future<()> = lp.create_future();
                let child = lp.create_task(async move {
                    let _finally = Cleanup(clean);
                    let waited = never.await;
                    *obs.borrow_mut() = Some(matches!(&waited, Err(err) if is_cancelled(err)));
                    waited
                });
                // Let the child take its first step and suspend: a future set
                // by a callback queued after that step wakes this task next.
                let tick: Future<()> = lp.create_future();
                let set = tick.clone();
                lp.call_soon(move || {
                    set.set_result(());
                });
                tick.await?;
                assert!(!child.done(), "the child ended without being cancelled");
                assert!(!child.cancelled(), "Task::cancelled before cancel: true");
                assert!(child.cancel(), "cancel on a waiting task returned false");
                let outcome = child.clone().await;
                Ok((
                    child.cancelled(),
                    outcome.is_err_and(|err| err.is::<Cancelled>()),
                    child.cancel(),
                ))
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            *observed.borrow(),
            Some(true),
            "what the child's `.await` gave once cancelled: Some(true) means \
             Err(Cancelled) came out of it; None means the coroutine never got \
             past the await (dropped instead of told)"
        );
        assert!(cleaned.get(), "the child's coroutine was not dropped");
        assert_eq!(
            ended,
            (true, true, false),
            "(Task::cancelled, awaiting the task gave Err(Cancelled), what a \
             second cancel on the ended task returned)"
        );
        event_loop.close();
    });
}

#[test]
fn a_task_cancelled_before_its_first_step_never_runs() {
    within(10, NEVER_STEPPED, || {
        let (event_loop, _clock) = test_loop();
        let ran = Rc::new(Cell::new(false));
        let flag = ran.clone();
        let (ran_at_all, cancelled) = event_loop
            .run_until_complete(async move {
                let child = get_running_loop().create_task(async move {
                    flag.set(true);
                    Ok(())
                });
                child.cancel();
                let outcome = child.clone().await;
                Ok((outcome.is_ok(), child.cancelled()))
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert!(
            !ran.get(),
            "the coroutine of a task cancelled before its first step ran"
        );
        assert!(
            !ran_at_all,
            "awaiting a task cancelled before its first step gave Ok: expected Err(Cancelled)"
        );
        assert!(
            cancelled,
            "Task::cancelled of a task cancelled before its first step: false"
        );
        assert!(
            !event_loop.create_task(async { Ok(()) }).cancelled(),
            "Task::cancelled of a new task: true"
        );
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        event_loop.close();
    });
}

/// Closing the loop drops the coroutine of a task still waiting (its
/// destructors run), even though the test still holds the task.
#[test]
fn close_drops_a_waiting_tasks_coroutine() {
    within(10, NEVER_STEPPED, || {
        let (event_loop, _clock) = test_loop();
        let cleaned = Rc::new(Cell::new(false));
        let clean = cleaned.clone();
        let never: Future<()> = event_loop.create_future();
        let task = event_loop.create_task(async move {
            let _finally = Cleanup(clean);
            never.await
        });
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert!(
            !task.done(),
            "a task waiting on a future nobody resolves ended"
        );
        event_loop.close();
        assert!(
            cleaned.get(),
            "close left a waiting task's coroutine alive (its cleanup did not \
             run): close must abandon every task it holds"
        );
        assert_eq!(
            event_loop.pending_tasks(),
            0,
            "pending_tasks after close: the table is emptied"
        );
    });
}

// ---------------------------------------------------------------------
// Three small tools: sleep, wait_for, gather
// ---------------------------------------------------------------------

#[test]
fn sleep_takes_loop_time_not_real_time() {
    within(10, TOOL_NEVER_ENDED, || {
        let (event_loop, _clock) = test_loop();
        let start = event_loop.time();
        let lp = event_loop.clone();
        let slept = event_loop
            .run_until_complete(async move {
                sleep(Duration::from_secs(3600)).await?;
                Ok(lp.time() - start)
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            slept,
            Duration::from_secs(3600),
            "loop time a sleep(1 hour) took: exactly its delay, on the test clock"
        );
        event_loop.close();
    });
}

/// A sleep first polled by one waker and then awaited by a task wakes the
/// task: the timer's waker follows whoever polls the sleep.
#[test]
fn a_sleep_polled_again_by_another_waker_wakes_that_one() {
    within(10, TOOL_NEVER_ENDED, || {
        let (event_loop, _clock) = test_loop();
        let outcome = event_loop
            .run_until_complete(async {
                let lp = get_running_loop();
                // Bounds the test if the task is never woken.
                let stopper = lp.clone();
                lp.call_later(Duration::from_secs(60), move || stopper.stop());
                let mut nap = sleep(Duration::from_secs(5));
                let other = Waker::from(CountingWaker::new());
                let first =
                    std::future::Future::poll(Pin::new(&mut nap), &mut Context::from_waker(&other));
                assert!(first.is_pending(), "a 5 s sleep was over at its first poll");
                nap.await
            })
            .map_err(|err| err.to_string());
        assert!(
            outcome.is_ok(),
            "a sleep polled first with another waker, then awaited by the task, \
             never woke the task (the loop stopped at its 60 s guard: {outcome:?}): \
             a later poll must hand its waker to the timer (WakeTimer::set_waker)"
        );
        event_loop.close();
    });
}

#[test]
fn close_drops_pending_tasks_and_refuses_new_work() {
    within(10, TOOL_NEVER_ENDED, || {
        let (event_loop, _clock) = test_loop();
        let cleaned = Rc::new(Cell::new(false));
        let clean = cleaned.clone();
        let task = event_loop.create_task(async move {
            let _finally = Cleanup(clean);
            sleep(Duration::from_secs(3600)).await
        });
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert!(!task.done(), "a task asleep for an hour ended in one turn");
        event_loop.close();
        assert!(
            cleaned.get(),
            "close left the sleeping task's coroutine alive: its cleanup did not run"
        );
        assert_eq!(
            event_loop.pending_tasks(),
            0,
            "pending_tasks after close: the table is emptied"
        );
        assert_eq!(
            event_loop.pending_timers(),
            0,
            "pending_timers after close: the sleep's timer must be gone"
        );
        let ran = Rc::new(Cell::new(false));
        let flag = ran.clone();
        assert!(
            event_loop.call_soon(move || flag.set(true)).cancelled(),
            "call_soon on a closed loop: its handle should come back cancelled"
        );
        assert!(
            event_loop.run_forever().is_err(),
            "run_forever on a closed loop: expected an error"
        );
        assert!(!ran.get(), "a callback scheduled after close ran");
    });
}

#[test]
fn cancel_delivers_cancelled_at_the_await_and_the_coroutine_cleans_up() {
    within(10, TOOL_NEVER_ENDED, || {
        let (event_loop, _clock) = test_loop();
        let observed = Rc::new(RefCell::new(None));
        let cleaned = Rc::new(Cell::new(false));
        let (obs, clean) = (observed.clone(), cleaned.clone());
        let cancelled = event_loop
            .run_until_complete(async move {
                let lp = get_running_loop();
                let child = lp.create_task(async move {
                    let _finally = Cleanup(clean);
                    // Suspended here, for an hour of loop time.
                    let slept = sleep(Duration::from_secs(3600)).await;
                    *obs.borrow_mut() = Some(match &slept {
                        Err(err) => is_cancelled(err),
                        Ok(()) => false,
                    });
                    slept
                });
                sleep(Duration::from_secs(1)).await?;
                assert!(child.cancel(), "cancel on a sleeping task returned false");
                let outcome = child.clone().await;
                Ok((
                    child.cancelled(),
                    outcome.expect_err("it must be an error: cancel delivers cancelled at the await and the coroutine cleans up").is::<Cancelled>(),
                    lp.pending_timers(),
                ))
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            *observed.borrow(),
            Some(true),
            "what the child's sleep gave once cancelled: Some(true) means \
             Err(Cancelled) came out of the `.await` (Sleep::poll must deliver \
             take_cancel_request)"
        );
        assert!(cleaned.get(), "the cancelled child's cleanup did not run");
        assert_eq!(
            cancelled,
            (true, true, 0),
            "(Task::cancelled, awaiting the task gave Err(Cancelled), timers \
             left): the abandoned sleep's timer must be cancelled when it is dropped"
        );
        event_loop.close();
    });
}

#[test]
fn a_coroutine_may_catch_the_cancellation_and_return_normally() {
    within(10, TOOL_NEVER_ENDED, || {
        let (event_loop, _clock) = test_loop();
        let result = event_loop
            .run_until_complete(async {
                let child = get_running_loop().create_task(async {
                    match sleep(Duration::from_secs(10)).await {
                        Err(err) if is_cancelled(&err) => Ok("caught"),
                        other => other.map(|()| "slept"),
                    }
                });
                sleep(Duration::from_secs(1)).await?;
                child.cancel();
                child.await
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            result, "caught",
            "what a child that catches its cancellation returned: \"caught\" \
             (\"slept\" means the sleep ignored the cancel request)"
        );
        event_loop.close();
    });
}

#[test]
fn gather_returns_results_in_argument_order() {
    within(10, TOOL_NEVER_ENDED, || {
        let (event_loop, _clock) = test_loop();
        let results = event_loop
            .run_until_complete(gather([3u64, 1, 2].map(|secs| async move {
                sleep(Duration::from_secs(secs)).await?;
                Ok(secs * 10)
            })))
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            results,
            [30, 10, 20],
            "gather's results: in the order of the awaitables given, not the order they finished"
        );

        let empty: Vec<u8> = event_loop
            .run_until_complete(gather(Vec::<std::future::Ready<anyhow::Result<u8>>>::new()))
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert!(empty.is_empty(), "gather of nothing: expected no results");
        event_loop.close();
    });
}

/// The first child to fail fails the gather; the others keep running, as
/// in asyncio without `return_exceptions`.
#[test]
fn gather_fails_with_the_first_error() {
    within(10, TOOL_NEVER_ENDED, || {
        let (event_loop, _clock) = test_loop();
        let finished = Rc::new(RefCell::new(Vec::new()));
        let done = finished.clone();
        let err = event_loop
            .run_until_complete(gather([1u64, 2, 3].map(move |secs| {
                let done = done.clone();
                async move {
                    sleep(Duration::from_secs(secs)).await?;
                    if secs == 2 {
                        anyhow::bail!("child {secs} failed");
                    }
                    done.borrow_mut().push(secs);
                    Ok(secs)
                }
            })))
            .expect_err("it must be an error: gather fails with the first error");
        assert_eq!(
            err.to_string(),
            "child 2 failed",
            "gather's error: the first child to fail"
        );
        event_loop
            .run_until_complete(sleep(Duration::from_secs(5)))
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            *finished.borrow(),
            [1, 3],
            "children that finished: the third kept running after the second \
             failed (gather cancels its children only when it is cancelled itself)"
        );
        event_loop.close();
    });
}

#[test]
fn cancelling_a_gather_cancels_its_children() {
    within(10, TOOL_NEVER_ENDED, || {
        let (event_loop, _clock) = test_loop();
        let cleaned = Rc::new(Cell::new(0));
        let c = cleaned.clone();
        event_loop
            .run_until_complete(async move {
                let lp = get_running_loop();
                let children = (0..3).map(move |_| {
                    let c = c.clone();
                    async move {
                        let _finally = CountOnDrop(c);
                        sleep(Duration::from_secs(3600)).await
                    }
                });
                let outer = lp.create_task(gather(children));
                sleep(Duration::from_secs(1)).await?;
                outer.cancel();
                assert!(
                    is_cancelled(&outer.await.expect_err(
                        "it must be an error: cancelling a gather cancels its children"
                    )),
                    "a cancelled gather should end with Cancelled"
                );
                // Give the children's cancelled steps a turn.
                sleep(Duration::from_secs(1)).await
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            cleaned.get(),
            3,
            "children whose coroutine ended after the gather was cancelled: all three"
        );
        assert_eq!(
            event_loop.pending_tasks(),
            0,
            "tasks left after a cancelled gather: its children must be cancelled too"
        );
        event_loop.close();
    });
}

#[test]
fn wait_for_times_out_at_the_deadline_and_drops_the_awaitable() {
    within(10, TOOL_NEVER_ENDED, || {
        let (event_loop, _clock) = test_loop();
        let start = event_loop.time();
        let cleaned = Rc::new(Cell::new(false));
        let clean = cleaned.clone();
        let lp = event_loop.clone();
        let (err, at) = event_loop
            .run_until_complete(async move {
                let slow = async move {
                    let _finally = Cleanup(clean);
                    sleep(Duration::from_secs(60)).await?;
                    Ok("too late")
                };
                let err = wait_for(pin!(slow), Duration::from_millis(2500))
                    .await
                    .expect_err("it must be an error: wait for times out at the deadline and drops the awaitable");
                Ok((err, lp.time() - start))
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            err.downcast_ref::<TimeoutError>(),
            Some(&TimeoutError),
            "wait_for's error past the deadline: TimeoutError (got {err:#})"
        );
        assert_eq!(err.to_string(), "timed out", "TimeoutError's message");
        assert_eq!(
            at,
            Duration::from_millis(2500),
            "loop time at which wait_for(.., 2.5 s) gave up: its deadline"
        );
        assert!(
            cleaned.get(),
            "the awaitable wait_for gave up on was not dropped"
        );
        assert_eq!(
            event_loop.pending_timers(),
            0,
            "timers left after a timeout: neither the abandoned sleep's nor the deadline's"
        );
        event_loop.close();
    });
}

#[test]
fn wait_for_returns_the_result_when_in_time() {
    within(10, TOOL_NEVER_ENDED, || {
        let (event_loop, _clock) = test_loop();
        let value = event_loop
            .run_until_complete(async {
                let fast = async {
                    sleep(Duration::from_secs(1)).await?;
                    Ok(5)
                };
                wait_for(pin!(fast), Duration::from_secs(2)).await
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(value, 5, "wait_for's result when in time: the awaitable's");
        assert_eq!(
            event_loop.pending_timers(),
            0,
            "timers left after wait_for returned in time: its deadline's must be cancelled"
        );
        event_loop.close();
    });
}

/// A result and the deadline in the same turn: the result wins (the
/// awaitable is polled before the deadline).
#[test]
fn wait_for_prefers_a_result_ready_at_the_deadline() {
    within(10, TOOL_NEVER_ENDED, || {
        let (event_loop, _clock) = test_loop();
        let value = event_loop
            .run_until_complete(async {
                let on_time = async {
                    sleep(Duration::from_secs(2)).await?;
                    Ok("made it")
                };
                wait_for(pin!(on_time), Duration::from_secs(2)).await
            })
            .map_err(|err| err.to_string());
        assert_eq!(
            value,
            Ok("made it"),
            "wait_for(.., 2 s) around a 2 s sleep: the result and the deadline \
             come in the same turn, and the awaitable, polled first, wins"
        );
        event_loop.close();
    });
}

// ---------------------------------------------------------------------
// The queue, and knowing when to stop
// ---------------------------------------------------------------------

#[test]
fn join_waits_for_every_task_done_including_items_put_by_workers() {
    within(10, QUEUE_NEVER_WOKE, || {
        let (event_loop, _clock) = test_loop();
        let trace = Trace::default();
        let t = trace.clone();
        event_loop
            .run_until_complete(async move {
                let lp = get_running_loop();
                let q: Queue<u32> = Queue::new();
                assert!(q.empty(), "a new queue is not empty");
                assert_eq!(q.get_nowait(), None, "get_nowait on an empty queue");
                q.put_nowait(3);
                assert_eq!(
                    (q.qsize(), q.empty(), q.unfinished_tasks()),
                    (1, false, 1),
                    "(qsize, empty, unfinished_tasks) after one put_nowait"
                );
                let workers: Vec<_> = (0..2)
                    .map(|w| {
                        let (q, t) = (q.clone(), t.clone());
                        lp.create_task(async move {
                            loop {
                                let n: u32 = q.get().await?;
                                sleep(Duration::from_secs(1)).await?;
                                // New work is put before this item is done, so
                                // the count of unfinished items never hits zero early.
                                if n > 0 {
                                    q.put_nowait(n - 1);
                                    q.put_nowait(n - 1);
                                }
                                t.push(format!("worker {w} did {n}"));
                                q.task_done()?;
                            }
                            #[allow(unreachable_code)]
                            Ok::<(), anyhow::Error>(())
                        })
                    })
                    .collect();
                q.join().await?;
                t.push(format!("joined, unfinished {}", q.unfinished_tasks()));
                for worker in &workers {
                    worker.cancel();
                }
                for worker in workers {
                    assert!(
                        is_cancelled(&worker.await.expect_err("it must be an error: join waits for every task done including items put by workers")),
                        "a worker waiting in get() and cancelled should end with Cancelled"
                    );
                }
                assert!(
                    q.task_done().is_err(),
                    "task_done with no unfinished item should be an error"
                );
                // `join` on a finished queue returns at once.
                q.join().await
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        let lines = trace.lines();
        assert_eq!(
            lines.len(),
            16,
            "lines: 15 items done (3, two 2s, four 1s, eight 0s) and then the \
             join; fewer means join returned before the items workers put were done: {lines:#?}"
        );
        assert_eq!(
            lines.last().unwrap(),
            "joined, unfinished 0",
            "the last line: join returns after every item, with none unfinished"
        );
        event_loop.close();
    });
}

/// `join` waits for `task_done`, not for an empty queue: items a worker
/// has taken with `get` and not yet marked done still hold it back.
#[test]
fn join_holds_while_items_are_taken_and_not_yet_done() {
    within(10, QUEUE_NEVER_WOKE, || {
        let (event_loop, _clock) = test_loop();
        let joined = Rc::new(Cell::new(false));
        let seen = Rc::clone(&joined);
        event_loop
            .run_until_complete(async move {
                let lp = get_running_loop();
                let q: Queue<u32> = Queue::new();
                q.put_nowait(1);
                q.put_nowait(2);
                assert_eq!(
                    (q.get_nowait(), q.get_nowait()),
                    (Some(1), Some(2)),
                    "the two items put, taken in order with get_nowait"
                );
                let joiner = {
                    let (q, joined) = (q.clone(), Rc::clone(&joined));
                    lp.create_task(async move {
                        q.join().await?;
                        joined.set(true);
                        anyhow::Ok(())
                    })
                };
                sleep(Duration::from_secs(1)).await?;
                assert!(
                    !joined.get(),
                    "`join` returned while both items were taken and not yet done (the queue \
                     empty, 2 unfinished): `join` waits until `task_done` has been called \
                     for every item put, not until the queue is empty"
                );
                q.task_done()?;
                sleep(Duration::from_secs(1)).await?;
                assert!(
                    !joined.get(),
                    "`join` returned after one `task_done` of two: it waits until the \
                     unfinished count reaches 0"
                );
                q.task_done()?;
                wait_for(joiner, Duration::from_secs(5)).await
            })
            .unwrap_or_else(|err| {
                panic!(
                    "`join` was not woken by the last `task_done` ({err:#}): `task_done` \
                     wakes join's waiters when the unfinished count reaches 0"
                )
            });
        assert!(
            seen.get(),
            "`join` returned without its task reaching its end"
        );
        event_loop.close();
    });
}

#[test]
fn a_cancelled_getter_does_not_swallow_an_item() {
    within(10, QUEUE_NEVER_WOKE, || {
        let (event_loop, _clock) = test_loop();
        let got = event_loop
            .run_until_complete(async {
                let lp = get_running_loop();
                let q: Queue<&str> = Queue::new();
                let (q1, q2) = (q.clone(), q.clone());
                let first = lp.create_task(async move { q1.get().await });
                let second = lp.create_task(async move { q2.get().await });
                sleep(Duration::from_secs(1)).await?;
                // Both are waiting; the first is woken by the put, but cancelled
                // in the same turn: the item must reach the second.
                q.put_nowait("item");
                first.cancel();
                assert!(
                    is_cancelled(&first.await.expect_err(
                        "it must be an error: a cancelled getter does not swallow an item"
                    )),
                    "the first getter, cancelled, should end with Cancelled"
                );
                wait_for(second, Duration::from_secs(5)).await
            })
            .map_err(|err| err.to_string());
        assert_eq!(
            got,
            Ok("item"),
            "what the second getter got: the item the cancelled first one was woken for \
             (\"timed out\": the wake-up was not passed on)"
        );
        event_loop.close();
    });
}

/// A getter cancelled while it waits stays in the line, abandoned (its
/// future is done, cancelled); the next put must go past it, to the getter
/// that still waits behind it.
#[test]
fn a_put_reaches_the_getter_behind_one_that_gave_up() {
    within(10, QUEUE_NEVER_WOKE, || {
        let (event_loop, _clock) = test_loop();
        let got = event_loop
            .run_until_complete(async {
                let lp = get_running_loop();
                let q: Queue<&str> = Queue::new();
                let (q1, q2) = (q.clone(), q.clone());
                let first = lp.create_task(async move { q1.get().await });
                let second = lp.create_task(async move { q2.get().await });
                sleep(Duration::from_secs(1)).await?;
                // The first getter gives up before any item comes.
                first.cancel();
                assert!(
                    is_cancelled(&first.await.expect_err(
                        "it must be an error: a put reaches the getter behind one that gave up"
                    )),
                    "the first getter, cancelled, should end with Cancelled"
                );
                q.put_nowait("item");
                wait_for(second, Duration::from_secs(5)).await
            })
            .map_err(|err| err.to_string());
        assert_eq!(
            got,
            Ok("item"),
            "what the getter still waiting got, after the one ahead of it in line was \
             cancelled (\"timed out\": the put's wake-up was spent on the cancelled \
             getter). A cancelled getter's future is done, so its `set_result` returns \
             false: wakeup_next_getter must then go on to the next getter in line"
        );
        event_loop.close();
    });
}

// ---------------------------------------------------------------------
// Sockets as coroutines
// ---------------------------------------------------------------------

#[test]
fn sockets_connect_write_and_read_through_the_loop() {
    within(20, NEVER_READY, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0u8; 5];
            stream.read_exact(&mut request).unwrap();
            stream.write_all(b"echo:").unwrap();
            stream.write_all(&request).unwrap();
            // Closing the connection ends the reply.
        });
        let reply = lesson4_asyncio_style::event_loop::run(async move {
            let mut socket = Socket::connect(&addr).await?;
            socket.write_all(b"hello").await?;
            let mut reply = Vec::new();
            loop {
                let n = socket
                    .read(|bytes| {
                        reply.extend_from_slice(bytes);
                        bytes.len()
                    })
                    .await?;
                if n == 0 {
                    return Ok(reply);
                }
            }
        })
        .expect("`Socket::connect`, `write_all` and `read` must each succeed against a server that echoes and closes");
        assert_eq!(
            String::from_utf8_lossy(&reply),
            "echo:hello",
            "what the socket read until the server closed: the echo of what it wrote"
        );
        server.join().unwrap();
    });
}

/// mio's events are edge-triggered: bytes that arrived while no reader was
/// installed were announced once, to no one, and nothing announces them
/// again. The server here writes at once and then sends nothing more; the
/// loop turns over (a sleep) after they are in, spending their edge; only
/// then is `read` called. It must try first and find them there.
#[test]
fn read_takes_bytes_that_arrived_before_it_was_called() {
    within(
        10,
        "`read` waited for bytes that were already in the socket: their edge came while \
         no reader was installed and will not come again. `read` must try to read first \
         and wait for readiness only after `WouldBlock`",
        || {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let (written, bytes_in) = std::sync::mpsc::channel();
            let server = std::thread::spawn(move || {
                let (mut conn, _) = listener.accept().unwrap();
                conn.write_all(b"hello").unwrap();
                let _ = written.send(());
                // Held open, silent, until the client closes it.
                let mut rest = Vec::new();
                let _ = conn.read_to_end(&mut rest);
            });
            let got = lesson4_asyncio_style::event_loop::run(async move {
                let mut socket = Socket::connect(&addr).await?;
                bytes_in.recv_timeout(Duration::from_secs(5))?;
                // Turns of the loop with the bytes in: their edge is
                // delivered, and no reader is installed to hear it.
                sleep(Duration::from_millis(50)).await?;
                socket.read(|bytes| bytes.to_vec()).await
            })
            .expect(
                "`Socket::connect` and `read` must succeed: the bytes are already in the socket",
            );
            assert_eq!(
                got, b"hello",
                "what `read` returned: the bytes already in the socket"
            );
            server.join().unwrap();
        },
    );
}

#[test]
fn write_all_waits_for_room_and_sends_every_byte() {
    // 16 MiB do not fit in loopback's buffers: a write must answer
    // `WouldBlock`, and write_all must wait for room and carry on.
    within(30, NEVER_READY, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(50));
            let mut got = Vec::new();
            stream.read_to_end(&mut got).unwrap();
            got
        });
        let data: Vec<u8> = (0..16 << 20).map(|i| (i % 251) as u8).collect();
        let sent = data.clone();
        lesson4_asyncio_style::event_loop::run(async move {
            let mut socket = Socket::connect(&addr).await?;
            socket.write_all(&sent).await?;
            // Dropped here: the server reads to the close.
            Ok(())
        })
        .unwrap_or_else(|err| {
            panic!(
                "write_all of 16 MiB, more than the socket buffers hold, failed: {err:#}. \
                 A write that says WouldBlock means no room for now, not an error: wait \
                 until the socket is writable, then write the rest"
            )
        });
        let got = server.join().unwrap();
        assert_eq!(
            got.len(),
            data.len(),
            "bytes the server received of the 16 MiB write_all sent: every byte, however \
             many writes it took (a WouldBlock waits for room, it is not an error)"
        );
        assert!(
            got == data,
            "the server received the bytes in another order or changed: each write must \
             start where the last one stopped"
        );
    });
}

/// A listener whose one connection is reset (RST, not FIN) once its first
/// bytes arrive: the client is connected, and has started writing.
fn resetting_listener() -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let _ = stream.read(&mut [0u8; 4096]);
        socket2::SockRef::from(&stream)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        drop(stream);
    });
    (addr, server)
}

#[test]
fn a_reset_ends_write_all_and_read_with_its_error() {
    within(
        20,
        "write_all or read never ended on a connection the peer had reset: only \
         WouldBlock may wait for the socket, and only Interrupted tries again at once; any \
         other error is the operation's error",
        || {
            let kind_of = |err: &anyhow::Error| {
                err.downcast_ref::<std::io::Error>()
                    .map(|e| e.kind())
                    .ok_or_else(|| format!("not an io::Error: {err:#}"))
            };
            // A write meets the reset: 16 MiB cannot all be in the socket's
            // buffers when the server resets, once the first bytes arrive.
            let (addr, server) = resetting_listener();
            let written = lesson4_asyncio_style::event_loop::run(async move {
                let mut socket = Socket::connect(&addr).await?;
                let data = vec![b'x'; 16 << 20];
                Ok(socket.write_all(&data).await.map_err(|e| kind_of(&e)))
            })
            .expect("`Socket::connect` must connect to a listening server (its write's own error is checked below)");
            server.join().unwrap();
            assert!(
                matches!(
                    written,
                    Err(Ok(
                        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
                    ))
                ),
                "write_all to a connection the peer reset: the write's error, ConnectionReset \
                 or BrokenPipe; got {written:?}"
            );

            // A read meets the reset.
            let (addr, server) = resetting_listener();
            let read = lesson4_asyncio_style::event_loop::run(async move {
                let mut socket = Socket::connect(&addr).await?;
                socket.write_all(b"x").await?;
                // Until the reset has arrived, a read may say the peer is
                // still there: wait for the server to be done first.
                while !server.is_finished() {
                    sleep(Duration::from_millis(5)).await?;
                }
                sleep(Duration::from_millis(20)).await?;
                Ok(socket
                    .read(|bytes| bytes.len())
                    .await
                    .map_err(|e| kind_of(&e)))
            })
            .expect("`Socket::connect` and `write_all` must succeed before the reset (the read's own error is checked below)");
            assert!(
                matches!(read, Err(Ok(std::io::ErrorKind::ConnectionReset))),
                "read from a connection the peer reset: the read's error, ConnectionReset; \
                 got {read:?}"
            );
        },
    );
}

#[test]
fn connecting_to_a_closed_port_fails() {
    within(20, NEVER_READY, || {
        let addr = refused_addr();
        let err = lesson4_asyncio_style::event_loop::run(async move {
            Socket::connect(&addr).await.map(|_| ())
        })
        .expect_err("it must be an error: connecting to a closed port fails");
        let io = err
            .downcast_ref::<std::io::Error>()
            .unwrap_or_else(|| panic!("connect's error should be an io::Error: {err:#}"));
        assert_eq!(
            io.kind(),
            std::io::ErrorKind::ConnectionRefused,
            "the kind of a refused connect's error (is_connected reads it from take_error)"
        );
    });
}

/// A listener that never accepts, with its accept queue full: the kernel
/// drops further handshakes, so a connect to it stays pending. Returns the
/// listener, its address and the connections that fill the queue (keep
/// them open).
fn listener_that_leaves_connects_pending() -> (
    std::net::TcpListener,
    std::net::SocketAddr,
    Vec<std::net::TcpStream>,
) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut filling = Vec::new();
    // The queue holds the listen backlog (128 with std) plus one; the
    // bound only stops a broken test.
    for _ in 0..10_000 {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(stream) => filling.push(stream),
            Err(err) if err.kind() == std::io::ErrorKind::TimedOut => {
                return (listener, addr, filling)
            }
            Err(err) => panic!("filling the accept queue: {err}"),
        }
    }
    panic!("the listener accepted 10,000 connections without accept()");
}

#[test]
fn a_connect_still_under_way_is_not_connected_yet() {
    within(20, NEVER_READY, || {
        let (_listener, addr, _filling) = listener_that_leaves_connects_pending();
        let connected = lesson4_asyncio_style::event_loop::run(async move {
            let socket = Socket::start_connect(addr)?;
            Ok(socket.is_connected()?)
        });
        assert_eq!(
            connected.map_err(|err| err.to_string()),
            Ok(false),
            "is_connected on a connect the server has not answered: Ok(false) \
             (peer_addr says NotConnected: still connecting, not an error)"
        );
    });
}

#[test]
fn a_stalled_read_ends_with_wait_for_and_leaves_nothing_registered() {
    within(20, NEVER_READY, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let err = event_loop
            .run_until_complete(async move {
                let mut socket = Socket::connect(&addr).await?;
                // The listener accepts (in the kernel) but never writes.
                let read = wait_for(
                    pin!(socket.read(|bytes| bytes.len())),
                    Duration::from_millis(50),
                )
                .await;
                // The read's wait was dropped by the deadline, its socket
                // still open: nothing of it may be left installed.
                assert!(
                    !get_running_loop().remove_reader(socket.token()),
                    "a read abandoned by its deadline left its reader installed on a socket \
                     still open: however a wait ends, it must remove what it installed \
                     (`Wait`'s `Drop`, Rust's `finally: loop.remove_reader(fd)`)"
                );
                read
            })
            .expect_err("it must be an error: a stalled read ends with wait for and leaves nothing registered");
        assert!(
            err.is::<TimeoutError>(),
            "a read nobody answers, under wait_for(50 ms): expected TimeoutError, got {err:#}"
        );
        assert_eq!(
            event_loop.pending_timers(),
            0,
            "timers left after the timeout"
        );
        assert_eq!(
            event_loop.registered(),
            0,
            "sockets registered once the socket was dropped: a dropped socket must deregister \
             itself from the loop (`Socket`'s `Drop`)"
        );
        event_loop.close();
        drop(listener);
    });
}
