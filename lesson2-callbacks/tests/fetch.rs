//! Tests of `src/fetch.rs`, through its public API.

use lesson2_callbacks::event_loop::EventLoop;
use lesson2_callbacks::fetch::*;
use shared::fixtures::bound::within;
use shared::fixtures::server::refused_addr;
use shared::http::{Limits, Response};
use shared::net::Resolver;
use shared::trace::FetchSpan;
use shared::{FailKind, FetchError};
use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::net::{TcpListener, TcpStream as StdStream};
use std::rc::Rc;
use std::thread;
use std::time::Duration;
use url::Url;

/// A server on `127.0.0.1:0` that runs `serve` on its first connection.
fn server(serve: impl FnOnce(StdStream) + Send + 'static) -> (SocketAddr, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = thread::spawn(move || {
        // Waits 30 s at most: a fetch that never connects then fails the
        // test (the test joins this thread) instead of hanging it.
        listener.set_nonblocking(true).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let conn = loop {
            match listener.accept() {
                Ok((conn, _)) => break conn,
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "the test's server waited 30 s for the fetch to connect: \
                         `connect_any` and `connect` must start a connect to each \
                         address in turn"
                    );
                    thread::sleep(Duration::from_millis(5));
                }
                Err(err) => panic!("the test's server cannot accept: {err}"),
            }
        };
        conn.set_nonblocking(false).unwrap();
        serve(conn);
    });
    (addr, handle)
}

/// Read a request up to its blank line.
fn read_request(conn: &mut StdStream) -> Vec<u8> {
    let mut request = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    while !request.ends_with(b"\r\n\r\n") {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0, "client closed before the end of its request");
        request.extend_from_slice(&buf[..n]);
    }
    request
}

/// A fetcher for `url` whose `done` stores what it was told.
fn fetcher(
    event_loop: &EventLoop,
    url: &str,
    timeout: Duration,
) -> (Rc<RefCell<Fetcher>>, Rc<RefCell<Option<Fetched>>>) {
    fetcher_counted_in(event_loop, url, timeout, Rc::new(InFlight::default()))
}

/// [`fetcher`], counted in flight in `in_flight`.
fn fetcher_counted_in(
    event_loop: &EventLoop,
    url: &str,
    timeout: Duration,
    in_flight: Rc<InFlight>,
) -> (Rc<RefCell<Fetcher>>, Rc<RefCell<Option<Fetched>>>) {
    let outcome = Rc::new(RefCell::new(None));
    let store = Rc::clone(&outcome);
    let fetcher = Fetcher::new(
        event_loop,
        Url::parse(url).unwrap(),
        Rc::new(Resolver::new()),
        in_flight,
        timeout,
        Limits::default(),
        "crawler-course",
        move |fetched| *store.borrow_mut() = Some(fetched),
    );
    (fetcher, outcome)
}

/// Run one fetch to its end; the loop must then be empty: socket
/// unregistered, timer cancelled, fetcher freed. The fetch runs on a thread
/// of its own, so that one that never ends fails the test, `timeout` plus
/// 20 s later, instead of hanging it.
fn fetch_one(url: &str, timeout: Duration) -> Fetched {
    let owned = url.to_owned();
    within(
        timeout.as_secs() + 20,
        "the fetch did not end, or the loop did not empty after it: look for a step that \
         retries an error forever (one taken for `WouldBlock` or `Interrupted`), a socket left \
         waiting with no deadline armed (`timed_out` through `call_later`), or a socket left \
         registered with the loop (every socket a fetch opens must be closed, which \
         deregisters it, before the fetch moves on: a refused address's before the next is \
         tried)",
        move || fetch_one_here(&owned, timeout),
    )
}

/// [`fetch_one`]'s fetch, on the calling thread.
fn fetch_one_here(url: &str, timeout: Duration) -> Fetched {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let in_flight = Rc::new(InFlight::default());
    let (fetcher, outcome) = fetcher_counted_in(&event_loop, url, timeout, in_flight.clone());
    fetcher.borrow_mut().fetch(FetchSpan::off());
    // From here on only the loop's callbacks keep the fetcher alive.
    let weak = Rc::downgrade(&fetcher);
    drop(fetcher);
    // No `stop`: the loop ends when nothing is left to wait for, or when
    // `done` has been told and only a timer is left (a deadline `finish`
    // forgot), so that the test can say which.
    while event_loop.has_work() && outcome.borrow().is_none() {
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
    }
    let ended = outcome
        .borrow()
        .as_ref()
        .map(|fetched| format!("{fetched:?}"))
        .unwrap_or_default();
    assert_eq!(
        event_loop.pending_timers(),
        0,
        "timers still set after the fetch ended ({ended}): `finish` must cancel the fetch's \
         deadline, however the fetch ends"
    );
    assert_eq!(
        event_loop.registered(),
        0,
        "sockets still registered after the fetch ended ({ended}): every socket the fetch \
         opened must be closed (`close` deregisters it), however the fetch ends"
    );
    assert_eq!(
        in_flight.now(),
        0,
        "the fetch still counts in flight after it ended ({ended}): `finish` must give back \
         its place, however the fetch ends, by dropping the guard `InFlight::start` gave it; \
         `InFlightGuard`'s `Drop` takes the fetch off the count"
    );
    assert!(!event_loop.has_work(), "{event_loop:?}");
    assert!(weak.upgrade().is_none(), "the fetcher outlived its fetch");
    outcome
        .take()
        .expect("`fetch` must call its `done` callback once the fetch ends")
}

fn response(fetched: Fetched) -> Response {
    match fetched {
        Fetched::Done(Ok(response)) => response,
        other => panic!("expected a response, got {other:?}"),
    }
}

fn error(fetched: Fetched) -> FetchError {
    match fetched {
        Fetched::Done(Err(err)) => err,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn a_response_in_many_small_pieces_is_read_across_many_events() {
    let (addr, server) = server(|mut conn| {
        read_request(&mut conn);
        for piece in [
            "HTTP/1.0 200 OK\r\n",
            "Content-Type: text/html\r\n",
            "\r\n",
            "he",
            "llo",
        ] {
            conn.write_all(piece.as_bytes()).unwrap();
            conn.flush().unwrap();
            thread::sleep(Duration::from_millis(5));
        }
    });
    let response = response(fetch_one(
        &format!("http://{addr}/"),
        Duration::from_secs(10),
    ));
    server.join().unwrap();
    assert_eq!(
        response.status, 200,
        "the status of `HTTP/1.0 200 OK`, sent in pieces"
    );
    assert_eq!(
        response.body, b"hello",
        "the body, `he` and `llo` read in separate events and put together"
    );
}

#[test]
fn a_request_bigger_than_the_socket_buffers_is_written_in_parts() {
    // 16 MiB cannot fit in loopback's send and receive buffers together,
    // so some write must answer `WouldBlock` and `send_request` must
    // carry on when the server has read some.
    let path = "a".repeat(16 << 20);
    let (addr, server) = server(|mut conn| {
        thread::sleep(Duration::from_millis(50));
        let request = read_request(&mut conn);
        conn.write_all(b"HTTP/1.0 200 OK\r\n\r\n").unwrap();
        assert!(
            request.len() > 16 << 20,
            "the server received {} bytes of a request over 16 MiB",
            request.len()
        );
    });
    let url = format!("http://{addr}/{path}");
    let response = response(fetch_one(&url, Duration::from_secs(30)));
    server.join().unwrap();
    assert_eq!(
        response.status, 200,
        "the status answered once the whole 16 MiB request was written"
    );
}

/// Fetches from a server that sends `answer` as soon as it accepts, before
/// it reads the request, then sends nothing more and keeps the connection
/// open (no close announces itself). The loop first polls only once the
/// answer is in the client's socket. What the fetch gave (`done` was
/// called: the loop ended, so the fetch must have), and the server's
/// thread, to join last (a fetch that gave up at its deadline closed the
/// socket under the server, whose own reads then fail).
fn fetch_an_answer_already_sent(answer: Vec<u8>) -> (Fetched, thread::JoinHandle<()>) {
    let (answered, answer_sent) = std::sync::mpsc::channel();
    let (addr, server) = server(move |mut conn| {
        conn.write_all(&answer).unwrap();
        let _ = answered.send(());
        read_request(&mut conn);
        let mut rest = Vec::new();
        conn.read_to_end(&mut rest).unwrap();
    });
    let url = format!("http://{addr}/");
    let outcome = within(30, "the fetch did not end at its 2 s deadline", move || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let (fetcher, outcome) = fetcher(&event_loop, &url, Duration::from_secs(2));
        // Connects (and registers the socket), without polling yet.
        fetcher.borrow_mut().fetch(FetchSpan::off());
        drop(fetcher);
        answer_sent
            .recv_timeout(Duration::from_secs(10))
            .expect("the test's server accepted and answered");
        // On loopback the answer is in our socket when `write_all`
        // returns; a moment more in case the machine is busy.
        thread::sleep(Duration::from_millis(50));
        event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
        outcome.take()
    });
    let fetched = outcome.expect("`done` was called: the loop ended, so the fetch must have");
    (fetched, server)
}

#[test]
fn a_response_that_arrives_before_the_reader_is_installed_is_not_missed() {
    // The server answers as soon as it accepts, before it reads the
    // request, and then sends nothing more and keeps the connection open.
    // The loop first polls only once the answer is in the client's socket,
    // so its first event says "readable and writable" at once: the reader
    // is not installed yet (the loop looks it up before calling the writer),
    // and the writer — `connected`, then `send_request` — installs it. No
    // later edge comes: nothing more arrives, and a request this small
    // never fills the socket, so its writability never changes again. The
    // fetch must read right after installing its reader, not wait for an
    // event; waiting, it meets only its deadline.
    let (fetched, server) =
        fetch_an_answer_already_sent(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec());
    match fetched {
        Fetched::Done(Ok(response)) => assert_eq!(
            response.body, b"ok",
            "the body of an answer that arrived before the reader was installed"
        ),
        Fetched::Done(Err(error)) => panic!(
            "the fetch failed with `{error}` though the whole answer was in its socket before \
             the reader was installed: edge-triggered events announce a change once, and that \
             edge was spent while no reader was there, so `send_request` must try \
             `read_response` itself right after `add_reader` (it reads until `WouldBlock`)"
        ),
        Fetched::OutOfDescriptors { .. } => panic!("out of descriptors"),
    }
    // Joined last: a fetch that gave up at its deadline closed the socket
    // under the server, whose own reads then fail.
    server.join().unwrap();
}

/// A response of 40 KiB, more than one 16 KiB read, all in the socket
/// before the loop first polls, and nothing more after it: its arrival is
/// one edge, announced once. The fetch must read until `WouldBlock`, not
/// once per event, or it waits for an event that never comes.
#[test]
fn a_response_bigger_than_one_read_already_in_the_socket_is_read_whole() {
    const BODY: usize = 40 * 1024;
    let mut answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {BODY}\r\n\r\n").into_bytes();
    answer.resize(answer.len() + BODY, b'a');
    let (fetched, server) = fetch_an_answer_already_sent(answer);
    match fetched {
        Fetched::Done(Ok(response)) => assert_eq!(
            response.body.len(),
            BODY,
            "the body's size: all 40 KiB, read across several reads"
        ),
        Fetched::Done(Err(error)) => panic!(
            "the fetch failed with `{error}` though the whole response (40 KiB, more than one \
             16 KiB read) was in its socket: an edge-triggered event announces its arrival \
             once, so `read_response` must read until `WouldBlock`, not once per event"
        ),
        Fetched::OutOfDescriptors { .. } => panic!("out of descriptors"),
    }
    // Joined last: a fetch that gave up at its deadline closed the socket
    // under the server.
    server.join().unwrap();
}

#[test]
fn a_refused_address_is_skipped_for_the_next() {
    let closed = refused_addr();
    let (addr, server) = server(|mut conn| {
        read_request(&mut conn);
        conn.write_all(b"HTTP/1.0 204 No Content\r\n\r\n").unwrap();
    });
    let url = format!("http://{addr}/");
    let fetched = within(
        30,
        "the fetch did not end: look for a `connected` that does not take the refused connect's error and `connect` to \
         the next address (this fetch has no deadline: `connect_any` is called directly)",
        move || {
            let event_loop = EventLoop::new().expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
            let (fetcher, outcome) = fetcher(&event_loop, &url, Duration::from_secs(10));
            // As if the host had resolved to two addresses, the first one dead.
            fetcher.borrow_mut().connect_any(vec![closed, addr]);
            drop(fetcher);
            // Until `done` has been told, or nothing is left to wait for.
            while event_loop.has_work() && outcome.borrow().is_none() {
                event_loop.run_once().expect("`run_once` must return Ok on an open loop: one turn, whatever its callbacks do");
            }
            if outcome.borrow().is_some() {
                assert_eq!(
                    event_loop.registered(),
                    0,
                    "a socket still registered after the fetch ended: the refused address's \
                     socket was not closed before the next address was tried (`close` \
                     deregisters it)"
                );
            }
            outcome.take()
        },
    );
    // Checked before joining the server: a fetch that never connected
    // would leave it waiting for a connection.
    let status =
        response(fetched.expect("`done` was called: the loop ended, so the fetch must have"))
            .status;
    server.join().unwrap();
    assert_eq!(
        status, 204,
        "the status from the second address, after the first refused the connection"
    );
}

#[test]
fn when_every_address_refuses_it_is_a_connect_error() {
    let closed = refused_addr();
    let err = error(fetch_one(
        &format!("http://{closed}/"),
        Duration::from_secs(10),
    ));
    assert_eq!(
        err.kind,
        FailKind::Connect,
        "every address refused: a `connect` failure ({err})"
    );
    // All a callback knows is its own step: no URL, no "while connecting".
    assert_eq!(
        err.message, "connection refused",
        "the failure's message: the error of the last connect, nothing added"
    );
}

#[test]
fn a_silent_server_times_out_and_its_socket_is_closed() {
    let (addr, server) = server(|mut conn| {
        read_request(&mut conn);
        // Never answer; the client's close shows up as end of stream.
        let mut rest = Vec::new();
        conn.read_to_end(&mut rest).unwrap();
    });
    let err = error(fetch_one(
        &format!("http://{addr}/"),
        Duration::from_millis(200),
    ));
    assert_eq!(
        err.kind,
        FailKind::Timeout,
        "a server that reads the request and never answers, with a 200 ms timeout ({err})"
    );
    // Joins only because the fetcher closed its socket.
    server.join().unwrap();
}

#[test]
fn a_connection_closed_mid_response_is_an_error_for_the_url() {
    let (addr, server) = server(|mut conn| {
        read_request(&mut conn);
        conn.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 100\r\n\r\nshort")
            .unwrap();
    });
    let err = error(fetch_one(
        &format!("http://{addr}/"),
        Duration::from_secs(10),
    ));
    server.join().unwrap();
    assert_eq!(
        err.kind,
        FailKind::Reset,
        "a connection closed 95 bytes short of Content-Length: 100, a `reset` failure \
         ({err})"
    );
}

#[test]
fn done_runs_on_the_next_turn_never_inside_fetch() {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let (fetcher, outcome) = fetcher(&event_loop, "https://127.0.0.1/", Duration::from_secs(10));
    fetcher.borrow_mut().fetch(FetchSpan::off());
    // The fetch has already failed (no TLS), but the caller of `fetch`
    // has not been called back from inside it.
    assert!(
        outcome.borrow().is_none(),
        "`done` was called inside `fetch`; it must run on a later turn of the loop"
    );
    // Checked first, so that a fetch that scheduled nothing fails here
    // instead of blocking in `run_once`'s poll forever.
    assert!(
        event_loop.has_work(),
        "the loop has nothing to do after `fetch` of an https URL: the failed fetch must          hand `done` to `call_soon` (through `finish`): {event_loop:?}"
    );
    event_loop
        .run_once()
        .expect("`run_once` must return Ok on an open loop: one turn, whatever its callbacks do");
    assert_eq!(
        error(outcome.take().unwrap()).kind,
        FailKind::Unsupported,
        "what `done` is told after one turn about an https URL: `unsupported` (no TLS)"
    );
}

#[test]
fn in_flight_counts_the_peak_not_the_total() {
    let in_flight = Rc::new(InFlight::default());
    {
        let _a = in_flight.start();
        let _b = in_flight.start();
        assert_eq!(in_flight.now(), 2, "`now` with two guards alive");
    }
    let _c = in_flight.start();
    assert_eq!(
        in_flight.now(),
        1,
        "`now` after two guards were dropped and one more started: dropping a guard \
         ends its fetch"
    );
    assert_eq!(
        in_flight.peak(),
        2,
        "`peak`: the most in flight at once (2), not the number started (3)"
    );
}

/// The fetch names its phases for `--trace` as it goes, each from the
/// callback that starts it: `resolve` and `connect` from `fetch`, `send`
/// once connected, `wait` once the request is out, then `read`, which the
/// shared parser marks when the first bytes arrive. The callbacks `bind`
/// makes enter the fetch's span, so the phases land inside its bar.
#[test]
fn a_fetch_marks_its_phases_for_the_trace_in_order() {
    use shared::trace::{Lane, Trace};
    let (addr, server) = server(|mut conn| {
        read_request(&mut conn);
        conn.write_all(b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\nhello")
            .unwrap();
    });
    let url = format!("http://{addr}/");
    let trace = Trace::capture("phases");
    let span = trace.fetch(&url, Lane::Lowest);
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let (fetcher, outcome) = fetcher(&event_loop, &url, Duration::from_secs(10));
    span.in_scope(|| fetcher.borrow_mut().fetch(span.clone()));
    drop(fetcher);
    event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
    // Checked before joining the server, as above.
    let status = response(
        outcome
            .take()
            .expect("`fetch` must call its `done` callback once the fetch ends"),
    )
    .status;
    server.join().unwrap();
    span.end(&shared::FetchStatistic {
        url: url.clone(),
        status: Some(status),
        ..Default::default()
    });
    trace
        .finish()
        .expect("a trace in memory cannot fail to write");
    let text = trace.captured().expect("a captured trace");
    let file = trace_check::TraceFile::parse(&text).expect("a valid trace");
    let fetch = file.fetches().next().expect("the fetch's slice");
    let phases: Vec<&str> = file
        .phases_of(fetch)
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        phases,
        ["resolve", "connect", "send", "wait", "read"],
        "the phases the fetch marked, in order: `fetch` marks `resolve`, `connect_any` \
         `connect`, `connected` marks `send` once connected, `send_request` marks `wait` \
         once the whole request is out, and the parser marks `read`"
    );
}

/// A server that drops the connection while the request is still being
/// written: the next write fails (the connection was reset), and the fetch
/// ends with that error, as `reset`, instead of waiting for its deadline.
#[test]
fn a_connection_reset_while_the_request_is_written_is_a_reset() {
    // 16 MiB cannot fit in loopback's buffers: the fetch is still writing
    // when the server closes without reading, which resets the connection.
    let path = "a".repeat(16 << 20);
    let (addr, server) = server(|conn| {
        thread::sleep(Duration::from_millis(100));
        drop(conn);
    });
    let err = error(fetch_one(
        &format!("http://{addr}/{path}"),
        Duration::from_secs(10),
    ));
    server.join().unwrap();
    assert_eq!(
        err.kind,
        FailKind::Reset,
        "the error kind of a fetch whose request write failed (the server reset the \
         connection): `send_request` must end the fetch with the write's error (`fail`); {err}"
    );
}

#[test]
fn a_connection_reset_while_the_response_is_awaited_is_the_reads_error() {
    let (addr, server) = server(|mut conn| {
        read_request(&mut conn);
        // A linger of zero turns the close into a reset.
        socket2::SockRef::from(&conn)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
    });
    let err = error(fetch_one(
        &format!("http://{addr}/"),
        Duration::from_secs(5),
    ));
    server.join().unwrap();
    assert_eq!(
        (err.kind, err.message.as_str()),
        (FailKind::Reset, "connection reset by peer"),
        "the error of a fetch whose server reset the connection instead of answering: \
         `read_response` must end the fetch with the read's own error \
         (`FetchError::from_io`), not wait for another event (a `timeout`) nor read on \
         (`connection closed before the response`); {err}"
    );
}

/// Set in the child process that
/// `no_descriptor_and_no_other_fetch_in_flight_is_a_connect_error` starts
/// (this test binary again, under a low `ulimit -n`).
const NO_FD_CHILD: &str = "LESSON2_FETCH_NO_FD_CHILD";

/// Every descriptor in use and no other fetch in flight: the socket cannot
/// be made and no fetch will ever free a descriptor, so the fetch ends as a
/// `connect` error, `too many open files` — not `OutOfDescriptors`, which
/// would put it back in line to wait for an end that never comes. It runs
/// in a child process under `ulimit -n 64`, because using up the
/// descriptors would fail every other test of this process meanwhile.
#[test]
fn no_descriptor_and_no_other_fetch_in_flight_is_a_connect_error() {
    if std::env::var_os(NO_FD_CHILD).is_some() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        // The loop's own descriptors first; then use up every one left.
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let (fetcher, outcome) = fetcher(&event_loop, &url, Duration::from_secs(5));
        let mut held = Vec::new();
        while let Ok(file) = std::fs::File::open("/dev/null") {
            held.push(file);
            assert!(held.len() < 1_000, "ulimit -n 64 did not limit the files");
        }
        fetcher.borrow_mut().fetch(FetchSpan::off());
        drop(fetcher);
        while event_loop.has_work() && outcome.borrow().is_none() {
            event_loop.run_once().expect(
                "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
            );
        }
        drop(held);
        let fetched = outcome
            .take()
            .expect("`fetch` must call its `done` callback once the fetch ends");
        let error = match fetched {
            Fetched::Done(Err(error)) => error,
            other => panic!(
                "no descriptor left and no other fetch in flight: the fetch must end as a \
                 `connect` error, `too many open files`, not {other:?} (with no other fetch \
                 in flight, none will ever free a descriptor: `OutOfDescriptors` would wait \
                 for ever)"
            ),
        };
        assert_eq!(
            (error.kind, error.message.as_str()),
            (FailKind::Connect, "too many open files"),
            "the error of a fetch with no descriptor left and no other fetch in flight"
        );
        return;
    }
    shared::behaviour::rerun_test_under_limit(
        "no_descriptor_and_no_other_fetch_in_flight_is_a_connect_error",
        NO_FD_CHILD,
        64,
        "a fetch with no descriptor left and no other fetch in flight, which must end as \
         a `connect` error, `too many open files`",
    );
}
