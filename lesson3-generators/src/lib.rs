//! Lesson 3 (being built).

pub mod crawler;
pub mod event_loop;
pub mod fetch;
pub mod fetch_by_hand;
pub mod future;
pub mod generator;
pub mod task;

use std::time::Instant;

use anyhow::Context;
use shared::{Config, CrawlReport};

use crate::crawler::Crawler;
use crate::event_loop::EventLoop;

// ANCHOR: crawl
/// Crawl from `config.roots` on one thread and report every URL reached. At
/// most `shared::net::socket_budget()` fetches hold a socket at once.
pub fn crawl(config: &Config) -> anyhow::Result<CrawlReport> {
    crawl_with_budget(config, shared::net::socket_budget())
}

/// [`crawl`] with at most `socket_budget` sockets open at once (a test can
/// set a small budget without lowering the process's open-file limit).
pub fn crawl_with_budget(config: &Config, socket_budget: usize) -> anyhow::Result<CrawlReport> {
    let started = Instant::now();
    let event_loop = EventLoop::new().context("cannot create the event loop")?;
    let crawler = Crawler::new(config, socket_budget)?;
    {
        let mut crawler = crawler.borrow_mut();
        for root in crawler.roots().to_vec() {
            crawler.fetch(&event_loop, root);
        }
    }
    // Steps every task until the last one's `fetched` finds `urls_todo`
    // empty and stops the loop.
    let ran = event_loop.run().context("the event loop failed");
    // Tasks hold the loop; drop whatever is left so the loop (and any socket
    // still open) is freed, even when `run` failed.
    event_loop.close();
    ran?;
    let report = crawler.borrow_mut().report(started.elapsed());
    Ok(report)
}
// ANCHOR_END: crawl
