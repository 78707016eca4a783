//! Lesson 2 (being built).

pub mod busy_loop;
pub mod event_loop;

use shared::{Config, CrawlReport};

/// Crawl from `config.roots` and report every URL reached.
pub fn crawl(config: &Config) -> anyhow::Result<CrawlReport> {
    let _ = config;
    anyhow::bail!("lesson 2 is not yet built")
}
