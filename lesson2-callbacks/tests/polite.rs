//! Tests of `src/polite.rs`: waiting for a URL's turn with callbacks, on a
//! loop whose clock the test controls (a 100 ms timer fires at once, and
//! the times are exact).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use lesson2_callbacks::event_loop::{EventLoop, TestClock};
use lesson2_callbacks::polite::{Answer, Get, Turns};
use shared::http::Response;
use shared::polite::Turn;
use shared::{Config, FetchError, Lesson};
use url::Url;

fn url(path: &str) -> Url {
    Url::parse(&format!("http://site.test{path}")).unwrap()
}

fn robots(status: u16, body: &str) -> Result<Response, FetchError> {
    Ok(Response {
        status,
        reason: String::new(),
        headers: Default::default(),
        body: body.as_bytes().to_vec(),
        reusable: false,
    })
}

fn config() -> Config {
    let mut config = Config::new(Lesson::Two, ["http://site.test/"]);
    config.log = shared::log::Log::capture(shared::log::Level::Error);
    config
}

/// A `get` that answers `body` 100 ms (loop time) after it is asked, and
/// counts how often it was asked.
fn slow_get(event_loop: &EventLoop, body: &'static str, asked: Rc<Cell<usize>>) -> Get {
    let event_loop = event_loop.clone();
    Rc::new(move |_: &Url, answer: Answer| {
        asked.set(asked.get() + 1);
        event_loop.call_later(Duration::from_millis(100), move || {
            answer(robots(200, body))
        });
    })
}

/// Waits for `paths` on one host; returns each turn with the loop time it
/// came at (from the start), in the order they came.
fn turns_of(
    config: &Config,
    paths: &[&str],
    get_body: &'static str,
) -> (Vec<(String, Turn, Duration)>, usize) {
    let event_loop = EventLoop::with_clock(TestClock::new()).expect(
        "`EventLoop::with_clock` must return a loop (an Err here is the OS refusing a selector)",
    );
    let turns = Rc::new(Turns::new(config));
    let asked = Rc::new(Cell::new(0));
    let got = Rc::new(RefCell::new(Vec::new()));
    let started: Instant = event_loop.time();
    for path in paths {
        let (got, event_loop2, path2) = (got.clone(), event_loop.clone(), path.to_string());
        let done = move |turn| {
            let when = event_loop2.time().duration_since(started);
            got.borrow_mut().push((path2, turn, when));
            if got.borrow().len() == 3 {
                event_loop2.stop();
            }
        };
        turns.wait(
            &event_loop,
            url(path),
            slow_get(&event_loop, get_body, asked.clone()),
            Box::new(done),
        );
    }
    // Nothing runs inside `wait`: every turn comes from the loop.
    assert!(got.borrow().is_empty(), "a turn came inside wait");
    event_loop.run_forever().expect("`run_forever` must return Ok when it ends normally, stopped or with nothing left to wait for (an Err is the loop refusing to run)");
    let got = got.take();
    (got, asked.get())
}

#[test]
fn one_fetch_of_robots_txt_and_a_callback_for_each_waiting_url() {
    let (got, asked) = turns_of(
        &config(),
        &["/a", "/no", "/b"],
        "User-agent: *\nDisallow: /no\n",
    );
    assert_eq!(asked, 1, "robots.txt fetched once");
    let mut paths: Vec<&str> = got.iter().map(|(path, _, _)| path.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        ["/a", "/b", "/no"],
        "the URLs whose turn came: every one that waited, the one whose wait started the \
         robots.txt fetch too: it must wait for the rules like everyone else \
         (`wait_for_rules`)"
    );
    for (path, turn, _) in &got {
        match path.as_str() {
            "/no" => assert!(matches!(turn, Turn::Blocked(_)), "{turn:?}"),
            _ => assert!(matches!(turn, Turn::Fetch), "{path}: {turn:?}"),
        }
    }
}

#[test]
fn a_hosts_turns_are_timers_a_delay_apart() {
    let mut config = config();
    config.delay = Duration::from_millis(500);
    let (got, _) = turns_of(&config, &["/a", "/b", "/c"], "User-agent: *\n");
    // robots.txt starts at 0 and answers at 100 ms; the pages' slots are
    // 500, 1000 and 1500 ms, each a timer.
    let times: Vec<Duration> = got.iter().map(|(_, _, when)| *when).collect();
    assert_eq!(
        times,
        [500, 1000, 1500].map(Duration::from_millis),
        "{got:?}"
    );
}
