//! # How fast is link extraction?
//!
//! `cargo run --release -p course-tools --bin bench-links`
//!
//! Link extraction runs on every byte a crawl downloads, so it must never be
//! what slows a crawl. This program times it on two corpora:
//!
//! - a generated documentation page (about 1 MB of navigation, paragraphs,
//!   code blocks and tables, one link every 200–400 bytes, in all three
//!   quoting styles), the same bytes on every run (a fixed seed);
//! - the real pages in `shared/tests/corpus/rust-docs` (rustdoc and mdBook
//!   pages of the Rust documentation, about 310 KiB).
//!
//! For each it times [`extract_hrefs`] (finding and decoding the values)
//! and [`extract_links`] (plus `<base>`, resolution, fragment dropping and
//! de-duplication), and the same two functions of
//! [`shared::links::reference`], which apply the course's link pattern with
//! the regex engine as the crawler did before link finding was written by
//! hand. The two run in turn, `RUNS` times each, in this one process, and the
//! table gives the median throughput of each and their ratio: a before and
//! after from one run on one machine.
//!
//! The two `extract_links` give the same links in different forms: the
//! reference parses each into a `Url`, as the crawler once did; the course's
//! gives each as its `Url`'s text (a [`shared::links::Link`]), and a crawler
//! parses only the links new to it. The time to parse those few is the
//! crawler's, and shows in the crawl benchmarks (`course-bench speed`), not
//! here.
//!
//! Run it in release mode: a debug build is ten times slower and says
//! nothing about the code.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

use shared::fixtures::sitegen::Rng;
use shared::links::{extract_hrefs, extract_links, reference};
use url::Url;

/// How big the generated page is, roughly.
const TARGET_BYTES: usize = 1_000_000;
/// Timed runs per function; the median is reported, so one run disturbed by
/// another process on a shared machine does not move the figure.
const RUNS: usize = 31;

const WORDS: &[&str] = &[
    "the",
    "crawler",
    "fetches",
    "each",
    "page",
    "once",
    "and",
    "a",
    "queue",
    "of",
    "URLs",
    "waiting",
    "for",
    "worker",
    "event",
    "loop",
    "socket",
    "is",
    "ready",
    "when",
    "to",
    "read",
    "future",
    "callback",
    "coroutine",
    "resolves",
    "with",
    "result",
    "task",
    "steps",
    "through",
    "generator",
    "until",
    "done",
    "connection",
    "response",
    "header",
    "body",
    "bytes",
    "in",
    "order",
    "timeout",
    "error",
    "returns",
    "value",
    "this",
    "that",
    "function",
    "call",
    "an",
];

const MODULES: &[&str] = &[
    "event_loop",
    "future",
    "task",
    "queue",
    "crawler",
    "fetcher",
    "http",
    "links",
    "stats",
    "report",
    "selector",
    "generator",
    "pool",
    "timer",
];

/// One link, in one of the styles real pages use.
fn link(rng: &mut Rng, out: &mut String) {
    let module = rng.pick(MODULES);
    let item = rng.pick(WORDS);
    let target = match rng.below(10) {
        0 => format!("../{module}/index.html"),
        1 => format!("{module}.html#{item}"),
        2 => format!("/docs/{module}/{item}.html"),
        3 => format!(
            "https://doc.example.org/{module}/?q={item}&amp;page={}",
            rng.below(9)
        ),
        4 => format!("#{item}-{}", rng.below(50)),
        5 => format!("struct.{}.html#method.{item}", capitalize(module)),
        6 => format!("http://localhost:3000/{module}/{item}.html"),
        _ => format!("{module}/fn.{item}.html"),
    };
    let text = rng.pick(WORDS);
    match rng.below(10) {
        0..=6 => write!(out, r#"<a href="{target}">{text}</a>"#),
        7 | 8 => write!(out, r#"<a class='ref' href='{target}'>{text}</a>"#),
        _ => write!(out, r#"<a href={target} title="{text}">{text}</a>"#),
    }
    .expect("writing to a String");
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// `n` words of prose.
fn words(rng: &mut Rng, n: usize, out: &mut String) {
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(rng.pick(WORDS));
    }
}

/// A paragraph with a link every 200–400 bytes or so.
fn paragraph(rng: &mut Rng, out: &mut String) {
    out.push_str("<p>");
    for _ in 0..1 + rng.below(4) {
        let n = 25 + rng.below(30);
        words(rng, n, out);
        out.push(' ');
        if rng.below(3) == 0 {
            write!(
                out,
                "<code>{}::{}</code> ",
                rng.pick(MODULES),
                rng.pick(WORDS)
            )
            .expect("writing to a String");
        }
        link(rng, out);
        out.push_str(". ");
    }
    out.push_str("</p>\n");
}

/// A code block: no links, lots of punctuation, `&lt;` and `&amp;`.
fn code_block(rng: &mut Rng, out: &mut String) {
    out.push_str("<pre class=\"rust\"><code>");
    for _ in 0..4 + rng.below(10) {
        let name = rng.pick(WORDS);
        let module = rng.pick(MODULES);
        writeln!(
            out,
            "    <span class=\"kw\">let</span> {name} = {module}::new(&amp;mut state) -&gt; Result&lt;(), Error&gt;; // {}",
            rng.pick(WORDS)
        )
        .expect("writing to a String");
    }
    out.push_str("</code></pre>\n");
}

/// A table of items, one link per row.
fn table(rng: &mut Rng, out: &mut String) {
    out.push_str("<table class=\"items\">\n");
    for _ in 0..3 + rng.below(6) {
        out.push_str("<tr><td>");
        link(rng, out);
        out.push_str("</td><td>");
        let n = 8 + rng.below(12);
        words(rng, n, out);
        out.push_str("</td></tr>\n");
    }
    out.push_str("</table>\n");
}

/// The navigation every page of a documentation site repeats.
fn nav(out: &mut String) {
    out.push_str("<nav class=\"sidebar\"><ul>\n");
    for module in MODULES {
        writeln!(
            out,
            "<li><a href=\"../{module}/index.html\" class=\"nav\">{module}</a></li>"
        )
        .expect("writing to a String");
    }
    out.push_str("</ul></nav>\n");
}

/// About `target` bytes of documentation HTML.
fn generate_page(target: usize) -> String {
    let mut rng = Rng::new(0x5EED_1234_ABCD_0042);
    let mut out = String::with_capacity(target + 4096);
    out.push_str(concat!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
        "<title>crawler-course docs</title>\n",
        "<link rel=\"stylesheet\" href=\"../static/main.css\">\n",
        "<script src=\"../static/search.js\" defer></script>\n",
        "</head><body>\n",
    ));
    nav(&mut out);
    out.push_str("<main>\n");
    while out.len() < target {
        match rng.below(10) {
            0 => {
                write!(out, "<h2 id=\"{}\">", rng.pick(WORDS)).expect("writing to a String");
                words(&mut rng, 4, &mut out);
                out.push_str("</h2>\n");
            }
            1 => code_block(&mut rng, &mut out),
            2 => table(&mut rng, &mut out),
            3 if rng.below(8) == 0 => nav(&mut out),
            _ => paragraph(&mut rng, &mut out),
        }
    }
    out.push_str("</main></body></html>\n");
    out
}

/// The median throughput, in MB/s (10^6 bytes), of `RUNS` calls each of
/// `new` and `old` over the pages, the two called in turn so that a change
/// in the machine's load moves both alike.
fn paired<T, U>(
    pages: &[(Url, Vec<u8>)],
    mut new: impl FnMut(&[u8], &Url) -> T,
    mut old: impl FnMut(&[u8], &Url) -> U,
) -> (f64, f64) {
    let bytes: usize = pages.iter().map(|(_, body)| body.len()).sum();
    let time = |f: &mut dyn FnMut(&[u8], &Url)| {
        let start = Instant::now();
        for (url, body) in pages {
            f(black_box(body), url);
        }
        bytes as f64 / start.elapsed().as_secs_f64() / 1e6
    };
    // One untimed call of each warms the caches and compiles the regexes.
    time(&mut |b, u| drop(black_box(new(b, u))));
    time(&mut |b, u| drop(black_box(old(b, u))));
    let (mut new_rates, mut old_rates) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        new_rates.push(time(&mut |b, u| drop(black_box(new(b, u)))));
        old_rates.push(time(&mut |b, u| drop(black_box(old(b, u)))));
    }
    let median = |mut rates: Vec<f64>| {
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    };
    (median(new_rates), median(old_rates))
}

/// The real pages, each under the URL it has in a local documentation tree.
fn real_pages() -> Result<Vec<(Url, Vec<u8>)>, String> {
    let dir = course_tools::workspace_root(None)
        .map_err(|e| format!("{e:#}"))?
        .join("shared/tests/corpus/rust-docs");
    let mut pages = Vec::new();
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "html") {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let url = Url::parse(&format!("http://localhost:8000/docs/{name}"))
                .map_err(|e| format!("{name}: {e}"))?;
            let body = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            pages.push((url, body));
        }
    }
    pages.sort();
    Ok(pages)
}

/// Times both functions on `pages` and prints the corpus's lines.
fn report(name: &str, pages: &[(Url, Vec<u8>)]) {
    let bytes: usize = pages.iter().map(|(_, body)| body.len()).sum();
    let hrefs: usize = pages.iter().map(|(_, b)| extract_hrefs(b).len()).sum();
    let links: usize = pages.iter().map(|(u, b)| extract_links(b, u).len()).sum();
    println!(
        "{name}: {} page(s), {bytes} bytes, {hrefs} hrefs (one per {} bytes), {links} distinct links",
        pages.len(),
        bytes / hrefs.max(1),
    );
    println!("| function | this code | the regex (`links::reference`) | × |");
    println!("|---|---:|---:|---:|");
    let (new, old) = paired(
        pages,
        |b, _| extract_hrefs(b),
        |b, _| reference::extract_hrefs(b),
    );
    println!(
        "| `extract_hrefs` | {new:.0} MB/s | {old:.0} MB/s | {:.2}× |",
        new / old
    );
    let (new, old) = paired(pages, extract_links, reference::extract_links);
    println!(
        "| `extract_links` | {new:.0} MB/s | {old:.0} MB/s | {:.2}× |",
        new / old
    );
    println!();
}

fn main() -> std::process::ExitCode {
    let page = generate_page(TARGET_BYTES);
    let page_url =
        Url::parse("http://localhost:3000/docs/crawler/index.html").expect("constant URL");
    println!("Medians of {RUNS} runs of each, the two run in turn.\n");
    report("generated page", &[(page_url, page.into_bytes())]);
    match real_pages() {
        Ok(pages) => report("real pages (shared/tests/corpus/rust-docs)", &pages),
        Err(e) => {
            eprintln!("bench-links: cannot read the real pages: {e}");
            return std::process::ExitCode::FAILURE;
        }
    }
    std::process::ExitCode::SUCCESS
}
