//! A line diff (Myers' algorithm) and the unified format `diff -u` prints.
//!
//! The book shows what changed between adjacent lessons as generated diffs,
//! and the check that keeps them fresh must produce the same text on every
//! machine. `diff -u` is not on every learner's machine and its output
//! differs between implementations, so the course computes its own:
//!
//! 1. [`diff_lines`] finds a shortest edit script: the fewest deleted and
//!    inserted lines that turn the old file into the new one. It is Eugene
//!    Myers' O(ND) algorithm ("An O(ND) Difference Algorithm and Its
//!    Variations", 1986), the one GNU diff and git use by default, after
//!    trimming the common prefix and suffix (most of a file, usually).
//! 2. [`unified`] groups the edits into hunks with three lines of context,
//!    merging hunks whose context would touch, and prints them with the
//!    `@@ -a,b +c,d @@` headers `patch` understands.
//!
//! Lines keep their `\n`, so a last line without one differs from the same
//! line with one, and prints the `\ No newline at end of file` marker, as
//! GNU diff does.

use std::fmt::Write as _;

/// One step of an edit script, in order: the old file is read top to bottom
/// by `Keep` and `Delete`, the new file by `Keep` and `Insert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Old line `.0` and new line `.1` (0-based) are equal.
    Keep(usize, usize),
    /// Old line `.0` is not in the new file.
    Delete(usize),
    /// New line `.0` is not in the old file.
    Insert(usize),
}

/// Lines that changed, with `context` unchanged lines around them, in the
/// form one `@@ … @@` block prints.
#[derive(Debug, PartialEq, Eq)]
pub struct Hunk {
    /// 0-based index of the first old line the hunk covers.
    pub old_start: usize,
    /// How many old lines it covers (kept plus deleted).
    pub old_len: usize,
    /// 0-based index of the first new line the hunk covers.
    pub new_start: usize,
    /// How many new lines it covers (kept plus inserted).
    pub new_len: usize,
    /// The hunk's slice of the edit script.
    pub edits: Vec<Edit>,
}

/// Lines of `text`, each with its `\n` (the last one may lack it). Keeping the
/// terminator is what makes "no newline at end of file" a difference.
pub fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// A shortest edit script from `old` to `new`.
pub fn diff_lines(old: &[&str], new: &[&str]) -> Vec<Edit> {
    // Equal lines at both ends are kept without searching: between two
    // lessons most of a shared file is unchanged, and this makes the search
    // below run on the changed middle only.
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let old_mid = &old[prefix..old.len() - suffix];
    let new_mid = &new[prefix..new.len() - suffix];

    let mut edits: Vec<Edit> = (0..prefix).map(|i| Edit::Keep(i, i)).collect();
    for edit in myers(old_mid, new_mid) {
        edits.push(match edit {
            Edit::Keep(a, b) => Edit::Keep(a + prefix, b + prefix),
            Edit::Delete(a) => Edit::Delete(a + prefix),
            Edit::Insert(b) => Edit::Insert(b + prefix),
        });
    }
    let (old_tail, new_tail) = (old.len() - suffix, new.len() - suffix);
    edits.extend((0..suffix).map(|i| Edit::Keep(old_tail + i, new_tail + i)));
    edits
}

/// Myers' greedy search for the furthest-reaching path on each diagonal.
///
/// Picture a grid with the old lines across (x) and the new lines down (y).
/// A step right deletes an old line, a step down inserts a new one, and where
/// the lines are equal a diagonal step is free. A shortest edit script is a
/// path from the top-left to the bottom-right corner with the fewest
/// non-diagonal steps. Round `d` finds, for each diagonal `k = x - y`, the
/// furthest point reachable with exactly `d` such steps (`v[k]` holds its x);
/// the first round that reaches the corner has found the shortest script.
///
/// Each round's `v` is kept so the path can be walked back from the corner.
/// A round only touches diagonals `-d..=d`, so the copy kept is that window
/// (plus one on each side, which the walk back reads): the memory is O(D²),
/// not O(D·(N+M)).
fn myers(old: &[&str], new: &[&str]) -> Vec<Edit> {
    let (n, m) = (old.len() as isize, new.len() as isize);
    let max = n + m;
    // `v` is indexed by diagonal k in -max-1..=max+1, shifted to be >= 0.
    let offset = max + 1;
    let mut v = vec![0isize; (2 * max + 3) as usize];
    // Snapshots of `v` taken at the start of each round: (d, v[-d-1..=d+1]).
    let mut trace: Vec<Vec<isize>> = Vec::new();

    let mut found = None;
    'rounds: for d in 0..=max {
        let lo = (offset - d - 1) as usize;
        let hi = (offset + d + 1) as usize;
        trace.push(v[lo..=hi].to_vec());
        for k in (-d..=d).step_by(2) {
            let at = |k: isize| v[(offset + k) as usize];
            // Come down from diagonal k+1 (an insertion) or right from k-1
            // (a deletion), whichever got further. Preferring the deletion
            // on a tie is what prints `-` lines before `+` lines.
            let mut x = if k == -d || (k != d && at(k - 1) < at(k + 1)) {
                at(k + 1)
            } else {
                at(k - 1) + 1
            };
            let mut y = x - k;
            while x < n && y < m && old[x as usize] == new[y as usize] {
                x += 1;
                y += 1;
            }
            v[(offset + k) as usize] = x;
            if x >= n && y >= m {
                found = Some(d);
                break 'rounds;
            }
        }
    }

    // Walk back from the corner: in each round, the snake that ended at
    // (x, y) started where the previous round's furthest point on the
    // neighbouring diagonal was.
    let mut edits = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (0..=found.unwrap_or(0)).rev() {
        let snap = &trace[d as usize];
        // The snapshot starts at diagonal -d-1.
        let at = |k: isize| snap[(k + d + 1) as usize];
        let k = x - y;
        let prev_k = if k == -d || (k != d && at(k - 1) < at(k + 1)) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            edits.push(Edit::Keep(x as usize, y as usize));
        }
        if d > 0 {
            if x == prev_x {
                edits.push(Edit::Insert((y - 1) as usize));
            } else {
                edits.push(Edit::Delete((x - 1) as usize));
            }
        }
        x = prev_x;
        y = prev_y;
    }
    edits.reverse();
    edits
}

/// Groups an edit script into hunks with `context` unchanged lines on each
/// side of a change. Two changes separated by at most `2 * context`
/// unchanged lines share a hunk, as in `diff -u`: their contexts would
/// otherwise overlap or touch.
pub fn hunks(edits: &[Edit], context: usize) -> Vec<Hunk> {
    let changes: Vec<usize> = edits
        .iter()
        .enumerate()
        .filter(|(_, e)| !matches!(e, Edit::Keep(..)))
        .map(|(i, _)| i)
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < changes.len() {
        let first = changes[i];
        let mut last = first;
        while i + 1 < changes.len() && changes[i + 1] - last - 1 <= 2 * context {
            i += 1;
            last = changes[i];
        }
        i += 1;
        let start = first.saturating_sub(context);
        let end = (last + 1 + context).min(edits.len());
        out.push(make_hunk(edits, start, end));
    }
    out
}

/// The hunk covering `edits[start..end]`, with its line positions.
fn make_hunk(edits: &[Edit], start: usize, end: usize) -> Hunk {
    // Where the hunk starts in each file: count the lines each side has
    // consumed before `start`.
    let (mut old_start, mut new_start) = (0, 0);
    for edit in &edits[..start] {
        match edit {
            Edit::Keep(..) => {
                old_start += 1;
                new_start += 1;
            }
            Edit::Delete(_) => old_start += 1,
            Edit::Insert(_) => new_start += 1,
        }
    }
    let slice = edits[start..end].to_vec();
    let old_len = slice
        .iter()
        .filter(|e| !matches!(e, Edit::Insert(_)))
        .count();
    let new_len = slice
        .iter()
        .filter(|e| !matches!(e, Edit::Delete(_)))
        .count();
    Hunk {
        old_start,
        old_len,
        new_start,
        new_len,
        edits: slice,
    }
}

/// One side of a hunk header: `start,len`, 1-based. A range of one line is
/// just `start`; an empty range names the line *before* it (0 at the top of
/// a file), which is how `patch` knows where to insert.
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

/// Lines added and removed by an edit script: the `+`/`−` counts of a
/// diffstat.
pub fn counts(edits: &[Edit]) -> (usize, usize) {
    let added = edits
        .iter()
        .filter(|e| matches!(e, Edit::Insert(_)))
        .count();
    let removed = edits
        .iter()
        .filter(|e| matches!(e, Edit::Delete(_)))
        .count();
    (added, removed)
}

/// The unified diff of `old` and `new` with `context` lines of context,
/// labelled `old_label`/`new_label` in the `---`/`+++` header. Empty when the
/// texts are equal (as `diff` prints nothing for equal files).
pub fn unified(old_label: &str, new_label: &str, old: &str, new: &str, context: usize) -> String {
    let (old_lines, new_lines) = (split_lines(old), split_lines(new));
    let edits = diff_lines(&old_lines, &new_lines);
    let hunks = hunks(&edits, context);
    if hunks.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let _ = writeln!(out, "--- {old_label}");
    let _ = writeln!(out, "+++ {new_label}");
    for hunk in &hunks {
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            range(hunk.old_start, hunk.old_len),
            range(hunk.new_start, hunk.new_len)
        );
        for edit in &hunk.edits {
            let (mark, line) = match *edit {
                Edit::Keep(a, _) => (' ', old_lines[a]),
                Edit::Delete(a) => ('-', old_lines[a]),
                Edit::Insert(b) => ('+', new_lines[b]),
            };
            out.push(mark);
            out.push_str(line);
            if !line.ends_with('\n') {
                // Only a file's last line can lack its newline; say so, or a
                // reader (and `patch`) would add one.
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `unified` with the usual three lines of context and a/b labels.
    fn udiff(old: &str, new: &str) -> String {
        unified("a", "b", old, new, 3)
    }

    /// "1\n2\n…\nn\n": numbered lines, easy to edit by hand in a test.
    fn numbered(range: std::ops::RangeInclusive<usize>) -> String {
        range.map(|i| format!("{i}\n")).collect()
    }

    /// Rebuilds the new text from the old one and an edit script, checking
    /// on the way that kept lines really are equal and that the script reads
    /// both files in order.
    fn apply(old: &[&str], new: &[&str], edits: &[Edit]) -> Vec<String> {
        let (mut next_old, mut next_new) = (0, 0);
        let mut out = Vec::new();
        for edit in edits {
            match *edit {
                Edit::Keep(a, b) => {
                    assert_eq!((a, b), (next_old, next_new), "script out of order");
                    assert_eq!(old[a], new[b], "kept lines differ");
                    out.push(old[a].to_string());
                    next_old += 1;
                    next_new += 1;
                }
                Edit::Delete(a) => {
                    assert_eq!(a, next_old, "script out of order");
                    next_old += 1;
                }
                Edit::Insert(b) => {
                    assert_eq!(b, next_new, "script out of order");
                    out.push(new[b].to_string());
                    next_new += 1;
                }
            }
        }
        assert_eq!(
            (next_old, next_new),
            (old.len(), new.len()),
            "script ends early"
        );
        out
    }

    /// Length of a longest common subsequence, by the textbook table: the
    /// reference a shortest edit script must match (edits = n + m - 2·lcs).
    fn lcs_len(a: &[&str], b: &[&str]) -> usize {
        let mut table = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for i in (0..a.len()).rev() {
            for j in (0..b.len()).rev() {
                table[i][j] = if a[i] == b[j] {
                    table[i + 1][j + 1] + 1
                } else {
                    table[i + 1][j].max(table[i][j + 1])
                };
            }
        }
        table[0][0]
    }

    /// Applies a unified diff to `old` the way `patch` would, trusting only
    /// the hunk headers and line marks: a check that the printed text (not
    /// just the edit script) describes the change.
    fn patch(old: &str, diff: &str) -> String {
        let old_lines = split_lines(old);
        let mut out = String::new();
        let mut copied = 0; // old lines consumed so far
        let mut lines = diff.split_inclusive('\n').skip(2).peekable();
        while let Some(header) = lines.next() {
            let header = header.trim_end();
            let old_range = header
                .strip_prefix("@@ -")
                .and_then(|h| h.split(' ').next())
                .expect("hunk header");
            let mut parts = old_range.split(',');
            let start: usize = parts.next().unwrap().parse().unwrap();
            let len: usize = parts.next().map_or(1, |l| l.parse().unwrap());
            // An empty range names the line before; otherwise 1-based.
            let first = if len == 0 { start } else { start - 1 };
            while copied < first {
                out.push_str(old_lines[copied]);
                copied += 1;
            }
            while let Some(line) = lines.peek() {
                if line.starts_with("@@") {
                    break;
                }
                let line = lines.next().unwrap();
                let (mark, rest) = line.split_at(1);
                let no_newline = lines.peek().is_some_and(|l| l.starts_with('\\'));
                let text = if no_newline {
                    lines.next();
                    rest.strip_suffix('\n').unwrap()
                } else {
                    rest
                };
                match mark {
                    " " => {
                        assert_eq!(old_lines[copied], text, "context line differs");
                        out.push_str(text);
                        copied += 1;
                    }
                    "-" => {
                        assert_eq!(old_lines[copied], text, "deleted line differs");
                        copied += 1;
                    }
                    "+" => out.push_str(text),
                    other => panic!("unexpected line mark {other:?}"),
                }
            }
        }
        for line in &old_lines[copied..] {
            out.push_str(line);
        }
        out
    }

    #[test]
    fn empty_and_identical_files_have_no_diff() {
        assert_eq!(udiff("", ""), "");
        assert_eq!(udiff("a\nb\n", "a\nb\n"), "");
        assert_eq!(udiff("no newline", "no newline"), "");
        assert!(hunks(&diff_lines(&[], &[]), 3).is_empty());
    }

    #[test]
    fn a_new_file_is_all_insertions_from_line_zero() {
        assert_eq!(
            udiff("", "x\ny\n"),
            "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n"
        );
        assert_eq!(
            udiff("x\ny\n", ""),
            "--- a\n+++ b\n@@ -1,2 +0,0 @@\n-x\n-y\n"
        );
    }

    #[test]
    fn insert_and_delete_at_the_start() {
        let old = numbered(1..=5);
        let new = format!("0\n{old}");
        assert_eq!(
            udiff(&old, &new),
            "--- a\n+++ b\n@@ -1,3 +1,4 @@\n+0\n 1\n 2\n 3\n"
        );
        assert_eq!(
            udiff(&new, &old),
            "--- a\n+++ b\n@@ -1,4 +1,3 @@\n-0\n 1\n 2\n 3\n"
        );
    }

    #[test]
    fn insert_and_delete_at_the_end() {
        let old = numbered(1..=5);
        let new = numbered(1..=6);
        assert_eq!(
            udiff(&old, &new),
            "--- a\n+++ b\n@@ -3,3 +3,4 @@\n 3\n 4\n 5\n+6\n"
        );
        assert_eq!(
            udiff(&new, &old),
            "--- a\n+++ b\n@@ -3,4 +3,3 @@\n 3\n 4\n 5\n-6\n"
        );
    }

    #[test]
    fn a_one_line_file_has_a_one_number_range() {
        assert_eq!(udiff("a\n", "b\n"), "--- a\n+++ b\n@@ -1 +1 @@\n-a\n+b\n");
    }

    /// Expected text from GNU diffutils 3.8 (`diff -u`) on the same input.
    #[test]
    fn a_small_diff_matches_gnu_diff() {
        let old = "fn main() {\n    let x = 1;\n    let y = 2;\n    println!(\"{}\", x + y);\n}\n";
        let new = "fn main() {\n    let x = 1;\n    let z = 3;\n    println!(\"{}\", x + z);\n}\n";
        assert_eq!(
            udiff(old, new),
            "--- a\n+++ b\n@@ -1,5 +1,5 @@\n fn main() {\n     let x = 1;\n-    let y = 2;\n-    println!(\"{}\", x + y);\n+    let z = 3;\n+    println!(\"{}\", x + z);\n }\n"
        );
    }

    #[test]
    fn context_is_three_lines_and_far_changes_get_their_own_hunk() {
        let old = numbered(1..=20);
        // Lines 2 and 18 change: 15 unchanged lines between them, more than
        // twice the context, so two hunks.
        let new = old
            .replace("\n2\n", "\ntwo\n")
            .replace("\n18\n", "\neighteen\n");
        assert_eq!(
            udiff(&old, &new),
            "--- a\n+++ b\n\
             @@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n\
             @@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n 20\n"
        );
    }

    #[test]
    fn changes_six_lines_apart_share_a_hunk_seven_do_not() {
        let old = numbered(1..=30);
        // 6 unchanged lines (5..=10) between changes at 4 and 11: one hunk.
        let six = old
            .replace("\n4\n", "\nfour\n")
            .replace("\n11\n", "\neleven\n");
        assert_eq!(
            hunks(&diff_lines(&split_lines(&old), &split_lines(&six)), 3).len(),
            1
        );
        assert!(udiff(&old, &six).contains("@@ -1,14 +1,14 @@\n"));
        // 7 unchanged lines (5..=11) between changes at 4 and 12: two hunks.
        let seven = old
            .replace("\n4\n", "\nfour\n")
            .replace("\n12\n", "\ntwelve\n");
        let both = hunks(&diff_lines(&split_lines(&old), &split_lines(&seven)), 3);
        assert_eq!(both.len(), 2);
        assert_eq!((both[0].old_start, both[0].old_len), (0, 7));
        assert_eq!((both[1].old_start, both[1].old_len), (8, 7));
    }

    #[test]
    fn a_missing_final_newline_is_a_difference_and_is_marked() {
        assert_eq!(
            udiff("a\nb\n", "a\nb"),
            "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"
        );
        assert_eq!(
            udiff("a\nb", "a\nc"),
            "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
        // Unchanged but unterminated context is marked once.
        assert_eq!(
            udiff("x\nend", "y\nend"),
            "--- a\n+++ b\n@@ -1,2 +1,2 @@\n-x\n+y\n end\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn counts_are_the_inserted_and_deleted_lines() {
        let edits = diff_lines(&["a\n", "b\n", "c\n"], &["a\n", "x\n", "y\n", "c\n"]);
        assert_eq!(counts(&edits), (2, 1));
    }

    /// Random small files over a tiny alphabet (so lines repeat, which is
    /// where diff algorithms go wrong): the script must rebuild the new file,
    /// be as short as the LCS says is possible, and print as a diff that
    /// patches the old file into the new one.
    #[test]
    fn random_files_diff_minimally_and_patch_back() {
        // A fixed xorshift generator: the same cases on every run.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound) as usize
        };
        let alphabet = ["a\n", "b\n", "c\n", "}\n", "\n"];
        for case in 0..2000 {
            let mut make = || -> String {
                let len = next(12);
                let mut text: String = (0..len).map(|_| alphabet[next(5)]).collect();
                if len > 0 && next(4) == 0 {
                    text.pop(); // sometimes no final newline
                }
                text
            };
            let (old, new) = (make(), make());
            let (a, b) = (split_lines(&old), split_lines(&new));
            let edits = diff_lines(&a, &b);
            assert_eq!(apply(&a, &b, &edits).concat(), new, "case {case}");
            let (added, removed) = counts(&edits);
            let lcs = lcs_len(&a, &b);
            assert_eq!(
                added + removed,
                a.len() + b.len() - 2 * lcs,
                "case {case}: not minimal"
            );
            for context in [0, 1, 3] {
                let text = unified("a", "b", &old, &new, context);
                assert_eq!(
                    patch(&old, &text),
                    new,
                    "case {case}, context {context}:\n{text}"
                );
            }
        }
    }

    #[test]
    fn completely_different_files_are_a_delete_then_an_insert() {
        let old = numbered(1..=3);
        let new = "x\ny\n";
        assert_eq!(
            udiff(&old, new),
            "--- a\n+++ b\n@@ -1,3 +1,2 @@\n-1\n-2\n-3\n+x\n+y\n"
        );
    }
}
