//! `timelines`: each lesson crawling the same slow site with `--trace`, drawn
//! as the timelines the chapters show.
//!
//! The site is small and slow on purpose: a root page links to `sections`
//! pages, each of which links to `pages` more, and every page answers only
//! after `delay`. With the server this slow, what the pictures show is how
//! each model *waits*: lesson 1 with four threads, four fetches at a time;
//! lessons 2 and 3 every link at once; lesson 4 a handful of workers reusing
//! their connections. Each lesson's trace is kept beside its picture, for
//! Perfetto.
//!
//! Written to `docs/src/generated/timelines/`: `lessonN.json` (the trace),
//! `lessonN.svg` (its own time scale), `lessonN-common.svg` (one time scale
//! for all four, for the comparison), `timelines.md` (the table of what the
//! traces say), and `walkthrough.md`, lesson 4's first fetch turn by turn.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use course_tools::timeline::{end_ms, svg, Style};
use shared::fixtures::server::{Route, Site, TestServer};
use trace_check::{Slice, TraceFile};

use crate::output;
use crate::procs;
use crate::Ctx;

/// Each lesson's own knob for the pictures.
fn lesson_args(n: u8) -> &'static [&'static str] {
    match n {
        1 => &["--threads", "4"],
        4 => &["--max-tasks", "6"],
        _ => &[],
    }
}

/// Each lesson crawls one slow site with `--trace`; the traces are drawn.
#[derive(Debug, clap::Parser)]
pub struct Args {
    /// Sections linked from the root.
    #[arg(long, default_value_t = 10, value_parser = crate::at_least(1))]
    sections: usize,
    /// Pages in each section.
    #[arg(long, default_value_t = 5)]
    pages: usize,
    /// How long each page takes to answer, in milliseconds.
    #[arg(long, default_value_t = 100)]
    delay_ms: usize,
}

pub fn command(ctx: &Ctx, args: Args) -> Result<()> {
    let Args {
        sections,
        pages,
        delay_ms,
    } = args;

    let total = 1 + sections + sections * pages;
    let delay = Duration::from_millis(delay_ms as u64);
    let server = TestServer::start(slow_site(sections, pages, delay));
    let root = server.url("/");
    let dir = ctx.docs.join("generated").join("timelines");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;

    let mut traces = Vec::new();
    for n in 1..=4u8 {
        let bin = procs::lesson_binary(ctx, n)?;
        let path = dir.join(format!("lesson{n}.json"));
        eprintln!("timelines: lesson {n}");
        let status = Command::new(&bin)
            .arg(&root)
            .arg("-q")
            .arg("--trace")
            .arg(&path)
            .args(lesson_args(n))
            .stdout(std::process::Stdio::null())
            .status()
            .with_context(|| format!("running {}", bin.display()))?;
        if !status.success() {
            bail!("lesson {n} exited with {status}");
        }
        let text = std::fs::read_to_string(&path)?;
        let trace =
            TraceFile::parse(&text).with_context(|| format!("reading {}", path.display()))?;
        let problems = trace.problems();
        if !problems.is_empty() {
            bail!("lesson {n}'s trace is malformed: {problems:?}");
        }
        let fetched = trace.fetches().count();
        if fetched != total {
            bail!("lesson {n} traced {fetched} fetches of {total} pages");
        }
        traces.push((n, trace));
    }

    let what = format!("{total} pages, each answering after {delay_ms} ms");
    let common = traces.iter().map(|(_, t)| end_ms(t)).fold(0.0, f64::max);
    for (n, trace) in &traces {
        let knob = lesson_args(*n).join(" ");
        let title = if knob.is_empty() {
            format!("Lesson {n}: {what}")
        } else {
            format!("Lesson {n} ({knob}): {what}")
        };
        let own = Style {
            title: title.clone(),
            ..Style::default()
        };
        write(&dir.join(format!("lesson{n}.svg")), &svg(trace, &own))?;
        let shared_scale = Style {
            title,
            span_ms: Some(common),
            lanes_height: 160.0,
            ..Style::default()
        };
        write(
            &dir.join(format!("lesson{n}-common.svg")),
            &svg(trace, &shared_scale),
        )?;
    }

    let args = format!("timelines --sections {sections} --pages {pages} --delay-ms {delay_ms}");
    let mut md = output::header(ctx, &format!("What the traces say: {what}"), &args);
    md.push_str(
        "| lesson | run as | crawl | lanes | most fetches at once | loop turns | loop time in `poll` |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
    );
    for (n, trace) in &traces {
        let turns: Vec<&Slice> = trace.turns().collect();
        let (loop_turns, in_poll) = if turns.is_empty() {
            ("no loop".to_owned(), "".to_owned())
        } else {
            let turned: f64 = turns.iter().map(|t| t.dur).sum();
            let polled = trace.time_in_poll();
            (
                turns.len().to_string(),
                format!("{:.0} %", 100.0 * polled / turned.max(1.0)),
            )
        };
        let _ = writeln!(
            md,
            "| {n} | `{}` | {:.2} s | {} | {} | {loop_turns} | {in_poll} |",
            [format!("lesson{n}")]
                .into_iter()
                .chain(lesson_args(*n).iter().map(|a| a.to_string()))
                .collect::<Vec<_>>()
                .join(" "),
            end_ms(trace) / 1000.0,
            trace.fetch_lanes().len(),
            trace.counter_max("fetches in flight").unwrap_or(0.0),
        );
    }
    write(&dir.join("timelines.md"), &md)?;

    let (_, four) = traces.last().context("no lesson 4 trace")?;
    write(&dir.join("walkthrough.md"), &walkthrough(four, &root)?)?;
    Ok(())
}

/// The slow site: a root, `sections` section pages, `pages` pages under each.
fn slow_site(sections: usize, pages: usize, delay: Duration) -> Site {
    let page = |links: Vec<String>| -> Route {
        let body: String = links
            .iter()
            .map(|l| format!(r#"<a href="{l}">{l}</a> "#))
            .collect();
        Route::html(format!("<html><body>{body}</body></html>")).delay(delay)
    };
    let mut site = Site::new().route(
        "/",
        page((0..sections).map(|s| format!("/s{s}/")).collect()),
    );
    for s in 0..sections {
        site = site.route(
            &format!("/s{s}/"),
            page((0..pages).map(|p| format!("/s{s}/p{p}")).collect()),
        );
        for p in 0..pages {
            site = site.route(&format!("/s{s}/p{p}"), page(vec!["/".to_owned()]));
        }
    }
    site
}

/// Lesson 4's first fetch, turn by turn: each turn of the loop from the
/// fetch's start to its end, with how long it waited in `poll`, what woke
/// it, what it ran, and which phases of the fetch began during it.
fn walkthrough(trace: &TraceFile, root: &str) -> Result<String> {
    let fetch = trace
        .fetches()
        .find(|f| f.name == root)
        .context("no fetch of the root in lesson 4's trace")?;
    let phases = trace.phases_of(fetch);
    let turns: Vec<&Slice> = trace
        .turns()
        .filter(|t| t.end() >= fetch.ts && t.ts <= fetch.end())
        .collect();
    let t0 = fetch.ts;
    // A turn may begin a moment before the fetch does: from 0, then.
    let ms = |us: f64| format!("{:.2}", ((us - t0) / 1000.0).max(0.0));
    let mut md = String::from(
        "| turn | at (ms) | waited in `poll` (ms) | readiness events | callbacks and task steps run | the fetch of `/` during the turn |\n\
         |---:|---:|---:|---:|---:|---|\n",
    );
    for (i, turn) in turns.iter().enumerate() {
        let poll = trace
            .slices
            .iter()
            .find(|s| s.cat == "loop" && s.name == "poll" && s.tid == turn.tid && s.within(turn))
            .map_or(0.0, |s| s.dur);
        let began: Vec<String> = phases
            .iter()
            .filter(|p| p.ts >= turn.ts && p.ts <= turn.end())
            .map(|p| format!("`{}`", p.name))
            .collect();
        let mut what = if began.is_empty() {
            String::new()
        } else {
            format!("enters {}", began.join(" → "))
        };
        if fetch.end() >= turn.ts && fetch.end() <= turn.end() {
            what.push_str(if what.is_empty() { "ends" } else { "; ends" });
        }
        let _ = writeln!(
            md,
            "| {} | {} | {:.2} | {} | {} | {what} |",
            i + 1,
            ms(turn.ts),
            poll / 1000.0,
            turn.arg_u64("events").unwrap_or(0),
            turn.arg_u64("ran").unwrap_or(0),
        );
    }
    Ok(md)
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("  wrote {}", path.display());
    Ok(())
}
