//! The book's building mode, from `book-check`'s side: the chapters' wrappers
//! held to what the starters blank ([`check`]), rewritten to it
//! (`--wrap`, [`wrap`]), and what a printed chapter still shows of the
//! blanked code (`--visible-share`, [`visible_share`]).
//!
//! Which listings show blanked code is [`course_tools::building`]'s, shared
//! with the browser test, so the checker, the rewriter, the measure and
//! the test cannot disagree.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use course_tools::building::{Chapter, CHROMIUM_FLAGS};
use starter::stages::{stage_file, LESSONS};

/// The lessons whose chapter and stage list exist in the checkout at `root`
/// (a test's small book may have neither).
fn lessons(root: &Path) -> Vec<usize> {
    LESSONS
        .iter()
        .enumerate()
        .filter(|(_, (_, chapter, bin))| {
            root.join("docs/src").join(chapter).is_file() && stage_file(root, bin).is_file()
        })
        .map(|(i, _)| i + 1)
        .collect()
}

/// Every problem with the chapters' `lesson-code` wrappers: file, 1-based
/// line, message.
pub fn check(root: &Path) -> Vec<(PathBuf, usize, String)> {
    let mut out = Vec::new();
    for lesson in lessons(root) {
        match Chapter::read(root, lesson) {
            Ok(chapter) => out.extend(
                chapter
                    .problems()
                    .into_iter()
                    .map(|(line, message)| (chapter.path.clone(), line, message)),
            ),
            Err(e) => out.push((
                root.join("docs/starters")
                    .join(format!("lesson{lesson}.toml")),
                0,
                format!(
                    "cannot tell which of lesson{lesson}.md's listings show blanked code: {e:#}"
                ),
            )),
        }
        out.extend(stage_boxes(root, lesson));
        out.extend(break_section(root, lesson));
        out.extend(problem_first(root, lesson));
    }
    out
}

/// The chapter reads problem first, explanation after, in building mode:
/// [`course_tools::how`]'s two rules.
fn problem_first(root: &Path, lesson: usize) -> Vec<(PathBuf, usize, String)> {
    let chapter = root.join("docs/src").join(format!("lesson{lesson}.md"));
    let (Ok(text), Ok(list)) = (
        fs::read_to_string(&chapter),
        starter::stages::StageList::load(root, &lesson.to_string()),
    ) else {
        return Vec::new();
    };
    let functions: Vec<String> = list.stages.iter().flat_map(|s| s.blank.clone()).collect();
    let stage_file = format!("docs/starters/lesson{lesson}.toml");
    course_tools::how::problems(&text, &functions, &stage_file)
        .into_iter()
        .map(|(line, message)| (chapter.clone(), line, message))
        .collect()
}

/// The fewest classic mistakes a chapter's "Break it on purpose" offers.
const MIN_BREAKS: usize = 6;

/// The chapter's "Build it yourself" ends with "Break it on purpose": its
/// heading, then the page generated from a real run of the lesson's
/// classic mistakes (`starter verify --mistakes --write-pages`), which
/// offers at least [`MIN_BREAKS`] of them, each with its answer folded.
fn break_section(root: &Path, lesson: usize) -> Vec<(PathBuf, usize, String)> {
    let mut out = Vec::new();
    let chapter = root.join("docs/src").join(format!("lesson{lesson}.md"));
    let Ok(text) = fs::read_to_string(&chapter) else {
        return out;
    };
    let include = format!("{{{{#include generated/break/lesson{lesson}.md}}}}");
    let lines: Vec<&str> = text.lines().collect();
    let heading = lines.iter().position(|l| *l == "### Break it on purpose");
    let build = lines.iter().position(|l| *l == "## Build it yourself");
    let included = lines.iter().position(|l| l.trim() == include);
    match (build, heading, included) {
        (Some(build), Some(heading), Some(included)) if build < heading && heading < included => {
            let next = lines[heading + 1..]
                .iter()
                .position(|l| l.starts_with("## ") || l.starts_with("### "))
                .map_or(lines.len(), |k| heading + 1 + k);
            if included > next {
                out.push((
                    chapter.clone(),
                    included + 1,
                    format!("`{include}` is not in the section \"Break it on purpose\""),
                ));
            }
        }
        _ => out.push((
            chapter.clone(),
            0,
            format!(
                "\"Build it yourself\" must end with a section \"### Break it on purpose\" that \
                 includes `{include}`"
            ),
        )),
    }
    let page = root
        .join("docs/src/generated/break")
        .join(format!("lesson{lesson}.md"));
    match fs::read_to_string(&page) {
        Ok(text) => {
            let offered = text.lines().filter(|l| l.starts_with("- ")).count();
            let answered = text.matches("What <code>starter check</code> says").count();
            if offered < MIN_BREAKS || answered != offered {
                out.push((
                    page,
                    0,
                    format!(
                        "{offered} mistakes offered ({answered} with the failure they show): at \
                         least {MIN_BREAKS}, each with its answer; regenerate it with `cargo run \
                         -p starter -- verify lesson{lesson} --mistakes --write-pages`"
                    ),
                ));
            }
        }
        Err(_) => out.push((
            page,
            0,
            format!(
                "missing: generate it with `cargo run -p starter -- verify lesson{lesson} \
                 --mistakes --write-pages`"
            ),
        )),
    }
    out
}

/// Every stage's box (its goals, steps and tests, from the contracts page)
/// is included by its chapter exactly once, the boxes in the stages' order:
/// a stage the chapter never shows is a stage a learner in building mode
/// never sees.
fn stage_boxes(root: &Path, lesson: usize) -> Vec<(PathBuf, usize, String)> {
    let mut out = Vec::new();
    let chapter = root.join("docs/src").join(format!("lesson{lesson}.md"));
    let (Ok(text), Ok(list)) = (
        fs::read_to_string(&chapter),
        starter::stages::StageList::load(root, &lesson.to_string()),
    ) else {
        return out;
    };
    let mut last = 0;
    for (k, stage) in list.stages.iter().enumerate() {
        let include = format!(
            "{{{{#include generated/starters/lesson{lesson}-contracts.md:stage-{}}}}}",
            stage.name
        );
        let lines: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim() == include)
            .map(|(i, _)| i + 1)
            .collect();
        match lines[..] {
            [] => out.push((
                chapter.clone(),
                0,
                format!(
                    "stage {} ({}) has no box in the chapter: add `{include}` to its section",
                    k + 1,
                    stage.name
                ),
            )),
            [line] => {
                if line < last {
                    out.push((
                        chapter.clone(),
                        line,
                        format!(
                            "stage {} ({})'s box comes before the box of the stage before it: the boxes follow the stages' order",
                            k + 1,
                            stage.name
                        ),
                    ));
                }
                last = line;
            }
            _ => out.push((
                chapter.clone(),
                lines[1],
                format!(
                    "stage {} ({})'s box is included {} times",
                    k + 1,
                    stage.name,
                    lines.len()
                ),
            )),
        }
    }
    out
}

/// Rewrites each chapter's wrappers to what the starters blank, and says
/// what changed. Other people may be editing the chapters' prose: each
/// file is read, rewritten and written back at once, and left alone if it
/// changed meanwhile.
pub fn wrap(root: &Path) -> Result<()> {
    for lesson in lessons(root) {
        let chapter = Chapter::read(root, lesson)?;
        let new = chapter.rewrap();
        let name = chapter.path.strip_prefix(root).unwrap_or(&chapter.path);
        if new == chapter.text {
            println!("{}: wrappers already right", name.display());
            continue;
        }
        let now = fs::read_to_string(&chapter.path)?;
        if now != chapter.text {
            bail!(
                "{} changed while it was being rewritten: run --wrap again",
                name.display()
            );
        }
        fs::write(&chapter.path, &new)
            .with_context(|| format!("write {}", chapter.path.display()))?;
        let count = |text: &str| {
            text.lines()
                .filter(|l| l.trim() == course_tools::building::WRAPPER_OPEN)
                .count()
        };
        println!(
            "{}: {} listing(s) wrapped (was {})",
            name.display(),
            count(&new),
            count(&chapter.text)
        );
    }
    Ok(())
}

/// The browser to print with: `$CHROMIUM`, else the first of Debian's and
/// others' names found on the `PATH`.
fn chromium() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return Ok(path.into());
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("which").arg(name).output() {
            if out.status.success() {
                return Ok(String::from_utf8_lossy(&out.stdout).trim().into());
            }
        }
    }
    bail!("no Chromium found: install it (`apt-get install -y chromium`) or set CHROMIUM=PATH")
}

/// The text of `page` (a built chapter, with `query` after it) as a
/// browser prints it: headless Chromium's `--print-to-pdf`, then
/// `pdftotext`.
fn printed_text(browser: &Path, page: &Path, query: &str, scratch: &Path) -> Result<String> {
    let pdf = scratch.join("page.pdf");
    let profile = tempfile::Builder::new()
        .prefix("book-check-chromium-")
        .tempdir()?;
    let url = format!("file://{}{query}", page.display());
    let out = Command::new(browser)
        .args(CHROMIUM_FLAGS)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        // Time for the page's scripts to run before it prints (virtual
        // time: it costs nothing when the page is idle sooner).
        .arg("--virtual-time-budget=5000")
        .arg("--no-pdf-header-footer")
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(&url)
        .output()
        .with_context(|| format!("run {}", browser.display()))?;
    if !out.status.success() || !pdf.is_file() {
        bail!(
            "{} could not print {url}: {}",
            browser.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = Command::new("pdftotext")
        .args(["-enc", "UTF-8"])
        .arg(&pdf)
        .arg("-")
        .output()
        .context("run pdftotext (apt-get install -y poppler-utils)")?;
    if !text.status.success() {
        bail!(
            "pdftotext {}: {}",
            pdf.display(),
            String::from_utf8_lossy(&text.stderr)
        );
    }
    fs::remove_file(&pdf)?;
    Ok(String::from_utf8_lossy(&text.stdout).into_owned())
}

/// `text` without any whitespace: a printed line may wrap, and `pdftotext`
/// spaces code its own way.
fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Which of `lines` appear in `printed`.
fn printed_lines<'a>(lines: &'a BTreeSet<String>, printed: &str) -> Vec<&'a str> {
    let printed = squeezed(printed);
    lines
        .iter()
        .filter(|line| printed.contains(&squeezed(line)))
        .map(String::as_str)
        .collect()
}

/// How many of `lines` appear in `printed`.
fn visible(lines: &BTreeSet<String>, printed: &str) -> usize {
    printed_lines(lines, printed).len()
}

/// The highest share of blanked lines building mode may leave visible, and
/// the lowest reading mode must show, in percent.
pub const BUILDING_AT_MOST: f64 = 10.0;
pub const READING_AT_LEAST: f64 = 60.0;

/// Prints, per lesson, the share of the blanked code lines its chapter's
/// listings show that a browser's print of the built chapter contains, in
/// reading mode and with `?mode=build`; fails if a share misses its bound.
/// The last two columns count every non-trivial line of the blanked
/// bodies, whether a listing shows it or not, for comparison.
pub fn visible_share(root: &Path, show_lines: bool) -> Result<bool> {
    let book = root.join("docs/book");
    if !book.join("index.html").is_file() {
        bail!(
            "{} has no built book: run `mdbook build docs` first",
            book.display()
        );
    }
    let browser = chromium()?;
    let scratch = tempfile::Builder::new()
        .prefix("book-check-print-")
        .tempdir()?;
    println!("blanked code lines visible in each chapter as a browser prints it");
    println!("(building mode at most {BUILDING_AT_MOST} %, reading mode at least {READING_AT_LEAST} %)\n");
    println!(
        "| lesson | blanked lines shown by listings | reading mode | building mode (`?mode=build`) \
         | all blanked lines: reading | building |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let mut sound = true;
    for lesson in lessons(root) {
        let chapter = Chapter::read(root, lesson)?;
        let lines = chapter.shown_blanked_lines();
        // Every blanked body line, listed or not: the measure.
        let all: BTreeSet<String> = chapter
            .blanked
            .lines
            .values()
            .flat_map(|by_line| by_line.values().map(|l| l.text.clone()))
            .collect();
        let page = book
            .canonicalize()?
            .join(LESSONS[lesson - 1].1.replace(".md", ".html"));
        let reading_text = printed_text(&browser, &page, "", scratch.path())?;
        let building_text = printed_text(&browser, &page, "?mode=build", scratch.path())?;
        let percent = |n: usize, of: usize| 100.0 * n as f64 / of.max(1) as f64;
        let (reading, building) = (
            visible(&lines, &reading_text),
            visible(&lines, &building_text),
        );
        let (r, b) = (
            percent(reading, lines.len()),
            percent(building, lines.len()),
        );
        let (all_r, all_b) = (
            percent(visible(&all, &reading_text), all.len()),
            percent(visible(&all, &building_text), all.len()),
        );
        let mark = |ok: bool| if ok { "" } else { " ✗" };
        println!(
            "| {lesson} | {} | {reading} ({r:.0} %){} | {building} ({b:.0} %){} \
             | {all_r:.0} % of {} | {all_b:.0} % |",
            lines.len(),
            mark(r >= READING_AT_LEAST),
            mark(b <= BUILDING_AT_MOST),
            all.len(),
        );
        sound &= r >= READING_AT_LEAST && b <= BUILDING_AT_MOST;
        if show_lines {
            // Mostly short lines that prose or an unfolded listing also
            // has; a long one here is a listing that escaped its fold.
            for line in printed_lines(&lines, &building_text) {
                println!("|   | still printed in building mode: `{line}` | | | | |");
            }
        }
    }
    Ok(sound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_counts_as_printed_however_the_print_wraps_or_spaces_it() {
        let lines: BTreeSet<String> = [
            "let mut state = self.lock();",
            "state.items.push_back(item);",
            "self.not_empty.notify_one();",
        ]
        .map(String::from)
        .into();
        let printed = "let mut state =\nself.lock();\nstate . items.push_back(item);\nother";
        assert_eq!(visible(&lines, printed), 2, "the third line is not printed");
    }
}
