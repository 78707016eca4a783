//! # An async socket: `connect`, `write_all`, `read`
//!
//! Lesson 3's `connect` and `read` were sub-coroutines written against the
//! lesson's own selector. Here they are asyncio's `sock_connect`,
//! `sock_sendall` and `sock_recv`, written against the loop's public API:
//! each operation is *tried first*, and only when the system says
//! `WouldBlock` does the coroutine install a reader or writer callback that
//! resolves a future, and await that future. The callback is removed when
//! the wait ends — also when it ends early, because the task was cancelled
//! or a deadline dropped the coroutine.
//!
//! A socket is registered with the loop once, for its whole life
//! (`EventLoop::register`), and deregistered when dropped: waiting costs no
//! system call beyond the `poll` the loop makes anyway.
//!
//! `read` does not take a buffer. It reads into the loop's one shared buffer
//! and hands the bytes to a closure (the HTTP parser's `feed`) before
//! returning. A fetch that is waiting for its server therefore owns no read
//! buffer at all — with ten thousand fetches waiting, that is the difference
//! between a few hundred bytes each and 64 KiB each.

use std::io::{self, Read, Write};
use std::net::SocketAddr;

use mio::net::TcpStream;
use mio::Token;

use crate::event_loop::{get_running_loop, EventLoop};

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
    /// established or has failed.
    pub async fn connect(addr: SocketAddr) -> anyhow::Result<Socket> {
        let event_loop = get_running_loop();
        let mut stream = TcpStream::connect(addr)?;
        let token = event_loop.register(&mut stream)?;
        let socket = Socket {
            stream,
            token,
            event_loop,
        };
        loop {
            socket.wait(Direction::Write).await?;
            // Writable means "done", not "succeeded": the outcome is the
            // socket's pending error, if any...
            if let Some(err) = socket.stream.take_error()? {
                return Err(err.into());
            }
            // ...and a peer address proves it connected. `NotConnected` is a
            // readiness event that came too early: wait for the next one.
            match socket.stream.peer_addr() {
                Ok(_) => return Ok(socket),
                Err(err) if err.kind() == io::ErrorKind::NotConnected => continue,
                Err(err) => return Err(err.into()),
            }
        }
    }
    // ANCHOR_END: connect

    // ANCHOR: write_all
    /// Send all of `data`: asyncio's `sock_sendall`. A write may take only
    /// part of the data; the rest waits for the socket to be writable again.
    pub async fn write_all(&mut self, mut data: &[u8]) -> anyhow::Result<()> {
        while !data.is_empty() {
            match (&self.stream).write(data) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero).into()),
                Ok(n) => data = &data[n..],
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    self.wait(Direction::Write).await?;
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(())
    }
    // ANCHOR_END: write_all

    // ANCHOR: read
    /// Wait for bytes, read what is there into the loop's shared buffer, and
    /// return `consume(bytes)`: asyncio's `sock_recv`, without a buffer of
    /// our own. `consume` gets an empty slice when the peer has closed.
    pub async fn read<R>(&mut self, consume: impl FnOnce(&[u8]) -> R) -> anyhow::Result<R> {
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
    // ANCHOR_END: read

    // ANCHOR: wait
    /// Wait until the socket is readable or writable: install a callback
    /// that resolves a future, await the future, remove the callback.
    async fn wait(&self, direction: Direction) -> anyhow::Result<()> {
        let ready = self.event_loop.create_future();
        let waiter = ready.clone();
        let callback = move || {
            waiter.set_result(());
        };
        match direction {
            Direction::Read => self.event_loop.add_reader(self.token, callback)?,
            Direction::Write => self.event_loop.add_writer(self.token, callback)?,
        };
        let _remove = RemoveOnDrop {
            socket: self,
            direction,
        };
        ready.await
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

#[derive(Clone, Copy)]
enum Direction {
    Read,
    Write,
}

/// Removes a reader or writer callback however the wait ends: Rust's
/// `finally: loop.remove_reader(fd)`.
struct RemoveOnDrop<'a> {
    socket: &'a Socket,
    direction: Direction,
}

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        let event_loop = &self.socket.event_loop;
        match self.direction {
            Direction::Read => event_loop.remove_reader(self.socket.token),
            Direction::Write => event_loop.remove_writer(self.socket.token),
        };
    }
}
