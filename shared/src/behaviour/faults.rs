//! # Every path gives back what it took: crawls where fetches fail
//!
//! A fetch takes things — a place in the socket budget, a socket and its
//! registration with the event loop, a timer for its deadline, a host's
//! robots.txt turn, a worker — and must give each back whichever way it
//! ends. The success path is walked by every other case; these cases walk
//! the others. Each is a small site on several hosts where every page
//! answers in a way drawn from a seed: its page, a redirect, or one of the
//! ways a fetch fails (the server closes the connection without a word,
//! cuts the body short, sends what is not HTTP, sends a body over the
//! limit, never answers; a redirect without `Location`). Links also lead to
//! a port where nothing listens (refused) and to `https` (unsupported), a
//! root may be a name that cannot resolve, and a host's robots.txt may fail
//! in the same ways. The crawl runs with a budget of 1 to 3 sockets, one or
//! two threads or tasks, one try or two (lesson 4), robots.txt obeyed or
//! not.
//!
//! Every case holds the crawl to an answer key — every URL reported exactly
//! once, with the line its page's answer gives, `Todo: 0`, the exit status
//! the answers call for — and then to the end state: the report's
//! [`Held`](crate::report::Held) must be clear. With budgets this small a
//! place not given back on one failing path strands every URL after it, and
//! the failure message names the resource.
//!
//! The [`faults_property!`](crate::faults_property) macro runs
//! [`FAULT_CASES`] of them per lesson; [`FAULTS_CASES_VARIABLE`] asks for
//! more, [`FAULTS_CASE_VARIABLE`] runs one case alone.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use super::hosts::listen_on_loopback;
use super::{assert_consistent, show_lines, try_crawl_within_deadline, url_diff, CrawlWithBudget};
use crate::cli::{Config, Lesson};
use crate::fixtures::server::{refused_addr, Route, Site, TestServer};
use crate::fixtures::sitegen::Rng;
use crate::http::Limits;
use crate::log::{Level, Log};
use crate::report::CrawlReport;
use crate::stats::{Blocked, FailKind};

/// How one page (or a host's robots.txt) answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `200`, an HTML page with its links.
    Page,
    /// `302` to another page of the same host.
    Redirect(usize),
    /// `302` without `Location`: a `redirect` failure.
    RedirectWithoutLocation,
    /// The server reads the request and closes the connection without a
    /// byte: a `reset` failure.
    Closed,
    /// A head promising more bytes than come (within the limit), then the
    /// close: `reset`.
    CutShort,
    /// Bytes that are not HTTP: `protocol`.
    NotHttp,
    /// A body over the case's limit ([`BODY_LIMIT`]): `too_large`.
    TooLarge,
    /// Never an answer: `timeout`, at the case's deadline.
    Stall,
}

impl Answer {
    /// The failure this answer ends in, or `None` for a page or a redirect.
    pub fn failure(self) -> Option<FailKind> {
        match self {
            Answer::Page | Answer::Redirect(_) => None,
            Answer::RedirectWithoutLocation => Some(FailKind::Redirect),
            Answer::Closed | Answer::CutShort => Some(FailKind::Reset),
            Answer::NotHttp => Some(FailKind::Protocol),
            Answer::TooLarge => Some(FailKind::TooLarge),
            Answer::Stall => Some(FailKind::Timeout),
        }
    }

    /// The route that answers so, for a page whose body is `body`.
    fn route(self, body: String, origin: &str) -> Route {
        match self {
            Answer::Page => Route::html(body),
            Answer::Redirect(target) => Route::redirect(302, &format!("{origin}{}", path(target))),
            Answer::RedirectWithoutLocation => Route::status(302),
            Answer::Closed => Route::html(body).drop_first(usize::MAX),
            Answer::CutShort => Route::html(body).content_length_lie(BODY_LIMIT / 2),
            Answer::NotHttp => Route::raw("this is not HTTP\r\n\r\n"),
            // Both leave the connection open, with the answer unread or
            // still to come: a client that used it again would read that.
            Answer::TooLarge => Route::body("text/html", vec![b'x'; 2 * BODY_LIMIT]).failing(),
            Answer::Stall => Route::stall().failing(),
        }
    }
}

/// The body limit of every fault case: small, so that a body over it is
/// cheap to send.
pub const BODY_LIMIT: usize = 16 * 1024;

/// The deadline of every fault case's fetches: a stalled answer costs this
/// (twice, with two tries), so it is short; the other answers come from
/// this process's own servers, long before it.
pub const FAULT_TIMEOUT: Duration = Duration::from_millis(700);

/// No fault case may take longer: a few seconds at most even with a stall
/// and two tries, so a crawl that hangs (a place in the budget never given
/// back, in a lesson that waits for it) fails well within a minute.
pub const FAULT_CASE_DEADLINE: Duration = Duration::from_secs(20);

/// The path of page `i`.
fn path(i: usize) -> String {
    match i {
        0 => "/".to_string(),
        i => format!("/p{i}"),
    }
}

/// A host name no lookup can resolve, without asking any server: longer
/// than a DNS name may be (253 bytes), so the system's resolver refuses it
/// before it sends a query.
pub fn unresolvable_host() -> String {
    vec!["a".repeat(60); 5].join(".")
}

/// One case, as drawn by the property test: everything else comes from
/// `seed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultsCase {
    /// Draws the site: links, each page's answer, each robots.txt.
    pub seed: u64,
    /// Live hosts, 1 or more.
    pub hosts: usize,
    /// Pages per host, 1 or more.
    pub pages: usize,
    /// The socket budget.
    pub budget: usize,
    /// `--threads` (lesson 1) or `--max-tasks` (lesson 4).
    pub workers: usize,
    /// `--max-tries` (lesson 4).
    pub tries: usize,
    /// `--robots obey` (else `ignore`).
    pub obey_robots: bool,
    /// Does one answer (a page's or a robots.txt's) never come? Each costs
    /// the deadline (twice, for two tries), so few cases have one.
    pub stall: bool,
}

/// The site a [`FaultsCase`] draws: per live host, each page's links and
/// answer, and its robots.txt's answer.
#[derive(Debug, Clone)]
pub struct FaultsSite {
    /// Per live host, per page: links as `(target, page)` and the answer.
    pub pages: Vec<Vec<(Vec<Link>, Answer)>>,
    /// Per live host: how its robots.txt answers (`None`: 404, no rules).
    pub robots: Vec<Option<Answer>>,
    /// Which live hosts' `/` are roots (host 0's always is).
    pub roots: Vec<usize>,
    /// Is the unresolvable name a root too?
    pub unresolvable_root: bool,
}

/// A link: where it points, and which page there.
pub type Link = (Target, usize);

/// Where a link points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// A live host (by number).
    Host(usize),
    /// The same page path on a port where nothing listens: `connect`.
    Refused,
    /// The same page path under `https` on a live host: `unsupported`.
    Https(usize),
}

/// What a correct crawl reports for one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `URL 200 text/html utf-8 SIZE NEW/TOTAL`.
    Page { size: usize, total: usize },
    /// `URL 302 redirect NEXT`.
    Redirect,
    /// `URL error KIND ...`.
    Fail(FailKind),
    /// `URL blocked WHY`.
    Blocked(Blocked),
}

impl FaultsCase {
    /// The site this case crawls.
    pub fn site(&self) -> FaultsSite {
        let mut rng = Rng::new(self.seed);
        let hosts = self.hosts.max(1);
        let pages = self.pages.max(1);
        let draw = |rng: &mut Rng, page: usize| -> Answer {
            match rng.below(100) {
                0..=49 => Answer::Page,
                50..=57 if pages > 1 => Answer::Redirect((page + 1 + rng.below(pages - 1)) % pages),
                50..=57 => Answer::Page,
                58..=62 => Answer::RedirectWithoutLocation,
                63..=70 => Answer::Closed,
                71..=78 => Answer::CutShort,
                79..=85 => Answer::NotHttp,
                86..=92 => Answer::TooLarge,
                _ => Answer::Page,
            }
        };
        let mut site = FaultsSite {
            pages: Vec::new(),
            robots: Vec::new(),
            roots: vec![0],
            unresolvable_root: rng.chance(15),
        };
        for h in 0..hosts {
            let mut host = Vec::new();
            for i in 0..pages {
                let mut links = Vec::new();
                // A tree inside the host keeps most pages reachable…
                for child in [2 * i + 1, 2 * i + 2] {
                    if child < pages {
                        links.push((Target::Host(h), child));
                    }
                }
                // …and the rest are drawn: other hosts, a refused port, https.
                for _ in 0..rng.below(4) {
                    let page = rng.below(pages);
                    let target = match rng.below(10) {
                        0 => Target::Refused,
                        1 => Target::Https(rng.below(hosts)),
                        _ => Target::Host(rng.below(hosts)),
                    };
                    links.push((target, page));
                }
                let answer = draw(&mut rng, i);
                host.push((links, answer));
            }
            site.pages.push(host);
            let robots = match rng.below(10) {
                0..=3 => None,
                4..=6 => Some(Answer::Page),
                _ => Some(match draw(&mut rng, 0) {
                    // A robots.txt that fails: 5xx, closed or not HTTP.
                    Answer::NotHttp => Answer::NotHttp,
                    Answer::CutShort | Answer::Closed => Answer::Closed,
                    _ => Answer::RedirectWithoutLocation,
                }),
            };
            site.robots.push(robots);
            if h > 0 && rng.chance(50) {
                site.roots.push(h);
            }
        }
        // One answer, a page's or a robots.txt's, never comes.
        if self.stall {
            let h = rng.below(hosts);
            match rng.below(pages + 1) {
                0 => site.robots[h] = Some(Answer::Stall),
                i => site.pages[h][i - 1].1 = Answer::Stall,
            }
        }
        site
    }

    /// The case as one line of numbers, read back by [`FaultsCase::from_text`].
    pub fn to_text(&self) -> String {
        format!(
            "{} {} {} {} {} {} {} {}",
            self.seed,
            self.hosts,
            self.pages,
            self.budget,
            self.workers,
            self.tries,
            u8::from(self.obey_robots),
            u8::from(self.stall)
        )
    }

    /// A case written by [`FaultsCase::to_text`], or `None`.
    pub fn from_text(text: &str) -> Option<FaultsCase> {
        let numbers: Vec<u64> = text
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect::<Option<_>>()?;
        let &[seed, hosts, pages, budget, workers, tries, obey, stall] = numbers.as_slice() else {
            return None;
        };
        Some(FaultsCase {
            seed,
            hosts: hosts as usize,
            pages: pages as usize,
            budget: budget as usize,
            workers: workers as usize,
            tries: tries as usize,
            obey_robots: obey != 0,
            stall: stall != 0,
        })
    }

    /// Serve this case's site, crawl it with `crawl_with_budget`, and hold
    /// the report to the answer key and the end state. A failure names the
    /// case and how to run it alone.
    pub fn check(&self, lesson: Lesson, crawl_with_budget: CrawlWithBudget) {
        let site = self.site();
        let served = Served::start(&site, self.obey_robots);
        let what = format!(
            "{self:?} (run this case alone: {FAULTS_CASE_VARIABLE}='{}' cargo test -p {} --test \
             behaviour fault_paths)",
            self.to_text(),
            lesson.crate_name()
        );
        let mut config = Config::new(lesson, served.roots.clone());
        config.log = Log::capture(Level::Debug);
        config.timeout = FAULT_TIMEOUT;
        config.threads = self.workers.max(1);
        config.max_tasks = self.workers.max(1);
        config.max_tries = self.tries.max(1);
        config.obey_robots = self.obey_robots;
        config.limits = Limits {
            max_body_bytes: BODY_LIMIT,
            ..Limits::default()
        };
        let budget = self.budget.max(1);
        let crawl = move |c: &Config| crawl_with_budget(c, budget);
        let report =
            try_crawl_within_deadline(crawl, &config, FAULT_CASE_DEADLINE).unwrap_or_else(|e| {
                panic!(
                    "{what}: {e}\nlog lines:\n{}",
                    show_lines(&config.log.lines())
                )
            });
        served.check(&report, &config.log.lines(), &what);
    }
}

/// A [`FaultsSite`] served, and its answer key.
struct Served {
    /// The live hosts' servers.
    servers: Vec<TestServer>,
    /// The roots, as URLs.
    roots: Vec<String>,
    /// Per URL a correct crawl reports, what it reports.
    expected: BTreeMap<String, Outcome>,
}

impl Served {
    /// Start a server per live host and work out the answer key.
    fn start(site: &FaultsSite, obey_robots: bool) -> Served {
        // Listen first: a page names other hosts' ports.
        let (listeners, ports) = listen_on_loopback(site.pages.len());
        let origin = |h: usize| format!("http://127.0.0.1:{}", ports[h]);
        let url = |target: Target, page: usize| match target {
            Target::Host(h) => format!("{}{}", origin(h), path(page)),
            Target::Refused => format!("http://{}{}", refused_addr(), path(page)),
            Target::Https(h) => format!("https://127.0.0.1:{}{}", ports[h], path(page)),
        };
        // Each page's body and what its line says.
        let mut bodies: Vec<Vec<String>> = Vec::new();
        // (host, page) -> (body size, distinct links)
        let mut lines: BTreeMap<(usize, usize), (usize, Vec<Link>)> = BTreeMap::new();
        for (h, host) in site.pages.iter().enumerate() {
            let mut pages = Vec::new();
            for (i, (links, _)) in host.iter().enumerate() {
                let hrefs: Vec<String> = links.iter().map(|&(t, p)| url(t, p)).collect();
                let body: String = hrefs
                    .iter()
                    .map(|t| format!("<a href=\"{t}\">{t}</a>\n"))
                    .collect();
                let body =
                    format!("<html><body><h1>host {h} page {i}</h1>\n{body}</body></html>\n");
                let mut distinct: Vec<Link> = Vec::new();
                let mut seen = BTreeSet::new();
                for &(t, p) in links {
                    if seen.insert(url(t, p)) {
                        distinct.push((t, p));
                    }
                }
                lines.insert((h, i), (body.len(), distinct));
                pages.push(body);
            }
            bodies.push(pages);
        }
        // The answer key: every URL reachable from the roots through pages
        // and redirects that answer.
        let mut expected = BTreeMap::new();
        let mut roots = Vec::new();
        let mut todo: VecDeque<Link> = VecDeque::new();
        for &h in &site.roots {
            roots.push(url(Target::Host(h), 0));
            todo.push_back((Target::Host(h), 0));
        }
        let mut seen: BTreeSet<String> = roots.iter().cloned().collect();
        if site.unresolvable_root {
            let root = format!("http://{}/", unresolvable_host());
            seen.insert(root.clone());
            roots.push(root.clone());
            expected.insert(root, Outcome::Fail(FailKind::Dns));
        }
        let mut queue = |target: Link, todo: &mut VecDeque<_>| {
            if seen.insert(url(target.0, target.1)) {
                todo.push_back(target);
            }
        };
        while let Some((target, page)) = todo.pop_front() {
            let this = url(target, page);
            let h = match target {
                Target::Refused => {
                    expected.insert(this, Outcome::Fail(FailKind::Connect));
                    continue;
                }
                Target::Https(_) => {
                    expected.insert(this, Outcome::Fail(FailKind::Unsupported));
                    continue;
                }
                Target::Host(h) => h,
            };
            // A robots.txt that fails twice refuses everything.
            let robots_fail = site.robots[h].is_some_and(|a| a != Answer::Page);
            if obey_robots && robots_fail {
                expected.insert(this, Outcome::Blocked(Blocked::RobotsUnavailable));
                continue;
            }
            let (_, answer) = site.pages[h][page];
            match answer {
                Answer::Page => {
                    let (size, ref links) = lines[&(h, page)];
                    expected.insert(
                        this,
                        Outcome::Page {
                            size,
                            total: links.len(),
                        },
                    );
                    for &link in links {
                        queue(link, &mut todo);
                    }
                }
                Answer::Redirect(next) => {
                    expected.insert(this, Outcome::Redirect);
                    queue((Target::Host(h), next), &mut todo);
                }
                other => {
                    let kind = other.failure().unwrap_or(FailKind::Protocol);
                    expected.insert(this, Outcome::Fail(kind));
                }
            }
        }
        let servers = site
            .pages
            .iter()
            .zip(listeners)
            .zip(bodies)
            .enumerate()
            .map(|(h, ((host, listener), pages))| {
                let mut routes = Site::new();
                for (i, ((_, answer), body)) in host.iter().zip(pages).enumerate() {
                    routes = routes.route(&path(i), answer.route(body, &origin(h)));
                }
                let robots = match site.robots[h] {
                    None => Route::not_found(),
                    Some(Answer::Page) => Route::body("text/plain", "User-agent: *\nAllow: /\n"),
                    Some(Answer::RedirectWithoutLocation) => Route::status(503),
                    Some(other) => other.route(String::new(), &origin(h)),
                };
                routes = routes.route("/robots.txt", robots);
                match TestServer::start_on(listener, routes) {
                    Ok(server) => server,
                    Err(e) => panic!("cannot serve a host: {e}"),
                }
            })
            .collect();
        Served {
            servers,
            roots,
            expected,
        }
    }

    /// The report against the answer key, then the end state.
    fn check(&self, report: &CrawlReport, lines: &[String], what: &str) {
        let expected: BTreeSet<String> = self.expected.keys().cloned().collect();
        assert_eq!(
            report.urls(),
            expected,
            "{what}: the URLs reported must be every URL reachable from the roots, each once, \
             however its fetch ended{}\n{}\nlog lines:\n{}",
            url_diff(&report.urls(), &expected),
            report.render(),
            show_lines(lines)
        );
        for stat in &report.stats {
            let line = crate::report::line(stat).to_string();
            let want = &self.expected[&stat.url];
            let ok = match want {
                Outcome::Page { size, total } => {
                    stat.status == Some(200)
                        && stat.error.is_none()
                        && stat.blocked.is_none()
                        && stat.size == *size
                        && stat.num_urls == *total
                }
                Outcome::Redirect => stat.next_url.is_some() && stat.error.is_none(),
                Outcome::Fail(kind) => stat.error.as_ref().map(|e| e.kind) == Some(*kind),
                Outcome::Blocked(why) => stat.blocked == Some(*why),
            };
            assert!(
                ok,
                "{what}: {} should end as {want:?}, but its line is `{line}`. A page that \
                 fails where its own answer is sound often rode on what an earlier failure \
                 left behind (a connection kept after an error, a socket not closed)\n{}\nlog \
                 lines:\n{}",
                stat.url,
                report.render(),
                show_lines(lines)
            );
        }
        // The exit status: 1 exactly when no fetch received a status line.
        let answered = self
            .expected
            .values()
            .any(|o| matches!(o, Outcome::Page { .. } | Outcome::Redirect));
        let silent = self.expected.values().all(|o| match o {
            Outcome::Fail(kind) => matches!(
                kind,
                FailKind::Dns
                    | FailKind::Connect
                    | FailKind::Unsupported
                    | FailKind::Timeout
                    | FailKind::Protocol
            ),
            Outcome::Blocked(_) | Outcome::Page { .. } | Outcome::Redirect => false,
        });
        if answered || silent {
            assert_eq!(
                report.received_any_status(),
                answered,
                "{what}: the exit status is 0 when a fetch received a status line and 1 when \
                 none did; here {}\n{}",
                if answered {
                    "a page answered, so it is 0"
                } else {
                    "no server sent a status line, so it is 1"
                },
                report.render()
            );
        }
        for server in &self.servers {
            assert_eq!(
                server.requests_after_failure(),
                0,
                "{what}: {} got a request on a connection whose last answer had failed (a body \
                 over the limit, or no answer before the deadline). A connection goes back to \
                 the pool only after a complete response that allows it, never after an \
                 error\n{}",
                server.origin(),
                report.render()
            );
        }
        assert!(
            report.held.is_clear(),
            "{what}: every URL was reported, but the crawl ended holding {}. A fetch must give \
             back what it took on every way it can end; with a budget this small, the next \
             crawl to meet that path strands its URLs\n{}\nlog lines:\n{}",
            report.held,
            report.render(),
            show_lines(lines)
        );
        assert_consistent(report);
    }
}

/// The environment variable that runs one [`FaultsCase`] alone (as
/// [`FaultsCase::to_text`] writes it) instead of the property test's cases.
pub const FAULTS_CASE_VARIABLE: &str = "COURSE_FAULTS_CASE";

/// The environment variable that fixes the property test's random seed.
pub const FAULTS_SEED_VARIABLE: &str = "COURSE_FAULTS_SEED";

/// The environment variable that sets how many cases the property test runs
/// (default [`FAULT_CASES`]): `COURSE_FAULTS_CASES=3000` for a long run.
pub const FAULTS_CASES_VARIABLE: &str = "COURSE_FAULTS_CASES";

/// How many random cases the property test runs by default.
pub const FAULT_CASES: u32 = 300;

/// The number of cases to run: [`FAULTS_CASES_VARIABLE`]'s, or
/// [`FAULT_CASES`].
pub fn fault_cases() -> u32 {
    std::env::var(FAULTS_CASES_VARIABLE)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(FAULT_CASES)
}

/// The property test's seed: [`FAULTS_SEED_VARIABLE`]'s, or a new one,
/// printed so that a failing run can be run again.
pub fn faults_seed(lesson: Lesson) -> u64 {
    let seed = std::env::var(FAULTS_SEED_VARIABLE)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
        });
    println!(
        "fault_paths: seed {seed} (the same cases again: {FAULTS_SEED_VARIABLE}={seed} cargo \
         test -p {} --test behaviour fault_paths)",
        lesson.crate_name()
    );
    seed
}

/// The one case [`FAULTS_CASE_VARIABLE`] names, if it is set.
pub fn faults_case_from_environment() -> Option<FaultsCase> {
    let text = std::env::var(FAULTS_CASE_VARIABLE).ok()?;
    match FaultsCase::from_text(&text) {
        Some(case) => Some(case),
        None => panic!(
            "{FAULTS_CASE_VARIABLE}={text:?} is not a case: it is `SEED HOSTS PAGES BUDGET \
             WORKERS TRIES OBEY STALL` as a failing case prints it"
        ),
    }
}

/// The fault-path property test for a lesson whose tests have `proptest`
/// as a dev-dependency: [`fault_cases`] random crawls where fetches fail,
/// each held to its answer key and to an end state that holds nothing.
///
/// ```ignore
/// shared::faults_property!(shared::Lesson::Two, lesson2_callbacks::crawl_with_budget);
/// ```
#[macro_export]
macro_rules! faults_property {
    ($lesson:expr, $crawl_with_budget:path) => {
        #[test]
        fn fault_paths() {
            use ::proptest::prelude::*;
            use $crate::behaviour::faults::{self, FaultsCase};
            if let Some(case) = faults::faults_case_from_environment() {
                return case.check($lesson, $crawl_with_budget);
            }
            let config = ProptestConfig {
                cases: faults::fault_cases(),
                rng_seed: ::proptest::test_runner::RngSeed::Fixed(faults::faults_seed($lesson)),
                failure_persistence: None,
                // A failing case is shown after a few seconds of shrinking
                // at most: every case of a leaking crawl fails, and some
                // wait out a deadline.
                max_shrink_time: 3_000,
                max_shrink_iters: 64,
                ..ProptestConfig::default()
            };
            let case = (
                any::<u64>(),
                1usize..=3,
                1usize..=5,
                1usize..=3,
                1usize..=2,
                1usize..=2,
                any::<bool>(),
                prop::bool::weighted(0.05),
            )
                .prop_map(
                    |(seed, hosts, pages, budget, workers, tries, obey_robots, stall)| FaultsCase {
                        seed,
                        hosts,
                        pages,
                        budget,
                        workers,
                        tries,
                        obey_robots,
                        stall,
                    },
                );
            let mut runner = ::proptest::test_runner::TestRunner::new(config);
            let result = runner.run(&case, |case| {
                case.check($lesson, $crawl_with_budget);
                Ok(())
            });
            if let Err(failure) = result {
                panic!("{failure}");
            }
        }
    };
}
