//! # Fetching one URL with callbacks
//!
//! In lesson 1, `fetch` was one function that ran from top to bottom on its
//! own thread: connect, write the request, read until the response is
//! complete. Every line that waited simply blocked the thread, and the
//! thread's stack remembered where it was.
//!
//! Here nothing may block: one thread runs every fetch. So the function is
//! cut into pieces at every place it would have waited, and each piece is a
//! **callback** that the event loop calls when the socket is ready for the
//! next one:
//!
//! | lesson 1 (`fetch`, one function)          | lesson 2 (`Fetcher`, callbacks)              |
//! |-------------------------------------------|----------------------------------------------|
//! | `TcpStream::connect(addr)` blocks         | [`Fetcher::fetch`] starts a connect, returns |
//! | `write_all(request)` blocks               | [`Fetcher::connected`] and [`Fetcher::send_request`] run when writable |
//! | `read` in a loop blocks                   | [`Fetcher::read_response`] runs when readable |
//! | `set_read_timeout`                        | a timer: [`Fetcher::timed_out`]              |
//! | `return Ok(response)`                     | [`Fetcher::finish`] calls the `done` callback |
//!
//! What the stack used to hold between two lines — the socket, the bytes
//! read so far, which address we are on — must now survive between two
//! callbacks, so it moves into the `Fetcher` object. That is **stack
//! ripping**, and the chapter's complaint about callbacks: the state and
//! the control flow of one fetch are torn across seven methods and a struct.
//!
//! ## How the callbacks reach the `Fetcher`
//!
//! Python registers `self.connected`, a *bound method*: the function plus
//! the object it runs on. Here a `Fetcher` lives in an `Rc<RefCell<_>>`, and
//! [`Fetcher::bind`] makes the equivalent: a closure holding one `Rc` to the
//! fetcher, which borrows it and calls the method. The event loop keeps the
//! closures; the closures keep the fetcher alive. When the fetch ends, its
//! socket is deregistered and its timer cancelled, the closures are dropped,
//! and with the last `Rc` the fetcher is freed. The fetcher keeps a handle
//! to the loop, as asyncio objects keep their `_loop`, so a step can install
//! the next step's callback.
//!
//! ## What mio requires of us
//!
//! - A connect is finished only when a *writable* event comes **and**
//!   `take_error()` reports no error **and** `peer_addr()` succeeds: the
//!   recipe in the docs of `mio::net::TcpStream::connect`. An error means
//!   this address failed: try the next one the resolver gave.
//! - Events can be **spurious**: a callback may run when the socket is not
//!   ready after all. Every read and write is therefore attempted, and
//!   `WouldBlock` just means "wait for the next event".
//! - Events are **edge-triggered**: after an event, keep reading (or
//!   writing) until `WouldBlock`, or the bytes left behind may never be
//!   announced again. For the same reason a step that installs a callback
//!   first tries its operation at once: an edge that came while no callback
//!   was installed is not announced twice.
//! - A write may take only part of the request: keep the rest and continue
//!   when the socket is writable again.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::rc::{Rc, Weak};
use std::time::Duration;

use mio::net::TcpStream;
use mio::Token;
use url::Url;

use shared::http::{get_request, Limits, Response, ResponseParser, Version};
use shared::net::{self, Resolver};
use shared::trace::{self, FetchSpan, Phase};
use shared::{FailKind, FetchError};

use crate::event_loop::{EventLoop, TimerHandle};

/// How a fetch ended, as its `done` callback hears it.
#[derive(Debug)]
pub enum Fetched {
    /// The fetch ran: the response, or why there is none (what lesson 1's
    /// `fetch` returns).
    Done(Result<Response, FetchError>),
    /// There was no file descriptor left for the socket, while other
    /// fetches held one. Not this URL's fault: the crawler puts it back in
    /// line until another fetch closes its socket.
    OutOfDescriptors {
        /// How many fetches held a socket then: as many as the process can
        /// hold. Counted here, because `done` hears of it a turn later, when
        /// some of them may have ended already.
        in_flight: usize,
    },
}

/// How many bytes each `read` may return (as in lesson 1).
const READ_CHUNK: usize = 16 * 1024;

/// What the crawler wants called when a fetch ends.
pub type Done = Box<dyn FnOnce(Fetched)>;

/// One step of a fetch: a method run by the event loop.
type Step = fn(&mut Fetcher);

// ANCHOR: fetcher
/// The state of one fetch, kept between its callbacks (the tutorial's
/// `Fetcher` class).
pub struct Fetcher {
    /// The URL being fetched (the tutorial's `self.url`).
    url: Url,
    /// The loop this fetch runs on, where each step installs the next.
    event_loop: EventLoop,
    /// The `Rc` this fetcher lives in, so that a step can hand the event
    /// loop a callback bound to this fetcher. `Weak`: a fetcher must not keep
    /// itself alive; the loop's callbacks do that.
    this: Weak<RefCell<Fetcher>>,
    /// Resolves the URL's host (once per crawl: the resolver caches).
    resolver: Rc<Resolver>,
    /// The crawl's count of fetches in flight, which this fetch joins when
    /// it opens its first socket.
    in_flight: Rc<InFlight>,
    /// This fetch's place in that count, from its first socket to its end.
    counted: Option<InFlightGuard>,
    /// The whole-fetch deadline (`--timeout`).
    timeout: Duration,
    /// Addresses not tried yet, in the resolver's order (`localhost` may
    /// give `::1` first, and nothing may listen there).
    addrs: VecDeque<SocketAddr>,
    /// Why the last address failed, for the error when every one did.
    connect_error: Option<io::Error>,
    /// The socket and its registration, while connecting or connected (the
    /// tutorial's `self.sock`). Dropping it closes the descriptor.
    sock: Option<(TcpStream, Token)>,
    /// The request, written as the socket takes it.
    request: Vec<u8>,
    /// How much of `request` is written: a write may take only part of it.
    sent: usize,
    /// Everything read so far, parsed as it arrives (the tutorial's
    /// `self.response`, but it also says when the response is complete).
    parser: ResponseParser,
    /// The deadline timer, cancelled when the fetch ends first.
    timer: Option<TimerHandle>,
    /// Who to tell how the fetch ended. Taken when called, so a fetch ends
    /// exactly once even if a late event or the timer comes after.
    done: Option<Done>,
    /// The fetch in the trace (`--trace`), given by `fetch`. A callback
    /// runs with no memory of the fetch it belongs to: each one `bind`
    /// makes enters this span again, so the phases it marks land here.
    span: FetchSpan,
}
// ANCHOR_END: fetcher

impl Fetcher {
    /// A fetcher for `url` that will call `done` when it ends, sending
    /// `User-Agent: agent`. Nothing happens until [`Fetcher::fetch`].
    ///
    /// (One argument for each thing a fetch needs, as the tutorial's
    /// `Fetcher` takes them; lesson 4 gathers them in a `Session`.)
    #[expect(clippy::too_many_arguments, reason = "see above")]
    pub fn new<F>(
        event_loop: &EventLoop,
        url: Url,
        resolver: Rc<Resolver>,
        in_flight: Rc<InFlight>,
        timeout: Duration,
        limits: Limits,
        agent: &str,
        done: F,
    ) -> Rc<RefCell<Fetcher>>
    where
        F: FnOnce(Fetched) + 'static,
    {
        Rc::new_cyclic(|this| {
            RefCell::new(Fetcher {
                request: get_request(&url, Version::Http10Close, agent),
                url,
                event_loop: event_loop.clone(),
                this: this.clone(),
                resolver,
                in_flight,
                counted: None,
                timeout,
                addrs: VecDeque::new(),
                connect_error: None,
                sock: None,
                sent: 0,
                parser: ResponseParser::with_limits(limits),
                timer: None,
                done: Some(Box::new(done)),
                span: FetchSpan::off(),
            })
        })
    }

    // ANCHOR: fetch
    /// Start the fetch: arm the deadline, resolve the host, start
    /// connecting. Returns at once; the event loop does the rest, in
    /// callbacks that each enter `span` (see `bind`).
    pub fn fetch(&mut self, span: FetchSpan) {
        self.span = span;
        let timed_out = self.bind(Fetcher::timed_out);
        self.timer = Some(self.event_loop.call_later(self.timeout, timed_out));
        // Resolving blocks (the C library has no non-blocking lookup), but
        // only on a host's first URL: the resolver caches the answer.
        trace::phase(Phase::Resolve);
        match self.resolver.resolve(&self.url) {
            Ok(addrs) => self.connect_any(addrs),
            Err(err) => self.finish(Fetched::Done(Err(err))),
        }
    }

    /// Connect to the first of `addrs` that accepts: `connect` to each in
    /// turn, from the callback of the one before when it fails.
    pub fn connect_any(&mut self, addrs: Vec<SocketAddr>) {
        trace::phase(Phase::Connect);
        self.addrs = addrs.into();
        self.connect();
    }

    /// Start a non-blocking connect to the next address, and wait for the
    /// socket to become writable: that is when `connected` runs.
    fn connect(&mut self) {
        while let Some(addr) = self.addrs.pop_front() {
            // Returns at once, with the handshake still going on.
            match TcpStream::connect(addr) {
                Ok(mut sock) => match self.event_loop.register(&mut sock) {
                    Ok(token) => {
                        self.sock = Some((sock, token));
                        if self.counted.is_none() {
                            self.counted = Some(self.in_flight.start());
                        }
                        // A finished connect announces itself as writable.
                        let connected = self.bind(Fetcher::connected);
                        if let Err(err) = self.event_loop.add_writer(token, connected) {
                            return self.fail(&err);
                        }
                        return;
                    }
                    Err(err) => self.connect_error = Some(err),
                },
                // Others will close their sockets: wait for one. (With
                // nothing in flight, nothing would: the error is the URL's.)
                // This fetch holds no socket now, so it does not count.
                Err(err) if net::is_out_of_descriptors(&err) && self.in_flight.now() > 0 => {
                    let in_flight = self.in_flight.now();
                    return self.finish(Fetched::OutOfDescriptors { in_flight });
                }
                // Some errors come at once (no route, refused on some
                // systems): they are this address's failure, not the URL's.
                Err(err) => self.connect_error = Some(err),
            }
        }
        let err = self
            .connect_error
            .take()
            .map(|e| FetchError::from_io(&e, true))
            // No address at all: a name that resolved to nothing is a
            // `dns` error, as the resolver itself says it.
            .unwrap_or_else(|| FetchError::new(FailKind::Dns, "no address to connect to"));
        self.finish(Fetched::Done(Err(err)));
    }
    // ANCHOR_END: fetch

    // ANCHOR: connected
    /// The socket became writable: the connect has finished — or failed, or
    /// the event was spurious. mio's recipe tells which.
    fn connected(&mut self) {
        let Some((sock, _)) = &self.sock else {
            return;
        };
        let failure = match sock.take_error() {
            Ok(Some(err)) | Err(err) => Some(err),
            Ok(None) => match sock.peer_addr() {
                Ok(_) => None,
                // Not connected yet: a spurious event. Wait for the next.
                Err(err) if still_connecting(&err) => return,
                Err(err) => Some(err),
            },
        };
        if let Some(err) = failure {
            // This address failed: close its socket and try the next one.
            // Holding no socket until then, the fetch does not count in
            // flight: out of descriptors at the next address, it must not
            // count itself among the fetches that will free one.
            self.connect_error = Some(err);
            self.close();
            self.counted = None;
            return self.connect();
        }
        trace::phase(Phase::Send);
        self.send_request();
    }

    /// Write the request, as much as the socket takes. When all of it is
    /// written, wait for the response; when the socket is full, wait until
    /// it is writable again and continue here.
    fn send_request(&mut self) {
        let Some((sock, token)) = &mut self.sock else {
            return;
        };
        let token = *token;
        while self.sent < self.request.len() {
            match sock.write(&self.request[self.sent..]) {
                Ok(0) => {
                    let err = io::Error::from(io::ErrorKind::WriteZero);
                    return self.fail(&err);
                }
                Ok(n) => self.sent += n,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    // The rest waits for the next writable event, which must
                    // now run this step rather than `connected`.
                    let more = self.bind(Fetcher::send_request);
                    if let Err(err) = self.event_loop.add_writer(token, more) {
                        self.fail(&err);
                    }
                    return;
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return self.fail(&err),
            }
        }
        // The whole request is out: from now on, wait for the response —
        // holding as little as possible while waiting, so not the request.
        self.request = Vec::new();
        trace::phase(Phase::Wait);
        self.event_loop.remove_writer(token);
        let read_response = self.bind(Fetcher::read_response);
        if let Err(err) = self.event_loop.add_reader(token, read_response) {
            return self.fail(&err);
        }
        // The response may have arrived already, its edge announced while no
        // reader was installed: read now, and wait only after `WouldBlock`.
        self.read_response();
    }
    // ANCHOR_END: connected

    // ANCHOR: read_response
    /// The socket became readable: read everything it has, feeding the
    /// parser, until the response is complete, the peer closes, or the socket
    /// runs dry (`WouldBlock`: wait for the next event).
    fn read_response(&mut self) {
        // On the stack, not in the `Fetcher`: only one callback runs at a
        // time, so a fetch waiting for its response holds no buffer at all.
        let mut buf = [0u8; READ_CHUNK];
        loop {
            let Some((sock, _)) = &mut self.sock else {
                return;
            };
            let result = match sock.read(&mut buf) {
                // The peer closed: a response delimited by the close is
                // complete now; anything else unfinished is an error.
                Ok(0) => self.parser.finish(),
                Ok(n) => match self.parser.feed(&buf[..n]) {
                    Ok(Some(response)) => Ok(response),
                    Ok(None) => continue,
                    Err(err) => Err(err),
                },
                // Drained, or the event was spurious: wait for the next one.
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => Err(FetchError::from_io(&err, false)),
            };
            return self.finish(Fetched::Done(result));
        }
    }
    // ANCHOR_END: read_response

    // ANCHOR: timed_out
    /// The deadline passed before the fetch ended.
    fn timed_out(&mut self) {
        // This timer is running, so there is nothing left to cancel.
        self.timer = None;
        let err = FetchError::new(FailKind::Timeout, "timed out");
        self.finish(Fetched::Done(Err(err)));
    }

    /// End the fetch with an I/O error from the request or the response.
    fn fail(&mut self, err: &io::Error) {
        let err = FetchError::from_io(err, false);
        self.finish(Fetched::Done(Err(err)));
    }
    // ANCHOR_END: timed_out

    // ANCHOR: finish
    /// End the fetch: close the socket, cancel the deadline, and tell the
    /// crawler — on the next turn of the loop, never from inside this call.
    fn finish(&mut self, fetched: Fetched) {
        self.close();
        self.counted = None;
        if let Some(timer) = self.timer.take() {
            timer.cancel();
        }
        if let Some(done) = self.done.take() {
            // `fetch` can end the fetch at once (a host that does not
            // resolve, no descriptor left) while the crawler that called it
            // is still busy. Calling `done` directly would re-enter the
            // crawler; `call_soon` waits until it has returned.
            self.event_loop.call_soon(move || done(fetched));
        }
    }
    // ANCHOR_END: finish

    // ANCHOR: close
    /// Deregister and close the socket, if there is one: its callbacks are
    /// dropped with it.
    fn close(&mut self) {
        if let Some((mut sock, token)) = self.sock.take() {
            self.event_loop.deregister(&mut sock, token);
        }
    }
    // ANCHOR_END: close

    // ANCHOR: bind
    /// `self.step` as a callback the event loop can keep: Python's bound
    /// method. The closure holds a strong `Rc`, so the fetcher lives as long
    /// as the loop may still call it; and the fetch's trace span, entered
    /// while the step runs.
    fn bind(&self, step: Step) -> impl Fn() + 'static {
        let this = self.this.upgrade();
        let span = self.span.clone();
        move || {
            if let Some(this) = &this {
                span.in_scope(|| step(&mut this.borrow_mut()));
            }
        }
    }
    // ANCHOR_END: bind
}

// ANCHOR: still_connecting
/// Is this `peer_addr` error "the handshake is still going on"? Linux says
/// `ENOTCONN` (`NotConnected`); mio's docs add `EINPROGRESS` for other
/// systems, which std has no stable error kind for yet.
fn still_connecting(err: &io::Error) -> bool {
    const EINPROGRESS: i32 = if cfg!(target_os = "linux") { 115 } else { 36 };
    err.kind() == io::ErrorKind::NotConnected || err.raw_os_error() == Some(EINPROGRESS)
}
// ANCHOR_END: still_connecting

// ANCHOR: in_flight
/// Counts fetches in flight, and remembers the most there ever were at once:
/// the report's "achieved concurrency". In lesson 2 nothing but the socket
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
