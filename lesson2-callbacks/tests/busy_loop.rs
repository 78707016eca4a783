//! Tests of `src/busy_loop.rs`, through its public API.

use lesson2_callbacks::busy_loop::*;
use shared::fixtures::server::refused_addr;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::net::TcpListener;
use std::thread;
use std::time::Duration;
use std::time::Instant;

const REQUEST: &[u8] = b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n";

/// A server that reads the request, thinks for `think`, answers and closes.
fn slow_server(think: Duration) -> (SocketAddr, thread::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 256];
        while !request.ends_with(b"\r\n\r\n") {
            let n = conn.read(&mut buf).unwrap();
            assert!(n > 0, "client closed early");
            request.extend_from_slice(&buf[..n]);
        }
        thread::sleep(think);
        conn.write_all(b"HTTP/1.0 200 OK\r\n\r\nhello").unwrap();
        request
    });
    (addr, handle)
}

#[test]
fn spinning_gets_the_response_but_burns_a_spin_per_wasted_check() {
    let (addr, server) = slow_server(Duration::from_millis(300));
    let deadline = Instant::now() + Duration::from_secs(10);
    let spun = fetch_by_spinning(addr, REQUEST, deadline)
        .expect("`fetch_by_spinning` must fetch from a server that answers at once");
    assert_eq!(
        server.join().unwrap(),
        REQUEST,
        "the bytes the server received: the whole request, though a write may take part"
    );
    assert_eq!(
        spun.response, b"HTTP/1.0 200 OK\r\n\r\nhello",
        "the response: every byte the server sent, read until it closed: `read` returning \
         `Ok(0)` is the end of the response; `WouldBlock` only means nothing has come yet \
         (the server is still thinking), so spin and read again"
    );
    // While the server thought, every read answered "not yet". How many
    // depends on the machine: on an idle one, hundreds of thousands in
    // those 300 ms. Only a thread kept off the CPU for the whole 300 ms
    // between its last write and its first read could see none.
    assert!(
        spun.read_spins > 0,
        "read spins: reads that answered `WouldBlock` while the server thought for 300 ms; \
         none counted: {spun:?}"
    );
    println!(
        "connect spins: {}, write spins: {}, read spins: {}",
        spun.connect_spins, spun.write_spins, spun.read_spins
    );
}

#[test]
fn a_refused_connection_is_an_error_not_an_endless_spin() {
    let addr = refused_addr();
    let deadline = Instant::now() + Duration::from_secs(10);
    let err = fetch_by_spinning(addr, REQUEST, deadline)
        .expect_err("it must be an error: a refused connection is an error not an endless spin");
    assert_eq!(
        err.kind(),
        io::ErrorKind::ConnectionRefused,
        "a closed port: the connect's own error, `ConnectionRefused`, not a spin until the \
         deadline ({err})"
    );
}

#[test]
fn a_server_that_never_answers_ends_at_the_deadline() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let deadline = Instant::now() + Duration::from_millis(50);
    // The kernel completes the handshake from the listen backlog, so the
    // connect and the write succeed; no answer ever comes.
    let err = fetch_by_spinning(addr, REQUEST, deadline)
        .expect_err("it must be an error: a server that never answers ends at the deadline");
    assert_eq!(
        err.kind(),
        io::ErrorKind::TimedOut,
        "a server that never answers: `TimedOut` once the 50 ms deadline passes ({err})"
    );
    drop(listener);
}

/// A connect whose handshake waits: the listener's accept queue (backlog 0)
/// is already full with a connection nobody has accepted yet, so Linux
/// drops the new connection's SYN and the connect stays in progress until
/// the client sends it again, a second later, when the server has made room.
/// Meanwhile every round finds `peer_addr` failing with `NotConnected`:
/// "not yet", a connect spin, not an error.
#[test]
fn a_connect_still_in_progress_is_counted_as_connect_spins_not_an_error() {
    use socket2::{Domain, Socket, Type};
    let listener = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    let any_port: SocketAddr = "127.0.0.1:0".parse().unwrap();
    listener.bind(&any_port.into()).unwrap();
    listener.listen(0).unwrap();
    let addr = listener.local_addr().unwrap().as_socket().unwrap();
    // Fills the accept queue until the server accepts it.
    let filler = std::net::TcpStream::connect(addr).unwrap();
    let listener: TcpListener = listener.into();
    let server = thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        drop(listener.accept().unwrap());
        let (mut conn, _) = listener.accept().unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 256];
        while !request.ends_with(b"\r\n\r\n") {
            let n = conn.read(&mut buf).unwrap();
            assert!(n > 0, "client closed early");
            request.extend_from_slice(&buf[..n]);
        }
        conn.write_all(b"HTTP/1.0 200 OK\r\n\r\nhello").unwrap();
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    // Checked before joining the server: on an error its second `accept`
    // would wait forever.
    let spun = fetch_by_spinning(addr, REQUEST, deadline).expect(
        "a connect still in progress must be waited for: `peer_addr` failing with \
         `NotConnected` means the handshake is not done yet, not that it failed",
    );
    server.join().unwrap();
    drop(filler);
    assert_eq!(
        spun.response, b"HTTP/1.0 200 OK\r\n\r\nhello",
        "the response, once the delayed connect went through"
    );
    assert!(
        spun.connect_spins > 0,
        "connect spins: rounds in which `peer_addr` said `NotConnected` while the SYN \
         waited a second to be sent again; none counted: {spun:?}"
    );
}

/// A request of 16 MiB, which no socket buffer takes at once: the header
/// `X-Pad` carries the bulk, and the blank line ends it as any request.
fn big_request() -> Vec<u8> {
    let mut request = b"GET / HTTP/1.0\r\nX-Pad: ".to_vec();
    request.resize(request.len() + 16 * 1024 * 1024, b'a');
    request.extend_from_slice(b"\r\n\r\n");
    request
}

#[test]
fn a_request_the_socket_cannot_take_at_once_is_written_in_parts_with_write_spins() {
    let request = big_request();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        // Reads nothing for a while: the client's writes fill the buffers
        // and then say `WouldBlock`.
        thread::sleep(Duration::from_millis(200));
        let mut received = 0usize;
        let mut tail = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        while !tail.ends_with(b"\r\n\r\n") {
            let n = conn.read(&mut buf).unwrap();
            assert!(n > 0, "client closed early");
            received += n;
            tail.extend_from_slice(&buf[..n]);
            let keep = tail.len().saturating_sub(4);
            tail.drain(..keep);
        }
        conn.write_all(b"HTTP/1.0 200 OK\r\n\r\nhello").unwrap();
        received
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let spun = fetch_by_spinning(addr, &request, deadline).expect(
        "a write that says `WouldBlock` means the socket's buffer is full for now: try again, \
         it is not an error",
    );
    assert_eq!(
        server.join().unwrap(),
        request.len(),
        "bytes of the 16 MiB request the server received: all of them, each write's \
         leftover sent in the next round"
    );
    assert!(
        spun.write_spins > 0,
        "write spins: writes that answered `WouldBlock` while the server read nothing for \
         200 ms; none counted: connect {}, write {}, read {}",
        spun.connect_spins,
        spun.write_spins,
        spun.read_spins
    );
}

#[test]
fn a_connection_reset_while_the_request_is_written_is_an_error_not_a_spin() {
    let request = big_request();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut first = [0u8; 1];
        conn.read_exact(&mut first).unwrap();
        // Closing with the request unread resets the connection.
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    let err = fetch_by_spinning(addr, &request, deadline).expect_err("it must be an error: a connection reset while the request is written is an error not a spin");
    server.join().unwrap();
    assert!(
        matches!(
            err.kind(),
            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
        ),
        "a write to a connection the server reset: that write's error \
         (`ConnectionReset` or `BrokenPipe`) at once, not a spin until the 5 s deadline \
         (`TimedOut`); got {:?}: {err}",
        err.kind()
    );
}

#[test]
fn a_connection_reset_while_the_response_is_read_is_an_error_not_a_spin() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 256];
        while !request.ends_with(b"\r\n\r\n") {
            let n = conn.read(&mut buf).unwrap();
            assert!(n > 0, "client closed early");
            request.extend_from_slice(&buf[..n]);
        }
        // A linger of zero turns the close into a reset.
        socket2::SockRef::from(&conn)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    let err = fetch_by_spinning(addr, REQUEST, deadline).expect_err(
        "it must be an error: a connection reset while the response is read is an error not a spin",
    );
    server.join().unwrap();
    assert_eq!(
        err.kind(),
        io::ErrorKind::ConnectionReset,
        "a read from a connection the server reset: that read's error, `ConnectionReset`, \
         at once, not a spin until the 5 s deadline (`TimedOut`); got: {err}"
    );
}
