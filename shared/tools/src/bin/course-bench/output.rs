//! Reading a lesson's report, and writing results: the header every result
//! file carries (date, machine, exact command), Markdown and TSV files, and
//! the small number formats the tables use.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use crate::Ctx;

/// What the bench needs from a lesson's report (the spec's Output section).
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// The URL of every report line, in order.
    pub urls: Vec<String>,
    /// The stats table: key → count (`html`, `fail_timeout`, ...).
    pub stats: BTreeMap<String, u64>,
    /// `Todo: n`.
    pub todo: Option<u64>,
    /// `Done: n`.
    pub done: Option<u64>,
    /// `achieved concurrency = K` on the last line.
    pub concurrency: Option<u64>,
    /// The crawl's own time, from its last line.
    pub secs: Option<f64>,
}

impl Report {
    /// Parse stdout. Unknown lines are ignored; a missing part stays `None`,
    /// and the caller decides whether that makes the crawl wrong.
    pub fn parse(stdout: &str) -> Report {
        let mut r = Report::default();
        let mut in_lines = false;
        for line in stdout.lines() {
            if line == "*** Report ***" {
                in_lines = true;
                continue;
            }
            if line.starts_with("Finished ") {
                in_lines = false;
                continue;
            }
            if in_lines {
                if let Some(url) = line.split(' ').next() {
                    r.urls.push(url.to_string());
                }
                continue;
            }
            if let Some(v) = line.strip_prefix("Todo: ") {
                r.todo = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("Done: ") {
                r.done = v.trim().parse().ok();
            } else if let Some((head, k)) = line.split_once(", achieved concurrency = ") {
                r.concurrency = k.trim().parse().ok();
                // "<N> URLs fetched in <secs> seconds"
                r.secs = head
                    .split_once(" fetched in ")
                    .and_then(|(_, s)| s.strip_suffix(" seconds"))
                    .and_then(|s| s.trim().parse().ok());
            } else {
                // "%10d key"
                let mut parts = line.split_whitespace();
                if let (Some(n), Some(key), None) = (parts.next(), parts.next(), parts.next()) {
                    if let Ok(n) = n.parse::<u64>() {
                        r.stats.insert(key.to_string(), n);
                    }
                }
            }
        }
        r
    }

    /// A stats count, 0 when absent (the report omits zero lines).
    pub fn stat(&self, key: &str) -> u64 {
        self.stats.get(key).copied().unwrap_or(0)
    }

    /// Why this report is not the expected crawl, or `None` if it is: the
    /// `Done` count, a complete crawl (`Todo: 0`) and the exact URL set.
    pub fn mismatch(&self, expected: &BTreeSet<String>) -> Option<String> {
        let Some(done) = self.done else {
            return Some("no report (no Done: line)".to_string());
        };
        if done != expected.len() as u64 {
            return Some(format!("Done: {done}, expected {}", expected.len()));
        }
        if self.todo != Some(0) {
            return Some(format!("Todo: {:?}, expected 0", self.todo));
        }
        let got: BTreeSet<&str> = self.urls.iter().map(String::as_str).collect();
        let missing: Vec<&String> = expected
            .iter()
            .filter(|u| !got.contains(u.as_str()))
            .collect();
        if let Some(first) = missing.first() {
            return Some(format!(
                "{} expected URLs missing from the report, e.g. {first}",
                missing.len()
            ));
        }
        None
    }
}

/// The median of some durations (the mean of the middle two for an even
/// count). `None` for none.
pub fn median(values: &[Duration]) -> Option<Duration> {
    let mut v = values.to_vec();
    v.sort_unstable();
    let n = v.len();
    match n {
        0 => None,
        _ if !n.is_multiple_of(2) => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2),
    }
}

/// `12,345`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes for humans: `512 B`, `3.4 KiB`, `12.0 MiB`.
pub fn bytes(n: f64) -> String {
    let a = n.abs();
    if a < 1024.0 {
        format!("{n:.0} B")
    } else if a < 1024.0 * 1024.0 {
        format!("{:.1} KiB", n / 1024.0)
    } else if a < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} MiB", n / (1024.0 * 1024.0))
    } else {
        format!("{:.2} GiB", n / (1024.0 * 1024.0 * 1024.0))
    }
}

/// Seconds with three decimals.
pub fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

/// UTC now as `YYYY-MM-DD HH:MM UTC` (civil-from-days, so no date crate).
pub fn now_utc() -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (t / 86_400) as i64;
    let rem = t % 86_400;
    // Howard Hinnant's days → (year, month, day).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// One line about the machine: cores, CPU model, kernel.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0 / 1024.0)
        .unwrap_or(0.0);
    format!("Linux {kernel}, {cores} cores (`nproc` = {cores}, {cpu}), {mem_gib:.0} GiB RAM")
}

/// Which code was measured: the git commit of the binaries' workspace,
/// when `--bin-dir` is some `WORKSPACE/target/release`.
pub fn measured_code(ctx: &Ctx) -> String {
    let root = ctx
        .bin_dir
        .parent()
        .and_then(Path::parent)
        .filter(|p| p.join("Cargo.toml").is_file());
    let git = |root: &Path, args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let Some((root, commit)) =
        root.and_then(|r| Some((r, git(r, &["rev-parse", "--short", "HEAD"])?)))
    else {
        return format!("binaries from `{}`", ctx.bin_dir.display());
    };
    // Only changes to what the binaries are built from matter; the result
    // files this program rewrites as it goes do not.
    let changed = git(
        root,
        &[
            "status",
            "--porcelain",
            "--",
            "lesson1-threadpool",
            "lesson2-callbacks",
            "lesson3-generators",
            "lesson4-asyncio-style",
            "shared/src",
        ],
    )
    .is_some_and(|s| !s.is_empty());
    if changed {
        format!("binaries built from commit `{commit}` plus uncommitted changes")
    } else {
        format!("binaries built from commit `{commit}`")
    }
}

/// The lines every result file starts with.
pub fn header(ctx: &Ctx, title: &str, args: &str) -> String {
    format!(
        "### {title}\n\n\
         Measured {} on {}; {}.\n\n\
         Command: `{}`\n\n",
        now_utc(),
        machine(),
        measured_code(ctx),
        ctx.command_line(args),
    )
}

/// Write `text` to `DOCS/generated/bench/NAME` and say so on stderr.
pub fn write_result(ctx: &Ctx, name: &str, text: &str) -> Result<()> {
    let path = ctx.results_dir()?.join(name);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("  wrote {}", path.display());
    Ok(())
}

/// Parse a TSV written by this program: a header line, then rows.
pub fn read_tsv(path: &Path) -> Result<Vec<BTreeMap<String, String>>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split('\t').collect();
    Ok(lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            header
                .iter()
                .zip(l.split('\t'))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "*** Report ***\n\
        http://a/ 200 text/html utf-8 10 1/1\n\
        http://a/b 404 - - 0\n\
        Finished 2 urls in 0.010 secs (max_tasks=4) (50.000 urls/sec/task)\n\
        \x20        1 error\n\
        \x20        1 html\n\
        \x20       10 html_bytes\n\
        \x20        1 status_404\n\
        Todo: 0\n\
        Done: 2\n\
        2 URLs fetched in 0.0 seconds, achieved concurrency = 1\n";

    #[test]
    fn parses_the_spec_report() {
        let r = Report::parse(REPORT);
        assert_eq!(r.urls, ["http://a/", "http://a/b"]);
        assert_eq!(r.done, Some(2));
        assert_eq!(r.todo, Some(0));
        assert_eq!(r.concurrency, Some(1));
        assert_eq!(r.secs, Some(0.0));
        assert_eq!(r.stat("html_bytes"), 10);
        assert_eq!(r.stat("fail"), 0);
        let expected: BTreeSet<String> = ["http://a/", "http://a/b"].map(String::from).into();
        assert_eq!(r.mismatch(&expected), None);
        let other: BTreeSet<String> = ["http://a/", "http://a/c"].map(String::from).into();
        assert!(r.mismatch(&other).unwrap().contains("http://a/c"));
        assert!(Report::parse("").mismatch(&expected).is_some());
    }

    #[test]
    fn number_formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(bytes(1000.0), "1000 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        let m = median(&[3, 1, 2].map(Duration::from_secs));
        assert_eq!(m, Some(Duration::from_secs(2)));
        let m = median(&[4, 1, 2, 3].map(Duration::from_secs));
        assert_eq!(m, Some(Duration::from_millis(2500)));
        assert!(now_utc().ends_with("UTC"));
    }
}
