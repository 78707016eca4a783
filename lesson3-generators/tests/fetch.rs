//! One fetch, two ways: the `async fn` of `fetch.rs` and the hand-written
//! state machine of `fetch_by_hand.rs` run through the same cases against
//! real servers on `127.0.0.1:0`, and must give the same results — the same
//! responses, and errors with the same kind and the same whole chain of
//! context (`fetching URL: reading response: ...`).
//!
//! Each case is a function of [`Which`], run once per implementation as
//! `async_fn::CASE` and `by_hand::CASE` (see `both!` at the end), so that
//! `cargo test --test fetch async_fn::` tests the `async fn` alone. Each is
//! bounded (see `shared::fixtures::bound`): a fetch that waits on a future
//! nobody resolves would otherwise leave the loop waiting for ever.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use lesson3_generators::event_loop::EventLoop;
use lesson3_generators::fetch::{Fetched, Fetcher, InFlight};
use lesson3_generators::fetch_by_hand::fetch_by_hand;
use lesson3_generators::sleep::sleep;
use shared::fixtures::bound::within;
use shared::fixtures::server::{refused_addr, Route, Site, TestServer};
use shared::http::{Limits, Response, ResponseParser};
use shared::net::Resolver;
use shared::{FailKind, FetchError};
use url::Url;

/// Which implementation of the fetch to run.
#[derive(Debug, Clone, Copy)]
enum Which {
    AsyncFn,
    ByHand,
}

impl Which {
    /// What to look at when this fetch never ends.
    fn stuck(self) -> &'static str {
        match self {
            Which::AsyncFn => {
                "the async fn fetch never ended. Each socket operation must try first and \
                 await Socket::ready only after WouldBlock, and fetch must race get against \
                 the deadline with wait_for, whose sleep wakes the task when time is up"
            }
            Which::ByHand => {
                "the fetch by hand never ended. Each state that returns Pending must first \
                 have polled the future it waits on (the socket's ready future) with cx, \
                 and FetchByHand::poll must poll the deadline (a Sleep) whenever step is \
                 Pending"
            }
        }
    }
}

/// Run one fetch of `url` in a task on a fresh loop, to its end. Afterwards
/// the loop must hold nothing (socket unregistered, deadline cancelled) and
/// the fetch must no longer count as in flight.
fn fetch(which: Which, url: &str, timeout: Duration, limits: Limits) -> Fetched {
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let in_flight = Rc::new(InFlight::default());
    let fetcher = Fetcher::new(
        Url::parse(url).unwrap(),
        Rc::new(Resolver::new()),
        Rc::clone(&in_flight),
        timeout,
        limits,
        Rc::from("crawler-course"),
    );
    let outcome = Rc::new(RefCell::new(None));
    let out = Rc::clone(&outcome);
    event_loop
        .run_until_complete(async move {
            let fetched = match which {
                Which::AsyncFn => fetcher.fetch().await,
                Which::ByHand => fetch_by_hand(&fetcher).await,
            };
            *out.borrow_mut() = Some(fetched);
        })
        .expect("`run_until_complete` must return Ok with what the coroutine returned");
    assert_eq!(
        event_loop.registered(),
        0,
        "{which:?}: sockets still registered after the fetch ended (a socket is left: \
         it must be dropped, which deregisters it, however the fetch ends)"
    );
    assert_eq!(
        event_loop.pending_timers(),
        0,
        "{which:?}: timers still set after the fetch ended (the deadline's sleep must \
         be dropped, which cancels its timer)"
    );
    assert_eq!(
        in_flight.now(),
        0,
        "{which:?}: fetches counted in flight after the fetch ended (the guard \
         InFlight::start returned must be dropped when the fetch ends, and \
         `InFlightGuard`'s `Drop` take the fetch off the count)"
    );
    outcome
        .take()
        .expect("the fetch's task must have run to its end by the time the loop stops")
}

fn response(which: Which, fetched: Fetched) -> Response {
    match fetched {
        Fetched::Done(Ok(response)) => response,
        Fetched::Done(Err(err)) if err.kind == FailKind::Timeout => panic!(
            "{which:?}: expected a response, got a timeout ({}): the server answered, \
             but the fetch was left waiting until its deadline. {}",
            err.message,
            which.stuck()
        ),
        other => panic!("{which:?}: expected a response, got {other:?}"),
    }
}

fn error(which: Which, fetched: Fetched) -> FetchError {
    match fetched {
        Fetched::Done(Err(err)) => err,
        other => panic!("{which:?}: expected an error, got {other:?}"),
    }
}

const TEN_SECS: Duration = Duration::from_secs(10);

fn a_page_from_the_fixture_server(which: Which) {
    let server = TestServer::start(Site::new().page("/", "<a href=\"/a\">a</a>"));
    let r = response(
        which,
        fetch(which, &server.url("/"), TEN_SECS, Limits::default()),
    );
    assert_eq!(r.status, 200, "{which:?}: status of the page");
    assert!(
        String::from_utf8_lossy(&r.body).contains("href=\"/a\""),
        "{which:?}: the body does not hold the page's link"
    );
    assert_eq!(
        server.request_count("/"),
        1,
        "{which:?}: requests the server received for / : one fetch, one request"
    );
}

fn a_body_of_many_chunks_is_read_across_many_waits(which: Which) {
    let body = vec![b'x'; 3 << 20];
    let server = TestServer::start(Site::new().route(
        "/big",
        Route::body("application/octet-stream", body.clone()),
    ));
    let r = response(
        which,
        fetch(which, &server.url("/big"), TEN_SECS, Limits::default()),
    );
    assert_eq!(
        r.body.len(),
        body.len(),
        "{which:?}: bytes of a 3 MiB body read: all of them"
    );
}

fn a_request_bigger_than_the_socket_buffers_is_written_in_parts(which: Which) {
    // 16 MiB do not fit in loopback's buffers, so a write must answer
    // `WouldBlock` and the fetch must wait for room and carry on.
    {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            thread::sleep(Duration::from_millis(50));
            let mut request = Vec::new();
            let mut buf = [0u8; 64 * 1024];
            while !request.ends_with(b"\r\n\r\n") {
                let n = conn.read(&mut buf).unwrap();
                assert!(n > 0, "client closed before the end of its request");
                request.extend_from_slice(&buf[..n]);
            }
            conn.write_all(b"HTTP/1.0 204 No Content\r\n\r\n").unwrap();
            request.len()
        });
        let url = format!("http://{addr}/{}", "a".repeat(16 << 20));
        let r = response(
            which,
            fetch(which, &url, Duration::from_secs(30), Limits::default()),
        );
        assert_eq!(
            r.status, 204,
            "{which:?}: status of the answer to a 16 MiB request"
        );
        let received = server.join().unwrap();
        assert!(
            received > 16 << 20,
            "{which:?}: the server received {received} bytes of a request over 16 MiB"
        );
    }
}

fn a_refused_connect_tells_the_whole_story(which: Which) {
    let addr = refused_addr();
    let url = format!("http://{addr}/");
    let err = error(which, fetch(which, &url, TEN_SECS, Limits::default()));
    assert_eq!(
        err.kind,
        FailKind::Connect,
        "{which:?}: kind of a refused connect's error (the report's fail_connect)"
    );
    // Lesson 2 could only say "connection refused".
    assert_eq!(
        err.message,
        format!("fetching {url}: connecting to {addr}: connection refused"),
        "{which:?}: the error's whole chain, outermost first: `fetching URL` (outcome), \
         `connecting to ADDR` (connect_any), the cause in the report's wording"
    );
}

/// A server that takes one connection and resets it (RST, not FIN): after
/// reading the whole request when `after_request`, else after its first
/// bytes (the client connected and writing).
fn resetting_server(after_request: bool) -> (std::net::SocketAddr, thread::JoinHandle<()>) {
    use socket2::SockRef;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        while request.is_empty() || (after_request && !request.ends_with(b"\r\n\r\n")) {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => request.extend_from_slice(&buf[..n]),
            }
        }
        SockRef::from(&conn)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        drop(conn);
    });
    (addr, server)
}

fn a_reset_while_the_request_is_written_ends_the_fetch_with_it(which: Which) {
    // The server resets once the request starts arriving; a 16 MiB request
    // cannot all be in the socket's buffers by then, so a write meets the
    // reset.
    let (addr, server) = resetting_server(false);
    let url = format!("http://{addr}/{}", "a".repeat(16 << 20));
    let err = error(which, fetch(which, &url, TEN_SECS, Limits::default()));
    server.join().unwrap();
    assert_eq!(
        err.kind,
        FailKind::Reset,
        "{which:?}: kind of a fetch whose request met a reset (the report's fail_reset), \
         not a timeout: a write's error other than WouldBlock (wait) or Interrupted (try \
         again) ends the fetch at once; got {err:?}"
    );
    // The URL is 16 MiB long: compare what follows it.
    let after_url = err
        .message
        .strip_prefix(&format!("fetching {url}"))
        .unwrap_or("(the message does not start with `fetching URL`)");
    assert!(
        after_url.starts_with(": sending request: "),
        "{which:?}: the error's chain of a reset while sending: `fetching URL: sending \
         request: ` then the write's error; after the URL, got {:?}",
        &after_url[..after_url.len().min(200)]
    );
}

fn a_reset_while_waiting_for_the_response_ends_the_fetch_with_it(which: Which) {
    let (addr, server) = resetting_server(true);
    let url = format!("http://{addr}/");
    let err = error(which, fetch(which, &url, TEN_SECS, Limits::default()));
    server.join().unwrap();
    assert_eq!(
        err.kind,
        FailKind::Reset,
        "{which:?}: kind of a fetch whose response was a reset (the report's fail_reset), \
         not a timeout: a read's error other than WouldBlock (wait) or Interrupted (try \
         again) ends the fetch at once; got {err:?}"
    );
    assert_eq!(
        err.message,
        format!("fetching {url}: reading response: connection reset by peer"),
        "{which:?}: the error's whole chain of a reset while reading"
    );
}

fn a_connection_closed_mid_response_is_a_reset_with_its_context(which: Which) {
    let raw = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b";
    let server = TestServer::start(Site::new().route("/short", Route::raw(raw)));
    // What the parser says about these bytes, whatever its wording: the
    // chain must wrap exactly that.
    let mut parser = ResponseParser::new();
    assert!(parser.feed(raw.as_bytes()).unwrap().is_none());
    let cause = parser.finish().unwrap_err();
    let url = server.url("/short");
    let err = error(which, fetch(which, &url, TEN_SECS, Limits::default()));
    assert_eq!(
        err.kind,
        FailKind::Reset,
        "{which:?}: kind of a response cut short (the report's fail_reset)"
    );
    assert_eq!(
        err.message,
        format!("fetching {url}: reading response: {cause}"),
        "{which:?}: the error's whole chain: `fetching URL`, `reading response` (get's \
         context around read_all), then the parser's own message"
    );
}

fn garbage_is_a_protocol_error_and_too_much_is_too_large(which: Which) {
    let server = TestServer::start(
        Site::new()
            .route("/garbage", Route::raw("SPDY/9 banana\r\n\r\n"))
            .route("/big", Route::body("text/plain", vec![b'x'; 4097])),
    );
    let limits = Limits {
        max_body_bytes: 4096,
        ..Limits::default()
    };
    let err = error(
        which,
        fetch(which, &server.url("/garbage"), TEN_SECS, limits),
    );
    assert_eq!(
        err.kind,
        FailKind::Protocol,
        "{which:?}: kind of a garbage status line's error (the report's fail_protocol)"
    );
    let start = format!("fetching {}: reading response: ", server.url("/garbage"));
    assert!(
        err.message.starts_with(&start),
        "{which:?}: the error {:?} does not start with {start:?}",
        err.message
    );
    let err = error(which, fetch(which, &server.url("/big"), TEN_SECS, limits));
    assert_eq!(
        err.kind,
        FailKind::TooLarge,
        "{which:?}: kind of a body over the limit's error (the report's fail_too_large)"
    );
}

fn a_stalled_server_loses_the_race_against_the_deadline(which: Which) {
    let server = TestServer::start(Site::new().route("/stuck", Route::stall()));
    let url = server.url("/stuck");
    let err = error(
        which,
        fetch(which, &url, Duration::from_millis(200), Limits::default()),
    );
    assert_eq!(
        err.kind,
        FailKind::Timeout,
        "{which:?}: kind of a fetch that lost to its deadline (the report's fail_timeout)"
    );
    assert_eq!(
        err.message,
        format!("fetching {url}: timed out after 200ms"),
        "{which:?}: the error of a fetch that lost to its 200 ms deadline: timed_out's \
         wording, with outcome's `fetching URL`"
    );
}

fn https_is_refused_before_any_socket(which: Which) {
    let err = error(
        which,
        fetch(which, "https://127.0.0.1/", TEN_SECS, Limits::default()),
    );
    assert_eq!(
        err.kind,
        FailKind::Unsupported,
        "{which:?}: kind of an https URL's error (the report's fail_unsupported)"
    );
    assert_eq!(
        err.message, "fetching https://127.0.0.1/: https not supported",
        "{which:?}: the resolver's refusal, with outcome's `fetching URL`"
    );
}

fn a_fetch_waiting_for_its_response_counts_as_in_flight(which: Which) {
    // A server that holds the response for a while after reading the
    // request; a second task looks at the count meanwhile.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicBool::new(false));
    let server_seen = Arc::clone(&seen);
    let server = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        while !request.ends_with(b"\r\n\r\n") {
            let n = conn.read(&mut buf).unwrap();
            assert!(n > 0, "client closed before the end of its request");
            request.extend_from_slice(&buf[..n]);
        }
        server_seen.store(true, Ordering::SeqCst);
        thread::sleep(Duration::from_millis(200));
        conn.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .unwrap();
    });
    let event_loop = EventLoop::new()
        .expect("`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)");
    let in_flight = Rc::new(InFlight::default());
    let fetcher = Fetcher::new(
        Url::parse(&url).unwrap(),
        Rc::new(Resolver::new()),
        Rc::clone(&in_flight),
        TEN_SECS,
        Limits::default(),
        Rc::from("crawler-course"),
    );
    let (task_loop, counted) = (event_loop.clone(), Rc::clone(&in_flight));
    let (during, status) = event_loop
        .run_until_complete(async move {
            let status = Rc::new(RefCell::new(None));
            let out = Rc::clone(&status);
            let fetching = task_loop.create_task(async move {
                let fetched = match which {
                    Which::AsyncFn => fetcher.fetch().await,
                    Which::ByHand => fetch_by_hand(&fetcher).await,
                };
                if let Fetched::Done(Ok(response)) = fetched {
                    *out.borrow_mut() = Some(response.status);
                }
            });
            while !seen.load(Ordering::SeqCst) {
                sleep(Duration::from_millis(5)).await;
            }
            let during = counted.now();
            fetching.await;
            let status = *status.borrow();
            (during, status)
        })
        .expect("`run_until_complete` must return Ok with what the coroutine returned");
    server.join().unwrap();
    assert_eq!(
        during, 1,
        "{which:?}: fetches counted in flight while the fetch waited for its response: \
         the guard InFlight::start returns must live until the fetch ends (bound to a \
         named local such as `_counted`, or carried from state to state; `let _ = ...` \
         drops it at once)"
    );
    assert_eq!(status, Some(200), "{which:?}: status of the held response");
    assert_eq!(
        in_flight.now(),
        0,
        "{which:?}: fetches counted in flight after the fetch ended"
    );
    assert_eq!(
        in_flight.peak(),
        1,
        "{which:?}: the most fetches ever in flight at once: the one"
    );
}

#[test]
fn a_fetch_coroutine_holds_no_buffer() {
    // The whole frame of a fetch, every sub-coroutine nested inside, is one
    // value whose size the compiler knows. It must stay small: a read buffer
    // that lived across an `.await` (16 KiB in `read_chunk`) would show here.
    let fetcher = Fetcher::new(
        Url::parse("http://127.0.0.1/").unwrap(),
        Rc::new(Resolver::new()),
        Rc::new(InFlight::default()),
        TEN_SECS,
        Limits::default(),
        Rc::from("crawler-course"),
    );
    let by_compiler = std::mem::size_of_val(&fetcher.fetch());
    let by_hand = std::mem::size_of_val(&fetch_by_hand(&fetcher));
    println!("fetch future: {by_compiler} bytes (by hand: {by_hand} bytes)");
    assert!(
        by_compiler < 2048,
        "the async fn fetch's coroutine is {by_compiler} bytes, over 2 KiB: is a buffer \
         (or a copy of an argument) alive across an `.await`?"
    );
    assert!(
        by_hand < 1024,
        "the fetch by hand is {by_hand} bytes, over 1 KiB: is a buffer kept in a state?"
    );
}

#[test]
fn in_flight_counts_the_peak_not_the_total() {
    let in_flight = Rc::new(InFlight::default());
    {
        let _a = in_flight.start();
        let _b = in_flight.start();
        assert_eq!(
            in_flight.now(),
            2,
            "fetches in flight while two guards live"
        );
    }
    let _c = in_flight.start();
    assert_eq!(
        in_flight.now(),
        1,
        "fetches in flight after two guards were dropped and a third started"
    );
    assert_eq!(
        in_flight.peak(),
        2,
        "the most fetches ever in flight at once (peak): 2, not the 3 started"
    );
}

/// Each case once per implementation, bounded: `async_fn::CASE` and
/// `by_hand::CASE`.
macro_rules! both {
    ($($case:ident),* $(,)?) => {
        mod async_fn {
            $(
                #[test]
                fn $case() {
                    let which = super::Which::AsyncFn;
                    super::within(30, which.stuck(), move || super::$case(which));
                }
            )*
        }
        mod by_hand {
            $(
                #[test]
                fn $case() {
                    let which = super::Which::ByHand;
                    super::within(30, which.stuck(), move || super::$case(which));
                }
            )*
        }
    };
}

both!(
    a_page_from_the_fixture_server,
    a_body_of_many_chunks_is_read_across_many_waits,
    a_request_bigger_than_the_socket_buffers_is_written_in_parts,
    a_refused_connect_tells_the_whole_story,
    a_connection_closed_mid_response_is_a_reset_with_its_context,
    a_reset_while_the_request_is_written_ends_the_fetch_with_it,
    a_reset_while_waiting_for_the_response_ends_the_fetch_with_it,
    garbage_is_a_protocol_error_and_too_much_is_too_large,
    a_stalled_server_loses_the_race_against_the_deadline,
    https_is_refused_before_any_socket,
    a_fetch_waiting_for_its_response_counts_as_in_flight,
);
