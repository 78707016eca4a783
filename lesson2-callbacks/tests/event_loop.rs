//! Tests of `src/event_loop.rs`, through its public API.

use lesson2_callbacks::event_loop::*;
use mio::Interest;
use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A connected pair of loopback sockets: mio's client end, std's server end.
fn socket_pair() -> (mio::net::TcpStream, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    client.set_nonblocking(true).unwrap();
    (mio::net::TcpStream::from_std(client), server)
}

#[test]
fn a_readable_socket_calls_its_callback_and_stop_ends_the_loop() {
    let mut ev = EventLoop::new().unwrap();
    let (mut client, mut server) = socket_pair();
    server.write_all(b"hello").unwrap();
    let calls = Rc::new(RefCell::new(0));
    let seen = Rc::clone(&calls);
    ev.register(&mut client, Interest::READABLE, move |ev| {
        *seen.borrow_mut() += 1;
        ev.stop();
    })
    .unwrap();
    ev.run().unwrap();
    assert_eq!(*calls.borrow(), 1);
    // Still registered: stopping the loop does not unregister anything.
    assert_eq!(ev.registered(), 1);
}

#[test]
fn unregister_drops_the_callback_and_ends_a_loop_with_nothing_left() {
    let mut ev = EventLoop::new().unwrap();
    let (client, mut server) = socket_pair();
    server.write_all(b"x").unwrap();
    let client = Rc::new(RefCell::new(client));
    let calls = Rc::new(RefCell::new(0));
    let (sock, seen) = (Rc::clone(&client), Rc::clone(&calls));
    let token = Rc::new(RefCell::new(None));
    let my_token = Rc::clone(&token);
    let t = ev
        .register(&mut *client.borrow_mut(), Interest::READABLE, move |ev| {
            *seen.borrow_mut() += 1;
            let token = my_token.borrow().unwrap();
            ev.unregister(&mut *sock.borrow_mut(), token).unwrap();
        })
        .unwrap();
    *token.borrow_mut() = Some(t);
    // No `stop`: the loop ends because nothing is left to wait for.
    ev.run().unwrap();
    assert_eq!(*calls.borrow(), 1);
    assert_eq!(ev.registered(), 0);
    assert!(!ev.has_work());
    // The callback, and the `Rc`s it held, are gone.
    assert_eq!(Rc::strong_count(&calls), 1);
}

#[test]
fn modify_replaces_the_running_callback() {
    let mut ev = EventLoop::new().unwrap();
    let (client, mut server) = socket_pair();
    let client = Rc::new(RefCell::new(client));
    let log = Rc::new(RefCell::new(Vec::new()));
    let token = Rc::new(RefCell::new(None));
    let (sock, steps, my_token) = (Rc::clone(&client), Rc::clone(&log), Rc::clone(&token));
    // First step: writable (connected). It switches itself to readable.
    let t = ev
        .register(&mut *client.borrow_mut(), Interest::WRITABLE, move |ev| {
            steps.borrow_mut().push("writable");
            let token = my_token.borrow().unwrap();
            let (steps2, sock2) = (Rc::clone(&steps), Rc::clone(&sock));
            ev.modify(
                &mut *sock.borrow_mut(),
                token,
                Interest::READABLE,
                move |ev| {
                    steps2.borrow_mut().push("readable");
                    ev.unregister(&mut *sock2.borrow_mut(), token).unwrap();
                },
            )
            .unwrap();
        })
        .unwrap();
    *token.borrow_mut() = Some(t);
    server.write_all(b"data").unwrap();
    ev.run().unwrap();
    assert_eq!(*log.borrow(), ["writable", "readable"]);
}

#[test]
fn timers_run_by_due_time_then_by_start_order() {
    let mut ev = EventLoop::new().unwrap();
    let order = Rc::new(RefCell::new(Vec::new()));
    let base = Instant::now();
    for (name, ms) in [("c", 3), ("a1", 1), ("b", 2), ("a2", 1), ("now", 0)] {
        let order = Rc::clone(&order);
        ev.call_at(base + Duration::from_millis(ms), move |_| {
            order.borrow_mut().push(name)
        });
    }
    ev.run().unwrap();
    assert_eq!(*order.borrow(), ["now", "a1", "a2", "b", "c"]);
}

#[test]
fn a_timer_fires_no_earlier_than_its_delay() {
    let mut ev = EventLoop::new().unwrap();
    let fired = Rc::new(RefCell::new(None));
    let at = Rc::clone(&fired);
    let start = Instant::now();
    ev.call_later(Duration::from_millis(20), move |_| {
        *at.borrow_mut() = Some(Instant::now())
    });
    ev.run().unwrap();
    let fired = fired.borrow().expect("timer ran");
    assert!(fired - start >= Duration::from_millis(20));
}

#[test]
fn a_cancelled_timer_never_runs() {
    let mut ev = EventLoop::new().unwrap();
    let ran = Rc::new(RefCell::new(false));
    let flag = Rc::clone(&ran);
    let timer = ev.call_later(Duration::from_millis(1), move |_| *flag.borrow_mut() = true);
    assert!(ev.cancel(timer));
    assert!(!ev.cancel(timer));
    assert!(!ev.has_work());
    ev.run().unwrap();
    assert!(!*ran.borrow());
}

#[test]
fn a_timer_ends_a_wait_on_a_socket_that_never_becomes_ready() {
    // The shape of `--timeout`: the socket's callback never runs, the
    // timer's does, and it unregisters the socket.
    let mut ev = EventLoop::new().unwrap();
    let (client, _server) = socket_pair();
    let client = Rc::new(RefCell::new(client));
    let outcome = Rc::new(RefCell::new(""));
    let o = Rc::clone(&outcome);
    let token = ev
        .register(&mut *client.borrow_mut(), Interest::READABLE, move |_| {
            *o.borrow_mut() = "readable"
        })
        .unwrap();
    let (o, sock) = (Rc::clone(&outcome), Rc::clone(&client));
    ev.call_later(Duration::from_millis(10), move |ev| {
        *o.borrow_mut() = "timeout";
        ev.unregister(&mut *sock.borrow_mut(), token).unwrap();
    });
    ev.run().unwrap();
    assert_eq!(*outcome.borrow(), "timeout");
}

#[test]
fn call_soon_runs_in_order_on_the_next_turn_not_inside_the_caller() {
    let mut ev = EventLoop::new().unwrap();
    let order = Rc::new(RefCell::new(Vec::new()));
    let o = Rc::clone(&order);
    ev.call_soon(move |ev| {
        o.borrow_mut().push(1);
        let o2 = Rc::clone(&o);
        ev.call_soon(move |_| o2.borrow_mut().push(3));
        o.borrow_mut().push(2);
    });
    ev.run_once().unwrap();
    // The callback scheduled during the first turn waits for the next.
    assert_eq!(*order.borrow(), [1, 2]);
    ev.run().unwrap();
    assert_eq!(*order.borrow(), [1, 2, 3]);
}

#[test]
fn stop_ends_run_after_the_current_turn_and_run_can_resume() {
    let mut ev = EventLoop::new().unwrap();
    let count = Rc::new(RefCell::new(0));
    for _ in 0..3 {
        let c = Rc::clone(&count);
        ev.call_soon(move |ev| {
            *c.borrow_mut() += 1;
            ev.stop();
        });
    }
    // One turn runs all three (they were all scheduled before it began),
    // then the loop sees the flag.
    ev.run().unwrap();
    assert_eq!(*count.borrow(), 3);
    let c = Rc::clone(&count);
    ev.call_soon(move |_| *c.borrow_mut() += 1);
    ev.run().unwrap();
    assert_eq!(*count.borrow(), 4);
}
