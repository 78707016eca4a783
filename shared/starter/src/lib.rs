//! # Starters: a lesson with its mechanism left for the learner to write
//!
//! A starter is a copy of one lesson crate in which the bodies of the
//! functions a stage names are `todo!("stage K: …")`. Everything else is
//! real: the command line, the binary, the tests, and `shared` and any
//! lesson the tests compare with (by absolute path into the checkout, so
//! the starter builds wherever it is written). The learner writes the
//! stages in the chapter's order, and each stage's tests turn from red to
//! green.
//!
//! | module | what it does |
//! |---|---|
//! | [`stages`] | reading a lesson's stage list (`docs/starters/lessonN.toml`) |
//! | [`blank`] | finding a function's body with `syn`, blanking it |
//! | [`run`] | building a crate's tests and running its stages in order |
//! | [`contracts`] | the page of each stage's contracts, for the book's building mode |
//! | [`watch`] | `watch`: which saved files call for a new check |
//! | [`each`] | `verify --each-function`: every blanked function caught by its own stage |
//!
//! The starter's `Cargo.toml` is the lesson's, with what it took from the
//! workspace written out (`toml_edit` keeps its comments), its own empty
//! `[workspace]` so that it builds wherever it is, and the course's
//! checkout recorded under `[package.metadata.starter]`.

pub mod api;
pub mod blank;
pub mod contracts;
pub mod each;
pub mod mistakes;
pub mod run;
pub mod stages;
pub mod watch;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use toml_edit::{DocumentMut, Item, Table, Value};

use blank::{FnPath, StructPath};
use stages::StageList;

/// Lints a starter allows beyond the workspace's, because its blank bodies
/// leave parameters, imports, helpers and fields unused until written.
const BLANK_LINTS: [&str; 4] = [
    "unused_variables",
    "unused_imports",
    "unused_mut",
    "dead_code",
];

/// Writes the starter of `list`'s lesson into `dir`, with stages
/// `1..=through` written as the lesson has them and the rest blanked.
pub fn write_starter(root: &Path, list: &StageList, dir: &Path, through: usize) -> Result<()> {
    if through > list.stages.len() {
        bail!(
            "--through {through}: {} has {} stages",
            list.lesson,
            list.stages.len()
        );
    }
    if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
        bail!(
            "{} exists and is not empty: give a new directory (nothing was written)",
            dir.display()
        );
    }
    // Everything is computed before the first file is written, so that an
    // error leaves nothing behind.
    let files = starter_files(root, list, through)?;
    for (path, text) in &files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}

/// `text` without the lines that only mark where the book's listings start
/// and end (`// ANCHOR: name`, `// ANCHOR_END: name`): noise in a learner's
/// copy.
fn without_anchors(text: &str) -> String {
    text.split_inclusive('\n')
        .filter(|line| {
            let line = line.trim();
            !(line.starts_with("// ANCHOR: ") || line.starts_with("// ANCHOR_END: "))
        })
        .collect()
}

/// The line that opens a passage of a module's `//!` text saying how the
/// lesson's code does its job, and the line that closes it. The book folds
/// the same explanations under "How the lesson does it"; a learner's copy
/// goes without them, so that the module's header states what it is for
/// and leaves the how to the learner.
pub const HOW_OPEN: &str = "//! <!-- how -->";
/// See [`HOW_OPEN`].
pub const HOW_CLOSE: &str = "//! <!-- /how -->";

/// What stands in a learner's copy where such a passage was.
const HOW_CUT: &str = "//! (How the lesson does this is in the chapter, folded under\n\
                       //! \"How the lesson does it\": open it once your own attempt passes.)\n";

/// `text` with every passage between [`HOW_OPEN`] and [`HOW_CLOSE`]
/// replaced by [`HOW_CUT`]. An unclosed passage runs to the end of the
/// module's `//!` lines.
fn without_how(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut cutting = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if cutting {
            if t == HOW_CLOSE || !t.starts_with("//!") {
                cutting = false;
                if t != HOW_CLOSE {
                    out.push_str(line);
                }
            }
            continue;
        }
        if t == HOW_OPEN {
            cutting = true;
            out.push_str(HOW_CUT);
            continue;
        }
        out.push_str(line);
    }
    out
}

/// What stands where the fields of a struct the learner designs were:
/// the stage, and what the fields must make possible (the entry's goal).
fn state_message(number: usize, stage: &stages::Stage, spec: &str) -> String {
    let goal = stage.goal.get(spec).map_or("", String::as_str);
    format!("stage {number}: your fields, yours to choose. What they are for: {goal}")
}

/// The starter's files: relative path and contents.
pub fn starter_files(
    root: &Path,
    list: &StageList,
    through: usize,
) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let root = root
        .canonicalize()
        .with_context(|| format!("find {}", root.display()))?;
    let crate_dir = list.crate_dir(&root);
    let mut files = Vec::new();
    // Which functions to blank, by file.
    let mut blanks: Vec<(FnPath, String)> = Vec::new();
    // Which structs' fields to leave to the learner, by file.
    let mut structs: Vec<(StructPath, String)> = Vec::new();
    for (i, stage) in list.stages.iter().enumerate().skip(through) {
        let message = list.todo_message(i + 1, stage);
        for spec in &stage.blank {
            blanks.push((FnPath::parse(spec)?, message.clone()));
        }
        for spec in &stage.state {
            structs.push((StructPath::parse(spec)?, state_message(i + 1, stage, spec)));
        }
    }
    for sub in ["src", "tests", "examples"] {
        for path in rust_files(&crate_dir.join(sub))? {
            let rel = path.strip_prefix(&crate_dir)?.to_path_buf();
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("read {}", path.display()))?;
            let in_src = rel
                .strip_prefix("src")
                .ok()
                .map(|p| p.to_string_lossy().into_owned());
            let here = |file: &str| in_src.as_deref() == Some(file);
            let fns: Vec<_> = blanks
                .iter()
                .filter(|(p, _)| here(&p.file))
                .cloned()
                .collect();
            let text = blank::blank_all(&text, &fns)
                .with_context(|| format!("blank {}", rel.display()))?;
            let fields: Vec<_> = structs
                .iter()
                .filter(|(p, _)| here(&p.file))
                .cloned()
                .collect();
            let text = blank::blank_structs(&text, &fields)
                .with_context(|| format!("leave the fields of {}", rel.display()))?;
            // A copy with every stage written is the lesson as it is (the
            // classic mistakes are written against its text, anchors
            // included); a learner's copy has no book markers.
            let text = if through < list.stages.len() {
                without_how(&without_anchors(&text))
            } else {
                text
            };
            files.push((rel, text.into_bytes()));
        }
    }
    for (path, _) in &structs {
        if !files
            .iter()
            .any(|(rel, _)| rel == &Path::new("src").join(&path.file))
        {
            bail!("{path}: no such file in {}/src", list.lesson);
        }
    }
    for (path, _) in &blanks {
        if !files
            .iter()
            .any(|(rel, _)| rel == &Path::new("src").join(&path.file))
        {
            bail!("{path}: no such file in {}/src", list.lesson);
        }
    }
    files.push((
        "Cargo.toml".into(),
        manifest(&root, list, through)?.into_bytes(),
    ));
    let lock = root.join("Cargo.lock");
    files.push((
        "Cargo.lock".into(),
        std::fs::read(&lock).with_context(|| format!("read {}", lock.display()))?,
    ));
    files.push((".gitignore".into(), b"/target\n".to_vec()));
    files.push(("README.md".into(), readme(list, through).into_bytes()));
    Ok(files)
}

/// Every `.rs` file under `dir`, sorted (none if `dir` does not exist).
fn rust_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        return Ok(out);
    }
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry?;
        if entry.file_type().is_file() && entry.path().extension().is_some_and(|e| e == "rs") {
            out.push(entry.into_path());
        }
    }
    Ok(out)
}

/// The lesson's `Cargo.toml` made to stand alone.
fn manifest(root: &Path, list: &StageList, through: usize) -> Result<String> {
    let read = |path: PathBuf| -> Result<DocumentMut> {
        std::fs::read_to_string(&path)
            .with_context(|| format!("read {}", path.display()))?
            .parse::<DocumentMut>()
            .with_context(|| format!("parse {}", path.display()))
    };
    let workspace = read(root.join("Cargo.toml"))?;
    let mut doc = read(list.crate_dir(root).join("Cargo.toml"))?;
    let ws = workspace
        .get("workspace")
        .and_then(Item::as_table)
        .context("the checkout's Cargo.toml has no [workspace]")?;

    // [package]: `version.workspace = true` and the like, written out.
    let package = doc
        .get_mut("package")
        .and_then(Item::as_table_mut)
        .context("no [package]")?;
    let keys: Vec<String> = package.iter().map(|(k, _)| k.to_string()).collect();
    for key in keys {
        if inherits(&package[&key]) {
            let value = ws
                .get("package")
                .and_then(|p| p.get(&key))
                .with_context(|| format!("[workspace.package] has no {key}"))?;
            package[&key] = value.clone();
        }
    }
    let mut meta = Table::new();
    meta["course"] = toml_edit::value(root.to_string_lossy().as_ref());
    meta["lesson"] = toml_edit::value(list.lesson.as_str());
    meta["written-through-stage"] = toml_edit::value(through as i64);
    let mut metadata = Table::new();
    metadata.set_implicit(true);
    metadata["starter"] = Item::Table(meta);
    package["metadata"] = Item::Table(metadata);

    // Every table of dependencies, the platform-specific ones included:
    // what they take from the workspace written out, and every path made
    // absolute, so that the starter builds wherever it is written, with
    // nothing beside it.
    let crate_dir = list.crate_dir(root);
    for kind in DEPENDENCY_TABLES {
        if let Some(table) = doc.get_mut(kind).and_then(Item::as_table_like_mut) {
            standalone_dependencies(table, ws, root, &crate_dir)?;
        }
    }
    if let Some(targets) = doc.get_mut("target").and_then(Item::as_table_like_mut) {
        for (_, platform) in targets.iter_mut() {
            for kind in DEPENDENCY_TABLES {
                if let Some(table) = platform.get_mut(kind).and_then(Item::as_table_like_mut) {
                    standalone_dependencies(table, ws, root, &crate_dir)?;
                }
            }
        }
    }

    // [lints]: the workspace's, plus what the blank bodies need.
    let mut lints = ws
        .get("lints")
        .and_then(Item::as_table)
        .cloned()
        .unwrap_or_default();
    lints.set_implicit(true);
    let rust = lints
        .entry("rust")
        .or_insert(Item::Table(Table::new()))
        .as_table_mut()
        .context("[workspace.lints.rust] is not a table")?;
    for lint in BLANK_LINTS {
        rust[lint] = toml_edit::value("allow");
    }
    rust.key_mut(BLANK_LINTS[0])
        .context("the lint just added")?
        .leaf_decor_mut()
        .set_prefix(
            "\n# The blank bodies leave parameters, imports, helpers and fields unused\n\
             # until you write them: these four are allowed for that reason only.\n",
        );
    doc["lints"] = Item::Table(lints);

    // Its own workspace: it builds outside the course's, wherever it is.
    let mut own = Table::new();
    own.decor_mut()
        .set_prefix("\n# A workspace of its own, so that this crate builds wherever it is.\n");
    doc["workspace"] = Item::Table(own);
    Ok(doc.to_string())
}

/// The tables of a manifest that list dependencies.
const DEPENDENCY_TABLES: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];

/// One table of dependencies made to stand alone: an entry inherited from
/// `[workspace.dependencies]` is written out, its `path` resolved against
/// the checkout's root; the lesson's own `path` (lesson 3's
/// `lesson1-threadpool = { path = "../lesson1-threadpool" }`) is resolved
/// against the lesson's directory. Both are written absolute.
fn standalone_dependencies(
    table: &mut dyn toml_edit::TableLike,
    ws: &Table,
    root: &Path,
    crate_dir: &Path,
) -> Result<()> {
    let keys: Vec<String> = table.iter().map(|(k, _)| k.to_string()).collect();
    for key in keys {
        let item = table.get_mut(&key).context("a key just listed")?;
        if !inherits(item) {
            if let Some(dep) = item.as_table_like_mut() {
                if let Some(path) = dep.get("path").and_then(Item::as_str) {
                    let absolute = absolute(crate_dir, path);
                    let decor = dep
                        .get("path")
                        .and_then(Item::as_value)
                        .map(|v| v.decor().clone());
                    let mut value = Value::from(absolute);
                    if let Some(decor) = decor {
                        *value.decor_mut() = decor;
                    }
                    dep.insert("path", Item::Value(value));
                }
            }
            continue;
        }
        let from_ws = ws
            .get("dependencies")
            .and_then(|d| d.get(&key))
            .with_context(|| format!("[workspace.dependencies] has no {key}"))?;
        let mut dep = match from_ws.as_value() {
            Some(Value::String(v)) => {
                let mut t = toml_edit::InlineTable::new();
                t.insert("version", Value::from(v.value().as_str()));
                t
            }
            Some(Value::InlineTable(t)) => t.clone(),
            _ => bail!("[workspace.dependencies] {key}: not a version or inline table"),
        };
        if let Some(path) = dep.get("path").and_then(Value::as_str) {
            dep.insert("path", Value::from(absolute(root, path)));
        }
        // Keys the lesson adds (features, optional) stay.
        if let Some(own) = item.as_table_like() {
            for (k, v) in own.iter().filter(|(k, _)| *k != "workspace") {
                if let Some(v) = v.as_value() {
                    dep.insert(k, v.clone());
                }
            }
        }
        dep.fmt();
        *item = Item::Value(Value::InlineTable(dep));
    }
    Ok(())
}

/// `path` as an absolute path, resolved against `base` when relative;
/// without `..` when the place exists.
fn absolute(base: &Path, path: &str) -> String {
    let joined = base.join(path);
    joined
        .canonicalize()
        .unwrap_or(joined)
        .to_string_lossy()
        .into_owned()
}

/// Whether a manifest entry is `workspace = true`.
fn inherits(item: &Item) -> bool {
    item.get("workspace").and_then(Item::as_bool) == Some(true)
}

/// The starter's README: what it is and how to work in it.
fn readme(list: &StageList, through: usize) -> String {
    let tool = |args: &str| list.course_command(args);
    let mut text = format!(
        "# {} — a starter\n\n\
         This crate is lesson {}'s crawler with the bodies of its mechanism left\n\
         for you to write: each is `todo!(\"stage K: …\")`. Write the stages in order;\n\
         each stage's tests turn from red to green. The chapter is {}: serve the\n\
         book with `{}` and open\n\
         {}; its section \"Build it yourself\" has a hint for each stage.\n\n\
         ```sh\n\
         cargo test     # every test: red until the last stage is written\n\
         # the course's tool, from this directory:\n\
         {}          # where you are, what is next\n\
         {}          # the same, again each time you save\n\
         {}           # what the next stage asks of you\n\
         {}   # the lesson's code for stage K, beside yours\n\
         {}           # once a stage is green: break it on purpose\n\
         ```\n\n\
         | stage | write | its tests |\n|---|---|---|\n",
        list.lesson,
        &list.chapter[6..7],
        list.title,
        list.serve_command(),
        list.book_url("Build it yourself")
            .split('#')
            .next()
            .unwrap_or_default(),
        tool("check ."),
        tool("watch ."),
        tool("hint ."),
        tool("solution . K"),
        tool("break ."),
    );
    for (i, stage) in list.stages.iter().enumerate() {
        let done = if i < through { " (written)" } else { "" };
        text.push_str(&format!(
            "| {} {}{done} | {} | `{}` |\n",
            i + 1,
            stage.name,
            stage.write,
            stage.cargo_command()
        ));
    }
    text
}

/// The course checkout to work on, found at run time: `root` when given
/// (`--root`), else what `cargo locate-project --workspace` says for the
/// current directory, else the nearest `Cargo.toml` with a `[workspace]`
/// table above it.
///
/// Not the directory the tool was *built* in: a binary reused from a target
/// directory that two checkouts share must read and write the checkout it
/// is run in.
pub fn workspace_root(root: Option<&Path>) -> Result<PathBuf> {
    if let Some(root) = root {
        if !root.join("Cargo.toml").is_file() {
            bail!("--root {}: no Cargo.toml there", root.display());
        }
        return Ok(root.to_path_buf());
    }
    let is_course =
        |dir: &Path| dir.join("docs/starters").is_dir() && dir.join("Cargo.toml").is_file();
    let here = std::env::current_dir().context("the current directory")?;
    let located = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["locate-project", "--workspace", "--message-format", "plain"])
        .current_dir(&here)
        .output();
    if let Ok(out) = located {
        if out.status.success() {
            let manifest = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if let Some(dir) = manifest.parent().filter(|dir| is_course(dir)) {
                return Ok(dir.to_path_buf());
            }
        }
    }
    if let Some(dir) = here.ancestors().find(|dir| is_course(dir)) {
        return Ok(dir.to_path_buf());
    }
    // Anywhere else (a learner's starter, say): the checkout this tool was
    // built from, which `cargo run --manifest-path …` and `cargo install
    // --path …` both leave where it was.
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match built_from.canonicalize() {
        Ok(dir) if is_course(&dir) => Ok(dir),
        _ => bail!(
            "{} is not inside the course's checkout, and the checkout this tool was built from is gone: run from the checkout, or give --root DIR",
            here.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_learners_copy_goes_without_the_how_of_a_module_header() {
        let text = "//! # Queue\n//!\n//! What it is for.\n//! <!-- how -->\n//! One lock and two \
                    condvars.\n//! <!-- /how -->\n//! More of what it is for.\n\nuse std::sync::Mutex;\n";
        let cut = without_how(text);
        assert!(!cut.contains("condvars"), "{cut}");
        assert!(
            cut.contains("What it is for.\n//! (How the lesson does this"),
            "{cut}"
        );
        assert!(
            cut.contains("//! More of what it is for.\n\nuse std"),
            "{cut}"
        );
        // Unclosed: the passage ends with the header.
        let open = "//! A.\n//! <!-- how -->\n//! B.\nfn f() {}\n";
        assert_eq!(without_how(open), format!("//! A.\n{HOW_CUT}fn f() {{}}\n"));
    }
}
