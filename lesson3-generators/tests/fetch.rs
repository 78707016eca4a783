//! One fetch, two ways: the `async fn` of `fetch.rs` and the hand-written
//! state machine of `fetch_by_hand.rs` run through the same cases against
//! real servers on `127.0.0.1:0`, and must give the same results — the same
//! responses, and errors with the same kind and the same whole chain of
//! context (`fetching URL: reading response: ...`).

use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::rc::Rc;
use std::thread;
use std::time::Duration;

use lesson3_generators::event_loop::EventLoop;
use lesson3_generators::fetch::{connect_any, Fetched, Fetcher, InFlight};
use lesson3_generators::fetch_by_hand::fetch_by_hand;
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

const BOTH: [Which; 2] = [Which::AsyncFn, Which::ByHand];

/// Run one fetch of `url` in a task on a fresh loop, to its end. Afterwards
/// the loop must hold nothing (socket unregistered, deadline cancelled) and
/// the fetch must no longer count as in flight.
fn fetch(which: Which, url: &str, timeout: Duration, limits: Limits) -> Fetched {
    let event_loop = EventLoop::new().unwrap();
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
        .unwrap();
    assert_eq!(event_loop.registered(), 0, "{which:?}: a socket is left");
    assert_eq!(event_loop.pending_timers(), 0, "{which:?}: a timer is left");
    assert_eq!(in_flight.now(), 0, "{which:?}: still counted in flight");
    outcome.take().expect("the task stored its outcome")
}

fn response(which: Which, fetched: Fetched) -> Response {
    match fetched {
        Fetched::Done(Ok(response)) => response,
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

#[test]
fn a_page_from_the_fixture_server() {
    let server = TestServer::start(Site::new().page("/", "<a href=\"/a\">a</a>"));
    for which in BOTH {
        let r = response(
            which,
            fetch(which, &server.url("/"), TEN_SECS, Limits::default()),
        );
        assert_eq!(r.status, 200, "{which:?}");
        assert!(String::from_utf8_lossy(&r.body).contains("href=\"/a\""));
    }
    assert_eq!(server.request_count("/"), 2);
}

#[test]
fn a_body_of_many_chunks_is_read_across_many_waits() {
    let body = vec![b'x'; 3 << 20];
    let server = TestServer::start(Site::new().route(
        "/big",
        Route::body("application/octet-stream", body.clone()),
    ));
    for which in BOTH {
        let r = response(
            which,
            fetch(which, &server.url("/big"), TEN_SECS, Limits::default()),
        );
        assert_eq!(r.body.len(), body.len(), "{which:?}");
    }
}

#[test]
fn a_request_bigger_than_the_socket_buffers_is_written_in_parts() {
    // 16 MiB do not fit in loopback's buffers, so a write must answer
    // `WouldBlock` and the fetch must wait for room and carry on.
    for which in BOTH {
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
        assert_eq!(r.status, 204);
        assert!(server.join().unwrap() > 16 << 20);
    }
}

#[test]
fn a_refused_connect_tells_the_whole_story() {
    let addr = refused_addr();
    let url = format!("http://{addr}/");
    for which in BOTH {
        let err = error(which, fetch(which, &url, TEN_SECS, Limits::default()));
        assert_eq!(err.kind, FailKind::Connect, "{which:?}");
        // Lesson 2 could only say "connection refused".
        assert_eq!(
            err.message,
            format!("fetching {url}: connecting to {addr}: connection refused"),
            "{which:?}"
        );
    }
}

#[test]
fn a_connection_closed_mid_response_is_a_reset_with_its_context() {
    let raw = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b";
    let server = TestServer::start(Site::new().route("/short", Route::raw(raw)));
    // What the parser says about these bytes, whatever its wording: the
    // chain must wrap exactly that.
    let mut parser = ResponseParser::new();
    assert!(parser.feed(raw.as_bytes()).unwrap().is_none());
    let cause = parser.finish().unwrap_err();
    let url = server.url("/short");
    for which in BOTH {
        let err = error(which, fetch(which, &url, TEN_SECS, Limits::default()));
        assert_eq!(err.kind, FailKind::Reset, "{which:?}");
        assert_eq!(
            err.message,
            format!("fetching {url}: reading response: {cause}"),
            "{which:?}"
        );
    }
}

#[test]
fn garbage_is_a_protocol_error_and_too_much_is_too_large() {
    let server = TestServer::start(
        Site::new()
            .route("/garbage", Route::raw("SPDY/9 banana\r\n\r\n"))
            .route("/big", Route::body("text/plain", vec![b'x'; 4097])),
    );
    let limits = Limits {
        max_body_bytes: 4096,
        ..Limits::default()
    };
    for which in BOTH {
        let err = error(
            which,
            fetch(which, &server.url("/garbage"), TEN_SECS, limits),
        );
        assert_eq!(err.kind, FailKind::Protocol, "{which:?}");
        assert!(err.message.starts_with(&format!(
            "fetching {}: reading response: ",
            server.url("/garbage")
        )));
        let err = error(which, fetch(which, &server.url("/big"), TEN_SECS, limits));
        assert_eq!(err.kind, FailKind::TooLarge, "{which:?}");
    }
}

#[test]
fn a_stalled_server_loses_the_race_against_the_deadline() {
    let server = TestServer::start(Site::new().route("/stuck", Route::stall()));
    let url = server.url("/stuck");
    for which in BOTH {
        let err = error(
            which,
            fetch(which, &url, Duration::from_millis(200), Limits::default()),
        );
        assert_eq!(err.kind, FailKind::Timeout, "{which:?}");
        assert_eq!(
            err.message,
            format!("fetching {url}: timed out after 200ms")
        );
    }
}

#[test]
fn https_is_refused_before_any_socket() {
    for which in BOTH {
        let err = error(
            which,
            fetch(which, "https://127.0.0.1/", TEN_SECS, Limits::default()),
        );
        assert_eq!(err.kind, FailKind::Unsupported, "{which:?}");
        assert_eq!(
            err.message,
            "fetching https://127.0.0.1/: https not supported"
        );
    }
}

#[test]
fn connect_any_skips_a_refused_address_for_the_next() {
    // As when `localhost` gives `::1` first and nothing listens there.
    let closed = refused_addr();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let open = listener.local_addr().unwrap();
    let event_loop = EventLoop::new().unwrap();
    let peer = event_loop
        .run_until_complete(async move {
            let sock = connect_any(&[closed, open]).await.unwrap();
            sock.stream().peer_addr().ok()
        })
        .unwrap();
    assert_eq!(peer, Some(open));
    assert_eq!(event_loop.registered(), 0);

    // Every address refused: the error is the last one's, with its context.
    let event_loop = EventLoop::new().unwrap();
    let message = event_loop
        .run_until_complete(async move {
            let err = connect_any(&[closed]).await.unwrap_err();
            format!("{err:#}")
        })
        .unwrap();
    assert_eq!(
        message,
        format!("connecting to {closed}: connection refused")
    );
    drop(listener);
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
    assert!(by_compiler < 2048, "{by_compiler} bytes");
    assert!(by_hand < 1024, "{by_hand} bytes");
}

#[test]
fn in_flight_counts_the_peak_not_the_total() {
    let in_flight = Rc::new(InFlight::default());
    {
        let _a = in_flight.start();
        let _b = in_flight.start();
        assert_eq!(in_flight.now(), 2);
    }
    let _c = in_flight.start();
    assert_eq!(in_flight.now(), 1);
    assert_eq!(in_flight.peak(), 2);
}
