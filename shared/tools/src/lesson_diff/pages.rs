//! The book's diff pages: one Markdown page per pair of adjacent lessons.
//!
//! Each page has a heading, a table of the files with their added and
//! removed line counts, and one ```` ```diff ```` block per changed file
//! between `<!-- ANCHOR: … -->` comments, so a chapter can include a single
//! file's diff with mdBook's `{{#include …:crawler_rs}}` while the page
//! itself shows them all. The comments render as nothing.
//!
//! Two things in a diff could break the page, and both are handled here
//! rather than left to luck: a source line holding three backticks would
//! close the code block early (the fence is made longer than any run of
//! backticks in the diff), and a source line holding mdBook's own
//! `{{#include …}}` syntax would be expanded by mdBook (it is escaped, and
//! the escaping is verified by undoing it the way mdBook does).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use anyhow::{bail, Context, Result};
use regex::Regex;

use super::tree::{self, FileDiff, Lesson, Status};

/// Where the pages go, relative to the workspace root.
pub const DIFFS_DIR: &str = "docs/src/generated/diffs";

/// The command that regenerates the pages, quoted in the pages and in
/// every "stale" message.
pub const WRITE_COMMAND: &str = "cargo run -p course-tools --bin lesson-diff -- --write";

/// mdBook's pattern for its `{{#…}}` helpers (mdbook-driver 0.5,
/// `links.rs`): an escaped helper `\{{#…}}`, or a helper with its type and
/// arguments. The arguments may run over several lines.
static MDBOOK_HELPER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\\{\{\#.*\}\}|\{\{\s*\#([a-zA-Z0-9_]+)\s+([^}]+)\}\}").expect("constant regex")
});

/// One generated page.
#[derive(Debug)]
pub struct Page {
    /// Its path relative to the workspace root.
    pub path: PathBuf,
    /// Its full text.
    pub text: String,
}

/// The file name of the page for `old` → `new`: `lesson1-lesson2.md`.
pub fn page_name(old: &Lesson, new: &Lesson) -> String {
    format!("lesson{}-lesson{}.md", old.number, new.number)
}

/// An HTML id the way mdBook derives one from a heading's text (mdbook-html
/// 0.5, `id_from_content`): lowercase; letters, digits, `_` and `-` kept;
/// whitespace becomes `-`; everything else is dropped. `book-check` uses it
/// to check `#fragment` links, and the pages use it to link their own
/// sections.
pub fn id_from_content(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|ch| {
            if ch.is_alphanumeric() || ch == '_' || ch == '-' {
                Some(ch)
            } else if ch.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The anchor name for one file's diff: the path with anything mdBook's
/// anchor pattern (`[\w_-]+`) would stop at replaced by `_`, so
/// `crawler.rs` → `crawler_rs`.
pub fn anchor_name(path: &str) -> String {
    path.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `text` with every mdBook helper escaped, so the page shows it literally.
///
/// mdBook turns `\{{#x}}` into `{{#x}}` and expands `{{#x}}`; so a backslash
/// goes in front of every match of its pattern, escaped or not. The result
/// is then run through mdBook's own rule and must come back to `text`; if it
/// does not (a helper split over lines cannot be escaped), the page is not
/// written.
fn escape_mdbook_helpers(text: &str) -> Result<String> {
    let mut escaped = String::with_capacity(text.len());
    let (mut last, mut from) = (0, 0);
    while let Some(found) = MDBOOK_HELPER.find_at(text, from) {
        escaped.push_str(&text[last..found.start()]);
        escaped.push('\\');
        last = found.start();
        // mdBook's escaped form (`\{{#.*}}`, greedy) runs to the last `}}`
        // on the line, so it also hides any later helper on that line:
        // those must not get a backslash of their own.
        let line_end = text[found.start()..]
            .find('\n')
            .map_or(text.len(), |i| found.start() + i);
        let swallowed = text[found.start()..line_end]
            .rfind("}}")
            .map_or(found.end(), |i| found.start() + i + 2);
        from = swallowed.max(found.end());
    }
    escaped.push_str(&text[last..]);

    // What mdBook will make of it: escaped helpers lose their backslash;
    // any other helper would be expanded, which must not happen.
    let mut shown = String::with_capacity(escaped.len());
    let mut last = 0;
    for found in MDBOOK_HELPER.find_iter(&escaped) {
        let Some(unescaped) = found.as_str().strip_prefix('\\') else {
            bail!(
                "the diff contains mdBook helper syntax that cannot be escaped: {:?}",
                found.as_str()
            );
        };
        shown.push_str(&escaped[last..found.start()]);
        shown.push_str(unescaped);
        last = found.end();
    }
    shown.push_str(&escaped[last..]);
    if shown != text {
        bail!("escaping mdBook helper syntax in the diff did not round-trip");
    }
    Ok(escaped)
}

/// A code fence longer than any run of backticks in `text`, so no line of
/// the diff can close the block.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

/// The "What changed since lesson N" part of a lesson's `lib.rs` header,
/// as Markdown: from that line to the end of its paragraph, or of the list
/// that follows it when the line ends with a colon. Rustdoc's links
/// (`` [`event_loop`] ``) become plain code spans. `None` when the header
/// has no such part.
pub fn what_changed(lib_rs: &str) -> Option<String> {
    static DOC_LINK: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\[(`[^`\]]+`)\](\([^)]*\))?").expect("constant regex"));
    let doc: Vec<&str> = lib_rs
        .lines()
        .map_while(|line| line.strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect();
    let start = doc
        .iter()
        .position(|line| line.starts_with("What changed since lesson"))?;
    let after = doc[start + 1..].iter().copied();
    let mut lines = vec![doc[start]];
    if doc[start].trim_end().ends_with(':') {
        // The list after the heading, past the blank line between them.
        lines.push("");
        lines.extend(
            after
                .skip_while(|line| line.is_empty())
                .take_while(|line| !line.is_empty()),
        );
    } else {
        lines.extend(after.take_while(|line| !line.is_empty()));
    }
    let text = lines.join("\n");
    Some(DOC_LINK.replace_all(&text, "$1").into_owned())
}

/// One line that names the files a step adds, drops and changes.
fn files_line(diffs: &[FileDiff], new: &Lesson) -> String {
    let names = |status: Status| {
        diffs
            .iter()
            .filter(|f| f.status == status)
            .map(|f| format!("`{}`", f.path))
            .collect::<Vec<_>>()
    };
    let mut parts = Vec::new();
    for (status, what) in [
        (Status::Added, format!("new in lesson {}", new.number)),
        (Status::Removed, "gone".to_string()),
        (Status::Changed, "changed".to_string()),
        (Status::Unchanged, "the same".to_string()),
    ] {
        let files = names(status);
        if !files.is_empty() {
            parts.push(format!("{what}: {}", files.join(", ")));
        }
    }
    format!("Files {}.", parts.join("; "))
}

/// The Markdown page for `old` → `new`, opening with `what_changed` (from
/// the newer lesson's header) when there is one.
pub fn render_page(
    old: &Lesson,
    new: &Lesson,
    diffs: &[FileDiff],
    what_changed: Option<&str>,
) -> Result<String> {
    let mut page = String::new();
    let _ = writeln!(
        page,
        "<!-- Generated from the lessons' code by `{WRITE_COMMAND}`. Do not edit: \
         `book-check` fails when this page no longer matches the code. -->\n"
    );
    let _ = writeln!(
        page,
        "# Lesson {} → lesson {}: the diff\n",
        old.number, new.number
    );
    if let Some(what_changed) = what_changed {
        let _ = writeln!(page, "{what_changed}\n");
    }
    let _ = writeln!(page, "{}\n", files_line(diffs, new));
    let _ = writeln!(
        page,
        "Below is everything that changed in `src/` from `{}` to `{}`, generated \
         from the code (the `// ANCHOR` lines that mark the book's listings are \
         left out). What both lessons use from the `shared` crate is the same \
         for both, so it never shows up here. To see the same diff in a terminal:\n",
        old.dir_name, new.dir_name
    );
    let _ = writeln!(
        page,
        "```text\ncargo run -p course-tools --bin lesson-diff -- {} {}\n```\n",
        old.number, new.number
    );

    let _ = writeln!(page, "| file | change | added | removed |");
    let _ = writeln!(page, "|---|---|--:|--:|");
    let (mut total_added, mut total_removed) = (0, 0);
    for file in diffs {
        total_added += file.added;
        total_removed += file.removed;
        let name = format!("`{}`", file.path);
        let (cell, change) = match file.status {
            Status::Unchanged => (name, "unchanged".to_string()),
            status => {
                let heading_id = id_from_content(&file.path);
                let change = match status {
                    Status::Added => format!("new in lesson {}", new.number),
                    Status::Removed => format!("gone in lesson {}", new.number),
                    _ => "changed".to_string(),
                };
                (format!("[{name}](#{heading_id})"), change)
            }
        };
        let _ = writeln!(
            page,
            "| {cell} | {change} | {} | {} |",
            count(file.added, '+'),
            count(file.removed, '-')
        );
    }
    let _ = writeln!(
        page,
        "| **total** | | {} | {} |",
        count(total_added, '+'),
        count(total_removed, '-')
    );

    for file in diffs.iter().filter(|f| f.status != Status::Unchanged) {
        let text = escape_mdbook_helpers(&file.text)
            .with_context(|| format!("in the diff of {}", file.path))?;
        let fence = fence_for(&text);
        let anchor = anchor_name(&file.path);
        let _ = write!(
            page,
            "\n## `{}`\n\n<!-- ANCHOR: {anchor} -->\n{fence}diff\n{text}{fence}\n<!-- ANCHOR_END: {anchor} -->\n",
            file.path
        );
    }
    Ok(page)
}

/// `+12`, `-3`, or an empty cell for zero (easier to scan than a column of
/// zeros).
fn count(n: usize, sign: char) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("{sign}{n}")
    }
}

/// Every page the lessons under `root` generate: one per adjacent pair.
pub fn generate(root: &Path) -> Result<Vec<Page>> {
    let lessons = tree::lessons(root)?;
    let mut pages = Vec::new();
    for pair in lessons.windows(2) {
        let (old, new) = (&pair[0], &pair[1]);
        let diffs = tree::diff_lessons(root, old, new, tree::Markers::Drop)?;
        let lib_rs = root.join(&new.dir_name).join("src").join("lib.rs");
        let what_changed = fs::read_to_string(&lib_rs)
            .ok()
            .and_then(|text| what_changed(&text));
        pages.push(Page {
            path: Path::new(DIFFS_DIR).join(page_name(old, new)),
            text: render_page(old, new, &diffs, what_changed.as_deref())
                .with_context(|| format!("cannot render {}", page_name(old, new)))?,
        });
    }
    Ok(pages)
}

/// The `.md` files now in the diffs folder, relative to `root`.
fn existing_pages(root: &Path) -> Result<Vec<PathBuf>> {
    let dir = root.join(DIFFS_DIR);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    for entry in fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            found.push(Path::new(DIFFS_DIR).join(name));
        }
    }
    found.sort();
    Ok(found)
}

/// Writes every page (only those whose text changed, so file times stay put)
/// and removes pages no lesson pair generates any more. Returns one line per
/// file touched.
pub fn write(root: &Path) -> Result<Vec<String>> {
    let pages = generate(root)?;
    let dir = root.join(DIFFS_DIR);
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut report = Vec::new();
    for page in &pages {
        let full = root.join(&page.path);
        if fs::read_to_string(&full).ok().as_deref() != Some(page.text.as_str()) {
            fs::write(&full, &page.text)
                .with_context(|| format!("cannot write {}", full.display()))?;
            report.push(format!("wrote {}", page.path.display()));
        }
    }
    for old in existing_pages(root)? {
        if !pages.iter().any(|p| p.path == old) {
            let full = root.join(&old);
            fs::remove_file(&full).with_context(|| format!("cannot remove {}", full.display()))?;
            report.push(format!("removed {} (no such lesson pair)", old.display()));
        }
    }
    Ok(report)
}

/// The pages that differ from what the code generates now: stale, missing,
/// or left over from a lesson pair that no longer exists. Empty when fresh.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let pages = generate(root)?;
    let mut problems = Vec::new();
    for page in &pages {
        match fs::read_to_string(root.join(&page.path)) {
            Ok(text) if text == page.text => {}
            Ok(_) => problems.push(format!(
                "{} is stale: the lessons' code changed since it was generated (run `{WRITE_COMMAND}`)",
                page.path.display()
            )),
            Err(_) => problems.push(format!(
                "{} is missing (run `{WRITE_COMMAND}`)",
                page.path.display()
            )),
        }
    }
    for old in existing_pages(root)? {
        if !pages.iter().any(|p| p.path == old) {
            problems.push(format!(
                "{} is not generated from any pair of lessons (run `{WRITE_COMMAND}` to remove it)",
                old.display()
            ));
        }
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdir::TestDir;

    /// A workspace with two small lessons.
    fn two_lessons() -> TestDir {
        let dir = TestDir::new("pages");
        dir.write("lesson1-threads/src/lib.rs", "//! one\npub fn crawl() {}\n");
        dir.write("lesson1-threads/src/pool.rs", "pool\n");
        dir.write("lesson1-threads/src/main.rs", "fn main() {}\n");
        dir.write("lesson2-loop/src/lib.rs", "//! two\npub fn crawl() {}\n");
        dir.write("lesson2-loop/src/event_loop.rs", "a\nb\n");
        dir.write("lesson2-loop/src/main.rs", "fn main() {}\n");
        dir
    }

    #[test]
    fn a_page_has_a_heading_a_summary_and_one_anchored_block_per_changed_file() {
        let dir = two_lessons();
        let pages = generate(dir.path()).unwrap();
        assert_eq!(pages.len(), 1);
        assert_eq!(
            pages[0].path,
            Path::new("docs/src/generated/diffs/lesson1-lesson2.md")
        );
        let text = &pages[0].text;
        assert!(
            text.contains("\n# Lesson 1 → lesson 2: the diff\n"),
            "{text}"
        );
        assert!(
            text.contains("| [`event_loop.rs`](#event_looprs) | new in lesson 2 | +2 |  |\n"),
            "{text}"
        );
        assert!(
            text.contains("| [`lib.rs`](#librs) | changed | +1 | -1 |\n"),
            "{text}"
        );
        assert!(text.contains("| `main.rs` | unchanged |  |  |\n"), "{text}");
        assert!(
            text.contains("| [`pool.rs`](#poolrs) | gone in lesson 2 |  | -1 |\n"),
            "{text}"
        );
        assert!(text.contains("| **total** | | +3 | -2 |\n"), "{text}");
        assert!(text.contains(
            "\n## `lib.rs`\n\n<!-- ANCHOR: lib_rs -->\n```diff\n--- lesson1-threads/src/lib.rs\n+++ lesson2-loop/src/lib.rs\n@@ -1,2 +1,2 @@\n-//! one\n+//! two\n pub fn crawl() {}\n```\n<!-- ANCHOR_END: lib_rs -->\n"
        ), "{text}");
        assert!(
            !text.contains("## `main.rs`"),
            "unchanged files get no section"
        );
        // Sections follow the path order: event_loop, lib, pool.
        let at = |s: &str| text.find(s).unwrap();
        assert!(at("## `event_loop.rs`") < at("## `lib.rs`"));
        assert!(at("## `lib.rs`") < at("## `pool.rs`"));
        assert!(
            text.contains(
                "Files new in lesson 2: `event_loop.rs`; gone: `pool.rs`; \
                 changed: `lib.rs`; the same: `main.rs`.\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_step_is_summed_up_from_the_newer_lessons_header() {
        let paragraph = "//! # Lesson 2\n//!\n//! Teaches things.\n//!\n\
                         //! What changed since lesson 1: the pool is gone.\n\
                         //! [`crawl`] runs a loop.\n//!\n//! More.\n\nuse x;\n";
        assert_eq!(
            what_changed(paragraph).as_deref(),
            Some("What changed since lesson 1: the pool is gone.\n`crawl` runs a loop.")
        );
        let list = "//! What changed since lesson 3:\n//!\n//! - a [`Queue`](crate::queue);\n\
                    //! - `sleep`.\n//!\n//! | table |\n";
        assert_eq!(
            what_changed(list).as_deref(),
            Some("What changed since lesson 3:\n\n- a `Queue`;\n- `sleep`.")
        );
        assert_eq!(what_changed("//! Nothing of the kind.\n"), None);
        // Only the header counts, not a comment further down.
        assert_eq!(
            what_changed("//! A.\nfn f() {}\n//! What changed since lesson 1: x\n"),
            None
        );
    }

    #[test]
    fn write_then_check_is_fresh_and_an_edit_makes_it_stale() {
        let dir = two_lessons();
        let written = write(dir.path()).unwrap();
        assert_eq!(
            written,
            ["wrote docs/src/generated/diffs/lesson1-lesson2.md"]
        );
        assert!(check(dir.path()).unwrap().is_empty());
        // Writing again touches nothing.
        assert!(write(dir.path()).unwrap().is_empty());

        dir.write("lesson2-loop/src/event_loop.rs", "a\nb\nc\n");
        let problems = check(dir.path()).unwrap();
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].contains("lesson1-lesson2.md is stale"),
            "{problems:?}"
        );
    }

    #[test]
    fn missing_and_left_over_pages_are_reported_and_fixed_by_write() {
        let dir = two_lessons();
        dir.write("docs/src/generated/diffs/lesson2-lesson3.md", "old\n");
        let problems = check(dir.path()).unwrap();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("lesson1-lesson2.md is missing"));
        assert!(problems[1].contains("lesson2-lesson3.md is not generated"));
        let report = write(dir.path()).unwrap();
        assert!(report[1].starts_with("removed docs/src/generated/diffs/lesson2-lesson3.md"));
        assert!(check(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn backticks_in_the_code_lengthen_the_fence() {
        assert_eq!(fence_for("+let x = 1;\n"), "```");
        assert_eq!(fence_for(" ```\n"), "````");
        assert_eq!(fence_for("+//! `````text\n"), "``````");
    }

    #[test]
    fn mdbook_helpers_in_the_code_are_escaped_and_come_back_verbatim() {
        let text = "+// {{#include x.rs}} in a comment\n+// \\{{#title t}} escaped\n";
        assert_eq!(
            escape_mdbook_helpers(text).unwrap(),
            "+// \\{{#include x.rs}} in a comment\n+// \\\\{{#title t}} escaped\n"
        );
        // One backslash per line: mdBook's escape runs to the line's last `}}`.
        let two = "+{{#include a.rs}} and {{#include b.rs}}\n";
        assert_eq!(
            escape_mdbook_helpers(two).unwrap(),
            "+\\{{#include a.rs}} and {{#include b.rs}}\n"
        );
        // `{{ #include` (space before #) has no escaped form mdBook knows,
        // and neither has a helper split over lines: refuse rather than
        // let mdBook expand it.
        let spaced = "+{{ #include y.rs }}\n";
        assert!(escape_mdbook_helpers(spaced).is_err());
        assert!(escape_mdbook_helpers("+{{#include\n+ y.rs}}\n").is_err());
        // Text without helpers is left alone, braces and all.
        assert_eq!(escape_mdbook_helpers("+{{ x }}\n").unwrap(), "+{{ x }}\n");
    }

    #[test]
    fn ids_and_anchor_names_follow_mdbook() {
        assert_eq!(id_from_content("event_loop.rs"), "event_looprs");
        assert_eq!(id_from_content(" Why a Pool? "), "why-a-pool");
        assert_eq!(id_from_content("Über-Kapitel 2"), "über-kapitel-2");
        assert_eq!(anchor_name("timers/mod.rs"), "timers_mod_rs");
    }
}
