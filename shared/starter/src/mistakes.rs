//! `starter verify --mistakes`: each classic mistake a stage lists is caught
//! by that stage's tests, with a message that names it.
//!
//! A stage list names, per stage, the mistakes learners commonly make there
//! (`[[stage.mistake]]`: a small change to one place of the lesson, and the
//! words its failure must show). A test that fails on a mistake with
//! `left: 2002, right: 2000` catches it but teaches nothing; one that says
//! "a URL was new to two threads: 'is it new?' and 'mark it seen' must be
//! one step under one lock" teaches the lesson. This check makes each
//! mistake in turn on a copy of the lesson with every stage written, builds
//! the stage's tests, runs them, and requires that they fail and that what
//! they print contains the mistake's words.
//!
//! The copy is written once per lesson, in the starters' target directory
//! (so the lesson's dependencies build once), and each mistake changes one
//! file and puts it back afterwards: a build per mistake is the lesson
//! crate and the stage's test targets, nothing more.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::run;
use crate::stages::{Mistake, Stage, StageList};

/// How one mistake fared.
#[derive(Debug)]
pub enum Outcome {
    /// Its stage's tests failed, and the failure `starter check` shows
    /// first holds its words: that test's name, and its message.
    Caught(String, String),
    /// Its stage's tests passed with the mistake made.
    Missed,
    /// The tests failed, but without the words: the failure does not name
    /// the mistake. What they printed, shortened.
    Unnamed(String),
    /// The words are there, but not in the failure `starter check` shows
    /// first (see [`run::clearest_first`]): that test, and its message's
    /// first line.
    Buried(String, String),
    /// The mistake could not be made (its text is not in the file once) or
    /// the copy did not compile with it.
    Broken(String),
    /// Caught, but a model test did not fail with its words on every run:
    /// which run, and what it printed, shortened.
    NotEveryRun(usize, String),
}

/// How many times a stage's model tests run with each mistake made: every
/// run must fail with the mistake's words.
pub const MODEL_RUNS: usize = 3;

/// One lesson's mistakes and how each fared: (stage number, mistake,
/// outcome).
pub type LessonMistakes = Vec<(usize, Mistake, Outcome)>;

/// Where a lesson's copy for the mistakes is written.
pub fn scratch_dir(target_dir: &Path, list: &StageList) -> PathBuf {
    target_dir.join("mistakes").join(&list.lesson)
}

/// Makes each mistake of `list` on a copy of the lesson (every stage
/// written) and runs its stage's tests, each test binary for at most
/// `limit`. Prints a line per mistake as it goes. With `only`, just the
/// mistakes whose name contains that text.
pub fn verify_lesson(
    root: &Path,
    list: &StageList,
    target_dir: &Path,
    limit: Duration,
    only: Option<&str>,
) -> Result<LessonMistakes> {
    let mut results = Vec::new();
    let chosen = |mistake: &Mistake| only.is_none_or(|text| mistake.name.contains(text));
    if !list.stages.iter().any(|s| s.mistakes.iter().any(chosen)) {
        return Ok(results);
    }
    let dir = scratch_dir(target_dir, list);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clear {}", dir.display()))?;
    }
    crate::write_starter(root, list, &dir, list.stages.len())?;
    for (i, stage) in list.stages.iter().enumerate() {
        for mistake in stage.mistakes.iter().filter(|m| chosen(m)) {
            let started = std::time::Instant::now();
            let (outcome, model) = make_and_test(
                &dir,
                stage,
                mistake,
                list.model.as_deref(),
                target_dir,
                limit,
            )?;
            // The time each took, for whoever keeps CI short: a mistake
            // that runs into a test's bound costs that bound.
            println!(
                "   {} [{} s]",
                describe(i + 1, stage, mistake, &outcome),
                started.elapsed().as_secs()
            );
            if let Some(model) = model.filter(|_| matches!(outcome, Outcome::Caught(..))) {
                println!("     and {model}");
            }
            results.push((i + 1, mistake.clone(), outcome));
        }
    }
    Ok(results)
}

/// Makes `mistake` in the copy at `dir`, runs `stage`'s tests, and puts the
/// file back.
fn make_and_test(
    dir: &Path,
    stage: &Stage,
    mistake: &Mistake,
    model: Option<&str>,
    target_dir: &Path,
    limit: Duration,
) -> Result<(Outcome, Option<String>)> {
    let file = dir.join("src").join(&mistake.file);
    let original =
        std::fs::read_to_string(&file).with_context(|| format!("read {}", file.display()))?;
    let found = original.matches(mistake.find.as_str()).count();
    if found != 1 {
        return Ok((
            Outcome::Broken(format!(
                "its `find` text occurs {found} times in src/{}, not once",
                mistake.file
            )),
            None,
        ));
    }
    std::fs::write(&file, original.replacen(&mistake.find, &mistake.replace, 1))
        .with_context(|| format!("write {}", file.display()))?;
    let outcome =
        test_stage(dir, stage, mistake, target_dir, limit).and_then(|outcome| {
            match model.filter(|_| matches!(outcome, Outcome::Caught(..))) {
                Some(model) => model_runs(dir, stage, mistake, model, target_dir, limit, outcome),
                None => Ok((outcome, None)),
            }
        });
    std::fs::write(&file, &original).with_context(|| format!("restore {}", file.display()))?;
    outcome
}

/// With `mistake` made and caught: runs the stage's selection of the model
/// tests (target `model`) [`MODEL_RUNS`] times. Each run must fail, with
/// the mistake's words in a failing test's message; a model test explores
/// every interleaving, so one that fails only sometimes is a finding. What
/// to print beside the outcome: which model test failed, in how many runs.
fn model_runs(
    dir: &Path,
    stage: &Stage,
    mistake: &Mistake,
    model: &str,
    target_dir: &Path,
    limit: Duration,
    caught: Outcome,
) -> Result<(Outcome, Option<String>)> {
    let selections: Vec<_> = stage
        .selections()
        .into_iter()
        .filter(|s| s.target == model)
        .collect();
    if selections.is_empty() {
        return Ok((caught, None));
    }
    let exes = match run::build_tests(dir, &[model.to_string()], Some(target_dir))? {
        Ok(exes) => exes,
        Err(errors) => {
            return Ok((
                Outcome::Broken(format!("it does not compile:\n{errors}")),
                None,
            ))
        }
    };
    let exe = exes
        .get(model)
        .with_context(|| format!("no test binary for {model}"))?;
    let mut failing = Vec::new();
    for run in 1..=MODEL_RUNS {
        let mut named = None;
        let mut printed = String::new();
        for selection in &selections {
            let ran = run::run_selection(exe, dir, selection, limit, None)?;
            printed.push_str(&ran.output);
            named = named.or_else(|| {
                ran.failed
                    .iter()
                    .find(|(_, message)| message.contains(mistake.shows.as_str()))
                    .map(|(name, _)| format!("{model}::{name}"))
            });
        }
        match named {
            Some(test) => failing.push(test),
            None => {
                return Ok((
                    Outcome::NotEveryRun(run, printed.chars().take(1500).collect()),
                    None,
                ))
            }
        }
    }
    failing.dedup();
    Ok((
        caught,
        Some(format!(
            "a model test fails with its words in {MODEL_RUNS} of {MODEL_RUNS} runs: {}",
            failing.join(", ")
        )),
    ))
}

/// Builds and runs `stage`'s tests in `dir`, as the mistake left it.
fn test_stage(
    dir: &Path,
    stage: &Stage,
    mistake: &Mistake,
    target_dir: &Path,
    limit: Duration,
) -> Result<Outcome> {
    let mut targets: Vec<String> = Vec::new();
    for selection in stage.selections() {
        if !targets.contains(&selection.target) {
            targets.push(selection.target);
        }
    }
    let exes: BTreeMap<String, PathBuf> = match run::build_tests(dir, &targets, Some(target_dir))? {
        Ok(exes) => exes,
        Err(errors) => return Ok(Outcome::Broken(format!("it does not compile:\n{errors}"))),
    };
    let mut failed = false;
    let mut printed = String::new();
    // Each failure as `check` would show it, to find the one it shows first.
    let mut failures: Vec<(String, String)> = Vec::new();
    for selection in stage.selections() {
        let Some(exe) = exes.get(&selection.target) else {
            bail!("no test binary for {}", selection.target);
        };
        let ran = run::run_selection(exe, dir, &selection, limit, None)?;
        failed |= !ran.failed.is_empty() || ran.timed_out;
        for (name, message) in &ran.failed {
            printed.push_str(message);
            printed.push('\n');
            failures.push((format!("{}::{name}", selection.target), message.clone()));
        }
        if ran.timed_out {
            failures.push((
                format!("{}::(still running)", selection.target),
                ran.output.clone(),
            ));
        }
        printed.push_str(&ran.output);
    }
    run::clearest_first(stage, &mut failures);
    Ok(if !failed {
        Outcome::Missed
    } else if !printed.contains(mistake.shows.as_str()) {
        Outcome::Unnamed(printed.chars().take(1500).collect())
    } else {
        match failures.first() {
            Some((test, message)) if message.contains(mistake.shows.as_str()) => {
                Outcome::Caught(test.clone(), message.clone())
            }
            Some((test, message)) => Outcome::Buried(
                test.clone(),
                message.lines().next().unwrap_or_default().to_string(),
            ),
            // Failed with no failing test (a crash, or a time bound with
            // the words in its output): nothing is shown before them.
            None => Outcome::Caught("(the test binary)".into(), printed.clone()),
        }
    })
}

/// One line (or a few) for a mistake's outcome.
pub fn describe(
    stage_number: usize,
    stage: &Stage,
    mistake: &Mistake,
    outcome: &Outcome,
) -> String {
    let what = format!(
        "stage {stage_number} ({}): {:?} in src/{}",
        stage.name, mistake.name, mistake.file
    );
    match outcome {
        Outcome::Caught(..) => format!("caught, with its message: {what}"),
        Outcome::Missed => format!("MISSED: {what}: the stage's tests pass with it"),
        Outcome::Unnamed(printed) => format!(
            "UNNAMED: {what}: the tests fail, but their output does not contain {:?}; it was:\n{printed}",
            mistake.shows
        ),
        Outcome::Buried(test, first) => format!(
            "BURIED: {what}: its words {:?} are in the output, but `starter check` shows {test} first: {first}",
            mistake.shows
        ),
        Outcome::Broken(why) => format!("BROKEN: {what}: {why}"),
        Outcome::NotEveryRun(run, printed) => format!(
            "NOT EVERY RUN: {what}: on run {run} of {MODEL_RUNS}, no model test failed with {:?}; it printed:\n{printed}",
            mistake.shows
        ),
    }
}

/// Prints `N of M mistakes caught, each with its message` over every lesson;
/// whether all were.
pub fn summarize(results: &[LessonMistakes]) -> bool {
    let all: Vec<&(usize, Mistake, Outcome)> = results.iter().flatten().collect();
    let caught = all
        .iter()
        .filter(|(_, _, outcome)| matches!(outcome, Outcome::Caught(..)))
        .count();
    println!(
        "{caught} of {} mistakes caught, each with its message in the failure `starter check` shows first",
        all.len()
    );
    caught == all.len()
}

/// Where a lesson's "Break it on purpose" page is written: beside its
/// starter page, generated from a run of its mistakes.
pub fn break_page_path(root: &Path, bin: &str) -> PathBuf {
    root.join("docs/src/generated/break")
        .join(format!("{bin}.md"))
}

/// The most lines of a failure the page shows.
const SHOWN_LINES: usize = 14;

/// The chapter's "Break it on purpose" page from a run of every mistake of
/// `list` (`results`, every one caught): per stage, each mistake as an
/// exercise (make it, predict, check), with the change as the lesson's code
/// would take it and the failure `starter check` shows first, folded.
pub fn break_page(list: &StageList, bin: &str, results: &LessonMistakes) -> String {
    use std::fmt::Write as _;
    // Panic messages name files of `shared` by their path in the checkout:
    // the page shows where a learner's checkout might be, so that it is the
    // same wherever the course is checked out (as the starter pages do).
    let checkout = list.root.display().to_string();
    let portable = |text: &str| text.replace(&checkout, "~/crawler-course");
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!-- Generated by `cargo run -p starter -- verify {bin} --mistakes --write-pages`\n     \
         from docs/starters/{bin}.toml and a real run of each mistake. Do not edit. -->\n"
    );
    let _ = writeln!(
        out,
        "Once a stage is green in your starter, break it on purpose. Each change below is \
         one learners make; make it in your own code (the lesson's version of the change is \
         folded beside it, for when yours looks different), then, before you run anything, \
         write down which test you expect to fail and what you expect it to say. Then run \
         `starter check`, compare, and undo the change. `starter break DIR` lists the \
         mistakes of your last green stage; `starter check` says when a failure is one of \
         them.\n"
    );
    for (i, stage) in list.stages.iter().enumerate() {
        let here: Vec<&(usize, Mistake, Outcome)> =
            results.iter().filter(|(k, _, _)| *k == i + 1).collect();
        if here.is_empty() {
            continue;
        }
        let _ = writeln!(out, "**Stage {} — `{}`**\n", i + 1, stage.name);
        for (_, mistake, outcome) in here {
            let Outcome::Caught(test, message) = outcome else {
                continue;
            };
            let _ = writeln!(out, "- {}.\n", mistake.name);
            let _ = writeln!(
                out,
                "  <details>\n  <summary>The change, in the lesson's <code>src/{}</code></summary>\n\n{}\n  </details>\n",
                mistake.file,
                indent_block(&change_diff(mistake))
            );
            let shown = portable(&shown_failure(i + 1, stage, test, message));
            let _ = writeln!(
                out,
                "  <details>\n  <summary>What <code>starter check</code> says</summary>\n\n{}\n  </details>\n",
                indent_block(&format!("```text\n{shown}\n```"))
            );
        }
    }
    out
}

/// Where the chapter's whole model-test failure is written (see
/// [`interleaving_page`]).
pub fn interleaving_page_path(root: &Path, bin: &str) -> PathBuf {
    root.join("docs/src/generated/break")
        .join(format!("{bin}-interleaving.md"))
}

/// The page the chapter's "Every interleaving" includes: the mistake
/// `list.model_example` names, as a diff, and the failure `starter check`
/// shows for it, whole (the break page shortens it). `None` when the list
/// names none; an error when that mistake was not caught by a model test.
pub fn interleaving_page(
    list: &StageList,
    bin: &str,
    results: &LessonMistakes,
) -> Result<Option<String>> {
    let Some(name) = &list.model_example else {
        return Ok(None);
    };
    let Some((number, mistake, outcome)) = results.iter().find(|(_, m, _)| &m.name == name) else {
        bail!("model_example {name:?}: no mistake of that name was run");
    };
    let Outcome::Caught(test, message) = outcome else {
        bail!("model_example {name:?}: it was not caught");
    };
    let model = list.model.as_deref().unwrap_or("model");
    if !test.starts_with(&format!("{model}::")) {
        bail!("model_example {name:?}: `starter check` shows {test} first, not a model test");
    }
    let stage = &list.stages[number - 1];
    let checkout = list.root.display().to_string();
    let lines: Vec<String> = message.lines().map(|l| format!("    {l}")).collect();
    let shown = format!(
        "stage {number} ({}) is red: {test}\n{}",
        stage.name,
        lines.join("\n")
    )
    .replace(&checkout, "~/crawler-course");
    Ok(Some(format!(
        "<!-- Generated by `cargo run -p starter -- verify {bin} --mistakes --write-pages`\n     \
         from docs/starters/{bin}.toml and a real run of the mistake below. Do not edit. -->\n\n\
         The mistake: {}.\n\n<details>\n<summary>The change, in the lesson's <code>src/{}</code></summary>\n\n\
         {}\n\n</details>\n\nWhat `starter check` says:\n\n```text\n{shown}\n```\n",
        mistake.name,
        mistake.file,
        change_diff(mistake)
    )))
}

/// The change as a small diff: lines both have kept (` `), the lesson's
/// lines the mistake drops (`-`), and its own (`+`), in order.
pub fn change_diff(mistake: &Mistake) -> String {
    let old: Vec<&str> = mistake.find.trim_matches('\n').lines().collect();
    let new: Vec<&str> = mistake.replace.trim_matches('\n').lines().collect();
    // The longest common subsequence of lines, by the usual table: a
    // mistake's text is a few lines, so its square is small.
    let mut common = vec![vec![0usize; new.len() + 1]; old.len() + 1];
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            common[i][j] = if old[i] == new[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let mut out = String::from("```diff\n");
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        if i < old.len() && j < new.len() && old[i] == new[j] {
            out.push_str(&format!(" {}\n", old[i]));
            i += 1;
            j += 1;
        } else if i < old.len() && (j == new.len() || common[i + 1][j] >= common[i][j + 1]) {
            // On a tie the old line goes first: a diff reads "-" before "+".
            out.push_str(&format!("-{}\n", old[i]));
            i += 1;
        } else {
            out.push_str(&format!("+{}\n", new[j]));
            j += 1;
        }
    }
    out.push_str("```");
    out
}

/// The failure as `starter check` shows it: the red stage, the test, and the
/// first lines of its message.
fn shown_failure(number: usize, stage: &Stage, test: &str, message: &str) -> String {
    let lines: Vec<&str> = message.lines().collect();
    let mut body: Vec<String> = lines
        .iter()
        .take(SHOWN_LINES)
        .map(|l| format!("    {l}"))
        .collect();
    if lines.len() > SHOWN_LINES {
        let more = lines.len() - SHOWN_LINES;
        body.push(format!(
            "    [... {more} more line{}]",
            if more == 1 { "" } else { "s" }
        ));
    }
    format!(
        "stage {number} ({}) is red: {test}\n{}",
        stage.name,
        body.join("\n")
    )
}

/// `text` indented two spaces, as the body of a list item.
fn indent_block(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("  {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A page as it is compared with a new run: the mistakes, their changes
/// and the test `starter check` shows first for each, word for word; of
/// that test's message, nothing (a message can carry what changes from run
/// to run: a property test's seed and case, ports, times). That the message
/// holds the mistake's words is what the run itself proves. Numbers are left
/// out everywhere (line numbers, counts).
pub fn comparable(page: &str) -> String {
    let mut kept = String::with_capacity(page.len());
    let mut in_text = false;
    let mut first = false;
    for line in page.lines() {
        let fence = line.trim_start();
        if in_text {
            if fence.starts_with("```") {
                in_text = false;
            } else if first {
                first = false;
            } else {
                continue;
            }
        } else if fence.starts_with("```text") {
            in_text = true;
            first = true;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    let mut out = String::with_capacity(kept.len());
    let mut in_number = false;
    for c in kept.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod diff_tests {
    use super::*;

    #[test]
    fn pages_compare_on_the_test_shown_not_on_its_message() {
        let page = |case: &str, test: &str| {
            format!(
                "- a mistake.\n\n  ```text\n  stage 7 (crawler) is red: {test}\n      {case}\n  ```\n"
            )
        };
        assert_eq!(
            comparable(&page("seed 1, hosts 2", "behaviour::fault_paths")),
            comparable(&page(
                "seed 9, budget 3, other lines",
                "behaviour::fault_paths"
            )),
            "the message may change from run to run"
        );
        assert_ne!(
            comparable(&page("seed 1", "behaviour::fault_paths")),
            comparable(&page("seed 1", "crawl::a_chain")),
            "the test shown may not"
        );
    }

    #[test]
    fn a_change_shows_kept_lines_once_and_a_moved_line_as_dropped_and_added() {
        let mistake = Mistake {
            name: "n".into(),
            file: "f.rs".into(),
            find: "\n    a();\n    b();\n    c();".into(),
            replace: "\n    b();\n    c();\n    a();".into(),
            shows: String::new(),
        };
        assert_eq!(
            change_diff(&mistake),
            "```diff\n-    a();\n     b();\n     c();\n+    a();\n```"
        );
        // A line changed in place reads old first, then new.
        let changed = Mistake {
            find: "\n    if a && b {\n        go();".into(),
            replace: "\n    if a {\n        go();".into(),
            ..mistake
        };
        assert_eq!(
            change_diff(&changed),
            "```diff\n-    if a && b {\n+    if a {\n         go();\n```"
        );
    }
}
