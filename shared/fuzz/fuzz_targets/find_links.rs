//! Fuzz target: arbitrary bytes as a page, under an arbitrary page URL and
//! `<base href>`, through what every lesson does with a page — the response
//! parser, then `shared::page::analyze` (link finding, resolution, policy).
//! It checks:
//!
//! - nothing panics, whatever the bytes;
//! - every link kept has scheme `http` or `https`, no fragment, passes the
//!   policy it was judged by, and reads back as the same URL from its own
//!   text; the page's `TOTAL` is the number of links, and they are distinct;
//! - the links do not depend on how the page was cut into reads: the body
//!   fed to the parser in pieces gives the same analysis as fed whole;
//! - the fast link finder agrees with its definition: `extract_hrefs`,
//!   `find_base` and `extract_links` give exactly what
//!   `shared::links::reference` gives (each link's text, and the `Url` it
//!   parses to, including links resolved by hand, and their clones), the course's link pattern run through
//!   the regex engine as the crawler did before the finder was written by
//!   hand (a differential fuzzer: old against new, on every input).
//!
//! Input layout: a flags byte (bit 0: put a `<base href>` first; bit 1:
//! lenient host matching), four read-size seeds, then the page URL up to the
//! first newline, the `<base href>` value up to the next, and the body.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::http::{Response, ResponseParser};
use shared::links::{self, reference, Fingerprint, Link, UrlPolicy};
use shared::log::{Level, Log};
use shared::page::{analyze, Analysis};
use url::Url;

fuzz_target!(|data: &[u8]| {
    let [flags, a, b, c, d, input @ ..] = data else {
        return;
    };
    let (page_text, rest) = line(input);
    let (base_text, body) = line(rest);
    let page_url = page_url(page_text);

    let mut page = Vec::with_capacity(body.len() + base_text.len() + 16);
    if flags & 1 != 0 {
        page.extend_from_slice(b"<base href=\"");
        page.extend_from_slice(base_text);
        page.extend_from_slice(b"\">");
    }
    page.extend_from_slice(body);

    let policy = UrlPolicy::new(std::slice::from_ref(&page_url), None, flags & 2 != 0);
    let log = Log::capture(Level::Error);

    let whole = parse(&page, &mut std::iter::once(usize::MAX));
    let mut sizes = [*a, *b, *c, *d]
        .into_iter()
        .map(|n| usize::from(n).max(1))
        .cycle();
    let split = parse(&page, &mut sizes);
    assert_eq!(split.body, whole.body, "the body depends on the reads");

    let Analysis { stat, links, .. } = analyze(&page_url, &whole, &policy, &log);
    assert_eq!(stat.num_urls, links.len());
    let mut distinct = std::collections::HashSet::new();
    for link in &links {
        assert!(
            matches!(link.scheme(), "http" | "https"),
            "kept {link} with scheme {}",
            link.scheme()
        );
        let url = link.to_url();
        assert_eq!(url.as_str(), link.as_str(), "{link} is its text");
        assert_eq!(url.fragment(), None, "kept {link} with a fragment");
        assert!(policy.check(&url).is_ok(), "kept {link}, which the policy refuses");
        let again = Url::parse(link.as_str()).expect("a kept link reads back");
        assert_eq!(again, url);
        assert!(distinct.insert(link.as_str()), "{link} kept twice");
    }
    let from_split = analyze(&page_url, &split, &policy, &log);
    assert_eq!(from_split.links, links, "the links depend on the reads");

    // Old against new, on the raw page and under both the page URL and a
    // URL with a query and a port, so the fast paths' corners are reached.
    assert_eq!(links::extract_hrefs(&page), reference::extract_hrefs(&page));
    assert_eq!(links::find_base(&page), reference::find_base(&page));
    for base in [&page_url, &other_page()] {
        let fast = links::extract_links(&page, base);
        let regex = reference::extract_links(&page, base);
        assert_eq!(
            fast.iter().map(Link::as_str).collect::<Vec<_>>(),
            regex.iter().map(Url::as_str).collect::<Vec<_>>(),
            "the fast finder and the regex disagree under {base}"
        );
        // A link resolved by hand is the URL `join` made, down to what
        // the policy reads of it.
        // A clone (which copies its text out of the page's buffer) is the
        // same link.
        for (link, url) in fast.iter().zip(&regex) {
            assert_eq!(&link.to_url(), url);
            assert_eq!(link.scheme(), url.scheme());
            assert_eq!(link.host_str(), url.host_str());
            let clone = link.clone();
            assert_eq!(clone.as_str(), url.as_str());
            assert_eq!(&clone.to_url(), url);
            assert_eq!(clone.host_str(), url.host_str());
            // What a seen-set keeps of the link is what it would keep of
            // the `Url` the regex way made.
            assert_eq!(link.fingerprint(), Fingerprint::from(url));
        }
    }
});

/// A second page URL for the differential check: a port, a deep path, a
/// query and userinfo, all of which resolution must carry or drop.
fn other_page() -> Url {
    Url::parse("https://user:pw@example.com:8443/a/b/c.html?q=1").expect("a constant URL")
}

/// `input` up to its first newline, and what follows it.
fn line(input: &[u8]) -> (&[u8], &[u8]) {
    match input.iter().position(|&b| b == b'\n') {
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (input, &[]),
    }
}

/// The page's URL from the fuzzer's bytes: as given if it parses as an
/// `http` or `https` URL with a host, else with `http://` before it (as a
/// root is normalized), else a fixed one.
fn page_url(text: &[u8]) -> Url {
    let text = String::from_utf8_lossy(text);
    [text.to_string(), format!("http://{text}")]
        .iter()
        .filter_map(|t| Url::parse(t).ok())
        .find(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
        .unwrap_or_else(|| Url::parse("http://example.com/a/b.html").expect("a fixed URL"))
}

/// A 200 `text/html` response carrying `body`, fed to the parser in reads of
/// the sizes `sizes` gives.
fn parse(body: &[u8], sizes: &mut dyn Iterator<Item = usize>) -> Response {
    let mut bytes = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(body);
    let mut parser = ResponseParser::new();
    let mut input = &bytes[..];
    while !input.is_empty() {
        let n = sizes.next().unwrap_or(input.len()).min(input.len());
        let (read, rest) = input.split_at(n);
        input = rest;
        match parser.feed(read) {
            Ok(Some(response)) => return response,
            Ok(None) => {}
            Err(err) => panic!("a well-formed response failed: {err}"),
        }
    }
    panic!("a complete response was not complete")
}
