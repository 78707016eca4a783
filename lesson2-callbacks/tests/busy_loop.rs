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
    let spun = fetch_by_spinning(addr, REQUEST, deadline).unwrap();
    assert_eq!(
        server.join().unwrap(),
        REQUEST,
        "the bytes the server received: the whole request, though a write may take part"
    );
    assert_eq!(
        spun.response, b"HTTP/1.0 200 OK\r\n\r\nhello",
        "the response: every byte the server sent, read until it closed"
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
    let err = fetch_by_spinning(addr, REQUEST, deadline).unwrap_err();
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
    let err = fetch_by_spinning(addr, REQUEST, deadline).unwrap_err();
    assert_eq!(
        err.kind(),
        io::ErrorKind::TimedOut,
        "a server that never answers: `TimedOut` once the 50 ms deadline passes ({err})"
    );
    drop(listener);
}
