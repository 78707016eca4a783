//! # Step 1: a generator, written by hand
//!
//! A Python generator is a function whose frame outlives the call: `yield`
//! stops it, hands a value out, and `gen.send(value)` later resumes it at the
//! same line with its local variables intact, as if the `yield` expression
//! had returned `value`. That resumable frame is all a coroutine needs, and
//! the whole of lesson 3 is built on it.
//!
//! Stable Rust has no `yield`. So this module writes generators the way a
//! compiler would: the frame becomes a struct, "where it stopped" (CPython's
//! `f_lasti`) becomes an enum with one variant per suspension point, and the
//! locals that are alive across a `yield` (CPython's `f_locals`) become the
//! fields of that variant.
//! <!-- how -->
//! `resume` is one `match` on the variant: run from there to the next
//! `yield`, store the new variant, return the value.
//! <!-- /how -->
//!
//! The examples are the tutorial's, with its transcript replayed exactly in
//! `tests/generator_transcript.rs`:
//!
//! - [`Fib`]: the endless Fibonacci generator, also an [`Iterator`] (in Python
//!   every generator is one).
//! - [`GenFn`]: the generator that yields 1, receives `"hello"`, yields 2,
//!   receives `"goodbye"` and returns `"done"`.
//! - [`CallerFn`]: `rv = yield from gen_fn()` — delegation to a
//!   sub-generator, the step that turns generators into coroutines that call
//!   each other like functions.
//!
//! Lesson 2 had no such thing: its `Fetcher` kept its "where am I" state in
//! which callback was registered. What changes here is that the state has a
//! name and a single entry point, `resume`.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

// ANCHOR: coroutine
/// What one `resume` gave: Python's `send` either returns the next yielded
/// value or raises `StopIteration` carrying the return value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State<Y, R> {
    /// The coroutine stopped at a `yield` and handed out this value.
    Yielded(Y),
    /// The coroutine ran off its end (or hit `return`) with this value.
    Complete(R),
}

/// Resuming a coroutine that already completed. Python raises
/// `StopIteration` again; here it is an error value the caller can match on,
/// never a panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished;

impl fmt::Display for Finished {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("coroutine resumed after it completed")
    }
}

impl std::error::Error for Finished {}

/// A resumable computation: the shape of Python's `gen.send(value)`.
///
/// `I` is what the caller sends in; it becomes the value of the `yield`
/// expression the coroutine is stopped at. The first `resume` starts the
/// coroutine from the top, where no `yield` is waiting for a value, so its
/// input is not seen (Python insists it be `None`).
pub trait Coroutine<I> {
    /// What each `yield` hands out.
    type Yield;
    /// What the coroutine returns when it completes.
    type Return;

    /// Run from where the coroutine stopped to its next `yield` or its end.
    fn resume(&mut self, input: I) -> Result<State<Self::Yield, Self::Return>, Finished>;
}
// ANCHOR_END: coroutine

/// Where the example generators "print". Tests read the lines back instead of
/// capturing stdout, and a generator and its sub-generator share one
/// transcript, as they share one terminal in the tutorial.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    /// Shared by every clone: the caller and the generators it creates.
    lines: Rc<RefCell<Vec<String>>>,
}

impl Transcript {
    pub fn new() -> Self {
        Transcript::default()
    }

    /// Python's `print(line)`.
    pub fn print(&self, line: impl Into<String>) {
        self.lines.borrow_mut().push(line.into());
    }

    /// Every line printed so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.borrow().clone()
    }
}

// ANCHOR: fib
/// The tutorial's first generator:
///
/// ```python
/// def fib():
///     a, b = 0, 1
///     while True:
///         yield a
///         a, b = b, a + b
/// ```
///
/// It has one suspension point (the `yield a` in the loop), so the frame is
/// just the two locals. Python's integers never overflow; a `u64` does, so
/// this generator completes after the last Fibonacci number that fits,
/// F(93), instead of producing a wrong one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fib {
    /// Stopped at `yield a` (or not started, which resumes the same way: the
    /// first thing the body does is yield `a`). `b` is `None` once `a + b`
    /// would not fit in a `u64`.
    Running { a: u64, b: Option<u64> },
    /// Yielded the last number that fits; the next resume leaves the loop
    /// and returns.
    Exhausted,
    /// Returned.
    Returned,
}

/// Python's `fib()`: make the generator. No code of the body runs yet.
pub fn fib() -> Fib {
    Fib::Running { a: 0, b: Some(1) }
}

impl Coroutine<()> for Fib {
    type Yield = u64;
    type Return = ();

    fn resume(&mut self, _input: ()) -> Result<State<u64, ()>, Finished> {
        match *self {
            Fib::Running { a, b } => {
                // `a, b = b, a + b`, then around the loop to the `yield`.
                *self = match b {
                    Some(b) => Fib::Running {
                        a: b,
                        b: a.checked_add(b),
                    },
                    None => Fib::Exhausted,
                };
                Ok(State::Yielded(a))
            }
            Fib::Exhausted => {
                *self = Fib::Returned;
                Ok(State::Complete(()))
            }
            Fib::Returned => Err(Finished),
        }
    }
}

/// `next(fib)`: a generator that takes no input is an iterator.
impl Iterator for Fib {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        match self.resume(()) {
            Ok(State::Yielded(n)) => Some(n),
            Ok(State::Complete(())) | Err(Finished) => None,
        }
    }
}
// ANCHOR_END: fib

// ANCHOR: gen_fn
/// The tutorial's two-`yield` generator:
///
/// ```python
/// def gen_fn():
///     result = yield 1
///     print('result of yield: {}'.format(result))
///     result2 = yield 2
///     print('result of 2nd yield: {}'.format(result2))
///     return 'done'
/// ```
#[derive(Debug, Clone)]
pub struct GenFn {
    /// Where the body stopped, and the locals alive there.
    frame: GenFnFrame,
    /// Where `print` goes.
    out: Transcript,
}

/// The frame of [`GenFn`]: one variant per place the body can be stopped.
/// The variant is CPython's `f_lasti`; its fields are `f_locals`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GenFnFrame {
    /// Made but not started (`f_lasti == -1`).
    Created,
    /// Stopped at `result = yield 1`. No local is alive yet.
    AtFirstYield,
    /// Stopped at `result2 = yield 2`. `result` is alive: it was assigned
    /// before this `yield` (the tutorial's `gi_frame.f_locals`,
    /// `{'result': 'hello'}`). Python's `print` already used it, so strictly
    /// it is dead here; it is kept to show where locals live.
    AtSecondYield { result: String },
    /// Returned `'done'`.
    Returned,
}

/// Python's `gen_fn()`: make the generator object; no line of the body runs.
pub fn gen_fn(out: &Transcript) -> GenFn {
    GenFn {
        frame: GenFnFrame::Created,
        out: out.clone(),
    }
}

impl GenFn {
    /// The frame, for looking inside as the tutorial does with `gi_frame`.
    pub fn frame(&self) -> &GenFnFrame {
        &self.frame
    }
}

/// Python's `str(None)`: what `print` shows for a `send(None)`.
fn py_str(value: Option<&str>) -> &str {
    value.unwrap_or("None")
}

impl<'a> Coroutine<Option<&'a str>> for GenFn {
    type Yield = i32;
    type Return = &'static str;

    fn resume(&mut self, input: Option<&'a str>) -> Result<State<i32, &'static str>, Finished> {
        // Take the frame out, leaving `Returned`: if the body below panicked,
        // the generator would be finished, not half-updated.
        match std::mem::replace(&mut self.frame, GenFnFrame::Returned) {
            GenFnFrame::Created => {
                // From the top to `yield 1`. The input has no `yield` to
                // become the value of.
                self.frame = GenFnFrame::AtFirstYield;
                Ok(State::Yielded(1))
            }
            GenFnFrame::AtFirstYield => {
                let result = py_str(input).to_string();
                self.out.print(format!("result of yield: {result}"));
                self.frame = GenFnFrame::AtSecondYield { result };
                Ok(State::Yielded(2))
            }
            GenFnFrame::AtSecondYield { result: _ } => {
                let result2 = py_str(input);
                self.out.print(format!("result of 2nd yield: {result2}"));
                Ok(State::Complete("done"))
            }
            GenFnFrame::Returned => Err(Finished),
        }
    }
}
// ANCHOR_END: gen_fn

// ANCHOR: caller_fn
/// `yield from`: a generator that delegates to a sub-generator.
///
/// ```python
/// def caller_fn():
///     gen = gen_fn()
///     rv = yield from gen
///     print('return value of yield-from: {}'.format(rv))
/// ```
///
/// While the sub-generator runs, every value it yields goes straight out of
/// the caller, and every value sent to the caller goes straight in to it; the
/// caller stays stopped on the one `yield from` line. When the sub-generator
/// returns, its return value is the value of the `yield from` expression.
#[derive(Debug, Clone)]
pub struct CallerFn {
    /// Where the body stopped.
    frame: CallerFrame,
    /// Where `print` goes; the sub-generator gets a clone.
    out: Transcript,
}

/// The frame of [`CallerFn`]. Note that the sub-generator's whole frame is a
/// field of the caller's: a coroutine that calls a coroutine *contains* it.
/// The coroutines the compiler writes nest the same way, which is why a
/// whole fetch, with all its sub-coroutines, is one value of a size known at compile time.
#[derive(Debug, Clone)]
pub enum CallerFrame {
    /// Made but not started.
    Created,
    /// Stopped on `rv = yield from gen`, with `gen` alive inside.
    Delegating { gen: GenFn },
    /// Returned `None`.
    Returned,
}

/// Python's `caller_fn()`.
pub fn caller_fn(out: &Transcript) -> CallerFn {
    CallerFn {
        frame: CallerFrame::Created,
        out: out.clone(),
    }
}

impl CallerFn {
    /// The frame, for looking inside (`caller.gi_frame`).
    pub fn frame(&self) -> &CallerFrame {
        &self.frame
    }
}

impl<'a> Coroutine<Option<&'a str>> for CallerFn {
    type Yield = i32;
    type Return = ();

    fn resume(&mut self, input: Option<&'a str>) -> Result<State<i32, ()>, Finished> {
        let mut gen = match std::mem::replace(&mut self.frame, CallerFrame::Returned) {
            // `gen = gen_fn()`, then `yield from` starts it with the same
            // `send(None)` that started us.
            CallerFrame::Created => gen_fn(&self.out),
            CallerFrame::Delegating { gen } => gen,
            CallerFrame::Returned => return Err(Finished),
        };
        // The sub-generator cannot be finished while we delegate to it: we
        // stop delegating the moment it completes. `?` still turns that
        // impossible case into an error rather than a panic.
        match gen.resume(input)? {
            State::Yielded(value) => {
                self.frame = CallerFrame::Delegating { gen };
                Ok(State::Yielded(value))
            }
            State::Complete(rv) => {
                self.out.print(format!("return value of yield-from: {rv}"));
                Ok(State::Complete(()))
            }
        }
    }
}
// ANCHOR_END: caller_fn
