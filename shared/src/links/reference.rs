//! # The definition the fast path is held to
//!
//! [`LINK_PATTERN`] is what a link is; the functions here apply it the
//! straightforward way, the regex engine matching at every place the
//! literal `href` is found, and give the answers the crawler gave before
//! `raw_hrefs` learned to read a match by hand. They are not on any
//! crawl's path: the differential tests and the `find_links` fuzz target
//! compare the fast functions with these, byte for byte, on every page they
//! try.

use std::collections::HashSet;
use std::sync::OnceLock;

use url::Url;

use super::{base_tags_from, compile, decode_value, without_fragment, LINK_PATTERN};

/// Where a link can start: `href`, in any case. The engine finds a literal
/// like this with a vectorized search for all 16 case variants at once, which
/// skips the bulk of a page (prose, code) many bytes at a time.
fn href_regex() -> &'static regex::bytes::Regex {
    static RE: OnceLock<regex::bytes::Regex> = OnceLock::new();
    RE.get_or_init(|| compile("(?i)href"))
}

/// [`LINK_PATTERN`], anchored with `\A`: it is only ever tried at a place
/// where [`href_regex`] found `href`, so it never has to look for a start.
fn link_regex() -> &'static regex::bytes::Regex {
    static RE: OnceLock<regex::bytes::Regex> = OnceLock::new();
    RE.get_or_init(|| compile(&format!(r"\A(?:{LINK_PATTERN})")))
}

/// Every `href` value in `body`, in document order: where it starts, and its
/// raw bytes. Each value borrows from `body`: nothing is copied until it is
/// needed as text.
///
/// This finds exactly the matches of `LINK_PATTERN.find_iter(body)`, in two
/// cheaper steps. Every match starts with `href`, so the first place where an
/// `href` starts a match is where the leftmost match starts; and trying the
/// pattern anchored there spares the engine the backward scan an unanchored
/// search makes to find where a match began. (The test
/// `same_values_as_the_plain_regex` holds the two to the same answers.)
pub fn raw_hrefs(body: &[u8]) -> impl Iterator<Item = (usize, &[u8])> + '_ {
    let (href, link) = (href_regex(), link_regex());
    let mut at = 0;
    std::iter::from_fn(move || loop {
        let candidate = href.find_at(body, at)?;
        let start = candidate.start();
        match link.find(&body[start..]) {
            Some(found) => {
                // A match is never empty, so the search always moves forward.
                at = start + found.end();
                let value = value_of(&body[start..at]);
                return Some((at - value.len(), value));
            }
            // `href` without `=` and a value (prose, `data-href-x`): look on.
            None => at = candidate.end(),
        }
    })
}

/// The value inside one match of [`LINK_PATTERN`], without asking the engine
/// for the capture group (which costs a second pass over the match): the
/// value cannot contain whitespace or quotes, so it is whatever
/// follows the first `=`, the whitespace after it, and at most one quote.
fn value_of(found: &[u8]) -> &[u8] {
    // `href` has no `=`, so the first one is the attribute's.
    let equals = found.iter().position(|&b| b == b'=').unwrap_or(0);
    let mut value = &found[equals + 1..];
    // The regex's `\s` in bytes mode: `[\t\n\x0B\x0C\r ]`.
    while let [b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ', rest @ ..] = value {
        value = rest;
    }
    if let [b'"' | b'\'', rest @ ..] = value {
        value = rest;
    }
    value
}

/// [`super::extract_hrefs`], the regex way.
pub fn extract_hrefs(body: &[u8]) -> Vec<String> {
    raw_hrefs(body)
        .map(|(_, raw)| decode_value(raw).into_owned())
        .collect()
}

/// [`super::extract_links`], the regex way: every link of the page, resolved against its `<base href>` or `page_url`,
/// fragment dropped, distinct, in first-seen order. Values that do not parse
/// as URLs are dropped.
pub fn extract_links(body: &[u8], page_url: &Url) -> Vec<Url> {
    // The first `<base href>` sets the base; a relative one is itself
    // relative to the page. A base that does not parse, or cannot have
    // relative URLs joined to it (`mailto:x`), is ignored, as browsers ignore
    // it.
    let base_tags: Vec<(usize, &[u8])> = base_tags(body).collect();
    let base = base_tags
        .first()
        .and_then(|&(_, raw)| page_url.join(&decode_value(raw)).ok())
        .filter(|base| !base.cannot_be_a_base());
    let base = base.as_ref().unwrap_or(page_url);
    // The regex finds the `href` of a `<base>` tag too, but a base is where
    // links resolve from, not a link: those values are passed over. Both lists
    // are in document order, so one walk along `base_tags` does it.
    let mut next_base_tag = 0;

    // Resolving a URL is the expensive step, and documentation pages repeat
    // the same values (navigation, `#top`, `page.html#item`), so each raw
    // value, fragment cut off, is resolved once.
    let mut seen_values: HashSet<&[u8]> = HashSet::new();
    let mut links = Vec::new();
    for (start, raw) in raw_hrefs(body) {
        while base_tags
            .get(next_base_tag)
            .is_some_and(|&(tag, _)| tag < start)
        {
            next_base_tag += 1;
        }
        if base_tags
            .get(next_base_tag)
            .is_some_and(|&(tag, _)| tag == start)
        {
            continue;
        }
        let raw = without_fragment(raw);
        if !seen_values.insert(raw) {
            continue;
        }
        if let Ok(mut url) = base.join(&decode_value(raw)) {
            url.set_fragment(None);
            links.push(url);
        }
    }

    // Different values can still name one URL (`a`, `./a`, `a#top`). Keep the
    // first of each, comparing the serializations in place rather than
    // cloning every URL into a set.
    let keep: Vec<bool> = {
        let mut seen_urls = HashSet::with_capacity(links.len());
        links
            .iter()
            .map(|url| seen_urls.insert(url.as_str()))
            .collect()
    };
    let mut keep = keep.into_iter();
    links.retain(|_| keep.next().unwrap_or(false));
    links
}

/// Where a `<base>` tag can be: the word `base`, in any case.
fn base_word_regex() -> &'static regex::bytes::Regex {
    static RE: OnceLock<regex::bytes::Regex> = OnceLock::new();
    RE.get_or_init(|| compile("(?i)base"))
}

/// Every `<base href>` tag of `body`, in document order: where its value
/// starts, and its raw bytes. The first `<base` found with the regex
/// engine's literal search, the tags read from there.
pub fn base_tags(body: &[u8]) -> impl Iterator<Item = (usize, &[u8])> + '_ {
    let mut at = 0;
    let mut first = body.len();
    while let Some(word) = base_word_regex().find_at(body, at) {
        at = word.end();
        if let Some(tag) = word.start().checked_sub(1).filter(|&i| body[i] == b'<') {
            first = tag;
            break;
        }
    }
    base_tags_from(body, first)
}

/// [`super::find_base`], the regex way.
pub fn find_base(body: &[u8]) -> Option<String> {
    let (_, raw) = base_tags(body).next()?;
    Some(decode_value(raw).into_owned())
}
