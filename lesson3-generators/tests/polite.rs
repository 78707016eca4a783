//! Tests of `src/polite.rs`: waiting for a URL's turn in a coroutine, on a loop
//! whose clock the test controls (a sleep ends at once, and the times are
//! exact). Each test is bounded (see `shared::fixtures::bound`): a task that is
//! never woken would otherwise leave the loop waiting for ever.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use lesson3_generators::event_loop::{EventLoop, TestClock};
use lesson3_generators::polite::Turns;
use lesson3_generators::sleep::sleep;
use shared::fixtures::bound::within;
use shared::http::Response;
use shared::polite::Turn;
use shared::{Config, FetchError, Lesson};
use url::Url;

fn url(path: &str) -> Url {
    Url::parse(&format!("http://site.test{path}")).unwrap()
}

fn robots(body: &str) -> Result<Response, FetchError> {
    Ok(Response {
        status: 200,
        reason: String::new(),
        headers: Default::default(),
        body: body.as_bytes().to_vec(),
        reusable: false,
    })
}

fn config() -> Config {
    let mut config = Config::new(Lesson::Three, ["http://site.test/"]);
    config.log = shared::log::Log::capture(shared::log::Level::Error);
    config
}

/// One task per path waits for its turn on one host, robots.txt taking
/// 100 ms (loop time) to arrive. Returns what each got and when (from the
/// start), and how often robots.txt was fetched.
fn turns_of(
    config: &Config,
    paths: &[&'static str],
    body: &'static str,
) -> (Vec<(&'static str, String, Duration)>, usize) {
    let event_loop = EventLoop::with_clock(TestClock::new()).expect(
        "`EventLoop::with_clock` must return a loop (an Err here is the OS refusing a selector)",
    );
    let turns = Rc::new(Turns::new(config));
    let asked = Rc::new(Cell::new(0));
    let got = Rc::new(RefCell::new(Vec::new()));
    let started = event_loop.time();
    let tasks: Vec<_> = paths
        .iter()
        .map(|&path| {
            let (turns, asked, got, lp) = (
                turns.clone(),
                asked.clone(),
                got.clone(),
                event_loop.clone(),
            );
            event_loop.create_task(async move {
                let get = async |_: &Url| {
                    asked.set(asked.get() + 1);
                    sleep(Duration::from_millis(100)).await;
                    robots(body)
                };
                let turn = turns.wait(&url(path), get).await;
                let kind = match turn {
                    Turn::Fetch => "fetch",
                    Turn::Blocked(_) => "blocked",
                    Turn::Skip => "skip",
                };
                got.borrow_mut()
                    .push((path, kind.to_string(), lp.time() - started));
            })
        })
        .collect();
    let all = async move {
        for task in tasks {
            task.await;
        }
    };
    event_loop
        .run_until_complete(all)
        .expect("`run_until_complete` must return Ok with what the coroutine returned");
    let got = got.take();
    (got, asked.get())
}

/// What to look at when a task waiting for its turn never ends.
const NEVER_WOKEN: &str = "a task waiting for its turn was never woken. In Turns::wait, \
    the first task for a host puts a new Future in robots_pending before it fetches, \
    and set_result(()) on it when the rules are in; the others await a clone of it \
    (and Future::poll must keep every awaiter's waker, not only the last). A wait for \
    the host's slot is a sleep(..).await";

#[test]
fn one_task_fetches_robots_txt_and_the_others_await_its_future() {
    within(10, NEVER_WOKEN, || {
        let (got, asked) = turns_of(
            &config(),
            &["/a", "/no", "/b"],
            "User-agent: *\nDisallow: /no\n",
        );
        assert_eq!(
            asked, 1,
            "robots.txt fetches for three URLs of one host: one, the others await its future"
        );
        assert_eq!(got.len(), 3, "tasks that got their turn: all three");
        for (path, kind, when) in &got {
            let expected = if *path == "/no" { "blocked" } else { "fetch" };
            assert_eq!(
                kind, expected,
                "the turn {path} got: blocked when robots.txt disallows it, else fetch"
            );
            // Everyone waited for the one answer.
            assert_eq!(
                *when,
                Duration::from_millis(100),
                "when {path} got its turn: when the one robots.txt fetch (100 ms) ended"
            );
        }
    });
}

#[test]
fn a_hosts_turns_are_sleeps_a_delay_apart() {
    within(10, NEVER_WOKEN, || {
        let mut config = config();
        config.delay = Duration::from_millis(500);
        let (got, _) = turns_of(&config, &["/a", "/b", "/c"], "User-agent: *\n");
        let times: Vec<Duration> = got.iter().map(|(_, _, when)| *when).collect();
        assert_eq!(
            times,
            [500, 1000, 1500].map(Duration::from_millis),
            "when each of three URLs of one host got its turn, with --delay 500 ms: \
             a slot every 500 ms, the first taken by the robots.txt request ({got:?})"
        );
    });
}
