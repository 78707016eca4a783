//! # Politeness: what a crawler asks before each fetch
//!
//! A crawl of someone else's site asks three questions before it fetches a
//! page, and the answers do not depend on the concurrency model:
//!
//! 1. **May I?** The host's robots.txt says ([`crate::robots`]). Its rules
//!    must be in hand first, so the first URL met on a host is held back
//!    while `/robots.txt` is fetched — once per host and crawl — and every
//!    other URL of that host waits for the same answer.
//! 2. **When?** Not before the host's next slot ([`HostSchedule`]): the
//!    previous start plus `--delay` (or the host's `Crawl-delay`).
//! 3. **Still within the limits?** `--max-pages` ([`CrawlLimits`]).
//!
//! [`Politeness::gate`] answers all three in one step and says what to do
//! next ([`Gate`]). What it never does is *wait*: that is each lesson's own
//! business, and the point of the comparison. Lesson 1's thread sleeps, or
//! waits on a `Condvar` for another thread's robots.txt; lesson 2 arms a
//! timer in its loop and keeps callbacks waiting for a host's rules; lesson
//! 3's coroutine and lesson 4's task await a sleep, and a future that the
//! robots.txt fetch completes. Every lesson asks the same questions here and
//! gets the same answers, so they all fetch the same URLs.
//!
//! The robots.txt fetch itself is the lesson's (its own fetch, on its own
//! model); [`Politeness::robots_answer`] reads what came back and says
//! whether to fetch again: a redirect (up to [`MAX_ROBOTS_REDIRECTS`]), or
//! one retry after a failure, as RFC 9309 suggests.

use std::collections::HashMap;
#[cfg(test)]
use std::time::Duration;
use std::time::Instant;

use url::Url;

use crate::cli::Config;
use crate::http::Response;
use crate::links::Link;
use crate::log::Log;
use crate::robots::Robots;
use crate::schedule::{host_key, CrawlLimits, HostSchedule};
use crate::stats::{Blocked, FailKind, FetchError, FetchStatistic};

/// How many redirects a robots.txt fetch follows (RFC 9309: at least five).
/// After that, the file counts as unavailable in the RFC's sense: no rules.
pub const MAX_ROBOTS_REDIRECTS: usize = 5;

/// How many times a robots.txt fetch is tried when the host fails to answer
/// (or answers `5xx`/`429`) before the host counts as refusing everything.
pub const ROBOTS_TRIES: usize = 2;

/// What to do with a URL, from [`Politeness::gate`].
#[derive(Debug)]
pub enum Gate {
    /// Fetch it, starting at `at`: now, or the host's next slot, which is
    /// held for this fetch. (The page already counts in `--max-pages`.)
    Fetch { at: Instant },
    /// This host's rules are not known yet: fetch its robots.txt first (this
    /// caller is the one that does), then ask again.
    FetchRobots(RobotsFetch),
    /// Another fetch is getting this host's robots.txt: ask again once it
    /// has been answered ([`Politeness::robots_answer`] returned `None`).
    WaitForRobots,
    /// Not fetched: robots.txt refused it. The report's line for it.
    Blocked(FetchStatistic),
    /// Not fetched: `--max-pages` fetches have been started. It stays in
    /// the report's `Todo`.
    OverLimit,
}

/// How waiting for a URL's turn ended: what a lesson's waiting code hands
/// back to its crawler once [`Politeness::gate`] has stopped saying "wait".
#[derive(Debug)]
pub enum Turn {
    /// Fetch it now.
    Fetch,
    /// Not fetched: robots.txt refused it. The report's line for it.
    Blocked(FetchStatistic),
    /// Not fetched: `--max-pages` were started (it stays in `Todo`).
    Skip,
}

/// One robots.txt fetch to make: fetch [`RobotsFetch::url`], starting at
/// [`RobotsFetch::at`], and hand the result to [`Politeness::robots_answer`].
#[derive(Debug, Clone)]
pub struct RobotsFetch {
    /// What to fetch: `http://HOST[:PORT]/robots.txt`, or where it redirected.
    pub url: Url,
    /// When: robots.txt is a request to the host like any other, so it keeps
    /// the host's delay too.
    pub at: Instant,
    /// Whose rules these are (host and port of the URL that asked).
    host: String,
    /// Redirects followed so far.
    redirects: usize,
    /// Tries of this URL so far (the first is 1).
    tries: usize,
}

/// Per host: its rules, or the fact that someone is fetching them.
#[derive(Debug)]
enum Rules {
    Fetching,
    Known(Robots),
}

/// The crawl's answers to "may I, when, and is there room?", for every URL.
#[derive(Debug)]
pub struct Politeness {
    /// `--robots obey` (else every URL is allowed and nothing is fetched first).
    obey: bool,
    /// `--user-agent`: the product token whose robots.txt group applies.
    agent: String,
    /// Per host (host and port): its robots.txt rules.
    rules: HashMap<String, Rules>,
    /// `--delay` and each host's `Crawl-delay`: the next slot per host.
    schedule: HostSchedule,
    /// `--max-pages`, `--max-depth`.
    limits: CrawlLimits,
    /// URLs not fetched because of `--max-pages`, for the report's `Todo`.
    over_limit: usize,
    /// For the one info line per host saying what its robots.txt gave.
    log: Log,
}

impl Politeness {
    /// The politeness `config` asks for.
    pub fn new(config: &Config) -> Politeness {
        Politeness {
            obey: config.obey_robots,
            agent: config.user_agent.clone(),
            rules: HashMap::new(),
            schedule: HostSchedule::new(config.delay),
            limits: CrawlLimits::new(config.max_pages, config.max_depth),
            over_limit: 0,
            log: config.log.clone(),
        }
    }

    /// What to do with `url` now: see [`Gate`]. A `Fetch` answer has taken
    /// the host's slot and a page of `--max-pages`: the caller must fetch.
    pub fn gate(&mut self, url: &Url, now: Instant) -> Gate {
        self.gate_host(url, host_key(url), now)
    }

    /// [`Politeness::gate`], with `url`'s host already known.
    fn gate_host(&mut self, url: &Url, host: String, now: Instant) -> Gate {
        // The course fetches `http` only: an `https` URL fails as
        // unsupported without any request, so there is nothing to ask.
        if self.obey && url.scheme() == "http" {
            match self.rules.get(&host) {
                None => {
                    self.rules.insert(host.clone(), Rules::Fetching);
                    let mut robots_url = url.clone();
                    robots_url.set_path("/robots.txt");
                    robots_url.set_query(None);
                    robots_url.set_fragment(None);
                    let at = self.schedule.next_slot(&host, now);
                    return Gate::FetchRobots(RobotsFetch {
                        url: robots_url,
                        at,
                        host,
                        redirects: 0,
                        tries: 1,
                    });
                }
                Some(Rules::Fetching) => return Gate::WaitForRobots,
                Some(Rules::Known(robots)) if !robots.allows(url) => {
                    let why = if robots.refuses_all() {
                        Blocked::RobotsUnavailable
                    } else {
                        Blocked::Robots
                    };
                    let mut stat = FetchStatistic::blocked(url.as_str(), why);
                    // The site's answer about it, for the exit status.
                    stat.status = robots.status();
                    return Gate::Blocked(stat);
                }
                Some(Rules::Known(_)) => {}
            }
        }
        if !self.limits.try_start_page() {
            self.over_limit += 1;
            return Gate::OverLimit;
        }
        Gate::Fetch {
            at: self.schedule.next_slot(&host, now),
        }
    }

    /// [`Politeness::gate`]'s answer when it needs no waiting — fetch now, a
    /// blocked URL, one past the page limit — as a [`Turn`]; `None`, with
    /// nothing changed, when the URL must wait for its host's robots.txt or
    /// a later slot (then ask `gate`, and wait the model's way). It spares
    /// the usual URL, on a host whose rules are in and with no delay to
    /// keep, the machinery of waiting.
    pub fn ready(&mut self, url: &Url, now: Instant) -> Option<Turn> {
        let host = host_key(url);
        let rules_known = matches!(self.rules.get(&host), Some(Rules::Known(_)));
        let needs_rules = self.obey && url.scheme() == "http" && !rules_known;
        if needs_rules || self.schedule.peek_slot(&host, now) > now {
            return None;
        }
        match self.gate_host(url, host, now) {
            Gate::Fetch { .. } => Some(Turn::Fetch),
            Gate::Blocked(stat) => Some(Turn::Blocked(stat)),
            Gate::OverLimit => Some(Turn::Skip),
            // Not with the host's rules known: `gate` asks for robots.txt
            // only when they are not.
            Gate::FetchRobots(_) | Gate::WaitForRobots => None,
        }
    }

    /// What the robots.txt fetch `fetch` brought. Returns the next fetch to
    /// make (a redirect, or the one retry after a failure), or `None` when
    /// the host's rules are known: everything waiting for them may ask
    /// [`Politeness::gate`] again.
    pub fn robots_answer(
        &mut self,
        fetch: RobotsFetch,
        answer: Result<Response, FetchError>,
        now: Instant,
    ) -> Option<RobotsFetch> {
        let retry = |this: &mut Politeness, fetch: RobotsFetch| {
            (fetch.tries < ROBOTS_TRIES).then(|| RobotsFetch {
                at: this.schedule.next_slot(&host_key(&fetch.url), now),
                tries: fetch.tries + 1,
                ..fetch
            })
        };
        let robots = match answer {
            Ok(response) if FetchStatistic::is_redirect_status(response.status) => {
                let next = response
                    .header("location")
                    .and_then(|location| fetch.url.join(location).ok());
                match next {
                    Some(next) if fetch.redirects < MAX_ROBOTS_REDIRECTS => {
                        return Some(RobotsFetch {
                            at: self.schedule.next_slot(&host_key(&next), now),
                            url: next,
                            redirects: fetch.redirects + 1,
                            tries: 1,
                            host: fetch.host,
                        });
                    }
                    Some(_) => Robots::allow_all(format!(
                        "more than {MAX_ROBOTS_REDIRECTS} redirects: no rules"
                    )),
                    None => Robots::allow_all(format!(
                        "status {} without a Location: no rules",
                        response.status
                    )),
                }
            }
            Ok(response) if response.status == 429 || response.status >= 500 => {
                if let Some(again) = retry(self, fetch.clone()) {
                    return Some(again);
                }
                Robots::from_status(response.status, &response.body, &self.agent)
            }
            Ok(response) => Robots::from_status(response.status, &response.body, &self.agent),
            Err(error) if error.kind.is_retryable() => {
                if let Some(again) = retry(self, fetch.clone()) {
                    return Some(again);
                }
                match error.kind {
                    // Nothing listens there (or the name does not resolve):
                    // no request can reach the host at all. Its pages are
                    // left to fail the same way, so each URL's line says why
                    // (a closed port reads as today, not as "blocked").
                    FailKind::Dns | FailKind::Connect => {
                        Robots::allow_all(format!("unreachable ({error}): its pages will fail too"))
                    }
                    _ => Robots::deny_all(format!("no answer ({error}): nothing allowed")),
                }
            }
            Err(error) => Robots::deny_all(format!("no answer ({error}): nothing allowed")),
        };
        let delay = robots.crawl_delay();
        if let Some(delay) = delay {
            self.schedule.set_crawl_delay(&fetch.host, delay);
        }
        self.log.info(format_args!(
            "robots.txt for {}: {}",
            fetch.host,
            robots.summary()
        ));
        self.rules.insert(fetch.host, Rules::Known(robots));
        None
    }

    /// The robots.txt fetch `fetch` will never be answered: the code that
    /// made it gave up half-way (a thread that panicked). The host's rules
    /// become "nothing allowed", as for a host that never answers, so that
    /// whatever waits for them can go on instead of waiting forever.
    pub fn robots_abandoned(&mut self, fetch: RobotsFetch) {
        let robots = Robots::deny_all("its fetch was abandoned: nothing allowed".to_string());
        self.rules.insert(fetch.host, Rules::Known(robots));
    }

    /// The links of a page at `depth` (roots are 0) that are followed: all
    /// of them, or none past `--max-depth` (they are still counted on the
    /// page's line, as `TOTAL`).
    pub fn links_at(&self, depth: usize, links: Vec<Link>) -> Vec<Link> {
        if self.limits.follows_links_at(depth) {
            links
        } else {
            Vec::new()
        }
    }

    /// URLs not fetched because `--max-pages` were started: they belong in
    /// the report's `Todo`.
    pub fn over_limit(&self) -> usize {
        self.over_limit
    }

    /// Hosts whose robots.txt fetch was started ([`Gate::FetchRobots`])
    /// and never answered ([`Politeness::robots_answer`] or
    /// [`Politeness::robots_abandoned`]): 0 at the end of a sound crawl,
    /// whatever its robots.txt fetches met.
    pub fn robots_pending(&self) -> usize {
        self.rules
            .values()
            .filter(|rules| matches!(rules, Rules::Fetching))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Lesson;
    use crate::log::Level;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    fn config() -> Config {
        let mut config = Config::new(Lesson::Four, ["http://a.test/"]);
        config.log = Log::capture(Level::Info);
        config
    }

    fn response(status: u16, headers: &[(&str, &str)], body: &str) -> Response {
        let mut response = Response {
            status,
            reason: String::new(),
            headers: Default::default(),
            body: body.as_bytes().to_vec(),
            reusable: false,
        };
        for (name, value) in headers {
            response.headers.push(name, value);
        }
        response
    }

    /// The first URL of a host asks for robots.txt; give it `answer`.
    fn learn(polite: &mut Politeness, page: &str, answer: Result<Response, FetchError>) {
        let now = Instant::now();
        let Gate::FetchRobots(fetch) = polite.gate(&url(page), now) else {
            panic!("expected a robots.txt fetch first");
        };
        assert_eq!(
            polite.robots_answer(fetch, answer, now).map(|f| f.url),
            None
        );
    }

    #[test]
    fn the_first_url_of_a_host_fetches_robots_txt_and_the_others_wait() {
        let mut polite = Politeness::new(&config());
        let now = Instant::now();
        let Gate::FetchRobots(fetch) = polite.gate(&url("http://a.test/x?q#f"), now) else {
            panic!("expected a robots.txt fetch");
        };
        assert_eq!(fetch.url.as_str(), "http://a.test/robots.txt");
        assert!(matches!(
            polite.gate(&url("http://a.test/y"), now),
            Gate::WaitForRobots
        ));
        // Another host is not held up by this one.
        assert!(matches!(
            polite.gate(&url("http://b.test/y"), now),
            Gate::FetchRobots(_)
        ));
        let body = "User-agent: *\nDisallow: /private\n";
        assert!(polite
            .robots_answer(fetch, Ok(response(200, &[], body)), now)
            .is_none());
        assert!(matches!(
            polite.gate(&url("http://a.test/y"), now),
            Gate::Fetch { .. }
        ));
        let Gate::Blocked(stat) = polite.gate(&url("http://a.test/private/1"), now) else {
            panic!("expected blocked");
        };
        assert_eq!(stat.blocked, Some(Blocked::Robots));
    }

    #[test]
    fn with_robots_ignored_nothing_is_fetched_first() {
        let mut config = config();
        config.obey_robots = false;
        let mut polite = Politeness::new(&config);
        assert!(matches!(
            polite.gate(&url("http://a.test/"), Instant::now()),
            Gate::Fetch { .. }
        ));
    }

    #[test]
    fn a_404_allows_everything_and_a_500_twice_refuses_everything() {
        let mut polite = Politeness::new(&config());
        learn(&mut polite, "http://a.test/", Ok(response(404, &[], "")));
        assert!(matches!(
            polite.gate(&url("http://a.test/z"), Instant::now()),
            Gate::Fetch { .. }
        ));

        let now = Instant::now();
        let Gate::FetchRobots(fetch) = polite.gate(&url("http://b.test/"), now) else {
            panic!()
        };
        let again = polite
            .robots_answer(fetch, Ok(response(503, &[], "")), now)
            .expect("one retry");
        assert_eq!(again.url.as_str(), "http://b.test/robots.txt");
        assert!(polite
            .robots_answer(again, Ok(response(503, &[], "")), now)
            .is_none());
        let Gate::Blocked(stat) = polite.gate(&url("http://b.test/"), now) else {
            panic!("expected blocked")
        };
        assert_eq!(stat.blocked, Some(Blocked::RobotsUnavailable));
    }

    #[test]
    fn a_host_that_does_not_answer_is_tried_twice_then_refused() {
        let mut polite = Politeness::new(&config());
        let now = Instant::now();
        let Gate::FetchRobots(fetch) = polite.gate(&url("http://a.test/"), now) else {
            panic!()
        };
        let timeout = || Err(FetchError::new(FailKind::Timeout, "timed out"));
        let again = polite.robots_answer(fetch, timeout(), now).expect("retry");
        assert!(polite.robots_answer(again, timeout(), now).is_none());
        assert!(matches!(
            polite.gate(&url("http://a.test/"), now),
            Gate::Blocked(_)
        ));
    }

    #[test]
    fn an_unreachable_host_leaves_its_pages_to_fail_on_their_own() {
        let mut polite = Politeness::new(&config());
        let now = Instant::now();
        let Gate::FetchRobots(fetch) = polite.gate(&url("http://a.test/"), now) else {
            panic!()
        };
        let refused = || Err(FetchError::new(FailKind::Connect, "connection refused"));
        let again = polite.robots_answer(fetch, refused(), now).expect("retry");
        assert!(polite.robots_answer(again, refused(), now).is_none());
        assert!(matches!(
            polite.gate(&url("http://a.test/"), now),
            Gate::Fetch { .. }
        ));
    }

    #[test]
    fn ready_answers_only_what_needs_no_waiting_and_changes_nothing_else() {
        let mut config = config();
        config.max_pages = Some(2);
        let mut polite = Politeness::new(&config);
        let now = Instant::now();
        // Rules not in yet: no answer, and the first `gate` still fetches them.
        assert!(polite.ready(&url("http://a.test/1"), now).is_none());
        learn(
            &mut polite,
            "http://a.test/",
            Ok(response(200, &[], "User-agent: *\nDisallow: /no\n")),
        );
        let now = Instant::now();
        assert!(matches!(
            polite.ready(&url("http://a.test/1"), now),
            Some(Turn::Fetch)
        ));
        assert!(matches!(
            polite.ready(&url("http://a.test/no"), now),
            Some(Turn::Blocked(_))
        ));
        assert!(matches!(
            polite.ready(&url("http://a.test/2"), now),
            Some(Turn::Fetch)
        ));
        assert!(matches!(
            polite.ready(&url("http://a.test/3"), now),
            Some(Turn::Skip)
        ));

        // A slot in the future: no answer, and the slot is not taken.
        let mut config = self::config();
        config.delay = Duration::from_secs(1);
        let mut polite = Politeness::new(&config);
        learn(&mut polite, "http://a.test/", Ok(response(404, &[], "")));
        let now = Instant::now();
        assert!(polite.ready(&url("http://a.test/1"), now).is_none());
        let Gate::Fetch { at } = polite.gate(&url("http://a.test/1"), now) else {
            panic!()
        };
        assert!(at > now, "the slot is a delay after robots.txt's");
    }

    #[test]
    fn an_abandoned_robots_fetch_refuses_the_host_and_waits_no_more() {
        let mut polite = Politeness::new(&config());
        let now = Instant::now();
        let Gate::FetchRobots(fetch) = polite.gate(&url("http://a.test/"), now) else {
            panic!()
        };
        assert!(matches!(
            polite.gate(&url("http://a.test/x"), now),
            Gate::WaitForRobots
        ));
        polite.robots_abandoned(fetch);
        let Gate::Blocked(stat) = polite.gate(&url("http://a.test/x"), now) else {
            panic!("a host whose robots.txt fetch was abandoned refuses everything")
        };
        assert_eq!(stat.blocked, Some(Blocked::RobotsUnavailable));
    }

    #[test]
    fn https_urls_ask_for_nothing() {
        let mut polite = Politeness::new(&config());
        assert!(matches!(
            polite.gate(&url("https://a.test/"), Instant::now()),
            Gate::Fetch { .. }
        ));
    }

    #[test]
    fn redirects_are_followed_five_times_then_there_are_no_rules() {
        let mut polite = Politeness::new(&config());
        let now = Instant::now();
        let Gate::FetchRobots(mut fetch) = polite.gate(&url("http://a.test/"), now) else {
            panic!()
        };
        for hop in 1..=MAX_ROBOTS_REDIRECTS {
            let location = format!("/robots-{hop}.txt");
            let answer = Ok(response(301, &[("Location", &location)], ""));
            fetch = polite.robots_answer(fetch, answer, now).expect("followed");
            assert_eq!(fetch.url.path(), location);
        }
        let answer = Ok(response(301, &[("Location", "/again")], ""));
        assert!(polite.robots_answer(fetch, answer, now).is_none());
        assert!(matches!(
            polite.gate(&url("http://a.test/"), now),
            Gate::Fetch { .. }
        ));
    }

    #[test]
    fn a_redirected_robots_txt_gives_the_first_hosts_rules() {
        let mut polite = Politeness::new(&config());
        let now = Instant::now();
        let Gate::FetchRobots(fetch) = polite.gate(&url("http://a.test/"), now) else {
            panic!()
        };
        let answer = Ok(response(
            302,
            &[("Location", "http://b.test/shared-robots.txt")],
            "",
        ));
        let next = polite.robots_answer(fetch, answer, now).unwrap();
        let body = "User-agent: *\nDisallow: /\n";
        assert!(polite
            .robots_answer(next, Ok(response(200, &[], body)), now)
            .is_none());
        assert!(matches!(
            polite.gate(&url("http://a.test/page"), now),
            Gate::Blocked(_)
        ));
    }

    #[test]
    fn crawl_delay_spaces_the_hosts_fetches_and_robots_txt_counts_as_one() {
        let mut config = config();
        config.delay = Duration::from_millis(100);
        let mut polite = Politeness::new(&config);
        let now = Instant::now();
        let Gate::FetchRobots(fetch) = polite.gate(&url("http://a.test/"), now) else {
            panic!()
        };
        assert_eq!(fetch.at, now);
        let body = "User-agent: *\nCrawl-delay: 2\n";
        assert!(polite
            .robots_answer(fetch, Ok(response(200, &[], body)), now)
            .is_none());
        let Gate::Fetch { at } = polite.gate(&url("http://a.test/1"), now) else {
            panic!()
        };
        // The robots.txt fetch started at `now`; the first page waits the
        // host's Crawl-delay, the larger of the two delays.
        assert_eq!(at, now + Duration::from_secs(2));
        let Gate::Fetch { at } = polite.gate(&url("http://a.test/2"), now) else {
            panic!()
        };
        assert_eq!(at, now + Duration::from_secs(4));
        assert_eq!(
            config.log.lines(),
            ["robots.txt for a.test:80: status 200, 0 rule(s) for *, crawl delay 2.000 s"]
        );
    }

    #[test]
    fn the_page_limit_counts_fetches_not_blocked_urls() {
        let mut config = config();
        config.max_pages = Some(1);
        let mut polite = Politeness::new(&config);
        let body = "User-agent: *\nDisallow: /no\n";
        learn(&mut polite, "http://a.test/", Ok(response(200, &[], body)));
        let now = Instant::now();
        assert!(matches!(
            polite.gate(&url("http://a.test/no"), now),
            Gate::Blocked(_)
        ));
        assert!(matches!(
            polite.gate(&url("http://a.test/yes"), now),
            Gate::Fetch { .. }
        ));
        assert!(matches!(
            polite.gate(&url("http://a.test/more"), now),
            Gate::OverLimit
        ));
        assert_eq!(polite.over_limit(), 1);
    }
}
