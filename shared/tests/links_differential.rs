//! The fast link finder against its definition.
//!
//! `shared::links` finds `href` values with a hand-written search and reads
//! each value by hand; `shared::links::reference` runs the course's link
//! pattern through the regex engine, as the crawler did before. They must
//! agree on every page, byte for byte: the same values, the same `<base>`,
//! the same resolved links in the same order. This file holds them to it on
//! the pages the course crawls (the generated site), on a corpus of real
//! documentation pages (`tests/corpus/rust-docs`, see its README), on the
//! corners of the pattern, and on thousands of pages mutated from those
//! with a seeded generator, so that a failure names its seed and repeats.
//! The `find_links` fuzz target runs the same comparison on whatever the
//! fuzzer makes.

use std::fs;
use std::path::Path;

use shared::fixtures::sitegen::{generate, Rng, SiteSpec};
use shared::links::{extract_hrefs, extract_links, find_base, reference, Link};
use url::Url;

/// Both finders on one body, as one assertion with a readable failure.
fn assert_same(body: &[u8], page: &Url, what: &str) {
    assert_eq!(
        extract_hrefs(body),
        reference::extract_hrefs(body),
        "hrefs differ on {what}"
    );
    assert_eq!(
        find_base(body),
        reference::find_base(body),
        "base differs on {what}"
    );
    let links = extract_links(body, page);
    let expected = reference::extract_links(body, page);
    assert_eq!(
        links.iter().map(Link::as_str).collect::<Vec<_>>(),
        expected.iter().map(Url::as_str).collect::<Vec<_>>(),
        "links differ on {what}"
    );
    // A link is its text: parsed, it is the URL `join` made, and what the
    // policy reads of it is what it reads of that URL.
    for (link, url) in links.iter().zip(&expected) {
        assert_eq!(&link.to_url(), url, "{link}'s Url differs on {what}");
        assert_eq!(link.scheme(), url.scheme(), "{link}'s scheme on {what}");
        assert_eq!(link.host_str(), url.host_str(), "{link}'s host on {what}");
    }
}

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

/// The real pages, each with the URL it has in a local documentation tree.
fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/rust-docs");
    let mut pages: Vec<(String, Vec<u8>)> = fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "html"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, fs::read(&path).unwrap())
        })
        .collect();
    pages.sort();
    assert!(pages.len() >= 6, "the corpus is missing from {dir:?}");
    pages
}

#[test]
fn the_generated_site() {
    let site = generate(&SiteSpec::new(400));
    let mut links = 0;
    for (path, file) in &site.files {
        let page = url(&format!("http://localhost:3000{path}"));
        assert_same(&file.bytes, &page, path);
        links += extract_links(&file.bytes, &page).len();
    }
    assert!(links > 1000, "the site has links to compare: {links}");
}

#[test]
fn the_real_pages() {
    for (name, body) in corpus() {
        let page = url(&format!("http://localhost:8000/std/{name}"));
        assert_same(&body, &page, &name);
        assert!(!extract_links(&body, &page).is_empty(), "{name} has links");
    }
}

#[test]
fn the_corners_of_the_pattern() {
    for page in [
        "http://example.com/dir/page.html",
        "http://example.com/",
        "https://user:pw@example.com:8443/a/b/c/?q=1#f",
        "http://example.com/a/b/",
        "http://127.0.0.1:3000/x/y.html?z",
        // Segments `..` may not remove in the `url` crate (drive letters).
        "http://example.com/p:/a/q|/b/c.html",
        "file:///srv/docs/index.html",
        "foo://host/a/b",
        "mailto:someone@example.com",
    ] {
        corners(&url(page));
    }
}

fn corners(page: &Url) {
    let page = page.clone();
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
        b"hre",
        b"",
        b"<base href=/b/><a href=c>",
        b"<a href=c><BASE\tHREF='../d/'>",
        b"<base target=x><base href=e/><base href=f/>",
        b"<base x<y href=g> <base xhref=h href=i>",
        b"<base href=mailto:x><a href=j>",
        b"<base href=#frag><a href=k#top href=&#35;l>",
        b"href=a&amp;b href=&#x2F;c href=&#0; href=&bogus;",
        // Relative paths of every shape, resolved by hand or by `join`.
        b"href=../../../../x href=./a/./b/../c href=a/.. href=. href=.. href=./",
        b"href=a//b href=/../x href=/./y/ href=~user href=- href=_ href=... href=.a",
        b"href=a/b/../../.. href=../a/.././b href=.././.. href=/ href=// href=///x",
        b"href=a%2e%2e/b href=%2e%2e/c href=a\\b href=A.HTML href=caf\xc3\xa9",
        // Queries, absolute links to this site and others, written as
        // `Url` writes them or not, and a base with a fragment of its own.
        b"href=?q href=a?b=1&amp;c href=../?x/y?z href=a?b&#39;c href=a?&#35;b href=a?b\\c",
        b"href=http://example.com href=https://example.com:443/x href=http://Example.com/y",
        b"href=http://example.com?z href=http://127.0.0.1:3000/../a href=https://u:pw@example.com:8443",
        b"href=http://other.org//a/./b/.. href=http://[::1]:80/ href=http://x:99999/ href=http://a.b./",
        b"<base href=b#frag><a href=#top><a href=?q>",
        // Near misses at every alignment of the 32-byte blocks.
        b"                               href=a hre=b hxxf=c HrEF=d",
        b"h  f h  F H  f                  h href=\"e\"",
    ] {
        assert_same(case, &page, &String::from_utf8_lossy(case));
        // The same case at every offset within a block, and cut at its end.
        for pad in 1..40 {
            let mut padded = vec![b' '; pad];
            padded.extend_from_slice(case);
            assert_same(&padded, &page, &format!("{pad} spaces, then {case:?}"));
            assert_same(&padded[..padded.len() - 1], &page, "cut short");
        }
    }
}

/// Pieces a mutation inserts: the pattern's own parts, and near misses.
const PIECES: &[&[u8]] = &[
    b"href",
    b"HREF",
    b"hReF",
    b"href=",
    b"href =",
    b" = ",
    b"=",
    b"\"",
    b"'",
    b"<",
    b">",
    b" ",
    b"\t",
    b"\n",
    b"\x0B",
    b"#",
    b"&amp;",
    b"&#35;",
    b"&#x41;",
    b"&",
    b"<base href=",
    b"<BASE ",
    b"<base",
    b"base",
    b"../",
    b"./",
    b"/",
    b".",
    b"..",
    b"~",
    b"//other.example/",
    b"http://",
    b"mailto:",
    b"\xff",
    b"\xe9",
    b"%20",
    b"?q=1",
    b"?",
    b"http://localhost:8000",
    b"https://other.example",
    b"&#39;",
];

/// `body` with a few random edits: pieces inserted, bytes deleted or
/// replaced, a stretch repeated.
fn mutate(rng: &mut Rng, body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    for _ in 0..1 + rng.below(8) {
        let at = rng.below(out.len() + 1);
        match rng.below(5) {
            0 | 1 => {
                let piece = PIECES[rng.below(PIECES.len())];
                out.splice(at..at, piece.iter().copied());
            }
            2 => {
                let end = (at + 1 + rng.below(16)).min(out.len());
                out.drain(at.min(end)..end);
            }
            3 => {
                if let Some(byte) = out.get_mut(at) {
                    *byte = rng.below(256) as u8;
                }
            }
            _ => {
                let end = (at + rng.below(64)).min(out.len());
                let stretch = out[at.min(end)..end].to_vec();
                out.splice(at..at, stretch);
            }
        }
    }
    out
}

#[test]
fn thousands_of_mutated_pages() {
    let page = url("http://localhost:8000/std/iter/index.html");
    // Slices of real pages, so a mutation lands near links often.
    let sources: Vec<Vec<u8>> = corpus()
        .into_iter()
        .flat_map(|(_, body)| {
            body.chunks(2048)
                .map(<[u8]>::to_vec)
                .collect::<Vec<Vec<u8>>>()
        })
        .collect();
    for seed in 0..3000u64 {
        let mut rng = Rng::new(0x11_4E5D_0000 + seed);
        let source = &sources[rng.below(sources.len())];
        let body = mutate(&mut rng, source);
        assert_same(&body, &page, &format!("seed {seed}"));
    }
}
