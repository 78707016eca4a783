//! Every exit path of a lesson's `main`, through `shared::cli::execute`: the
//! same function `run` wraps, with the crawl replaced by fakes and stdout and
//! stderr replaced by buffers. Nothing here touches the network except the
//! `--demo` tests, which talk to the in-process demo server on 127.0.0.1.

use std::cell::RefCell;
use std::io::{self, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::Context;
use shared::cli::{execute, help, Config, Lesson};
use shared::log::Level;
use shared::{CrawlReport, FailKind, FetchError, FetchStatistic};

const LESSONS: [Lesson; 4] = [Lesson::One, Lesson::Two, Lesson::Three, Lesson::Four];

thread_local! {
    /// The configuration the last fake crawl was handed. `CrawlFn` is a plain
    /// `fn`, so a fake cannot capture; `execute` calls it on the test's own
    /// thread, so a thread-local keeps parallel tests apart.
    static SEEN: RefCell<Option<Config>> = const { RefCell::new(None) };
}

fn seen() -> Option<Config> {
    SEEN.with(|seen| seen.borrow().clone())
}

fn remember(config: &Config) {
    SEEN.with(|seen| *seen.borrow_mut() = Some(config.clone()));
}

/// A crawl where the one root answered 200.
fn crawl_ok(config: &Config) -> anyhow::Result<CrawlReport> {
    remember(config);
    Ok(CrawlReport {
        stats: vec![FetchStatistic {
            url: "http://h/".into(),
            status: Some(200),
            content_type: Some("text/html".into()),
            encoding: Some("utf-8".into()),
            size: 5,
            ..Default::default()
        }],
        elapsed: Duration::from_millis(100),
        max_tasks: 1,
        peak_in_flight: 1,
        todo: 0,
        held: shared::Held::default(),
    })
}

/// A crawl where nothing answered (the site is not running).
fn crawl_refused(config: &Config) -> anyhow::Result<CrawlReport> {
    remember(config);
    Ok(CrawlReport {
        stats: vec![FetchStatistic::failed(
            "http://localhost:3000/",
            FetchError::new(FailKind::Connect, "connection refused"),
        )],
        ..Default::default()
    })
}

/// A crawl that could not run at all.
fn crawl_broken(config: &Config) -> anyhow::Result<CrawlReport> {
    remember(config);
    Err(anyhow::anyhow!("no descriptors left")).context("starting the event loop")
}

/// A crawl that must never be reached.
fn crawl_unreachable(_: &Config) -> anyhow::Result<CrawlReport> {
    panic!("the crawl ran although the command line asked it not to")
}

/// A crawl of the demo site: checks the server is up while it runs.
fn crawl_demo(config: &Config) -> anyhow::Result<CrawlReport> {
    remember(config);
    let root = url::Url::parse(&config.roots[0])?;
    let addrs = root.socket_addrs(|| None)?;
    TcpStream::connect(&addrs[..]).context("the demo server is not listening")?;
    crawl_ok(config)
}

struct Outcome {
    status: u8,
    stdout: String,
    stderr: String,
}

fn exec(lesson: Lesson, args: &[&str], crawl: shared::CrawlFn) -> Outcome {
    SEEN.with(|seen| *seen.borrow_mut() = None);
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let status = execute(
        lesson,
        args.iter().copied(),
        crawl,
        &mut stdout,
        &mut stderr,
    );
    Outcome {
        status,
        stdout: String::from_utf8(stdout).unwrap(),
        stderr: String::from_utf8(stderr).unwrap(),
    }
}

#[test]
fn a_crawl_that_ran_prints_the_report_and_exits_0() {
    for lesson in LESSONS {
        let out = exec(lesson, &["http://h/", "-q"], crawl_ok);
        let config = seen().expect("the crawl ran");
        assert_eq!(out.status, 0);
        assert_eq!(out.stdout, crawl_ok(&config).unwrap().render());
        assert_eq!(out.stderr, "");
        assert_eq!(config.lesson, lesson);
        assert_eq!(config.roots, ["http://h/"]);
        assert_eq!(config.log.level(), Level::Error);
    }
}

#[test]
fn failed_urls_are_results_not_a_program_failure() {
    // One URL failed, another answered: the crawl ran, exit 0.
    fn crawl_mixed(config: &Config) -> anyhow::Result<CrawlReport> {
        let mut report = crawl_ok(config)?;
        report.stats.extend(crawl_refused(config)?.stats);
        Ok(report)
    }
    let out = exec(Lesson::Four, &["http://h/"], crawl_mixed);
    assert_eq!(out.status, 0);
    assert!(out
        .stdout
        .contains("http://localhost:3000/ error connection refused"));
    assert_eq!(out.stderr, "");
}

#[test]
fn no_response_at_all_prints_the_report_and_a_hint_and_exits_1() {
    for lesson in LESSONS {
        let bin = lesson.bin_name();
        let out = exec(lesson, &[], crawl_refused);
        assert_eq!(out.status, 1);
        assert!(out.stdout.starts_with("*** Report ***\n"), "{}", out.stdout);
        assert!(out
            .stdout
            .contains("http://localhost:3000/ error connection refused"));
        assert_eq!(
            out.stderr,
            format!(
                "{bin}: no fetch received a response. Is a site running? Serve one with \
                 'cargo run -p serve -- DIR' or try '--demo'.\n"
            )
        );
        assert_eq!(seen().unwrap().roots, [shared::cli::DEFAULT_ROOT]);
    }
}

/// A report with no line at all: no fetch was tried, so nothing can be
/// said of a site — exit 1, without "Is a site running?".
#[test]
fn an_empty_report_also_exits_1_without_blaming_the_site() {
    fn crawl_nothing(_: &Config) -> anyhow::Result<CrawlReport> {
        Ok(CrawlReport::default())
    }
    let out = exec(Lesson::Two, &["http://h/"], crawl_nothing);
    assert_eq!(out.status, 1);
    assert!(out.stdout.contains("Done: 0"));
    assert_eq!(out.stderr, "lesson2: no URL was fetched.\n");
}

#[test]
fn a_crawl_error_prints_its_whole_chain_and_exits_1() {
    let out = exec(Lesson::Three, &["http://h/"], crawl_broken);
    assert_eq!(out.status, 1);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "lesson3: error: starting the event loop: no descriptors left\n"
    );
}

#[test]
fn usage_errors_exit_2_with_one_line_and_a_hint() {
    let cases: &[(Lesson, &[&str])] = &[
        (Lesson::One, &["--bogus"]),
        (Lesson::One, &["-x"]),
        (Lesson::One, &["--max-tasks", "5"]),
        (Lesson::Two, &["--threads=2"]),
        (Lesson::Three, &["--max_tries", "2"]),
        (Lesson::Four, &["--threads", "2"]),
        (Lesson::One, &["--threads", "0"]),
        (Lesson::Four, &["--max-tasks", "0"]),
        (Lesson::Four, &["--max-tries=0"]),
        (Lesson::Four, &["--max-redirect", "-1"]),
        (Lesson::Four, &["--max-tasks", "many"]),
        (Lesson::Two, &["--timeout", "0"]),
        (Lesson::Two, &["--timeout=-3"]),
        (Lesson::Two, &["--timeout", "soon"]),
        (Lesson::Two, &["--timeout"]),
        (Lesson::Two, &["--exclude"]),
        (Lesson::Two, &["--exclude", "(unclosed"]),
        (Lesson::Two, &["--demo=1"]),
        (Lesson::Two, &["--demo", "http://h/"]),
        (Lesson::Two, &["http://[::1"]),
    ];
    for (lesson, args) in cases {
        let bin = lesson.bin_name();
        let out = exec(*lesson, args, crawl_unreachable);
        assert_eq!(out.status, 2, "{args:?}");
        assert_eq!(out.stdout, "", "{args:?}");
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{args:?}: {}", out.stderr);
        assert!(
            lines[0].starts_with(&format!("{bin}: error: ")),
            "{}",
            lines[0]
        );
        assert!(lines[0].len() > format!("{bin}: error: ").len());
        assert_eq!(
            lines[1],
            format!("Try '{bin} --help' for more information.")
        );
    }
    let out = exec(Lesson::One, &["--max-tasks", "5"], crawl_unreachable);
    assert_eq!(
        out.stderr.lines().next(),
        Some("lesson1: error: --max-tasks is not an option of lesson1")
    );
}

#[cfg(unix)]
#[test]
fn an_argument_that_is_not_utf8_is_a_usage_error() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let args = [
        OsString::from("-q"),
        OsString::from_vec(b"http://h/\xff".to_vec()),
    ];
    let status = execute(
        Lesson::One,
        args,
        crawl_unreachable,
        &mut stdout,
        &mut stderr,
    );
    assert_eq!(status, 2);
    let stderr = String::from_utf8(stderr).unwrap();
    assert!(
        stderr.starts_with("lesson1: error: argument 'http://h/\u{fffd}' is not valid UTF-8\n"),
        "{stderr}"
    );
}

#[test]
fn help_and_version_print_to_stdout_and_exit_0() {
    for lesson in LESSONS {
        let bin = lesson.bin_name();
        for flag in ["-h", "--help"] {
            let out = exec(lesson, &[flag], crawl_unreachable);
            assert_eq!(out.status, 0);
            assert_eq!(out.stdout, format!("{}\n", help(lesson)));
            assert_eq!(out.stderr, "");
        }
        for flag in ["-V", "--version"] {
            let out = exec(lesson, &[flag], crawl_unreachable);
            assert_eq!(out.status, 0);
            assert_eq!(out.stdout, format!("{bin} {}\n", env!("CARGO_PKG_VERSION")));
            assert_eq!(out.stderr, "");
        }
    }
}

/// Stdout closed by the reader, as in `lesson4 | head -1`.
struct BrokenPipe;

impl Write for BrokenPipe {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::from(io::ErrorKind::BrokenPipe))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Stdout on a full disk.
struct DiskFull;

impl Write for DiskFull {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::other("no space left on device"))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_reader_that_went_away_is_not_an_error() {
    let mut stderr = Vec::new();
    let status = execute(
        Lesson::Four,
        ["http://h/"],
        crawl_ok,
        &mut BrokenPipe,
        &mut stderr,
    );
    assert_eq!(status, 0);
    assert_eq!(stderr, b"");
    let status = execute(
        Lesson::Four,
        ["--help"],
        crawl_ok,
        &mut BrokenPipe,
        &mut stderr,
    );
    assert_eq!(status, 0);
    assert_eq!(stderr, b"");
}

#[test]
fn a_report_that_cannot_be_written_is_an_error() {
    let mut stderr = Vec::new();
    let status = execute(
        Lesson::Four,
        ["http://h/"],
        crawl_ok,
        &mut DiskFull,
        &mut stderr,
    );
    assert_eq!(status, 1);
    assert_eq!(
        String::from_utf8(stderr).unwrap(),
        "lesson4: error: cannot write the report: no space left on device\n"
    );
}

#[test]
fn demo_serves_a_site_for_the_length_of_the_crawl() {
    for lesson in [Lesson::One, Lesson::Four] {
        let out = exec(lesson, &["--demo"], crawl_demo);
        assert_eq!(out.status, 0, "{}", out.stderr);
        let config = seen().expect("the crawl ran");
        assert!(config.demo);
        assert_eq!(config.roots.len(), 1);
        let root = &config.roots[0];
        assert!(
            root.starts_with("http://127.0.0.1:") && root.ends_with('/'),
            "{root}"
        );
        assert_eq!(out.stderr, format!("serving the demo site at {root}\n"));
        assert!(out.stdout.starts_with("*** Report ***\n"));
    }
    // `-q` keeps the info line quiet.
    let out = exec(Lesson::Two, &["--demo", "-q"], crawl_demo);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stderr, "");
}

/// A crawl that marks one traced fetch, as a lesson would.
fn crawl_traced(config: &Config) -> anyhow::Result<CrawlReport> {
    let span = config
        .trace
        .fetch("http://h/", shared::trace::Lane::Worker(1));
    span.in_scope(|| shared::trace::phase(shared::trace::Phase::Connect));
    let report = crawl_ok(config)?;
    span.end(&report.stats[0]);
    Ok(report)
}

#[test]
fn trace_writes_a_complete_file() {
    let dir = std::env::temp_dir().join(format!("trace-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("crawl.json");
    let path_arg = path.to_str().unwrap();
    for lesson in LESSONS {
        let out = exec(
            lesson,
            &["http://h/", "-q", "--trace", path_arg],
            crawl_traced,
        );
        assert_eq!(out.status, 0, "{}", out.stderr);
        assert_eq!(seen().unwrap().trace_path.as_deref(), Some(path.as_path()));
        let text = std::fs::read_to_string(&path).unwrap();
        let trace: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        let events = trace["traceEvents"].as_array().expect("traceEvents");
        let fetch = events
            .iter()
            .find(|e| e["cat"] == "fetch")
            .expect("the fetch's slice");
        assert_eq!(fetch["name"], "http://h/");
        assert_eq!(fetch["args"]["status"], 200);
        assert!(events
            .iter()
            .any(|e| e["name"] == "connect" && e["ph"] == "X"));
        assert!(events.iter().any(|e| e["name"] == "process_name"
            && e["args"]["name"]
                .as_str()
                .unwrap()
                .starts_with(lesson.bin_name())));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn trace_off_by_default_and_its_file_checked_before_the_crawl() {
    let out = exec(Lesson::Four, &["http://h/", "-q"], crawl_ok);
    assert_eq!(out.status, 0);
    assert!(!seen().unwrap().trace.is_on());
    // A folder that does not exist: the crawl never starts.
    let out = exec(
        Lesson::Two,
        &["http://h/", "--trace", "/nonexistent-dir/x/trace.json"],
        crawl_unreachable,
    );
    assert_eq!(out.status, 1);
    assert!(
        out.stderr.contains("cannot write the trace"),
        "{}",
        out.stderr
    );
    let out = exec(Lesson::One, &["--trace="], crawl_unreachable);
    assert_eq!(out.status, 2);
    assert!(
        out.stderr.contains("--trace needs a file name"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_failed_trace_write_is_reported_and_the_report_still_printed() {
    // `/dev/full` takes the file but fails every write: a full disk.
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    let out = exec(
        Lesson::Three,
        &["http://h/", "-q", "--trace", "/dev/full"],
        crawl_traced,
    );
    assert_eq!(out.status, 0);
    assert!(out.stdout.contains("*** Report ***"));
    assert!(
        out.stderr.contains("the trace is incomplete"),
        "{}",
        out.stderr
    );
}
