//! # The command line, and the body of every `main`
//!
//! All four lessons take the same command line (the spec's table), except for
//! the one knob that *is* the lesson's concurrency model: `--threads` for
//! lesson 1, `--max-tasks`/`--max-redirect`/`--max-tries` for lesson 4. One
//! hand-written parser serves them all; [`Lesson`] says which options exist.
//!
//! [`run`] is what each lesson's `main` calls: parse, start the demo site if
//! asked, crawl, print the report, choose the exit status.

use std::process::ExitCode;
use std::time::Duration;

use regex::Regex;

use crate::http::Limits;
use crate::log::{Level, Log};
use crate::CrawlFn;

/// Which lesson a command line is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lesson {
    One,
    Two,
    Three,
    Four,
}

impl Lesson {
    /// The binary's name: `lesson1` … `lesson4`.
    pub fn bin_name(self) -> &'static str {
        match self {
            Lesson::One => "lesson1",
            Lesson::Two => "lesson2",
            Lesson::Three => "lesson3",
            Lesson::Four => "lesson4",
        }
    }

    /// A one-line description for `--help`.
    pub fn title(self) -> &'static str {
        match self {
            Lesson::One => "the thread-pool crawler",
            Lesson::Two => "the callback crawler on mio",
            Lesson::Three => "the coroutine crawler (generators, then async fn)",
            Lesson::Four => "the asyncio-style crawler",
        }
    }
}

/// Everything a crawl needs to know. Built by [`parse_args`] from the command
/// line, or directly in tests with [`Config::new`] and field updates.
#[derive(Debug, Clone)]
pub struct Config {
    /// The lesson this configuration is for (decides which options were legal).
    pub lesson: Lesson,
    /// Root URLs as given (normalized by the crawl with [`crate::links::normalize_root`]).
    pub roots: Vec<String>,
    /// `--exclude REGEX`: skip URLs that match.
    pub exclude: Option<Regex>,
    /// `--lenient`: hosts match on their last two labels (default strict).
    pub lenient: bool,
    /// `--timeout SECS`: deadline for each whole fetch (default 30 s).
    pub timeout: Duration,
    /// `--threads N` (lesson 1, default 4).
    pub threads: usize,
    /// `--max-tasks N` (lesson 4, default 100).
    pub max_tasks: usize,
    /// `--max-redirect N` (lesson 4, default 10).
    pub max_redirect: usize,
    /// `--max-tries N` (lesson 4, default 4).
    pub max_tries: usize,
    /// `--demo`: serve a generated site in-process and crawl it.
    pub demo: bool,
    /// Where log lines go and how many (`-q`, `-v`).
    pub log: Log,
    /// Response size limits (settable here, not on the command line).
    pub limits: Limits,
}

/// The root crawled when none is given: the tutorial's local site.
pub const DEFAULT_ROOT: &str = "http://localhost:3000/";

impl Config {
    /// The defaults of the spec, for `lesson`, with the given roots.
    pub fn new<S: Into<String>>(lesson: Lesson, roots: impl IntoIterator<Item = S>) -> Self {
        Config {
            lesson,
            roots: roots.into_iter().map(Into::into).collect(),
            exclude: None,
            lenient: false,
            timeout: Duration::from_secs(30),
            threads: 4,
            max_tasks: 100,
            max_redirect: 10,
            max_tries: 4,
            demo: false,
            log: Log::stderr(Level::Info),
            limits: Limits::default(),
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone)]
pub enum Command {
    /// Crawl with this configuration.
    Crawl(Config),
    /// Print this text (`--help`) to stdout and exit 0.
    Help(String),
    /// Print this text (`--version`) to stdout and exit 0.
    Version(String),
}

/// A misuse of the command line: the one-line message printed before the
/// usage hint (exit status 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Parse `args` (without the program name) for `lesson`.
pub fn parse_args<I, S>(lesson: Lesson, args: I) -> Result<Command, UsageError>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let _ = args.into_iter().map(Into::into).collect::<Vec<String>>();
    todo!("{lesson:?}")
}

/// The `--help` text for `lesson`.
pub fn help(lesson: Lesson) -> String {
    todo!("{lesson:?}")
}

/// The body of every lesson's `main`: parse the command line, start the demo
/// site when asked, crawl, print the report on stdout, and choose the exit
/// status (0 crawl ran; 1 no fetch got a status line, with a hint; 2 usage).
pub fn run(lesson: Lesson, crawl: CrawlFn) -> ExitCode {
    let _ = crawl;
    todo!("{lesson:?}")
}
