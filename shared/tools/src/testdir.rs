//! A scratch directory for the tools' tests: a `tempfile` directory with
//! the two things every test here does to it.

use std::fs;
use std::path::Path;

/// A fresh directory, removed when dropped.
pub struct TestDir(tempfile::TempDir);

impl TestDir {
    /// A new directory; `name` shows in its path, to tell tests apart.
    pub fn new(name: &str) -> TestDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("course-tools-{name}-"))
            .tempdir()
            .expect("a temporary directory");
        TestDir(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// Writes `text` to `relative`, creating the folders on the way.
    pub fn write(&self, relative: &str, text: &str) {
        let file = self.path().join(relative);
        fs::create_dir_all(file.parent().expect("a file in a folder")).expect("create folders");
        fs::write(file, text).expect("write a test file");
    }

    /// Removes `relative`.
    pub fn remove(&self, relative: &str) {
        fs::remove_file(self.path().join(relative)).expect("remove a test file");
    }
}
