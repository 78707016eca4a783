//! # The event loop: readiness events in, tasks stepped
//!
//! Lesson 2's loop turned readiness events into callbacks, and a fetch was
//! a chain of callbacks. Here the loop does the same job with one change in
//! who it calls back: a readiness callback no longer *is* the next step of a
//! fetch, it only resolves a `Future` (`future.rs`); the future wakes the
//! `Task` (`task.rs`) whose coroutine waits on it; and the loop steps the
//! woken tasks. The tutorial's loop did not change at all between its
//! callback and coroutine crawlers:
//!
//! ```text
//! while not stopped:
//!     events = selector.select()
//!     for event_key, event_mask in events:
//!         callback = event_key.data
//!         callback()
//! ```
//!
//! because there `set_result` runs `Task.step` directly from inside the
//! callback. Ours steps tasks from a queue instead, on the loop's turn
//! ([`EventLoop::run_once`]): a waker only pushes a task id (see `task.rs`
//! for why), and the loop owns the tasks and finds them by id.
//!
//! What changed since lesson 2:
//!
//! - **The loop is shared.** A suspended coroutine must be able to register
//!   its socket and start a timer when it is resumed, so it holds an
//!   `Rc<EventLoop>`, and every method takes `&self`. The fields that change
//!   sit in `Cell`s and `RefCell`s, each borrowed only for the length of one
//!   method and never while a callback or a task runs.
//! - **Callbacks take no arguments.** In lesson 2 a callback got the loop
//!   because it *was* the fetch and had to drive it; here it resolves a
//!   future and the coroutine does the rest.
//! - **`call_soon` became the ready queue of tasks.** [`EventLoop::create_task`]
//!   schedules a new task's first step; a waker schedules the next.
//! - **Timers can be awaited**: [`EventLoop::sleep`] is a future resolved by
//!   a timer, which cancels its timer when dropped. Racing it against a fetch
//!   is the fetch's deadline.
//!
//! The selector is still `mio::Poll` (`epoll` on Linux), still
//! edge-triggered: whoever waits for readiness must first have read or
//! written until `WouldBlock` (see `fetch.rs`).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll as TaskPoll};
use std::time::{Duration, Instant};

use mio::event::Source;
use mio::{Events, Interest, Poll, Token};

use crate::future::Future;
use crate::task::{ReadyQueue, Task, TaskId};

/// What runs when a registered socket becomes ready. It may run many times
/// (every readiness event), hence `FnMut`. In this lesson it only resolves a
/// future, so it needs nothing from the loop.
pub type Callback = Box<dyn FnMut()>;

/// What runs once: a timer's callback.
pub type Handle = Box<dyn FnOnce()>;

/// Names one pending timer, so it can be cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimerHandle {
    /// When the timer is due.
    when: Instant,
    /// Breaks ties between timers due at the same instant: the one started
    /// first runs first.
    seq: u64,
}

/// A single-threaded event loop over `mio::Poll` that steps tasks. Shared as
/// an `Rc<EventLoop>` by every coroutine running on it.
pub struct EventLoop {
    /// The selector: `epoll` here. Sockets are registered with it under a
    /// [`Token`], and it hands back the tokens of sockets that became ready.
    /// Borrowed mutably only inside `poll`, when nothing else runs.
    poll: RefCell<Poll>,
    /// Reused buffer for the readiness events of one `poll` call.
    events: RefCell<Events>,
    /// Token → the callback registered for that socket (the tutorial's
    /// `event_key.data`). The slot is `None` while its callback is running
    /// (it has been taken out so that the map is not borrowed meanwhile).
    callbacks: RefCell<HashMap<Token, Option<Callback>>>,
    /// The next token to hand out. Tokens are never reused: an event for a
    /// socket unregistered earlier in the same batch then finds no callback,
    /// instead of waking whatever socket was registered under its old token.
    next_token: Cell<usize>,
    /// Tasks woken and waiting for their next step, by id, in order: what
    /// every task's waker pushes onto (lesson 2's `call_soon` queue).
    ready: ReadyQueue,
    /// Every unfinished task, by id. A task is taken out while it is
    /// stepped, so the table is never borrowed while a coroutine runs (and
    /// creates tasks of its own).
    tasks: RefCell<HashMap<TaskId, Task>>,
    /// The id of the next task.
    next_task: Cell<usize>,
    /// Pending timers ordered by due time, then by the order they were
    /// started, so the first due is always the first entry.
    timers: RefCell<BTreeMap<TimerHandle, Handle>>,
    /// The `seq` of the next timer.
    next_timer: Cell<u64>,
    /// Set by [`EventLoop::stop`]: the tutorial's `stopped` flag.
    stopped: Cell<bool>,
}

impl EventLoop {
    /// A loop with nothing registered, ready to be shared.
    pub fn new() -> io::Result<Rc<EventLoop>> {
        Ok(Rc::new(EventLoop {
            poll: RefCell::new(Poll::new()?),
            events: RefCell::new(Events::with_capacity(1024)),
            callbacks: RefCell::new(HashMap::new()),
            next_token: Cell::new(0),
            ready: ReadyQueue::new(),
            tasks: RefCell::new(HashMap::new()),
            next_task: Cell::new(0),
            timers: RefCell::new(BTreeMap::new()),
            next_timer: Cell::new(0),
            stopped: Cell::new(false),
        }))
    }

    // ANCHOR: register
    /// Watch `source` for `interest` (readable or writable) and call
    /// `callback` each time it becomes ready: `selector.register(fd, events,
    /// callback)`. The returned token names this registration.
    pub fn register<S, F>(
        &self,
        source: &mut S,
        interest: Interest,
        callback: F,
    ) -> io::Result<Token>
    where
        S: Source + ?Sized,
        F: FnMut() + 'static,
    {
        let token = Token(self.next_token.get());
        self.next_token.set(token.0 + 1);
        self.poll
            .borrow()
            .registry()
            .register(source, token, interest)?;
        self.callbacks
            .borrow_mut()
            .insert(token, Some(Box::new(callback)));
        Ok(token)
    }

    /// Change what a registered socket waits for and what runs when it is
    /// ready: `selector.modify(fd, events, callback)`. A coroutine calls this
    /// each time it waits, with a callback that resolves a new future.
    ///
    /// Re-arming with `epoll_ctl(MOD)` also reports readiness that is already
    /// there, so a response that arrived before the switch is not missed.
    pub fn modify<S, F>(
        &self,
        source: &mut S,
        token: Token,
        interest: Interest,
        callback: F,
    ) -> io::Result<()>
    where
        S: Source + ?Sized,
        F: FnMut() + 'static,
    {
        self.poll
            .borrow()
            .registry()
            .reregister(source, token, interest)?;
        // If this runs inside the callback being replaced, its slot is empty
        // now; filling it tells `dispatch` not to put the old one back. The
        // old callback is dropped once the map is no longer borrowed.
        let old = self
            .callbacks
            .borrow_mut()
            .insert(token, Some(Box::new(callback)));
        drop(old);
        Ok(())
    }

    /// Stop watching `source`: `selector.unregister(fd)`. Its callback is
    /// dropped (after it returns, if it is the one running), together with
    /// everything it captured.
    pub fn unregister<S>(&self, source: &mut S, token: Token) -> io::Result<()>
    where
        S: Source + ?Sized,
    {
        // Forget the callback even if the OS call fails: a socket we no
        // longer listen to must never resolve a future nobody awaits. The
        // callback is dropped after the map's borrow ends: dropping it drops
        // what it captured, and that must not find the map borrowed.
        let callback = self.callbacks.borrow_mut().remove(&token);
        drop(callback);
        self.poll.borrow().registry().deregister(source)
    }
    // ANCHOR_END: register

    // ANCHOR: create_task
    /// Wrap `coro` in a [`Task`] and schedule its first step on the next turn
    /// of the loop (asyncio's `create_task`). The returned future is resolved
    /// when the coroutine returns.
    pub fn create_task<F>(&self, coro: F) -> Future<()>
    where
        F: std::future::Future<Output = ()> + 'static,
    {
        let id = TaskId(self.next_task.get());
        self.next_task.set(id.0 + 1);
        let task = Task::new(id, Box::pin(coro), &self.ready);
        let done = task.done();
        self.tasks.borrow_mut().insert(id, task);
        self.ready.push(id);
        done
    }

    /// How many tasks have not finished.
    pub fn tasks(&self) -> usize {
        self.tasks.borrow().len()
    }
    // ANCHOR_END: create_task

    /// Run `callback` once, `delay` from now (asyncio's `call_later`).
    pub fn call_later<F>(&self, delay: Duration, callback: F) -> TimerHandle
    where
        F: FnOnce() + 'static,
    {
        self.call_at(Instant::now() + delay, callback)
    }

    /// Run `callback` once, at `when` (asyncio's `call_at`). Timers due at the
    /// same instant run in the order they were started.
    pub fn call_at<F>(&self, when: Instant, callback: F) -> TimerHandle
    where
        F: FnOnce() + 'static,
    {
        let handle = TimerHandle {
            when,
            seq: self.next_timer.get(),
        };
        self.next_timer.set(handle.seq + 1);
        self.timers.borrow_mut().insert(handle, Box::new(callback));
        handle
    }

    /// Cancel a pending timer; `false` when it already ran or was cancelled.
    /// Its callback is dropped unrun.
    pub fn cancel(&self, timer: TimerHandle) -> bool {
        let callback = self.timers.borrow_mut().remove(&timer);
        callback.is_some()
    }

    // ANCHOR: sleep
    /// A future resolved `delay` from now: a timer whose callback is
    /// `set_result`. Dropping it before then cancels the timer, so a fetch
    /// that beat its deadline leaves nothing behind in the loop.
    pub fn sleep(self: &Rc<Self>, delay: Duration) -> Sleep {
        let fired = Future::new();
        let done = fired.clone();
        let timer = self.call_later(delay, move || done.set_result(()));
        Sleep {
            event_loop: Rc::clone(self),
            timer,
            fired,
        }
    }
    // ANCHOR_END: sleep

    /// Make [`EventLoop::run`] return at the end of the current turn.
    pub fn stop(&self) {
        self.stopped.set(true);
    }

    /// Is anything registered, scheduled or pending? If not, nothing can ever
    /// wake a task or call [`EventLoop::stop`], and waiting would be waiting
    /// forever. (A task waiting on a future that nothing will resolve is not
    /// work: it would wait forever too.)
    pub fn has_work(&self) -> bool {
        !self.callbacks.borrow().is_empty()
            || !self.ready.is_empty()
            || !self.timers.borrow().is_empty()
    }

    /// How many sockets are registered.
    pub fn registered(&self) -> usize {
        self.callbacks.borrow().len()
    }

    // ANCHOR: run
    /// Turn readiness events into task steps until [`EventLoop::stop`] is
    /// called — or until there is nothing left to wait for, which a correct
    /// program never reaches with work undone, but which must end the loop
    /// rather than block in `poll` forever.
    pub fn run(&self) -> io::Result<()> {
        while !self.stopped.get() && self.has_work() {
            self.run_once()?;
        }
        // Reset, so that a stopped loop can be run again.
        self.stopped.set(false);
        Ok(())
    }

    /// One turn: wait for events (no longer than the next timer is due), call
    /// the callback of every ready socket, then the timers that are due, then
    /// step the tasks that were woken before this turn's steps began.
    pub fn run_once(&self) -> io::Result<()> {
        let timeout = self.poll_timeout();
        let tokens: Vec<Token> = {
            let mut events = self.events.borrow_mut();
            match self.poll.borrow_mut().poll(&mut events, timeout) {
                Ok(()) => {}
                // A signal interrupted the wait: not an error, just no events.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => events.clear(),
                Err(e) => return Err(e),
            }
            // Copy the tokens out: the events cannot stay borrowed while the
            // callbacks run.
            events.iter().map(|event| event.token()).collect()
        };
        for token in tokens {
            self.dispatch(token);
        }
        self.run_due_timers();
        self.step_ready_tasks();
        Ok(())
    }
    // ANCHOR_END: run

    // ANCHOR: dispatch
    /// Call the callback registered under `token`, if there still is one.
    fn dispatch(&self, token: Token) {
        // Take the callback out of the map, so the map is not borrowed while
        // it runs. A stale token (unregistered by an earlier callback of
        // this batch) finds nothing and is skipped.
        let Some(mut callback) = self
            .callbacks
            .borrow_mut()
            .get_mut(&token)
            .and_then(Option::take)
        else {
            return;
        };
        callback();
        // Put it back — unless it was unregistered (the slot is gone) or
        // replaced with `modify` (the slot is full again) meanwhile.
        if let Some(slot @ None) = self.callbacks.borrow_mut().get_mut(&token) {
            *slot = Some(callback);
        }
    }

    /// Step every task that was woken before this call began: resume its
    /// coroutine until it waits again or returns.
    fn step_ready_tasks(&self) {
        // Only what was scheduled before now: a task that wakes itself must
        // not keep this turn going forever and starve I/O.
        for _ in 0..self.ready.len() {
            let Some(id) = self.ready.pop() else {
                break;
            };
            // Out of the table while it runs: its coroutine may create tasks.
            // An id with no task is a wake-up for a task that has finished
            // (or one woken twice and already stepped): nothing to do.
            let Some(mut task) = self.tasks.borrow_mut().remove(&id) else {
                continue;
            };
            if !task.step() {
                self.tasks.borrow_mut().insert(id, task);
            }
            // A finished task is dropped here, and its coroutine's frame
            // with it: sockets unregister and close, timers are cancelled.
        }
    }
    // ANCHOR_END: dispatch

    /// How long `poll` may block: not at all when tasks are waiting to be
    /// stepped, until the first timer is due when there is one, else forever.
    fn poll_timeout(&self) -> Option<Duration> {
        if !self.ready.is_empty() {
            return Some(Duration::ZERO);
        }
        self.timers
            .borrow()
            .keys()
            .next()
            .map(|first| first.when.saturating_duration_since(Instant::now()))
    }

    /// Run every timer whose time has come, earliest first.
    fn run_due_timers(&self) {
        let now = Instant::now();
        // Only timers due by `now`: a timer that starts a zero-delay timer
        // gets it run on the next turn, after I/O has had its chance.
        loop {
            let handle = {
                let mut timers = self.timers.borrow_mut();
                match timers.first_entry() {
                    Some(entry) if entry.key().when <= now => entry.remove(),
                    _ => break,
                }
            };
            handle();
        }
    }

    /// Drop every task, callback and timer still held: asyncio's
    /// `loop.close()`. Coroutines hold the loop's `Rc` and the loop holds
    /// the coroutines, so a loop stopped with tasks unfinished would
    /// otherwise never be freed, nor the sockets inside it.
    pub fn close(&self) {
        // Taken out first and dropped after the borrows end: dropping a
        // coroutine unregisters its socket and cancels its timer, which
        // borrow these very maps.
        let tasks = std::mem::take(&mut *self.tasks.borrow_mut());
        drop(tasks);
        let callbacks = std::mem::take(&mut *self.callbacks.borrow_mut());
        drop(callbacks);
        let timers = std::mem::take(&mut *self.timers.borrow_mut());
        drop(timers);
        while self.ready.pop().is_some() {}
    }
}

impl std::fmt::Debug for EventLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLoop")
            .field("registered", &self.callbacks.borrow().len())
            .field("ready", &self.ready.len())
            .field("tasks", &self.tasks.borrow().len())
            .field("timers", &self.timers.borrow().len())
            .field("stopped", &self.stopped.get())
            .finish()
    }
}

// ANCHOR: sleep_future
/// The future of [`EventLoop::sleep`]: the timer's result slot, plus what it
/// takes to cancel the timer.
#[derive(Debug)]
pub struct Sleep {
    /// The loop the timer is on, to cancel it when this is dropped.
    event_loop: Rc<EventLoop>,
    /// The pending timer.
    timer: TimerHandle,
    /// Resolved by the timer.
    fired: Future<()>,
}

impl std::future::Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> TaskPoll<()> {
        Pin::new(&mut self.fired).poll(cx)
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        // `false` when the timer already fired: nothing to cancel then.
        self.event_loop.cancel(self.timer);
    }
}
// ANCHOR_END: sleep_future
