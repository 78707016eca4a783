//! # An async socket: `connect`, `write_all`, `read`
//!
//! Lesson 2 wrote one fetch as a chain of callbacks, one per socket
//! operation. Here each operation is a coroutine that a fetch awaits —
//! asyncio's `sock_connect`, `sock_sendall` and `sock_recv`, which are the
//! tutorial's `connect` and `read` — and all three wait the same way, the
//! tutorial's way:
//!
//! ```python
//! f = Future()
//! loop.add_reader(sock.fileno(), lambda: f.set_result(None))
//! yield from f
//! ```
//!
//! <!-- how -->
//! [`Socket::ready`] is those lines: a fresh future, and a reader (or
//! writer) callback that resolves it. The tutorial's callback also does the
//! `recv`; ours cannot, because the socket belongs to the coroutine, so the
//! callback only says "ready" and the coroutine reads. That is also how mio
//! wants it: events are edge-triggered, so each operation is *tried first*,
//! and the coroutine waits only after the system said `WouldBlock` — then
//! the next edge is sure to come, and a spurious one just means trying
//! again.
//! <!-- /how -->
//!
//! A socket is registered with the loop once, for its whole life
//! (`EventLoop::register`), and deregistered when dropped: when the fetch
//! returns, fails, or loses its race against the deadline.

use std::io::{self, Read, Write};
use std::net::SocketAddr;

use mio::net::TcpStream;
use mio::Token;

use crate::event_loop::{get_running_loop, EventLoop};
use crate::future::Future;

/// A non-blocking TCP connection registered with the running loop.
pub struct Socket {
    /// The connection.
    stream: TcpStream,
    /// Its token in the loop's table of sockets.
    token: Token,
    /// The loop it is registered with, to wait on and deregister from.
    event_loop: EventLoop,
}

impl Socket {
    // ANCHOR: connect
    /// Open a connection to `addr`: asyncio's `sock_connect`. The connect is
    /// started without blocking; the socket becomes *writable* when it is
    /// established or has failed. (`addr` by reference: a coroutine keeps
    /// room for its arguments for as long as it lives.)
    pub async fn connect(addr: &SocketAddr) -> io::Result<Socket> {
        let socket = Socket::start_connect(*addr)?;
        loop {
            socket.ready(Direction::Write)?.await;
            if socket.is_connected()? {
                return Ok(socket);
            }
        }
    }

    /// Has the connect finished? Writable means "done", not "succeeded":
    /// the outcome is the socket's pending error, if any, and a peer address
    /// proves it connected. `Ok(false)`: a readiness event that came too
    /// early (mio's recipe); wait for the next one.
    pub fn is_connected(&self) -> io::Result<bool> {
        if let Some(err) = self.stream.take_error()? {
            return Err(err);
        }
        match self.stream.peer_addr() {
            Ok(_) => Ok(true),
            Err(err) if still_connecting(&err) => Ok(false),
            Err(err) => Err(err),
        }
    }
    // ANCHOR_END: connect

    /// Start a non-blocking connect and register the socket with the loop.
    pub fn start_connect(addr: SocketAddr) -> io::Result<Socket> {
        let event_loop = get_running_loop();
        let mut stream = TcpStream::connect(addr)?;
        let token = event_loop.register(&mut stream)?;
        Ok(Socket {
            stream,
            token,
            event_loop,
        })
    }

    // ANCHOR: write_all
    /// Send all of `data`: asyncio's `sock_sendall`. A write may take only
    /// part of the data; the rest waits for the socket to be writable again.
    pub async fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            match (&self.stream).write(data) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => {
                    data = &data[n..];
                    continue;
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            }
            self.ready(Direction::Write)?.await;
        }
        Ok(())
    }
    // ANCHOR_END: write_all

    // ANCHOR: read
    /// Wait for bytes and return what is there: asyncio's `sock_recv`.
    /// Empty when the peer has closed (Python's `b''`).
    pub async fn read(&mut self) -> io::Result<Vec<u8>> {
        loop {
            match self.read_chunk() {
                Ok(chunk) => return Ok(chunk),
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            }
            self.ready(Direction::Read)?.await;
        }
    }

    /// One `read` into a buffer on the stack, copied out at its real size.
    /// Not an `async fn`: the buffer lives only during this call, never in a
    /// coroutine's frame, so a fetch waiting for bytes holds no buffer at all.
    pub fn read_chunk(&self) -> io::Result<Vec<u8>> {
        let mut buf = [0u8; READ_CHUNK];
        let n = (&self.stream).read(&mut buf)?;
        Ok(buf[..n].to_vec())
    }
    // ANCHOR_END: read

    /// The connection itself, for the hand-written fetch of
    /// `fetch_by_hand.rs`, which does its own writes.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    // ANCHOR: wait
    /// A future resolved when the socket is next readable (or writable): the
    /// tutorial's `f = Future()` and a reader callback that resolves it,
    /// installed in place of the last one. Wait on it only after a read or
    /// write said `WouldBlock` (or after a connect started).
    pub fn ready(&self, direction: Direction) -> io::Result<Future<()>> {
        let ready = self.event_loop.create_future();
        let resolve = ready.clone();
        let callback = move || {
            resolve.set_result(());
        };
        match direction {
            Direction::Read => self.event_loop.add_reader(self.token, callback)?,
            Direction::Write => self.event_loop.add_writer(self.token, callback)?,
        }
        Ok(ready)
    }
    // ANCHOR_END: wait
}

/// Is this `peer_addr` error "the handshake is still going on"? Linux says
/// `ENOTCONN` (`NotConnected`); mio's docs add `EINPROGRESS` for other
/// systems, which std has no stable error kind for yet.
fn still_connecting(err: &io::Error) -> bool {
    const EINPROGRESS: i32 = if cfg!(target_os = "linux") { 115 } else { 36 };
    err.kind() == io::ErrorKind::NotConnected || err.raw_os_error() == Some(EINPROGRESS)
}

/// How many bytes each `read` may return (as in lessons 1 and 2).
const READ_CHUNK: usize = 16 * 1024;

impl Drop for Socket {
    fn drop(&mut self) {
        self.event_loop.deregister(&mut self.stream, self.token);
    }
}

impl std::fmt::Debug for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket")
            .field("peer", &self.stream.peer_addr().ok())
            .field("token", &self.token)
            .finish()
    }
}

/// What a socket waits for.
#[derive(Debug, Clone, Copy)]
pub enum Direction {
    Read,
    Write,
}
