//! # `lesson-diff`: what changed from one lesson to the next
//!
//! ```text
//! cargo run -p course-tools --bin lesson-diff -- 2 3       # print the diff, lesson 2 → 3
//! cargo run -p course-tools --bin lesson-diff -- --write   # regenerate the book's diff pages
//! cargo run -p course-tools --bin lesson-diff -- --check   # exit 1 if a page is stale
//! ```
//!
//! Every lesson crate has the same skeleton (`lib.rs`, `crawler.rs`,
//! `fetch.rs`, the engine modules), so the diff of two lessons' `src/`
//! trees reads as a lesson of its own: the concurrency model changing and
//! nothing else. This tool prints that diff and writes it into the book,
//! one page per pair of adjacent lessons, in `docs/src/generated/diffs/`.
//! `book-check` (run by CI) fails when a page no longer matches the code,
//! so the book cannot drift from the crates.
//!
//! | module | what it does |
//! |---|---|
//! | [`diff`] | Myers' line diff and the unified format, written here (no crate) |
//! | [`tree`] | finding the lessons, pairing their files, diffing each pair |
//! | [`pages`] | the Markdown pages, writing them, checking they are fresh |
//!
//! The printed diff applies with `patch`: inside a copy of lesson 2's
//! directory, `patch -p1 < diff` turns its `src/` into lesson 3's.

mod diff;
mod pages;
#[cfg(test)]
mod testdir;
mod tree;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

const USAGE: &str = "\
lesson-diff: the diff between two lessons' src/ trees, and the book's diff pages

Usage: lesson-diff [--root DIR] OLD NEW   print the unified diff, lesson OLD -> NEW
       lesson-diff [--root DIR] --write   regenerate docs/src/generated/diffs/*.md
       lesson-diff [--root DIR] --check   exit 1 if a generated page is stale

Options:
  --root DIR   the workspace root (default: the checkout around the current directory)
  -h, --help   print this help

Exit status: 0 on success, 1 when --check finds a stale page, 2 on an error.
";

/// What the command line asked for.
#[derive(Debug, PartialEq)]
enum Command {
    /// Print the diff from lesson `.0` to lesson `.1`.
    Print(u32, u32),
    /// Regenerate the pages.
    Write,
    /// Check the pages are fresh.
    Check,
    /// Print the usage.
    Help,
}

/// The command and the workspace root, or a one-line usage error.
fn parse(args: impl IntoIterator<Item = String>) -> Result<(Command, Option<PathBuf>), String> {
    let mut root = None;
    let mut numbers = Vec::new();
    let mut command = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let set = |command: &mut Option<Command>, new: Command| match command {
            Some(_) => Err("give one of OLD NEW, --write or --check".to_string()),
            None => {
                *command = Some(new);
                Ok(())
            }
        };
        match arg.as_str() {
            "-h" | "--help" => return Ok((Command::Help, None)),
            "--write" => set(&mut command, Command::Write)?,
            "--check" => set(&mut command, Command::Check)?,
            "--root" => {
                let dir = args.next().ok_or("--root needs a directory")?;
                root = Some(PathBuf::from(dir));
            }
            _ => {
                let n = arg
                    .strip_prefix("lesson")
                    .unwrap_or(&arg)
                    .parse::<u32>()
                    .map_err(|_| format!("not a lesson number: {arg:?}"))?;
                numbers.push(n);
            }
        }
    }
    let command = match (command, numbers.as_slice()) {
        (Some(c), []) => c,
        (None, &[old, new]) => Command::Print(old, new),
        (None, []) => return Err("nothing to do".to_string()),
        _ => return Err("give one of OLD NEW, --write or --check".to_string()),
    };
    Ok((command, root))
}

fn run(command: Command, root: PathBuf) -> Result<ExitCode> {
    match command {
        Command::Help => print!("{USAGE}"),
        Command::Print(old, new) => {
            let lessons = tree::lessons(&root)?;
            let old = tree::find(&lessons, old)?;
            let new = tree::find(&lessons, new)?;
            for file in tree::diff_lessons(&root, old, new, tree::Markers::Keep)? {
                print!("{}", file.text);
            }
        }
        Command::Write => {
            let report = pages::write(&root)?;
            if report.is_empty() {
                println!("lesson-diff: every page is up to date");
            }
            for line in report {
                println!("{line}");
            }
        }
        Command::Check => {
            let problems = pages::check(&root)?;
            if !problems.is_empty() {
                for problem in &problems {
                    eprintln!("lesson-diff: {problem}");
                }
                return Ok(ExitCode::from(1));
            }
            println!("lesson-diff: the diff pages are up to date");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let (command, root) = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("lesson-diff: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let root = match course_tools::workspace_root(root.as_deref()) {
        Ok(root) => root,
        Err(e) => {
            eprintln!("lesson-diff: {e:#}");
            return ExitCode::from(2);
        }
    };
    match run(command, root.clone()).with_context(|| format!("in {}", root.display())) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lesson-diff: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_command_line_parses() {
        assert_eq!(parse(args("2 3")), Ok((Command::Print(2, 3), None)));
        assert_eq!(
            parse(args("lesson1 lesson2")),
            Ok((Command::Print(1, 2), None))
        );
        assert_eq!(
            parse(args("--root /w --check")),
            Ok((Command::Check, Some(PathBuf::from("/w"))))
        );
        assert_eq!(parse(args("--write")), Ok((Command::Write, None)));
        assert_eq!(parse(args("-h")), Ok((Command::Help, None)));
        for bad in [
            "",
            "2",
            "2 3 4",
            "--write --check",
            "--write 2 3",
            "two three",
            "--root",
        ] {
            assert!(parse(args(bad)).is_err(), "{bad:?} should be an error");
        }
    }
}
