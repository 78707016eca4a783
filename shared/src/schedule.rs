//! # Politeness: when a host may be asked again
//!
//! A crawler pointed at someone else's site should not ask one host for page
//! after page as fast as the network allows. `--delay SECS` (and a site's
//! own `Crawl-delay`) sets the least time between the *starts* of two
//! fetches to one host. [`HostSchedule`] keeps, per host, when the last
//! fetch started, and hands out the next start:
//!
//! ```text
//! next slot = max(now, last start + delay)
//! ```
//!
//! read and written in one step, so two fetches that ask at the same moment
//! get two slots a delay apart, never the same one. What a fetch does with
//! its slot is the model's business: lesson 1's thread sleeps until it,
//! lesson 2 arms a timer, lessons 3 and 4 await a sleep. The rule itself is
//! here, once. "Host" is the URL's host and port: two servers on one machine
//! are two hosts.
//!
//! The schedule only grows with the hosts a crawl meets, one entry each.
//!
//! [`CrawlLimits`] is the other thing a crawl of someone else's site needs
//! to count: `--max-pages` (fetches started in the whole crawl) and
//! `--max-depth` (roots are depth 0; the links of a page at the last depth
//! are not followed).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use url::Url;

/// A URL's host and port, the unit politeness counts in.
pub fn host_key(url: &Url) -> String {
    match url.port_or_known_default() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or("")),
        None => url.host_str().unwrap_or("").to_string(),
    }
}

/// When each host was last given a start, and the delay between starts.
#[derive(Debug, Default)]
pub struct HostSchedule {
    /// `--delay`: the least time between two starts on one host.
    delay: Duration,
    /// Per host: the last start handed out, and the host's own delay
    /// (its robots.txt `Crawl-delay`), if it has one.
    hosts: HashMap<String, (Option<Instant>, Option<Duration>)>,
}

impl HostSchedule {
    /// A schedule with `delay` between starts on every host.
    pub fn new(delay: Duration) -> HostSchedule {
        HostSchedule {
            delay,
            hosts: HashMap::new(),
        }
    }

    /// Record `host`'s own `Crawl-delay`: its delay is the larger of that and
    /// `--delay` from now on.
    pub fn set_crawl_delay(&mut self, host: &str, crawl_delay: Duration) {
        self.hosts.entry(host.to_string()).or_default().1 = Some(crawl_delay);
    }

    /// The delay between two starts on `host`.
    pub fn delay_for(&self, host: &str) -> Duration {
        let own = self.hosts.get(host).and_then(|(_, own)| *own);
        own.map_or(self.delay, |own| own.max(self.delay))
    }

    /// When the next fetch to `host` could start, asked at `now`, without
    /// taking the slot.
    pub fn peek_slot(&self, host: &str, now: Instant) -> Instant {
        match self.hosts.get(host) {
            Some((Some(last), _)) => now.max(*last + self.delay_for(host)),
            _ => now,
        }
    }

    /// The start of the next fetch to `host`, asked at `now`: `now` if the
    /// host's delay has passed since its last start, else the moment it
    /// will have. The slot is taken by the asking: the next caller gets the
    /// one after it.
    pub fn next_slot(&mut self, host: &str, now: Instant) -> Instant {
        let slot = self.peek_slot(host, now);
        // The host's entry is made once; every later slot only updates it.
        match self.hosts.get_mut(host) {
            Some((last, _)) => *last = Some(slot),
            None => {
                self.hosts.insert(host.to_string(), (Some(slot), None));
            }
        }
        slot
    }
}

/// `--max-pages` and `--max-depth`, and the pages started so far.
#[derive(Debug, Clone, Default)]
pub struct CrawlLimits {
    max_pages: Option<usize>,
    max_depth: Option<usize>,
    started: usize,
}

impl CrawlLimits {
    /// Limits of `max_pages` page fetches and `max_depth` levels (`None`:
    /// no limit).
    pub fn new(max_pages: Option<usize>, max_depth: Option<usize>) -> CrawlLimits {
        CrawlLimits {
            max_pages,
            max_depth,
            started: 0,
        }
    }

    /// Count one more page fetch, if the limit allows it: `false` once
    /// `max_pages` have been started (robots.txt fetches and blocked URLs
    /// are not counted: they are not pages the crawl fetched).
    pub fn try_start_page(&mut self) -> bool {
        if self.max_pages.is_some_and(|max| self.started >= max) {
            return false;
        }
        self.started += 1;
        true
    }

    /// Whether the links found on a page at `depth` are queued.
    pub fn follows_links_at(&self, depth: usize) -> bool {
        self.max_depth.is_none_or(|max| depth < max)
    }

    /// Page fetches started so far.
    pub fn started(&self) -> usize {
        self.started
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_delay_every_slot_is_now() {
        let mut s = HostSchedule::new(Duration::ZERO);
        let now = Instant::now();
        assert_eq!(s.next_slot("a:80", now), now);
        assert_eq!(s.next_slot("a:80", now), now);
    }

    #[test]
    fn slots_on_one_host_are_a_delay_apart_and_hosts_are_apart() {
        let d = Duration::from_millis(500);
        let mut s = HostSchedule::new(d);
        let t0 = Instant::now();
        assert_eq!(s.next_slot("a:80", t0), t0);
        assert_eq!(s.next_slot("a:80", t0), t0 + d);
        assert_eq!(s.next_slot("a:80", t0), t0 + 2 * d);
        // Another host is not held up by the first.
        assert_eq!(s.next_slot("b:80", t0), t0);
        // Asked after the delay has passed: now.
        let later = t0 + 10 * d;
        assert_eq!(s.next_slot("a:80", later), later);
    }

    #[test]
    fn a_crawl_delay_longer_than_the_delay_wins() {
        let mut s = HostSchedule::new(Duration::from_millis(100));
        s.set_crawl_delay("slow:80", Duration::from_secs(2));
        s.set_crawl_delay("fast:80", Duration::from_millis(10));
        assert_eq!(s.delay_for("slow:80"), Duration::from_secs(2));
        assert_eq!(s.delay_for("fast:80"), Duration::from_millis(100));
        assert_eq!(s.delay_for("other:80"), Duration::from_millis(100));
        let t0 = Instant::now();
        s.next_slot("slow:80", t0);
        assert_eq!(s.next_slot("slow:80", t0), t0 + Duration::from_secs(2));
    }

    #[test]
    fn page_and_depth_limits_are_exact() {
        let mut limits = CrawlLimits::new(Some(3), Some(1));
        assert!(limits.try_start_page());
        assert!(limits.try_start_page());
        assert!(limits.try_start_page());
        assert!(!limits.try_start_page());
        assert!(!limits.try_start_page());
        assert_eq!(limits.started(), 3);
        // Roots are depth 0: their links (depth 1) are queued; depth-1
        // pages' links are not.
        assert!(limits.follows_links_at(0));
        assert!(!limits.follows_links_at(1));
        let none = CrawlLimits::new(None, None);
        assert!(none.follows_links_at(1_000_000));
        let mut zero = CrawlLimits::new(Some(0), Some(0));
        assert!(!zero.try_start_page());
        assert!(!zero.follows_links_at(0));
    }

    #[test]
    fn the_host_is_host_and_port() {
        let key = |u: &str| host_key(&Url::parse(u).unwrap());
        assert_eq!(key("http://example.com/a"), "example.com:80");
        assert_eq!(key("http://example.com:8080/a"), "example.com:8080");
        assert_eq!(key("https://example.com/"), "example.com:443");
        assert_ne!(key("http://127.0.0.1:3000/"), key("http://127.0.0.1:3001/"));
    }
}
