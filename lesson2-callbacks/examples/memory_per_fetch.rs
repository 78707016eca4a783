//! # What does one fetch in flight cost? Threads against callbacks
//!
//! ```text
//! cargo run --release -p lesson2-callbacks --example memory_per_fetch -- 1000 5000
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

use std::process::{Command, ExitCode};
use std::time::Duration;

use shared::fixtures::server::{Route, Site, TestServer};
use shared::log::{Level, Log};
use shared::{Config, Lesson};

/// A line of `/proc/self/status`, in KiB (`VmRSS`, `VmHWM`, ...).
fn status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..]
        .trim_start_matches(':')
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The child: crawl `root` with one lesson and print
/// `baseline_kib peak_kib achieved_concurrency urls`.
fn child(lesson: &str, root: &str, n: usize) -> anyhow::Result<()> {
    let baseline = status_kib("VmRSS").unwrap_or(0);
    let (lesson, crawl): (Lesson, shared::CrawlFn) = match lesson {
        "lesson1" => (Lesson::One, lesson1_threadpool::crawl),
        "lesson2" => (Lesson::Two, lesson2_callbacks::crawl),
        other => anyhow::bail!("unknown lesson {other}"),
    };
    let mut config = Config::new(lesson, [root]);
    config.threads = n;
    config.timeout = Duration::from_secs(120);
    config.log = Log::capture(Level::Error);
    let report = crawl(&config)?;
    let peak = status_kib("VmHWM").unwrap_or(0);
    println!(
        "{baseline} {peak} {} {}",
        report.peak_in_flight,
        report.stats.len()
    );
    Ok(())
}

/// One measurement, as the child reported it.
struct Measured {
    baseline_kib: u64,
    peak_kib: u64,
    in_flight: usize,
    urls: usize,
}

fn measure(lesson: &str, root: &str, n: usize) -> anyhow::Result<Measured> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe)
        .args(["--child", lesson, root, &n.to_string()])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{lesson} child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<u64> = text
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    let [baseline_kib, peak_kib, in_flight, urls] = fields[..] else {
        anyhow::bail!("{lesson} child printed {text:?}");
    };
    Ok(Measured {
        baseline_kib,
        peak_kib,
        in_flight: in_flight as usize,
        urls: urls as usize,
    })
}

fn run(args: &[String]) -> anyhow::Result<()> {
    if let [flag, lesson, root, n] = args {
        if flag == "--child" {
            return child(lesson, root, n.parse()?);
        }
    }
    let mut delay = Duration::from_secs(5);
    let mut sizes = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--delay" {
            let secs: f64 = it.next().map(|s| s.parse()).transpose()?.unwrap_or(5.0);
            delay = Duration::from_secs_f64(secs);
        } else {
            sizes.push(arg.parse::<usize>()?);
        }
    }
    if sizes.is_empty() {
        sizes = vec![1000, 5000];
    }

    println!("| N | crawler | achieved concurrency | peak RSS | RSS for the fetches | per fetch |");
    println!("|---:|---|---:|---:|---:|---:|");
    for &n in &sizes {
        // A page with n links to pages that each answer after `delay`.
        let links: String = (0..n)
            .map(|i| format!("<a href=\"/slow/{i}\">{i}</a>\n"))
            .collect();
        let mut site = Site::new().page("/", links);
        for i in 0..n {
            site = site.route(&format!("/slow/{i}"), Route::html("slow").delay(delay));
        }
        let server = TestServer::start(site);
        let root = server.url("/");
        for (lesson, name) in [
            ("lesson1", format!("lesson 1, {n} threads")),
            ("lesson2", "lesson 2, callbacks".to_string()),
        ] {
            let m = measure(lesson, &root, n)?;
            anyhow::ensure!(m.urls == n + 1, "{lesson} reported {} URLs", m.urls);
            let used = m.peak_kib.saturating_sub(m.baseline_kib);
            let per_fetch = used as f64 / m.in_flight.max(1) as f64;
            println!(
                "| {n} | {name} | {} | {:.1} MiB | {:.1} MiB | {per_fetch:.1} KiB |",
                m.in_flight,
                m.peak_kib as f64 / 1024.0,
                used as f64 / 1024.0,
            );
        }
    }
    // What the table's lesson-2 figure is made of: the fetcher itself is
    // small; the rest is its closures, its entries in the loop's maps, and
    // the crawl's own bookkeeping for each URL (seen set, statistics), which
    // lesson 1's figure contains as well.
    println!(
        "\nsize_of::<Fetcher>() = {} bytes",
        std::mem::size_of::<lesson2_callbacks::fetch::Fetcher>()
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memory_per_fetch: {e:#}");
            ExitCode::FAILURE
        }
    }
}
