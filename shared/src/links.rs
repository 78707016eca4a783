//! # Finding links, and deciding which to follow
//!
//! The course's link extraction is the tutorial's: a regular expression over
//! `href` attributes, not an HTML parser. It runs on the raw body bytes, so a
//! page in an unknown charset (or not valid UTF-8 at all) cannot break link
//! finding. Each value is then decoded (`&amp;`, numeric character
//! references), resolved against the page's `<base href>` or the page URL,
//! and stripped of its fragment.
//!
//! [`UrlPolicy`] is the 500-lines crawler's `url_allowed`: the scheme must be
//! `http` or `https`, the host must be one of the roots' hosts (strict: with
//! or without `www.`; lenient: the last two labels; an IP only literally), and
//! the URL must not match `--exclude`.

use regex::Regex;
use url::Url;

/// The course's link regex (spec, "Precise rules").
pub const LINK_PATTERN: &str = r#"(?i)href\s*=\s*["']?([^\s"'<>]+)"#;

/// Every `href` value in `body`, decoded, in document order (duplicates kept).
pub fn extract_hrefs(body: &[u8]) -> Vec<String> {
    todo!("{}", body.len())
}

/// The page's `<base href>`, if it has one.
pub fn find_base(body: &[u8]) -> Option<String> {
    todo!("{}", body.len())
}

/// Every link of the page, resolved against its `<base href>` or `page_url`,
/// fragment dropped, distinct, in first-seen order. Values that do not parse
/// as URLs are dropped.
pub fn extract_links(body: &[u8], page_url: &Url) -> Vec<Url> {
    todo!("{}{page_url}", body.len())
}

/// A root from the command line: `http://` added when it has no scheme,
/// fragment dropped. An error message when it is not a URL.
pub fn normalize_root(root: &str) -> Result<Url, String> {
    todo!("{root}")
}

/// Why a link is not followed (for the `-v` debug lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// Not `http`/`https`.
    Scheme(String),
    /// The host is not one of the roots' hosts.
    Host(String),
    /// It matches `--exclude`.
    Excluded,
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::Scheme(s) => write!(f, "scheme {s} not followed"),
            Skip::Host(h) => write!(f, "host {h} not allowed"),
            Skip::Excluded => write!(f, "excluded"),
        }
    }
}

/// Which URLs belong to the crawl.
#[derive(Debug, Clone)]
pub struct UrlPolicy {
    /// The roots' hosts, lower-cased.
    root_hosts: Vec<String>,
    /// `--lenient`: compare the last two labels.
    lenient: bool,
    /// `--exclude`.
    exclude: Option<Regex>,
}

impl UrlPolicy {
    pub fn new(roots: &[Url], exclude: Option<Regex>, lenient: bool) -> Self {
        UrlPolicy {
            root_hosts: roots
                .iter()
                .filter_map(|r| r.host_str().map(str::to_ascii_lowercase))
                .collect(),
            lenient,
            exclude,
        }
    }

    /// `Ok(())` when `url` is to be followed.
    pub fn check(&self, url: &Url) -> Result<(), Skip> {
        todo!(
            "{url}{:?}{}{:?}",
            self.root_hosts,
            self.lenient,
            self.exclude
        )
    }
}
