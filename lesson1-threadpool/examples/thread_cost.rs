//! # What does an idle thread cost?
//!
//! A thread-per-fetch crawler holds one OS thread for every fetch in flight,
//! and almost all of them are idle: blocked in `read`, waiting for a server.
//! This program measures what such idle threads cost on the machine it runs
//! on. It starts `N` threads that each touch a little of their stack and
//! then block, reads the kernel's own accounting of this process before and
//! after (`/proc/self/status`, plus the system-wide kernel-stack total from
//! `/proc/meminfo`), lets the threads go, and joins them.
//!
//! ```text
//! cargo run --release -p lesson1-threadpool --example thread_cost -- 1000
//! cargo run --release -p lesson1-threadpool --example thread_cost -- 1000 --touch 16
//! cargo run --release -p lesson1-threadpool --example thread_cost -- 1000 --stack 64
//! ```
//!
//! - `N` — how many threads (default 1000);
//! - `--touch KIB` — stack each thread writes to before it blocks (default 0;
//!   16 is what a lesson-1 fetcher's read buffer occupies);
//! - `--stack KIB` — the stack to reserve per thread (default: Rust's, 2 MiB,
//!   or `RUST_MIN_STACK` if set);
//! - `--table` — instead, run the three measurements the chapter shows
//!   (1,000 threads; 1,000 with 16 KiB of stack touched; 10,000), each in a
//!   fresh child process, and print what one thread cost in each as a
//!   Markdown table: the book's table is this output.
//!
//! Linux only: elsewhere there is no `/proc` to read, and it says so.

use std::collections::HashMap;
use std::hint::black_box;
use std::process::ExitCode;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread;
use std::time::Instant;

/// `println!` that ignores a closed stdout (`thread_cost | head`) instead
/// of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("--table") {
        return table();
    }
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("thread_cost: {message}");
            eprintln!("usage: thread_cost [N] [--touch KIB] [--stack KIB]");
            return ExitCode::from(2);
        }
    };
    let Some(before) = Snapshot::take() else {
        eprintln!("thread_cost: needs Linux's /proc/self/status");
        return ExitCode::FAILURE;
    };

    // Each Rust thread adds four memory mappings (its stack and the guard
    // page below it; the alternate stack for the stack-overflow handler and
    // its guard). When a new thread cannot map its alternate stack, Rust's
    // runtime panics in that thread before it runs any of our code, and the
    // whole process aborts: `spawn` itself had already returned `Ok`.
    if let Some(max) = read_number("/proc/sys/vm/max_map_count") {
        let needed = before.mappings + 4 * options.threads as u64;
        if needed > max {
            eprintln!(
                "thread_cost: warning: {} threads need about {needed} memory mappings, \
                 more than vm.max_map_count = {max}; expect an abort",
                options.threads
            );
        }
    }

    // The threads wait on this until the measurement is done.
    let release = Arc::new((Mutex::new(false), Condvar::new()));
    let (ready_tx, ready_rx) = mpsc::channel();
    let started = Instant::now();
    let mut handles = Vec::with_capacity(options.threads);
    let mut spawn_error = None;
    // ANCHOR: spawn
    for i in 0..options.threads {
        let release = Arc::clone(&release);
        let ready = ready_tx.clone();
        let touch = options.touch_kib;
        let mut builder = thread::Builder::new().name(format!("idle-{i}"));
        if let Some(kib) = options.stack_kib {
            builder = builder.stack_size(kib * 1024);
        }
        match builder.spawn(move || {
            touch_stack(touch);
            let _ = ready.send(());
            let (released, wake) = &*release;
            let mut released = released.lock().unwrap();
            while !*released {
                released = wake.wait(released).unwrap();
            }
        }) {
            Ok(handle) => handles.push(handle),
            Err(err) => {
                // The OS refused a thread: past `ulimit -u` or threads-max,
                // or no memory for its stack. Measure the ones we got.
                spawn_error = Some(err);
                break;
            }
        }
    }
    // ANCHOR_END: spawn
    drop(ready_tx);
    for _ in 0..handles.len() {
        let _ = ready_rx.recv();
    }
    let spawn_time = started.elapsed();
    let after = Snapshot::take().unwrap_or_default();

    {
        let (released, wake) = &*release;
        *released.lock().unwrap() = true;
        wake.notify_all();
    }
    let joined = Instant::now();
    let started_count = handles.len();
    for handle in handles {
        let _ = handle.join();
    }
    let join_time = joined.elapsed();

    if options.per_thread {
        per_thread(started_count, spawn_time, &before, &after);
        return ExitCode::SUCCESS;
    }
    report(&options, started_count, &before, &after);
    if let Some(err) = spawn_error {
        say!(
            "spawning failed after {started_count} of {} threads: {err}",
            options.threads
        );
    }
    let n = started_count.max(1) as f64;
    say!(
        "time to start them: {:.1} ms ({:.1} µs per thread); to end and join them: {:.1} ms",
        spawn_time.as_secs_f64() * 1e3,
        spawn_time.as_secs_f64() * 1e6 / n,
        join_time.as_secs_f64() * 1e3
    );
    limits();
    ExitCode::SUCCESS
}

/// Write to about `kib` KiB of this thread's stack, a kibibyte per call
/// frame, so that those pages become resident. `black_box` stops the
/// optimizer from seeing that the arrays are never read.
fn touch_stack(kib: usize) {
    if kib == 0 {
        return;
    }
    let frame = black_box([1u8; 1024]);
    touch_stack(kib - 1);
    black_box(&frame);
}

/// The command line.
struct Options {
    /// How many threads to start.
    threads: usize,
    /// KiB of stack each thread writes before blocking.
    touch_kib: usize,
    /// Stack reservation per thread; `None` for Rust's default.
    stack_kib: Option<usize>,
    /// Print only the per-thread figures, one `name value` a line, for
    /// `--table` to read.
    per_thread: bool,
}

impl Options {
    fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
        let mut options = Options {
            threads: 1000,
            touch_kib: 0,
            stack_kib: None,
            per_thread: false,
        };
        let mut args = args.peekable();
        let number = |flag: &str, value: Option<String>| -> Result<usize, String> {
            let value = value.ok_or_else(|| format!("{flag} needs a number"))?;
            value
                .parse()
                .map_err(|_| format!("{flag}: not a number: {value}"))
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--touch" => options.touch_kib = number("--touch", args.next())?,
                "--stack" => options.stack_kib = Some(number("--stack", args.next())?),
                "--per-thread" => options.per_thread = true,
                _ => options.threads = number("N", Some(arg))?,
            }
        }
        if let Some(stack) = options.stack_kib {
            // Leave room for the thread's own frames beyond the touched ones.
            if options.touch_kib + 32 > stack {
                return Err(format!(
                    "--touch {} does not fit in --stack {stack}",
                    options.touch_kib
                ));
            }
        } else if options.touch_kib > 1024 {
            return Err("--touch is at most 1024 with the default stack".into());
        }
        Ok(options)
    }
}

/// The figures the kernel keeps about this process (and its kernel stacks).
#[derive(Debug, Clone, Default)]
struct Snapshot {
    /// `/proc/self/status` fields, in kB (`Threads` is a count).
    status: HashMap<String, u64>,
    /// `KernelStack` from `/proc/meminfo`, in kB: every thread on the
    /// machine has one, so other programs starting threads add noise.
    kernel_stack_kb: Option<u64>,
    /// Lines of `/proc/self/maps`: the memory mappings of this process.
    mappings: u64,
}

impl Snapshot {
    fn take() -> Option<Snapshot> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        Some(Snapshot {
            status: fields(&status),
            kernel_stack_kb: fields(&meminfo).get("KernelStack").copied(),
            mappings: std::fs::read_to_string("/proc/self/maps")
                .map(|maps| maps.lines().count() as u64)
                .unwrap_or(0),
        })
    }

    fn get(&self, key: &str) -> u64 {
        self.status.get(key).copied().unwrap_or(0)
    }
}

/// `Name:   1234 kB` lines → `Name` → 1234.
fn fields(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (name, rest) = line.split_once(':')?;
            let value = rest.split_whitespace().next()?.parse().ok()?;
            Some((name.to_string(), value))
        })
        .collect()
}

fn report(options: &Options, started: usize, before: &Snapshot, after: &Snapshot) {
    let stack = match options.stack_kib {
        Some(kib) => format!("{kib} KiB"),
        None => match std::env::var("RUST_MIN_STACK") {
            Ok(bytes) => format!("RUST_MIN_STACK={bytes} bytes"),
            Err(_) => "2048 KiB (Rust's default)".to_string(),
        },
    };
    say!(
        "{started} idle threads, stack reserved per thread: {stack}, touched: {} KiB",
        options.touch_kib
    );
    say!(
        "{:<34} {:>12} {:>12} {:>14}",
        "",
        "before",
        "after",
        "per thread"
    );
    let per = |delta: i64| delta as f64 / started.max(1) as f64;
    let row = |label: &str, b: u64, a: u64| {
        let delta = a as i64 - b as i64;
        say!(
            "{label:<34} {:>9} kB {:>9} kB {:>11.1} kB",
            b,
            a,
            per(delta)
        );
    };
    row(
        "VmSize  (virtual, reserved)",
        before.get("VmSize"),
        after.get("VmSize"),
    );
    row(
        "VmRSS   (resident)",
        before.get("VmRSS"),
        after.get("VmRSS"),
    );
    row(
        "VmPTE   (page tables)",
        before.get("VmPTE"),
        after.get("VmPTE"),
    );
    if let (Some(b), Some(a)) = (before.kernel_stack_kb, after.kernel_stack_kb) {
        row("KernelStack (whole machine)", b, a);
    }
    say!(
        "{:<34} {:>12} {:>12}",
        "Threads",
        before.get("Threads"),
        after.get("Threads")
    );
    say!(
        "{:<34} {:>12} {:>12} {:>14.2}",
        "memory mappings (/proc/self/maps)",
        before.mappings,
        after.mappings,
        per(after.mappings as i64 - before.mappings as i64)
    );
}

/// What one thread cost, for `--table`: each figure's growth divided by the
/// threads started, one `name value` a line.
fn per_thread(
    started: usize,
    spawn_time: std::time::Duration,
    before: &Snapshot,
    after: &Snapshot,
) {
    let n = started.max(1) as f64;
    let per = |key: &str| (after.get(key) as f64 - before.get(key) as f64) / n;
    say!("vmsize {:.0}", per("VmSize"));
    say!("vmrss {:.1}", per("VmRSS"));
    say!("vmpte {:.1}", per("VmPTE"));
    if let (Some(b), Some(a)) = (before.kernel_stack_kb, after.kernel_stack_kb) {
        say!("kernelstack {:.1}", (a as f64 - b as f64) / n);
    }
    say!(
        "mappings {:.0}",
        (after.mappings as f64 - before.mappings as f64) / n
    );
    say!("start {:.0}", spawn_time.as_secs_f64() * 1e6 / n);
}

/// `--table`: the chapter's three measurements, each in a fresh child
/// process (a process that has had threads keeps their allocator arenas and
/// mappings, and would skew the next), as one Markdown table.
fn table() -> ExitCode {
    let Ok(me) = std::env::current_exe() else {
        eprintln!("thread_cost: cannot find this program to run it again");
        return ExitCode::FAILURE;
    };
    let runs: [(&str, &[&str]); 3] = [
        ("1000 threads", &["1000"]),
        (
            "1000 threads, 16 KiB of stack touched",
            &["1000", "--touch", "16"],
        ),
        ("10,000 threads", &["10000"]),
    ];
    let mut columns = Vec::new();
    for (title, args) in runs {
        let output = std::process::Command::new(&me)
            .args(args)
            .arg("--per-thread")
            .output();
        let figures = match output {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|line| line.split_once(' '))
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect::<HashMap<String, String>>(),
            Ok(out) => {
                eprintln!(
                    "thread_cost: the {title} run failed ({}): {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("thread_cost: cannot run {}: {e}", me.display());
                return ExitCode::FAILURE;
            }
        };
        columns.push((title, figures));
    }
    let header: Vec<&str> = columns.iter().map(|(title, _)| *title).collect();
    say!("| per thread | {} |", header.join(" | "));
    say!("|---|{}", "---:|".repeat(columns.len()));
    for (key, label, unit) in [
        ("vmsize", "`VmSize`: virtual, reserved", " KiB"),
        ("vmrss", "`VmRSS`: resident, user space", " KiB"),
        ("vmpte", "`VmPTE`: page tables", " KiB"),
        ("kernelstack", "`KernelStack` (kernel memory)", " KiB"),
        ("mappings", "memory mappings", ""),
        ("start", "time to start", " µs"),
    ] {
        let cells: Vec<String> = columns
            .iter()
            .map(|(_, figures)| {
                figures
                    .get(key)
                    .map_or("—".to_string(), |v| format!("{v}{unit}"))
            })
            .collect();
        say!("| {label} | {} |", cells.join(" | "));
    }
    ExitCode::SUCCESS
}

/// A file holding one number, like those in `/proc/sys`.
fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The limits that stop a program from starting ever more threads.
fn limits() {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".into())
    };
    let limit = |name: &str| {
        std::fs::read_to_string("/proc/self/limits")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with(name))
                    .and_then(|l| l[name.len()..].split_whitespace().next().map(String::from))
            })
            .unwrap_or_else(|| "?".into())
    };
    say!("limits on this machine:");
    say!(
        "  main thread's stack (ulimit -s):   {} bytes",
        limit("Max stack size")
    );
    say!(
        "  threads per user (ulimit -u):      {}",
        limit("Max processes")
    );
    say!(
        "  threads on the machine:            {} (/proc/sys/kernel/threads-max)",
        read("/proc/sys/kernel/threads-max")
    );
    say!(
        "  memory mappings per process:       {} (/proc/sys/vm/max_map_count)",
        read("/proc/sys/vm/max_map_count")
    );
    say!(
        "  virtual memory overcommit policy:  {} (/proc/sys/vm/overcommit_memory; 0 = heuristic)",
        read("/proc/sys/vm/overcommit_memory")
    );
}
