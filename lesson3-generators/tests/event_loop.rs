//! Tests of `src/event_loop.rs` (and of `sleep.rs`, `wait_for.rs`), through
//! their public API. The tests of what a starter blanks (tasks, `sleep`,
//! `wait_for`) are bounded (see `shared::fixtures::bound`): a task never woken
//! would otherwise leave the loop waiting for ever.

use std::cell::{Cell, RefCell};
use std::future::Future as _;
use std::io::Write;
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use lesson3_generators::event_loop::*;
use lesson3_generators::sleep::sleep;
use lesson3_generators::wait_for::{wait_for, TimeoutError};
use shared::fixtures::bound::within;

/// What to look at when a task is never stepped again.
const NEVER_STEPPED: &str = "a task was never stepped again. Look at the task's waker \
    (wake_by_ref must reach EventLoop::wake_task, which calls schedule), at schedule and \
    at step";

/// What to look at when a sleep never ends.
const SLEEP_NEVER_ENDS: &str = "a sleep never woke its task. Sleep::poll must, on its \
    first poll, set a timer (call_later) whose callback resolves a future, keep both \
    (Sleep::Waiting), and poll that future with the task's context so it keeps the waker";

/// A connected pair of loopback sockets: mio's client end, std's server end.
fn socket_pair() -> (mio::net::TcpStream, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    client.set_nonblocking(true).unwrap();
    (mio::net::TcpStream::from_std(client), server)
}

/// A future that returns `Pending` once, after waking its own task: the
/// smallest coroutine that gives the loop its turn back.
fn yield_now() -> impl std::future::Future<Output = ()> {
    let mut yielded = false;
    std::future::poll_fn(move |cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
}

#[test]
fn a_reader_is_called_while_its_socket_is_readable_until_removed() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
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
    assert_eq!(calls.get(), 1, "reader calls before the loop stopped");
    assert!(
        event_loop.remove_reader(token),
        "remove_reader of an installed reader returns true"
    );
    assert!(
        !event_loop.remove_reader(token),
        "remove_reader with no reader installed returns false"
    );
    event_loop.deregister(&mut client, token);
    assert_eq!(
        event_loop.registered(),
        0,
        "sockets registered after the only one was deregistered"
    );
}

#[test]
fn a_reader_resolves_a_future_that_wakes_a_task() {
    // The shape of every wait in `socket.rs`: a future, a reader that
    // resolves it, and the coroutine awaiting it.
    within(
        10,
        NEVER_STEPPED,
        a_reader_resolves_a_future_that_wakes_a_task_unbounded,
    );
}

fn a_reader_resolves_a_future_that_wakes_a_task_unbounded() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let (mut client, mut server) = socket_pair();
    let token = event_loop
        .register(&mut client)
        .expect("`register` must give an open socket a token");
    let got = Rc::new(RefCell::new(Vec::new()));
    let (task_loop, out) = (event_loop.clone(), Rc::clone(&got));
    let task = event_loop.create_task(async move {
        let readable = task_loop.create_future();
        let resolve = readable.clone();
        task_loop
            .add_reader(token, move || {
                resolve.set_result(());
            })
            .expect("`add_reader` must install a reader for a registered socket");
        out.borrow_mut().push("waiting");
        readable.await;
        out.borrow_mut().push("readable");
    });
    // The task's first step runs to the `.await` and stops there.
    event_loop
        .run_once()
        .expect("`run_once` must return Ok on an open loop: one turn, whatever its callbacks do");
    assert_eq!(
        *got.borrow(),
        ["waiting"],
        "what the task did in its first step: ran to the `.await` and stopped"
    );
    server.write_all(b"x").unwrap();
    while !task.done() {
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
    }
    assert_eq!(
        *got.borrow(),
        ["waiting", "readable"],
        "what the task did once its socket was readable: resumed after the `.await`"
    );
    event_loop.deregister(&mut client, token);
}

#[test]
fn a_task_that_wakes_itself_is_stepped_again_on_the_next_turn() {
    within(10, NEVER_STEPPED, a_task_that_wakes_itself_unbounded);
}

fn a_task_that_wakes_itself_unbounded() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let steps = Rc::new(Cell::new(0));
    let count = Rc::clone(&steps);
    let task = event_loop.create_task(async move {
        for _ in 0..3 {
            count.set(count.get() + 1);
            yield_now().await;
        }
    });
    // One step per turn: a self-waking task cannot hog a turn.
    event_loop
        .run_once()
        .expect("`run_once` must return Ok on an open loop: one turn, whatever its callbacks do");
    assert_eq!(steps.get(), 1, "steps of a self-waking task after one turn");
    event_loop
        .run_once()
        .expect("`run_once` must return Ok on an open loop: one turn, whatever its callbacks do");
    assert_eq!(
        steps.get(),
        2,
        "steps of a self-waking task after two turns: one step per turn, the wake-up \
         during a step schedules the next for the next turn"
    );
    assert!(
        !task.done(),
        "the task finished after two of its three steps"
    );
}

#[test]
fn sleep_resolves_after_its_delay_and_cancels_its_timer_when_dropped() {
    within(10, SLEEP_NEVER_ENDS, sleep_resolves_unbounded);
}

fn sleep_resolves_unbounded() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let start = Instant::now();
    let task_loop = event_loop.clone();
    let woke = event_loop
        .run_until_complete(async move {
            // Polled once, then dropped: its timer goes with it.
            let mut long = Box::pin(sleep(Duration::from_secs(3600)));
            std::future::poll_fn(|cx| {
                let _ = long.as_mut().poll(cx);
                Poll::Ready(())
            })
            .await;
            assert_eq!(
                task_loop.pending_timers(),
                1,
                "timers after one poll of a sleep: its first poll sets one"
            );
            drop(long);
            assert_eq!(
                task_loop.pending_timers(),
                0,
                "timers after the sleep was dropped: a `Sleep` dropped before its deadline must cancel \
                 its timer (`Sleep`'s `Drop`)"
            );
            sleep(Duration::from_millis(20)).await;
            Instant::now()
        })
        .expect("`run_until_complete` must return Ok with what the coroutine returned");
    assert!(
        woke - start >= Duration::from_millis(20),
        "a sleep of 20 ms ended after {:?}",
        woke - start
    );
}

#[test]
fn wait_for_gives_up_at_its_deadline_and_keeps_a_result_that_came_first() {
    within(10, WAIT_FOR_STUCK, wait_for_gives_up_unbounded);
}

/// What to look at when a `wait_for` never ends.
const WAIT_FOR_STUCK: &str = "a wait_for never ended. WaitFor::poll must poll the \
    awaitable and then its deadline (a sleep) with the same context, so that either \
    wakes the task";

fn wait_for_gives_up_unbounded() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let (late, early) = event_loop
        .run_until_complete(async move {
            let slow = pin!(async {
                sleep(Duration::from_secs(3600)).await;
                Ok(1)
            });
            let late = wait_for(slow, Duration::from_millis(10)).await;
            let fast = pin!(async { Ok(2) });
            let early = wait_for(fast, Duration::from_millis(10)).await;
            (
                late.map_err(|err| err.is::<TimeoutError>()),
                early.map_err(|err| err.is::<TimeoutError>()),
            )
        })
        .expect("`run_until_complete` must return Ok with what the coroutine returned");
    assert_eq!(
        late,
        Err(true),
        "wait_for of a 1-hour sleep with a 10 ms deadline: Err(TimeoutError)"
    );
    assert_eq!(
        early,
        Ok(2),
        "wait_for of a coroutine ready at once with a 10 ms deadline: its result"
    );
    assert_eq!(
        event_loop.pending_timers(),
        0,
        "timers left after both wait_for ended: the deadline's sleep was dropped and \
         cancelled"
    );
}

#[test]
fn wait_for_keeps_a_result_ready_at_the_same_time_as_its_deadline() {
    within(10, WAIT_FOR_STUCK, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let got = event_loop
            .run_until_complete(async move {
                let start = Instant::now();
                // Ready from 10 ms on, but it wakes nobody: the task is woken
                // by the deadline's timer, and when it is polled again the
                // work and the deadline are both ready.
                let work = pin!(std::future::poll_fn(move |_| {
                    if start.elapsed() >= Duration::from_millis(10) {
                        Poll::Ready(anyhow::Ok(7))
                    } else {
                        Poll::Pending
                    }
                }));
                wait_for(work, Duration::from_millis(10))
                    .await
                    .map_err(|err| err.is::<TimeoutError>())
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            got,
            Ok(7),
            "wait_for whose awaitable and deadline were both ready when polled: \
             Err(true) means it gave up. Poll the awaitable first, then the timer: \
             the work that was done wins over the deadline"
        );
    });
}

#[test]
fn close_drops_unfinished_tasks_and_what_they_hold() {
    within(10, NEVER_STEPPED, close_drops_unbounded);
}

fn close_drops_unbounded() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let held = Rc::new(());
    let (task_loop, mine) = (event_loop.clone(), Rc::clone(&held));
    // The test keeps the task's handle: dropping the loop's table alone
    // would then free nothing, so only `abandon` can drop the coroutine.
    let task = event_loop.create_task(async move {
        let _mine = mine;
        // Waits for ever: nothing resolves this future.
        task_loop.create_future::<()>().await;
    });
    event_loop
        .run_once()
        .expect("`run_once` must return Ok on an open loop: one turn, whatever its callbacks do");
    assert_eq!(
        event_loop.pending_tasks(),
        1,
        "tasks in the table while the only task waits"
    );
    event_loop.close();
    assert_eq!(
        event_loop.pending_tasks(),
        0,
        "tasks in the table after close"
    );
    assert_eq!(
        Rc::strong_count(&held),
        1,
        "owners of a value the unfinished task held, after close: only the test. \
         close abandons each task (Step::abandon drops its coroutine, and with it \
         what the coroutine holds, even while a handle to the task lives on)"
    );
    drop(task);
}

#[test]
fn timers_run_by_due_time_then_by_start_order() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let order = Rc::new(RefCell::new(Vec::new()));
    let base = Instant::now();
    for (name, ms) in [("c", 3), ("a1", 1), ("b", 2), ("a2", 1), ("now", 0)] {
        let order = Rc::clone(&order);
        event_loop.call_at(base + Duration::from_millis(ms), move || {
            order.borrow_mut().push(name)
        });
    }
    let stopper = event_loop.clone();
    event_loop.call_at(base + Duration::from_millis(4), move || stopper.stop());
    event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
    assert_eq!(
        *order.borrow(),
        ["now", "a1", "a2", "b", "c"],
        "the order timers ran in: by due time, then in the order they were set"
    );
}

#[test]
fn a_cancelled_timer_never_runs() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let ran = Rc::new(Cell::new(false));
    let flag = Rc::clone(&ran);
    let timer = event_loop.call_later(Duration::from_millis(1), move || flag.set(true));
    timer.cancel();
    assert_eq!(
        event_loop.pending_timers(),
        0,
        "timers after the only one was cancelled"
    );
    let stopper = event_loop.clone();
    event_loop.call_later(Duration::from_millis(5), move || stopper.stop());
    event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
    assert!(!ran.get(), "a cancelled timer's callback ran");
}

#[test]
fn stop_ends_run_forever_after_the_current_turn_and_it_can_run_again() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
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
        "callbacks run by a turn that stop() was called in: all three queued before it"
    );
    let (c, stopper) = (Rc::clone(&count), event_loop.clone());
    event_loop.call_soon(move || {
        c.set(c.get() + 1);
        stopper.stop();
    });
    event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
    assert_eq!(
        count.get(),
        4,
        "callbacks run after run_forever was called again: the loop runs after a stop"
    );
}

/// A loop told that no other thread will wake it ends `run_forever` with an
/// error once nothing is left to wait for — no callback, timer or socket —
/// instead of sleeping in `poll` forever. Without the word, it is not
/// `stalled` while a timer is set, and the callbacks run.
#[test]
fn a_loop_with_nothing_left_to_wait_for_ends_with_an_error_when_asked() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let ran = Rc::new(Cell::new(0));
    let counter = Rc::clone(&ran);
    event_loop.call_later(Duration::from_millis(1), move || {
        counter.set(counter.get() + 1)
    });
    assert!(
        !event_loop.stalled(),
        "a loop with a timer set is not stalled: the timer will run"
    );
    event_loop.error_on_stall();
    let result = event_loop.run_forever();
    assert_eq!(
        ran.get(),
        1,
        "the timer ran before the loop had nothing left"
    );
    let err = result.expect_err(
        "after its only timer ran, the loop has nothing left to wait for: `run_forever` must \
         end with an error, not sleep in `poll` forever",
    );
    assert!(
        err.to_string().contains("the event loop has stalled"),
        "the error says the loop stalled: {err}"
    );
    assert!(
        event_loop.stalled(),
        "nothing ready, no timer, no socket: stalled"
    );
}
