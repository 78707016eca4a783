//! # Log lines
//!
//! The crawler talks on stderr at three levels (the spec's table): errors are
//! always shown, the one-line-per-URL `info` lines by default, and `debug`
//! lines (why a link was skipped, what was queued) with `-v`. `-q` keeps only
//! errors.
//!
//! A [`Log`] is a small cloneable handle rather than a global, so that a test
//! can hand a lesson a capturing log and then assert on the exact lines it
//! wrote — and so lesson 1's threads can each hold a clone.

use std::fmt::Display;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// How much the crawler says. Ordered: a line is shown when its level is at
/// most the log's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Only errors (`-q`).
    Error,
    /// Errors and one line per finished URL (the default).
    Info,
    /// Everything, including skipped and queued links (`-v`).
    Debug,
}

/// Where the lines go: stderr, or a buffer a test reads back.
#[derive(Debug, Clone)]
enum Sink {
    Stderr,
    Capture(Arc<Mutex<Vec<String>>>),
}

/// A cloneable handle for writing log lines.
#[derive(Debug, Clone)]
pub struct Log {
    /// Lines above this level are dropped before they are formatted.
    level: Level,
    /// Shared by every clone, so a capture sees all threads' lines.
    sink: Sink,
}

impl Default for Log {
    fn default() -> Self {
        Log::stderr(Level::Info)
    }
}

impl Log {
    /// A log that writes to stderr.
    pub fn stderr(level: Level) -> Self {
        Log {
            level,
            sink: Sink::Stderr,
        }
    }

    /// A log that keeps its lines for [`Log::lines`] (for tests).
    pub fn capture(level: Level) -> Self {
        Log {
            level,
            sink: Sink::Capture(Arc::new(Mutex::new(Vec::new()))),
        }
    }

    /// The level this log shows.
    pub fn level(&self) -> Level {
        self.level
    }

    /// Would a line at `level` be shown? Check before building an expensive line.
    pub fn enabled(&self, level: Level) -> bool {
        level <= self.level
    }

    /// Lines captured so far (empty for a stderr log).
    pub fn lines(&self) -> Vec<String> {
        match &self.sink {
            Sink::Stderr => Vec::new(),
            Sink::Capture(lines) => lines.lock().map(|l| l.clone()).unwrap_or_default(),
        }
    }

    pub fn error(&self, line: impl Display) {
        self.write(Level::Error, line);
    }

    pub fn info(&self, line: impl Display) {
        self.write(Level::Info, line);
    }

    pub fn debug(&self, line: impl Display) {
        self.write(Level::Debug, line);
    }

    fn write(&self, level: Level, line: impl Display) {
        if !self.enabled(level) {
            return;
        }
        match &self.sink {
            Sink::Stderr => {
                // One `writeln!` on a locked handle, so lines from lesson 1's
                // threads never interleave mid-line. A closed stderr is not a
                // reason to stop crawling, so the result is ignored.
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
            Sink::Capture(lines) => {
                if let Ok(mut lines) = lines.lock() {
                    lines.push(line.to_string());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_filter_lines() {
        let log = Log::capture(Level::Info);
        log.error("e");
        log.info("i");
        log.debug("d");
        assert_eq!(log.lines(), ["e", "i"]);

        let quiet = Log::capture(Level::Error);
        quiet.info("i");
        quiet.error("e");
        assert_eq!(quiet.lines(), ["e"]);
    }

    #[test]
    fn clones_share_one_capture() {
        let log = Log::capture(Level::Debug);
        let clone = log.clone();
        std::thread::spawn(move || clone.debug("from a thread"))
            .join()
            .unwrap();
        assert_eq!(log.lines(), ["from a thread"]);
    }
}
