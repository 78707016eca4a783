//! # What does one fetch in flight cost? Threads, callbacks, coroutines
//!
//! ```text
//! cargo run --release -p lesson3-generators --example coroutine_memory -- 1000 5000
//! ```
//!
//! First it prints the size of one fetch's coroutine: `size_of_val` of the
//! future `Fetcher::fetch` returns (the frame the compiler built), of the
//! hand-written `FetchByHand`, and of the sub-coroutines inside them. With
//! `--sizes` it prints that table alone, and with `--memory N...` only what
//! follows.
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
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Duration;

use lesson3_generators::event_loop::EventLoop;
use lesson3_generators::fetch::{self, Fetcher, InFlight};
use lesson3_generators::fetch_by_hand::fetch_by_hand;
use lesson3_generators::sleep::sleep;
use lesson3_generators::socket::Socket;
use shared::http::{Limits, ResponseParser};
use shared::net::Resolver;

use shared::fixtures::memory::{memory_per_fetch, Subject};
use shared::Lesson;

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
        Rc::from("crawler-course"),
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], 80));
    // A socket to hand the sub-coroutines (they are not run). It registers
    // with the running loop, so it is made inside one.
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let target = listener.local_addr()?;
    let made = Rc::new(std::cell::RefCell::new(None));
    let out = Rc::clone(&made);
    event_loop.run_until_complete(async move {
        *out.borrow_mut() = Some(Socket::start_connect(target));
    })?;
    let Some(made) = made.take() else {
        anyhow::bail!("the socket was not made");
    };
    let mut sock = made?;

    println!("| future | bytes |");
    println!("|---|---:|");
    let row = |name: &str, bytes: usize| println!("| `{name}` | {bytes} |");
    row("fetcher.fetch()", size_of_val(&fetcher.fetch()));
    row(
        "fetch_by_hand(&fetcher)",
        size_of_val(&fetch_by_hand(&fetcher)),
    );
    row(
        "connect_any(&addrs)",
        size_of_val(&fetch::connect_any(&[addr])),
    );
    row(
        "Socket::connect(&addr)",
        size_of_val(&Socket::connect(&addr)),
    );
    row("sock.write_all(request)", size_of_val(&sock.write_all(b"")));
    row("sock.read()", size_of_val(&sock.read()));
    row(
        "read_all(&mut sock, limits)",
        size_of_val(&fetch::read_all(&mut sock, Limits::default())),
    );
    row(
        "sleep(timeout)",
        size_of_val(&sleep(Duration::from_secs(1))),
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
    // `--sizes`: the first table alone; `--memory N...`: the rest alone
    // (the chapter shows them in two places).
    match args.first().map(String::as_str) {
        Some("--sizes") => return coroutine_sizes(),
        Some("--memory") | Some("--child") => {}
        _ => coroutine_sizes()?,
    }
    let args = match args.first().map(String::as_str) {
        Some("--memory") => &args[1..],
        _ => args,
    };
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
            Subject {
                name: "lesson3",
                label: "lesson 3, coroutines",
                lesson: Lesson::Three,
                crawl: lesson3_generators::crawl,
            },
        ],
    )
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("coroutine_memory: {e:#}");
            ExitCode::FAILURE
        }
    }
}
