//! # What does one fetch in flight cost? Threads against callbacks
//!
//! ```text
//! cargo run --release -p lesson2-callbacks --example callback_memory -- 1000 5000
//! ```
//!
//! For each N, this starts the course's test server with a page of N links
//! to pages that answer only after a delay, then crawls it twice, each time
//! in a fresh child process:
//!
//! - lesson 1 with `--threads N`: N threads, each blocked in `read`;
//! - lesson 2: one thread, N `Fetcher`s waiting in the event loop.
//!
//! While every fetch is waiting, the crawler holds N of them in flight at
//! once. The child reads its peak resident memory (`VmHWM` in
//! `/proc/self/status`) when the crawl is over, subtracts what it used
//! before the crawl began, and divides by the achieved concurrency. The
//! server runs in this (the parent) process, so its memory is not counted.
//!
//! Options: `--delay SECS` (how long each slow page waits, default 5: long
//! enough for lesson 1 to start N threads before the first answer).

use std::process::ExitCode;

use shared::fixtures::memory::{memory_per_fetch, Subject};
use shared::Lesson;

fn run(args: &[String]) -> anyhow::Result<()> {
    memory_per_fetch(
        args,
        &[
            Subject {
                name: "lesson1",
                label: "lesson 1, {n} threads",
                lesson: Lesson::One,
                crawl: lesson1_threadpool::crawl,
            },
            Subject {
                name: "lesson2",
                label: "lesson 2, callbacks",
                lesson: Lesson::Two,
                crawl: lesson2_callbacks::crawl,
            },
        ],
    )?;
    if args.first().is_some_and(|a| a == "--child") {
        return Ok(());
    }
    // What the table's lesson-2 figure is made of: the fetcher itself is
    // small; the rest is its closures, its entries in the loop's maps, and
    // the crawl's own bookkeeping for each URL (seen set, statistics), which
    // lesson 1's figure contains as well.
    println!(
        "\n`size_of::<Fetcher>()` = {} bytes",
        std::mem::size_of::<lesson2_callbacks::fetch::Fetcher>()
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("callback_memory: {e:#}");
            ExitCode::FAILURE
        }
    }
}
