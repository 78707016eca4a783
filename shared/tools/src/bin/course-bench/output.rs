//! Reading a lesson's report, and writing results: the header every result
//! file carries (date, machine, exact command), Markdown and TSV files, and
//! the small number formats the tables use.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::Ctx;

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

/// `12,345`: the one copy, in `shared`.
pub use shared::status::thousands;

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

/// UTC now as `YYYY-MM-DD HH:MM UTC`.
pub fn now_utc() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%d %H:%M UTC")
        .to_string()
}

/// One line about the machine: cores, CPU model, kernel.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    use procfs::Current as _;
    let cpu = procfs::CpuInfo::current()
        .ok()
        .and_then(|info| info.model_name(0).map(str::to_string))
        .unwrap_or_else(|| "unknown CPU".to_string());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let mem_gib = procfs::Meminfo::current()
        .map(|m| m.mem_total as f64 / (1u64 << 30) as f64)
        .unwrap_or(0.0);
    format!("Linux {kernel}, {cores} cores (`nproc` = {cores}, {cpu}), {mem_gib:.0} GiB RAM")
}

/// Which code was measured: the git commit of the workspace, when cargo
/// built the binaries from it, or of the workspace a `--bin-dir` of the
/// form `WORKSPACE/target/release` belongs to.
pub fn measured_code(ctx: &Ctx) -> String {
    let root = match &ctx.bin_dir {
        None => Some(ctx.workspace.as_path()),
        Some(dir) => dir
            .parent()
            .and_then(Path::parent)
            .filter(|p| p.join("Cargo.toml").is_file()),
    };
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
        let dir = ctx.bin_dir.as_deref().unwrap_or(ctx.workspace.as_path());
        return format!("binaries from `{}`", dir.display());
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
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(b'\t')
        .from_path(path)
        .with_context(|| format!("reading {}", path.display()))?;
    reader
        .deserialize()
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {}", path.display()))
}

/// A TSV table to fill row by row (`write_record`), with its header row.
pub fn tsv(header: &[&str]) -> Result<csv::Writer<Vec<u8>>> {
    let mut writer = csv::WriterBuilder::new()
        .delimiter(b'\t')
        .from_writer(Vec::new());
    writer.write_record(header)?;
    Ok(writer)
}

/// The text of a filled TSV table.
pub fn tsv_text(writer: csv::Writer<Vec<u8>>) -> Result<String> {
    let bytes = writer.into_inner().context("finishing a TSV table")?;
    Ok(String::from_utf8(bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(bytes(1000.0), "1000 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        let m = median(&[3, 1, 2].map(Duration::from_secs));
        assert_eq!(m, Some(Duration::from_secs(2)));
        let m = median(&[4, 1, 2, 3].map(Duration::from_secs));
        assert_eq!(m, Some(Duration::from_millis(2500)));
        assert!(now_utc().ends_with("UTC"));
    }
}
