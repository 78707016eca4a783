//! # The live status line
//!
//! A person watching a crawl of thirty thousand pages wants to see how far
//! it is, not thirty thousand log lines. On a terminal, a lesson can show
//! one line instead, redrawn in place:
//!
//! ```text
//! done 1,204 · in flight 100 · queued 3,311 · failed 2 · blocked 0 · 812 pages/s · 1.5 s
//! ```
//!
//! This module holds what does not depend on the model: the counts
//! ([`Progress`]), the line's text, how often it may be redrawn (at most ten
//! times a second, [`Throttle`]), and the bytes that draw and clear it. Each
//! lesson decides *when* to ask: lesson 1 from whichever thread finishes a
//! fetch, lesson 2 from a repeating timer on its loop, and so on. The
//! numbers each lesson shows are its model at work: lesson 1's in-flight
//! count never passes its threads; lesson 2's climbs into the thousands.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::stats::FetchStatistic;

/// What the status line shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// URLs finished (any outcome).
    pub done: usize,
    /// Fetches under way now.
    pub in_flight: usize,
    /// URLs waiting for a fetch.
    pub queued: usize,
    /// Finished URLs that failed.
    pub failed: usize,
    /// URLs robots.txt did not allow.
    pub blocked: usize,
}

impl Progress {
    /// The counts of a crawl that has finished the URLs of `done` and has
    /// `in_flight` fetches under way and `queued` URLs waiting.
    pub fn of(done: &[FetchStatistic], in_flight: usize, queued: usize) -> Progress {
        Progress {
            done: done.len(),
            in_flight,
            queued,
            failed: done.iter().filter(|s| s.error.is_some()).count(),
            blocked: done.iter().filter(|s| s.blocked.is_some()).count(),
        }
    }

    /// The line, without any terminal control: counts with thousands
    /// separators, the rate of finished URLs since `started`, the elapsed
    /// time.
    pub fn line(&self, elapsed: Duration) -> String {
        let secs = elapsed.as_secs_f64();
        let rate = if secs > 0.0 {
            self.done as f64 / secs
        } else {
            0.0
        };
        let mut line = String::new();
        let _ = write!(
            line,
            "done {} · in flight {} · queued {} · failed {} · blocked {} · {} pages/s · {:.1} s",
            thousands(self.done as u64),
            thousands(self.in_flight as u64),
            thousands(self.queued as u64),
            thousands(self.failed as u64),
            thousands(self.blocked as u64),
            thousands(rate.round() as u64),
            secs
        );
        line
    }
}

/// What to write to a terminal to replace the current line with `line`:
/// back to the start of the line, the text, then erase whatever an older,
/// longer line left to its right.
pub fn redraw(line: &str) -> String {
    format!("\r{line}\x1b[K")
}

/// What to write to remove the status line before the report is printed.
pub fn clear() -> &'static str {
    "\r\x1b[K"
}

/// How often the line may be redrawn: a crawl finishing thousands of URLs a
/// second would otherwise spend its time drawing.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Says whether enough time has passed to draw again.
#[derive(Debug, Default)]
pub struct Throttle {
    last: Option<Instant>,
}

impl Throttle {
    /// Whether to draw at `now`; if so, `now` becomes the last draw.
    pub fn ready(&mut self, now: Instant) -> bool {
        match self.last {
            Some(last) if now.saturating_duration_since(last) < MIN_INTERVAL => false,
            _ => {
                self.last = Some(now);
                true
            }
        }
    }
}

/// `n` with `,` between groups of three digits: `12,345`. (The course's
/// tools print their tables with it too.)
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_shows_every_count_and_the_rate() {
        let p = Progress {
            done: 1204,
            in_flight: 100,
            queued: 3311,
            failed: 2,
            blocked: 0,
        };
        assert_eq!(
            p.line(Duration::from_millis(1500)),
            "done 1,204 · in flight 100 · queued 3,311 · failed 2 · blocked 0 · 803 pages/s · 1.5 s"
        );
        // No division by zero at the very start.
        assert!(Progress::default()
            .line(Duration::ZERO)
            .contains("0 pages/s · 0.0 s"));
    }

    #[test]
    fn redrawing_overwrites_and_clearing_erases() {
        assert_eq!(redraw("done 1"), "\rdone 1\x1b[K");
        assert_eq!(clear(), "\r\x1b[K");
    }

    #[test]
    fn at_most_ten_draws_a_second() {
        let mut t = Throttle::default();
        let t0 = Instant::now();
        assert!(t.ready(t0));
        assert!(!t.ready(t0 + Duration::from_millis(50)));
        assert!(!t.ready(t0 + Duration::from_millis(99)));
        assert!(t.ready(t0 + Duration::from_millis(100)));
        assert!(!t.ready(t0 + Duration::from_millis(150)));
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
