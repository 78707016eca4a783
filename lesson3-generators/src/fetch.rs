//! # Fetching one URL with a coroutine
//!
//! Lesson 2 tore one fetch into callbacks — `fetch`, `connected`,
//! `send_request`, `read_response`, `timed_out` — and moved everything the
//! stack used to remember into a `Fetcher` struct. Here the fetch is one
//! `async fn` again, and reads top to bottom like lesson 1's blocking code:
//!
//! ```text
//! resolve the host
//! connect to the first address that answers      connect(addr).await
//! write the request                              send_all(sock, request).await
//! read until the response is complete            read_all(sock).await
//! ```
//!
//! Each `.await` is a place where the fetch may stop until its socket is
//! ready. When it stops, nothing is lost: the socket, the parser, the
//! address being tried are locals of the coroutine, kept in its frame (the
//! future the compiler built for it, see `fetch_by_hand.rs` for that future
//! written out) until the task resumes it. The `Fetcher` struct is back to
//! what the tutorial's is: the URL and what is needed to fetch it.
//!
//! The sub-coroutines are the tutorial's, composed the way `yield from`
//! composes them: [`connect_any`] (each address in turn, with
//! `Socket::connect`), the socket's `write_all` and `read` (one chunk,
//! `socket.rs`), and [`read_all`] (until the response is complete).
//!
//! ## Errors keep their story
//!
//! A callback in lesson 2 knew only its own step, so a failure read
//! `connection refused`. A coroutine knows where it was called from, and
//! `anyhow`'s `.context()` lets each level say what it was doing: the error
//! line becomes `fetching http://host/: connecting to 127.0.0.1:80:
//! connection refused`. [`FetchError::from_anyhow`] turns the chain back
//! into the report's error, keeping the innermost kind (`connect`) and the
//! whole sentence as the message.
//!
//! ## The deadline
//!
//! `--timeout` is asyncio's `wait_for` (`wait_for.rs`): the fetch and a
//! `sleep` polled side by side. Whichever finishes first wins; the other is
//! dropped, and dropping a coroutine runs the destructors of its locals:
//! the socket deregisters and closes, the timer is cancelled.

use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use anyhow::Context;
use url::Url;

use shared::http::{get_request, Limits, Response, ResponseParser, Version};
use shared::net::{self, Resolver};
use shared::trace::{self, Phase};
use shared::{FailKind, FetchError};

use crate::socket::Socket;
use crate::wait_for::{wait_for, TimeoutError};

/// How a fetch ended, as the crawler hears it.
#[derive(Debug)]
pub enum Fetched {
    /// The fetch ran: the response, or why there is none.
    Done(Result<Response, FetchError>),
    /// There was no file descriptor left for the socket. Not this URL's
    /// fault: the crawler puts it back in line until another fetch closes
    /// its socket.
    OutOfDescriptors,
}

// ANCHOR: fetcher
/// What one fetch needs (the tutorial's `Fetcher`): no socket, no buffer,
/// no "which step am I in". Those are locals of [`Fetcher::fetch`] now.
#[derive(Debug)]
pub struct Fetcher {
    /// The URL being fetched (the tutorial's `self.url`).
    pub(crate) url: Url,
    /// Resolves the URL's host (once per crawl: the resolver caches).
    pub(crate) resolver: Rc<Resolver>,
    /// The crawl's count of fetches in flight, which this fetch joins just
    /// before it opens its first socket.
    pub(crate) in_flight: Rc<InFlight>,
    /// The whole-fetch deadline (`--timeout`).
    pub(crate) timeout: Duration,
    /// Response size limits, for the parser.
    pub(crate) limits: Limits,
    /// `--user-agent`, sent with the request (one copy for the crawl).
    pub(crate) agent: Rc<str>,
}
// ANCHOR_END: fetcher

impl Fetcher {
    /// A fetcher for `url`, sending `User-Agent: agent`. Nothing happens
    /// until its [`Fetcher::fetch`] coroutine is driven by a task.
    pub fn new(
        url: Url,
        resolver: Rc<Resolver>,
        in_flight: Rc<InFlight>,
        timeout: Duration,
        limits: Limits,
        agent: Rc<str>,
    ) -> Fetcher {
        Fetcher {
            url,
            resolver,
            in_flight,
            timeout,
            limits,
            agent,
        }
    }

    // ANCHOR: fetch
    /// Fetch the URL, within the deadline: the coroutine a task runs.
    pub async fn fetch(&self) -> Fetched {
        // Pinned here, in this coroutine's frame: `wait_for` polls it where
        // it is (see `wait_for` for why not by value).
        let result = match wait_for(pin!(self.get()), self.timeout).await {
            Err(err) if err.is::<TimeoutError>() => Err(timed_out(self.timeout)),
            result => result,
        };
        self.outcome(result)
    }
    // ANCHOR_END: fetch

    // ANCHOR: get
    /// GET the URL: the tutorial's `fetch` coroutine, top to bottom. Every
    /// `.await` is a `yield from`.
    async fn get(&self) -> anyhow::Result<Response> {
        // Resolving blocks (the C library has no non-blocking lookup), but
        // only on a host's first URL: the resolver caches the answer.
        trace::phase(Phase::Resolve);
        let addrs = self.resolver.resolve(&self.url)?;
        // In flight from here, where the first socket is about to be made,
        // to the end of this function, however it ends: the guard is a local.
        let _counted = self.in_flight.start();
        trace::phase(Phase::Connect);
        let mut sock = connect_any(&addrs).await?;
        // A coroutine's locals live until the end of their scope, however
        // long it waits: drop the addresses (and below, the request) now, so
        // a fetch waiting for its response does not keep them on the heap.
        drop(addrs);
        trace::phase(Phase::Send);
        let request = get_request(&self.url, Version::Http10Close, &self.agent);
        sock.write_all(&request)
            .await
            .map_err(io_error)
            .context("sending request")?;
        drop(request);
        trace::phase(Phase::Wait);
        read_all(&mut sock, self.limits)
            .await
            .context("reading response")
    }
    // ANCHOR_END: get

    // ANCHOR: outcome
    /// Turn the coroutine's result into what the crawler hears: the error
    /// chain gets its outermost line, `fetching URL`, and becomes the
    /// report's error with the kind of its innermost cause.
    pub fn outcome(&self, result: anyhow::Result<Response>) -> Fetched {
        match result {
            Ok(response) => Fetched::Done(Ok(response)),
            Err(err) if is_out_of_descriptors(&err) => Fetched::OutOfDescriptors,
            Err(err) => {
                let err = err.context(format!("fetching {}", self.url));
                Fetched::Done(Err(FetchError::from_anyhow(&err)))
            }
        }
    }
    // ANCHOR_END: outcome
}

// ANCHOR: timed_out
/// The error of a fetch that lost its race against the deadline.
pub fn timed_out(timeout: Duration) -> anyhow::Error {
    FetchError::new(FailKind::Timeout, format!("timed out after {timeout:?}")).into()
}
// ANCHOR_END: timed_out

// ANCHOR: out_of_descriptors
/// Did the process run out of descriptors somewhere in this chain?
fn is_out_of_descriptors(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(net::is_out_of_descriptors)
}
// ANCHOR_END: out_of_descriptors

// ANCHOR: connect
/// Connect to the first of `addrs` that accepts (`localhost` may give `::1`
/// first, and nothing may listen there). The error is the last address's.
pub async fn connect_any(addrs: &[SocketAddr]) -> anyhow::Result<Socket> {
    let mut last_error = None;
    for addr in addrs {
        match Socket::connect(addr)
            .await
            .map_err(connect_error)
            .with_context(|| format!("connecting to {addr}"))
        {
            Ok(sock) => return Ok(sock),
            // Another address would fail the same way.
            Err(err) if is_out_of_descriptors(&err) => return Err(err),
            Err(err) => last_error = Some(err),
        }
    }
    // No address at all: a name that resolved to nothing is a `dns` error,
    // as the resolver itself says it.
    Err(last_error
        .unwrap_or_else(|| FetchError::new(FailKind::Dns, "no address to connect to").into()))
}

/// An error while connecting is a `connect` failure — except running out of
/// descriptors, which stays an `io::Error` so that [`Fetcher::outcome`] can
/// tell the crawler to try again later.
pub fn connect_error(err: io::Error) -> anyhow::Error {
    if net::is_out_of_descriptors(&err) {
        err.into()
    } else {
        FetchError::from_io(&err, true).into()
    }
}
// ANCHOR_END: connect

// ANCHOR: read
/// Read until the response is complete or the peer closes: the tutorial's
/// `read_all`, with the parser as "the response so far" (it also knows when
/// the response is complete, and when it is too large).
pub async fn read_all(sock: &mut Socket, limits: Limits) -> anyhow::Result<Response> {
    let mut parser = ResponseParser::with_limits(limits);
    loop {
        let chunk = sock.read().await.map_err(io_error)?;
        if chunk.is_empty() {
            // Complete if the body ran to the close; an error otherwise.
            return Ok(parser.finish()?);
        }
        if let Some(response) = parser.feed(&chunk)? {
            return Ok(response);
        }
    }
}
// ANCHOR_END: read

// ANCHOR: io_error
/// An I/O error after the connect, as the report's error (which drops the
/// ` (os error N)` that `io::Error` would print).
pub fn io_error(err: io::Error) -> anyhow::Error {
    FetchError::from_io(&err, false).into()
}
// ANCHOR_END: io_error

// ANCHOR: in_flight
/// Counts fetches in flight, and remembers the most there ever were at once:
/// the report's "achieved concurrency". In lesson 3 nothing but the socket
/// budget bounds it. A fetch counts from its first socket to its end.
///
/// Lesson 1 needed a lock here; one thread needs only `Cell`s, which the
/// crawler and every `Fetcher` change through a shared `Rc`.
#[derive(Debug, Default)]
pub struct InFlight {
    /// Fetches in flight now.
    now: Cell<usize>,
    /// The most there were at once.
    peak: Cell<usize>,
}

impl InFlight {
    /// A fetch has opened its socket. It stays counted until the returned
    /// guard is dropped, however the fetch ends.
    pub fn start(self: &Rc<Self>) -> InFlightGuard {
        self.now.set(self.now.get() + 1);
        self.peak.set(self.peak.get().max(self.now.get()));
        InFlightGuard(Rc::clone(self))
    }

    /// Fetches in flight right now.
    pub fn now(&self) -> usize {
        self.now.get()
    }

    /// The most fetches that were ever in flight at once.
    pub fn peak(&self) -> usize {
        self.peak.get()
    }
}

/// One fetch in flight; dropping it ends the fetch's count.
#[derive(Debug)]
pub struct InFlightGuard(Rc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let now = &self.0.now;
        now.set(now.get().saturating_sub(1));
    }
}
// ANCHOR_END: in_flight
