//! A scratch directory for tests, removed when dropped (the workspace has no
//! `tempfile` crate, and does not need one for this).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh directory under the system's temp dir.
pub struct TestDir {
    /// Where it is; unique per process, test and call.
    path: PathBuf,
}

impl TestDir {
    /// Creates `$TMPDIR/book-tools-<pid>-<n>-<name>`.
    pub fn new(name: &str) -> TestDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("book-tools-{}-{n}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        TestDir { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `text` to `relative`, creating the folders on the way.
    pub fn write(&self, relative: &str, text: &str) {
        let file = self.path.join(relative);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, text).unwrap();
    }

    /// Removes `relative`.
    #[allow(dead_code)] // used by one of the two binaries' tests only
    pub fn remove(&self, relative: &str) {
        fs::remove_file(self.path.join(relative)).unwrap();
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}
