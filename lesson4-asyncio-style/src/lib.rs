//! # Lesson 4: a small asyncio, and the full crawler on top
//!
//! Lesson 3 ended with `async fn fetch` driven by the lesson's own `Task`,
//! `Future` and an asyncio-shaped loop over `mio`: coroutines that read like
//! blocking code. But the crawler around them was still lesson 2's shape —
//! a fetch started for every link the moment it was found — and the
//! runtime was the least that crawler needed: its futures could not fail,
//! its tasks could not be cancelled, and nothing fed workers from a queue.
//!
//! This lesson grows that runtime into a small **asyncio**, module by module
//! with asyncio's names, and then writes the original chapter's crawler on
//! top of it: a fixed number of workers fed by a queue, redirects handled
//! through the queue with a limit per chain, retries, a deadline per
//! attempt, and HTTP/1.1 keep-alive connections.
//!
//! What changed since lesson 3:
//!
//! - handles can be cancelled; `run_until_complete` and `run`;
//! - `Future` holds a result *or an error*, or is cancelled; `Task` can be
//!   **cancelled** at its `.await`;
//! - new: `Queue` with `task_done`/`join`, and `gather`;
//! - connections are pooled (HTTP/1.1 keep-alive);
//! - the crawler: workers and a queue, not a coroutine per link;
//! - last, what ten thousand waiting fetches pay for: readers and timers
//!   that are tasks' wakers, one loop-wide read buffer, coroutines written
//!   as `async move` blocks (see `event_loop`, `socket` and `fetch`).
//!
//! | file | what it teaches | asyncio |
//! |---|---|---|
//! | [`event_loop`] | handles, the ready queue, timers, readers/writers over `mio`, `run_once`, `run_until_complete`, an injectable clock | `BaseEventLoop`, `Handle`, `TimerHandle` |
//! | [`future`] | a result or an error, done-callbacks scheduled with `call_soon`, `.await` | `Future`, `CancelledError` |
//! | [`task`] | stepping a coroutine with a `Wake` waker; cancellation delivered at the `.await` | `Task` |
//! | [`queue`] | `put_nowait`, `get`, `task_done`, `join` | `Queue` |
//! | [`sleep`], [`wait_for`], [`gather`] | small tools built from the pieces above | `sleep`, `wait_for`, `gather` |
//! | [`socket`] | `connect`, `write_all`, `read` as coroutines; one shared read buffer | `sock_connect`, `sock_sendall`, `sock_recv` |
//! | [`connection_pool`] | HTTP/1.1 keep-alive, stale connections, a socket budget | aiohttp's `TCPConnector` |
//! | [`fetch`] | one attempt at a URL, with a deadline | `session.get(url, allow_redirects=False)` |
//! | [`crawler`] | the original chapter's `Crawler`: workers, retries, redirects through the queue | `crawling.py` |
//! | [`polite`] | lesson 3's wait for a URL's turn, on this runtime (cancellation, results that move) | `urllib.robotparser`, `asyncio.sleep` |
//!
//! ## What a fetch takes, and where it gives it back
//!
//! Every end of a fetch — a response, each error, a deadline that drops the
//! attempt, a retry, a stale connection resent — passes through these, so
//! nothing is left behind: one place lost per refused connect, or a worker
//! ended by one failure, and the crawl would stall with URLs still queued.
//! Since lesson 3: the budget was a count (`started`) taken back by hand;
//! now a place is a value (a `Permit`, then the `Connection` holding it),
//! the workers outlive every error, and `task_done` ends every item.
//!
//! <!-- how -->
//! | resource | taken in | given back in |
//! |---|---|---|
//! | a place in the socket budget | `ConnectionPool::acquire`: a `Permit`, or a `Grant` handed to a waiting fetch | `Permit`'s `Drop` while no connection holds it (unsupported URL, resolve or connect failure, deadline, cancellation), then `Connection`'s `Drop`: both `PoolInner::give_slot`; kept across a resend by `ConnectionPool::reopen`; retired on `EMFILE` (`Permit::forget`) |
//! | the socket and its registration | `Socket::start_connect` (`EventLoop::register`) | `Socket`'s `Drop` (`EventLoop::deregister`), on every end but a kept connection |
//! | a reader or a writer | `Socket::wait` | `Wait`'s `Drop`: woken, cancelled or dropped by the deadline |
//! | the deadline's timer | `wait_for`'s `Sleep` (`EventLoop::wake_at`) | fired, or `Sleep`'s `Drop` (`WakeTimer::cancel`) |
//! | the pooled connection | `acquire` (`Grant::Reuse`) or `ConnectionPool::connect` | `ConnectionPool::release` after a complete, `reusable` response (to a waiter or idle, `PoolInner::give`); dropped, closed, on every other end |
//! | the count in flight | `InFlight::start` | `InFlightGuard`'s `Drop` |
//! | robots.txt in progress for a host | `Politeness::gate` (`Gate::FetchRobots`), in `Turns::wait` | `Politeness::robots_answer` returning `None`, whatever came back, then the host's future resolved |
//! | the URL's queue item | `Queue::put_nowait` | one `Queue::task_done`: in `work` after the fetch, or at the end of `Crawler::wait_for_turn` |
//! | the worker | `Crawler::crawl` | only its cancellation: `Crawler::fetch` records every failure and returns `Ok` |
//! <!-- /how -->

pub mod connection_pool;
pub mod crawler;
pub mod event_loop;
pub mod fetch;
pub mod future;
pub mod gather;
pub mod polite;
pub mod queue;
pub mod sleep;
pub mod socket;
pub mod task;
pub mod wait_for;

use std::rc::Rc;

use shared::{Config, CrawlReport};

use crate::crawler::Crawler;

// ANCHOR: crawl
/// Crawl from `config.roots` and report every URL reached: the original's
/// `loop.run_until_complete(crawler.crawl())`. At most
/// `config.socket_budget()` sockets are open at once.
pub fn crawl(config: &Config) -> anyhow::Result<CrawlReport> {
    crawl_with_budget(config, config.socket_budget())
}

/// [`crawl`] with at most `socket_budget` sockets open at once (a test can
/// set a budget above what the process can really open).
pub fn crawl_with_budget(config: &Config, socket_budget: usize) -> anyhow::Result<CrawlReport> {
    let crawler = Rc::new(Crawler::new(config, socket_budget)?);
    let ran = event_loop::run(crawler.clone().crawl());
    // What the crawl still holds: nothing, if every fetch gave back what it
    // took, however it ended.
    let held = crawler.held();
    // A loop that stalled with URLs left ends `run` with an error; which
    // URLs were left, where, and what was not given back, says more.
    crawler.all_done(held)?;
    ran?;
    Ok(crawler.report(held))
}
// ANCHOR_END: crawl
