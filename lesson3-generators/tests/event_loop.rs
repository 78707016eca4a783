//! Tests of `src/event_loop.rs`, through its public API.

use lesson3_generators::event_loop::*;
use lesson3_generators::future::Future;
use mio::Interest;
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::rc::Rc;
use std::task::Poll as TaskPoll;
use std::time::{Duration, Instant};

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
            TaskPoll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            TaskPoll::Pending
        }
    })
}

#[test]
fn a_readable_socket_calls_its_callback_and_stop_ends_the_loop() {
    let ev = EventLoop::new().unwrap();
    let (mut client, mut server) = socket_pair();
    server.write_all(b"hello").unwrap();
    let calls = Rc::new(Cell::new(0));
    let (seen, stopper) = (Rc::clone(&calls), Rc::clone(&ev));
    ev.register(&mut client, Interest::READABLE, move || {
        seen.set(seen.get() + 1);
        stopper.stop();
    })
    .unwrap();
    ev.run().unwrap();
    assert_eq!(calls.get(), 1);
    // Still registered: stopping the loop does not unregister anything.
    assert_eq!(ev.registered(), 1);
    ev.close();
}

#[test]
fn a_readiness_callback_resolves_a_future_that_wakes_a_task() {
    // The shape of every wait in `fetch.rs`: register, await, continue.
    let ev = EventLoop::new().unwrap();
    let (client, mut server) = socket_pair();
    let got = Rc::new(RefCell::new(Vec::new()));
    let (task_ev, out) = (Rc::clone(&ev), Rc::clone(&got));
    ev.create_task(async move {
        let mut client = client;
        let readable = Future::new();
        let resolve = readable.clone();
        let token = task_ev
            .register(&mut client, Interest::READABLE, move || {
                resolve.set_result(())
            })
            .unwrap();
        out.borrow_mut().push("waiting");
        readable.await;
        out.borrow_mut().push("readable");
        task_ev.unregister(&mut client, token).unwrap();
    });
    // The task's first step runs to the `await` and stops there.
    ev.run_once().unwrap();
    assert_eq!(*got.borrow(), ["waiting"]);
    assert_eq!(ev.tasks(), 1);
    server.write_all(b"x").unwrap();
    // No `stop`: the loop ends when the task has unregistered its socket
    // and returned, leaving nothing to wait for.
    ev.run().unwrap();
    assert_eq!(*got.borrow(), ["waiting", "readable"]);
    assert_eq!(ev.tasks(), 0);
    assert!(!ev.has_work());
}

#[test]
fn a_task_that_wakes_itself_is_stepped_again_on_the_next_turn() {
    let ev = EventLoop::new().unwrap();
    let steps = Rc::new(Cell::new(0));
    let count = Rc::clone(&steps);
    let done = ev.create_task(async move {
        for _ in 0..3 {
            count.set(count.get() + 1);
            yield_now().await;
        }
    });
    // One step per turn: a self-waking task cannot hog a turn.
    ev.run_once().unwrap();
    assert_eq!(steps.get(), 1);
    assert!(!done.done());
    ev.run().unwrap();
    assert_eq!(steps.get(), 3);
    assert!(done.done());
}

#[test]
fn a_task_is_a_future_another_task_can_await() {
    let ev = EventLoop::new().unwrap();
    let order = Rc::new(RefCell::new(Vec::new()));
    let (inner_ev, o) = (Rc::clone(&ev), Rc::clone(&order));
    ev.create_task(async move {
        let o2 = Rc::clone(&o);
        let child = inner_ev.create_task(async move {
            yield_now().await;
            o2.borrow_mut().push("child returns");
        });
        o.borrow_mut().push("parent waits");
        child.await;
        o.borrow_mut().push("parent resumes");
    });
    ev.run().unwrap();
    assert_eq!(
        *order.borrow(),
        ["parent waits", "child returns", "parent resumes"]
    );
}

#[test]
fn sleep_resolves_after_its_delay_and_cancels_its_timer_when_dropped() {
    let ev = EventLoop::new().unwrap();
    let woke = Rc::new(Cell::new(None));
    let (task_ev, at) = (Rc::clone(&ev), Rc::clone(&woke));
    let start = Instant::now();
    ev.create_task(async move {
        // Dropped unawaited: its timer goes with it.
        drop(task_ev.sleep(Duration::from_secs(3600)));
        task_ev.sleep(Duration::from_millis(20)).await;
        at.set(Some(Instant::now()));
    });
    ev.run().unwrap();
    let woke = woke.get().expect("the sleep ended");
    assert!(woke - start >= Duration::from_millis(20));
    // The hour-long timer did not keep the loop running.
    assert!(!ev.has_work());
}

#[test]
fn close_drops_unfinished_tasks_and_what_they_hold() {
    let ev = EventLoop::new().unwrap();
    let held = Rc::new(());
    let (task_ev, mine) = (Rc::clone(&ev), Rc::clone(&held));
    ev.create_task(async move {
        let _mine = mine;
        // Waits for ever: nothing resolves this future.
        Future::<()>::new().await;
        drop(task_ev);
    });
    ev.run().unwrap();
    // The loop ended with nothing to wait for; the task is stuck.
    assert_eq!(ev.tasks(), 1);
    assert_eq!(Rc::strong_count(&ev), 2, "the task holds the loop");
    ev.close();
    assert_eq!(ev.tasks(), 0);
    assert_eq!(Rc::strong_count(&held), 1);
    assert_eq!(Rc::strong_count(&ev), 1);
}

#[test]
fn timers_run_by_due_time_then_by_start_order() {
    let ev = EventLoop::new().unwrap();
    let order = Rc::new(RefCell::new(Vec::new()));
    let base = Instant::now();
    for (name, ms) in [("c", 3), ("a1", 1), ("b", 2), ("a2", 1), ("now", 0)] {
        let order = Rc::clone(&order);
        ev.call_at(base + Duration::from_millis(ms), move || {
            order.borrow_mut().push(name)
        });
    }
    ev.run().unwrap();
    assert_eq!(*order.borrow(), ["now", "a1", "a2", "b", "c"]);
}

#[test]
fn a_cancelled_timer_never_runs() {
    let ev = EventLoop::new().unwrap();
    let ran = Rc::new(Cell::new(false));
    let flag = Rc::clone(&ran);
    let timer = ev.call_later(Duration::from_millis(1), move || flag.set(true));
    assert!(ev.cancel(timer));
    assert!(!ev.cancel(timer));
    assert!(!ev.has_work());
    ev.run().unwrap();
    assert!(!ran.get());
}

#[test]
fn stop_ends_run_after_the_current_turn_and_run_can_resume() {
    let ev = EventLoop::new().unwrap();
    let count = Rc::new(Cell::new(0));
    for _ in 0..3 {
        let (c, stopper) = (Rc::clone(&count), Rc::clone(&ev));
        ev.create_task(async move {
            c.set(c.get() + 1);
            stopper.stop();
        });
    }
    // One turn steps all three (they were all scheduled before it
    // began), then the loop sees the flag.
    ev.run().unwrap();
    assert_eq!(count.get(), 3);
    let c = Rc::clone(&count);
    ev.create_task(async move { c.set(c.get() + 1) });
    ev.run().unwrap();
    assert_eq!(count.get(), 4);
}
