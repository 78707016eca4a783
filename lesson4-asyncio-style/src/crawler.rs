//! # The crawler: the original chapter's `Crawler`, in Rust
//!
//! Lessons 1–3 started a fetch for each new URL as it was found (on a thread
//! of the pool, or as a new coroutine). The original crawler — the one this
//! course has been heading for — does it the other way round: `crawl()`
//! starts `--max-tasks` **worker** tasks, and each one loops over
//!
//! ```text
//! (url, max_redirect) = await q.get()
//! await fetch(url, max_redirect)      # may q.put_nowait new links
//! q.task_done()
//! ```
//!
//! while `crawl()` itself waits on `q.join()`. When the last item is marked
//! done, `join` returns, and `crawl()` **cancels** the workers, which are all
//! suspended in `q.get()` by then.
//!
//! What the full crawler adds over lessons 1–3, all in `Crawler::fetch`:
//!
//! - **retries**: a network failure (a retryable [`shared::FailKind`]) is
//!   tried again, up to `--max-tries` attempts, each with its own deadline;
//! - **redirects through the queue**: a redirect is not followed inside the
//!   fetch. Its target goes back in the queue with one redirect fewer
//!   allowed, so chains that meet are fetched once (the seen-set), cycles
//!   end, and a chain longer than `--max-redirect` is cut with an error line;
//! - **a bounded number of fetches**: never more than the workers;
//! - **connection reuse** ([`crate::connection_pool`]).
//!
//! There is still no lock. Deciding which links are new and queuing them
//! happen between two `.await`s, so no other task can run in between: the
//! seen-set check and the insert are one step, as they were in lesson 3.
//!
//! Before each fetch a URL waits for its turn (robots.txt, the host's slot
//! under `--delay`, `--max-pages`) in [`crate::polite`]: lesson 3's
//! coroutine, on this runtime. Most URLs have it at once; one that must
//! wait does so in a task of its own ([`Crawler::wait_for_turn`]), not in
//! a worker, which goes on with the next URL.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use shared::http::Response;
use shared::links::{self, Fingerprint, Link, UrlPolicy};
use shared::log::Log;
use shared::page::{self, Analysis};
use shared::polite::Turn;
use shared::status::Progress;
use shared::trace::{self, Lane, Phase, Trace};
use shared::{report, Config, CrawlReport, FetchError, FetchStatistic, Held, Stranded};
use url::Url;

use crate::connection_pool::{ConnectionPool, OutOfDescriptors, MAX_IDLE_PER_HOST};
use crate::event_loop::get_running_loop;
use crate::fetch::{fetch, Session};
use crate::future::is_cancelled;
use crate::polite::Turns;
use crate::queue::Queue;
use crate::sleep::sleep;
use crate::task::Task;

/// The crawl-wide state: what the original keeps on `self`.
pub struct Crawler {
    /// The roots, normalized and deduplicated (for the report's first URLs
    /// and the host policy).
    roots: Vec<Url>,
    /// Which links are followed: scheme, hosts, `--exclude`.
    policy: UrlPolicy,
    /// `--max-redirect`: how many redirects a chain may take from a URL
    /// found as a link (or a root).
    max_redirect: usize,
    /// `--max-tries`: attempts per URL on network errors.
    max_tries: usize,
    /// `--max-tasks`: the number of workers.
    max_tasks: usize,
    /// Where the log lines go.
    log: Log,
    /// `--trace`: where each attempt and its phases are recorded (off
    /// unless asked for), on its worker's lane.
    trace: Trace,
    /// The work: `(url, redirects still allowed, depth, turn given)`. The
    /// last is `true` for a URL that already waited for its turn (see
    /// [`Crawler::wait_for_turn`]).
    q: Queue<(Url, usize, usize, bool)>,
    /// Every URL ever queued: roots, new links, redirect targets, each as
    /// its [`Fingerprint`], as in lessons 1–3.
    seen_urls: RefCell<HashSet<Fingerprint>>,
    /// One statistic per finished URL.
    done: RefCell<Vec<FetchStatistic>>,
    /// The connection pool, the deadline and the limits, shared by all
    /// workers.
    session: Session,
    /// robots.txt, the hosts' slots and `--max-pages`, and what the workers
    /// waiting for their turn wait on.
    turns: Turns,
    /// When the crawl started, for the report.
    t0: Cell<Instant>,
    /// When it ended (`None` while it runs).
    t1: Cell<Option<Instant>>,
    /// The workers, while the crawl runs: one that is done and was not
    /// cancelled ended on its own, which a failed fetch must never make it.
    workers: RefCell<Vec<Task<()>>>,
    /// What the loop still held as `crawl` ended (sockets registered,
    /// timers set): asked while the loop runs, since `run` closes it after.
    loop_held: Cell<Held>,
}

impl Crawler {
    /// A crawler for `config`, its roots already queued, with at most
    /// `socket_budget` sockets open at once.
    pub fn new(config: &Config, socket_budget: usize) -> anyhow::Result<Crawler> {
        let roots = links::normalize_roots(&config.roots)?;
        let crawler = Crawler {
            policy: UrlPolicy::new(&roots, config.exclude.clone(), config.lenient),
            max_redirect: config.max_redirect,
            max_tries: config.max_tries.max(1),
            max_tasks: config.max_tasks.max(1),
            log: config.log.clone(),
            trace: config.trace.clone(),
            q: Queue::new(),
            seen_urls: RefCell::new(HashSet::new()),
            done: RefCell::new(Vec::new()),
            session: Session::new(
                ConnectionPool::new(MAX_IDLE_PER_HOST, socket_budget),
                config.timeout,
                config.limits,
                &config.user_agent,
                config.log.clone(),
            ),
            turns: Turns::new(config),
            t0: Cell::new(Instant::now()),
            t1: Cell::new(None),
            workers: RefCell::new(Vec::new()),
            loop_held: Cell::new(Held::default()),
            roots,
        };
        // Roots are exempt from `--exclude`: they are queued without asking
        // the policy.
        for root in &crawler.roots {
            crawler.add_url(root.clone(), crawler.max_redirect, 0);
            crawler.log.debug(format_args!("queue {root}"));
        }
        Ok(crawler)
    }

    /// The roots, as normalized.
    pub fn roots(&self) -> &[Url] {
        &self.roots
    }

    // ANCHOR: crawl
    /// Run the crawl until all work is done: start the workers, wait for
    /// the queue to be joined, cancel the workers.
    pub async fn crawl(self: Rc<Self>) -> anyhow::Result<()> {
        self.t0.set(Instant::now());
        let event_loop = get_running_loop();
        event_loop.set_trace(self.trace.clone());
        let workers: Vec<Task<()>> = (1..=self.max_tasks)
            .map(|worker| event_loop.create_task(self.clone().work(worker)))
            .collect();
        *self.workers.borrow_mut() = workers.clone();
        self.q.join().await?;
        for worker in &workers {
            worker.cancel();
        }
        // Let each worker see its cancellation and finish (it is suspended
        // in `q.get()`, which returns `Err(Cancelled)`).
        for worker in workers {
            if let Err(err) = worker.await {
                if !is_cancelled(&err) {
                    self.log.error(format_args!("worker failed: {err:#}"));
                }
            }
        }
        self.session.pool.close();
        self.loop_held.set(Held {
            registered: event_loop.registered(),
            timers: event_loop.pending_timers(),
            ..Held::default()
        });
        self.t1.set(Some(Instant::now()));
        Ok(())
    }

    /// A worker: take a URL, fetch it, mark it done; forever, until
    /// cancelled. `worker` numbers it (from 1) for the trace's lanes.
    #[expect(clippy::manual_async_fn, reason = "an async fn keeps arguments twice")]
    fn work(self: Rc<Self>, worker: usize) -> impl Future<Output = anyhow::Result<()>> {
        async move {
            loop {
                let (url, max_redirect, depth, turn_given) = self.q.get().await?;
                self.trace.queued(self.q.qsize());
                // Its turn, decided in a block of its own: a `Turn` is 160
                // bytes, and a local that lived on across the fetch's
                // `.await` would be kept in every waiting worker.
                let its_turn = {
                    let turn = if turn_given {
                        Some(Turn::Fetch)
                    } else {
                        self.turns.ready(&url, get_running_loop().time())
                    };
                    match turn {
                        Some(Turn::Fetch) => true,
                        Some(Turn::Blocked(stat)) => {
                            self.record_statistic(stat);
                            false
                        }
                        Some(Turn::Skip) => false,
                        None => {
                            // Not its turn yet (robots.txt to fetch, or its
                            // host's slot to come): a task of its own waits
                            // for it, so that no worker sleeps while other
                            // hosts' URLs are queued.
                            let waiting = self.clone().wait_for_turn(url, max_redirect, depth);
                            get_running_loop().create_task(waiting);
                            continue;
                        }
                    }
                };
                let fetched = if its_turn {
                    // Yield once, as `await asyncio.sleep(0)` would: the
                    // callbacks already queued (other ready sockets) run
                    // before this request goes out. Sending at once measured
                    // 3 % slower on the Rust documentation crawl.
                    sleep(Duration::ZERO).await?;
                    // The fetch is traced on this worker's lane: while it
                    // runs, its phases are marked on its span.
                    let span = self.trace.fetch(url.as_str(), Lane::Worker(worker));
                    span.instrument(pin!(self.fetch(&url, max_redirect, depth)))
                        .await
                } else {
                    Ok(())
                };
                self.q.task_done()?;
                fetched?;
            }
        }
    }
    // ANCHOR_END: crawl

    // ANCHOR: fetch
    /// Fetch one URL with retries, record how it ended, and queue what it
    /// leads to: a redirect's target, or the page's new links. Only a
    /// cancellation of the worker comes out as an error.
    ///
    /// (A function that returns an `async move` block rather than an `async
    /// fn`, for the reason [`crate::fetch`] gives: this coroutine is part of
    /// every waiting fetch.)
    #[expect(clippy::manual_async_fn, reason = "an async fn keeps arguments twice")]
    fn fetch<'a>(
        &'a self,
        url: &'a Url,
        max_redirect: usize,
        depth: usize,
    ) -> impl Future<Output = anyhow::Result<()>> + 'a {
        async move {
            let mut tries = 0;
            let response = loop {
                tries += 1;
                // One slice per attempt in the trace.
                trace::attempt(tries);
                match fetch(&self.session, url).await {
                    Ok(response) => {
                        if tries > 1 {
                            self.log.info(format_args!("try {tries} for {url} success"));
                        }
                        break response;
                    }
                    Err(err) if is_cancelled(&err) => return Err(err),
                    // Not this URL's failure: acquire again, and wait.
                    Err(err) if err.is::<OutOfDescriptors>() => {
                        self.log
                            .debug(format_args!("wait {url}: out of file descriptors"));
                        tries -= 1;
                    }
                    Err(err) => {
                        let err = FetchError::from_anyhow(&err);
                        trace::fail(&err);
                        self.log
                            .info(format_args!("try {tries} for {url} raised {err}"));
                        if tries >= self.max_tries || !err.kind.is_retryable() {
                            self.log
                                .error(format_args!("{url} failed after {tries} tries"));
                            self.record_statistic(FetchStatistic::failed(url.as_str(), err));
                            return Ok(());
                        }
                    }
                }
            };

            trace::phase(Phase::Links);
            let Analysis {
                mut stat,
                links,
                redirect,
            } = page::analyze(url, &response, &self.policy, &self.log);
            // The body may be megabytes; the links are all we need of it now.
            drop(response);
            // A response can still end in failure (a redirect without
            // `Location`): it is not retried — the server would say the same
            // again — but it is a failure, and gets the failure's error line.
            if stat.error.is_some() {
                self.log
                    .error(format_args!("{url} failed after {tries} tries"));
            }

            if let Some(next_url) = redirect {
                trace::end(&stat);
                self.record_statistic(stat);
                if self.seen_urls.borrow().contains(&next_url.fingerprint()) {
                    // We have been down this path before.
                    self.log.debug(format_args!(
                        "skip redirect {next_url} from {url}: already seen"
                    ));
                } else if max_redirect > 0 {
                    self.log
                        .info(format_args!("redirect to {next_url} from {url}"));
                    self.add_url(next_url.to_url(), max_redirect - 1, depth);
                } else {
                    self.log.error(format_args!(
                        "redirect limit reached for {next_url} from {url}"
                    ));
                }
            } else {
                // `--max-depth`: the links of a page at the last depth are
                // counted on its line, not queued.
                let links = self.turns.links_at(depth, links);
                stat.num_new_urls = self.add_links(url, links, depth + 1);
                trace::end(&stat);
                self.record_statistic(stat);
            }
            Ok(())
        }
    }
    // ANCHOR_END: fetch

    // ANCHOR: add_links
    /// Queue the links of `page` not seen before, at `depth`; returns how many (`NEW`).
    fn add_links(&self, page: &Url, links: Vec<Link>, depth: usize) -> usize {
        let mut new = 0;
        for link in links {
            // The check and the change in one step, as in lessons 1–3; no
            // other task runs until the next `.await`. Most links are seen
            // already: only a new one is parsed (`to_url`).
            if self.seen_urls.borrow_mut().insert(link.fingerprint()) {
                self.log.debug(format_args!("queue {link} from {page}"));
                self.q
                    .put_nowait((link.to_url(), self.max_redirect, depth, false));
                new += 1;
            } else {
                self.log
                    .debug(format_args!("skip {link} from {page}: already seen"));
            }
        }
        new
    }

    /// Mark `url` seen and queue it, with `max_redirect` redirects allowed, at `depth`.
    fn add_url(&self, url: Url, max_redirect: usize, depth: usize) {
        self.seen_urls.borrow_mut().insert(Fingerprint::from(&url));
        self.q.put_nowait((url, max_redirect, depth, false));
    }
    // ANCHOR_END: add_links

    // ANCHOR: wait_for_turn
    /// Wait for `url`'s turn in [`Turns::wait`], aside from the workers,
    /// then hand the URL back to them through the queue. Its item stays
    /// unfinished meanwhile — it is marked done only once the URL is queued
    /// again — so `join` cannot return while a URL waits here.
    async fn wait_for_turn(
        self: Rc<Self>,
        url: Url,
        max_redirect: usize,
        depth: usize,
    ) -> anyhow::Result<()> {
        let get = async |robots: &Url| self.get_robots(robots).await;
        match self.turns.wait(&url, get).await? {
            Turn::Fetch => self.q.put_nowait((url, max_redirect, depth, true)),
            Turn::Blocked(stat) => self.record_statistic(stat),
            Turn::Skip => {}
        }
        Ok(self.q.task_done()?)
    }
    // ANCHOR_END: wait_for_turn

    /// Fetch a robots.txt for [`Turns::wait`], waiting for a socket if
    /// none is free.
    async fn get_robots(&self, url: &Url) -> anyhow::Result<Response> {
        loop {
            match fetch(&self.session, url).await {
                Err(err) if err.is::<OutOfDescriptors>() => {}
                fetched => {
                    // robots.txt's connection is not kept idle: a page
                    // never starts on a connection that sat idle since
                    // robots.txt was asked, so a retry is a retry, not a
                    // stale connection's resend. (One released while a fetch
                    // waited for a socket went straight to it, still fresh.)
                    self.session.pool.close_idle_to(url);
                    return fetched;
                }
            }
        }
    }

    /// A URL is finished: its info line, and its statistic for the report;
    /// the status line redrawn, if it is shown.
    fn record_statistic(&self, stat: FetchStatistic) {
        self.log.info(report::line(&stat));
        self.done.borrow_mut().push(stat);
        // Queued: not finished and not in flight, whether in the queue or
        // waiting aside for its turn (this URL's item is marked done only
        // after this).
        let in_flight = self.session.in_flight.now();
        let queued = self.q.unfinished_tasks().saturating_sub(in_flight + 1);
        self.log
            .progress(|| Progress::of(&self.done.borrow(), in_flight, queued));
    }

    /// Once the loop has ended: were all URLs finished? URLs still to do
    /// mean the loop stalled (see [`crate::event_loop::run`]) with nothing
    /// left that could fetch them: a bug in the crawler, said as such.
    pub fn all_done(&self, held: Held) -> Result<(), Stranded> {
        let left = self.q.unfinished_tasks();
        if left == 0 {
            return Ok(());
        }
        Err(Stranded::new(
            left,
            self.session.pool.waiting_count(),
            self.session.in_flight.now(),
            held,
        ))
    }

    /// What the crawl still holds once the loop has ended: fetches counted
    /// in flight, places of the socket budget taken (the idle connections
    /// were closed at the end of `crawl`), hosts whose robots.txt never came
    /// back, workers that ended on their own, and what the loop held as
    /// `crawl` ended. Nothing, after a sound crawl.
    pub fn held(&self) -> Held {
        let workers_lost = self
            .workers
            .borrow()
            .iter()
            .filter(|worker| worker.done() && !worker.cancelled())
            .count();
        Held {
            in_flight: self.session.in_flight.now(),
            sockets: self.session.pool.taken_count(),
            robots_pending: self.turns.robots_pending(),
            workers_lost,
            ..self.loop_held.get()
        }
    }

    /// The report, once `crawl` has returned: it takes the statistics, so
    /// it is asked for once.
    pub fn report(&self, held: Held) -> CrawlReport {
        let end = self.t1.get().unwrap_or_else(Instant::now);
        CrawlReport {
            // Taken, not copied: the crawl is over (as in lessons 1–3).
            stats: std::mem::take(&mut *self.done.borrow_mut()),
            elapsed: end.saturating_duration_since(self.t0.get()),
            max_tasks: self.max_tasks,
            peak_in_flight: self.session.in_flight.peak(),
            // URLs `--max-pages` left unfetched were marked done in the
            // queue, but are still to do.
            todo: self.q.unfinished_tasks() + self.turns.over_limit(),
            held,
        }
    }
}
