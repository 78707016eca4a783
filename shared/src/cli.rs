//! # The command line, and the body of every `main`
//!
//! All four lessons take the same command line (the spec's table), except for
//! the one knob that *is* the lesson's concurrency model: `--threads` for
//! lesson 1, `--max-tasks`/`--max-redirect`/`--max-tries` for lesson 4. One
//! hand-written parser serves them all; [`Lesson`] says which options exist.
//!
//! The parser is written by hand rather than taken from a crate because the
//! course keeps to its four dependencies, and because it is small: a loop
//! over the arguments, one `match` on the option's name. It accepts the
//! spellings people type — `--opt value`, `--opt=value`, the original Python
//! program's `--max_tasks` — and turns every mistake into a one-line
//! [`UsageError`] rather than a panic: a command line is input too.
//!
//! [`run`] is what each lesson's `main` calls: parse, start the demo site if
//! asked, crawl, print the report, choose the exit status. Its decisions live
//! in [`execute`], which writes to any two [`Write`] sinks and returns the
//! status as a number, so the tests can walk every exit path with a fake
//! crawl and no process, terminal or network.

use std::ffi::OsString;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use regex::Regex;

use crate::demo::DemoSite;
use crate::http::Limits;
use crate::links::normalize_root;
use crate::log::{Level, Log};
use crate::trace::Trace;
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

    /// The lesson's crate: `lesson1-threadpool` … `lesson4-asyncio-style`
    /// (a starter's crate has the same name), for `cargo test -p`.
    pub fn crate_name(self) -> &'static str {
        match self {
            Lesson::One => "lesson1-threadpool",
            Lesson::Two => "lesson2-callbacks",
            Lesson::Three => "lesson3-generators",
            Lesson::Four => "lesson4-asyncio-style",
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
    /// `--user-agent NAME`: the `User-Agent` header, and the product token
    /// that picks a robots.txt group (default `crawler-course`).
    pub user_agent: String,
    /// `--robots obey|ignore`: ask each host's robots.txt first (default obey).
    pub obey_robots: bool,
    /// `--delay SECS`: the least time between the starts of two fetches to
    /// one host (default 0; a host's `Crawl-delay` may make it longer).
    pub delay: Duration,
    /// `--max-pages N`: at most N page fetches started in the whole crawl.
    pub max_pages: Option<usize>,
    /// `--max-depth N`: links of a page at depth N are not queued (roots are 0).
    pub max_depth: Option<usize>,
    /// `--trace FILE`: where to write the crawl's trace. [`execute`] opens
    /// it and puts the recorder in [`Config::trace`].
    pub trace_path: Option<PathBuf>,
    /// The recorder the lessons mark their fetches and loop turns on; off
    /// unless `--trace` was given (or a test turned it on).
    pub trace: Trace,
}

impl Config {
    /// How many sockets this crawl may hold open at once
    /// ([`crate::net::socket_budget`]). With `--demo` the server is in this
    /// process too, and holds the other end of every connection.
    pub fn socket_budget(&self) -> usize {
        crate::net::socket_budget(if self.demo { 2 } else { 1 })
    }
}

/// The most threads `--threads` accepts. Past about 16,000 threads Linux
/// refuses to map more thread stacks (the default `vm.max_map_count`), and
/// Rust's runtime then aborts the process instead of returning an error from
/// `spawn`; lesson 1's chapter measures it. Refusing here makes it a usage
/// error (exit 2) rather than a crawl that cannot start.
pub const MAX_THREADS: usize = 10_000;

/// The `User-Agent` sent, and the robots.txt product token, when
/// `--user-agent` is not given.
pub const DEFAULT_USER_AGENT: &str = "crawler-course";

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
            user_agent: DEFAULT_USER_AGENT.to_string(),
            obey_robots: true,
            delay: Duration::ZERO,
            max_pages: None,
            max_depth: None,
            trace_path: None,
            trace: Trace::off(),
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone)]
pub enum Command {
    /// Crawl with this configuration (boxed: it is far larger than a text).
    Crawl(Box<Config>),
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

/// The longest `--timeout` accepted: a day. A fetch still running after a day
/// is stuck, and the cap keeps `Instant::now() + timeout` (which panics on
/// overflow) safe in every lesson, whatever number is typed.
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// Parse `args` (without the program name) for `lesson`.
///
/// Arguments are read left to right. A value option given twice keeps the
/// last value (`--strict`/`--lenient` likewise); roots accumulate. `-h` or
/// `-V` stops the parse at once and asks for the help or version text, so
/// anything after it is not checked.
pub fn parse_args<I, S>(lesson: Lesson, args: I) -> Result<Command, UsageError>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut args = args.into_iter().map(Into::into);
    let mut config = Config::new(lesson, Vec::<String>::new());
    let mut level = Level::Info;

    while let Some(arg) = args.next() {
        if arg == "--" {
            // The usual escape hatch: everything after `--` is a root, even
            // if it starts with a dash.
            config.roots.extend(args.by_ref());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            // `--name=value` carries its value inline; `--name value` takes
            // the next argument (see `value_of`).
            let (name, inline) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            // Errors name the option the way it was typed (`--max_tasks`);
            // the match sees the dash spelling, so both spellings are one arm.
            let typed = format!("--{name}");
            match name.replace('_', "-").as_str() {
                "help" => {
                    no_value(&typed, inline)?;
                    return Ok(Command::Help(help(lesson)));
                }
                "version" => {
                    no_value(&typed, inline)?;
                    return Ok(Command::Version(version(lesson)));
                }
                "quiet" => {
                    no_value(&typed, inline)?;
                    level = Level::Error;
                }
                "verbose" => {
                    no_value(&typed, inline)?;
                    level = louder(level);
                }
                "strict" => {
                    no_value(&typed, inline)?;
                    config.lenient = false;
                }
                "lenient" => {
                    no_value(&typed, inline)?;
                    config.lenient = true;
                }
                "demo" => {
                    no_value(&typed, inline)?;
                    config.demo = true;
                }
                "exclude" => {
                    let value = value_of(&typed, inline, &mut args)?;
                    config.exclude = Some(parse_regex(&typed, &value)?);
                }
                "trace" => {
                    let value = value_of(&typed, inline, &mut args)?;
                    if value.is_empty() {
                        return Err(usage(format!("{typed} needs a file name")));
                    }
                    config.trace_path = Some(PathBuf::from(value));
                }
                "timeout" => {
                    let value = value_of(&typed, inline, &mut args)?;
                    config.timeout = parse_timeout(&typed, &value)?;
                }
                "user-agent" => {
                    let value = value_of(&typed, inline, &mut args)?;
                    config.user_agent = parse_product_token(&typed, &value)?;
                }
                "robots" => {
                    let value = value_of(&typed, inline, &mut args)?;
                    config.obey_robots = match value.as_str() {
                        "obey" => true,
                        "ignore" => false,
                        _ => {
                            return Err(usage(format!(
                                "{typed} expects obey or ignore, got {}",
                                quote(&value)
                            )))
                        }
                    };
                }
                "delay" => {
                    let value = value_of(&typed, inline, &mut args)?;
                    config.delay = parse_delay(&typed, &value)?;
                }
                "max-pages" => {
                    let value = value_of(&typed, inline, &mut args)?;
                    config.max_pages = Some(parse_count(&typed, &value, 1)?);
                }
                "max-depth" => {
                    let value = value_of(&typed, inline, &mut args)?;
                    // 0 is allowed: the roots only.
                    config.max_depth = Some(parse_count(&typed, &value, 0)?);
                }
                "threads" => {
                    // Checked before the value is read, so `lesson4
                    // --threads` says the option is wrong, not the value.
                    only_in(Lesson::One, lesson, &typed)?;
                    let value = value_of(&typed, inline, &mut args)?;
                    config.threads = parse_count(&typed, &value, 1)?;
                    if config.threads > MAX_THREADS {
                        return Err(usage(format!(
                            "{typed} must be at most {MAX_THREADS}, got {}",
                            config.threads
                        )));
                    }
                }
                "max-tasks" => {
                    only_in(Lesson::Four, lesson, &typed)?;
                    let value = value_of(&typed, inline, &mut args)?;
                    config.max_tasks = parse_count(&typed, &value, 1)?;
                }
                "max-redirect" => {
                    only_in(Lesson::Four, lesson, &typed)?;
                    let value = value_of(&typed, inline, &mut args)?;
                    // 0 is allowed: follow no redirect at all.
                    config.max_redirect = parse_count(&typed, &value, 0)?;
                }
                "max-tries" => {
                    only_in(Lesson::Four, lesson, &typed)?;
                    let value = value_of(&typed, inline, &mut args)?;
                    config.max_tries = parse_count(&typed, &value, 1)?;
                }
                _ => return Err(usage(format!("unknown option {}", quote(&arg)))),
            }
        } else if arg.len() > 1 && arg.starts_with('-') {
            // Short options are flags only, so they may be bundled: `-vv`
            // is `-v -v`, `-qv` is `-q -v`. (A lone `-` is no option: it
            // falls through to the roots and is checked as one.)
            for flag in arg.chars().skip(1) {
                match flag {
                    'h' => return Ok(Command::Help(help(lesson))),
                    'V' => return Ok(Command::Version(version(lesson))),
                    'q' => level = Level::Error,
                    'v' => level = louder(level),
                    _ => {
                        return Err(usage(format!(
                            "unknown option {}",
                            quote(&format!("-{flag}"))
                        )))
                    }
                }
            }
        } else {
            config.roots.push(arg);
        }
    }

    if config.demo && !config.roots.is_empty() {
        // `run` replaces the roots with the demo server's URL; silently
        // dropping the user's roots would be worse than saying so.
        return Err(usage("--demo crawls its own site: give no ROOT with it"));
    }
    // Refuse a root that is not a URL now, with exit status 2, rather than
    // letting the crawl discover it. The strings are kept as typed: the crawl
    // normalizes them again, with the same function.
    for root in &config.roots {
        if let Err(why) = normalize_root(root) {
            return Err(usage(format!(
                "bad root {}: {}",
                quote(root),
                one_line(&why)
            )));
        }
    }
    if config.roots.is_empty() && !config.demo {
        config.roots.push(DEFAULT_ROOT.to_string());
    }
    config.log = Log::stderr(level);
    Ok(Command::Crawl(Box::new(config)))
}

/// The `--version` text: `lessonN 0.1.0`.
fn version(lesson: Lesson) -> String {
    format!("{} {}", lesson.bin_name(), env!("CARGO_PKG_VERSION"))
}

fn usage(message: impl Into<String>) -> UsageError {
    UsageError(message.into())
}

/// One `-v` more: `-q` (errors) → default (info) → `-v` (debug). A second
/// `-v` is accepted and shows nothing more today; `-q -v` is the default.
fn louder(level: Level) -> Level {
    match level {
        Level::Error => Level::Info,
        Level::Info | Level::Debug => Level::Debug,
    }
}

/// Refuse an option of another lesson by name: `lesson1 --max-tasks 5`
/// should say the option is wrong here, not that it does not exist.
fn only_in(owner: Lesson, lesson: Lesson, typed: &str) -> Result<(), UsageError> {
    if owner == lesson {
        Ok(())
    } else {
        Err(usage(format!(
            "{typed} is not an option of {}",
            lesson.bin_name()
        )))
    }
}

/// A flag given a value (`--demo=yes`) is a mistake, not something to ignore.
fn no_value(typed: &str, inline: Option<String>) -> Result<(), UsageError> {
    match inline {
        None => Ok(()),
        Some(_) => Err(usage(format!("{typed} takes no value"))),
    }
}

/// The value of an option: the inline `=value`, else the next argument —
/// whatever it looks like, so `--exclude -draft` works as `getopt` would.
fn value_of(
    typed: &str,
    inline: Option<String>,
    rest: &mut impl Iterator<Item = String>,
) -> Result<String, UsageError> {
    inline
        .or_else(|| rest.next())
        .ok_or_else(|| usage(format!("{typed} needs a value")))
}

/// A whole number of at least `min` (1 for threads, tasks and tries: zero
/// workers would crawl nothing and never finish; 0 for `--max-redirect`).
fn parse_count(typed: &str, value: &str, min: usize) -> Result<usize, UsageError> {
    let n: usize = value.parse().map_err(|_| {
        usage(format!(
            "{typed} expects a whole number, got {}",
            quote(value)
        ))
    })?;
    if n < min {
        return Err(usage(format!("{typed} must be at least {min}, got {n}")));
    }
    Ok(n)
}

/// Seconds as a decimal, at most [`MAX_TIMEOUT_SECS`] (so `Instant +` the
/// duration cannot overflow). `f64::from_str` also accepts `inf` and `NaN`,
/// so finiteness is checked here rather than left to `Duration`, which
/// would panic on them.
fn parse_seconds(typed: &str, value: &str) -> Result<f64, UsageError> {
    let secs = value
        .parse::<f64>()
        .ok()
        .filter(|secs| secs.is_finite())
        .ok_or_else(|| {
            usage(format!(
                "{typed} expects a number of seconds, got {}",
                quote(value)
            ))
        })?;
    if secs > MAX_TIMEOUT_SECS {
        return Err(usage(format!(
            "{typed} must be at most {MAX_TIMEOUT_SECS} seconds, got {}",
            quote(value)
        )));
    }
    Ok(secs)
}

/// `--timeout`: seconds, greater than 0.
fn parse_timeout(typed: &str, value: &str) -> Result<Duration, UsageError> {
    // `1e-12` is greater than 0 but rounds to a zero `Duration`: refuse
    // whatever would make every fetch time out before it starts.
    let timeout = Duration::try_from_secs_f64(parse_seconds(typed, value)?).unwrap_or_default();
    if timeout.is_zero() {
        return Err(usage(format!(
            "{typed} must be greater than 0, got {}",
            quote(value)
        )));
    }
    Ok(timeout)
}

/// `--user-agent`: a product token as RFC 9309 matches it (letters, `_` and
/// `-`). Anything else could not be matched against a robots.txt group, and
/// a space or a line break would break the request's header.
fn parse_product_token(typed: &str, value: &str) -> Result<String, UsageError> {
    let ok = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'-');
    if ok {
        Ok(value.to_string())
    } else {
        Err(usage(format!(
            "{typed} expects a product token (letters, _ and -), got {}",
            quote(value)
        )))
    }
}

/// `--delay`: seconds, 0 or more.
fn parse_delay(typed: &str, value: &str) -> Result<Duration, UsageError> {
    let secs = parse_seconds(typed, value)?;
    if secs < 0.0 {
        return Err(usage(format!(
            "{typed} must be 0 or more, got {}",
            quote(value)
        )));
    }
    Ok(Duration::try_from_secs_f64(secs).unwrap_or_default())
}

/// Compile `--exclude` now, so a typo is a usage error before any fetch.
fn parse_regex(typed: &str, value: &str) -> Result<Regex, UsageError> {
    Regex::new(value).map_err(|e| {
        // The regex crate's syntax errors span several lines (the pattern,
        // a caret under the fault, then `error: WHAT`); keep the `WHAT`.
        let text = e.to_string();
        let what = text
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix("error: "))
            .map(str::to_string)
            .unwrap_or_else(|| one_line(&text));
        usage(format!("{typed}: bad regex {}: {what}", quote(value)))
    })
}

/// `'value'`, with control characters escaped so that a message always stays
/// on one line, whatever was typed.
fn quote(value: &str) -> String {
    format!("'{}'", one_line(value))
}

/// `text` with line breaks and other control characters escaped.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The `--help` text for `lesson`: only the options this lesson has, each
/// with its default, taken from [`Config::new`] so the two cannot disagree.
pub fn help(lesson: Lesson) -> String {
    let bin = lesson.bin_name();
    let defaults = Config::new(lesson, [DEFAULT_ROOT]);
    let mut options: Vec<(&str, String)> = vec![
        (
            "--exclude REGEX",
            "skip URLs matching REGEX (roots are always fetched)".into(),
        ),
        (
            "--strict",
            "hosts match with or without a leading www. [default]".into(),
        ),
        ("--lenient", "hosts match on their last two labels".into()),
        (
            "--timeout SECS",
            format!(
                "deadline for each whole fetch, decimal > 0 [default: {}]",
                defaults.timeout.as_secs_f64()
            ),
        ),
    ];
    match lesson {
        Lesson::One => options.push((
            "--threads N",
            format!("worker threads [default: {}]", defaults.threads),
        )),
        Lesson::Two | Lesson::Three => {}
        Lesson::Four => options.extend([
            (
                "--max-tasks N",
                format!(
                    "worker tasks, i.e. concurrent fetches [default: {}]",
                    defaults.max_tasks
                ),
            ),
            (
                "--max-redirect N",
                format!(
                    "redirect chain limit, 0 follows none [default: {}]",
                    defaults.max_redirect
                ),
            ),
            (
                "--max-tries N",
                format!(
                    "tries per URL on network errors [default: {}]",
                    defaults.max_tries
                ),
            ),
        ]),
    }
    options.extend([
        (
            "--user-agent NAME",
            format!(
                "User-Agent sent, and robots.txt group obeyed [default: {}]",
                defaults.user_agent
            ),
        ),
        (
            "--robots MODE",
            "obey or ignore each host's robots.txt [default: obey]".into(),
        ),
        (
            "--delay SECS",
            "least time between two fetches to one host [default: 0]".into(),
        ),
        ("--max-pages N", "start at most N page fetches".into()),
        (
            "--max-depth N",
            "follow links only from pages less than N links from a root".into(),
        ),
        (
            "--demo",
            "serve a generated site on a free loopback port and crawl it (no ROOT needed)".into(),
        ),
        (
            "--trace FILE",
            "write what the crawl did over time to FILE (Trace Event Format JSON)".into(),
        ),
        ("-q, --quiet", "only errors and the report".into()),
        ("-v, --verbose", "more log lines (repeatable)".into()),
        ("-h, --help", "print this help".into()),
        ("-V, --version", "print the version".into()),
    ]);

    // Two columns: the option, then what it does. Long options line up
    // after the short ones' `-q, ` as in most tools' help.
    let row = |option: &str, meaning: &str| {
        let option = if option.starts_with("--") {
            format!("    {option}")
        } else {
            option.to_string()
        };
        format!("  {option:<22}  {meaning}\n")
    };
    let mut text = format!(
        "{bin}: {}\n\nUsage: {bin} [OPTIONS] [ROOT]...\n\nArguments:\n",
        lesson.title()
    );
    text.push_str(&row(
        "[ROOT]...",
        "root URL to crawl, may repeat (http:// is added if missing)",
    ));
    text.push_str(&row("", &format!("[default: {DEFAULT_ROOT}]")));
    text.push_str("\nOptions:\n");
    for (option, meaning) in options {
        text.push_str(&row(option, &meaning));
    }
    // The original Python program spells its options with underscores.
    text.push_str(
        "\nLong options also take --option=VALUE, and may be spelled with underscores (--max_pages).",
    );
    text
}

/// The body of every lesson's `main`: parse the command line, start the demo
/// site when asked, crawl, print the report on stdout, and choose the exit
/// status (0 crawl ran; 1 no fetch got a status line, with a hint; 2 usage).
pub fn run(lesson: Lesson, crawl: CrawlFn) -> ExitCode {
    // `args_os`, not `args`: `std::env::args` panics on an argument that is
    // not UTF-8, and `execute` turns that into a usage error instead.
    //
    // Stdout is passed unlocked: `Stdout::write_all` locks it for the one
    // write of the report, and holding the lock during the crawl would block
    // any worker thread that printed to stdout.
    let status = execute_on(
        lesson,
        std::env::args_os().skip(1),
        crawl,
        &mut io::stdout(),
        &mut io::stderr(),
        io::stderr().is_terminal(),
    );
    ExitCode::from(status)
}

/// What [`run`] does, with its outputs handed in and the exit status handed
/// back, so a test can check every path.
///
/// - `--help`, `--version`: the text on `stdout`, 0.
/// - a usage error: `lessonN: error: MESSAGE` and a hint on `stderr`, 2.
/// - the crawl returned an error: `lessonN: error: ...` on `stderr`, 1.
/// - the crawl ran: the report on `stdout`; then 0, or 1 with a hint on
///   `stderr` when not one fetch received a status line.
pub fn execute<I, A>(
    lesson: Lesson,
    args: I,
    crawl: CrawlFn,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> u8
where
    I: IntoIterator<Item = A>,
    A: Into<OsString>,
{
    execute_on(lesson, args, crawl, stdout, stderr, false)
}

/// [`execute`], told whether stderr is a terminal: if it is (and `-q` was
/// not given), the live status line replaces the per-URL lines.
pub fn execute_on<I, A>(
    lesson: Lesson,
    args: I,
    crawl: CrawlFn,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
    stderr_is_terminal: bool,
) -> u8
where
    I: IntoIterator<Item = A>,
    A: Into<OsString>,
{
    let bin = lesson.bin_name();
    // Writes to stderr are best effort throughout: there is nowhere left to
    // report a closed stderr, and it must not change the exit status.
    let mut config = match utf8_args(args).and_then(|args| parse_args(lesson, args)) {
        Ok(Command::Crawl(config)) => *config,
        Ok(Command::Help(text) | Command::Version(text)) => {
            return match print(stdout, &format!("{text}\n")) {
                Ok(()) => 0,
                Err(e) => {
                    let _ = writeln!(stderr, "{bin}: error: cannot write to stdout: {e}");
                    1
                }
            };
        }
        Err(UsageError(message)) => {
            let _ = writeln!(
                stderr,
                "{bin}: error: {message}\nTry '{bin} --help' for more information."
            );
            return 2;
        }
    };

    // The demo site lives in this binding until `execute` returns: the
    // crawl needs it served for its whole length. (`let _ = ...` would drop
    // it, and stop it, on the spot.)
    let _demo_site = if config.demo {
        let site = match DemoSite::start() {
            Ok(site) => site,
            Err(e) => {
                let _ = writeln!(stderr, "{bin}: error: cannot serve the demo site: {e}");
                return 1;
            }
        };
        let root = site.root();
        if config.log.enabled(Level::Info) {
            let _ = writeln!(stderr, "serving the demo site at {root}");
        }
        config.roots = vec![root];
        Some(site)
    } else {
        None
    };

    if let Some(path) = &config.trace_path {
        let process = format!("{bin}: {}", lesson.title());
        match Trace::create(path, &process) {
            Ok(trace) => config.trace = trace,
            Err(e) => {
                let _ = writeln!(
                    stderr,
                    "{bin}: error: cannot write the trace {}: {e}",
                    quote(&path.to_string_lossy())
                );
                return 1;
            }
        }
    }

    if stderr_is_terminal && config.log.enabled(Level::Info) {
        config.log = config.log.clone().with_status_line();
    }
    let crawled = crawl(&config);
    // The status line goes before the report (both may be on one terminal).
    config.log.clear_status();
    // The trace is closed whatever the crawl did, so the file is valid JSON.
    if let Err(e) = config.trace.finish() {
        let _ = writeln!(stderr, "{bin}: error: the trace is incomplete: {e}");
    }
    let report = match crawled {
        Ok(report) => report,
        Err(e) => {
            // `{:#}` prints anyhow's whole context chain on one line.
            let _ = writeln!(stderr, "{bin}: error: {e:#}");
            return 1;
        }
    };
    // The report is rendered first and written in one call, so it cannot
    // interleave with a log line a straggling thread writes to stderr.
    if let Err(e) = print(stdout, &report.render()) {
        let _ = writeln!(stderr, "{bin}: error: cannot write the report: {e}");
        return 1;
    }
    if !report.received_any_status() {
        // The site is blamed only when fetches were tried: a crawl that
        // tried none has nothing to say about it.
        if report.stats.is_empty() {
            let _ = writeln!(stderr, "{bin}: no URL was fetched.");
        } else {
            let _ = writeln!(
                stderr,
                "{bin}: no fetch received a response. Is a site running? Serve one with \
                 'cargo run -p serve -- DIR' or try '--demo'."
            );
        }
        return 1;
    }
    0
}

/// Arguments as `String`s; one that is not UTF-8 is a usage error.
fn utf8_args<I, A>(args: I) -> Result<Vec<String>, UsageError>
where
    I: IntoIterator<Item = A>,
    A: Into<OsString>,
{
    args.into_iter()
        .map(|arg| {
            arg.into().into_string().map_err(|arg| {
                usage(format!(
                    "argument {} is not valid UTF-8",
                    quote(&arg.to_string_lossy())
                ))
            })
        })
        .collect()
}

/// Write `text` and flush. A reader that went away (`lesson4 | head`) is
/// not an error: the crawl ran, and Rust ignores `SIGPIPE`, so the write
/// returns `BrokenPipe` instead of killing the process.
fn print(out: &mut dyn Write, text: &str) -> io::Result<()> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        result => result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LESSONS: [Lesson; 4] = [Lesson::One, Lesson::Two, Lesson::Three, Lesson::Four];

    fn config(lesson: Lesson, args: &[&str]) -> Config {
        match parse_args(lesson, args.iter().copied()) {
            Ok(Command::Crawl(config)) => *config,
            other => panic!("{args:?}: expected a crawl, got {other:?}"),
        }
    }

    fn error(lesson: Lesson, args: &[&str]) -> String {
        match parse_args(lesson, args.iter().copied()) {
            Err(UsageError(message)) => {
                assert!(!message.contains('\n'), "{args:?}: {message:?}");
                message
            }
            other => panic!("{args:?}: expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn politeness_options_in_every_lesson() {
        for lesson in LESSONS {
            let c = config(lesson, &[]);
            assert_eq!(c.user_agent, "crawler-course");
            assert!(c.obey_robots);
            assert_eq!(c.delay, Duration::ZERO);
            assert_eq!((c.max_pages, c.max_depth), (None, None));
            let c = config(
                lesson,
                &[
                    "--user-agent=My_Bot-x",
                    "--robots",
                    "ignore",
                    "--delay=0.25",
                    "--max_pages",
                    "10",
                    "--max-depth=0",
                ],
            );
            assert_eq!(c.user_agent, "My_Bot-x");
            assert!(!c.obey_robots);
            assert_eq!(c.delay, Duration::from_millis(250));
            assert_eq!((c.max_pages, c.max_depth), (Some(10), Some(0)));
            let help = help(lesson);
            for option in [
                "--user-agent",
                "--robots",
                "--delay",
                "--max-pages",
                "--max-depth",
            ] {
                assert!(help.contains(option), "{lesson:?} help lacks {option}");
            }
        }
    }

    #[test]
    fn bad_politeness_values_are_usage_errors() {
        let one = Lesson::One;
        for bad in ["", "my bot", "bot/1.0", "bot2", "bot\r\nX-Evil: 1", "bøt"] {
            let message = error(one, &["--user-agent", bad]);
            assert!(message.contains("product token"), "{bad:?}: {message}");
        }
        assert!(error(one, &["--robots", "maybe"]).contains("obey or ignore"));
        for bad in ["-1", "nan", "inf", "soon", "1e9"] {
            assert!(
                error(one, &["--delay", bad]).starts_with("--delay"),
                "{bad}"
            );
        }
        assert!(error(one, &["--max-pages", "0"]).contains("at least 1"));
        assert!(error(one, &["--max-depth", "-1"]).contains("whole number"));
    }

    #[test]
    fn defaults_are_the_specs_for_every_lesson() {
        for lesson in LESSONS {
            let c = config(lesson, &[]);
            assert_eq!(c.lesson, lesson);
            assert_eq!(c.roots, [DEFAULT_ROOT]);
            assert!(c.exclude.is_none());
            assert!(!c.lenient);
            assert_eq!(c.timeout, Duration::from_secs(30));
            assert_eq!(c.threads, 4);
            assert_eq!(c.max_tasks, 100);
            assert_eq!(c.max_redirect, 10);
            assert_eq!(c.max_tries, 4);
            assert!(!c.demo);
            assert_eq!(c.log.level(), Level::Info);
            assert_eq!(c.limits, Limits::default());
        }
    }

    /// Every spelling of a value option: `--a-b V`, `--a-b=V`, `--a_b V`, `--a_b=V`.
    fn spellings(option: &str, value: &str) -> Vec<Vec<String>> {
        let under = option.replace('-', "_").replacen("__", "--", 1);
        [option.to_string(), under]
            .into_iter()
            .flat_map(|name| {
                [
                    vec![name.clone(), value.to_string()],
                    vec![format!("{name}={value}")],
                ]
            })
            .collect()
    }

    fn config_of(lesson: Lesson, args: &[String]) -> Config {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        config(lesson, &args)
    }

    #[test]
    fn spellings_helper_gives_four_spellings() {
        assert_eq!(
            spellings("--max-tasks", "7"),
            [
                vec!["--max-tasks", "7"],
                vec!["--max-tasks=7"],
                vec!["--max_tasks", "7"],
                vec!["--max_tasks=7"],
            ]
        );
    }

    #[test]
    fn counts_in_every_spelling() {
        for args in spellings("--threads", "7") {
            assert_eq!(config_of(Lesson::One, &args).threads, 7, "{args:?}");
        }
        for args in spellings("--max-tasks", "7") {
            assert_eq!(config_of(Lesson::Four, &args).max_tasks, 7, "{args:?}");
        }
        for args in spellings("--max-redirect", "7") {
            assert_eq!(config_of(Lesson::Four, &args).max_redirect, 7, "{args:?}");
        }
        for args in spellings("--max-tries", "7") {
            assert_eq!(config_of(Lesson::Four, &args).max_tries, 7, "{args:?}");
        }
    }

    #[test]
    fn timeout_is_decimal_seconds() {
        for lesson in LESSONS {
            for args in spellings("--timeout", "2.5") {
                assert_eq!(
                    config_of(lesson, &args).timeout,
                    Duration::from_millis(2500)
                );
            }
        }
        assert_eq!(
            config(Lesson::One, &["--timeout", "1"]).timeout,
            Duration::from_secs(1)
        );
        assert_eq!(
            config(Lesson::One, &["--timeout", "86400"]).timeout,
            Duration::from_secs(86_400)
        );
    }

    #[test]
    fn bad_timeouts_are_refused() {
        for bad in ["0", "0.0", "-1", "-0", "1e-12", "86401", "1e300"] {
            let message = error(Lesson::Two, &["--timeout", bad]);
            assert!(message.starts_with("--timeout must be"), "{bad}: {message}");
        }
        for bad in ["", "abc", "1s", "1,5", "nan", "inf", "-inf"] {
            assert_eq!(
                error(Lesson::Two, &[&format!("--timeout={bad}")]),
                format!("--timeout expects a number of seconds, got '{bad}'")
            );
        }
    }

    #[test]
    fn zero_workers_or_tries_are_refused_zero_redirects_allowed() {
        assert_eq!(
            error(Lesson::One, &["--threads", "0"]),
            "--threads must be at least 1, got 0"
        );
        assert_eq!(
            error(Lesson::One, &["--threads", "10001"]),
            "--threads must be at most 10000, got 10001"
        );
        assert_eq!(
            error(Lesson::Four, &["--max_tasks=0"]),
            "--max_tasks must be at least 1, got 0"
        );
        assert_eq!(
            error(Lesson::Four, &["--max-tries", "0"]),
            "--max-tries must be at least 1, got 0"
        );
        assert_eq!(
            config(Lesson::Four, &["--max-redirect", "0"]).max_redirect,
            0
        );
    }

    #[test]
    fn bad_numbers_are_refused() {
        for bad in ["-1", "1.5", "x", "", "99999999999999999999999", " 3"] {
            assert_eq!(
                error(Lesson::Four, &["--max-tasks", bad]),
                format!("--max-tasks expects a whole number, got '{bad}'")
            );
        }
    }

    #[test]
    fn options_of_other_lessons_are_refused_by_name() {
        let lesson4_only = [
            "--max-tasks",
            "--max_tasks",
            "--max-redirect",
            "--max-tries",
        ];
        for lesson in [Lesson::One, Lesson::Two, Lesson::Three] {
            for option in lesson4_only {
                assert_eq!(
                    error(lesson, &[option, "5"]),
                    format!("{option} is not an option of {}", lesson.bin_name())
                );
            }
        }
        for lesson in [Lesson::Two, Lesson::Three, Lesson::Four] {
            // Refused for what it is even without its value.
            assert_eq!(
                error(lesson, &["--threads"]),
                format!("--threads is not an option of {}", lesson.bin_name())
            );
        }
        assert_eq!(
            error(Lesson::One, &["--max-tasks=5"]),
            "--max-tasks is not an option of lesson1"
        );
    }

    #[test]
    fn exclude_is_compiled() {
        for args in spellings("--exclude", r"\.pdf$") {
            let c = config_of(Lesson::Three, &args);
            let exclude = c.exclude.expect("an exclude regex");
            assert!(exclude.is_match("http://h/a.pdf"));
            assert!(!exclude.is_match("http://h/a.html"));
        }
        // The last one given wins; a value may start with a dash.
        let c = config(Lesson::One, &["--exclude", "a", "--exclude", "-draft"]);
        assert_eq!(
            c.exclude.map(|r| r.as_str().to_string()).as_deref(),
            Some("-draft")
        );
    }

    #[test]
    fn a_bad_regex_is_a_one_line_usage_error() {
        assert_eq!(
            error(Lesson::One, &["--exclude", "a(b"]),
            "--exclude: bad regex 'a(b': unclosed group"
        );
        let message = error(Lesson::Four, &["--exclude=[z-a]"]);
        assert!(
            message.starts_with("--exclude: bad regex '[z-a]': "),
            "{message}"
        );
        // A pattern too big to compile is refused the same way, not a panic.
        let huge = format!("(?:{}){{1000}}", "a".repeat(1000));
        assert!(error(Lesson::Four, &["--exclude", &huge]).starts_with("--exclude: bad regex"));
    }

    #[test]
    fn strict_and_lenient_last_wins() {
        assert!(config(Lesson::One, &["--lenient"]).lenient);
        assert!(!config(Lesson::One, &["--lenient", "--strict"]).lenient);
        assert!(config(Lesson::One, &["--strict", "--lenient"]).lenient);
        assert!(!config(Lesson::One, &["--strict"]).lenient);
    }

    #[test]
    fn quiet_and_verbose_set_the_log_level() {
        let level = |args: &[&str]| config(Lesson::Two, args).log.level();
        assert_eq!(level(&[]), Level::Info);
        assert_eq!(level(&["-q"]), Level::Error);
        assert_eq!(level(&["--quiet"]), Level::Error);
        assert_eq!(level(&["-v"]), Level::Debug);
        assert_eq!(level(&["--verbose"]), Level::Debug);
        assert_eq!(level(&["-v", "-v"]), Level::Debug);
        assert_eq!(level(&["-vv"]), Level::Debug);
        assert_eq!(level(&["--verbose", "--verbose"]), Level::Debug);
        // One step each way: -q then -v is back to the default.
        assert_eq!(level(&["-q", "-v"]), Level::Info);
        assert_eq!(level(&["-qv"]), Level::Info);
        assert_eq!(level(&["-v", "-q"]), Level::Error);
    }

    #[test]
    fn demo_needs_no_root_and_takes_none() {
        let c = config(Lesson::Four, &["--demo"]);
        assert!(c.demo);
        assert!(c.roots.is_empty(), "run fills in the demo server's URL");
        assert_eq!(
            error(Lesson::Four, &["--demo", "http://h/"]),
            "--demo crawls its own site: give no ROOT with it"
        );
    }

    #[test]
    fn flags_take_no_value() {
        for flag in [
            "--demo",
            "--strict",
            "--lenient",
            "--quiet",
            "--verbose",
            "--help",
            "--version",
        ] {
            assert_eq!(
                error(Lesson::One, &[&format!("{flag}=yes")]),
                format!("{flag} takes no value")
            );
        }
    }

    #[test]
    fn unknown_options_and_missing_values() {
        assert_eq!(error(Lesson::One, &["--bogus"]), "unknown option '--bogus'");
        assert_eq!(
            error(Lesson::One, &["--bogus=1"]),
            "unknown option '--bogus=1'"
        );
        assert_eq!(error(Lesson::One, &["-x"]), "unknown option '-x'");
        assert_eq!(error(Lesson::One, &["-vx"]), "unknown option '-x'");
        assert_eq!(error(Lesson::One, &["---"]), "unknown option '---'");
        // A newline in what was typed cannot break the one-line message.
        assert_eq!(error(Lesson::One, &["--a\nb"]), "unknown option '--a\\nb'");
        for option in ["--exclude", "--timeout", "--threads"] {
            assert_eq!(
                error(Lesson::One, &["http://h/", option]),
                format!("{option} needs a value")
            );
        }
        assert_eq!(
            error(Lesson::Four, &["--max_tries"]),
            "--max_tries needs a value"
        );
    }

    #[test]
    fn roots_are_kept_as_typed_and_may_repeat() {
        let c = config(
            Lesson::Two,
            &[
                "http://h/",
                "-q",
                "localhost:8000",
                "http://h/#top",
                "http://h/",
            ],
        );
        assert_eq!(
            c.roots,
            ["http://h/", "localhost:8000", "http://h/#top", "http://h/"]
        );
        assert_eq!(c.log.level(), Level::Error);
    }

    #[test]
    fn a_root_that_is_not_a_url_is_a_usage_error() {
        for bad in ["http://[::1", "http://exa mple.com/"] {
            let message = error(Lesson::One, &[bad]);
            assert!(
                message.starts_with(&format!("bad root '{bad}': ")),
                "{message}"
            );
        }
    }

    #[test]
    fn double_dash_ends_options() {
        let c = config(Lesson::One, &["--", "http://h/a"]);
        assert_eq!(c.roots, ["http://h/a"]);
        // After `--`, `--lenient` is not the option but a root: a strange
        // one (`http://--lenient/`), which the URL rules allow as a host.
        match parse_args(Lesson::One, ["--", "--lenient"]) {
            Ok(Command::Crawl(c)) => {
                assert!(!c.lenient);
                assert_eq!(c.roots, ["--lenient"]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn help_and_version() {
        for lesson in LESSONS {
            for flag in ["-h", "--help"] {
                match parse_args(lesson, ["http://h/", flag]) {
                    Ok(Command::Help(text)) => assert_eq!(text, help(lesson)),
                    other => panic!("{other:?}"),
                }
            }
            for flag in ["-V", "--version"] {
                match parse_args(lesson, [flag]) {
                    Ok(Command::Version(text)) => assert_eq!(
                        text,
                        format!("{} {}", lesson.bin_name(), env!("CARGO_PKG_VERSION"))
                    ),
                    other => panic!("{other:?}"),
                }
            }
        }
        // Help stops the parse: what follows is not checked.
        assert!(matches!(
            parse_args(Lesson::One, ["--help", "--max-tasks"]),
            Ok(Command::Help(_))
        ));
    }

    #[test]
    fn help_lists_exactly_the_lessons_options() {
        let lesson_options = [
            (Lesson::One, vec!["--threads N"]),
            (Lesson::Two, vec![]),
            (Lesson::Three, vec![]),
            (
                Lesson::Four,
                vec!["--max-tasks N", "--max-redirect N", "--max-tries N"],
            ),
        ];
        let all_specific = ["--threads", "--max-tasks", "--max-redirect", "--max-tries"];
        for (lesson, own) in lesson_options {
            let text = help(lesson);
            let bin = lesson.bin_name();
            assert!(
                text.contains(&format!("Usage: {bin} [OPTIONS] [ROOT]...")),
                "{text}"
            );
            assert!(text.contains(lesson.title()));
            for common in [
                "--exclude REGEX",
                "--strict",
                "--lenient",
                "--timeout SECS",
                "[default: 30]",
                "--demo",
                "-q, --quiet",
                "-v, --verbose",
                "-h, --help",
                "-V, --version",
                DEFAULT_ROOT,
            ] {
                assert!(text.contains(common), "{bin} help lacks {common}:\n{text}");
            }
            for option in all_specific {
                let listed = text.contains(option) || text.contains(&option.replace('-', "_")[2..]);
                let owned = own.iter().any(|o| o.starts_with(option));
                assert_eq!(listed, owned, "{bin} help and {option}:\n{text}");
            }
        }
        assert!(help(Lesson::One).contains("worker threads [default: 4]"));
        let four = help(Lesson::Four);
        assert!(four.contains("[default: 100]"));
        assert!(four.contains("[default: 10]"));
        assert!(four.contains("tries per URL on network errors [default: 4]"));
    }
}
