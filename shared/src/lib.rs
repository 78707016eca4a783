//! # `shared` — what does not change between lessons
//!
//! The four lessons rebuild one crawler with four concurrency models. What the
//! crawler *does* — speak HTTP/1.x, find links, decide which URLs belong to the
//! site, count results and print the report, read the command line — is the
//! same in every lesson, so it lives here, once. A diff between two lessons
//! then shows only the concurrency model changing.
//!
//! | module | what it holds |
//! |---|---|
//! | [`http`] | `GET` request writing and an incremental response parser fed bytes as they arrive |
//! | [`links`] | the course's link regex, URL resolution and the URL policy (hosts, schemes, `--exclude`) |
//! | [`robots`] | robots.txt (RFC 9309): the rules that apply to this crawler, whether a URL is allowed, the crawl delay |
//! | [`schedule`] | politeness (the next start of a fetch to a host, a delay after the last) and `--max-pages`/`--max-depth` counts |
//! | [`polite`] | what a lesson asks before each fetch: robots.txt first, the host's next slot, the page limit |
//! | [`status`] | the live status line: its counts and text, how often it is redrawn |
//! | [`page`] | turning a parsed response into a [`stats::FetchStatistic`] plus the links to follow |
//! | [`net`] | resolving a host once per crawl, the `https` refusal, the open-file limit |
//! | [`stats`] | `FetchStatistic`, `FetchError` and its kinds (the report's `fail_<kind>` keys) |
//! | [`report`] | `CrawlReport` and the report printer, in the course's one layout |
//! | [`log`] | the log lines on stderr, with levels (`-q`, `-v`), capturable in tests |
//! | [`trace`] | `--trace FILE`: fetches, their phases, the loop's turns and counters over time, in the Trace Event Format |
//! | [`cli`] | one argument parser for all lessons, and `run`, the body of every `main` |
//! | [`demo`] | the site `--demo` crawls, served in the same process |
//! | [`fixtures`] | test servers: a scripted in-process HTTP server, a site generator, a static file server |
//! | [`behaviour`] | the behaviour suite every lesson's tests run |

pub mod behaviour;
pub mod cli;
pub mod demo;
pub mod fixtures;
pub mod http;
pub mod links;
pub mod log;
pub mod net;
pub mod page;
pub mod polite;
pub mod report;
pub mod robots;
pub mod schedule;
pub mod stats;
pub mod status;
pub mod trace;

pub use cli::{Config, Lesson};
pub use report::{CrawlReport, Held, Stranded};
pub use stats::{Blocked, FailKind, FetchError, FetchStatistic};

/// The signature every lesson's `crawl` has: the behaviour suite, the demo and
/// `main` all take a lesson through this one function.
pub type CrawlFn = fn(&Config) -> anyhow::Result<CrawlReport>;
