//! Running a crate's stages: each stage's tests, built just before it runs,
//! in order, each within a time limit.
//!
//! The test binaries are run directly, not through `cargo test`: cargo says
//! where it built them (`--message-format=json`), and a binary we started
//! ourselves is one we can stop. A blank whose `todo!()` panicked on a
//! worker thread can leave a test waiting for that thread forever; the
//! limit turns that into a red stage instead of a hung terminal.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::stages::{Stage, StageList, TestSelection};

/// The cargo to run: the one that ran us, if any.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Builds the test targets `targets` of the crate in `dir`. `Ok(Err(text))`
/// when the crate does not compile: `text` is what the compiler said.
pub fn build_tests(
    dir: &Path,
    targets: &[String],
    target_dir: Option<&Path>,
) -> Result<std::result::Result<BTreeMap<String, PathBuf>, String>> {
    let mut cmd = cargo();
    cmd.arg("test")
        .arg("--no-run")
        .arg("--message-format=json-render-diagnostics")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"));
    for t in targets {
        cmd.arg("--test").arg(t);
    }
    if let Some(target_dir) = target_dir {
        cmd.env("CARGO_TARGET_DIR", target_dir);
    }
    let shared_target = target_dir
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from));
    if let Some(shared_target) = shared_target {
        forget_own_build(&shared_target, dir)?;
    }
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .context("run cargo test --no-run")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Ok(Err(compiler_errors(&stderr)));
    }
    let mut exes = BTreeMap::new();
    for message in cargo_metadata::Message::parse_stream(out.stdout.as_slice()) {
        if let cargo_metadata::Message::CompilerArtifact(artifact) = message? {
            let is_test = artifact.target.kind.iter().any(|k| k.to_string() == "test");
            if let (true, Some(exe)) = (is_test, artifact.executable) {
                exes.insert(artifact.target.name.clone(), exe.into_std_path_buf());
            }
        }
    }
    for t in targets {
        if !exes.contains_key(t) {
            bail!("cargo built no test target {t:?} (is there a tests/{t}.rs?)");
        }
    }
    Ok(Ok(exes))
}

/// Makes cargo build the crate at `dir` again in the target directory
/// `target_dir`, which other copies of the same lesson may share (verify's
/// starters, CI's, a learner's own `CARGO_TARGET_DIR`), unless the last
/// copy built there through this function was this one.
///
/// Copies of one lesson share their crate's name, so cargo gives their
/// builds the same names in a shared target directory, and may take another
/// copy's build for this one's: its record of the sources it read can name
/// the other copy's files (when they sit inside the target directory), or
/// be newer than these files. Forgetting the crate's own records (its
/// `.fingerprint` entries) makes cargo compile the crate again; its
/// dependencies stay built. The same copy built twice (a stage rewritten
/// in place, or checked twice) is left to cargo, which sees its own files
/// change. Two copies built at the same moment can still overwrite each
/// other's test binaries: give each its own target directory then.
///
/// The records are changed under cargo's own lock of the directory
/// (`debug/.cargo-lock`), so that a build running beside this one, of
/// another copy, is never left without the records it is writing.
pub fn forget_own_build(target_dir: &Path, dir: &Path) -> Result<()> {
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("read {}", manifest.display()))?;
    let doc: toml::Table =
        toml::from_str(&text).with_context(|| format!("parse {}", manifest.display()))?;
    let Some(name) = doc
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
    else {
        return Ok(());
    };
    // `cargo test` builds with the `test` profile, whose files are in `debug`.
    let debug = target_dir.join("debug");
    std::fs::create_dir_all(&debug).with_context(|| format!("create {}", debug.display()))?;
    let lock_path = debug.join(".cargo-lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("open {}", lock_path.display()))?;
    lock.lock()
        .with_context(|| format!("lock {}", lock_path.display()))?;
    let this_copy = dir
        .canonicalize()
        .unwrap_or_else(|_| dir.to_path_buf())
        .to_string_lossy()
        .into_owned();
    let last_path = debug.join(format!(".starter-last-copy-{name}"));
    let last = std::fs::read_to_string(&last_path).unwrap_or_default();
    if last != this_copy {
        if let Ok(entries) = std::fs::read_dir(debug.join(".fingerprint")) {
            for entry in entries.flatten() {
                let file_name = entry.file_name();
                let Some(hash) = file_name
                    .to_str()
                    .and_then(|n| n.strip_prefix(name))
                    .and_then(|rest| rest.strip_prefix('-'))
                else {
                    continue;
                };
                // Only `NAME-HASH`, not another crate whose name starts with NAME.
                if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        std::fs::write(&last_path, &this_copy)
            .with_context(|| format!("write {}", last_path.display()))?;
    }
    // Dropping `lock` lets cargo have the directory again.
    drop(lock);
    Ok(())
}

/// The compiler's errors, without the lines of crates that built fine.
fn compiler_errors(stderr: &str) -> String {
    let kept: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            !l.trim_start().starts_with("Compiling ") && !l.trim_start().starts_with("Blocking")
        })
        .collect();
    let text = kept.join("\n");
    let first_error = text.find("error").unwrap_or(0);
    text[first_error..].chars().take(4000).collect()
}

/// How one test binary's run ended.
#[derive(Debug, Default)]
pub struct TestRun {
    /// Tests that passed.
    pub passed: Vec<String>,
    /// Tests that failed, with what they printed (the panic message).
    pub failed: Vec<(String, String)>,
    /// Whether the run was stopped at the time limit.
    pub timed_out: bool,
    /// Everything the binary printed, for a run that ended otherwise.
    pub output: String,
    /// The tests the selection picked (full names), in the binary's order.
    pub selected: Vec<String>,
}

/// The full names of the tests `selection` picks from `exe` (its prefix,
/// less its skipped tests).
pub fn selected_names(exe: &Path, dir: &Path, selection: &TestSelection) -> Result<Vec<String>> {
    let prefix = selection.prefix.as_deref().unwrap_or("");
    let listed = Command::new(exe)
        .args(["--list", "--format", "terse"])
        .current_dir(dir)
        .output()
        .with_context(|| format!("list the tests of {}", exe.display()))?;
    let names: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .filter(|name| name.starts_with(prefix))
        .map(str::to_string)
        .collect();
    for skipped in &selection.except {
        if !names.contains(skipped) {
            bail!(
                "tests/{}.rs has no test {skipped:?} to skip",
                selection.target
            );
        }
    }
    let names: Vec<String> = names
        .into_iter()
        .filter(|name| !selection.except.contains(name))
        .collect();
    if names.is_empty() {
        bail!(
            "tests/{}.rs has no test whose name starts with {prefix:?}",
            selection.target
        );
    }
    Ok(names)
}

/// Runs the tests `selection` picks from `exe`, in `dir`, for at most
/// `limit`; with `blank`, as the value of [`crate::each::SWITCH`] in their
/// environment (a switched copy's binaries, see each.rs).
pub fn run_selection(
    exe: &Path,
    dir: &Path,
    selection: &TestSelection,
    limit: Duration,
    blank: Option<&str>,
) -> Result<TestRun> {
    run_selection_watched(exe, dir, selection, limit, blank, &mut |_| {})
}

/// [`run_selection`], calling `tick` with the time the binary has run so far
/// about every tenth of a second while it runs.
fn run_selection_watched(
    exe: &Path,
    dir: &Path,
    selection: &TestSelection,
    limit: Duration,
    blank: Option<&str>,
    tick: &mut dyn FnMut(Duration),
) -> Result<TestRun> {
    let names = selected_names(exe, dir, selection)?;
    let mut args: Vec<String> = Vec::new();
    if selection.prefix.is_some() || !selection.except.is_empty() {
        // `--exact`: a name is not a pattern, so `stage1` does not pick
        // `stage10` as well.
        args.push("--exact".into());
        args.extend(names.iter().cloned());
    }
    let mut cmd = Command::new(exe);
    if let Some(blank) = blank {
        cmd.env(crate::each::SWITCH, blank);
    }
    cmd.args(&args).current_dir(dir).env("RUST_BACKTRACE", "0");
    let (status, output, _) = run_bounded_watched(&mut cmd, limit, tick)
        .with_context(|| format!("run {}", exe.display()))?;
    let timed_out = status.is_none();
    let mut run = parse_libtest(&output);
    run.timed_out = timed_out;
    run.selected = names;
    if status.is_some_and(|s| !s.success()) && run.failed.is_empty() {
        // It failed without a failing test: it crashed, or printed why.
        run.failed
            .push(("(the test binary)".into(), tail(&output, 30)));
    }
    run.output = output;
    Ok(run)
}

/// Runs `cmd` to its end or for at most `limit`, whichever comes first, and
/// returns its exit status (`None`: stopped at the limit), everything it
/// printed on stdout and stderr, and how long it ran. Both pipes are read
/// while it runs (a test that prints much would block on a full pipe), and
/// it runs in a process group of its own, so that stopping it also stops
/// the crawler processes a test started (the behaviour suite runs the
/// lesson's binary).
pub(crate) fn run_bounded(
    cmd: &mut Command,
    limit: Duration,
) -> Result<(Option<std::process::ExitStatus>, String, Duration)> {
    run_bounded_watched(cmd, limit, &mut |_| {})
}

/// [`run_bounded`], calling `tick` with the time run so far while it waits.
fn run_bounded_watched(
    cmd: &mut Command,
    limit: Duration,
    tick: &mut dyn FnMut(Duration),
) -> Result<(Option<std::process::ExitStatus>, String, Duration)> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|mut pipe| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = pipe.read_to_end(&mut text);
            text
        })
    })
    .collect();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .stderr(Stdio::null())
                .status();
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        tick(started.elapsed());
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = started.elapsed();
    let mut output = String::new();
    for reader in readers {
        output.push_str(&String::from_utf8_lossy(&reader.join().unwrap_or_default()));
    }
    Ok((status, output, elapsed))
}

/// The passes, failures and failure messages in libtest's output.
fn parse_libtest(output: &str) -> TestRun {
    let mut run = TestRun::default();
    for line in output.lines() {
        let Some(rest) = line.strip_prefix("test ") else {
            continue;
        };
        // A test that reruns itself in a child process (under `ulimit -n`)
        // prints the child's result line too: each name counts once.
        if let Some(name) = rest.strip_suffix(" ... ok") {
            if !run.passed.iter().any(|n| n == name) {
                run.passed.push(name.to_string());
            }
        } else if let Some(name) = rest.strip_suffix(" ... FAILED") {
            if !run.failed.iter().any(|(n, _)| n == name) {
                run.failed.push((name.to_string(), String::new()));
            }
        }
    }
    for (name, message) in &mut run.failed {
        let header = format!("---- {name} stdout ----\n");
        if let Some(at) = output.find(&header) {
            let body = &output[at + header.len()..];
            let end = ["\n---- ", "\nfailures:\n", "\n\nfailures:"]
                .iter()
                .filter_map(|m| body.find(m))
                .min()
                .unwrap_or(body.len());
            *message = body[..end]
                .lines()
                .filter(|l| !l.starts_with("note: run with `RUST_BACKTRACE=1`"))
                .map(without_thread_id)
                .collect::<Vec<_>>()
                .join("\n")
                .trim()
                .to_string();
        }
    }
    run
}

/// `thread 'x' (1234) panicked at` without the thread's id, which differs
/// from run to run and tells a learner nothing.
fn without_thread_id(line: &str) -> String {
    if let (Some(rest), true) = (
        line.strip_prefix("thread '"),
        line.contains(" panicked at "),
    ) {
        if let Some((name, after)) = rest.split_once("' (") {
            if let Some((id, tail)) = after.split_once(") ") {
                if id.chars().all(|c| c.is_ascii_digit()) {
                    return format!("thread '{name}' {tail}");
                }
            }
        }
    }
    line.to_string()
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// How a stage came out.
#[derive(Debug)]
pub enum StageOutcome {
    /// Every test of the stage passed.
    Passed {
        /// How many tests ran.
        tests: usize,
    },
    /// A test failed or the crate did not compile.
    Failed {
        /// The failing test shown first (or "the build"): see
        /// [`clearest_first`].
        test: String,
        /// What it said.
        message: String,
        /// The classic mistake of the stage (its name) whose words the
        /// message contains, if one does.
        mistake: Option<String>,
        /// Every test of the stage that passed, and every one that failed.
        passed: Vec<String>,
        failed: Vec<String>,
        /// Whether a run hit the time limit.
        timed_out: bool,
    },
    /// Not run: an earlier stage is red.
    NotReached,
}

impl StageOutcome {
    /// The word `starter check` prints.
    pub fn word(&self) -> &'static str {
        match self {
            StageOutcome::Passed { .. } => "ok",
            StageOutcome::Failed { .. } => "FAILED",
            StageOutcome::NotReached => "not reached",
        }
    }
}

/// What `check` tells while it works.
pub trait Progress {
    /// Stage `number` (from 1) has run `tests` tests for longer than
    /// [`LONG_STAGE`]; said once per stage.
    fn running_long(&mut self, _number: usize, _tests: usize) {}
    /// Stage `number` (from 1) is decided.
    fn decided(&mut self, _number: usize, _outcome: &StageOutcome) {}
}

/// Tells nothing: for the maintainers' runs, which print their own summary.
pub struct Quiet;

impl Progress for Quiet {}

/// How long a stage's tests run before `check` says they are running.
pub const LONG_STAGE: Duration = Duration::from_secs(5);

/// Runs one stage's tests with the built binaries `exes` (and `blank`, as
/// [`run_selection`] takes it).
pub fn run_stage(
    stage: &Stage,
    exes: &BTreeMap<String, PathBuf>,
    dir: &Path,
    limit: Duration,
    blank: Option<&str>,
) -> Result<StageOutcome> {
    run_stage_told(stage, 0, exes, dir, limit, blank, &mut Quiet)
}

/// [`run_stage`] for stage `number`, telling `progress` once when its
/// tests run long.
fn run_stage_told(
    stage: &Stage,
    number: usize,
    exes: &BTreeMap<String, PathBuf>,
    dir: &Path,
    limit: Duration,
    blank: Option<&str>,
    progress: &mut dyn Progress,
) -> Result<StageOutcome> {
    let mut passed = Vec::new();
    let mut failed: Vec<(String, String)> = Vec::new();
    let mut timed_out = false;
    let selections = stage.selections();
    let mut tests = 0;
    for selection in &selections {
        let exe = exes
            .get(&selection.target)
            .with_context(|| format!("no test binary for {}", selection.target))?;
        tests += selected_names(exe, dir, selection)?.len();
    }
    let started = Instant::now();
    let mut said = false;
    for selection in &selections {
        let exe = exes
            .get(&selection.target)
            .with_context(|| format!("no test binary for {}", selection.target))?;
        let before = started.elapsed();
        let mut tick = |ran: Duration| {
            if !said && before + ran > LONG_STAGE {
                said = true;
                progress.running_long(number, tests);
            }
        };
        let run = run_selection_watched(exe, dir, selection, limit, blank, &mut tick)?;
        let prefix = |n: &String| format!("{}::{n}", selection.target);
        passed.extend(run.passed.iter().map(prefix));
        failed.extend(run.failed.iter().map(|(n, m)| (prefix(n), m.clone())));
        if run.timed_out {
            timed_out = true;
            let running: Vec<&String> = run
                .selected
                .iter()
                .filter(|n| !run.passed.contains(n) && !run.failed.iter().any(|(f, _)| f == *n))
                .collect();
            failed.push((
                format!("{}::(still running)", selection.target),
                still_running(limit, &running, &todo_left(dir), &run.output),
            ));
        }
    }
    if failed.is_empty() && passed.is_empty() {
        return Ok(StageOutcome::Failed {
            test: stage.tests.join(", "),
            message: "no test ran".into(),
            mistake: None,
            passed,
            failed: Vec::new(),
            timed_out,
        });
    }
    if failed.is_empty() {
        return Ok(StageOutcome::Passed {
            tests: passed.len(),
        });
    }
    clearest_first(stage, &mut failed);
    let (test, message) = failed[0].clone();
    let mistake = named_mistake(stage, &message);
    Ok(StageOutcome::Failed {
        test,
        message,
        mistake,
        passed,
        failed: failed.into_iter().map(|(n, _)| n).collect(),
        timed_out,
    })
}

/// Orders a stage's failures so that the first is the clearest: a
/// `todo!()` reached (a function not written yet: what is left to do, and
/// what may have made the other tests fail, a child process's or a timed-out
/// test's own message cut short), then one whose
/// message names a classic mistake of the stage, then one of the stage's
/// own test file (the first it lists), then the rest. Among those that name
/// a mistake, the one that names the mistake listed first: one mistake can
/// make several tests fail, one of them with a message that fits a broader
/// mistake too (a leak's words, say), and the stage list puts the more
/// specific mistake first. By name last, so the order is the same on every
/// run.
pub fn clearest_first(stage: &Stage, failed: &mut [(String, String)]) {
    let own = stage
        .selections()
        .first()
        .map(|s| format!("{}::", s.target))
        .unwrap_or_default();
    failed.sort_by_key(|(name, message)| {
        let named = stage
            .mistakes
            .iter()
            .position(|m| message.contains(m.shows.as_str()));
        let rank = if message.contains(TODO_PANIC) {
            0
        } else if named.is_some() {
            1
        } else if name.starts_with(&own) {
            2
        } else {
            3
        };
        (rank, named.unwrap_or(usize::MAX), name.clone())
    });
}

/// What a `todo!()` panics with: a function not written yet.
const TODO_PANIC: &str = "not yet implemented";

/// The classic mistake of `stage` whose words `message` contains; none for
/// a `todo!()`'s panic, which is a function not written yet, not a mistake.
pub fn named_mistake(stage: &Stage, message: &str) -> Option<String> {
    if message.contains(TODO_PANIC) {
        return None;
    }
    stage
        .mistakes
        .iter()
        .find(|m| message.contains(m.shows.as_str()))
        .map(|m| m.name.clone())
}

/// The `todo!()`s still in the crate's `src/`: `file:line` each.
fn todo_left(dir: &Path) -> Vec<String> {
    let src = dir.join("src");
    let mut found = Vec::new();
    for entry in walkdir::WalkDir::new(&src).sort_by_file_name() {
        let Ok(entry) = entry else { continue };
        if entry.path().extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        for (i, line) in text.lines().enumerate() {
            if line.contains("todo!(") && !line.trim_start().starts_with("//") {
                found.push(format!("{}:{}", rel.display(), i + 1));
            }
        }
    }
    found
}

/// What a stage stopped at its time bound says: which tests were still
/// running, and what can keep a test waiting (a `todo!()` only when one is
/// left).
fn still_running(limit: Duration, running: &[&String], todos: &[String], output: &str) -> String {
    let names = if running.is_empty() {
        "(none named: the binary did not end)".to_string()
    } else {
        running
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let why = if todos.is_empty() {
        "A test that waits for something your code never does (a wake-up, a notify, a \
         `task_done`, a place given back) waits until this bound"
            .to_string()
    } else {
        format!(
            "A `todo!()` that panics on another thread can leave a test waiting for an answer \
             that never comes; {} still in src/ (first: {})",
            if todos.len() == 1 {
                "one is".to_string()
            } else {
                format!("{} are", todos.len())
            },
            todos[0]
        )
    };
    format!(
        "stopped after {} s with these tests still running: {names}. {why}.\n{}",
        limit.as_secs(),
        tail(output, 15)
    )
}

/// What `check` found: one outcome per stage, and the compiler's errors if
/// the crate did not build.
#[derive(Debug)]
pub struct Checked {
    /// One per stage, in order.
    pub outcomes: Vec<StageOutcome>,
    /// The compiler's errors, when the crate did not compile.
    pub build_errors: Option<String>,
    /// The test binaries built, by target (none when it did not compile).
    pub exes: BTreeMap<String, PathBuf>,
}

impl Checked {
    /// How many stages passed.
    pub fn passing(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| matches!(o, StageOutcome::Passed { .. }))
            .count()
    }
}

/// Builds the crate in `dir` and runs stages `1..=upto` in order, stopping
/// at the first red one (or running them all, with `keep_going`), telling
/// `progress` each stage's outcome as soon as it is decided.
///
/// The tests are built stage by stage, just before the stage runs: a fresh
/// starter, red at stage 1, builds stage 1's tests only. A crate that does
/// not compile, whichever stage's build finds it, is reported as before any
/// stage ran.
pub fn check(
    list: &StageList,
    dir: &Path,
    upto: usize,
    limit: Duration,
    keep_going: bool,
    target_dir: Option<&Path>,
    progress: &mut dyn Progress,
) -> Result<Checked> {
    let mut exes = BTreeMap::new();
    let mut outcomes = Vec::new();
    let mut red = false;
    for (i, stage) in list.stages.iter().enumerate() {
        if i >= upto || (red && !keep_going) {
            progress.decided(i + 1, &StageOutcome::NotReached);
            outcomes.push(StageOutcome::NotReached);
            continue;
        }
        let mut missing: Vec<String> = Vec::new();
        for s in stage.selections() {
            if !exes.contains_key(&s.target) && !missing.contains(&s.target) {
                missing.push(s.target);
            }
        }
        if !missing.is_empty() {
            match build_tests(dir, &missing, target_dir)? {
                Ok(built) => exes.extend(built),
                Err(errors) => {
                    let outcomes = list
                        .stages
                        .iter()
                        .map(|_| StageOutcome::NotReached)
                        .collect();
                    return Ok(Checked {
                        outcomes,
                        build_errors: Some(errors),
                        exes: BTreeMap::new(),
                    });
                }
            }
        }
        let outcome = run_stage_told(stage, i + 1, &exes, dir, limit, None, progress)?;
        red |= matches!(outcome, StageOutcome::Failed { .. });
        progress.decided(i + 1, &outcome);
        outcomes.push(outcome);
    }
    Ok(Checked {
        outcomes,
        build_errors: None,
        exes,
    })
}

/// Runs stages `1..=upto` with binaries already built (`exes`, every
/// stage's), each test binary with `blank` as [`run_selection`] takes it;
/// every stage runs, whatever the ones before it gave.
pub fn run_stages(
    list: &StageList,
    exes: &BTreeMap<String, PathBuf>,
    dir: &Path,
    upto: usize,
    limit: Duration,
    blank: Option<&str>,
) -> Result<Checked> {
    let mut outcomes = Vec::new();
    for (i, stage) in list.stages.iter().enumerate() {
        outcomes.push(if i < upto {
            run_stage(stage, exes, dir, limit, blank)?
        } else {
            StageOutcome::NotReached
        });
    }
    Ok(Checked {
        outcomes,
        build_errors: None,
        exes: exes.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::Mistake;

    fn stage_with_mistake(tests: &[&str], shows: &str) -> Stage {
        Stage {
            name: "s".into(),
            sections: vec!["S".into()],
            write: String::new(),
            checks: String::new(),
            hint: String::new(),
            tests: tests.iter().map(|t| t.to_string()).collect(),
            skip: Vec::new(),
            blank: Vec::new(),
            state: Vec::new(),
            contract: BTreeMap::new(),
            goal: BTreeMap::new(),
            mistakes: vec![Mistake {
                name: "the flag cleared too late".into(),
                file: "task.rs".into(),
                find: String::new(),
                replace: String::new(),
                shows: shows.into(),
            }],
        }
    }

    /// The failure shown first names the mistake when one does, then comes
    /// from the stage's own test file, then the rest, by name within each.
    #[test]
    fn a_test_that_reruns_itself_counts_once() {
        let output = "test a ... FAILED\ntest b ... ok\ntest a ... FAILED\ntest b ... ok\n";
        let run = parse_libtest(output);
        assert_eq!(run.passed, ["b"]);
        assert_eq!(run.failed.len(), 1, "{:?}", run.failed);
    }

    #[test]
    fn the_clearest_failure_comes_first() {
        let stage = stage_with_mistake(&["task", "event_loop self_wake"], "clears the flag");
        let failure = |name: &str, message: &str| (name.to_string(), message.to_string());
        let mut failed = vec![
            failure("event_loop::a_first", "look in three places"),
            failure("task::z_last", "polls: 2, expected 3"),
            failure("task::b_named", "step clears the flag before it polls"),
            failure("event_loop::self_wake", "never stepped again"),
        ];
        clearest_first(&stage, &mut failed);
        let order: Vec<&str> = failed.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            order,
            [
                "task::b_named",
                "task::z_last",
                "event_loop::a_first",
                "event_loop::self_wake"
            ]
        );
        assert_eq!(
            named_mistake(&stage, &failed[0].1).as_deref(),
            Some("the flag cleared too late")
        );
        assert_eq!(named_mistake(&stage, &failed[1].1), None);
    }

    /// A `todo!()` reached is shown before a failure that names a mistake:
    /// the function is not written yet, and no mistake is claimed.
    #[test]
    fn a_todo_reached_comes_before_a_named_mistake() {
        let stage = stage_with_mistake(&["crawl"], "no other fetch is in flight");
        let mut failed = vec![
            (
                "crawl::a_child".to_string(),
                "waited: no other fetch is in flight".to_string(),
            ),
            (
                "crawl::b_todo".to_string(),
                "not yet implemented: stage 7: Crawler::get".to_string(),
            ),
        ];
        clearest_first(&stage, &mut failed);
        assert_eq!(failed[0].0, "crawl::b_todo");
        assert_eq!(named_mistake(&stage, &failed[0].1), None);
    }

    /// When two failures each name a mistake, the one naming the mistake
    /// the stage lists first is shown, whatever the tests' names.
    #[test]
    fn between_two_named_mistakes_the_one_listed_first_wins() {
        let mut stage = stage_with_mistake(&["crawl"], "a page was finished too early");
        stage.mistakes.push(Mistake {
            name: "a place never given back".into(),
            file: "crawler.rs".into(),
            find: String::new(),
            replace: String::new(),
            shows: "1 place still taken".into(),
        });
        let mut failed = vec![
            (
                "behaviour::a".to_string(),
                "1 place still taken".to_string(),
            ),
            (
                "crawl::z".to_string(),
                "1 place still taken; a page was finished too early".to_string(),
            ),
        ];
        clearest_first(&stage, &mut failed);
        assert_eq!(failed[0].0, "crawl::z");
        assert_eq!(
            named_mistake(&stage, &failed[0].1).as_deref(),
            Some("the flag cleared too late"),
            "the first mistake listed whose words the message holds"
        );
    }

    /// A stage stopped at its bound names the tests still running, and
    /// mentions `todo!()` only when one is left.
    #[test]
    fn a_stage_at_its_bound_names_what_still_ran_and_blames_todo_only_when_one_is_left() {
        let join = "join_waits".to_string();
        let none = still_running(Duration::from_secs(120), &[&join], &[], "");
        assert!(none.contains("still running: join_waits"), "{none}");
        assert!(!none.contains("todo!()"), "no todo!() left: {none}");
        let one = still_running(
            Duration::from_secs(120),
            &[&join],
            &["src/queue.rs:40".into()],
            "",
        );
        assert!(
            one.contains("todo!()") && one.contains("src/queue.rs:40"),
            "{one}"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("src/lib.rs"),
            "// todo!() in a comment\nfn f() {\n    todo!(\"stage 1\")\n}\n",
        )
        .unwrap();
        assert_eq!(todo_left(dir.path()), ["src/lib.rs:3"]);
    }

    #[test]
    fn only_the_crates_own_build_records_are_forgotten_when_another_copy_was_built() {
        let target = tempfile::tempdir().unwrap();
        let copy = |name: &str| {
            let krate = tempfile::tempdir().unwrap();
            std::fs::write(
                krate.path().join("Cargo.toml"),
                format!("[package]\nname = \"{name}\"\n"),
            )
            .unwrap();
            krate
        };
        let (one, other) = (copy("lesson2-callbacks"), copy("lesson2-callbacks"));
        let fingerprints = target.path().join("debug/.fingerprint");
        let names = [
            "lesson2-callbacks-0123456789abcdef",
            "lesson2-callbacks-fedcba9876543210",
            "lesson2-callbacks-extra-0123456789abcdef",
            "lesson2-0123456789abcdef",
            "shared-0123456789abcdef",
        ];
        let make = || {
            for name in names {
                std::fs::create_dir_all(fingerprints.join(name)).unwrap();
            }
        };
        let left = || {
            let mut left: Vec<String> = std::fs::read_dir(&fingerprints)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            left.sort();
            left
        };
        let others = [
            "lesson2-0123456789abcdef",
            "lesson2-callbacks-extra-0123456789abcdef",
            "shared-0123456789abcdef",
        ];
        make();
        forget_own_build(target.path(), one.path()).unwrap();
        assert_eq!(
            left(),
            others,
            "a copy not built here before: its crate's records go, every other crate's stay"
        );
        make();
        forget_own_build(target.path(), one.path()).unwrap();
        assert_eq!(
            left().len(),
            names.len(),
            "the same copy again: cargo's records stay"
        );
        forget_own_build(target.path(), other.path()).unwrap();
        assert_eq!(
            left(),
            others,
            "another copy of the lesson: the crate's records go"
        );
        // A target directory with nothing built yet is no error.
        forget_own_build(&target.path().join("none"), one.path()).unwrap();
    }
}
