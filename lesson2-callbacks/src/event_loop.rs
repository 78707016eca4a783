//! # The event loop: readiness events in, callbacks out
//!
//! Lesson 1 gave every fetch its own thread, and each thread spent nearly all
//! of its life asleep inside `connect` or `read`. This module is the other
//! way to wait: **one** thread asks the operating system "which of these
//! sockets can make progress now?", and for each socket that can, calls the
//! function that was registered for it. The tutorial's loop is four lines:
//!
//! ```text
//! while not stopped:
//!     events = selector.select()
//!     for event_key, event_mask in events:
//!         callback = event_key.data
//!         callback(event_key, event_mask)
//! ```
//!
//! [`EventLoop::run`] is those four lines, plus the two things a real crawler
//! cannot do without: timers (a stuck server must not stall a fetch forever,
//! so every fetch has a deadline — [`EventLoop::call_later`]) and a queue of
//! callbacks to run "soon", on the next turn of the loop rather than in the
//! middle of whatever is running now ([`EventLoop::call_soon`], asyncio's
//! name).
//!
//! The selector is `mio::Poll`: `epoll` on Linux, `kqueue` on the BSDs and
//! macOS. It speaks *readiness*: "this socket is readable" means a `read` now
//! will not block (it may still return `WouldBlock`: see the notes on
//! spurious events in `fetch.rs`). mio also registers every socket
//! **edge-triggered**: an event says readiness *changed*, so a callback must
//! read (or write) until `WouldBlock`, or it will not hear about the bytes it
//! left behind.
//!
//! ## Who owns a callback? (the Rust part of this lesson)
//!
//! In Python, `selector.register(fd, EVENT_WRITE, self.connected)` stores a
//! bound method in the selector, and the loop calls it. In Rust the loop
//! stores a `Box<dyn FnMut(&mut EventLoop)>` per [`Token`]. The callback gets
//! `&mut EventLoop` because it must be able to register, modify and
//! unregister sockets and start timers — that is how a fetch moves from one
//! step to the next and how a finished page starts new fetches.
//!
//! But a callback *stored inside* the loop cannot be called with `&mut` to
//! that same loop: that would be two mutable borrows of one value. So the
//! loop **takes the callback out of its slot** while it runs, and puts it
//! back afterwards — unless the callback replaced itself (`modify`) or
//! removed itself (`unregister`) meanwhile. The state a callback works on
//! (the socket, the bytes read so far) cannot live on the stack between two
//! callbacks, so it lives in an object the closures share: see `Fetcher` in
//! `fetch.rs`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::time::{Duration, Instant};

use mio::event::Source;
use mio::{Events, Interest, Poll, Token};

/// What runs when a registered socket becomes ready. It may run many times
/// (every readiness event), hence `FnMut`; it gets the loop so it can
/// register, modify or unregister sockets and start timers.
pub type Callback = Box<dyn FnMut(&mut EventLoop)>;

/// What runs once: a timer's callback, or one scheduled with `call_soon`.
pub type Handle = Box<dyn FnOnce(&mut EventLoop)>;

/// Names one pending timer, so it can be cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimerHandle {
    /// When the timer is due.
    when: Instant,
    /// Breaks ties between timers due at the same instant: the one started
    /// first runs first.
    seq: u64,
}

/// A single-threaded event loop over `mio::Poll`.
pub struct EventLoop {
    /// The selector: `epoll` here. Sockets are registered with it under a
    /// [`Token`], and it hands back the tokens of sockets that became ready.
    poll: Poll,
    /// Reused buffer for the readiness events of one `poll` call.
    events: Events,
    /// Token → the callback registered for that socket (the tutorial's
    /// `event_key.data`). The slot is `None` while its callback is running
    /// (it has been taken out to be called with `&mut self`).
    callbacks: HashMap<Token, Option<Callback>>,
    /// The next token to hand out. Tokens are never reused: an event for a
    /// socket unregistered earlier in the same batch then finds no callback,
    /// instead of waking whatever socket was registered under its old token.
    next_token: usize,
    /// Callbacks to run on the next turn of the loop (`call_soon`), in order.
    ready: VecDeque<Handle>,
    /// Pending timers ordered by due time, then by the order they were
    /// started, so the first due is always the first entry.
    timers: BTreeMap<TimerHandle, Handle>,
    /// The `seq` of the next timer.
    next_timer: u64,
    /// Set by [`EventLoop::stop`]: the tutorial's `stopped` flag.
    stopped: bool,
}

impl EventLoop {
    /// A loop with nothing registered.
    pub fn new() -> io::Result<EventLoop> {
        Ok(EventLoop {
            poll: Poll::new()?,
            events: Events::with_capacity(1024),
            callbacks: HashMap::new(),
            next_token: 0,
            ready: VecDeque::new(),
            timers: BTreeMap::new(),
            next_timer: 0,
            stopped: false,
        })
    }

    // ANCHOR: register
    /// Watch `source` for `interest` (readable or writable) and call
    /// `callback` each time it becomes ready: `selector.register(fd, events,
    /// callback)`. The returned token names this registration.
    pub fn register<S, F>(
        &mut self,
        source: &mut S,
        interest: Interest,
        callback: F,
    ) -> io::Result<Token>
    where
        S: Source + ?Sized,
        F: FnMut(&mut EventLoop) + 'static,
    {
        let token = Token(self.next_token);
        self.next_token += 1;
        self.poll.registry().register(source, token, interest)?;
        self.callbacks.insert(token, Some(Box::new(callback)));
        Ok(token)
    }

    /// Change what a registered socket waits for and what runs when it is
    /// ready: `selector.modify(fd, events, callback)`. A fetch calls this to
    /// move from its `connected` step to its `read_response` step.
    ///
    /// Re-arming with `epoll_ctl(MOD)` also reports readiness that is already
    /// there, so a response that arrived before the switch is not missed.
    pub fn modify<S, F>(
        &mut self,
        source: &mut S,
        token: Token,
        interest: Interest,
        callback: F,
    ) -> io::Result<()>
    where
        S: Source + ?Sized,
        F: FnMut(&mut EventLoop) + 'static,
    {
        self.poll.registry().reregister(source, token, interest)?;
        // If this runs inside the callback being replaced, its slot is empty
        // now; filling it tells `dispatch` not to put the old one back.
        self.callbacks.insert(token, Some(Box::new(callback)));
        Ok(())
    }

    /// Stop watching `source`: `selector.unregister(fd)`. Its callback is
    /// dropped (after it returns, if it is the one running), together with
    /// everything it captured.
    pub fn unregister<S>(&mut self, source: &mut S, token: Token) -> io::Result<()>
    where
        S: Source + ?Sized,
    {
        // Forget the callback even if the OS call fails: a socket we no
        // longer listen to must never call back into a finished fetch.
        self.callbacks.remove(&token);
        self.poll.registry().deregister(source)
    }
    // ANCHOR_END: register

    /// Run `callback` on the next turn of the loop, after the callbacks
    /// already scheduled (asyncio's `call_soon`). Used to report a result
    /// from code that may itself be running inside someone else's callback,
    /// where calling back directly would re-enter it.
    pub fn call_soon<F>(&mut self, callback: F)
    where
        F: FnOnce(&mut EventLoop) + 'static,
    {
        self.ready.push_back(Box::new(callback));
    }

    /// Run `callback` once, `delay` from now (asyncio's `call_later`).
    pub fn call_later<F>(&mut self, delay: Duration, callback: F) -> TimerHandle
    where
        F: FnOnce(&mut EventLoop) + 'static,
    {
        self.call_at(Instant::now() + delay, callback)
    }

    /// Run `callback` once, at `when` (asyncio's `call_at`). Timers due at the
    /// same instant run in the order they were started.
    pub fn call_at<F>(&mut self, when: Instant, callback: F) -> TimerHandle
    where
        F: FnOnce(&mut EventLoop) + 'static,
    {
        let handle = TimerHandle {
            when,
            seq: self.next_timer,
        };
        self.next_timer += 1;
        self.timers.insert(handle, Box::new(callback));
        handle
    }

    /// Cancel a pending timer; `false` when it already ran or was cancelled.
    /// Its callback is dropped unrun.
    pub fn cancel(&mut self, timer: TimerHandle) -> bool {
        self.timers.remove(&timer).is_some()
    }

    /// Make [`EventLoop::run`] return once the callback now running returns.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Is anything registered, scheduled or pending? If not, nothing can ever
    /// call [`EventLoop::stop`], and waiting would be waiting forever.
    pub fn has_work(&self) -> bool {
        !self.callbacks.is_empty() || !self.ready.is_empty() || !self.timers.is_empty()
    }

    /// How many sockets are registered.
    pub fn registered(&self) -> usize {
        self.callbacks.len()
    }

    // ANCHOR: run
    /// Turn readiness events into callbacks until [`EventLoop::stop`] is
    /// called — or until there is nothing left to wait for, which a correct
    /// program never reaches with work undone, but which must end the loop
    /// rather than block in `poll` forever.
    pub fn run(&mut self) -> io::Result<()> {
        while !self.stopped && self.has_work() {
            self.run_once()?;
        }
        // Reset, so that a stopped loop can be run again.
        self.stopped = false;
        Ok(())
    }

    /// One turn: wait for events (no longer than the next timer is due), call
    /// the callback of every ready socket, then the timers that are due, then
    /// what was scheduled with `call_soon` before this turn began.
    pub fn run_once(&mut self) -> io::Result<()> {
        let timeout = self.poll_timeout();
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            // A signal interrupted the wait: not an error, just no events.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => self.events.clear(),
            Err(e) => return Err(e),
        }
        // Copy the tokens out: `self.events` cannot stay borrowed while the
        // callbacks get `&mut self`.
        let tokens: Vec<Token> = self.events.iter().map(|event| event.token()).collect();
        for token in tokens {
            self.dispatch(token);
        }
        self.run_due_timers();
        // Only what was scheduled before now: a callback that schedules
        // another with `call_soon` must not keep this turn going forever.
        for _ in 0..self.ready.len() {
            if let Some(handle) = self.ready.pop_front() {
                handle(self);
            }
        }
        Ok(())
    }
    // ANCHOR_END: run

    // ANCHOR: dispatch
    /// Call the callback registered under `token`, if there still is one.
    fn dispatch(&mut self, token: Token) {
        // Take the callback out of the map: it needs `&mut self`, and the
        // map is part of `self`. A stale token (unregistered by an earlier
        // callback of this batch) finds nothing and is skipped.
        let Some(mut callback) = self.callbacks.get_mut(&token).and_then(Option::take) else {
            return;
        };
        callback(self);
        // Put it back — unless it unregistered itself (the slot is gone) or
        // replaced itself with `modify` (the slot is full again).
        if let Some(slot @ None) = self.callbacks.get_mut(&token) {
            *slot = Some(callback);
        }
    }
    // ANCHOR_END: dispatch

    /// How long `poll` may block: not at all when callbacks are waiting to
    /// run, until the first timer is due when there is one, else forever.
    fn poll_timeout(&self) -> Option<Duration> {
        if !self.ready.is_empty() {
            return Some(Duration::ZERO);
        }
        self.timers
            .keys()
            .next()
            .map(|first| first.when.saturating_duration_since(Instant::now()))
    }

    /// Run every timer whose time has come, earliest first.
    fn run_due_timers(&mut self) {
        let now = Instant::now();
        // Only timers due by `now`: a timer that starts a zero-delay timer
        // gets it run on the next turn, after I/O has had its chance.
        while let Some(entry) = self.timers.first_entry() {
            if entry.key().when > now {
                break;
            }
            let handle = entry.remove();
            handle(self);
        }
    }
}

impl std::fmt::Debug for EventLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLoop")
            .field("registered", &self.callbacks.len())
            .field("ready", &self.ready.len())
            .field("timers", &self.timers.len())
            .field("stopped", &self.stopped)
            .finish()
    }
}
