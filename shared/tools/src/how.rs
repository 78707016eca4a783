//! Problem first, explanation after: what building mode may show of how
//! the lesson does its job.
//!
//! A learner who builds a lesson from its starter designs each blanked
//! function from its goal. Prose that says how the lesson's own code does
//! it (which flag is cleared first, which guard wakes whom) hands them the
//! design as surely as the listing would. So the chapters fold that prose
//! with the listing, in `<div class="lesson-how">`, which building mode
//! (`docs/theme/building.js`) folds behind "How the lesson does it", to be
//! opened once the learner's own attempt passes. What stays in view is the
//! problem (what goes wrong without the mechanism), the goal and what must
//! hold, the concepts and the API.
//!
//! Two rules make that checkable, and `book-check` holds the chapters to
//! them ([`problems`]):
//!
//! 1. **The code and what follows it fold together.** Every listing of
//!    blanked code (`lesson-code`) sits inside a `lesson-how`, and from a
//!    section's first `lesson-how` to its next heading nothing is left
//!    outside one. A section therefore reads problem first, then one fold
//!    with the answer: the explanation of a listing, which is what comes
//!    after it, cannot stay in view.
//! 2. **In view, a blanked function is a goal, not a mechanism.** A
//!    sentence outside the folds may name a function the starter blanks
//!    (`` `get` ``, `` `Queue::get` ``, a guard's type), but not as the
//!    subject of a verb that says what it does (`` `get` waits on … ``,
//!    `` `step` clears … ``): what must hold is said with *must* (or
//!    *should*, *may*, *can*, *cannot*), and how it is done is folded.
//!
//! The contracts written for builders (`building-along`, the generated
//! stage boxes) state goals and are not held to rule 2.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use regex::Regex;

use starter::blank::FnPath;

/// The line that opens an explanation fold, alone on its line.
pub const HOW_OPEN: &str = r#"<div class="lesson-how">"#;

/// A `<div class="…">` block of a chapter: its class and 0-based lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Its class attribute.
    pub class: String,
    /// 0-based line of `<div …>`.
    pub open: usize,
    /// 0-based line of its `</div>`.
    pub close: usize,
}

static DIV_OPEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^<div class="([^"]*)">$"#).expect("constant regex"));

/// The `<div class="…">` blocks of `text` whose opening and closing tags
/// stand alone on their lines (as the chapters write them), nested ones
/// included, outside fenced code. An unclosed one runs to the end.
pub fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut fence: Option<String> = None;
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if let Some(f) = &fence {
            if t.starts_with(f.as_str()) && t.trim_start_matches(['`', '~']).trim().is_empty() {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            let marks: String = t.chars().take_while(|c| *c == '`' || *c == '~').collect();
            fence = Some(marks);
            continue;
        }
        if let Some(c) = DIV_OPEN.captures(t) {
            open.push((c[1].to_string(), i));
        } else if t == "</div>" {
            if let Some((class, at)) = open.pop() {
                out.push(Block {
                    class,
                    open: at,
                    close: i,
                });
            }
        }
    }
    for (class, at) in open {
        out.push(Block {
            class,
            open: at,
            close: lines.len().saturating_sub(1),
        });
    }
    out.sort_by_key(|b| b.open);
    out
}

/// The names under which prose can name the blanked function `spec`
/// (`queue.rs: Queue::get`): `get`, `Queue::get`, and for a trait's method
/// (a guard's `Drop`) the type itself, `TaskDone`.
pub fn names(spec: &str) -> Vec<String> {
    let Ok(path) = FnPath::parse(spec) else {
        return Vec::new();
    };
    let mut out = vec![path.name.clone()];
    if let Some(ty) = &path.type_name {
        out.push(format!("{ty}::{}", path.name));
        if path.trait_name.is_some() {
            out.push(ty.clone());
        }
    }
    out
}

/// Words that may come between a function's name and its verb without
/// changing what the sentence says of it.
const ADVERBS: &[&str] = &[
    "also",
    "then",
    "first",
    "only",
    "now",
    "just",
    "simply",
    "never",
    "always",
    "itself",
    "still",
    "already",
    "therefore",
    "thus",
    "in",
    "turn",
    "again",
    "instead",
    "so",
];

/// Words before a name that make it someone else's function: the original's
/// (asyncio, Python, the tutorial), the standard library's, another lesson's.
const OTHERS: &[&str] = &[
    "asyncio's",
    "python's",
    "tutorial's",
    "std's",
    "mio's",
    "tokio's",
    "blocking",
    "parser's",
    "1's",
    "2's",
    "3's",
    "4's",
    "os's",
    "kernel's",
];

/// Verbs that say what must hold rather than how it is done, and words
/// ending in `s` that are not verbs.
const GOAL_WORDS: &[&str] = &[
    "must", "should", "may", "can", "cannot", "might", "needs", "has", "its", "this", "was", "as",
    "is", "does", "gets", "us", "yours",
];

/// One sentence of visible prose that names a blanked function as the
/// subject of what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Telling {
    /// 1-based line of its paragraph.
    pub line: usize,
    /// The name as written, without backticks.
    pub name: String,
    /// The verb that says what it does.
    pub verb: String,
    /// The sentence.
    pub sentence: String,
}

/// The code spans that name a function: `` `get` ``, `` `get()` ``,
/// `` `Queue::get(…)` ``, `` `self.get` ``.
fn named(code: &str) -> &str {
    let code = code.trim();
    let code = code.split('(').next().unwrap_or(code);
    code.trim_start_matches("self.")
}

/// The sentences of visible prose (outside `hidden` 0-based line ranges)
/// in `text` that tell how one of `functions` (stage-list specs) does its
/// job, by rule 2 of the module.
pub fn tellings(text: &str, functions: &[String], hidden: &[(usize, usize)]) -> Vec<Telling> {
    let wanted: BTreeSet<String> = functions.iter().flat_map(|f| names(f)).collect();
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count();
    let is_hidden = |line: usize| hidden.iter().any(|&(a, b)| a <= line && line <= b);
    // Each block of prose as text, code spans kept in backticks.
    let mut blocks: Vec<(usize, String)> = Vec::new();
    let mut current: Option<(usize, String)> = None;
    let mut in_heading = false;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => in_heading = true,
            Event::End(TagEnd::Heading(_)) => in_heading = false,
            Event::Start(Tag::Paragraph | Tag::TableCell | Tag::Item) => {
                if let Some(block) = current.take() {
                    blocks.push(block);
                }
                current = Some((line_of(range.start), String::new()));
            }
            Event::End(TagEnd::Paragraph | TagEnd::TableCell | TagEnd::Item) => {
                if let Some(block) = current.take() {
                    blocks.push(block);
                }
            }
            Event::Text(t) if !in_heading => {
                if let Some((_, s)) = current.as_mut() {
                    s.push_str(&t);
                }
            }
            Event::Code(c) if !in_heading => {
                if let Some((_, s)) = current.as_mut() {
                    s.push('`');
                    s.push_str(&c);
                    s.push('`');
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, s)) = current.as_mut() {
                    s.push(' ');
                }
            }
            _ => {}
        }
    }
    if let Some(block) = current.take() {
        blocks.push(block);
    }
    static SENTENCE_END: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[.!?:;]\s+").expect("constant regex"));
    static SPAN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"`([^`]+)`((?:'s)?)\s+((?:[A-Za-z]+\s+){0,3})").expect("constant regex")
    });
    let mut out = Vec::new();
    for (line, block) in blocks {
        if is_hidden(line) {
            continue;
        }
        // Split outside code spans only: a span may hold a `.`.
        let mut sentences = Vec::new();
        let mut start = 0;
        let mut in_code = false;
        let bytes = block.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'`' {
                in_code = !in_code;
            } else if !in_code
                && SENTENCE_END
                    .find_at(&block, i)
                    .is_some_and(|m| m.start() == i)
            {
                sentences.push(&block[start..=i]);
                start = i + 1;
            }
        }
        sentences.push(&block[start..]);
        for sentence in sentences {
            for c in SPAN.captures_iter(sentence) {
                let name = named(&c[1]);
                if !wanted.contains(name) || !c[2].is_empty() {
                    continue;
                }
                // Another's function of that name (asyncio's `sleep`, a
                // blocking `connect`) is a concept, not the learner's design.
                let before = sentence[..c.get(0).map_or(0, |m| m.start())].trim_end();
                let owner = before.rsplit(' ').next().unwrap_or("").to_lowercase();
                if OTHERS.iter().any(|o| owner == *o) {
                    continue;
                }
                let words: Vec<&str> = c[3].split_whitespace().collect();
                let Some(verb) = words
                    .iter()
                    .find(|w| !ADVERBS.contains(&w.to_lowercase().as_str()))
                else {
                    continue;
                };
                let lower = verb.to_lowercase();
                if lower.len() > 2 && lower.ends_with('s') && !GOAL_WORDS.contains(&lower.as_str())
                {
                    out.push(Telling {
                        line: line + 1,
                        name: name.to_string(),
                        verb: verb.to_string(),
                        sentence: sentence.trim().to_string(),
                    });
                }
            }
        }
    }
    out
}

/// What breaks the two rules in a chapter's `text`, whose lesson blanks
/// `functions`: 1-based line and message.
pub fn problems(text: &str, functions: &[String], stage_file: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let blocks = blocks(text);
    let hows: Vec<&Block> = blocks.iter().filter(|b| b.class == "lesson-how").collect();
    let inside_how = |line: usize| hows.iter().any(|h| h.open < line && line < h.close);
    // Rule 1: every fold of code in a fold of explanation…
    for code in blocks.iter().filter(|b| b.class == "lesson-code") {
        if !inside_how(code.open) {
            out.push((
                code.open + 1,
                format!(
                    "this listing of the lesson's code is not inside a `{HOW_OPEN}`: building \
                     mode folds a listing together with the prose that explains it, from the \
                     listing to the section's next heading"
                ),
            ));
        }
    }
    // …and after a section's first fold, nothing outside one to its end.
    let lines: Vec<&str> = text.lines().collect();
    // What building mode is for stays in view: the stage's goals, the
    // exercises.
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if (t.starts_with("{{#include generated/starters/")
            || t.starts_with("{{#include generated/break/"))
            && inside_how(i)
        {
            out.push((
                i + 1,
                format!(
                    "`{t}` is inside a `{HOW_OPEN}`: a stage's goals and the exercises are what                      building mode shows, so they stay before the fold"
                ),
            ));
        }
    }
    let headings: BTreeSet<usize> = heading_lines(text);
    for how in &hows {
        let end = headings
            .range(how.close + 1..)
            .next()
            .copied()
            .unwrap_or(lines.len());
        let mut i = how.close + 1;
        while i < end {
            if let Some(next) = hows.iter().find(|h| h.open == i) {
                i = next.close + 1;
                continue;
            }
            if !lines[i].trim().is_empty() && !lines[i].trim_start().starts_with("<!--") {
                out.push((
                    i + 1,
                    format!(
                        "this line follows the section's `{HOW_OPEN}` but is outside it: what \
                         comes after the lesson's code explains it, so it folds with it (move \
                         the fold's `</div>` down to the next heading), or, if it states the \
                         problem, the goal or a concept, move it before the fold"
                    ),
                ));
                break;
            }
            i += 1;
        }
    }
    // Rule 2.
    let hidden: Vec<(usize, usize)> = blocks
        .iter()
        .filter(|b| ["lesson-how", "lesson-code", "building-along"].contains(&b.class.as_str()))
        .map(|b| (b.open, b.close))
        .collect();
    for t in tellings(text, functions, &hidden) {
        out.push((
            t.line,
            format!(
                "in view in building mode, this sentence says how `{}` (blanked by {stage_file}) \
                 does its job (\"{} {}\"): the learner designs it from its goal. Fold the \
                 sentence in the section's `{HOW_OPEN}`, or say what must hold (\"`{}` must …\"): \
                 {}",
                t.name, t.name, t.verb, t.name, t.sentence
            ),
        ));
    }
    out
}

/// The 0-based lines of the headings of `text` (ATX or setext).
fn heading_lines(text: &str) -> BTreeSet<usize> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count();
    Parser::new(text)
        .into_offset_iter()
        .filter_map(|(e, r)| {
            matches!(e, Event::Start(Tag::Heading { .. })).then(|| line_of(r.start))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn functions() -> Vec<String> {
        vec![
            "queue.rs: Queue::get".to_string(),
            "pool.rs: Drop for TaskDone::drop".to_string(),
        ]
    }

    #[test]
    fn a_visible_sentence_that_says_how_a_blanked_function_works_is_found() {
        let text = "# L\n\nA thread calls `get` to wait for work. `get` must return once an \
                    item is there.\n\n`Queue::get` then waits on the `Condvar` while the \
                    list is empty. asyncio's `get` waits too.\n\n`TaskDone` marks the item done.\n\n`get`'s loop is \
                    subtle.\n";
        let found = tellings(text, &functions(), &[]);
        let said: Vec<(&str, &str)> = found
            .iter()
            .map(|t| (t.name.as_str(), t.verb.as_str()))
            .collect();
        assert_eq!(
            said,
            [("Queue::get", "waits"), ("TaskDone", "marks")],
            "{found:#?}"
        );
        assert_eq!(found[0].line, 5);
        assert!(found[0].sentence.starts_with("`Queue::get` then waits"));
    }

    #[test]
    fn a_folded_sentence_is_not_in_view() {
        let text = "# L\n\n<div class=\"lesson-how\">\n\n`get` waits on the `Condvar`.\n\n</div>\n";
        let hidden: Vec<(usize, usize)> = blocks(text).iter().map(|b| (b.open, b.close)).collect();
        assert_eq!(tellings(text, &functions(), &hidden), []);
        assert_eq!(problems(text, &functions(), "s.toml"), []);
    }

    #[test]
    fn a_listing_and_what_follows_it_fold_together() {
        let code = "<div class=\"lesson-code\">\n\n```rust\nlet x = 1;\n```\n\n</div>\n";
        // A listing outside any explanation fold.
        let bare = format!("# L\n\n## S\n\nThe problem.\n\n{code}\nIt works so.\n");
        let found = problems(&bare, &functions(), "s.toml");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].0, 7);
        assert!(found[0].1.contains("not inside"), "{found:#?}");
        // A fold that stops before the section's end.
        let short = format!(
            "# L\n\n## S\n\nThe problem.\n\n<div class=\"lesson-how\">\n\n{code}\n</div>\n\n\
             It works so.\n\n## T\n\nNext.\n"
        );
        let found = problems(&short, &functions(), "s.toml");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].0, 19, "{found:#?}");
        assert!(found[0].1.contains("outside it"), "{found:#?}");
        // Problem first, then one fold to the next heading: nothing to say.
        let good = format!(
            "# L\n\n## S\n\nThe problem.\n\n<div class=\"lesson-how\">\n\n{code}\nIt works \
             so.\n\n</div>\n\n## T\n\nNext.\n"
        );
        assert_eq!(problems(&good, &functions(), "s.toml"), []);
    }

    #[test]
    fn blocks_nest_and_skip_fenced_code() {
        let text = "<div class=\"lesson-how\">\n\n<div class=\"lesson-code\">\n\n```html\n\
                    <div class=\"x\">\n```\n\n</div>\n\n</div>\n";
        let found = blocks(text);
        assert_eq!(
            found,
            [
                Block {
                    class: "lesson-how".into(),
                    open: 0,
                    close: 10
                },
                Block {
                    class: "lesson-code".into(),
                    open: 2,
                    close: 8
                },
            ]
        );
    }
}
