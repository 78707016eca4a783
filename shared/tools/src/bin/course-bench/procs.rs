//! Running the lesson binaries: finding (and building) them, starting one
//! under a descriptor limit, timing it to its exit, and reading its memory
//! from `/proc`.
//!
//! A lesson is started through `sh -c 'ulimit -n N && exec "$0" "$@"' BIN
//! ARGS...`: the shell lowers or raises the limit and then *becomes* the
//! lesson (`exec`), so the PID we hold is the crawler's own and its
//! `/proc/PID/status` is the crawler's memory, not a shell's.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::Ctx;

/// The crate that builds lesson `n`'s binary.
pub fn lesson_crate(n: u8) -> &'static str {
    match n {
        1 => "lesson1-threadpool",
        2 => "lesson2-callbacks",
        3 => "lesson3-generators",
        _ => "lesson4-asyncio-style",
    }
}

/// `cargo build --release -p CRATE [--bin BIN]` in the workspace, and where
/// cargo says it put the binary `name` (its JSON messages know the target
/// directory, whatever `CARGO_TARGET_DIR` or `.cargo/config` say). A failed
/// build is an error for that binary only: the caller reports the lesson as
/// missing and goes on.
fn build(ctx: &Ctx, krate: &str, name: &str, bin: Option<&str>) -> Result<PathBuf> {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(&ctx.workspace).args([
        "build",
        "--release",
        "--quiet",
        "--message-format=json-render-diagnostics",
        "-p",
        krate,
    ]);
    if let Some(bin) = bin {
        cmd.args(["--bin", bin]);
    }
    eprintln!("  building {krate} (cargo build --release -p {krate})");
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running cargo to build {krate}"))?;
    if !out.status.success() {
        bail!("cargo build --release -p {krate} failed ({})", out.status);
    }
    for message in cargo_metadata::Message::parse_stream(out.stdout.as_slice()) {
        if let cargo_metadata::Message::CompilerArtifact(artifact) = message? {
            if let (true, Some(exe)) = (artifact.target.name == name, artifact.executable) {
                return Ok(exe.into_std_path_buf());
            }
        }
    }
    bail!("cargo built {krate} but named no binary {name}")
}

/// The binary `name`: built with cargo and found where cargo says, or taken
/// from `--bin-dir` as it is.
fn binary(ctx: &Ctx, name: &str, krate: &str, bin: Option<&str>) -> Result<PathBuf> {
    let path = match &ctx.bin_dir {
        None => build(ctx, krate, name, bin)?,
        Some(dir) => dir.join(name),
    };
    if !path.is_file() {
        bail!(
            "{} is missing (build it with `cargo build --release -p {krate}`, or pass --bin-dir)",
            path.display()
        );
    }
    Ok(path)
}

/// Lesson `n`'s binary (`lesson1` … `lesson4`).
pub fn lesson_binary(ctx: &Ctx, n: u8) -> Result<PathBuf> {
    binary(ctx, &format!("lesson{n}"), lesson_crate(n), None)
}

/// The course's static file server, `serve` (its own crate, `shared/serve`).
pub fn serve_binary(ctx: &Ctx) -> Result<PathBuf> {
    binary(ctx, "serve", "serve", Some("serve"))
}

/// Lesson number → its binary.
pub type Found = Vec<(u8, PathBuf)>;
/// Lesson number → why it cannot be measured.
pub type Missing = Vec<(u8, String)>;

/// The binaries of the asked-for lessons that exist (or could be built);
/// the others are reported on stderr and in the returned list of problems.
pub fn lesson_binaries(ctx: &Ctx, lessons: &[u8]) -> (Found, Missing) {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for &n in lessons {
        match lesson_binary(ctx, n) {
            Ok(path) => found.push((n, path)),
            Err(e) => {
                eprintln!("  lesson {n} skipped: {e:#}");
                missing.push((n, format!("{e:#}")));
            }
        }
    }
    (found, missing)
}

/// A child process that is killed if it is dropped while still running, so
/// that no error path in the bench leaves a crawler behind.
#[derive(Debug)]
pub struct Running {
    /// The process (the lesson itself, after the shell's `exec`).
    child: Child,
    /// When it was started.
    started: Instant,
    /// The CPU time of this process's waited-for children when it was
    /// started: the growth, once it has been waited for, is its own.
    children_cpu: Cpu,
    /// Collects stdout; returns the bytes and when the pipe closed, which is
    /// when the process exited, to the microsecond (the exit is otherwise
    /// only seen by polling).
    stdout: Option<JoinHandle<(Vec<u8>, Instant)>>,
    /// Collects stderr (bounded: the tail is what explains a failure).
    stderr: Option<JoinHandle<Vec<u8>>>,
}

/// How a finished child ended.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status (`None`: it was killed at the deadline).
    pub status: Option<ExitStatus>,
    /// Wall time from spawn to exit.
    pub elapsed: Duration,
    /// Everything it printed on stdout (the report).
    pub stdout: String,
    /// The end of what it printed on stderr.
    pub stderr: String,
    /// The CPU time it used, its own children's included.
    pub cpu: Cpu,
}

/// CPU time, split where it was spent: in the program's own code (user) and
/// in the kernel on its behalf (system).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu {
    pub user: Duration,
    pub system: Duration,
}

impl Cpu {
    /// User + system.
    pub fn total(self) -> Duration {
        self.user + self.system
    }

    /// The growth from `earlier` to `self`.
    pub fn since(self, earlier: Cpu) -> Cpu {
        Cpu {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

/// The CPU time of this process's children that have been waited for
/// (`getrusage(RUSAGE_CHILDREN)`). The bench waits for one crawler at a
/// time, so a crawler's own CPU time is the growth of this across its run.
fn children_cpu() -> Cpu {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(Cpu::default(), |usage| {
        let time = |t: nix::sys::time::TimeVal| {
            Duration::new(t.tv_sec().max(0) as u64, (t.tv_usec().max(0) as u32) * 1000)
        };
        Cpu {
            user: time(usage.user_time()),
            system: time(usage.system_time()),
        }
    })
}

/// CPU time a process has used so far, all its threads (`None` for `pid`:
/// this process).
pub fn cpu_of(pid: Option<u32>) -> Option<Cpu> {
    let process = match pid {
        None => procfs::process::Process::myself(),
        Some(pid) => procfs::process::Process::new(i32::try_from(pid).ok()?),
    };
    let stat = process.ok()?.stat().ok()?;
    let secs =
        |ticks: u64| Duration::from_secs_f64(ticks as f64 / procfs::ticks_per_second() as f64);
    Some(Cpu {
        user: secs(stat.utime),
        system: secs(stat.stime),
    })
}

/// The processes whose parent is `pid` (an nginx master's workers).
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.flatten()
        .filter_map(|p| p.stat().ok())
        .filter(|stat| u32::try_from(stat.ppid).ok() == Some(pid))
        .filter_map(|stat| u32::try_from(stat.pid).ok())
        .collect()
}

/// How many connection attempts the kernel has dropped so far because a
/// listening socket's accept queue was full (`ListenOverflows` in
/// `/proc/net/netstat`; machine-wide, so other programs count too). A
/// dropped SYN is retried by the client after a second, then three, then
/// seven: a few of these turn a fast crawl into a slow one.
pub fn listen_overflows() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/net/netstat").ok()?;
    let mut lines = text.lines().filter(|l| l.starts_with("TcpExt:"));
    let names = lines.next()?;
    let values = lines.next()?;
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(name, _)| *name == "ListenOverflows")
        .and_then(|(_, v)| v.parse().ok())
}

/// Keep at most this much of a child's stderr.
const STDERR_KEEP: usize = 256 * 1024;

impl Running {
    /// Start `bin args...` under `ulimit -n nofile`, stdout and stderr
    /// captured, stdin closed. The PID is the lesson's own.
    pub fn spawn(bin: &Path, args: &[String], nofile: usize) -> Result<Running> {
        let started = Instant::now();
        let children_cpu = children_cpu();
        let mut child = shared::behaviour::command_under_limit(bin, Some(nofile))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let mut out = child.stdout.take().context("child stdout")?;
        let mut err = child.stderr.take().context("child stderr")?;
        let stdout = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = out.read_to_end(&mut bytes);
            (bytes, Instant::now())
        });
        let stderr = std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 8192];
            loop {
                match err.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        kept.extend_from_slice(&buf[..n]);
                        if kept.len() > 2 * STDERR_KEEP {
                            kept.drain(..kept.len() - STDERR_KEEP);
                        }
                    }
                }
            }
            kept
        });
        Ok(Running {
            child,
            started,
            children_cpu,
            stdout: Some(stdout),
            stderr: Some(stderr),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited (and how).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Wait for the exit, killing it at `limit`.
    pub fn wait(mut self, limit: Duration) -> Finished {
        let deadline = self.started + limit;
        let status = loop {
            if let Some(status) = self.exited() {
                break Some(status);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break None;
            }
            // Polling only decides when to look again; the exit time itself
            // comes from the stdout pipe closing (see `stdout`).
            std::thread::sleep(Duration::from_millis(2));
        };
        let polled_end = Instant::now();
        self.collect(status, polled_end)
    }

    /// Kill it now and collect what it printed.
    pub fn kill(mut self) -> Finished {
        let _ = self.child.kill();
        let status = self.child.wait().ok();
        self.collect(status, Instant::now())
    }

    fn collect(&mut self, status: Option<ExitStatus>, polled_end: Instant) -> Finished {
        let (stdout, closed_at) = self
            .stdout
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or((Vec::new(), polled_end));
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        // The pipe closes when the process exits (a lesson does not close its
        // stdout early); if it somehow did, the poll time is the bound.
        let end = closed_at.min(polled_end);
        Finished {
            status,
            elapsed: end.saturating_duration_since(self.started),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: tail(&String::from_utf8_lossy(&stderr), 2000),
            cpu: children_cpu().since(self.children_cpu),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The last `max` bytes of `s` (on a character boundary), for error messages.
pub fn tail(s: &str, max: usize) -> String {
    let s = s.trim_end();
    if s.len() <= max {
        return s.to_string();
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &s[start..])
}

/// The memory figures of a process, from `/proc/PID/status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcStatus {
    /// Resident set size now, bytes: the pages of the process in RAM.
    pub rss: u64,
    /// The highest RSS so far ("high water mark"), bytes.
    pub hwm: u64,
    /// Threads in the process.
    pub threads: u64,
}

/// The process's memory and threads; `None` once it is gone.
pub fn proc_status(pid: u32) -> Option<ProcStatus> {
    let status = procfs::process::Process::new(i32::try_from(pid).ok()?)
        .ok()?
        .status()
        .ok()?;
    Some(ProcStatus {
        rss: status.vmrss.unwrap_or(0) * 1024,
        hwm: status.vmhwm.unwrap_or(0) * 1024,
        threads: status.threads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timed_child_reports_its_exit_and_cpu() {
        let busy = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo hi; exit 3";
        let run = Running::spawn(Path::new("sh"), &["-c".into(), busy.into()], 256).unwrap();
        let done = run.wait(Duration::from_secs(20));
        assert_eq!(done.status.and_then(|s| s.code()), Some(3));
        assert_eq!(done.stdout, "hi\n");
        assert!(done.cpu.total() > Duration::ZERO, "{:?}", done.stderr);
        assert!(cpu_of(None).is_some());
        assert!(listen_overflows().is_some());
    }
}
