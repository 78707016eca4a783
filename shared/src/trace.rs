//! # `--trace FILE`: what the crawl did, over time
//!
//! The report says *what* a crawl fetched; a trace shows *when*. Every lesson
//! marks the same moments — a fetch starts, enters a phase, ends; the event
//! loop polls and runs what is ready — and this recorder writes them in the
//! Trace Event Format, the JSON that Perfetto (<https://ui.perfetto.dev>),
//! `chrome://tracing` and speedscope open, and that the course's `timeline`
//! tool draws for the book.
//!
//! What a trace holds:
//!
//! - **one slice per fetch**, named by its URL, on the fetch's *lane*, with
//!   its phases nested inside as child slices: `resolve`, `connect`, `send`
//!   (the request), `wait` (for the first byte), `read` (the rest), `links`
//!   (finding the page's links). The fetch's `args` say how it ended.
//! - **lanes that show the model**: lesson 1 puts a fetch on its worker
//!   thread's lane ([`Lane::Thread`]), lessons 2 and 3 on the lowest lane no
//!   other fetch holds ([`Lane::Lowest`], so the number of lanes is the most
//!   fetches ever in flight), lesson 4 on its worker task's ([`Lane::Worker`]).
//! - **the event loop's turns** (lessons 2–4), each a slice on a lane of its
//!   own: the time blocked in `poll`, then the time running callbacks or task
//!   steps, with how many of each.
//! - **counters**: fetches in flight, open sockets, URLs queued.
//!
//! Events are written as they happen, through a buffer, so a long crawl's
//! trace costs disk rather than memory; the recorder keeps only the fetches
//! still open. [`Trace::finish`] ends any fetch still open, names the lanes,
//! and closes the JSON, so the file is valid however the crawl went.
//!
//! Off by default, and then free: a [`Trace`] that is off is a `None`, and
//! every method checks that first and returns. The lessons call it
//! unconditionally, at the same points in each lesson, so their diffs stay
//! about the concurrency model.
//!
//! One recorder serves the threads of lesson 1 and the single thread of
//! lessons 2–4, so it sits behind a `Mutex`; with one thread the lock is
//! never contended.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::fs::File;
use std::future::Future;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::thread::ThreadId;
use std::time::Instant;

use crate::stats::{FetchError, FetchStatistic};

/// A handle on the crawl's recorder, or nothing when `--trace` is off.
/// Cloning it is cheap, and every clone writes to the same trace.
#[derive(Clone, Default)]
pub struct Trace {
    /// `None` when tracing is off: then every method returns at once.
    recorder: Option<Arc<Mutex<Recorder>>>,
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_on() {
            "Trace(on)"
        } else {
            "Trace(off)"
        })
    }
}

/// Which lane a fetch is drawn on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// The calling thread's lane: lesson 1, one lane per worker thread.
    Thread,
    /// The lowest lane no fetch holds now: lessons 2 and 3, where every
    /// fetch in flight is its own callback chain or coroutine.
    Lowest,
    /// Worker `n`'s lane (`n` from 1): lesson 4's worker tasks.
    Worker(usize),
}

/// A phase of a fetch, in the order a fetch goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Looking up the host's addresses (once per host and crawl: later
    /// fetches find them cached, and their `resolve` is a sliver).
    Resolve,
    /// Opening the TCP connection.
    Connect,
    /// Writing the request.
    Send,
    /// Waiting for the first byte of the response: the server's time.
    Wait,
    /// Reading the rest of the response.
    Read,
    /// Finding the page's links and queueing the new ones.
    Links,
}

impl Phase {
    /// The slice's name in the trace.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Resolve => "resolve",
            Phase::Connect => "connect",
            Phase::Send => "send",
            Phase::Wait => "wait",
            Phase::Read => "read",
            Phase::Links => "links",
        }
    }
}

/// One turn of an event loop being timed: made by [`Trace::start_turn`],
/// marked by [`LoopTurn::polled`], ended by [`Trace::end_turn`]. Nothing but
/// two empty `Option`s when tracing is off.
#[derive(Debug, Clone, Copy)]
pub struct LoopTurn {
    /// When the turn began (when it called `poll`).
    started: Option<Instant>,
    /// When `poll` returned.
    polled: Option<Instant>,
}

impl LoopTurn {
    /// `poll` has returned: from here on the loop runs what is ready.
    pub fn polled(&mut self) {
        if self.started.is_some() {
            self.polled = Some(Instant::now());
        }
    }
}

/// The lane the event loop's turns are drawn on (the fetch lanes come after).
const LOOP_TID: usize = 1;

impl Trace {
    /// No tracing: every method is a no-op.
    pub fn off() -> Trace {
        Trace::default()
    }

    /// Trace to a new file at `path` (replacing one that is there).
    /// `process` names the trace's one process (`lesson 4: ...`).
    pub fn create(path: &Path, process: &str) -> io::Result<Trace> {
        let file = File::create(path)?;
        Ok(Trace::to_sink(Sink::File(BufWriter::new(file)), process))
    }

    /// Trace into memory, for tests: [`Trace::captured`] returns the text
    /// once the trace is finished.
    pub fn capture(process: &str) -> Trace {
        Trace::to_sink(Sink::Memory(Vec::new()), process)
    }

    fn to_sink(out: Sink, process: &str) -> Trace {
        let mut recorder = Recorder {
            out,
            first: true,
            error: None,
            finished: false,
            origin: Instant::now(),
            process: process.to_owned(),
            next_id: 0,
            open: HashMap::new(),
            lanes: Lanes::default(),
            in_flight: Counter::new("fetches in flight"),
            sockets: Counter::new("open sockets"),
            queued: Counter::new("URLs queued"),
            loop_turns: 0,
            captured: None,
        };
        recorder.write_raw("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
        Trace {
            recorder: Some(Arc::new(Mutex::new(recorder))),
        }
    }

    /// Is this crawl traced?
    pub fn is_on(&self) -> bool {
        self.recorder.is_some()
    }

    /// The recorder, locked; `None` when tracing is off. A lock poisoned by
    /// a panicking thread is still used: the trace is only a record.
    fn lock(&self) -> Option<MutexGuard<'_, Recorder>> {
        let recorder = self.recorder.as_ref()?;
        Some(recorder.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A fetch of `url` starts now, on `lane`. Mark its phases and end it
    /// through the returned [`FetchSpan`].
    pub fn fetch(&self, url: &str, lane: Lane) -> FetchSpan {
        let span = self.recorder.as_ref().map(|recorder| {
            let id = recorder
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .open_fetch(url, lane);
            Arc::new(Span {
                recorder: Arc::clone(recorder),
                id,
                url: url.into(),
                lane,
            })
        });
        FetchSpan { span }
    }

    /// An event loop's turn starts: it is about to `poll`.
    pub fn start_turn(&self) -> LoopTurn {
        LoopTurn {
            started: self.is_on().then(Instant::now),
            polled: None,
        }
    }

    /// The turn is over: `events` readiness events came out of `poll`, then
    /// `ran` callbacks or task steps ran; `sockets` are registered with the
    /// loop now.
    pub fn end_turn(&self, turn: LoopTurn, events: usize, ran: usize, sockets: usize) {
        let (Some(started), Some(mut recorder)) = (turn.started, self.lock()) else {
            return;
        };
        let ended = Instant::now();
        let polled = turn.polled.unwrap_or(ended);
        recorder.loop_turn(started, polled, ended, events, ran, sockets);
    }

    /// `urls` URLs are waiting to be fetched.
    pub fn queued(&self, urls: usize) {
        if let Some(mut recorder) = self.lock() {
            let now = Instant::now();
            recorder.set_counter(now, |r| &mut r.queued, urls);
        }
    }

    /// End the trace: end the fetches still open, name the lanes, close the
    /// JSON and flush it. Later events are ignored; finishing twice is
    /// harmless. An error says the file is incomplete (a full disk, say).
    pub fn finish(&self) -> io::Result<()> {
        match self.lock() {
            Some(mut recorder) => recorder.finish(),
            None => Ok(()),
        }
    }

    /// The text of a finished [`Trace::capture`] trace.
    pub fn captured(&self) -> Option<String> {
        let recorder = self.lock()?;
        recorder.captured.clone()
    }
}

/// One fetch in a trace (or nothing, when tracing is off). Clones are the
/// same fetch, so a lesson can hand one to its fetch code and keep one for
/// the `links` phase and the end. A span that is never ended is ended by
/// [`Trace::finish`], marked `unfinished`.
#[derive(Clone)]
pub struct FetchSpan {
    /// The fetch in the recorder. One pointer, so that a coroutine holding
    /// a span (lesson 4's fetches wait by the ten thousand) grows by eight
    /// bytes, not more.
    span: Option<Arc<Span>>,
}

/// A fetch: the recorder, the fetch's id in it, and what it takes to open
/// the fetch's slice again for another attempt.
struct Span {
    /// The recorder.
    recorder: Arc<Mutex<Recorder>>,
    /// The fetch's id in the recorder.
    id: u64,
    /// The URL, the slice's name.
    url: Box<str>,
    /// How its lane was chosen, to choose it the same way for its next
    /// attempt (a worker's lane is the same lane again).
    lane: Lane,
}

impl Span {
    fn lock(&self) -> MutexGuard<'_, Recorder> {
        self.recorder.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The last handle on a fetch is gone: if its slice is still open (the
/// fetch was given back to be tried later, or its coroutine was dropped),
/// the slice ends here, marked `abandoned`.
impl Drop for Span {
    fn drop(&mut self) {
        let now = Instant::now();
        self.lock().close_fetch(self.id, Outcome::Abandoned, now);
    }
}

thread_local! {
    /// The fetch this thread is working for right now: set by
    /// [`FetchSpan::in_scope`] for a call, and by [`Instrumented`] for each
    /// poll of a coroutine. What [`phase`] and its siblings mark.
    static CURRENT: RefCell<Option<Arc<Span>>> = const { RefCell::new(None) };
}

impl std::fmt::Debug for FetchSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.span {
            Some(span) => write!(f, "FetchSpan({})", span.id),
            None => f.write_str("FetchSpan(off)"),
        }
    }
}

impl FetchSpan {
    /// A span that records nothing.
    pub fn off() -> FetchSpan {
        FetchSpan { span: None }
    }

    fn with(&self, f: impl FnOnce(&mut Recorder, u64, Instant)) {
        if let Some(span) = &self.span {
            f(&mut span.lock(), span.id, Instant::now());
        }
    }

    /// The fetch enters `phase` now; the phase it was in ends.
    pub fn phase(&self, phase: Phase) {
        self.with(|recorder, id, now| recorder.enter_phase(id, phase, now));
    }

    /// The fetch runs on connection `id` (lesson 4's pool), `reused` or new.
    pub fn connection(&self, connection: u32, reused: bool) {
        self.with(|recorder, id, _| {
            if let Some(open) = recorder.open.get_mut(&id) {
                open.args.connection = Some((connection, reused));
            }
        });
    }

    /// Attempt `n` at the URL starts (lesson 4's retries, from 1). After a
    /// failed attempt ([`FetchSpan::fail`]) the fetch gets a new slice, on
    /// the same lane: one slice per attempt.
    pub fn attempt(&self, n: usize) {
        if let Some(span) = &self.span {
            let now = Instant::now();
            let mut recorder = span.lock();
            if !recorder.open.contains_key(&span.id) {
                recorder.reopen_fetch(span.id, &span.url, span.lane, now);
            }
            if let Some(open) = recorder.open.get_mut(&span.id) {
                open.args.attempt = Some(n);
            }
        }
    }

    /// Run `f` as this fetch's work: while it runs, [`phase`] and its
    /// siblings mark this fetch. For code that blocks (lesson 1's threads).
    pub fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let _entered = self.enter();
        f()
    }

    /// Make this fetch the thread's current one until the guard is dropped
    /// (and the one before it current again). Nothing at all when off.
    fn enter(&self) -> Entered {
        match &self.span {
            Some(span) => Entered {
                previous: Some(CURRENT.with(|current| current.replace(Some(Arc::clone(span))))),
            },
            None => Entered { previous: None },
        }
    }

    /// `future`, with this fetch current during each of its polls: the
    /// coroutine's trace context travels with it, however the loop
    /// interleaves it with others (`tracing`'s `Instrument`, made small).
    /// Pass it pinned (`pin!(coroutine)`): the course forbids the `unsafe`
    /// a wrapper would need to pin what it owns.
    pub fn instrument<F: Future + Unpin>(self, future: F) -> Instrumented<F> {
        Instrumented { span: self, future }
    }

    /// The fetch is over, and `stat` is its report line.
    pub fn end(&self, stat: &FetchStatistic) {
        self.with(|recorder, id, now| {
            let outcome = match &stat.error {
                Some(error) => Outcome::Failed(error.kind.key(), error.message.clone()),
                None => Outcome::Status(stat.status.unwrap_or(0)),
            };
            recorder.close_fetch(id, outcome, now);
        });
    }

    /// The fetch (an attempt) failed with `error`.
    pub fn fail(&self, error: &FetchError) {
        self.with(|recorder, id, now| {
            let outcome = Outcome::Failed(error.kind.key(), error.message.clone());
            recorder.close_fetch(id, outcome, now);
        });
    }
}

/// The guard of [`FetchSpan::enter`]: puts back the fetch that was current.
struct Entered {
    /// `None` when the span was off (nothing to put back); else what was
    /// current before.
    previous: Option<Option<Arc<Span>>>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            // Taken out of the cell before it is dropped: dropping the last
            // handle on a span locks the recorder, and must not happen
            // while the cell is borrowed.
            let left = CURRENT.with(|current| current.replace(previous));
            drop(left);
        }
    }
}

// ANCHOR: instrument
/// A future run with its fetch current: see [`FetchSpan::instrument`].
pub struct Instrumented<F> {
    /// The fetch.
    span: FetchSpan,
    /// The coroutine.
    future: F,
}

impl<F: Future + Unpin> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _entered = self.span.enter();
        Pin::new(&mut self.future).poll(cx)
    }
}
// ANCHOR_END: instrument

/// Run `f` on the current fetch's span, if there is one.
fn with_current(f: impl FnOnce(&FetchSpan)) {
    let span = CURRENT.with(|current| current.borrow().clone());
    if let Some(span) = span {
        f(&FetchSpan { span: Some(span) });
    }
}

/// The current fetch enters `phase` (see [`FetchSpan::phase`]).
pub fn phase(phase: Phase) {
    with_current(|span| span.phase(phase));
}

/// The current fetch runs on connection `id` (see [`FetchSpan::connection`]).
pub fn connection(id: u32, reused: bool) {
    with_current(|span| span.connection(id, reused));
}

/// Attempt `n` of the current fetch starts (see [`FetchSpan::attempt`]).
pub fn attempt(n: usize) {
    with_current(|span| span.attempt(n));
}

/// The current fetch's attempt failed (see [`FetchSpan::fail`]).
pub fn fail(error: &FetchError) {
    with_current(|span| span.fail(error));
}

/// The current fetch is over (see [`FetchSpan::end`]).
pub fn end(stat: &FetchStatistic) {
    with_current(|span| span.end(stat));
}

/// How a fetch ended, for its slice's `args`.
#[derive(Debug)]
enum Outcome {
    /// A response, with its status code.
    Status(u16),
    /// A failure: its kind (the report's `fail_<kind>`) and message.
    Failed(&'static str, String),
    /// Dropped while still open: given back to be fetched again later, or
    /// its coroutine was cancelled.
    Abandoned,
    /// Still open when the trace was finished.
    Unfinished,
}

/// What the recorder keeps of a fetch still going.
#[derive(Debug)]
struct OpenFetch {
    /// The URL: the slice's name.
    url: Box<str>,
    /// Its lane (from 1)...
    lane: usize,
    /// ...and how it was chosen, to give it back.
    lane_kind: Lane,
    /// When it started.
    started: Instant,
    /// The phase it is in, and since when.
    phase: Option<(Phase, Instant)>,
    /// Has it opened a socket (reached `connect`)? Lesson 1's sockets are
    /// counted this way; the loop lessons count them in the loop.
    socket: bool,
    /// What else its slice's `args` say.
    args: FetchArgs,
}

/// A fetch's extra `args`.
#[derive(Debug, Default)]
struct FetchArgs {
    /// Lesson 4: the connection's id, and whether it was reused.
    connection: Option<(u32, bool)>,
    /// Lesson 4: which attempt at the URL this is.
    attempt: Option<usize>,
}

/// A counter track, written only when its value changes.
#[derive(Debug)]
struct Counter {
    /// The track's name.
    name: &'static str,
    /// The value last written.
    value: usize,
}

impl Counter {
    fn new(name: &'static str) -> Counter {
        Counter { name, value: 0 }
    }
}

/// Which lanes are in use, and what they are called.
#[derive(Debug, Default)]
struct Lanes {
    /// Lesson 1: each thread's lane, in the order threads first fetched.
    threads: HashMap<ThreadId, usize>,
    /// Lessons 2 and 3: lanes below `next` that no fetch holds now.
    free: BTreeSet<usize>,
    /// Lessons 2 and 3: the lowest lane never used yet.
    next: usize,
    /// Every lane used, with its name, for the metadata written at the end.
    named: HashMap<usize, String>,
}

impl Lanes {
    /// The lane a new fetch goes on (from 1).
    fn take(&mut self, lane: Lane) -> usize {
        let (n, kind) = match lane {
            Lane::Thread => {
                let next = self.threads.len() + 1;
                let n = *self
                    .threads
                    .entry(std::thread::current().id())
                    .or_insert(next);
                (n, "worker thread")
            }
            Lane::Lowest => {
                let n = self.free.pop_first().unwrap_or_else(|| {
                    self.next += 1;
                    self.next
                });
                (n, "fetch")
            }
            Lane::Worker(n) => (n.max(1), "worker task"),
        };
        self.named.entry(n).or_insert_with(|| format!("{kind} {n}"));
        n
    }

    /// A fetch on `lane` has ended: a [`Lane::Lowest`] lane is free again.
    fn give_back(&mut self, lane: usize, kind: Lane) {
        if kind == Lane::Lowest {
            self.free.insert(lane);
        }
    }
}

/// The recorder behind every [`Trace`] handle of a crawl.
struct Recorder {
    /// Where the JSON goes.
    out: Sink,
    /// No event written yet (the next one needs no comma before it).
    first: bool,
    /// The first write error: after it nothing more is written, and
    /// `finish` reports it.
    error: Option<io::Error>,
    /// `finish` has run.
    finished: bool,
    /// Time zero of the trace: timestamps are microseconds since.
    origin: Instant,
    /// The process's name in the trace.
    process: String,
    /// The next fetch's id.
    next_id: u64,
    /// The fetches still going, by id.
    open: HashMap<u64, OpenFetch>,
    /// The lanes.
    lanes: Lanes,
    /// Fetches in flight: the open spans.
    in_flight: Counter,
    /// Sockets open: from the loop's turns (lessons 2–4), or from the
    /// fetches past `connect` (lesson 1).
    sockets: Counter,
    /// URLs waiting for a fetch.
    queued: Counter,
    /// Turns of the loop recorded: when there are any, the loop counts the
    /// sockets.
    loop_turns: u64,
    /// A capturing trace's text, once finished.
    captured: Option<String>,
}

impl Recorder {
    /// Microseconds from the trace's start to `t`, as the format wants them.
    fn ts(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.origin).as_secs_f64() * 1e6
    }

    fn write_raw(&mut self, text: &str) {
        if self.error.is_none() {
            if let Err(err) = self.out.write_all(text.as_bytes()) {
                self.error = Some(err);
            }
        }
    }

    /// Write one event (a JSON object's text), with the comma before it.
    fn event(&mut self, json: &str) {
        if self.finished {
            return;
        }
        if !self.first {
            self.write_raw(",\n");
        }
        self.first = false;
        self.write_raw(json);
    }

    /// A complete (`X`) slice on lane `tid`, from `start` to `end`.
    fn slice(
        &mut self,
        name: &str,
        cat: &str,
        tid: usize,
        start: Instant,
        end: Instant,
        args: &str,
    ) {
        let mut json = String::with_capacity(96 + name.len() + args.len());
        json.push_str("{\"name\":");
        push_json_str(&mut json, name);
        let _ = write!(
            json,
            ",\"cat\":\"{cat}\",\"ph\":\"X\",\"pid\":1,\"tid\":{tid},\"ts\":{:.3},\"dur\":{:.3}",
            self.ts(start),
            end.saturating_duration_since(start).as_secs_f64() * 1e6
        );
        if !args.is_empty() {
            let _ = write!(json, ",\"args\":{{{args}}}");
        }
        json.push('}');
        self.event(&json);
    }

    /// Set a counter, writing a `C` event if its value changed.
    fn set_counter(
        &mut self,
        now: Instant,
        counter: fn(&mut Recorder) -> &mut Counter,
        value: usize,
    ) {
        let c = counter(self);
        if c.value == value {
            return;
        }
        c.value = value;
        let name = c.name;
        let json = format!(
            "{{\"name\":\"{name}\",\"ph\":\"C\",\"pid\":1,\"ts\":{:.3},\"args\":{{\"value\":{value}}}}}",
            self.ts(now)
        );
        self.event(&json);
    }

    /// A new fetch: its id.
    fn open_fetch(&mut self, url: &str, lane: Lane) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.insert_fetch(id, url, lane, Instant::now());
        id
    }

    /// Fetch `id` starts another attempt, on a lane chosen as its first was.
    fn reopen_fetch(&mut self, id: u64, url: &str, lane: Lane, now: Instant) {
        if !self.finished {
            self.insert_fetch(id, url, lane, now);
        }
    }

    fn insert_fetch(&mut self, id: u64, url: &str, lane: Lane, now: Instant) {
        let n = self.lanes.take(lane);
        let fetch = OpenFetch {
            url: url.into(),
            lane: n,
            lane_kind: lane,
            started: now,
            phase: None,
            socket: false,
            args: FetchArgs::default(),
        };
        self.open.insert(id, fetch);
        let in_flight = self.open.len();
        self.set_counter(now, |r| &mut r.in_flight, in_flight);
    }

    /// Write the slice of the phase `fetch` is in, which ends at `now`.
    fn end_phase(&mut self, fetch: &mut OpenFetch, now: Instant) {
        if let Some((phase, since)) = fetch.phase.take() {
            self.slice(phase.name(), "phase", LOOP_TID + fetch.lane, since, now, "");
        }
    }

    fn enter_phase(&mut self, id: u64, phase: Phase, now: Instant) {
        let Some(mut fetch) = self.open.remove(&id) else {
            return;
        };
        self.end_phase(&mut fetch, now);
        fetch.phase = Some((phase, now));
        if phase == Phase::Connect && !fetch.socket {
            fetch.socket = true;
            if self.loop_turns == 0 {
                let sockets = self.sockets.value + 1;
                self.set_counter(now, |r| &mut r.sockets, sockets);
            }
        }
        self.open.insert(id, fetch);
    }

    fn close_fetch(&mut self, id: u64, outcome: Outcome, now: Instant) {
        let Some(mut fetch) = self.open.remove(&id) else {
            return;
        };
        self.end_phase(&mut fetch, now);
        let mut args = String::new();
        match &outcome {
            Outcome::Status(status) => {
                let _ = write!(args, "\"status\":{status}");
            }
            Outcome::Failed(kind, message) => {
                let _ = write!(args, "\"error\":\"{kind}\",\"message\":");
                push_json_str(&mut args, message);
            }
            Outcome::Abandoned => args.push_str("\"abandoned\":true"),
            Outcome::Unfinished => args.push_str("\"unfinished\":true"),
        }
        if let Some((connection, reused)) = fetch.args.connection {
            let _ = write!(args, ",\"connection\":{connection},\"reused\":{reused}");
        }
        if let Some(attempt) = fetch.args.attempt {
            let _ = write!(args, ",\"attempt\":{attempt}");
        }
        self.slice(
            &fetch.url,
            "fetch",
            LOOP_TID + fetch.lane,
            fetch.started,
            now,
            &args,
        );
        self.lanes.give_back(fetch.lane, fetch.lane_kind);
        let in_flight = self.open.len();
        self.set_counter(now, |r| &mut r.in_flight, in_flight);
        if fetch.socket && self.loop_turns == 0 {
            let sockets = self.sockets.value.saturating_sub(1);
            self.set_counter(now, |r| &mut r.sockets, sockets);
        }
    }

    fn loop_turn(
        &mut self,
        started: Instant,
        polled: Instant,
        ended: Instant,
        events: usize,
        ran: usize,
        sockets: usize,
    ) {
        self.loop_turns += 1;
        let args = format!("\"events\":{events},\"ran\":{ran}");
        self.slice("turn", "loop", LOOP_TID, started, ended, &args);
        self.slice("poll", "loop", LOOP_TID, started, polled, "");
        if ran > 0 {
            self.slice(
                "run",
                "loop",
                LOOP_TID,
                polled,
                ended,
                &format!("\"ran\":{ran}"),
            );
        }
        self.set_counter(ended, |r| &mut r.sockets, sockets);
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.finished {
            return Ok(());
        }
        let now = Instant::now();
        let mut ids: Vec<u64> = self.open.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.close_fetch(id, Outcome::Unfinished, now);
        }
        // Metadata: the process's name, the lanes' names, and their order.
        let mut meta = Vec::new();
        let mut name = String::new();
        push_json_str(&mut name, &self.process);
        meta.push(format!(
            "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{{\"name\":{name}}}}}"
        ));
        let mut lanes: Vec<(usize, String)> = self
            .lanes
            .named
            .iter()
            .map(|(n, name)| (LOOP_TID + n, name.clone()))
            .collect();
        if self.loop_turns > 0 {
            lanes.push((LOOP_TID, "event loop".to_owned()));
        }
        lanes.sort();
        for (tid, lane) in lanes {
            meta.push(format!(
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\"args\":{{\"name\":\"{lane}\"}}}}"
            ));
            meta.push(format!(
                "{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\"args\":{{\"sort_index\":{tid}}}}}"
            ));
        }
        for event in meta {
            self.event(&event);
        }
        self.write_raw("\n]}\n");
        self.finished = true;
        if self.error.is_none() {
            if let Err(err) = self.out.flush() {
                self.error = Some(err);
            }
        }
        if let Sink::Memory(bytes) = &self.out {
            self.captured = Some(String::from_utf8_lossy(bytes).into_owned());
        }
        match self.error.take() {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }
}

impl Drop for Recorder {
    /// A trace nobody finished (the crawl returned an error) is still
    /// closed, so the file is valid JSON.
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Where a trace goes: a file, or memory (for tests).
enum Sink {
    /// `--trace FILE`, buffered: events are small and many.
    File(BufWriter<File>),
    /// [`Trace::capture`].
    Memory(Vec<u8>),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::File(file) => file.write(buf),
            Sink::Memory(bytes) => bytes.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File(file) => file.flush(),
            Sink::Memory(_) => Ok(()),
        }
    }
}

/// Append `s` to `json` as a JSON string: quotes and backslashes escaped,
/// control characters as `\n`, `\t`, ... or `\u00XX`. Everything else,
/// non-ASCII included, goes in as it is: JSON text is UTF-8.
pub fn push_json_str(json: &mut String, s: &str) {
    json.push('"');
    for c in s.chars() {
        match c {
            '"' => json.push_str("\\\""),
            '\\' => json.push_str("\\\\"),
            '\n' => json.push_str("\\n"),
            '\r' => json.push_str("\\r"),
            '\t' => json.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(json, "\\u{:04x}", u32::from(c));
            }
            c => json.push(c),
        }
    }
    json.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::FailKind;
    use serde_json::Value;

    fn finished(trace: &Trace) -> Value {
        trace.finish().expect("finish");
        let text = trace.captured().expect("captured");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    fn events(json: &Value) -> &Vec<Value> {
        json["traceEvents"].as_array().expect("traceEvents")
    }

    fn fetch_slices(json: &Value) -> Vec<&Value> {
        events(json)
            .iter()
            .filter(|e| e["cat"] == "fetch")
            .collect()
    }

    #[test]
    fn strings_round_trip() {
        let nasty = "a \"quoted\" back\\slash, tab\t, newline\n, nul\0, bell\u{7}, \
                     unit sep\u{1f}, del\u{7f}, é, 漢字, 🦀, line sep\u{2028}";
        let trace = Trace::capture(nasty);
        let span = trace.fetch(nasty, Lane::Lowest);
        span.fail(&FetchError::new(FailKind::Protocol, nasty));
        let json = finished(&trace);
        let fetch = fetch_slices(&json)[0];
        assert_eq!(fetch["name"], nasty);
        assert_eq!(fetch["args"]["message"], nasty);
        assert_eq!(fetch["args"]["error"], "protocol");
        let process = events(&json)
            .iter()
            .find(|e| e["name"] == "process_name")
            .expect("process name");
        assert_eq!(process["args"]["name"], nasty);
    }

    #[test]
    fn lowest_free_lane() {
        let trace = Trace::capture("lanes");
        let a = trace.fetch("a", Lane::Lowest);
        let b = trace.fetch("b", Lane::Lowest);
        a.end(&FetchStatistic::default());
        let c = trace.fetch("c", Lane::Lowest);
        b.end(&FetchStatistic::default());
        c.end(&FetchStatistic::default());
        let json = finished(&trace);
        let lane = |name: &str| {
            fetch_slices(&json)
                .into_iter()
                .find(|f| f["name"] == name)
                .expect(name)["tid"]
                .as_u64()
        };
        assert_eq!(lane("a"), lane("c"), "c takes the lane a gave back");
        assert_ne!(lane("a"), lane("b"));
    }

    #[test]
    fn phases_mark_the_current_fetch_only() {
        let trace = Trace::capture("phases");
        let span = trace.fetch("u", Lane::Worker(2));
        phase(Phase::Resolve); // no current fetch: nothing
        span.in_scope(|| {
            phase(Phase::Connect);
            phase(Phase::Send);
        });
        phase(Phase::Wait); // out of scope again: nothing
        span.end(&FetchStatistic {
            status: Some(204),
            ..Default::default()
        });
        let json = finished(&trace);
        let phases: Vec<&str> = events(&json)
            .iter()
            .filter(|e| e["cat"] == "phase")
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(phases, ["connect", "send"]);
        assert_eq!(fetch_slices(&json)[0]["args"]["status"], 204);
        assert_eq!(fetch_slices(&json)[0]["tid"], LOOP_TID as u64 + 2);
    }

    #[test]
    fn instrument_is_current_during_polls_only() {
        struct Probe(u8);
        impl Future for Probe {
            type Output = ();
            fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
                phase(if self.0 == 0 {
                    Phase::Send
                } else {
                    Phase::Read
                });
                self.0 += 1;
                if self.0 == 2 {
                    Poll::Ready(())
                } else {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            }
        }
        let trace = Trace::capture("instrument");
        let span = trace.fetch("u", Lane::Lowest);
        let mut probe = std::pin::pin!(span.clone().instrument(Probe(0)));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(probe.as_mut().poll(&mut cx).is_pending());
        phase(Phase::Wait); // between polls: not this fetch's
        assert!(probe.as_mut().poll(&mut cx).is_ready());
        span.end(&FetchStatistic::default());
        let json = finished(&trace);
        let phases: Vec<&str> = events(&json)
            .iter()
            .filter(|e| e["cat"] == "phase")
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(phases, ["send", "read"]);
    }

    #[test]
    fn dropped_and_unfinished_fetches_still_end() {
        let trace = Trace::capture("ends");
        drop(trace.fetch("dropped", Lane::Lowest));
        let open = trace.fetch("open", Lane::Lowest);
        let json = finished(&trace);
        let args = |name: &str| {
            fetch_slices(&json)
                .into_iter()
                .find(|f| f["name"] == name)
                .expect(name)["args"]
                .clone()
        };
        assert_eq!(args("dropped")["abandoned"], true);
        assert_eq!(args("open")["unfinished"], true);
        // After the end, the last handle going is harmless.
        open.end(&FetchStatistic::default());
        drop(open);
        assert!(trace.finish().is_ok());
    }

    #[test]
    fn attempts_reopen_on_the_same_lane() {
        let trace = Trace::capture("attempts");
        let span = trace.fetch("u", Lane::Worker(3));
        span.attempt(1);
        span.fail(&FetchError::new(FailKind::Reset, "reset"));
        span.attempt(2);
        span.end(&FetchStatistic {
            status: Some(200),
            ..Default::default()
        });
        let json = finished(&trace);
        let fetches = fetch_slices(&json);
        assert_eq!(fetches.len(), 2);
        assert_eq!(fetches[0]["args"]["attempt"], 1);
        assert_eq!(fetches[0]["args"]["error"], "reset");
        assert_eq!(fetches[1]["args"]["attempt"], 2);
        assert_eq!(fetches[1]["args"]["status"], 200);
        assert_eq!(fetches[0]["tid"], fetches[1]["tid"]);
    }

    #[test]
    fn a_reopened_lowest_lane_is_taken_again_not_shared() {
        let trace = Trace::capture("reopen");
        let retried = trace.fetch("retried", Lane::Lowest);
        retried.fail(&FetchError::new(FailKind::Reset, "reset"));
        // Its lane is free now, and another fetch takes it...
        let other = trace.fetch("other", Lane::Lowest);
        // ...so the second attempt must go on a lane of its own.
        retried.attempt(2);
        retried.end(&FetchStatistic::default());
        other.end(&FetchStatistic::default());
        let json = finished(&trace);
        let lane = |name: &str| {
            fetch_slices(&json)
                .into_iter()
                .filter(|f| f["name"] == name)
                .map(|f| f["tid"].as_u64())
                .collect::<Vec<_>>()
        };
        let (retried, other) = (lane("retried"), lane("other"));
        assert_eq!(retried.len(), 2);
        assert_eq!(
            retried[0], other[0],
            "the first attempt's lane was given back"
        );
        assert_ne!(retried[1], other[0], "the second attempt does not share it");
    }

    #[test]
    fn off_records_nothing() {
        let trace = Trace::off();
        let span = trace.fetch("u", Lane::Thread);
        span.in_scope(|| phase(Phase::Connect));
        span.end(&FetchStatistic::default());
        let mut turn = trace.start_turn();
        turn.polled();
        trace.end_turn(turn, 1, 1, 1);
        assert!(trace.finish().is_ok());
        assert_eq!(trace.captured(), None);
    }

    #[test]
    fn loop_turns_and_counters() {
        let trace = Trace::capture("loop");
        let mut turn = trace.start_turn();
        turn.polled();
        trace.end_turn(turn, 3, 5, 7);
        trace.queued(4);
        trace.queued(4); // unchanged: not written again
        let json = finished(&trace);
        let turn = events(&json)
            .iter()
            .find(|e| e["name"] == "turn")
            .expect("turn");
        assert_eq!(turn["args"]["events"], 3);
        assert_eq!(turn["args"]["ran"], 5);
        let counters: Vec<(&str, u64)> = events(&json)
            .iter()
            .filter(|e| e["ph"] == "C")
            .map(|e| {
                (
                    e["name"].as_str().unwrap(),
                    e["args"]["value"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(counters, [("open sockets", 7), ("URLs queued", 4)]);
        assert!(events(&json)
            .iter()
            .any(|e| e["name"] == "thread_name" && e["args"]["name"] == "event loop"));
    }
}
