//! # `course-bench`: the measurements behind "Comparing the four crawlers"
//!
//! ```text
//! cargo run --release -p course-tools --bin course-bench -- all
//! cargo run --release -p course-tools --bin course-bench -- speed --server nginx --runs 5
//! cargo run --release -p course-tools --bin course-bench -- memory --fetches 10000
//! cargo run --release -p course-tools --bin course-bench -- fds --links 10000
//! cargo run --release -p course-tools --bin course-bench -- chart
//! cargo run --release -p course-tools --bin course-bench -- timelines
//! cargo run --release -p course-tools --bin course-bench -- docs
//! cargo run --release -p course-tools --bin course-bench -- trace-cost
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
//! | [`trace_cost`] | each lesson's crawl with and without `--trace` |
//! | [`docs`] | lessons 1 and 4 crawling the toolchain's Rust documentation from nginx, beside the baseline |
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
mod docs;
mod fds;
mod memory;
mod output;
mod procs;
mod servers;
mod speed;
mod timelines;
mod trace_cost;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

/// The descriptor limit the bench and its children ask for: the memory
/// benchmark holds 10,000 sockets on each side, plus the files it reads.
pub const WANTED_NOFILE: usize = 65_536;

/// What every command needs to know about where things are.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The workspace root (where `Cargo.toml` and `docs/` are).
    pub workspace: PathBuf,
    /// Where the lesson binaries and `serve` are, if given (`--bin-dir`);
    /// otherwise cargo builds them and says where.
    pub bin_dir: Option<PathBuf>,
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

/// `--lessons 1,3`: which lessons to measure.
#[derive(Debug, Clone, clap::Args)]
pub struct Lessons {
    /// Which lessons, by number, separated by commas (default: every lesson
    /// the command measures).
    #[arg(long = "lessons", value_name = "N,N", value_delimiter = ',', value_parser = clap::value_parser!(u8).range(1..=4))]
    numbers: Vec<u8>,
}

impl Lessons {
    /// The lessons asked for, sorted, each once; `default` if none.
    pub fn list(&self, default: &[u8]) -> Vec<u8> {
        let mut out = if self.numbers.is_empty() {
            default.to_vec()
        } else {
            self.numbers.clone()
        };
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// A whole-number option that must be at least `min`.
pub fn at_least(
    min: usize,
) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    move |text: &str| match text.parse::<usize>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(format!("needs a whole number >= {min}")),
    }
}

/// Measure the four lesson crawlers: speed, memory, descriptors.
#[derive(Debug, clap::Parser)]
#[command(
    after_help = "Results go to DOCS/generated/bench/*.md (included by the comparison \
chapter), *.tsv (read by `chart`), and DOCS/img/*.svg."
)]
struct Cli {
    /// The course checkout (default: the one around the current directory).
    #[arg(long)]
    root: Option<PathBuf>,
    /// Where lesson1..lesson4 and serve are, used as they are (default:
    /// built first with cargo, found where cargo puts them).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// The mdBook source folder to write results into (default: the
    /// workspace's docs/src).
    #[arg(long)]
    docs: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Whole crawls of a generated site vs a keep-alive fetch baseline.
    Speed(speed::Args),
    /// User-space RSS per fetch in flight against a server that stalls.
    Memory(memory::Args),
    /// Lessons 2 and 3 crawl a page of N links under ulimit -n 1024.
    Fds(fds::Args),
    /// Draw docs/src/img/speed.svg and memory.svg from the results.
    Chart,
    /// Each lesson crawls one slow site with --trace; draw the traces.
    Timelines(timelines::Args),
    /// Lessons 1 and 4 crawl the Rust documentation from nginx, beside the baseline.
    Docs(docs::Args),
    /// Each lesson crawls the speed site with and without --trace.
    TraceCost(trace_cost::Args),
    /// Speed (both servers), memory, fds, chart, timelines, with the defaults.
    All,
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
    let cli = <Cli as clap::Parser>::parse();
    let Cli {
        root,
        bin_dir,
        docs,
        command,
    } = cli;
    // Repeated in the "exact command" lines of the results.
    let mut global_args = Vec::new();
    if let Some(dir) = &bin_dir {
        global_args.push(format!("--bin-dir {}", dir.display()));
    }
    if let Some(dir) = &docs {
        global_args.push(format!("--docs {}", dir.display()));
    }
    let workspace = course_tools::workspace_root(root.as_deref())?;

    let hard = hard_nofile().unwrap_or(WANTED_NOFILE);
    let child_nofile = hard.min(WANTED_NOFILE);
    if matches!(
        command,
        Command::Speed(_)
            | Command::Memory(_)
            | Command::Fds(_)
            | Command::Docs(_)
            | Command::TraceCost(_)
            | Command::All
    ) {
        raise_own_limit(child_nofile)?;
    }

    let ctx = Ctx {
        bin_dir,
        docs: docs.unwrap_or_else(|| workspace.join("docs").join("src")),
        workspace,
        global_args,
        child_nofile,
    };

    match command {
        Command::Speed(args) => speed::command(&ctx, args),
        Command::Memory(args) => memory::command(&ctx, args),
        Command::Fds(args) => fds::command(&ctx, args),
        Command::Timelines(args) => timelines::command(&ctx, args),
        Command::Docs(args) => docs::command(&ctx, args),
        Command::TraceCost(args) => trace_cost::command(&ctx, args),
        Command::Chart => chart::draw(&ctx),
        Command::All => {
            // Each part with its defaults. One part failing (say, nginx
            // will not start) does not stop the others; the failures are
            // listed at the end.
            fn defaults<A: clap::Parser>(name: &str) -> A {
                A::parse_from([name])
            }
            let parts: [(&str, &dyn Fn() -> Result<()>); 5] = [
                ("speed", &|| speed::command(&ctx, defaults("speed"))),
                ("memory", &|| memory::command(&ctx, defaults("memory"))),
                ("fds", &|| fds::command(&ctx, defaults("fds"))),
                ("chart", &|| chart::draw(&ctx)),
                ("timelines", &|| {
                    timelines::command(&ctx, defaults("timelines"))
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Cli, clap::Error> {
        <Cli as clap::Parser>::try_parse_from(
            std::iter::once("course-bench").chain(line.split_whitespace()),
        )
    }

    #[test]
    fn the_command_line_parses_with_its_defaults_and_limits() {
        let cli = parse("--bin-dir /b --docs /d speed --server nginx --lessons 4,1,4").unwrap();
        assert!(cli.bin_dir == Some(PathBuf::from("/b")) && cli.docs == Some(PathBuf::from("/d")));
        let Command::Speed(args) = cli.command else {
            panic!("not speed")
        };
        assert_eq!(args.lessons_asked(), [1, 4]);
        let Command::Memory(_) = parse("memory").unwrap().command else {
            panic!("not memory")
        };
        for bad in [
            "",
            "speed --runs 0",
            "speed --lessons 5",
            "fds --links x",
            "speed extra",
            "memory --fetches 1",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be an error");
        }
    }

    #[test]
    fn the_own_limit_is_raised_up_to_the_hard_limit() {
        let hard = hard_nofile().expect("a hard limit");
        raise_own_limit(WANTED_NOFILE).unwrap();
        let soft = shared::net::open_files_limit().expect("a soft limit");
        assert!(soft >= hard.min(WANTED_NOFILE));
    }
}
