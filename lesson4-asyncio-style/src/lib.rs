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
    // A loop that stalled with URLs left ends `run` with an error; which
    // URLs were left, and where, says more.
    crawler.all_done()?;
    ran?;
    Ok(crawler.report())
}
// ANCHOR_END: crawl
