//! # `course-bench`: the measurements behind "Comparing the four crawlers"
//!
//! ```text
//! cargo run --release -p course-tools --bin course-bench -- all
//! cargo run --release -p course-tools --bin course-bench -- speed --server nginx --runs 5
//! cargo run --release -p course-tools --bin course-bench -- memory --fetches 10000
//! cargo run --release -p course-tools --bin course-bench -- fds --links 10000
//! cargo run --release -p course-tools --bin course-bench -- chart
//! cargo run --release -p course-tools --bin course-bench -- timelines
//! ```
//!
//! The spec sets three targets that no unit test can check, because they are
//! about a whole program on a whole machine: how fast a crawl is compared
//! with the fastest plain fetch of the same URLs, how much memory one fetch
//! in flight costs, and whether the unbounded crawlers survive a small
//! descriptor limit. This program measures them for the four lesson
//! binaries, exactly as a learner would run them (as separate processes,
//! with `-q`, their report read from stdout), and writes the tables and
//! charts the course's comparison chapter includes.
//!
//! | module | what it measures or provides |
//! |---|---|
//! | [`speed`] | whole crawls of a generated site against a keep-alive baseline |
//! | [`baseline`] | that baseline: a plain keep-alive fetch of the same URLs, no parsing |
//! | [`memory`] | user-space RSS per fetch in flight, against a server that never answers |
//! | [`fds`] | lessons 2 and 3 under `ulimit -n 1024` |
//! | [`chart`] | hand-written SVG bar charts of the results |
//! | [`timelines`] | each lesson's trace of one slow site, drawn for the chapters |
//! | [`servers`] | the two site servers: the course's own `serve` and nginx, as child processes |
//! | [`procs`] | running a lesson under a descriptor limit, timing it, reading `/proc` |
//! | [`output`] | parsing a lesson's report; the Markdown and TSV files; the machine's description |
//!
//! Every figure is a ratio or a difference measured in one invocation on one
//! machine, because absolute numbers from a shared two-core box say little
//! on their own. Runs of the things being compared alternate, so that a
//! neighbour's burst of CPU use lands on all of them alike, and the median
//! of several runs is reported.

mod baseline;
mod chart;
mod fds;
mod memory;
mod output;
mod procs;
mod servers;
mod speed;
mod timelines;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

const USAGE: &str = "\
course-bench: measure the four lesson crawlers (speed, memory, descriptors)

Usage: course-bench [GLOBAL OPTIONS] COMMAND [OPTIONS]

Commands:
  speed    whole crawls of a generated site vs a keep-alive fetch baseline
             --pages N (10000)  --page-bytes B (16384)  --runs R (5)
             --concurrency C (100)  --server fixture|nginx|both (both)
             --lessons 1,2,3,4  --crawl-timeout SECS (600)
  memory   user-space RSS per fetch in flight against a server that stalls
             --fetches N (10000)  --lessons 1,2,3,4
  fds      lessons 2 and 3 crawl a page of N links under ulimit -n 1024
             --links N (10000)  --lessons 2,3
  chart    draw docs/src/img/speed.svg and memory.svg from the results
  timelines  each lesson crawls one slow site with --trace; draw the traces
             --sections S (10)  --pages P (5)  --delay-ms D (100)
  all      speed (both servers), memory, fds, chart, timelines, with the defaults

Global options:
  --root DIR     the course checkout (default: the one around the current
                 directory)
  --bin-dir DIR  where lesson1..lesson4 and serve are (default: the
                 workspace's target/release, built first with cargo)
  --no-build     do not run cargo build; use what is in --bin-dir
  --docs DIR     the mdBook source folder to write results into
                 (default: the workspace's docs/src)
  -h, --help     print this help

Results go to DOCS/generated/bench/*.md (included by the comparison
chapter), *.tsv (read by `chart`), and DOCS/img/*.svg.
";

/// The descriptor limit the bench and its children ask for: the memory
/// benchmark holds 10,000 sockets on each side, plus the files it reads.
pub const WANTED_NOFILE: usize = 65_536;

/// What every command needs to know about where things are.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The workspace root (where `Cargo.toml` and `docs/` are).
    pub workspace: PathBuf,
    /// Where the lesson binaries and `serve` are.
    pub bin_dir: PathBuf,
    /// Whether `cargo build --release` may be run to make them.
    pub build: bool,
    /// The mdBook `src` folder results are written into.
    pub docs: PathBuf,
    /// The global options as given, repeated in the "exact command" lines
    /// of the output when they are not the defaults.
    pub global_args: Vec<String>,
    /// The descriptor limit children are started under (the hard limit, or
    /// [`WANTED_NOFILE`] if that is lower).
    pub child_nofile: usize,
}

impl Ctx {
    /// `cargo run --release -p course-tools --bin course-bench -- [global] ARGS`.
    pub fn command_line(&self, args: &str) -> String {
        let mut line = String::from("cargo run --release -p course-tools --bin course-bench --");
        for a in &self.global_args {
            line.push(' ');
            line.push_str(a);
        }
        line.push(' ');
        line.push_str(args);
        line
    }

    /// `DOCS/generated/bench`, created if needed.
    pub fn results_dir(&self) -> Result<PathBuf> {
        let dir = self.docs.join("generated").join("bench");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }

    /// `DOCS/img`, created if needed.
    pub fn img_dir(&self) -> Result<PathBuf> {
        let dir = self.docs.join("img");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }
}

/// A tiny option reader: `--name value` and `--name=value`, flags, and an
/// error for anything left over, so a typo is not silently ignored.
#[derive(Debug)]
pub struct Opts {
    /// The arguments not yet taken.
    rest: Vec<String>,
}

impl Opts {
    pub fn new(rest: Vec<String>) -> Opts {
        Opts { rest }
    }

    /// The value of `--name` (either spelling), removed from the list.
    pub fn value(&mut self, name: &str) -> Result<Option<String>> {
        let flag = format!("--{name}");
        let inline = format!("--{name}=");
        let mut i = 0;
        while i < self.rest.len() {
            if self.rest[i] == flag {
                if i + 1 >= self.rest.len() {
                    bail!("{flag} needs a value");
                }
                let v = self.rest.remove(i + 1);
                self.rest.remove(i);
                return Ok(Some(v));
            }
            if let Some(v) = self.rest[i].strip_prefix(&inline) {
                let v = v.to_string();
                self.rest.remove(i);
                return Ok(Some(v));
            }
            i += 1;
        }
        Ok(None)
    }

    /// A number option with a default; must be at least `min`.
    pub fn number(&mut self, name: &str, default: usize, min: usize) -> Result<usize> {
        match self.value(name)? {
            None => Ok(default),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n >= min => Ok(n),
                _ => bail!("--{name} needs a whole number >= {min}, not {v:?}"),
            },
        }
    }

    /// `--lessons 1,3` → `[1, 3]`.
    pub fn lessons(&mut self, default: &[u8]) -> Result<Vec<u8>> {
        let Some(v) = self.value("lessons")? else {
            return Ok(default.to_vec());
        };
        let mut out = Vec::new();
        for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.parse::<u8>() {
                Ok(n @ 1..=4) if !out.contains(&n) => out.push(n),
                _ => bail!("--lessons takes numbers 1 to 4 separated by commas, not {v:?}"),
            }
        }
        if out.is_empty() {
            bail!("--lessons needs at least one lesson");
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Whether the flag `--name` is present (removed if so).
    pub fn flag(&mut self, name: &str) -> bool {
        let flag = format!("--{name}");
        match self.rest.iter().position(|a| *a == flag) {
            Some(i) => {
                self.rest.remove(i);
                true
            }
            None => false,
        }
    }

    /// Fail on anything not taken.
    pub fn finish(self) -> Result<()> {
        match self.rest.first() {
            Some(extra) => bail!("unexpected argument {extra:?} (see --help)"),
            None => Ok(()),
        }
    }
}

/// The hard limit on open files (`getrlimit`, through the `rlimit` crate).
fn hard_nofile() -> Option<usize> {
    let (_, hard) = rlimit::Resource::NOFILE.get().ok()?;
    Some(usize::try_from(hard).unwrap_or(usize::MAX))
}

/// The memory benchmark's in-process server holds one socket per fetch in
/// flight, so this process needs a high descriptor limit: raise the soft
/// limit to `target` (at most the hard limit), which the children inherit.
fn raise_own_limit(target: usize) -> Result<()> {
    let (soft, hard) = rlimit::Resource::NOFILE
        .get()
        .context("reading the open-files limit")?;
    let target = (target as u64).min(hard);
    if soft < target {
        rlimit::Resource::NOFILE
            .set(target, hard)
            .with_context(|| format!("raising the open-files limit to {target}"))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("course-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() || args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{USAGE}");
        return Ok(());
    }

    // Global options come before the command.
    let mut root: Option<PathBuf> = None;
    let mut bin_dir: Option<PathBuf> = None;
    let mut docs: Option<PathBuf> = None;
    let mut build = true;
    let mut global_args = Vec::new();
    let mut i = 0;
    while i < args.len() && args[i].starts_with("--") {
        let (name, inline) = match args[i].split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (args[i].clone(), None),
        };
        let value = |i: &mut usize| -> Result<String> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            *i += 1;
            args.get(*i)
                .cloned()
                .with_context(|| format!("{name} needs a value"))
        };
        match name.as_str() {
            "--bin-dir" => {
                let v = value(&mut i)?;
                global_args.push(format!("--bin-dir {v}"));
                bin_dir = Some(PathBuf::from(v));
            }
            "--docs" => {
                let v = value(&mut i)?;
                global_args.push(format!("--docs {v}"));
                docs = Some(PathBuf::from(v));
            }
            "--root" => root = Some(PathBuf::from(value(&mut i)?)),
            "--no-build" => {
                global_args.push(name.clone());
                build = false;
            }
            _ => bail!("unknown global option {name:?} (see --help)"),
        }
        i += 1;
    }
    let Some(command) = args.get(i).cloned() else {
        bail!("missing COMMAND (see --help)");
    };
    let workspace = course_tools::workspace_root(root.as_deref())?;
    let opts = Opts::new(args[i + 1..].to_vec());

    let hard = hard_nofile().unwrap_or(WANTED_NOFILE);
    let child_nofile = hard.min(WANTED_NOFILE);
    if matches!(command.as_str(), "speed" | "memory" | "fds" | "all") {
        raise_own_limit(child_nofile)?;
    }

    // A binary directory given by hand is used as it is; the default one is
    // brought up to date with cargo first (a no-op when nothing changed), so
    // a benchmark never measures a stale build.
    let default_bin_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"))
        .join("release");
    let build = build && bin_dir.is_none();
    let ctx = Ctx {
        bin_dir: bin_dir.unwrap_or(default_bin_dir),
        docs: docs.unwrap_or_else(|| workspace.join("docs").join("src")),
        workspace,
        build,
        global_args,
        child_nofile,
    };

    match command.as_str() {
        "speed" => speed::command(&ctx, opts),
        "memory" => memory::command(&ctx, opts),
        "fds" => fds::command(&ctx, opts),
        "timelines" => timelines::command(&ctx, opts),
        "chart" => {
            opts.finish()?;
            chart::draw(&ctx)
        }
        "all" => {
            opts.finish()?;
            // One part failing (say, nginx will not start) does not stop
            // the others; the failures are listed at the end.
            let parts: [(&str, &dyn Fn() -> Result<()>); 5] = [
                ("speed", &|| speed::command(&ctx, Opts::new(Vec::new()))),
                ("memory", &|| memory::command(&ctx, Opts::new(Vec::new()))),
                ("fds", &|| fds::command(&ctx, Opts::new(Vec::new()))),
                ("chart", &|| chart::draw(&ctx)),
                ("timelines", &|| {
                    timelines::command(&ctx, Opts::new(Vec::new()))
                }),
            ];
            let mut failed = Vec::new();
            for (name, part) in parts {
                if let Err(e) = part() {
                    eprintln!("course-bench: {name} failed: {e:#}");
                    failed.push(name);
                }
            }
            if !failed.is_empty() {
                bail!("these parts failed: {}", failed.join(", "));
            }
            Ok(())
        }
        other => bail!("unknown command {other:?} (see --help)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_limit_is_raised_up_to_the_hard_limit() {
        let hard = hard_nofile().expect("a hard limit");
        raise_own_limit(WANTED_NOFILE).unwrap();
        let soft = shared::net::open_files_limit().expect("a soft limit");
        assert!(soft >= hard.min(WANTED_NOFILE));
    }
}
