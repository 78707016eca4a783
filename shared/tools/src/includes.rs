//! mdBook's `{{#include …}}` family: finding them, checking what they point
//! at, and expanding them the way mdBook does.
//!
//! mdBook is forgiving in exactly the way that hurts a course: an include
//! of a missing file leaves the raw `{{#include …}}` text in the page, an
//! anchor that is not in the file includes *nothing*, an anchor without its
//! `ANCHOR_END` includes the rest of the file, and a name that appears
//! twice includes only the first region. The book builds either way, with a
//! warning at best; the reader gets an empty or wrong listing. Every one of
//! those is an error here. The rules below are mdbook-driver 0.5's
//! (`links.rs`, `take_lines.rs`), so what is checked is what mdBook does.

use std::fs;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

/// mdBook's helper pattern: `\{{#…}}` (escaped, shown literally) or
/// `{{#type args}}`. The arguments may span lines.
static HELPER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\\{\{\#.*\}\}|\{\{\s*\#([a-zA-Z0-9_]+)\s+([^}]+)\}\}").expect("constant regex")
});

/// An anchor's start line, as mdBook finds it anywhere in a line.
static ANCHOR_START: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"ANCHOR:\s*([\w_-]+)").expect("constant regex"));

/// An anchor's end line.
static ANCHOR_END: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"ANCHOR_END:\s*([\w_-]+)").expect("constant regex"));

/// How much of a file a helper takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// All of it.
    Whole,
    /// Lines `start..end`, 0-based, end exclusive; `None` is open.
    Lines(Option<usize>, Option<usize>),
    /// The lines between `ANCHOR: name` and `ANCHOR_END: name`.
    Anchor(String),
}

/// One `{{#…}}` helper in a page.
#[derive(Debug, PartialEq, Eq)]
pub struct Helper {
    /// 1-based line where it starts.
    pub line: usize,
    /// `include`, `rustdoc_include`, `playground`, `title`, or whatever
    /// was typed (an unknown type is an error: mdBook shows it as text).
    pub kind: String,
    /// The file, relative to the page's folder (empty for `title`).
    pub path: String,
    /// Which part of the file.
    pub part: Part,
    /// The helper as written, for messages.
    pub text: String,
}

/// The kinds mdBook expands. `playpen` is the old name of `playground`.
pub const KNOWN_KINDS: [&str; 5] = [
    "include",
    "rustdoc_include",
    "playground",
    "playpen",
    "title",
];

/// Every helper in `text` that mdBook would act on (escaped ones excluded).
pub fn helpers(text: &str) -> Vec<Helper> {
    let mut out = Vec::new();
    for cap in HELPER.captures_iter(text) {
        let (Some(all), Some(kind), Some(args)) = (cap.get(0), cap.get(1), cap.get(2)) else {
            continue; // escaped
        };
        let kind = kind.as_str().to_string();
        let file_arg = args.as_str().split_whitespace().next().unwrap_or("");
        let (path, part) = match kind.as_str() {
            "include" | "rustdoc_include" => match file_arg.split_once(':') {
                Some((path, rest)) => (path.to_string(), parse_part(rest)),
                None => (file_arg.to_string(), Part::Whole),
            },
            "title" => (String::new(), Part::Whole),
            _ => (file_arg.to_string(), Part::Whole),
        };
        out.push(Helper {
            line: text[..all.start()].matches('\n').count() + 1,
            kind,
            path,
            part,
            text: all.as_str().to_string(),
        });
    }
    out
}

/// mdBook's `parse_range_or_anchor`: `10` is one line, `10:20` a range,
/// `:20` or `10:` half-open, anything that is not a number an anchor.
fn parse_part(spec: &str) -> Part {
    let mut parts = spec.splitn(3, ':');
    let first = parts.next().unwrap_or("");
    let start = match first.parse::<usize>() {
        Ok(n) => Some(n.saturating_sub(1)),
        Err(_) if first.is_empty() => None,
        Err(_) => return Part::Anchor(first.to_string()),
    };
    let end = parts.next().map(|s| s.parse::<usize>());
    match (start, end) {
        (Some(s), Some(Ok(e))) => Part::Lines(Some(s), Some(e)),
        (Some(s), Some(Err(_))) => Part::Lines(Some(s), None),
        (Some(s), None) => Part::Lines(Some(s), Some(s + 1)),
        (None, Some(Ok(e))) => Part::Lines(None, Some(e)),
        (None, _) => Part::Whole,
    }
}

/// What is wrong with taking `part` of `content`, if anything. A part that
/// comes out empty is wrong too: mdBook would show an empty listing.
pub fn part_problem(content: &str, part: &Part) -> Option<String> {
    match part {
        Part::Whole => content
            .trim()
            .is_empty()
            .then(|| "the file is empty".to_string()),
        Part::Lines(start, end) => {
            let lines = content.lines().count();
            let s = start.unwrap_or(0);
            let e = end.unwrap_or(lines);
            if s >= lines {
                Some(format!(
                    "starts at line {} but the file has {lines} lines",
                    s + 1
                ))
            } else if e <= s {
                Some("the line range is empty".to_string())
            } else {
                None
            }
        }
        Part::Anchor(name) => anchor_problem(content, name),
    }
}

/// Checks that anchor `name` starts once, ends once after its start, and
/// holds something.
fn anchor_problem(content: &str, name: &str) -> Option<String> {
    let mut starts = Vec::new();
    let mut ends = Vec::new();
    for (i, line) in content.lines().enumerate() {
        if ANCHOR_END.captures(line).is_some_and(|c| &c[1] == name) {
            ends.push(i + 1);
        } else if ANCHOR_START.captures(line).is_some_and(|c| &c[1] == name) {
            starts.push(i + 1);
        }
    }
    let list = |v: &[usize]| {
        v.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (starts.as_slice(), ends.as_slice()) {
        ([], _) => Some(format!("no `ANCHOR: {name}`")),
        ([_, _, ..], _) => Some(format!(
            "`ANCHOR: {name}` appears {} times (lines {}); mdBook takes only the first",
            starts.len(),
            list(&starts)
        )),
        (_, []) => Some(format!(
            "`ANCHOR: {name}` has no `ANCHOR_END: {name}`; mdBook would take the rest of the file"
        )),
        (_, [_, _, ..]) => Some(format!(
            "`ANCHOR_END: {name}` appears {} times (lines {})",
            ends.len(),
            list(&ends)
        )),
        ([start], [end]) if end < start => Some(format!(
            "`ANCHOR_END: {name}` (line {end}) comes before `ANCHOR: {name}` (line {start})"
        )),
        _ => take_anchored(content, name)
            .trim()
            .is_empty()
            .then(|| format!("anchor `{name}` holds nothing")),
    }
}

/// mdBook's `take_anchored_lines`: the lines inside the anchor, minus any
/// line that is itself an anchor comment.
fn take_anchored(content: &str, name: &str) -> String {
    let lines: Vec<&str> = content.lines().collect();
    anchored_lines(content, name)
        .into_iter()
        .map(|i| lines[i])
        .collect::<Vec<_>>()
        .join("\n")
}

/// The 0-based numbers of the lines `take_anchored` keeps.
fn anchored_lines(content: &str, name: &str) -> Vec<usize> {
    let mut kept = Vec::new();
    let mut inside = false;
    for (i, line) in content.lines().enumerate() {
        if inside {
            match ANCHOR_END.captures(line) {
                Some(c) if &c[1] == name => break,
                Some(_) => {}
                None if ANCHOR_START.is_match(line) => {}
                None => kept.push(i),
            }
        } else if ANCHOR_START.captures(line).is_some_and(|c| &c[1] == name) {
            inside = true;
        }
    }
    kept
}

/// The 0-based numbers of the lines of `content` that `part` takes, in
/// order: where each line of an included listing comes from, so that a
/// listing can be matched with the functions whose bodies it shows.
pub fn taken_lines(content: &str, part: &Part) -> Vec<usize> {
    let count = content.lines().count();
    match part {
        Part::Whole => (0..count).collect(),
        Part::Lines(start, end) => {
            let s = start.unwrap_or(0);
            let e = end.unwrap_or(count).min(count);
            (s..e.max(s)).collect()
        }
        Part::Anchor(name) => anchored_lines(content, name),
    }
}

/// The part of `content` a helper takes, as mdBook's `take_lines`.
fn take(content: &str, part: &Part) -> String {
    match part {
        // mdBook keeps a whole file as it is, final newline included.
        Part::Whole => content.to_string(),
        _ => {
            let lines: Vec<&str> = content.lines().collect();
            taken_lines(content, part)
                .into_iter()
                .map(|i| lines[i])
                .collect::<Vec<_>>()
                .join("\n")
        }
    }
}

/// `text` (a page in folder `dir`) with its helpers expanded as mdBook
/// expands them, nested up to mdBook's depth of 10. A helper that fails is
/// left as written, as mdBook leaves it. Used to find the headings a page
/// really has, some of which may come from included files.
pub fn expand(text: &str, dir: &Path, depth: usize) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for cap in HELPER.captures_iter(text) {
        let Some(all) = cap.get(0) else { continue };
        out.push_str(&text[last..all.start()]);
        last = all.end();
        let Some(found) = helpers(all.as_str()).pop() else {
            out.push_str(&all.as_str()[1..]); // escaped: drop the backslash
            continue;
        };
        let target = dir.join(&found.path);
        let content = match found.kind.as_str() {
            "title" => Some(String::new()),
            "include" | "rustdoc_include" => fs::read_to_string(&target)
                .ok()
                .map(|c| take(&c, &found.part)),
            "playground" | "playpen" => fs::read_to_string(&target)
                .ok()
                .map(|c| format!("```rust\n{c}\n```\n")),
            _ => None,
        };
        match content {
            Some(c) if depth < 10 => {
                let inner_dir = target.parent().unwrap_or(dir);
                out.push_str(&expand(&c, inner_dir, depth + 1));
            }
            Some(c) => out.push_str(&c),
            None => out.push_str(all.as_str()),
        }
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_are_parsed_as_mdbook_parses_them() {
        // mdBook's escaped form is greedy to the line's last `}}`, so the
        // `hidden.rs` include after an escaped one is not a helper either.
        let page = "```rust\n{{#include ../src/a.rs:fetch}}\n```\n\
                    {{#include b.rs}} {{#include c.rs:3}} {{#include c.rs:3:5}}\n\
                    {{#rustdoc_include d.rs:10:}} {{ #include e.rs::7 }}\n\
                    {{#playground p.rs editable}} \\{{#include escaped.rs}} {{#include hidden.rs}}\n\
                    {{#title Custom}} {{#inclde typo.rs}}\n";
        let all = helpers(page);
        let found: Vec<(usize, &str, &str, Part)> = all
            .iter()
            .map(|h| (h.line, h.kind.as_str(), h.path.as_str(), h.part.clone()))
            .collect();
        assert_eq!(
            found,
            [
                (2, "include", "../src/a.rs", Part::Anchor("fetch".into())),
                (4, "include", "b.rs", Part::Whole),
                (4, "include", "c.rs", Part::Lines(Some(2), Some(3))),
                (4, "include", "c.rs", Part::Lines(Some(2), Some(5))),
                (5, "rustdoc_include", "d.rs", Part::Lines(Some(9), None)),
                (5, "include", "e.rs", Part::Lines(None, Some(7))),
                (6, "playground", "p.rs", Part::Whole),
                (7, "title", "", Part::Whole),
                (7, "inclde", "typo.rs", Part::Whole),
            ]
        );
    }

    #[test]
    fn anchors_must_start_once_end_once_and_hold_something() {
        let good = "a\n// ANCHOR: fetch\nfn fetch() {}\n// ANCHOR_END: fetch\n";
        assert_eq!(part_problem(good, &Part::Anchor("fetch".into())), None);
        // `fetch_all` is a different anchor, not a second `fetch`.
        let prefix = format!("{good}// ANCHOR: fetch_all\nx\n// ANCHOR_END: fetch_all\n");
        assert_eq!(part_problem(&prefix, &Part::Anchor("fetch".into())), None);

        let cases = [
            ("x\n", "no `ANCHOR: fetch`"),
            (
                "// ANCHOR: fetch\na\n// ANCHOR_END: fetch\n// ANCHOR: fetch\nb\n// ANCHOR_END: fetch\n",
                "appears 2 times (lines 1, 4)",
            ),
            ("// ANCHOR: fetch\na\n", "has no `ANCHOR_END: fetch`"),
            (
                "// ANCHOR: fetch\na\n// ANCHOR_END: fetch\n// ANCHOR_END: fetch\n",
                "`ANCHOR_END: fetch` appears 2 times",
            ),
            ("// ANCHOR_END: fetch\n// ANCHOR: fetch\n", "comes before"),
            ("// ANCHOR: fetch\n\n// ANCHOR_END: fetch\n", "holds nothing"),
        ];
        for (content, expected) in cases {
            let problem = part_problem(content, &Part::Anchor("fetch".into()));
            assert!(
                problem.as_deref().is_some_and(|p| p.contains(expected)),
                "{content:?}: {problem:?}"
            );
        }
    }

    #[test]
    fn line_ranges_must_fall_inside_the_file() {
        let three = "a\nb\nc\n";
        assert_eq!(part_problem(three, &Part::Lines(Some(2), Some(3))), None);
        assert!(part_problem(three, &Part::Lines(Some(3), None))
            .is_some_and(|p| p.contains("the file has 3 lines")));
        assert!(part_problem(three, &Part::Lines(Some(2), Some(1))).is_some());
        assert!(part_problem("", &Part::Whole).is_some());
    }

    #[test]
    fn anchored_lines_drop_other_anchor_comments() {
        let text =
            "// ANCHOR: all\na\n// ANCHOR: inner\nb\n// ANCHOR_END: inner\nc\n// ANCHOR_END: all\n";
        assert_eq!(take_anchored(text, "all"), "a\nb\nc");
        assert_eq!(take(text, &Part::Lines(Some(1), Some(2))), "a");
    }
}
