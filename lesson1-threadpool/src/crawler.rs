//! # The crawler: what the threads share, and the lock around the seen-set
//!
//! Every fetcher thread runs [`Crawler::fetch`] on the one `Crawler`: fetch
//! a URL, find its links, queue the new ones, record how the URL ended. The
//! crawler's state is therefore shared by all the threads at once, and each
//! piece of it that changes sits behind a [`Mutex`]. Rust insists on that —
//! a `HashSet` shared by threads cannot be changed without a lock; the
//! program would not compile — but the compiler cannot tell *how much* work
//! must happen under one lock. That is this file's lesson:
//!
//! "Is this link new?" and "mark it seen, queue it" must be **one step**.
//! Taken as two (two lockings, or a check made earlier and acted on later),
//! two threads that found the same link both see it as new, and both queue
//! it: the page is fetched twice, reported twice, and counted as new on two
//! pages. Nothing slow (no socket, no parsing) ever runs under a lock.
//!
//! <!-- how -->
//! [`Crawler::add_urls`] does the check and the change in one
//! `HashSet::insert` under one locking, and puts the new URLs on the queue
//! before it lets go.
//!
//! The other shared pieces — the finished statistics and the count of
//! fetches in flight — each have a lock of their own, held for a line or
//! two.
//! <!-- /how -->
//!
//! The count of fetches in flight does a second job: it is where a thread
//! waits for a file descriptor. Every fetch needs a socket, a process may
//! hold only so many, and `--threads 100` under a limit of 64 open files
//! would otherwise fail URLs with "too many open files". [`InFlight::start`]
//! lets a fetch begin only while fewer than the socket budget are in
//! flight, and otherwise sleeps on a `Condvar` until one ends: lesson 1's
//! thread pool, with a semaphore in front of the sockets.
//!
//! Before a fetch, a thread also waits for the URL's turn — robots.txt, the
//! host's slot under `--delay`, `--max-pages` — in [`crate::polite`].

use std::collections::HashSet;
use std::time::Duration;

use shared::http::{Limits, Response};
use shared::links::{self, Fingerprint, Link, UrlPolicy};
use shared::log::{Level, Log};
use shared::net::Resolver;
use shared::page::{self, Analysis};
use shared::polite::Turn;
use shared::status::Progress;
use shared::trace::{Lane, Phase, Trace};
use shared::{report, Config, CrawlReport, FailKind, FetchError, FetchStatistic, Held, Stranded};
use url::Url;

use crate::fetch::{self, Fetched};
use crate::polite::Turns;
use crate::queue::Queue;
use crate::sync::{Condvar, Mutex, MutexGuard};

// ANCHOR: crawler
/// The crawl-wide state, shared by all the fetcher threads (behind an `Arc`).
#[derive(Debug)]
pub struct Crawler {
    /// The roots, normalized and without duplicates: the first URLs queued.
    roots: Vec<Url>,
    /// Which links and redirect targets are followed (hosts, schemes, `--exclude`).
    policy: UrlPolicy,
    /// One resolver for the crawl, so each host name is looked up once,
    /// whichever thread asks first.
    resolver: Resolver,
    /// `--timeout`: the deadline for each whole fetch.
    timeout: Duration,
    /// Response size limits, handed to each fetch's parser.
    limits: Limits,
    /// `--user-agent`, sent with every request.
    user_agent: String,
    /// Where the per-URL lines go. Each call writes a whole line, so the
    /// threads' lines never interleave mid-line.
    log: Log,
    /// `--trace`: where each fetch and its phases are recorded (off unless
    /// asked for). Each fetch goes on its thread's lane.
    trace: Trace,
    /// Every URL ever queued: the roots, then each link and redirect target
    /// the first time any thread finds it, each kept as its
    /// [`Fingerprint`] (16 bytes that stand for the URL's text). Behind a
    /// lock because every thread reads *and* changes it; see
    /// [`Crawler::add_urls`]. `std`'s `HashSet` hashes with SipHash under
    /// keys drawn at random for each process, and so do fingerprints, and
    /// that matters here: the pages choose these URLs, and a hash they could
    /// predict would let a hostile site send links that all land in one
    /// bucket, making every look-up slow (hash flooding).
    seen_urls: Mutex<HashSet<Fingerprint>>,
    /// One statistic per finished URL, in the order they finished.
    done: Mutex<Vec<FetchStatistic>>,
    /// Fetches in flight now, and the most at once; where a fetch waits for
    /// a file descriptor.
    in_flight: InFlight,
    /// robots.txt, the hosts' slots and `--max-pages`: what a thread waits
    /// for before each fetch.
    turns: Turns,
}
// ANCHOR_END: crawler

impl Crawler {
    // ANCHOR: new
    /// The crawler for `config`: roots normalized (`http://` added where
    /// missing, fragment dropped), duplicates removed, and all of them
    /// already in `seen_urls` so that a link back to a root is not new. At
    /// most `socket_budget` fetches hold a socket at once.
    pub fn new(config: &Config, socket_budget: usize) -> anyhow::Result<Crawler> {
        let roots = links::normalize_roots(&config.roots)?;
        Ok(Crawler {
            policy: UrlPolicy::new(&roots, config.exclude.clone(), config.lenient),
            seen_urls: Mutex::new(roots.iter().map(Fingerprint::from).collect()),
            roots,
            resolver: Resolver::new(),
            timeout: config.timeout,
            limits: config.limits,
            user_agent: config.user_agent.clone(),
            log: config.log.clone(),
            trace: config.trace.clone(),
            done: Mutex::new(Vec::new()),
            in_flight: InFlight::new(socket_budget),
            turns: Turns::new(config),
        })
    }
    // ANCHOR_END: new

    /// The roots, for the main thread to queue.
    pub fn roots(&self) -> &[Url] {
        &self.roots
    }

    // ANCHOR: fetch
    /// One URL, start to finish: what a fetcher thread does with each URL it
    /// takes from `urls_todo`, with its depth (roots are 0). Runs on many
    /// threads at once.
    pub fn fetch(&self, urls_todo: &Queue<(Url, usize)>, (url, depth): (Url, usize)) {
        self.trace.queued(urls_todo.qsize());
        // First the URL's turn (robots.txt, the host's slot, --max-pages).
        match self.turns.wait(&url, |robots| self.get(robots)) {
            Turn::Fetch => {}
            Turn::Blocked(stat) => return self.record_statistic(stat),
            Turn::Skip => return,
        }
        // The slow part — network and parsing — holds no lock.
        let span = self.trace.fetch(url.as_str(), Lane::Thread);
        // ANCHOR: traced_get
        let fetched = span.in_scope(|| self.get(&url));
        // ANCHOR_END: traced_get
        let stat = match fetched {
            Err(error) => FetchStatistic::failed(url.as_str(), error),
            Ok(response) => {
                span.phase(Phase::Links);
                let Analysis {
                    mut stat,
                    links,
                    redirect,
                } = page::analyze(&url, &response, &self.policy, &self.log);
                // `--max-depth`: the links of a page at the last depth are
                // counted on its line but not queued.
                let links = self.turns.links_at(depth, links);
                let is_new = self.add_urls(urls_todo, &links, depth + 1);
                stat.num_new_urls = is_new.iter().filter(|&&new| new).count();
                self.log_queued(&url, &links, &is_new);
                if let Some(next) = redirect {
                    // A redirect target is queued like a link, at the
                    // depth of the URL that moved: lesson 1 keeps no count
                    // of how long a chain has become.
                    if self.add_urls(urls_todo, std::slice::from_ref(&next), depth)[0] {
                        self.log.info(format_args!("redirect to {next} from {url}"));
                    } else {
                        self.log.debug(format_args!(
                            "skip redirect {next} from {url}: already seen"
                        ));
                    }
                }
                stat
            }
        };
        span.end(&stat);
        self.record_statistic(stat);
        // Back in the pool, the guard now calls `task_done` for `url` —
        // after its links were put, so `join` cannot see zero too early.
    }
    // ANCHOR_END: fetch

    // ANCHOR: get
    /// Fetch `url` on this thread, waiting for a file descriptor if none is
    /// free.
    fn get(&self, url: &Url) -> Result<Response, FetchError> {
        loop {
            // Waits while the socket budget is spent; the fetch is in flight
            // from here until this guard is dropped at the end of the turn.
            let in_flight = self.in_flight.start();
            let fetched = fetch::get(
                url,
                &self.resolver,
                self.timeout,
                self.limits,
                &self.user_agent,
            );
            match fetched {
                Fetched::Done(result) => return result,
                // No descriptor after all: the budget was too hopeful. The
                // fetches in flight will each close one; wait for that.
                Fetched::OutOfDescriptors if in_flight.out_of_descriptors() => {
                    self.log
                        .debug(format_args!("wait {url}: out of file descriptors"));
                }
                // None in flight, so none will be freed: a real failure.
                Fetched::OutOfDescriptors => {
                    return Err(FetchError::new(FailKind::Connect, "too many open files"));
                }
            }
        }
    }
    // ANCHOR_END: get

    // ANCHOR: add_urls
    /// Mark each of `links` seen and queue it at `depth`, unless a thread
    /// already did. Says, for each, whether it was new: the page's
    /// `num_new_urls`.
    pub fn add_urls(
        &self,
        urls_todo: &Queue<(Url, usize)>,
        links: &[Link],
        depth: usize,
    ) -> Vec<bool> {
        // Poisoned only if a thread panicked while holding it, and the crawl
        // is then being stopped by that panic anyway (see `pool.rs`).
        let mut seen_urls = self.seen_urls.lock().expect("seen_urls lock poisoned");
        links
            .iter()
            .map(|link| {
                // `insert` is the check and the change in one step, under
                // one locking: `false` when the URL was already there. That
                // is what makes "new" mean new to the whole crawl.
                let is_new = seen_urls.insert(link.fingerprint());
                if is_new {
                    // Queued with the lock still held, as the tutorial does.
                    // (Queuing after the unlock would be correct too: only
                    // the one thread whose `insert` said "new" queues it.)
                    // `put` fails only once the queue has been shut down,
                    // which happens while a panic is stopping the crawl.
                    let _ = urls_todo.put((link.to_url(), depth));
                }
                is_new
            })
            .collect()
        // The lock is released here, when `seen_urls` goes out of scope.
    }
    // ANCHOR_END: add_urls

    // ANCHOR: record
    /// The `-v` lines for a page's links, written after the lock is released.
    fn log_queued(&self, url: &Url, links: &[Link], is_new: &[bool]) {
        if !self.log.enabled(Level::Debug) {
            return;
        }
        for (link, &new) in links.iter().zip(is_new) {
            if new {
                self.log.debug(format_args!("queue {link} from {url}"));
            } else {
                self.log
                    .debug(format_args!("skip {link} from {url}: already seen"));
            }
        }
    }

    /// Log the URL's line (the tutorial's `print(url)`) and keep its
    /// statistic; redraw the status line, if it is shown.
    fn record_statistic(&self, stat: FetchStatistic) {
        self.log.info(report::line(&stat));
        let mut done = self.done.lock().expect("done lock poisoned");
        done.push(stat);
        // Counted only when the line is redrawn. Queued: known, not
        // finished, not in flight and not left by `--max-pages` (waiting for
        // a thread, a socket or its turn).
        self.log.progress(|| {
            let in_flight = self.in_flight.now();
            let left = done.len() + in_flight + self.turns.over_limit();
            Progress::of(&done, in_flight, self.seen_count().saturating_sub(left))
        });
    }

    /// How many URLs have been seen (queued at some time).
    fn seen_count(&self) -> usize {
        self.seen_urls
            .lock()
            .expect("seen_urls lock poisoned")
            .len()
    }

    /// Once the pool's `join` has returned: were all URLs finished? Each
    /// URL seen is finished, or left by `--max-pages`; any other is a URL
    /// marked done without being fetched — a bug in the crawler, said as
    /// such.
    pub fn all_done(&self, held: Held) -> Result<(), Stranded> {
        let finished = self.done.lock().expect("done lock poisoned").len();
        let left = self
            .seen_count()
            .saturating_sub(finished + self.turns.over_limit());
        if left == 0 {
            return Ok(());
        }
        Err(Stranded::new(left, 0, self.in_flight.now(), held))
    }

    /// What the crawl still holds once the threads have ended: fetches
    /// counted in flight (each a place in the socket budget) and hosts
    /// whose robots.txt never came back. Nothing, after a sound crawl: the
    /// guards give both back however a fetch ends.
    pub fn held(&self) -> Held {
        Held {
            in_flight: self.in_flight.now(),
            robots_pending: self.turns.robots_pending(),
            ..Held::default()
        }
    }

    /// The report, once the threads have finished. `threads` is `M` on the
    /// `Finished` line.
    pub fn report(&self, elapsed: Duration, threads: usize, held: Held) -> CrawlReport {
        let stats = std::mem::take(&mut *self.done.lock().expect("done lock poisoned"));
        let seen = self.seen_count();
        CrawlReport {
            todo: seen.saturating_sub(stats.len()),
            stats,
            elapsed,
            max_tasks: threads,
            peak_in_flight: self.in_flight.peak(),
            held,
        }
    }
    // ANCHOR_END: record
}

// ANCHOR: in_flight
/// Counts fetches in flight, and remembers the most there ever were at once:
/// the report's "achieved concurrency". In lesson 1 it can never exceed
/// `--threads` — a thread does one fetch at a time — nor the socket budget:
/// a fetch that would exceed it waits.
#[derive(Debug)]
pub struct InFlight {
    /// The numbers, changed together under one lock so the peak is a count
    /// that really happened and no two threads take the last socket.
    counts: Mutex<Counts>,
    /// Notified when a fetch ends: a thread waiting in [`InFlight::start`]
    /// for a descriptor may go.
    ended: Condvar,
}

/// What [`InFlight`] guards.
#[derive(Debug)]
struct Counts {
    /// Fetches in flight now.
    now: usize,
    /// The most at once.
    peak: usize,
    /// How many may be in flight at once: one socket each.
    budget: usize,
}

impl InFlight {
    /// No fetch in flight yet; at most `budget` at once (at least one).
    pub fn new(budget: usize) -> InFlight {
        InFlight {
            counts: Mutex::new(Counts {
                now: 0,
                peak: 0,
                budget: budget.max(1),
            }),
            ended: Condvar::new(),
        }
    }

    /// Wait until a fetch may open a socket, then count it in flight until
    /// the returned guard is dropped, however the fetch ends.
    pub fn start(&self) -> InFlightGuard<'_> {
        let mut counts = self.lock();
        // A loop, not an `if`: a `Condvar` may wake a thread spuriously, or
        // another thread may take the freed socket first.
        while counts.now >= counts.budget {
            counts = self.ended.wait(counts).unwrap_or_else(|e| e.into_inner());
        }
        counts.now += 1;
        counts.peak = counts.peak.max(counts.now);
        InFlightGuard(self)
    }

    /// Fetches in flight right now.
    pub fn now(&self) -> usize {
        self.lock().now
    }

    /// The most fetches that were ever in flight at once.
    pub fn peak(&self) -> usize {
        self.lock().peak
    }

    /// How many fetches may hold a socket at once now.
    pub fn budget(&self) -> usize {
        self.lock().budget
    }

    /// The lock, even if a thread panicked while holding it: the counts are
    /// plain numbers, never left half-changed.
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One fetch in flight; dropping it ends the fetch's count.
#[derive(Debug)]
pub struct InFlightGuard<'a>(&'a InFlight);

impl InFlightGuard<'_> {
    /// This fetch found no descriptor for its socket. The process holds no
    /// more sockets than the *other* fetches in flight have open, so that
    /// becomes the budget. Says whether any other fetch is in flight: if
    /// not, none will free a descriptor, and waiting would be forever.
    pub fn out_of_descriptors(&self) -> bool {
        let mut counts = self.0.lock();
        let others = counts.now - 1;
        if others > 0 {
            counts.budget = counts.budget.min(others);
        }
        others > 0
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        // Not `expect`: this may run while a panic unwinds, where a second
        // panic would abort the process.
        self.0.lock().now -= 1;
        self.0.ended.notify_one();
    }
}
// ANCHOR_END: in_flight
