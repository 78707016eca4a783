//! # `transcripts`: the book's terminal transcripts, from real runs
//!
//! ```text
//! cargo run -p course-tools --bin transcripts -- --write   # run the commands, write the pages
//! cargo run -p course-tools --bin transcripts -- --check   # exit 1 if a page no longer matches
//! ```
//!
//! See [`course_tools::transcripts`].

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use course_tools::transcripts;

/// Run the commands of docs/transcripts/transcripts.toml and write (or
/// check) the transcript pages the book includes.
///
/// Exit status: 0 on success, 1 when --check finds a stale page, 2 on an error.
#[derive(Parser)]
#[command(group(ArgGroup::new("what").required(true).args(["write", "check"])))]
struct Cli {
    /// Write docs/src/generated/transcripts/*.md from fresh runs.
    #[arg(long)]
    write: bool,
    /// Exit 1 if a page no longer matches a fresh run (numbers aside).
    #[arg(long)]
    check: bool,
    /// The workspace root (default: the checkout around the current directory).
    #[arg(long)]
    root: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = course_tools::workspace_root(cli.root.as_deref()).and_then(|root| {
        if cli.write {
            transcripts::write(&root).map(|lines| (lines, Vec::new()))
        } else {
            transcripts::check(&root).map(|problems| (Vec::new(), problems))
        }
    });
    match result {
        Ok((wrote, problems)) => {
            for line in wrote {
                println!("transcripts: {line}");
            }
            for problem in &problems {
                eprintln!("transcripts: {problem}");
            }
            if problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("transcripts: {e:#}");
            ExitCode::from(2)
        }
    }
}
