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
//! so the book cannot drift from the crates. The work is done by
//! [`course_tools::lesson_diff`].
//!
//! The printed diff applies with `patch`: inside a copy of lesson 2's
//! directory, `patch -p1 < diff` turns its `src/` into lesson 3's.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{ArgGroup, Parser};
use course_tools::lesson_diff::{pages, tree};

/// The diff between two lessons' src/ trees, and the book's diff pages.
///
/// Exit status: 0 on success, 1 when --check finds a stale page, 2 on an error.
#[derive(Parser, Debug)]
#[command(group(ArgGroup::new("what").required(true).args(["lessons", "write", "check"])))]
struct Cli {
    /// Print the unified diff from lesson OLD to lesson NEW (`2 3` or `lesson2 lesson3`).
    #[arg(num_args = 2, value_names = ["OLD", "NEW"], value_parser = lesson_number)]
    lessons: Vec<u32>,
    /// Regenerate docs/src/generated/diffs/*.md.
    #[arg(long)]
    write: bool,
    /// Exit 1 if a generated page is stale.
    #[arg(long)]
    check: bool,
    /// The workspace root (default: the checkout around the current directory).
    #[arg(long)]
    root: Option<PathBuf>,
}

/// `3` or `lesson3`.
fn lesson_number(arg: &str) -> Result<u32, String> {
    arg.strip_prefix("lesson")
        .unwrap_or(arg)
        .parse()
        .map_err(|_| format!("not a lesson number: {arg:?}"))
}

fn run(cli: &Cli, root: PathBuf) -> Result<ExitCode> {
    if cli.write {
        let report = pages::write(&root)?;
        if report.is_empty() {
            println!("lesson-diff: every page is up to date");
        }
        for line in report {
            println!("{line}");
        }
    } else if cli.check {
        let problems = pages::check(&root)?;
        if !problems.is_empty() {
            for problem in &problems {
                eprintln!("lesson-diff: {problem}");
            }
            return Ok(ExitCode::from(1));
        }
        println!("lesson-diff: the diff pages are up to date");
    } else if let [old, new] = cli.lessons[..] {
        let lessons = tree::lessons(&root)?;
        let old = tree::find(&lessons, old)?;
        let new = tree::find(&lessons, new)?;
        for file in tree::diff_lessons(&root, old, new, tree::Markers::Keep)? {
            print!("{}", file.text);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = match course_tools::workspace_root(cli.root.as_deref()) {
        Ok(root) => root,
        Err(e) => {
            eprintln!("lesson-diff: {e:#}");
            return ExitCode::from(2);
        }
    };
    match run(&cli, root.clone()).with_context(|| format!("in {}", root.display())) {
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

    fn parse(line: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("lesson-diff").chain(line.split_whitespace()))
    }

    #[test]
    fn the_command_line_parses() {
        assert_eq!(parse("2 3").unwrap().lessons, [2, 3]);
        assert_eq!(parse("lesson1 lesson2").unwrap().lessons, [1, 2]);
        let check = parse("--root /w --check").unwrap();
        assert!(check.check && check.root == Some(PathBuf::from("/w")));
        assert!(parse("--write").unwrap().write);
        for bad in [
            "",
            "2",
            "2 3 4",
            "--write --check",
            "--write 2 3",
            "two three",
            "--root",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be an error");
        }
    }
}
