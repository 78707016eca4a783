//! # Waiting for a turn: a sleep, and a future someone else completes
//!
//! Before a URL is fetched, [`shared::polite`] says whether and when it may
//! be: its host's robots.txt must be known, its host's next slot (under
//! `--delay`) must have come, and `--max-pages` must not be spent. The rules
//! are shared; what a model shows is how it *waits*. Lesson 2 waited with
//! callbacks scattered over the crawler: a timer that calls back at the slot,
//! a list of callbacks per host that its robots.txt fetch runs when done. A
//! coroutine waits in place, so here all of it is one function, [`Turns::wait`],
//! read top to bottom:
//!
//! <!-- how -->
//! - a time to wait for is `sleep(..).await`: the loop's timer wakes the task;
//! - the first task to meet a host fetches its robots.txt right there, then
//!   completes the host's [`Future`];
//! - every other task for that host awaits the same future (lesson 3's
//!   futures give each awaiter a copy of the result).
//! <!-- /how -->
//!
//! It needs nothing of the crawler but a way to fetch a robots.txt (`get`),
//! so it lives apart from it, in its own `Rc`: a task can wait here for
//! seconds without holding the crawler's `RefCell` borrowed.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Instant;

use shared::http::Response;
use shared::links::Link;
use shared::polite::{Gate, Politeness, Turn};
use shared::schedule::host_key;
use shared::{Config, FetchError};
use url::Url;

use crate::event_loop::get_running_loop;
use crate::future::Future;
use crate::sleep::sleep;

// ANCHOR: turns
/// The crawl's politeness, and the robots.txt fetches under way.
#[derive(Debug)]
pub struct Turns {
    /// robots.txt, the hosts' slots and `--max-pages`.
    polite: RefCell<Politeness>,
    /// Per host whose robots.txt is being fetched: the future the fetching
    /// task completes when the rules are in.
    robots_pending: RefCell<HashMap<String, Future<()>>>,
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
    /// Wait until `url` may be fetched: its host's robots.txt known (this
    /// task fetches it with `get` if no other task is), its host's slot
    /// come. The `RefCell`s are borrowed for one statement at a time, never
    /// across an `.await`.
    pub async fn wait(
        &self,
        url: &Url,
        get: impl AsyncFn(&Url) -> Result<Response, FetchError>,
    ) -> Turn {
        let event_loop = get_running_loop();
        loop {
            let gate = self.polite.borrow_mut().gate(url, event_loop.time());
            match gate {
                Gate::Fetch { at } => {
                    // A time to wait for is a sleep: the loop's timer wakes
                    // this task.
                    sleep(at.saturating_duration_since(event_loop.time())).await;
                    return Turn::Fetch;
                }
                Gate::FetchRobots(mut robots) => {
                    let rules = Future::new(&event_loop);
                    let pending = rules.clone();
                    self.robots_pending
                        .borrow_mut()
                        .insert(host_key(url), pending);
                    loop {
                        sleep(robots.at.saturating_duration_since(event_loop.time())).await;
                        let answer = get(&robots.url).await;
                        let now = event_loop.time();
                        let next = self.polite.borrow_mut().robots_answer(robots, answer, now);
                        match next {
                            // A redirect, or the one retry: fetch again.
                            Some(next) => robots = next,
                            None => break,
                        }
                    }
                    self.robots_pending.borrow_mut().remove(&host_key(url));
                    // Every task waiting for this host wakes.
                    rules.set_result(());
                }
                Gate::WaitForRobots => {
                    // A result another task is fetching: await its future.
                    let rules = self.robots_pending.borrow().get(&host_key(url)).cloned();
                    if let Some(rules) = rules {
                        rules.await;
                    }
                }
                Gate::Blocked(stat) => return Turn::Blocked(stat),
                Gate::OverLimit => return Turn::Skip,
            }
        }
    }
    // ANCHOR_END: wait

    /// The turn of `url` if it needs no waiting (see
    /// [`Politeness::ready`]): most URLs, which then need no task to wait in.
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
