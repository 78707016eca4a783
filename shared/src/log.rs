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
//!
//! On a terminal the per-URL lines give way to one live status line
//! ([`Log::with_status_line`]): the lesson hands its counts to
//! [`Log::progress`] as often as it likes, and the log redraws the line at
//! most ten times a second ([`crate::status`]). The log owns the line
//! because it owns stderr: an error line printed meanwhile first clears it,
//! so the two never garble each other.

use std::fmt::Display;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::status::{self, Progress, Throttle};

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
    /// The live status line, when shown: shared by every clone, so lesson
    /// 1's threads draw one line between them.
    status: Option<Arc<Mutex<StatusLine>>>,
}

/// The state of the live status line.
#[derive(Debug)]
struct StatusLine {
    /// When the crawl started, for the elapsed time and the rate.
    started: Instant,
    /// At most ten redraws a second.
    throttle: Throttle,
    /// Is a status line on the screen now (so an error line must clear it)?
    drawn: bool,
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
            status: None,
        }
    }

    /// A log that keeps its lines for [`Log::lines`] (for tests).
    pub fn capture(level: Level) -> Self {
        Log {
            level,
            sink: Sink::Capture(Arc::new(Mutex::new(Vec::new()))),
            status: None,
        }
    }

    /// This log with the live status line in place of the per-URL lines:
    /// only errors are still written as lines. (For a capturing log, each
    /// drawing is captured as a line beginning with `\r`.)
    pub fn with_status_line(self) -> Self {
        Log {
            level: Level::Error,
            status: Some(Arc::new(Mutex::new(StatusLine {
                started: Instant::now(),
                throttle: Throttle::default(),
                drawn: false,
            }))),
            ..self
        }
    }

    /// Whether the live status line is shown.
    pub fn has_status_line(&self) -> bool {
        self.status.is_some()
    }

    /// Redraw the status line with the counts `progress` gives, if it is
    /// shown and was not drawn in the last tenth of a second. `progress` is
    /// only called then, so asking is cheap.
    pub fn progress(&self, progress: impl FnOnce() -> Progress) {
        let Some(status) = &self.status else { return };
        let Ok(mut status) = status.lock() else {
            return;
        };
        if !status.throttle.ready(Instant::now()) {
            return;
        }
        status.drawn = true;
        let line = progress().line(status.started.elapsed());
        self.put(&status::redraw(&line), false);
    }

    /// Remove the status line (before the report is printed).
    pub fn clear_status(&self) {
        let Some(status) = &self.status else { return };
        let Ok(mut status) = status.lock() else {
            return;
        };
        if std::mem::take(&mut status.drawn) {
            self.put(status::clear(), false);
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
        // A status line on the screen is cleared first; the next progress
        // redraws it below this line.
        self.clear_status();
        self.put(&line.to_string(), true);
    }

    /// Write `text`, with a line end if `newline`.
    fn put(&self, text: &str, newline: bool) {
        let end = if newline { "\n" } else { "" };
        match &self.sink {
            Sink::Stderr => {
                // One `write!` on a locked handle, so lines from lesson 1's
                // threads never interleave mid-line. A closed stderr is not a
                // reason to stop crawling, so the result is ignored.
                let mut stderr = std::io::stderr().lock();
                let _ = write!(stderr, "{text}{end}");
                let _ = stderr.flush();
            }
            Sink::Capture(lines) => {
                if let Ok(mut lines) = lines.lock() {
                    lines.push(text.to_string());
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
    fn the_status_line_replaces_info_lines_and_is_cleared_for_errors() {
        let log = Log::capture(Level::Info).with_status_line();
        assert!(log.has_status_line());
        log.info("a per-URL line");
        let progress = || Progress {
            done: 1,
            ..Progress::default()
        };
        log.progress(progress);
        // Within a tenth of a second of the last drawing: not drawn again.
        log.progress(|| unreachable!("throttled"));
        log.error("an error");
        log.clear_status();
        let lines = log.lines();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].starts_with("\rdone 1 · in flight 0"), "{lines:?}");
        assert_eq!(lines[1..], ["\r\x1b[K", "an error"]);
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
