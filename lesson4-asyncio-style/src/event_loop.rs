//! # The event loop: asyncio's `BaseEventLoop`, on one thread
//!
//! Lesson 3's loop is already asyncio's in its shape: everything it runs is
//! a callback, and it keeps three sources of them —
//!
//! - the **ready queue** (`call_soon`): [`Handle`]s to run on the next turn;
//! - the **timers** (`call_later`, `call_at`): handles to run at a deadline,
//!   ordered by deadline, cancellable;
//! - the **readers and writers** (`add_reader`, `add_writer`): what to call
//!   when a socket becomes readable or writable, over `mio`.
//!
//! A task's waker is `call_soon(step)` ([`crate::task`]), so a task's step
//! is one callback among others.
//! <!-- how -->
//! One turn of the loop ([`EventLoop::run_once`]) waits for I/O no longer
//! than the first timer allows, calls the readers and writers of ready
//! sockets, moves expired timers into the ready queue, then runs the
//! callbacks that were in the queue at that moment — never the ones they
//! add, which wait for the next turn.
//! <!-- /how -->
//!
//! What changed since lesson 3:
//!
//! - [`run`] (`asyncio.run`): a fresh loop, `run_until_complete`, `close`;
//!   coroutines and tasks now end in an `anyhow::Result`, so that a task
//!   can be cancelled and a failure is a value (`future.rs`, `task.rs`);
//! - the optimizations of the section below, which a crawl with ten
//!   thousand fetches waiting pays for: a reader, a writer or a timer can
//!   be a task's waker itself, a task's step is queued without a handle,
//!   and one read buffer serves every socket.
//!
//! ## Wakers as callbacks (an optimization)
//!
//! asyncio's `add_reader(fd, callback)` takes any callback, and so did
//! lesson 3's: a closure that resolves a future. Here a socket's reader and
//! writer are a task's [`Waker`], and so is the callback of a timer set by
//! `sleep` ([`EventLoop::wake_at`]). A waker *is* a callback —
//! a pointer and a table of functions, whose `wake` is `call_soon(step)` —
//! and it is made once per task, so keeping one costs no allocation, where a
//! boxed closure around it would cost two (the box and its handle) for every
//! wait. A crawl with ten thousand fetches waiting, each on a socket and a
//! deadline, keeps forty thousand allocations fewer that way.

use std::cell::{Cell, RefCell, RefMut};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::{Duration, Instant};

use mio::event::Source;
use mio::{Events, Interest, Poll, Registry, Token};
use shared::trace::Trace;

use crate::future::Future;
use crate::task::{Step, Task, TaskId};

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

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("cancelled", &self.cancelled())
            .finish()
    }
}

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

/// An entry of the ready queue.
enum Ready {
    /// A callback (`call_soon`, an expired `call_later`).
    Handle(Handle),
    /// A task's next step (its waker's `call_soon(step)`), queued as the
    /// task itself: see "The last step" in the chapter.
    Step(Rc<dyn Step>),
}

/// A timer's key in the loop's `timers`: its deadline, then a sequence
/// number so that two timers with the same deadline stay distinct.
type TimerKey = (Instant, u64);

/// What a timer does when it is due.
enum TimerCallback {
    /// Run a handle (`call_later`, `call_at`).
    Handle(Handle),
    /// Wake a task (`wake_at`, which `sleep` uses).
    Wake(Waker),
}

/// A timer that wakes a task at its deadline: what [`EventLoop::wake_at`]
/// sets. It has no handle: the loop keeps the task's waker in the timer's
/// place (see "Wakers as callbacks" above). Cancelling it removes it, as for
/// a [`TimerHandle`].
#[derive(Debug)]
pub struct WakeTimer {
    /// The timer's key in the loop's `timers`.
    key: TimerKey,
    /// The loop, to find the timer in. Weak, as for `TimerHandle`.
    event_loop: Weak<LoopInner>,
}

impl WakeTimer {
    /// When the task is woken.
    pub fn when(&self) -> Instant {
        self.key.0
    }

    /// Wake `waker`'s task, not the one given before, when the deadline
    /// comes: a future may be polled by a different task than the one that
    /// set it waiting.
    pub fn set_waker(&self, waker: &Waker) {
        if let Some(inner) = self.event_loop.upgrade() {
            let mut timers = inner.timers.borrow_mut();
            if let Some(TimerCallback::Wake(old)) = timers.get_mut(&self.key) {
                if !old.will_wake(waker) {
                    old.clone_from(waker);
                }
            }
        }
    }

    /// Forget the timer: the task is not woken.
    pub fn cancel(&self) {
        if let Some(inner) = self.event_loop.upgrade() {
            let removed = inner.timers.borrow_mut().remove(&self.key);
            drop(removed);
        }
    }
}

/// What the loop knows about one registered socket.
#[derive(Default)]
struct IoSlot {
    /// Is this token handed out? (Free slots are reused.)
    in_use: bool,
    /// `add_reader`'s task, woken on every readable (or closed, or error)
    /// event until removed.
    reader: Option<Waker>,
    /// `add_writer`'s task, woken on every writable (or error) event.
    writer: Option<Waker>,
}

/// The token of the loop's own cross-thread wake-up (see [`Remote`]).
const REMOTE_TOKEN: Token = Token(usize::MAX);

/// How another thread asks this loop to step a task: asyncio's
/// `call_soon_threadsafe`. A `Waker` is `Send`, so the type system lets it
/// travel; the course never sends one elsewhere, but the loop must not lose
/// a wake-up if it happens.
pub(crate) struct Remote {
    /// Tasks woken from outside the running loop.
    woken: Mutex<Vec<TaskId>>,
    /// Interrupts the loop's `poll`.
    waker: mio::Waker,
}

impl Remote {
    pub(crate) fn wake(&self, task: TaskId) {
        let was_empty = match self.woken.lock() {
            Ok(mut woken) => {
                woken.push(task);
                woken.len() == 1
            }
            Err(_) => return,
        };
        // One interrupt per batch is enough: the loop drains the whole list.
        if was_empty {
            let _ = self.waker.wake();
        }
    }
}

/// Numbers loops, so a waker can tell whether the running loop is its own.
static NEXT_LOOP_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The loop running on this thread: asyncio's `get_running_loop()`.
    static RUNNING_LOOP: RefCell<Option<EventLoop>> = const { RefCell::new(None) };
}

/// The loop running on this thread, if one is.
pub fn try_get_running_loop() -> Option<EventLoop> {
    RUNNING_LOOP.with(|running| running.borrow().clone())
}

/// The loop running on this thread. Like asyncio's, this is only for code
/// that runs *inside* the loop (coroutines, callbacks): calling it elsewhere
/// is a programming error, and it panics with asyncio's message.
pub fn get_running_loop() -> EventLoop {
    try_get_running_loop().expect("no running event loop")
}

// ANCHOR: run
/// Run `coro` on a new loop until it completes, then close the loop:
/// asyncio's `asyncio.run(main())`. Where asyncio would wait forever for a
/// coroutine that nothing can wake any more, this loop is its program's
/// only one and hands no waker to another thread, so it says so: an error
/// once the loop has [`stalled`](EventLoop::stalled).
pub fn run<T: 'static>(
    coro: impl std::future::Future<Output = anyhow::Result<T>> + 'static,
) -> anyhow::Result<T> {
    let event_loop = EventLoop::new()?;
    event_loop.inner.stall_is_error.set(true);
    let result = event_loop.run_until_complete(coro);
    event_loop.close();
    result
}
// ANCHOR_END: run

/// The event loop. A cheap handle (`Rc`): futures, tasks and sockets each
/// keep one, as asyncio objects keep their `_loop`.
#[derive(Clone)]
pub struct EventLoop {
    /// Shared by every handle to the loop.
    inner: Rc<LoopInner>,
}

struct LoopInner {
    /// This loop's number (see [`NEXT_LOOP_ID`]).
    id: u64,
    /// Callbacks to run on the next turn, in the order they were scheduled.
    ready: RefCell<VecDeque<Ready>>,
    /// Timers by (deadline, sequence number). A `BTreeMap` rather than a heap
    /// so that `TimerHandle::cancel` can remove its entry right away.
    timers: RefCell<BTreeMap<TimerKey, TimerCallback>>,
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
    /// Tasks that are not finished, by id: what a waker (which may only hold
    /// `Send` data, so an id) finds its task through.
    tasks: RefCell<HashMap<TaskId, Rc<dyn Step>>>,
    /// The next task id. Never reused, so a stale waker cannot step a new task.
    next_task_id: Cell<TaskId>,
    /// Wake-ups from other threads.
    remote: Arc<Remote>,
    /// `stop()` was called: finish this turn, then leave `run_forever`.
    stopping: Cell<bool>,
    /// Is `run_forever` running?
    running: Cell<bool>,
    /// `close()` was called: nothing may be scheduled any more.
    closed: Cell<bool>,
    /// Set by [`run`]: a loop with nothing left to wait for (see
    /// [`EventLoop::stalled`]) ends `run_forever` with an error rather than
    /// sleeping forever.
    stall_is_error: Cell<bool>,
    /// Where the loop reads the time.
    clock: Rc<dyn Clock>,
    /// `--trace`: where each turn is recorded (off unless asked for).
    trace: RefCell<Trace>,
    /// One read buffer for every socket of the loop. A socket read happens in
    /// a single callback step and its bytes are handed on (to the HTTP
    /// parser) before the step ends, so one buffer serves all of them and a
    /// fetch that is waiting holds no buffer at all.
    read_buffer: RefCell<Vec<u8>>,
}

/// Size of the loop's shared read buffer.
const READ_BUFFER_SIZE: usize = 64 * 1024;

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
        let waker = mio::Waker::new(poll.registry(), REMOTE_TOKEN)?;
        Ok(EventLoop {
            inner: Rc::new(LoopInner {
                id: NEXT_LOOP_ID.fetch_add(1, Ordering::Relaxed),
                ready: RefCell::new(VecDeque::new()),
                timers: RefCell::new(BTreeMap::new()),
                timer_seq: Cell::new(0),
                poll: RefCell::new(poll),
                registry,
                events: RefCell::new(Events::with_capacity(EVENTS_CAPACITY)),
                io: RefCell::new(Vec::new()),
                free_tokens: RefCell::new(Vec::new()),
                tasks: RefCell::new(HashMap::new()),
                next_task_id: Cell::new(1),
                remote: Arc::new(Remote {
                    woken: Mutex::new(Vec::new()),
                    waker,
                }),
                stopping: Cell::new(false),
                running: Cell::new(false),
                closed: Cell::new(false),
                stall_is_error: Cell::new(false),
                clock,
                trace: RefCell::new(Trace::off()),
                read_buffer: RefCell::new(vec![0; READ_BUFFER_SIZE]),
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

    /// Schedule a task's step: `call_soon(step)`, with the task itself in
    /// the ready queue rather than a closure in a handle. A crawl schedules
    /// all its workers at once, and ten thousand handles at once would stay
    /// in the process's memory as a high-water mark.
    pub(crate) fn call_soon_step(&self, task: Rc<dyn Step>) {
        // A closed loop never runs anything again (the task is dropped).
        if !self.inner.closed.get() {
            self.inner.ready.borrow_mut().push_back(Ready::Step(task));
        }
    }

    fn push_ready(&self, handle: Handle) {
        // A closed loop never runs anything again; keeping the callback would
        // only keep what it captured alive.
        if self.inner.closed.get() {
            handle.cancel();
            return;
        }
        self.inner
            .ready
            .borrow_mut()
            .push_back(Ready::Handle(handle));
    }

    // ANCHOR: call_later
    /// Schedule `callback` to run `delay` from now.
    pub fn call_later(&self, delay: Duration, callback: impl FnOnce() + 'static) -> TimerHandle {
        self.call_at(self.time() + delay, callback)
    }

    /// Schedule `callback` to run at `when` (loop time).
    pub fn call_at(&self, when: Instant, callback: impl FnOnce() + 'static) -> TimerHandle {
        let handle = Handle::new(callback);
        let key = self.add_timer(when, TimerCallback::Handle(handle.clone()));
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

    // ANCHOR: wake_at
    /// Wake `waker`'s task at `when` (loop time): a timer whose callback is
    /// the task's waker, with no handle to allocate. What `sleep` uses.
    pub fn wake_at(&self, when: Instant, waker: &Waker) -> WakeTimer {
        WakeTimer {
            key: self.add_timer(when, TimerCallback::Wake(waker.clone())),
            event_loop: Rc::downgrade(&self.inner),
        }
    }
    // ANCHOR_END: wake_at

    /// Enter a timer under a fresh key (a closed loop keeps none).
    fn add_timer(&self, when: Instant, callback: TimerCallback) -> TimerKey {
        let seq = self.inner.timer_seq.get();
        self.inner.timer_seq.set(seq + 1);
        let key = (when, seq);
        if !self.inner.closed.get() {
            self.inner.timers.borrow_mut().insert(key, callback);
        }
        key
    }

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
        let wakers = {
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
        drop(wakers);
    }

    // ANCHOR: add_reader
    /// Wake `waker`'s task whenever the socket `token` becomes readable (or
    /// is closed, or fails), until [`EventLoop::remove_reader`]. Replaces any
    /// reader already installed.
    pub fn add_reader(&self, token: Token, waker: &Waker) -> io::Result<()> {
        self.replace_waker(token, Direction::Read, Some(waker.clone()))?;
        Ok(())
    }

    /// Stop watching `token` for reading. Returns whether a reader was installed.
    pub fn remove_reader(&self, token: Token) -> bool {
        matches!(
            self.replace_waker(token, Direction::Read, None),
            Ok(Some(_))
        )
    }
    // ANCHOR_END: add_reader

    /// Wake `waker`'s task whenever the socket `token` becomes writable (or
    /// fails), until [`EventLoop::remove_writer`].
    pub fn add_writer(&self, token: Token, waker: &Waker) -> io::Result<()> {
        self.replace_waker(token, Direction::Write, Some(waker.clone()))?;
        Ok(())
    }

    /// Stop watching `token` for writing. Returns whether a writer was installed.
    pub fn remove_writer(&self, token: Token) -> bool {
        matches!(
            self.replace_waker(token, Direction::Write, None),
            Ok(Some(_))
        )
    }

    /// Put `new` in the reader or writer place of `token`'s slot, and
    /// return the waker that was there, if any.
    fn replace_waker(
        &self,
        token: Token,
        direction: Direction,
        new: Option<Waker>,
    ) -> io::Result<Option<Waker>> {
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

    /// A new pending future bound to this loop: asyncio's `create_future`.
    pub fn create_future<T: 'static>(&self) -> Future<T> {
        Future::new(self)
    }

    /// Wrap a coroutine in a task and schedule its first step:
    /// asyncio's `create_task`.
    pub fn create_task<T: 'static>(
        &self,
        coro: impl std::future::Future<Output = anyhow::Result<T>> + 'static,
    ) -> Task<T> {
        Task::new(self, coro)
    }

    // ANCHOR: run_once
    /// One turn of the loop: wait for I/O (no longer than the first timer
    /// allows), queue the callbacks of ready sockets and expired timers, then
    /// run the callbacks that are queued *now*. (A waker's callback is
    /// `call_soon(step)`: waking a task is how its step gets queued.)
    pub fn run_once(&self) -> io::Result<()> {
        // Called on its own (tests do), the loop is "running" for one turn,
        // so that coroutines it steps find it with `get_running_loop`.
        let _running = (!self.inner.running.get()).then(|| RunningGuard::enter(self));
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
                if event.token() == REMOTE_TOKEN {
                    self.drain_remote();
                    continue;
                }
                // Cloned out of the table (a reference count, no allocation):
                // the table is not borrowed while the wakers run.
                let (reader, writer) = match inner.io.borrow().get(event.token().0) {
                    Some(slot) => (slot.reader.clone(), slot.writer.clone()),
                    None => (None, None),
                };
                // An error or a hang-up wakes both sides: whoever is waiting
                // must try their operation and meet the error.
                let failed = event.is_error();
                if event.is_readable() || event.is_read_closed() || failed {
                    if let Some(reader) = reader {
                        reader.wake();
                    }
                }
                if event.is_writable() || event.is_write_closed() || failed {
                    if let Some(writer) = writer {
                        writer.wake();
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
                Some(TimerCallback::Handle(handle)) => self.push_ready(handle),
                Some(TimerCallback::Wake(waker)) => waker.wake(),
                None => break,
            }
        }

        // Only what is queued now: callbacks scheduled by these callbacks
        // wait for the next turn, after the next poll for I/O.
        let ntodo = inner.ready.borrow().len();
        for _ in 0..ntodo {
            let ready = inner.ready.borrow_mut().pop_front();
            match ready {
                Some(Ready::Handle(handle)) => handle.run(),
                Some(Ready::Step(task)) => task.step(),
                None => break,
            }
        }
        trace.end_turn(turn, nevents, ntodo, self.registered());
        Ok(())
    }
    // ANCHOR_END: run_once

    /// Step every task another thread woke.
    fn drain_remote(&self) {
        let woken = match self.inner.remote.woken.lock() {
            Ok(mut woken) => std::mem::take(&mut *woken),
            Err(_) => return,
        };
        for task in woken {
            self.wake_task(task);
        }
    }

    // ANCHOR: run_forever
    /// Run turns until [`EventLoop::stop`] is called.
    pub fn run_forever(&self) -> io::Result<()> {
        if self.inner.running.get() {
            return Err(io::Error::other("this event loop is already running"));
        }
        if self.inner.closed.get() {
            return Err(io::Error::other("the event loop is closed"));
        }
        let _running = RunningGuard::enter(self);
        // Wake-ups that came while the loop was not running.
        self.drain_remote();
        let result = loop {
            if self.inner.stall_is_error.get() && self.stalled() {
                break Err(io::Error::other(
                    "the event loop has stalled: no callback ready, no timer, no socket, and \
                     what it runs is not done",
                ));
            }
            if let Err(err) = self.run_once() {
                break Err(err);
            }
            if self.inner.stopping.get() {
                break Ok(());
            }
        };
        self.inner.stopping.set(false);
        result
    }

    /// Has the loop nothing left to wait for? No callback ready, no timer,
    /// no socket registered, no wake-up from another thread in: its next
    /// turn would wait in `poll` for something only another thread could
    /// do.
    pub fn stalled(&self) -> bool {
        let inner = &self.inner;
        inner.ready.borrow().is_empty()
            && inner.timers.borrow().is_empty()
            && self.registered() == 0
            && !inner.stopping.get()
            && inner
                .remote
                .woken
                .lock()
                .is_ok_and(|woken| woken.is_empty())
    }

    /// Leave `run_forever` after the current turn.
    pub fn stop(&self) {
        self.inner.stopping.set(true);
    }
    // ANCHOR_END: run_forever

    // ANCHOR: run_until_complete
    /// Run the loop until `coro` completes, and return its result:
    /// asyncio's `run_until_complete`. The coroutine is wrapped in a task
    /// whose done-callback stops the loop.
    pub fn run_until_complete<T: 'static>(
        &self,
        coro: impl std::future::Future<Output = anyhow::Result<T>> + 'static,
    ) -> anyhow::Result<T> {
        let task = self.create_task(coro);
        let event_loop = self.clone();
        task.add_done_callback(move |_| event_loop.stop());
        self.run_forever()?;
        match task.take_result() {
            Some(result) => result,
            None => anyhow::bail!("event loop stopped before the future completed"),
        }
    }
    // ANCHOR_END: run_until_complete

    /// Drop everything the loop still holds — pending tasks (their
    /// coroutines are dropped, running their destructors), callbacks, timers
    /// — and refuse new work. Futures and tasks hold the loop and the loop
    /// holds them, so this is also what frees a finished crawl's memory.
    pub fn close(&self) {
        if self.inner.running.get() || self.inner.closed.get() {
            return;
        }
        self.inner.closed.set(true);
        // Each collection is taken out before it is dropped: the destructors
        // of what it holds may call back into the loop (a socket deregisters
        // itself), and must not find a `RefCell` borrowed.
        let tasks = std::mem::take(&mut *self.inner.tasks.borrow_mut());
        for task in tasks.values() {
            task.abandon();
        }
        drop(tasks);
        let ready = std::mem::take(&mut *self.inner.ready.borrow_mut());
        drop(ready);
        let timers = std::mem::take(&mut *self.inner.timers.borrow_mut());
        drop(timers);
        let io = std::mem::take(&mut *self.inner.io.borrow_mut());
        self.inner.free_tokens.borrow_mut().clear();
        drop(io);
    }

    /// Is the loop running?
    pub fn is_running(&self) -> bool {
        self.inner.running.get()
    }

    /// Was `close` called?
    pub fn is_closed(&self) -> bool {
        self.inner.closed.get()
    }

    /// Number of tasks not yet finished.
    pub fn pending_tasks(&self) -> usize {
        self.inner.tasks.borrow().len()
    }

    /// Record each turn of this loop in `trace` (`--trace`): the time it
    /// spends blocked in `poll`, then running what is ready.
    pub fn set_trace(&self, trace: Trace) {
        *self.inner.trace.borrow_mut() = trace;
    }

    /// Number of sockets registered.
    pub fn registered(&self) -> usize {
        self.inner.io.borrow().len() - self.inner.free_tokens.borrow().len()
    }

    /// Number of timers set and not yet fired or cancelled.
    pub fn pending_timers(&self) -> usize {
        self.inner.timers.borrow().len()
    }

    /// The loop's shared read buffer (see [`LoopInner::read_buffer`]). Held
    /// only for one read and the synchronous use of its bytes.
    pub(crate) fn read_buffer(&self) -> RefMut<'_, Vec<u8>> {
        self.inner.read_buffer.borrow_mut()
    }

    /// The loop's number, for wakers.
    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// The cross-thread wake-up, for wakers.
    pub(crate) fn remote(&self) -> Arc<Remote> {
        self.inner.remote.clone()
    }

    /// A fresh task id.
    pub(crate) fn next_task_id(&self) -> TaskId {
        let id = self.inner.next_task_id.get();
        self.inner.next_task_id.set(id + 1);
        id
    }

    /// Enter a new task in the table, so its waker can find it.
    pub(crate) fn insert_task(&self, id: TaskId, task: Rc<dyn Step>) {
        if !self.inner.closed.get() {
            self.inner.tasks.borrow_mut().insert(id, task);
        }
    }

    /// The task is finished: the loop no longer needs to find it.
    pub(crate) fn remove_task(&self, id: TaskId) {
        let task = self.inner.tasks.borrow_mut().remove(&id);
        drop(task);
    }

    /// A task's waker fired: schedule that task's next step.
    pub(crate) fn wake_task(&self, id: TaskId) {
        let task = self.inner.tasks.borrow().get(&id).cloned();
        if let Some(task) = task {
            task.schedule();
        }
    }
}

impl std::fmt::Debug for EventLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLoop")
            .field("id", &self.inner.id)
            .field("ready", &self.inner.ready.borrow().len())
            .field("timers", &self.inner.timers.borrow().len())
            .field("tasks", &self.inner.tasks.borrow().len())
            .finish()
    }
}

#[derive(Clone, Copy)]
enum Direction {
    Read,
    Write,
}

/// Marks a loop as this thread's running loop for as long as it lives, and
/// restores the previous one (if any) afterwards, even on an early return.
struct RunningGuard {
    /// The loop marked as running.
    event_loop: EventLoop,
    /// The loop that was running before, put back when this one stops.
    previous: Option<EventLoop>,
}

impl RunningGuard {
    fn enter(event_loop: &EventLoop) -> RunningGuard {
        event_loop.inner.running.set(true);
        let previous =
            RUNNING_LOOP.with(|running| running.borrow_mut().replace(event_loop.clone()));
        RunningGuard {
            event_loop: event_loop.clone(),
            previous,
        }
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.event_loop.inner.running.set(false);
        let previous = self.previous.take();
        RUNNING_LOOP.with(|running| *running.borrow_mut() = previous);
    }
}
