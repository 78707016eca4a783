//! `course-bench trace-cost`: what `--trace` costs a crawl.
//!
//! Every lesson can record a trace of its crawl (`--trace FILE`). This
//! crawls the speed benchmark's site (10,000 pages of 16 KiB, from nginx)
//! with each lesson twice per round, without and with `--trace`, the two in
//! turn, and reports the median of each, their ratio, and how big the trace
//! file was. A crawl counts only if its report lists exactly the URLs the
//! site's generator expects, traced or not.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use shared::fixtures::sitegen::{generate, SiteSpec};

use crate::output::{self, median, secs};
use crate::procs::{self, Running};
use crate::servers::{self, Server};
use crate::Ctx;
use shared::report::PrintedReport as Report;

#[derive(Debug, clap::Parser)]
pub struct Args {
    /// Rounds; each crawl runs once per round, traced and not.
    #[arg(long, default_value_t = 5, value_parser = crate::at_least(1))]
    runs: usize,
    #[command(flatten)]
    lessons: crate::Lessons,
}

/// The command line of lesson `n` on `root`, as the speed benchmark runs it.
fn lesson_args(n: u8, root: &str, trace: Option<&std::path::Path>) -> Vec<String> {
    let mut args = vec!["-q".to_string()];
    match n {
        1 => args.extend(["--threads".to_string(), "100".to_string()]),
        4 => args.extend(["--max-tasks".to_string(), "100".to_string()]),
        _ => {}
    }
    if let Some(file) = trace {
        args.extend(["--trace".to_string(), file.display().to_string()]);
    }
    args.push(root.to_string());
    args
}

pub fn command(ctx: &Ctx, args: Args) -> Result<()> {
    let lessons = args.lessons.list(&[1, 2, 3, 4]);
    let nginx = servers::find_nginx().context(servers::NGINX_MISSING)?;
    let (binaries, missing) = procs::lesson_binaries(ctx, &lessons);
    if let Some((n, why)) = missing.first() {
        bail!("lesson {n} is not available: {why}");
    }
    let site = generate(&SiteSpec::new(10_000));
    let dir = tempfile::Builder::new()
        .prefix("course-bench-trace-")
        .tempdir()
        .context("creating a folder for the site")?;
    site.write_to(dir.path().join("site"))
        .context("writing the site")?;
    let trace_file = dir.path().join("trace.json");
    let server = Server::nginx(&nginx, &dir.path().join("site"), ctx.child_nofile)?;
    let origin = server.origin();
    let root = format!("{origin}/");
    let expected = site.expected_urls(&origin);

    // Per lesson: times without, times with, trace sizes.
    type Times = (u8, Vec<Duration>, Vec<Duration>, Vec<u64>);
    let mut results: Vec<Times> = binaries
        .iter()
        .map(|(n, _)| (*n, Vec::new(), Vec::new(), Vec::new()))
        .collect();
    for round in 0..args.runs {
        for (k, (n, bin)) in binaries.iter().enumerate() {
            // Which goes first alternates from round to round.
            for traced in [round % 2 == 1, round % 2 == 0] {
                let trace = traced.then_some(trace_file.as_path());
                let run = Running::spawn(bin, &lesson_args(*n, &root, trace), ctx.child_nofile)?;
                let done = run.wait(Duration::from_secs(600));
                if !done.status.is_some_and(|s| s.success()) {
                    bail!(
                        "lesson {n} failed: {}",
                        procs::tail(done.stderr.trim(), 300)
                    );
                }
                if let Some(why) = Report::parse(&done.stdout).mismatch(&expected) {
                    bail!("lesson {n}{}: {why}", if traced { " --trace" } else { "" });
                }
                let entry = &mut results[k];
                if traced {
                    entry.2.push(done.elapsed);
                    entry
                        .3
                        .push(std::fs::metadata(&trace_file).map_or(0, |m| m.len()));
                } else {
                    entry.1.push(done.elapsed);
                }
                eprintln!(
                    "  [round {}/{}] lesson {n}{}: {}",
                    round + 1,
                    args.runs,
                    if traced { " --trace" } else { "" },
                    secs(done.elapsed)
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    drop(server);

    let mut md = output::header(
        ctx,
        "What `--trace` costs: 10,000 pages of 16,384 bytes on nginx",
        &format!("trace-cost --runs {}", args.runs),
    );
    md.push_str(
        "| lesson | median time | with `--trace` | × | trace file |\n|---|---:|---:|---:|---:|\n",
    );
    for (n, plain, traced, sizes) in &results {
        let (Some(p), Some(t)) = (median(plain), median(traced)) else {
            continue;
        };
        let size = sizes.iter().copied().max().unwrap_or(0);
        let _ = writeln!(
            md,
            "| lesson {n} | {} | {} | {:.2}× | {:.1} MB |",
            secs(p),
            secs(t),
            t.as_secs_f64() / p.as_secs_f64(),
            size as f64 / 1e6
        );
    }
    let _ = writeln!(
        md,
        "\nMedians of {} rounds; in each round every lesson crawled once without and once with \
         `--trace` (the order alternating from round to round), under the same command line as \
         the speed benchmark. Every crawl reported exactly the URLs the site's generator \
         expects. The trace file is the largest of the traced runs.",
        args.runs
    );
    print!("{md}");
    output::write_result(ctx, "trace-cost.md", &md)
}
