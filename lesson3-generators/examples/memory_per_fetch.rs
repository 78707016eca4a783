//! # What does one fetch in flight cost? Threads, callbacks, coroutines
//!
//! ```text
//! cargo run --release -p lesson3-generators --example memory_per_fetch -- 1000 5000
//! ```
//!
//! First it prints the size of one fetch's coroutine: `size_of_val` of the
//! future `Fetcher::fetch` returns (the frame the compiler built), of the
//! hand-written `FetchByHand`, and of the sub-coroutines inside them.
//!
//! Then, lesson 2's measurement with a third row. For each N, this starts
//! the course's test server with a page of N links to pages that answer only
//! after a delay, then crawls it three times, each time in a fresh child
//! process:
//!
//! - lesson 1 with `--threads N`: N threads, each blocked in `read`;
//! - lesson 2: one thread, N `Fetcher`s waiting in the event loop;
//! - lesson 3: one thread, N tasks, each a coroutine stopped at an `.await`.
//!
//! While every fetch is waiting, the crawler holds N of them in flight at
//! once. The child reads its peak resident memory (`VmHWM` in
//! `/proc/self/status`) when the crawl is over, subtracts what it used
//! before the crawl began, and divides by the achieved concurrency. The
//! server runs in this (the parent) process, so its memory is not counted.
//!
//! Options: `--delay SECS` (how long each slow page waits, default 5: long
//! enough for lesson 1 to start N threads before the first answer).

use std::mem::size_of_val;
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, ExitCode};
use std::rc::Rc;
use std::time::Duration;

use lesson3_generators::crawler::InFlight;
use lesson3_generators::event_loop::EventLoop;
use lesson3_generators::fetch::{self, Fetcher, Socket};
use lesson3_generators::fetch_by_hand::fetch_by_hand;
use shared::http::{Limits, ResponseParser};
use shared::net::Resolver;

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
        "lesson3" => (Lesson::Three, lesson3_generators::crawl),
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

/// The bytes of one fetch's coroutine, and of the pieces it is made of.
/// Nothing is polled: a future's size is fixed before it first runs.
fn coroutine_sizes() -> anyhow::Result<()> {
    let event_loop = EventLoop::new()?;
    let fetcher = Fetcher::new(
        url::Url::parse("http://127.0.0.1/")?,
        Rc::new(Resolver::new()),
        Rc::new(InFlight::default()),
        Duration::from_secs(30),
        Limits::default(),
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], 80));
    // A socket to hand the sub-coroutines (they are not run).
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let stream = mio::net::TcpStream::connect(listener.local_addr()?)?;
    let mut sock = Socket::new(&event_loop, stream);

    println!("| future | bytes |");
    println!("|---|---:|");
    let row = |name: &str, bytes: usize| println!("| `{name}` | {bytes} |");
    row(
        "fetcher.fetch(&event_loop)",
        size_of_val(&fetcher.fetch(&event_loop)),
    );
    row(
        "fetch_by_hand(&fetcher, &event_loop)",
        size_of_val(&fetch_by_hand(&fetcher, &event_loop)),
    );
    row(
        "connect_any(&event_loop, &addrs)",
        size_of_val(&fetch::connect_any(&event_loop, &[addr])),
    );
    row(
        "connect(&event_loop, addr)",
        size_of_val(&fetch::connect(&event_loop, addr)),
    );
    row(
        "send_all(&mut sock, request)",
        size_of_val(&fetch::send_all(&mut sock, b"")),
    );
    row("read(&mut sock)", size_of_val(&fetch::read(&mut sock)));
    row(
        "read_all(&mut sock, limits)",
        size_of_val(&fetch::read_all(&mut sock, Limits::default())),
    );
    row(
        "event_loop.sleep(timeout)",
        size_of_val(&event_loop.sleep(Duration::from_secs(1))),
    );
    row(
        "ResponseParser (inside read_all)",
        std::mem::size_of::<ResponseParser>(),
    );
    row("Socket", std::mem::size_of::<Socket>());
    row(
        "Fetcher (beside its fetch in each task)",
        std::mem::size_of::<Fetcher>(),
    );
    row("url::Url (likewise)", std::mem::size_of::<url::Url>());
    println!();
    Ok(())
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

    coroutine_sizes()?;

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
            ("lesson3", "lesson 3, coroutines".to_string()),
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
