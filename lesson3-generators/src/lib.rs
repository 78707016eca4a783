//! # Lesson 3: coroutines — the callback crawler, written top to bottom again
//!
//! Lesson 2 made one thread wait for thousands of sockets, and paid for it in
//! the code: each fetch was torn into callbacks, its local variables moved
//! into a struct, and an error knew only the callback it happened in. This
//! lesson keeps lesson 2's engine — one thread, non-blocking sockets, the
//! same `mio` event loop — and gets back code that reads like lesson 1's:
//! `Fetcher::fetch` is one function that connects, writes, and reads the
//! response in that order, stopping at each `.await` while its socket is not
//! ready. It is the tutorial's third crawler, built on generators, `Future`,
//! `Task` and `yield from`.
//!
//! Stable Rust has no `yield`, so the lesson takes two steps:
//!
//! 1. **A generator by hand.** `generator.rs` writes the tutorial's
//!    generators as explicit state machines — the frame a struct, the
//!    suspension point an enum variant, `send` a method — and
//!    `fetch_by_hand.rs` writes the crawler's fetch the same way.
//! 2. **`async fn` is the compiler writing that state machine.** `fetch.rs`
//!    is the same fetch as an `async fn` composed of sub-coroutines (the
//!    socket's `connect`, `write_all` and `read`, then `read_all`), driven by
//!    the lesson's own `Future` (`future.rs`) and `Task` (`task.rs`, wakers
//!    from `std::task::Wake`) on the event loop. No executor crate.
//!
//! What changed since lesson 2: `event_loop.rs` is lesson 2's loop, which
//! every coroutine finds with `get_running_loop`, with one new kind of
//! `call_soon` callback, a task's step;
//! `socket.rs` waits for readiness with a future that a reader callback
//! resolves; `sleep` and `wait_for` are a timer and a deadline as futures;
//! `fetch.rs` is one coroutine instead of seven callbacks, and its errors
//! carry context (`fetching URL: reading response: connection reset`);
//! `crawler.rs` starts a task per URL whose coroutine is `fetch().await`
//! followed by lesson 2's `fetched`. The crawl-wide state, the stop rule
//! (`urls_todo` empty) and the socket budget are lesson 2's.
//!
//! | file | concept |
//! |---|---|
//! | `generator.rs` | `Coroutine::resume`, the tutorial's generators (`fib`, `gen_fn`, `yield from`) as hand-written state machines |
//! | `future.rs` | `Future`: a result slot and done-callbacks scheduled with `call_soon`, awaitable (`.await` as `yield from`) |
//! | `task.rs` | `Task`: steps a coroutine; its waker is `call_soon(step)` |
//! | `event_loop.rs` | lesson 2's loop over `mio::Poll`, plus what tasks need: `create_task`, `create_future`, `get_running_loop`, `run_until_complete` |
//! | `socket.rs` | `Socket::connect`, `write_all`, `read` as coroutines; `ready`, the tutorial's wait |
//! | `sleep.rs`, `wait_for.rs` | a timer as a future; a deadline around any future |
//! | `fetch_by_hand.rs` | the fetch as an explicit state machine (connecting → sending → reading → done) |
//! | `fetch.rs` | the fetch as an `async fn`: `connect_any`, `read_all`, the deadline, errors with context |
//! | `crawler.rs` | lesson 2's crawl state (`seen_urls`, `urls_todo`, socket budget), a task per URL |
//! | `polite.rs` | waiting for a URL's turn in a coroutine: a `sleep`, and a future per host for its robots.txt |
//! | `examples/coroutine_memory.rs` | the size of a fetch's coroutine, and the memory of N fetches in flight in lessons 1, 2 and 3 |
//!
//! ## What a fetch takes, and where it gives it back
//!
//! Anything an end forgets is lost to the rest of the crawl: a budget place
//! kept by a timed-out fetch is one socket fewer for every later fetch, and
//! a robots.txt that never wakes its host's URLs strands them all. Lesson 2
//! gave everything back in `Fetcher::finish`, which each callback that could
//! end a fetch had to remember to call. Here the guard, the socket and the
//! timer live in the fetch's coroutine, so their `Drop` gives them back on
//! every way out: `return`, `?`, and the drop of `get`'s coroutine at an
//! `.await` when `wait_for`'s deadline wins.
//!
//! <!-- how -->
//! | resource | taken in | given back in (on every end) |
//! |---|---|---|
//! | the URL in `urls_todo` | `Crawler::fetch` | `Crawler::finished`, once: from `fetched`, or from `take_turn` (refused by robots.txt, over `--max-pages`); an `OutOfDescriptors` end puts it back in line instead |
//! | a place in the socket budget (`started`) | `start_fetcher`; for a robots.txt, `start` | `fetched`, `get_robots`; then `fetch_waiting` passes it to the head of the line |
//! | the in-flight count | `InFlight::start`, in `get` after resolving | `Drop for InFlightGuard` |
//! | the socket: descriptor, token, reader and writer | `Socket::start_connect`, `Socket::ready` | `Drop for Socket`: `EventLoop::deregister` drops both callbacks, then the stream closes |
//! | the deadline's timer | the first poll of `wait_for`'s `Sleep` | firing, or `Drop for Sleep` (`TimerHandle::cancel`) |
//! | the host's robots.txt under way (`robots_pending`) | `Turns::wait`, on `Gate::FetchRobots` | `Turns::wait`, once `robots_answer` says `None` (it always does: tries and redirects are bounded); `set_result` wakes the host's URLs |
//! | the host's slot (`--delay`) | `Politeness::gate` | not given back: spent by the `sleep` until it |
//!
//! Only the crawl's own records (`started`, `urls_todo`, `robots_pending`)
//! are still given back by hand, by the code after the `.await`
//! (`fetched`, `get_robots`, `Turns::wait`).
//! <!-- /how -->

pub mod crawler;
pub mod event_loop;
pub mod fetch;
pub mod fetch_by_hand;
pub mod future;
pub mod generator;
pub mod polite;
pub mod sleep;
pub mod socket;
pub mod task;
pub mod wait_for;

use std::time::Instant;

use anyhow::Context;
use shared::{Config, CrawlReport};

use crate::crawler::Crawler;
use crate::event_loop::EventLoop;

// ANCHOR: crawl
/// Crawl from `config.roots` on one thread and report every URL reached. At
/// most `config.socket_budget()` fetches hold a socket at once.
pub fn crawl(config: &Config) -> anyhow::Result<CrawlReport> {
    crawl_with_budget(config, config.socket_budget())
}

/// [`crawl`] with at most `socket_budget` sockets open at once (a test can
/// set a small budget without lowering the process's open-file limit).
pub fn crawl_with_budget(config: &Config, socket_budget: usize) -> anyhow::Result<CrawlReport> {
    let started = Instant::now();
    let event_loop = EventLoop::new().context("cannot create the event loop")?;
    event_loop.set_trace(config.trace.clone());
    // No other thread wakes this loop: with nothing left to wait for, it
    // ends with an error instead of sleeping forever.
    event_loop.error_on_stall();
    let crawler = Crawler::new(config, socket_budget)?;
    {
        let mut crawler = crawler.borrow_mut();
        for root in crawler.roots().to_vec() {
            crawler.fetch(&event_loop, root, 0);
        }
    }
    // Steps every task until the last one's `fetched` finds `urls_todo`
    // empty and stops the loop.
    let ran = event_loop.run_forever().context("the event loop failed");
    // What the crawl still holds now that the loop has stopped: nothing, if
    // every fetch gave back what it took, however it ended. Counted before
    // `close`, which drops it all.
    let held = crawler.borrow().held(&event_loop);
    // Tasks hold the loop; drop whatever is left so the loop (and any socket
    // still open) is freed, even when `run` failed.
    event_loop.close();
    // The loop ends when the last URL is finished, or when it has nothing
    // left to run: then every URL must be finished too. URLs left say more
    // than the loop's own error: where they were, and what was not given
    // back.
    crawler.borrow().all_done(held)?;
    ran?;
    let report = crawler.borrow_mut().report(started.elapsed(), held);
    Ok(report)
}
// ANCHOR_END: crawl
