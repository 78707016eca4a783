//! # From a response to a statistic and the links to follow
//!
//! What a crawler does with a response it has in full is the same in every
//! lesson, so it is written once: read the status, the content type and the
//! charset; for a redirect, resolve `Location`; for a status-200 HTML or XML
//! page, find the links and keep those the [`UrlPolicy`] allows.
//!
//! What stays in the lessons is the part that *is* the concurrency model:
//! deciding under the lock (or in the one thread) which links are new, and
//! scheduling their fetches.

use url::Url;

use crate::http::Response;
use crate::links::UrlPolicy;
use crate::log::Log;
use crate::stats::FetchStatistic;

/// What one response gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    /// The statistic, complete but for `num_new_urls` (the lesson decides that
    /// when it adds `links` to its seen-set).
    pub stat: FetchStatistic,
    /// The page's distinct allowed links (`stat.num_urls` of them), first-seen order.
    pub links: Vec<Url>,
    /// For a redirect with a `Location`: the target, when the policy allows it.
    pub redirect: Option<Url>,
}

/// Turn a complete response for `url` into its statistic and the URLs to
/// queue. Skipped links are logged at debug level with their [`crate::links::Skip`].
pub fn analyze(url: &Url, response: &Response, policy: &UrlPolicy, log: &Log) -> Analysis {
    todo!("{url}{response:?}{policy:?}{log:?}")
}
