//! # HTTP/1.x on raw sockets
//!
//! The crawler speaks just enough HTTP to fetch pages: it writes a `GET`
//! request and parses the response. The parser is **incremental**: it is fed
//! bytes as they arrive, in chunks of any size, and says when the response is
//! complete. That is what lets one parser serve all four lessons — a blocking
//! `read` loop (lesson 1), a readiness callback (lesson 2), a coroutine
//! (lessons 3 and 4) all just hand it whatever the socket gave.
//!
//! Everything a server sends is untrusted: every malformed or oversized input
//! is a typed [`FetchError`] (`protocol`, `too_large`, `reset`), never a panic,
//! and the parser never buffers more than the [`Limits`] allow.

use url::Url;

use crate::stats::FetchError;

/// Largest status line plus headers accepted (64 KiB).
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Largest body accepted, after de-chunking (10 MiB).
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// Size limits for one response. Exactly the limit is fine; one byte over is
/// a `too_large` error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Status line plus headers, including the blank line that ends them.
    pub max_header_bytes: usize,
    /// The body, after de-chunking.
    pub max_body_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_header_bytes: MAX_HEADER_BYTES,
            max_body_bytes: MAX_BODY_BYTES,
        }
    }
}

/// Which request to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// HTTP/1.0 with `Connection: close` (lessons 1–3: one connection per request).
    Http10Close,
    /// HTTP/1.1, keep-alive (lesson 4's connection pool).
    Http11KeepAlive,
}

/// The bytes of a `GET` for `url`: request target is path plus query, a
/// `Host` header (with the port when it is not 80), no `Accept-Encoding`.
pub fn get_request(url: &Url, version: Version) -> Vec<u8> {
    todo!("{url} {version:?}")
}

/// Response headers, in arrival order; names compare case-insensitively.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    /// `(name, value)` pairs; values trimmed, kept as (lossily decoded) text.
    entries: Vec<(String, String)>,
}

impl Headers {
    /// The first value of the header `name`, any case.
    pub fn get(&self, name: &str) -> Option<&str> {
        todo!("{name}{:?}", self.entries)
    }
    /// Every value of the header `name`, in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.entries
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// All `(name, value)` pairs in arrival order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }
}

/// A complete response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code (100–999).
    pub status: u16,
    /// The reason phrase, possibly empty.
    pub reason: String,
    pub headers: Headers,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// May the connection carry another request? HTTP/1.1 without
    /// `Connection: close`, a body framed by length or chunks, no bytes after it.
    pub reusable: bool,
}

impl Response {
    /// Shorthand for `headers.get(name)`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)
    }
}

/// The incremental response parser: feed it bytes, it says when a response is
/// complete. One parser per response.
#[derive(Debug)]
pub struct ResponseParser {
    limits: Limits,
}

impl Default for ResponseParser {
    fn default() -> Self {
        ResponseParser::new()
    }
}

impl ResponseParser {
    /// A parser with the default [`Limits`].
    pub fn new() -> Self {
        ResponseParser::with_limits(Limits::default())
    }

    pub fn with_limits(limits: Limits) -> Self {
        ResponseParser { limits }
    }

    /// Feed the next bytes from the socket. `Ok(Some(response))` once the
    /// response is complete; `Ok(None)` while more bytes are needed.
    /// Bytes after the end of the response make it non-reusable.
    pub fn feed(&mut self, data: &[u8]) -> Result<Option<Response>, FetchError> {
        todo!("{data:?}{:?}", self.limits)
    }

    /// The peer closed the connection. Completes a close-delimited body;
    /// anything else unfinished is a `reset` error.
    pub fn finish(&mut self) -> Result<Response, FetchError> {
        todo!()
    }

    /// Has any byte arrived? (Lesson 4: a pooled connection that fails before
    /// any byte is read was stale, and the request is resent.)
    pub fn received_any(&self) -> bool {
        todo!()
    }
}
