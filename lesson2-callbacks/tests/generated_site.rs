//! The same crawl as lesson 1: on a generated site of a few thousand pages,
//! lesson 2 reports exactly the URLs the generator promises, and every URL
//! ends the same way as it does under lesson 1's thread pool.

use std::collections::BTreeMap;
use std::time::Duration;

use shared::fixtures::server::TestServer;
use shared::fixtures::sitegen::{generate, SiteSpec};
use shared::log::{Level, Log};
use shared::{Config, CrawlReport, Lesson};

/// What must not depend on the engine: per URL, its report line without the
/// `NEW` count (which page found a link first depends on timing).
fn outcomes(report: &CrawlReport) -> BTreeMap<String, String> {
    report
        .stats
        .iter()
        .map(|s| {
            let mut s = s.clone();
            s.num_new_urls = 0;
            (s.url.clone(), shared::report::line(&s).to_string())
        })
        .collect()
}

/// The URLs whose line differs between two crawls' [`outcomes`], for a
/// failure message: at most ten, each with both lines.
fn differences(two: &BTreeMap<String, String>, one: &BTreeMap<String, String>) -> String {
    let urls: std::collections::BTreeSet<&String> = two.keys().chain(one.keys()).collect();
    let differ: Vec<String> = urls
        .into_iter()
        .filter(|url| two.get(*url) != one.get(*url))
        .map(|url| {
            format!(
                "  lesson 2: {:?}\n  lesson 1: {:?}\n",
                two.get(url),
                one.get(url)
            )
        })
        .collect();
    let more = differ.len().saturating_sub(10);
    let mut text: String = differ.into_iter().take(10).collect();
    if more > 0 {
        text.push_str(&format!("  ... and {more} more URLs\n"));
    }
    text
}

#[test]
fn a_generated_site_crawls_as_the_generator_and_lesson_1_say() {
    let site = generate(&SiteSpec::new(3000));
    let server = TestServer::start(site.to_site());
    let origin = server.url("");

    let mut config = Config::new(Lesson::Two, [server.url("/")]);
    config.log = Log::capture(Level::Error);
    config.timeout = Duration::from_secs(30);
    let two = lesson2_callbacks::crawl(&config)
        .expect("the crawl must return its report for a root that answers");
    let expected = site.expected_urls(&origin);
    assert_eq!(
        two.urls(),
        expected,
        "the URLs lesson 2 reported: those the site generator says a correct crawl \
         reports{}",
        shared::behaviour::url_diff(&two.urls(), &expected)
    );
    assert_eq!(
        two.todo, 0,
        "Todo: URLs seen but never fetched; none after a complete crawl"
    );
    // Every URL but the root entered the seen-set exactly once, as a NEW
    // link of one page or as the target of one of the redirects.
    let new: usize = two.stats.iter().map(|s| s.num_new_urls).sum();
    let redirects = two.stats.iter().filter(|s| s.next_url.is_some()).count();
    assert!(
        new < two.stats.len(),
        "NEW summed over every line is {new}, for {} URLs: the root is never NEW, so a URL \
         was counted NEW on more than one page",
        two.stats.len()
    );
    assert!(
        new + redirects >= two.stats.len() - 1,
        "NEW summed ({new}) plus redirects ({redirects}) must cover every URL but the root \
         ({}): each entered the seen-set as a NEW link or a redirect's target",
        two.stats.len() - 1
    );

    let mut config = Config::new(Lesson::One, [server.url("/")]);
    config.log = Log::capture(Level::Error);
    config.timeout = Duration::from_secs(30);
    config.threads = 8;
    let one = lesson1_threadpool::crawl(&config)
        .expect("the crawl must return its report for a root that answers");
    assert_eq!(
        outcomes(&two),
        outcomes(&one),
        "each URL's report line (NEW left out) under lesson 2 vs lesson 1: the engine must \
         not change how a URL ends; differing lines:\n{}",
        differences(&outcomes(&two), &outcomes(&one))
    );
    assert_eq!(
        two.counts(),
        one.counts(),
        "the stats table under lesson 2 vs lesson 1"
    );
}
