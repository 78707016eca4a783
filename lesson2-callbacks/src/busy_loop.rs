//! # The naive way to wait: spinning on a non-blocking socket
//!
//! **An example, not part of the crawler.** It is where the chapter starts,
//! and it shows the problem the event loop solves.
//!
//! A non-blocking socket never makes its thread wait: `connect` returns at
//! once with the connection still being set up, and `write` or `read` on a
//! socket that cannot make progress return the error `WouldBlock` ("try
//! again later") instead of sleeping. Python spells it `BlockingIOError`. So
//! the thread is free — but to know *when* to try again, the simplest
//! program just tries again at once, and again, and again:
//!
//! ```text
//! while True:
//!     try:
//!         sock.send(request)
//!         break
//!     except OSError:
//!         pass          # not connected yet: spin
//! ```
//!
//! [`fetch_by_spinning`] does that for a whole request: connect, write,
//! read, each step a loop that retries until the step succeeds. It counts its
//! spins so the test (and the chapter) can show how much work a single wait
//! burns. Two things are wrong with it:
//!
//! - it keeps a CPU core at 100% doing nothing useful: every spin is a
//!   system call that answers "not yet";
//! - it waits on **one** socket. To wait on a thousand, it would have to
//!   spin over all of them in turn, and the cost of each round grows with the
//!   number of sockets, nearly all of which have nothing to say.
//!
//! What we want instead is to ask the kernel once: "wake me when any of
//! these sockets can make progress, and tell me which". That is `select`,
//! `poll`, `epoll`, `kqueue` — `mio::Poll` here — and the event loop in
//! `event_loop.rs`.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::Instant;

use mio::net::TcpStream;

/// What a spinning fetch got, and what it cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spun {
    /// Every byte the server sent until it closed the connection.
    pub response: Vec<u8>,
    /// How many times the connect had to be checked again before it was done.
    pub connect_spins: u64,
    /// How many writes answered `WouldBlock` (or "not connected yet").
    pub write_spins: u64,
    /// How many reads answered `WouldBlock` while the server was thinking.
    pub read_spins: u64,
}

// ANCHOR: fetch_by_spinning
/// Connect to `addr`, send `request`, read until the server closes — using a
/// non-blocking socket and retrying every step in a busy loop. Gives up with
/// `TimedOut` at `deadline` (a busy loop with no deadline is a hang waiting
/// to happen).
pub fn fetch_by_spinning(addr: SocketAddr, request: &[u8], deadline: Instant) -> io::Result<Spun> {
    let check_deadline = || {
        if Instant::now() >= deadline {
            Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"))
        } else {
            Ok(())
        }
    };
    // Returns at once: the connection is only being set up.
    let mut sock = TcpStream::connect(addr)?;
    let mut spun = Spun {
        response: Vec::new(),
        connect_spins: 0,
        write_spins: 0,
        read_spins: 0,
    };

    // Spin until connected: `peer_addr` fails with `NotConnected` until the
    // handshake is done; `take_error` reports a refused connection.
    loop {
        if let Some(err) = sock.take_error()? {
            return Err(err);
        }
        match sock.peer_addr() {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::NotConnected => spun.connect_spins += 1,
            Err(e) => return Err(e),
        }
        check_deadline()?;
    }

    // Spin until the whole request is written. A write may take only part
    // of the bytes: keep the rest for the next round.
    let mut sent = 0;
    while sent < request.len() {
        match sock.write(&request[sent..]) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => spun.write_spins += 1,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        check_deadline()?;
    }

    // Spin until the server closes the connection (`read` returns 0).
    let mut buf = [0u8; 4096];
    loop {
        match sock.read(&mut buf) {
            Ok(0) => return Ok(spun),
            Ok(n) => spun.response.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => spun.read_spins += 1,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        check_deadline()?;
    }
}
// ANCHOR_END: fetch_by_spinning

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;
    use std::time::Duration;

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
        assert_eq!(server.join().unwrap(), REQUEST);
        assert_eq!(spun.response, b"HTTP/1.0 200 OK\r\n\r\nhello");
        // While the server thought, every read answered "not yet". How many
        // depends on the machine: on an idle one, hundreds of thousands in
        // those 300 ms. Only a thread kept off the CPU for the whole 300 ms
        // between its last write and its first read could see none.
        assert!(spun.read_spins > 0, "{spun:?}");
        println!(
            "connect spins: {}, write spins: {}, read spins: {}",
            spun.connect_spins, spun.write_spins, spun.read_spins
        );
    }

    #[test]
    fn a_refused_connection_is_an_error_not_an_endless_spin() {
        // A port that was just free: nothing listens there.
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let err = fetch_by_spinning(addr, REQUEST, deadline).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn a_server_that_never_answers_ends_at_the_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let deadline = Instant::now() + Duration::from_millis(50);
        // The kernel completes the handshake from the listen backlog, so the
        // connect and the write succeed; no answer ever comes.
        let err = fetch_by_spinning(addr, REQUEST, deadline).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        drop(listener);
    }
}
