//! # How fast is link extraction?
//!
//! `cargo run --release -p course-tools --bin bench-links`
//!
//! The spec asks link extraction to run at 1 GB/s or better over typical
//! documentation HTML: fast enough that finding links is never what slows a
//! crawl. This program builds such a page (about 1 MB of navigation,
//! paragraphs, code blocks and tables, one link every 200–400 bytes, in all
//! three quoting styles), then times [`extract_hrefs`] (the regex and entity
//! decoding alone) and [`extract_links`] (plus `<base>`, resolution, fragment
//! dropping and de-duplication) and prints the median throughput of several
//! runs.
//!
//! The page is generated from a fixed seed, so every run measures the same
//! bytes. Run it in release mode: a debug build is ten times slower and says
//! nothing about the code.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

use shared::fixtures::sitegen::Rng;
use shared::links::{extract_hrefs, extract_links};
use url::Url;

/// How big the generated page is, roughly.
const TARGET_BYTES: usize = 1_000_000;
/// Timed runs per function; the median is reported, so one run disturbed by
/// another process on a shared machine does not move the figure.
const RUNS: usize = 51;

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

/// Throughput of `RUNS` calls of `f` over `body`, in MB/s (10^6 bytes):
/// the median, and the best run. On a machine shared with other work the
/// median moves with the load; the best run is the closest to what the code
/// does on an idle core.
fn throughput<T>(body: &[u8], mut f: impl FnMut(&[u8]) -> T) -> (f64, f64) {
    // One untimed run warms the caches and compiles the regexes.
    black_box(f(black_box(body)));
    let mut rates: Vec<f64> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            black_box(f(black_box(body)));
            body.len() as f64 / start.elapsed().as_secs_f64() / 1e6
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    (rates[RUNS / 2], rates[RUNS - 1])
}

fn main() {
    let page = generate_page(TARGET_BYTES);
    let body = page.as_bytes();
    let page_url =
        Url::parse("http://localhost:3000/docs/crawler/index.html").expect("constant URL");

    let hrefs = extract_hrefs(body);
    let links = extract_links(body, &page_url);
    println!(
        "page: {} bytes, {} hrefs (one per {} bytes), {} distinct links",
        body.len(),
        hrefs.len(),
        body.len() / hrefs.len().max(1),
        links.len()
    );

    let (median, best) = throughput(body, extract_hrefs);
    println!("extract_hrefs: {median:6.0} MB/s median of {RUNS} runs, best {best:.0} MB/s");
    let (median, best) = throughput(body, |b| extract_links(b, &page_url));
    println!("extract_links: {median:6.0} MB/s median of {RUNS} runs, best {best:.0} MB/s");
}
