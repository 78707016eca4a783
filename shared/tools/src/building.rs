//! The book's building mode: which listings show code a starter blanks.
//!
//! A learner building a lesson from its starter writes the bodies of the
//! functions its stages blank (`docs/starters/lessonN.toml`). A chapter
//! listing that shows any line of such a body would hand them the answer,
//! so the chapter wraps it in `<div class="lesson-code">`, and the book's
//! building mode (`docs/theme/building.js`) folds it behind a control. This
//! module computes which listings those are — from the stage lists and the
//! code, never from a list kept by hand, since stages move — so that
//! `book-check` can hold the chapters to it, rewrite the wrappers
//! (`book-check --wrap`), measure what a printed chapter still shows
//! (`book-check --visible-share`), and the browser test can compare what it
//! sees with what should be folded.
//!
//! A listing is a fenced code block of the chapter's own Markdown; its
//! lines are what mdBook includes (`{{#include file:anchor}}`, line ranges,
//! anchor lines removed), traced back to the file and line each comes from.
//! A function's body is what lies between its braces, as the starter's own
//! finder ([`starter::blank::find`]) locates it; a body line counts when it
//! holds a letter or a digit (a lone `}` or `});` gives nothing away).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};

use starter::blank::{self, FnPath};
use starter::stages::{StageList, LESSONS};

use crate::includes::{self, Part};

/// The line that opens a wrapper, alone on its line.
pub const WRAPPER_OPEN: &str = r#"<div class="lesson-code">"#;
/// The line that closes it.
pub const WRAPPER_CLOSE: &str = "</div>";

/// One line of a blanked function's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyLine {
    /// The function, as the stage list names it (`queue.rs: Queue::put`).
    pub function: String,
    /// The line's text inside the body, trimmed (for a one-line body, only
    /// the part between the braces).
    pub text: String,
}

/// Every non-trivial body line of the functions one lesson's stages blank.
#[derive(Debug, Default)]
pub struct Blanked {
    /// The stage list they come from, relative to the checkout.
    pub stage_file: String,
    /// By source file (absolute, normalized), by 0-based line.
    pub lines: BTreeMap<PathBuf, BTreeMap<usize, BodyLine>>,
}

impl Blanked {
    /// The blanked lines of `lesson` (`1` … `4`), read from its stage list
    /// and its crate in the checkout at `root`.
    pub fn of(root: &Path, lesson: &str) -> Result<Blanked> {
        let root = normalize(root);
        let list = StageList::load(&root, lesson)?;
        let (_, _, bin) = starter::stages::find_lesson(lesson)?;
        let specs: Vec<&str> = list
            .stages
            .iter()
            .flat_map(|s| s.blank.iter().map(String::as_str))
            .collect();
        let src = list.crate_dir(&root).join("src");
        let stage_file = format!("docs/starters/{bin}.toml");
        let mut blanked = Blanked::from_specs(&src, &stage_file, &specs)?;
        // The fields of the structs a learner designs give the design away
        // as surely as a body does.
        for spec in list.stages.iter().flat_map(|s| &s.state) {
            let path = blank::StructPath::parse(spec)?;
            let file = src.join(&path.file);
            let text = fs::read_to_string(&file)
                .with_context(|| format!("{stage_file}: {spec}: read {}", file.display()))?;
            let found = blank::find_struct(&text, &path)
                .with_context(|| format!("{stage_file}: {spec}"))?;
            let lines = blanked.lines.entry(normalize(&file)).or_default();
            for (line, body) in body_lines(&text, found.body.start + 1..found.body.end - 1) {
                lines.entry(line).or_insert(BodyLine {
                    function: spec.clone(),
                    text: body,
                });
            }
        }
        Ok(blanked)
    }

    /// The blanked lines of the functions `specs` names (`FILE: PATH`, FILE
    /// under `src`), for messages said to come from `stage_file`.
    pub fn from_specs(src: &Path, stage_file: &str, specs: &[&str]) -> Result<Blanked> {
        let mut out = Blanked {
            stage_file: stage_file.to_string(),
            lines: BTreeMap::new(),
        };
        let mut texts: BTreeMap<String, String> = BTreeMap::new();
        for spec in specs {
            let path = FnPath::parse(spec)?;
            if !texts.contains_key(&path.file) {
                let file = src.join(&path.file);
                let text = fs::read_to_string(&file)
                    .with_context(|| format!("{stage_file}: {spec}: read {}", file.display()))?;
                texts.insert(path.file.clone(), text);
            }
            let text = &texts[&path.file];
            let found =
                blank::find(text, &path).with_context(|| format!("{stage_file}: {spec}"))?;
            let lines = out
                .lines
                .entry(normalize(&src.join(&path.file)))
                .or_default();
            for (line, body) in body_lines(text, found.body.start + 1..found.body.end - 1) {
                lines.entry(line).or_insert(BodyLine {
                    function: spec.to_string(),
                    text: body,
                });
            }
        }
        Ok(out)
    }
}

/// The lines of `text` that the byte range `inner` (a body without its
/// braces) touches with a letter or a digit: 0-based line, trimmed text.
fn body_lines(text: &str, inner: std::ops::Range<usize>) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let end = start + line.len();
        let (from, to) = (start.max(inner.start), end.min(inner.end));
        if from < to {
            let part = text[from..to].trim();
            if part.chars().any(char::is_alphanumeric) {
                out.push((i, part.to_string()));
            }
        }
        start = end;
    }
    out
}

/// How a listing sits in its wrapper, if it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wrapper {
    /// 0-based line of `<div class="lesson-code">`.
    pub open: usize,
    /// 0-based line of `</div>`.
    pub close: usize,
}

/// One fenced code block of a chapter.
#[derive(Debug, Clone)]
pub struct Listing {
    /// 1-based line of its opening fence.
    pub line: usize,
    /// 1-based line of its closing fence.
    pub end_line: usize,
    /// What names it in a message: its first `{{#include …}}`, or its first
    /// line.
    pub name: String,
    /// Its code as mdBook shows it (includes expanded).
    pub code: String,
    /// The blanked body lines it shows, in order.
    pub shows: Vec<BodyLine>,
    /// Its wrapper, when it has one.
    pub wrapper: Option<Wrapper>,
}

impl Listing {
    /// Whether building mode must fold it.
    pub fn shows_blanked_code(&self) -> bool {
        !self.shows.is_empty()
    }

    /// The functions whose bodies it shows, each once, in order.
    pub fn functions(&self) -> Vec<&str> {
        let mut seen = BTreeSet::new();
        self.shows
            .iter()
            .map(|l| l.function.as_str())
            .filter(|f| seen.insert(*f))
            .collect()
    }
}

/// The fenced code blocks of `text`, the chapter at `page`.
pub fn listings(page: &Path, text: &str, blanked: &Blanked) -> Vec<Listing> {
    let dir = normalize(page.parent().unwrap_or(Path::new("")));
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (event, range) in Parser::new(text).into_offset_iter() {
        let Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) = event else {
            continue;
        };
        let first = line_of(text, range.start); // 0-based
        let last = line_of(text, range.end.saturating_sub(1).max(range.start));
        // A fence indented (in a list item) takes as much indentation off
        // each of its lines, as CommonMark does.
        let indent = lines[first].len() - lines[first].trim_start_matches(' ').len();
        let inner = if last > first + 1 {
            lines[first + 1..last]
                .iter()
                .map(|l| {
                    let spaces = l.len() - l.trim_start_matches(' ').len();
                    &l[spaces.min(indent)..]
                })
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            String::new()
        };
        let mut shows = Vec::new();
        for helper in includes::helpers(&inner) {
            if !matches!(helper.kind.as_str(), "include" | "rustdoc_include") {
                continue;
            }
            let file = normalize(&dir.join(&helper.path));
            let Some(body) = blanked.lines.get(&file) else {
                continue;
            };
            let Ok(content) = fs::read_to_string(&file) else {
                continue; // book-check reports the missing file
            };
            let part = helper.part.clone();
            shows.extend(
                taken(&content, &part)
                    .into_iter()
                    .filter_map(|n| body.get(&n).cloned()),
            );
        }
        let name = includes::helpers(&inner)
            .first()
            .map(|h| h.text.clone())
            .unwrap_or_else(|| inner.lines().next().unwrap_or("").trim().to_string());
        out.push(Listing {
            line: first + 1,
            end_line: last + 1,
            name,
            code: includes::expand(&inner, &dir, 0),
            shows,
            wrapper: wrapper_around(&lines, first, last),
        });
    }
    out
}

/// The lines a helper's part takes from `content`.
fn taken(content: &str, part: &Part) -> Vec<usize> {
    includes::taken_lines(content, part)
}

/// The wrapper around the listing on 0-based lines `first..=last`: the
/// nearest non-blank lines before and after, when they are the wrapper's,
/// with a blank line between (without it Markdown reads the listing as
/// part of the HTML, and shows it raw).
fn wrapper_around(lines: &[&str], first: usize, last: usize) -> Option<Wrapper> {
    let before = (0..first).rev().find(|&i| !lines[i].trim().is_empty())?;
    let after = (last + 1..lines.len()).find(|&i| !lines[i].trim().is_empty())?;
    let blank_between = before + 1 < first && after > last + 1;
    (lines[before].trim() == WRAPPER_OPEN && lines[after].trim() == WRAPPER_CLOSE && blank_between)
        .then_some(Wrapper {
            open: before,
            close: after,
        })
}

/// The 0-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count()
}

/// `path` with `.` and `..` folded away, without touching the disk (the
/// file may not exist, which is what book-check is checking).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// One chapter's listings, with what its lesson blanks.
pub struct Chapter {
    /// The chapter file (`docs/src/lessonN.md`), absolute.
    pub path: PathBuf,
    /// The lesson's number, 1 to 4.
    pub lesson: usize,
    /// Its blanked lines.
    pub blanked: Blanked,
    /// Its listings, in order.
    pub listings: Vec<Listing>,
    /// 1-based lines of `<div class="lesson-code">` that wrap no listing.
    pub stray_wrappers: Vec<usize>,
    /// Its Markdown, as read.
    pub text: String,
}

impl Chapter {
    /// Lesson `lesson`'s chapter (1 to 4) in the checkout at `root`, as it
    /// is on disk now.
    pub fn read(root: &Path, lesson: usize) -> Result<Chapter> {
        let root = normalize(root);
        let (_, chapter, _) = LESSONS
            .get(lesson.wrapping_sub(1))
            .with_context(|| format!("lesson {lesson}: the course has lessons 1 to 4"))?;
        let path = root.join("docs/src").join(chapter);
        let blanked = Blanked::of(&root, &lesson.to_string())?;
        Chapter::with(path, lesson, blanked)
    }

    /// The chapter at `path` (lesson `lesson`), given what its lesson blanks.
    pub fn with(path: PathBuf, lesson: usize, blanked: Blanked) -> Result<Chapter> {
        let text = fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        let listings = listings(&path, &text, &blanked);
        let used: BTreeSet<usize> = listings
            .iter()
            .filter_map(|l| l.wrapper.map(|w| w.open))
            .collect();
        let stray_wrappers = text
            .lines()
            .enumerate()
            .filter(|(i, l)| l.trim() == WRAPPER_OPEN && !used.contains(i))
            .map(|(i, _)| i + 1)
            .collect();
        Ok(Chapter {
            path,
            lesson,
            blanked,
            listings,
            stray_wrappers,
            text,
        })
    }

    /// What is wrong with its wrappers: 1-based line and message.
    pub fn problems(&self) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for listing in &self.listings {
            match (listing.shows_blanked_code(), listing.wrapper) {
                (true, None) => out.push((
                    listing.line,
                    format!(
                        "the listing {} shows the body of {} (blanked by {}), but is not wrapped: \
                         put `{WRAPPER_OPEN}` and a blank line before it and a blank line and \
                         `{WRAPPER_CLOSE}` after it, so that building mode folds it \
                         (`cargo run -p course-tools --bin book-check -- --wrap` does it)",
                        listing.name,
                        listing.functions().join(", "),
                        self.blanked.stage_file
                    ),
                )),
                (false, Some(_)) => out.push((
                    listing.line,
                    format!(
                        "the listing {} is wrapped in `{WRAPPER_OPEN}` but shows no line of a \
                         function {} blanks: remove the wrapper, or building mode hides code \
                         the learner is not asked to write \
                         (`cargo run -p course-tools --bin book-check -- --wrap` does it)",
                        listing.name, self.blanked.stage_file
                    ),
                )),
                _ => {}
            }
        }
        for &line in &self.stray_wrappers {
            out.push((
                line,
                format!(
                    "`{WRAPPER_OPEN}` wraps no listing: it must be followed by a blank line, \
                     one fenced listing, a blank line and `{WRAPPER_CLOSE}`"
                ),
            ));
        }
        out
    }

    /// The chapter's Markdown, as read, with every listing that shows
    /// blanked code wrapped, and no other.
    pub fn rewrap(&self) -> String {
        let text = self.text.as_str();
        let lines: Vec<&str> = text.lines().collect();
        // What to put before or after a line, and which lines to drop.
        let mut before: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
        let mut after: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
        let mut drop = BTreeSet::new();
        for listing in &self.listings {
            let (first, last) = (listing.line - 1, listing.end_line - 1);
            match (listing.shows_blanked_code(), listing.wrapper) {
                (true, None) => {
                    before.entry(first).or_default().extend([WRAPPER_OPEN, ""]);
                    after.entry(last).or_default().extend(["", WRAPPER_CLOSE]);
                }
                (false, Some(w)) => {
                    // The wrapper's lines and the blank line inside each.
                    drop.extend([w.open, w.open + 1, w.close - 1, w.close]);
                }
                _ => {}
            }
        }
        let mut out = String::with_capacity(text.len() + 64);
        for (i, line) in lines.iter().enumerate() {
            for extra in before.get(&i).into_iter().flatten() {
                out.push_str(extra);
                out.push('\n');
            }
            if !drop.contains(&i) {
                out.push_str(line);
                out.push('\n');
            }
            for extra in after.get(&i).into_iter().flatten() {
                out.push_str(extra);
                out.push('\n');
            }
        }
        if !text.ends_with('\n') {
            out.pop();
        }
        out
    }

    /// The distinct blanked lines its listings show (trimmed text): what
    /// the measure of a printed chapter looks for.
    pub fn shown_blanked_lines(&self) -> BTreeSet<String> {
        self.listings
            .iter()
            .flat_map(|l| l.shows.iter().map(|b| b.text.clone()))
            .collect()
    }
}

/// The options every headless Chromium run of the book takes, `book-check`'s
/// printing and the browser test alike: headless, no sandbox (CI runs as
/// root), nothing fetched from the network, a profile of its own. The first
/// two are what a launcher that sets headlessness and the sandbox itself
/// (the browser test's) leaves out: see [`CHROMIUM_OWN_FLAGS`].
pub const CHROMIUM_FLAGS: [&str; 8] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// [`CHROMIUM_FLAGS`] without headlessness and the sandbox, for a launcher
/// that sets those two itself.
pub const CHROMIUM_OWN_FLAGS: &[&str] = CHROMIUM_FLAGS.split_at(2).1;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdir::TestDir;

    /// A lesson crate and its chapter, lesson 1 blanking `Queue::put` and
    /// `one_line`.
    fn course(chapter: &str) -> TestDir {
        let dir = TestDir::new("building");
        dir.write(
            "lesson1-threadpool/src/queue.rs",
            "// ANCHOR: put\nimpl Queue {\n    pub fn put(&self, item: u32) {\n        \
             // ANCHOR: inner\n        self.items.push(item);\n        // ANCHOR_END: inner\n    \
             }\n}\n// ANCHOR_END: put\n// ANCHOR: sig\npub fn one_line() -> u32 { 7 }\n\
             // ANCHOR_END: sig\npub struct Queue;\n",
        );
        dir.write("docs/src/lesson1.md", chapter);
        dir
    }

    /// The chapter of [`course`], read as it is now.
    fn read(dir: &TestDir) -> Chapter {
        let src = normalize(&dir.path().join("lesson1-threadpool/src"));
        let specs = ["queue.rs: Queue::put", "queue.rs: one_line"];
        let blanked = Blanked::from_specs(&src, "docs/starters/lesson1.toml", &specs).unwrap();
        Chapter::with(
            normalize(&dir.path().join("docs/src/lesson1.md")),
            1,
            blanked,
        )
        .unwrap()
    }

    const THREE: &str = "# Lesson 1\n\n## Queue\n\n```rust\n\
        {{#include ../../lesson1-threadpool/src/queue.rs:put}}\n```\n\n\
        ```rust\n{{#include ../../lesson1-threadpool/src/queue.rs:13}}\n```\n\n\
        ```text\n$ cargo test\n```\n";

    #[test]
    fn a_listing_of_a_blanked_body_must_be_wrapped_and_no_other() {
        let dir = course(THREE);
        let chapter = read(&dir);
        let shows: Vec<bool> = chapter
            .listings
            .iter()
            .map(Listing::shows_blanked_code)
            .collect();
        assert_eq!(shows, [true, false, false], "only the first shows a body");
        assert_eq!(
            chapter.listings[0].shows,
            [BodyLine {
                function: "queue.rs: Queue::put".into(),
                text: "self.items.push(item);".into()
            }],
            "the anchor lines and the braces are not body lines"
        );
        let problems = chapter.problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0, 5, "the first listing's fence");
        assert!(
            problems[0].1.contains("queue.rs: Queue::put"),
            "{problems:?}"
        );
        assert!(problems[0].1.contains("--wrap"), "{problems:?}");

        // --wrap fixes it, and a second pass changes nothing.
        let wrapped = chapter.rewrap();
        dir.write("docs/src/lesson1.md", &wrapped);
        let again = read(&dir);
        assert_eq!(again.problems(), [], "{wrapped}");
        assert_eq!(again.rewrap(), wrapped);
        assert!(wrapped
            .starts_with("# Lesson 1\n\n## Queue\n\n<div class=\"lesson-code\">\n\n```rust\n"));
    }

    #[test]
    fn a_one_line_body_and_a_wrapper_around_nothing_blanked() {
        // Line 11 is `one_line`, whose body is on its signature's line.
        let text = "# Lesson 1\n\n<div class=\"lesson-code\">\n\n```rust\n\
            {{#include ../../lesson1-threadpool/src/queue.rs:13}}\n```\n\n</div>\n\n\
            ```rust\n{{#include ../../lesson1-threadpool/src/queue.rs:sig}}\n```\n\n\
            <div class=\"lesson-code\">\n```rust\nlet x = 1;\n```\n</div>\n";
        let dir = course(text);
        let chapter = read(&dir);
        assert_eq!(
            chapter.listings[1].shows,
            [BodyLine {
                function: "queue.rs: one_line".into(),
                text: "7".into()
            }]
        );
        let problems: Vec<String> = chapter
            .problems()
            .iter()
            .map(|(line, m)| format!("{line}: {m}"))
            .collect();
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(problems[0].starts_with("5: ") && problems[0].contains("shows no line"));
        assert!(problems[1].starts_with("11: ") && problems[1].contains("not wrapped"));
        assert!(problems[2].starts_with("15: ") && problems[2].contains("wraps no listing"));
        let rewrapped = chapter.rewrap();
        assert!(
            rewrapped.starts_with("# Lesson 1\n\n```rust\n"),
            "the needless wrapper goes: {rewrapped}"
        );
    }
}
