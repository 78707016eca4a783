//! Tests of `src/fetch.rs`, through its public API.

use lesson1_threadpool::fetch::*;
use shared::fixtures::server::refused_addr;
use shared::http::{Limits, Response};
use shared::net::Resolver;
use shared::{FailKind, FetchError};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::net::TcpStream;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};
use url::Url;

/// A one-connection server on `127.0.0.1:0` that runs `script` on the
/// connection it accepts. The returned sender keeps it alive: when it is
/// dropped, a script waiting on `hold` returns and closes the connection.
fn serve_once(
    script: impl FnOnce(TcpStream, mpsc::Receiver<()>) + Send + 'static,
) -> (Url, mpsc::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = Url::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
    let (keep_alive, hold) = mpsc::channel();
    thread::spawn(move || {
        if let Ok((sock, _)) = listener.accept() {
            script(sock, hold);
        }
    });
    (url, keep_alive)
}

fn get_with(url: &Url, timeout: Duration) -> Result<Response, FetchError> {
    match get(
        url,
        &Resolver::new(),
        timeout,
        Limits::default(),
        "crawler-course",
    ) {
        Fetched::Done(result) => result,
        Fetched::OutOfDescriptors => panic!("out of descriptors"),
    }
}

#[test]
fn a_complete_response_comes_back() {
    let (url, _keep) = serve_once(|mut sock, _hold| {
        let mut request = [0u8; 1024];
        let _ = sock.read(&mut request);
        let _ = sock.write_all(b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<p>hi</p>");
    });
    let response = get_with(&url, Duration::from_secs(10))
        .expect("`get` of a page the server answers at once returns its response");
    assert_eq!(response.status, 200, "the status of `HTTP/1.0 200 OK`");
    assert_eq!(
        response.body, b"<p>hi</p>",
        "the body: every byte after the head, up to the close (no Content-Length)"
    );
}

#[test]
fn a_closed_port_is_a_connect_error() {
    let url = Url::parse(&format!("http://{}/", refused_addr())).unwrap();
    let err = get_with(&url, Duration::from_secs(10))
        .expect_err("it must be an error: a closed port is a connect error");
    assert_eq!(
        err.kind,
        FailKind::Connect,
        "a closed port: connecting is refused, a `connect` failure ({err})"
    );
}

#[test]
fn https_is_refused_before_a_socket_is_made() {
    let url = Url::parse("https://127.0.0.1:1/").unwrap();
    let err = get_with(&url, Duration::from_secs(10))
        .expect_err("it must be an error: https is refused before a socket is made");
    assert_eq!(
        err.kind,
        FailKind::Unsupported,
        "an https URL: the course has no TLS, so `unsupported` ({err})"
    );
    assert_eq!(
        err.message, "https not supported",
        "the message of an https URL's failure"
    );
}

#[test]
fn a_server_that_never_answers_is_a_timeout_by_the_deadline() {
    let (url, _keep) = serve_once(|_sock, hold| {
        // Hold the connection open, silent, until the test ends.
        let _ = hold.recv();
    });
    let started = Instant::now();
    let err = get_with(&url, Duration::from_millis(300)).expect_err(
        "it must be an error: a server that never answers is a timeout by the deadline",
    );
    assert_eq!(
        err.kind,
        FailKind::Timeout,
        "a server that accepts and stays silent, with a 300 ms timeout: {err}"
    );
    assert_eq!(
        err.message, "timed out after 300ms",
        "the message of a read that ran out of time: the deadline's own error \
         (`expired`), which `error_from` must give for `WouldBlock` as well as `TimedOut`"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a 300 ms timeout took {:?} to end the fetch",
        started.elapsed()
    );
}

#[test]
fn a_server_that_drips_bytes_is_a_timeout_by_the_deadline() {
    // Each byte comes well within any per-read timeout; only the
    // deadline for the whole fetch can end this.
    let (url, _keep) = serve_once(|mut sock, _hold| {
        for byte in b"HTTP/1.0 200 OK\r\nX-Slow: "
            .iter()
            .chain([b'a'; 10_000].iter())
            .cycle()
        {
            if sock.write_all(&[*byte]).is_err() {
                return; // the client gave up and closed: done
            }
            thread::sleep(Duration::from_millis(20));
        }
    });
    let started = Instant::now();
    let err = shared::fixtures::bound::within(
        5,
        "a fetch with a 500 ms timeout, from a server that sends a byte every 20 ms, was \
         still reading after 5 s: the timeout must be a deadline for the whole fetch, not \
         renewed at each read (each byte comes well within a per-read timeout) — set each \
         read's timeout to the time left",
        move || get_with(&url, Duration::from_millis(500)),
    )
    .expect_err("it must be an error: a server that drips bytes is a timeout by the deadline");
    assert_eq!(
        err.kind,
        FailKind::Timeout,
        "a server that sends a byte every 20 ms, with a 500 ms timeout for the whole \
         fetch (not per read): {err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a 500 ms deadline took {:?} to end a dripping fetch: is the timeout renewed at \
         each read?",
        started.elapsed()
    );
}

#[test]
fn a_connection_closed_mid_body_is_a_reset() {
    let (url, _keep) = serve_once(|mut sock, _hold| {
        let mut request = [0u8; 1024];
        let _ = sock.read(&mut request);
        let _ = sock.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 100\r\n\r\nonly this");
    });
    let err = get_with(&url, Duration::from_secs(10))
        .expect_err("it must be an error: a connection closed mid body is a reset");
    assert_eq!(
        err.kind,
        FailKind::Reset,
        "a connection closed 91 bytes short of Content-Length: 100, a `reset` failure \
         ({err})"
    );
}

/// A server that sends a whole response, its length given, and leaves the
/// connection open: the fetch ends when the body is complete, not when the
/// server closes (many servers keep a connection open after an HTTP/1.0
/// response).
#[test]
fn a_response_complete_by_its_content_length_ends_the_fetch() {
    let (url, _keep) = serve_once(|mut sock, hold| {
        let mut request = [0u8; 1024];
        let _ = sock.read(&mut request);
        let _ = sock.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\n<p>hi</p>");
        // Hold the connection open, silent, until the test ends.
        let _ = hold.recv();
    });
    let result = get_with(&url, Duration::from_secs(3));
    let response = result.unwrap_or_else(|err| {
        panic!(
            "a response whose 9 body bytes (`Content-Length: 9`) all came, on a connection \
             the server left open, ended as {err}: the fetch read on past the \
             end of the body. `receive` must return the response as soon as the parser has \
             it whole (`feed` gives `Some(response)`), not wait for the server to close"
        )
    });
    assert_eq!(response.body, b"<p>hi</p>", "the body: its 9 bytes");
}

#[test]
fn the_request_is_http_1_0_for_the_path() {
    let (seen, request) = mpsc::channel();
    let (url, _keep) = serve_once(move |mut sock, _hold| {
        let mut buf = [0u8; 1024];
        let n = sock.read(&mut buf).unwrap_or(0);
        let _ = seen.send(String::from_utf8_lossy(&buf[..n]).into_owned());
        let _ = sock.write_all(b"HTTP/1.0 204 No Content\r\n\r\n");
    });
    let url = url.join("/a/b?q=1").unwrap();
    get_with(&url, Duration::from_secs(10))
        .expect("`get` of a page the server answers at once returns its response");
    let request = request.recv().unwrap();
    assert!(
        request.starts_with("GET /a/b?q=1 HTTP/1.0\r\n"),
        "{request}"
    );
}

/// The fetch names its phases for `--trace` as it goes (`trace::phase`):
/// `resolve`, `connect`, `send`, `wait`, then `read`, which the shared
/// parser marks when the first bytes arrive. The crawler runs the fetch
/// inside the URL's span, and the trace shows the phases inside its bar.
#[test]
fn a_fetch_marks_its_phases_for_the_trace_in_order() {
    use shared::trace::{Lane, Trace};
    let (url, _keep) = serve_once(|mut sock, _hold| {
        let mut request = [0u8; 1024];
        let _ = sock.read(&mut request);
        let _ = sock.write_all(b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<p>hi</p>");
    });
    let trace = Trace::capture("phases");
    let span = trace.fetch(url.as_str(), Lane::Thread);
    let response = span.in_scope(|| get_with(&url, Duration::from_secs(10)));
    let status = response.as_ref().map(|r| r.status).ok();
    span.end(&shared::FetchStatistic {
        url: url.to_string(),
        status,
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
        "the phases the fetch marked, in order: `get` marks `resolve` and `connect` as it \
         starts each step, `exchange` marks `send` and then `wait`, and the parser marks `read`"
    );
}

/// A server that drops the connection while the request is still being
/// written: the next `write` fails (the connection was reset), and the fetch
/// ends with that error at once, instead of retrying until its deadline.
#[test]
fn a_connection_reset_while_the_request_is_written_is_a_reset() {
    // 16 MiB cannot fit in loopback's buffers: the fetch is still writing
    // when the server closes without reading, which resets the connection.
    let path = "a".repeat(16 << 20);
    let (url, _keep) = serve_once(|sock, _hold| {
        thread::sleep(Duration::from_millis(100));
        drop(sock);
    });
    let url = url.join(&path).unwrap();
    let started = Instant::now();
    let err = get_with(&url, Duration::from_secs(5)).expect_err(
        "it must be an error: a connection reset while the request is written is a reset",
    );
    assert_eq!(
        err.kind,
        FailKind::Reset,
        "the error kind of a fetch whose request `write` failed (the server reset the \
         connection): `send` must return the write's error through `error_from`, and \
         retry only `Interrupted`; {err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "a failed `write` took {:?} to end the fetch: is `send` retrying every error?",
        started.elapsed()
    );
}

/// A server that resets the connection while the fetch waits for the
/// response: the `read` fails with `connection reset by peer`, and that error
/// is the fetch's, not a second read's end of file.
#[test]
fn a_connection_reset_while_waiting_for_the_response_is_that_error() {
    let (url, _keep) = serve_once(|sock, _hold| {
        // Closing with the request unread in the socket's buffer makes the
        // kernel send a reset instead of an orderly close.
        thread::sleep(Duration::from_millis(200));
        drop(sock);
    });
    let err = get_with(&url, Duration::from_secs(5)).expect_err(
        "it must be an error: a connection reset while waiting for the response is that error",
    );
    assert_eq!(
        err.kind,
        FailKind::Reset,
        "the error kind of a fetch whose `read` failed with a reset: {err}"
    );
    assert_eq!(
        err.message, "connection reset by peer",
        "the message of a fetch whose `read` failed: the read's own error through \
         `error_from`; `connection closed before the response` means `receive` retried \
         the failed read (retry only `Interrupted`) and read the end of the file"
    );
}

/// Set in the child process `a_connect_with_no_descriptor_left_is_out_of_descriptors`
/// starts (the test binary itself, under a low `ulimit -n`).
const NO_FD_CHILD: &str = "LESSON1_FETCH_NO_FD_CHILD";

/// With every file descriptor in use, the socket for the connection cannot
/// be made: `get` returns `Fetched::OutOfDescriptors` (the crawler waits and
/// retries), not a `connect` error for the URL. It runs in a child process,
/// under `ulimit -n 64`, because using up the descriptors would fail every
/// other test of this process meanwhile.
#[test]
fn a_connect_with_no_descriptor_left_is_out_of_descriptors() {
    if std::env::var_os(NO_FD_CHILD).is_some() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = Url::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        let resolver = Resolver::new();
        // Use up every descriptor left (at most the 64 of the limit).
        let mut held = Vec::new();
        while let Ok(file) = std::fs::File::open("/dev/null") {
            held.push(file);
            assert!(held.len() < 1_000, "ulimit -n 64 did not limit the files");
        }
        let fetched = get(
            &url,
            &resolver,
            Duration::from_secs(5),
            Limits::default(),
            "crawler-course",
        );
        drop(held);
        assert!(
            matches!(fetched, Fetched::OutOfDescriptors),
            "what `get` returned when no descriptor was left for the socket: expected \
             `Fetched::OutOfDescriptors` (`connect` must check \
             `net::is_out_of_descriptors` first), got {fetched:?}"
        );
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
        .arg(exe)
        .args([
            "--exact",
            "a_connect_with_no_descriptor_left_is_out_of_descriptors",
            "--test-threads",
            "1",
        ])
        .env(NO_FD_CHILD, "1")
        .output()
        .expect("running the test binary under `sh -c 'ulimit -n 64 && ...'`");
    assert!(
        output.status.success(),
        "the fetch with no descriptor left (this test, rerun under ulimit -n 64) failed; \
         it printed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
