//! # The fetch coroutine, written out by hand
//!
//! `generator.rs` wrote small generators as explicit state machines. This
//! file does the same for the crawler's real `fetch`: one struct that
//! implements [`std::future::Future`] — exactly the trait the compiler
//! implements for `Fetcher::fetch` in `fetch.rs` — with an enum saying which
//! step the fetch is in:
//!
//! ```text
//! Start ──resolve──▶ Connecting ──▶ Sending ──▶ Reading ──▶ Done
//!                    (next address on failure)
//! ```
//!
//! Each variant holds the locals alive at that step: the socket, the
//! readiness future being waited on, the request and how much of it is
//! written, the parser.
//!
//! A [`Task`](crate::task::Task) drives it like any coroutine, and it gives
//! the same results, with the same error chains, as the `async fn` — the
//! tests in `tests/fetch.rs` run both.
//! <!-- how -->
//! `poll` is a loop around one `match`: take the state out, do what can be
//! done without waiting, and either move on to the next state or put the
//! state back and return `Pending`.
//!
//! Compare the two: every line of bookkeeping below (moving the socket from
//! variant to variant, putting the state back before returning `Pending`,
//! remembering the last connect error, attaching each error's context by
//! hand) is what `async fn` writes for us. Lesson 2's callbacks did the same bookkeeping, scattered over
//! seven methods; here it is at least in one place, and the compiler's
//! version has none of it in the source at all.
//! <!-- /how -->

use std::future::Future as _;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::vec;

use anyhow::Context as _;
use shared::http::{get_request, Response, ResponseParser, Version};
use shared::net;
use shared::trace::{self, Phase};
use shared::{FailKind, FetchError};

use crate::fetch::{connect_error, io_error, timed_out, Fetched, Fetcher, InFlightGuard};
use crate::future::Future;
use crate::sleep::{sleep, Sleep};
use crate::socket::{Direction, Socket};

// ANCHOR: state
/// Where the fetch is, and the locals alive there.
enum State {
    /// Not started.
    Start,
    /// A connect to `addr` is under way.
    Connecting {
        sock: Socket,
        /// Resolved when the socket becomes writable.
        ready: Future<()>,
        /// The address being tried, for the error's context.
        addr: SocketAddr,
        /// The addresses still to try if this one fails.
        rest: vec::IntoIter<SocketAddr>,
        /// This fetch's place in the count of fetches in flight.
        counted: InFlightGuard,
    },
    /// Connected; writing the request.
    Sending {
        sock: Socket,
        /// Set while waiting for room in the socket's buffer.
        ready: Option<Future<()>>,
        request: Vec<u8>,
        /// How much of `request` is written.
        sent: usize,
        counted: InFlightGuard,
    },
    /// Reading the response.
    Reading {
        sock: Socket,
        /// Set while waiting for bytes.
        ready: Option<Future<()>>,
        parser: ResponseParser,
        counted: InFlightGuard,
    },
    /// Returned (or never to be polled again).
    Done,
}
// ANCHOR_END: state

/// The fetch of one URL as a hand-written future: `Fetcher::fetch` without
/// the compiler's help.
pub struct FetchByHand<'a> {
    /// What to fetch, and with what.
    fetcher: &'a Fetcher,
    /// The whole-fetch deadline, polled whenever the fetch has to wait.
    deadline: Sleep,
    /// Where the fetch is.
    state: State,
}

/// Fetch `fetcher`'s URL with the hand-written state machine. Same API as
/// `fetcher.fetch()`.
pub fn fetch_by_hand(fetcher: &Fetcher) -> FetchByHand<'_> {
    FetchByHand {
        fetcher,
        deadline: sleep(fetcher.timeout),
        state: State::Start,
    }
}

// ANCHOR: poll
impl std::future::Future for FetchByHand<'_> {
    type Output = Fetched;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Fetched> {
        // Every field is `Unpin` (nothing points into this struct), so it
        // can be used as a plain `&mut`.
        let this = &mut *self;
        // The fetch first, then the deadline, as `wait_for` does in
        // `fetch.rs`: a response complete at the deadline is kept. Both
        // register this task's waker, so either can wake it.
        let result = match this.step(cx) {
            Poll::Ready(result) => result,
            Poll::Pending if Pin::new(&mut this.deadline).poll(cx).is_ready() => {
                Err(timed_out(this.fetcher.timeout))
            }
            Poll::Pending => return Poll::Pending,
        };
        // Dropping the state closes the socket and ends the in-flight count.
        this.state = State::Done;
        Poll::Ready(this.fetcher.outcome(result))
    }
}

impl FetchByHand<'_> {
    /// Advance through the states until one has to wait (`Pending`) or the
    /// fetch is over.
    fn step(&mut self, cx: &mut Context<'_>) -> Poll<anyhow::Result<Response>> {
        loop {
            // Taken out so its fields can move into the next state; every
            // path below stores a state back or returns the result.
            self.state = match std::mem::replace(&mut self.state, State::Done) {
                State::Start => {
                    trace::phase(Phase::Resolve);
                    let addrs = self.fetcher.resolver.resolve(&self.fetcher.url)?;
                    let counted = self.fetcher.in_flight.start();
                    trace::phase(Phase::Connect);
                    self.connect_next(addrs.into_iter(), None, counted)?
                }
                State::Connecting {
                    sock,
                    mut ready,
                    addr,
                    rest,
                    counted,
                } => {
                    if Pin::new(&mut ready).poll(cx).is_pending() {
                        self.state = State::Connecting {
                            sock,
                            ready,
                            addr,
                            rest,
                            counted,
                        };
                        return Poll::Pending;
                    }
                    match sock.is_connected() {
                        Ok(true) => {
                            trace::phase(Phase::Send);
                            State::Sending {
                                sock,
                                ready: None,
                                request: get_request(
                                    &self.fetcher.url,
                                    Version::Http10Close,
                                    &self.fetcher.agent,
                                ),
                                sent: 0,
                                counted,
                            }
                        }
                        // A spurious event: wait for the next.
                        Ok(false) => {
                            let ready = sock
                                .ready(Direction::Write)
                                .map_err(connect_error)
                                .with_context(|| format!("connecting to {addr}"))?;
                            State::Connecting {
                                sock,
                                ready,
                                addr,
                                rest,
                                counted,
                            }
                        }
                        Err(err) => {
                            drop(sock);
                            let err = connect_error(err).context(format!("connecting to {addr}"));
                            self.connect_next(rest, Some(err), counted)?
                        }
                    }
                }
                State::Sending {
                    sock,
                    mut ready,
                    request,
                    mut sent,
                    counted,
                } => {
                    if let Some(waiting) = &mut ready {
                        if Pin::new(waiting).poll(cx).is_pending() {
                            self.state = State::Sending {
                                sock,
                                ready,
                                request,
                                sent,
                                counted,
                            };
                            return Poll::Pending;
                        }
                    }
                    // Write until done or the socket is full. A write that
                    // takes only part of the request is normal, not an error.
                    let wait = loop {
                        if sent == request.len() {
                            break false;
                        }
                        match std::io::Write::write(&mut sock.stream(), &request[sent..]) {
                            Ok(0) => {
                                let err = io_error(std::io::ErrorKind::WriteZero.into());
                                return Poll::Ready(Err(err.context("sending request")));
                            }
                            Ok(n) => sent += n,
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break true,
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(e) => {
                                return Poll::Ready(Err(io_error(e).context("sending request")))
                            }
                        }
                    };
                    if wait {
                        // A fresh future per wait: the old one is resolved,
                        // and a resolved future would not wait at all.
                        let ready = sock
                            .ready(Direction::Write)
                            .map_err(io_error)
                            .context("sending request")?;
                        State::Sending {
                            sock,
                            ready: Some(ready),
                            request,
                            sent,
                            counted,
                        }
                    } else {
                        trace::phase(Phase::Wait);
                        State::Reading {
                            sock,
                            ready: None,
                            parser: ResponseParser::with_limits(self.fetcher.limits),
                            counted,
                        }
                    }
                }
                State::Reading {
                    sock,
                    mut ready,
                    mut parser,
                    counted,
                } => {
                    if let Some(waiting) = &mut ready {
                        if Pin::new(waiting).poll(cx).is_pending() {
                            self.state = State::Reading {
                                sock,
                                ready,
                                parser,
                                counted,
                            };
                            return Poll::Pending;
                        }
                    }
                    // Read until the response is complete, the peer closes,
                    // or the socket runs dry.
                    loop {
                        let done = match sock.read_chunk() {
                            Ok(chunk) if chunk.is_empty() => Some(parser.finish()),
                            Ok(chunk) => parser.feed(&chunk).transpose(),
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => None,
                            Err(e) => {
                                return Poll::Ready(Err(io_error(e).context("reading response")))
                            }
                        };
                        if let Some(result) = done {
                            return Poll::Ready(
                                result
                                    .map_err(anyhow::Error::new)
                                    .context("reading response"),
                            );
                        }
                    }
                    let ready = sock
                        .ready(Direction::Read)
                        .map_err(io_error)
                        .context("reading response")?;
                    State::Reading {
                        sock,
                        ready: Some(ready),
                        parser,
                        counted,
                    }
                }
                State::Done => {
                    let err = FetchError::new(FailKind::Protocol, "fetch polled after it ended");
                    return Poll::Ready(Err(err.into()));
                }
            };
        }
    }

    /// Start connecting to the next address of `rest`; when none is left,
    /// fail with the last address's error.
    fn connect_next(
        &self,
        mut rest: vec::IntoIter<SocketAddr>,
        mut last_error: Option<anyhow::Error>,
        counted: InFlightGuard,
    ) -> anyhow::Result<State> {
        for addr in rest.by_ref() {
            let context = || format!("connecting to {addr}");
            let sock = match Socket::start_connect(addr) {
                Ok(sock) => sock,
                Err(err) if net::is_out_of_descriptors(&err) => return Err(err.into()),
                Err(err) => {
                    last_error = Some(connect_error(err).context(context()));
                    continue;
                }
            };
            match sock.ready(Direction::Write) {
                Ok(ready) => {
                    return Ok(State::Connecting {
                        sock,
                        ready,
                        addr,
                        rest,
                        counted,
                    })
                }
                Err(err) => last_error = Some(connect_error(err).context(context())),
            }
        }
        // No address at all: a name that resolved to nothing is a `dns`
        // error, as the resolver itself says it.
        Err(last_error
            .unwrap_or_else(|| FetchError::new(FailKind::Dns, "no address to connect to").into()))
    }
}
// ANCHOR_END: poll
