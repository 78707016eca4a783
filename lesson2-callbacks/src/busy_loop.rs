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
