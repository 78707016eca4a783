//! # From a response to a statistic and the links to follow
//!
//! What a crawler does with a response it has in full is the same in every
//! lesson, so it is written once: read the status, the content type and the
//! charset; for a redirect, resolve `Location`; for a status-200 HTML or XML
//! page, find the links and keep those the [`UrlPolicy`] allows.
//!
//! What stays in the lessons is the part that *is* the concurrency model:
//! deciding under the lock (or in the one thread) which links are new, and
//! scheduling their fetches.
//!
//! The three kinds of answer, as the report prints them:
//!
//! | status | what is read | report line |
//! |---|---|---|
//! | 300, 301, 302, 303, 307, 308 | `Location`, resolved against the URL | `URL 301 redirect NEXT_URL` (or `URL error redirect without location`) |
//! | 200 | `Content-Type`; links of `text/html` and `application/xml` bodies | `URL 200 text/html utf-8 SIZE NEW/TOTAL`, `URL 200 image/png utf-8 SIZE` |
//! | anything else (404, 500, 304, …) | nothing but the size | `URL 404 - - SIZE` |

use url::Url;

use crate::http::Response;
use crate::links::{extract_links, Link, UrlPolicy};
use crate::log::Log;
use crate::stats::{parse_content_type, FailKind, FetchError, FetchStatistic};

/// What one response gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    /// The statistic, complete but for `num_new_urls` (the lesson decides that
    /// when it adds `links` to its seen-set).
    pub stat: FetchStatistic,
    /// The page's distinct allowed links (`stat.num_urls` of them), first-seen
    /// order, as text: the lesson parses only those new to its crawl
    /// ([`Link::to_url`]).
    pub links: Vec<Link>,
    /// For a redirect with a `Location`: the target, when the policy allows it.
    pub redirect: Option<Link>,
}

/// The charset a page is taken to be in when its `Content-Type` names none.
const DEFAULT_ENCODING: &str = "utf-8";

/// Turn a complete response for `url` into its statistic and the URLs to
/// queue. Skipped links are logged at debug level with their [`crate::links::Skip`].
pub fn analyze(url: &Url, response: &Response, policy: &UrlPolicy, log: &Log) -> Analysis {
    let status = response.status;
    let mut analysis = Analysis {
        stat: FetchStatistic {
            url: url.to_string(),
            status: Some(status),
            size: response.body.len(),
            ..FetchStatistic::default()
        },
        links: Vec::new(),
        redirect: None,
    };
    if FetchStatistic::is_redirect_status(status) {
        analyze_redirect(url, response, policy, log, &mut analysis);
    } else if status == 200 {
        analyze_page(url, response, policy, log, &mut analysis);
    }
    // Any other status (404, 500, 304, ...) is only counted: no type, no
    // charset (`URL 404 - - SIZE`), no links even if the error page has some.
    analysis
}

/// A redirect: the target is recorded whether or not it is followed (the
/// report shows where the site wanted to send us); it is queued only when the
/// policy allows it, so a redirect off the site is not a way around the policy.
fn analyze_redirect(
    url: &Url,
    response: &Response,
    policy: &UrlPolicy,
    log: &Log,
    analysis: &mut Analysis,
) {
    // A `Location` that is empty or does not resolve points nowhere: for the
    // crawler it is the same as no `Location` at all.
    let target = response
        .header("location")
        .filter(|location| !location.is_empty())
        .and_then(|location| url.join(location).ok());
    let Some(mut target) = target else {
        // The status is kept on the statistic; the error decides the line.
        analysis.stat.error = Some(FetchError::new(
            FailKind::Redirect,
            "redirect without location",
        ));
        return;
    };
    target.set_fragment(None);
    analysis.stat.next_url = Some(target.to_string());
    match policy.check(&target) {
        Ok(()) => analysis.redirect = Some(Link::from(target)),
        Err(why) => log.debug(format_args!("skip redirect {target} from {url}: {why}")),
    }
}

/// A status-200 answer: its type and charset, and for HTML and XML its links.
fn analyze_page(
    url: &Url,
    response: &Response,
    policy: &UrlPolicy,
    log: &Log,
    analysis: &mut Analysis,
) {
    // No `Content-Type` reads as an empty one: no media type (`-` in the
    // report), and the default charset, as for any 200.
    let (media_type, charset) = parse_content_type(response.header("content-type").unwrap_or(""));
    if media_type == "text/html" || media_type == "application/xml" {
        analysis.links = extract_links(&response.body, url);
        analysis.links.retain(|link| match policy.check_link(link) {
            Ok(()) => true,
            Err(why) => {
                // `format_args!` formats nothing until the log decides to
                // show the line: without `-v`, a skipped link costs no text.
                log.debug(format_args!("skip {link} from {url}: {why}"));
                false
            }
        });
        analysis.stat.num_urls = analysis.links.len();
    }
    analysis.stat.content_type = Some(media_type).filter(|media| !media.is_empty());
    analysis.stat.encoding = Some(charset.unwrap_or_else(|| DEFAULT_ENCODING.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::ResponseParser;
    use crate::log::Level;
    use regex::Regex;

    const PAGE: &str = "http://example.com/dir/page.html";

    /// A response as the real parser makes it from `head` (status line and
    /// headers, one per line) and `body`.
    fn response(head: &str, body: &[u8]) -> Response {
        let mut raw = String::new();
        for line in head.lines() {
            raw.push_str(line);
            raw.push_str("\r\n");
        }
        raw.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let mut raw = raw.into_bytes();
        raw.extend_from_slice(body);
        ResponseParser::new()
            .feed(&raw)
            .expect("a well-formed response")
            .expect("a complete response")
    }

    fn policy() -> UrlPolicy {
        UrlPolicy::new(&[Url::parse(PAGE).unwrap()], None, false)
    }

    /// Analyze `response` for [`PAGE`], with a log that keeps debug lines.
    fn analyze_page(response: &Response) -> (Analysis, Vec<String>) {
        let log = Log::capture(Level::Debug);
        let analysis = analyze(&Url::parse(PAGE).unwrap(), response, &policy(), &log);
        (analysis, log.lines())
    }

    fn strings(links: &[Link]) -> Vec<&str> {
        links.iter().map(Link::as_str).collect()
    }

    const HTML: &[u8] = br##"<html><head><link href="/style.css"></head><body>
        <a href="a.html">a</a> <a href="a.html#part">a again</a>
        <a href="http://www.example.com/b">b</a>
        <a href="http://example.org/elsewhere">off site</a>
        <a href="mailto:me@example.com">mail</a>
        <a href="https://example.com/secure">https is kept</a>
        </body></html>"##;

    #[test]
    fn an_html_page_gives_its_allowed_links() {
        let (analysis, lines) = analyze_page(&response(
            "HTTP/1.1 200 OK\nContent-Type: text/HTML; charset=ISO-8859-1",
            HTML,
        ));
        assert_eq!(
            strings(&analysis.links),
            [
                "http://example.com/style.css",
                "http://example.com/dir/a.html",
                "http://www.example.com/b",
                "https://example.com/secure",
            ]
        );
        let stat = &analysis.stat;
        assert_eq!(stat.url, PAGE);
        assert_eq!(stat.status, Some(200));
        assert_eq!(stat.size, HTML.len());
        assert_eq!(stat.content_type.as_deref(), Some("text/html"));
        assert_eq!(stat.encoding.as_deref(), Some("iso-8859-1"));
        assert_eq!(stat.num_urls, 4);
        assert_eq!(stat.num_new_urls, 0, "the lesson decides what is new");
        assert_eq!((&stat.next_url, &stat.error), (&None, &None));
        assert_eq!(analysis.redirect, None);
        assert_eq!(
            lines,
            [
                format!(
                    "skip http://example.org/elsewhere from {PAGE}: host example.org not allowed"
                ),
                format!("skip mailto:me@example.com from {PAGE}: scheme mailto not followed"),
            ]
        );
    }

    #[test]
    fn skipped_links_are_not_logged_below_debug() {
        let log = Log::capture(Level::Info);
        let page = response("HTTP/1.1 200 OK\nContent-Type: text/html", HTML);
        let analysis = analyze(&Url::parse(PAGE).unwrap(), &page, &policy(), &log);
        assert_eq!(analysis.stat.num_urls, 4);
        assert!(log.lines().is_empty());
    }

    #[test]
    fn excluded_links_are_skipped() {
        let roots = [Url::parse(PAGE).unwrap()];
        let policy = UrlPolicy::new(&roots, Some(Regex::new(r"\.css$").unwrap()), false);
        let log = Log::capture(Level::Debug);
        let page = response("HTTP/1.1 200 OK\nContent-Type: text/html", HTML);
        let analysis = analyze(&roots[0], &page, &policy, &log);
        assert_eq!(analysis.stat.num_urls, 3);
        assert!(log.lines().contains(&format!(
            "skip http://example.com/style.css from {PAGE}: excluded"
        )));
    }

    #[test]
    fn an_xml_page_gives_links_too() {
        let body =
            br#"<?xml version="1.0"?><feed><link href="/feed/1"/><link href="/feed/2"/></feed>"#;
        let (analysis, _) = analyze_page(&response(
            "HTTP/1.1 200 OK\nContent-Type: application/xml",
            body,
        ));
        assert_eq!(
            strings(&analysis.links),
            ["http://example.com/feed/1", "http://example.com/feed/2"]
        );
        assert_eq!(analysis.stat.num_urls, 2);
        assert_eq!(
            analysis.stat.content_type.as_deref(),
            Some("application/xml")
        );
        assert_eq!(analysis.stat.encoding.as_deref(), Some("utf-8"));
    }

    #[test]
    fn other_types_are_counted_not_parsed() {
        let body = br#"<a href="/looks-like-a-link">"#;
        let (analysis, _) = analyze_page(&response(
            "HTTP/1.1 200 OK\nContent-Type: text/plain; charset=\"UTF-8\"",
            body,
        ));
        assert!(analysis.links.is_empty());
        assert_eq!(analysis.stat.num_urls, 0);
        assert_eq!(analysis.stat.content_type.as_deref(), Some("text/plain"));
        assert_eq!(analysis.stat.encoding.as_deref(), Some("utf-8"));
        assert_eq!(analysis.stat.size, body.len());
    }

    #[test]
    fn a_200_without_content_type_has_no_type_and_the_default_charset() {
        for head in [
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK\nContent-Type: ",
            "HTTP/1.1 200 OK\nContent-Type: ; charset=koi8-r",
        ] {
            let (analysis, _) = analyze_page(&response(head, br#"<a href="/x">"#));
            assert_eq!(analysis.stat.content_type, None, "{head}");
            assert!(analysis.links.is_empty(), "{head}");
            let expected = if head.contains("koi8-r") {
                "koi8-r"
            } else {
                "utf-8"
            };
            assert_eq!(analysis.stat.encoding.as_deref(), Some(expected), "{head}");
        }
    }

    #[test]
    fn a_redirect_on_the_site_is_resolved_and_followed() {
        let (analysis, lines) = analyze_page(&response(
            "HTTP/1.1 301 Moved Permanently\nLocation: ../moved.html#section",
            b"moved",
        ));
        let stat = &analysis.stat;
        assert_eq!(stat.status, Some(301));
        assert_eq!(
            stat.next_url.as_deref(),
            Some("http://example.com/moved.html")
        );
        assert_eq!(
            analysis.redirect.as_ref().map(Link::as_str),
            Some("http://example.com/moved.html")
        );
        assert_eq!(stat.size, 5);
        assert_eq!((&stat.content_type, &stat.encoding), (&None, &None));
        assert_eq!(stat.error, None);
        assert!(analysis.links.is_empty());
        assert!(lines.is_empty());
    }

    #[test]
    fn every_redirect_status_is_a_redirect() {
        for status in [300, 301, 302, 303, 307, 308] {
            let (analysis, _) = analyze_page(&response(
                &format!("HTTP/1.1 {status} X\nLocation: /next"),
                b"",
            ));
            assert_eq!(
                analysis.redirect.as_ref().map(Link::as_str),
                Some("http://example.com/next"),
                "{status}"
            );
        }
    }

    #[test]
    fn a_redirect_off_the_site_is_recorded_not_followed() {
        let (analysis, lines) = analyze_page(&response(
            "HTTP/1.1 302 Found\nLocation: http://example.org/there",
            b"",
        ));
        assert_eq!(
            analysis.stat.next_url.as_deref(),
            Some("http://example.org/there")
        );
        assert_eq!(analysis.redirect, None);
        assert_eq!(analysis.stat.error, None);
        assert_eq!(
            lines,
            [format!(
                "skip redirect http://example.org/there from {PAGE}: host example.org not allowed"
            )]
        );
    }

    #[test]
    fn a_redirect_without_a_usable_location_is_an_error() {
        for head in [
            "HTTP/1.1 302 Found",
            "HTTP/1.1 307 Temporary Redirect\nLocation: ",
            "HTTP/1.1 301 Moved\nLocation: http://[bad",
        ] {
            let (analysis, _) = analyze_page(&response(head, b""));
            let stat = &analysis.stat;
            assert_eq!(
                stat.error,
                Some(FetchError::new(
                    FailKind::Redirect,
                    "redirect without location"
                )),
                "{head}"
            );
            assert!(stat.status.is_some(), "{head}");
            assert_eq!(stat.next_url, None, "{head}");
            assert_eq!(analysis.redirect, None, "{head}");
        }
    }

    #[test]
    fn other_statuses_are_counted_with_no_type_or_links() {
        for head in [
            "HTTP/1.1 404 Not Found\nContent-Type: text/html",
            "HTTP/1.1 500 Oops\nContent-Type: text/html; charset=utf-8",
            "HTTP/1.1 304 Not Modified\nLocation: /elsewhere",
            "HTTP/1.1 201 Created\nContent-Type: text/html",
        ] {
            let body: &[u8] = if head.contains("304") { b"" } else { HTML };
            let (analysis, lines) = analyze_page(&response(head, body));
            let stat = &analysis.stat;
            assert_eq!(
                (&stat.content_type, &stat.encoding),
                (&None, &None),
                "{head}"
            );
            assert_eq!(stat.size, body.len(), "{head}");
            assert_eq!(
                (stat.num_urls, &stat.next_url, &stat.error),
                (0, &None, &None),
                "{head}"
            );
            assert!(
                analysis.links.is_empty() && analysis.redirect.is_none(),
                "{head}"
            );
            assert!(lines.is_empty(), "{head}");
        }
    }
}
