//! # `starter`: build a lesson yourself, stage by stage
//!
//! ```text
//! cargo run -p starter -- new lesson3 ~/my-lesson3
//! cd ~/my-lesson3 && cargo test        # red: stage 1 is yours to write
//! cargo run -p starter -- check ~/my-lesson3
//! cargo run -p starter -- watch ~/my-lesson3    # check again at each save
//! cargo run -p starter -- solution ~/my-lesson3 1
//! ```
//!
//! For the course's maintainers, `starter verify` proves that every stage
//! of every lesson goes from red to green (CI runs it) and checks the
//! chapters' "Build it yourself" pages against the stage lists and real runs
//! of `check`; `starter verify --write-pages` rewrites those pages, and
//! `starter pages` the stages' contracts for the book's building mode.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use starter::run::{self, Checked, StageOutcome};
use starter::stages::{self, StageList, LESSONS};
use starter::{blank, contracts, write_starter};

/// Build a lesson of the course yourself: a starter crate whose stages the
/// lesson's tests turn from red to green, one at a time.
#[derive(Parser)]
#[command(
    version,
    about,
    long_about = "Build a lesson of the course yourself: a starter crate whose stages the \
lesson's tests turn from red to green, one at a time.

`new` writes a lesson's starter: the lesson's crate with the bodies of the functions \
each stage hands over left as todo!(\"stage K: ...\"). Write the stages in the \
chapter's order; `check` (or `watch`, which checks again each time you save) runs \
them in order and says which pass, what the first red one's tests check, where the \
book explains it, and how to run its tests alone. `solution` shows the lesson's code \
for a stage beside yours.

Run it from the course's checkout: cargo run -p starter -- new lesson1 ~/my-lesson1",
    after_help = "The book: run `mdbook serve docs --port 4000 --open` in the course's checkout; each chapter's \
section \"Build it yourself\" lists its stages."
)]
struct Cli {
    /// The course's checkout (default: the one around the current directory).
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write LESSON's starter into DIR (a new or empty directory).
    New {
        /// 1 to 4, lesson1 to lesson4, or the crate name.
        lesson: String,
        /// Where to write the starter's crate.
        dir: PathBuf,
        /// Write stages 1..=N as the lesson has them (skip ahead).
        #[arg(long, default_value_t = 0)]
        through: usize,
    },
    /// Run DIR's stages in order: which pass, and what to do next.
    Check {
        /// A starter, or one of the course's own lesson crates.
        dir: PathBuf,
        /// Stop a stage's test binary after this many seconds.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
    },
    /// Check DIR, then again each time a file under its src/ or tests/ is
    /// saved (Ctrl-C ends it).
    Watch {
        /// A starter, or one of the course's own lesson crates.
        dir: PathBuf,
        /// Stop a stage's test binary after this many seconds.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
    },
    /// What stage K asks of you: each function's goal, what the stage's
    /// tests check, and the hint; with --steps, each function's steps too.
    /// Without K, the first stage with a function still to write.
    Hint {
        /// The starter.
        dir: PathBuf,
        /// The stage, from 1.
        stage: Option<usize>,
        /// Also show how each function goes about it (the steps).
        #[arg(long)]
        steps: bool,
    },
    /// Break stage K on purpose: its classic mistakes, each to make in your
    /// own code, predict, and check. Without K, the last stage you have
    /// written.
    Break {
        /// The starter.
        dir: PathBuf,
        /// The stage, from 1.
        stage: Option<usize>,
    },
    /// Show the lesson's code for stage K beside yours (changes nothing).
    Solution {
        /// The starter.
        dir: PathBuf,
        /// The stage, from 1.
        stage: usize,
    },
    /// For the course's maintainers: prove every stage of LESSONS goes from
    /// red to green (CI runs it).
    Verify {
        /// The lessons (default: all four).
        lessons: Vec<String>,
        /// Stop a stage's test binary after this many seconds.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
        /// Rewrite the book's starter pages from these runs instead of
        /// checking them.
        #[arg(long)]
        write_pages: bool,
        /// Also prove that each blanked function alone, blank, fails a
        /// test of its own stage (on the build the stages are checked on;
        /// see each.rs).
        #[arg(long, conflicts_with = "write_pages")]
        each_function: bool,
        /// Instead, make each classic mistake the stage lists name
        /// (`[[stage.mistake]]`) on a copy of the lesson and prove its
        /// stage's tests fail with a message containing its words (see
        /// mistakes.rs).
        /// With --write-pages, the chapters' "Break it on purpose" pages are
        /// rewritten from this run instead of checked.
        #[arg(long, conflicts_with = "each_function")]
        mistakes: bool,
        /// With --mistakes: only the mistakes whose name contains this text
        /// (to prove a new one without waiting for all of them).
        #[arg(long, requires = "mistakes", value_name = "TEXT")]
        only: Option<String>,
    },
    /// For the course's maintainers: write each lesson's contracts page for
    /// the book's building mode
    /// (docs/src/generated/starters/lessonN-contracts.md), from its stage
    /// list; runs no test.
    Pages {
        /// The lessons (default: all four).
        lessons: Vec<String>,
        /// Only check that the pages are up to date (exit 1 if not).
        #[arg(long)]
        check: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run_cli(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("starter: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run_cli(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Cmd::New {
            lesson,
            dir,
            through,
        } => {
            let root = starter::workspace_root(cli.root.as_deref())?;
            let list = StageList::load(&root, &lesson)?;
            write_starter(&root, &list, &dir, through)?;
            let m = list.stages.len();
            println!(
                "wrote {}'s starter to {} ({} of {m} stages written)",
                list.lesson,
                dir.display(),
                through
            );
            if through < m {
                let stage = &list.stages[through];
                // Absolute, so that every command works from the starter too.
                let at = dir.canonicalize().unwrap_or_else(|_| dir.clone());
                let at = at.display();
                println!(
                    "next: stage {} ({}): {}\n  read: {}\n  its tests: cd {at} && {}\n  every stage in order: {}\n  or, checking again each time you save: {}",
                    through + 1,
                    stage.name,
                    stage.write,
                    list.read_text(stage).replace("\n    ", "\n        "),
                    stage.cargo_command(),
                    list.course_command(&format!("check {at}")),
                    list.course_command(&format!("watch {at}")),
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Check { dir, timeout } => {
            let (_, list) = course_of(&dir, cli.root.as_deref())?;
            let all = check_once(&list, &dir, Duration::from_secs(timeout))?;
            Ok(if all {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Cmd::Watch { dir, timeout } => {
            let (_, list) = course_of(&dir, cli.root.as_deref())?;
            let limit = Duration::from_secs(timeout);
            // Started before the first check, so a save made while it runs
            // is not missed.
            let watcher = starter::watch::Watcher::start(&dir)?;
            check_once(&list, &dir, limit)?;
            loop {
                println!(
                    "\nwatching {} (src/ and tests/): save a file to check again; Ctrl-C ends it",
                    dir.display()
                );
                let saved = watcher.next_saves()?;
                let names: Vec<String> = saved
                    .iter()
                    .map(|p| {
                        p.strip_prefix(&watcher.dir)
                            .unwrap_or(p)
                            .display()
                            .to_string()
                    })
                    .collect();
                println!("\n== saved: {}", names.join(", "));
                check_once(&list, &dir, limit)?;
            }
        }
        Cmd::Hint { dir, stage, steps } => {
            let (_, list) = course_of(&dir, cli.root.as_deref())?;
            let number = match stage {
                Some(k) => k,
                None => first_unwritten(&list, &dir)?,
            };
            let Some(st) = number.checked_sub(1).and_then(|i| list.stages.get(i)) else {
                bail!("{} has stages 1 to {}", list.lesson, list.stages.len());
            };
            print!("{}", hint_text(&list, number, st, steps, &dir)?);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Break { dir, stage } => {
            let (_, list) = course_of(&dir, cli.root.as_deref())?;
            let number = match stage {
                Some(k) => k,
                None => last_written(&list, &dir)?,
            };
            if number == 0 {
                println!(
                    "no stage is written yet: write stage 1 (`starter hint {}`), and once \
                     `starter check` says it passes, break it here",
                    dir.display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            let Some(st) = number.checked_sub(1).and_then(|i| list.stages.get(i)) else {
                bail!("{} has stages 1 to {}", list.lesson, list.stages.len());
            };
            print!("{}", break_text(number, st, &dir));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Solution { dir, stage } => {
            let (root, list) = course_of(&dir, cli.root.as_deref())?;
            let Some(st) = stage.checked_sub(1).and_then(|i| list.stages.get(i)) else {
                bail!("{} has stages 1 to {}", list.lesson, list.stages.len());
            };
            println!(
                "stage {stage} ({}): {}\nthe lesson's code is on the + side; read: {}\n",
                st.name,
                st.write,
                list.read_text(st)
            );
            for spec in &st.blank {
                let path = blank::FnPath::parse(spec)?;
                let yours = fn_text(&dir, &path)?;
                let lesson = fn_text(&list.crate_dir(&root), &path)?;
                if yours == lesson {
                    println!("{path}: yours is the lesson's, line for line\n");
                    continue;
                }
                let diff = similar::TextDiff::from_lines(&yours, &lesson);
                print!(
                    "{}",
                    diff.unified_diff().context_radius(3).header(
                        &format!("yours/src/{}", path.file),
                        &format!("lesson/src/{}", path.file)
                    )
                );
                println!();
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Verify {
            lessons,
            timeout,
            write_pages,
            each_function,
            mistakes,
            only,
        } => {
            let root = starter::workspace_root(cli.root.as_deref())?;
            let lessons = lessons_or_all(lessons);
            let limit = Duration::from_secs(timeout);
            if mistakes {
                let target = std::env::var_os("CARGO_TARGET_DIR")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| root.join("target"))
                    .join("starters");
                let mut results = Vec::new();
                let mut stale = Vec::new();
                for lesson in &lessons {
                    let list = StageList::load(&root, lesson)?;
                    println!("== {}: its classic mistakes", list.lesson);
                    let lesson_results = starter::mistakes::verify_lesson(
                        &root,
                        &list,
                        &target,
                        limit,
                        only.as_deref(),
                    )?;
                    if only.is_none() {
                        if let Some(problem) =
                            break_page(&root, &list, &lesson_results, write_pages)?
                        {
                            stale.push(problem);
                        }
                    }
                    results.push(lesson_results);
                }
                for problem in &stale {
                    println!("{problem}");
                }
                // Last, as CI reads it: `N of N mistakes caught, each with
                // its message`.
                return Ok(
                    if starter::mistakes::summarize(&results) && stale.is_empty() {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    },
                );
            }
            let mut problems = Vec::new();
            let mut lists = Vec::new();
            let mut reports = Vec::new();
            for lesson in &lessons {
                let list = StageList::load(&root, lesson)?;
                problems.extend(contract_problems(&root, &list)?);
                let (found, report) = verify(&root, &list, limit, write_pages, each_function)?;
                problems.extend(found);
                reports.extend(report);
                lists.push(list);
            }
            let green = problems.is_empty();
            if green {
                println!("starter verify: every stage goes from red to green");
            } else {
                for p in &problems {
                    println!("starter verify: {p}");
                }
            }
            // Last, as `--each-function` promises: `N of N blanked functions
            // caught by their own stage`.
            let caught = !each_function || starter::each::summarize(&reports, &lists);
            Ok(if green && caught {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Cmd::Pages { lessons, check } => {
            let root = starter::workspace_root(cli.root.as_deref())?;
            let mut stale = Vec::new();
            for lesson in &lessons_or_all(lessons) {
                let list = StageList::load(&root, lesson)?;
                let path = contracts::page_path(&root, &list)?;
                if check {
                    if let Err(problem) = contracts::check(&root, &list)? {
                        stale.push(problem);
                    }
                } else if contracts::write(&root, &list)? {
                    println!("wrote {}", path.display());
                } else {
                    println!("{} is up to date", path.display());
                }
            }
            for problem in &stale {
                println!("starter pages: {problem}");
            }
            Ok(if stale.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

/// The lessons a command names, or all four.
fn lessons_or_all(lessons: Vec<String>) -> Vec<String> {
    if lessons.is_empty() {
        LESSONS.iter().map(|(k, _, _)| k.to_string()).collect()
    } else {
        lessons
    }
}

/// The problems of a lesson's contracts: a stale page, and, once the
/// lesson has any contract, each blanked function without one.
fn contract_problems(root: &Path, list: &StageList) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    if let Err(stale) = contracts::check(root, list)? {
        problems.push(stale);
    }
    if list.has_contracts() {
        for (i, stage) in list.stages.iter().enumerate() {
            for spec in stage.without_contract() {
                problems.push(format!(
                    "{}: stage {} ({}): {spec:?} is blanked but has no contract in [stage.contract]",
                    list.lesson,
                    i + 1,
                    stage.name
                ));
            }
        }
    }
    if list.has_goals() {
        for (i, stage) in list.stages.iter().enumerate() {
            for spec in stage.without_goal() {
                problems.push(format!(
                    "{}: stage {} ({}): {spec:?} is blanked but has no goal in [stage.goal]",
                    list.lesson,
                    i + 1,
                    stage.name
                ));
            }
        }
    }
    Ok(problems)
}

/// The first stage with a function whose body is still the starter's
/// `todo!`; the last stage when every function is written.
fn first_unwritten(list: &StageList, dir: &Path) -> Result<usize> {
    for (i, stage) in list.stages.iter().enumerate() {
        let marker = format!("todo!(\"stage {}:", i + 1);
        for spec in &stage.blank {
            let path = blank::FnPath::parse(spec)?;
            if fn_text(dir, &path)?.contains(&marker) {
                return Ok(i + 1);
            }
        }
    }
    Ok(list.stages.len())
}

/// The last stage whose functions are all written (0: none is).
fn last_written(list: &StageList, dir: &Path) -> Result<usize> {
    let first = first_unwritten(list, dir)?;
    let last = list.stages.len();
    let marker = format!("todo!(\"stage {last}:");
    let mut all_written = true;
    for spec in &list.stages[last - 1].blank {
        if fn_text(dir, &blank::FnPath::parse(spec)?)?.contains(&marker) {
            all_written = false;
        }
    }
    Ok(if first == last && all_written {
        last
    } else {
        first - 1
    })
}

/// What `break` prints for stage `number`: each classic mistake, the
/// change as the lesson's code takes it, and what to do.
fn break_text(number: usize, stage: &stages::Stage, dir: &Path) -> String {
    let mut out = String::new();
    if stage.mistakes.is_empty() {
        let _ = writeln!(
            out,
            "stage {number} ({}) lists no classic mistake; try another stage",
            stage.name
        );
        return out;
    }
    let _ = writeln!(
        out,
        "stage {number} ({}): break it on purpose, one mistake at a time. Make the change in \
         your own code, write down which test you expect to fail and what it will say, then \
         run `starter check {}` and compare. Undo the change before the next one.\n",
        stage.name,
        dir.display()
    );
    for (i, mistake) in stage.mistakes.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. {}\n   as the lesson's src/{} would take it:",
            i + 1,
            mistake.name,
            mistake.file
        );
        let diff = starter::mistakes::change_diff(mistake);
        for line in diff.lines().filter(|l| !l.starts_with("```")) {
            let _ = writeln!(out, "   {line}");
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "The answers, from a real run of each: the chapter's \"Break it on purpose\"."
    );
    out
}

/// What `hint` prints for stage `number`: what to write, where to read,
/// each function's goal (and steps, when asked), what the tests check,
/// and the hint.
fn hint_text(
    list: &StageList,
    number: usize,
    stage: &stages::Stage,
    steps: bool,
    dir: &Path,
) -> Result<String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "stage {number} ({}): you write {}\nread: {}\n",
        stage.name,
        stage.write.trim_end_matches('.'),
        list.read_text(stage)
    );
    for spec in &stage.blank {
        let path = blank::FnPath::parse(spec)?;
        let name = contracts::function_name(&path);
        let goal = stage.goal.get(spec).or(stage.contract.get(spec));
        let _ = writeln!(out, "- {name} ({}): {}", path.file, one_line(goal));
        if steps {
            if let Some(how) = stage.contract.get(spec) {
                let _ = writeln!(out, "    steps: {}", one_line(Some(how)));
            }
        }
    }
    for spec in &stage.state {
        let path = blank::StructPath::parse(spec)?;
        let _ = writeln!(
            out,
            "- struct {} ({}): its fields are yours to choose; they must make possible: {}",
            path.name,
            path.file,
            one_line(stage.goal.get(spec))
        );
        if steps {
            if let Some(how) = stage.contract.get(spec) {
                let _ = writeln!(out, "    the lesson's fields: {}", one_line(Some(how)));
            }
        }
    }
    let _ = writeln!(
        out,
        "\nits tests check: {}\n\nhint: {}\n",
        stage.checks, stage.hint
    );
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let _ = writeln!(
        out,
        "its tests: cd {} && {}",
        dir.display(),
        stage.cargo_command()
    );
    if std::env::var_os("CARGO_TARGET_DIR").is_some() {
        // A target directory shared with another copy of the same lesson
        // can hand `cargo test` that copy's test binaries.
        let _ = writeln!(
            out,
            "  (CARGO_TARGET_DIR is set. If that directory also builds another copy of this lesson, `cargo test` there may run that copy's tests instead of yours: `starter check` always builds your copy, or put `CARGO_TARGET_DIR=target` in front of the command above.)"
        );
    }
    let at = dir.display().to_string();
    if !steps {
        let _ = writeln!(
            out,
            "how each function goes about it: {}",
            list.course_command(&format!("hint {at} {number} --steps"))
        );
    }
    let _ = writeln!(
        out,
        "the lesson's code for this stage: {}",
        list.course_command(&format!("solution {at} {number}"))
    );
    Ok(out)
}

/// `text` on one line, or a dash when there is none.
fn one_line(text: Option<&String>) -> String {
    text.map_or_else(
        || "-".to_string(),
        |t| t.split_whitespace().collect::<Vec<_>>().join(" "),
    )
}

/// Builds and checks the crate at `dir` once, as `check` does, printing
/// what it found; whether every stage passes.
fn check_once(list: &StageList, dir: &Path, limit: Duration) -> Result<bool> {
    eprintln!("building the tests of {} ...", dir.display());
    let mut told = Told { list };
    let checked = run::check(list, dir, list.stages.len(), limit, false, None, &mut told)?;
    print!("{}", details(list, &checked));
    Ok(checked.passing() == list.stages.len())
}

/// What `check` prints as it works: each stage's line as soon as the stage
/// is decided, and a word when a stage's tests run long.
struct Told<'a> {
    list: &'a StageList,
}

impl run::Progress for Told<'_> {
    fn running_long(&mut self, number: usize, tests: usize) {
        let name = &self.list.stages[number - 1].name;
        println!("stage {number}  {name}  {tests} tests running…");
    }

    fn decided(&mut self, number: usize, outcome: &StageOutcome) {
        println!("{}", stage_line(self.list, number, outcome));
    }
}

/// `stage K  NAME  ok` (or `FAILED`, `not reached`).
fn stage_line(list: &StageList, number: usize, outcome: &StageOutcome) -> String {
    let name = &list.stages[number - 1].name;
    format!("stage {number}  {name}  {}", outcome.word())
}

/// The checkout and stage list a crate belongs to: a starter names its
/// course in `[package.metadata.starter]`; a lesson crate is in one.
fn course_of(dir: &Path, root: Option<&Path>) -> Result<(PathBuf, StageList)> {
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).with_context(|| {
        format!(
            "{}: not a crate (give the directory `starter new` wrote)",
            dir.display()
        )
    })?;
    let doc: toml::Table =
        toml::from_str(&text).with_context(|| format!("parse {}", manifest.display()))?;
    let package = doc.get("package").and_then(|p| p.as_table());
    let name = package
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .with_context(|| format!("{}: no package name", manifest.display()))?;
    let course = package
        .and_then(|p| p.get("metadata"))
        .and_then(|m| m.get("starter"))
        .and_then(|s| s.get("course"))
        .and_then(|c| c.as_str())
        .map(PathBuf::from);
    let root = match (root, course) {
        (Some(root), _) => root.to_path_buf(),
        (None, Some(course)) => course,
        (None, None) => starter::workspace_root(Some(
            dir.canonicalize()?
                .parent()
                .context("a lesson crate sits in the course's checkout")?,
        ))?,
    };
    let list = StageList::load(&root, name)?;
    Ok((root, list))
}

/// The text of the function `path` names in the crate at `dir`.
fn fn_text(dir: &Path, path: &blank::FnPath) -> Result<String> {
    let file = dir.join("src").join(&path.file);
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("read {}", file.display()))?;
    let found = blank::find(&text, path)?;
    // From the start of the item's first line, so indentation lines up.
    let line_start = text[..found.item.start].rfind('\n').map_or(0, |i| i + 1);
    Ok(format!("{}\n", &text[line_start..found.item.end]))
}

/// What `check` prints: a line per stage, the first red stage's message
/// and hint, and the count.
fn transcript(list: &StageList, checked: &Checked) -> String {
    let mut out = String::new();
    for (i, outcome) in checked.outcomes.iter().enumerate() {
        let _ = writeln!(out, "{}", stage_line(list, i + 1, outcome));
    }
    out + &details(list, checked)
}

/// What follows the stage lines: the compiler's errors, or the first red
/// stage's failure and what to do next, and the count of stages passing.
fn details(list: &StageList, checked: &Checked) -> String {
    let mut out = String::new();
    if let Some(errors) = &checked.build_errors {
        let _ = writeln!(
            out,
            "\nthe crate does not compile, so no stage ran; the compiler says:\n{}",
            indent(errors)
        );
    }
    let first_red = checked
        .outcomes
        .iter()
        .position(|o| matches!(o, StageOutcome::Failed { .. }));
    if let Some(i) = first_red {
        if let StageOutcome::Failed {
            test,
            message,
            mistake,
            passed,
            failed,
            ..
        } = &checked.outcomes[i]
        {
            let stage = &list.stages[i];
            let _ = writeln!(out, "\nstage {} ({}) is red: {test}", i + 1, stage.name);
            // 40 lines: a model test's failure, with the interleaving that
            // broke it, fits whole.
            let _ = writeln!(out, "{}", indent(&shorten(message, 40)));
            if let Some(mistake) = mistake {
                let _ = writeln!(
                    out,
                    "this is how a classic mistake of this stage shows: {mistake}"
                );
            }
            let _ = writeln!(out, "{}", tests_ran(passed, failed));
            let _ = writeln!(out, "its tests check: {}", stage.checks);
            let _ = writeln!(out, "hint: {}", stage.hint);
            let _ = writeln!(out, "read: {}", list.read_text(stage));
            let _ = writeln!(out, "run them alone: {}", stage.cargo_command());
        }
    } else if checked.build_errors.is_none() && checked.passing() < list.stages.len() {
        let next = checked.passing();
        let _ = writeln!(
            out,
            "\nnext: stage {} ({})",
            next + 1,
            list.stages[next].name
        );
    }
    let _ = writeln!(
        out,
        "\n{} of {} stages pass",
        checked.passing(),
        list.stages.len()
    );
    out
}

/// The tests a red stage ran, by name: every red one, and the green ones
/// too when they are few.
fn tests_ran(passed: &[String], failed: &[String]) -> String {
    let red = format!("red ({}): {}", failed.len(), failed.join(", "));
    if passed.is_empty() {
        format!("its tests: {red}")
    } else if passed.len() <= 12 {
        format!(
            "its tests: {red}; green ({}): {}",
            passed.len(),
            passed.join(", ")
        )
    } else {
        format!("its tests: {red}; and {} green", passed.len())
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn shorten(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    if all.len() <= lines {
        return text.to_string();
    }
    let more = all.len() - lines;
    format!(
        "{}\n[... {more} more line{}]",
        all[..lines].join("\n"),
        if more == 1 { "" } else { "s" }
    )
}

/// Every stage of `list`: the lesson passes it; a starter with the stages
/// before it written passes those and fails it, each test of it, within
/// the limit. Returns the problems found, and with `each_function` the
/// check of each blanked function alone (see each.rs).
///
/// Two real starters are written and built, alone in a fresh directory
/// outside the checkout: the fresh one (stage 1 on its blank; it must
/// compile) and the one with every stage written (every stage green).
/// Stages 2 and later are checked on the lesson's switched copy (each.rs),
/// built once: with `STARTER_BLANK="stages K.."` it behaves as the starter
/// with stages 1 to K-1 written, without a build per stage. The same build
/// serves `each_function`.
fn verify(
    root: &Path,
    list: &StageList,
    limit: Duration,
    write_pages: bool,
    each_function: bool,
) -> Result<(Vec<String>, Option<starter::each::LessonReport>)> {
    let mut problems = Vec::new();
    let m = list.stages.len();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    // One target directory for every starter: their dependencies build
    // once. The starter itself is written where a learner's would be: alone
    // in a fresh directory outside the checkout (rewritten for each
    // starter), so that a manifest pointing at a path beside it cannot
    // build here.
    let starters_target = target.join("starters");
    let alone = tempfile::Builder::new()
        .prefix(&format!("starter-{}-", list.lesson))
        .tempdir()
        .context("make a temporary directory for the starters")?;
    let scratch = alone.path().join(&list.lesson);

    println!("== {} ({m} stages)", list.lesson);
    let lesson_dir = list.crate_dir(root);
    let lesson_checked = run::check(list, &lesson_dir, m, limit, true, None, &mut run::Quiet)?;
    for (i, o) in lesson_checked.outcomes.iter().enumerate() {
        if !matches!(o, StageOutcome::Passed { .. }) {
            problems.push(format!(
                "{}: the lesson fails its own stage {} ({}): {}",
                list.lesson,
                i + 1,
                list.stages[i].name,
                describe(o)
            ));
        }
    }
    println!(
        "   the lesson: {} of {m} stages pass",
        lesson_checked.passing()
    );

    // Stage 1, on a real fresh starter: it compiles, and the page shows
    // `check` on it as it stops at its first red stage.
    write_starter(root, list, &scratch, 0)?;
    // Every test target of the fresh starter compiles: its structs left to
    // design (a placeholder where their fields were) must still satisfy
    // every bound the tests put on them. `check` stops at the first red
    // stage and builds no further, so this is the only place it shows.
    run::forget_own_build(&starters_target, &scratch)?;
    let built =
        std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["test", "--no-run", "--quiet"])
            .current_dir(&scratch)
            .env("CARGO_TARGET_DIR", &starters_target)
            .output()
            .context("run cargo test --no-run in the fresh starter")?;
    if !built.status.success() {
        problems.push(format!(
            "{}: the fresh starter's tests do not compile:\n{}",
            list.lesson,
            String::from_utf8_lossy(&built.stderr)
        ));
    }
    let fresh = run::check(
        list,
        &scratch,
        1,
        limit,
        false,
        Some(&starters_target),
        &mut run::Quiet,
    )?;
    let (line, found) = stage_problems(list, 1, &fresh, &scratch, limit, None)?;
    problems.extend(found);
    println!("{line}");

    // All written: the starter, outside the checkout, is the lesson, and
    // passes every stage as the lesson does. Built before the switched
    // copy (starters of one lesson share their test binaries' names in the
    // target directory, so the switched copy's must be the last built
    // while they run); its line is printed after the stages'.
    std::fs::remove_dir_all(&scratch).with_context(|| format!("remove {}", scratch.display()))?;
    write_starter(root, list, &scratch, m)?;
    let whole = run::check(
        list,
        &scratch,
        m,
        limit,
        true,
        Some(&starters_target),
        &mut run::Quiet,
    )?;
    let mut whole_problems = Vec::new();
    if let Some(errors) = &whole.build_errors {
        whole_problems.push(format!(
            "{}: the starter with every stage written does not compile:\n{errors}",
            list.lesson
        ));
    }
    for (i, o) in whole.outcomes.iter().enumerate() {
        if whole.build_errors.is_none() && !matches!(o, StageOutcome::Passed { .. }) {
            whole_problems.push(format!(
                "{}: the starter with every stage written fails stage {} ({}): {}",
                list.lesson,
                i + 1,
                list.stages[i].name,
                describe(o)
            ));
        }
    }

    // Stages 2 to M on the switched copy.
    let switched = starter::each::Switched::prepare(
        root,
        list,
        &starter::each::scratch_dir(&starters_target, list),
    )?;
    match switched.build(list, &starters_target)? {
        Err(errors) => {
            for k in 2..=m {
                problems.push(format!(
                    "{}: the lesson's switched copy (the starter through stage {}) does not compile:\n{errors}",
                    list.lesson,
                    k - 1
                ));
                println!(
                    "   stage {k} ({}): does not compile",
                    list.stages[k - 1].name
                );
            }
        }
        Ok(exes) => {
            for k in 2..=m {
                let blank = starter::each::from_stage(k);
                let checked = run::run_stages(list, &exes, &switched.dir, k, limit, Some(&blank))?;
                let (line, found) =
                    stage_problems(list, k, &checked, &switched.dir, limit, Some(&blank))?;
                problems.extend(found);
                println!("{line}");
            }
        }
    }
    problems.extend(whole_problems);
    println!(
        "   every stage written: {} of {m} stages pass",
        whole.passing()
    );
    // The messages name the checkout (their commands run from anywhere):
    // the page shows where a learner's checkout might be, so that it is the
    // same wherever the course is checked out.
    let portable =
        |text: String| text.replace(&list.root.display().to_string(), "~/crawler-course");
    let page = starter_page(
        list,
        &portable(transcript(list, &fresh)),
        &portable(transcript(list, &lesson_checked)),
    );
    let path = page_path(root, list);
    if write_pages && lesson_checked.passing() < m {
        // The page shows `check` on the lesson: a red stage there is a
        // failed run (a flaky test, a busy machine), not what a learner sees.
        problems.push(format!(
            "{} not written: the lesson passed {} of its {m} stages in this run",
            path.display(),
            lesson_checked.passing()
        ));
    } else if write_pages {
        std::fs::create_dir_all(path.parent().context("a page's folder")?)?;
        std::fs::write(&path, &page).with_context(|| format!("write {}", path.display()))?;
        println!("   wrote {}", path.display());
    } else if std::fs::read_to_string(&path).ok().as_deref() != Some(page.as_str()) {
        problems.push(format!(
            "{} is stale: run `cargo run -p starter -- verify {} --write-pages`",
            path.display(),
            list.lesson
        ));
    }
    let report = if each_function {
        Some(starter::each::verify_switched(
            list,
            &switched,
            &starters_target,
            limit,
            starter::each::jobs(),
        )?)
    } else {
        None
    };
    Ok((problems, report))
}

/// Stage `k` checked on its blank (`checked`: stages `1..=k` run in `dir`,
/// with the stages before `k` written; `blank` as [`run::run_selection`]
/// takes it): those green, it red, each test of it, and its skip list.
/// Returns the line to print and the problems found.
fn stage_problems(
    list: &StageList,
    k: usize,
    checked: &Checked,
    dir: &Path,
    limit: Duration,
    blank: Option<&str>,
) -> Result<(String, Vec<String>)> {
    let mut problems = Vec::new();
    let stage = &list.stages[k - 1];
    let mut line = format!("   stage {k} ({}): ", stage.name);
    if let Some(errors) = &checked.build_errors {
        problems.push(format!(
            "{}: the starter through stage {} does not compile:\n{errors}",
            list.lesson,
            k - 1
        ));
        line.push_str("does not compile");
        return Ok((line, problems));
    }
    for (i, o) in checked.outcomes[..k - 1].iter().enumerate() {
        if !matches!(o, StageOutcome::Passed { .. }) {
            problems.push(format!(
                "{}: with stages 1..{} written, stage {} ({}) is not green: {}",
                list.lesson,
                k - 1,
                i + 1,
                list.stages[i].name,
                describe(o)
            ));
        }
    }
    match &checked.outcomes[k - 1] {
        StageOutcome::Failed {
            passed,
            failed,
            timed_out,
            ..
        } => {
            let _ = write!(line, "{} tests red on the blank", failed.len());
            if !passed.is_empty() {
                problems.push(format!(
                    "{}: stage {k} ({}): these tests pass on the blank, so they do not test it: {}",
                    list.lesson,
                    stage.name,
                    passed.join(", ")
                ));
            }
            if *timed_out {
                problems.push(format!(
                    "{}: stage {k} ({}): a test hung on the blank (stopped after {} s) instead of failing",
                    list.lesson,
                    stage.name,
                    limit.as_secs()
                ));
            }
        }
        other => problems.push(format!(
            "{}: stage {k} ({}) is not red on its blank: {}",
            list.lesson,
            stage.name,
            describe(other)
        )),
    }
    problems.extend(skip_problems(list, k, dir, checked, limit, blank)?);
    Ok((line, problems))
}

/// Stage `k`'s skip list, checked on its blank (the starter in `scratch`,
/// stages before `k` written): a skipped test must pass there, since one
/// that fails on the blank tells the stage's code apart, and so tests it.
fn skip_problems(
    list: &StageList,
    k: usize,
    scratch: &Path,
    checked: &Checked,
    limit: Duration,
    blank: Option<&str>,
) -> Result<Vec<String>> {
    let stage = &list.stages[k - 1];
    let mut problems = Vec::new();
    for entry in &stage.skip {
        let (target, name, _) = stages::parse_skip(entry)?;
        let Some(exe) = checked.exes.get(target) else {
            problems.push(format!(
                "{}: stage {k} ({}): skip {entry:?}: no test binary {target} was built",
                list.lesson, stage.name
            ));
            continue;
        };
        let alone = stages::TestSelection {
            target: target.to_string(),
            prefix: Some(name.to_string()),
            except: Vec::new(),
        };
        let ran = run::run_selection(exe, scratch, &alone, limit, blank)?;
        let passed = ran.passed.iter().any(|n| n == name);
        let failed = ran.failed.iter().find(|(n, _)| n == name);
        if let Some((_, message)) = failed {
            problems.push(format!(
                "{}: stage {k} ({}): the skipped test {target} {name} fails on the stage's blank, so it tests the stage: take it out of `skip`\n{}",
                list.lesson,
                stage.name,
                indent(&shorten(message, 8))
            ));
        } else if ran.timed_out {
            problems.push(format!(
                "{}: stage {k} ({}): the skipped test {target} {name} hangs on the stage's blank (stopped after {} s), so it tests the stage: take it out of `skip`",
                list.lesson,
                stage.name,
                limit.as_secs()
            ));
        } else if !passed {
            problems.push(format!(
                "{}: stage {k} ({}): the skipped test {target} {name} did not run on the stage's blank",
                list.lesson, stage.name
            ));
        }
    }
    Ok(problems)
}

fn describe(o: &StageOutcome) -> String {
    match o {
        StageOutcome::Passed { tests } => format!("{tests} tests pass"),
        StageOutcome::Failed { test, message, .. } => {
            format!("{test}: {}", shorten(message, 8))
        }
        StageOutcome::NotReached => "not run".into(),
    }
}

/// Where a lesson's "Build it yourself" page is generated.
fn page_path(root: &Path, list: &StageList) -> PathBuf {
    root.join("docs/src/generated/starters").join(&list.chapter)
}

/// Writes (`write`) or checks a lesson's "Break it on purpose" page against
/// a run of its mistakes; what is wrong with it, if anything. A run in which
/// a mistake was not caught writes nothing (its summary fails the run).
fn break_page(
    root: &Path,
    list: &StageList,
    results: &starter::mistakes::LessonMistakes,
    write: bool,
) -> Result<Option<String>> {
    use starter::mistakes::{break_page_path, comparable, Outcome};
    if results
        .iter()
        .any(|(_, _, outcome)| !matches!(outcome, Outcome::Caught(..)))
    {
        return Ok(None);
    }
    let (_, _, bin) = stages::find_lesson(&list.lesson).unwrap_or(LESSONS[0]);
    if let Some(page) = starter::mistakes::interleaving_page(list, bin, results)? {
        let path = starter::mistakes::interleaving_page_path(root, bin);
        if write {
            std::fs::write(&path, &page).with_context(|| format!("write {}", path.display()))?;
            println!("wrote {}", path.display());
        } else {
            // The interleaving `loom` finds first is the same on every
            // run: the page must match word for word, numbers aside (line
            // numbers move when the code does).
            let old = std::fs::read_to_string(&path).unwrap_or_default();
            let words = |text: &str| text.replace(|c: char| c.is_ascii_digit(), "");
            if words(&old) != words(&page) {
                return Ok(Some(format!(
                    "{}: {} does not match this run of its mistake: run `cargo run -p starter \
                     -- verify {bin} --mistakes --write-pages`",
                    list.lesson,
                    path.display()
                )));
            }
        }
    }
    let page = starter::mistakes::break_page(list, bin, results);
    let path = break_page_path(root, bin);
    if write {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, &page).with_context(|| format!("write {}", path.display()))?;
        println!("wrote {}", path.display());
        return Ok(None);
    }
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    Ok((comparable(&old) != comparable(&page)).then(|| {
        format!(
            "{}: {} does not match this run of the mistakes (its mistakes, their changes and \
             the test each shows first, numbers aside): run `cargo run -p starter -- verify \
             {bin} --mistakes --write-pages`",
            list.lesson,
            path.display()
        )
    }))
}

/// The generated page: the commands, each stage with what its tests check
/// and its hint, and the two transcripts.
fn starter_page(list: &StageList, fresh: &str, lesson: &str) -> String {
    let (_, _, bin) = stages::find_lesson(&list.lesson).unwrap_or(LESSONS[0]);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!-- Generated by `cargo run -p starter -- verify {} --write-pages`\n     from docs/starters/{bin}.toml and real runs of `starter check`. Do not edit. -->\n",
        list.lesson
    );
    let _ = writeln!(
        out,
        "```sh\n# in the course's checkout: write your starter; see which stages pass and\n# what to do next; show the lesson's code for stage 1 beside yours\ncargo run -p starter -- new {bin} ~/my-{bin}\ncargo run -p starter -- check ~/my-{bin}\ncargo run -p starter -- solution ~/my-{bin} 1\n\n# in your starter: one stage's tests, as each stage below gives them\ncd ~/my-{bin} && cargo test --test {first}\n```\n\n`new {bin} DIR --through K` writes stages 1 to K as the lesson has them, to start further on.\n",
        first = list.stages[0].selections().first().map(|s| s.target.as_str()).unwrap_or("behaviour")
    );
    let _ = writeln!(out, "| stage | you write | read |\n|---|---|---|");
    for (i, s) in list.stages.iter().enumerate() {
        // Every section the stage needs, the one that teaches it first.
        let read: Vec<String> = s
            .sections
            .iter()
            .map(|section| format!("[{section}](#{})", stages::heading_id(section)))
            .collect();
        let _ = writeln!(
            out,
            "| {} `{}` | {} | {} |",
            i + 1,
            s.name,
            s.write,
            read.join("; "),
        );
    }
    out.push('\n');
    for (i, s) in list.stages.iter().enumerate() {
        let _ = writeln!(
            out,
            "**Stage {} — `{}`.** Its tests check: {}\n\n```sh\n{}\n```\n\n<details>\n<summary>Hint</summary>\n\n{}\n\n</details>\n",
            i + 1,
            s.name,
            s.checks,
            s.cargo_command().replace(" && ", "\n"),
            s.hint
        );
    }
    let _ = writeln!(
        out,
        "On a fresh starter, `starter check` stops at the first stage:\n\n```text\n{}```\n",
        fresh
    );
    let _ = writeln!(
        out,
        "On the lesson's own crate (`starter check {}`), every stage passes:\n\n```text\n{}```",
        list.lesson, lesson
    );
    out
}
