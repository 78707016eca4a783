//! # Lesson 1: a crawler on a pool of threads
//!
//! The first of the course's four crawlers, and the most familiar model:
//! each fetch is ordinary straight-line code on a blocking socket — connect,
//! write, read until done — and to have several fetches in flight, we run
//! several of them on several OS threads. `--threads N` (default 4) threads
//! share one work queue of URLs; each takes a URL, fetches it, puts the links
//! it has not seen before, and marks the URL done. The main thread puts the
//! roots and waits on the queue's `join` until every URL put has been done.
//!
//! What the lesson teaches:
//!
//! - a work queue with `task_done`/`join` (Python's `queue.Queue`), built
//!   from a `Mutex` and two `Condvar`s, and why `join` counts unfinished
//!   tasks rather than waiting for an empty queue;
//! - a thread pool whose threads *end*: the queue is shut down, blocked
//!   `get`s return `None`, and every thread is joined — and a panic in one
//!   of them cannot leave the main thread waiting forever;
//! - the lock around the seen-set, and the race it prevents: "is it new?"
//!   and "mark it seen" must be one step;
//! - blocking sockets with a deadline for the whole fetch, which a per-call
//!   socket timeout alone does not give;
//! - what a thread costs (`examples/thread_cost.rs`), which is why the next
//!   three lessons do without one thread per fetch.
//!
//! This is the first lesson, so nothing changed since a previous one. What
//! lesson 2 changes: the threads go, and one thread waits on many
//! non-blocking sockets at once, with callbacks.
//!
//! | file | concept |
//! |---|---|
//! | `lib.rs` | `crawl`: start the pool, put the roots, `join`, report |
//! | `crawler.rs` | the state all threads share; the seen-set and its lock; counting fetches in flight |
//! | `fetch.rs` | one URL on a blocking `TcpStream`, with a deadline for the whole fetch |
//! | `queue.rs` | `Queue`: `put`, blocking `get`, `task_done`, `join`, `shutdown` from `Mutex` + `Condvar` |
//! | `pool.rs` | `ThreadPool`: `n` threads looping over the queue; ending them; surviving a panic |
//! | `polite.rs` | waiting for a URL's turn (robots.txt, `--delay`, `--max-pages`): a sleep, and a `Condvar` for another thread's robots.txt |
//! | `sync.rs` | where `Mutex`, `Condvar`, `Arc` and threads come from: `std`, or `loom` in `tests/model.rs` |
//! | `examples/thread_cost.rs` | measuring what an idle thread costs in memory |
//! | `examples/std_threads.rs` | the same crawl on `std::thread::scope`, with no pool |
//!
//! ## What a fetch takes, and where it gives it back
//!
//! There is no event loop and no pooled connection here: one request per
//! connection. A place kept after one refused connect would, with a budget
//! of one, leave every other thread asleep in `InFlight::start`: the queued
//! URLs are stranded, work is left and no thread can do it, and `join`
//! waits forever.
//!
//! <!-- how -->
//! | resource | taken in | given back in, and on which ends |
//! |---|---|---|
//! | a place in the socket budget | `InFlight::start`, each round of `Crawler::get`, before the name is looked up | `InFlightGuard`'s `Drop` as `Crawler::get` returns: a response, every `FetchError` (`unsupported` and `dns` too), "too many open files"; and at the end of a round that waits out `Fetched::OutOfDescriptors` |
//! | the socket's descriptor | `TcpStream::connect_timeout`, in `fetch::connect` | a failed attempt's socket is closed inside `connect_timeout`; the connected `TcpStream` is dropped at the end of `fetch::get`, after a response or any `?` in `send`/`receive` — always before the place |
//! | a host's robots.txt, marked as being fetched | `Politeness::gate` (`Gate::FetchRobots`) | `Politeness::robots_answer` records the host's rules once its redirects and one retry are spent (an error, a timeout, a `5xx` too); `Answering`'s `Drop` then wakes the threads on `rules_known`, and after a panic marks the fetch abandoned |
//! | the host's delay slot | `HostSchedule::next_slot`, in `gate` and `robots_answer` | nothing to give back: a slot is a time, which the thread sleeps until; a failed fetch still counts as a start |
//! | the thread | `fetcher`, one URL per `Queue::get` | back to the loop when `Crawler::fetch` returns, which it does on every failure: each is a `FetchError` value it records, never a `?` out of it; until the queue is shut down, only a panic ends a thread |
//! | one unfinished task | `Queue::put` | `TaskDone`'s `Drop`, once per URL, however `Crawler::fetch` returns (fetched, failed, blocked, skipped) and on a panic |
//!
//! Each give-back is a guard's `Drop` or an end of scope, not a line at the
//! end, because the failures leave early (a `return` in `connect`, a `?` in
//! `receive`).
//! <!-- /how -->

pub mod crawler;
pub mod fetch;
pub mod polite;
pub mod pool;
pub mod queue;
pub mod sync;

use std::time::Instant;

use anyhow::Context;
use shared::{Config, CrawlReport};

use crate::crawler::Crawler;
use crate::pool::ThreadPool;
use crate::sync::Arc;

/// The most threads a crawl may start: the command line refuses more (see
/// [`shared::cli::MAX_THREADS`] for why), and `crawl` checks again for
/// callers that build a `Config` by hand.
pub use shared::cli::MAX_THREADS;

// ANCHOR: crawl
/// Crawl from `config.roots` with `config.threads` threads and report every
/// URL reached. At most `config.socket_budget()` fetches hold a socket at
/// once.
pub fn crawl(config: &Config) -> anyhow::Result<CrawlReport> {
    crawl_with_budget(config, config.socket_budget())
}

/// [`crawl`] with at most `socket_budget` sockets open at once (a test can
/// set a budget above what the process can really open).
pub fn crawl_with_budget(config: &Config, socket_budget: usize) -> anyhow::Result<CrawlReport> {
    let started = Instant::now();
    anyhow::ensure!(
        (1..=MAX_THREADS).contains(&config.threads),
        "--threads must be between 1 and {MAX_THREADS}"
    );
    // The threads may outlive this stack frame as far as the compiler can
    // tell, so what they share is reference-counted rather than borrowed.
    let crawler = Arc::new(Crawler::new(config, socket_budget)?);
    let pool = {
        let crawler = Arc::clone(&crawler);
        ThreadPool::new(config.threads, move |urls_todo, work| {
            crawler.fetch(urls_todo, work)
        })
        .context("cannot start the fetcher threads")?
    };
    // Each URL travels with its depth: roots are 0, a page's links one more.
    for root in crawler.roots() {
        pool.add_task((root.clone(), 0))?;
    }
    // Sleeps until every URL put — the roots, and every link the threads
    // put — has been marked done; then ends and joins the threads.
    pool.wait_completion()?;
    // What the crawl still holds, now that every URL is done: nothing, if
    // every fetch gave back what it took, however it ended.
    let held = crawler.held();
    crawler.all_done(held)?;
    Ok(crawler.report(started.elapsed(), config.threads, held))
}
// ANCHOR_END: crawl
