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
//! [`EventLoop::run_once`] is one turn of those lines, written the way
//! asyncio writes them, with the two things a real crawler cannot do
//! without: timers (a stuck server must not stall a fetch forever, so every
//! fetch has a deadline — [`EventLoop::call_later`]) and a queue of
//! callbacks to run "soon", on the next turn of the loop rather than in the
//! middle of whatever is running now ([`EventLoop::call_soon`]). Both hand
//! back a [`Handle`] (a [`TimerHandle`] for a timer) that can cancel the
//! callback, and the loop reads the time from a [`Clock`], so that tests of
//! timers can run on a [`TestClock`] that jumps to the next deadline
//! instead of sleeping.
//!
//! The selector is `mio::Poll`: `epoll` on Linux, `kqueue` on the BSDs and
//! macOS. It speaks *readiness*: "this socket is readable" means a `read` now
//! will not block (it may still return `WouldBlock`: see the notes on
//! spurious events in `fetch.rs`). mio also registers every socket
//! **edge-triggered**: an event says readiness *changed*, so a callback must
//! read (or write) until `WouldBlock`, or it will not hear about the bytes it
//! left behind.
//!
//! ## asyncio's calls for sockets
//!
//! A socket is registered once, for both directions, for its whole life
//! ([`EventLoop::register`]). Then [`EventLoop::add_writer`] says what to
//! call while it is writable, until [`EventLoop::remove_writer`], and
//! [`EventLoop::add_reader`] the same for readable: asyncio's names for the
//! tutorial's `selector.register(fd, EVENT_WRITE, callback)`. A fetch moves
//! from one step to the next by installing the next step's callback.
//!
//! ## A loop every callback can reach (the Rust part of this lesson)
//!
//! In Python, a callback reaches the selector as a global and changes it
//! whenever it likes. A Rust callback that must add a reader or start a
//! timer needs the loop too — but the callback is *stored in* the loop, and
//! a function stored in a value cannot be handed `&mut` to that same value:
//! that would be two mutable borrows of one thing.
//!
//! So the loop is a cheap handle, as asyncio objects each keep their
//! `_loop`: [`EventLoop`] is an `Rc`, a fetch keeps a clone, and every
//! method takes `&self`. What changes sits in `Cell`s and `RefCell`s, each
//! borrowed for the length of one method and **never while a callback
//! runs**.
//!
//! <!-- how -->
//! The loop clones a reader's `Rc` out of its table, or pops a handle off
//! its queue, before calling it.
//! <!-- /how -->
//!
//! Callbacks therefore take no arguments; the state a callback works on (the
//! socket, the bytes read so far) lives in an object its closures share: see
//! `Fetcher` in `fetch.rs`.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use mio::event::Source;
use mio::{Events, Interest, Poll, Registry, Token};
use shared::trace::Trace;

/// Where the loop reads the time.
///
/// The real loop asks the system; a test hands the loop a [`TestClock`] so
/// that a 30-second timer fires at once and the test can check *when*, in
/// loop time, it fired.
pub trait Clock {
    /// The current time.
    fn now(&self) -> Instant;

    /// The loop has nothing to run until `deadline` (its first timer): how
    /// long may it block waiting for I/O? The real clock answers "until the
    /// deadline"; a test clock moves itself to the deadline and answers zero.
    fn idle_until(&self, deadline: Instant) -> Duration {
        deadline.saturating_duration_since(self.now())
    }
}

/// The system's monotonic clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that only moves when told to, or when the loop would otherwise
/// sleep until a timer (then it jumps straight to that timer's deadline).
#[derive(Debug)]
pub struct TestClock {
    /// The time the loop sees.
    now: Cell<Instant>,
}

impl TestClock {
    /// A clock standing at the present moment.
    pub fn new() -> Rc<TestClock> {
        Rc::new(TestClock {
            now: Cell::new(Instant::now()),
        })
    }

    /// Move the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.now.set(self.now.get() + by);
    }
}

impl Clock for TestClock {
    fn now(&self) -> Instant {
        self.now.get()
    }

    fn idle_until(&self, deadline: Instant) -> Duration {
        if deadline > self.now.get() {
            self.now.set(deadline);
        }
        Duration::ZERO
    }
}

/// A scheduled callback: asyncio's `Handle`.
///
/// `call_soon` and the timers of `call_later` make one, and it runs once.
/// Cancelling a handle drops its callback at once, releasing whatever the
/// callback captured; a cancelled handle still sitting in the ready queue is
/// skipped.
#[derive(Clone)]
pub struct Handle {
    /// Shared by the ready queue (or the timers) and by whoever may cancel it.
    inner: Rc<HandleInner>,
}

struct HandleInner {
    /// The callback; `None` once it has run or was cancelled.
    callback: RefCell<Option<Box<dyn FnOnce()>>>,
    /// Set by `cancel`. A separate flag because the callback slot is also
    /// empty once the callback has run.
    cancelled: Cell<bool>,
}

// ANCHOR: handle
impl Handle {
    fn new(callback: impl FnOnce() + 'static) -> Handle {
        Handle {
            inner: Rc::new(HandleInner {
                callback: RefCell::new(Some(Box::new(callback))),
                cancelled: Cell::new(false),
            }),
        }
    }

    /// Do not run this callback.
    pub fn cancel(&self) {
        self.inner.cancelled.set(true);
        // Take the box out before dropping it: dropping a closure can run
        // destructors that reach back into this handle.
        let callback = self.inner.callback.borrow_mut().take();
        drop(callback);
    }

    /// Was `cancel` called?
    pub fn cancelled(&self) -> bool {
        self.inner.cancelled.get()
    }

    /// Run the callback, unless cancelled (then it is gone). It is taken out
    /// of the `RefCell` first, so it may cancel this very handle.
    fn run(&self) {
        let callback = self.inner.callback.borrow_mut().take();
        if let Some(callback) = callback {
            callback();
        }
    }
}
// ANCHOR_END: handle

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("cancelled", &self.cancelled())
            .finish()
    }
}

/// What runs while a socket is ready: asyncio's reader (or writer). It may
/// run many times, and the loop calls it through a clone of the `Rc`, so
/// the table of sockets is not borrowed while it runs.
pub type Callback = Rc<dyn Fn()>;

/// A callback scheduled for a deadline: asyncio's `TimerHandle`.
/// Cancelling it removes it from the loop's timers at once, so a crawl that
/// sets and cancels a 30-second deadline per fetch does not pile up dead timers.
#[derive(Debug)]
pub struct TimerHandle {
    /// The callback, as for any handle.
    handle: Handle,
    /// The timer's key in the loop's `timers`.
    key: TimerKey,
    /// The loop, to remove the timer from. Weak: a timer must not keep a
    /// closed loop alive.
    event_loop: Weak<LoopInner>,
}

// ANCHOR: timer_handle
impl TimerHandle {
    /// Do not run this callback; forget the timer.
    pub fn cancel(&self) {
        self.handle.cancel();
        if let Some(inner) = self.event_loop.upgrade() {
            let removed = inner.timers.borrow_mut().remove(&self.key);
            drop(removed);
        }
    }

    /// Was `cancel` called?
    pub fn cancelled(&self) -> bool {
        self.handle.cancelled()
    }

    /// When the callback is due.
    pub fn when(&self) -> Instant {
        self.key.0
    }
}
// ANCHOR_END: timer_handle

/// A timer's key in the loop's `timers`: its deadline, then a sequence
/// number so that two timers with the same deadline stay distinct.
type TimerKey = (Instant, u64);

/// What the loop knows about one registered socket.
#[derive(Default)]
struct IoSlot {
    /// Is this token handed out? (Free slots are reused.)
    in_use: bool,
    /// `add_reader`'s callback, called on every readable (or closed, or
    /// error) event until removed.
    reader: Option<Callback>,
    /// `add_writer`'s callback, called on every writable (or error) event.
    writer: Option<Callback>,
}

/// The event loop. A cheap handle (`Rc`): every fetch keeps one, as
/// asyncio objects keep their `_loop`.
#[derive(Clone)]
pub struct EventLoop {
    /// Shared by every handle to the loop.
    inner: Rc<LoopInner>,
}

struct LoopInner {
    /// Callbacks to run on the next turn, in the order they were scheduled.
    ready: RefCell<VecDeque<Handle>>,
    /// Timers by (deadline, sequence number). A `BTreeMap` rather than a heap
    /// so that `TimerHandle::cancel` can remove its entry right away.
    timers: RefCell<BTreeMap<TimerKey, Handle>>,
    /// The next timer sequence number.
    timer_seq: Cell<u64>,
    /// The selector. Borrowed only inside `run_once`'s wait.
    poll: RefCell<Poll>,
    /// A handle to the selector's registry, so sockets can be registered from
    /// callbacks while no one holds `poll`.
    registry: Registry,
    /// The buffer `poll` fills with events; kept to avoid an allocation per turn.
    events: RefCell<Events>,
    /// Registered sockets, indexed by their `mio::Token`.
    io: RefCell<Vec<IoSlot>>,
    /// Tokens of freed slots, reused before the table grows.
    free_tokens: RefCell<Vec<usize>>,
    /// `stop()` was called: finish this turn, then leave `run_forever`.
    stopping: Cell<bool>,
    /// Is `run_forever` running?
    running: Cell<bool>,
    /// `close()` was called: nothing may be scheduled any more.
    closed: Cell<bool>,
    /// Where the loop reads the time.
    clock: Rc<dyn Clock>,
    /// `--trace`: where each turn is recorded (off unless asked for).
    trace: RefCell<Trace>,
}

/// How many readiness events one `poll` may return.
const EVENTS_CAPACITY: usize = 1024;

impl EventLoop {
    /// A loop on the system clock.
    pub fn new() -> io::Result<EventLoop> {
        EventLoop::with_clock(Rc::new(SystemClock))
    }

    /// A loop reading the time from `clock` (tests pass a [`TestClock`]).
    pub fn with_clock(clock: Rc<dyn Clock>) -> io::Result<EventLoop> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        Ok(EventLoop {
            inner: Rc::new(LoopInner {
                ready: RefCell::new(VecDeque::new()),
                timers: RefCell::new(BTreeMap::new()),
                timer_seq: Cell::new(0),
                poll: RefCell::new(poll),
                registry,
                events: RefCell::new(Events::with_capacity(EVENTS_CAPACITY)),
                io: RefCell::new(Vec::new()),
                free_tokens: RefCell::new(Vec::new()),
                stopping: Cell::new(false),
                running: Cell::new(false),
                closed: Cell::new(false),
                clock,
                trace: RefCell::new(Trace::off()),
            }),
        })
    }

    /// The loop's current time.
    pub fn time(&self) -> Instant {
        self.inner.clock.now()
    }

    // ANCHOR: call_soon
    /// Schedule `callback` to run on the next turn of the loop, after the
    /// callbacks already scheduled.
    pub fn call_soon(&self, callback: impl FnOnce() + 'static) -> Handle {
        let handle = Handle::new(callback);
        self.push_ready(handle.clone());
        handle
    }
    // ANCHOR_END: call_soon

    // ANCHOR: push_ready
    fn push_ready(&self, handle: Handle) {
        // A closed loop never runs anything again; keeping the callback would
        // only keep what it captured alive.
        if self.inner.closed.get() {
            handle.cancel();
            return;
        }
        self.inner.ready.borrow_mut().push_back(handle);
    }
    // ANCHOR_END: push_ready

    // ANCHOR: call_later
    /// Schedule `callback` to run `delay` from now.
    pub fn call_later(&self, delay: Duration, callback: impl FnOnce() + 'static) -> TimerHandle {
        self.call_at(self.time() + delay, callback)
    }

    /// Schedule `callback` to run at `when`. Timers due at the same instant
    /// run in the order they were started.
    pub fn call_at(&self, when: Instant, callback: impl FnOnce() + 'static) -> TimerHandle {
        let handle = Handle::new(callback);
        let key = self.add_timer(when, handle.clone());
        if self.inner.closed.get() {
            handle.cancel();
        }
        TimerHandle {
            handle,
            key,
            event_loop: Rc::downgrade(&self.inner),
        }
    }
    // ANCHOR_END: call_later

    // ANCHOR: add_timer
    /// Enter a timer under a fresh key (a closed loop keeps none).
    fn add_timer(&self, when: Instant, callback: Handle) -> TimerKey {
        let seq = self.inner.timer_seq.get();
        self.inner.timer_seq.set(seq + 1);
        let key = (when, seq);
        if !self.inner.closed.get() {
            self.inner.timers.borrow_mut().insert(key, callback);
        }
        key
    }
    // ANCHOR_END: add_timer

    // ANCHOR: register
    /// Register a socket with the loop's selector, for both directions, once
    /// for its whole life. Readiness is then routed to whatever reader or
    /// writer callback is installed at the time.
    ///
    /// `mio` is edge-triggered: it reports a socket when it *becomes* ready,
    /// not while it stays ready. So a woken reader only means "try now";
    /// the socket code always tries the operation first and waits only after
    /// the system said `WouldBlock` — then the next edge is sure to come.
    pub fn register(&self, source: &mut impl Source) -> io::Result<Token> {
        if self.inner.closed.get() {
            return Err(io::Error::other("the event loop is closed"));
        }
        let index = {
            let mut io = self.inner.io.borrow_mut();
            match self.inner.free_tokens.borrow_mut().pop() {
                Some(index) => index,
                None => {
                    io.push(IoSlot::default());
                    io.len() - 1
                }
            }
        };
        let token = Token(index);
        match self
            .inner
            .registry
            .register(source, token, Interest::READABLE | Interest::WRITABLE)
        {
            Ok(()) => {
                self.inner.io.borrow_mut()[index].in_use = true;
                Ok(token)
            }
            Err(err) => {
                self.inner.free_tokens.borrow_mut().push(index);
                Err(err)
            }
        }
    }

    /// Forget a socket: remove it from the selector and drop its callbacks.
    pub fn deregister(&self, source: &mut impl Source, token: Token) {
        // The socket is about to be closed; a failure here changes nothing.
        let _ = self.inner.registry.deregister(source);
        let callbacks = {
            let mut io = self.inner.io.borrow_mut();
            match io.get_mut(token.0) {
                Some(slot) if slot.in_use => {
                    slot.in_use = false;
                    (slot.reader.take(), slot.writer.take())
                }
                _ => return,
            }
        };
        self.inner.free_tokens.borrow_mut().push(token.0);
        // Dropped outside the borrow, like every callback.
        drop(callbacks);
    }
    // ANCHOR_END: register

    // ANCHOR: add_reader
    /// Call `callback` whenever the socket `token` becomes readable (or is
    /// closed, or fails), until [`EventLoop::remove_reader`]: asyncio's
    /// `add_reader(fd, callback)`. Replaces any reader already installed.
    pub fn add_reader(&self, token: Token, callback: impl Fn() + 'static) -> io::Result<()> {
        self.replace_callback(token, Direction::Read, Some(Rc::new(callback)))?;
        Ok(())
    }

    /// Stop watching `token` for reading. Returns whether a reader was installed.
    pub fn remove_reader(&self, token: Token) -> bool {
        matches!(
            self.replace_callback(token, Direction::Read, None),
            Ok(Some(_))
        )
    }
    // ANCHOR_END: add_reader

    // ANCHOR: add_writer
    /// Call `callback` whenever the socket `token` becomes writable (or
    /// fails), until [`EventLoop::remove_writer`].
    pub fn add_writer(&self, token: Token, callback: impl Fn() + 'static) -> io::Result<()> {
        self.replace_callback(token, Direction::Write, Some(Rc::new(callback)))?;
        Ok(())
    }

    /// Stop watching `token` for writing. Returns whether a writer was installed.
    pub fn remove_writer(&self, token: Token) -> bool {
        matches!(
            self.replace_callback(token, Direction::Write, None),
            Ok(Some(_))
        )
    }

    /// Put `new` in the reader or writer place of `token`'s slot, and
    /// return the callback that was there, if any.
    fn replace_callback(
        &self,
        token: Token,
        direction: Direction,
        new: Option<Callback>,
    ) -> io::Result<Option<Callback>> {
        let old = {
            let mut io = self.inner.io.borrow_mut();
            let slot = match io.get_mut(token.0) {
                Some(slot) if slot.in_use => slot,
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        "socket is not registered with this loop",
                    ))
                }
            };
            let place = match direction {
                Direction::Read => &mut slot.reader,
                Direction::Write => &mut slot.writer,
            };
            std::mem::replace(place, new)
        };
        // Returned, so dropped outside the borrow: dropping a callback may
        // drop something whose destructor calls back into the loop.
        Ok(old)
    }
    // ANCHOR_END: add_writer

    // ANCHOR: run_once
    /// One turn of the loop: wait for I/O (no longer than the first timer
    /// allows), call the callbacks of ready sockets, queue the expired
    /// timers, then run the callbacks that are queued *now*.
    pub fn run_once(&self) -> io::Result<()> {
        let inner = &self.inner;
        let timeout = if !inner.ready.borrow().is_empty() || inner.stopping.get() {
            Some(Duration::ZERO)
        } else {
            let first = inner.timers.borrow().keys().next().map(|key| key.0);
            first.map(|deadline| inner.clock.idle_until(deadline))
        };

        // The trace's record of this turn (nothing, when tracing is off).
        let trace = inner.trace.borrow().clone();
        let mut turn = trace.start_turn();
        let nevents;
        {
            let mut events = inner.events.borrow_mut();
            let waited = inner.poll.borrow_mut().poll(&mut events, timeout);
            match waited {
                Ok(()) => {}
                // A signal cut the wait short: nothing happened, try again.
                Err(err) if err.kind() == io::ErrorKind::Interrupted => events.clear(),
                Err(err) => return Err(err),
            }
            turn.polled();
            nevents = events.iter().count();
            for event in events.iter() {
                // Cloned out of the table (a reference count, no allocation):
                // the table is not borrowed while the callbacks run.
                let (reader, writer) = match inner.io.borrow().get(event.token().0) {
                    Some(slot) => (slot.reader.clone(), slot.writer.clone()),
                    None => (None, None),
                };
                // An error or a hang-up calls both sides: whoever is waiting
                // must try their operation and meet the error.
                let failed = event.is_error();
                if event.is_readable() || event.is_read_closed() || failed {
                    if let Some(reader) = reader {
                        reader();
                    }
                }
                if event.is_writable() || event.is_write_closed() || failed {
                    if let Some(writer) = writer {
                        writer();
                    }
                }
            }
        }

        // Expired timers join the ready queue in deadline order.
        let now = inner.clock.now();
        loop {
            let expired = {
                let mut timers = inner.timers.borrow_mut();
                match timers.first_entry() {
                    Some(entry) if entry.key().0 <= now => Some(entry.remove()),
                    _ => None,
                }
            };
            match expired {
                Some(handle) => self.push_ready(handle),
                None => break,
            }
        }

        // Only what is queued now: callbacks scheduled by these callbacks
        // wait for the next turn, after the next poll for I/O.
        let ntodo = inner.ready.borrow().len();
        for _ in 0..ntodo {
            let handle = inner.ready.borrow_mut().pop_front();
            match handle {
                Some(handle) => handle.run(),
                None => break,
            }
        }
        trace.end_turn(turn, nevents, ntodo, self.registered());
        Ok(())
    }
    // ANCHOR_END: run_once

    // ANCHOR: run_forever
    /// Run turns until [`EventLoop::stop`] is called — or until there is
    /// nothing left to wait for, which a correct program never reaches with
    /// work undone, but which must end the loop rather than block in `poll`
    /// forever (nothing could ever call `stop`).
    pub fn run_forever(&self) -> io::Result<()> {
        if self.inner.running.get() {
            return Err(io::Error::other("this event loop is already running"));
        }
        if self.inner.closed.get() {
            return Err(io::Error::other("the event loop is closed"));
        }
        self.inner.running.set(true);
        let result = loop {
            if !self.has_work() {
                break Ok(());
            }
            if let Err(err) = self.run_once() {
                break Err(err);
            }
            if self.inner.stopping.get() {
                break Ok(());
            }
        };
        self.inner.running.set(false);
        self.inner.stopping.set(false);
        result
    }

    /// Leave `run_forever` after the current turn.
    pub fn stop(&self) {
        self.inner.stopping.set(true);
    }
    // ANCHOR_END: run_forever

    // ANCHOR: has_work
    /// Is anything registered, scheduled or pending? If not, nothing can ever
    /// call a callback again.
    pub fn has_work(&self) -> bool {
        self.registered() > 0
            || !self.inner.ready.borrow().is_empty()
            || !self.inner.timers.borrow().is_empty()
    }

    /// Drop everything the loop still holds — callbacks, timers — and refuse
    /// new work. Callbacks hold fetches that hold the loop, so this is also
    /// what frees whatever a crawl left behind.
    pub fn close(&self) {
        if self.inner.running.get() || self.inner.closed.get() {
            return;
        }
        self.inner.closed.set(true);
        // Each collection is taken out before it is dropped: the destructors
        // of what it holds may call back into the loop (a socket deregisters
        // itself), and must not find a `RefCell` borrowed.
        let ready = std::mem::take(&mut *self.inner.ready.borrow_mut());
        drop(ready);
        let timers = std::mem::take(&mut *self.inner.timers.borrow_mut());
        drop(timers);
        let io = std::mem::take(&mut *self.inner.io.borrow_mut());
        self.inner.free_tokens.borrow_mut().clear();
        drop(io);
    }
    // ANCHOR_END: has_work

    /// Is the loop running?
    pub fn is_running(&self) -> bool {
        self.inner.running.get()
    }

    /// Was `close` called?
    pub fn is_closed(&self) -> bool {
        self.inner.closed.get()
    }

    /// Record each turn of this loop in `trace` (`--trace`): the time it
    /// spends blocked in `poll`, then running what is ready.
    pub fn set_trace(&self, trace: Trace) {
        *self.inner.trace.borrow_mut() = trace;
    }

    // ANCHOR: registered
    /// Number of sockets registered.
    pub fn registered(&self) -> usize {
        self.inner.io.borrow().len() - self.inner.free_tokens.borrow().len()
    }
    // ANCHOR_END: registered

    // ANCHOR: pending_timers
    /// Number of timers set and not yet fired or cancelled.
    pub fn pending_timers(&self) -> usize {
        self.inner.timers.borrow().len()
    }
    // ANCHOR_END: pending_timers
}

impl std::fmt::Debug for EventLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLoop")
            .field("registered", &self.registered())
            .field("ready", &self.inner.ready.borrow().len())
            .field("timers", &self.inner.timers.borrow().len())
            .finish()
    }
}

#[derive(Clone, Copy)]
enum Direction {
    Read,
    Write,
}
