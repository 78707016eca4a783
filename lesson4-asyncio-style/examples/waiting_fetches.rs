//! How much memory does a fetch cost while it waits?
//!
//! ```text
//! cargo run --release -p lesson4-asyncio-style --example waiting_fetches [-- N]
//! ```
//!
//! Starts a server in a *separate process* (so its memory is not counted)
//! whose home page links to sections of 100 pages, N pages in all (default
//! 10,000), that never answer.
//! Then it crawls that site with `--max-tasks N`: N worker tasks, each with
//! a connection, a request sent, and a coroutine suspended in `read`. When
//! the server reports all N requests in flight, the example reads this
//! process's resident memory and divides the growth since before the crawl
//! by N. Every URL then fails with a timeout, and the crawl ends.
//!
//! The figure is the growth of *anonymous* resident memory (`RssAnon`: the
//! heap and the stacks), so it includes everything the crawl holds per URL
//! at that moment — the worker task, its waker and its coroutine, the
//! socket's registration, the deadline's timer, the URL in the seen-set —
//! and whatever the allocator could not give back. It leaves out the pages
//! of the program's own code, which the first crawl reads in from the
//! binary once (about a megabyte, whatever N is); `VmRSS`, which counts
//! them, is printed too. Kernel socket buffers are not user space and are
//! in neither. Linux only (`/proc/self/status`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shared::fixtures::server::{Route, Site, TestServer};
use shared::log::{Level, Log};
use shared::{Config, Lesson};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--serve") {
        let n = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
        return serve(n);
    }
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000);

    let mut server = Command::new(std::env::current_exe()?)
        .args(["--serve", &n.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut lines = BufReader::new(server.stdout.take().expect("piped stdout")).lines();
    let root = lines
        .next()
        .transpose()?
        .expect("the server prints its URL");

    // The server reports how many requests it holds; when it holds all N,
    // sample our memory.
    let baseline = rss_kib();
    let sampled_anon = Arc::new(AtomicUsize::new(0));
    let sampled_all = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (sampled_anon, sampled_all, done) =
            (sampled_anon.clone(), sampled_all.clone(), done.clone());
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let in_flight: usize = line.parse().unwrap_or(0);
                if in_flight >= n && sampled_anon.load(Ordering::SeqCst) == 0 {
                    let (anon, all) = rss_kib();
                    sampled_all.store(all, Ordering::SeqCst);
                    sampled_anon.store(anon, Ordering::SeqCst);
                }
                if done.load(Ordering::SeqCst) {
                    break;
                }
            }
        })
    };

    let mut config = Config::new(Lesson::Four, [root]);
    config.max_tasks = n;
    config.max_tries = 1;
    config.timeout = Duration::from_secs(5);
    // Errors only, into a capture: N `failed` lines would flood the terminal.
    config.log = Log::capture(Level::Error);
    let report = lesson4_asyncio_style::crawl(&config)?;
    done.store(true, Ordering::SeqCst);

    let (anon, all) = (
        sampled_anon.load(Ordering::SeqCst),
        sampled_all.load(Ordering::SeqCst),
    );
    println!(
        "fetches: {} reported, {} achieved concurrency, {:?}",
        report.stats.len(),
        report.peak_in_flight,
        report.counts()
    );
    if anon == 0 {
        println!("the server never held all {n} requests at once: no figure");
    } else {
        let per_fetch =
            |after: usize, before: usize| after.saturating_sub(before) as f64 * 1024.0 / n as f64;
        println!(
            "RssAnon before the crawl {} KiB, with {n} fetches waiting {anon} KiB: \
             {:.0} bytes per waiting fetch",
            baseline.0,
            per_fetch(anon, baseline.0)
        );
        println!(
            "(VmRSS, with the program's code: {} KiB, then {all} KiB: {:.0} bytes per fetch)",
            baseline.1,
            per_fetch(all, baseline.1)
        );
    }
    if let Some(mut stdin) = server.stdin.take() {
        let _ = stdin.write_all(b"stop\n");
    }
    let _ = server.kill();
    let _ = server.wait();
    let _ = watcher.join();
    Ok(())
}

/// The child: a home page linking to `n` pages that stall. Prints its URL,
/// then the number of requests in flight every 20 ms, until stdin closes.
fn serve(n: usize) -> anyhow::Result<()> {
    // The home page links to sections of 100 pages each, which link to the
    // pages that stall: every fetch is found the same way a crawl finds
    // pages, without one giant page whose parsing would dominate the figure.
    let per_section = 100;
    let sections = n.div_ceil(per_section);
    let home: String = (0..sections)
        .map(|s| format!("<a href=\"/s{s}\">{s}</a>\n"))
        .collect();
    let mut site = Site::new().page("/", home);
    for s in 0..sections {
        let links: String = (s * per_section..((s + 1) * per_section).min(n))
            .map(|i| format!("<a href=\"/p{i}\">{i}</a>\n"))
            .collect();
        site = site.page(&format!("/s{s}"), links);
    }
    let site = (0..n).fold(site, |site, i| {
        site.route(&format!("/p{i}"), Route::stall())
    });
    let server = TestServer::start(site);
    println!("{}", server.url("/"));
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            stop.store(true, Ordering::SeqCst);
        });
    }
    let mut out = std::io::stdout();
    while !stop.load(Ordering::SeqCst) {
        if writeln!(out, "{}", server.in_flight())
            .and_then(|()| out.flush())
            .is_err()
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// This process's resident memory in KiB: anonymous (`RssAnon`), and all
/// of it (`VmRSS`).
fn rss_kib() -> (usize, usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> usize {
        status
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
    };
    (field("RssAnon:"), field("VmRSS:"))
}
