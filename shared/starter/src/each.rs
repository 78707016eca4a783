//! `starter verify --each-function`: every function a stage hands over is
//! caught by that stage's own tests.
//!
//! `starter verify` proves that a stage is red when *all* its functions are
//! blank. That leaves a gap: one of them may be reached by no test of the
//! stage, and a learner's wrong version of it would pass. Here each blanked
//! function f of each stage K is checked alone: with only f blank, some test
//! of stage K must fail (or hang, which we stop and report as such).
//!
//! A build per function would cost hundreds of builds. Instead the lesson is
//! copied once, every stage written (a starter "through the last stage"),
//! and each function a stage blanks gets a switch as its first statement:
//!
//! ```text
//! fn put(&self, item: T) { { static STARTER_BLANK: OnceLock<bool> = …;
//!     if *STARTER_BLANK.get_or_init(|| $STARTER_BLANK == "queue.rs: Queue::put") { todo!("stage 2: …") } }
//!     …the lesson's body, unchanged…
//! ```
//!
//! (A function returning `impl Future` gets it inside its `async move`
//! block, so that, as in a starter, calling it is harmless and polling it
//! panics.)
//!
//! One build per lesson then serves every function: a run with
//! `STARTER_BLANK=ID` in its environment behaves as the lesson with only
//! that function blank. (The switch's test also reads `"stages K.."`,
//! [`from_stage`]: every function of stage K and of the stages after it
//! blank, the starter with stages 1 to K-1 written. `starter verify`
//! checks stages 2 and later that way, on this same build, instead of
//! building a starter for each.) The switch reads the variable once per
//! function (the `OnceLock`), so a hot function costs a load and a branch
//! per call.
//! It is written on the line of the body's `{`, so every other line keeps
//! its number and a panic's location reads as in the lesson.
//!
//! Each test runs alone (`--exact NAME`), so that a function's run stops at
//! the first test that fails: first a run with no blank proves the switched
//! copy green and measures each test, then each function's tests run
//! quickest first, each within a limit scaled from its green time.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::blank::{self, FnPath};
use crate::run;
use crate::stages::{StageList, TestSelection};

/// The environment variable that switches one blank on: its value is the
/// function's `FILE: PATH`, as the stage list names it, or
/// [`from_stage`]'s value, which switches on a stage's and every later
/// stage's.
pub const SWITCH: &str = "STARTER_BLANK";

/// The value of [`SWITCH`] that blanks every function of stage `k` and of
/// the stages after it: the starter with stages `1..k` written.
pub fn from_stage(k: usize) -> String {
    format!("stages {k}..")
}

/// A test that takes no more than this with no blank is given this long
/// before it counts as hung (scaled up for slower ones, see [`limit_for`]).
const HANG_FLOOR: Duration = Duration::from_secs(10);

/// A blanked function and the stage that hands it over.
#[derive(Debug, Clone)]
pub struct Blank {
    /// The stage, from 1.
    pub stage: usize,
    /// The function.
    pub path: FnPath,
}

impl Blank {
    /// The value of [`SWITCH`] that blanks this function.
    pub fn id(&self) -> String {
        self.path.to_string()
    }
}

/// A crate's files: path relative to the crate, and contents.
pub type Files = Vec<(PathBuf, Vec<u8>)>;

/// The switched copy's files and its blanks, in stage order.
pub fn switched_files(root: &Path, list: &StageList) -> Result<(Files, Vec<Blank>)> {
    // A starter with every stage written: the lesson, standing alone.
    let mut files = crate::starter_files(root, list, list.stages.len())?;
    let mut blanks = Vec::new();
    let mut by_file: BTreeMap<PathBuf, Vec<(FnPath, usize, String)>> = BTreeMap::new();
    for (i, stage) in list.stages.iter().enumerate() {
        let message = list.todo_message(i + 1, stage);
        for spec in &stage.blank {
            let path = FnPath::parse(spec)?;
            if blanks.iter().any(|b: &Blank| b.path == path) {
                bail!("{path}: blanked by two stages");
            }
            by_file
                .entry(Path::new("src").join(&path.file))
                .or_default()
                .push((path.clone(), i + 1, message.clone()));
            blanks.push(Blank { stage: i + 1, path });
        }
    }
    for (file, switches) in &by_file {
        let (_, bytes) = files
            .iter_mut()
            .find(|(rel, _)| rel == file)
            .with_context(|| format!("{}: no such file in {}", file.display(), list.lesson))?;
        let text = String::from_utf8(std::mem::take(bytes))
            .with_context(|| format!("{} is not UTF-8", file.display()))?;
        *bytes = switch_all(&text, switches)
            .with_context(|| format!("switch {}", file.display()))?
            .into_bytes();
    }
    Ok((files, blanks))
}

/// `text` with a switch at the start of each function's body.
fn switch_all(text: &str, switches: &[(FnPath, usize, String)]) -> Result<String> {
    let mut edits = Vec::new();
    for (path, stage, message) in switches {
        let found = blank::find(text, path)?;
        edits.push((
            switch_point(text, &found)?,
            switch_code(path, *stage, message, found.is_drop),
        ));
    }
    edits.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    let mut out = text.to_string();
    for (at, code) in edits {
        out.insert_str(at, &code);
    }
    Ok(out)
}

/// Where the switch goes: just inside the body's `{`. For a function that
/// returns `impl Future` with an `async move { … }` body, inside that
/// block instead, so that, as in a starter, calling it is harmless and
/// polling it panics.
fn switch_point(text: &str, found: &blank::FoundFn) -> Result<usize> {
    let body = &text[found.body.clone()];
    if !found.returns_future {
        return Ok(found.body.start + 1);
    }
    let block: syn::Block = syn::parse_str(body).context("parse the body")?;
    let single_async = matches!(
        block.stmts.as_slice(),
        [syn::Stmt::Expr(syn::Expr::Async(_), None)]
    );
    if !single_async {
        bail!(
            "returns `impl Future` with a body that is not one `async` block: \
             each.rs switches only that form (write the body as `async move {{ … }}`)"
        );
    }
    // `{`, then blanks and comments, then `async`, maybe `move`, then `{`.
    let mut rest = &body[1..];
    loop {
        let trimmed = rest.trim_start();
        if let Some(comment) = trimmed.strip_prefix("//") {
            rest = comment.split_once('\n').map_or("", |(_, after)| after);
        } else {
            rest = trimmed;
            break;
        }
    }
    let after_async = rest
        .strip_prefix("async")
        .context("the body's `async` block starts with an attribute or comment")?
        .trim_start();
    let after_move = after_async
        .strip_prefix("move")
        .unwrap_or(after_async)
        .trim_start();
    if !after_move.starts_with('{') {
        bail!("the body's `async` block: no `{{` where expected");
    }
    Ok(found.body.start + body.len() - after_move.len() + 1)
}

/// The switch: on when [`SWITCH`] names `path`, or names (with
/// [`from_stage`]) its stage `stage` or an earlier one; read once per
/// function. In a `drop`, off while a panic unwinds, as a starter's blank
/// `drop` is (see [`blank::blank_body`]).
fn switch_code(path: &FnPath, stage: usize, message: &str, is_drop: bool) -> String {
    // `todo!` formats its argument: braces would be format placeholders.
    let message = format!("{:?}", message.replace('{', "{{").replace('}', "}}"));
    let id = format!("{:?}", path.to_string());
    format!(
        " {{ static STARTER_BLANK: ::std::sync::OnceLock<bool> = ::std::sync::OnceLock::new(); \
         if *STARTER_BLANK.get_or_init(|| ::std::env::var_os({SWITCH:?}).is_some_and(|v| v == {id} \
         || v.to_str().and_then(|v| v.strip_prefix(\"stages \")?.strip_suffix(\"..\")?.parse::<usize>().ok()) \
         .is_some_and(|from| from <= {stage}))){unwinding} \
         {{ todo!({message}) }} }}",
        unwinding = if is_drop {
            " && !::std::thread::panicking()"
        } else {
            ""
        }
    )
}

/// Writes `files` into `dir`, leaving a file that already has the same
/// contents untouched (so that cargo need not rebuild an unchanged copy)
/// and removing any file that is not among them.
fn write_files(dir: &Path, files: &[(PathBuf, Vec<u8>)]) -> Result<()> {
    for (rel, bytes) in files {
        let path = dir.join(rel);
        if std::fs::read(&path).ok().as_deref() == Some(bytes.as_slice()) {
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("create {}", parent.display()))?;
        }
        std::fs::write(&path, bytes).with_context(|| format!("write {}", path.display()))?;
    }
    for entry in walkdir::WalkDir::new(dir).contents_first(true) {
        let entry = entry?;
        let rel = entry.path().strip_prefix(dir)?;
        if entry.file_type().is_file() && !files.iter().any(|(r, _)| r == rel) {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// The switched copy's directory, held by one run at a time: a directory
/// `SCRATCH.lock` holding the owner's process id. A lock whose owner has
/// ended (stopped with Ctrl-C, say) is taken over.
struct ScratchLock(PathBuf);

impl ScratchLock {
    fn take(scratch: &Path) -> Result<ScratchLock> {
        let mut name = scratch.as_os_str().to_owned();
        name.push(".lock");
        let lock = PathBuf::from(name);
        if let Some(parent) = lock.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("create {}", parent.display()))?;
        }
        let mut waited = false;
        loop {
            match std::fs::create_dir(&lock) {
                Ok(()) => {
                    std::fs::write(lock.join("pid"), std::process::id().to_string())?;
                    return Ok(ScratchLock(lock));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e).with_context(|| format!("create {}", lock.display())),
            }
            let owner = std::fs::read_to_string(lock.join("pid")).unwrap_or_default();
            let alive = !owner.trim().is_empty()
                && Command::new("kill")
                    .args(["-0", owner.trim()])
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
            // An empty pid file may be one being written this instant: it
            // counts as stale only if it stays empty.
            let stale = !alive
                && (!owner.trim().is_empty()
                    || std::fs::metadata(&lock)
                        .and_then(|m| m.modified())
                        .is_ok_and(|t| t.elapsed().unwrap_or_default() > Duration::from_secs(10)));
            if stale {
                let _ = std::fs::remove_dir_all(&lock);
                continue;
            }
            if !waited {
                say(&format!(
                    "   waiting for another run (process {}) that holds {}",
                    owner.trim(),
                    lock.display()
                ));
                waited = true;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for ScratchLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How one run of one test ended.
#[derive(Debug, Clone)]
enum Ended {
    Passed,
    /// Failed, with the first lines of what it said.
    Failed(String),
    /// Still running at the limit, and stopped.
    TimedOut,
}

/// A test of a stage: its binary, name, and how long it took with no blank.
#[derive(Debug, Clone)]
struct Test {
    target: String,
    name: String,
    green: Duration,
}

impl Test {
    fn label(&self) -> String {
        format!("{}::{}", self.target, self.name)
    }
}

/// The tests `selection` picks from `exe`, as `starter check` runs them
/// (an `#[ignore]`d test does not run there, so not here either).
fn list_tests(exe: &Path, dir: &Path, selection: &TestSelection) -> Result<Vec<String>> {
    let list = |ignored: bool| -> Result<Vec<String>> {
        let mut cmd = Command::new(exe);
        cmd.args(["--list", "--format", "terse"]).current_dir(dir);
        if ignored {
            cmd.arg("--ignored");
        }
        let listed = cmd
            .output()
            .with_context(|| format!("list the tests of {}", exe.display()))?;
        Ok(String::from_utf8_lossy(&listed.stdout)
            .lines()
            .filter_map(|l| l.strip_suffix(": test"))
            .map(str::to_string)
            .collect())
    };
    let ignored = list(true)?;
    let prefix = selection.prefix.as_deref().unwrap_or("");
    Ok(list(false)?
        .into_iter()
        .filter(|name| {
            name.starts_with(prefix) && !selection.except.contains(name) && !ignored.contains(name)
        })
        .collect())
}

/// Runs the one test `name` of `exe`, with `blank` switched on if given.
fn run_test(
    exe: &Path,
    dir: &Path,
    name: &str,
    blank: Option<&str>,
    limit: Duration,
) -> Result<(Ended, Duration)> {
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", name])
        .current_dir(dir)
        .env("RUST_BACKTRACE", "0")
        .env_remove(SWITCH);
    if let Some(id) = blank {
        cmd.env(SWITCH, id);
    }
    let (status, output, elapsed) = crate::run::run_bounded(&mut cmd, limit)
        .with_context(|| format!("run {}", exe.display()))?;
    let ended = match status {
        None => Ended::TimedOut,
        Some(s) if s.success() => {
            if !output.contains("test result: ok. 1 passed;") {
                bail!(
                    "{} --exact {name} ran no such test:\n{}",
                    exe.display(),
                    tail(&output, 10)
                );
            }
            Ended::Passed
        }
        Some(_) => Ended::Failed(failure_message(&output, name)),
    };
    Ok((ended, elapsed))
}

/// The first lines of a failed test's message (its panic), or the end of
/// the output when there is none.
fn failure_message(output: &str, name: &str) -> String {
    let header = format!("---- {name} stdout ----\n");
    let Some(at) = output.find(&header) else {
        return tail(output, 6);
    };
    let body = &output[at + header.len()..];
    let end = ["\n---- ", "\nfailures:\n", "\n\nfailures:"]
        .iter()
        .filter_map(|m| body.find(m))
        .min()
        .unwrap_or(body.len());
    body[..end]
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("note: run with `RUST_BACKTRACE"))
        .take(4)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A failed test's message in a few words: "its todo!() panicked" when
/// the blank itself is what panicked first, else the first panic's message
/// and where it is.
fn panic_summary(message: &str) -> String {
    let lines: Vec<&str> = message.lines().collect();
    let Some(at) = lines.iter().position(|l| l.contains(" panicked at ")) else {
        return shorten_line(lines.first().copied().unwrap_or("(no message)"));
    };
    let location = lines[at]
        .split_once(" panicked at ")
        .map_or("", |(_, l)| l.trim_end_matches(':'));
    match lines.get(at + 1) {
        Some(payload) if payload.starts_with("not yet implemented") => {
            "its todo!() panicked".to_string()
        }
        Some(payload) => format!("{} (at {location})", shorten_line(payload)),
        None => format!("a panic at {location}"),
    }
}

fn shorten_line(line: &str) -> String {
    const MAX: usize = 120;
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// How long a test may run with a blank before it counts as hung: ten
/// times its green time and [`HANG_FLOOR`] more, at most `limit`. A test
/// that waits for an answer a `todo!()` on another thread never sends
/// would otherwise hold the run for the whole limit.
fn limit_for(green: Duration, limit: Duration) -> Duration {
    (green * 10 + HANG_FLOOR).min(limit)
}

/// How a blanked function came out.
#[derive(Debug, Clone)]
pub enum Caught {
    /// A test of its stage failed.
    Red {
        /// `TARGET::NAME`.
        test: String,
        /// The first lines of its message.
        message: String,
        /// Tests run to find it, this one included.
        runs: usize,
    },
    /// A test of its stage was still running at its limit.
    TimedOut {
        /// `TARGET::NAME`.
        test: String,
        /// The limit it reached.
        after: Duration,
        /// Tests run to find it, this one included.
        runs: usize,
    },
    /// Every test of its stage passed.
    Missed {
        /// How many tests ran.
        runs: usize,
    },
}

/// One function's outcome.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The function and its stage.
    pub blank: Blank,
    /// What its stage's tests did with it blank.
    pub caught: Caught,
    /// How long its tests ran.
    pub took: Duration,
}

/// One lesson's outcomes, and what went wrong with the tool itself.
#[derive(Debug)]
pub struct LessonReport {
    /// The lesson crate.
    pub lesson: String,
    /// One per blanked function, in stage order.
    pub outcomes: Vec<Outcome>,
    /// Problems that make the outcomes untrustworthy (a test red with no
    /// blank, a copy that does not build).
    pub problems: Vec<String>,
}

impl LessonReport {
    /// How many functions a test of their stage caught.
    pub fn caught(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| !matches!(o.caught, Caught::Missed { .. }))
            .count()
    }
}

/// Prints a progress line now, whatever else is buffered.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// A lesson's switched copy: its files, its blanks, and the lock on the
/// directory it is built in, held while it lives.
pub struct Switched {
    /// Where the copy is written (a fixed place in the starters' target
    /// directory, see [`verify`]).
    pub dir: PathBuf,
    files: Files,
    /// Every blanked function, in stage order.
    pub blanks: Vec<Blank>,
    _lock: ScratchLock,
}

impl Switched {
    /// The switched copy of `list`'s lesson, to be built in `dir`, which
    /// it holds until dropped (waiting for another run that holds it).
    pub fn prepare(root: &Path, list: &StageList, dir: &Path) -> Result<Switched> {
        let (files, blanks) = switched_files(root, list)?;
        // Another run of this lesson (a colleague's, in the same checkout)
        // would rewrite the copy and its binaries under this one.
        let lock = ScratchLock::take(dir)?;
        Ok(Switched {
            dir: dir.to_path_buf(),
            files,
            blanks,
            _lock: lock,
        })
    }

    /// Writes the copy (only files that changed) and builds the test
    /// targets of every stage with `target_dir` as its target directory;
    /// an unchanged copy built last there is not compiled again.
    /// `Ok(Err(text))` when it does not compile.
    pub fn build(
        &self,
        list: &StageList,
        target_dir: &Path,
    ) -> Result<std::result::Result<BTreeMap<String, PathBuf>, String>> {
        write_files(&self.dir, &self.files)?;
        let mut targets: Vec<String> = Vec::new();
        for stage in &list.stages {
            for s in stage.selections() {
                if !targets.contains(&s.target) {
                    targets.push(s.target);
                }
            }
        }
        run::build_tests(&self.dir, &targets, Some(target_dir))
    }
}

/// Checks every blanked function of `list`'s lesson: builds the switched
/// copy in `scratch` (with `target_dir` as its target directory), runs the
/// stages with no blank, then each function's stage with it blank, `jobs`
/// test binaries at a time, no test longer than `limit`.
pub fn verify_lesson(
    root: &Path,
    list: &StageList,
    scratch: &Path,
    target_dir: &Path,
    limit: Duration,
    jobs: usize,
) -> Result<LessonReport> {
    let switched = Switched::prepare(root, list, scratch)?;
    verify_switched(list, &switched, target_dir, limit, jobs)
}

/// [`verify_lesson`] with the switched copy prepared (and perhaps built
/// already: then cargo finds nothing to do).
pub fn verify_switched(
    list: &StageList,
    switched: &Switched,
    target_dir: &Path,
    limit: Duration,
    jobs: usize,
) -> Result<LessonReport> {
    let started = Instant::now();
    let mut report = LessonReport {
        lesson: list.lesson.clone(),
        outcomes: Vec::new(),
        problems: Vec::new(),
    };
    let blanks = switched.blanks.clone();
    let scratch = switched.dir.as_path();
    say(&format!(
        "== each function of {}: {} blanked in {} stages, one build, {SWITCH}=ID switches one on",
        list.lesson,
        blanks.len(),
        list.stages.len()
    ));
    let build_started = Instant::now();
    let exes = match switched.build(list, target_dir)? {
        Ok(exes) => exes,
        Err(errors) => {
            report.problems.push(format!(
                "{}: the switched copy in {} does not compile, so no function was checked; cargo says:\n{errors}",
                list.lesson,
                scratch.display()
            ));
            return Ok(report);
        }
    };
    say(&format!("   built in {}", secs(build_started.elapsed())));

    // Each stage's tests, as `starter check` picks them.
    let mut stage_tests: Vec<Vec<(String, String)>> = Vec::new();
    for stage in &list.stages {
        let mut tests = Vec::new();
        for selection in stage.selections() {
            let exe = &exes[&selection.target];
            for name in list_tests(exe, scratch, &selection)? {
                tests.push((selection.target.clone(), name));
            }
        }
        stage_tests.push(tests);
    }

    // With no blank, every test passes: else the copy is not the lesson,
    // and a red test would "catch" every function. Each test's time orders
    // the runs below, quickest first.
    let green_started = Instant::now();
    let mut unique: Vec<(String, String)> = stage_tests.iter().flatten().cloned().collect();
    unique.sort();
    unique.dedup();
    let green: Vec<(Ended, Duration)> = parallel(&unique, jobs, |(target, name)| {
        run_test(&exes[target], scratch, name, None, limit)
    })?;
    let mut times: BTreeMap<(String, String), Duration> = BTreeMap::new();
    let mut red_green = Vec::new();
    for ((target, name), (ended, took)) in unique.iter().zip(&green) {
        match ended {
            Ended::Passed => {
                times.insert((target.clone(), name.clone()), *took);
            }
            Ended::Failed(message) => red_green.push(format!("{target}::{name}: {message}")),
            Ended::TimedOut => red_green.push(format!(
                "{target}::{name}: still running after {}",
                secs(limit)
            )),
        }
    }
    say(&format!(
        "   no blank: {} of {} tests pass ({}, each test alone, {jobs} at a time)",
        times.len(),
        unique.len(),
        secs(green_started.elapsed())
    ));
    let mut slowest: Vec<(&(String, String), &Duration)> = times.iter().collect();
    slowest.sort_by_key(|(_, took)| std::cmp::Reverse(**took));
    let slowest: Vec<String> = slowest
        .iter()
        .take(3)
        .map(|((target, name), took)| format!("{target}::{name} {}", secs(**took)))
        .collect();
    say(&format!("   slowest: {}", slowest.join(", ")));
    for problem in red_green {
        report.problems.push(format!(
            "{}: with no blank switched on, a test fails, so the functions of its stage cannot be checked by it: {problem}",
            list.lesson
        ));
    }

    // Each function: its stage's tests, quickest first, until one fails.
    let ordered: Vec<Vec<Test>> = stage_tests
        .iter()
        .map(|tests| {
            let mut tests: Vec<Test> = tests
                .iter()
                .filter_map(|(target, name)| {
                    times
                        .get(&(target.clone(), name.clone()))
                        .map(|green| Test {
                            target: target.clone(),
                            name: name.clone(),
                            green: *green,
                        })
                })
                .collect();
            tests.sort_by_key(|t| t.green);
            tests
        })
        .collect();
    let done = Mutex::new(0usize);
    let total = blanks.len();
    let outcomes = parallel(&blanks, jobs, |blank| {
        let outcome = check_one(blank, &ordered[blank.stage - 1], &exes, scratch, limit)?;
        let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
        *done += 1;
        say(&format!(
            "   [{:>3}/{total}] {}",
            *done,
            describe(&outcome, &list.stages[blank.stage - 1].name)
        ));
        Ok(outcome)
    })?;
    report.outcomes = outcomes;
    say(&format!(
        "   {}: {} of {} caught ({})",
        list.lesson,
        report.caught(),
        report.outcomes.len(),
        secs(started.elapsed())
    ));
    Ok(report)
}

/// One function: its stage's tests in `tests`' order, with it blank.
fn check_one(
    blank: &Blank,
    tests: &[Test],
    exes: &BTreeMap<String, PathBuf>,
    dir: &Path,
    limit: Duration,
) -> Result<Outcome> {
    let started = Instant::now();
    let id = blank.id();
    let mut caught = Caught::Missed { runs: tests.len() };
    for (i, test) in tests.iter().enumerate() {
        let test_limit = limit_for(test.green, limit);
        let (ended, _) = run_test(&exes[&test.target], dir, &test.name, Some(&id), test_limit)?;
        match ended {
            Ended::Passed => continue,
            Ended::Failed(message) => {
                caught = Caught::Red {
                    test: test.label(),
                    message,
                    runs: i + 1,
                };
            }
            Ended::TimedOut => {
                caught = Caught::TimedOut {
                    test: test.label(),
                    after: test_limit,
                    runs: i + 1,
                };
            }
        }
        break;
    }
    Ok(Outcome {
        blank: blank.clone(),
        caught,
        took: started.elapsed(),
    })
}

/// `f` over `items`, `jobs` at a time, results in `items`' order.
fn parallel<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Option<Result<R>>>> =
        Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let i = {
                    let mut next = next.lock().unwrap_or_else(|e| e.into_inner());
                    let i = *next;
                    *next += 1;
                    i
                };
                let Some(item) = items.get(i) else { break };
                let result = f(item);
                let failed = result.is_err();
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
                if failed {
                    // The others finish what they hold; nothing new starts.
                    *next.lock().unwrap_or_else(|e| e.into_inner()) = items.len();
                }
            });
        }
    });
    let mut out = Vec::new();
    for result in results.into_inner().unwrap_or_else(|e| e.into_inner()) {
        match result {
            Some(result) => out.push(result?),
            None => continue,
        }
    }
    Ok(out)
}

/// One line for a function's outcome.
pub fn describe(outcome: &Outcome, stage_name: &str) -> String {
    let b = &outcome.blank;
    let head = format!("stage {} ({stage_name}) {}", b.stage, b.path);
    let took = secs(outcome.took);
    match &outcome.caught {
        Caught::Red { test, runs, .. } => {
            format!("{head}: caught by {test} ({}, {took})", runs_text(*runs))
        }
        Caught::TimedOut { test, after, runs } => format!(
            "{head}: caught by a timeout ({} s): {test} did not end ({}, {took})",
            after.as_secs(),
            runs_text(*runs)
        ),
        Caught::Missed { runs } => format!(
            "{head}: NOT CAUGHT: no test of stage {} fails when only {} is blanked ({}, {took})",
            b.stage,
            b.path,
            runs_text(*runs)
        ),
    }
}

fn runs_text(runs: usize) -> String {
    match runs {
        1 => "1 test run".into(),
        n => format!("{n} tests run"),
    }
}

/// Where `list`'s switched copy is built: a fixed place in the starters'
/// target directory `target_dir`, not a fresh temporary one: cargo keys a
/// crate's artifacts by its path, so a new path each run would leave a new
/// set of test binaries behind each time, and an unchanged copy (files
/// rewritten only when they differ) is not built again.
pub fn scratch_dir(target_dir: &Path, list: &StageList) -> PathBuf {
    target_dir.join("each").join(&list.lesson)
}

/// How many test binaries run at a time: one per core.
pub fn jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Prints the per-lesson summaries of `reports` (one per list of `lists`),
/// and last `N of M blanked functions caught by their own stage`. Returns
/// whether every function was caught and nothing went wrong.
pub fn summarize(reports: &[LessonReport], lists: &[StageList]) -> bool {
    let mut caught = 0;
    let mut total = 0;
    let mut problems = 0;
    say("");
    for (report, list) in reports.iter().zip(lists) {
        caught += report.caught();
        total += report.outcomes.len();
        problems += report.problems.len();
        say(&format!(
            "{}: {} of {} blanked functions caught",
            report.lesson,
            report.caught(),
            report.outcomes.len()
        ));
        for outcome in &report.outcomes {
            let stage = &list.stages[outcome.blank.stage - 1].name;
            match &outcome.caught {
                Caught::Red { test, message, .. } => say(&format!(
                    "   caught      stage {} ({stage}) {}: {test}: {}",
                    outcome.blank.stage,
                    outcome.blank.path,
                    panic_summary(message)
                )),
                Caught::TimedOut { test, after, .. } => say(&format!(
                    "   caught      stage {} ({stage}) {}: caught by a timeout ({} s): {test} did not end",
                    outcome.blank.stage,
                    outcome.blank.path,
                    after.as_secs()
                )),
                Caught::Missed { .. } => say(&format!(
                    "   NOT CAUGHT  stage {} ({stage}) {}: no test of stage {} fails when only {} is blanked",
                    outcome.blank.stage, outcome.blank.path, outcome.blank.stage, outcome.blank.path
                )),
            }
        }
        for problem in &report.problems {
            say(&format!("   PROBLEM: {problem}"));
        }
    }
    say(&format!(
        "{caught} of {total} blanked functions caught by their own stage"
    ));
    caught == total && problems == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"use std::future::Future;

pub fn add(a: u32, b: u32) -> u32 {
    a + b
}

pub struct Counter(u32);

impl Counter {
    pub fn bump(&mut self) -> u32 {
        self.0 += 1;
        self.0
    }

    pub fn later<'a>(&'a self) -> impl Future<Output = u32> + 'a {
        // Waits for nothing.
        async move { self.0 }
    }

    pub async fn soon<T: Copy>(&self, t: T) -> T {
        t
    }
}
"#;

    /// Each function of `specs` blanked by stage 1, 2, 3, … in order.
    fn switches(specs: &[&str]) -> Vec<(FnPath, usize, String)> {
        specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let stage = i + 1;
                let message = format!("stage {stage}: {{{s}}}");
                (FnPath::parse(s).unwrap(), stage, message)
            })
            .collect()
    }

    const ALL: [&str; 4] = [
        "a.rs: add",
        "a.rs: Counter::bump",
        "a.rs: Counter::later",
        "a.rs: Counter::soon",
    ];

    #[test]
    fn a_switch_is_inserted_on_the_line_of_the_body_and_changes_nothing_else() {
        let switches = switches(&ALL);
        let out = switch_all(SAMPLE, &switches).unwrap();
        syn::parse_file(&out).expect("the switched file parses");
        assert_eq!(out.lines().count(), SAMPLE.lines().count());
        let mut without = out.clone();
        for (path, stage, message) in &switches {
            let code = switch_code(path, *stage, message, false);
            assert_eq!(out.matches(&code).count(), 1, "{path}: one switch");
            without = without.replace(&code, "");
        }
        assert_eq!(
            without, SAMPLE,
            "taking the switches out gives the file back"
        );
        // Braces escaped for `todo!`'s format string.
        assert!(out.contains("v == \"a.rs: Counter::bump\" || "), "{out}");
        assert!(
            out.contains("from <= 2))) { todo!(\"stage 2: {{a.rs: Counter::bump}}\") }"),
            "{out}"
        );
        // Inside the `async move` block, so calling `later` does not panic.
        assert!(out.contains("async move { { static STARTER_BLANK"), "{out}");
    }

    #[test]
    fn a_switched_program_runs_its_blank_only_when_the_variable_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("main.rs");
        let program = format!(
            "{}\nfn main() {{\n    let _unpolled = Counter(1).later();\n    \
             println!(\"{{}}\", add(1, 2) + Counter(0).bump());\n}}\n",
            switch_all(SAMPLE, &switches(&ALL)).unwrap()
        );
        std::fs::write(&source, program).unwrap();
        let exe = dir.path().join("switched");
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        let built = Command::new(rustc)
            .args(["--edition", "2021", "-A", "dead_code", "-o"])
            .arg(&exe)
            .arg(&source)
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let run = |blank: Option<&str>| {
            let mut cmd = Command::new(&exe);
            cmd.env_remove(SWITCH);
            if let Some(id) = blank {
                cmd.env(SWITCH, id);
            }
            let out = cmd.output().unwrap();
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        let (ok, stdout, _) = run(None);
        assert!(
            ok && stdout == "4",
            "no blank: the lesson's code runs ({stdout})"
        );
        let (ok, _, stderr) = run(Some("a.rs: add"));
        assert!(
            !ok && stderr.contains("not yet implemented: stage 1: {a.rs: add}"),
            "{stderr}"
        );
        let (ok, _, stderr) = run(Some("a.rs: Counter::bump"));
        assert!(!ok && stderr.contains("Counter::bump"), "{stderr}");
        // A stage and every later one: `add` (stage 1) stays written,
        // `bump` (stage 2) is blank.
        let (ok, _, stderr) = run(Some(&from_stage(2)));
        assert!(
            !ok && stderr.contains("not yet implemented: stage 2: {a.rs: Counter::bump}"),
            "stages 2..: {stderr}"
        );
        let (ok, stdout, _) = run(Some(&from_stage(3)));
        assert!(
            ok && stdout == "4",
            "stages 3..: add (1) and bump (2) written ({stdout})"
        );
        let (ok, _, stderr) = run(Some(&from_stage(1)));
        assert!(
            !ok && stderr.contains("{a.rs: add}"),
            "stages 1..: {stderr}"
        );
        // A future's blank panics when polled, as a starter's does, not
        // when the function is called.
        let (ok, stdout, _) = run(Some("a.rs: Counter::later"));
        assert!(ok && stdout == "4", "calling later() is harmless");
        let (ok, stdout, _) = run(Some("a.rs: add "));
        assert!(ok && stdout == "4", "only the exact name switches");
    }

    #[test]
    fn a_future_body_that_is_not_one_async_block_is_refused() {
        let text = "fn f() -> impl std::future::Future<Output = ()> { let x = 1; async move { let _ = x; } }\n";
        let err =
            switch_all(text, &[(FnPath::parse("a.rs: f").unwrap(), 1, "m".into())]).unwrap_err();
        assert!(err.to_string().contains("not one `async` block"), "{err}");
    }

    #[test]
    fn the_hang_limit_scales_with_the_green_time_and_stays_under_the_limit() {
        let limit = Duration::from_secs(120);
        assert_eq!(
            limit_for(Duration::from_millis(100), limit),
            Duration::from_secs(11)
        );
        assert_eq!(
            limit_for(Duration::from_secs(5), limit),
            Duration::from_secs(60)
        );
        assert_eq!(limit_for(Duration::from_secs(30), limit), limit);
    }

    #[test]
    fn every_lesson_of_the_checkout_switches_each_blank_once() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for (krate, _, _) in crate::stages::LESSONS {
            let list = StageList::load(&root, krate).expect(krate);
            let (files, blanks) = switched_files(&root, &list).expect(krate);
            let switches: usize = files
                .iter()
                .filter(|(rel, _)| rel.starts_with("src"))
                .map(|(_, bytes)| {
                    String::from_utf8_lossy(bytes)
                        .matches("OnceLock::new(); if")
                        .count()
                })
                .sum();
            assert_eq!(
                switches,
                blanks.len(),
                "{krate}: one switch per blanked function"
            );
        }
    }
}
