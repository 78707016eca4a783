//! # robots.txt: what a site allows a crawler
//!
//! A site says which of its URLs crawlers may fetch in `/robots.txt`, in the
//! format of RFC 9309 (the Robots Exclusion Protocol):
//!
//! ```text
//! User-agent: crawler-course
//! User-agent: other-bot
//! Disallow: /private/
//! Allow: /private/open.html
//! Crawl-delay: 0.5
//!
//! User-agent: *
//! Disallow: /search
//! ```
//!
//! Lines group into *groups*: one or more `User-agent` lines, then the rules
//! for those agents. [`Robots::parse`] keeps only what applies to one
//! crawler, named by its product token: every group whose `User-agent`
//! names it (case-insensitively), merged; or, when none does, every `*`
//! group, merged; or nothing at all. Rules before the first `User-agent`
//! belong to no group and are ignored.
//!
//! [`Robots::allows`] then judges a URL's path and query: of the rules whose
//! pattern matches, the longest pattern wins, and `Allow` wins a tie. A
//! pattern matches from the start of the path; `*` stands for any run of
//! characters and a final `$` for the end. Both sides are compared
//! percent-encoded, with escapes of unreserved characters decoded and hex
//! digits upper-cased, so `/%7Efred` and `/~fred` are one path. `/robots.txt`
//! itself is always allowed.
//!
//! What an answer that is not a robots.txt means is the crawler's question
//! as much as the parser's, so it is here too ([`Robots::from_status`]): a
//! `4xx` (but `429 Too Many Requests`) means there are no rules; a `5xx` or
//! `429` means the site cannot say, and a careful crawler fetches nothing.
//!
//! Nothing a server sends can make this slow: at most the first 500 KiB are
//! read, a pattern longer than [`MAX_PATTERN`] is dropped, and matching never
//! backtracks: each piece between `*`s is looked for once, left to right.

use std::time::Duration;

use url::{Position, Url};

/// How much of a robots.txt is read: RFC 9309 asks for at least 500 KiB.
pub const MAX_BYTES: usize = 500 * 1024;

/// The longest pattern kept. Real rules are tens of bytes; a longer one is
/// more likely an attack on the matcher than a rule.
pub const MAX_PATTERN: usize = 2048;

/// The largest `Crawl-delay` honoured, in seconds.
pub const MAX_CRAWL_DELAY: f64 = 30.0;

/// One `Allow` or `Disallow` line that applies to the crawler.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    allow: bool,
    /// The pattern, normalized (see [`normalize`]), `$` kept at the end.
    pattern: Vec<u8>,
}

/// The rules of one site that apply to one crawler.
#[derive(Debug, Clone, PartialEq)]
pub struct Robots {
    rules: Vec<Rule>,
    /// Everything is disallowed (the site could not say what it allows).
    deny_all: bool,
    crawl_delay: Option<Duration>,
    /// How the rules came to be, for the log line.
    source: String,
    /// The status robots.txt was answered with, if it was answered at all.
    status: Option<u16>,
}

impl Robots {
    /// No rules: every URL allowed (no robots.txt, or a `4xx` for it).
    pub fn allow_all(source: impl Into<String>) -> Robots {
        Robots {
            rules: Vec::new(),
            deny_all: false,
            crawl_delay: None,
            source: source.into(),
            status: None,
        }
    }

    /// Every URL refused (a `5xx`, a `429`, no answer).
    pub fn deny_all(source: impl Into<String>) -> Robots {
        Robots {
            deny_all: true,
            ..Robots::allow_all(source)
        }
    }

    /// What an answer to `GET /robots.txt` means for the crawler named
    /// `agent`: a `2xx` body is parsed; a `4xx` but `429` allows everything;
    /// anything else (`5xx`, `429`, and any other status that reaches here,
    /// redirects having been followed) refuses everything.
    pub fn from_status(status: u16, body: &[u8], agent: &str) -> Robots {
        let mut robots = match status {
            200..=299 => {
                let mut robots = Robots::parse(body, agent);
                robots.source = format!("status {status}, {}", robots.source);
                robots
            }
            429 => Robots::deny_all(format!("status {status}: nothing allowed")),
            400..=499 => Robots::allow_all(format!("status {status}: no rules")),
            _ => Robots::deny_all(format!("status {status}: nothing allowed")),
        };
        robots.status = Some(status);
        robots
    }

    /// The rules of `text` (a robots.txt) that apply to the crawler whose
    /// product token is `agent`.
    pub fn parse(text: &[u8], agent: &str) -> Robots {
        let text = &text[..text.len().min(MAX_BYTES)];
        let text = String::from_utf8_lossy(text);
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);

        // Groups as (agents, rules, delay), in order.
        let mut groups: Vec<(Vec<String>, Vec<Rule>, Option<f64>)> = Vec::new();
        // Whether the last line that counted was a `User-agent`: more of them
        // join the same group; a rule line after them closes the list.
        let mut in_agents = false;
        for line in text.split(['\n', '\r']) {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
            match key.as_str() {
                "user-agent" => {
                    if !in_agents {
                        groups.push((Vec::new(), Vec::new(), None));
                        in_agents = true;
                    }
                    if let Some((agents, _, _)) = groups.last_mut() {
                        agents.push(product_token(value).to_ascii_lowercase());
                    }
                }
                "allow" | "disallow" => {
                    in_agents = false;
                    // Before any `User-agent` there is no group to join.
                    let Some((_, rules, _)) = groups.last_mut() else {
                        continue;
                    };
                    // An empty `Disallow` allows everything: no rule at all.
                    if value.is_empty() || value.len() > MAX_PATTERN {
                        continue;
                    }
                    rules.push(Rule {
                        allow: key == "allow",
                        pattern: normalize(value.as_bytes()),
                    });
                }
                "crawl-delay" => {
                    in_agents = false;
                    if let Some((_, _, delay)) = groups.last_mut() {
                        *delay = value
                            .parse::<f64>()
                            .ok()
                            .filter(|d| d.is_finite() && *d >= 0.0)
                            .or(*delay);
                    }
                }
                // Sitemap and the rest: other lines do not end a group.
                _ => {}
            }
        }

        let agent = agent.to_ascii_lowercase();
        let named: Vec<_> = groups
            .iter()
            .filter(|(agents, _, _)| agents.contains(&agent))
            .collect();
        let (chosen, whose) = if !named.is_empty() {
            (named, agent.clone())
        } else {
            let star: Vec<_> = groups
                .iter()
                .filter(|(agents, _, _)| agents.iter().any(|a| a == "*"))
                .collect();
            (star, "*".to_string())
        };
        if chosen.is_empty() {
            return Robots::allow_all("no group for this agent");
        }
        let rules: Vec<Rule> = chosen
            .iter()
            .flat_map(|(_, rules, _)| rules.iter().cloned())
            .collect();
        let delay = chosen
            .iter()
            .filter_map(|(_, _, delay)| *delay)
            .fold(None, |max: Option<f64>, d| {
                Some(max.map_or(d, |m| m.max(d)))
            })
            .map(|d| Duration::from_secs_f64(d.min(MAX_CRAWL_DELAY)));
        Robots {
            source: format!(
                "{} rule(s) for {whose}{}",
                rules.len(),
                delay.map_or(String::new(), |d| format!(
                    ", crawl delay {:.3} s",
                    d.as_secs_f64()
                ))
            ),
            rules,
            deny_all: false,
            crawl_delay: delay,
            status: None,
        }
    }

    /// Whether the crawler may fetch `url` (whose host these rules are for).
    pub fn allows(&self, url: &Url) -> bool {
        // The path and query, as the request sends them.
        let target = &url[Position::BeforePath..Position::AfterQuery];
        if target == "/robots.txt" {
            return true;
        }
        if self.deny_all {
            return false;
        }
        if self.rules.is_empty() {
            return true;
        }
        // Normalizing changes only escapes and bytes outside printable
        // ASCII; most paths have neither, and are compared as they are.
        let normalized;
        let target = if target.bytes().all(|b| b != b'%' && b.is_ascii_graphic()) {
            target.as_bytes()
        } else {
            normalized = normalize(target.as_bytes());
            &normalized
        };
        // The longest matching pattern decides; `Allow` wins a tie.
        let mut best: Option<(usize, bool)> = None;
        for rule in &self.rules {
            let length = rule.pattern.len();
            if best.is_some_and(|(l, allow)| l > length || (l == length && allow)) {
                continue;
            }
            if matches(&rule.pattern, target) {
                best = Some((length, rule.allow));
            }
        }
        best.is_none_or(|(_, allow)| allow)
    }

    /// The status robots.txt was answered with (`None` when there was no
    /// answer at all).
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// Whether every URL is refused because the site could not say what it
    /// allows (rather than by its rules).
    pub fn refuses_all(&self) -> bool {
        self.deny_all
    }

    /// The `Crawl-delay` of the groups that apply, capped at
    /// [`MAX_CRAWL_DELAY`] (the largest, if they disagree).
    pub fn crawl_delay(&self) -> Option<Duration> {
        self.crawl_delay
    }

    /// What these rules are, in a few words, for the crawl's log.
    pub fn summary(&self) -> &str {
        &self.source
    }
}

/// The product token at the start of a `User-agent` value: letters, `_` and
/// `-` (`crawler-course/1.0 (+https://…)` names `crawler-course`). `*` is
/// kept as it is.
fn product_token(value: &str) -> &str {
    if value.starts_with('*') {
        return "*";
    }
    let end = value
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '_' || c == '-'))
        .unwrap_or(value.len());
    &value[..end]
}

/// A path or pattern in the one form both are compared in: bytes outside
/// printable ASCII percent-encoded, escapes of unreserved characters
/// (`A-Z a-z 0-9 - . _ ~`) decoded, other escapes' hex digits upper-cased.
fn normalize(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if b == b'%' {
            let hex = |c: Option<&u8>| c.and_then(|c| (*c as char).to_digit(16));
            if let (Some(h), Some(l)) = (hex(text.get(i + 1)), hex(text.get(i + 2))) {
                let decoded = (h * 16 + l) as u8;
                if decoded.is_ascii_alphanumeric() || matches!(decoded, b'-' | b'.' | b'_' | b'~') {
                    out.push(decoded);
                } else {
                    out.extend_from_slice(format!("%{decoded:02X}").as_bytes());
                }
                i += 3;
                continue;
            }
        }
        if b.is_ascii_graphic() {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
        i += 1;
    }
    out
}

/// Whether `pattern` (with `*` for any run, and `$` at its end for the end)
/// matches `path` from its start.
///
/// The pattern is cut at its `*`s into literal pieces. The first piece must
/// start the path; each later one is found at its leftmost place after the
/// last, which is the best place for it (any later place leaves less room
/// for the rest); with a `$`, the last piece must end the path. Each piece is
/// looked for once, so no pattern can make this search every way of
/// splitting the path, as a backtracking matcher would.
fn matches(pattern: &[u8], path: &[u8]) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix(b"$") {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let mut pieces = pattern.split(|&b| b == b'*');
    let first = pieces.next().unwrap_or(&[]);
    if !path.starts_with(first) {
        return false;
    }
    let rest: Vec<&[u8]> = pieces.collect();
    let Some((last, middle)) = rest.split_last() else {
        // No `*`: a prefix, or with `$` the whole path.
        return !anchored || path.len() == first.len();
    };
    let mut at = first.len();
    for piece in middle {
        match find(&path[at..], piece) {
            Some(i) => at += i + piece.len(),
            None => return false,
        }
    }
    if anchored {
        // The last piece ends the path, and does not overlap what came before.
        path.len() >= at + last.len() && path.ends_with(last)
    } else {
        find(&path[at..], last).is_some()
    }
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(path: &str) -> Url {
        Url::parse(&format!("http://example.com{path}")).unwrap()
    }

    fn allows(robots: &str, agent: &str, path: &str) -> bool {
        Robots::parse(robots.as_bytes(), agent).allows(&url(path))
    }

    #[test]
    fn groups_are_chosen_by_product_token_case_insensitively() {
        let txt = "User-agent: Crawler-Course\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n";
        assert!(!allows(txt, "crawler-course", "/a"));
        assert!(allows(txt, "crawler-course", "/b"));
        assert!(allows(txt, "other", "/a"));
        assert!(!allows(txt, "other", "/b"));
        // A version and a comment after the token still name it.
        let txt = "User-agent: crawler-course/1.0 (+https://x)\nDisallow: /\n";
        assert!(!allows(txt, "crawler-course", "/x"));
    }

    #[test]
    fn every_matching_group_is_merged_and_agent_lines_share_a_group() {
        let txt = "User-agent: a\nUser-agent: me\nDisallow: /one\n\n\
                   User-agent: me\nDisallow: /two\n\nUser-agent: *\nDisallow: /three\n";
        assert!(!allows(txt, "me", "/one"));
        assert!(!allows(txt, "me", "/two"));
        assert!(allows(txt, "me", "/three"));
        assert!(!allows(txt, "a", "/one"));
        assert!(allows(txt, "a", "/two"));
    }

    #[test]
    fn no_group_for_the_agent_and_no_star_means_no_rules() {
        let txt = "User-agent: other\nDisallow: /\n";
        assert!(allows(txt, "me", "/anything"));
        assert_eq!(
            Robots::parse(txt.as_bytes(), "me").summary(),
            "no group for this agent"
        );
    }

    #[test]
    fn rules_before_any_user_agent_are_ignored() {
        let txt = "Disallow: /\nUser-agent: *\nDisallow: /private\n";
        assert!(allows(txt, "me", "/public"));
        assert!(!allows(txt, "me", "/private/x"));
    }

    #[test]
    fn the_longest_match_wins_and_allow_wins_a_tie() {
        let txt = "User-agent: *\nDisallow: /p\nAllow: /page\nDisallow: /page/x\nAllow: /same\nDisallow: /same\n";
        assert!(!allows(txt, "me", "/pdf"));
        assert!(allows(txt, "me", "/page.html"));
        assert!(!allows(txt, "me", "/page/x.html"));
        assert!(allows(txt, "me", "/same"));
        // Order does not matter.
        let txt = "User-agent: *\nAllow: /page\nDisallow: /p\n";
        assert!(allows(txt, "me", "/page"));
    }

    #[test]
    fn wildcards_and_end_anchors() {
        let txt = "User-agent: *\nDisallow: /*.pdf$\nDisallow: /tmp*/x\nAllow: /$\nDisallow: /\n";
        assert!(allows(txt, "me", "/"));
        assert!(!allows(txt, "me", "/doc.pdf"));
        assert!(!allows(txt, "me", "/a/b/doc.pdf"));
        assert!(!allows(txt, "me", "/doc.html"), "caught by Disallow: /");
        let txt = "User-agent: *\nDisallow: /*.pdf$\nDisallow: /tmp*/x\n";
        assert!(allows(txt, "me", "/doc.pdf?download=1"), "$ is the end");
        assert!(!allows(txt, "me", "/tmp123/x/y"));
        assert!(allows(txt, "me", "/tmp/y"));
        // `$` only means the end at the end of the pattern; `*$` is any end.
        assert!(matches(b"/a*$", b"/abc"));
        assert!(matches(b"/a**b", b"/axxb"));
        assert!(!matches(b"/a*b$", b"/ab/c"));
        assert!(matches(b"/a*b$", b"/ab/cb"));
        assert!(!matches(b"/ab*b$", b"/ab"), "the pieces may not overlap");
    }

    #[test]
    fn queries_count_and_escapes_are_compared_normalized() {
        let txt =
            "User-agent: *\nDisallow: /search?q=\nDisallow: /%7Efred/\nDisallow: /caf\u{e9}\n";
        assert!(!allows(txt, "me", "/search?q=rust"));
        assert!(allows(txt, "me", "/search"));
        assert!(!allows(txt, "me", "/~fred/page"));
        assert!(!allows(txt, "me", "/%7efred/page"));
        assert!(!allows(txt, "me", "/caf%C3%A9/menu"));
        // A reserved character's escape stays an escape.
        assert_eq!(normalize(b"/a%2fb%2F"), b"/a%2Fb%2F");
    }

    #[test]
    fn robots_txt_itself_is_always_allowed() {
        let txt = "User-agent: *\nDisallow: /\n";
        assert!(allows(txt, "me", "/robots.txt"));
        assert!(Robots::deny_all("x").allows(&url("/robots.txt")));
        assert!(!Robots::deny_all("x").allows(&url("/")));
    }

    #[test]
    fn an_empty_disallow_allows_everything_and_comments_are_ignored() {
        let txt = "# hello\nUser-agent: * # everyone\nDisallow:\n";
        assert!(allows(txt, "me", "/anything"));
        let txt = "User-agent: *\nDisallow: /x # not /y\n";
        assert!(!allows(txt, "me", "/x"));
        assert!(allows(txt, "me", "/y"));
    }

    #[test]
    fn keys_are_case_insensitive_and_line_ends_of_every_kind_work() {
        let txt = "USER-AGENT: *\r\nDISALLOW: /a\rallow: /a/b\n";
        assert!(!allows(txt, "me", "/a/x"));
        assert!(allows(txt, "me", "/a/b"));
        let txt = "\u{feff}User-agent: *\nDisallow: /bom\n";
        assert!(!allows(txt, "me", "/bom"));
    }

    #[test]
    fn crawl_delay_is_read_with_decimals_and_capped() {
        let r = Robots::parse(b"User-agent: *\nCrawl-delay: 0.25\nDisallow: /x\n", "me");
        assert_eq!(r.crawl_delay(), Some(Duration::from_millis(250)));
        assert_eq!(r.summary(), "1 rule(s) for *, crawl delay 0.250 s");
        let r = Robots::parse(b"User-agent: *\nCrawl-delay: 3600\n", "me");
        assert_eq!(r.crawl_delay(), Some(Duration::from_secs(30)));
        for bad in ["-1", "soon", "NaN", "inf"] {
            let r = Robots::parse(
                format!("User-agent: *\nCrawl-delay: {bad}\n").as_bytes(),
                "me",
            );
            assert_eq!(r.crawl_delay(), None, "{bad}");
        }
    }

    #[test]
    fn statuses_mean_what_rfc_9309_says() {
        let body = b"User-agent: *\nDisallow: /x\n";
        assert!(!Robots::from_status(200, body, "me").allows(&url("/x")));
        assert!(Robots::from_status(404, body, "me").allows(&url("/x")));
        assert!(Robots::from_status(403, body, "me").allows(&url("/x")));
        assert!(!Robots::from_status(429, body, "me").allows(&url("/y")));
        assert!(!Robots::from_status(500, body, "me").allows(&url("/y")));
        assert!(!Robots::from_status(503, body, "me").allows(&url("/y")));
    }

    #[test]
    fn only_the_first_500_kib_is_read() {
        let mut txt = b"User-agent: *\nDisallow: /early\n".to_vec();
        txt.resize(MAX_BYTES, b'\n');
        txt.extend_from_slice(b"Disallow: /late\n");
        let r = Robots::parse(&txt, "me");
        assert!(!r.allows(&url("/early")));
        assert!(r.allows(&url("/late")));
    }

    #[test]
    fn hostile_patterns_do_not_backtrack() {
        // Many `*`s against a long path that almost matches: one pass per
        // piece, not a search that backtracks through every split.
        let pattern = format!("/{}b", "a*".repeat(1000));
        let txt = format!("User-agent: *\nDisallow: {pattern}\n");
        let path = format!("/{}", "a".repeat(5000));
        assert!(allows(&txt, "me", &path));
        // A pattern past the limit is dropped.
        let long = format!("User-agent: *\nDisallow: /{}\n", "x".repeat(MAX_PATTERN));
        assert!(allows(
            &long,
            "me",
            &format!("/{}", "x".repeat(MAX_PATTERN))
        ));
    }

    #[test]
    fn bytes_that_are_not_utf8_do_not_break_parsing() {
        let txt = b"User-agent: *\nDisallow: /\xff\xfe\nDisallow: /ok\n";
        let r = Robots::parse(txt, "me");
        assert!(!r.allows(&url("/ok")));
    }
}
