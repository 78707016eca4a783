//! # `bench-parser`: how fast the response parser runs
//!
//! Every lesson pushes every byte it fetches through
//! [`shared::http::ResponseParser`], so its speed bounds how fast any lesson
//! can crawl. This benchmark builds a response with a ~1 MB body, framed two
//! ways (`Content-Length`, and `Transfer-Encoding: chunked` in 4 KiB chunks),
//! feeds it to a fresh parser in 16 KiB reads — the size of a typical socket
//! read — many times over, and prints the throughput.
//!
//! ```text
//! cargo run --release -p course-tools --bin bench-parser
//! ```
//!
//! Each variant is timed over several runs and the median is printed: on a
//! shared machine one run can be slowed by a neighbour, and the median
//! ignores the odd slow run where the mean would not. MB/s counts response
//! bytes (head, framing and body) in millions per second.

use std::hint::black_box;
use std::time::Instant;

use shared::http::ResponseParser;

/// Size of the body in each response (1 MiB).
const BODY_BYTES: usize = 1 << 20;
/// Bytes handed to `feed` at a time, as a socket read would.
const READ_BYTES: usize = 16 * 1024;
/// Chunk size of the chunked variant; servers commonly flush 4–8 KiB.
const CHUNK_BYTES: usize = 4 * 1024;
/// Parses timed together in one run.
const PARSES_PER_RUN: usize = 100;
/// Runs per variant; the median is reported.
const RUNS: usize = 7;

fn main() {
    let body = html_body(BODY_BYTES);
    let variants = [
        ("content-length", content_length_response(&body)),
        (
            "chunked (4 KiB chunks)",
            chunked_response(&body, CHUNK_BYTES),
        ),
    ];
    println!(
        "bench-parser: {BODY_BYTES}-byte body, {READ_BYTES}-byte reads, \
         median of {RUNS} runs of {PARSES_PER_RUN} parses"
    );
    for (name, response) in &variants {
        let mut rates: Vec<f64> = (0..RUNS).map(|_| run(response)).collect();
        rates.sort_by(f64::total_cmp);
        println!(
            "{name:<24} {:>8} bytes  {:>8.0} MB/s  (runs from {:.0} to {:.0})",
            response.len(),
            rates[RUNS / 2],
            rates[0],
            rates[RUNS - 1],
        );
    }
}

/// Parse `response` [`PARSES_PER_RUN`] times; the throughput in MB/s.
fn run(response: &[u8]) -> f64 {
    let start = Instant::now();
    for _ in 0..PARSES_PER_RUN {
        let body_len = parse(black_box(response));
        assert_eq!(body_len, BODY_BYTES);
    }
    let seconds = start.elapsed().as_secs_f64();
    (response.len() * PARSES_PER_RUN) as f64 / seconds / 1e6
}

/// Feed `response` in [`READ_BYTES`] reads, as a lesson's read loop does;
/// the length of the body parsed.
fn parse(response: &[u8]) -> usize {
    let mut parser = ResponseParser::new();
    for read in response.chunks(READ_BYTES) {
        // The benchmark's own response: an error here is a bug in this file
        // or in the parser, and the benchmark should stop loudly.
        match parser.feed(read) {
            Ok(Some(parsed)) => return black_box(parsed.body).len(),
            Ok(None) => {}
            Err(err) => panic!("the benchmark's response does not parse: {err}"),
        }
    }
    panic!("the benchmark's response is incomplete");
}

/// `len` bytes of HTML-looking text, links and all.
fn html_body(len: usize) -> Vec<u8> {
    let line = b"<li><a href=\"/docs/library/section-42.html\">A section of the library</a></li>\n";
    line.iter().copied().cycle().take(len).collect()
}

/// A response framed by `Content-Length`.
fn content_length_response(body: &[u8]) -> Vec<u8> {
    let mut response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(body);
    response
}

/// A response framed by `Transfer-Encoding: chunked`, `chunk` bytes a chunk.
fn chunked_response(body: &[u8], chunk: usize) -> Vec<u8> {
    let mut response =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    for piece in body.chunks(chunk) {
        response.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        response.extend_from_slice(piece);
        response.extend_from_slice(b"\r\n");
    }
    response.extend_from_slice(b"0\r\n\r\n");
    response
}
