//! The behaviour suite, tested against the simplest crawler that can pass it.
//!
//! `reference_crawl` fetches one URL at a time with a blocking socket: no
//! threads, no event loop. It exists so that a wrong expectation in the suite
//! shows up here, before any lesson is blamed for it — and as a compact
//! picture of what every lesson's crawler must do, without the concurrency.

use std::collections::{HashSet, VecDeque};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use shared::http::{get_request, Response, ResponseParser, Version};
use shared::links::{normalize_roots, Link, UrlPolicy};
use shared::net::Resolver;
use shared::page::analyze;
use shared::polite::{Gate, Politeness};
use shared::{Config, CrawlReport, FailKind, FetchError, FetchStatistic};
use url::Url;

fn fetch(url: &Url, resolver: &Resolver, config: &Config) -> Result<Response, FetchError> {
    let deadline = Instant::now() + config.timeout;
    let remaining = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| FetchError::new(FailKind::Timeout, "timed out"))
    };
    let mut last = FetchError::new(FailKind::Connect, "no address");
    let mut stream = None;
    for addr in resolver.resolve(url)? {
        match TcpStream::connect_timeout(&addr, remaining()?) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = FetchError::from_io(&e, true),
        }
    }
    let mut stream = stream.ok_or(last)?;
    let io = |e: std::io::Error| FetchError::from_io(&e, false);
    stream.set_write_timeout(Some(remaining()?)).map_err(io)?;
    stream
        .write_all(&get_request(url, Version::Http10Close, &config.user_agent))
        .map_err(io)?;
    let mut parser = ResponseParser::with_limits(config.limits);
    let mut buf = [0u8; 8192];
    loop {
        stream.set_read_timeout(Some(remaining()?)).map_err(io)?;
        let n = stream.read(&mut buf).map_err(io)?;
        if n == 0 {
            return parser.finish();
        }
        if let Some(response) = parser.feed(&buf[..n])? {
            return Ok(response);
        }
    }
}

/// Wait until `at` (the host's slot), on this one thread.
fn sleep_until(at: Instant) {
    std::thread::sleep(at.saturating_duration_since(Instant::now()));
}

fn reference_crawl(config: &Config) -> anyhow::Result<CrawlReport> {
    let started = Instant::now();
    let roots = normalize_roots(&config.roots)?;
    let policy = UrlPolicy::new(&roots, config.exclude.clone(), config.lenient);
    let resolver = Resolver::new();
    let mut polite = Politeness::new(config);
    let mut seen: HashSet<Url> = HashSet::new();
    let mut todo: VecDeque<(Url, usize)> = VecDeque::new();
    for root in roots {
        if seen.insert(root.clone()) {
            todo.push_back((root, 0));
        }
    }
    let mut stats = Vec::new();
    'urls: while let Some((url, depth)) = todo.pop_front() {
        // One URL at a time, so robots.txt is fetched right here, and no
        // other URL ever waits for it.
        loop {
            match polite.gate(&url, Instant::now()) {
                Gate::Fetch { at } => break sleep_until(at),
                Gate::FetchRobots(mut robots) => loop {
                    sleep_until(robots.at);
                    let answer = fetch(&robots.url, &resolver, config);
                    match polite.robots_answer(robots, answer, Instant::now()) {
                        Some(next) => robots = next,
                        None => break,
                    }
                },
                Gate::WaitForRobots => unreachable!("one URL at a time"),
                Gate::Blocked(stat) => {
                    config.log.info(shared::report::line(&stat));
                    stats.push(stat);
                    continue 'urls;
                }
                Gate::OverLimit => continue 'urls,
            }
        }
        let stat = match fetch(&url, &resolver, config) {
            Err(error) => FetchStatistic::failed(url.as_str(), error),
            Ok(response) => {
                let analysis = analyze(&url, &response, &policy, &config.log);
                let mut stat = analysis.stat;
                let links = polite.links_at(depth, analysis.links);
                // The reference parses every link: the simplest way, not the fastest.
                for link in links.iter().map(Link::to_url) {
                    if seen.insert(link.clone()) {
                        config.log.debug(format_args!("queue {link} from {url}"));
                        stat.num_new_urls += 1;
                        todo.push_back((link, depth + 1));
                    } else {
                        config
                            .log
                            .debug(format_args!("skip {link} from {url}: already seen"));
                    }
                }
                if let Some(next) = analysis.redirect.as_ref().map(Link::to_url) {
                    if seen.insert(next.clone()) {
                        config.log.info(format!("redirect to {next} from {url}"));
                        todo.push_back((next, depth));
                    }
                }
                stat
            }
        };
        config.log.info(shared::report::line(&stat));
        stats.push(stat);
    }
    Ok(CrawlReport {
        stats,
        elapsed: started.elapsed().max(Duration::from_nanos(1)),
        max_tasks: 1,
        peak_in_flight: 1,
        todo: polite.over_limit(),
        held: shared::Held::default(),
    })
}

shared::behaviour_suite!(shared::Lesson::One, reference_crawl);
