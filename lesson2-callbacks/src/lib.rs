//! # Lesson 2: a crawler on one thread, with callbacks
//!
//! Lesson 1 waited for many sockets by giving each its own thread and
//! letting the thread sleep inside `connect` and `read`. This lesson waits
//! for all of them from **one** thread: every socket is non-blocking, a
//! selector (`mio::Poll`, which is `epoll` on Linux) says which sockets can
//! make progress, and an event loop calls the callback registered for each.
//! It is the tutorial's second crawler, `Fetcher` with its `connected` and
//! `read_response` callbacks.
//!
//! What the lesson teaches:
//!
//! - non-blocking sockets, and why spinning on one (`busy_loop.rs`) is not
//!   the way to wait;
//! - readiness: a selector reports which sockets are ready; the program then
//!   does the I/O itself, reading or writing until `WouldBlock`, ready for
//!   spurious events and partial writes;
//! - an event loop with callbacks, `call_soon` and timers, and what a
//!   callback that must reach the loop it is stored in means in Rust (the
//!   loop a shared `Rc` handle whose tables are never borrowed while a
//!   callback runs; the fetcher shared by its callbacks in an
//!   `Rc<RefCell<_>>`);
//! - what one fetch costs when it is a struct and a few closures instead of
//!   a thread: thousands of fetches in flight at once on one thread;
//! - what it costs the programmer: one fetch torn into callbacks that share
//!   state by hand ("stack ripping"), and errors that know only the step
//!   they happened in. Lesson 3 keeps the loop and mends both.
//!
//! What changed since lesson 1: the thread pool and the work queue are gone.
//! `crawl` runs an event loop instead of starting threads; `fetch.rs` is a
//! `Fetcher` with a callback per step instead of one blocking function;
//! `crawler.rs` loses its locks, and its `fetch` is split into `fetch` (start)
//! and `fetched` (the callback that gets the result). Concurrency is no
//! longer a number of threads: every new link gets its fetch at once, up to
//! the number of sockets the process may open.
//!
//! | file | concept |
//! |---|---|
//! | `lib.rs` | `crawl`: start the roots' fetches, run the loop until `urls_todo` is empty, report |
//! | `busy_loop.rs` | the naive way: spinning on a non-blocking socket (an example, not used by the crawler) |
//! | `event_loop.rs` | `EventLoop` over `mio::Poll`: a shared handle: `add_reader`/`add_writer`, `call_soon`, `call_later`, `run_forever`, `stop` |
//! | `fetch.rs` | `Fetcher`: one URL as callbacks (`connected`, `send_request`, `read_response`, `timed_out`) |
//! | `crawler.rs` | `seen_urls`, `urls_todo`, a fetch per new link; `SocketLine`, the socket budget and the line waiting for it |
//! | `polite.rs` | waiting for a URL's turn with callbacks: a timer at the host's slot, a list of callbacks per host for its robots.txt |
//! | `examples/callback_memory.rs` | measuring what a fetch in flight costs: N threads (lesson 1) against N callbacks |
//!
//! ## What a fetch takes, and where it gives it back
//!
//! <!-- how -->
//! | resource | taken in | given back in, on which ends |
//! |---|---|---|
//! | the URL's place in `urls_todo` | `Crawler::fetch` | `Crawler::finished`: from `Crawler::fetched` on every `Fetched::Done` (any status, a redirect, every error), from `take_turn` for `Turn::Blocked` and `Turn::Skip`; not on `Fetched::OutOfDescriptors`, which puts the URL back in line |
//! | a place in line (`SocketLine`), pages and robots.txt alike | `start_or_wait` when the budget is spent or others wait; `out_of_descriptors` (at the head) | `fetch_waiting` pops it, called after every `Fetched::Done` by `fetched` and by `start_robots`'s `done` |
//! | a place in flight (`InFlightGuard` in `Fetcher::counted`) | `Fetcher::connect`, when a socket is registered | `Fetcher::connected` when that address fails; `Fetcher::finish` (`counted = None`) on every end |
//! | the socket: descriptor, registration, writer, reader | `Fetcher::connect` (`register`, `add_writer`); `send_request` (`add_reader`) | `Fetcher::close` (`deregister` drops both callbacks; dropping the `TcpStream` closes the descriptor): in `connected` for each failed address, and in `finish` |
//! | the deadline timer | `Fetcher::fetch` (`call_later`) | `finish` (`TimerHandle::cancel`), or it fires and runs `timed_out` |
//! | the host's robots.txt: `Rules::Fetching` and its `robots_pending` list | `Turns::wait` on `Gate::FetchRobots` | `Turns::robots_fetched` once `robots_answer` says `None` (after any redirects and the one retry of an error, timeout or 5xx): the rules are known and every waiting callback runs |
//! | the host's slot: a `call_at` timer | `Turns::wait` on `Gate::Fetch` | it fires: `done(Turn::Fetch)`, then `take_turn` |
//!
//! <!-- /how -->
//!
//! Lesson 1 gave its budget place back in a guard's `Drop`, which also woke
//! the next thread waiting: every path did both. Here the count is still a
//! guard, but waking the line is a call made by a `done` callback, so every
//! way a fetch ends must reach `Fetcher::finish`, and every `done` must call
//! `fetch_waiting`. A path that forgets strands URLs: the loop runs out of
//! work with `urls_todo` not empty, and `crawl` fails with
//! `Crawler::all_done`'s error.

pub mod busy_loop;
pub mod crawler;
pub mod event_loop;
pub mod fetch;
pub mod polite;

use std::time::Instant;

use anyhow::Context;
use shared::{Config, CrawlReport};

use crate::crawler::Crawler;
use crate::event_loop::EventLoop;

// ANCHOR: crawl
/// Crawl from `config.roots` on one thread and report every URL reached. At
/// most `config.socket_budget()` fetches hold a socket at once.
pub fn crawl(config: &Config) -> anyhow::Result<CrawlReport> {
    crawl_with_budget(config, config.socket_budget())
}

/// [`crawl`] with at most `socket_budget` sockets open at once (a test can
/// set a small budget without lowering the process's open-file limit).
pub fn crawl_with_budget(config: &Config, socket_budget: usize) -> anyhow::Result<CrawlReport> {
    let started = Instant::now();
    let event_loop = EventLoop::new().context("cannot create the event loop")?;
    event_loop.set_trace(config.trace.clone());
    let crawler = Crawler::new(config, socket_budget)?;
    {
        let mut crawler = crawler.borrow_mut();
        // Roots are depth 0; a page's links one more.
        for root in crawler.roots().to_vec() {
            crawler.fetch(&event_loop, root, 0);
        }
    }
    // Runs every callback until the last fetch's `done` finds `urls_todo`
    // empty and stops the loop.
    let ran = event_loop.run_forever().context("the event loop failed");
    // What the crawl still holds now that the loop has stopped: nothing, if
    // every fetch gave back what it took, however it ended. Counted before
    // `close`, which drops it all.
    let held = crawler.borrow().held(&event_loop);
    // Callbacks hold fetchers that hold the loop; drop whatever is left so
    // the loop (and any socket still open) is freed, even when `run` failed.
    event_loop.close();
    // The loop ends when the last URL is finished, or when it has nothing
    // left to run: then every URL must be finished too. URLs left say more
    // than the loop's own error: where they were, and what was not given
    // back.
    crawler.borrow().all_done(held)?;
    ran?;
    let report = crawler.borrow_mut().report(started.elapsed(), held);
    Ok(report)
}
// ANCHOR_END: crawl
