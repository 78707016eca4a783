//! # Many hosts, few sockets: no URL left behind
//!
//! A crawl's socket budget is shared by every fetch that holds a socket,
//! robots.txt fetches included, and the end of each fetch must let one
//! waiting in line go. A lesson that forgets either can end a crawl with
//! URLs still to do — and the usual sites of the other cases never show it,
//! because they have one host: its robots.txt is fetched before any page
//! needs a socket. These cases crawl more hosts than there are sockets, so
//! that robots.txt fetches and page fetches compete for them.
//!
//! Each host is a [`TestServer`] of its own (a host, for robots.txt and
//! `--delay`, is a host *and port*), all on 127.0.0.1, so every one of them
//! is allowed by the host policy. Every check is on the report, never on
//! timing: the answer key ([`Hosts::expected`]) says, for each URL a correct
//! crawl reports, its status, size and `TOTAL`, or that robots.txt blocks it.
//!
//! [`HostsCase`] is one random crawl of this kind: a site graph over several
//! hosts, which hosts are roots, each host's robots.txt (its answer and how
//! long it takes), a budget and a number of workers, all drawn from a seed.
//! The [`hosts_property!`](crate::hosts_property) macro runs a few hundred of
//! them with `proptest`, in the crate of the test (the `shared` library
//! itself depends on no test crate).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::TcpListener;
use std::time::Duration;

use super::{assert_consistent, crawl_within_deadline_with, show_lines, url_diff, CrawlWithBudget};
use crate::cli::{Config, Lesson};
use crate::fixtures::server::{Route, Site, TestServer};
use crate::fixtures::sitegen::Rng;
use crate::log::{Level, Log};
use crate::report::CrawlReport;
use crate::stats::Blocked;

/// How a host's robots.txt answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RobotsTiming {
    /// At once.
    AtOnce,
    /// After this long.
    After(Duration),
    /// Never: the server reads the request and sends nothing. After two
    /// tries, each ending at `--timeout`, the host's URLs are `blocked
    /// robots-unavailable`.
    Never,
}

/// What a host's robots.txt says, when it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RobotsRules {
    /// `404`: no rules, everything allowed.
    Missing,
    /// `200`, everything allowed.
    AllowAll,
    /// `200` with `Disallow: /private`: a host's `/private` page is
    /// `blocked robots`.
    NoPrivate,
}

/// One host of a [`HostsSpec`]: its pages' links and its robots.txt.
#[derive(Debug, Clone)]
pub struct HostSpec {
    /// Per page (page 0 is `/`, page `i` is `/p{i}`), the links it has:
    /// `(host, target)`, where target `Some(i)` is that host's page `i`
    /// and `None` its `/private` page.
    pub links: Vec<Vec<(usize, Option<usize>)>>,
    /// What robots.txt says.
    pub rules: RobotsRules,
    /// When it says it.
    pub timing: RobotsTiming,
    /// Is this host's `/` a root of the crawl?
    pub root: bool,
}

/// A site spread over several hosts: what [`Hosts::start`] serves.
#[derive(Debug, Clone)]
pub struct HostsSpec {
    pub hosts: Vec<HostSpec>,
}

impl HostsSpec {
    /// `n` hosts, each a root with `/`, `/a` and `/b` (`/` links to both,
    /// `/a` to `/b` and `/`), robots.txt allowing all and answering as
    /// `timing` says: the issue's "root and two pages" per host.
    pub fn roots_with_two_pages(n: usize, timing: RobotsTiming) -> HostsSpec {
        let host = |h: usize| HostSpec {
            links: vec![
                vec![(h, Some(1)), (h, Some(2))],
                vec![(h, Some(2)), (h, Some(0))],
                vec![],
            ],
            rules: RobotsRules::AllowAll,
            timing,
            root: true,
        };
        HostsSpec {
            hosts: (0..n).map(host).collect(),
        }
    }
}

/// The path of page `page` (`None`: the private page).
fn page_path(page: Option<usize>) -> String {
    match page {
        Some(0) => "/".to_string(),
        Some(i) => format!("/p{i}"),
        None => "/private".to_string(),
    }
}

/// `n` listeners on 127.0.0.1, each on a port of its own, and their ports:
/// one per host of a site spread over several hosts, bound before any page
/// is written, since pages name the other hosts' ports.
pub(crate) fn listen_on_loopback(n: usize) -> (Vec<TcpListener>, Vec<u16>) {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| match TcpListener::bind("127.0.0.1:0") {
            Ok(listener) => listener,
            Err(e) => panic!("cannot listen on 127.0.0.1: {e}"),
        })
        .collect();
    let ports = listeners
        .iter()
        .map(|l| match l.local_addr() {
            Ok(addr) => addr.port(),
            Err(e) => panic!("a listener's address: {e}"),
        })
        .collect();
    (listeners, ports)
}

/// What a correct crawl reports for one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// `URL 200 text/html utf-8 SIZE NEW/TOTAL`.
    Page { size: usize, total: usize },
    /// `URL blocked WHY`.
    Blocked(Blocked),
}

/// The servers of a [`HostsSpec`], running, and the answer key.
#[derive(Debug)]
pub struct Hosts {
    /// One per host, in the spec's order.
    pub servers: Vec<TestServer>,
    /// The roots, as URLs.
    pub roots: Vec<String>,
    /// Per URL a correct crawl reports, what it reports.
    pub expected: BTreeMap<String, Expected>,
}

impl Hosts {
    /// Start one server per host of `spec` and work out the answer key.
    pub fn start(spec: &HostsSpec) -> Hosts {
        // Listen first: a page names other hosts' ports.
        let (listeners, ports) = listen_on_loopback(spec.hosts.len());
        let origins: Vec<String> = ports
            .iter()
            .map(|port| format!("http://127.0.0.1:{port}"))
            .collect();
        let url =
            |host: usize, page: Option<usize>| format!("{}{}", origins[host], page_path(page));
        // Every page's body, and what it reports.
        let mut bodies: Vec<Vec<String>> = Vec::new();
        let mut lines: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
        for (h, host) in spec.hosts.iter().enumerate() {
            let mut pages = Vec::new();
            for (i, links) in host.links.iter().enumerate() {
                let targets: Vec<String> = links.iter().map(|&(th, tp)| url(th, tp)).collect();
                let body: String = targets
                    .iter()
                    .map(|t| format!("<a href=\"{t}\">{t}</a>\n"))
                    .collect();
                let body =
                    format!("<html><body><h1>host {h} page {i}</h1>\n{body}</body></html>\n");
                let distinct: BTreeSet<String> = targets.into_iter().collect();
                lines.insert(
                    url(h, Some(i)),
                    (body.len(), distinct.into_iter().collect()),
                );
                pages.push(body);
            }
            bodies.push(pages);
        }
        let private_body = "<html><body>private</body></html>\n";
        // Who may fetch what: `/private` is blocked where robots.txt says so.
        let blocks = |host: usize, page: Option<usize>| {
            let host = &spec.hosts[host];
            if host.timing == RobotsTiming::Never {
                Some(Blocked::RobotsUnavailable)
            } else if page.is_none() && host.rules == RobotsRules::NoPrivate {
                Some(Blocked::Robots)
            } else {
                None
            }
        };
        // The answer key: every URL reachable from the roots, through pages
        // that are fetched (a blocked page's links are never seen).
        let mut expected = BTreeMap::new();
        let mut todo: VecDeque<(usize, Option<usize>)> = VecDeque::new();
        let mut roots = Vec::new();
        for (h, host) in spec.hosts.iter().enumerate() {
            if host.root {
                roots.push(url(h, Some(0)));
                todo.push_back((h, Some(0)));
            }
        }
        let mut seen: BTreeSet<(usize, Option<usize>)> = todo.iter().copied().collect();
        while let Some((h, page)) = todo.pop_front() {
            let this = url(h, page);
            if let Some(why) = blocks(h, page) {
                expected.insert(this, Expected::Blocked(why));
                continue;
            }
            let Some(i) = page else {
                expected.insert(
                    this,
                    Expected::Page {
                        size: private_body.len(),
                        total: 0,
                    },
                );
                continue;
            };
            let (size, ref targets) = lines[&this];
            expected.insert(
                this,
                Expected::Page {
                    size,
                    total: targets.len(),
                },
            );
            for &target in &spec.hosts[h].links[i] {
                if seen.insert(target) {
                    todo.push_back(target);
                }
            }
        }
        let servers = spec
            .hosts
            .iter()
            .zip(listeners)
            .zip(bodies)
            .map(|((host, listener), pages)| {
                let mut site = Site::new();
                for (i, body) in pages.into_iter().enumerate() {
                    site = site.route(&page_path(Some(i)), Route::html(body));
                }
                site = site.route("/private", Route::html(private_body));
                let robots = match host.rules {
                    RobotsRules::Missing => Route::not_found(),
                    RobotsRules::AllowAll => Route::body("text/plain", "User-agent: *\nAllow: /\n"),
                    RobotsRules::NoPrivate => {
                        Route::body("text/plain", "User-agent: *\nDisallow: /private\n")
                    }
                };
                let robots = match host.timing {
                    RobotsTiming::AtOnce => robots,
                    RobotsTiming::After(delay) => robots.delay(delay),
                    RobotsTiming::Never => Route::stall(),
                };
                site = site.route("/robots.txt", robots);
                match TestServer::start_on(listener, site) {
                    Ok(server) => server,
                    Err(e) => panic!("cannot serve a host: {e}"),
                }
            })
            .collect();
        Hosts {
            servers,
            roots,
            expected,
        }
    }

    /// Crawl these hosts with `crawl_with_budget` and a budget of `budget`
    /// sockets (`workers` threads or tasks), and check the report against
    /// the answer key; `what` names the crawl in a failure. Returns the
    /// report.
    pub fn crawl_and_check(
        &self,
        lesson: Lesson,
        crawl_with_budget: CrawlWithBudget,
        budget: usize,
        workers: usize,
        timeout: Duration,
        what: &str,
    ) -> CrawlReport {
        let mut config = Config::new(lesson, self.roots.clone());
        config.log = Log::capture(Level::Debug);
        config.timeout = timeout;
        config.threads = workers;
        config.max_tasks = workers;
        let report = crawl_within_deadline_with(move |c| crawl_with_budget(c, budget), &config);
        let lines = config.log.lines();
        self.check(&report, budget, &lines, what);
        report
    }

    /// The report of a crawl of these hosts with a budget of `budget`
    /// sockets, against the answer key.
    pub fn check(&self, report: &CrawlReport, budget: usize, lines: &[String], what: &str) {
        let expected: BTreeSet<String> = self.expected.keys().cloned().collect();
        assert_eq!(
            report.todo,
            0,
            "{what}: the crawl ended with `Todo: {}`, URLs seen and never finished. Every \
             fetch that holds a socket, robots.txt included, counts against the budget of \
             {budget}, and the end of every one must let a fetch waiting for a socket go: \
             otherwise the last fetch ends with URLs still in line and nothing left to \
             wake them.\nexpected but not reported: {:?}\n{}\nlog lines:\n{}",
            report.todo,
            expected.difference(&report.urls()).collect::<Vec<_>>(),
            report.render(),
            show_lines(lines)
        );
        assert_eq!(
            report.urls(),
            expected,
            "{what}: the URLs reported, every URL reachable from the roots{}\n{}",
            url_diff(&report.urls(), &expected),
            report.render()
        );
        assert_consistent(report);
        for stat in &report.stats {
            let line = crate::report::line(stat).to_string();
            match &self.expected[&stat.url] {
                Expected::Blocked(why) => assert_eq!(
                    stat.blocked,
                    Some(*why),
                    "{what}: {} must be `blocked {}` (its host's robots.txt {}), but its \
                     line is `{line}`",
                    stat.url,
                    why.key(),
                    match why {
                        Blocked::Robots => "disallows it",
                        Blocked::RobotsUnavailable => "never answers, twice",
                    }
                ),
                Expected::Page { size, total } => assert!(
                    stat.status == Some(200)
                        && stat.error.is_none()
                        && stat.blocked.is_none()
                        && stat.size == *size
                        && stat.num_urls == *total,
                    "{what}: {} is a page of {size} bytes with {total} distinct links, so its \
                     line is `{} 200 text/html utf-8 {size} NEW/{total}`; it was `{line}`",
                    stat.url,
                    stat.url
                ),
            }
        }
        // Each URL entered the seen-set once: as a root, or as a NEW link
        // of exactly one page.
        let new: usize = report.stats.iter().map(|s| s.num_new_urls).sum();
        assert_eq!(
            new + self.roots.len(),
            report.stats.len(),
            "{what}: the roots ({}) and the pages' NEW links ({new}) must add up to the URLs \
             reported ({}): every URL is new on exactly one page, or a root\n{}",
            self.roots.len(),
            report.stats.len(),
            report.render()
        );
        assert!(
            report.peak_in_flight <= budget,
            "{what}: achieved concurrency {} with a socket budget of {budget}: every fetch \
             that holds a socket counts against the budget, robots.txt fetches included",
            report.peak_in_flight
        );
    }
}

/// More hosts than sockets, robots.txt answering at once: eight hosts of a
/// root and two pages each, three sockets. Every URL fetched.
pub fn more_hosts_than_sockets(lesson: Lesson, crawl_with_budget: CrawlWithBudget) {
    let hosts = Hosts::start(&HostsSpec::roots_with_two_pages(8, RobotsTiming::AtOnce));
    hosts.crawl_and_check(
        lesson,
        crawl_with_budget,
        3,
        4,
        Duration::from_secs(10),
        "8 hosts, a budget of 3 sockets, robots.txt at once",
    );
}

/// More hosts than sockets, robots.txt answering after 150 ms: while the
/// first hosts' robots.txt fetches hold every socket, the other hosts'
/// robots.txt fetches and the first pages wait in line.
pub fn more_hosts_than_sockets_slow_robots(lesson: Lesson, crawl_with_budget: CrawlWithBudget) {
    let timing = RobotsTiming::After(Duration::from_millis(150));
    let hosts = Hosts::start(&HostsSpec::roots_with_two_pages(6, timing));
    hosts.crawl_and_check(
        lesson,
        crawl_with_budget,
        2,
        4,
        Duration::from_secs(10),
        "6 hosts, a budget of 2 sockets, robots.txt after 150 ms",
    );
}

/// More hosts than sockets, robots.txt never answering: each host's
/// robots.txt is tried twice, each try ending at the one-second timeout,
/// and then its root is `blocked robots-unavailable`. Three hosts, two
/// sockets: the third host's robots.txt waits for a socket.
pub fn more_hosts_than_sockets_robots_never_answer(
    lesson: Lesson,
    crawl_with_budget: CrawlWithBudget,
) {
    let hosts = Hosts::start(&HostsSpec::roots_with_two_pages(3, RobotsTiming::Never));
    hosts.crawl_and_check(
        lesson,
        crawl_with_budget,
        2,
        4,
        Duration::from_secs(1),
        "3 hosts, a budget of 2 sockets, robots.txt never answering (timeout 1 s)",
    );
    for server in &hosts.servers {
        assert_eq!(
            server.request_count("/"),
            0,
            "{}: its robots.txt never answered, so its pages are not fetched",
            server.origin()
        );
    }
}

/// A budget of one socket, four hosts whose robots.txt answers after 30 ms,
/// and links between the hosts: one fetch at a time, every URL fetched.
pub fn a_budget_of_one_socket(lesson: Lesson, crawl_with_budget: CrawlWithBudget) {
    let mut spec =
        HostsSpec::roots_with_two_pages(4, RobotsTiming::After(Duration::from_millis(30)));
    // Host 0's `/b` links to every other host's `/a`, and only host 0 and
    // host 1 are roots: hosts 2 and 3 are met through links.
    for h in 1..4 {
        spec.hosts[0].links[2].push((h, Some(1)));
    }
    spec.hosts[2].root = false;
    spec.hosts[3].root = false;
    let hosts = Hosts::start(&spec);
    let report = hosts.crawl_and_check(
        lesson,
        crawl_with_budget,
        1,
        4,
        Duration::from_secs(10),
        "4 hosts, a budget of 1 socket",
    );
    assert_eq!(
        report.peak_in_flight, 1,
        "achieved concurrency with a budget of one socket: 1"
    );
}

/// One random crawl of several hosts (see the module's notes), drawn from
/// `seed` and the sizes given: what the property test runs.
#[derive(Debug, Clone)]
pub struct HostsCase {
    /// Draws the links, the roots and each host's robots.txt.
    pub seed: u64,
    /// Hosts, 1 or more.
    pub hosts: usize,
    /// Pages per host besides `/private`, 1 or more.
    pub pages: usize,
    /// The socket budget.
    pub budget: usize,
    /// `--threads` (lesson 1) or `--max-tasks` (lesson 4).
    pub workers: usize,
    /// Per host, how long its robots.txt takes to answer, in milliseconds.
    pub robots_ms: Vec<u64>,
}

impl HostsCase {
    /// The site this case crawls.
    pub fn spec(&self) -> HostsSpec {
        let mut rng = Rng::new(self.seed);
        let hosts = self.hosts.max(1);
        let pages = self.pages.max(1);
        let mut spec = HostsSpec { hosts: Vec::new() };
        for h in 0..hosts {
            let links = (0..pages)
                .map(|i| {
                    let mut links = Vec::new();
                    // A tree inside the host keeps most pages reachable…
                    for child in [2 * i + 1, 2 * i + 2] {
                        if child < pages {
                            links.push((h, Some(child)));
                        }
                    }
                    // …and random links cross hosts, repeat, and loop back.
                    for _ in 0..rng.below(4) {
                        let target = rng.below(hosts);
                        let page = if rng.chance(15) {
                            None
                        } else {
                            Some(rng.below(pages))
                        };
                        links.push((target, page));
                    }
                    links
                })
                .collect();
            let rules = match rng.below(3) {
                0 => RobotsRules::Missing,
                1 => RobotsRules::AllowAll,
                _ => RobotsRules::NoPrivate,
            };
            let ms = self.robots_ms.get(h).copied().unwrap_or(0);
            let timing = if ms == 0 {
                RobotsTiming::AtOnce
            } else {
                RobotsTiming::After(Duration::from_millis(ms))
            };
            spec.hosts.push(HostSpec {
                links,
                rules,
                timing,
                root: h == 0 || rng.chance(50),
            });
        }
        spec
    }

    /// Crawl this case with `crawl_with_budget` and check the report against
    /// the answer key. A failure names the case and how to run it alone.
    pub fn check(&self, lesson: Lesson, crawl_with_budget: CrawlWithBudget) {
        let hosts = Hosts::start(&self.spec());
        let what = format!(
            "{self:?} (run this case alone: {CASE_VARIABLE}='{}' cargo test -p {} --test behaviour \
             hosts_property)",
            self.to_text(),
            lesson.crate_name()
        );
        hosts.crawl_and_check(
            lesson,
            crawl_with_budget,
            self.budget.max(1),
            self.workers.max(1),
            Duration::from_secs(10),
            &what,
        );
    }

    /// The case as one line of numbers, read back by [`HostsCase::from_text`].
    pub fn to_text(&self) -> String {
        let ms: Vec<String> = self.robots_ms.iter().map(u64::to_string).collect();
        format!(
            "{} {} {} {} {} {}",
            self.seed,
            self.hosts,
            self.pages,
            self.budget,
            self.workers,
            ms.join(",")
        )
    }

    /// A case written by [`HostsCase::to_text`], or `None`.
    pub fn from_text(text: &str) -> Option<HostsCase> {
        let mut words = text.split_whitespace();
        let mut number = || words.next()?.parse::<u64>().ok();
        let (seed, hosts, pages, budget, workers) =
            (number()?, number()?, number()?, number()?, number()?);
        let robots_ms = words
            .next()
            .unwrap_or("")
            .split(',')
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().ok())
            .collect::<Option<Vec<u64>>>()?;
        Some(HostsCase {
            seed,
            hosts: hosts as usize,
            pages: pages as usize,
            budget: budget as usize,
            workers: workers as usize,
            robots_ms,
        })
    }
}

/// The environment variable that runs one [`HostsCase`] alone (as
/// [`HostsCase::to_text`] writes it) instead of the property test's cases.
pub const CASE_VARIABLE: &str = "COURSE_HOSTS_CASE";

/// The environment variable that fixes the property test's random seed.
pub const SEED_VARIABLE: &str = "COURSE_HOSTS_SEED";

/// How many random cases the property test runs.
pub const PROPERTY_CASES: u32 = 200;

/// The property test's seed: [`SEED_VARIABLE`]'s, or a new one, printed so a
/// failing run can be run again (cargo shows a failing test's output).
pub fn property_seed(lesson: Lesson) -> u64 {
    let seed = std::env::var(SEED_VARIABLE)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
        });
    println!(
        "hosts_property: seed {seed} (the same cases again: {SEED_VARIABLE}={seed} cargo test \
         -p {} hosts_property)",
        lesson.crate_name()
    );
    seed
}

/// The one case [`CASE_VARIABLE`] names, if it is set.
pub fn case_from_environment() -> Option<HostsCase> {
    let text = std::env::var(CASE_VARIABLE).ok()?;
    match HostsCase::from_text(&text) {
        Some(case) => Some(case),
        None => panic!(
            "{CASE_VARIABLE}={text:?} is not a case: it is `SEED HOSTS PAGES BUDGET WORKERS \
             MS,MS,...` as a failing case prints it"
        ),
    }
}

/// The property test over random crawls of several hosts, for a lesson
/// whose tests have `proptest` as a dev-dependency: random site graphs ×
/// host counts × budgets × robots.txt delays, [`PROPERTY_CASES`] of them,
/// each holding the lesson to the answer key — the same URLs, each with
/// the same line, and `Todo: 0` — whatever the order it fetched them in.
///
/// ```ignore
/// shared::hosts_property!(shared::Lesson::Two, lesson2_callbacks::crawl_with_budget);
/// ```
#[macro_export]
macro_rules! hosts_property {
    ($lesson:expr, $crawl_with_budget:path) => {
        #[test]
        fn hosts_property() {
            use ::proptest::prelude::*;
            use $crate::behaviour::hosts::{self, HostsCase};
            if let Some(case) = hosts::case_from_environment() {
                return case.check($lesson, $crawl_with_budget);
            }
            let config = ProptestConfig {
                cases: hosts::PROPERTY_CASES,
                rng_seed: ::proptest::test_runner::RngSeed::Fixed(hosts::property_seed($lesson)),
                failure_persistence: None,
                ..ProptestConfig::default()
            };
            let case = (
                any::<u64>(),
                1usize..=6,
                1usize..=5,
                1usize..=4,
                1usize..=4,
                ::proptest::collection::vec(prop_oneof![Just(0u64), 1u64..40], 6),
            )
                .prop_map(
                    |(seed, hosts, pages, budget, workers, robots_ms)| HostsCase {
                        seed,
                        hosts,
                        pages,
                        budget,
                        workers,
                        robots_ms: robots_ms[..hosts].to_vec(),
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

/// The program under a descriptor limit, crawling `hosts` hosts of a root
/// and two pages each, every robots.txt answering after a delay from 0 to
/// `max_robots_ms` (drawn from `seed`): `lessonN -q ROOT...` under `ulimit
/// -n fd_limit` fetches every URL and exits 0. The servers stay in this
/// process, which keeps its own, higher limit.
pub fn hosts_under_fd_limit(
    program: &str,
    args: &[&str],
    hosts: usize,
    fd_limit: usize,
    max_robots_ms: u64,
    seed: u64,
) {
    let _shared = super::sharing_descriptors();
    let mut rng = Rng::new(seed);
    let mut spec = HostsSpec::roots_with_two_pages(hosts, RobotsTiming::AtOnce);
    for host in &mut spec.hosts {
        let ms = rng.below(max_robots_ms as usize + 1) as u64;
        if ms > 0 {
            host.timing = RobotsTiming::After(Duration::from_millis(ms));
        }
    }
    let served = Hosts::start(&spec);
    let mut all: Vec<&str> = args.to_vec();
    all.push("-q");
    all.extend(served.roots.iter().map(String::as_str));
    let run = super::run_program(program, &all, Some(fd_limit));
    let shown: Vec<&str> = args.iter().copied().chain(["-q", "ROOT..."]).collect();
    let what = format!(
        "{program} {} ({hosts} hosts, robots.txt after 0 to {max_robots_ms} ms) under \
         ulimit -n {fd_limit}",
        shown.join(" ")
    );
    super::assert_complete(&run, &what);
    let expected: BTreeSet<String> = served.expected.keys().cloned().collect();
    assert_eq!(
        run.urls(),
        expected,
        "{what}: every URL of every host, robots.txt fetches waiting for a socket like \
         pages{}",
        url_diff(&run.urls(), &expected)
    );
}

/// The descriptor promise for many hosts, as the program keeps it: a
/// hundred hosts under `ulimit -n 64`, thirty under 14, two under 14 whose
/// robots.txt take up to a second — every URL fetched, exit 0.
pub fn many_hosts_under_fd_limits(program: &str, args: &[&str]) {
    hosts_under_fd_limit(program, args, 100, 64, 1000, 1);
    hosts_under_fd_limit(program, args, 30, 14, 300, 2);
    hosts_under_fd_limit(program, args, 2, 14, 1000, 3);
}

/// [`hosts_under_fd_limit`] over a grid — 2 to 100 hosts, descriptor
/// limits from 14 to 64, robots.txt after 0 to 1 s — for a run by hand
/// (`cargo test -p LESSON --test descriptors many_hosts_sweep -- --ignored`):
/// too long for every test run, and the three of
/// [`many_hosts_under_fd_limits`] stand for it there.
pub fn many_hosts_sweep(program: &str, args: &[&str]) {
    let mut seed = 100;
    for hosts in [2, 5, 10, 25, 50, 100] {
        for fd_limit in [14, 16, 20, 32, 48, 64] {
            seed += 1;
            hosts_under_fd_limit(program, args, hosts, fd_limit, 1000, seed);
            println!("{hosts} hosts under ulimit -n {fd_limit}: every URL, exit 0");
        }
    }
}

/// Expands to the many-hosts cases for a lesson, one `#[test]` each, run
/// with its `crawl_with_budget`.
///
/// ```ignore
/// shared::hosts_suite!(shared::Lesson::Two, lesson2_callbacks::crawl_with_budget);
/// ```
#[macro_export]
macro_rules! hosts_suite {
    ($lesson:expr, $crawl_with_budget:path) => {
        $crate::hosts_suite!(@cases $lesson, $crawl_with_budget;
            more_hosts_than_sockets, more_hosts_than_sockets_slow_robots,
            more_hosts_than_sockets_robots_never_answer, a_budget_of_one_socket);
    };
    (@cases $lesson:expr, $crawl_with_budget:path; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::behaviour::hosts::$case($lesson, $crawl_with_budget);
            }
        )*
    };
}
