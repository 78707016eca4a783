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
//!
//! The `<base href>` tag is found with a pattern of its own; the link regex
//! sees its `href` too, but a base is where links resolve from, not a link,
//! so its value is passed over.
//!
//! Link extraction runs on every byte the crawler downloads, so it is written
//! to be fast (`cargo run --release -p course-tools --bin bench-links`
//! measures it) without giving up the regex as the definition of a link.
//! [`LINK_PATTERN`] says what a link is, and [`reference`](mod@reference) applies it with the
//! regex engine, as the crawler once did; the functions here give exactly the
//! same answers, checked by differential tests and a fuzzer, in one pass:
//! `href` is found with a search that rejects 32 bytes at a time (and notes
//! the first `<base` on the way), the simple grammar after it is read by
//! hand (a value's end 8 bytes at a time), a value is borrowed from the body rather than copied, entity
//! decoding only runs on values that contain `&`, a value seen twice on a
//! page is resolved once, and the page's sets use a hash cheaper than the
//! default (see `PageHash` for why that is safe).
//!
//! A link comes out as a [`Link`], its URL as text, not as a parsed `Url`:
//! the common shapes (`page.html`, `../std/index.html`, `?page=2`,
//! `https://example.com/a?b`) are resolved to text by hand
//! (`resolve_plain`, held to `Url::join` by the same tests and fuzzer), and
//! a lesson parses a link ([`Link::to_url`]) only when its seen-set says it
//! is new — most links a crawl meets are not. The texts of a page's links
//! resolved by hand are written one after another into one buffer the
//! links share, so finding a link allocates nothing of its own; a clone
//! copies its text out, so a link a crawler keeps holds only its URL.
//!
//! What a crawler's seen-set keeps of a link is its [`Fingerprint`]: 128
//! bits of a keyed hash of its text, held in the set's own table.

use std::borrow::Cow;
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::net::Ipv4Addr;
use std::sync::{Arc, OnceLock};

use regex::Regex;
use url::Url;

pub mod reference;

/// `$test` for each of the 256 bytes, as a table built at compile time:
/// reading it is one load a byte where the test is several comparisons.
macro_rules! byte_table {
    ($test:ident) => {{
        let mut table = [false; 256];
        let mut b = 0;
        while b < 256 {
            table[b] = $test(b as u8);
            b += 1;
        }
        table
    }};
}

/// The course's link regex (spec, "Precise rules").
pub const LINK_PATTERN: &str = r#"(?i)href\s*=\s*["']?([^\s"'<>]+)"#;

/// The page's `<base href>`: a `<base` tag, any attributes before `href`, then
/// the same value rule as a link (any case, any quoting).
const BASE_PATTERN: &str = r#"(?i)<base\s(?:[^>]*?\s)?href\s*=\s*["']?([^\s"'<>]+)"#;

/// Compile a pattern for raw bytes, once per process.
///
/// `(?-u)` switches the classes to bytes: `\s` is ASCII whitespace and
/// `[^\s"'<>]` matches *any other byte*, including bytes that are not valid
/// UTF-8. Without it, `regex::bytes` only matches whole UTF-8 characters, and a
/// Latin-1 `é` in `href=/caf\xe9.html` would cut the value short at `/caf`.
/// With it, the value is `/caf\xe9.html`, decoded lossily to `/caf\u{FFFD}.html`:
/// the same as running the regex over a lossy decoding of the page (the only
/// difference: non-ASCII whitespace such as U+00A0 does not end a value, which
/// is also what a browser does inside a quoted attribute). A byte DFA is also
/// smaller and faster than a Unicode one.
fn compile(pattern: &str) -> regex::bytes::Regex {
    regex::bytes::Regex::new(&format!("(?-u){pattern}")).expect("constant regex")
}

/// [`BASE_PATTERN`], compiled once.
fn base_regex() -> &'static regex::bytes::Regex {
    static RE: OnceLock<regex::bytes::Regex> = OnceLock::new();
    RE.get_or_init(|| compile(BASE_PATTERN))
}

/// Every `href` value in `body`, in document order: where it starts, and its
/// raw bytes. Each value borrows from `body`: nothing is copied until it is
/// needed as text.
///
/// This finds exactly the matches of `LINK_PATTERN.find_iter(body)`, without
/// running the pattern at all. Every match starts with `href`, which
/// [`Finder`] finds many bytes at a time; what may follow it is so simple —
/// spaces, `=`, spaces, at most one quote, then a run of bytes that are not
/// spaces, quotes or angle brackets — that reading it by hand is a few
/// comparisons, where asking the regex engine to match there costs a search
/// of its own for every candidate. The pattern stays the definition:
/// [`reference`](mod@reference) runs it as written, and the tests and the fuzzer hold the
/// two to the same answers.
fn raw_hrefs(body: &[u8]) -> Hrefs<'_> {
    Hrefs {
        body,
        finder: Finder::new(body),
        at: 0,
    }
}

/// The iterator [`raw_hrefs`] returns. Once it has given its last value it
/// has read the whole page, and knows where the first `<base` is.
struct Hrefs<'a> {
    body: &'a [u8],
    finder: Finder<'a>,
    /// Where the next match may start.
    at: usize,
}

impl<'a> Iterator for Hrefs<'a> {
    type Item = (usize, &'a [u8]);

    fn next(&mut self) -> Option<(usize, &'a [u8])> {
        let body = self.body;
        loop {
            let candidate = self.finder.next_href(self.at)?;
            // A failed candidate moves on past its `href`: no match can start
            // inside it, as `ref` holds no `h`.
            self.at = candidate + 4;
            let mut i = skip_spaces(body, self.at);
            if body.get(i) != Some(&b'=') {
                continue;
            }
            i = skip_spaces(body, i + 1);
            if matches!(body.get(i), Some(b'"' | b'\'')) {
                i += 1;
            }
            let value_start = i;
            i = value_end(body, i);
            if i > value_start {
                // The next match starts after this one, as `find_iter` goes on.
                self.at = i;
                return Some((value_start, &body[value_start..i]));
            }
        }
    }
}

impl Hrefs<'_> {
    /// Where the page's first `<base` is, once every value has been read.
    fn first_base(&self) -> Option<usize> {
        self.finder.first_base
    }
}

/// How many positions [`Finder`] tests at once.
const BLOCK: usize = 32;

/// The search for `href`, in any case, through one page, which also notes
/// the first `<base` on its way.
///
/// Most of a page is prose, markup and code with no link in it, so the
/// search is built to reject 32 bytes at a time. For each of 32 positions it
/// asks one cheap question — is `h` here and `f` three bytes on, in either
/// case? (`| 0x20` folds an ASCII letter to lower case) — as a
/// plain loop over fixed-size arrays, which the compiler turns into a few
/// vector instructions; a block with no such position is skipped whole (it
/// is only asked whether any position says yes, which is cheaper than
/// noting which), and only where one is found is the whole word compared.
/// This is the idea of the "packed pair" searches in fast substring
/// finders, in safe Rust: it runs several times faster than the regex
/// engine's own search for the 16 spellings of `(?i)href`, which was a
/// quarter of link finding. The block's other candidates are kept for the
/// next call, so a page with a link every few hundred bytes does not test
/// its blocks twice.
///
/// The same loop asks each block the same question about `<base` (`<`
/// here, `s` three bytes on), and the block's positions are checked until
/// the first one is found: a `<base>` anywhere sets the base of every
/// link, so `extract_links` must know whether the page has one, and
/// noting it on the way spares pages without one a second reading. The
/// blocks a caller skips lie inside an `href` and its value, which hold no
/// `<`, so no `<base` is missed.
struct Finder<'a> {
    body: &'a [u8],
    /// Where the block of `candidates` starts.
    block: usize,
    /// One byte per position of the block, 1 where an `href` may start, as
    /// four `u64`s: the lowest set byte is the first candidate.
    candidates: [u64; BLOCK / 8],
    /// Where the next block starts.
    next_block: usize,
    /// Where the first `<base` is, once the search has passed it.
    first_base: Option<usize>,
}

impl<'a> Finder<'a> {
    fn new(body: &'a [u8]) -> Self {
        Finder {
            body,
            block: 0,
            candidates: [0; BLOCK / 8],
            next_block: 0,
            first_base: None,
        }
    }

    /// Whether `word`, ASCII letters in any case, starts at `i`.
    fn is_at(&self, i: usize, word: &[u8]) -> bool {
        self.body
            .get(i..i + word.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(word))
    }

    /// Notes `i` as the first `<base` if it is one and none was found yet.
    fn note_base(&mut self, i: usize) {
        if self.first_base.is_none() && self.is_at(i, b"<base") {
            self.first_base = Some(i);
        }
    }

    /// Where the next `href` starts at or after `from`.
    fn next_href(&mut self, from: usize) -> Option<usize> {
        loop {
            for k in 0..BLOCK / 8 {
                while self.candidates[k] != 0 {
                    let word = self.candidates[k];
                    let i = self.block + k * 8 + (word.trailing_zeros() / 8) as usize;
                    self.candidates[k] = word & (word - 1);
                    if i >= from && self.is_at(i, b"href") {
                        return Some(i);
                    }
                }
            }
            let body = self.body;
            let mut pos = self.next_block.max(from);
            // Most blocks answer no to both questions at every position, so
            // first each is only asked whether any position says yes (which
            // compiles to fewer instructions than noting which), and skipped
            // if none does.
            while let Some((here, third)) = block_at(body, pos) {
                let mut any = false;
                for i in 0..BLOCK {
                    let (href, base) = questions(here[i], third[i]);
                    any |= href | base;
                }
                if any {
                    break;
                }
                pos += BLOCK;
            }
            let Some((here, third)) = block_at(body, pos) else {
                // Too little left for a block: one position at a time.
                for i in pos..body.len() {
                    self.note_base(i);
                    if self.is_at(i, b"href") {
                        self.next_block = i + 1;
                        return Some(i);
                    }
                }
                self.next_block = body.len();
                return None;
            };
            // A block that says yes somewhere: which positions.
            let mut hrefs = [0u8; BLOCK];
            let mut bases = false;
            for i in 0..BLOCK {
                let (href, base) = questions(here[i], third[i]);
                hrefs[i] = u8::from(href);
                bases |= base;
            }
            for (k, word) in hrefs.chunks_exact(8).enumerate() {
                if let Ok(word) = <[u8; 8]>::try_from(word) {
                    self.candidates[k] = u64::from_le_bytes(word);
                }
            }
            if bases && self.first_base.is_none() {
                for i in pos..pos + BLOCK {
                    self.note_base(i);
                }
            }
            self.block = pos;
            self.next_block = pos + BLOCK;
        }
    }
}

/// The block of `body` at `pos`, and the same shifted by three bytes;
/// `None` when too little is left.
fn block_at(body: &[u8], pos: usize) -> Option<(&[u8; BLOCK], &[u8; BLOCK])> {
    let here = body.get(pos..pos + BLOCK)?.try_into().ok()?;
    let third = body.get(pos + 3..pos + 3 + BLOCK)?.try_into().ok()?;
    Some((here, third))
}

/// [`Finder`]'s two questions about one position, given its byte and the
/// byte three on: may an `href` start here (`h` here, `f` three on, either
/// case; `| 0x20` folds an ASCII letter to lower case), and may a `<base`
/// (`<` here, `s` three on)?
fn questions(here: u8, third: u8) -> (bool, bool) {
    let third = third | 0x20;
    (
        (here | 0x20 == b'h') & (third == b'f'),
        (here == b'<') & (third == b's'),
    )
}

/// The regex's `\s` in bytes mode: `[\t\n\x0B\x0C\r ]`.
const fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

/// `from` moved past any spaces.
fn skip_spaces(body: &[u8], mut from: usize) -> usize {
    while body.get(from).copied().is_some_and(is_space) {
        from += 1;
    }
    from
}

/// A byte the pattern's value `[^\s"'<>]` stops at.
const fn ends_value(b: u8) -> bool {
    is_space(b) || matches!(b, b'"' | b'\'' | b'<' | b'>')
}

/// Where the value that starts at `from` ends: the first byte at or after
/// `from` that [`ends_value`], or the end of the body.
///
/// Values are tens of bytes, so they are read 8 bytes at a time as one
/// `u64` ("SIMD within a register"): a few arithmetic steps mark, in the
/// word's top bits, each byte below `!` (the spaces, and the control bytes
/// that are not spaces) and each `"`, `'`, `<` and `>`; the lowest mark is
/// the first candidate, which the table then confirms (a control byte that
/// is not a space is passed over). Where fewer than 8 bytes are left, the
/// table alone is read, a byte at a time. Eight bytes cost about what two
/// cost a byte at a time, and a typical value is four words.
fn value_end(body: &[u8], from: usize) -> usize {
    static ENDS: [bool; 256] = byte_table!(ends_value);
    let mut pos = from;
    while let Some(bytes) = body.get(pos..pos + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(bytes);
        let mut marks = end_marks(u64::from_le_bytes(word));
        while marks != 0 {
            let at = pos + (marks.trailing_zeros() / 8) as usize;
            if ENDS[usize::from(body[at])] {
                return at;
            }
            marks &= marks - 1;
        }
        pos += 8;
    }
    body[pos..]
        .iter()
        .position(|&b| ENDS[usize::from(b)])
        .map_or(body.len(), |i| pos + i)
}

/// `0x80` in each byte of `word` that is below `!` or is `"`, `'`, `<` or
/// `>`, at least for the lowest such byte; bytes above it may be marked
/// wrongly, which [`value_end`] never reads as it stops at the lowest.
///
/// `x - 0x01…01` borrows out of a byte only if it is zero, so
/// `(x - 0x01…01) & !x & 0x80…80` marks the zero bytes of `x` (the lowest
/// exactly; a borrow can only run upwards); `x ^ 0x22…22` is zero where a
/// byte is `"`. Subtracting `0x21…21` instead marks the bytes below `!`.
fn end_marks(word: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    let below_bang = word.wrapping_sub(ONES * 0x21) & !word;
    let quotes = zero(word ^ (ONES * u64::from(b'"'))) | zero(word ^ (ONES * u64::from(b'\'')));
    let angles = zero(word ^ (ONES * u64::from(b'<'))) | zero(word ^ (ONES * u64::from(b'>')));
    (below_bang | quotes | angles) & HIGHS
}

/// An attribute value as text: lossily decoded (borrowed when it is valid
/// UTF-8, as it nearly always is), then its character references decoded
/// (only when it has an `&` at all).
fn decode_value(raw: &[u8]) -> Cow<'_, str> {
    // `from_utf8` checks many bytes at a time; `from_utf8_lossy` walks the
    // value in chunks even when there is nothing to replace.
    let text = match std::str::from_utf8(raw) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(raw),
    };
    if raw.contains(&b'&') {
        Cow::Owned(decode_entities(&text))
    } else {
        text
    }
}

/// Decode `&amp; &lt; &gt; &quot; &apos; &#NN; &#xHH;`. Anything else that
/// starts with `&` (an unknown name, a number that is not a character, a
/// missing `;`) is kept as written, as browsers keep it.
fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        match decode_reference(rest) {
            Some((ch, len)) => {
                out.push(ch);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The longest reference decoded, `;` included: `&#x10FFFF;` and `&#1114111;`
/// are 10 bytes. Looking for the `;` no further than this keeps decoding
/// linear: a value of a million `&` without `;` must not cost a million
/// scans to its end. (The price: a number padded with zeros past this length,
/// `&#x00000041;`, is left as written; browsers would decode it, pages do not
/// write it.)
const MAX_REFERENCE_LEN: usize = 10;

/// `text` starts with `&`: the character the reference names and the
/// reference's length in bytes, or `None` when it is not one we decode.
fn decode_reference(text: &str) -> Option<(char, usize)> {
    let window = &text.as_bytes()[..text.len().min(MAX_REFERENCE_LEN)];
    let semicolon = window.iter().position(|&b| b == b';')?;
    // The window holds only ASCII up to the `;` if the name is one we know;
    // `get` (not indexing) so a multi-byte character there is just "unknown".
    let name = text.get(1..semicolon)?;
    let ch = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        _ => {
            let number = name.strip_prefix('#')?;
            let (digits, radix) = match number.strip_prefix(['x', 'X']) {
                Some(hex) => (hex, 16),
                None => (number, 10),
            };
            // `from_str_radix` would also accept a leading `+`; a reference
            // is digits only.
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                return None;
            }
            // The window bounds the digits, so this cannot overflow a `u32`;
            // `from_u32` refuses surrogates and values past U+10FFFF, and NUL
            // is not a character a URL should get from a reference.
            let code = u32::from_str_radix(digits, radix).ok()?;
            char::from_u32(code).filter(|&c| c != '\0')?
        }
    };
    Some((ch, semicolon + 1))
}

/// Every `href` value in `body`, decoded, in document order (duplicates kept).
pub fn extract_hrefs(body: &[u8]) -> Vec<String> {
    raw_hrefs(body)
        .map(|(_, raw)| decode_value(raw).into_owned())
        .collect()
}

/// The page's `<base href>`, if it has one.
pub fn find_base(body: &[u8]) -> Option<String> {
    let (_, raw) = base_tags(body).next()?;
    Some(decode_value(raw).into_owned())
}

/// Every `<base href>` tag of `body`, in document order: where its value
/// starts, and its raw bytes. Most pages have none.
fn base_tags(body: &[u8]) -> impl Iterator<Item = (usize, &[u8])> + '_ {
    // Find the first `<base` with the fast search, and only from there run
    // the full pattern, unanchored: each search starts where the last match
    // ended, so it makes one pass whatever the page holds. (Tried anchored
    // at every `<base`, `[^>]*?` would let each attempt run on to the next
    // `>`, and a page of `<base` without `>` would be read again from each.)
    let mut hrefs = raw_hrefs(body);
    hrefs.by_ref().for_each(drop);
    let first = hrefs.first_base().unwrap_or(body.len());
    base_tags_from(body, first)
}

/// The `<base href>` tags of `body` from `first`, the first `<base` in it.
fn base_tags_from(body: &[u8], first: usize) -> impl Iterator<Item = (usize, &[u8])> + '_ {
    base_regex()
        .captures_iter(&body[first..])
        .filter_map(|captures| captures.get(1))
        .map(move |value| (first + value.start(), value.as_bytes()))
}

/// A link found on a page: an absolute URL as text, exactly as the `url`
/// crate writes it (`Url::as_str`), not yet parsed into a [`Url`].
///
/// Most links a crawl finds are already known to it (every page links to
/// the same navigation), and for those the text is all the crawler needs:
/// it is what the seen-set is checked against. Parsing a link into a `Url`
/// is the expensive step of resolving it (the host is parsed and checked,
/// the path re-encoded), so it is done only for a link new to the crawl,
/// with [`Link::to_url`]. The common shapes of link (`page.html`,
/// `../std/index.html`, `?page=2`, `https://example.com/a?b`) are resolved
/// to text by hand, which is a few string operations; anything else goes
/// through `Url::join`, and then the `Url` is kept, so no link is parsed
/// twice.
pub struct Link(LinkKind);

enum LinkKind {
    /// Resolved by `Url::join`. (Boxed: a `Url` is 88 bytes, twice the
    /// other kinds, and most links are the other kinds.)
    Parsed(Box<Url>),
    /// Resolved by hand ([`resolve_plain`]), as [`extract_links`] gives it:
    /// its text is `page.text[start..end]`, and the link is on the site of
    /// `page.bases[base]` (the same scheme, user, host and port, and a new
    /// path and query from `path_start`). Every link of a page shares the
    /// one buffer, so finding a link allocates nothing of its own.
    InPage {
        page: Arc<PageTexts>,
        start: usize,
        end: usize,
        path_start: usize,
        base: usize,
    },
    /// Resolved by hand, with a text of its own: what a clone of an
    /// `InPage` link becomes (see [`Link`]'s `Clone`). `path_start` is
    /// where the path starts in `text`.
    OnBase {
        text: String,
        base: Arc<Url>,
        path_start: usize,
    },
}

/// The text of every link of one page that was resolved by hand, one after
/// another, and the sites they are on: what a page's [`LinkKind::InPage`]
/// links share.
struct PageTexts {
    text: String,
    bases: Vec<Arc<Url>>,
}

impl Link {
    /// The URL's text, as `Url::as_str` would give it.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            LinkKind::Parsed(url) => url.as_str(),
            LinkKind::InPage {
                page, start, end, ..
            } => &page.text[*start..*end],
            LinkKind::OnBase { text, .. } => text,
        }
    }

    /// A `Url` with the link's scheme, user, host and port: the link's own
    /// for a parsed one, its base for one resolved by hand.
    fn site(&self) -> &Url {
        match &self.0 {
            LinkKind::Parsed(url) => url,
            LinkKind::InPage { page, base, .. } => &page.bases[*base],
            LinkKind::OnBase { base, .. } => base,
        }
    }

    /// The scheme, lower case (`http`).
    pub fn scheme(&self) -> &str {
        self.site().scheme()
    }

    /// The host as `Url::host_str` gives it.
    pub fn host_str(&self) -> Option<&str> {
        self.site().host_str()
    }

    /// The link's [`Fingerprint`]: what a seen-set holds of it.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(self.as_str())
    }

    /// The link as a [`Url`], to be fetched: `Url::parse(link.as_str())`.
    ///
    /// A link resolved by hand is made from its base with the new path and
    /// query put in, which cannot fail (a `Url`'s setters take any text), so
    /// this returns a `Url`, not a `Result`. The tests check, for every link of
    /// the generated site and the corpus of real pages, that it is the URL
    /// the text parses to.
    pub fn to_url(&self) -> Url {
        let (base, path_and_query) = match &self.0 {
            LinkKind::Parsed(url) => return Url::clone(url),
            LinkKind::InPage {
                page,
                end,
                path_start,
                base,
                ..
            } => (&*page.bases[*base], &page.text[*path_start..*end]),
            LinkKind::OnBase {
                text,
                base,
                path_start,
            } => (&**base, &text[*path_start..]),
        };
        let (path, query) = match path_and_query.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (path_and_query, None),
        };
        let mut url = Url::clone(base);
        url.set_path(path);
        url.set_query(query);
        url.set_fragment(None);
        url
    }
}

/// A clone has its own text: a link a crawler keeps (in its seen-set, say)
/// then holds its URL only, not the text of every link of its page.
impl Clone for Link {
    fn clone(&self) -> Self {
        Link(match &self.0 {
            LinkKind::Parsed(url) => LinkKind::Parsed(url.clone()),
            LinkKind::InPage {
                page,
                start,
                end,
                path_start,
                base,
            } => LinkKind::OnBase {
                text: page.text[*start..*end].to_owned(),
                base: Arc::clone(&page.bases[*base]),
                path_start: path_start - start,
            },
            LinkKind::OnBase {
                text,
                base,
                path_start,
            } => LinkKind::OnBase {
                text: text.clone(),
                base: Arc::clone(base),
                path_start: *path_start,
            },
        })
    }
}

/// Shows the URL (a page's shared buffer is not the link's to show).
impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Link").field(&self.as_str()).finish()
    }
}

impl From<Url> for Link {
    fn from(url: Url) -> Self {
        Link(LinkKind::Parsed(Box::new(url)))
    }
}

/// Two links are equal when their text is: the text is the URL.
impl PartialEq for Link {
    fn eq(&self, other: &Link) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Link {}

/// Hashed as its text, so a set of links is a set of URLs.
impl std::hash::Hash for Link {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl std::fmt::Display for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Link> for String {
    fn from(link: Link) -> String {
        match link.0 {
            LinkKind::Parsed(url) => (*url).into(),
            LinkKind::OnBase { text, .. } => text,
            LinkKind::InPage {
                page, start, end, ..
            } => page.text[start..end].to_owned(),
        }
    }
}

/// A URL's fingerprint: 128 bits that stand for its text in a crawl's
/// seen-set.
///
/// A seen-set is asked about every link of every page, and most of the
/// answers are "seen": to say so of a URL kept as text, the set hashes the
/// link, finds the entry, follows it to the text kept elsewhere in memory,
/// and compares the two. On a large crawl those entries are scattered over
/// megabytes that the pages read in between have pushed out of the CPU's
/// caches, and the last two steps are each a wait for main memory. A
/// fingerprint is kept in the set's own table, so one hash and one entry
/// answer; and a known URL costs its 16 bytes and their share of the
/// table (35 bytes a URL, measured over a million) instead of its text
/// (some 60 to 100 bytes), the pointer to it and its share. Real crawlers
/// have kept their "URL seen" test this way since Mercator (Heydon and
/// Najork, 1999).
///
/// The price is that two URLs could share a fingerprint, and the second
/// would then be taken for seen. The bits come from SipHash, `std`'s own
/// hash for `HashMap`, under a key drawn at random once per process, so a
/// page cannot choose URLs that collide; among a billion URLs, the chance
/// that any two share all 128 bits is below one in 10²⁰ — far less likely
/// than a bit flipped in the machine's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(u64, u64);

impl Fingerprint {
    /// The fingerprint of a URL's text, as `Url::as_str` writes it.
    pub fn of(text: &str) -> Fingerprint {
        static KEY: OnceLock<RandomState> = OnceLock::new();
        let mut hasher = KEY.get_or_init(RandomState::new).build_hasher();
        hasher.write(text.as_bytes());
        // One pass over the text, two 64-bit results: SipHash's state
        // after the text (256 bits) is finished once as it is, and once
        // more after a further byte. Two separate hashes would read the
        // text twice.
        let first = hasher.finish();
        hasher.write_u8(0xff);
        Fingerprint(first, hasher.finish())
    }
}

impl From<&Url> for Fingerprint {
    fn from(url: &Url) -> Fingerprint {
        Fingerprint::of(url.as_str())
    }
}

/// A byte a link's path may hold and still be resolved by hand: ASCII
/// letters and digits, `-`, `.`, `_`, `~` and `/`. None of them needs
/// percent-encoding in a path or means anything to the URL parser but `/`
/// (a segment break) and `.` (in a `.` or `..` segment). What the others
/// would bring (`%`-escapes, `:` that may start a scheme, `?` a query, `\`
/// that a browser reads as `/`, `&` a character reference, anything not
/// ASCII) is left to `Url::join`.
const fn is_plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/')
}

/// [`is_plain`] for each of the 256 bytes: one load a byte.
static PLAIN: [bool; 256] = byte_table!(is_plain);

/// What [`resolve_plain`] needs of a base, worked out once per page.
struct PlainBase<'a> {
    /// `scheme://user:password@host:port`, as the base writes it; `None`
    /// when the base is not `http` or `https` (nothing is resolved by hand).
    before_path: Option<&'a str>,
    /// The base's path, for a link that is only a query.
    path: &'a str,
    /// The base's path without its last segment (`/a/b` gives `/a`, `/`
    /// gives nothing), where a relative path starts from. `None` when the
    /// path has a segment like a Windows drive letter (`c:`, `c|`): the
    /// `url` crate never lets `..` remove one, whatever the scheme, so such
    /// a base is left to it.
    dir: Option<&'a str>,
}

impl<'a> PlainBase<'a> {
    fn new(base: &'a Url) -> Self {
        if !matches!(base.scheme(), "http" | "https") {
            return PlainBase {
                before_path: None,
                path: "",
                dir: None,
            };
        }
        // An `http` URL's path always starts with `/`.
        let path = base.path();
        let dir = &path[..path.rfind('/').unwrap_or(0)];
        PlainBase {
            before_path: Some(&base[..url::Position::BeforePath]),
            path,
            dir: Some(dir).filter(|_| !path.bytes().any(|b| b == b':' || b == b'|')),
        }
    }
}

/// A byte a link's query may hold and still be resolved by hand: any
/// printable ASCII byte but the ones the URL parser would percent-encode in
/// a query (`"`, `'`, `<`, `>`) or cut it at (`#`), and `\`.
const fn is_query_plain(b: u8) -> bool {
    matches!(b, 0x21..=0x7e) && !matches!(b, b'"' | b'#' | b'\'' | b'<' | b'>' | b'\\')
}

/// [`is_query_plain`] for each of the 256 bytes.
static QUERY_PLAIN: [bool; 256] = byte_table!(is_query_plain);

/// A link [`resolve_plain`] resolved: where its text starts in the buffer
/// (it runs to the buffer's end), where its path starts, and its site
/// (`scheme://host:port`) when that is not the base's.
struct Resolved<'v> {
    start: usize,
    path_start: usize,
    site: Option<&'v str>,
}

/// `value` resolved against `base` by hand and written to the end of
/// `text`, when both are simple enough for the URL Standard's rules to be a
/// few lines; `None` (with nothing written) leaves it to `Url::join`. The
/// base must be `http` or `https`. The value is a path of
/// [`is_plain`] bytes, with or without a query of [`is_query_plain`] bytes,
/// or a query alone; the path may follow `http://` or `https://` and a
/// site, and otherwise must not start with `//` (that would name a host).
///
/// The rules, for such a value: a site replaces the base's, and then a
/// missing path is `/`; a path that starts with `/` replaces the base's
/// path; any other replaces the base's last segment; a query alone keeps
/// the base's path. Then, segment by segment, `.` is dropped and `..` drops
/// the segment before it (never past the root); either of them last leaves
/// the path ending in `/`. The base's query goes; the value's is kept as it
/// is. Whether a site is written as `Url` writes it (lower case, no default
/// port) is for the caller to check ([`PageLinks::site_base`]).
fn resolve_plain<'v>(
    base: &PlainBase<'_>,
    value: &'v str,
    text: &mut String,
) -> Option<Resolved<'v>> {
    let before_path = base.before_path?;
    // The site, if the value names one: up to the `/` or `?` after it.
    let (site, rest) = match value
        .strip_prefix("http://")
        .or_else(|| value.strip_prefix("https://"))
    {
        Some(after_scheme) => {
            let authority = after_scheme
                .bytes()
                .position(|b| b == b'/' || b == b'?')
                .unwrap_or(after_scheme.len());
            let (site, rest) = value.split_at(value.len() - after_scheme.len() + authority);
            (Some(site), rest)
        }
        None if value.starts_with("//") => return None,
        None => (None, value),
    };
    // One pass over the path: where it ends, whether every byte is plain,
    // and whether a segment starts with `.` (only such a segment can be `.`
    // or `..`; most paths have none, and are added whole). Values are tens
    // of bytes, and resolving is done for every new value of a page, so
    // this is one loop where separate searches would read the value four
    // times.
    let bytes = rest.as_bytes();
    let mut end = 0;
    let mut previous = b'/';
    let mut dot_segment = false;
    while let Some(&b) = bytes.get(end) {
        if b == b'?' {
            break;
        }
        if !PLAIN[usize::from(b)] {
            return None;
        }
        dot_segment |= b == b'.' && previous == b'/';
        previous = b;
        end += 1;
    }
    // (A `#` here came from a character reference, `&#35;`, and starts a
    // fragment after all: neither table lets it through.)
    let (path, query) = rest.split_at(end);
    let query = query.strip_prefix('?');
    if !query.is_none_or(|query| query.bytes().all(|b| QUERY_PLAIN[usize::from(b)])) {
        return None;
    }
    let path = match path {
        "" if site.is_some() => "/",
        path => path,
    };
    // What may still refuse the value is decided before anything is written.
    let dir = match path.as_bytes().first() {
        Some(b'/') => None,
        Some(_) => Some(base.dir?),
        // A query alone (`?page=2`).
        None => {
            query?;
            None
        }
    };
    let start = text.len();
    text.push_str(site.unwrap_or(before_path));
    let path_start = text.len();
    if let Some(absolute) = path.strip_prefix('/') {
        push_segments(text, path_start, absolute, dot_segment);
    } else if let Some(dir) = dir {
        text.push_str(dir);
        push_segments(text, path_start, path, dot_segment);
    } else {
        text.push_str(base.path);
    }
    if let Some(query) = query {
        text.push('?');
        text.push_str(query);
    }
    Some(Resolved {
        start,
        path_start,
        site: site.filter(|&site| site != before_path),
    })
}

/// Append the path `segments` (no leading `/`) to `text`, whose path
/// starts at `path_start`, applying `.` and `..` as they come. Only a
/// segment that starts with `.` can be `.` or `..`: a path with none
/// (`dot_segment` false: `a/b/c.html`, most of them) is added whole.
fn push_segments(text: &mut String, path_start: usize, segments: &str, dot_segment: bool) {
    if !dot_segment {
        text.push('/');
        text.push_str(segments);
        return;
    }
    let mut rest = Some(segments);
    while let Some(segments) = rest {
        // Segments are a few bytes: a plain loop finds the `/` sooner than
        // a search built for long texts.
        let (segment, after) = match segments.bytes().position(|b| b == b'/') {
            Some(slash) => (&segments[..slash], Some(&segments[slash + 1..])),
            None => (segments, None),
        };
        rest = after;
        let last = rest.is_none();
        match segment {
            "." => {}
            ".." => {
                let parent = text[path_start..].rfind('/').unwrap_or(0);
                text.truncate(path_start + parent);
            }
            _ => {
                text.push('/');
                text.push_str(segment);
                continue;
            }
        }
        if last {
            text.push('/');
        }
    }
}

/// Every link of the page, resolved against its `<base href>` or `page_url`,
/// fragment dropped, distinct, in first-seen order. Values that do not parse
/// as URLs are dropped.
pub fn extract_links(body: &[u8], page_url: &Url) -> Vec<Link> {
    // Most pages have no `<base href>`, so the values are resolved against
    // the page as the search finds them: one pass, nothing kept but links.
    // The search notes the first `<base` on its way; a page that has one is
    // read again below, now that its base is known.
    let mut found = raw_hrefs(body);
    let mut links = PageLinks::new(page_url, body.len());
    for (_, raw) in found.by_ref() {
        links.add(raw);
    }
    let Some(first) = found.first_base() else {
        return links.finish();
    };
    let base_tags: Vec<(usize, &[u8])> = base_tags_from(body, first).collect();
    // The first `<base href>` sets the base; a relative one is itself
    // relative to the page. A base that does not parse, or cannot have
    // relative URLs joined to it (`mailto:x`), is ignored, as browsers ignore
    // it.
    let base = base_tags
        .first()
        .and_then(|&(_, raw)| page_url.join(&decode_value(raw)).ok())
        .filter(|base| !base.cannot_be_a_base());
    let mut links = PageLinks::new(base.as_ref().unwrap_or(page_url), body.len());
    // The search finds the `href` of a `<base>` tag too, but a base is where
    // links resolve from, not a link: those values are passed over. Both lists
    // are in document order, so one walk along `base_tags` does it.
    let mut next_base_tag = 0;
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
        links.add(raw);
    }
    links.finish()
}

/// The links of one page as they are found: [`extract_links`]' work.
struct PageLinks<'a> {
    /// Where the links resolve from.
    base: &'a Url,
    /// The same, as [`resolve_plain`] reads it.
    plain: PlainBase<'a>,
    /// The text of every link resolved by hand, one after another: one
    /// buffer for the page, where a `String` per link would be an
    /// allocation per link (and a free when the crawler is done with it).
    text: String,
    /// The sites of the links resolved by hand, each parsed once, for
    /// [`Link::to_url`] to build on: `base` (at `shared_base`, added when
    /// the first link needs it) and the other sites of absolute links.
    bases: Vec<Arc<Url>>,
    /// Where `base` is in `bases`, once it is there.
    shared_base: Option<usize>,
    /// The other sites absolute links were resolved by hand on, by where
    /// they are in `bases`: `None` for one not written as `Url` writes it.
    /// (A map, not a list: a hostile page may name a hundred thousand
    /// sites.)
    sites: HashMap<String, Option<usize>, PageHash>,
    /// The raw values resolved so far, fragment cut off.
    seen_values: HashSet<PageKey<'a>, PageHash>,
    /// The links, in the order found (repeats still in).
    found: Vec<Found>,
}

/// A link [`PageLinks`] found, before it is a [`Link`].
enum Found {
    /// `text[start..end]`, on the site of `bases[base]`.
    InPage {
        start: usize,
        end: usize,
        path_start: usize,
        base: usize,
    },
    Parsed(Box<Url>),
}

impl<'a> PageLinks<'a> {
    fn new(base: &'a Url, body_len: usize) -> Self {
        PageLinks {
            base,
            plain: PlainBase::new(base),
            // Documentation pages have a new link every kilobyte or less,
            // some 60 bytes of text each: an eighth of the body holds the
            // texts, and room for a link per 512 bytes the list, without
            // growing either (growing them copies what is there, which
            // showed in `bench-links`; growing from nothing on every page
            // showed in the crawl).
            text: String::with_capacity((body_len / 8).min(1 << 20)),
            bases: Vec::new(),
            shared_base: None,
            sites: HashMap::with_hasher(PageHash::new()),
            // Sized for a link every few hundred bytes, so that a page of
            // links does not rehash its set again and again as it grows.
            seen_values: HashSet::with_capacity_and_hasher(
                (body_len / 512).min(1 << 16),
                PageHash::new(),
            ),
            found: Vec::with_capacity((body_len / 512).min(1 << 13)),
        }
    }

    /// Resolve one raw value, unless the page had it already.
    fn add(&mut self, raw: &'a [u8]) {
        // Resolving is the expensive step, and documentation pages repeat
        // the same values (navigation, `#top`, `page.html#item`), so each
        // raw value, fragment cut off, is resolved once. Different values
        // can still name one URL (`a`, `./a`, `a#top`): `finish` keeps the
        // first of each.
        let raw = without_fragment(raw);
        if !self.seen_values.insert(PageKey(raw)) {
            return;
        }
        let base = self.base;
        // An empty value (`href=""` is no match, but `href="#top"` is, and
        // its fragment is gone) is the base itself, fragment dropped (a
        // `<base href>` may have one), with no parsing needed — unless the
        // base is a `mailto:` or the like, where `join` refuses it.
        if raw.is_empty() {
            if !base.cannot_be_a_base() {
                let mut url = base.clone();
                url.set_fragment(None);
                self.found.push(Found::Parsed(Box::new(url)));
            }
            return;
        }
        let value = decode_value(raw);
        if let Some(resolved) = resolve_plain(&self.plain, &value, &mut self.text) {
            if let Some(base) = self.site_base(resolved.site) {
                self.found.push(Found::InPage {
                    start: resolved.start,
                    end: self.text.len(),
                    path_start: resolved.path_start,
                    base,
                });
                return;
            }
            // A site not written as `Url` writes it: its text goes, and
            // `join` has the value.
            self.text.truncate(resolved.start);
        }
        if let Ok(mut url) = base.join(&value) {
            url.set_fragment(None);
            self.found.push(Found::Parsed(Box::new(url)));
        }
    }

    /// Where in `bases` the `Url` a link resolved by hand is made from
    /// ([`Link::to_url`]): the page's base, or for an absolute link to
    /// another site, that site (`http://host:port/`) parsed once per page.
    /// `None` when the site is not written exactly as `Url` would write it
    /// (`http://Host:80`): the link is then left to `Url::join`, which knows
    /// every way to write one.
    fn site_base(&mut self, site: Option<&str>) -> Option<usize> {
        let Some(site) = site else {
            if self.shared_base.is_none() {
                self.bases.push(Arc::new(self.base.clone()));
                self.shared_base = Some(self.bases.len() - 1);
            }
            return self.shared_base;
        };
        if let Some(&parsed) = self.sites.get(site) {
            return parsed;
        }
        let parsed = Url::parse(site)
            .ok()
            .filter(|url| &url[..url::Position::BeforePath] == site && url.path() == "/")
            .map(|url| {
                self.bases.push(Arc::new(url));
                self.bases.len() - 1
            });
        self.sites.insert(site.to_owned(), parsed);
        parsed
    }

    /// The text of a link found.
    fn text_of<'t>(text: &'t str, found: &'t Found) -> &'t str {
        match found {
            Found::InPage { start, end, .. } => &text[*start..*end],
            Found::Parsed(url) => url.as_str(),
        }
    }

    /// The links, each URL once, in first-seen order.
    fn finish(self) -> Vec<Link> {
        let PageLinks {
            text,
            bases,
            mut found,
            ..
        } = self;
        // A page with a few links compares them pairwise: fewer steps than
        // hashing each, and no set to allocate. The first `kept` are the
        // distinct ones so far, in order; a link not among them is swapped
        // to the end of them (what it swaps with is a repeat, already
        // judged).
        if found.len() <= FEW {
            let mut kept = 0;
            for i in 0..found.len() {
                let this = Self::text_of(&text, &found[i]);
                if !found[..kept]
                    .iter()
                    .any(|other| Self::text_of(&text, other) == this)
                {
                    found.swap(kept, i);
                    kept += 1;
                }
            }
            found.truncate(kept);
        } else {
            // Compare the texts in place rather than copying any into a set.
            let keep: Vec<bool> = {
                let mut seen = HashSet::with_capacity_and_hasher(found.len(), PageHash::new());
                found
                    .iter()
                    .map(|found| seen.insert(PageKey(Self::text_of(&text, found).as_bytes())))
                    .collect()
            };
            let mut keep = keep.into_iter();
            found.retain(|_| keep.next().unwrap_or(false));
        }
        let page = Arc::new(PageTexts { text, bases });
        found
            .into_iter()
            .map(|found| {
                Link(match found {
                    Found::InPage {
                        start,
                        end,
                        path_start,
                        base,
                    } => LinkKind::InPage {
                        page: Arc::clone(&page),
                        start,
                        end,
                        path_start,
                        base,
                    },
                    Found::Parsed(url) => LinkKind::Parsed(url),
                })
            })
            .collect()
    }
}

/// Up to how many links [`PageLinks::finish`] compares pairwise.
const FEW: usize = 16;

/// The hash of the sets [`extract_links`] keeps for one page.
///
/// `std`'s default, SipHash-1-3, is built to resist *hash flooding*: keys
/// chosen to collide, so that every insert walks a long chain. Its price is
/// a few rounds of mixing per 8 bytes, and on a page of short values that
/// was a tenth of link finding. The keys here come from the page, so they
/// still need a key the page cannot guess; but a page's sets are bounded by
/// the body limit and live for one call, so a cheaper mix does: each 16
/// bytes are folded into the state with one 64×64→128-bit multiply (the
/// "folded multiply" of wyhash and foldhash), both of whose halves carry a
/// key drawn once per process from `std`'s own random source. The crawl's
/// seen-set, which lives for the whole crawl and grows with what every page
/// sends, keeps SipHash.
#[derive(Clone, Copy)]
struct PageHash {
    keys: [u64; 2],
}

impl PageHash {
    fn new() -> Self {
        static KEYS: OnceLock<[u64; 2]> = OnceLock::new();
        let keys = *KEYS.get_or_init(|| {
            use std::hash::BuildHasher as _;
            // `RandomState` is seeded from the operating system's random
            // source; hashing a constant with it draws a random `u64`.
            let random = std::collections::hash_map::RandomState::new();
            [
                random.hash_one(0x6c69_6e6b_u64),
                random.hash_one(0x7061_6765_u64),
            ]
        });
        PageHash { keys }
    }
}

impl std::hash::BuildHasher for PageHash {
    type Hasher = PageHasher;

    fn build_hasher(&self) -> PageHasher {
        PageHasher {
            state: self.keys[0],
            key: self.keys[1],
        }
    }
}

/// One hash being computed: see [`PageHash`].
struct PageHasher {
    state: u64,
    key: u64,
}

/// An odd constant with bits spread evenly (the fractional part of π).
const MULTIPLIER: u64 = 0x243f_6a88_85a3_08d3;

/// The 128-bit product's halves, xor-ed: every input bit moves many output
/// bits, which one 64-bit multiply alone does not do for the high bits.
fn folded_multiply(a: u64, b: u64) -> u64 {
    let full = u128::from(a) * u128::from(b);
    (full as u64) ^ ((full >> 64) as u64)
}

/// The 8 bytes of `bytes` from `at`, as a number.
fn word_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

impl std::hash::Hasher for PageHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // The length first, so that `ab` and `ab\0` (padded alike) differ,
        // and so do two values that share the words read below.
        let len = bytes.len();
        let mut state = self.state ^ len as u64;
        let mut mix = |a: u64, b: u64| state = folded_multiply(a ^ state, b ^ self.key);
        if len <= 8 {
            let mut word = [0; 8];
            word[..len].copy_from_slice(bytes);
            mix(u64::from_le_bytes(word), 0);
        } else {
            // Each 16 bytes are one multiply; the last ones, read from the
            // end, may overlap the ones before, which the length makes
            // harmless. A 30-byte value costs two multiplies, not four.
            let mut at = 0;
            while len - at > 16 {
                mix(word_at(bytes, at), word_at(bytes, at + 8));
                at += 16;
            }
            mix(word_at(bytes, len.max(16) - 16), word_at(bytes, len - 8));
        }
        self.state = state;
    }

    fn write_usize(&mut self, n: usize) {
        self.state = folded_multiply(self.state ^ n as u64, self.key ^ MULTIPLIER);
    }

    fn write_u8(&mut self, byte: u8) {
        self.state = folded_multiply(self.state ^ u64::from(byte), self.key ^ MULTIPLIER);
    }

    fn finish(&self) -> u64 {
        // Every `write` ends in a multiply, which spreads its input over all
        // 64 bits: nothing more to mix.
        self.state
    }
}

/// A page's value or link text as a key of its sets: hashed with one
/// `write` of its bytes. (A `&[u8]` or `&str` would also write its length
/// or an end marker, one more multiply each for what `write` already mixes
/// in.)
#[derive(PartialEq, Eq)]
struct PageKey<'a>(&'a [u8]);

impl std::hash::Hash for PageKey<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write(self.0);
    }
}

/// `raw` up to its fragment: everything from the first `#` on, except a `#`
/// right after `&`, which opens a character reference (`&#35;`) and is no
/// fragment. No reference we decode has a `#` anywhere else, and `#` is never
/// part of a multi-byte UTF-8 sequence, so decoding and resolving the cut value
/// gives the same URL as the whole value with its fragment dropped.
fn without_fragment(raw: &[u8]) -> &[u8] {
    let mut from = 0;
    while let Some(found) = raw[from..].iter().position(|&b| b == b'#') {
        let hash = from + found;
        if hash == 0 || raw[hash - 1] != b'&' {
            return &raw[..hash];
        }
        from = hash + 1;
    }
    raw
}

/// The crawl's roots: each normalized with [`normalize_root`], duplicates
/// dropped (a root given twice is fetched once), order kept. Every lesson
/// starts its crawler with this, so it lives here once.
pub fn normalize_roots(roots: &[String]) -> anyhow::Result<Vec<Url>> {
    let mut normalized: Vec<Url> = Vec::new();
    for root in roots {
        let url = normalize_root(root)
            .map_err(anyhow::Error::msg)
            .map_err(|e| e.context(format!("bad root URL {root:?}")))?;
        if !normalized.contains(&url) {
            normalized.push(url);
        }
    }
    Ok(normalized)
}

/// A root from the command line: `http://` added when it has no scheme,
/// fragment dropped. An error message when it is not a URL.
pub fn normalize_root(root: &str) -> Result<Url, String> {
    let root = root.trim();
    let text = if has_scheme(root) {
        Cow::Borrowed(root)
    } else {
        Cow::Owned(format!("http://{root}"))
    };
    // `{root:?}` quotes the value and escapes control characters, so the
    // message stays on one line whatever was typed.
    let mut url = Url::parse(&text).map_err(|e| format!("invalid root URL {root:?}: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "invalid root URL {root:?}: scheme {} is not http",
            url.scheme()
        ));
    }
    url.set_fragment(None);
    Ok(url)
}

/// Does `root` start with a scheme? `localhost:3000/` has the shape of
/// `scheme:path` (and `Url::parse` would read it so), so a `name:` followed by
/// digits only is taken as a host and port instead.
fn has_scheme(root: &str) -> bool {
    let Some((scheme, rest)) = root.split_once(':') else {
        return false;
    };
    let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let port = rest.split(['/', '?', '#']).next().unwrap_or("");
    let is_port = !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    is_scheme && !is_port
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
///
/// The policy judges links and redirect targets. Roots are not passed through
/// it: the spec exempts them from `--exclude` (a root is fetched because it was
/// asked for), and it is the crawler that knows which URLs are roots.
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
        self.check_parts(url.scheme(), url.host_str(), url.as_str())
    }

    /// `Ok(())` when `link` is to be followed: the same rules as
    /// [`UrlPolicy::check`], read from the link without parsing it.
    pub fn check_link(&self, link: &Link) -> Result<(), Skip> {
        self.check_parts(link.scheme(), link.host_str(), link.as_str())
    }

    fn check_parts(&self, scheme: &str, host: Option<&str>, text: &str) -> Result<(), Skip> {
        if scheme != "http" && scheme != "https" {
            return Err(Skip::Scheme(scheme.to_string()));
        }
        // `Url` has already lower-cased the host, turned an IDN into its
        // `xn--` form and written IPv4 in dotted decimal, so plain string
        // comparison is comparison of hosts. The port plays no part: any port
        // of a root's host is allowed.
        let host = host.unwrap_or("");
        if !self
            .root_hosts
            .iter()
            .any(|root| hosts_match(host, root, self.lenient))
        {
            return Err(Skip::Host(host.to_string()));
        }
        if let Some(exclude) = &self.exclude {
            if exclude.is_match(text) {
                return Err(Skip::Excluded);
            }
        }
        Ok(())
    }
}

/// Is `host` the root's host, under strict or lenient matching?
fn hosts_match(host: &str, root: &str, lenient: bool) -> bool {
    // `example.com.` (fully qualified) is the same host as `example.com`.
    let host = host.strip_suffix('.').unwrap_or(host);
    let root = root.strip_suffix('.').unwrap_or(root);
    if host == root {
        return true;
    }
    // An address has no `www.` and no "last two labels": `10.0.0.1` and
    // `192.168.0.1` share `0.1`, but are different machines.
    if is_ip(host) || is_ip(root) {
        return false;
    }
    if lenient {
        // Compared as labels, not glued together as the 500-lines crawler
        // does (`''.join(host.split('.')[-2:])`), where `a.bc` and `ab.c`
        // would both become `abc`.
        host.rsplit('.').take(2).eq(root.rsplit('.').take(2))
    } else {
        strip_www(host) == strip_www(root)
    }
}

fn strip_www(host: &str) -> &str {
    host.strip_prefix("www.").unwrap_or(host)
}

/// `Url` writes an IPv6 host in brackets and an IPv4 host in dotted decimal.
fn is_ip(host: &str) -> bool {
    host.starts_with('[') || host.parse::<Ipv4Addr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    /// The links of `body` on `http://example.com/dir/page.html`, as strings.
    fn links(body: &str) -> Vec<String> {
        links_of(body.as_bytes(), "http://example.com/dir/page.html")
    }

    fn links_of(body: &[u8], page: &str) -> Vec<String> {
        extract_links(body, &url(page))
            .into_iter()
            .map(String::from)
            .collect()
    }

    fn policy(roots: &[&str], lenient: bool) -> UrlPolicy {
        let roots: Vec<Url> = roots.iter().map(|r| url(r)).collect();
        UrlPolicy::new(&roots, None, lenient)
    }

    // --- extract_hrefs: what the regex finds ---

    #[test]
    fn every_quoting_style_is_found() {
        let body = br#"<a href="double">1</a> <a href='single'>2</a> <a href=bare>3</a>"#;
        assert_eq!(extract_hrefs(body), ["double", "single", "bare"]);
    }

    #[test]
    fn href_matches_in_any_case_with_spaces_around_equals() {
        let body = b"<A HREF=\"/a\"> <a Href = '/b'> <a href\n=\n/c> <a hReF\t=\t\"/d\">";
        assert_eq!(extract_hrefs(body), ["/a", "/b", "/c", "/d"]);
    }

    #[test]
    fn a_value_ends_at_whitespace_quotes_or_angle_brackets() {
        let body = b"<a href=/a b> <a href=/c>d</a> <a href=\"/e'f\"> <a href=/g<h>";
        assert_eq!(extract_hrefs(body), ["/a", "/c", "/e", "/g"]);
    }

    #[test]
    fn src_is_not_followed() {
        let body = br#"<img src="/img.png"><script src=/app.js></script><a href="/x">"#;
        assert_eq!(extract_hrefs(body), ["/x"]);
    }

    #[test]
    fn an_empty_value_is_not_a_link() {
        assert!(extract_hrefs(br#"<a href="">x</a> <a href=>y</a>"#).is_empty());
    }

    #[test]
    fn duplicates_are_kept_in_document_order() {
        let body = br#"<a href="/b"> <a href="/a"> <a href="/b">"#;
        assert_eq!(extract_hrefs(body), ["/b", "/a", "/b"]);
    }

    #[test]
    fn character_references_are_decoded() {
        let body =
            br#"<a href="/s?a=1&amp;b=2&lt;&gt;&quot;&apos;"> <a href="/&#65;&#x42;&#X43;">"#;
        assert_eq!(extract_hrefs(body), ["/s?a=1&b=2<>\"'", "/ABC"]);
    }

    #[test]
    fn references_that_are_not_characters_are_kept_as_written() {
        for (value, expected) in [
            ("/a&b", "/a&b"),                                   // a bare `&`
            ("/a&amp", "/a&amp"),                               // no `;`
            ("/a&nbsp;", "/a&nbsp;"),                           // a name we do not decode
            ("/a&#;", "/a&#;"),                                 // no digits
            ("/a&#x;", "/a&#x;"),                               // no hex digits
            ("/a&#+65;", "/a&#+65;"),                           // a sign is not a digit
            ("/a&#xD800;", "/a&#xD800;"),                       // a surrogate
            ("/a&#x110000;", "/a&#x110000;"),                   // past U+10FFFF
            ("/a&#99999999999;", "/a&#99999999999;"),           // would overflow a u32
            ("/a&#0;", "/a&#0;"),                               // NUL
            ("/a&&amp;", "/a&&"),                               // a bare `&` before a real one
            ("/&#x1F600;", "/\u{1F600}"),                       // beyond the BMP
            ("/&#x10FFFF;&#1114111;", "/\u{10FFFF}\u{10FFFF}"), // the longest forms
            ("/&#x00000041;", "/&#x00000041;"),                 // longer than any reference
        ] {
            let body = format!("<a href=\"{value}\">");
            assert_eq!(extract_hrefs(body.as_bytes()), [expected], "{value}");
        }
    }

    #[test]
    fn many_near_misses_are_one_pass() {
        for unit in [
            &b"href "[..],
            b"href=> ",
            b"href=' ",
            b"hrefhref",
            b"HREF\t=\n\"<",
        ] {
            let body = unit.repeat(20_000);
            assert!(extract_hrefs(&body).is_empty(), "{unit:?}");
        }
        let body = b"href=\"".repeat(20_000);
        assert_eq!(extract_hrefs(&body).len(), 10_000);
    }

    #[test]
    fn many_ampersands_without_semicolons_decode_quickly() {
        // Quadratic decoding (a scan for `;` from every `&`) would take minutes
        // here; linear takes milliseconds.
        let mut body = b"<a href=/".to_vec();
        body.extend(std::iter::repeat_n(b'&', 200_000));
        let hrefs = extract_hrefs(&body);
        assert_eq!(hrefs.len(), 1);
        assert_eq!(hrefs[0].len(), 200_001);
    }

    #[test]
    fn bytes_that_are_not_utf8_do_not_break_link_finding() {
        let mut body = b"\xff\xfe<p>caf\xe9 \x80</p><a href=\"/one\">\xc3(</a>".to_vec();
        body.extend_from_slice(b"<a href=/two>\xe9\xe9</a>\xff");
        assert_eq!(extract_hrefs(&body), ["/one", "/two"]);
    }

    #[test]
    fn bytes_that_are_not_utf8_inside_a_value_are_decoded_lossily() {
        assert_eq!(
            extract_hrefs(b"<a href=/caf\xe9.html>"),
            ["/caf\u{FFFD}.html"]
        );
        assert_eq!(
            links_of(b"<a href=/caf\xe9.html>", "http://h/"),
            ["http://h/caf%EF%BF%BD.html"]
        );
    }

    #[test]
    fn same_values_as_the_plain_regex() {
        // `raw_hrefs` never runs the pattern (it finds `href` and reads the
        // value by hand); the plain regex with its capture group is the
        // reference it must agree with. `tests/links_differential.rs` holds
        // the whole of link finding to `links::reference` on many more pages.
        let reference = compile(LINK_PATTERN);
        let mut tricky = Vec::new();
        for case in [
            &b"hrefhref=x"[..],
            b"href href=a HREF= 'b' href =\"c\"",
            b"href=\"\"href=y",
            b"href= =x href==y href=\x0B\x0C\t\r\n z",
            b"href='\"q' href=\"'r\" href=''s",
            b"data-href-x HrEf=/t data-href=/u",
            b"href=\xff\xfe/v\xe9 href",
            b"<a href=/w>x</a><a href=\"/x#y\">",
            b"href",
            b"",
        ] {
            tricky.extend_from_slice(case);
            tricky.push(b' ');
            let expected: Vec<&[u8]> = reference
                .captures_iter(case)
                .filter_map(|c| c.get(1))
                .map(|m| m.as_bytes())
                .collect();
            let found: Vec<&[u8]> = raw_hrefs(case).map(|(_, raw)| raw).collect();
            assert_eq!(found, expected, "{case:?}");
        }
        let expected: Vec<&[u8]> = reference
            .captures_iter(&tricky)
            .filter_map(|c| c.get(1))
            .map(|m| m.as_bytes())
            .collect();
        let found: Vec<&[u8]> = raw_hrefs(&tricky).map(|(_, raw)| raw).collect();
        assert_eq!(found, expected);
        assert_eq!(expected.len(), 13);
    }

    // --- find_base ---

    #[test]
    fn base_href_is_found_in_any_case_and_quoting() {
        assert_eq!(
            find_base(br#"<head><BASE HREF="http://b/x/"></head>"#).as_deref(),
            Some("http://b/x/")
        );
        assert_eq!(
            find_base(b"<base target=_blank href='/y/'>").as_deref(),
            Some("/y/")
        );
        assert_eq!(find_base(b"<base\nhref = /z/ >").as_deref(), Some("/z/"));
        assert_eq!(
            find_base(b"<base href=\"/a&amp;b/\">").as_deref(),
            Some("/a&b/")
        );
    }

    #[test]
    fn only_the_first_base_counts() {
        assert_eq!(
            find_base(b"<base href=/first/><base href=/second/>").as_deref(),
            Some("/first/")
        );
    }

    #[test]
    fn the_base_tag_is_found_among_other_uses_of_the_word() {
        let body = b"base <p>database</p><a href=/base/> <BASE\thref=/real/> <base href=/late/>";
        assert_eq!(find_base(body).as_deref(), Some("/real/"));
        assert_eq!(find_base(b"base").as_deref(), None);
    }

    #[test]
    fn many_base_tags_without_end_are_one_pass() {
        // Trying the pattern at each `<base` would scan to the end of the
        // page from each of them: 50,000 × 300 KB. One pass is 300 KB.
        let mut body = b"<base ".repeat(50_000);
        assert_eq!(find_base(&body), None);
        body.extend_from_slice(b"href=/found/");
        assert_eq!(find_base(&body).as_deref(), Some("/found/"));
    }

    #[test]
    fn many_sites_on_one_page_are_looked_up_not_searched() {
        // A list of the sites seen would be searched once per link: 50,000
        // links to 50,000 sites, a billion comparisons. A map is one each.
        let body: String = (0..50_000)
            .map(|i| format!("<a href=http://h{i}.example/p>"))
            .collect();
        let links = extract_links(body.as_bytes(), &url("http://example.com/"));
        assert_eq!(links.len(), 50_000);
        assert_eq!(links[49_999].as_str(), "http://h49999.example/p");
        assert_eq!(links[49_999].host_str(), Some("h49999.example"));
    }

    #[test]
    fn no_base_and_lookalikes() {
        assert_eq!(find_base(b"<a href=/x>"), None);
        assert_eq!(find_base(b"<basefont href=/x>"), None);
        assert_eq!(find_base(b"<base data-href=/x>"), None);
        assert_eq!(find_base(b"<base target=_top>"), None);
    }

    // --- extract_links: resolution ---

    #[test]
    fn relative_links_resolve_against_the_page() {
        assert_eq!(
            links(
                r#"<a href="x.html"> <a href="../up"> <a href="/abs"> <a href="?q=1"> <a href="//other.org/p"> <a href="http://third.net/">"#
            ),
            [
                "http://example.com/dir/x.html",
                "http://example.com/up",
                "http://example.com/abs",
                "http://example.com/dir/page.html?q=1",
                "http://other.org/p",
                "http://third.net/",
            ]
        );
    }

    #[test]
    fn scheme_relative_links_keep_the_page_scheme() {
        assert_eq!(
            links_of(b"<a href=//cdn.org/x>", "https://example.com/"),
            ["https://cdn.org/x"]
        );
    }

    /// `raw` on `base` by hand: the text, or `None` when it is left to `join`.
    fn by_hand(base: &str, raw: &str) -> Option<String> {
        let base = url(base);
        let mut links = PageLinks::new(&base, 0);
        links.add(raw.as_bytes());
        let link = links.finish().pop()?;
        match link.0 {
            LinkKind::InPage { .. } => Some(link.as_str().to_owned()),
            LinkKind::OnBase { .. } | LinkKind::Parsed(_) => None,
        }
    }

    #[test]
    fn plain_links_are_resolved_by_hand_as_join_would() {
        let base = "https://u:p@example.com:8443/a/b/c.html?q=1#f";
        for (raw, resolved) in [
            ("x.html", "https://u:p@example.com:8443/a/b/x.html"),
            ("../x", "https://u:p@example.com:8443/a/x"),
            ("../../../../x", "https://u:p@example.com:8443/x"),
            ("./d/./e/../f", "https://u:p@example.com:8443/a/b/d/f"),
            ("d/..", "https://u:p@example.com:8443/a/b/"),
            (".", "https://u:p@example.com:8443/a/b/"),
            ("..", "https://u:p@example.com:8443/a/"),
            ("d//e", "https://u:p@example.com:8443/a/b/d//e"),
            ("/", "https://u:p@example.com:8443/"),
            ("/x/../y/.", "https://u:p@example.com:8443/y/"),
            ("~me", "https://u:p@example.com:8443/a/b/~me"),
            // Segments that start with `.` but are not `.` or `..`.
            (
                ".well-known/x",
                "https://u:p@example.com:8443/a/b/.well-known/x",
            ),
            (
                "d/.e/..f/.../g.",
                "https://u:p@example.com:8443/a/b/d/.e/..f/.../g.",
            ),
            ("/d/.e", "https://u:p@example.com:8443/d/.e"),
            // A query, with or without a path, and one decoded first.
            ("x?y=1&z", "https://u:p@example.com:8443/a/b/x?y=1&z"),
            ("?page=2", "https://u:p@example.com:8443/a/b/c.html?page=2"),
            ("../?a=%20/?", "https://u:p@example.com:8443/a/?a=%20/?"),
            (
                "x?a=1&amp;b=2",
                "https://u:p@example.com:8443/a/b/x?a=1&b=2",
            ),
            // Absolute links, to this site or another, written as `Url`
            // writes them.
            (
                "https://u:p@example.com:8443/z",
                "https://u:p@example.com:8443/z",
            ),
            (
                "https://u:p@example.com:8443",
                "https://u:p@example.com:8443/",
            ),
            ("http://other.org", "http://other.org/"),
            ("http://other.org/a/../b?c", "http://other.org/b?c"),
            ("http://other.org?c", "http://other.org/?c"),
            ("http://127.0.0.1:3000//x", "http://127.0.0.1:3000//x"),
        ] {
            assert_eq!(by_hand(base, raw).as_deref(), Some(resolved), "{raw}");
            let joined = url(base).join(&decode_value(raw.as_bytes())).unwrap();
            assert_eq!(joined.as_str(), resolved, "{raw} as join resolves it");
        }
    }

    #[test]
    fn anything_else_is_left_to_join() {
        let base = "http://example.com/a/b.html";
        for raw in [
            "",
            "//other.org/x",
            "a%2e%2e/b",
            "a\\b",
            "a:b",
            "caf\u{e9}",
            "a&amp;b",
            "a?b&#39;c",
            "a&#35;b",
            "a?b\\c",
            // A site not written as `Url` writes it.
            "HTTP://example.com/x",
            "http://example.com:80/x",
            "http://EXAMPLE.com/x",
            "http://u@/x",
            "http://[::1/x",
        ] {
            assert_eq!(by_hand(base, raw), None, "{raw}");
        }
        // A base whose path has a segment like a Windows drive letter,
        // which `join` never removes (found by the fuzzer).
        assert_eq!(by_hand("http://example.com/p:/x", ".."), None);
        assert_eq!(
            url("http://example.com/p:/x").join("..").unwrap().as_str(),
            "http://example.com/p:/"
        );
        // Only `http` and `https` bases.
        assert_eq!(by_hand("file:///srv/a.html", "b.html"), None);
        assert_eq!(by_hand("foo://h/a", "b"), None);
    }

    #[test]
    fn a_link_resolved_by_hand_parses_to_its_text_and_shares_its_base() {
        let page = url("http://example.com:3000/dir/page.html?x");
        let links = extract_links(
            b"<a href=../a/b> <a href=c> <a href='d?e'> <a href=f%2e>",
            &page,
        );
        let by_hand: Vec<&Link> = links
            .iter()
            .filter(|link| matches!(link.0, LinkKind::InPage { .. }))
            .collect();
        assert_eq!((by_hand.len(), links.len()), (3, 4), "{links:?}");
        for link in links {
            let parsed = Url::parse(link.as_str()).unwrap();
            assert_eq!(link.to_url(), parsed);
            assert_eq!(link.scheme(), parsed.scheme());
            assert_eq!(link.host_str(), parsed.host_str());
            assert_eq!(link.to_string(), String::from(link.clone()));
        }
    }

    #[test]
    fn links_that_name_one_url_are_kept_once_on_small_and_large_pages() {
        // `finish` compares a few links pairwise and hashes many: both ways
        // keep the first of each URL, in order. Each URL is written three
        // ways (`pN.html`, `./pN.html`, `/dir/pN.html`): three raw values,
        // so only comparing the resolved texts finds the repeats. Up to
        // `FEW / 3` URLs the page has at most `FEW` links.
        for n in [1, 2, FEW / 3, FEW / 3 + 1, FEW, 40] {
            let mut body = String::new();
            for form in ["", "./", "/dir/"] {
                for i in (0..n).rev() {
                    body += &format!("<a href=\"{form}p{i}.html\">");
                }
            }
            let expected: Vec<String> = (0..n)
                .rev()
                .map(|i| format!("http://example.com/dir/p{i}.html"))
                .collect();
            assert_eq!(links(&body), expected, "{n} URLs");
        }
    }

    #[test]
    fn fragments_are_dropped_and_links_are_distinct_in_first_seen_order() {
        assert_eq!(
            links(
                r##"<a href="b#one"> <a href="a"> <a href="b#two"> <a href="./b"> <a href="#top"> <a href="a">"##
            ),
            [
                "http://example.com/dir/b",
                "http://example.com/dir/a",
                "http://example.com/dir/page.html",
            ]
        );
    }

    #[test]
    fn entities_are_decoded_before_resolving() {
        assert_eq!(
            links(r#"<a href="/s?a=1&amp;b=2">"#),
            ["http://example.com/s?a=1&b=2"]
        );
    }

    #[test]
    fn a_numeric_reference_is_not_mistaken_for_a_fragment() {
        assert_eq!(
            links(r##"<a href="/&#65;&#x42;#frag"> <a href="/x&#35;y"> <a href="/z&#frag">"##),
            [
                "http://example.com/AB",
                "http://example.com/x",
                "http://example.com/z&",
            ]
        );
    }

    #[test]
    fn base_href_changes_where_links_resolve() {
        assert_eq!(
            links(r#"<base href="http://other.org/base/"><a href="x"> <a href="/y">"#),
            ["http://other.org/base/x", "http://other.org/y"]
        );
    }

    #[test]
    fn a_base_is_not_a_link() {
        // The regex sees its `href` like any other ...
        let body = br#"<BASE href="/docs/"><a href="x"><base target=_top href=/second/>"#;
        assert_eq!(extract_hrefs(body), ["/docs/", "x", "/second/"]);
        // ... but neither base tag gives a link.
        assert_eq!(links_of(body, "http://h/"), ["http://h/docs/x"]);
        // The same value in an `<a>` is a link.
        assert_eq!(
            links(r#"<base href="/docs/"><a href="/docs/">"#),
            ["http://example.com/docs/"]
        );
    }

    #[test]
    fn a_relative_base_is_relative_to_the_page() {
        // The base applies to links before it too: it is the document's base.
        assert_eq!(
            links(r#"<a href="x"><base href="../docs/">"#),
            ["http://example.com/docs/x"]
        );
    }

    #[test]
    fn a_base_that_does_not_parse_is_ignored() {
        assert_eq!(
            links(r#"<base href="http://[bad/"><a href="x">"#),
            ["http://example.com/dir/x"]
        );
        assert_eq!(
            links(r#"<base href="mailto:a@b"><a href="x">"#),
            ["http://example.com/dir/x"]
        );
    }

    #[test]
    fn values_that_do_not_parse_are_dropped() {
        assert_eq!(
            links(
                r#"<a href="http://[::1"> <a href="http://a%zz"> <a href="http://ex%ample.com/"> <a href="ok">"#
            ),
            ["http://example.com/dir/ok"]
        );
    }

    #[test]
    fn other_schemes_are_extracted_for_the_policy_to_judge() {
        assert_eq!(
            links(
                r#"<a href="mailto:a@b.c"> <a href="javascript:void(0)"> <a href="https://example.com/s">"#
            ),
            [
                "mailto:a@b.c",
                "javascript:void(0)",
                "https://example.com/s"
            ]
        );
    }

    #[test]
    fn a_page_without_links_has_none() {
        assert!(links("").is_empty());
        assert!(links("<p>no links, just text about href</p>").is_empty());
    }

    // --- normalize_root ---

    #[test]
    fn roots_without_a_scheme_get_http() {
        let cases = [
            ("localhost:3000/", "http://localhost:3000/"),
            ("example.com", "http://example.com/"),
            ("127.0.0.1:8000/docs", "http://127.0.0.1:8000/docs"),
            ("[::1]:3000", "http://[::1]:3000/"),
            ("  example.com/a  ", "http://example.com/a"),
            ("http://localhost:3000/", "http://localhost:3000/"),
            ("HTTPS://Example.COM/a", "https://example.com/a"),
            ("http://example.com/a#frag", "http://example.com/a"),
            ("example.com/#frag", "http://example.com/"),
        ];
        for (root, expected) in cases {
            assert_eq!(normalize_root(root).unwrap().as_str(), expected, "{root}");
        }
    }

    #[test]
    fn bad_roots_are_one_line_errors() {
        for root in [
            "",
            "http://",
            "exa mple.com",
            "mailto:a@b.c",
            "ftp://x/",
            "a\nb c",
        ] {
            let err = normalize_root(root).unwrap_err();
            assert!(!err.contains('\n'), "{err:?}");
            assert!(err.starts_with("invalid root URL"), "{err:?}");
        }
    }

    // --- UrlPolicy ---

    #[test]
    fn a_link_is_judged_as_its_url() {
        let p = UrlPolicy::new(
            &[url("http://example.com/")],
            Some(Regex::new("private").unwrap()),
            false,
        );
        let body =
            b"<a href=a> <a href=/private/b> <a href=http://other.org/c> <a href=mailto:x@y>";
        for page in ["http://example.com/d/", "http://other.org/d/"] {
            for link in extract_links(body, &url(page)) {
                assert_eq!(p.check_link(&link), p.check(&link.to_url()), "{link}");
            }
        }
    }

    #[test]
    fn only_http_and_https_are_followed() {
        let p = policy(&["http://example.com/"], false);
        assert_eq!(p.check(&url("http://example.com/a")), Ok(()));
        assert_eq!(p.check(&url("https://example.com/a")), Ok(()));
        assert_eq!(
            p.check(&url("mailto:x@example.com")),
            Err(Skip::Scheme("mailto".into()))
        );
        assert_eq!(
            p.check(&url("ftp://example.com/")),
            Err(Skip::Scheme("ftp".into()))
        );
    }

    #[test]
    fn strict_matches_the_root_host_with_or_without_www() {
        let p = policy(&["http://example.com/"], false);
        assert_eq!(p.check(&url("http://www.example.com/")), Ok(()));
        assert_eq!(p.check(&url("http://EXAMPLE.com/")), Ok(()));
        assert_eq!(p.check(&url("http://example.com./")), Ok(()));
        assert_eq!(
            p.check(&url("http://docs.example.com/")),
            Err(Skip::Host("docs.example.com".into()))
        );
        assert_eq!(
            p.check(&url("http://example.org/")),
            Err(Skip::Host("example.org".into()))
        );

        let www = policy(&["http://www.example.com/"], false);
        assert_eq!(www.check(&url("http://example.com/")), Ok(()));
        assert_eq!(www.check(&url("http://www.example.com/")), Ok(()));
        assert!(www.check(&url("http://www.www.example.com/")).is_err());
    }

    #[test]
    fn lenient_matches_the_last_two_labels() {
        let p = policy(&["http://www.example.com/"], true);
        assert_eq!(p.check(&url("http://docs.example.com/")), Ok(()));
        assert_eq!(p.check(&url("http://a.b.example.com/")), Ok(()));
        assert_eq!(p.check(&url("http://example.com/")), Ok(()));
        assert!(p.check(&url("http://example.org/")).is_err());
        assert!(p.check(&url("http://notexample.com/")).is_err());
    }

    #[test]
    fn lenient_compares_labels_not_glued_strings() {
        // The 500-lines crawler's `''.join(host.split('.')[-2:])` makes both `abc`.
        let p = policy(&["http://a.bc/"], true);
        assert_eq!(
            p.check(&url("http://ab.c/")),
            Err(Skip::Host("ab.c".into()))
        );
        assert_eq!(p.check(&url("http://x.a.bc/")), Ok(()));
    }

    #[test]
    fn any_port_of_a_root_host_is_allowed() {
        let p = policy(&["http://localhost:3000/"], false);
        assert_eq!(p.check(&url("http://localhost:8080/x")), Ok(()));
        assert_eq!(p.check(&url("http://localhost/x")), Ok(()));
        assert_eq!(p.check(&url("https://localhost:3443/")), Ok(()));
    }

    #[test]
    fn an_ipv4_host_matches_only_literally() {
        for lenient in [false, true] {
            let p = policy(&["http://127.0.0.1:3000/"], lenient);
            assert_eq!(p.check(&url("http://127.0.0.1:9/")), Ok(()));
            assert_eq!(p.check(&url("http://127.0.0.1:80/")), Ok(()));
            assert!(p.check(&url("http://10.0.0.1/")).is_err(), "{lenient}");
            // The same last two "labels", and not the same machine.
            assert!(p.check(&url("http://10.9.0.1/")).is_err(), "{lenient}");
            assert!(p.check(&url("http://localhost/")).is_err(), "{lenient}");
        }
        let lenient = policy(&["http://10.0.0.1/"], true);
        assert!(lenient.check(&url("http://192.168.0.1/")).is_err());
    }

    #[test]
    fn an_ipv6_host_matches_only_literally() {
        for lenient in [false, true] {
            let p = policy(&["http://[::1]:3000/"], lenient);
            assert_eq!(p.check(&url("http://[::1]/x")), Ok(()));
            assert_eq!(p.check(&url("http://[0:0:0:0:0:0:0:1]:80/")), Ok(()));
            assert_eq!(
                p.check(&url("http://[::2]/")),
                Err(Skip::Host("[::2]".into()))
            );
            assert!(p.check(&url("http://localhost/")).is_err());
        }
    }

    #[test]
    fn any_root_host_will_do() {
        let p = policy(&["http://a.org/", "http://127.0.0.1:3000/"], false);
        assert_eq!(p.check(&url("http://a.org/x")), Ok(()));
        assert_eq!(p.check(&url("http://127.0.0.1/x")), Ok(()));
        assert!(p.check(&url("http://b.org/")).is_err());
    }

    #[test]
    fn exclude_is_matched_against_the_whole_url_after_scheme_and_host() {
        let roots = [url("http://example.com/")];
        let p = UrlPolicy::new(
            &roots,
            Some(Regex::new(r"\.pdf$|/private/").unwrap()),
            false,
        );
        assert_eq!(p.check(&url("http://example.com/a.html")), Ok(()));
        assert_eq!(
            p.check(&url("http://example.com/doc.pdf")),
            Err(Skip::Excluded)
        );
        assert_eq!(
            p.check(&url("http://example.com/private/x")),
            Err(Skip::Excluded)
        );
        // The scheme and host are judged first, so the debug line says the
        // more fundamental reason.
        assert_eq!(
            p.check(&url("http://other.org/doc.pdf")),
            Err(Skip::Host("other.org".into()))
        );
        let scheme_host =
            UrlPolicy::new(&roots, Some(Regex::new("^http://example").unwrap()), false);
        assert_eq!(
            scheme_host.check(&url("http://example.com/")),
            Err(Skip::Excluded)
        );
    }

    #[test]
    fn skip_reasons_read_as_log_text() {
        assert_eq!(
            Skip::Host("example.org".into()).to_string(),
            "host example.org not allowed"
        );
        assert_eq!(
            Skip::Scheme("mailto".into()).to_string(),
            "scheme mailto not followed"
        );
        assert_eq!(Skip::Excluded.to_string(), "excluded");
    }

    #[test]
    fn roots_are_normalized_deduplicated_and_checked() {
        let roots: Vec<String> = [
            "localhost:3000/",
            "http://localhost:3000/#top",
            "http://h/a",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let urls: Vec<String> = normalize_roots(&roots)
            .unwrap()
            .iter()
            .map(|u| u.to_string())
            .collect();
        assert_eq!(urls, ["http://localhost:3000/", "http://h/a"]);
        let bad = normalize_roots(&["http://[".to_string()]).unwrap_err();
        assert!(format!("{bad:#}").starts_with("bad root URL"), "{bad:#}");
    }

    #[test]
    fn a_clone_of_a_link_has_its_own_text_and_keeps_no_page_alive() {
        let page = url("http://example.com/dir/page.html");
        let links = extract_links(b"<a href=a> <a href=../b?c> <a href=#top>", &page);
        let LinkKind::InPage { page: buffer, .. } = &links[1].0 else {
            panic!("resolved by hand: {links:?}");
        };
        // The two links resolved by hand share the page's buffer.
        assert_eq!(Arc::strong_count(buffer), 2);
        let buffer = Arc::downgrade(buffer);
        let clone = links[1].clone();
        assert!(matches!(clone.0, LinkKind::OnBase { .. }), "{clone:?}");
        assert_eq!(clone, links[1]);
        assert_eq!(clone.to_url(), links[1].to_url());
        assert_eq!(clone.to_url().as_str(), "http://example.com/b?c");
        assert_eq!(
            (clone.scheme(), clone.host_str()),
            ("http", Some("example.com"))
        );
        assert_eq!(format!("{clone:?}"), r#"Link("http://example.com/b?c")"#);
        // A seen-set that keeps the clone does not keep the page's links.
        drop(links);
        assert!(buffer.upgrade().is_none());
        assert_eq!(String::from(clone), "http://example.com/b?c");
    }

    // --- PageHash: every byte and the length count ---

    #[test]
    fn the_page_hash_reads_every_byte_of_a_value_and_its_length() {
        use std::hash::BuildHasher as _;
        let hash = PageHash::new();
        let of = |bytes: &[u8]| hash.hash_one(PageKey(bytes));
        // Values of every length around the 8- and 16-byte steps the hash
        // reads in: changing any one byte, or adding a zero byte, changes
        // the hash (a byte the reads skipped would not).
        for len in 0..=50 {
            let value: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let original = of(&value);
            for at in 0..len {
                let mut changed = value.clone();
                changed[at] ^= 0x01;
                assert_ne!(of(&changed), original, "length {len}, byte {at}");
            }
            let mut longer = value.clone();
            longer.push(0);
            assert_ne!(of(&longer), original, "length {len} and a zero byte");
        }
        // The key is drawn once per process: the same value, the same hash.
        assert_eq!(
            of(b"page.html"),
            PageHash::new().hash_one(PageKey(b"page.html"))
        );
    }

    // ---- fingerprints ----

    #[test]
    fn a_fingerprint_is_of_the_whole_text() {
        let url = "http://example.com/a/b/page-12345.html?q=1";
        let mut seen = HashSet::new();
        seen.insert(Fingerprint::of(url));
        // Every one-byte change, anywhere in the text, and every prefix.
        for at in 0..url.len() {
            let mut changed = url.as_bytes().to_vec();
            changed[at] ^= 0x01;
            let changed = String::from_utf8(changed).unwrap();
            assert!(
                seen.insert(Fingerprint::of(&changed)),
                "{changed:?} has the fingerprint of a URL before it"
            );
            assert!(
                seen.insert(Fingerprint::of(&url[..at])),
                "{:?} has the fingerprint of a URL before it",
                &url[..at]
            );
        }
        assert_eq!(
            Fingerprint::of(url),
            Fingerprint::of(&String::from(url)),
            "the same text, the same fingerprint"
        );
    }

    #[test]
    fn fingerprints_of_many_urls_are_distinct() {
        // 200,000 URLs that differ in a few digits: with 128 bits, any two
        // alike would mean the bits are not spread over the whole value
        // (say, both halves the same, or a half left out).
        let mut seen = HashSet::new();
        let mut halves = HashSet::new();
        for n in 0..200_000u32 {
            let url = format!("http://127.0.0.1:8080/s{}/p-{n}.html", n % 97);
            let fingerprint = Fingerprint::of(&url);
            assert!(seen.insert(fingerprint), "{url} shares a fingerprint");
            assert_ne!(fingerprint.0, fingerprint.1, "{url}: both halves alike");
            assert!(halves.insert(fingerprint.0), "{url}: first half repeated");
        }
    }

    #[test]
    fn a_links_fingerprint_is_its_urls() {
        let page = Url::parse("http://example.com/docs/a/index.html").unwrap();
        let body = br#"<a href="b.html"></a><a href="../c/?x=1#top"></a><a href="HTTP://Example.COM:80/d"></a>"#;
        let links = extract_links(body, &page);
        assert_eq!(links.len(), 3, "three links: {links:?}");
        for link in &links {
            let url = link.to_url();
            assert_eq!(
                link.fingerprint(),
                Fingerprint::from(&url),
                "{link}: the fingerprint of the link and of its `Url`"
            );
            assert_eq!(link.fingerprint(), Fingerprint::of(url.as_str()), "{link}");
        }
    }
}
