//! Tests of `src/polite.rs`: waiting for a URL's turn on the lesson's
//! runtime, whose clock the test controls (a sleep ends at once, and the
//! times are exact).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use lesson4_asyncio_style::event_loop::{EventLoop, TestClock};
use lesson4_asyncio_style::polite::Turns;
use lesson4_asyncio_style::sleep::sleep;
use shared::http::Response;
use shared::polite::Turn;
use shared::{Config, Lesson};
use url::Url;

fn url(path: &str) -> Url {
    Url::parse(&format!("http://site.test{path}")).unwrap()
}

fn robots(body: &str) -> Response {
    Response {
        status: 200,
        reason: String::new(),
        headers: Default::default(),
        body: body.as_bytes().to_vec(),
        reusable: false,
    }
}

fn config() -> Config {
    let mut config = Config::new(Lesson::Four, ["http://site.test/"]);
    config.log = shared::log::Log::capture(shared::log::Level::Error);
    config
}

/// One task per path waits for its turn on one host, robots.txt taking
/// 100 ms (loop time) to arrive. Returns what each got and when (from the
/// start), and how often robots.txt was fetched.
type Got = Vec<(&'static str, &'static str, Duration)>;

fn turns_of(config: &Config, paths: &[&'static str], body: &'static str) -> (Got, usize) {
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
            let (turns, asked, got) = (turns.clone(), asked.clone(), got.clone());
            let lp = event_loop.clone();
            event_loop.create_task(async move {
                let get = async |_: &Url| {
                    asked.set(asked.get() + 1);
                    sleep(Duration::from_millis(100)).await?;
                    Ok(robots(body))
                };
                let kind = match turns.wait(&url(path), get).await? {
                    Turn::Fetch => "fetch",
                    Turn::Blocked(_) => "blocked",
                    Turn::Skip => "skip",
                };
                got.borrow_mut().push((path, kind, lp.time() - started));
                Ok(())
            })
        })
        .collect();
    let all = async move {
        for task in tasks {
            task.await?;
        }
        Ok(())
    };
    event_loop
        .run_until_complete(all)
        .expect("`run_until_complete` must return Ok with what the coroutine returned");
    let got = got.take();
    (got, asked.get())
}

#[test]
fn one_task_fetches_robots_txt_and_the_others_hang_a_future_on_its() {
    let (got, asked) = turns_of(
        &config(),
        &["/a", "/no", "/b"],
        "User-agent: *\nDisallow: /no\n",
    );
    assert_eq!(
        asked, 1,
        "robots.txt fetches for three tasks on one host: one task fetches, the others wait for it"
    );
    assert_eq!(got.len(), 3, "tasks that got their turn: all three");
    for (path, kind, when) in &got {
        let expected = if *path == "/no" { "blocked" } else { "fetch" };
        assert_eq!(*kind, expected, "{path}'s turn (robots.txt disallows /no)");
        assert_eq!(
            *when,
            Duration::from_millis(100),
            "loop time {path} got its turn: when robots.txt arrived, 100 ms"
        );
    }
}

#[test]
fn a_hosts_turns_are_sleeps_a_delay_apart() {
    let mut config = config();
    config.delay = Duration::from_millis(500);
    let (got, _) = turns_of(&config, &["/a", "/b", "/c"], "User-agent: *\n");
    let times: Vec<Duration> = got.iter().map(|(_, _, when)| *when).collect();
    assert_eq!(
        times,
        [500, 1000, 1500].map(Duration::from_millis),
        "loop times the three tasks got their turns with --delay 500 ms: a \
         sleep each, a delay apart ({got:?})"
    );
}
