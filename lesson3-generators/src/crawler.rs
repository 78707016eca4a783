//! # The crawler: one thread, no locks, and a task per link
//!
//! The crawl-wide state is lesson 2's, unchanged: one thread, so a plain
//! struct in an `Rc<RefCell<_>>`, the tutorial's `seen_urls` and
//! `urls_todo`, a fetch for every new link at once, and the socket budget
//! with the line of URLs waiting for a socket ([`SocketLine`]).
//!
//! What changed is how a fetch is started and how its result comes back. In
//! lesson 2, [`Crawler::fetch`] made a `Fetcher` and handed it a `done`
//! callback, and [`Crawler::fetched`] ran later, called back by the fetcher.
//! <!-- how -->
//! Here [`Crawler::fetch`] creates a *task* whose coroutine is two lines:
//!
//! ```text
//! let fetched = fetcher.fetch().await;
//! crawler.borrow_mut().fetched(&event_loop, url, fetched);
//! ```
//! <!-- /how -->
//!
//! `fetched` is the same function as before; it is just no longer a
//! callback, but the line after an `.await`. The tutorial's coroutine crawler
//! does the same: `_process_response` runs inside `fetch`, after
//! `yield from read_all(sock)`, and starts a `Task` per new link.
//!
//! Why is the crawler still borrowed in one step, `fetched`, rather than
//! across the whole coroutine? Because a borrow held across an `.await`
//! would still be held while other tasks run, and the next one to borrow
//! the crawler would panic. Between two `.await`s a coroutine runs alone,
//! exactly like a callback: that is what makes "is this link new?" and "mark
//! it seen" one step without a lock.
//!
//! Before a fetch starts, a task waits for the URL's turn (robots.txt, the
//! host's slot under `--delay`, `--max-pages`): where lesson 2 needed a
//! timer callback and a list of callbacks per host, the waiting is now one
//! coroutine, in [`crate::polite`]. A robots.txt fetch still takes its place
//! in the line for a socket, as in lesson 2.
//! <!-- how -->
//! Where lesson 2 put the answer's callback in the line, the task here puts
//! a [`Future`] there, and awaits it.
//! <!-- /how -->

use std::cell::RefCell;
use std::collections::{HashSet, VecDeque};
use std::pin::pin;
use std::rc::{Rc, Weak};
use std::time::Duration;

use shared::http::{Limits, Response};
use shared::links::{self, Fingerprint, Link, UrlPolicy};
use shared::log::{Level, Log};
use shared::net::Resolver;
use shared::page::{self, Analysis};
use shared::polite::Turn;
use shared::status::Progress;
use shared::trace::{FetchSpan, Lane, Phase, Trace};
use shared::{report, Config, CrawlReport, FailKind, FetchError, FetchStatistic, Held, Stranded};
use url::Url;

use crate::event_loop::{get_running_loop, EventLoop};
use crate::fetch::{Fetched, Fetcher, InFlight};
use crate::future::Future;
use crate::polite::Turns;

// ANCHOR: crawler
/// The crawl-wide state. One thread, so no locks: it lives in an
/// `Rc<RefCell<_>>` that every fetch task holds.
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
    user_agent: Rc<str>,
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
    /// Fetches let through to a socket and not finished: page tasks
    /// created, robots.txt fetches whose turn came. A task opens its socket
    /// only when the loop first steps it, after the step that created it,
    /// so `in_flight` lags behind; this count, not `in_flight`, is what the
    /// socket budget bounds.
    started: usize,
    /// The socket budget and the fetches waiting in line for it.
    line: SocketLine,
    /// robots.txt, the hosts' slots and `--max-pages`, and what the tasks
    /// waiting for their turn wait on: its own `Rc`, so a task can wait
    /// without holding the crawler borrowed.
    turns: Rc<Turns>,
    /// The `Rc` this crawler lives in, for the fetch tasks to hold. `Weak`,
    /// so the crawler does not keep itself alive.
    this: Weak<RefCell<Crawler>>,
}

/// A fetch waiting in line for a socket.
#[derive(Debug)]
pub enum Waiting {
    /// A page, found at this depth.
    Page(Url, usize),
    /// A host's robots.txt: the task that fetches it awaits the future,
    /// which the line completes when the socket is its.
    Robots(Url, Future<()>),
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

impl Crawler {
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
                user_agent: Rc::from(config.user_agent.as_str()),
                log: config.log.clone(),
                trace: config.trace.clone(),
                urls_todo: HashSet::new(),
                done: Vec::new(),
                in_flight: Rc::new(InFlight::default()),
                started: 0,
                line: SocketLine::new(socket_budget),
                turns: Rc::new(Turns::new(config)),
                this: this.clone(),
            })
        }))
    }

    /// The roots, for `crawl` to fetch.
    pub fn roots(&self) -> &[Url] {
        &self.roots
    }

    // ANCHOR: fetch
    /// Queue `url` (found at `depth`) and start fetching it — once its turn
    /// has come, and when the socket budget is spent, in line. Returns at
    /// once: the tutorial's `Task(Fetcher(url).fetch())`.
    pub fn fetch(&mut self, event_loop: &EventLoop, url: Url, depth: usize) {
        self.urls_todo.insert(url.clone());
        // The URL's turn first. Most URLs have it at once; the others wait
        // in a task of their own (with no socket, so outside the budget).
        if let Some(turn) = self.turns.ready(&url, event_loop.time()) {
            return self.take_turn(event_loop, url, depth, turn);
        }
        let Some(crawler) = self.this.upgrade() else {
            return;
        };
        let (turns, task_loop) = (Rc::clone(&self.turns), event_loop.clone());
        event_loop.create_task(async move {
            let get = async |robots: &Url| Crawler::get_robots(&crawler, robots).await;
            let turn = turns.wait(&url, get).await;
            crawler.borrow_mut().take_turn(&task_loop, url, depth, turn);
        });
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

    /// Start `fetch` now, or put it in line for a socket.
    fn start_or_wait(&mut self, event_loop: &EventLoop, fetch: Waiting) {
        if let Some(fetch) = self.line.admit(fetch, self.started) {
            self.start(event_loop, fetch);
        }
    }

    /// Start `fetch`: a page's task, or the robots.txt task's turn.
    fn start(&mut self, event_loop: &EventLoop, fetch: Waiting) {
        match fetch {
            Waiting::Page(url, depth) => self.start_fetcher(event_loop, url, depth),
            Waiting::Robots(_, turn) => {
                self.started += 1;
                // Wakes the task awaiting it, on the loop's next turn.
                turn.set_result(());
            }
        }
    }

    /// Make a `Fetcher` for `url` and a task that runs its `fetch`, then
    /// [`Crawler::fetched`] with the result.
    fn start_fetcher(&mut self, event_loop: &EventLoop, url: Url, depth: usize) {
        // `crawl` holds the crawler's `Rc` until the loop has ended, so this
        // always succeeds while tasks can run.
        let Some(crawler) = self.this.upgrade() else {
            return;
        };
        self.started += 1;
        let span = self.trace.fetch(url.as_str(), Lane::Lowest);
        let fetcher = self.fetcher(url.clone());
        let task_loop = event_loop.clone();
        // The task holds the fetcher, the crawler and the loop until its
        // coroutine returns; its first step runs on the loop's next turn.
        event_loop.create_task(async move {
            // The fetch's phases are marked on `span` while it runs.
            let fetched = span.clone().instrument(pin!(fetcher.fetch())).await;
            // Borrowed for this one step only, never across an `.await`.
            crawler
                .borrow_mut()
                .fetched(&task_loop, url, depth, span, fetched);
        });
    }

    /// Fetch a robots.txt for [`Turns::wait`]: in line for a socket like a
    /// page, since it holds one too, and at its end, like a page's, let the
    /// next fetch in line go. The crawler is borrowed for one statement at
    /// a time, never across an `.await`.
    async fn get_robots(crawler: &RefCell<Crawler>, url: &Url) -> Result<Response, FetchError> {
        let event_loop = get_running_loop();
        let mut turn = Future::new(&event_loop);
        let robots = Waiting::Robots(url.clone(), turn.clone());
        crawler.borrow_mut().start_or_wait(&event_loop, robots);
        loop {
            turn.await;
            let fetcher = crawler.borrow().fetcher(url.clone());
            let fetched = fetcher.fetch().await;
            let mut this = crawler.borrow_mut();
            this.started -= 1;
            match fetched {
                // No descriptor, others in flight: back in line, at its head.
                Fetched::OutOfDescriptors if this.in_flight.now() > 0 => {
                    turn = Future::new(&event_loop);
                    this.out_of_descriptors(Waiting::Robots(url.clone(), turn.clone()));
                }
                fetched => {
                    this.fetch_waiting(&event_loop);
                    return match fetched {
                        Fetched::Done(answer) => answer,
                        // Nothing in flight will ever free a descriptor.
                        Fetched::OutOfDescriptors => {
                            Err(FetchError::new(FailKind::Connect, "too many open files"))
                        }
                    };
                }
            }
        }
    }

    /// A `Fetcher` for `url` with the crawl's settings.
    fn fetcher(&self, url: Url) -> Fetcher {
        Fetcher::new(
            url,
            Rc::clone(&self.resolver),
            Rc::clone(&self.in_flight),
            self.timeout,
            self.limits,
            Rc::clone(&self.user_agent),
        )
    }

    /// A socket was closed: start as many waiting fetches as the budget
    /// now allows.
    fn fetch_waiting(&mut self, event_loop: &EventLoop) {
        for fetch in self.line.let_go(self.started) {
            self.start(event_loop, fetch);
        }
        self.trace.queued(self.line.len());
    }

    /// `fetch` found no descriptor for its socket while others were in
    /// flight. Each of them closes one when it ends: wait at the head of
    /// the line for that, and take the hint that the process cannot hold
    /// more sockets than it has open now.
    fn out_of_descriptors(&mut self, fetch: Waiting) {
        let (Waiting::Page(url, _) | Waiting::Robots(url, _)) = &fetch;
        self.log
            .debug(format_args!("wait {url}: out of file descriptors"));
        self.line.wait_again(fetch, self.in_flight.now());
    }
    // ANCHOR_END: fetch

    // ANCHOR: fetched
    /// A fetch ended: the second half of lesson 1's `Crawler::fetch`, run by
    /// the fetch's task after its `fetch().await`. Find the links, start a
    /// fetch for each new one, record the URL's line — and stop the loop
    /// when nothing is left to do.
    fn fetched(
        &mut self,
        event_loop: &EventLoop,
        url: Url,
        depth: usize,
        span: FetchSpan,
        fetched: Fetched,
    ) {
        self.started -= 1;
        let stat = match fetched {
            // No descriptor for its socket, others in flight: back in
            // line, at its head.
            Fetched::OutOfDescriptors if self.in_flight.now() > 0 => {
                return self.out_of_descriptors(Waiting::Page(url, depth));
            }
            // Nothing in flight will ever free a descriptor for it.
            Fetched::OutOfDescriptors => FetchStatistic::failed(
                url.as_str(),
                FetchError::new(FailKind::Connect, "too many open files"),
            ),
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
                    // of the URL that moved: lesson 3 keeps no count of how
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
                // No lock: no other task can run until this one reaches its
                // next `.await`, so between `insert` and `fetch` nobody can
                // sneak in.
                let is_new = self.seen_urls.insert(link.fingerprint());
                if is_new {
                    self.fetch(event_loop, link.to_url(), depth);
                }
                is_new
            })
            .collect()
    }
    // ANCHOR_END: add_urls

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
    /// still to do then can never be fetched — no task is left that could
    /// start them — and that is a bug in the crawler, said as such.
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
    /// `close` drops it all): fetches counted in flight, places of the
    /// socket budget taken (`started`), hosts whose robots.txt never came
    /// back, and sockets and timers left on the loop. Nothing, after a sound crawl:
    /// the end of every fetch, however it ended, gave each back.
    pub fn held(&self, event_loop: &EventLoop) -> Held {
        Held {
            in_flight: self.in_flight.now(),
            sockets: self.started,
            robots_pending: self.turns.robots_pending(),
            registered: event_loop.registered(),
            timers: event_loop.pending_timers(),
            ..Held::default()
        }
    }

    /// The report, once the loop has ended. `M` on the `Finished` line is the
    /// achieved concurrency: lesson 3 has no `--threads` or `--max-tasks`.
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
}
