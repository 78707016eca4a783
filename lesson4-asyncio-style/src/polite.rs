//! # Waiting for a turn: a sleep, and a future someone else completes
//!
//! Lesson 3's [`Turns::wait`], on this lesson's runtime: a worker waits for
//! a URL's turn (robots.txt known, the host's slot come, `--max-pages` not
//! spent) with `sleep(..).await` and a future per host's robots.txt. What
//! changed since lesson 3 is what the runtime changed:
//!
//! - `sleep` and every `.await` can now end in cancellation, which `?`
//!   carries up;
//! - a lesson 4 future hands its result to the first `.await` only (it
//!   moves out), so the tasks waiting for a host cannot all await its one
//!   future.
//! <!-- how -->
//! Each hangs a future of its own on it, with a done callback.
//! <!-- /how -->

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
use crate::future::{is_cancelled, Future};
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
        get: impl AsyncFn(&Url) -> anyhow::Result<Response>,
    ) -> anyhow::Result<Turn> {
        let event_loop = get_running_loop();
        loop {
            let gate = self.polite.borrow_mut().gate(url, event_loop.time());
            match gate {
                Gate::Fetch { at } => {
                    // A time to wait for is a sleep: the loop's timer wakes
                    // this task.
                    sleep(at.saturating_duration_since(event_loop.time())).await?;
                    return Ok(Turn::Fetch);
                }
                Gate::FetchRobots(mut robots) => {
                    let rules = event_loop.create_future();
                    let pending = rules.clone();
                    self.robots_pending
                        .borrow_mut()
                        .insert(host_key(url), pending);
                    loop {
                        sleep(robots.at.saturating_duration_since(event_loop.time())).await?;
                        let answer = match get(&robots.url).await {
                            Err(err) if is_cancelled(&err) => return Err(err),
                            answer => answer.map_err(|err| FetchError::from_anyhow(&err)),
                        };
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
                    // A result another task is fetching: its future's first
                    // `.await` would take the result from the others, so
                    // each waiter hangs its own on it, with a done callback.
                    let rules = self.robots_pending.borrow().get(&host_key(url)).cloned();
                    if let Some(rules) = rules {
                        let known = event_loop.create_future::<()>();
                        let waiter = known.clone();
                        rules.add_done_callback(move |_| {
                            waiter.set_result(());
                        });
                        known.await?;
                    }
                }
                Gate::Blocked(stat) => return Ok(Turn::Blocked(stat)),
                Gate::OverLimit => return Ok(Turn::Skip),
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
