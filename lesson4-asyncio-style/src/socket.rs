//! # An async socket: `connect`, `write_all`, `read`
//!
//! Lesson 3's socket is this one's: `connect`, `write_all` and `read` are
//! asyncio's `sock_connect`, `sock_sendall` and `sock_recv`, each operation
//! is *tried first*, and the coroutine waits only when the system says
//! `WouldBlock`. What changed is how it waits, and what `read` returns.
//! Lesson 3 waited the tutorial's way, on a fresh future resolved by a
//! reader callback.
//! <!-- how -->
//! Here the coroutine installs its task's waker as the socket's reader or
//! writer ([`Socket::wait`]), and removes it when the wait ends — also when
//! it ends early, because the task was cancelled or a deadline dropped the
//! coroutine.
//! <!-- /how -->
//! And lesson 3's `read` returned a fresh `Vec` per chunk.
//!
//! A socket is registered with the loop once, for its whole life
//! (`EventLoop::register`), and deregistered when dropped: waiting costs no
//! system call beyond the `poll` the loop makes anyway.
//!
//! `read` and `write_all` are functions that return an `async move` block
//! rather than `async fn`s, to keep every waiting fetch a little smaller:
//! see "The size of a waiting fetch" in [`crate::fetch`].
//!
//! `read` does not take a buffer. It reads into the loop's one shared buffer
//! and hands the bytes to a closure (the HTTP parser's `feed`) before
//! returning. A fetch that is waiting for its server therefore owns no read
//! buffer at all — with ten thousand fetches waiting, that is the difference
//! between a few hundred bytes each and 64 KiB each.

use std::future::Future;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use mio::net::TcpStream;
use mio::Token;

use crate::event_loop::{get_running_loop, EventLoop};
use crate::future::Cancelled;
use crate::task::take_cancel_request;

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
    /// established or has failed. (`addr` by reference: the pool connects
    /// to addresses it keeps, and a coroutine keeps room for its arguments
    /// for as long as it lives.)
    pub async fn connect(addr: &SocketAddr) -> anyhow::Result<Socket> {
        let socket = Socket::start_connect(*addr)?;
        loop {
            socket.wait(Direction::Write).await?;
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
    #[expect(clippy::manual_async_fn, reason = "an async fn keeps arguments twice")]
    pub fn write_all<'a>(
        &'a mut self,
        mut data: &'a [u8],
    ) -> impl Future<Output = anyhow::Result<()>> + 'a {
        async move {
            while !data.is_empty() {
                // The outcome is settled before any `.await`, so the coroutine
                // does not keep it (and its error) across the wait.
                match (&self.stream).write(data) {
                    Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero).into()),
                    Ok(n) => {
                        data = &data[n..];
                        continue;
                    }
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                    Err(err) => return Err(err.into()),
                }
                self.wait(Direction::Write).await?;
            }
            Ok(())
        }
    }
    // ANCHOR_END: write_all

    // ANCHOR: read
    /// Wait for bytes, read what is there into the loop's shared buffer, and
    /// return `consume(bytes)`: asyncio's `sock_recv`, without a buffer of
    /// our own. `consume` gets an empty slice when the peer has closed.
    #[expect(clippy::manual_async_fn, reason = "an async fn keeps arguments twice")]
    pub fn read<'a, R>(
        &'a mut self,
        consume: impl FnOnce(&[u8]) -> R + 'a,
    ) -> impl Future<Output = anyhow::Result<R>> + 'a {
        async move {
            loop {
                {
                    let mut buffer = self.event_loop.read_buffer();
                    match (&self.stream).read(&mut buffer) {
                        Ok(n) => return Ok(consume(&buffer[..n])),
                        Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                        Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                        Err(err) => return Err(err.into()),
                    }
                    // The buffer is released here, before waiting: other
                    // sockets read into it while this one waits.
                }
                self.wait(Direction::Read).await?;
            }
        }
    }
    // ANCHOR_END: read

    // ANCHOR: wait
    /// Wait until the socket is readable or writable: install this task's
    /// waker as the socket's reader (or writer), and wait to be woken.
    /// The socket's place in the loop's table (for `remove_reader` and
    /// `remove_writer`, and the tests).
    pub fn token(&self) -> Token {
        self.token
    }

    fn wait(&self, direction: Direction) -> Wait<'_> {
        Wait {
            socket: self,
            direction,
            installed: false,
        }
    }
    // ANCHOR_END: wait
}

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

/// Is this `peer_addr` error "the handshake is still going on"? Linux says
/// `ENOTCONN` (`NotConnected`); mio's docs add `EINPROGRESS` for other
/// systems, which std has no stable error kind for yet.
fn still_connecting(err: &io::Error) -> bool {
    const EINPROGRESS: i32 = if cfg!(target_os = "linux") { 115 } else { 36 };
    err.kind() == io::ErrorKind::NotConnected || err.raw_os_error() == Some(EINPROGRESS)
}

/// What a socket waits for.
#[derive(Debug, Clone, Copy)]
pub enum Direction {
    Read,
    Write,
}

// ANCHOR: wait_future
/// The future [`Socket::wait`] returns.
///
/// asyncio's `sock_recv` makes a future, and a reader callback resolves it.
/// Here the loop wakes the task directly: the task's waker is installed as
/// the reader (see the event loop's "Wakers as callbacks"), so a wait costs
/// no allocation at all — neither a future nor a boxed callback, which, with
/// ten thousand fetches waiting at once, is worth saving.
struct Wait<'a> {
    /// The socket to watch.
    socket: &'a Socket,
    /// Readable or writable.
    direction: Direction,
    /// The waker is installed: the next poll means the task was woken.
    installed: bool,
}

impl Future for Wait<'_> {
    type Output = anyhow::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if take_cancel_request() {
            return Poll::Ready(Err(Cancelled.into()));
        }
        // Woken. Usually by the socket; if by something else, the caller
        // tries its operation, meets `WouldBlock`, and waits again.
        if self.installed {
            return Poll::Ready(Ok(()));
        }
        let (event_loop, token) = (&self.socket.event_loop, self.socket.token);
        let installed = match self.direction {
            Direction::Read => event_loop.add_reader(token, cx.waker()),
            Direction::Write => event_loop.add_writer(token, cx.waker()),
        };
        if let Err(err) = installed {
            return Poll::Ready(Err(err.into()));
        }
        self.installed = true;
        Poll::Pending
    }
}

/// However the wait ends — woken, cancelled, or dropped by a `wait_for` —
/// the reader is removed: Rust's `finally: loop.remove_reader(fd)`.
impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if !self.installed {
            return;
        }
        let (event_loop, token) = (&self.socket.event_loop, self.socket.token);
        match self.direction {
            Direction::Read => event_loop.remove_reader(token),
            Direction::Write => event_loop.remove_writer(token),
        };
    }
}
// ANCHOR_END: wait_future
