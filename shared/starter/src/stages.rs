//! A lesson's stage list: `docs/starters/lessonN.toml`.
//!
//! Each stage is one idea of the chapter, in the chapter's order: the
//! functions a learner writes for it (blanked in the starter), the test
//! targets that check it, and what the chapter says about it. The lesson's
//! code carries no marker for this: the list names functions, and
//! [`super::blank`] finds them with a Rust parser.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// The most stages a lesson may have: each one a sitting's work. Lesson 4,
/// a small asyncio with a crawler on top, has 13.
pub const MAX_STAGES: usize = 13;

/// The most functions one stage hands over: what a learner can hold in
/// mind while writing them against one set of tests.
pub const MAX_FUNCTIONS: usize = 15;

/// The four lessons, in order: crate name, chapter file, binary name.
pub const LESSONS: [(&str, &str, &str); 4] = [
    ("lesson1-threadpool", "lesson1.md", "lesson1"),
    ("lesson2-callbacks", "lesson2.md", "lesson2"),
    ("lesson3-generators", "lesson3.md", "lesson3"),
    ("lesson4-asyncio-style", "lesson4.md", "lesson4"),
];

/// One lesson's stages, as read from its TOML file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageList {
    /// The lesson crate's name, e.g. `lesson3-generators`.
    pub lesson: String,
    /// The stages, first to last; the last is the whole lesson.
    #[serde(rename = "stage")]
    pub stages: Vec<Stage>,
    /// The test target whose tests are model tests (lesson 1's `model`):
    /// each runs every interleaving a model checker explores, so a mistake
    /// a stage lists must fail one of them on every run, not now and then.
    /// `verify --mistakes` runs a stage's selection of it three times.
    #[serde(default)]
    pub model: Option<String>,
    /// The mistake whose model-test failure the chapter shows whole
    /// ("Every interleaving"): its name.
    #[serde(default)]
    pub model_example: Option<String>,
    /// The chapter (`lessonN.md`), filled in from [`LESSONS`].
    #[serde(skip)]
    pub chapter: String,
    /// The chapter's title as a learner sees it (`Lesson 3`): its first
    /// `# ` heading, up to a colon.
    #[serde(skip)]
    pub title: String,
    /// The course's checkout, absolute: the commands a learner is told to
    /// run name it, so that they work from the starter's directory too.
    #[serde(skip)]
    pub root: PathBuf,
}

/// Where the book is served by `mdbook serve docs --port 4000`: not
/// mdBook's default port, 3000, which is where `serve` puts the local site
/// the lessons crawl by default.
pub const BOOK: &str = "http://localhost:4000";

/// One stage: what to write, where the chapter explains it, how it is tested.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// A short name, one word or two joined by `-` (`queue`, `run-once`).
    pub name: String,
    /// The headings of the chapter's sections the stage needs, word for
    /// word; the first is where it is taught. A section whose listing shows
    /// code this stage blanks is one of them.
    pub sections: Vec<String>,
    /// What the learner writes, as the `todo!` says it.
    pub write: String,
    /// What the stage's tests check, in a sentence or two.
    pub checks: String,
    /// A hint: where to start, the pitfall the tests catch.
    pub hint: String,
    /// The stage's tests: a test target (`queue` for `tests/queue.rs`), or a
    /// target and a name prefix (`runtime handles::`) for the tests of one
    /// module of a target.
    pub tests: Vec<String>,
    /// Tests the selections above pick that do not test this stage, each as
    /// `TARGET NAME: why` (a case of the shared suite that only another
    /// lesson uses, say). They still run under `cargo test`; `check` leaves
    /// them out of the stage, since they pass on its blank.
    #[serde(default)]
    pub skip: Vec<String>,
    /// The functions to blank: `FILE: NAME`, `FILE: TYPE::NAME` or
    /// `FILE: TRAIT for TYPE::NAME`, FILE relative to `src/`.
    pub blank: Vec<String>,
    /// Structs whose fields the learner designs in this stage: `FILE:
    /// NAME`. The starter leaves each with a comment where its fields go
    /// (saying what they must make possible: the entry's goal); every
    /// function that touches them is blanked in this stage or reaches them
    /// through methods, and the stage's tests use only the public API. The
    /// entry's goal and contract (the lesson's fields, as steps) are keyed
    /// like a function's.
    #[serde(default)]
    pub state: Vec<String>,
    /// How each blanked function does it, keyed by its `blank` entry: its
    /// steps, one to three sentences of Markdown (the order of calls, the
    /// locks and flags, each branch, its errors, the log lines and counts
    /// the tests read). The chapter folds them behind "Show the steps", and
    /// `starter hint --steps` prints them: opened on purpose.
    #[serde(default)]
    pub contract: BTreeMap<String, String>,
    /// What each blanked function is for and what it promises, keyed by its
    /// `blank` entry: about one sentence, in the learner's terms, from which
    /// the function can be designed. Always shown (building mode, `starter
    /// hint`), ahead of the folded steps.
    #[serde(default)]
    pub goal: BTreeMap<String, String>,
    /// The classic mistakes learners make in this stage, each a small change
    /// to the lesson that the stage's tests must catch with a message that
    /// names it (`starter verify --mistakes` proves it); the book lists
    /// them, folded, in the stage's box, and in the chapter's "Break it on
    /// purpose". Their order matters: when the failures of one mistake also
    /// carry another's words, `starter check` shows the failure naming the
    /// mistake listed first, so a specific mistake comes before a broader
    /// one (see `run::clearest_first`).
    #[serde(default, rename = "mistake")]
    pub mistakes: Vec<Mistake>,
}

/// A classic mistake of a stage: what a learner commonly gets wrong, as a
/// change to one place of the lesson's code, and what its failure shows.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mistake {
    /// What the learner did, in a few words (the book's list shows it).
    pub name: String,
    /// The file it is made in, relative to `src/`.
    pub file: String,
    /// The lesson's text that the mistake changes: it must occur exactly
    /// once in the file.
    pub find: String,
    /// What the mistake makes of it.
    pub replace: String,
    /// Words the failing tests' output must contain: the message that names
    /// the mistake, so that a learner who makes it is told what it is.
    pub shows: String,
}

/// Where a stage's tests are: a target, and maybe a name prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestSelection {
    /// The integration-test target (`tests/TARGET.rs`).
    pub target: String,
    /// Only tests whose full name starts with this.
    pub prefix: Option<String>,
    /// Tests of the target left out (full names).
    pub except: Vec<String>,
}

/// One `skip` entry: the target, the test's full name, and why.
pub fn parse_skip(entry: &str) -> Result<(&str, &str, &str)> {
    let (test, why) = entry
        .split_once(": ")
        .with_context(|| format!("skip {entry:?}: write it as `TARGET NAME: why`"))?;
    let (target, name) = test
        .split_once(' ')
        .with_context(|| format!("skip {entry:?}: write it as `TARGET NAME: why`"))?;
    if why.trim().is_empty() {
        bail!("skip {entry:?}: say why the test does not test this stage");
    }
    Ok((target, name.trim(), why.trim()))
}

impl Stage {
    /// The section that teaches the stage: the first of its sections.
    pub fn section(&self) -> &str {
        self.sections.first().map_or("", String::as_str)
    }

    /// Every entry the stage hands over: its functions, then its structs.
    pub fn entries(&self) -> impl Iterator<Item = &String> {
        self.blank.iter().chain(&self.state)
    }

    /// The stage's blanked functions (and structs) that have no contract yet.
    pub fn without_contract(&self) -> Vec<&str> {
        self.entries()
            .filter(|b| !self.contract.contains_key(b.as_str()))
            .map(String::as_str)
            .collect()
    }

    /// The stage's blanked functions that have no goal yet.
    pub fn without_goal(&self) -> Vec<&str> {
        self.entries()
            .filter(|b| !self.goal.contains_key(b.as_str()))
            .map(String::as_str)
            .collect()
    }

    /// The stage's test selections, parsed.
    pub fn selections(&self) -> Vec<TestSelection> {
        let skipped: Vec<(&str, &str)> = self
            .skip
            .iter()
            .filter_map(|entry| parse_skip(entry).ok())
            .map(|(target, name, _)| (target, name))
            .collect();
        self.tests
            .iter()
            .map(|t| {
                let (target, prefix) = match t.split_once(' ') {
                    Some((target, prefix)) => (target, Some(prefix.trim().to_string())),
                    None => (t.as_str(), None),
                };
                let except = skipped
                    .iter()
                    .filter(|(skip_target, _)| *skip_target == target)
                    .map(|(_, name)| name.to_string())
                    .collect();
                TestSelection {
                    target: target.to_string(),
                    prefix,
                    except,
                }
            })
            .collect()
    }

    /// How a learner runs this stage's tests with cargo: one command for
    /// the whole targets, one per target whose tests are picked by name.
    pub fn cargo_command(&self) -> String {
        let selections = self.selections();
        let mut whole = String::from("cargo test");
        let mut skips = Vec::new();
        let mut by_name: Vec<(String, Vec<String>)> = Vec::new();
        for s in &selections {
            match &s.prefix {
                None => {
                    whole.push_str(&format!(" --test {}", s.target));
                    skips.extend(s.except.iter().map(|n| format!(" --skip {n}")));
                }
                Some(prefix) => match by_name.iter_mut().find(|(t, _)| *t == s.target) {
                    Some((_, prefixes)) => prefixes.push(prefix.clone()),
                    None => by_name.push((s.target.clone(), vec![prefix.clone()])),
                },
            }
        }
        let mut commands = Vec::new();
        if whole != "cargo test" {
            if !skips.is_empty() {
                whole.push_str(" --");
                whole.push_str(&skips.concat());
            }
            commands.push(whole);
        }
        for (target, prefixes) in by_name {
            commands.push(format!(
                "cargo test --test {target} -- {}",
                prefixes.join(" ")
            ));
        }
        commands.join(" && ")
    }
}

impl StageList {
    /// The stage list of `lesson` (`3`, `lesson3` or `lesson3-generators`)
    /// in the checkout at `root`.
    pub fn load(root: &Path, lesson: &str) -> Result<StageList> {
        let (krate, chapter, bin) = find_lesson(lesson)?;
        let path = stage_file(root, bin);
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        let mut list: StageList =
            toml::from_str(&text).with_context(|| format!("parse {}", path.display()))?;
        if list.lesson != krate {
            bail!(
                "{}: says lesson = {:?}, expected {krate:?}",
                path.display(),
                list.lesson
            );
        }
        list.chapter = chapter.to_string();
        list.root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let chapter_path = root.join("docs/src").join(chapter);
        let chapter_text = std::fs::read_to_string(&chapter_path)
            .with_context(|| format!("read {}", chapter_path.display()))?;
        list.title = chapter_title(&chapter_text).unwrap_or(chapter).to_string();
        list.validate(root)
            .with_context(|| format!("in {}", path.display()))?;
        Ok(list)
    }

    /// The lesson crate's directory in the checkout.
    pub fn crate_dir(&self, root: &Path) -> PathBuf {
        root.join(&self.lesson)
    }

    /// Whether any stage of the lesson has a contract yet: from then on,
    /// every blanked function of the lesson must have one.
    pub fn has_contracts(&self) -> bool {
        self.stages.iter().any(|s| !s.contract.is_empty())
    }

    /// Whether any stage of the lesson has a goal yet: from then on, every
    /// blanked function of the lesson must have one.
    pub fn has_goals(&self) -> bool {
        self.stages.iter().any(|s| !s.goal.is_empty())
    }

    /// Sound enough to use: 3 to [`MAX_STAGES`] stages of at most 15 functions, distinct names, sections that are
    /// headings of the chapter, blanks that parse, contracts of blanks.
    fn validate(&self, root: &Path) -> Result<()> {
        if !(3..=MAX_STAGES).contains(&self.stages.len()) {
            bail!(
                "{} stages: a lesson has 3 to {MAX_STAGES}",
                self.stages.len()
            );
        }
        for (i, stage) in self.stages.iter().enumerate() {
            if stage.blank.len() > MAX_FUNCTIONS {
                bail!(
                    "stage {} ({}) hands over {} functions: at most {MAX_FUNCTIONS} a stage (split it)",
                    i + 1,
                    stage.name,
                    stage.blank.len()
                );
            }
        }
        let chapter_path = root.join("docs/src").join(&self.chapter);
        let chapter = std::fs::read_to_string(&chapter_path)
            .with_context(|| format!("read {}", chapter_path.display()))?;
        let headings: Vec<&str> = chapter
            .lines()
            .filter(|l| l.starts_with('#'))
            .filter_map(|l| l.trim_start_matches('#').strip_prefix(' '))
            .collect();
        // The stages follow the chapter: each one's section comes no earlier
        // than the one before. The last stage, the whole lesson, may point
        // wherever the chapter shows the whole crawl.
        let positions: Vec<Option<usize>> = self
            .stages
            .iter()
            .map(|s| headings.iter().position(|h| *h == s.section()))
            .collect();
        let last = self.stages.len() - 1;
        for i in 1..last {
            if let (Some(before), Some(here)) = (positions[i - 1], positions[i]) {
                if here < before {
                    bail!(
                        "stage {} ({}): its first section {:?} comes before stage {}'s in {}: stages follow the chapter",
                        i + 1,
                        self.stages[i].name,
                        self.stages[i].section(),
                        i,
                        self.chapter
                    );
                }
            }
        }
        for (i, stage) in self.stages.iter().enumerate() {
            let valid_name = !stage.name.is_empty()
                && stage
                    .name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !valid_name {
                bail!(
                    "stage {}: name {:?} is not lower-case words joined by '-'",
                    i + 1,
                    stage.name
                );
            }
            if self.stages[..i].iter().any(|s| s.name == stage.name) {
                bail!("stage {}: name {:?} is used twice", i + 1, stage.name);
            }
            if stage.sections.is_empty() {
                bail!(
                    "stage {} ({}): sections = []: name at least the section that teaches it",
                    i + 1,
                    stage.name
                );
            }
            for (j, section) in stage.sections.iter().enumerate() {
                if !headings.contains(&section.as_str()) {
                    bail!(
                        "stage {} ({}): {:?} is not a heading of {}",
                        i + 1,
                        stage.name,
                        section,
                        self.chapter
                    );
                }
                if stage.sections[..j].contains(section) {
                    bail!(
                        "stage {} ({}): section {:?} is named twice",
                        i + 1,
                        stage.name,
                        section
                    );
                }
            }
            for key in stage.contract.keys() {
                if !stage.entries().any(|e| e == key) {
                    bail!(
                        "stage {} ({}): [stage.contract] {key:?} is not a `blank` entry of the stage (a contract is keyed by its function's entry, word for word)",
                        i + 1,
                        stage.name
                    );
                }
            }
            for (key, text) in &stage.contract {
                if text.trim().is_empty() {
                    bail!(
                        "stage {} ({}): the contract of {key:?} is empty",
                        i + 1,
                        stage.name
                    );
                }
            }
            for mistake in &stage.mistakes {
                if mistake.find == mistake.replace || mistake.shows.trim().is_empty() {
                    bail!(
                        "stage {} ({}): mistake {:?} must change the code (`find` and `replace` differ) and say what its failure shows (`shows`)",
                        i + 1,
                        stage.name,
                        mistake.name
                    );
                }
            }
            for (key, text) in &stage.goal {
                if !stage.entries().any(|e| e == key) {
                    bail!(
                        "stage {} ({}): [stage.goal] {key:?} is not a `blank` entry of the stage (a goal is keyed by its function's entry, word for word)",
                        i + 1,
                        stage.name
                    );
                }
                if text.trim().is_empty() {
                    bail!(
                        "stage {} ({}): the goal of {key:?} is empty",
                        i + 1,
                        stage.name
                    );
                }
            }
            if stage.tests.is_empty() {
                bail!("stage {} ({}): no tests", i + 1, stage.name);
            }
            for entry in &stage.skip {
                let (target, _, _) = parse_skip(entry)
                    .with_context(|| format!("stage {} ({})", i + 1, stage.name))?;
                if !stage.selections().iter().any(|s| s.target == target) {
                    bail!(
                        "stage {} ({}): skip {entry:?} names a target the stage does not run",
                        i + 1,
                        stage.name
                    );
                }
            }
            for spec in &stage.blank {
                super::blank::FnPath::parse(spec)
                    .with_context(|| format!("stage {} ({})", i + 1, stage.name))?;
            }
        }
        Ok(())
    }

    /// Where the book, as `mdbook serve docs` serves it, shows `section`,
    /// in building mode (`?mode=build`): a learner sent there from a starter
    /// is writing the code, so its listings come folded, with what each
    /// function must do shown instead. The book remembers the mode.
    pub fn book_url(&self, section: &str) -> String {
        format!(
            "{BOOK}/{}?mode=build#{}",
            self.chapter.trim_end_matches(".md").to_string() + ".html",
            heading_id(section)
        )
    }

    /// Where to read about `stage`, as a learner opens the book: the
    /// chapter, each of the stage's sections, and their addresses.
    pub fn read_text(&self, stage: &Stage) -> String {
        let serve = format!("serve the book with `{}` and open", self.serve_command());
        match stage.sections.as_slice() {
            [one] => format!(
                "{}, section \"{}\": {serve} {}",
                self.title,
                plain(one),
                self.book_url(one)
            ),
            many => {
                let names: Vec<String> = many.iter().map(|s| format!("\"{}\"", plain(s))).collect();
                let mut text = format!(
                    "{}, sections {} (the first teaches the stage): {serve}",
                    self.title,
                    and_list(&names)
                );
                for section in many {
                    text.push_str(&format!("\n    {}", self.book_url(section)));
                }
                text
            }
        }
    }

    /// What the `todo!` of a blank in `stage` (1-based `number`) says: the
    /// chapter and section that teach it, by title, then their address,
    /// then what to write, and the commands that show the stage and serve
    /// the book, which work from the starter's directory.
    pub fn todo_message(&self, number: usize, stage: &Stage) -> String {
        let more = match stage.sections.len() {
            0 | 1 => String::new(),
            n => format!(" and {} more that the hint lists", n - 1),
        };
        format!(
            "stage {number}: read {}, section \"{}\"{more} ({}), then write {}. What this stage asks: `{}`; the book: `{}`",
            self.title,
            plain(stage.section()),
            self.book_url(stage.section()),
            stage.write.trim_end_matches('.'),
            self.course_command("hint ."),
            self.serve_command()
        )
    }

    /// `starter ARGS` as a command that runs from any directory: through
    /// the checkout's manifest.
    pub fn course_command(&self, args: &str) -> String {
        format!(
            "cargo run -q --manifest-path {} -p starter -- {args}",
            self.root.join("Cargo.toml").display()
        )
    }

    /// The command that serves the book, from any directory.
    pub fn serve_command(&self) -> String {
        format!(
            "mdbook serve {} --port 4000 --open",
            self.root.join("docs").display()
        )
    }
}

/// A heading as the book prints it: without its code marks.
fn plain(heading: &str) -> String {
    heading.replace('`', "")
}

/// `"a"`, `"a" and "b"`, `"a", "b" and "c"`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// A chapter's title as its readers call it: its first `# ` heading, up to
/// a colon (`# Lesson 3: coroutines — …` is `Lesson 3`).
pub fn chapter_title(chapter: &str) -> Option<&str> {
    let heading = chapter.lines().find_map(|l| l.strip_prefix("# "))?.trim();
    Some(
        heading
            .split_once(':')
            .map_or(heading, |(title, _)| title.trim()),
    )
}

/// The lesson's crate, chapter and binary for `3`, `lesson3` or the crate name.
pub fn find_lesson(name: &str) -> Result<(&'static str, &'static str, &'static str)> {
    let number = name.strip_prefix("lesson").unwrap_or(name);
    LESSONS
        .iter()
        .enumerate()
        .find(|(i, (krate, _, bin))| {
            name == *krate || name == *bin || number == (i + 1).to_string()
        })
        .map(|(_, lesson)| *lesson)
        .with_context(|| {
            format!("unknown lesson {name:?}: give 1 to 4, lesson1 to lesson4, or a crate name such as lesson3-generators")
        })
}

/// Where a lesson's stage list lives.
pub fn stage_file(root: &Path, bin: &str) -> PathBuf {
    root.join("docs/starters").join(format!("{bin}.toml"))
}

/// mdBook's id for a heading: lower case, spaces to `-`, only letters,
/// digits, `-` and `_` kept.
pub fn heading_id(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(tests: &[&str], skip: &[&str]) -> Stage {
        Stage {
            name: "s".into(),
            sections: vec!["S".into()],
            write: String::new(),
            checks: String::new(),
            hint: String::new(),
            tests: tests.iter().map(|t| t.to_string()).collect(),
            skip: skip.iter().map(|t| t.to_string()).collect(),
            blank: Vec::new(),
            state: Vec::new(),
            contract: BTreeMap::new(),
            goal: BTreeMap::new(),
            mistakes: Vec::new(),
        }
    }

    #[test]
    fn a_lesson_is_named_by_number_short_name_or_crate() {
        for name in ["3", "lesson3", "lesson3-generators"] {
            assert_eq!(find_lesson(name).unwrap().0, "lesson3-generators");
        }
        let err = find_lesson("lesson9").unwrap_err().to_string();
        assert!(err.contains("unknown lesson"), "{err}");
        assert!(find_lesson("13").is_err());
    }

    #[test]
    fn a_stage_is_read_about_where_the_book_serves_it() {
        assert_eq!(
            chapter_title("<!-- x -->\n# Lesson 3: coroutines — one fetch\n## A\n"),
            Some("Lesson 3")
        );
        assert_eq!(chapter_title("# Afterword\n"), Some("Afterword"));
        let list = StageList {
            lesson: "lesson3-generators".into(),
            stages: Vec::new(),
            model: None,
            model_example: None,
            chapter: "lesson3.md".into(),
            title: "Lesson 3".into(),
            root: PathBuf::from("/course"),
        };
        let mut s = stage(&["task"], &[]);
        s.sections = vec!["`Task`: what drives a coroutine".into()];
        s.write = "the task.".into();
        assert_eq!(
            list.read_text(&s),
            "Lesson 3, section \"Task: what drives a coroutine\": serve the book with \
             `mdbook serve /course/docs --port 4000 --open` and open \
             http://localhost:4000/lesson3.html?mode=build#task-what-drives-a-coroutine"
        );
        // The chapter and section first, then the address, then what to
        // write; the commands name the checkout, so they work anywhere.
        assert_eq!(
            list.todo_message(3, &s),
            "stage 3: read Lesson 3, section \"Task: what drives a coroutine\" \
             (http://localhost:4000/lesson3.html?mode=build#task-what-drives-a-coroutine), \
             then write the task. What this stage asks: \
             `cargo run -q --manifest-path /course/Cargo.toml -p starter -- hint .`; \
             the book: `mdbook serve /course/docs --port 4000 --open`"
        );
        s.sections.push("The loop".into());
        s.sections.push("Ends".into());
        let text = list.read_text(&s);
        assert!(
            text.starts_with(
                "Lesson 3, sections \"Task: what drives a coroutine\", \"The loop\" and \"Ends\" (the first teaches the stage)"
            ),
            "{text}"
        );
        assert!(text.ends_with("\n    http://localhost:4000/lesson3.html?mode=build#the-loop\n    http://localhost:4000/lesson3.html?mode=build#ends"), "{text}");
        assert!(list
            .todo_message(3, &s)
            .contains("\" and 2 more that the hint lists ("));
    }

    #[test]
    fn heading_ids_are_mdbooks() {
        assert_eq!(
            heading_id("The queue, and what `join` waits for"),
            "the-queue-and-what-join-waits-for"
        );
        assert_eq!(
            heading_id("`Future`: a result that is not there yet"),
            "future-a-result-that-is-not-there-yet"
        );
    }

    #[test]
    fn selections_carry_prefixes_and_skips_into_one_command() {
        let s = stage(
            &["behaviour", "trace", "crawler each_url"],
            &["trace one_slice_per_attempt: lesson 4 only"],
        );
        let selections = s.selections();
        assert_eq!(selections[1].except, ["one_slice_per_attempt"]);
        assert!(selections[0].except.is_empty());
        assert_eq!(selections[2].prefix.as_deref(), Some("each_url"));
        assert_eq!(
            s.cargo_command(),
            "cargo test --test behaviour --test trace -- --skip one_slice_per_attempt \
             && cargo test --test crawler -- each_url"
        );
        assert!(
            parse_skip("trace one_slice_per_attempt").is_err(),
            "a skip says why"
        );
    }

    /// A checkout holding only lesson 1's chapter and the stage list `toml`.
    fn load_list(toml: &str) -> Result<StageList> {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("docs/src")).unwrap();
        std::fs::create_dir_all(root.path().join("docs/starters")).unwrap();
        std::fs::write(
            root.path().join("docs/src/lesson1.md"),
            "# Lesson 1\n\n## A\n\n## B\n\n## C\n",
        )
        .unwrap();
        std::fs::write(root.path().join("docs/starters/lesson1.toml"), toml).unwrap();
        StageList::load(root.path(), "1")
    }

    fn three_stages(first: &str) -> String {
        let mut text = String::from("lesson = \"lesson1-threadpool\"\n");
        text.push_str(first);
        for name in ["two", "three"] {
            text.push_str(&format!(
                "[[stage]]\nname = \"{name}\"\nsections = [\"C\"]\nwrite = \"w\"\n\
                 checks = \"c\"\nhint = \"h\"\ntests = [\"t\"]\nblank = []\n"
            ));
        }
        text
    }

    #[test]
    fn sections_must_be_headings_and_contracts_must_be_blanks() {
        let stage = |sections: &str, contract: &str| {
            format!(
                "[[stage]]\nname = \"one\"\nsections = {sections}\nwrite = \"w\"\n\
                 checks = \"c\"\nhint = \"h\"\ntests = [\"t\"]\n\
                 blank = [\"a.rs: A::f\", \"a.rs: g\"]\n{contract}"
            )
        };
        let good = load_list(&three_stages(&stage(
            "[\"A\", \"B\"]",
            "[stage.contract]\n\"a.rs: g\" = \"Returns 1.\"\n",
        )))
        .unwrap();
        assert_eq!(good.stages[0].section(), "A");
        assert_eq!(good.stages[0].without_contract(), ["a.rs: A::f"]);
        assert!(good.has_contracts());

        let err = |sections: &str, contract: &str| {
            format!(
                "{:#}",
                load_list(&three_stages(&stage(sections, contract))).unwrap_err()
            )
        };
        let e = err("[\"A\", \"Z\"]", "");
        assert!(e.contains("\"Z\" is not a heading of lesson1.md"), "{e}");
        let e = err("[]", "");
        assert!(e.contains("sections = []"), "{e}");
        let e = err(
            "[\"A\"]",
            "[stage.contract]\n\"a.rs: h\" = \"Returns 2.\"\n",
        );
        assert!(e.contains("\"a.rs: h\" is not a `blank` entry"), "{e}");
        // The old single `section` is refused, not ignored.
        let e = format!(
            "{:#}",
            load_list(&three_stages(&stage("[\"A\"]\nsection = \"A\"", ""))).unwrap_err()
        );
        assert!(e.contains("unknown field `section`"), "{e}");
    }

    #[test]
    fn every_stage_list_of_the_checkout_loads() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for (krate, _, _) in LESSONS {
            let list = StageList::load(&root, krate).expect(krate);
            assert!((3..=MAX_STAGES).contains(&list.stages.len()));
        }
    }
}
