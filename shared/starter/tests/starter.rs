//! The `starter` program as a learner runs it: what it writes, what it
//! refuses, and that it finds the course's checkout at run time (one binary,
//! two checkouts).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// This checkout.
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn starter(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_starter"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run starter")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What `git status` says about the checkout, if git is there to ask.
fn git_status(dir: &Path) -> Option<String> {
    let out = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(dir)
        .output()
        .ok()?;
    out.status.success().then(|| text(&out.stdout))
}

#[test]
fn an_unknown_lesson_is_a_usage_error_and_writes_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("mine");
    let out = starter(&checkout(), &["new", "lesson9", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("unknown lesson \"lesson9\""),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.exists());
}

#[test]
fn a_directory_that_is_not_empty_is_refused_untouched() {
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(scratch.path().join("notes.txt"), "mine").unwrap();
    let out = starter(&checkout(), &["new", "2", scratch.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("is not empty"),
        "{}",
        text(&out.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(scratch.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "something was written beside notes.txt");
}

#[test]
fn a_starter_blanks_its_stages_and_leaves_the_checkout_as_it_was() {
    let root = checkout();
    let before = git_status(&root);
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("my-lesson3");
    let out = starter(&root, &["new", "lesson3", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("next: stage 1 (generator)"), "{said}");
    // Where to read, as the book is opened: the chapter, the section, its address.
    assert!(
        said.contains("read: Lesson 3, section")
            && said.contains(&format!(
                "mdbook serve {}/docs --port 4000 --open",
                root.display()
            ))
            && said.contains("http://localhost:4000/lesson3.html?mode=build#"),
        "{said}"
    );
    // The commands name the checkout's manifest: they work from anywhere,
    // the starter's own directory included.
    let tool = format!(
        "cargo run -q --manifest-path {}/Cargo.toml -p starter --",
        root.display()
    );
    assert!(
        said.contains(&format!(
            "{tool} watch {}",
            dir.canonicalize().unwrap().display()
        )),
        "{said}"
    );

    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("\n[workspace]"), "{manifest}");
    assert!(manifest.contains(&format!("course = {:?}", root.display().to_string())));
    assert!(manifest.contains("written-through-stage = 0"));
    let future = std::fs::read_to_string(dir.join("src/future.rs")).unwrap();
    // The book's listing markers are not in a learner's copy.
    assert!(!future.contains("// ANCHOR"), "{future}");
    // The structs the learner designs keep their name and lose their fields.
    let core = &future[future
        .find("struct Core<T> {")
        .expect("Core is still there")..];
    let core = &core[..core.find("\n}").expect("Core's closing brace")];
    assert!(
        core.contains("// stage 2: your fields, yours to choose. What they are for:")
            && core.contains("_yours: std::marker::PhantomData<fn() -> (T,)>")
            && !core.contains("callbacks:"),
        "{core}"
    );
    let generator = std::fs::read_to_string(dir.join("src/generator.rs")).unwrap();
    assert!(
        generator.contains("todo!(\"stage 1: read Lesson 3, section \\\"")
            && generator.contains("then write generators by hand"),
        "{generator}"
    );
    assert!(
        generator.contains("read Lesson 3, section \\\"")
            && generator.contains("http://localhost:4000/lesson3.html?mode=build#"),
        "the todo! names the chapter and section as the book shows them: {generator}"
    );
    // The lesson's tests come whole, and the lock file pins the same crates.
    let lesson = root.join("lesson3-generators");
    for file in ["tests/future.rs", "tests/behaviour.rs"] {
        assert_eq!(
            std::fs::read(dir.join(file)).unwrap(),
            std::fs::read(lesson.join(file)).unwrap(),
            "{file}"
        );
    }
    assert!(dir.join("Cargo.lock").is_file());
    assert_eq!(
        git_status(&root),
        before,
        "starter new changed the checkout"
    );

    // The lesson's code for stage 1, beside the learner's (still blank).
    let out = starter(&root, &["solution", dir.to_str().unwrap(), "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let diff = text(&out.stdout);
    assert!(diff.contains("-        todo!(\"stage 1"), "{diff}");
    assert!(diff.contains("+        match *self {"), "{diff}");
    let out = starter(&root, &["solution", dir.to_str().unwrap(), "9"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn through_the_last_stage_nothing_is_left_to_write() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("done");
    // Lesson 4's stage count, from its list, so a new stage keeps this test true.
    let list = std::fs::read_to_string(checkout().join("docs/starters/lesson4.toml")).unwrap();
    let stages = list.matches("[[stage]]").count();
    let (last, past) = (stages.to_string(), (stages + 1).to_string());
    let out = starter(
        &checkout(),
        &[
            "new",
            "lesson4-asyncio-style",
            dir.to_str().unwrap(),
            "--through",
            &last,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    for entry in std::fs::read_dir(dir.join("src")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("todo!(\"stage"), "{}", path.display());
        let lesson = checkout()
            .join("lesson4-asyncio-style/src")
            .join(path.file_name().unwrap());
        assert_eq!(text, std::fs::read_to_string(lesson).unwrap());
    }
    let out = starter(
        &checkout(),
        &[
            "new",
            "4",
            scratch.path().join("x").to_str().unwrap(),
            "--through",
            &past,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
}

/// Copies what `starter new 1` reads from the checkout at `from` into a
/// second checkout at `to`, with lesson 1's first stage described otherwise.
fn second_checkout(from: &Path, to: &Path) {
    for file in ["Cargo.toml", "Cargo.lock", "docs/src/lesson1.md"] {
        std::fs::create_dir_all(to.join(file).parent().unwrap()).unwrap();
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
    let stages = std::fs::read_to_string(from.join("docs/starters/lesson1.toml")).unwrap();
    let changed = stages.replacen("write = \"", "write = \"(the second checkout) ", 1);
    std::fs::create_dir_all(to.join("docs/starters")).unwrap();
    std::fs::write(to.join("docs/starters/lesson1.toml"), changed).unwrap();
    let krate = from.join("lesson1-threadpool");
    for entry in walk(&krate) {
        let rel = entry.strip_prefix(&krate).unwrap();
        if rel.starts_with("target") {
            continue;
        }
        let dest = to.join("lesson1-threadpool").join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&entry, dest).unwrap();
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// One `starter` binary, built once, serves two checkouts: each run reads
/// the stage list and lesson of the checkout it is run in, not the one it
/// was built from.
#[test]
fn one_binary_serves_the_checkout_it_is_run_in() {
    let scratch = tempfile::tempdir().unwrap();
    let other = scratch.path().join("other-checkout");
    second_checkout(&checkout(), &other);
    let other = other.canonicalize().unwrap();

    let from_other = scratch.path().join("from-other");
    let out = starter(&other, &["new", "1", from_other.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let manifest = std::fs::read_to_string(from_other.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!("course = {:?}", other.display().to_string())),
        "{manifest}"
    );
    let fetch = std::fs::read_to_string(from_other.join("src/fetch.rs")).unwrap();
    assert!(
        fetch.contains("stage 1: read Lesson 1, section")
            && fetch.contains("then write (the second checkout)"),
        "{fetch}"
    );

    let from_this = scratch.path().join("from-this");
    let out = starter(&checkout(), &["new", "1", from_this.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fetch = std::fs::read_to_string(from_this.join("src/fetch.rs")).unwrap();
    assert!(!fetch.contains("the second checkout"));

    // And `--root` names a checkout from anywhere.
    let by_root = scratch.path().join("by-root");
    let out = starter(
        scratch.path(),
        &[
            "--root",
            other.to_str().unwrap(),
            "new",
            "1",
            by_root.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(by_root.join("src/fetch.rs"))
        .unwrap()
        .contains("the second checkout"));
}

/// Every `path = "..."` in a manifest, with the table it is in.
fn paths_in(value: &toml::Value, at: &str, out: &mut Vec<(String, String)>) {
    match value {
        toml::Value::Table(table) => {
            for (key, v) in table {
                let here = format!("{at}.{key}");
                match (key.as_str(), v) {
                    ("path", toml::Value::String(p)) => out.push((here, p.clone())),
                    _ => paths_in(v, &here, out),
                }
            }
        }
        toml::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                paths_in(v, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// A starter written into a lone empty directory, with nothing beside it,
/// points at nothing relative to where it was written: every dependency's
/// path is absolute and is a crate; any other path is a file of its own.
#[test]
fn every_starters_manifest_points_only_at_absolute_paths_or_its_own_files() {
    for lesson in ["1", "2", "3", "4"] {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("alone");
        let out = starter(&checkout(), &["new", lesson, dir.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let parsed: toml::Value = toml::from_str(&manifest).unwrap();
        let mut paths = Vec::new();
        paths_in(&parsed, "", &mut paths);
        let mut dependencies = 0;
        for (at, path) in &paths {
            let is_dependency = at.contains("dependencies.");
            if is_dependency {
                dependencies += 1;
                assert!(
                    Path::new(path).is_absolute(),
                    "lesson {lesson}: {at} = {path:?} is relative to where the starter was written:\n{manifest}"
                );
                assert!(
                    Path::new(path).join("Cargo.toml").is_file(),
                    "lesson {lesson}: {at} = {path:?} is not a crate"
                );
                assert!(
                    !path.contains(".."),
                    "lesson {lesson}: {at} = {path:?} is not written plainly"
                );
            } else {
                assert!(
                    dir.join(path).is_file(),
                    "lesson {lesson}: {at} = {path:?} is not a file of the starter"
                );
            }
        }
        assert!(
            dependencies >= 1,
            "lesson {lesson}: no dependency by path (`shared` at least):\n{manifest}"
        );
    }
}

/// Lessons 2 and 3 test against the lessons before them (dev-dependencies
/// by path): their starters, alone in a directory outside the checkout,
/// still compile, tests and all. The target directory is this test's own
/// (a check builds nothing `starter verify` could reuse), kept between runs
/// so the dependencies build once.
#[test]
fn a_starter_that_uses_an_earlier_lesson_compiles_alone() {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| checkout().join("target"), PathBuf::from)
        .join("starter-tests");
    for lesson in ["2", "3"] {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join(format!("my-lesson{lesson}"));
        let out = starter(&checkout(), &["new", lesson, dir.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        // A copy of the lesson built there before must not pass for this one.
        starter::run::forget_own_build(&target, &dir).unwrap();
        let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["check", "--tests", "--quiet"])
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .expect("run cargo check");
        assert!(
            out.status.success(),
            "lesson {lesson}'s starter, alone in {}, does not compile:\n{}",
            dir.display(),
            text(&out.stderr)
        );
    }
}

/// `--help` is the learner's: what the tool does and how to start, with
/// the maintainers' commands marked as theirs.
#[test]
fn help_describes_the_starter() {
    let out = starter(&checkout(), &["--help"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    for word in [
        "starter crate",
        "new",
        "check",
        "watch",
        "solution",
        "cargo run -p starter -- new lesson1",
    ] {
        assert!(
            help.contains(word),
            "--help does not mention {word:?}:\n{help}"
        );
    }
    for word in ["benchmark", "diff pages", "book's checker"] {
        assert!(!help.contains(word), "--help mentions {word:?}:\n{help}");
    }
    assert!(
        help.lines()
            .any(|l| l.trim_start().starts_with("verify") && l.contains("maintainers")),
        "{help}"
    );
}

/// `hint` gives a stage's goals, what its tests check and its hint; the
/// steps only with `--steps`. Without a stage number, the first stage with
/// a function still to write.
#[test]
fn hint_gives_the_goals_and_the_steps_only_when_asked() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("mine");
    let dir_text = dir.to_str().unwrap();
    let out = starter(&checkout(), &["new", "1", dir_text, "--through", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list: toml::Table = toml::from_str(
        &std::fs::read_to_string(checkout().join("docs/starters/lesson1.toml")).unwrap(),
    )
    .unwrap();
    let stage = |k: usize| list["stage"].as_array().unwrap()[k - 1].as_table().unwrap();
    let first_entry = |k: usize| {
        stage(k)["blank"].as_array().unwrap()[0]
            .as_str()
            .unwrap()
            .to_string()
    };
    let one_line = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");

    // Stage 1 is written: the first stage left is 2.
    let out = starter(&checkout(), &["hint", dir_text]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.starts_with("stage 2 ("), "{said}");
    let entry = first_entry(2);
    let goal = one_line(stage(2)["goal"][entry.as_str()].as_str().unwrap());
    let steps = one_line(stage(2)["contract"][entry.as_str()].as_str().unwrap());
    assert!(said.contains(&goal), "the goal of {entry}: {said}");
    assert!(
        !said.contains(&steps),
        "the steps only with --steps: {said}"
    );
    assert!(said.contains("its tests check: "), "{said}");
    assert!(
        said.contains(&format!("hint {dir_text} 2 --steps")),
        "{said}"
    );

    let out = starter(&checkout(), &["hint", dir_text, "2", "--steps"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains(&goal) && said.contains(&steps), "{said}");
}

/// A starter's blank `drop` fails a test that drops its value, with the
/// stage's message, and does not abort the test binary when the value is
/// dropped while another panic unwinds (a failing assertion holding a
/// guard): every test still gets its own result.
#[test]
fn a_blank_drop_fails_its_test_without_aborting_the_others() {
    let krate = tempfile::tempdir().unwrap();
    let dir = krate.path();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"blank-drop\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    let lib = "pub struct Guard;\n\nimpl Drop for Guard {\n    fn drop(&mut self) {\n        println!(\"given back\");\n    }\n}\n";
    let path = starter::blank::FnPath::parse("lib.rs: Drop for Guard::drop").unwrap();
    let blanked = starter::blank::blank_all(lib, &[(path, "stage 1: the guard".into())]).unwrap();
    std::fs::write(dir.join("src/lib.rs"), blanked).unwrap();
    std::fs::write(
        dir.join("tests/guard.rs"),
        "#[test]\nfn dropped_plainly() {\n    drop(blank_drop::Guard);\n}\n\n\
         #[test]\nfn dropped_while_an_assertion_fails() {\n    let _guard = blank_drop::Guard;\n    \
         assert_eq!(1, 2, \"the test's own failure\");\n}\n\n\
         #[test]\nfn never_made() {}\n",
    )
    .unwrap();
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["test", "-q", "--test", "guard"])
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .current_dir(dir)
        .output()
        .expect("run cargo test");
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        all.contains("1 passed; 2 failed"),
        "every test has its own result: no abort\n{all}"
    );
    assert!(
        all.contains("not yet implemented: stage 1: the guard"),
        "the plain drop fails with the stage's message\n{all}"
    );
    assert!(
        all.contains("the test's own failure") && !all.contains("panic in a destructor"),
        "the drop during the assertion's unwinding stays quiet\n{all}"
    );
}

/// Names of the learner's functions that std's sockets, channels and the
/// shared parser have too (`conn.write_all(…)` in a test's server thread).
const STD_NAMES: &[&str] = &[
    "write_all",
    "connect",
    "send",
    "finish",
    "read",
    "flush",
    "recv",
];

/// What a call of a learner's function is followed by when it panics on a
/// result without saying why: `NAME(…)` (or `NAME(…).await`), then a bare
/// `.unwrap()` or `.unwrap_err()`.
fn bare_unwraps(text: &str, names: &std::collections::BTreeSet<String>) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    for name in names {
        let mut from = 0;
        while let Some(at) = text[from..].find(&format!("{name}(")).map(|i| i + from) {
            from = at + name.len() + 1;
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // a longer name that ends in this one
            }
            // The call's closing parenthesis.
            let (mut depth, mut end) = (0usize, None);
            for (i, &b) in bytes.iter().enumerate().skip(at + name.len()) {
                match b {
                    b'(' => depth += 1,
                    b')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(i + 1);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let Some(end) = end else { continue };
            let rest = text[end..].trim_start();
            let awaited = rest.starts_with(".await");
            let rest = rest.strip_prefix(".await").map_or(rest, str::trim_start);
            // A name the standard library's blocking sockets and channels
            // also have is the learner's only when it is awaited.
            if STD_NAMES.contains(&name.as_str()) && !awaited {
                continue;
            }
            if rest.starts_with(".unwrap()") || rest.starts_with(".unwrap_err()") {
                let line = text[..at].matches('\n').count() + 1;
                out.push((line, name.clone()));
            }
        }
    }
    out
}

#[test]
fn stage_tests_name_the_rule_when_a_learners_function_returns_the_wrong_result() {
    let root = checkout();
    let mut found = Vec::new();
    for lesson in ["1", "2", "3", "4"] {
        let list = starter::stages::StageList::load(&root, lesson).expect("the stage list");
        let names: std::collections::BTreeSet<String> = list
            .stages
            .iter()
            .flat_map(|s| &s.blank)
            .filter_map(|spec| starter::blank::FnPath::parse(spec).ok())
            // `new`, `get`, `read` and their like are also the standard
            // library's and the fixtures' names: the typed path is the
            // learner's, the bare name may not be.
            .map(|p| match (&p.type_name, p.trait_name) {
                (Some(ty), None) if p.name.len() <= 4 => format!("{ty}::{}", p.name),
                _ => p.name,
            })
            .collect();
        let tests = list.crate_dir(&root).join("tests");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&tests)
            .expect("the lesson's tests")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a test file");
            for (line, name) in bare_unwraps(&text, &names) {
                found.push(format!(
                    "{}:{line}: `{name}(…)` then a bare unwrap",
                    file.strip_prefix(&root).unwrap_or(&file).display()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a stage test that fails on what the learner's function returned must say which rule \
         it checks (`.expect(\"`NAME` must …\")`), not panic with \"called `Result::unwrap()` \
         on an `Err` value\":\n{}",
        found.join("\n")
    );
}

#[test]
fn a_bare_unwrap_after_a_learners_call_is_found() {
    let names = ["run_once".to_string(), "Queue::get".to_string()].into();
    let text = "let a = ev.run_once().unwrap();\nlet b = ev.run_once().expect(\"`run_once` must …\");\n\
                let c = q.my_run_once(x).unwrap();\nlet d = Queue::get(&q,\n  (1, 2))\n  .await\n  .unwrap_err();\n";
    assert_eq!(
        bare_unwraps(text, &names),
        [(4, "Queue::get".to_string()), (1, "run_once".to_string())]
    );
}
