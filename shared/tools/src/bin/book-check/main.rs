//! # `book-check`: the book cannot drift from the code
//!
//! ```text
//! mdbook build docs
//! cargo run -p course-tools --bin book-check
//! ```
//!
//! The course's chapters never paste code: they include it from the lesson
//! crates with mdBook's `{{#include file:anchor}}`, and the diffs between
//! lessons are generated pages. That only protects the reader if a broken
//! include fails the build — and mdBook does not fail it: a missing file
//! leaves the raw `{{#include …}}` in the page, a missing anchor includes
//! nothing, a duplicated one includes the wrong lines (the Rust book once
//! shipped a listing broken that way). This program checks, for every
//! Markdown file under the book's `src/`:
//!
//! - every `{{#include}}`, `{{#rustdoc_include}}` and `{{#playground}}`
//!   names a file that exists, and an anchor that starts exactly once, ends
//!   exactly once and holds something (or a line range inside the file); a
//!   misspelt helper (`{{#inlcude …}}`) is an error too, since mdBook would
//!   print it as text;
//! - every relative link and image (`[…](x.md)`, `(x.md#heading)`,
//!   `![…](img/x.svg)`, `(#heading)`) names a file inside the book, and a
//!   `#fragment` names a heading id the page really has, by mdBook's rules;
//! - every page is reachable: listed in `SUMMARY.md`, or included by a page;
//! - no terminal transcript is typed into a chapter (`$ ` lines come from
//!   `transcripts`' generated pages), and a test file or a test's name set
//!   in code exists in the code;
//! - no listing uses a term before the section that teaches it: the code
//!   names of a `glossary.md` entry (`**waker** (`Waker`)`) checked against
//!   the page and heading its first link names;
//! - a figure marked `<!-- from TABLE, ROW, COLUMN -->` is still what that
//!   generated benchmark table says, so a rerun cannot leave a stale copy;
//! - a listing of a lesson's chapter that shows any line of a function
//!   body its starter blanks is wrapped in `<div class="lesson-code">`, for
//!   the book's building mode to fold, and no other listing is (`--wrap`
//!   rewrites the wrappers; `--visible-share` measures what a printed
//!   chapter still shows, in both modes);
//! - the generated diff pages match the code (as `lesson-diff --check`).
//!
//! It prints every problem as `file:line: what` and exits 1 if there is any.
//!
//! | module | what it does |
//! |---|---|
//! | [`markdown`] | links outside code, headings and the ids mdBook gives them |
//! | [`building_mode`] | the building mode's wrappers: checked, rewritten, measured in print |
//!
//! The diff pages' generator is `lesson-diff`'s, from the crate's library
//! ([`course_tools::lesson_diff`]), so the two programs cannot disagree
//! about what "fresh" means.

mod building_mode;
mod markdown;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::LazyLock;

use anyhow::{Context, Result};
use regex::Regex;

use course_tools::building::normalize;
use course_tools::includes::{self, KNOWN_KINDS};
use course_tools::lesson_diff::pages;

/// One thing wrong with the book.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Problem {
    /// The file, relative to the workspace root (empty for the diff pages'
    /// messages, which name their file themselves).
    file: String,
    /// 1-based line, or 0 for the file as a whole.
    line: usize,
    /// What is wrong, in a sentence.
    message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.file.is_empty(), self.line) {
            (true, _) => write!(f, "{}", self.message),
            (false, 0) => write!(f, "{}: {}", self.file, self.message),
            (false, line) => write!(f, "{}:{line}: {}", self.file, self.message),
        }
    }
}

/// What a run checked, and what it found.
#[derive(Debug, Default)]
struct Outcome {
    /// Everything wrong, sorted by file and line.
    problems: Vec<Problem>,
    /// Markdown files read.
    pages: usize,
    /// `{{#…}}` helpers checked.
    helpers: usize,
    /// Relative links and images checked.
    links: usize,
}

/// The two settings of `book.toml` that matter here, with mdBook's
/// defaults (`src`, smart punctuation on).
struct BookToml {
    /// `[book] src`: where the Markdown lives, relative to `docs/`.
    src: String,
    /// `[output.html] smart-punctuation`: whether `--` becomes a dash,
    /// which changes heading ids.
    smart_punctuation: bool,
}

fn read_book_toml(text: &str) -> Result<BookToml> {
    #[derive(serde::Deserialize, Default)]
    struct File {
        #[serde(default)]
        book: Book,
        #[serde(default)]
        output: Output,
    }
    #[derive(serde::Deserialize, Default)]
    struct Book {
        src: Option<String>,
    }
    #[derive(serde::Deserialize, Default)]
    struct Output {
        #[serde(default)]
        html: Html,
    }
    #[derive(serde::Deserialize, Default)]
    struct Html {
        #[serde(rename = "smart-punctuation")]
        smart_punctuation: Option<bool>,
    }
    let file: File = toml::from_str(text).context("book.toml")?;
    Ok(BookToml {
        src: file.book.src.unwrap_or_else(|| "src".to_string()),
        smart_punctuation: file.output.html.smart_punctuation.unwrap_or(true),
    })
}

/// `%20` and friends in a link target, decoded.
fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// A URL with a scheme (`https:`, `mailto:`) or a protocol-relative one:
/// not a file of the book.
static EXTERNAL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)").expect("constant regex"));

/// The Markdown files under `dir`, sorted: the book's pages. Not under
/// `api/`, which holds rustdoc's generated pages (`api-docs`), whose few
/// `.md` files are licences it ships, not pages.
fn markdown_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let api = dir.join("api");
    let walk = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.path() != api);
    for entry in walk {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        if entry.file_type().is_file() && entry.path().extension().is_some_and(|e| e == "md") {
            out.push(entry.into_path());
        }
    }
    out.sort();
    Ok(out)
}

/// The checker's state over one run.
struct Checker<'a> {
    /// The workspace root, for relative names in messages.
    root: &'a Path,
    /// The book's `src/` folder, normalized.
    src: PathBuf,
    /// From `book.toml`.
    smart_punctuation: bool,
    /// Heading ids per page, computed once (after expanding includes, since
    /// a heading may come from an included file).
    ids: HashMap<PathBuf, Vec<String>>,
    /// Markdown files some page includes, and the pages that include each:
    /// they need no SUMMARY entry, and their `#fragment` links point into
    /// the pages they become part of.
    included: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
    /// The pages SUMMARY.md lists: each is a page of its own, even when a
    /// chapter also includes it.
    chapters: BTreeSet<PathBuf>,
    /// What has been found so far.
    outcome: Outcome,
}

impl Checker<'_> {
    /// `path` relative to the workspace root, for messages.
    fn name(&self, path: &Path) -> String {
        path.strip_prefix(self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    fn problem(&mut self, file: &Path, line: usize, message: String) {
        let file = self.name(file);
        self.outcome.problems.push(Problem {
            file,
            line,
            message,
        });
    }

    /// The heading ids of the page at `path`.
    fn ids_of(&mut self, path: &Path) -> &[String] {
        if !self.ids.contains_key(path) {
            let text = fs::read_to_string(path).unwrap_or_default();
            let dir = path.parent().unwrap_or(Path::new(""));
            let expanded = includes::expand(&text, dir, 0);
            let ids = markdown::heading_ids(&expanded, self.smart_punctuation);
            self.ids.insert(path.to_path_buf(), ids);
        }
        self.ids.get(path).map_or(&[], Vec::as_slice)
    }

    /// Checks the `{{#…}}` helpers of one page.
    fn check_helpers(&mut self, page: &Path, text: &str) {
        let dir = page.parent().unwrap_or(Path::new(""));
        for helper in includes::helpers(text) {
            self.outcome.helpers += 1;
            let say = |what: String| format!("{}: {what}", helper.text);
            if !KNOWN_KINDS.contains(&helper.kind.as_str()) {
                let message = say(format!(
                    "mdBook has no `#{}` helper and would print this as text",
                    helper.kind
                ));
                self.problem(page, helper.line, message);
                continue;
            }
            if helper.kind == "title" {
                continue;
            }
            let target = normalize(&dir.join(&helper.path));
            let content = match fs::read(&target) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(_) => {
                    let message = say(format!("no such file {}", self.name(&target)));
                    self.problem(page, helper.line, message);
                    continue;
                }
            };
            if target.extension().is_some_and(|e| e == "md") {
                self.included
                    .entry(target.clone())
                    .or_default()
                    .insert(page.to_path_buf());
            }
            if let Some(what) = includes::part_problem(&content, &helper.part) {
                let message = say(format!("{}: {what}", self.name(&target)));
                self.problem(page, helper.line, message);
            }
        }
    }

    /// Checks the relative links and images of one page.
    fn check_links(&mut self, page: &Path, text: &str, is_summary: bool) {
        // A page that is only ever included (a generated block) lands in
        // the chapter that includes it: its links are read from there.
        let from = match self.included.get(page) {
            Some(includers) if !self.chapters.contains(page) && !includers.is_empty() => includers
                .iter()
                .next()
                .cloned()
                .unwrap_or_else(|| page.to_path_buf()),
            _ => page.to_path_buf(),
        };
        let dir = from.parent().unwrap_or(Path::new("")).to_path_buf();
        for link in markdown::links(text) {
            let dest = link.dest.trim();
            if dest.is_empty() {
                // `[Draft]()` is a draft chapter in SUMMARY.md; elsewhere it
                // is a link to nowhere.
                if !is_summary {
                    self.problem(page, link.line, "a link with an empty target".to_string());
                }
                continue;
            }
            if EXTERNAL.is_match(dest) {
                continue;
            }
            self.outcome.links += 1;
            let (path_part, fragment) = match dest.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (dest, None),
            };
            let path_part = percent_decode(path_part);
            if path_part.starts_with('/') {
                let message = format!("`{dest}`: an absolute path; the book's links are relative");
                self.problem(page, link.line, message);
                continue;
            }
            let mut target = if path_part.is_empty() {
                page.to_path_buf()
            } else {
                normalize(&dir.join(&path_part))
            };
            if !target.starts_with(&self.src) {
                let message = format!(
                    "`{dest}` points outside {} and will not be in the built book",
                    self.name(&self.src)
                );
                self.problem(page, link.line, message);
                continue;
            }
            // mdBook turns `x.md` into `x.html`; a link written to the
            // `.html` is fine when the chapter's `.md` is there.
            if !target.exists() && target.extension().is_some_and(|e| e == "html") {
                let md = target.with_extension("md");
                if md.is_file() {
                    target = md;
                }
            }
            if !target.is_file() {
                let api = self.src.join("api");
                let hint = if target.starts_with(&api) {
                    " (shared's API pages: `cargo run -p course-tools --bin api-docs` writes them)"
                } else {
                    ""
                };
                let message = format!("`{dest}`: no such file {}{hint}", self.name(&target));
                self.problem(page, link.line, message);
                continue;
            }
            let Some(fragment) = fragment.filter(|f| !f.is_empty()) else {
                continue;
            };
            if target.extension().is_some_and(|e| e == "html") {
                // A generated page (the API's): the fragment is an element's id.
                let html = std::fs::read_to_string(&target).unwrap_or_default();
                if !html.contains(&format!("id=\"{fragment}\"")) {
                    let message = format!(
                        "`{dest}`: {} has no element with the id `{fragment}`",
                        self.name(&target)
                    );
                    self.problem(page, link.line, message);
                }
                continue;
            }
            if target.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let fragment = percent_decode(fragment);
            // A fragment of its own page, in a page that is only ever
            // included, names a heading of the chapter that includes it.
            if path_part.is_empty() && !self.chapters.contains(&target) {
                if let Some(includers) = self.included.get(&target).cloned() {
                    for includer in includers {
                        self.check_fragment(page, link.line, dest, &includer, &fragment);
                    }
                    continue;
                }
            }
            self.check_fragment(page, link.line, dest, &target, &fragment);
        }
    }

    /// Checks that `fragment` (from the link `dest` on `page`) names a
    /// heading of `target`.
    fn check_fragment(
        &mut self,
        page: &Path,
        line: usize,
        dest: &str,
        target: &Path,
        fragment: &str,
    ) {
        let target_name = self.name(target);
        let ids = self.ids_of(target);
        if !ids.iter().any(|id| id == fragment) {
            let shown: Vec<&str> = ids.iter().take(12).map(String::as_str).collect();
            let more = if ids.len() > shown.len() { ", …" } else { "" };
            let message = format!(
                "`{dest}`: {} has no heading with id `{fragment}` (its ids: {}{more})",
                target_name,
                shown.join(", ")
            );
            self.problem(page, line, message);
        }
    }
}

/// What the code has, for checking what the text says it has: every file
/// under the crates' `src/`, `tests/` and `examples/`, and every identifier
/// in them.
struct CodeIndex {
    /// Paths relative to the workspace root (`lesson2-callbacks/tests/busy_loop.rs`).
    files: Vec<String>,
    /// Every identifier-like word of every `.rs` file.
    words: HashSet<String>,
}

impl CodeIndex {
    fn of(root: &Path) -> Result<CodeIndex> {
        static WORD: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_]*").expect("constant regex"));
        let mut index = CodeIndex {
            files: Vec::new(),
            words: HashSet::new(),
        };
        let walk = walkdir::WalkDir::new(root).into_iter().filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            !(e.depth() > 0 && (name.starts_with('.') || name == "target" || name == "docs"))
        });
        for entry in walk {
            let entry = entry.with_context(|| format!("cannot list {}", root.display()))?;
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            if let Ok(rel) = path.strip_prefix(root) {
                index.files.push(rel.to_string_lossy().into_owned());
            }
            let text = fs::read_to_string(path).unwrap_or_default();
            index
                .words
                .extend(WORD.find_iter(&text).map(|m| m.as_str().to_string()));
        }
        Ok(index)
    }

    /// Is there a file whose path ends with `name` (`tests/fetch.rs`,
    /// `lesson1-threadpool/src/pool.rs`)?
    fn has_file(&self, name: &str) -> bool {
        self.files
            .iter()
            .any(|f| f == name || f.ends_with(&format!("/{name}")))
    }
}

/// The paragraph around 1-based `line`: the lines between blank ones. A
/// long name is taken for a test's only where its paragraph talks of
/// tests, so other crates' API names (`pool_max_idle_per_host`) pass.
fn paragraph_of(text: &str, line: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let at = line.saturating_sub(1).min(lines.len().saturating_sub(1));
    let blank = |i: &usize| lines.get(*i).is_none_or(|l| l.trim().is_empty());
    let start = (0..=at).rev().find(blank).map_or(0, |i| i + 1);
    let end = (at..lines.len()).find(blank).unwrap_or(lines.len());
    lines[start..end.max(start)].join("\n").to_lowercase()
}

/// A path to a Rust file as a chapter writes it: `tests/fetch.rs`,
/// `src/pool.rs`, `lesson2-callbacks/tests/busy_loop.rs`.
static RUST_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[a-z0-9_-]+/)*(?:src|tests|examples)/[a-z0-9_/]+\.rs$")
        .expect("constant regex")
});

/// A name a test has: four or more lower-case words joined by `_`.
static TEST_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+){3,}$").expect("constant regex"));

impl Checker<'_> {
    /// Checks the files and long names a page sets in code spans against
    /// the code, and refuses a transcript typed into the page.
    fn check_code_names(&mut self, page: &Path, text: &str, code: &CodeIndex) {
        for line in markdown::transcript_lines(text) {
            self.problem(
                page,
                line,
                "a `$ ` transcript typed into the page: list its command in \
                 docs/transcripts/transcripts.toml and include the generated page"
                    .to_string(),
            );
        }
        for (line, span) in markdown::code_spans(text) {
            let span = span.trim();
            if RUST_PATH.is_match(span) && !code.has_file(span) {
                let message = format!("`{span}`: no such file in the workspace");
                self.problem(page, line, message);
            } else if TEST_NAME.is_match(span)
                && !code.words.contains(span)
                && paragraph_of(text, line).contains("test")
            {
                let message = format!("`{span}`: no test or function has this name");
                self.problem(page, line, message);
            }
        }
    }
}

/// A figure quoted from a generated table, marked so it can be checked:
/// `<!-- from FILE, ROW, COLUMN -->0.36 s`, FILE under
/// `docs/src/generated/bench/`, ROW the start of a row's first cell,
/// COLUMN a header cell (with `#2` for the second number of the cell).
static FIGURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"<!--\s*from\s+([^,]+?),\s*([^,]+?),\s*(.+?)\s*-->\s*\**([0-9][0-9,]*(?:\.[0-9]+)?)",
    )
    .expect("constant regex")
});

/// The numbers in a table cell, thousands separators dropped.
fn numbers_in(cell: &str) -> Vec<f64> {
    static NUMBER: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[0-9][0-9,]*(?:\.[0-9]+)?").expect("constant regex"));
    NUMBER
        .find_iter(cell)
        .filter_map(|m| m.as_str().replace(',', "").parse().ok())
        .collect()
}

/// The cell in the row whose first cell starts with `row` and the column
/// headed `column`, in the first table of `page` (a Markdown page of one or
/// more tables) that has both.
fn table_cell(page: &str, row: &str, column: &str) -> Option<String> {
    let cells = |line: &str| -> Vec<String> {
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let lines: Vec<&str> = page.lines().collect();
    // Each run of `|` lines is a table: a header, a rule, rows.
    lines
        .split(|line| !line.trim_start().starts_with('|'))
        .filter(|table| !table.is_empty())
        .find_map(|table| {
            let header = cells(table[0]);
            let index = header.iter().position(|h| h == column)?;
            table[1..]
                .iter()
                .map(|line| cells(line))
                .find(|r| r.first().is_some_and(|first| first.starts_with(row)))
                .and_then(|r| r.get(index).cloned())
        })
}

/// A number with a unit (after a space) or a ratio or share (`×`, `%` right
/// after it): a figure, measured unless it is round (see [`is_round`]).
static MEASURED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"([0-9][0-9,]*(?:\.[0-9]+)?)(?:(?:\s|&nbsp;|\u{a0})(ns|µs|ms|s|KiB|MiB|GiB|B|bytes|bits|kB|MB|GB|TB|Gbit/s|MB/s|GB/s)|(%|×))",
    )
    .expect("constant regex")
});

/// The marker for figures that are not quoted from a table (derived from
/// others by arithmetic, a fact of the machine, a measurement of code the
/// course no longer has), with the reason after the colon. It covers the
/// rest of its paragraph or table.
const NOT_FROM_A_TABLE: &str = "<!-- not from a table:";

/// Whether `number` is round enough to be a chosen constant rather than a
/// measurement: a power of two or one significant digit (`16`, `100`, `3`).
fn is_round(number: &str) -> bool {
    if number.contains('.') {
        return false;
    }
    let Ok(n) = number.replace(',', "").parse::<u64>() else {
        return false;
    };
    n.is_power_of_two() || n == 0 || n.to_string().trim_end_matches('0').len() == 1
}

impl Checker<'_> {
    /// Refuses a figure in prose that looks measured but is neither quoted
    /// from a generated table (a `<!-- from … -->` marker right before it,
    /// checked by [`Checker::check_figures`]) nor under a
    /// [`NOT_FROM_A_TABLE`] marker: a rerun of the benchmarks would leave it
    /// stale, or two chapters would quote one quantity two ways.
    fn check_unmarked_figures(&mut self, page: &Path, text: &str) {
        for line in markdown::text_after_a_leading_comment(text) {
            self.problem(
                page,
                line,
                "a line that starts with a comment is raw HTML to Markdown: the text \
                 after it loses its formatting and its space; put the comment after \
                 the line's first word"
                    .to_string(),
            );
        }
        // Each exemption runs from its marker to the end of its block.
        let exempt: Vec<std::ops::Range<usize>> = text
            .match_indices(NOT_FROM_A_TABLE)
            .map(|(at, _)| at..text[at..].find("\n\n").map_or(text.len(), |end| at + end))
            .collect();
        for range in markdown::prose_ranges(text) {
            for cap in MEASURED.captures_iter(&text[range.clone()]) {
                let (Some(whole), Some(number)) = (cap.get(0), cap.get(1)) else {
                    continue;
                };
                let at = range.start + whole.start();
                let after = text[range.start + whole.end()..].chars().next();
                let before = text[..at].chars().next_back();
                // Part of a longer word or number (`x1.5`, `404s`, `1.5ms2`).
                if before.is_some_and(|c| c.is_alphanumeric() || ".,/#-".contains(c))
                    || after.is_some_and(|c| c.is_alphanumeric() || c == '/')
                {
                    continue;
                }
                let marked = text[..at].trim_end_matches(['*', ' ']).ends_with("-->");
                if marked || is_round(number.as_str()) || exempt.iter().any(|e| e.contains(&at)) {
                    continue;
                }
                let line = text[..at].matches('\n').count() + 1;
                let message = format!(
                    "figure `{}` looks measured: quote it from a generated table \
                     (`<!-- from FILE, ROW, COLUMN -->`) or say why it is not one \
                     (`{NOT_FROM_A_TABLE} … -->`)",
                    whole.as_str()
                );
                self.problem(page, line, message);
            }
        }
    }
}

impl Checker<'_> {
    /// Checks every marked figure of a page against its table: the figure
    /// must be the table's value, rounded to the decimals the prose shows.
    fn check_figures(&mut self, page: &Path, text: &str) {
        let tables = self.src.join("generated").join("bench");
        for cap in FIGURE.captures_iter(text) {
            let line = text[..cap.get(0).map_or(0, |m| m.start())]
                .matches('\n')
                .count()
                + 1;
            let (file, row, column) = (cap[1].trim(), cap[2].trim(), cap[3].trim());
            let (column, nth) = match column.rsplit_once('#') {
                Some((c, n)) => (c.trim(), n.parse::<usize>().unwrap_or(1)),
                None => (column, 1),
            };
            let quoted = &cap[4];
            let Ok(table) = fs::read_to_string(tables.join(file)) else {
                self.problem(page, line, format!("figure from {file}: no such table"));
                continue;
            };
            let Some(cell) = table_cell(&table, row, column) else {
                let message =
                    format!("figure from {file}: no row {row:?} with a column {column:?}");
                self.problem(page, line, message);
                continue;
            };
            let Some(value) = numbers_in(&cell).get(nth.saturating_sub(1)).copied() else {
                let message =
                    format!("figure from {file} ({row}, {column}): {cell:?} has no number {nth}");
                self.problem(page, line, message);
                continue;
            };
            let decimals = quoted.split_once('.').map_or(0, |(_, d)| d.len());
            // Half up, as a reader rounds the table's decimal text (the
            // binary 3.15 is a hair under 3.15 and would round down).
            let shown = format!("{:.decimals$}", value + 1e-9);
            let quoted_plain = quoted.replace(',', "");
            if shown != quoted_plain {
                let message = format!(
                    "figure `{quoted}` from {file} ({row}, {column}) is {shown} there: a rerun changed it"
                );
                self.problem(page, line, message);
            }
        }
    }
}

/// Runs every check on the book in `root/docs`.
/// A glossary entry: `**term** (`Code`, `names`) — … [3](lesson3.md#id)`.
/// The bold term (when it is code) and the code in the parentheses are the
/// names a listing uses; the first link to a chapter's heading is where the
/// term is taught.
static ENTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)^\*\*(.+?)\*\*\s*(?:\(([^)]*)\))?.*?\]\(([\w./-]+\.md)#([\w-]+)\)")
        .expect("constant regex")
});

impl Checker<'_> {
    /// Checks that no listing uses a term before the section the glossary
    /// says teaches it: a learner must not meet `Waker` in code they are
    /// asked to read three sections before anyone says what a waker is.
    fn check_term_order(&mut self, glossary: &Path, text: &str) {
        static CODE: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"`([^`]+)`").expect("constant regex"));
        let mut line = 1;
        for paragraph in text.split("\n\n") {
            let at = line;
            line += paragraph.matches('\n').count() + 2;
            let Some(cap) = ENTRY.captures(paragraph.trim_start()) else {
                continue;
            };
            let names: Vec<&str> = [cap.get(1), cap.get(2)]
                .into_iter()
                .flatten()
                .flat_map(|m| CODE.captures_iter(m.as_str()))
                .filter_map(|c| c.get(1).map(|m| m.as_str()))
                .collect();
            let page = glossary.parent().unwrap_or(&self.src).join(&cap[3]);
            let Ok(page_text) = fs::read_to_string(&page) else {
                continue; // a broken link: check_links reports it
            };
            let dir = page.parent().unwrap_or(&self.src);
            let expanded = includes::expand(&page_text, dir, 0);
            let Some(blocks) =
                markdown::code_before_heading(&expanded, &cap[4], self.smart_punctuation)
            else {
                continue; // a broken fragment: check_links reports it
            };
            for name in names {
                let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                let pattern = format!(
                    "{}{}{}",
                    if word(name.chars().next()) { r"\b" } else { "" },
                    regex::escape(name),
                    if word(name.chars().last()) { r"\b" } else { "" },
                );
                let Ok(pattern) = Regex::new(&pattern) else {
                    continue;
                };
                if let Some((section, _)) = blocks.iter().find(|(_, code)| pattern.is_match(code)) {
                    let message = format!(
                        "`{name}` is in a listing of {} (under \"{section}\") before #{}, \
                         where this entry says it is taught: teach it first, or show the \
                         listing later",
                        &cap[3], &cap[4]
                    );
                    self.problem(glossary, at, message);
                }
            }
        }
    }
}

fn check_book(root: &Path) -> Result<Outcome> {
    let root = normalize(root);
    let docs = root.join("docs");
    let toml_path = docs.join("book.toml");
    let toml_text = fs::read_to_string(&toml_path)
        .with_context(|| format!("cannot read {}", toml_path.display()))?;
    let toml = read_book_toml(&toml_text)?;
    let src = normalize(&docs.join(&toml.src));
    let mut checker = Checker {
        root: &root,
        src: src.clone(),
        smart_punctuation: toml.smart_punctuation,
        ids: HashMap::new(),
        included: BTreeMap::new(),
        chapters: BTreeSet::new(),
        outcome: Outcome::default(),
    };

    let summary = src.join("SUMMARY.md");
    let summary_text = fs::read_to_string(&summary).ok();
    if let Some(text) = &summary_text {
        checker.chapters = markdown::links(text)
            .iter()
            .filter(|l| !l.dest.is_empty() && !EXTERNAL.is_match(&l.dest))
            .map(|l| {
                let path = l.dest.split('#').next().unwrap_or("");
                normalize(&src.join(percent_decode(path)))
            })
            .collect();
    }
    let pages = markdown_files(&src)?;
    // Helpers first, for every page: a page's links may depend on which
    // pages include it.
    let mut texts = Vec::new();
    for page in &pages {
        match fs::read_to_string(page) {
            Ok(text) => {
                checker.outcome.pages += 1;
                checker.check_helpers(page, &text);
                texts.push((page, text));
            }
            Err(e) => checker.problem(page, 0, format!("cannot read: {e}")),
        }
    }
    let code = CodeIndex::of(&root)?;
    let generated = src.join("generated");
    for (page, text) in &texts {
        checker.check_links(page, text, **page == summary);
        // Generated pages come from real runs and from the code itself.
        if !page.starts_with(&generated) {
            checker.check_code_names(page, text, &code);
            checker.check_figures(page, text);
            checker.check_unmarked_figures(page, text);
        }
    }

    let glossary = src.join("glossary.md");
    if let Some((page, text)) = texts.iter().find(|(page, _)| **page == glossary) {
        checker.check_term_order(page, text);
    }

    // Reachability: a page mdBook builds is a SUMMARY entry; a page a
    // chapter includes is part of that chapter.
    match summary_text {
        Some(_) => {
            for page in &pages {
                if *page != summary
                    && !checker.chapters.contains(page)
                    && !checker.included.contains_key(page)
                {
                    checker.problem(
                        page,
                        0,
                        "not in SUMMARY.md and not included by any page: mdBook will not build it"
                            .to_string(),
                    );
                }
            }
        }
        None => checker.problem(&summary, 0, "missing: mdBook needs it".to_string()),
    }

    // A chapter's "Every interleaving" shows a model test's failure from a
    // real run (written by `starter verify --mistakes --write-pages`).
    for (page, line, message) in interleaving_problems(&texts, &generated) {
        checker.problem(&page, line, message);
    }

    // Building mode: exactly the listings that show code a starter blanks
    // are wrapped, to be folded.
    for (file, line, message) in building_mode::check(&root) {
        checker.problem(&file, line, message);
    }

    // The generated diff pages.
    for message in pages::check(&root)? {
        checker.outcome.problems.push(Problem {
            file: String::new(),
            line: 0,
            message,
        });
    }

    let mut outcome = checker.outcome;
    outcome.problems.sort();
    Ok(outcome)
}

/// Each generated `break/*-interleaving.md` page: a model test failing,
/// with the interleaving that broke it, included by the section "Every
/// interleaving" of a chapter; and each thread that section names in a
/// code span (`getter-1`) is a thread of that interleaving, so that the
/// prose reads the run the page shows.
fn interleaving_problems(
    texts: &[(&PathBuf, String)],
    generated: &Path,
) -> Vec<(PathBuf, usize, String)> {
    let mut problems = Vec::new();
    let thread_name = Regex::new(r"`([a-z]+-[0-9]+)`").expect("a valid pattern");
    for (page, text) in texts {
        let Ok(rel) = page.strip_prefix(generated.join("break")) else {
            continue;
        };
        let name = rel.to_string_lossy().to_string();
        if !name.ends_with("-interleaving.md") {
            continue;
        }
        if !text.contains("is red: model::") || !text.contains("the interleaving that broke it") {
            problems.push((
                (*page).clone(),
                0,
                "shows no model test failing with its interleaving: run `cargo run -p starter -- \
                 verify --mistakes --write-pages`"
                    .to_string(),
            ));
        }
        let include = format!("{{{{#include generated/break/{name}}}}}");
        let mut included = false;
        for (chapter, chapter_text) in texts {
            let Some(at) = chapter_text.find(&include) else {
                continue;
            };
            included = true;
            let section_start = chapter_text[..at].rfind("\n## ").map_or(0, |i| i + 1);
            let heading = chapter_text[section_start..].lines().next().unwrap_or("");
            if heading != "## Every interleaving" {
                problems.push((
                    (*chapter).clone(),
                    chapter_text[..at].lines().count() + 1,
                    format!("{name} is included under {heading:?}, not \"## Every interleaving\""),
                ));
            }
            let section_end = chapter_text[at..]
                .find("\n## ")
                .map_or(chapter_text.len(), |i| at + i);
            for found in thread_name.captures_iter(&chapter_text[section_start..section_end]) {
                let thread = &found[1];
                if !text.contains(&format!("  {thread} ")) {
                    problems.push((
                        (*chapter).clone(),
                        0,
                        format!("\"Every interleaving\" names `{thread}`, a thread {name} does not show"),
                    ));
                }
            }
        }
        if !included {
            problems.push(((*page).clone(), 0, "no chapter includes it".to_string()));
        }
    }
    problems
}

/// Check the course book: every include, anchor, link and fragment, every
/// page reachable, the generated diff pages fresh.
///
/// Run `mdbook build docs` first to see the book; this checks its sources.
/// Exit status: 0 when the book is sound, 1 with a list of problems, 2 on
/// an error.
#[derive(clap::Parser)]
struct Cli {
    /// The workspace root, holding docs/ (default: the checkout around the
    /// current directory).
    #[arg(long)]
    root: Option<PathBuf>,
    /// Rewrite the `<div class="lesson-code">` wrappers of the lessons'
    /// chapters: around every listing that shows code a starter blanks, and
    /// no other. Then check.
    #[arg(long)]
    wrap: bool,
    /// Print each lesson's chapter with headless Chromium (after `mdbook
    /// build docs`), in reading mode and with `?mode=build`, and say what
    /// share of the blanked code lines the print shows; exit 1 if building
    /// mode shows more than 10 % or reading mode less than 60 %.
    #[arg(long, conflicts_with = "wrap")]
    visible_share: bool,
    /// With --visible-share: list the blanked lines building mode still
    /// prints (found in prose or in a listing not folded).
    #[arg(long, requires = "visible_share")]
    show_lines: bool,
}

fn main() -> ExitCode {
    let cli = <Cli as clap::Parser>::parse();
    let root = match course_tools::workspace_root(cli.root.as_deref()) {
        Ok(root) => root,
        Err(e) => {
            eprintln!("book-check: {e:#}");
            return ExitCode::from(2);
        }
    };
    if cli.visible_share {
        return match building_mode::visible_share(&root, cli.show_lines) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("book-check: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    if cli.wrap {
        if let Err(e) = building_mode::wrap(&root) {
            eprintln!("book-check: {e:#}");
            return ExitCode::from(2);
        }
    }
    let outcome = match check_book(&root) {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("book-check: {e:#}");
            return ExitCode::from(2);
        }
    };
    for problem in &outcome.problems {
        println!("{problem}");
    }
    let summary = format!(
        "{} pages, {} includes, {} relative links",
        outcome.pages, outcome.helpers, outcome.links
    );
    if outcome.problems.is_empty() {
        println!("book-check: {summary}: all sound");
        ExitCode::SUCCESS
    } else {
        println!(
            "book-check: {summary}: {} problem(s)",
            outcome.problems.len()
        );
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use course_tools::testdir::TestDir;

    /// A small sound book: two chapters, a listing from a crate, an image,
    /// links between chapters with fragments.
    fn sound_book(name: &str) -> TestDir {
        let dir = TestDir::new(name);
        dir.write("docs/book.toml", "[book]\ntitle = \"t\"\nsrc = \"src\"\n");
        dir.write(
            "docs/src/SUMMARY.md",
            "# Summary\n\n[Introduction](introduction.md)\n\n- [Lesson 1](lesson1.md)\n  - [Draft]()\n",
        );
        dir.write(
            "docs/src/introduction.md",
            "# Introduction\n\nStart with [lesson 1](lesson1.md#lesson-1).\n\
             ![a chart](img/chart.svg)\n",
        );
        dir.write(
            "docs/src/lesson1.md",
            "# Lesson 1\n\n## The pool, and its `Queue`\n\n```rust\n{{#include ../../crate/src/pool.rs:pool}}\n```\n\
             See [the pool](#the-pool-and-its-queue) or [the intro](./introduction.md).\n\
             Show the syntax: `\\{{#include x.rs}}` and [a site](https://example.com/x.md).\n",
        );
        dir.write("docs/src/img/chart.svg", "<svg/>\n");
        dir.write(
            "crate/src/pool.rs",
            "// ANCHOR: pool\npub struct Pool;\n// ANCHOR_END: pool\n",
        );
        dir
    }

    /// The problems found, as printed.
    fn problems(dir: &TestDir) -> Vec<String> {
        check_book(dir.path())
            .unwrap()
            .problems
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// Asserts there is exactly one problem, containing every piece.
    fn assert_one(dir: &TestDir, pieces: &[&str]) {
        let found = problems(dir);
        assert_eq!(found.len(), 1, "{found:#?}");
        for piece in pieces {
            assert!(found[0].contains(piece), "{:?} lacks {piece:?}", found[0]);
        }
    }

    #[test]
    fn a_sound_book_has_no_problems() {
        let dir = sound_book("sound");
        let outcome = check_book(dir.path()).unwrap();
        assert_eq!(outcome.problems, []);
        assert_eq!((outcome.pages, outcome.helpers), (3, 1));
        // Links: the fragment link, the image, two links in lesson 1, the
        // two chapters in SUMMARY.md (the draft is not counted).
        assert_eq!(outcome.links, 6);
    }

    #[test]
    fn every_interleaving_shows_a_model_failure_and_names_only_its_threads() {
        let dir = sound_book("interleaving");
        let page = "```text\nstage 2 (queue) is red: model::queue_each_get_gets_an_item\n    \
                    the interleaving that broke it (the 4th loom tried):\n      1  getter-1  get()\n```\n";
        dir.write("docs/src/generated/break/lesson1-interleaving.md", page);
        let chapter = |threads: &str| {
            format!(
                "# Lesson 1\n\n## Every interleaving\n\nSee {threads}.\n\n\
                 {{{{#include generated/break/lesson1-interleaving.md}}}}\n\n## Next\n\n`other-9`\n"
            )
        };
        dir.write("docs/src/lesson1.md", &chapter("`getter-1`"));
        assert_eq!(problems(&dir), Vec::<String>::new());
        // A thread the run does not have (the section's only: `other-9` is
        // in the next section).
        dir.write("docs/src/lesson1.md", &chapter("`getter-2`"));
        assert_one(&dir, &["names `getter-2`, a thread"]);
        // Under another heading.
        dir.write(
            "docs/src/lesson1.md",
            &chapter("`getter-1`").replace("## Every interleaving", "## Elsewhere"),
        );
        assert_one(&dir, &["included under \"## Elsewhere\""]);
        // A page without a model test's failure.
        dir.write(
            "docs/src/generated/break/lesson1-interleaving.md",
            &page.replace("model::", "queue::"),
        );
        dir.write("docs/src/lesson1.md", &chapter("`getter-1`"));
        assert_one(&dir, &["shows no model test failing"]);
    }

    #[test]
    fn an_include_of_a_missing_file() {
        let dir = sound_book("missing-file");
        dir.write(
            "docs/src/lesson1.md",
            "# Lesson 1\n\n{{#include ../../crate/src/gone.rs}}\n",
        );
        assert_one(
            &dir,
            &["docs/src/lesson1.md:3:", "no such file crate/src/gone.rs"],
        );
    }

    #[test]
    fn an_include_of_a_missing_anchor() {
        let dir = sound_book("missing-anchor");
        dir.write(
            "docs/src/lesson1.md",
            "# Lesson 1\n\n{{#include ../../crate/src/pool.rs:queue}}\n",
        );
        assert_one(
            &dir,
            &["lesson1.md:3:", "no `ANCHOR: queue`", "crate/src/pool.rs"],
        );
    }

    #[test]
    fn a_duplicate_anchor() {
        let dir = sound_book("duplicate-anchor");
        dir.write(
            "crate/src/pool.rs",
            "// ANCHOR: pool\na\n// ANCHOR_END: pool\n// ANCHOR: pool\nb\n// ANCHOR_END: pool\n",
        );
        assert_one(&dir, &["lesson1.md:6:", "appears 2 times (lines 1, 4)"]);
    }

    #[test]
    fn an_anchor_without_its_end() {
        let dir = sound_book("unended-anchor");
        dir.write("crate/src/pool.rs", "// ANCHOR: pool\npub struct Pool;\n");
        assert_one(&dir, &["lesson1.md:6:", "has no `ANCHOR_END: pool`"]);
    }

    #[test]
    fn a_line_range_past_the_end_and_a_misspelt_helper() {
        let dir = sound_book("range");
        dir.write(
            "docs/src/lesson1.md",
            "# Lesson 1\n{{#include ../../crate/src/pool.rs:10:12}}\n{{#inclde ../../crate/src/pool.rs}}\n",
        );
        let found = problems(&dir);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].contains("lesson1.md:2:") && found[0].contains("starts at line 10"));
        assert!(found[1].contains("lesson1.md:3:") && found[1].contains("no `#inclde` helper"));
    }

    #[test]
    fn a_link_to_a_missing_page_and_a_missing_image() {
        let dir = sound_book("missing-link");
        dir.write(
            "docs/src/introduction.md",
            "# Introduction\n\nSee [lesson 5](lesson5.md).\n\n![chart](img/missing.svg)\n",
        );
        let found = problems(&dir);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].starts_with("docs/src/introduction.md:3: `lesson5.md`: no such file"));
        assert!(found[1].starts_with("docs/src/introduction.md:5: `img/missing.svg`: no such file"));
    }

    #[test]
    fn a_fragment_that_names_no_heading() {
        let dir = sound_book("fragment");
        dir.write(
            "docs/src/introduction.md",
            "# Introduction\n\n[x](lesson1.md#the-pool) [y](#introduction) [z](#nowhere)\n![c](img/chart.svg)\n",
        );
        let found = problems(&dir);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].contains("`#nowhere`"));
        assert!(found[1].contains(
            "`lesson1.md#the-pool`: docs/src/lesson1.md has no heading with id `the-pool`"
        ));
        assert!(found[1].contains("its ids: lesson-1, the-pool-and-its-queue"));
    }

    #[test]
    fn a_heading_from_an_included_page_counts() {
        let dir = sound_book("included-heading");
        dir.write("docs/src/generated/part.md", "## Included part\n\ntext\n");
        dir.write(
            "docs/src/lesson1.md",
            "# Lesson 1\n\n{{#include generated/part.md}}\n\n[here](#included-part)\n",
        );
        dir.write(
            "docs/src/introduction.md",
            "# Introduction\n\n[there](lesson1.md#included-part) ![c](img/chart.svg)\n",
        );
        // part.md is in no SUMMARY entry, but included: reachable.
        assert_eq!(problems(&dir), Vec::<String>::new());
    }

    #[test]
    fn a_fragment_in_an_included_page_names_a_heading_of_its_chapter() {
        let dir = sound_book("included-fragment");
        dir.write(
            "docs/src/generated/part.md",
            "[the queue](#the-queue) and [nowhere](#no-such-heading)\n",
        );
        dir.write(
            "docs/src/lesson1.md",
            "# Lesson 1\n\n## The queue\n\n{{#include generated/part.md}}\n",
        );
        assert_one(
            &dir,
            &[
                "docs/src/generated/part.md:1",
                "#no-such-heading",
                "docs/src/lesson1.md has no heading",
            ],
        );
    }

    #[test]
    fn a_transcript_typed_into_a_chapter() {
        let dir = sound_book("typed-transcript");
        dir.write(
            "docs/src/introduction.md",
            "# Introduction\n\n```text\n$ cargo test -p crate\nok\n```\n\n![a chart](img/chart.svg)\n",
        );
        assert_one(&dir, &["docs/src/introduction.md:4", "transcript typed"]);
        // The same lines in a generated page are a real run's.
        dir.write(
            "docs/src/introduction.md",
            "# Introduction\n\n{{#include generated/t.md}}\n\n![a chart](img/chart.svg)\n",
        );
        dir.write(
            "docs/src/generated/t.md",
            "```text\n$ cargo test -p crate\nok\n```\n",
        );
        assert_eq!(problems(&dir), Vec::<String>::new());
    }

    #[test]
    fn a_test_file_or_test_name_the_code_does_not_have() {
        let dir = sound_book("stale-test-names");
        dir.write(
            "crate/tests/pool.rs",
            "#[test]\nfn a_pool_runs_every_item() {}\n",
        );
        dir.write(
            "docs/src/introduction.md",
            "# Introduction\n\nThe test `a_pool_runs_every_item` in `tests/pool.rs` passes;\n\
             `tests/queue.rs` holds the test `a_queue_keeps_its_order_always`.\n\n\
             Another crate's `pool_max_idle_per_host` is its own API.\n\n\
             ![a chart](img/chart.svg)\n",
        );
        let found = problems(&dir);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(
            found[0].contains(":4: `a_queue_keeps_its_order_always`: no test"),
            "{found:#?}"
        );
        assert!(
            found[1].contains(":4: `tests/queue.rs`: no such file"),
            "{found:#?}"
        );
    }

    #[test]
    fn a_figure_quoted_from_a_table_must_still_be_its_value() {
        let dir = sound_book("figures");
        dir.write(
            "docs/src/generated/bench/speed.md",
            "| crawler | median time | × baseline | SYNs dropped |\n|---|---:|---:|---:|\n\
             | baseline: fetch | 0.254 s | 1.00× | 0 |\n| lesson 4 | 0.391 s | 1.54× | 1,933 |\n\n\
             Where the CPU goes:\n\n| crawler | user space | kernel |\n|---|---:|---:|\n\
             | lesson 4 | 0.200 s (17.5 µs a URL) | 0.090 s (7.9 µs a URL) |\n",
        );
        dir.write(
            "docs/src/introduction.md",
            "# Introduction\n\nLesson 4 took <!-- from speed.md, lesson 4, median time -->0.39 s,\n\
             **<!-- from speed.md, lesson 4, × baseline -->1.54×**, with\n\
             some <!-- from speed.md, lesson 4, SYNs dropped -->1,933 drops; the baseline\n\
             took <!-- from speed.md, baseline, median time -->0.26 s. Per URL, a second table:\n\
             user <!-- from speed.md, lesson 4, user space#2 -->17.5 µs and <!-- from speed.md, lesson 4, kernel -->0.09 s.\n\n\
             ![a chart](img/chart.svg)\n\n\
             {{#include generated/bench/speed.md}}\n",
        );
        assert_one(
            &dir,
            &[
                "docs/src/introduction.md:6",
                "`0.26` from speed.md (baseline, median time) is 0.25",
            ],
        );
    }

    #[test]
    fn a_measured_figure_in_prose_must_be_quoted_from_a_table_or_say_why_not() {
        let dir = sound_book("unmarked-figures");
        dir.write(
            "docs/src/generated/bench/speed.md",
            "| crawler | median time | × baseline |\n|---|---:|---:|\n\
             | lesson 4 | 0.391 s | 1.54× |\n",
        );
        dir.write(
            "docs/src/introduction.md",
            "# Introduction\n\n![a chart](img/chart.svg)\n\n{{#include generated/bench/speed.md}}\n\n\
             Lesson 4 took <!-- from speed.md, lesson 4, median time -->0.39 s, about 39 µs a page,\n\
             **<!-- from speed.md, lesson 4, × baseline -->1.54×** the baseline; its CPU, 0.40 s.\n\n\
             A fetch waiting costs 448 B; pages of 16 KiB, 100 ms apart, 3× the load, 1,000 URLs.\n\n\
             In code, `0.40 s` and\n\n```text\nreal 0.40 s\n```\n\n\
             <!-- not from a table: arithmetic -->\n10⁹ pages are 1.5 Gbit/s, 1.2 GB.\n\n\
             After the block again: 26 KiB.\n\n\
             - a list item whose second line starts with a marker:\n  \
             <!-- from speed.md, lesson 4, median time -->0.39 s, or 39 µs a page.\n",
        );
        let found = problems(&dir);
        let figures: Vec<&str> = found.iter().filter_map(|p| p.split('`').nth(1)).collect();
        assert_eq!(
            figures,
            ["39 µs", "0.40 s", "448 B", "26 KiB", "39 µs"],
            "{found:#?}"
        );
        assert!(found[0].contains("introduction.md:7"), "{found:#?}");
        // The list line that starts with its marker is raw HTML to Markdown.
        let raw: Vec<&String> = found.iter().filter(|p| p.contains("raw HTML")).collect();
        assert_eq!(raw.len(), 1, "{found:#?}");
        assert!(raw[0].contains("introduction.md:24"), "{raw:?}");
    }

    #[test]
    fn a_term_in_a_listing_before_the_section_that_teaches_it() {
        let dir = sound_book("term-order");
        dir.write(
            "docs/src/SUMMARY.md",
            "# Summary\n\n[Introduction](introduction.md)\n\n- [Lesson 1](lesson1.md)\n- [Glossary](glossary.md)\n",
        );
        dir.write(
            "docs/src/glossary.md",
            "# Glossary\n\n**waker** (`Waker`) — says poll me again.\n[lesson 1](lesson1.md#wakers)\n\n\
             **pool** — no code names, not checked. [lesson 1](lesson1.md#wakers)\n",
        );
        // Taught after the listing that uses it: one problem, on the entry.
        dir.write(
            "docs/src/lesson1.md",
            "# Lesson 1\n\n## The pool\n\n```rust\n{{#include ../../crate/src/pool.rs:pool}}\n```\n\n## Wakers\n\nA waker.\n",
        );
        dir.write(
            "crate/src/pool.rs",
            "// ANCHOR: pool\npub struct Pool(std::task::Waker);\n// ANCHOR_END: pool\n",
        );
        assert_one(
            &dir,
            &["glossary.md:3:", "`Waker`", "under \"The pool\"", "#wakers"],
        );
        // A longer name that merely contains it is not a use.
        dir.write(
            "crate/src/pool.rs",
            "// ANCHOR: pool\npub struct Pool(TaskWakerSlot);\n// ANCHOR_END: pool\n",
        );
        assert_eq!(problems(&dir), Vec::<String>::new());
        // Taught first, used after: sound.
        dir.write(
            "docs/src/lesson1.md",
            "# Lesson 1\n\n## Wakers\n\nA waker.\n\n## The pool\n\n```rust\nlet w: Waker;\n```\n",
        );
        assert_eq!(problems(&dir), Vec::<String>::new());
    }

    #[test]
    fn a_link_out_of_the_book() {
        let dir = sound_book("outside");
        dir.write(
            "docs/src/introduction.md",
            "# Introduction\n\n[the code](../../crate/src/pool.rs) ![c](img/chart.svg)\n",
        );
        assert_one(&dir, &["introduction.md:3:", "points outside docs/src"]);
    }

    #[test]
    fn a_page_missing_from_summary() {
        let dir = sound_book("unreachable");
        dir.write("docs/src/appendix.md", "# Appendix\n");
        assert_one(&dir, &["docs/src/appendix.md:", "not in SUMMARY.md"]);
    }

    #[test]
    fn links_and_helpers_in_code_are_ignored_but_includes_in_code_are_checked() {
        let dir = sound_book("code");
        dir.write(
            "docs/src/lesson1.md",
            "# Lesson 1\n\n```text\n[not a link](nowhere.md)\n```\n`[nor](this.md)`\n\
             ```rust\n{{#include ../../crate/src/nothere.rs}}\n```\n",
        );
        // mdBook expands includes everywhere, code blocks included.
        assert_one(&dir, &["lesson1.md:8:", "nothere.rs"]);
    }

    #[test]
    fn a_stale_diff_page() {
        let dir = sound_book("stale");
        dir.write("lesson1-a/src/lib.rs", "one\n");
        dir.write("lesson2-b/src/lib.rs", "two\n");
        pages::write(dir.path()).unwrap();
        // The page needs a place in the book, as it will have in SUMMARY.md.
        dir.write(
            "docs/src/SUMMARY.md",
            "[Introduction](introduction.md)\n- [Lesson 1](lesson1.md)\n- [Diff](generated/diffs/lesson1-lesson2.md)\n",
        );
        assert_eq!(problems(&dir), Vec::<String>::new());
        dir.write("lesson2-b/src/lib.rs", "three\n");
        assert_one(&dir, &["lesson1-lesson2.md is stale"]);
    }

    #[test]
    fn book_toml_settings_are_read() {
        let toml = read_book_toml(
            "[book]\nsrc = \"text\" # where\n[output.html]\nsmart-punctuation = false\n",
        )
        .unwrap();
        assert_eq!(toml.src, "text");
        assert!(!toml.smart_punctuation);
        assert!(read_book_toml("[book]\n").unwrap().smart_punctuation);
    }

    #[test]
    fn paths_normalize_and_decode() {
        assert_eq!(normalize(Path::new("a/./b/../c")), PathBuf::from("a/c"));
        assert_eq!(percent_decode("my%20page.md"), "my page.md");
        assert_eq!(percent_decode("100%"), "100%");
    }
}
