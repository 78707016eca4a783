//! # Fetch statistics and fetch errors
//!
//! One [`FetchStatistic`] records how one URL ended — the 500-lines crawler's
//! `FetchStatistic` namedtuple, field for field. Every lesson produces exactly
//! one per finished URL, and the report is built from nothing else.
//!
//! A failed fetch carries a [`FetchError`]: a [`FailKind`] that decides which
//! `fail_<kind>` key the report counts it under (and, in lesson 4, whether it
//! is retried), plus the human-readable message printed on the URL's line.
//! There is one error type for the whole course so that the HTTP parser, the
//! socket code of every lesson and the report agree on what went wrong.

use std::fmt;
use std::io;

/// Why a fetch failed. Each kind is one `fail_<kind>` key of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailKind {
    /// The host name did not resolve.
    Dns,
    /// No resolved address accepted a connection.
    Connect,
    /// The whole-fetch deadline (`--timeout`) passed.
    Timeout,
    /// The connection closed or was reset before the response was complete.
    Reset,
    /// The response does not parse (status line, headers, chunk framing).
    Protocol,
    /// The headers or the body exceeded a limit of [`crate::http::Limits`].
    TooLarge,
    /// A redirect status came without a `Location` header.
    Redirect,
    /// The URL needs something the course does not build (`https`: no TLS).
    Unsupported,
}

impl FailKind {
    /// Every kind, in report (alphabetical key) order.
    pub const ALL: [FailKind; 8] = [
        FailKind::Connect,
        FailKind::Dns,
        FailKind::Protocol,
        FailKind::Redirect,
        FailKind::Reset,
        FailKind::Timeout,
        FailKind::TooLarge,
        FailKind::Unsupported,
    ];

    /// The suffix of the report's `fail_<kind>` key.
    pub fn key(self) -> &'static str {
        match self {
            FailKind::Dns => "dns",
            FailKind::Connect => "connect",
            FailKind::Timeout => "timeout",
            FailKind::Reset => "reset",
            FailKind::Protocol => "protocol",
            FailKind::TooLarge => "too_large",
            FailKind::Redirect => "redirect",
            FailKind::Unsupported => "unsupported",
        }
    }

    /// Lesson 4 retries network trouble; a limit, a missing `Location` or an
    /// `https` URL would fail the same way every time, so retrying is waste.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            FailKind::Dns
                | FailKind::Connect
                | FailKind::Timeout
                | FailKind::Reset
                | FailKind::Protocol
        )
    }
}

/// A failed fetch: what kind of failure, and the message for the report line.
///
/// The message is the whole story as the lesson could tell it. Lessons 1 and 2
/// can only say what the failing step saw (`connection refused`); from lesson
/// 3 on, sub-coroutines add context, and the message reads like
/// `fetching URL: reading response: connection reset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchError {
    /// Which `fail_<kind>` key this failure counts under.
    pub kind: FailKind,
    /// What is printed after `URL error`.
    pub message: String,
    /// The status code of a status line that arrived before the failure (a
    /// `200 OK` whose `Content-Length` is garbage, say). The URL still
    /// failed, but a server answered it: the exit status counts it as a
    /// response, so the "is a site running?" hint is not printed.
    pub status: Option<u16>,
}

impl FetchError {
    pub fn new(kind: FailKind, message: impl Into<String>) -> Self {
        FetchError {
            kind,
            message: message.into(),
            status: None,
        }
    }

    /// The same error, noting that a status line with `status` had arrived.
    pub fn with_status(mut self, status: Option<u16>) -> Self {
        self.status = status;
        self
    }

    /// Classify an I/O error from a socket. `connecting` says whether the
    /// error came while the connection was being set up, where any failure is
    /// a `connect` failure; afterwards the kind follows the error.
    pub fn from_io(err: &io::Error, connecting: bool) -> Self {
        use io::ErrorKind as K;
        let kind = match err.kind() {
            K::TimedOut | K::WouldBlock => FailKind::Timeout,
            _ if connecting => FailKind::Connect,
            K::ConnectionRefused => FailKind::Connect,
            K::ConnectionReset
            | K::ConnectionAborted
            | K::BrokenPipe
            | K::UnexpectedEof
            | K::NotConnected => FailKind::Reset,
            K::InvalidData => FailKind::Protocol,
            _ => FailKind::Reset,
        };
        FetchError::new(kind, io_message(err))
    }

    /// Recover the kind from an `anyhow` error chain (lessons 3 and 4 wrap
    /// errors in context as they travel up through sub-coroutines). The
    /// message is the whole chain, outermost first: `a: b: c`.
    pub fn from_anyhow(err: &anyhow::Error) -> Self {
        let (kind, status) = err
            .chain()
            .find_map(|cause| {
                if let Some(fe) = cause.downcast_ref::<FetchError>() {
                    Some((fe.kind, fe.status))
                } else {
                    cause
                        .downcast_ref::<io::Error>()
                        .map(|io| (FetchError::from_io(io, false).kind, None))
                }
            })
            .unwrap_or((FailKind::Protocol, None));
        FetchError::new(kind, format!("{err:#}")).with_status(status)
    }
}

/// `io::Error`'s `Display` appends ` (os error 104)`; the report line is for
/// people, so keep the words and drop the number.
pub fn io_message(err: &io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_lowercase(),
        None => text.to_lowercase(),
    }
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FetchError {}

/// How one URL ended: the 500-lines crawler's `FetchStatistic`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FetchStatistic {
    /// The URL as fetched (normalized, no fragment).
    pub url: String,
    /// For a redirect: the `Location` resolved against `url`, fragment dropped.
    pub next_url: Option<String>,
    /// The status code, when a status line was received — also for a fetch
    /// that failed after it (then the error's [`FetchError::status`]). For a
    /// URL [`FetchStatistic::blocked`] names: the status its host's
    /// robots.txt was answered with, if any (the report line does not show it).
    pub status: Option<u16>,
    /// Why the fetch failed, if it did (after all its tries).
    pub error: Option<FetchError>,
    /// Body length in bytes, after de-chunking.
    pub size: usize,
    /// Media type without parameters, lower-cased (status 200 only).
    pub content_type: Option<String>,
    /// The `charset` parameter, lower-cased, `utf-8` by default (status 200 only).
    pub encoding: Option<String>,
    /// Distinct allowed links on the page.
    pub num_urls: usize,
    /// Those of them that were not seen before this page added them.
    pub num_new_urls: usize,
    /// Not fetched: the host's robots.txt did not allow it (or could not be
    /// had). Such a URL has no status and no error.
    pub blocked: Option<Blocked>,
}

/// Why a URL was not fetched at all: the report's `URL blocked WHY` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    /// The host's robots.txt disallows it for this crawler.
    Robots,
    /// The host's robots.txt could not be had (a `5xx`, a `429`, no answer),
    /// and a careful crawler then fetches nothing from that host.
    RobotsUnavailable,
}

impl Blocked {
    /// The word on the report line: `robots`, `robots-unavailable`.
    pub fn key(self) -> &'static str {
        match self {
            Blocked::Robots => "robots",
            Blocked::RobotsUnavailable => "robots-unavailable",
        }
    }
}

impl FetchStatistic {
    /// The statistic of a fetch that failed.
    pub fn failed(url: impl Into<String>, error: FetchError) -> Self {
        FetchStatistic {
            url: url.into(),
            status: error.status,
            error: Some(error),
            ..Default::default()
        }
    }

    /// The statistic of a URL that was not fetched.
    pub fn blocked(url: impl Into<String>, why: Blocked) -> Self {
        FetchStatistic {
            url: url.into(),
            blocked: Some(why),
            ..Default::default()
        }
    }

    /// Is this status one the crawler follows (300, 301, 302, 303, 307, 308)?
    pub fn is_redirect_status(status: u16) -> bool {
        matches!(status, 300..=303 | 307 | 308)
    }
}

/// `Content-Type: text/HTML; Charset="UTF-8"` → (`text/html`, `Some("utf-8")`).
/// The media type is lower-cased and stripped of parameters; the charset is
/// unquoted and lower-cased. An empty header gives an empty media type.
pub fn parse_content_type(value: &str) -> (String, Option<String>) {
    let mut parts = value.split(';');
    let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let charset = parts.find_map(|param| {
        let (name, val) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        let val = val.trim().trim_matches(|c| c == '"' || c == '\'').trim();
        (!val.is_empty()).then(|| val.to_ascii_lowercase())
    });
    (media, charset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_is_lowercased_and_charset_unquoted() {
        assert_eq!(
            parse_content_type("text/HTML; Charset=\"ISO-8859-1\""),
            ("text/html".to_string(), Some("iso-8859-1".to_string()))
        );
        assert_eq!(
            parse_content_type("application/xml"),
            ("application/xml".to_string(), None)
        );
        assert_eq!(
            parse_content_type("text/html; foo=bar; charset=utf-8"),
            ("text/html".to_string(), Some("utf-8".to_string()))
        );
        assert_eq!(
            parse_content_type("text/html; charset="),
            ("text/html".to_string(), None)
        );
        assert_eq!(parse_content_type(""), (String::new(), None));
    }

    #[test]
    fn io_errors_map_to_report_kinds() {
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(FetchError::from_io(&refused, true).kind, FailKind::Connect);
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(FetchError::from_io(&reset, false).kind, FailKind::Reset);
        assert_eq!(FetchError::from_io(&reset, true).kind, FailKind::Connect);
        let timed_out = io::Error::from(io::ErrorKind::TimedOut);
        assert_eq!(
            FetchError::from_io(&timed_out, true).kind,
            FailKind::Timeout
        );
    }

    #[test]
    fn io_message_drops_the_os_error_number() {
        let err = io::Error::from_raw_os_error(104);
        assert_eq!(io_message(&err), "connection reset by peer");
    }

    #[test]
    fn anyhow_chain_keeps_the_innermost_kind_and_the_whole_story() {
        let inner = FetchError::new(FailKind::Reset, "connection reset");
        let err = anyhow::Error::new(inner)
            .context("reading response")
            .context("fetching http://a/");
        let fe = FetchError::from_anyhow(&err);
        assert_eq!(fe.kind, FailKind::Reset);
        assert_eq!(
            fe.message,
            "fetching http://a/: reading response: connection reset"
        );
    }

    #[test]
    fn only_network_trouble_is_retryable() {
        let retryable: Vec<_> = FailKind::ALL
            .iter()
            .filter(|k| k.is_retryable())
            .map(|k| k.key())
            .collect();
        assert_eq!(
            retryable,
            ["connect", "dns", "protocol", "reset", "timeout"]
        );
    }
}
