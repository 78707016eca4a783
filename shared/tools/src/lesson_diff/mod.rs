//! What changed from one lesson to the next: the diff of two lessons'
//! `src/` trees, and the book's pages that show it.
//!
//! | module | what it does |
//! |---|---|
//! | [`tree`] | finding the lessons, pairing their files, diffing each pair |
//! | [`pages`] | the Markdown pages, writing them, checking they are fresh |
//! | [`diff`] | the unified diff of two texts (the `similar` crate's Myers diff) |
//!
//! `lesson-diff` prints and writes the pages; `book-check` uses the same
//! code to check them, so the two cannot disagree about what "fresh" means.

pub mod pages;
pub mod tree;

/// The unified diff of two texts, as `diff -u` prints it.
pub mod diff {
    use similar::{Algorithm, ChangeTag, TextDiff};

    /// The diff of `old` and `new`, line by line. Myers' algorithm, as GNU
    /// diff and git use by default; a last line without its `\n` differs
    /// from the same line with one.
    fn lines<'a>(old: &'a str, new: &'a str) -> TextDiff<'a, 'a, 'a, str> {
        TextDiff::configure()
            .algorithm(Algorithm::Myers)
            .diff_lines(old, new)
    }

    /// Lines added and removed: the `+`/`−` counts of a diffstat.
    pub fn counts(old: &str, new: &str) -> (usize, usize) {
        let diff = lines(old, new);
        let count = |tag| diff.iter_all_changes().filter(|c| c.tag() == tag).count();
        (count(ChangeTag::Insert), count(ChangeTag::Delete))
    }

    /// The unified diff of `old` and `new` with `context` lines of context,
    /// labelled `old_label`/`new_label`; empty when the texts are equal, as
    /// `diff` prints nothing for equal files.
    pub fn unified(
        old_label: &str,
        new_label: &str,
        old: &str,
        new: &str,
        context: usize,
    ) -> String {
        if old == new {
            return String::new();
        }
        lines(old, new)
            .unified_diff()
            .context_radius(context)
            .missing_newline_hint(true)
            .header(old_label, new_label)
            .to_string()
    }
}
