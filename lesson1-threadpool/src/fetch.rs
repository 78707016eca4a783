//! # Fetching one URL with a blocking socket
//!
//! This is the whole network side of lesson 1, and it reads top to bottom
//! like the recipe it is: resolve the host, connect, write the request, read
//! until the response is complete. Every call *blocks*: `connect` returns
//! when the handshake is done, `read` when bytes have arrived. While it
//! waits, the thread can do nothing else — which is why the crawler needs a
//! thread per fetch it wants in flight, and why the later lessons exist.
//!
//! What the tutorial's version leaves out, and a crawler cannot:
//!
//! - **Every address, in order.** `localhost` often resolves to `::1` first,
//!   and a server listening on `127.0.0.1` only refuses that one.
//! - **Bounded memory.** The bytes go to `shared::http::ResponseParser`,
//!   which stops a response that outgrows the limits instead of growing
//!   without bound, and knows when the response is complete.
//! - **No descriptor left.** A socket is a file descriptor, and a process
//!   may hold only so many. When `connect` finds none left, that is not
//!   this URL's failure: [`get`] says [`Fetched::OutOfDescriptors`], and the
//!   crawler waits for another fetch to close its socket.
//! - **A deadline for the whole fetch** (`--timeout`). A blocking `read`
//!   with no timeout waits forever on a server that accepts and never
//!   answers. A socket timeout alone is not enough either: it bounds each
//!   `read`, so a server that drips one byte a second — each `read`
//!   returning in time — would hold the thread for as long as it likes.
//!
//! <!-- how -->
//! So the fetch keeps one [`Deadline`], sets the socket's timeout to the
//! time *remaining* before every call, and gives up when none is left.
//! <!-- /how -->

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use shared::http::{self, Limits, Response, ResponseParser, Version};
use shared::net::{self, Resolver};
use shared::trace::{self, Phase};
use shared::{FailKind, FetchError};
use url::Url;

/// How a fetch ended.
#[derive(Debug)]
pub enum Fetched {
    /// The fetch ran: the response, or why there is none.
    Done(Result<Response, FetchError>),
    /// There was no file descriptor left for the socket. Not this URL's
    /// fault: the crawler has the thread wait until another fetch closes
    /// its socket, and try again.
    OutOfDescriptors,
}

/// How many bytes each `read` may return. The buffer lives on the thread's
/// stack for the whole fetch — part of what a thread costs (see the chapter).
const READ_CHUNK: usize = 16 * 1024;

// ANCHOR: get
/// Fetch `url`: one connection, one HTTP/1.0 request, the whole response —
/// or the reason there is none.
pub fn get(
    url: &Url,
    resolver: &Resolver,
    timeout: Duration,
    limits: Limits,
    agent: &str,
) -> Fetched {
    let deadline = Deadline::after(timeout);
    // Blocks on the first lookup of each host (the C library's resolver has
    // no timeout to give it); later lookups come from the resolver's cache.
    // `https` is refused here, before any socket exists.
    trace::phase(Phase::Resolve);
    let addrs = match resolver.resolve(url) {
        Ok(addrs) => addrs,
        Err(err) => return Fetched::Done(Err(err)),
    };
    trace::phase(Phase::Connect);
    let mut sock = match connect(&addrs, &deadline) {
        Ok(sock) => sock,
        Err(fetched) => return fetched,
    };
    Fetched::Done(exchange(&mut sock, url, limits, agent, &deadline))
    // `sock` is dropped here, closing the connection: HTTP/1.0, one
    // request per connection.
}

/// Send the request and read the whole response.
fn exchange(
    sock: &mut TcpStream,
    url: &Url,
    limits: Limits,
    agent: &str,
    deadline: &Deadline,
) -> Result<Response, FetchError> {
    trace::phase(Phase::Send);
    send(
        sock,
        &http::get_request(url, Version::Http10Close, agent),
        deadline,
    )?;
    trace::phase(Phase::Wait);
    receive(sock, limits, deadline)
}
// ANCHOR_END: get

// ANCHOR: connect
/// Connect to the first address that accepts, trying each in order.
fn connect(addrs: &[SocketAddr], deadline: &Deadline) -> Result<TcpStream, Fetched> {
    let mut last_error = None;
    for addr in addrs {
        let timeout = deadline
            .remaining()
            .map_err(|err| Fetched::Done(Err(err)))?;
        // `connect_timeout` bounds the handshake; plain `connect` could wait
        // minutes for a host that drops packets.
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(sock) => return Ok(sock),
            // No socket could be made at all: another address will not help.
            Err(err) if net::is_out_of_descriptors(&err) => return Err(Fetched::OutOfDescriptors),
            Err(err) => last_error = Some(err),
        }
    }
    Err(Fetched::Done(Err(match last_error {
        Some(err) => deadline.error_from(&err, true),
        None => FetchError::new(FailKind::Dns, "no address to connect to"),
    })))
}
// ANCHOR_END: connect

// ANCHOR: send
/// Write all of `request`. A request is far smaller than a socket's send
/// buffer, so this is one `write` in practice; the loop is for correctness.
fn send(sock: &mut TcpStream, mut request: &[u8], deadline: &Deadline) -> Result<(), FetchError> {
    while !request.is_empty() {
        sock.set_write_timeout(Some(deadline.remaining()?))
            .map_err(|err| deadline.error_from(&err, false))?;
        match sock.write(request) {
            Ok(0) => {
                return Err(FetchError::new(
                    FailKind::Reset,
                    "connection closed while sending the request",
                ))
            }
            Ok(n) => request = &request[n..],
            // A signal interrupted the call before anything was written.
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(deadline.error_from(&err, false)),
        }
    }
    Ok(())
}
// ANCHOR_END: send

// ANCHOR: receive
/// Read until the parser has a complete response, the server closes the
/// connection, or the deadline passes.
fn receive(
    sock: &mut TcpStream,
    limits: Limits,
    deadline: &Deadline,
) -> Result<Response, FetchError> {
    let mut parser = ResponseParser::with_limits(limits);
    let mut buf = [0u8; READ_CHUNK];
    loop {
        // Before *every* read: the time left, not the whole timeout. This is
        // also the check that stops a server dripping a byte at a time,
        // whose reads each return long before their own timeout.
        sock.set_read_timeout(Some(deadline.remaining()?))
            .map_err(|err| deadline.error_from(&err, false))?;
        let n = match sock.read(&mut buf) {
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(deadline.error_from(&err, false)),
        };
        if n == 0 {
            // The server closed the connection: that ends a body sent
            // without a length, and is an error anywhere else.
            return parser.finish();
        }
        if let Some(response) = parser.feed(&buf[..n])? {
            return Ok(response);
        }
    }
}
// ANCHOR_END: receive

// ANCHOR: deadline
/// The moment a fetch must be over by.
#[derive(Debug, Clone, Copy)]
struct Deadline {
    /// When the time is up.
    at: Instant,
    /// The whole allowance, for the error message.
    timeout: Duration,
}

impl Deadline {
    fn after(timeout: Duration) -> Deadline {
        Deadline {
            at: Instant::now() + timeout,
            timeout,
        }
    }

    /// The time left, or the `timeout` error when there is none. Never
    /// `Ok(0)`: the socket calls reject a zero timeout (it would mean
    /// "no timeout" to the OS, so Rust refuses it rather than wait forever).
    fn remaining(&self) -> Result<Duration, FetchError> {
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(self.expired())
        } else {
            Ok(left)
        }
    }

    fn expired(&self) -> FetchError {
        FetchError::new(
            FailKind::Timeout,
            format!("timed out after {:?}", self.timeout),
        )
    }

    /// Classify a socket error. A blocking call that ran out of time fails
    /// with `WouldBlock` on Linux (`EAGAIN`) and `TimedOut` elsewhere; both
    /// mean the deadline passed.
    fn error_from(&self, err: &io::Error, connecting: bool) -> FetchError {
        match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => self.expired(),
            _ => FetchError::from_io(err, connecting),
        }
    }
}
// ANCHOR_END: deadline
