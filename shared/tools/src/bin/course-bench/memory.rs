//! `memory`: how much user-space memory one fetch in flight costs.
//!
//! The server (in this process: see below) answers `/` with a page of N
//! links to `/stall/I`, and never answers those: each request stays in
//! flight until the crawler is killed. Once the server sees N requests in
//! flight, the crawler's resident set (`VmRSS` in `/proc/PID/status`) is
//! read. The same is done with a page holding one such link (padded to the
//! same size, so parsing it costs the same), twice:
//!
//! - with the concurrency knob at 1 (`--threads 1`, `--max-tasks 1`): the
//!   program's fixed cost, so `(RSS_N − RSS_1) / (N − 1)` is everything one
//!   more concurrent fetch costs, its thread or task included;
//! - with the same command as the N-link run (`--threads N` with one link):
//!   the idle workers' cost, so the difference to that run is what a fetch
//!   costs on top of an idle worker.
//!
//! Lessons 2 and 3 have no knob, so for them the two baselines are one.
//!
//! The server runs inside the bench rather than as a child process because
//! what is measured is the crawler's RSS, which the server's location does
//! not change, and because the bench can then read the server's count of
//! requests in flight directly ([`TestServer::in_flight`]) to know when all
//! N fetches are waiting. The price is that this process needs N
//! descriptors, which `main` arranges.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use shared::fixtures::server::{Request, Route, ServerOptions, TestServer};

use crate::output::{self, bytes, thousands};
use crate::procs::{self, proc_status, ProcStatus, Running};
use crate::Ctx;

/// How long to wait for all N fetches to reach the server.
const REACH_TIMEOUT: Duration = Duration::from_secs(150);
/// Give up sooner if their number has not grown for this long. (The
/// server's listen backlog makes a few connects wait a second or three for
/// the kernel's SYN retry, so this is well above that.)
const STUCK_AFTER: Duration = Duration::from_secs(30);

/// User-space RSS per fetch in flight, against a server that never answers.
#[derive(Debug, clap::Parser)]
pub struct Args {
    /// Fetches in flight at once.
    #[arg(long, default_value_t = 10_000, value_parser = crate::at_least(2))]
    fetches: usize,
    #[command(flatten)]
    lessons: crate::Lessons,
}

pub fn command(ctx: &Ctx, args: Args) -> Result<()> {
    let fetches = args.fetches;
    let lessons = args.lessons.list(&[1, 2, 3, 4]);

    eprintln!("memory: finding the binaries");
    let (binaries, missing) = procs::lesson_binaries(ctx, &lessons);
    if fetches + 64 > ctx.child_nofile {
        eprintln!(
            "memory: warning: {fetches} fetches need more descriptors than ulimit -n {} allows",
            ctx.child_nofile
        );
    }

    let mut rows = Vec::new();
    for (n, bin) in &binaries {
        rows.push(measure_lesson(ctx, *n, bin, fetches));
    }

    let mut args = format!("memory --fetches {fetches}");
    if lessons != [1, 2, 3, 4] {
        let list: Vec<String> = lessons.iter().map(|n| n.to_string()).collect();
        let _ = write!(args, " --lessons {}", list.join(","));
    }
    let title = format!(
        "Memory per fetch in flight: {} fetches waiting on a server that never answers",
        thousands(fetches as u64)
    );
    let mut md = output::header(ctx, &title, &args);
    md.push_str(
        "| lesson | run as | fetches in flight | threads | RSS, 1 fetch, concurrency 1 | \
         RSS, 1 fetch, same command | RSS, all fetches in flight | **per fetch** | \
         per fetch beyond an idle worker |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut tsv = output::tsv(&[
        "name",
        "label",
        "fetches",
        "per_fetch",
        "per_fetch_beyond_idle",
        "status",
    ])?;
    let mut notes = Vec::new();
    for row in &rows {
        match &row.result {
            Ok(m) => {
                let k = (m.busy.in_flight.max(2) - 1) as f64;
                let per = (m.busy.status.rss as f64 - m.base.status.rss as f64) / k;
                let beyond = (m.busy.status.rss as f64 - m.idle.status.rss as f64) / k;
                let _ = writeln!(
                    md,
                    "| lesson {} | {} | {} | {} | {} | {} | {} | **{}** | {} |",
                    row.lesson,
                    row.how,
                    thousands(m.busy.in_flight as u64),
                    thousands(m.busy.status.threads),
                    bytes(m.base.status.rss as f64),
                    bytes(m.idle.status.rss as f64),
                    bytes(m.busy.status.rss as f64),
                    bytes(per),
                    bytes(beyond),
                );
                tsv.write_record([
                    format!("lesson{}", row.lesson),
                    format!("lesson {}", row.lesson),
                    m.busy.in_flight.to_string(),
                    format!("{per:.0}"),
                    format!("{beyond:.0}"),
                    "ok".to_string(),
                ])?;
            }
            Err(why) => {
                let _ = writeln!(
                    md,
                    "| lesson {} | {} | — | — | — | — | — | failed: {} | — |",
                    row.lesson,
                    row.how,
                    why.replace('|', "\\|").replace('\n', " ")
                );
                let (name, label) = (
                    format!("lesson{}", row.lesson),
                    format!("lesson {}", row.lesson),
                );
                tsv.write_record([name.as_str(), &label, "", "", "", "FAILED"])?;
            }
        }
        notes.extend(row.notes.iter().cloned());
    }
    for (n, why) in &missing {
        let _ = writeln!(
            md,
            "| lesson {n} | — | — | — | — | — | — | not measured: {} | — |",
            why.replace('|', "\\|").replace('\n', " ")
        );
    }
    let _ = writeln!(
        md,
        "\n**Per fetch** is (RSS with all fetches in flight − RSS with one fetch at \
         concurrency 1) ÷ (fetches − 1): everything one more concurrent fetch costs, its \
         thread or task included. *Beyond an idle worker* subtracts instead the same command \
         with one link, whose idle threads or tasks are already there. RSS is `VmRSS` from \
         `/proc/PID/status`, read once the server counted every request in flight and the \
         figure had settled. It is user-space memory only: the kernel's socket buffers and \
         the thread stacks' unused reserve are not in it. Every lesson ran with `-q \
         --timeout 120` under `ulimit -n {}`.",
        ctx.child_nofile
    );
    for note in notes {
        let _ = writeln!(md, "\n{note}");
    }
    print!("{md}");
    output::write_result(ctx, "memory.md", &md)?;
    output::write_result(ctx, "memory.tsv", &output::tsv_text(tsv)?)?;
    Ok(())
}

/// One lesson's row.
struct Row {
    lesson: u8,
    /// The command, for the table.
    how: String,
    /// The three samples, or why they could not be taken.
    result: Result<Measured, String>,
    /// Things to say under the table (a smaller N, and why).
    notes: Vec<String>,
}

/// The three samples of one lesson.
struct Measured {
    /// One link, concurrency 1.
    base: Sample,
    /// One link, the same command as `busy`.
    idle: Sample,
    /// N links.
    busy: Sample,
}

/// One reading of a crawler.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// Requests the server had in flight when the RSS was read.
    in_flight: usize,
    /// The crawler's `/proc` figures.
    status: ProcStatus,
}

/// Measure lesson `n` at `fetches`; if that fails (lesson 1 may not be able
/// to start that many threads), try smaller counts and say so.
fn measure_lesson(ctx: &Ctx, n: u8, bin: &Path, fetches: usize) -> Row {
    let mut notes = Vec::new();
    let mut tries: Vec<usize> = [fetches, fetches / 2, fetches / 5, fetches / 10]
        .into_iter()
        .filter(|&k| k >= 2)
        .collect();
    tries.dedup();
    let mut last_error = String::new();
    for (i, &count) in tries.iter().enumerate() {
        eprintln!(
            "memory: lesson {n} with {} fetches",
            thousands(count as u64)
        );
        match measure_at(ctx, n, bin, count) {
            Ok(m) => {
                if i > 0 {
                    notes.push(format!(
                        "Lesson {n} was measured at {} fetches: at {} it failed ({last_error}).",
                        thousands(count as u64),
                        thousands(tries[i - 1] as u64),
                    ));
                }
                return Row {
                    lesson: n,
                    how: how(n, count),
                    result: Ok(m),
                    notes,
                };
            }
            Err(e) => {
                eprintln!("  lesson {n} at {count}: {e}");
                last_error = e;
            }
        }
    }
    Row {
        lesson: n,
        how: how(n, fetches),
        result: Err(last_error),
        notes,
    }
}

fn how(n: u8, count: usize) -> String {
    match n {
        1 => format!("`--threads {count}`"),
        4 => format!("`--max-tasks {count}`"),
        _ => "(unbounded)".to_string(),
    }
}

fn measure_at(ctx: &Ctx, n: u8, bin: &Path, count: usize) -> Result<Measured, String> {
    let page_len = links_page(count, count).len();
    let knob = matches!(n, 1 | 4);
    let base = sample(ctx, n, bin, 1, 1, page_len)?;
    let idle = if knob {
        sample(ctx, n, bin, count, 1, page_len)?
    } else {
        base
    };
    let busy = sample(ctx, n, bin, count, count, page_len)?;
    if busy.in_flight < count {
        return Err(format!(
            "only {} of {count} fetches reached the server",
            busy.in_flight
        ));
    }
    Ok(Measured { base, idle, busy })
}

/// The root page: `links` links to stalling URLs, padded with a comment to
/// `pad_to` bytes.
fn links_page(links: usize, pad_to: usize) -> Vec<u8> {
    let mut page = String::from("<!doctype html>\n<title>stalls</title>\n");
    for i in 0..links {
        let _ = writeln!(page, "<a href=\"/stall/{i}\">{i}</a>");
    }
    if page.len() + 8 < pad_to {
        page.push_str("<!--");
        let fill = pad_to - page.len() - 4;
        page.extend(std::iter::repeat_n('x', fill));
        page.push_str("-->");
    }
    page.into_bytes()
}

/// Start lesson `n` with concurrency `knob` against a page of `links`
/// stalling links; read its memory once `links` requests are in flight.
fn sample(
    ctx: &Ctx,
    n: u8,
    bin: &Path,
    knob: usize,
    links: usize,
    pad_to: usize,
) -> Result<Sample, String> {
    let page = Arc::new(links_page(links, pad_to));
    let handler = move |req: &Request| -> Route {
        if req.target == "/" {
            Route::body("text/html", page.as_ref().clone())
        } else if req.target.starts_with("/stall/") {
            Route::stall()
        } else {
            Route::not_found()
        }
    };
    let server = TestServer::start_with(
        handler,
        ServerOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            record_requests: false,
        },
    )
    .map_err(|e| format!("cannot start the server: {e}"))?;

    let mut args = vec!["-q".to_string(), "--timeout".into(), "120".into()];
    match n {
        1 => args.extend(["--threads".to_string(), knob.to_string()]),
        4 => args.extend(["--max-tasks".to_string(), knob.to_string()]),
        _ => {}
    }
    args.push(server.url("/"));
    let mut child = Running::spawn(bin, &args, ctx.child_nofile).map_err(|e| format!("{e:#}"))?;
    let pid = child.pid();

    // Wait for every stalling request to be in flight.
    let started = Instant::now();
    let mut best = 0;
    let mut progress_at = Instant::now();
    loop {
        let now = server.in_flight();
        if now > best {
            best = now;
            progress_at = Instant::now();
        }
        if now >= links {
            break;
        }
        // A count that stopped growing will not reach N (a descriptor or
        // thread limit): no need to wait out the whole timeout.
        if progress_at.elapsed() > STUCK_AFTER {
            let _ = child.kill();
            return Err(format!(
                "the fetches in flight stopped growing at {best} of {links}"
            ));
        }
        if child.exited().is_some() {
            let done = child.kill();
            return Err(format!(
                "it exited ({}) with {best} fetches in flight; stderr: {}",
                done.status.map_or("killed".to_string(), |s| s.to_string()),
                procs::tail(&done.stderr, 300)
            ));
        }
        if started.elapsed() > REACH_TIMEOUT {
            let _ = child.kill();
            return Err(format!(
                "after {} s only {best} fetches were in flight",
                REACH_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }

    // Let the figure settle: threads still starting, buffers being freed.
    let mut last = proc_status(pid).unwrap_or_default();
    let settle_until = Instant::now() + Duration::from_secs(10);
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let Some(now) = proc_status(pid) else {
            return Err("it exited while being measured".to_string());
        };
        let steady = now.threads == last.threads
            && (now.rss as f64 - last.rss as f64).abs() <= 0.002 * last.rss as f64;
        last = now;
        if steady || Instant::now() > settle_until {
            break;
        }
    }
    let in_flight = server.in_flight();
    let _ = child.kill();
    eprintln!(
        "  lesson {n}, knob {knob}, {links} links: {in_flight} in flight, RSS {}, {} threads",
        bytes(last.rss as f64),
        last.threads
    );
    Ok(Sample {
        in_flight,
        status: last,
    })
}
