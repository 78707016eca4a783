//! # Waiting for a turn: a timer, and a list of callbacks
//!
//! Lesson 1's [`Turns::wait`] slept its thread until a URL's turn came. One
//! thread cannot sleep here: everything else would stop. So the waiting is
//! turned inside out, like the fetch was: `wait` returns at once, and the
//! turn is handed to a `done` callback later.
//!
//! - A time to wait for is a timer: `call_at(slot, ..)`. The loop keeps it
//!   in its poll timeout, and calls back when it is due.
//! - A host's robots.txt is fetched by one `Fetcher` (through `get`, which
//!   the crawler provides); every URL that needs the host's rules meanwhile
//!   leaves a callback in the host's list, and the fetch's own callback runs
//!   them all when the answer is in.
//!
//! The price is lesson 2's usual one: the logic of "wait for the rules, then
//! for the slot, then go" is spread over four functions that call each other
//! back, and each callback must carry what it needs (the URL, `get`, `done`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

use shared::http::Response;
use shared::links::Link;
use shared::polite::{Gate, Politeness, RobotsFetch, Turn};
use shared::schedule::host_key;
use shared::{Config, FetchError};
use url::Url;

use crate::event_loop::EventLoop;

/// Where a robots.txt fetch's answer goes.
pub type Answer = Box<dyn FnOnce(Result<Response, FetchError>)>;
/// How [`Turns`] fetches a robots.txt: start a fetch of the URL, and call
/// the [`Answer`] when it ends.
pub type Get = Rc<dyn Fn(&Url, Answer)>;
/// What to do when a URL's turn has come.
pub type Done = Box<dyn FnOnce(Turn)>;
/// A callback waiting for a host's robots.txt rules.
type WhenRulesKnown = Box<dyn FnOnce()>;

// ANCHOR: turns
/// The crawl's politeness, and the callbacks waiting for robots.txt answers.
pub struct Turns {
    /// robots.txt, the hosts' slots and `--max-pages`.
    polite: RefCell<Politeness>,
    /// Per host whose robots.txt is being fetched: what to do once its
    /// rules are in, one callback per URL that waits for them.
    robots_pending: RefCell<HashMap<String, Vec<WhenRulesKnown>>>,
}
// ANCHOR_END: turns

impl Turns {
    /// The politeness `config` asks for, nothing fetched yet.
    pub fn new(config: &Config) -> Turns {
        Turns {
            polite: RefCell::new(Politeness::new(config)),
            robots_pending: RefCell::new(HashMap::new()),
        }
    }

    // ANCHOR: wait
    /// Arrange for `done` to be called with `url`'s turn, once its host's
    /// robots.txt is known (fetched with `get` if no one is fetching it) and
    /// its host's slot has come. Returns at once; `done` always runs later,
    /// from the loop, never inside this call.
    pub fn wait(self: &Rc<Self>, event_loop: &EventLoop, url: Url, get: Get, done: Done) {
        let gate = self.polite.borrow_mut().gate(&url, event_loop.time());
        match gate {
            // A time to wait for is a timer (due at once if the slot is now).
            Gate::Fetch { at } => {
                event_loop.call_at(at, move || done(Turn::Fetch));
            }
            Gate::FetchRobots(robots) => {
                let host = host_key(&url);
                self.robots_pending
                    .borrow_mut()
                    .insert(host.clone(), Vec::new());
                self.fetch_robots(event_loop, host, robots, Rc::clone(&get));
                self.wait_for_rules(event_loop, url, get, done);
            }
            Gate::WaitForRobots => self.wait_for_rules(event_loop, url, get, done),
            Gate::Blocked(stat) => {
                event_loop.call_soon(move || done(Turn::Blocked(stat)));
            }
            Gate::OverLimit => {
                event_loop.call_soon(move || done(Turn::Skip));
            }
        }
    }

    /// A result someone else is fetching: leave a callback in the host's
    /// list, which asks again when the rules are in.
    fn wait_for_rules(self: &Rc<Self>, event_loop: &EventLoop, url: Url, get: Get, done: Done) {
        let (turns, event_loop) = (Rc::clone(self), event_loop.clone());
        let mut pending = self.robots_pending.borrow_mut();
        let callbacks = pending.entry(host_key(&url)).or_default();
        callbacks.push(Box::new(move || turns.wait(&event_loop, url, get, done)));
    }

    /// Fetch `host`'s robots.txt at its slot; its answer goes to
    /// [`Turns::robots_fetched`].
    fn fetch_robots(
        self: &Rc<Self>,
        event_loop: &EventLoop,
        host: String,
        robots: RobotsFetch,
        get: Get,
    ) {
        let (turns, event_loop) = (Rc::clone(self), event_loop.clone());
        event_loop.clone().call_at(robots.at, move || {
            let url = robots.url.clone();
            let again = Rc::clone(&get);
            let answer = move |answer| turns.robots_fetched(&event_loop, host, robots, answer, get);
            again(&url, Box::new(answer));
        });
    }

    /// A robots.txt fetch ended: fetch again if politeness says so (a
    /// redirect, the one retry), else run every callback waiting for the
    /// host's rules.
    fn robots_fetched(
        self: &Rc<Self>,
        event_loop: &EventLoop,
        host: String,
        robots: RobotsFetch,
        answer: Result<Response, FetchError>,
        get: Get,
    ) {
        let next = self
            .polite
            .borrow_mut()
            .robots_answer(robots, answer, event_loop.time());
        match next {
            Some(next) => self.fetch_robots(event_loop, host, next, get),
            None => {
                // Taken out first: each callback borrows the list again.
                let waiting = self.robots_pending.borrow_mut().remove(&host);
                for callback in waiting.unwrap_or_default() {
                    callback();
                }
            }
        }
    }
    // ANCHOR_END: wait

    /// The turn of `url` if it needs no waiting (see
    /// [`Politeness::ready`]): most URLs, which then need no callback.
    pub fn ready(&self, url: &Url, now: Instant) -> Option<Turn> {
        self.polite.borrow_mut().ready(url, now)
    }

    /// The links of a page at `depth` that are followed (`--max-depth`).
    pub fn links_at(&self, depth: usize, links: Vec<Link>) -> Vec<Link> {
        self.polite.borrow().links_at(depth, links)
    }

    /// URLs `--max-pages` left unfetched (for the report's `Todo`).
    pub fn over_limit(&self) -> usize {
        self.polite.borrow().over_limit()
    }

    /// Hosts whose robots.txt fetch never came back (0 at a sound crawl's
    /// end): the report's [`shared::Held::robots_pending`].
    pub fn robots_pending(&self) -> usize {
        self.polite.borrow().robots_pending()
    }
}

impl std::fmt::Debug for Turns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turns")
            .field("polite", &self.polite)
            .finish_non_exhaustive()
    }
}
