//! # The same crawl on the standard library's scoped threads
//!
//! Lesson 1 builds its thread pool by hand: a `ThreadPool` that starts its
//! threads, shares the queue and the crawler with them through `Arc`s, and
//! stops and joins them in `wait_completion` or in its `Drop`. This program
//! runs the very same crawl — the lesson's `Queue` and `Crawler`, through
//! their public API, and the same command line, report, log lines and exit
//! codes as `lesson1` — on [`std::thread::scope`] instead, with no pool at
//! all.
//!
//! ```text
//! cargo run --release -p lesson1-threadpool --example std_threads -- http://localhost:8000/
//! ```
//!
//! What scoped threads give for free:
//!
//! - **Joining.** `thread::scope` returns only once every thread started in
//!   it has ended, so no thread can outlive the crawl; there is no `Drop`
//!   to write that stops and joins them on an early return.
//! - **Borrowing.** Because no thread outlives the scope, the compiler lets
//!   the threads borrow from the stack of the function that opened it: the
//!   crawler and the queue are plain local variables, lent as `&Crawler` and
//!   `&Queue`, with no `Arc` and no `'static` bound.
//!
//! What they do not give:
//!
//! - **A panic policy.** The scope waits for every thread, so a thread
//!   still asleep in `Queue::get` keeps it open for ever: the queue must
//!   still be shut down, by the main thread once the work is done, and at
//!   once by a guard when a fetch panics: the threads run the pool's own loop,
//!   `pool::fetcher`, with its `TaskDone` guard.
//!   And a panic must still be turned into the crawl's error: a thread's
//!   panic left unjoined makes `thread::scope` itself panic.
//! - **A pool that outlives one crawl.** These threads are started for one
//!   call and end with it. A program that crawls for many callers — a
//!   server taking requests — wants its threads started once, kept, and fed
//!   work from all of them: a pool, with a queue any caller can reach.
//!
//! A production pool, for reference (the course does not depend on it):
//! rayon's `ThreadPool` keeps its threads for as long as the pool lives and
//! takes work from any thread that holds it, and `rayon::scope` lets that
//! work borrow from the caller's stack, as `thread::scope` does; a panic in
//! the work comes back out of `rayon::scope` once the rest has finished.
//! Its threads are sized for computing (one per core by default), not for
//! waiting on sockets: a blocking fetch holds one of them for as long as it
//! waits, as it holds a thread here.

use std::process::ExitCode;
use std::thread;
use std::time::Instant;

use anyhow::Context;
use lesson1_threadpool::crawler::Crawler;
use lesson1_threadpool::pool::{fetcher, panic_message};
use lesson1_threadpool::queue::Queue;
use lesson1_threadpool::MAX_THREADS;
use shared::{Config, CrawlReport};

/// The command line, the report and the exit codes are lesson 1's own:
/// only the crawl function differs.
fn main() -> ExitCode {
    shared::cli::run(shared::Lesson::One, crawl)
}

// ANCHOR: crawl
/// Crawl from `config.roots` with `config.threads` scoped threads, as
/// `lesson1_threadpool::crawl` does with its pool.
pub fn crawl(config: &Config) -> anyhow::Result<CrawlReport> {
    crawl_with_budget(config, config.socket_budget())
}

/// [`crawl`] with at most `socket_budget` sockets open at once.
pub fn crawl_with_budget(config: &Config, socket_budget: usize) -> anyhow::Result<CrawlReport> {
    let started = Instant::now();
    anyhow::ensure!(
        (1..=MAX_THREADS).contains(&config.threads),
        "--threads must be between 1 and {MAX_THREADS}"
    );
    // Plain local variables, not `Arc`s: the threads borrow them, and the
    // scope in `run_fetchers` ends before this function does.
    let crawler = Crawler::new(config, socket_budget)?;
    let urls_todo = Queue::new();
    // Each URL travels with its depth: roots are 0, a page's links one more.
    for root in crawler.roots() {
        urls_todo.put((root.clone(), 0))?;
    }
    run_fetchers(config.threads, &urls_todo, |urls_todo, item| {
        crawler.fetch(urls_todo, item)
    })?;
    // The threads have all ended here: what the crawl still holds is
    // nothing, if every fetch gave back what it took.
    let held = crawler.held();
    crawler.all_done(held)?;
    Ok(crawler.report(started.elapsed(), config.threads, held))
}

/// Run `threads` threads over `urls_todo`, each calling `work` for every
/// item it takes, until every item put has been marked done; then end the
/// threads. An error when a thread could not be started or panicked.
pub fn run_fetchers<T: Send>(
    threads: usize,
    urls_todo: &Queue<T>,
    work: impl Fn(&Queue<T>, T) + Sync,
) -> anyhow::Result<()> {
    // Everything the threads borrow — `urls_todo`, `work` — lives outside
    // the scope, so it outlives every thread started in it.
    thread::scope(|scope| {
        let mut fetchers = Vec::with_capacity(threads);
        let spawned = (0..threads).try_for_each(|i| {
            // A named thread shows up as `fetcher-3` in a panic message. Each
            // runs the pool's own loop: `TaskDone` marks every item done,
            // and shuts the queue down at once when `work` panics.
            let handle = thread::Builder::new()
                .name(format!("fetcher-{i}"))
                .spawn_scoped(scope, || fetcher(urls_todo, &work))?;
            fetchers.push(handle);
            Ok::<(), std::io::Error>(())
        });
        if spawned.is_ok() {
            // Sleeps until every URL put — the roots, and every link the
            // threads put — has been marked done.
            urls_todo.join();
        }
        // Every thread's `get` now returns `None`, and each leaves its loop.
        // Without this the scope would wait for ever at its end, for
        // threads asleep in `get`. After `join` nothing is queued; after a
        // failed spawn the queued roots are dropped, and the threads already
        // started end once their current fetch does.
        urls_todo.shutdown(true);
        // Joined by hand, not left to the scope: a thread joined here hands
        // back its panic as a value, where one left to the scope would make
        // `thread::scope` panic in turn.
        let panics: Vec<String> = fetchers
            .into_iter()
            .filter_map(|handle| handle.join().err())
            .map(|payload| panic_message(payload.as_ref()))
            .collect();
        spawned.context("cannot start the fetcher threads")?;
        match panics.first() {
            None => Ok(()),
            Some(message) => anyhow::bail!(
                "{} fetcher thread(s) panicked, the first with: {message}",
                panics.len()
            ),
        }
    })
}

// ANCHOR_END: crawl
