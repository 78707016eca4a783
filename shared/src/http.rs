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
//!
//! ## How the parser works
//!
//! [`ResponseParser`] is a state machine. Each call to
//! [`feed`](ResponseParser::feed) runs the machine over the new bytes only, so
//! the total work is linear in the size of the response however the socket
//! splits it — the same answer whether the response comes in one `read` or
//! one byte at a time.
//!
//! 1. **Head** — the status line and headers are copied into a small buffer
//!    until the blank line that ends them. Only the new bytes (plus three of
//!    overlap, for a `\r\n\r\n` cut in two) are searched for that blank line:
//!    rescanning the whole buffer on every read would make a server that
//!    drips one byte at a time cost quadratic time.
//! 2. **Framing** — how to tell where the body ends (RFC 9112, section 6.3):
//!    no body at all for `1xx`, `204` and `304`; `Transfer-Encoding: chunked`;
//!    `Content-Length`; and failing both, the body runs until the server
//!    closes the connection, which [`finish`](ResponseParser::finish) reports.
//! 3. **Body** — copied out as it arrives, de-chunked by a byte-at-a-time
//!    machine for the chunk-size lines and bulk copies for the chunk data.
//!
//! `1xx` interim responses (`100 Continue`, `103 Early Hints`) are skipped and
//! the real response is parsed after them.
//!
//! Memory is part of the design: a parser that has received nothing owns no
//! heap memory (lesson 4 keeps thousands of them waiting), the head buffer is
//! freed once the headers are parsed, and no buffer is reserved from what the
//! server *claims* a body will be — a `Content-Length: 10000000` followed by
//! silence costs nothing until the bytes actually arrive.

use std::mem;

use url::Url;

use crate::stats::{FailKind, FetchError};
use crate::trace::{self, Phase};

/// Largest status line plus headers accepted (64 KiB).
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Largest body accepted, after de-chunking (10 MiB).
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// Longest chunk-size line accepted, extensions included. Real servers send
/// a few hex digits; the cap keeps a server from streaming an endless line of
/// zeros or extension text that would never end.
const MAX_CHUNK_LINE_BYTES: usize = 4096;

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
/// `Host` header (with the port when it is not 80), `User-Agent: agent`
/// (`--user-agent`, so a server's log can tell the crawler from a browser,
/// and robots.txt rules can name it), no `Accept-Encoding`.
pub fn get_request(url: &Url, version: Version, agent: &str) -> Vec<u8> {
    // The request target is the path and query only: the fragment belongs to
    // the browser and is never sent. `Url` has already percent-encoded both,
    // so they are a slice of its text.
    let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
    // `Host` is the host and the port when it is not the scheme's default
    // (80 for http): exactly what `Url` writes between `//` (or `@`) and the
    // path, since it leaves a default port out. An IPv6 literal keeps its
    // brackets, as `Host` needs them.
    let host = &url[url::Position::BeforeHost..url::Position::AfterPort];
    // HTTP/1.0 closes after one response by default, but servers that speak
    // 1.1 may keep it open anyway: `Connection: close` says so outright. An
    // HTTP/1.1 request is keep-alive unless it says otherwise, so lesson 4
    // sends nothing. No `Accept-Encoding`: bodies must come as identity, the
    // course has no decompressor.
    let (version_text, connection) = match version {
        Version::Http10Close => ("HTTP/1.0", "Connection: close\r\n"),
        Version::Http11KeepAlive => ("HTTP/1.1", ""),
    };
    // Put together piece by piece in one buffer of the right size: a
    // request goes out for every URL, and `format!` would build the target
    // and the host as strings of their own first.
    let parts = [
        "GET ",
        target,
        " ",
        version_text,
        "\r\nHost: ",
        host,
        "\r\nUser-Agent: ",
        agent,
        "\r\n",
        connection,
        "\r\n",
    ];
    let mut request = Vec::with_capacity(parts.iter().map(|part| part.len()).sum());
    for part in parts {
        request.extend_from_slice(part.as_bytes());
    }
    request
}

/// Response headers, in arrival order; names compare case-insensitively.
///
/// Names and values are kept in one text, one after another, rather than as
/// a `String` each: a response's eight or so headers are then two
/// allocations, not sixteen, and a crawl parses a head for every URL.
#[derive(Clone, Default)]
pub struct Headers {
    /// Every name and value, back to back; values trimmed, all kept as
    /// (lossily decoded) text.
    text: String,
    /// Where each header is in `text`, in arrival order.
    entries: Vec<Entry>,
}

/// One header's place in [`Headers::text`]: its name is `text[start..value]`,
/// its value `text[value..end]`.
#[derive(Debug, Clone, Copy)]
struct Entry {
    start: usize,
    value: usize,
    end: usize,
}

impl Headers {
    /// Room for the headers of a head of `len` bytes, which their text can
    /// never outgrow but by the replacement characters of bytes that are
    /// not UTF-8.
    fn with_capacity(len: usize) -> Headers {
        Headers {
            text: String::with_capacity(len),
            entries: Vec::with_capacity(16),
        }
    }
    /// The name and value of `entry`.
    fn pair(&self, entry: &Entry) -> (&str, &str) {
        (
            &self.text[entry.start..entry.value],
            &self.text[entry.value..entry.end],
        )
    }
    /// The first value of the header `name`, any case.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }
    /// Every value of the header `name`, in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }
    /// All `(name, value)` pairs in arrival order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|entry| self.pair(entry))
    }
    /// Append a header (the parser's way in; handy for building a
    /// [`Response`] by hand in a test).
    pub fn push(&mut self, name: &str, value: &str) {
        let start = self.text.len();
        self.text.push_str(name);
        let value_start = self.text.len();
        self.text.push_str(value);
        self.entries.push(Entry {
            start,
            value: value_start,
            end: self.text.len(),
        });
    }
    /// Append `more` to the last header's value, after a space (an obs-fold
    /// continuation line); `false` when there is no header yet.
    fn continue_last(&mut self, more: &str) -> bool {
        let Some(last) = self.entries.last_mut() else {
            return false;
        };
        if more.is_empty() {
            return true;
        }
        // The last value ends the text, so it grows in place.
        if last.end > last.value {
            self.text.push(' ');
        }
        self.text.push_str(more);
        last.end = self.text.len();
        true
    }
    /// Does the comma-separated header `name` list `token`, any case?
    /// (`Connection: keep-alive, Upgrade` lists `keep-alive`.)
    fn has_token(&self, name: &str, token: &str) -> bool {
        self.get_all(name)
            .flat_map(|value| value.split(','))
            .any(|item| item.trim().eq_ignore_ascii_case(token))
    }
}

/// Equal when they hold the same headers in the same order.
impl PartialEq for Headers {
    fn eq(&self, other: &Headers) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Headers {}

/// The `(name, value)` pairs, as a list.
impl std::fmt::Debug for Headers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A complete response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code (100–999).
    pub status: u16,
    /// The reason phrase, possibly empty.
    pub reason: String,
    /// The headers, in arrival order.
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

/// What the head (status line and headers) said, kept while the body arrives.
#[derive(Debug, Default)]
struct Head {
    /// The status code, already checked to be 100–999.
    status: u16,
    /// The reason phrase; servers may leave it out.
    reason: String,
    /// The headers as they came.
    headers: Headers,
    /// Could the connection be reused, as far as the head can tell: the
    /// version and `Connection` allow it and the body is framed. Whether any
    /// stray bytes follow the body is only known at the end.
    reusable: bool,
}

/// Where the parser is in the response.
#[derive(Debug)]
enum State {
    /// Collecting the status line and headers in `buf`.
    Head,
    /// A `Content-Length` body: this many bytes still to come.
    Length { remaining: u64 },
    /// Reading a chunk-size line (`1a;ext=1\r\n`).
    ChunkSize(ChunkLine),
    /// Inside a chunk: this many data bytes still to come.
    ChunkData { remaining: u64 },
    /// After a chunk's data: the line break that must follow it. `seen_cr`
    /// says its `\r` has arrived and only the `\n` is missing.
    ChunkDataEnd { seen_cr: bool },
    /// After the last (zero-size) chunk: trailer lines, skipped, up to the
    /// blank line. `line_len` counts the current line's bytes (a blank line
    /// has none), `bytes` all trailer bytes so far (they have a limit too).
    Trailers { line_len: usize, bytes: usize },
    /// No framing: the body is everything until the server closes.
    UntilClose,
    /// The response is complete and waits to be handed out.
    Complete,
    /// The response was handed out; the parser is spent.
    Done,
    /// The response failed; every later call repeats the error.
    Failed(FetchError),
}

/// Progress through one chunk-size line, kept between reads so the line may
/// arrive split anywhere.
#[derive(Debug, Clone, Copy, Default)]
struct ChunkLine {
    /// The size read so far. Saturating arithmetic: a size too big for a
    /// `u64` is certainly over the body limit, and must not wrap around to a
    /// small number.
    size: u64,
    /// Has at least one hex digit arrived? (An empty size is malformed.)
    has_digits: bool,
    /// Which part of the line the next byte belongs to.
    part: ChunkLinePart,
    /// Bytes of the line so far, for [`MAX_CHUNK_LINE_BYTES`].
    len: usize,
}

/// The parts of a chunk-size line: `SIZE [spaces] [; extensions] CRLF`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum ChunkLinePart {
    /// Hex digits of the size.
    #[default]
    Digits,
    /// Whitespace after the size, before `;` or the line end.
    Space,
    /// After `;`: extensions, which the course has no use for and skips.
    Extension,
    /// A `\r` arrived; only `\n` may follow.
    Cr,
}

/// How the end of the body is found (RFC 9112, section 6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// No body (`204`, `304`).
    NoBody,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Everything until the server closes the connection.
    UntilClose,
}

/// The incremental response parser: feed it bytes, it says when a response is
/// complete. One parser per response.
#[derive(Debug)]
pub struct ResponseParser {
    /// How much head and body this parser may hold.
    limits: Limits,
    /// Where the parser is in the response.
    state: State,
    /// The head bytes so far, until the blank line that ends them; empty and
    /// unallocated before the first byte and after the head is parsed.
    buf: Vec<u8>,
    /// How far `buf` has been searched for the end of the head, so each read
    /// searches only its new bytes.
    scanned: usize,
    /// Head bytes of interim `1xx` responses already skipped: they count
    /// toward the header limit, or a server could send `100 Continue` forever.
    interim_bytes: usize,
    /// What the head said, once it is parsed.
    head: Head,
    /// The body so far, de-chunked.
    body: Vec<u8>,
    /// Has any byte arrived? (See [`ResponseParser::received_any`].)
    received: bool,
    /// The code of the last status line parsed (an interim `1xx` one too),
    /// kept so that an error after it can say a server did answer.
    status_seen: Option<u16>,
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

    /// A parser with the given [`Limits`]. Allocates nothing.
    pub fn with_limits(limits: Limits) -> Self {
        ResponseParser {
            limits,
            state: State::Head,
            buf: Vec::new(),
            scanned: 0,
            interim_bytes: 0,
            head: Head::default(),
            body: Vec::new(),
            received: false,
            status_seen: None,
        }
    }

    /// Feed the next bytes from the socket. `Ok(Some(response))` once the
    /// response is complete; `Ok(None)` while more bytes are needed.
    /// Bytes after the end of the response make it non-reusable.
    ///
    /// Once the response has been returned or has failed, the parser is
    /// spent: further calls return an error.
    pub fn feed(&mut self, data: &[u8]) -> Result<Option<Response>, FetchError> {
        if let Some(err) = self.spent() {
            return Err(err);
        }
        if !self.received && !data.is_empty() {
            // The first byte of the answer: the fetch stops waiting and
            // starts reading. The parser is the one to notice, so it tells
            // the trace (of the fetch current on this thread, if any).
            self.received = true;
            trace::phase(Phase::Read);
        }
        self.advance(data).map_err(|err| self.fail(err))
    }

    /// The peer closed the connection. Completes a close-delimited body;
    /// anything else unfinished is a `reset` error.
    pub fn finish(&mut self) -> Result<Response, FetchError> {
        if let Some(err) = self.spent() {
            return Err(err);
        }
        let message = match self.state {
            State::UntilClose => {
                // The close *is* the framing; `head.reusable` is already false.
                self.state = State::Complete;
                return Ok(self.take_response(true));
            }
            State::Head if !self.received => "connection closed before the response".to_owned(),
            State::Head => "connection closed in the headers".to_owned(),
            State::Length { remaining } => {
                let got = self.body.len();
                let declared = (got as u64).saturating_add(remaining);
                format!("connection closed after {got} of {declared} body bytes")
            }
            _ => "connection closed in the chunked body".to_owned(),
        };
        Err(self.fail(FetchError::new(FailKind::Reset, message)))
    }

    /// Has any byte arrived? (Lesson 4: a pooled connection that fails before
    /// any byte is read was stale, and the request is resent.)
    pub fn received_any(&self) -> bool {
        self.received
    }

    /// The error for a call on a parser that already finished, if it did.
    fn spent(&self) -> Option<FetchError> {
        match &self.state {
            State::Failed(err) => Some(err.clone()),
            State::Done => Some(FetchError::new(
                FailKind::Protocol,
                "response already complete",
            )),
            _ => None,
        }
    }

    /// Record a failure, drop whatever was buffered, and hand the error back.
    fn fail(&mut self, err: FetchError) -> FetchError {
        let err = err.with_status(self.status_line_received());
        self.state = State::Failed(err.clone());
        self.buf = Vec::new();
        self.body = Vec::new();
        self.head = Head::default();
        err
    }

    /// The code of a status line that arrived: one already parsed, or a
    /// complete, well-formed first line of a head that failed further on
    /// (a bad header, a bad `Content-Length`).
    fn status_line_received(&self) -> Option<u16> {
        if self.status_seen.is_some() {
            return self.status_seen;
        }
        let end = self.buf.iter().position(|&b| b == b'\n')?;
        let line = &self.buf[..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        parse_status_line(line).ok().map(|(_, status, _)| status)
    }

    /// Run the state machine over `input`. Each step consumes a prefix of
    /// `input` and may change state; no step goes back over bytes an earlier
    /// read delivered (but for the head search's three bytes of overlap).
    fn advance(&mut self, mut input: &[u8]) -> Result<Option<Response>, FetchError> {
        loop {
            if let State::Complete = self.state {
                // Anything left in this read came after the response: the
                // connection is out of step, so it must not be reused.
                return Ok(Some(self.take_response(input.is_empty())));
            }
            if input.is_empty() {
                return Ok(None);
            }
            let used = match self.state {
                State::Head => self.read_head(input)?,
                State::Length { remaining } => {
                    let n = clamp(remaining, input.len());
                    // What is still to come, once these `n` bytes are in:
                    // `append_within` makes room for it at once if that is
                    // no more than doubling would have made anyway.
                    let rest = usize::try_from(remaining - n as u64).unwrap_or(usize::MAX);
                    reserve_rest(&mut self.body, n, rest, self.limits.max_body_bytes);
                    append_within(&mut self.body, &input[..n], self.limits.max_body_bytes);
                    let remaining = remaining - n as u64;
                    self.state = if remaining == 0 {
                        State::Complete
                    } else {
                        State::Length { remaining }
                    };
                    n
                }
                State::ChunkSize(line) => self.read_chunk_size(line, input)?,
                State::ChunkData { remaining } => {
                    let n = clamp(remaining, input.len());
                    append_within(&mut self.body, &input[..n], self.limits.max_body_bytes);
                    let remaining = remaining - n as u64;
                    self.state = if remaining == 0 {
                        State::ChunkDataEnd { seen_cr: false }
                    } else {
                        State::ChunkData { remaining }
                    };
                    n
                }
                State::ChunkDataEnd { seen_cr } => {
                    // The chunk's data must be followed by a line break; bare
                    // `\n` is tolerated, like everywhere else in the parser.
                    self.state = match (seen_cr, input[0]) {
                        (false, b'\r') => State::ChunkDataEnd { seen_cr: true },
                        (_, b'\n') => State::ChunkSize(ChunkLine::default()),
                        _ => return Err(protocol("missing line break after chunk data")),
                    };
                    1
                }
                State::Trailers { line_len, bytes } => {
                    self.read_trailers(line_len, bytes, input)?
                }
                State::UntilClose => {
                    // Check before copying, so the body never holds a byte
                    // over the limit.
                    if self.body.len().saturating_add(input.len()) > self.limits.max_body_bytes {
                        return Err(body_too_large(self.limits));
                    }
                    append_within(&mut self.body, input, self.limits.max_body_bytes);
                    input.len()
                }
                // `feed` and `finish` catch these before calling `advance`,
                // and `Complete` is handled above; stop rather than loop.
                State::Complete | State::Done | State::Failed(_) => return Ok(None),
            };
            input = &input[used..];
        }
    }

    /// Collect head bytes; once the blank line arrives, parse the head and
    /// choose the body framing. Returns how many bytes of `input` were used.
    fn read_head(&mut self, input: &[u8]) -> Result<usize, FetchError> {
        let max = self.limits.max_header_bytes;
        // Copy no more than the limit allows: a server sending endless headers
        // costs `max` bytes, not whatever it manages to send.
        let room = max.saturating_sub(self.interim_bytes + self.buf.len());
        let take = input.len().min(room);
        let old_len = self.buf.len();
        append_within(&mut self.buf, &input[..take], max);

        // Reject what is not HTTP at its first byte, instead of buffering
        // 64 KiB of it waiting for a blank line that may never come.
        let prefix = self.buf.len().min(5);
        if self.buf[..prefix] != b"HTTP/"[..prefix] {
            return Err(protocol("malformed status line"));
        }

        let Some(end) = find_head_end(&self.buf, self.scanned) else {
            if take < input.len() {
                return Err(FetchError::new(
                    FailKind::TooLarge,
                    format!("headers exceed {max} bytes"),
                ));
            }
            self.scanned = self.buf.len();
            return Ok(take);
        };
        // The end was not in the old bytes (it would have been found on an
        // earlier read), so it lies in what was just copied.
        let used = end - old_len;
        let head = parse_head(&self.buf[..end])?;
        self.status_seen = Some(head.status);

        if (100..200).contains(&head.status) {
            if head.status == 101 {
                return Err(protocol("unexpected 101 switching protocols"));
            }
            // An interim response: skip it, keep the buffer's memory for the
            // real head that follows.
            self.interim_bytes += end;
            self.buf.clear();
            self.scanned = 0;
            return Ok(used);
        }

        // The head is parsed: its buffer is no longer needed.
        self.buf = Vec::new();
        self.scanned = 0;
        let (framing, framing_reusable) = framing(&head)?;
        let keep_alive = if head.minor_version >= 1 {
            !head.headers.has_token("connection", "close")
        } else {
            // HTTP/1.0 closes unless the server explicitly says keep-alive.
            head.headers.has_token("connection", "keep-alive")
                && !head.headers.has_token("connection", "close")
        };
        self.state = match framing {
            Framing::NoBody | Framing::Length(0) => State::Complete,
            Framing::Length(length) => {
                // Fail on the announcement, without reading a byte of the body.
                if length > self.limits.max_body_bytes as u64 {
                    return Err(body_too_large(self.limits));
                }
                State::Length { remaining: length }
            }
            Framing::Chunked => State::ChunkSize(ChunkLine::default()),
            Framing::UntilClose => State::UntilClose,
        };
        self.head = Head {
            status: head.status,
            reason: head.reason,
            headers: head.headers,
            reusable: keep_alive && framing_reusable,
        };
        Ok(used)
    }

    /// Read a chunk-size line one byte at a time (they are a few bytes
    /// long). Returns how many bytes of `input` were used.
    fn read_chunk_size(&mut self, mut line: ChunkLine, input: &[u8]) -> Result<usize, FetchError> {
        for (i, &byte) in input.iter().enumerate() {
            let Some(size) = line.step(byte)? else {
                continue;
            };
            self.state = if size == 0 {
                State::Trailers {
                    line_len: 0,
                    bytes: 0,
                }
            } else {
                // The chunk announces its size: fail now if it cannot fit,
                // before reading any of it.
                let total = (self.body.len() as u64).saturating_add(size);
                if total > self.limits.max_body_bytes as u64 {
                    return Err(body_too_large(self.limits));
                }
                State::ChunkData { remaining: size }
            };
            return Ok(i + 1);
        }
        self.state = State::ChunkSize(line);
        Ok(input.len())
    }

    /// Skip trailer lines up to the blank line that ends the chunked body.
    /// The course has no use for trailers, so they are counted, not kept.
    fn read_trailers(
        &mut self,
        mut line_len: usize,
        mut bytes: usize,
        input: &[u8],
    ) -> Result<usize, FetchError> {
        let max = self.limits.max_header_bytes;
        for (i, &byte) in input.iter().enumerate() {
            bytes += 1;
            if bytes > max {
                return Err(FetchError::new(
                    FailKind::TooLarge,
                    format!("trailers exceed {max} bytes"),
                ));
            }
            match byte {
                b'\n' if line_len == 0 => {
                    self.state = State::Complete;
                    return Ok(i + 1);
                }
                b'\n' => line_len = 0,
                b'\r' => {}
                _ => line_len += 1,
            }
        }
        self.state = State::Trailers { line_len, bytes };
        Ok(input.len())
    }

    /// Hand out the complete response; the parser is spent afterwards.
    /// `nothing_after` says no stray bytes followed the body.
    fn take_response(&mut self, nothing_after: bool) -> Response {
        self.state = State::Done;
        let head = mem::take(&mut self.head);
        Response {
            status: head.status,
            reason: head.reason,
            headers: head.headers,
            body: mem::take(&mut self.body),
            reusable: head.reusable && nothing_after,
        }
    }
}

impl ChunkLine {
    /// Take one byte of a chunk-size line: `Some(size)` when the line ends.
    fn step(&mut self, byte: u8) -> Result<Option<u64>, FetchError> {
        use ChunkLinePart::*;
        self.len += 1;
        if self.len > MAX_CHUNK_LINE_BYTES {
            return Err(protocol("chunk size line too long"));
        }
        let malformed = || protocol("malformed chunk size");
        match (self.part, byte) {
            (Digits, _) if byte.is_ascii_hexdigit() => {
                let digit = char::from(byte).to_digit(16).unwrap_or_default();
                self.size = self.size.saturating_mul(16).saturating_add(digit.into());
                self.has_digits = true;
            }
            // Nothing before the size, not even spaces; after it, spaces and
            // extensions are allowed (RFC 9112's `BWS`, `chunk-ext`).
            (_, _) if !self.has_digits => return Err(malformed()),
            (Digits | Space, b' ' | b'\t') => self.part = Space,
            (Digits | Space, b';') => self.part = Extension,
            (Digits | Space | Extension, b'\r') => self.part = Cr,
            (Digits | Space | Extension | Cr, b'\n') => return Ok(Some(self.size)),
            (Extension, _) => {}
            _ => return Err(malformed()),
        }
        Ok(None)
    }
}

/// A head as parsed, before the framing is chosen.
#[derive(Debug)]
struct ParsedHead {
    /// The `x` of `HTTP/1.x`: 1.0 and 1.1 differ on keep-alive.
    minor_version: u8,
    /// The status code, 100–999.
    status: u16,
    /// The reason phrase, possibly empty.
    reason: String,
    /// The headers, continuation lines already joined.
    headers: Headers,
}

/// Where the head ends in `buf`: just past the first empty line, with `\r\n`
/// or bare `\n` line ends. The search starts a few bytes before `scanned`, so
/// a line end split across two reads is still found, and no byte is searched
/// more than a few times.
fn find_head_end(buf: &[u8], scanned: usize) -> Option<usize> {
    let start = scanned.saturating_sub(3);
    let mut i = start;
    while let Some(offset) = buf[i..].iter().position(|&b| b == b'\n') {
        let newline = i + offset;
        match buf.get(newline + 1..) {
            Some([b'\n', ..]) => return Some(newline + 2),
            Some([b'\r', b'\n', ..]) => return Some(newline + 3),
            _ => {}
        }
        i = newline + 1;
    }
    None
}

/// Parse the status line and headers. `head` ends with the blank line.
fn parse_head(head: &[u8]) -> Result<ParsedHead, FetchError> {
    // Lines end in `\n`; a `\r` before it is part of the line end. Bare `\n`
    // is tolerated, as RFC 9112 suggests for robustness.
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    let (minor_version, status, reason) = parse_status_line(lines.next().unwrap_or_default())?;
    let mut headers = Headers::with_capacity(head.len());
    for line in lines.take_while(|line| !line.is_empty()) {
        if let [b' ' | b'\t', ..] = line {
            // obs-fold: a line starting with whitespace continues the previous
            // header's value. Obsolete, but RFC 9112 lets a client accept it
            // by joining the lines with a space.
            let more = trim(line);
            if !headers.continue_last(&text(more)) {
                return Err(protocol("continuation line before any header"));
            }
            continue;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Err(protocol("header line without a colon"));
        };
        let name = &line[..colon];
        // A name is a token: no spaces (`Name : v` is a known smuggling
        // trick), no control characters, not empty.
        if name.is_empty() || !name.iter().all(|&b| is_token_byte(b)) {
            return Err(protocol("malformed header name"));
        }
        headers.push(&text(name), &text(trim(&line[colon + 1..])));
    }
    Ok(ParsedHead {
        minor_version,
        status,
        reason,
        headers,
    })
}

/// Bytes of a head as text: borrowed when they are UTF-8, as they nearly
/// always are (`from_utf8` checks eight ASCII bytes at a time, where
/// `from_utf8_lossy` goes byte by byte), with replacement characters when
/// not.
fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Parse `HTTP/1.x SSS reason`; the reason may be empty or missing.
fn parse_status_line(line: &[u8]) -> Result<(u8, u16, String), FetchError> {
    let malformed = || protocol("malformed status line");
    let Some(rest) = line.strip_prefix(b"HTTP/") else {
        return Err(malformed());
    };
    let (minor_version, rest) = match rest {
        [b'1', b'.', minor, rest @ ..] if minor.is_ascii_digit() => (minor - b'0', rest),
        [major, b'.', minor, ..] if major.is_ascii_digit() && minor.is_ascii_digit() => {
            return Err(protocol("unsupported http version"));
        }
        _ => return Err(malformed()),
    };
    // One space is the grammar; a few more cost nothing to accept.
    let Some(rest) = rest.strip_prefix(b" ") else {
        return Err(malformed());
    };
    let rest = trim_start(rest);
    // Exactly three digits, then the end of the line or a space.
    let (code, reason) = match rest {
        [a, b, c] => ([*a, *b, *c], &[][..]),
        [a, b, c, b' ', reason @ ..] => ([*a, *b, *c], reason),
        _ => return Err(malformed()),
    };
    if !code.iter().all(u8::is_ascii_digit) || code[0] == b'0' {
        return Err(malformed());
    }
    let status = code.iter().fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
    let reason = text(trim(reason)).into_owned();
    Ok((minor_version, status, reason))
}

/// Decide how the body is framed, and whether that framing allows reusing
/// the connection.
fn framing(head: &ParsedHead) -> Result<(Framing, bool), FetchError> {
    // A response to GET with one of these statuses has no body, whatever its
    // headers say (RFC 9112, section 6.3, rule 1). 1xx never gets here.
    if head.status == 204 || head.status == 304 {
        return Ok((Framing::NoBody, true));
    }
    let length = content_length(&head.headers)?;
    let codings: Vec<&str> = head
        .headers
        .get_all("transfer-encoding")
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .filter(|coding| !coding.is_empty())
        .collect();
    if let Some((last, before)) = codings.split_last() {
        if before.iter().any(|c| c.eq_ignore_ascii_case("chunked")) {
            // `chunked` must be applied once, and last.
            return Err(protocol("malformed transfer-encoding"));
        }
        if last.eq_ignore_ascii_case("chunked") {
            // Transfer-Encoding overrides Content-Length; a response with both
            // is a smuggling attempt or a broken proxy, so parse it but do not
            // trust the connection afterwards (rule 3).
            return Ok((Framing::Chunked, length.is_none()));
        }
        // Some other coding last: only the close can end the body (rule 4).
        return Ok((Framing::UntilClose, false));
    }
    match length {
        Some(length) => Ok((Framing::Length(length), true)),
        None => Ok((Framing::UntilClose, false)),
    }
}

/// The `Content-Length`, if any. Every value (repeated headers, or a
/// comma-separated list) must be the same decimal number, or the framing is
/// ambiguous and the response is rejected.
fn content_length(headers: &Headers) -> Result<Option<u64>, FetchError> {
    let mut length = None;
    for item in headers
        .get_all("content-length")
        .flat_map(|value| value.split(','))
    {
        let item = item.trim();
        if item.is_empty() || !item.bytes().all(|b| b.is_ascii_digit()) {
            return Err(protocol("malformed content-length"));
        }
        // Saturate instead of overflowing: a number past `u64::MAX` is over
        // any body limit, and is reported as too large.
        let n = item.bytes().fold(0u64, |n, d| {
            n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
        });
        match length {
            Some(previous) if previous != n => {
                return Err(protocol("conflicting content-length"));
            }
            _ => length = Some(n),
        }
    }
    Ok(length)
}

/// Is `b` allowed in a header name (RFC 9110's `tchar`)?
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `bytes` without leading spaces and tabs.
fn trim_start(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(bytes.len());
    &bytes[start..]
}

/// `bytes` without leading or trailing spaces and tabs (HTTP's `OWS`).
fn trim(bytes: &[u8]) -> &[u8] {
    let bytes = trim_start(bytes);
    let end = bytes
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(0, |i| i + 1);
    &bytes[..end]
}

/// Append `bytes` to `buf`, whose length the caller keeps within `limit`.
/// `Vec` doubles its capacity as it grows, so a 9 MiB body would sit in a
/// 16 MiB allocation although the limit is 10 MiB; growing by hand keeps the
/// capacity within the limit too, at the same amortized cost.
fn append_within(buf: &mut Vec<u8>, bytes: &[u8], limit: usize) {
    let needed = buf.len() + bytes.len();
    if needed > buf.capacity() {
        let target = buf.capacity().saturating_mul(2).min(limit).max(needed);
        buf.reserve_exact(target - buf.len());
    }
    buf.extend_from_slice(bytes);
}

/// Before `arriving` more bytes join `buf` with `rest` still to come after
/// them: make room for the whole body now, if it is no bigger than twice
/// what `buf` will hold. A 16 KiB page whose last few hundred bytes come in
/// a second read would otherwise be copied into a buffer twice its size,
/// 16 KiB moved for nothing, on every page. The rule keeps the promise made
/// above: room is made only for what doubling would make anyway, so a
/// server that claims a large body and sends a little gets no more memory
/// than before.
fn reserve_rest(buf: &mut Vec<u8>, arriving: usize, rest: usize, limit: usize) {
    let held = buf.len().saturating_add(arriving);
    let whole = held.saturating_add(rest).min(limit);
    if whole > buf.capacity() && whole <= held.saturating_mul(2) {
        buf.reserve_exact(whole - buf.len());
    }
}

/// `min(remaining, available)` as a `usize`, for copying body bytes.
fn clamp(remaining: u64, available: usize) -> usize {
    usize::try_from(remaining).map_or(available, |r| r.min(available))
}

/// A `protocol` error: the response does not parse.
fn protocol(message: &str) -> FetchError {
    FetchError::new(FailKind::Protocol, message)
}

/// The `too_large` error for a body over the limit.
fn body_too_large(limits: Limits) -> FetchError {
    FetchError::new(
        FailKind::TooLarge,
        format!("body exceeds {} bytes", limits.max_body_bytes),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_header_bytes: usize, max_body_bytes: usize) -> Limits {
        Limits {
            max_header_bytes,
            max_body_bytes,
        }
    }

    /// Feed `pieces` in order, then `finish` if the response is not yet
    /// complete: what a lesson's read loop does.
    fn parse_pieces(limits: Limits, pieces: &[&[u8]]) -> Result<Response, FetchError> {
        let mut parser = ResponseParser::with_limits(limits);
        for piece in pieces {
            if let Some(response) = parser.feed(piece)? {
                return Ok(response);
            }
        }
        parser.finish()
    }

    fn parse(input: &[u8]) -> Result<Response, FetchError> {
        parse_pieces(Limits::default(), &[input])
    }

    /// Parse `input` whole, then split in two at every byte boundary, in
    /// three at every pair of boundaries, and one byte at a time: every way
    /// must give the same result. Returns it. (Long inputs get a sample of
    /// the split points, to keep the test fast.)
    fn parse_every_split(limits: Limits, input: &[u8]) -> Result<Response, FetchError> {
        let whole = parse_pieces(limits, &[input]);
        let step = if input.len() <= 2048 { 1 } else { 97 };
        for i in (0..=input.len()).step_by(step) {
            let (a, rest) = input.split_at(i);
            assert_eq!(
                parse_pieces(limits, &[a, rest]),
                whole,
                "split at {i} of {:?}",
                String::from_utf8_lossy(input)
            );
            if input.len() > 256 {
                continue;
            }
            for j in 0..=rest.len() {
                let (b, c) = rest.split_at(j);
                assert_eq!(
                    parse_pieces(limits, &[a, b, c]),
                    whole,
                    "split at {i} and {}",
                    i + j
                );
            }
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(parse_pieces(limits, &bytes), whole, "one byte at a time");
        whole
    }

    fn ok(input: &[u8]) -> Response {
        match parse_every_split(Limits::default(), input) {
            Ok(response) => response,
            Err(err) => panic!("{:?}: {err:?}", String::from_utf8_lossy(input)),
        }
    }

    fn err(limits: Limits, input: &[u8]) -> FetchError {
        match parse_every_split(limits, input) {
            Ok(response) => panic!("{:?} parsed: {response:?}", String::from_utf8_lossy(input)),
            Err(err) => err,
        }
    }

    fn protocol_err(input: &[u8]) -> String {
        let err = err(Limits::default(), input);
        assert_eq!(err.kind, FailKind::Protocol, "{err:?}");
        err.message
    }

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    // ---- get_request ----

    #[test]
    fn http10_request_bytes() {
        let request = get_request(
            &url("http://example.com/a/b.html?x=1&y=2#section"),
            Version::Http10Close,
            "crawler-course",
        );
        assert_eq!(
            String::from_utf8(request).unwrap(),
            "GET /a/b.html?x=1&y=2 HTTP/1.0\r\n\
             Host: example.com\r\n\
             User-Agent: crawler-course\r\n\
             Connection: close\r\n\
             \r\n"
        );
    }

    #[test]
    fn http11_request_bytes() {
        let request = get_request(
            &url("http://localhost:3000"),
            Version::Http11KeepAlive,
            "crawler-course",
        );
        assert_eq!(
            String::from_utf8(request).unwrap(),
            "GET / HTTP/1.1\r\nHost: localhost:3000\r\nUser-Agent: crawler-course\r\n\r\n"
        );
    }

    #[test]
    fn request_host_port_rules() {
        let host_line = |text: &str| {
            let request = String::from_utf8(get_request(
                &url(text),
                Version::Http10Close,
                "crawler-course",
            ))
            .unwrap();
            request.lines().nth(1).unwrap().to_owned()
        };
        assert_eq!(host_line("http://example.com:80/"), "Host: example.com");
        assert_eq!(
            host_line("http://example.com:8080/"),
            "Host: example.com:8080"
        );
        assert_eq!(
            host_line("http://127.0.0.1:41234/x"),
            "Host: 127.0.0.1:41234"
        );
        assert_eq!(host_line("http://[::1]:3000/"), "Host: [::1]:3000");
        assert_eq!(host_line("http://[::1]/"), "Host: [::1]");
        // A user and password in the URL are never sent in `Host`.
        assert_eq!(
            host_line("http://user:secret@example.com:8080/"),
            "Host: example.com:8080"
        );
        assert_eq!(host_line("https://example.com:443/"), "Host: example.com");
        let first_line = |text: &str| {
            let request = get_request(&url(text), Version::Http11KeepAlive, "crawler-course");
            String::from_utf8(request)
                .unwrap()
                .lines()
                .next()
                .unwrap()
                .to_owned()
        };
        assert_eq!(
            first_line("http://h/a?"),
            "GET /a? HTTP/1.1",
            "an empty query keeps its `?`"
        );
        assert_eq!(
            first_line("http://u@h/a?b#c"),
            "GET /a?b HTTP/1.1",
            "no user, no fragment"
        );
        let request = get_request(
            &url("http://h/a%20b?q=%C3%A9"),
            Version::Http10Close,
            "crawler-course",
        );
        assert!(request.starts_with(b"GET /a%20b?q=%C3%A9 HTTP/1.0\r\n"));
        assert!(!String::from_utf8(request)
            .unwrap()
            .contains("Accept-Encoding"));
    }

    // ---- headers ----

    #[test]
    fn headers_are_case_insensitive_and_ordered() {
        let response = ok(b"HTTP/1.1 200 OK\r\n\
              content-TYPE:text/html; charset=UTF-8  \r\n\
              Set-Cookie: a=1\r\n\
              SET-COOKIE:   b=2\r\n\
              Content-Length: 0\r\n\r\n");
        assert_eq!(
            response.header("Content-Type"),
            Some("text/html; charset=UTF-8")
        );
        assert_eq!(
            response.headers.get("content-type"),
            response.header("CONTENT-TYPE")
        );
        assert_eq!(
            response.headers.get_all("set-cookie").collect::<Vec<_>>(),
            ["a=1", "b=2"]
        );
        assert_eq!(response.header("missing"), None);
        let names: Vec<&str> = response.headers.iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            ["content-TYPE", "Set-Cookie", "SET-COOKIE", "Content-Length"]
        );
    }

    #[test]
    fn obs_fold_joins_lines_with_a_space() {
        let response = ok(b"HTTP/1.1 200 OK\r\nX-Long: first\r\n   second\r\n\tthird\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(response.header("x-long"), Some("first second third"));
        // A blank continuation adds nothing; one after an empty value adds
        // no space before it; the headers after a fold are their own.
        let response = ok(b"HTTP/1.1 200 OK\r\nX-A: a\r\n \t \r\nX-Empty:\r\n\tmore\r\nX-B: b\r\nContent-Length: 0\r\n\r\n");
        let headers: Vec<(&str, &str)> = response.headers.iter().collect();
        assert_eq!(
            headers,
            [
                ("X-A", "a"),
                ("X-Empty", "more"),
                ("X-B", "b"),
                ("Content-Length", "0")
            ],
            "each header with its own value, the folds joined"
        );
        assert_eq!(
            protocol_err(b"HTTP/1.1 200 OK\r\n folded: before anything\r\n\r\n"),
            "continuation line before any header"
        );
    }

    #[test]
    fn header_values_are_decoded_lossily() {
        let response = ok(b"HTTP/1.1 200 OK\r\nX-Bytes: caf\xe9\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(response.header("x-bytes"), Some("caf\u{fffd}"));
    }

    // ---- framing, every example at every split ----

    #[test]
    fn content_length_body() {
        let response = ok(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 11\r\n\r\nhello world",
        );
        assert_eq!(response.status, 200);
        assert_eq!(response.reason, "OK");
        assert_eq!(response.body, b"hello world");
        assert!(response.reusable);
    }

    #[test]
    fn chunked_body_with_extensions_and_trailers() {
        let response = ok(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
              5;name=value\r\nhello\r\n\
              1 ; a=b;c\r\n \r\n\
              00A\r\n0123456789\r\n\
              f\r\nABCDEFGHIJKLMNO\r\n\
              0;last\r\nExpires: never\r\nX-Trailer: 1\r\n\r\n");
        assert_eq!(response.body, b"hello 0123456789ABCDEFGHIJKLMNO");
        assert!(response.reusable);
        // Trailers are skipped, not merged into the headers.
        assert_eq!(response.header("expires"), None);
    }

    #[test]
    fn chunked_body_with_bare_newlines() {
        let response = ok(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n2\r\nde\n0\n\n");
        assert_eq!(response.body, b"abcde");
    }

    #[test]
    fn empty_chunked_body() {
        let response = ok(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
        assert_eq!(response.body, b"");
        assert!(response.reusable);
    }

    #[test]
    fn close_delimited_body() {
        let response =
            ok(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil\r\n\r\nthe end");
        assert_eq!(response.body, b"until\r\n\r\nthe end");
        assert!(!response.reusable);
        // Without a single body byte, too.
        assert_eq!(ok(b"HTTP/1.1 200 OK\r\n\r\n").body, b"");
    }

    #[test]
    fn bodyless_statuses() {
        let response = ok(b"HTTP/1.1 204 No Content\r\n\r\n");
        assert_eq!((response.status, response.body.len()), (204, 0));
        assert!(response.reusable);
        // 304 has no body, whatever its Content-Length says.
        let input = b"HTTP/1.1 304 Not Modified\r\nContent-Length: 1000\r\n\r\n";
        let response = ok(input);
        assert_eq!((response.status, response.body.len()), (304, 0));
        // Complete as soon as the head is, without waiting for the close.
        let mut parser = ResponseParser::new();
        assert!(parser.feed(input).unwrap().is_some());
    }

    #[test]
    fn interim_responses_are_skipped() {
        let response = ok(b"HTTP/1.1 100 Continue\r\n\r\n\
              HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n\
              HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"ok");
        assert_eq!(response.header("link"), None);
        assert!(response.reusable);
        assert_eq!(
            protocol_err(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"),
            "unexpected 101 switching protocols"
        );
    }

    #[test]
    fn status_line_variants() {
        let response = ok(b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n");
        assert_eq!((response.status, response.reason.as_str()), (200, ""));
        let response = ok(b"HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n");
        assert_eq!((response.status, response.reason.as_str()), (404, ""));
        let response = ok(b"HTTP/1.0  599 Custom   reason here\r\n\r\n");
        assert_eq!(
            (response.status, response.reason.as_str()),
            (599, "Custom   reason here")
        );
        assert_eq!(
            ok(b"HTTP/1.1 999 X\r\nContent-Length: 0\r\n\r\n").status,
            999
        );
    }

    // ---- garbage ----

    #[test]
    fn malformed_status_lines() {
        for input in [
            &b"HTTP/1.1 99 Too Small\r\n\r\n"[..],
            b"HTTP/1.1 099 Leading Zero\r\n\r\n",
            b"HTTP/1.1 1000 Too Big\r\n\r\n",
            b"HTTP/1.1 abc OK\r\n\r\n",
            b"HTTP/1.1 20x OK\r\n\r\n",
            b"HTTP/1.1 200OK\r\n\r\n",
            b"HTTP/1.1200 OK\r\n\r\n",
            b"HTTP/1.1\r\n\r\n",
            b"HTTP/ 200 OK\r\n\r\n",
            b"HTTP/1.x 200 OK\r\n\r\n",
            b"HTTP/1.10 200 OK\r\n\r\n",
            b"HTTP/\r\n\r\n",
        ] {
            assert_eq!(protocol_err(input), "malformed status line");
        }
        assert_eq!(
            protocol_err(b"HTTP/2.0 200 OK\r\n\r\n"),
            "unsupported http version"
        );
        assert_eq!(
            protocol_err(b"HTTP/0.9 200 OK\r\n\r\n"),
            "unsupported http version"
        );
    }

    #[test]
    fn not_http_fails_at_the_first_wrong_byte() {
        for input in [
            &b"http/1.1 200 OK\r\n\r\n"[..],
            b"SSH-2.0-OpenSSH_9.6\r\n",
            b"<html>hello</html>",
            b"\r\nHTTP/1.1 200 OK\r\n\r\n",
            b"\x16\x03\x01\x02\x00\x01\x00",
            b"HTTPS/1.1 200 OK",
        ] {
            assert_eq!(protocol_err(input), "malformed status line");
            // The first feed already fails: nothing is buffered waiting for
            // a blank line.
            let mut parser = ResponseParser::new();
            assert!(parser.feed(input).is_err());
        }
    }

    #[test]
    fn malformed_headers() {
        assert_eq!(
            protocol_err(b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"),
            "header line without a colon"
        );
        for input in [
            &b"HTTP/1.1 200 OK\r\nName : value\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\n: no name\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nBad\x01Name: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nBad(Name): x\r\n\r\n",
        ] {
            assert_eq!(protocol_err(input), "malformed header name");
        }
    }

    #[test]
    fn bad_content_length() {
        let head = |value: &str| format!("HTTP/1.1 200 OK\r\nContent-Length: {value}\r\n\r\nbody");
        for value in ["-1", "+4", "4 4", "abc", "", "0x4", "4.0", "4,"] {
            assert_eq!(
                protocol_err(head(value).as_bytes()),
                "malformed content-length",
                "{value:?}"
            );
        }
        assert_eq!(
            protocol_err(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nbody"),
            "conflicting content-length"
        );
        assert_eq!(
            protocol_err(b"HTTP/1.1 200 OK\r\nContent-Length: 4, 5\r\n\r\nbody"),
            "conflicting content-length"
        );
        // The same value repeated is not ambiguous.
        let response =
            ok(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\ncontent-length: 4, 04\r\n\r\nbody");
        assert_eq!(response.body, b"body");
        // A number too big for any integer type is simply too large.
        let err = err(
            Limits::default(),
            head("99999999999999999999999999").as_bytes(),
        );
        assert_eq!(err.kind, FailKind::TooLarge);
        assert_eq!(err.message, "body exceeds 10485760 bytes");
    }

    #[test]
    fn bad_chunk_framing() {
        let chunked =
            |body: &str| format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{body}");
        for body in [
            "xyz\r\n",
            "\r\n",
            ";ext\r\nabc\r\n0\r\n\r\n",
            " 5\r\nhello\r\n0\r\n\r\n",
            "5 x\r\nhello\r\n0\r\n\r\n",
            "5\rhello\r\n0\r\n\r\n",
            "-5\r\nhello\r\n",
            "0x5\r\nhello\r\n",
        ] {
            assert_eq!(
                protocol_err(chunked(body).as_bytes()),
                "malformed chunk size",
                "{body:?}"
            );
        }
        for body in ["5\r\nhelloX\r\n0\r\n\r\n", "5\r\nhello\rX0\r\n\r\n"] {
            assert_eq!(
                protocol_err(chunked(body).as_bytes()),
                "missing line break after chunk data"
            );
        }
        let long_extension = format!("1;{}\r\na\r\n0\r\n\r\n", "x".repeat(5000));
        assert_eq!(
            protocol_err(chunked(&long_extension).as_bytes()),
            "chunk size line too long"
        );
        let endless_zeros = "0".repeat(5000);
        assert_eq!(
            protocol_err(chunked(&endless_zeros).as_bytes()),
            "chunk size line too long"
        );
    }

    #[test]
    fn huge_chunk_sizes_are_too_large() {
        for size in [
            "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
            "10000000000000000",
            "a00001",
        ] {
            let input =
                format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{size}\r\nabc");
            let err = err(Limits::default(), input.as_bytes());
            assert_eq!(err.kind, FailKind::TooLarge, "{size}");
            assert_eq!(err.message, "body exceeds 10485760 bytes");
        }
    }

    #[test]
    fn transfer_encoding_rules() {
        // Chunked last: chunked framing, whatever came before.
        let response = ok(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n");
        assert_eq!(response.body, b"xy");
        // Another coding last: the body runs to the close.
        let response =
            ok(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\n2\r\nxy");
        assert_eq!(response.body, b"2\r\nxy");
        assert!(!response.reusable);
        // Chunked twice, or not last: broken framing.
        assert_eq!(
            protocol_err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),
            "malformed transfer-encoding"
        );
        assert_eq!(
            protocol_err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"),
            "malformed transfer-encoding"
        );
        // Transfer-Encoding wins over Content-Length, and the connection is
        // not trusted afterwards.
        let response = ok(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n");
        assert_eq!(response.body, b"xy");
        assert!(!response.reusable);
    }

    #[test]
    fn truncated_responses_are_resets() {
        let examples: [&[u8]; 3] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
        ];
        for input in examples {
            assert!(parse(input).is_ok());
            for len in 0..input.len() {
                let err = parse(&input[..len]).unwrap_err();
                assert_eq!(err.kind, FailKind::Reset, "{:?}", &input[..len]);
            }
        }
        assert_eq!(
            parse(b"").unwrap_err().message,
            "connection closed before the response"
        );
        assert_eq!(
            parse(b"HTTP/1.1 200").unwrap_err().message,
            "connection closed in the headers"
        );
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
                .unwrap_err()
                .message,
            "connection closed after 3 of 10 body bytes"
        );
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe")
                .unwrap_err()
                .message,
            "connection closed in the chunked body"
        );
    }

    // ---- limits ----

    /// A head of exactly `len` bytes (a filler header pads it).
    fn head_of_len(len: usize, framing: &str) -> Vec<u8> {
        let fixed = format!("HTTP/1.1 200 OK\r\n{framing}X-Pad: \r\n\r\n");
        let pad = len.checked_sub(fixed.len()).expect("head too short");
        format!(
            "HTTP/1.1 200 OK\r\n{framing}X-Pad: {}\r\n\r\n",
            "p".repeat(pad)
        )
        .into_bytes()
    }

    #[test]
    fn header_limit_exactly_and_one_over() {
        let input = head_of_len(100, "Content-Length: 2\r\n");
        let mut input_with_body = input.clone();
        input_with_body.extend_from_slice(b"ok");
        assert_eq!(input.len(), 100);
        let response = parse_every_split(limits(100, 10), &input_with_body).unwrap();
        assert_eq!(response.body, b"ok");
        let err = err(limits(99, 10), &input_with_body);
        assert_eq!(err.kind, FailKind::TooLarge);
        assert_eq!(err.message, "headers exceed 99 bytes");
        // Over the limit is detected without waiting for the rest.
        let mut parser = ResponseParser::with_limits(limits(99, 10));
        assert_eq!(parser.feed(&input[..99]), Ok(None));
        assert_eq!(
            parser.feed(&input[99..]).unwrap_err().kind,
            FailKind::TooLarge
        );
    }

    #[test]
    fn header_limit_counts_interim_responses() {
        let interim = b"HTTP/1.1 100 Continue\r\n\r\n";
        let fin = b"HTTP/1.1 204 No Content\r\n\r\n";
        let input = [&interim[..], &fin[..]].concat();
        let total = input.len();
        assert!(parse_every_split(limits(total, 0), &input).is_ok());
        let err = err(limits(total - 1, 0), &input);
        assert_eq!(err.kind, FailKind::TooLarge);
        // An endless stream of `100 Continue` ends at the limit.
        let endless = interim.repeat(3000);
        let err = parse_pieces(Limits::default(), &[&endless]).unwrap_err();
        assert_eq!(err.kind, FailKind::TooLarge);
    }

    #[test]
    fn content_length_limit_exactly_and_one_over() {
        let at = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n12345678";
        assert_eq!(
            parse_every_split(limits(1024, 8), at).unwrap().body,
            b"12345678"
        );
        let over = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n123456789";
        let err = err(limits(1024, 8), over);
        assert_eq!(err.kind, FailKind::TooLarge);
        assert_eq!(err.message, "body exceeds 8 bytes");
        // Fails on the head alone: not one body byte is read.
        let mut parser = ResponseParser::with_limits(limits(1024, 8));
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n";
        assert_eq!(parser.feed(head).unwrap_err().kind, FailKind::TooLarge);
    }

    #[test]
    fn chunked_limit_exactly_and_one_over() {
        let at = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n12345\r\n3\r\n678\r\n0\r\n\r\n";
        assert_eq!(
            parse_every_split(limits(1024, 8), at).unwrap().body,
            b"12345678"
        );
        let over = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n12345\r\n4\r\n6789\r\n0\r\n\r\n";
        let err = err(limits(1024, 8), over);
        assert_eq!(err.kind, FailKind::TooLarge);
        // Fails at the size line of the chunk that does not fit, before its data.
        let mut parser = ResponseParser::with_limits(limits(1024, 8));
        let cut = over.len() - b"6789\r\n0\r\n\r\n".len();
        assert_eq!(
            parser.feed(&over[..cut]).unwrap_err().kind,
            FailKind::TooLarge
        );
    }

    #[test]
    fn close_delimited_limit_exactly_and_one_over() {
        let at = b"HTTP/1.0 200 OK\r\n\r\n12345678";
        assert_eq!(
            parse_every_split(limits(1024, 8), at).unwrap().body,
            b"12345678"
        );
        let over = b"HTTP/1.0 200 OK\r\n\r\n123456789";
        let err = err(limits(1024, 8), over);
        assert_eq!(err.kind, FailKind::TooLarge);
        // Fails on the ninth byte, without waiting for the close.
        let mut parser = ResponseParser::with_limits(limits(1024, 8));
        assert_eq!(parser.feed(at), Ok(None));
        assert_eq!(parser.feed(b"9").unwrap_err().kind, FailKind::TooLarge);
    }

    #[test]
    fn trailer_limit() {
        let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: 12\r\n\r\n";
        // The trailers (`T: 12\r\n\r\n`) are 9 bytes.
        assert!(parse_every_split(limits(64, 0), input).is_ok());
        let mut endless = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n".to_vec();
        endless.extend(b"T: 1\r\n".repeat(100));
        let err = parse_pieces(limits(64, 0), &[&endless]).unwrap_err();
        assert_eq!(err.kind, FailKind::TooLarge);
        assert_eq!(err.message, "trailers exceed 64 bytes");
    }

    #[test]
    fn default_limits_exactly() {
        let head = head_of_len(MAX_HEADER_BYTES, "Content-Length: 0\r\n");
        assert!(parse(&head).is_ok());
        let head = head_of_len(MAX_HEADER_BYTES + 1, "Content-Length: 0\r\n");
        assert_eq!(parse(&head).unwrap_err().kind, FailKind::TooLarge);

        let mut input =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {MAX_BODY_BYTES}\r\n\r\n").into_bytes();
        input.resize(input.len() + MAX_BODY_BYTES, b'x');
        let response = parse_pieces(
            Limits::default(),
            &input.chunks(16 * 1024).collect::<Vec<_>>(),
        )
        .unwrap();
        assert_eq!(response.body.len(), MAX_BODY_BYTES);
        // The body's allocation stayed within the limit too.
        assert!(response.body.capacity() <= MAX_BODY_BYTES);
    }

    // ---- received_any, reuse, spent parsers, memory ----

    #[test]
    fn received_any() {
        let mut parser = ResponseParser::new();
        assert!(!parser.received_any());
        assert_eq!(parser.feed(b""), Ok(None));
        assert!(!parser.received_any());
        assert_eq!(parser.feed(b"H"), Ok(None));
        assert!(parser.received_any());

        let mut parser = ResponseParser::new();
        let err = parser.finish().unwrap_err();
        assert_eq!(
            err,
            FetchError::new(FailKind::Reset, "connection closed before the response")
        );
        assert!(!parser.received_any());
    }

    #[test]
    fn reusable_rules() {
        let reusable = |input: &[u8]| ok(input).reusable;
        assert!(reusable(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"));
        assert!(reusable(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        ));
        assert!(reusable(b"HTTP/1.1 304 Not Modified\r\n\r\n"));
        assert!(reusable(
            b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"
        ));
        assert!(!reusable(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx"
        ));
        assert!(!reusable(
            b"HTTP/1.1 200 OK\r\nConnection: Upgrade, CLOSE\r\nContent-Length: 1\r\n\r\nx"
        ));
        assert!(!reusable(b"HTTP/1.1 200 OK\r\n\r\nx"));
        assert!(!reusable(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx"));
        assert!(reusable(
            b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx"
        ));
        assert!(!reusable(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 1\r\n\r\nx"
        ));
        assert!(!reusable(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nx"
        ));

        // Bytes after the end of the response: complete, but out of step.
        let mut parser = ResponseParser::new();
        let response = parser
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1")
            .unwrap()
            .unwrap();
        assert_eq!(response.body, b"x");
        assert!(!response.reusable);
        let mut parser = ResponseParser::new();
        let response = parser
            .feed(b"HTTP/1.1 204 No Content\r\n\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!response.reusable);
    }

    #[test]
    fn a_spent_parser_says_so() {
        let mut parser = ResponseParser::new();
        assert!(parser
            .feed(b"HTTP/1.1 204 No Content\r\n\r\n")
            .unwrap()
            .is_some());
        let err = parser.feed(b"more").unwrap_err();
        assert_eq!(
            err,
            FetchError::new(FailKind::Protocol, "response already complete")
        );
        assert_eq!(parser.finish().unwrap_err(), err);

        let mut parser = ResponseParser::new();
        let first = parser.feed(b"garbage").unwrap_err();
        assert_eq!(parser.feed(b"HTTP/1.1 200 OK\r\n\r\n").unwrap_err(), first);
        assert_eq!(parser.finish().unwrap_err(), first);
    }

    #[test]
    fn an_idle_parser_owns_no_heap_memory() {
        let parser = ResponseParser::new();
        assert_eq!(parser.buf.capacity(), 0);
        assert_eq!(parser.body.capacity(), 0);
        assert_eq!(parser.head.headers.entries.capacity(), 0);
        assert_eq!(parser.head.reason.capacity(), 0);
        // And is small itself: lesson 4 keeps thousands of them.
        assert!(std::mem::size_of::<ResponseParser>() <= 256);
    }

    #[test]
    fn the_head_buffer_is_freed_once_parsed() {
        let mut parser = ResponseParser::new();
        let head = head_of_len(4000, "Content-Length: 10\r\n");
        assert_eq!(parser.feed(&head), Ok(None));
        assert_eq!(parser.buf.capacity(), 0);
        assert_eq!(parser.body.capacity(), 0);
    }

    #[test]
    fn a_body_that_is_mostly_here_gets_its_whole_room_at_once() {
        // 16,000 of 16,384 bytes in the first read: room for all of it, so
        // the last 384 are not the reason for a 32 KiB copy.
        let mut parser = ResponseParser::new();
        let mut first = b"HTTP/1.1 200 OK\r\nContent-Length: 16384\r\n\r\n".to_vec();
        first.extend(std::iter::repeat_n(b'a', 16_000));
        assert_eq!(parser.feed(&first), Ok(None));
        assert_eq!(parser.body.capacity(), 16_384);
        let response = parser.feed(&[b'b'; 384]).unwrap().unwrap();
        assert_eq!(response.body.len(), 16_384);
        assert_eq!(response.body.capacity(), 16_384);
    }

    #[test]
    fn a_claimed_body_gets_no_more_room_than_what_came_would_earn() {
        // A claim of 10 MB and 100 bytes sent: room for about 100, not 10 MB.
        let mut parser = ResponseParser::new();
        let mut first = b"HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n".to_vec();
        first.extend([b'a'; 100]);
        assert_eq!(parser.feed(&first), Ok(None));
        assert!(parser.body.capacity() <= 200, "{}", parser.body.capacity());
    }

    #[test]
    fn head_end_search_looks_only_at_new_bytes() {
        // A blank line before `scanned` was already searched (and, in the
        // parser, would already have been found): it is not looked at again.
        let buf = b"a\n\nbcdefgh\r\n\r\n";
        assert_eq!(find_head_end(buf, 0), Some(3));
        assert_eq!(find_head_end(buf, 6), Some(buf.len()));
        // A line end split by the read boundary is still found.
        for scanned in 0..=buf.len() {
            let end = find_head_end(&buf[3..], scanned.saturating_sub(3));
            assert_eq!(end, Some(buf.len() - 3), "scanned {scanned}");
        }
        assert_eq!(find_head_end(b"x\r\n\r", 0), None);
        assert_eq!(find_head_end(b"x\n\r", 0), None);
    }

    #[test]
    fn a_large_head_one_byte_at_a_time() {
        // Linear work: 64 KiB fed byte by byte is 64 Ki small steps. A parser
        // that rescanned its buffer on every byte would do 2 Gi steps here.
        let mut input = head_of_len(MAX_HEADER_BYTES, "Content-Length: 3\r\n");
        input.extend_from_slice(b"end");
        let mut parser = ResponseParser::new();
        let mut result = None;
        for byte in input.chunks(1) {
            if let Some(response) = parser.feed(byte).unwrap() {
                result = Some(response);
            }
        }
        assert_eq!(result.unwrap().body, b"end");
    }

    // ---- random byte soup ----

    /// A tiny xorshift generator: reproducible randomness without a crate.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Pieces of HTTP to mix into the soup, so that it gets past the status
    /// line often enough to reach the framing and body code.
    const FRAGMENTS: &[&[u8]] = &[
        b"HTTP/1.1 200 OK\r\n",
        b"HTTP/1.0 404 Not Found\n",
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\n",
        b"HTTP/1.1 304 \r\n",
        b"HTTP/1.1 ",
        b"Content-Length: 5\r\n",
        b"Content-Length: ",
        b"Transfer-Encoding: chunked\r\n",
        b"Transfer-Encoding: gzip, chunked\r\n",
        b"Connection: close\r\n",
        b"Connection: keep-alive\r\n",
        b"X: y\r\n",
        b" folded\r\n",
        b"\r\n",
        b"\n",
        b"\r",
        b"5\r\nhello\r\n",
        b"0\r\n\r\n",
        b"0\r\n",
        b"ffffffffffffffffff\r\n",
        b";ext=1",
        b"10\r\n",
        b"hello",
        b":",
        b" ",
        b"123",
        b"\t",
    ];

    fn soup(rng: &mut XorShift) -> Vec<u8> {
        let mut input = Vec::new();
        if rng.below(4) != 0 {
            input.extend_from_slice(FRAGMENTS[rng.below(5)]);
        }
        for _ in 0..rng.below(40) {
            if rng.below(3) == 0 {
                for _ in 0..rng.below(20) {
                    input.push(rng.next() as u8);
                }
            } else {
                input.extend_from_slice(FRAGMENTS[rng.below(FRAGMENTS.len())]);
            }
        }
        input
    }

    /// `result` with `reusable` cleared: stray bytes after the end make a
    /// whole-input parse non-reusable where a split one may have stopped first.
    fn ignoring_reuse(result: Result<Response, FetchError>) -> Result<Response, FetchError> {
        result.map(|response| Response {
            reusable: false,
            ..response
        })
    }

    /// Feed random soup, split at random places, to a parser with small
    /// limits. Nothing may panic; buffers never pass the limits; every split
    /// gives the same answer as the whole input.
    fn random_soup(seed: u64, iterations: usize) {
        let mut rng = XorShift(seed);
        for iteration in 0..iterations {
            let input = soup(&mut rng);
            let limits = limits(16 + rng.below(200), rng.below(64));
            let whole = ignoring_reuse(parse_pieces(limits, &[&input]));

            let mut parser = ResponseParser::with_limits(limits);
            let mut rest = &input[..];
            let split = loop {
                let (piece, after) = rest.split_at(rng.below(rest.len() + 1).min(rest.len()));
                rest = after;
                let result = parser.feed(piece);
                assert!(parser.buf.len() <= limits.max_header_bytes);
                assert!(parser.buf.capacity() <= limits.max_header_bytes);
                assert!(parser.body.capacity() <= limits.max_body_bytes);
                match result {
                    Ok(Some(response)) => break Ok(response),
                    Err(err) => break Err(err),
                    Ok(None) if rest.is_empty() => break parser.finish(),
                    Ok(None) => {}
                }
            };
            if let Ok(response) = &split {
                assert!(response.body.len() <= limits.max_body_bytes);
            }
            assert_eq!(
                ignoring_reuse(split),
                whole,
                "seed {seed} iteration {iteration}: {:?}",
                String::from_utf8_lossy(&input)
            );
        }
    }

    #[test]
    fn random_soup_never_panics() {
        random_soup(0x9E37_79B9_7F4A_7C15, 5_000);
    }

    /// The long run, for when the fuzzer is not at hand:
    /// `cargo test -p shared --release --lib http::tests::random_soup_long -- --ignored`.
    #[test]
    #[ignore]
    fn random_soup_long() {
        random_soup(0x2545_F491_4F6C_DD1D, 5_000_000);
    }
}
