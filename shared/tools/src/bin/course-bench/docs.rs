//! `course-bench docs`: the Rust documentation, crawled as a learner would.
//!
//! The generated site is tidy; real documentation is not, and every learner
//! has one: the HTML `rustup` installs with the toolchain. This serves that
//! folder with nginx, crawls it with lessons 1 and 4 (`-q`, 100 threads or
//! tasks), and fetches the same URL list with the keep-alive baseline, the
//! three in turn for several rounds. The URL list is what a first, untimed
//! lesson 4 crawl reported; every timed crawl must report exactly that list
//! again, or it is marked wrong.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::output::{self, median, secs, thousands};
use crate::procs::{self, Running};
use crate::servers::{self, Server};
use crate::{baseline, Ctx};
use shared::report::PrintedReport as Report;

#[derive(Debug, clap::Parser)]
pub struct Args {
    /// The documentation folder (default: the toolchain's, from `rustc
    /// --print sysroot`, then `share/doc/rust/html`).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Rounds; each crawler runs once per round, and medians are reported.
    #[arg(long, default_value_t = 5, value_parser = crate::at_least(1))]
    runs: usize,
    /// The baseline's connections, lesson 1's threads, lesson 4's tasks.
    #[arg(long, default_value_t = 100, value_parser = crate::at_least(1))]
    concurrency: usize,
    /// Also run the baseline with its threads held to the first N CPUs, as
    /// a row of its own (see `speed --baseline-cpus`).
    #[arg(long, value_parser = crate::at_least(1))]
    baseline_cpus: Option<usize>,
}

/// The toolchain's documentation folder.
fn toolchain_docs() -> Result<PathBuf> {
    let out = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .context("running `rustc --print sysroot`")?;
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok(PathBuf::from(sysroot).join("share/doc/rust/html"))
}

/// One lesson crawl: its time, CPU time and report, or why it was wrong.
fn crawl(
    ctx: &Ctx,
    bin: &std::path::Path,
    args: &[String],
) -> Result<(Duration, Duration, Report)> {
    let run = Running::spawn(bin, args, ctx.child_nofile)?;
    let done = run.wait(Duration::from_secs(600));
    match done.status {
        Some(status) if status.success() => {
            Ok((done.elapsed, done.cpu.total(), Report::parse(&done.stdout)))
        }
        Some(status) => bail!("{status}; stderr: {}", procs::tail(done.stderr.trim(), 300)),
        None => bail!("did not finish in 600 s"),
    }
}

pub fn command(ctx: &Ctx, args: Args) -> Result<()> {
    let dir = match args.dir {
        Some(dir) => dir,
        None => toolchain_docs()?,
    };
    if !dir.join("index.html").is_file() {
        bail!(
            "no documentation in {} (install it with `rustup component add rust-docs`, or pass --dir)",
            dir.display()
        );
    }
    let nginx = servers::find_nginx().context(servers::NGINX_MISSING)?;
    let (binaries, missing) = procs::lesson_binaries(ctx, &[1, 4]);
    if let Some((n, why)) = missing.first() {
        bail!("lesson {n} is not available: {why}");
    }
    let server = Server::nginx(&nginx, &dir, ctx.child_nofile)?;
    let origin = server.origin();
    let root = format!("{origin}/");
    let how = |n: u8| -> Vec<String> {
        let knob = if n == 1 { "--threads" } else { "--max-tasks" };
        vec![
            "-q".into(),
            knob.into(),
            args.concurrency.to_string(),
            root.clone(),
        ]
    };
    let lesson4 = binaries
        .iter()
        .find(|(n, _)| *n == 4)
        .map(|(_, b)| b.clone())
        .context("no lesson 4 binary")?;

    eprintln!(
        "docs: a first lesson 4 crawl of {} for the URL list",
        dir.display()
    );
    let (_, _, first) = crawl(ctx, &lesson4, &how(4)).context("the first crawl")?;
    if first.stat("html") == 0 {
        bail!(
            "the first crawl found no HTML page ({} URL(s)): can nginx read {}?",
            first.urls.len(),
            dir.display()
        );
    }
    let expected: std::collections::BTreeSet<String> = first.urls.iter().cloned().collect();
    let paths: Arc<Vec<String>> = Arc::new(
        expected
            .iter()
            .filter_map(|u| u.strip_prefix(&origin).map(str::to_string))
            .collect(),
    );

    // name, how it ran, times, CPU times, problems.
    type Row = (String, String, Vec<Duration>, Vec<Duration>, Vec<String>);
    let mut rows: Vec<Row> = vec![(
        "baseline: keep-alive fetch, no parsing".into(),
        format!(
            "{} keep-alive connections, URL list known",
            args.concurrency
        ),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    )];
    // The baselines come first: row `k` is baseline `k` while `k` is below
    // `baselines.len()`, and a lesson after.
    let mut baselines = vec![None];
    if let Some(cpus) = args.baseline_cpus {
        let (label, how) = baseline::held_row(cpus, args.concurrency);
        rows.push((label, how, Vec::new(), Vec::new(), Vec::new()));
        baselines.push(Some(cpus));
    }
    for (n, _) in &binaries {
        let knob = if *n == 1 { "--threads" } else { "--max-tasks" };
        rows.push((
            format!("lesson {n}"),
            format!("`lesson{n} -q {knob} {}`", args.concurrency),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        ));
    }
    for round in 0..args.runs {
        for j in 0..rows.len() {
            let k = (round + j) % rows.len();
            let outcome = if let Some(&cpus) = baselines.get(k) {
                let before = procs::cpu_of(None).unwrap_or_default();
                baseline::fetch_all(server.addr, &paths, args.concurrency, cpus).map(|f| {
                    let cpu = procs::cpu_of(None).unwrap_or_default().since(before);
                    (f.elapsed, cpu.total())
                })
            } else {
                let (n, bin) = &binaries[k - baselines.len()];
                crawl(ctx, bin, &how(*n)).and_then(|(t, cpu, report)| {
                    match report.mismatch(&expected) {
                        Some(why) => bail!("{why}"),
                        None => Ok((t, cpu)),
                    }
                })
            };
            let row = &mut rows[k];
            match outcome {
                Ok((t, cpu)) => {
                    eprintln!(
                        "  [round {}/{}] {}: {}",
                        round + 1,
                        args.runs,
                        row.0,
                        secs(t)
                    );
                    row.2.push(t);
                    row.3.push(cpu);
                }
                Err(e) => {
                    eprintln!(
                        "  [round {}/{}] {}: WRONG: {e:#}",
                        round + 1,
                        args.runs,
                        row.0
                    );
                    row.4.push(format!("{e:#}"));
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    drop(server);

    let html = first.stat("html");
    let mut md = output::header(
        ctx,
        "Crawling the Rust documentation on nginx",
        &format!(
            "docs --runs {} --concurrency {}{}",
            args.runs,
            args.concurrency,
            args.baseline_cpus
                .map_or(String::new(), |cpus| format!(" --baseline-cpus {cpus}"))
        ),
    );
    let counts: Vec<String> = first
        .stats
        .iter()
        .map(|(k, v)| format!("`{k}` {}", thousands(*v)))
        .collect();
    let _ = writeln!(
        md,
        "The folder: `{}`. A complete crawl reports {} URLs, {} of them HTML pages (the \
         report's counts: {}).\n",
        dir.display(),
        thousands(expected.len() as u64),
        thousands(html),
        counts.join(", "),
    );
    md.push_str(
        "| crawler | run as | median time | fastest – slowest | × baseline | CPU time | result |\n\
         |---|---|---:|---:|---:|---:|---|\n",
    );
    let base = median(&rows[0].2);
    for (name, how, times, cpu, problems) in &rows {
        let med = median(times).filter(|_| problems.is_empty());
        let (time, range, ratio) = match med {
            Some(m) => (
                secs(m),
                format!(
                    "{} – {}",
                    secs(times.iter().min().copied().unwrap_or(m)),
                    secs(times.iter().max().copied().unwrap_or(m))
                ),
                base.map_or("—".into(), |b| {
                    format!("{:.2}×", m.as_secs_f64() / b.as_secs_f64())
                }),
            ),
            None => ("—".into(), "—".into(), "—".into()),
        };
        let runs = times.len() + problems.len();
        let result = match problems.first() {
            None => format!("ok ({runs} of {runs} runs)"),
            Some(why) => format!(
                "**WRONG** in {} of {runs} runs: {}",
                problems.len(),
                why.replace('|', "\\|")
            ),
        };
        let cpu = median(cpu).map_or("—".to_string(), secs);
        let _ = writeln!(
            md,
            "| {name} | {how} | {time} | {range} | {ratio} | {cpu} | {result} |"
        );
    }
    let _ = writeln!(
        md,
        "\nMedians of {} rounds, the rows run in turn. The URL list is what a first, untimed \
         lesson 4 crawl reported; a timed crawl counts only if it reports exactly that list. \
         The baseline fetches the list over keep-alive connections and parses nothing.",
        args.runs
    );
    print!("{md}");
    output::write_result(ctx, "docs-nginx.md", &md)
}
