//! The lessons in a workspace, and the diff of two lessons' `src/` trees.
//!
//! A lesson is a directory `lessonN-name/` at the workspace root. Only its
//! `src/` is compared: that is where the concurrency model lives, while the
//! code every lesson shares sits in `shared/` and so can never show up in a
//! diff. Files are paired by their path inside `src/`; a file only one
//! lesson has is shown whole, against `/dev/null`, as `diff -N` and git do.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::diff;

/// Lines of context around each change, as `diff -u`.
pub const CONTEXT: usize = 3;

/// One lesson crate found at the workspace root.
#[derive(Clone, Debug)]
pub struct Lesson {
    /// The lesson's number, from the directory name (`lesson3-…` → 3).
    pub number: u32,
    /// The directory name, e.g. `lesson3-generators`: the prefix of every
    /// path in the diff headers.
    pub dir_name: String,
}

/// The lesson crates under `root`, by number. Two directories claiming one
/// number is an error: the diff would not know which to read.
pub fn lessons(root: &Path) -> Result<Vec<Lesson>> {
    let mut found: BTreeMap<u32, Lesson> = BTreeMap::new();
    let entries = fs::read_dir(root).with_context(|| format!("cannot list {}", root.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", root.display()))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let Some(number) = name
            .strip_prefix("lesson")
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(n, _)| n.parse::<u32>().ok())
        else {
            continue;
        };
        if !entry.path().join("src").is_dir() {
            continue;
        }
        let lesson = Lesson {
            number,
            dir_name: name,
        };
        if let Some(other) = found.insert(number, lesson.clone()) {
            bail!(
                "two directories for lesson {number}: {} and {}",
                other.dir_name,
                lesson.dir_name
            );
        }
    }
    Ok(found.into_values().collect())
}

/// The lesson numbered `number`, or an error naming the ones that exist.
pub fn find(lessons: &[Lesson], number: u32) -> Result<&Lesson> {
    lessons
        .iter()
        .find(|l| l.number == number)
        .with_context(|| {
            let known: Vec<String> = lessons.iter().map(|l| l.number.to_string()).collect();
            format!("no lesson {number} (found: {})", known.join(", "))
        })
}

/// The files under `dir`, as paths relative to it with `/` separators,
/// sorted so that every machine lists them in the same order.
fn files_under(dir: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, prefix)) = todo.pop() {
        let entries =
            fs::read_dir(&path).with_context(|| format!("cannot list {}", path.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot list {}", path.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = format!("{prefix}{name}");
            let full = entry.path();
            if full.is_dir() {
                todo.push((full, format!("{relative}/")));
            } else {
                out.insert(relative, full);
            }
        }
    }
    Ok(out)
}

/// How one file differs between the two lessons.
#[derive(Debug)]
pub struct FileDiff {
    /// The path inside `src/`, e.g. `crawler.rs`.
    pub path: String,
    /// What happened to the file.
    pub status: Status,
    /// Lines added (the `+` count of a diffstat).
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// The unified diff with its `---`/`+++` header; empty when unchanged.
    pub text: String,
}

/// What happened to a file between two lessons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Both lessons have it and it is byte for byte the same.
    Unchanged,
    /// Both lessons have it, with different contents.
    Changed,
    /// Only the newer lesson has it.
    Added,
    /// Only the older lesson has it.
    Removed,
}

/// Reads a source file. `None` stands for "not in this lesson".
fn read(path: Option<&PathBuf>) -> Result<Option<Vec<u8>>> {
    path.map(|p| fs::read(p).with_context(|| format!("cannot read {}", p.display())))
        .transpose()
}

/// What a diff shows of the `// ANCHOR: name` and `// ANCHOR_END: name`
/// lines that mark the listings the book includes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markers {
    /// Every line, as `diff -ru` shows it.
    Keep,
    /// Without the markers: they serve `{{#include}}`, not the reader, and
    /// the book's diff pages leave them out.
    Drop,
}

/// `text` without its anchor-marker lines, when `markers` says so.
pub fn with_markers(text: &str, markers: Markers) -> std::borrow::Cow<'_, str> {
    let is_marker = |line: &str| {
        let line = line.trim();
        line.starts_with("// ANCHOR: ") || line.starts_with("// ANCHOR_END: ")
    };
    if markers == Markers::Keep || !text.lines().any(is_marker) {
        return text.into();
    }
    text.split_inclusive('\n')
        .filter(|line| !is_marker(line))
        .collect::<String>()
        .into()
}

/// The diff of every file in `old`'s and `new`'s `src/` trees, sorted by
/// path. Unchanged files are listed too (with no text), so a summary can
/// show the whole tree.
pub fn diff_lessons(
    root: &Path,
    old: &Lesson,
    new: &Lesson,
    markers: Markers,
) -> Result<Vec<FileDiff>> {
    let old_files = files_under(&root.join(&old.dir_name).join("src"))?;
    let new_files = files_under(&root.join(&new.dir_name).join("src"))?;
    let paths: BTreeSet<&String> = old_files.keys().chain(new_files.keys()).collect();

    let mut out = Vec::new();
    for path in paths {
        let strip = |bytes: Option<Vec<u8>>| {
            bytes.map(|bytes| match String::from_utf8(bytes) {
                Ok(text) => with_markers(&text, markers).into_owned().into_bytes(),
                Err(err) => err.into_bytes(),
            })
        };
        let before = strip(read(old_files.get(path))?);
        let after = strip(read(new_files.get(path))?);
        let status = match (&before, &after) {
            (Some(a), Some(b)) if a == b => Status::Unchanged,
            (Some(_), Some(_)) => Status::Changed,
            (None, _) => Status::Added,
            (_, None) => Status::Removed,
        };
        let label = |lesson: &Lesson, present: bool| {
            if present {
                format!("{}/src/{path}", lesson.dir_name)
            } else {
                "/dev/null".to_string()
            }
        };
        let old_label = label(old, before.is_some());
        let new_label = label(new, after.is_some());
        let before = before.unwrap_or_default();
        let after = after.unwrap_or_default();
        let (text, added, removed) =
            match (std::str::from_utf8(&before), std::str::from_utf8(&after)) {
                (Ok(a), Ok(b)) => {
                    let (added, removed) = diff::counts(a, b);
                    (
                        diff::unified(&old_label, &new_label, a, b, CONTEXT),
                        added,
                        removed,
                    )
                }
                // Not text: say so, as diff does, rather than print bytes.
                _ if status == Status::Unchanged => (String::new(), 0, 0),
                _ => (
                    format!("Binary files {old_label} and {new_label} differ\n"),
                    0,
                    0,
                ),
            };
        out.push(FileDiff {
            path: path.clone(),
            status,
            added,
            removed,
            text,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdir::TestDir;

    #[test]
    fn lessons_are_found_by_number_and_only_with_a_src_dir() {
        let dir = TestDir::new("lessons");
        dir.write("lesson2-callbacks/src/lib.rs", "");
        dir.write("lesson1-threadpool/src/lib.rs", "");
        dir.write("lesson3-no-src/Cargo.toml", "");
        dir.write("shared/src/lib.rs", "");
        dir.write("lessonX-odd/src/lib.rs", "");
        let found = lessons(dir.path()).unwrap();
        let names: Vec<&str> = found.iter().map(|l| l.dir_name.as_str()).collect();
        assert_eq!(names, ["lesson1-threadpool", "lesson2-callbacks"]);
        assert_eq!(find(&found, 2).unwrap().number, 2);
        let missing = find(&found, 7).unwrap_err().to_string();
        assert!(missing.contains("found: 1, 2"), "{missing}");
    }

    #[test]
    fn two_directories_for_one_lesson_are_an_error() {
        let dir = TestDir::new("dup-lesson");
        dir.write("lesson1-a/src/lib.rs", "");
        dir.write("lesson1-b/src/lib.rs", "");
        assert!(lessons(dir.path()).is_err());
    }

    #[test]
    fn files_pair_by_path_and_one_sided_files_diff_against_dev_null() {
        let dir = TestDir::new("pairs");
        dir.write("lesson1-a/src/lib.rs", "same\n");
        dir.write("lesson1-a/src/pool.rs", "p\n");
        dir.write("lesson1-a/src/crawler.rs", "one\n");
        dir.write("lesson2-b/src/lib.rs", "same\n");
        dir.write("lesson2-b/src/crawler.rs", "two\n");
        dir.write("lesson2-b/src/engine/event_loop.rs", "e\nf\n");
        let found = lessons(dir.path()).unwrap();
        let diffs = diff_lessons(dir.path(), &found[0], &found[1], Markers::Keep).unwrap();
        let summary: Vec<(&str, Status, usize, usize)> = diffs
            .iter()
            .map(|d| (d.path.as_str(), d.status, d.added, d.removed))
            .collect();
        assert_eq!(
            summary,
            [
                ("crawler.rs", Status::Changed, 1, 1),
                ("engine/event_loop.rs", Status::Added, 2, 0),
                ("lib.rs", Status::Unchanged, 0, 0),
                ("pool.rs", Status::Removed, 0, 1),
            ]
        );
        assert_eq!(
            diffs[0].text,
            "--- lesson1-a/src/crawler.rs\n+++ lesson2-b/src/crawler.rs\n@@ -1 +1 @@\n-one\n+two\n"
        );
        assert_eq!(
            diffs[1].text,
            "--- /dev/null\n+++ lesson2-b/src/engine/event_loop.rs\n@@ -0,0 +1,2 @@\n+e\n+f\n"
        );
        assert_eq!(diffs[2].text, "");
        assert_eq!(
            diffs[3].text,
            "--- lesson1-a/src/pool.rs\n+++ /dev/null\n@@ -1 +0,0 @@\n-p\n"
        );
    }

    #[test]
    fn a_file_that_is_not_utf8_is_reported_not_printed() {
        let dir = TestDir::new("binary");
        dir.write("lesson1-a/src/blob.bin", "x");
        dir.write("lesson2-b/src/blob.bin", "y");
        fs::write(dir.path().join("lesson2-b/src/blob.bin"), [0xff, 0xfe]).unwrap();
        let found = lessons(dir.path()).unwrap();
        let diffs = diff_lessons(dir.path(), &found[0], &found[1], Markers::Keep).unwrap();
        assert_eq!(
            diffs[0].text,
            "Binary files lesson1-a/src/blob.bin and lesson2-b/src/blob.bin differ\n"
        );
    }

    #[test]
    fn anchor_markers_can_be_left_out() {
        let text =
            "fn a() {}\n// ANCHOR: b\nfn b() {}\n    // ANCHOR_END: b\n// ANCHOR is a word\n";
        assert_eq!(with_markers(text, Markers::Keep), text);
        assert_eq!(
            with_markers(text, Markers::Drop),
            "fn a() {}\nfn b() {}\n// ANCHOR is a word\n"
        );
        let dir = TestDir::new("markers");
        dir.write("lesson1-a/src/lib.rs", "fn a() {}\n");
        dir.write(
            "lesson2-b/src/lib.rs",
            "// ANCHOR: a\nfn a() {}\n// ANCHOR_END: a\n",
        );
        let found = lessons(dir.path()).unwrap();
        let kept = diff_lessons(dir.path(), &found[0], &found[1], Markers::Keep).unwrap();
        assert_eq!(kept[0].status, Status::Changed);
        let dropped = diff_lessons(dir.path(), &found[0], &found[1], Markers::Drop).unwrap();
        assert_eq!(dropped[0].status, Status::Unchanged);
    }
}
