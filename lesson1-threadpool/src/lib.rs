//! Lesson 1 (being built).

pub mod pool;
pub mod queue;

use shared::{Config, CrawlReport};

/// Crawl from `config.roots` and report every URL reached.
pub fn crawl(config: &Config) -> anyhow::Result<CrawlReport> {
    let _ = config;
    anyhow::bail!("lesson 1 is not yet built")
}
