//! # The crawler: one thread, no locks, and a fetch per link
//!
//! Lesson 1's crawler was shared by many threads, so everything in it that
//! changed sat behind a `Mutex`, and the lesson was about doing "is this link
//! new?" and "mark it seen" as one step under one lock. Here there is one
//! thread. Callbacks run one at a time, each to its end, and nothing can
//! interrupt one in the middle: the crawler is a plain struct, `seen_urls` a
//! plain `HashSet`, and every callback is already "one step". The locks are
//! gone, not because Rust relaxed — a `RefCell` still checks at run time that
//! no two callbacks hold the crawler at once — but because the model made
//! them unnecessary.
//!
//! What changed shape is the crawl itself. Lesson 1's `Crawler::fetch` did a
//! URL from start to finish in one call. Here that call is torn in two:
//! [`Crawler::fetch`] *starts* a [`Fetcher`] and returns at once, and
//! [`Crawler::fetched`] runs later — it is the `Fetcher`'s `done` callback —
//! with the response, and does what the rest of lesson 1's function did.
//!
//! The tutorial's two sets appear under their names: `seen_urls` (every URL
//! ever queued) and `urls_todo` (queued and not finished). When `urls_todo`
//! becomes empty, the crawl is over and the loop is stopped.
//!
//! There is no pool bounding the concurrency: like the tutorial, every new
//! link gets its fetch at once. What bounds it is the process's open-file
//! limit — each fetch holds a socket — so fetches beyond the socket budget
//! wait in line ([`SocketLine`]) for another fetch to close its socket, and a
//! "too many open files" error puts a fetch back in that line instead of
//! failing it. Every fetch that holds a socket takes its place in that line,
//! a host's robots.txt as much as a page, and the end of every one lets the
//! next in line go: a fetch that skipped the line could take a socket the
//! budget does not have, and one whose end woke nobody could leave the line
//! waiting for an end that never comes, with the crawl over and URLs still
//! to do. If the loop ever runs out of work with URLs left, [`crate::crawl`]
//! says so as an internal error ([`Crawler::all_done`]).
//!
//! Before a fetch starts, the URL waits for its turn (robots.txt, the host's
//! slot under `--delay`, `--max-pages`) the callback way, in
//! [`crate::polite`]: `Crawler::take_turn` is called back when it comes.

use std::cell::RefCell;
use std::collections::{HashSet, VecDeque};
use std::rc::{Rc, Weak};
use std::time::Duration;

use shared::http::Limits;
use shared::links::{self, Fingerprint, Link, UrlPolicy};
use shared::log::{Level, Log};
use shared::net::Resolver;
use shared::page::{self, Analysis};
use shared::polite::Turn;
use shared::status::Progress;
use shared::trace::{FetchSpan, Lane, Phase, Trace};
use shared::{report, Config, CrawlReport, FetchStatistic, Held, Stranded};
use url::Url;

use crate::event_loop::EventLoop;
use crate::fetch::{Fetched, Fetcher, InFlight};
use crate::polite::{Answer, Get, Turns};

// ANCHOR: crawler
/// The crawl-wide state. One thread, so no locks: it lives in an
/// `Rc<RefCell<_>>` that every fetch's `done` callback holds.
#[derive(Debug)]
pub struct Crawler {
    /// The roots, normalized and without duplicates: the first URLs fetched.
    roots: Vec<Url>,
    /// Which links and redirect targets are followed (hosts, schemes, `--exclude`).
    policy: UrlPolicy,
    /// One resolver for the crawl, so each host name is looked up once.
    /// Shared with every `Fetcher`, hence the `Rc`.
    resolver: Rc<Resolver>,
    /// `--timeout`: the deadline for each whole fetch.
    timeout: Duration,
    /// Response size limits, handed to each fetch's parser.
    limits: Limits,
    /// `--user-agent`, sent with every request.
    user_agent: String,
    /// Where the per-URL lines go.
    log: Log,
    /// `--trace`: where each fetch and its phases are recorded (off unless
    /// asked for). A fetch takes the lowest lane no other fetch holds.
    trace: Trace,
    /// Every URL ever queued: the roots, then each link and redirect target
    /// the first time a page names it, as its [`Fingerprint`]. No lock: see
    /// [`Crawler::add_urls`].
    seen_urls: HashSet<Fingerprint>,
    /// URLs queued and not finished yet, fetching or waiting for a socket
    /// (the tutorial's `urls_todo`). The crawl is over when it is empty.
    urls_todo: HashSet<Url>,
    /// One statistic per finished URL, in the order they finished.
    done: Vec<FetchStatistic>,
    /// Fetches in flight now, and the most at once. Shared with every
    /// `Fetcher`, which counts itself from its first socket to its end.
    in_flight: Rc<InFlight>,
    /// The socket budget and the fetches waiting in line for it.
    line: SocketLine,
    /// robots.txt, the hosts' slots and `--max-pages`, and the callbacks
    /// waiting for a turn.
    turns: Rc<Turns>,
    /// The `Rc` this crawler lives in, for the `done` callbacks it hands to
    /// each `Fetcher`. `Weak`, so the crawler does not keep itself alive.
    this: Weak<RefCell<Crawler>>,
}

/// A fetch waiting in line for a socket.
pub enum Waiting {
    /// A page, found at this depth.
    Page(Url, usize),
    /// A host's robots.txt, and where its answer goes.
    Robots(Url, Answer),
}
// ANCHOR_END: crawler

// ANCHOR: socket_line
/// The socket budget, and the line of fetches waiting for it: how many
/// fetches may hold a socket at once, and who goes next when one closes.
/// It starts nothing itself; it answers "may this one start now?" and
/// "who may start now?", and the crawler does the starting.
#[derive(Debug)]
pub struct SocketLine {
    /// How many fetches may hold a socket at once: the open-file limit less
    /// a reserve, never 0 (a budget of 0 would make every fetch wait
    /// forever). Lowered if the process runs out of descriptors anyway.
    budget: usize,
    /// Fetches waiting for a socket, first come first served: pages, and
    /// hosts' robots.txt.
    waiting: VecDeque<Waiting>,
}

impl SocketLine {
    /// A line with nobody in it, for a budget of `budget` sockets (at
    /// least 1).
    pub fn new(budget: usize) -> SocketLine {
        SocketLine {
            budget: budget.max(1),
            waiting: VecDeque::new(),
        }
    }

    /// `fetch` wants a socket while `taken` places of the budget are
    /// taken: it may start now (returned) only if a place is free and
    /// nobody is waiting, since one that went ahead of the line could
    /// leave a fetch that came first waiting for ever. Otherwise it joins
    /// the back of the line (and `None` is returned).
    pub fn admit(&mut self, fetch: Waiting, taken: usize) -> Option<Waiting> {
        if taken < self.budget && self.waiting.is_empty() {
            Some(fetch)
        } else {
            self.waiting.push_back(fetch);
            None
        }
    }

    /// A place was given back and `taken` are still taken: the fetches
    /// that may start now, first in line first, as many as there are free
    /// places. Counted once, here, rather than asked again after each
    /// start: a start that fails at once (no descriptor after all) may
    /// take no place, and asking again would then let the whole line
    /// through.
    pub fn let_go(&mut self, taken: usize) -> Vec<Waiting> {
        let free = self.budget.saturating_sub(taken).min(self.waiting.len());
        self.waiting.drain(..free).collect()
    }

    /// `fetch` found no descriptor for its socket while `in_flight` others
    /// held one. Each of them closes one when it ends: it waits at the
    /// head of the line for that, and the budget takes the hint that the
    /// process cannot hold more sockets than they held (never below 1).
    pub fn wait_again(&mut self, fetch: Waiting, in_flight: usize) {
        self.budget = self.budget.min(in_flight.max(1));
        self.waiting.push_front(fetch);
    }

    /// How many fetches wait in line.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether nobody waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// How many of those waiting are pages (not robots.txt): the URLs
    /// "waiting for a socket" of a stranded crawl.
    pub fn pages(&self) -> usize {
        self.waiting
            .iter()
            .filter(|fetch| matches!(fetch, Waiting::Page(..)))
            .count()
    }

    /// How many fetches may hold a socket at once, now.
    pub fn budget(&self) -> usize {
        self.budget
    }
}
// ANCHOR_END: socket_line

impl std::fmt::Debug for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Waiting::Page(url, depth) => write!(f, "Page({url}, {depth})"),
            Waiting::Robots(url, _) => write!(f, "Robots({url})"),
        }
    }
}

impl Crawler {
    // ANCHOR: new
    /// The crawler for `config`: roots normalized (`http://` added where
    /// missing, fragment dropped), duplicates removed, and all of them
    /// already in `seen_urls` so that a link back to a root is not new. At
    /// most `socket_budget` fetches hold a socket at once.
    pub fn new(config: &Config, socket_budget: usize) -> anyhow::Result<Rc<RefCell<Crawler>>> {
        let roots = links::normalize_roots(&config.roots)?;
        Ok(Rc::new_cyclic(|this| {
            RefCell::new(Crawler {
                policy: UrlPolicy::new(&roots, config.exclude.clone(), config.lenient),
                seen_urls: roots.iter().map(Fingerprint::from).collect(),
                roots,
                resolver: Rc::new(Resolver::new()),
                timeout: config.timeout,
                limits: config.limits,
                user_agent: config.user_agent.clone(),
                log: config.log.clone(),
                trace: config.trace.clone(),
                urls_todo: HashSet::new(),
                done: Vec::new(),
                in_flight: Rc::new(InFlight::default()),
                line: SocketLine::new(socket_budget),
                turns: Rc::new(Turns::new(config)),
                this: this.clone(),
            })
        }))
    }
    // ANCHOR_END: new

    /// The roots, for `crawl` to fetch.
    pub fn roots(&self) -> &[Url] {
        &self.roots
    }

    // ANCHOR: fetch
    /// Queue `url` (found at `depth`) and start fetching it — once
    /// politeness allows, and when the socket budget is spent, in line.
    /// Returns at once: the tutorial's `Fetcher(url).fetch()`.
    pub fn fetch(&mut self, event_loop: &EventLoop, url: Url, depth: usize) {
        self.urls_todo.insert(url.clone());
        // The URL's turn first. Most URLs have it at once; the others wait
        // for a callback (with no socket, so outside the budget).
        if let Some(turn) = self.turns.ready(&url, event_loop.time()) {
            return self.take_turn(event_loop, url, depth, turn);
        }
        let Some(crawler) = self.this.upgrade() else {
            return;
        };
        let (turns, task_loop) = (Rc::clone(&self.turns), event_loop.clone());
        let target = url.clone();
        let done = move |turn| {
            crawler
                .borrow_mut()
                .take_turn(&task_loop, target, depth, turn)
        };
        turns.wait(event_loop, url, self.get_robots(event_loop), Box::new(done));
    }

    /// `url`'s turn has come: start its fetch or join the line, or record
    /// it as not fetched.
    fn take_turn(&mut self, event_loop: &EventLoop, url: Url, depth: usize, turn: Turn) {
        match turn {
            Turn::Fetch => self.start_or_wait(event_loop, Waiting::Page(url, depth)),
            Turn::Blocked(stat) => {
                self.record_statistic(stat);
                self.finished(event_loop, &url);
            }
            Turn::Skip => self.finished(event_loop, &url),
        }
    }

    /// How [`Turns`] fetches a robots.txt: in line for a socket like a
    /// page, since it holds one too.
    fn get_robots(&self, event_loop: &EventLoop) -> Get {
        let (crawler, event_loop) = (self.this.clone(), event_loop.clone());
        Rc::new(move |url: &Url, answer: Answer| {
            // Called from the loop (a timer's callback), never while the
            // crawler is borrowed.
            if let Some(crawler) = crawler.upgrade() {
                let robots = Waiting::Robots(url.clone(), answer);
                crawler.borrow_mut().start_or_wait(&event_loop, robots);
            }
        })
    }

    /// Start `fetch` now, or put it in line for a socket.
    fn start_or_wait(&mut self, event_loop: &EventLoop, fetch: Waiting) {
        if let Some(fetch) = self.line.admit(fetch, self.in_flight.now()) {
            self.start(event_loop, fetch);
        }
    }

    /// Start `fetch`: a page's, or a robots.txt's.
    fn start(&mut self, event_loop: &EventLoop, fetch: Waiting) {
        match fetch {
            Waiting::Page(url, depth) => self.start_fetcher(event_loop, url, depth),
            Waiting::Robots(url, answer) => self.start_robots(event_loop, url, answer),
        }
    }

    /// Fetch a robots.txt: a `Fetcher` whose `done` callback hands the
    /// answer on — and then, like a page's end, lets the next fetch in line
    /// have its socket.
    fn start_robots(&mut self, event_loop: &EventLoop, url: Url, answer: Answer) {
        let Some(crawler) = self.this.upgrade() else {
            return;
        };
        let (done_loop, target) = (event_loop.clone(), url.clone());
        let done = move |fetched| match fetched {
            Fetched::OutOfDescriptors { in_flight } => {
                let robots = Waiting::Robots(target, answer);
                crawler.borrow_mut().out_of_descriptors(robots, in_flight);
            }
            Fetched::Done(result) => {
                // The answer first, with the crawler not borrowed: it runs
                // the callbacks of the URLs that waited for these rules.
                answer(result);
                crawler.borrow_mut().fetch_waiting(&done_loop);
            }
        };
        let fetcher = self.fetcher(event_loop, url, done);
        fetcher.borrow_mut().fetch(FetchSpan::off());
    }

    /// Make a `Fetcher` for `url` whose `done` callback is
    /// [`Crawler::fetched`], and start it.
    fn start_fetcher(&mut self, event_loop: &EventLoop, url: Url, depth: usize) {
        // `crawl` holds the crawler's `Rc` until the loop has ended, so this
        // always succeeds while callbacks can run.
        let Some(crawler) = self.this.upgrade() else {
            return;
        };
        let span = self.trace.fetch(url.as_str(), Lane::Lowest);
        let done_span = span.clone();
        let done_loop = event_loop.clone();
        let fetcher = self.fetcher(event_loop, url.clone(), move |fetched| {
            crawler
                .borrow_mut()
                .fetched(&done_loop, url, depth, done_span, fetched)
        });
        // The fetcher keeps the span for its callbacks (see `bind`); its
        // start runs right here, so it is entered here too.
        span.in_scope(|| fetcher.borrow_mut().fetch(span.clone()));
        // `fetcher` is dropped here, but not freed: the callbacks it gave
        // the event loop (the socket's, the deadline's) hold it.
    }

    /// A `Fetcher` for `url` with the crawl's settings, calling `done`.
    fn fetcher(
        &self,
        event_loop: &EventLoop,
        url: Url,
        done: impl FnOnce(Fetched) + 'static,
    ) -> Rc<RefCell<Fetcher>> {
        Fetcher::new(
            event_loop,
            url,
            Rc::clone(&self.resolver),
            Rc::clone(&self.in_flight),
            self.timeout,
            self.limits,
            &self.user_agent,
            done,
        )
    }

    /// A socket was closed: start as many waiting fetches as the budget
    /// now allows.
    fn fetch_waiting(&mut self, event_loop: &EventLoop) {
        for fetch in self.line.let_go(self.in_flight.now()) {
            self.start(event_loop, fetch);
        }
        self.trace.queued(self.line.len());
    }

    /// `fetch` found no descriptor for its socket while `in_flight` others
    /// held one. Each of them closes one when it ends: wait at the head of
    /// the line for that, and take the hint that the process cannot hold
    /// more sockets than they held.
    fn out_of_descriptors(&mut self, fetch: Waiting, in_flight: usize) {
        let (Waiting::Page(url, _) | Waiting::Robots(url, _)) = &fetch;
        self.log
            .debug(format_args!("wait {url}: out of file descriptors"));
        // (The fetcher reports this only with others in flight.)
        self.line.wait_again(fetch, in_flight);
    }
    // ANCHOR_END: fetch

    // ANCHOR: fetched
    /// A fetch ended: the second half of lesson 1's `Crawler::fetch`, run by
    /// the event loop as the `Fetcher`'s `done` callback. Find the links,
    /// start a fetch for each new one, record the URL's line — and stop the
    /// loop when nothing is left to do.
    fn fetched(
        &mut self,
        event_loop: &EventLoop,
        url: Url,
        depth: usize,
        span: FetchSpan,
        fetched: Fetched,
    ) {
        let stat = match fetched {
            // No descriptor for its socket: back in line, at its head.
            Fetched::OutOfDescriptors { in_flight } => {
                return self.out_of_descriptors(Waiting::Page(url, depth), in_flight);
            }
            Fetched::Done(Err(error)) => FetchStatistic::failed(url.as_str(), error),
            Fetched::Done(Ok(response)) => {
                span.phase(Phase::Links);
                let Analysis {
                    mut stat,
                    links,
                    redirect,
                } = page::analyze(&url, &response, &self.policy, &self.log);
                // `--max-depth`: the links of a page at the last depth are
                // counted on its line but not fetched.
                let links = self.turns.links_at(depth, links);
                let is_new = self.add_urls(event_loop, &links, depth + 1);
                stat.num_new_urls = is_new.iter().filter(|&&new| new).count();
                self.log_queued(&url, &links, &is_new);
                if let Some(next) = redirect {
                    // A redirect target is queued like a link, at the depth
                    // of the URL that moved: lesson 2 keeps no count of how
                    // long a chain has become.
                    if self.add_urls(event_loop, std::slice::from_ref(&next), depth)[0] {
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
        // Its socket is closed: a waiting fetch can have it.
        self.fetch_waiting(event_loop);
        self.finished(event_loop, &url);
    }

    /// `url` is done with: stop the loop if it was the last.
    fn finished(&mut self, event_loop: &EventLoop, url: &Url) {
        self.urls_todo.remove(url);
        if self.urls_todo.is_empty() {
            event_loop.stop();
        }
    }
    // ANCHOR_END: fetched

    // ANCHOR: add_urls
    /// Mark each of `links` seen and start fetching it (at `depth`), unless
    /// it was seen before. Says, for each, whether it was new: the page's
    /// `num_new_urls`.
    fn add_urls(&mut self, event_loop: &EventLoop, links: &[Link], depth: usize) -> Vec<bool> {
        links
            .iter()
            .map(|link| {
                // No lock: no other callback can run until this one returns,
                // so between `insert` and `fetch` nobody can sneak in.
                let is_new = self.seen_urls.insert(link.fingerprint());
                if is_new {
                    self.fetch(event_loop, link.to_url(), depth);
                }
                is_new
            })
            .collect()
    }
    // ANCHOR_END: add_urls

    // ANCHOR: record
    /// The `-v` lines for a page's links.
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
    fn record_statistic(&mut self, stat: FetchStatistic) {
        self.log.info(report::line(&stat));
        self.done.push(stat);
        let in_flight = self.in_flight.now();
        // Queued: not finished and not in flight (this URL is still in
        // `urls_todo` until `finished`).
        let queued = self.urls_todo.len().saturating_sub(in_flight + 1);
        self.log
            .progress(|| Progress::of(&self.done, in_flight, queued));
    }

    /// Once the loop has run out of work: were all URLs finished? URLs
    /// still to do then can never be fetched — nothing is left to run that
    /// could start them — and that is a bug in the crawler, said as such.
    pub fn all_done(&self, held: Held) -> Result<(), Stranded> {
        if self.urls_todo.is_empty() {
            return Ok(());
        }
        Err(Stranded::new(
            self.urls_todo.len(),
            self.line.pages(),
            self.in_flight.now(),
            held,
        ))
    }

    /// What the crawl still holds once the loop has stopped (asked before
    /// `close` drops it all): fetches counted in flight (each a place in
    /// the socket budget), hosts whose robots.txt never came back, and
    /// sockets and timers left on the loop. Nothing, after a sound crawl:
    /// the end of every fetch, however it ended, gave each back.
    pub fn held(&self, event_loop: &EventLoop) -> Held {
        Held {
            in_flight: self.in_flight.now(),
            robots_pending: self.turns.robots_pending(),
            registered: event_loop.registered(),
            timers: event_loop.pending_timers(),
            ..Held::default()
        }
    }

    /// The report, once the loop has ended. `M` on the `Finished` line is the
    /// achieved concurrency: lesson 2 has no `--threads` or `--max-tasks`.
    pub fn report(&mut self, elapsed: Duration, held: Held) -> CrawlReport {
        CrawlReport {
            // URLs `--max-pages` left unfetched are still to do.
            todo: self.urls_todo.len() + self.turns.over_limit(),
            stats: std::mem::take(&mut self.done),
            elapsed,
            max_tasks: self.in_flight.peak(),
            peak_in_flight: self.in_flight.peak(),
            held,
        }
    }
    // ANCHOR_END: record
}
