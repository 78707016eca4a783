//! Tests of `src/event_loop.rs`, through its public API.

use lesson2_callbacks::event_loop::*;
use shared::fixtures::bound::within;
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// What to look at when `run_forever` never returns (each test that runs the
/// loop is bounded by [`within`], so a wrong turn fails with this instead of
/// hanging).
const RUN_FOREVER_STUCK: &str = "`run_forever` never returned. It ends after a turn in \
    which `stop` was called, or when `has_work()` finds nothing left (no callback ready, \
    no timer, no socket registered). Look at `stop` and `has_work`; at `run_once`, whose \
    poll must not wait when a callback is ready or `stop` was called (otherwise no \
    longer than the first timer), and which moves every timer due at or before now to \
    the ready queue; and at `call_soon`/`push_ready`, `add_reader`/`add_writer` and \
    `deregister`, which must put a callback where the turn finds it, or take the \
    socket away";

/// A connected pair of loopback sockets: mio's client end, std's server end.
fn socket_pair() -> (mio::net::TcpStream, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    client.set_nonblocking(true).unwrap();
    (mio::net::TcpStream::from_std(client), server)
}

#[test]
fn a_reader_is_called_while_its_socket_is_readable_until_removed() {
    within(10, RUN_FOREVER_STUCK, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let (mut client, mut server) = socket_pair();
        let token = event_loop
            .register(&mut client)
            .expect("`register` must give an open socket a token");
        server.write_all(b"hello").unwrap();
        let calls = Rc::new(Cell::new(0));
        let (seen, stopper) = (Rc::clone(&calls), event_loop.clone());
        event_loop
            .add_reader(token, move || {
                seen.set(seen.get() + 1);
                stopper.stop();
            })
            .expect("`add_reader` must install a reader for a registered socket");
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            calls.get(),
            1,
            "reader calls: one, and its `stop` ends `run_forever` after that turn"
        );
        // Still registered: stopping the loop does not deregister anything.
        assert_eq!(
            event_loop.registered(),
            1,
            "sockets registered after `stop`: still the one, stopping deregisters nothing"
        );
        assert!(
            event_loop.remove_reader(token),
            "`remove_reader` of an installed reader must say it removed one (true)"
        );
        assert!(
            !event_loop.remove_reader(token),
            "`remove_reader` a second time: nothing left to remove (false)"
        );
        event_loop.deregister(&mut client, token);
        assert_eq!(
            event_loop.registered(),
            0,
            "sockets registered after `deregister`"
        );
    });
}

#[test]
fn deregister_drops_the_callbacks_and_ends_a_loop_with_nothing_left() {
    within(10, RUN_FOREVER_STUCK, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let (mut client, mut server) = socket_pair();
        server.write_all(b"x").unwrap();
        let token = event_loop
            .register(&mut client)
            .expect("`register` must give an open socket a token");
        let client = Rc::new(RefCell::new(client));
        let calls = Rc::new(Cell::new(0));
        let (sock, seen, ev) = (Rc::clone(&client), Rc::clone(&calls), event_loop.clone());
        event_loop
            .add_reader(token, move || {
                seen.set(seen.get() + 1);
                ev.deregister(&mut *sock.borrow_mut(), token);
            })
            .expect("`add_reader` must install a reader for a registered socket");
        // No `stop`: the loop ends because nothing is left to wait for.
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            calls.get(),
            1,
            "reader calls: one, which deregistered its socket"
        );
        assert_eq!(
            event_loop.registered(),
            0,
            "sockets registered after the reader deregistered its own"
        );
        assert!(
            !event_loop.has_work(),
            "`has_work` with nothing registered, scheduled or pending must be false: \
             {event_loop:?}"
        );
        // The callback, and the `Rc`s it held, are gone.
        assert_eq!(
            Rc::strong_count(&calls),
            1,
            "holders of the reader's counter: only the test, since `deregister` drops the \
             socket's callbacks and what they captured (a freed slot that kept its reader \
             would also call it for the next socket given its token)"
        );
    });
}

#[test]
fn a_writer_can_hand_over_to_a_reader_from_inside_its_own_call() {
    within(10, RUN_FOREVER_STUCK, || {
        // The shape of a fetch: writable (connected), then readable (the
        // response), the first callback installing the second and removing
        // itself while it runs.
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let (mut client, server) = socket_pair();
        let token = event_loop
            .register(&mut client)
            .expect("`register` must give an open socket a token");
        let client = Rc::new(RefCell::new(client));
        let server = RefCell::new(server);
        let log = Rc::new(RefCell::new(Vec::new()));
        let (steps, sock, ev) = (Rc::clone(&log), Rc::clone(&client), event_loop.clone());
        event_loop
            .add_writer(token, move || {
                steps.borrow_mut().push("writable");
                assert!(ev.remove_writer(token));
                // The peer answers only now, after the reader below is
                // installed: an edge that came earlier would be lost (see
                // `fetch.rs`, which therefore reads once before waiting).
                server.borrow_mut().write_all(b"data").unwrap();
                let (steps, sock, ev2) = (Rc::clone(&steps), Rc::clone(&sock), ev.clone());
                ev.add_reader(token, move || {
                    steps.borrow_mut().push("readable");
                    ev2.deregister(&mut *sock.borrow_mut(), token);
                })
                .expect("`add_reader` must install a reader for a registered socket");
            })
            .expect("`add_writer` must install a writer for a registered socket");
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            *log.borrow(),
            ["writable", "readable"],
            "callbacks run: the writer, then the reader it installed while it ran"
        );
    });
}

#[test]
fn an_unregistered_token_is_refused() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let (mut client, _server) = socket_pair();
    let token = event_loop
        .register(&mut client)
        .expect("`register` must give an open socket a token");
    event_loop.deregister(&mut client, token);
    assert!(
        event_loop.add_reader(token, || {}).is_err(),
        "`add_reader` on a deregistered token must be an error"
    );
    assert!(
        !event_loop.remove_writer(token),
        "`remove_writer` on a deregistered token: nothing removed (false)"
    );
}

#[test]
fn timers_run_by_due_time_then_by_start_order() {
    within(10, RUN_FOREVER_STUCK, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let order = Rc::new(RefCell::new(Vec::new()));
        let base = Instant::now();
        for (name, ms) in [("c", 3), ("a1", 1), ("b", 2), ("a2", 1), ("now", 0)] {
            let order = Rc::clone(&order);
            event_loop.call_at(base + Duration::from_millis(ms), move || {
                order.borrow_mut().push(name)
            });
        }
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            *order.borrow(),
            ["now", "a1", "a2", "b", "c"],
            "timers in the order they ran: by due time, and two due at the same time (a1, a2) \
             in the order they were set"
        );
    });
}

#[test]
fn a_timer_fires_no_earlier_than_its_delay() {
    within(10, RUN_FOREVER_STUCK, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let fired = Rc::new(Cell::new(None));
        let at = Rc::clone(&fired);
        let start = Instant::now();
        event_loop.call_later(Duration::from_millis(20), move || {
            at.set(Some(Instant::now()))
        });
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        let fired = fired
            .get()
            .expect("a 20 ms timer must have run by the time `run_forever` returns");
        assert!(
            fired - start >= Duration::from_millis(20),
            "a 20 ms timer ran after {:?}",
            fired - start
        );
    });
}

#[test]
fn a_cancelled_timer_never_runs() {
    within(10, RUN_FOREVER_STUCK, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let ran = Rc::new(Cell::new(false));
        let flag = Rc::clone(&ran);
        let timer = event_loop.call_later(Duration::from_millis(1), move || flag.set(true));
        assert_eq!(
            event_loop.pending_timers(),
            1,
            "timers pending after one `call_later`"
        );
        timer.cancel();
        timer.cancel();
        assert_eq!(
            event_loop.pending_timers(),
            0,
            "timers pending after `cancel` (twice: the second does nothing)"
        );
        assert!(
            !event_loop.has_work(),
            "`has_work` once the only timer is cancelled must be false: {event_loop:?}"
        );
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert!(!ran.get(), "a cancelled timer's callback ran");
        // The callback, and what it captured, went with the cancel.
        assert_eq!(
            Rc::strong_count(&ran),
            1,
            "holders of the timer's flag: only the test, since `cancel` drops the callback \
             and what it captured"
        );
    });
}

#[test]
fn a_timer_ends_a_wait_on_a_socket_that_never_becomes_ready() {
    within(10, RUN_FOREVER_STUCK, || {
        // The shape of `--timeout`: the socket's reader never runs, the timer's
        // callback does, and it deregisters the socket.
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let (mut client, _server) = socket_pair();
        let token = event_loop
            .register(&mut client)
            .expect("`register` must give an open socket a token");
        let client = Rc::new(RefCell::new(client));
        let outcome = Rc::new(Cell::new(""));
        let o = Rc::clone(&outcome);
        event_loop
            .add_reader(token, move || o.set("readable"))
            .expect("`add_reader` must install a reader for a registered socket");
        let (o, sock, ev) = (Rc::clone(&outcome), Rc::clone(&client), event_loop.clone());
        event_loop.call_later(Duration::from_millis(10), move || {
            o.set("timeout");
            ev.deregister(&mut *sock.borrow_mut(), token);
        });
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            outcome.get(),
            "timeout",
            "what ended the wait on a socket that never becomes readable: the 10 ms timer"
        );
    });
}

#[test]
fn call_soon_runs_in_order_on_the_next_turn_not_inside_the_caller() {
    within(10, RUN_FOREVER_STUCK, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let order = Rc::new(RefCell::new(Vec::new()));
        let (o, ev) = (Rc::clone(&order), event_loop.clone());
        event_loop.call_soon(move || {
            o.borrow_mut().push(1);
            let o2 = Rc::clone(&o);
            ev.call_soon(move || o2.borrow_mut().push(3));
            o.borrow_mut().push(2);
        });
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        // The callback scheduled during the first turn waits for the next.
        assert_eq!(
            *order.borrow(),
            [1, 2],
            "after one turn: the first callback ran whole (1, 2); the one it scheduled (3) \
             waits for the next turn: a turn runs only the callbacks queued when it began \
             running them, so that callbacks that keep scheduling more cannot starve the \
             sockets; nor is it run inside `call_soon`"
        );
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            *order.borrow(),
            [1, 2, 3],
            "after the next turn: the scheduled callback ran too"
        );
    });
}

#[test]
fn stop_ends_run_forever_after_the_current_turn_and_it_can_run_again() {
    within(10, RUN_FOREVER_STUCK, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let count = Rc::new(Cell::new(0));
        for _ in 0..3 {
            let (c, stopper) = (Rc::clone(&count), event_loop.clone());
            event_loop.call_soon(move || {
                c.set(c.get() + 1);
                stopper.stop();
            });
        }
        // One turn runs all three (they were all scheduled before it began),
        // then the loop sees the flag.
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            count.get(),
            3,
            "callbacks run before `stop` took effect: all three of the turn, since `stop` \
             ends the loop after the current turn"
        );
        let c = Rc::clone(&count);
        event_loop.call_soon(move || c.set(c.get() + 1));
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            count.get(),
            4,
            "callbacks run after a second `run_forever`: a stopped loop runs again"
        );
    });
}

#[test]
fn run_forever_inside_a_callback_is_refused_and_close_drops_everything() {
    within(10, RUN_FOREVER_STUCK, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let nested = Rc::new(Cell::new(None));
        let (n, ev) = (Rc::clone(&nested), event_loop.clone());
        event_loop.call_soon(move || n.set(Some(ev.run_forever().is_err())));
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            nested.get(),
            Some(true),
            "`run_forever` called inside a callback: Some(true) if it returned an error"
        );

        let held = Rc::new(());
        let mine = Rc::clone(&held);
        event_loop.call_later(Duration::from_secs(3600), move || drop(mine));
        event_loop.close();
        assert_eq!(
            Rc::strong_count(&held),
            1,
            "holders of what a pending timer captured, after `close`: only the test, since \
             `close` drops every callback"
        );
        assert!(
            event_loop.run_forever().is_err(),
            "`run_forever` on a closed loop must be an error"
        );
    });
}

/// A `Handle` from `call_soon` can be cancelled before its turn: it never
/// runs, says it was cancelled, and its callback (with what it captured) is
/// dropped at the cancel, not when the loop gets to it.
#[test]
fn a_cancelled_call_soon_never_runs_and_its_callback_is_dropped_at_once() {
    within(10, RUN_FOREVER_STUCK, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let ran = Rc::new(Cell::new(false));
        let flag = Rc::clone(&ran);
        let handle = event_loop.call_soon(move || flag.set(true));
        assert!(
            !handle.cancelled(),
            "`cancelled()` of a handle nobody cancelled"
        );
        handle.cancel();
        assert!(handle.cancelled(), "`cancelled()` right after `cancel()`");
        assert_eq!(
            Rc::strong_count(&ran),
            1,
            "references to what the callback captured after `cancel()`: only the test's \
             (`Handle::cancel` must drop the callback at once)"
        );
        handle.cancel();
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert!(!ran.get(), "a cancelled handle's callback ran");
    });
}

/// `close` drops whatever the loop still holds — callbacks waiting for
/// their turn and the readers of registered sockets — and a closed loop
/// takes no new work: `call_soon` gives a handle cancelled at once,
/// `register` and `run_forever` refuse.
#[test]
fn close_drops_the_ready_callbacks_and_the_readers_and_refuses_new_work() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let held = Rc::new(());
    let (in_ready, in_reader) = (Rc::clone(&held), Rc::clone(&held));
    event_loop.call_soon(move || drop(in_ready));
    let (mut client, _server) = socket_pair();
    let token = event_loop
        .register(&mut client)
        .expect("`register` must give an open socket a token");
    event_loop
        .add_reader(token, move || {
            let _ = &in_reader;
        })
        .expect("`add_reader` must install a reader for a registered socket");
    event_loop.close();
    assert!(event_loop.is_closed(), "`is_closed()` after `close()`");
    assert_eq!(
        Rc::strong_count(&held),
        1,
        "references to what the callbacks captured after `close()`: only the test's \
         (`close` must drop the ready queue and the sockets' readers and writers)"
    );
    let after = Rc::clone(&held);
    let handle = event_loop.call_soon(move || drop(after));
    assert!(
        handle.cancelled(),
        "a handle `call_soon` gives on a closed loop: cancelled at once"
    );
    assert_eq!(
        Rc::strong_count(&held),
        1,
        "references after a `call_soon` on a closed loop: its callback must be dropped at once"
    );
    let (mut other, _server2) = socket_pair();
    assert!(
        event_loop.register(&mut other).is_err(),
        "`register` on a closed loop must be refused"
    );
    assert!(
        event_loop.run_forever().is_err(),
        "`run_forever` on a closed loop must be refused"
    );
}

/// A `TimerHandle` says when it is due, and whether it was cancelled.
#[test]
fn a_timer_handle_says_when_it_is_due_and_whether_it_was_cancelled() {
    let clock = TestClock::new();
    let event_loop = EventLoop::with_clock(clock.clone()).expect(
        "`EventLoop::with_clock` must return a loop (an Err here is the OS refusing a selector)",
    );
    let start = event_loop.time();
    let at = start + Duration::from_secs(5);
    let timer = event_loop.call_at(at, || {});
    assert_eq!(
        timer.when(),
        at,
        "`when()` of a timer set with `call_at(at, …)`"
    );
    let later = event_loop.call_later(Duration::from_secs(2), || {});
    assert_eq!(
        later.when(),
        start + Duration::from_secs(2),
        "`when()` of a timer set with `call_later(2 s, …)`: the loop's time (`time()`, from \
         its clock) plus 2 s, not the system's: a loop on a test clock keeps its timers in \
         its own time"
    );
    assert!(
        !timer.cancelled(),
        "`cancelled()` of a timer nobody cancelled"
    );
    timer.cancel();
    assert!(timer.cancelled(), "`cancelled()` right after `cancel()`");
    assert!(!later.cancelled(), "cancelling one timer cancelled another");
    later.cancel();
}

/// `close` called from inside a callback, while the loop runs, does
/// nothing: the loop is not closed, and the callbacks already scheduled
/// still run.
#[test]
fn close_inside_a_running_loop_does_nothing() {
    within(10, RUN_FOREVER_STUCK, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let closed_inside = Rc::new(Cell::new(None));
        let ran_after = Rc::new(Cell::new(false));
        let (inside, after, ev) = (
            Rc::clone(&closed_inside),
            Rc::clone(&ran_after),
            event_loop.clone(),
        );
        event_loop.call_soon(move || {
            ev.close();
            inside.set(Some(ev.is_closed()));
            ev.call_soon(move || after.set(true));
        });
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        assert_eq!(
            closed_inside.get(),
            Some(false),
            "`is_closed()` right after a callback called `close()` on its running loop: \
             Some(false), since `close` does nothing while the loop runs"
        );
        assert!(
            ran_after.get(),
            "a callback scheduled after that `close()` must still run: the loop was not closed"
        );
        assert!(
            !event_loop.is_closed(),
            "`is_closed()` after `run_forever` returned: false, the `close` inside it did nothing"
        );
    });
}

/// Deregistering a token twice is harmless: the second call finds the slot
/// free and does nothing, so the slot is reused once, not handed to two
/// sockets.
#[test]
fn deregistering_twice_frees_the_slot_once() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let (mut first, _server1) = socket_pair();
    let token = event_loop
        .register(&mut first)
        .expect("`register` must give an open socket a token");
    event_loop.deregister(&mut first, token);
    event_loop.deregister(&mut first, token);
    assert_eq!(
        event_loop.registered(),
        0,
        "sockets registered after deregistering the only one twice"
    );
    let (mut second, _server2) = socket_pair();
    let (mut third, _server3) = socket_pair();
    let a = event_loop
        .register(&mut second)
        .expect("`register` must give an open socket a token");
    let b = event_loop
        .register(&mut third)
        .expect("`register` must give an open socket a token");
    assert_ne!(
        a, b,
        "tokens of two sockets registered after a double `deregister`: they must differ \
         (the freed slot is reused once)"
    );
    assert_eq!(
        event_loop.registered(),
        2,
        "sockets registered after registering two more"
    );
    event_loop.deregister(&mut second, a);
    event_loop.deregister(&mut third, b);
}

/// A turn that comes early, for a callback that is ready, runs only the
/// timers already due: one set for an hour later stays pending.
#[test]
fn a_turn_before_a_timer_is_due_does_not_run_it() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let ran = Rc::new(Cell::new(false));
    let flag = Rc::clone(&ran);
    event_loop.call_later(Duration::from_secs(3600), move || flag.set(true));
    let soon = Rc::new(Cell::new(false));
    let s = Rc::clone(&soon);
    event_loop.call_soon(move || s.set(true));
    event_loop
        .run_once()
        .expect("`run_once` must return Ok on an open loop: one turn, whatever its callbacks do");
    assert!(
        soon.get(),
        "a `call_soon` callback after one turn: it ran (the turn did not wait for the timer)"
    );
    assert!(
        !ran.get(),
        "a timer due in an hour ran on a turn that came at once: a turn moves only the \
         timers whose deadline has passed to the ready queue"
    );
    assert_eq!(
        event_loop.pending_timers(),
        1,
        "timers pending after that turn: the hour-long one is still set"
    );
}
