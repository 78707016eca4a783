//! # Fetching one URL: one attempt, on a pooled connection, with a deadline
//!
//! In lesson 3, `fetch` was a coroutine that connected, sent an HTTP/1.0
//! request, read until the server closed, and parsed. Lesson 4's `fetch` is
//! one *attempt* of the original crawler's `session.get(url,
//! allow_redirects=False)`:
//!
//! - the connection comes from the [`ConnectionPool`]: acquired first,
//!   reused or as a slot to open a new one, before the deadline starts (the
//!   pool resolves the host once per crawl and tries each address in
//!   order);
//! - the request is HTTP/1.1, and reading stops when the parser says the
//!   response is complete — the connection stays open for the next request;
//! - a *stale* pooled connection — one the server closed while it was idle,
//!   which fails before any byte of the response arrives — is not this URL's
//!   fault: the request is resent on a fresh connection, within the same
//!   attempt;
//! - `wait_for` puts the `--timeout` deadline around all of it.
//!
//! What stays the same from fetch to fetch — the pool, the deadline, the
//! limits, the log — is gathered in a [`Session`], aiohttp's name for it.
//! Retries, redirects and links are the crawler's business
//! ([`crate::crawler`]), as in the original.
//!
//! ## The size of a waiting fetch
//!
//! A fetch that waits for its server *is* its coroutine: the states of
//! `work`, `Crawler::fetch`, `fetch`, `get`, `exchange` and the socket's
//! `read`, nested into one value that the compiler lays out and the task
//! boxes. It is as large as its largest state — every `.await` needs room
//! for what is kept across it — and ten thousand waiting fetches are ten
//! thousand of them, so its size is most of this lesson's memory figure.
//! Three habits keep it small:
//!
//! <!-- how -->
//! - what is needed only for a moment lives in a block that ends before
//!   the next `.await` (the request, in `exchange`), or is made when it is
//!   needed (the parser, on the first byte; the connect's state is only
//!   there while connecting, in the room the exchange uses later);
//! - what every fetch shares sits behind one reference (the [`Session`]);
//! - the coroutines a fetch waits in — `fetch`, `get` and `exchange` here,
//!   `Crawler::fetch`, the socket's `read` and `write_all` — are written as
//!   plain functions that return an `async move` block, not as `async fn`.
//!   An `async fn` moves its arguments into variables of its own (so that
//!   they are dropped in the same order as a normal function's), and the
//!   compiler keeps room for both copies for as long as the coroutine
//!   lives. The block uses the arguments where they are. It is the same
//!   coroutine, one to three words smaller at each level: about 80 bytes
//!   in all, of the 480 that a waiting fetch's coroutine now takes.
//! <!-- /how -->

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use anyhow::Context;
use shared::http::{get_request, Limits, Response, ResponseParser, Version};
use shared::log::Log;
use shared::trace::{self, Phase};
use shared::{FailKind, FetchError};
use url::Url;

use crate::connection_pool::{Connection, ConnectionPool, Grant, OutOfDescriptors};
use crate::future::is_cancelled;
use crate::wait_for::{wait_for, TimeoutError};

/// What every fetch of a crawl shares: aiohttp's `ClientSession`.
///
/// One reference to it, rather than four arguments, is also what a fetch's
/// coroutine stores — once per nested coroutine, for every fetch in flight.
pub struct Session {
    /// Keep-alive connections.
    pub pool: ConnectionPool,
    /// `--timeout`: the deadline of one attempt.
    pub timeout: Duration,
    /// Response size limits.
    pub limits: Limits,
    /// `--user-agent`, sent with every request.
    pub user_agent: String,
    /// For the debug line about resent requests.
    pub log: Log,
    /// Fetches in flight now, and the most at once (the report's achieved
    /// concurrency): lesson 3's `InFlight`, shared here by the session.
    pub in_flight: Rc<InFlight>,
}

impl Session {
    /// A session over `pool`, with no fetch in flight yet.
    pub fn new(
        pool: ConnectionPool,
        timeout: Duration,
        limits: Limits,
        user_agent: &str,
        log: Log,
    ) -> Session {
        Session {
            pool,
            timeout,
            limits,
            user_agent: user_agent.to_string(),
            log,
            in_flight: Rc::new(InFlight::default()),
        }
    }
}

// ANCHOR: fetch
/// One attempt at `url`: wait for a socket, then fetch within the
/// session's timeout. The error is a [`FetchError`] (its kind is the
/// report's `fail_<kind>`), [`OutOfDescriptors`], or a cancellation of the
/// task.
#[expect(clippy::manual_async_fn, reason = "an async fn keeps arguments twice")]
pub fn fetch<'a>(
    session: &'a Session,
    url: &'a Url,
) -> impl Future<Output = anyhow::Result<Response>> + 'a {
    async move {
        // The socket first: an idle connection, or a slot for a new one.
        // Waiting for it is no part of the attempt: no deadline runs, and
        // the fetch is not in flight yet.
        let grant = session.pool.acquire(url).await?;
        let _counted = session.in_flight.start();
        match wait_for(pin!(get(session, url, grant)), session.timeout).await {
            Ok(response) => Ok(response),
            Err(err) if is_cancelled(&err) || err.is::<OutOfDescriptors>() => Err(err),
            Err(err) if err.is::<TimeoutError>() => Err(timed_out(session.timeout)),
            Err(err) => Err(FetchError::from_anyhow(&err).into()),
        }
    }
}
// ANCHOR_END: fetch

// ANCHOR: timed_out
/// The error of a fetch that lost its race against the deadline.
pub fn timed_out(timeout: Duration) -> anyhow::Error {
    FetchError::new(FailKind::Timeout, format!("timed out after {timeout:?}")).into()
}
// ANCHOR_END: timed_out

// ANCHOR: get
/// `GET url` on a pooled connection, resending once on a fresh connection
/// when a reused one turns out to be stale. (An `async move` block: see
/// "The size of a waiting fetch" above.)
#[expect(clippy::manual_async_fn, reason = "an async fn keeps arguments twice")]
fn get<'a>(
    session: &'a Session,
    url: &'a Url,
    mut grant: Grant,
) -> impl Future<Output = anyhow::Result<Response>> + 'a {
    async move {
        loop {
            let mut connection = session.pool.connect(url, grant).await?;
            let mut parser = None;
            match exchange(session, &mut connection, url, &mut parser).await {
                Ok(response) => {
                    session.pool.release(connection, response.reusable);
                    return Ok(response);
                }
                // Stale: a reused connection, and not one byte of an answer.
                Err(err)
                    if connection.reused() && !received_any(&parser) && !is_cancelled(&err) =>
                {
                    session.log.debug(format_args!(
                        "{url}: pooled connection was closed ({err:#}), resending"
                    ));
                    grant = Grant::Open(session.pool.reopen(connection));
                }
                Err(err) => return Err(err),
            }
        }
    }
}
// ANCHOR_END: get

/// Has any byte of the response arrived?
fn received_any(parser: &Option<Box<ResponseParser>>) -> bool {
    parser.as_ref().is_some_and(|parser| parser.received_any())
}

// ANCHOR: exchange
/// Send the request, then feed the parser what arrives until it has a
/// complete response (or the server closes: then `finish` decides).
///
/// The parser is made when the first bytes arrive, and boxed: a fetch that
/// is still waiting for its server holds neither a read buffer nor a
/// parser, only an empty `Option`.
#[expect(clippy::manual_async_fn, reason = "an async fn keeps arguments twice")]
fn exchange<'a>(
    session: &'a Session,
    connection: &'a mut Connection,
    url: &'a Url,
    parser: &'a mut Option<Box<ResponseParser>>,
) -> impl Future<Output = anyhow::Result<Response>> + 'a {
    async move {
        let socket = connection.socket();
        {
            // The request lives in this block only (and is made again for a
            // resend): a fetch waiting for its response keeps no copy of
            // what it asked. (A `drop(request)` would not do: the compiler
            // keeps room for every variable still in scope at an `.await`.)
            trace::phase(Phase::Send);
            let request = get_request(url, Version::Http11KeepAlive, &session.user_agent);
            socket
                .write_all(&request)
                .await
                .context("sending request")?;
        }
        trace::phase(Phase::Wait);
        loop {
            let parsed = socket
                .read(|bytes| match parser {
                    Some(parser) if bytes.is_empty() => parser.finish().map(Some),
                    // Closed before a single byte: `finish` says how that ends,
                    // and no parser is kept (nothing was received).
                    None if bytes.is_empty() => ResponseParser::with_limits(session.limits)
                        .finish()
                        .map(Some),
                    _ => parser
                        .get_or_insert_with(|| {
                            Box::new(ResponseParser::with_limits(session.limits))
                        })
                        .feed(bytes),
                })
                .await
                .context("reading response")?;
            if let Some(response) = parsed.context("reading response")? {
                return Ok(response);
            }
        }
    }
}
// ANCHOR_END: exchange

// ANCHOR: in_flight
/// Counts fetches in flight, and remembers the most there ever were at once:
/// the report's "achieved concurrency". Here the workers (`--max-tasks`)
/// bound it. A fetch counts from its socket to the end of its attempt.
///
/// Lesson 1 needed a lock here; one thread needs only `Cell`s, which the
/// crawler and every fetch change through the session's `Rc`.
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
