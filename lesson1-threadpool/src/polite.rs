//! # Waiting for a turn: a sleeping thread, and a `Condvar`
//!
//! A crawl of someone else's site asks, before each fetch, whether and when
//! it may go: the host's robots.txt must be known (fetched once per host),
//! the host's next slot under `--delay` must have come, and `--max-pages`
//! must not be spent. The rules are the same in every lesson and live in
//! [`shared::polite`]; what a model shows is how it *waits* — for a time,
//! and for a result someone else is fetching. Every lesson answers that
//! question in a file of this name, with a [`Turns::wait`].
//!
//! A thread waits the plain way. For a time, it sleeps. For a host's
//! robots.txt, the first thread to meet the host fetches it on the spot,
//! while every other thread that needs that host sleeps on a `Condvar`
//! until it is told the rules are in. A sleeping thread holds no lock and
//! no socket, but it is still one of `--threads` doing nothing: that is what
//! waiting costs in this model.

use std::time::Instant;

use shared::http::Response;
use shared::links::Link;
use shared::polite::{Gate, Politeness, RobotsFetch, Turn};
use shared::{Config, FetchError};
use url::Url;

use crate::sync::{Condvar, Mutex, MutexGuard};

// ANCHOR: turns
/// The crawl's politeness, shared by the threads.
#[derive(Debug)]
pub struct Turns {
    /// robots.txt, the hosts' slots and `--max-pages`, behind one lock.
    polite: Mutex<Politeness>,
    /// Notified when a host's robots.txt has been answered: the threads
    /// waiting for it may ask again.
    rules_known: Condvar,
}
// ANCHOR_END: turns

impl Turns {
    /// The politeness `config` asks for, nothing fetched yet.
    pub fn new(config: &Config) -> Turns {
        Turns {
            polite: Mutex::new(Politeness::new(config)),
            rules_known: Condvar::new(),
        }
    }

    // ANCHOR: wait
    /// Wait until `url` may be fetched: its host's robots.txt known (this
    /// thread fetches it with `get` if no other thread is), its host's slot
    /// come.
    pub fn wait(&self, url: &Url, get: impl Fn(&Url) -> Result<Response, FetchError>) -> Turn {
        let mut polite = self.lock();
        loop {
            match polite.gate(url, Instant::now()) {
                Gate::Fetch { at } => {
                    drop(polite);
                    // A time to wait for: the thread sleeps, holding no lock.
                    sleep_until(at);
                    return Turn::Fetch;
                }
                Gate::FetchRobots(mut robots) => {
                    // This thread fetches the host's rules, without the lock,
                    // then wakes every thread that waits for them: when
                    // `answering` is dropped — also if `get` panics.
                    drop(polite);
                    let answering = Answering {
                        turns: self,
                        fetch: robots.clone(),
                    };
                    loop {
                        sleep_until(robots.at);
                        let answer = get(&robots.url);
                        let next = self.lock().robots_answer(robots, answer, Instant::now());
                        match next {
                            // A redirect, or the one retry: fetch again.
                            Some(next) => robots = next,
                            None => break,
                        }
                    }
                    drop(answering);
                    polite = self.lock();
                }
                // Another thread is fetching them: sleep until it says so.
                // The lock is let go while waiting, and taken back on waking.
                Gate::WaitForRobots => {
                    polite = self
                        .rules_known
                        .wait(polite)
                        .unwrap_or_else(|e| e.into_inner());
                }
                Gate::Blocked(stat) => return Turn::Blocked(stat),
                Gate::OverLimit => return Turn::Skip,
            }
        }
    }
    // ANCHOR_END: wait

    /// The links of a page at `depth` that are followed (`--max-depth`).
    pub fn links_at(&self, depth: usize, links: Vec<Link>) -> Vec<Link> {
        self.lock().links_at(depth, links)
    }

    /// URLs `--max-pages` left unfetched.
    pub fn over_limit(&self) -> usize {
        self.lock().over_limit()
    }

    /// Hosts whose robots.txt fetch never came back (0 at a sound crawl's
    /// end): the report's [`shared::Held::robots_pending`].
    pub fn robots_pending(&self) -> usize {
        self.lock().robots_pending()
    }

    /// The rules, even if a thread panicked while holding them.
    fn lock(&self) -> MutexGuard<'_, Politeness> {
        self.polite.lock().unwrap_or_else(|e| e.into_inner())
    }
}

// ANCHOR: answering
/// Wakes the threads waiting for a host's rules when the thread fetching
/// them is done — however it is done. A `get` that panics never reaches an
/// answer; without this guard the others would sleep on `rules_known`
/// forever, and the pool's `join` with them. Its `Drop` runs while the
/// panic unwinds too (as the pool's `task_done` guard does), marks the
/// host's fetch abandoned, and wakes them, so the crawl can end with the
/// panic's error.
struct Answering<'a> {
    turns: &'a Turns,
    fetch: RobotsFetch,
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.turns.lock().robots_abandoned(self.fetch.clone());
        }
        self.turns.rules_known.notify_all();
    }
}
// ANCHOR_END: answering

// ANCHOR: sleep_until
/// Sleep until `at` (at once if it has passed).
fn sleep_until(at: Instant) {
    let wait = at.saturating_duration_since(Instant::now());
    if !wait.is_zero() {
        std::thread::sleep(wait);
    }
}
// ANCHOR_END: sleep_until
