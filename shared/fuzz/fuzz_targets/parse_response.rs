//! Fuzz target: feed arbitrary bytes to the response parser, split into
//! reads at arbitrary places, and check what every lesson relies on:
//!
//! - nothing panics, whatever the bytes (the sanitizer build also catches
//!   overflows and out-of-bounds slicing);
//! - the answer does not depend on where the reads were cut: the same input
//!   fed whole gives the same response or the same error (only `reusable`
//!   may differ, since a split parse can stop before bytes that follow the
//!   response);
//! - a successful response never holds more body than the limit.
//!
//! The first two bytes of the input choose small limits, so that the fuzzer
//! reaches the `too_large` paths without generating megabytes; the next four
//! are seeds for the read sizes; the rest is what the "server" sent.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::http::{Limits, Response, ResponseParser};
use shared::FetchError;

fuzz_target!(|data: &[u8]| {
    let [header_seed, body_seed, a, b, c, d, input @ ..] = data else {
        return;
    };
    let limits = Limits {
        max_header_bytes: 8 + usize::from(*header_seed) * 4,
        max_body_bytes: usize::from(*body_seed) * 16,
    };

    let whole = ignoring_reuse(parse(limits, input, &mut std::iter::once(input.len())));

    // Read sizes cycle through the four seed bytes (0 means a 1-byte read):
    // the same input gets cut differently as the fuzzer mutates them.
    let mut sizes = [*a, *b, *c, *d]
        .into_iter()
        .map(|n| usize::from(n).max(1))
        .cycle();
    let split = parse(limits, input, &mut sizes);
    if let Ok(response) = &split {
        assert!(response.body.len() <= limits.max_body_bytes);
    }
    assert_eq!(ignoring_reuse(split), whole);
});

/// Feed `input` in reads of the sizes `sizes` gives, then `finish` if the
/// response is still incomplete.
fn parse(
    limits: Limits,
    mut input: &[u8],
    sizes: &mut dyn Iterator<Item = usize>,
) -> Result<Response, FetchError> {
    let mut parser = ResponseParser::with_limits(limits);
    while !input.is_empty() {
        let n = sizes.next().unwrap_or(input.len()).min(input.len());
        let (read, rest) = input.split_at(n);
        input = rest;
        if let Some(response) = parser.feed(read)? {
            return Ok(response);
        }
    }
    parser.finish()
}

/// `result` with `reusable` cleared (see the top of the file).
fn ignoring_reuse(result: Result<Response, FetchError>) -> Result<Response, FetchError> {
    result.map(|response| Response {
        reusable: false,
        ..response
    })
}
