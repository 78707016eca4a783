//! `fds`: the unbounded crawlers under a small descriptor limit.
//!
//! Lessons 2 and 3 start a fetch for every link they find, at once; only the
//! number of descriptors the process may open bounds them. A page with
//! 10,000 links, crawled under `ulimit -n 1024`, makes them run out: the
//! spec says they must then wait for a descriptor to free and still finish
//! the crawl, every page fetched. Each linked page answers after a short
//! delay, so sockets stay open long enough for the limit to bite.
//!
//! The server runs in this process (with a high limit of its own); only the
//! crawler is started under the low one.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Result;
use shared::fixtures::server::{Request, Route, ServerOptions, TestServer};

use crate::output::{self, secs, thousands};
use crate::procs::{self, Running};
use crate::Ctx;
use shared::report::PrintedReport as Report;

/// The descriptor limit of the spec's target.
const LIMIT: usize = 1024;
/// How long each linked page takes to answer.
const PAGE_DELAY: Duration = Duration::from_millis(50);
/// A crawl that takes longer than this is reported as not finishing.
const CRAWL_TIMEOUT: Duration = Duration::from_secs(300);

/// Lessons 2 and 3 crawl a page of N links under `ulimit -n 1024`.
#[derive(Debug, clap::Parser)]
pub struct Args {
    /// Links on the page.
    #[arg(long, default_value_t = 10_000, value_parser = crate::at_least(1))]
    links: usize,
    #[command(flatten)]
    lessons: crate::Lessons,
}

pub fn command(ctx: &Ctx, args: Args) -> Result<()> {
    let links = args.links;
    let lessons = args.lessons.list(&[2, 3]);

    eprintln!("fds: finding the binaries");
    let (binaries, missing) = procs::lesson_binaries(ctx, &lessons);

    let mut args = format!("fds --links {links}");
    if lessons != [2, 3] {
        let list: Vec<String> = lessons.iter().map(|n| n.to_string()).collect();
        let _ = write!(args, " --lessons {}", list.join(","));
    }
    let title = format!(
        "Descriptors: a page of {} links under `ulimit -n {LIMIT}`",
        thousands(links as u64)
    );
    let mut md = output::header(ctx, &title, &args);
    md.push_str(
        "| lesson | result | Done | pages fetched (200) | failed | achieved concurrency | \
         server's peak in flight | time | exit status |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let expected = links as u64 + 1;
    for (n, bin) in &binaries {
        eprintln!("fds: lesson {n}");
        let row = crawl(bin, links)?;
        let line = match row {
            Ok((done, peak)) => {
                let r = Report::parse(&done.stdout);
                let ok200 = r.stat("html");
                let failed = r.stat("fail") + r.stat("error");
                let exit = done
                    .status
                    .map_or("killed at the deadline".to_string(), |s| s.to_string());
                let complete = done.status.is_some_and(|s| s.success())
                    && r.done == Some(expected)
                    && r.todo == Some(0)
                    && ok200 == expected;
                let mut result = if complete {
                    "complete".to_string()
                } else {
                    "**incomplete**".to_string()
                };
                if !complete && !done.stderr.is_empty() {
                    let _ = write!(
                        result,
                        " (stderr: {})",
                        procs::tail(&done.stderr, 200)
                            .replace('|', "\\|")
                            .replace('\n', " ")
                    );
                }
                let fails: Vec<String> = r
                    .stats
                    .iter()
                    .filter(|(k, _)| k.starts_with("fail_"))
                    .map(|(k, v)| format!("{v} {k}"))
                    .collect();
                let failed = if fails.is_empty() {
                    thousands(failed)
                } else {
                    format!("{} ({})", thousands(failed), fails.join(", "))
                };
                eprintln!(
                    "  lesson {n}: {result}, Done {:?}, {} s",
                    r.done,
                    done.elapsed.as_secs_f64()
                );
                format!(
                    "| lesson {n} | {result} | {} | {} | {failed} | {} | {} | {} | {exit} |",
                    r.done.map_or("—".to_string(), thousands),
                    thousands(ok200),
                    r.concurrency.map_or("—".to_string(), thousands),
                    thousands(peak as u64),
                    secs(done.elapsed),
                )
            }
            Err(why) => {
                format!("| lesson {n} | failed to run: {why} | — | — | — | — | — | — | — |")
            }
        };
        let _ = writeln!(md, "{line}");
    }
    for (n, why) in &missing {
        let _ = writeln!(
            md,
            "| lesson {n} | not measured: {} | — | — | — | — | — | — | — |",
            why.replace('|', "\\|").replace('\n', " ")
        );
    }
    let _ = writeln!(
        md,
        "\nEach crawler ran as `sh -c 'ulimit -n {LIMIT} && exec lessonN -q ROOT'`. The root \
         page links to {} pages that each answer after {} ms; a complete crawl reports all {} \
         URLs as fetched pages and nothing left to do.",
        thousands(links as u64),
        PAGE_DELAY.as_millis(),
        thousands(expected),
    );
    print!("{md}");
    output::write_result(ctx, "fds.md", &md)
}

/// Crawl the page of `links` links with a lesson binary under the low limit:
/// how it ended, and the server's peak of requests in flight.
fn crawl(bin: &std::path::Path, links: usize) -> Result<Result<(procs::Finished, usize), String>> {
    let mut page = String::from("<!doctype html>\n<title>many links</title>\n");
    for i in 0..links {
        let _ = writeln!(page, "<a href=\"/p/{i}\">{i}</a>");
    }
    let root = Route::html(page);
    let leaf = Route::html("<!doctype html><p>a leaf page</p>\n").delay(PAGE_DELAY);
    let handler = move |req: &Request| -> Route {
        if req.target == "/" {
            root.clone()
        } else if req.target.starts_with("/p/") {
            leaf.clone()
        } else {
            Route::not_found()
        }
    };
    let server = match TestServer::start_with(
        handler,
        ServerOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            record_requests: false,
        },
    ) {
        Ok(s) => s,
        Err(e) => return Ok(Err(format!("cannot start the server: {e}"))),
    };
    let args = vec!["-q".to_string(), server.url("/")];
    let run = match Running::spawn(bin, &args, LIMIT) {
        Ok(r) => r,
        Err(e) => return Ok(Err(format!("{e:#}"))),
    };
    let done = run.wait(CRAWL_TIMEOUT);
    Ok(Ok((done, server.peak_in_flight())))
}
