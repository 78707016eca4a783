//! A chapter's links and its headings' ids, read with `pulldown-cmark`, the
//! Markdown parser mdBook itself renders with, under mdBook's options: what
//! is a link, what is code, and what text a heading has are then exactly
//! what the built book will have.

use std::collections::HashSet;
use std::sync::LazyLock;

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag, TagEnd};
use regex::Regex;

use course_tools::lesson_diff::pages::id_from_content;

/// A link or image found in prose.
#[derive(Debug, PartialEq, Eq)]
pub struct Link {
    /// 1-based line of the link's target.
    pub line: usize,
    /// The target as written: `lesson2.md#the-loop`, `img/x.svg`, `https://…`.
    pub dest: String,
}

/// The extensions mdBook turns on (its `smart-punctuation` setting aside).
fn options(smart_punctuation: bool) -> Options {
    let mut options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES;
    if smart_punctuation {
        options |= Options::ENABLE_SMART_PUNCTUATION;
    }
    options
}

/// `href` and `src` attributes in raw HTML.
static HTML_TARGET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"<(?:a|img|source)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']*)["']"#)
        .expect("constant regex")
});

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Every link and image target in the prose of `text`: inline links and
/// images, reference definitions (a link that uses one is reported there,
/// once), and `href`/`src` in HTML tags outside comments.
pub fn links(text: &str) -> Vec<Link> {
    let parser = Parser::new_ext(text, options(false));
    let mut out: Vec<Link> = parser
        .reference_definitions()
        .iter()
        .map(|(_, def)| Link {
            line: line_of(text, def.span.start),
            dest: def.dest.to_string(),
        })
        .collect();
    for (event, range) in Parser::new_ext(text, options(false)).into_offset_iter() {
        match event {
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            })
            | Event::Start(Tag::Image {
                link_type,
                dest_url,
                ..
            }) => {
                let by_reference = matches!(
                    link_type,
                    LinkType::Reference | LinkType::Collapsed | LinkType::Shortcut
                );
                if by_reference || matches!(link_type, LinkType::Autolink | LinkType::Email) {
                    continue;
                }
                // The line of the target itself, which may sit below the
                // start of a link whose text wraps.
                let source = &text[range.clone()];
                let at = source
                    .rfind(&*dest_url)
                    .map_or(range.start, |i| range.start + i);
                out.push(Link {
                    line: line_of(text, at),
                    dest: dest_url.to_string(),
                });
            }
            Event::Html(html) | Event::InlineHtml(html)
                if !html.trim_start().starts_with("<!--") =>
            {
                for cap in HTML_TARGET.captures_iter(&html) {
                    let at = cap.get(1).map_or(0, |m| m.start());
                    out.push(Link {
                        line: line_of(text, range.start + at),
                        dest: cap[1].to_string(),
                    });
                }
            }
            _ => {}
        }
    }
    out.sort_by_key(|l| l.line);
    out
}

/// The ids mdBook gives the headings of a page, in order: from the heading
/// as it renders (or a `{#id}` attribute), made unique with `-1`, `-2`…
/// suffixes. `smart_punctuation` is mdBook's option of that name (on by
/// default): it turns `--` and `---` into dashes, which then do not survive
/// in the id.
pub fn heading_ids(text: &str, smart_punctuation: bool) -> Vec<String> {
    let mut used = HashSet::new();
    let mut ids = Vec::new();
    // The heading being read: its explicit id, and its text (entities
    // decoded, HTML tags left out, as mdBook makes ids from it).
    let mut heading: Option<(Option<String>, String)> = None;
    // Inside an image, whose alt text is an attribute, not text.
    let mut in_image = 0;
    for event in Parser::new_ext(text, options(smart_punctuation)) {
        match event {
            Event::Start(Tag::Heading { id, .. }) => {
                heading = Some((id.map(|id| id.to_string()), String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                let Some((custom, content)) = heading.take() else {
                    continue;
                };
                match custom {
                    // An explicit id is used as is and does not take part
                    // in making the others unique.
                    Some(id) => ids.push(id),
                    None => ids.push(unique_id(&id_from_content(&content), &mut used)),
                }
            }
            Event::Start(Tag::Image { .. }) => in_image += 1,
            Event::End(TagEnd::Image) => in_image -= 1,
            Event::Text(t) | Event::Code(t) if in_image == 0 => {
                if let Some((_, content)) = &mut heading {
                    content.push_str(&t);
                }
            }
            _ => {}
        }
    }
    ids
}

/// Inline code spans of the prose, with their lines: where a chapter names
/// a file, a test or a function.
pub fn code_spans(text: &str) -> Vec<(usize, String)> {
    Parser::new_ext(text, options(false))
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Code(code) => Some((line_of(text, range.start), code.to_string())),
            _ => None,
        })
        .collect()
}

/// Where the prose of `text` is: the byte ranges of its text outside code
/// blocks and code spans, and of raw HTML outside its tags and comments (a
/// line that starts with a comment is an HTML block, and the words after
/// the comment are still shown).
pub fn prose_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    static MARKUP: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?s)<!--.*?-->|<[^>]*>").expect("constant regex"));
    let mut in_code_block = false;
    let mut out = Vec::new();
    for (event, range) in Parser::new_ext(text, options(false)).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => in_code_block = true,
            Event::End(TagEnd::CodeBlock) => in_code_block = false,
            Event::Text(_) if !in_code_block => out.push(range),
            Event::Html(_) | Event::InlineHtml(_) if !in_code_block => {
                let mut at = range.start;
                for markup in MARKUP.find_iter(&text[range.clone()]) {
                    out.push(at..range.start + markup.start());
                    at = range.start + markup.end();
                }
                out.push(at..range.end);
            }
            _ => {}
        }
    }
    out
}

/// The lines where a comment starts a line and text follows it on that
/// line. Markdown reads such a line as an HTML block: the text after the
/// comment is shown raw (no code, no emphasis, no links) and is glued to
/// the line before it without a space.
pub fn text_after_a_leading_comment(text: &str) -> Vec<usize> {
    Parser::new_ext(text, options(false))
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Html(html) if html.trim_start().starts_with("<!--") => {
                let after = html.split_once("-->")?.1;
                let first_line = after.lines().next().unwrap_or("");
                (!first_line.trim().is_empty()).then(|| line_of(text, range.start))
            }
            _ => None,
        })
        .collect()
}

/// The lines of fenced code blocks that start with `$ `: a command and
/// what it printed, typed into the page.
pub fn transcript_lines(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut block: Option<usize> = None;
    for (event, range) in Parser::new_ext(text, options(false)).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => block = Some(range.start),
            Event::End(TagEnd::CodeBlock) => block = None,
            Event::Text(code) if block.is_some() => {
                let mut at = range.start;
                for line in code.split_inclusive('\n') {
                    if line.trim_start().starts_with("$ ") {
                        out.push(line_of(text, at));
                    }
                    at += line.len();
                }
            }
            _ => {}
        }
    }
    out
}

/// The fenced code of `text` (a page with its includes expanded) that
/// comes before the heading whose id is `id`, each block with the heading
/// it sits under; `None` if no heading has that id.
pub fn code_before_heading(
    text: &str,
    id: &str,
    smart_punctuation: bool,
) -> Option<Vec<(String, String)>> {
    let mut used = HashSet::new();
    let mut blocks = Vec::new();
    let mut section = String::new();
    let mut heading: Option<(Option<String>, String)> = None;
    let mut block: Option<String> = None;
    for event in Parser::new_ext(text, options(smart_punctuation)) {
        match event {
            Event::Start(Tag::Heading { id, .. }) => {
                heading = Some((id.map(|id| id.to_string()), String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                let (custom, content) = heading.take()?;
                let this =
                    custom.unwrap_or_else(|| unique_id(&id_from_content(&content), &mut used));
                if this == id {
                    return Some(blocks);
                }
                section = content;
            }
            Event::Start(Tag::CodeBlock(_)) => block = Some(String::new()),
            Event::End(TagEnd::CodeBlock) => {
                blocks.extend(block.take().map(|code| (section.clone(), code)));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(code) = &mut block {
                    code.push_str(&t);
                } else if let Some((_, content)) = &mut heading {
                    content.push_str(&t);
                }
            }
            _ => {}
        }
    }
    None
}

/// mdBook's `unique_id`: the id itself the first time, then `id-1`, `id-2`…
fn unique_id(id: &str, used: &mut HashSet<String>) -> String {
    if used.insert(id.to_string()) {
        return id.to_string();
    }
    let mut n = 1;
    loop {
        let candidate = format!("{id}-{n}");
        if used.insert(candidate.clone()) {
            return candidate;
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcripts_and_code_spans_are_found_where_they_are() {
        let page = "Run `tests/fetch.rs` and `a_b_c_d`.\n\n```text\n$ cargo test\nok\n```\n\n$ not in code\n";
        assert_eq!(
            code_spans(page),
            [
                (1, "tests/fetch.rs".to_string()),
                (1, "a_b_c_d".to_string())
            ]
        );
        assert_eq!(transcript_lines(page), [4]);
    }

    /// Each expected id is what mdBook 0.5.4 generated for the same page.
    #[test]
    fn heading_ids_follow_mdbook() {
        let page = "# Lesson 3: coroutines\n\
                    ## The `Fetcher` struct\n\
                    ## Why *not* threads?\n\
                    ## `seen_urls` and _emphasis_\n\
                    ## Lessons 1--4 compared\n\
                    ## [A link](x.md) and ![an image](y.svg)\n\
                    ## Custom {#my-id .class}\n\
                    ## Closing hashes ##\n\
                    ## The `Fetcher` struct\n\
                    ## &amp; &lt;tags&gt; <em>html</em>\n\
                    Setext heading\n\
                    --------------\n\
                    ```text\n\
                    # not a heading, in code\n\
                    ```\n\
                    - a list item\n\
                    ---\n\
                    ## The pool -- and its `Queue`\n\
                    ## `lesson1-threadpool` → `lesson2-callbacks`: **the** diff\n\
                    ## __init__ and snake_case_name and a_b\n\
                    ## \"Quoted\" and it's... done\n";
        assert_eq!(
            heading_ids(page, true),
            [
                "lesson-3-coroutines",
                "the-fetcher-struct",
                "why-not-threads",
                "seen_urls-and-emphasis",
                "lessons-14-compared",
                "a-link-and",
                "my-id",
                "closing-hashes",
                "the-fetcher-struct-1",
                "-tags-html",
                "setext-heading",
                "the-pool--and-its-queue",
                "lesson1-threadpool--lesson2-callbacks-the-diff",
                "init-and-snake_case_name-and-a_b",
                "quoted-and-its-done",
            ]
        );
        assert_eq!(heading_ids("## 1--4\n", false), ["1--4"]);
    }

    #[test]
    fn links_in_code_and_comments_are_not_links() {
        let page = "See [lesson 2](lesson2.md#the-loop) and ![chart](img/chart.svg \"Chart\").\n\
                    `[not](a.md)` and ``[nor `this`](b.md)``\n\
                    <!-- [hidden](c.md) -->\n\
                    ```rust\n\
                    let x = [1](d.md);\n\
                    ```\n\
                    [ref]: reference.md\n\
                    [^note]: a footnote, not a link\n\
                    <a href=\"html.md\">x</a> [nested ![img](in.svg)](outer.md)\n\
                    \\[escaped](e.md) [text] (f.md) [<angled>](<g h.md>)\n\
                    A [wrapped\n\
                    link](wrapped.md) and a [use of the reference][ref].\n";
        let found: Vec<(usize, String)> =
            links(page).into_iter().map(|l| (l.line, l.dest)).collect();
        assert_eq!(
            found,
            [
                (1, "lesson2.md#the-loop".to_string()),
                (1, "img/chart.svg".to_string()),
                (7, "reference.md".to_string()),
                (9, "html.md".to_string()),
                (9, "outer.md".to_string()),
                (9, "in.svg".to_string()),
                (10, "g h.md".to_string()),
                (12, "wrapped.md".to_string()),
            ]
        );
    }
}
