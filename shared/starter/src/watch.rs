//! `starter watch DIR`: check the starter again each time one of its files
//! is saved, as rustlings' `watch` does.
//!
//! The file watcher is `notify` (through `notify-debouncer-mini`, which
//! gathers the events of one save, often several for one file, into one
//! batch after a quiet spell). What counts as a save is decided here, in
//! [`wants`], so that it can be tested without a terminal or a file system:
//! a file under the starter's `src/` or `tests/`, not the build's `target/`,
//! and not an editor's scratch file (`.x.swp`, `x~`, `#x#`); and, in
//! [`Watcher`], a file whose size or modification time changed: a test that
//! reads a file, or touches a folder, while `check` runs, is no save (else
//! each check would start the next one).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;
use std::time::SystemTime;

use anyhow::{Context, Result};
use notify_debouncer_mini::notify::RecursiveMode;
use notify_debouncer_mini::{new_debouncer, DebounceEventResult};

/// How long the files must stay quiet before a batch of saves is checked:
/// an editor writes a file in several steps, and one save is one check.
pub const QUIET: Duration = Duration::from_millis(300);

/// The folders of a starter whose files are watched.
pub const WATCHED: [&str; 2] = ["src", "tests"];

/// Whether a change to `path` is a save that `watch` checks again for, in
/// the starter at `dir`.
pub fn wants(dir: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(dir) else {
        return false;
    };
    let mut parts = rel.components().map(|c| c.as_os_str().to_string_lossy());
    let in_watched = parts
        .next()
        .is_some_and(|first| WATCHED.contains(&first.as_ref()));
    if !in_watched {
        return false;
    }
    if rel.components().any(|c| c.as_os_str() == "target") {
        return false;
    }
    let Some(name) = rel.file_name().map(|n| n.to_string_lossy()) else {
        return false;
    };
    let scratch = name.starts_with('.')
        || name.starts_with('#')
        || name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".swx")
        || name.ends_with(".tmp")
        // Vim's probe that it may write in a folder.
        || name == "4913";
    !scratch
}

/// The saves among a batch of changed paths, one per file, in order.
pub fn saves(dir: &Path, paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths {
        if wants(dir, &path) && !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// The batches of changed paths under a starter's watched folders: a
/// receiver, and the watcher, which must be kept alive while it is used.
pub struct Watcher {
    /// The starter, as the watcher names its files (no `..`, links resolved).
    pub dir: PathBuf,
    batches: Receiver<DebounceEventResult>,
    /// Each watched file's size and modification time, as last seen.
    seen: std::cell::RefCell<HashMap<PathBuf, Stamp>>,
    _debouncer: notify_debouncer_mini::Debouncer<notify_debouncer_mini::notify::RecommendedWatcher>,
}

impl Watcher {
    /// Starts watching `dir/src` and `dir/tests` (those that exist).
    pub fn start(dir: &Path) -> Result<Watcher> {
        let dir = dir
            .canonicalize()
            .with_context(|| format!("find {}", dir.display()))?;
        let (tx, batches) = std::sync::mpsc::channel();
        let mut debouncer = new_debouncer(QUIET, tx).context("start the file watcher")?;
        let mut watching = 0;
        for sub in WATCHED {
            let folder = dir.join(sub);
            if folder.is_dir() {
                debouncer
                    .watcher()
                    .watch(&folder, RecursiveMode::Recursive)
                    .with_context(|| format!("watch {}", folder.display()))?;
                watching += 1;
            }
        }
        if watching == 0 {
            anyhow::bail!(
                "{} has no src/ or tests/ to watch: give the directory `starter new` wrote",
                dir.display()
            );
        }
        let mut seen = HashMap::new();
        for sub in WATCHED {
            for entry in walkdir::WalkDir::new(dir.join(sub)).into_iter().flatten() {
                if let Some(stamp) = stamp(entry.path()) {
                    seen.insert(entry.into_path(), stamp);
                }
            }
        }
        Ok(Watcher {
            dir,
            batches,
            seen: std::cell::RefCell::new(seen),
            _debouncer: debouncer,
        })
    }

    /// Waits for the next save (or saves made together), and returns the
    /// files saved. Batches that are not saves (a build's files, an
    /// editor's scratch files) are passed over. Saves made while the last
    /// check ran come back at once, gathered into one.
    pub fn next_saves(&self) -> Result<Vec<PathBuf>> {
        loop {
            let mut paths = self.paths(self.batches.recv().context("the file watcher stopped")?);
            // Take whatever else is already waiting: one check for all of it.
            loop {
                match self.batches.recv_timeout(Duration::ZERO) {
                    Ok(batch) => paths.extend(self.paths(batch)),
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => {
                        anyhow::bail!("the file watcher stopped")
                    }
                }
            }
            let mut seen = self.seen.borrow_mut();
            let saved: Vec<PathBuf> = saves(&self.dir, paths)
                .into_iter()
                .filter(|path| changed(&mut seen, path))
                .collect();
            if !saved.is_empty() {
                return Ok(saved);
            }
        }
    }

    fn paths(&self, batch: DebounceEventResult) -> Vec<PathBuf> {
        match batch {
            Ok(events) => events.into_iter().map(|e| e.path).collect(),
            Err(error) => {
                eprintln!("starter watch: the file watcher says: {error}");
                Vec::new()
            }
        }
    }
}

/// A file's size and modification time; `None` for a folder or no file.
type Stamp = (u64, SystemTime);

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    Some((meta.len(), meta.modified().ok()?))
}

/// Whether `path` changed since `seen` last saw it (written, made, or
/// removed), and `seen` brought up to date.
fn changed(seen: &mut HashMap<PathBuf, Stamp>, path: &Path) -> bool {
    let now = stamp(path);
    let before = seen.get(path).copied();
    match now {
        Some(now) => {
            seen.insert(path.to_path_buf(), now);
        }
        None => {
            seen.remove(path);
        }
    }
    now != before
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_save_is_a_file_of_src_or_tests_and_not_a_scratch_file() {
        let dir = Path::new("/home/me/my-lesson1");
        let yes = [
            "src/queue.rs",
            "src/net/mod.rs",
            "tests/queue.rs",
            "tests/data/page.html",
        ];
        for rel in yes {
            assert!(wants(dir, &dir.join(rel)), "{rel} is a save");
        }
        let no = [
            "target/debug/deps/queue-0123.d",
            "src/target/x.rs",
            "Cargo.toml",
            "README.md",
            "src/.queue.rs.swp",
            "src/queue.rs~",
            "src/#queue.rs#",
            "src/4913",
            "srcs/queue.rs",
        ];
        for rel in no {
            assert!(!wants(dir, &dir.join(rel)), "{rel} is not a save");
        }
        assert!(!wants(dir, Path::new("/home/me/other/src/queue.rs")));
    }

    #[test]
    fn a_batch_is_its_saves_once_each_in_order() {
        let dir = Path::new("/s");
        let batch = [
            "/s/src/b.rs",
            "/s/target/x",
            "/s/src/a.rs",
            "/s/src/b.rs",
            "/s/src/.a.rs.swp",
        ]
        .map(PathBuf::from);
        assert_eq!(
            saves(dir, batch),
            [PathBuf::from("/s/src/b.rs"), PathBuf::from("/s/src/a.rs")]
        );
    }

    #[test]
    fn a_file_only_read_or_a_folder_is_no_save() {
        let scratch = tempfile::tempdir().unwrap();
        let file = scratch.path().join("a.rs");
        let mut seen = HashMap::new();
        std::fs::write(&file, "1").unwrap();
        assert!(changed(&mut seen, &file), "a new file");
        assert!(!changed(&mut seen, &file), "the same file, unchanged");
        std::fs::write(&file, "22").unwrap();
        assert!(changed(&mut seen, &file), "written again");
        assert!(!changed(&mut seen, scratch.path()), "a folder");
        std::fs::remove_file(&file).unwrap();
        assert!(changed(&mut seen, &file), "removed");
    }

    /// A real watcher on a real folder: one save is one batch, and a save
    /// in `target/` is none.
    #[test]
    fn a_save_under_src_wakes_the_watcher_and_target_does_not() {
        let scratch = tempfile::tempdir().unwrap();
        for sub in ["src", "tests", "target"] {
            std::fs::create_dir_all(scratch.path().join(sub)).unwrap();
        }
        let watcher = Watcher::start(scratch.path()).unwrap();
        std::fs::write(scratch.path().join("target/ignored.rs"), "x").unwrap();
        std::fs::write(scratch.path().join("src/lib.rs"), "pub fn f() {}\n").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(watcher.next_saves());
        });
        let saved = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("a save under src/ reached the watcher within 20 s")
            .unwrap();
        let dir = scratch.path().canonicalize().unwrap();
        assert_eq!(saved, [dir.join("src/lib.rs")]);
    }
}
