//! Just enough Markdown to find a chapter's links and its headings' ids.
//!
//! This is not a Markdown parser. It knows the few things that decide
//! whether a `[text](target)` is a link or text that looks like one —
//! fenced code blocks, inline code spans, HTML comments — and how mdBook
//! turns a heading into the `id` a `#fragment` must name. What it gets wrong
//! on exotic input errs towards reporting a link that is not there, which a
//! reader of the report can see at once, rather than missing a broken one.

use std::sync::LazyLock;

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

/// For each line of `text`, whether it belongs to a fenced code block (the
/// fence lines included). Fences may be indented (inside list items) and
/// use backticks or tildes; a block closes at a fence of the same character
/// at least as long, or at the end of the file.
pub fn fenced_lines(text: &str) -> Vec<bool> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let fence_char = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = fence_char.map_or(0, |c| trimmed.chars().take_while(|x| *x == c).count());
        match (open, fence_char) {
            (None, Some(c)) if run >= 3 => {
                // A backtick fence's info string cannot hold a backtick
                // (that line would be inline code instead).
                let info = &trimmed[run..];
                if c == '~' || !info.contains('`') {
                    open = Some((c, run));
                }
                out.push(open.is_some());
            }
            (Some((c, len)), Some(f))
                if f == c && run >= len && trimmed[run..].trim().is_empty() =>
            {
                open = None;
                out.push(true);
            }
            _ => out.push(open.is_some()),
        }
    }
    out
}

/// `text` with everything that is not prose blanked out: fenced code
/// blocks, HTML comments and inline code spans become spaces (newlines are
/// kept, so positions still give the right line number).
pub fn prose(text: &str) -> String {
    let fenced = fenced_lines(text);
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if fenced.get(i).copied().unwrap_or(false) {
            out.extend(line.chars().map(blank));
        } else {
            out.push_str(line);
        }
    }
    let out = blank_between(&out, "<!--", "-->");
    blank_code_spans(&out)
}

/// A space for any character but a newline.
fn blank(c: char) -> char {
    if c == '\n' {
        '\n'
    } else {
        ' '
    }
}

/// Blanks every `open … close` region (both included).
fn blank_between(text: &str, open: &str, close: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let end = after
            .get(open.len()..)
            .and_then(|a| a.find(close))
            .map_or(after.len(), |i| open.len() + i + close.len());
        out.extend(after[..end].chars().map(blank));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Blanks inline code spans: a run of N backticks up to the next run of
/// exactly N, within one paragraph (a blank line ends the search). A run
/// with no partner is literal backticks, as CommonMark says.
fn blank_code_spans(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2; // an escaped backtick opens nothing
            continue;
        }
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let run = bytes[i..].iter().take_while(|b| **b == b'`').count();
        let mut j = i + run;
        let mut close = None;
        while j < bytes.len() {
            if bytes[j] == b'\n'
                && text[j + 1..]
                    .trim_start_matches([' ', '\t'])
                    .starts_with('\n')
            {
                break; // paragraph ends
            }
            if bytes[j] == b'`' {
                let other = bytes[j..].iter().take_while(|b| **b == b'`').count();
                if other == run {
                    close = Some(j + other);
                    break;
                }
                j += other;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                out.push_str(&text[copied..i]);
                out.extend(text[i..end].chars().map(blank));
                copied = end;
                i = end;
            }
            None => i += run,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// 1-based line number of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// Reference definitions: `[label]: target` at the start of a line.
static REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^ {0,3}\[([^\]\n]+)\]:[ \t]*(<[^>\n]*>|\S+)").expect("constant regex")
});

/// `href` and `src` attributes in raw HTML.
static HTML_TARGET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"<(?:a|img|source)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']*)["']"#)
        .expect("constant regex")
});

/// Every link and image target in the prose of `text`: inline links and
/// images, reference definitions, and `href`/`src` in HTML tags.
pub fn links(text: &str) -> Vec<Link> {
    let prose = prose(text);
    let bytes = prose.as_bytes();
    let mut out = Vec::new();
    for (open, _) in prose.match_indices('[') {
        if open > 0 && bytes[open - 1] == b'\\' {
            continue;
        }
        // The matching `]`, allowing brackets nested inside the text.
        let mut depth = 0;
        let mut close = None;
        let mut k = open;
        while k < bytes.len() {
            match bytes[k] {
                b'\\' => k += 1,
                b'[' => depth += 1,
                b']' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(k);
                        break;
                    }
                }
                _ => {}
            }
            k += 1;
        }
        let Some(close) = close else { continue };
        if bytes.get(close + 1) != Some(&b'(') {
            continue;
        }
        if let Some((start, dest)) = destination(&prose, close + 2) {
            out.push(Link {
                line: line_of(&prose, start),
                dest,
            });
        }
    }
    for cap in REFERENCE.captures_iter(&prose) {
        if cap[1].starts_with('^') {
            continue; // a footnote, not a link
        }
        let dest = &cap[2];
        let dest = dest
            .strip_prefix('<')
            .and_then(|d| d.strip_suffix('>'))
            .unwrap_or(dest);
        let at = cap.get(2).map_or(0, |m| m.start());
        out.push(Link {
            line: line_of(&prose, at),
            dest: dest.to_string(),
        });
    }
    for cap in HTML_TARGET.captures_iter(&prose) {
        let at = cap.get(1).map_or(0, |m| m.start());
        out.push(Link {
            line: line_of(&prose, at),
            dest: cap[1].to_string(),
        });
    }
    out.sort_by_key(|l| l.line);
    out
}

/// The destination of an inline link whose `(` ends just before `from`:
/// `<…>` or a run without spaces in which parentheses balance. `None` when
/// the parenthesis is never closed (then it was not a link).
fn destination(text: &str, from: usize) -> Option<(usize, String)> {
    let rest = &text[from..];
    let skipped = rest.len() - rest.trim_start().len();
    let start = from + skipped;
    let rest = &text[start..];
    if let Some(angled) = rest.strip_prefix('<') {
        let end = angled.find(['>', '\n'])?;
        return Some((start, angled[..end].to_string()));
    }
    let mut depth = 0;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some((start, rest[..i].to_string())),
            ')' => depth -= 1,
            c if c.is_whitespace() => {
                // A title may follow: `(x.md "Title")`. The target ends here.
                return Some((start, rest[..i].to_string()));
            }
            _ => {}
        }
    }
    None
}

/// An ATX heading: `## text`, with optional closing `#`s.
static ATX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$").expect("constant regex")
});

/// A setext underline: `===` or `---` under a paragraph line.
static SETEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ {0,3}(?:=+|-+)[ \t]*$").expect("constant regex"));

/// A line that starts a list item, quote, table row or HTML block, which a
/// `---` below does not turn into a heading.
static NOT_PARAGRAPH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:[-*+][ \t]|\d+[.)][ \t]|>|\||<|#)").expect("constant regex")
});

/// The ids mdBook gives the headings of a page, in order: from the heading
/// text (or a `{#id}` attribute), made unique with `-1`, `-2`… suffixes.
/// `smart_punctuation` is mdBook's option of that name (on by default): it
/// turns `--` and `---` into dashes, which then do not survive in the id.
pub fn heading_ids(text: &str, smart_punctuation: bool) -> Vec<String> {
    let fenced = fenced_lines(text);
    let prose_lines: Vec<&str> = text.lines().collect();
    let mut used = std::collections::HashSet::new();
    let mut ids = Vec::new();
    let mut previous: Option<&str> = None;
    for (i, line) in prose_lines.iter().enumerate() {
        if fenced.get(i).copied().unwrap_or(false) {
            previous = None;
            continue;
        }
        let heading = if let Some(cap) = ATX.captures(line) {
            let mut content = cap.get(2).map_or("", |m| m.as_str()).to_string();
            // Closing hashes: `## Title ##`.
            let stripped = content.trim_end_matches('#');
            if stripped.is_empty() || stripped.ends_with([' ', '\t']) {
                content = stripped.trim_end().to_string();
            }
            Some(content)
        } else if SETEXT.is_match(line) {
            previous
                .filter(|p| !p.trim().is_empty() && !NOT_PARAGRAPH.is_match(p))
                .map(str::to_string)
        } else {
            None
        };
        previous = Some(line);
        let Some(content) = heading else { continue };
        let (content, custom) = split_attributes(&content);
        match custom {
            // An explicit id is used as is and does not take part in
            // making the others unique.
            Some(id) => ids.push(id),
            None => {
                let base = id_from_content(&plain_text(content, smart_punctuation));
                ids.push(unique_id(&base, &mut used));
            }
        }
    }
    ids
}

/// mdBook's `unique_id`: the id itself the first time, then `id-1`, `id-2`…
fn unique_id(id: &str, used: &mut std::collections::HashSet<String>) -> String {
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

/// Splits a trailing `{#id .class}` attribute block off a heading (mdBook
/// enables pulldown-cmark's heading attributes), returning the id if any.
fn split_attributes(content: &str) -> (&str, Option<String>) {
    let trimmed = content.trim_end();
    if let (true, Some(open)) = (trimmed.ends_with('}'), trimmed.rfind('{')) {
        let inner = &trimmed[open + 1..trimmed.len() - 1];
        let id = inner
            .split_whitespace()
            .find_map(|t| t.strip_prefix('#'))
            .map(str::to_string);
        return (trimmed[..open].trim_end(), id);
    }
    (trimmed, None)
}

/// The text a heading renders to, which is what mdBook makes its id from:
/// code spans verbatim, link text without the target, no image (its alt
/// text is an attribute), no HTML tags, no emphasis markers, escapes and
/// common entities resolved.
pub fn plain_text(inline: &str, smart_punctuation: bool) -> String {
    let chars: Vec<char> = inline.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if chars.get(i + 1).is_some_and(|n| n.is_ascii_punctuation()) => {
                out.push(chars[i + 1]);
                i += 2;
            }
            '`' => {
                let run = chars[i..].iter().take_while(|x| **x == '`').count();
                let body_start = i + run;
                let close = (body_start..chars.len()).find(|&j| {
                    chars[j..].iter().take_while(|x| **x == '`').count() == run
                        && (j == 0 || chars[j - 1] != '`')
                });
                match close {
                    Some(end) => {
                        let body: String = chars[body_start..end].iter().collect();
                        // CommonMark strips one space from each side of a
                        // code span that has them and is not all spaces.
                        let body = if body.len() >= 2
                            && body.starts_with(' ')
                            && body.ends_with(' ')
                            && !body.trim().is_empty()
                        {
                            body[1..body.len() - 1].to_string()
                        } else {
                            body
                        };
                        out.push_str(&body);
                        i = end + run;
                    }
                    None => {
                        out.extend(&chars[i..body_start]);
                        i = body_start;
                    }
                }
            }
            '!' if chars.get(i + 1) == Some(&'[') => {
                // An image: no text at all.
                i = skip_link(&chars, i + 1).unwrap_or(i + 1);
            }
            '[' => match link_text_end(&chars, i) {
                Some(close) => {
                    let text: String = chars[i + 1..close].iter().collect();
                    out.push_str(&plain_text(&text, smart_punctuation));
                    i = skip_link(&chars, i).unwrap_or(close + 1);
                }
                None => {
                    out.push('[');
                    i += 1;
                }
            },
            '<' => {
                let end = chars[i..].iter().position(|x| *x == '>').map(|p| i + p);
                let inner: String = end.map_or(String::new(), |e| chars[i + 1..e].iter().collect());
                match end {
                    // An autolink shows its URL.
                    Some(e) if inner.contains(':') && !inner.contains(' ') => {
                        out.push_str(&inner);
                        i = e + 1;
                    }
                    // A tag: dropped, its contents stay.
                    Some(e) if inner.starts_with(|x: char| x.is_ascii_alphabetic() || x == '/') => {
                        i = e + 1;
                    }
                    _ => {
                        out.push('<');
                        i += 1;
                    }
                }
            }
            '&' => {
                let end = chars[i..].iter().take(10).position(|x| *x == ';');
                let entity: Option<String> = end.map(|e| chars[i + 1..i + e].iter().collect());
                match entity.as_deref().and_then(decode_entity) {
                    Some(decoded) => {
                        out.push(decoded);
                        i += end.unwrap_or(0) + 1;
                    }
                    None => {
                        out.push('&');
                        i += 1;
                    }
                }
            }
            '*' | '~' => i += 1,
            '_' => {
                // `_` is emphasis at a word's edge; inside a word
                // (`seen_urls`) it is a letter, and survives into the id.
                let before = i > 0 && chars[i - 1].is_alphanumeric();
                let after = chars.get(i + 1).is_some_and(|x| x.is_alphanumeric());
                if before && after {
                    out.push('_');
                }
                i += 1;
            }
            '-' if smart_punctuation && chars.get(i + 1) == Some(&'-') => {
                // `--` and `---` become dashes, which an id drops.
                i += chars[i..].iter().take_while(|x| **x == '-').count().min(3);
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Index of the `]` closing the `[` at `open`, with nesting.
fn link_text_end(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut k = open;
    while k < chars.len() {
        match chars[k] {
            '\\' => k += 1,
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
        k += 1;
    }
    None
}

/// Index just past a whole link `[text](target)` or `[text][ref]` starting
/// at `open`.
fn skip_link(chars: &[char], open: usize) -> Option<usize> {
    let close = link_text_end(chars, open)?;
    let (opener, closer) = match chars.get(close + 1) {
        Some('(') => ('(', ')'),
        Some('[') => ('[', ']'),
        _ => return Some(close + 1),
    };
    let mut depth = 0;
    for (k, c) in chars.iter().enumerate().skip(close + 1) {
        if *c == opener {
            depth += 1;
        } else if *c == closer {
            depth -= 1;
            if depth == 0 {
                return Some(k + 1);
            }
        }
    }
    Some(close + 1)
}

/// The character an HTML entity name (between `&` and `;`) stands for.
fn decode_entity(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some('\u{a0}'),
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    \\[escaped](e.md) [text] (f.md) [<angled>](<g h.md>)\n";
        let found: Vec<(usize, String)> =
            links(page).into_iter().map(|l| (l.line, l.dest)).collect();
        assert_eq!(
            found,
            [
                (1, "lesson2.md#the-loop".to_string()),
                (1, "img/chart.svg".to_string()),
                (7, "reference.md".to_string()),
                (9, "outer.md".to_string()),
                (9, "in.svg".to_string()),
                (9, "html.md".to_string()),
                (10, "g h.md".to_string()),
            ]
        );
    }

    #[test]
    fn fences_close_on_a_matching_fence_only() {
        let page = "a\n````\n```\nstill code\n````\nb\n~~~\nc\n";
        assert_eq!(
            fenced_lines(page),
            [false, true, true, true, true, false, true, true]
        );
    }

    #[test]
    fn a_code_span_may_wrap_but_not_cross_a_paragraph() {
        assert_eq!(prose("a `x\ny` b"), "a   \n   b");
        assert_eq!(prose("a `x\n\ny` b"), "a `x\n\ny` b");
    }
}
