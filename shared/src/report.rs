//! # The report
//!
//! Every lesson ends the same way: a [`CrawlReport`] holding one
//! [`FetchStatistic`] per finished URL plus a few figures about the run, and
//! [`CrawlReport::render`] printing it in exactly the spec's layout — the
//! 500-lines crawler's `reporting.py`, line for line. Because the report is
//! built from the statistics alone, two lessons that crawled the same site can
//! be compared by comparing their reports.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write};
use std::time::Duration;

use crate::stats::FetchStatistic;

/// What a crawl produced.
#[derive(Debug, Clone, Default)]
pub struct CrawlReport {
    /// One statistic per finished URL, in any order (the report sorts).
    pub stats: Vec<FetchStatistic>,
    /// Wall-clock time of the crawl.
    pub elapsed: Duration,
    /// `M` of the `Finished` line: `--threads` (lesson 1), the peak number of
    /// fetches in flight (lessons 2 and 3), `--max-tasks` (lesson 4).
    pub max_tasks: usize,
    /// `K`, achieved concurrency: the most fetches in flight at once.
    pub peak_in_flight: usize,
    /// URLs queued but not finished (0 after a complete crawl).
    pub todo: usize,
    /// What the crawl still held when it ended: nothing, after a crawl
    /// whose every fetch gave back what it took, however it ended.
    pub held: Held,
}

/// What a crawl still holds once its last URL is finished. Every fetch
/// takes something — a place in the socket budget, a socket and its
/// registration with the event loop, a timer for its deadline, a host's
/// robots.txt turn — and must give it back on *every* way it can end, a
/// failure as much as a page. All zero after a sound crawl; a figure that
/// is not names the resource some path kept. Each lesson fills in what its
/// model has (the others stay 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Fetches still counted in flight. In lessons 1 and 2 this count *is*
    /// the socket budget: one still counted is a place never given back.
    pub in_flight: usize,
    /// Places of the socket budget still taken where the budget is kept
    /// apart from the count in flight: lesson 3's fetches started, lesson
    /// 4's open sockets and permits (after the pool closed its idle
    /// connections).
    pub sockets: usize,
    /// Hosts whose robots.txt fetch was started and never answered: their
    /// URLs wait for rules that never come.
    pub robots_pending: usize,
    /// Workers that ended before the crawl did (lesson 4's worker tasks: a
    /// failed fetch must not end its worker). Lesson 1's threads end only
    /// by a panic, which its pool reports as the crawl's error.
    pub workers_lost: usize,
    /// Sockets still registered with the event loop (lessons 2–4).
    pub registered: usize,
    /// Timers still set on the event loop (lessons 2–4): a deadline not
    /// called off when its fetch ended.
    pub timers: usize,
}

impl Held {
    /// Nothing held: every figure 0.
    pub fn is_clear(&self) -> bool {
        *self == Held::default()
    }
}

impl fmt::Display for Held {
    /// The figures that are not 0, each with the resource it counts, e.g.
    /// `2 fetches still counted in flight (their places in the socket
    /// budget never given back)`; `nothing held` when all are 0.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Each figure, with what it counts said for one and for several.
        let figures = [
            (
                self.in_flight,
                "fetch still counted in flight (its place in the socket budget never given back)",
                "fetches still counted in flight (their places in the socket budget never given \
                 back)",
            ),
            (
                self.sockets,
                "place of the socket budget still taken (never given back when a fetch ended)",
                "places of the socket budget still taken (never given back when a fetch ended)",
            ),
            (
                self.robots_pending,
                "host's robots.txt fetch never answered (the URLs waiting for its rules wait for \
                 ever)",
                "hosts' robots.txt fetch never answered (the URLs waiting for its rules wait for \
                 ever)",
            ),
            (
                self.workers_lost,
                "worker ended before the crawl did (a failed fetch must not end its worker)",
                "workers ended before the crawl did (a failed fetch must not end its worker)",
            ),
            (
                self.registered,
                "socket still registered with the event loop (never closed)",
                "sockets still registered with the event loop (never closed)",
            ),
            (
                self.timers,
                "timer still set on the event loop (a deadline not called off)",
                "timers still set on the event loop (a deadline not called off)",
            ),
        ];
        let parts: Vec<String> = figures
            .iter()
            .filter(|(n, _, _)| *n > 0)
            .map(|&(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
            .collect();
        if parts.is_empty() {
            return f.write_str("nothing held");
        }
        f.write_str(&parts.join("; "))
    }
}

/// A crawl that ran out of things to do with URLs still to do that no
/// stated limit accounts for (`--max-pages`, robots.txt): an internal error
/// of the crawler, never the site's fault. A lesson whose loop or pool finds
/// nothing in flight and nothing to run while URLs wait returns this,
/// naming where the URLs were and what was not given back, instead of a
/// report that silently leaves them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stranded {
    /// Seen, and waiting for their turn (robots.txt, a host's slot) or for
    /// a worker.
    pub queued: usize,
    /// Waiting in line for a socket.
    pub waiting_for_socket: usize,
    /// Fetches in flight.
    pub in_flight: usize,
    /// What the crawl still held when it stopped: the count that does not
    /// add up, when one does not.
    pub held: Held,
}

impl Stranded {
    /// `left` URLs still to do, told apart as the crawl counts them: those
    /// waiting for a socket, those in flight, and the rest queued. The
    /// figures always add up to `left`: a count in flight (or in line)
    /// larger than the URLs left is a count that was not given back, and
    /// `held` names it, not the URLs.
    pub fn new(left: usize, waiting_for_socket: usize, in_flight: usize, held: Held) -> Stranded {
        let waiting_for_socket = waiting_for_socket.min(left);
        let in_flight = in_flight.min(left - waiting_for_socket);
        Stranded {
            queued: left - waiting_for_socket - in_flight,
            waiting_for_socket,
            in_flight,
            held,
        }
    }

    /// URLs left to do, in all.
    pub fn total(&self) -> usize {
        self.queued + self.waiting_for_socket + self.in_flight
    }
}

impl fmt::Display for Stranded {
    /// Where the URLs were, then the one explanation that fits: what was
    /// not given back when something was; URLs waiting for a socket while
    /// the budget is whole; or URLs queued with nothing left to take them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "internal error: the crawl ran out of work with {} URL(s) still to do ({} queued, \
             {} waiting for a socket, {} in flight). This is a bug in the crawler, not a \
             problem with the site: ",
            self.total(),
            self.queued,
            self.waiting_for_socket,
            self.in_flight
        )?;
        if !self.held.is_clear() {
            write!(
                f,
                "not given back: {}. A fetch must give back what it took on every way it can \
                 end, a failure as much as a page",
                self.held
            )
        } else if self.waiting_for_socket > 0 {
            f.write_str(
                "fetches wait for a socket while the socket budget has every place free. \
                 Every fetch that holds a socket, robots.txt included, must count against \
                 the socket budget, and the end of each must let a fetch waiting for a \
                 socket go",
            )
        } else {
            f.write_str(
                "URLs are queued with nothing left to take them. Every URL queued must be \
                 taken, fetched and marked done, and whatever waits for a URL's turn must \
                 be woken when it comes",
            )
        }
    }
}

impl std::error::Error for Stranded {}

impl CrawlReport {
    /// The statistics sorted by URL, in byte order.
    pub fn sorted(&self) -> Vec<&FetchStatistic> {
        let mut stats: Vec<&FetchStatistic> = self.stats.iter().collect();
        stats.sort_by(|a, b| a.url.as_bytes().cmp(b.url.as_bytes()));
        stats
    }

    /// The statistic of `url`, if that URL finished.
    pub fn get(&self, url: &str) -> Option<&FetchStatistic> {
        self.stats.iter().find(|s| s.url == url)
    }

    /// The set of finished URLs.
    pub fn urls(&self) -> BTreeSet<String> {
        self.stats.iter().map(|s| s.url.clone()).collect()
    }

    /// Did at least one fetch receive an HTTP status line? (Exit status 1
    /// when not.) A URL its robots.txt refused counts when that robots.txt
    /// was answered: the site answered.
    pub fn received_any_status(&self) -> bool {
        self.stats.iter().any(|s| s.status.is_some())
    }

    /// The stats table: the original's counter keys and their totals.
    pub fn counts(&self) -> BTreeMap<String, usize> {
        // Counted under `&'static str` keys, failure kinds and status codes,
        // and made `String`s once at the end: a key written out per URL
        // would be two allocations for each of a crawl's tens of thousands
        // of URLs.
        let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut fails: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
        let mut add = |key: &'static str, n: usize| *counts.entry(key).or_insert(0) += n;
        for stat in &self.stats {
            if stat.blocked.is_some() {
                add("blocked", 1);
            } else if let Some(err) = &stat.error {
                add("fail", 1);
                *fails.entry(err.kind.key()).or_insert(0) += 1;
            } else if stat.next_url.is_some() {
                add("redirect", 1);
            } else if stat.status == Some(200) && stat.content_type.as_deref() == Some("text/html")
            {
                add("html", 1);
                add("html_bytes", stat.size);
            } else if stat.status == Some(200) {
                add("other", 1);
                add("other_bytes", stat.size);
            } else {
                add("error", 1);
                add("error_bytes", stat.size);
                if let Some(status) = stat.status {
                    *statuses.entry(status).or_insert(0) += 1;
                }
            }
        }
        counts
            .into_iter()
            .map(|(key, n)| (key.to_owned(), n))
            .chain(
                fails
                    .into_iter()
                    .map(|(kind, n)| (format!("fail_{kind}"), n)),
            )
            .chain(
                statuses
                    .into_iter()
                    .map(|(status, n)| (format!("status_{status}"), n)),
            )
            .filter(|&(_, n)| n > 0)
            .collect()
    }

    /// The whole report, as printed on stdout.
    pub fn render(&self) -> String {
        // Room for every line at once (URLs run to some 100 bytes): a
        // report of 30,000 URLs grown by doubling would be copied a dozen
        // times on its way to 3 MB.
        let mut out = String::with_capacity(256 + self.stats.len() * 128);
        out.push_str("*** Report ***\n");
        for stat in self.sorted() {
            let _ = writeln!(out, "{}", line(stat));
        }
        let secs = self.elapsed.as_secs_f64();
        let done = self.stats.len();
        // A crawl of a single cached page can take less than a clock tick;
        // report a rate of 0 rather than infinity or NaN.
        let rate = if secs > 0.0 && self.max_tasks > 0 {
            done as f64 / secs / self.max_tasks as f64
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "Finished {done} urls in {secs:.3} secs (max_tasks={}) ({rate:.3} urls/sec/task)",
            self.max_tasks
        );
        for (key, count) in self.counts() {
            let _ = writeln!(out, "{count:>10} {key}");
        }
        let _ = writeln!(out, "Todo: {}", self.todo);
        let _ = writeln!(out, "Done: {done}");
        let _ = writeln!(
            out,
            "{done} URLs fetched in {secs:.1} seconds, achieved concurrency = {}",
            self.peak_in_flight
        );
        out
    }
}

/// One URL's report line (also the `info` log line printed when it finishes).
///
/// It is written out only when displayed, so a quiet crawl (`-q`), whose
/// log never prints it, never spends a `String` on it.
pub fn line(stat: &FetchStatistic) -> Line<'_> {
    Line(stat)
}

/// A status code, or `-` for none, written without a `String` of its own.
struct Status(Option<u16>);

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(code) => write!(f, "{code}"),
            None => f.write_str("-"),
        }
    }
}

/// [`line()`]'s result: a report line, formatted when displayed.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a>(&'a FetchStatistic);

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stat = self.0;
        if let Some(why) = stat.blocked {
            return write!(f, "{} blocked {}", stat.url, why.key());
        }
        if let Some(err) = &stat.error {
            return write!(f, "{} error {}", stat.url, err);
        }
        let status = Status(stat.status);
        if let Some(next) = &stat.next_url {
            return write!(f, "{} {status} redirect {next}", stat.url);
        }
        let content_type = stat.content_type.as_deref().unwrap_or("-");
        let encoding = stat.encoding.as_deref().unwrap_or("-");
        if stat.status == Some(200) && content_type == "text/html" {
            write!(
                f,
                "{} {status} {content_type} {encoding} {} {}/{}",
                stat.url, stat.size, stat.num_new_urls, stat.num_urls
            )
        } else {
            write!(
                f,
                "{} {status} {content_type} {encoding} {}",
                stat.url, stat.size
            )
        }
    }
}

/// A report as a lesson *printed* it, read back from its standard output:
/// what a test of the program, or a benchmark, needs to know about a crawl
/// it ran as a separate process.
#[derive(Debug, Default, Clone)]
pub struct PrintedReport {
    /// The URL of every report line, in order.
    pub urls: Vec<String>,
    /// The stats table: key → count (`html`, `fail_timeout`, ...).
    pub stats: BTreeMap<String, u64>,
    /// `Todo: n`.
    pub todo: Option<u64>,
    /// `Done: n`.
    pub done: Option<u64>,
    /// `achieved concurrency = K` on the last line.
    pub concurrency: Option<u64>,
    /// The crawl's own time, from its last line.
    pub secs: Option<f64>,
}

impl PrintedReport {
    /// Parse stdout. Unknown lines are ignored; a missing part stays `None`,
    /// and the caller decides whether that makes the crawl wrong.
    pub fn parse(stdout: &str) -> PrintedReport {
        let mut r = PrintedReport::default();
        let mut in_lines = false;
        for line in stdout.lines() {
            if line == "*** Report ***" {
                in_lines = true;
                continue;
            }
            if line.starts_with("Finished ") {
                in_lines = false;
                continue;
            }
            if in_lines {
                if let Some(url) = line.split(' ').next() {
                    r.urls.push(url.to_string());
                }
                continue;
            }
            if let Some(v) = line.strip_prefix("Todo: ") {
                r.todo = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("Done: ") {
                r.done = v.trim().parse().ok();
            } else if let Some((head, k)) = line.split_once(", achieved concurrency = ") {
                r.concurrency = k.trim().parse().ok();
                // "<N> URLs fetched in <secs> seconds"
                r.secs = head
                    .split_once(" fetched in ")
                    .and_then(|(_, s)| s.strip_suffix(" seconds"))
                    .and_then(|s| s.trim().parse().ok());
            } else {
                // "%10d key"
                let mut parts = line.split_whitespace();
                if let (Some(n), Some(key), None) = (parts.next(), parts.next(), parts.next()) {
                    if let Ok(n) = n.parse::<u64>() {
                        r.stats.insert(key.to_string(), n);
                    }
                }
            }
        }
        r
    }

    /// A stats count, 0 when absent (the report omits zero lines).
    pub fn stat(&self, key: &str) -> u64 {
        self.stats.get(key).copied().unwrap_or(0)
    }

    /// Why this report is not the expected crawl, or `None` if it is: the
    /// `Done` count, a complete crawl (`Todo: 0`) and the exact URL set.
    pub fn mismatch(&self, expected: &BTreeSet<String>) -> Option<String> {
        let Some(done) = self.done else {
            return Some("no report (no Done: line)".to_string());
        };
        if done != expected.len() as u64 {
            return Some(format!("Done: {done}, expected {}", expected.len()));
        }
        if self.todo != Some(0) {
            return Some(format!("Todo: {:?}, expected 0", self.todo));
        }
        let got: BTreeSet<&str> = self.urls.iter().map(String::as_str).collect();
        let missing: Vec<&String> = expected
            .iter()
            .filter(|u| !got.contains(u.as_str()))
            .collect();
        if let Some(first) = missing.first() {
            return Some(format!(
                "{} expected URLs missing from the report, e.g. {first}",
                missing.len()
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{FailKind, FetchError};

    #[test]
    fn stranded_urls_are_an_internal_error_that_names_where_they_were() {
        let stranded = Stranded {
            queued: 4,
            waiting_for_socket: 2,
            in_flight: 1,
            held: Held::default(),
        };
        let text = stranded.to_string();
        assert!(text.starts_with("internal error: "), "{text}");
        assert!(
            text.contains("7 URL(s) still to do (4 queued, 2 waiting for a socket, 1 in flight)"),
            "{text}"
        );
        assert!(text.contains("not a problem with the site"), "{text}");
    }

    /// A fetch counted in flight that was never given back is not a URL
    /// left: the figures add up to the URLs left, and the count that does
    /// not is named among what the crawl still holds.
    #[test]
    fn stranded_figures_add_up_to_the_urls_left() {
        let held = Held {
            in_flight: 3,
            ..Held::default()
        };
        let stranded = Stranded::new(2, 0, 3, held);
        assert_eq!(
            (
                stranded.queued,
                stranded.waiting_for_socket,
                stranded.in_flight
            ),
            (0, 0, 2),
            "two URLs left, three fetches counted in flight: the two are in flight"
        );
        let text = stranded.to_string();
        assert!(
            text.contains("2 URL(s) still to do (0 queued, 0 waiting for a socket, 2 in flight)"),
            "{text}"
        );
        assert!(
            text.contains("not given back: 3 fetches still counted in flight"),
            "{text}"
        );
        let split = Stranded::new(5, 2, 1, Held::default());
        assert_eq!(
            (
                split.queued,
                split.waiting_for_socket,
                split.in_flight,
                split.total()
            ),
            (2, 2, 1, 5),
            "five URLs left: two waiting for a socket, one in flight, two queued"
        );
        let short = Stranded::new(1, 4, 2, Held::default());
        assert_eq!(
            (short.queued, short.waiting_for_socket, short.in_flight),
            (0, 1, 0),
            "one URL left and four fetches in line: the one is in line"
        );
    }

    /// The explanation names the count that does not add up, and blames the
    /// socket budget only when it is whole and fetches still wait for it.
    #[test]
    fn stranded_urls_name_what_was_not_given_back() {
        let stranded = |waiting_for_socket, held| Stranded {
            queued: 2,
            waiting_for_socket,
            in_flight: 0,
            held,
        };
        let lost = stranded(
            0,
            Held {
                workers_lost: 2,
                ..Held::default()
            },
        )
        .to_string();
        assert!(
            lost.contains("not given back: 2 workers ended before the crawl did"),
            "{lost}"
        );
        assert!(!lost.contains("socket budget"), "{lost}");
        let leaked = stranded(
            3,
            Held {
                in_flight: 1,
                timers: 1,
                ..Held::default()
            },
        )
        .to_string();
        assert!(
            leaked.contains(
                "1 fetch still counted in flight (its place in the socket budget never given \
                 back); 1 timer still set on the event loop"
            ),
            "{leaked}"
        );
        let line = stranded(3, Held::default()).to_string();
        assert!(
            line.contains("the end of each must let a fetch waiting for a socket go"),
            "{line}"
        );
        let queued = stranded(0, Held::default()).to_string();
        assert!(
            queued.contains("queued with nothing left to take them"),
            "{queued}"
        );
        assert_eq!(Held::default().to_string(), "nothing held");
    }

    fn stat(url: &str) -> FetchStatistic {
        FetchStatistic {
            url: url.into(),
            ..Default::default()
        }
    }

    fn sample() -> CrawlReport {
        CrawlReport {
            stats: vec![
                FetchStatistic {
                    status: Some(200),
                    content_type: Some("text/html".into()),
                    encoding: Some("utf-8".into()),
                    size: 120,
                    num_urls: 3,
                    num_new_urls: 2,
                    ..stat("http://h/")
                },
                FetchStatistic {
                    status: Some(404),
                    content_type: None,
                    encoding: None,
                    size: 9,
                    ..stat("http://h/missing")
                },
                FetchStatistic::failed(
                    "http://h/broken",
                    FetchError::new(FailKind::Reset, "connection reset"),
                ),
                FetchStatistic {
                    status: Some(301),
                    next_url: Some("http://h/dir/".into()),
                    ..stat("http://h/dir")
                },
                FetchStatistic {
                    status: Some(200),
                    content_type: Some("application/xml".into()),
                    encoding: Some("iso-8859-1".into()),
                    size: 40,
                    ..stat("http://h/a.xml")
                },
                FetchStatistic::failed(
                    "https://h/",
                    FetchError::new(FailKind::Unsupported, "https not supported"),
                ),
            ],
            elapsed: Duration::from_millis(2500),
            max_tasks: 4,
            peak_in_flight: 3,
            todo: 0,
            held: Held::default(),
        }
    }

    #[test]
    fn golden_report() {
        let expected = "\
*** Report ***
http://h/ 200 text/html utf-8 120 2/3
http://h/a.xml 200 application/xml iso-8859-1 40
http://h/broken error connection reset
http://h/dir 301 redirect http://h/dir/
http://h/missing 404 - - 9
https://h/ error https not supported
Finished 6 urls in 2.500 secs (max_tasks=4) (0.600 urls/sec/task)
         1 error
         9 error_bytes
         2 fail
         1 fail_reset
         1 fail_unsupported
         1 html
       120 html_bytes
         1 other
        40 other_bytes
         1 redirect
         1 status_404
Todo: 0
Done: 6
6 URLs fetched in 2.5 seconds, achieved concurrency = 3
";
        assert_eq!(sample().render(), expected);
    }

    #[test]
    fn counts_add_up_to_done() {
        let report = sample();
        let c = report.counts();
        let sum: usize = ["html", "other", "error", "redirect", "fail"]
            .iter()
            .map(|k| c.get(*k).copied().unwrap_or(0))
            .sum();
        assert_eq!(sum, report.stats.len());
    }

    #[test]
    fn empty_crawl_has_no_division_by_zero() {
        let report = CrawlReport::default();
        let text = report.render();
        assert!(text.contains("Finished 0 urls in 0.000 secs (max_tasks=0) (0.000 urls/sec/task)"));
        assert!(!report.received_any_status());
    }

    #[test]
    fn lines_sort_by_bytes_not_by_locale() {
        let report = CrawlReport {
            stats: vec![stat("http://h/b"), stat("http://h/B"), stat("http://h/a")],
            ..Default::default()
        };
        let urls: Vec<_> = report.sorted().iter().map(|s| s.url.as_str()).collect();
        assert_eq!(urls, ["http://h/B", "http://h/a", "http://h/b"]);
    }

    const REPORT: &str = "*** Report ***\n\
        http://a/ 200 text/html utf-8 10 1/1\n\
        http://a/b 404 - - 0\n\
        Finished 2 urls in 0.010 secs (max_tasks=4) (50.000 urls/sec/task)\n\
        \x20        1 error\n\
        \x20        1 html\n\
        \x20       10 html_bytes\n\
        \x20        1 status_404\n\
        Todo: 0\n\
        Done: 2\n\
        2 URLs fetched in 0.0 seconds, achieved concurrency = 1\n";

    #[test]
    fn parses_the_spec_report() {
        let r = PrintedReport::parse(REPORT);
        assert_eq!(r.urls, ["http://a/", "http://a/b"]);
        assert_eq!(r.done, Some(2));
        assert_eq!(r.todo, Some(0));
        assert_eq!(r.concurrency, Some(1));
        assert_eq!(r.secs, Some(0.0));
        assert_eq!(r.stat("html_bytes"), 10);
        assert_eq!(r.stat("fail"), 0);
        let expected: BTreeSet<String> = ["http://a/", "http://a/b"].map(String::from).into();
        assert_eq!(r.mismatch(&expected), None);
        let other: BTreeSet<String> = ["http://a/", "http://a/c"].map(String::from).into();
        assert!(r.mismatch(&other).unwrap().contains("http://a/c"));
        assert!(PrintedReport::parse("").mismatch(&expected).is_some());
    }
}
