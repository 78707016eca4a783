//! `speed`: whole crawls of a generated site, against the baseline.
//!
//! The site is generated once ([`generate`]), written to a temporary folder,
//! and served by each server in turn. On each server, every contender — the
//! baseline and each lesson — runs once per round, in an order that rotates
//! from round to round, so slow drift on a shared machine (another build, a
//! neighbour's test run) spreads over all of them. A lesson's crawl counts
//! only if its report is the expected one: the right `Done` count, nothing
//! left to do, and exactly the URL set the generator says a crawl must find.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use shared::fixtures::sitegen::{generate, GeneratedSite, SiteSpec};

use crate::output::{self, median, secs, thousands};
use crate::procs::{self, Cpu, Running};
use crate::servers::{self, Kind, Server};
use crate::{baseline, Ctx};
use shared::report::PrintedReport as Report;

/// The options of one `speed` invocation.
#[derive(Debug, Clone)]
struct Spec {
    /// HTML pages in the generated site.
    pages: usize,
    /// Size each page is padded to.
    page_bytes: usize,
    /// Rounds; each contender runs once per round.
    runs: usize,
    /// The baseline's connections, lesson 1's threads, lesson 4's tasks.
    concurrency: usize,
    /// Which servers to crawl, in turn.
    servers: Vec<Kind>,
    /// Which lessons to run.
    lessons: Vec<u8>,
    /// A crawl still running after this is killed and reported.
    crawl_timeout: Duration,
    /// A second baseline row, its threads on this many CPUs.
    baseline_cpus: Option<usize>,
}

/// The spec's site size; results for it go to `speed-<server>.md`.
pub const DEFAULT_PAGES: usize = 10_000;
pub const DEFAULT_PAGE_BYTES: usize = 16_384;

/// Which servers `speed` crawls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Servers {
    /// The course's own `serve`.
    Fixture,
    /// nginx (`apt-get install nginx-light`).
    Nginx,
    /// Both, one after the other.
    Both,
}

/// Whole crawls of a generated site against a keep-alive fetch baseline.
#[derive(Debug, clap::Parser)]
pub struct Args {
    /// HTML pages in the generated site.
    #[arg(long, default_value_t = DEFAULT_PAGES, value_parser = crate::at_least(1))]
    pages: usize,
    /// The size each page is padded to, in bytes.
    #[arg(long, default_value_t = DEFAULT_PAGE_BYTES)]
    page_bytes: usize,
    /// Rounds; each contender runs once per round, and medians are reported.
    #[arg(long, default_value_t = 5, value_parser = crate::at_least(1))]
    runs: usize,
    /// The baseline's connections, lesson 1's threads, lesson 4's tasks.
    #[arg(long, default_value_t = 100, value_parser = crate::at_least(1))]
    concurrency: usize,
    /// Which server to crawl.
    #[arg(long, value_enum, default_value_t = Servers::Both)]
    server: Servers,
    #[command(flatten)]
    lessons: crate::Lessons,
    /// A crawl still running after this many seconds is killed and reported.
    #[arg(long, default_value_t = 600, value_parser = crate::at_least(1))]
    crawl_timeout: usize,
    /// Also run the baseline with its threads held to the first N CPUs, as
    /// a row of its own (the ratios stay against the baseline on every
    /// CPU). Lesson 4's loop is one thread: `--baseline-cpus 1` fetches
    /// the same way on one CPU.
    #[arg(long, value_parser = crate::at_least(1))]
    baseline_cpus: Option<usize>,
}

impl Args {
    /// The lessons this run measures.
    pub fn lessons_asked(&self) -> Vec<u8> {
        self.lessons.list(&[1, 2, 3, 4])
    }
}

pub fn command(ctx: &Ctx, args: Args) -> Result<()> {
    let lessons = args.lessons_asked();
    let Args {
        pages,
        page_bytes,
        runs,
        concurrency,
        server,
        crawl_timeout,
        baseline_cpus,
        ..
    } = args;
    let servers = match server {
        Servers::Both => vec![Kind::Fixture, Kind::Nginx],
        Servers::Fixture => vec![Kind::Fixture],
        Servers::Nginx => vec![Kind::Nginx],
    };
    let crawl_timeout = Duration::from_secs(crawl_timeout as u64);
    let spec = Spec {
        pages,
        page_bytes,
        runs,
        concurrency,
        servers,
        lessons,
        crawl_timeout,
        baseline_cpus,
    };

    eprintln!("speed: finding the binaries");
    let (binaries, missing) = procs::lesson_binaries(ctx, &spec.lessons);
    let nginx = servers::find_nginx();
    if nginx.is_none() && spec.servers.contains(&Kind::Nginx) {
        eprintln!("speed: {}", servers::NGINX_MISSING);
    }
    let serve = if spec.servers.contains(&Kind::Fixture) {
        Some(procs::serve_binary(ctx)?)
    } else {
        None
    };

    eprintln!(
        "speed: generating {} pages of {} bytes",
        thousands(spec.pages as u64),
        thousands(spec.page_bytes as u64)
    );
    let site = generate(&SiteSpec {
        page_bytes: spec.page_bytes,
        ..SiteSpec::new(spec.pages)
    });
    // Removed when dropped, however the benchmark ends.
    let site_dir = tempfile::Builder::new()
        .prefix("course-bench-site-")
        .tempdir()
        .context("creating a folder for the site")?;
    let dir = site_dir.path();
    site.write_to(dir)
        .with_context(|| format!("writing the site to {}", dir.display()))?;

    for &kind in &spec.servers {
        let server = match kind {
            Kind::Fixture => match &serve {
                Some(serve) => Server::fixture(serve, dir)?,
                None => continue,
            },
            Kind::Nginx => match &nginx {
                Some(nginx) => Server::nginx(nginx, dir, ctx.child_nofile)?,
                None => continue,
            },
        };
        eprintln!("speed: serving with {} at {}", kind.name(), server.origin());
        let table = run_on(ctx, &spec, &site, &server, &binaries, &missing)?;
        drop(server);
        print!("{}", table.markdown);
        let stem = if spec.pages == DEFAULT_PAGES && spec.page_bytes == DEFAULT_PAGE_BYTES {
            format!("speed-{}", kind.name())
        } else {
            format!("speed-{}-{}x{}", kind.name(), spec.pages, spec.page_bytes)
        };
        output::write_result(ctx, &format!("{stem}.md"), &table.markdown)?;
        output::write_result(ctx, &format!("{stem}.tsv"), &table.tsv)?;
    }
    Ok(())
}

/// One contender: the baseline or a lesson.
#[derive(Debug)]
struct Contender {
    /// `baseline`, `lesson1`, ...
    name: String,
    /// The row label.
    label: String,
    /// How it is run (for the table).
    how: String,
    /// Lesson number and binary, or `None` for the baseline.
    lesson: Option<(u8, PathBuf)>,
    /// For a baseline held to fewer CPUs: how many.
    cpus: Option<usize>,
    /// Times of the correct runs.
    times: Vec<Duration>,
    /// Achieved concurrency reported by each correct run.
    concurrency: Vec<u64>,
    /// CPU time of each correct run: the crawler's, or the bench process's
    /// for the baseline.
    cpu: Vec<Cpu>,
    /// The server's CPU time during each correct run.
    server_cpu: Vec<Duration>,
    /// Connection attempts dropped by a full accept queue during each
    /// correct run.
    overflows: Vec<u64>,
    /// Why a run was wrong or failed (the first such reason), and how many.
    problems: Vec<String>,
}

impl Contender {
    /// A contender with no runs yet.
    fn new(name: String, label: String, how: String, lesson: Option<(u8, PathBuf)>) -> Contender {
        Contender {
            name,
            label,
            how,
            lesson,
            cpus: None,
            times: Vec::new(),
            concurrency: Vec::new(),
            cpu: Vec::new(),
            server_cpu: Vec::new(),
            overflows: Vec::new(),
            problems: Vec::new(),
        }
    }
}

/// What one measurement gave.
enum Outcome {
    /// A correct run: wall time, achieved concurrency, CPU time.
    Ok(Duration, u64, Cpu),
    /// A run that finished with the wrong result, or did not finish.
    Bad(String),
}

/// The finished table, as Markdown and as TSV.
struct Table {
    /// For the chapter and stdout.
    markdown: String,
    /// For `chart`.
    tsv: String,
}

fn run_on(
    ctx: &Ctx,
    spec: &Spec,
    site: &GeneratedSite,
    server: &Server,
    binaries: &[(u8, PathBuf)],
    missing: &[(u8, String)],
) -> Result<Table> {
    let origin = server.origin();
    let expected = site.expected_urls(&origin);
    let paths: Arc<Vec<String>> = Arc::new(
        expected
            .iter()
            .map(|u| u[origin.len()..].to_string())
            .collect(),
    );
    let root = format!("{origin}/");

    // One unmeasured baseline run warms the page cache and the server, and
    // tells us what the site answers.
    let warm = baseline::fetch_all(server.addr, &paths, spec.concurrency, None)
        .context("warm-up baseline run")?;

    let mut contenders = vec![Contender::new(
        "baseline".into(),
        "baseline: keep-alive fetch, no parsing".into(),
        format!(
            "{} keep-alive connections, URL list known",
            spec.concurrency
        ),
        None,
    )];
    if let Some(cpus) = spec.baseline_cpus {
        let (label, how) = baseline::held_row(cpus, spec.concurrency);
        let mut held = Contender::new(format!("baseline-{cpus}cpu"), label, how, None);
        held.cpus = Some(cpus);
        contenders.push(held);
    }
    for (n, bin) in binaries {
        let how = match n {
            1 => format!("`lesson1 -q --threads {}`", spec.concurrency),
            4 => format!("`lesson4 -q --max-tasks {}`", spec.concurrency),
            _ => format!("`lesson{n} -q` (unbounded)"),
        };
        contenders.push(Contender::new(
            format!("lesson{n}"),
            format!("lesson {n}"),
            how,
            Some((*n, bin.clone())),
        ));
    }

    for round in 0..spec.runs {
        let k = contenders.len();
        for j in 0..k {
            let c = &mut contenders[(round + j) % k];
            let server_before = server.cpu();
            let overflows_before = procs::listen_overflows().unwrap_or(0);
            let outcome = match &c.lesson {
                None => {
                    let before = procs::cpu_of(None).unwrap_or_default();
                    match baseline::fetch_all(server.addr, &paths, spec.concurrency, c.cpus) {
                        Ok(f) => {
                            let cpu = procs::cpu_of(None).unwrap_or_default();
                            if f.retries > 0 {
                                eprintln!(
                                    "  baseline: {} requests retried on a new connection, first: {}",
                                    f.retries,
                                    f.first_retry_error.as_deref().unwrap_or("?")
                                );
                            }
                            Outcome::Ok(f.elapsed, spec.concurrency as u64, cpu.since(before))
                        }
                        Err(e) => Outcome::Bad(format!("{e:#}")),
                    }
                }
                Some((n, bin)) => crawl(ctx, spec, *n, bin, &root, &expected)?,
            };
            let server_cpu = server.cpu().saturating_sub(server_before);
            let overflows = procs::listen_overflows()
                .unwrap_or(0)
                .saturating_sub(overflows_before);
            let said = match outcome {
                Outcome::Ok(t, conc, cpu) => {
                    c.times.push(t);
                    c.concurrency.push(conc);
                    c.cpu.push(cpu);
                    c.server_cpu.push(server_cpu);
                    c.overflows.push(overflows);
                    format!(
                        "{} (concurrency {conc}, CPU {}, server CPU {}, SYNs dropped {overflows})",
                        secs(t),
                        secs(cpu.total()),
                        secs(server_cpu)
                    )
                }
                Outcome::Bad(why) => {
                    let line = format!("WRONG: {why}");
                    c.problems.push(why);
                    line
                }
            };
            eprintln!(
                "  [{} round {}/{}] {}: {said}",
                server.kind.name(),
                round + 1,
                spec.runs,
                c.name
            );
            // Let the sockets of the last run close before the next starts.
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    let links = time_link_finding(site, &origin);
    let mut table = render(ctx, spec, site, server, &warm, &contenders, missing)?;
    where_the_cpu_goes(&mut table.markdown, &contenders, &links, warm.responses);
    Ok(table)
}

/// How long finding and resolving the links of every HTML page of the site
/// takes, timed alone in this process on the same bytes the crawlers read:
/// with `shared::links` as the lessons use it, and with the regex way it
/// replaced (`shared::links::reference`). The fastest of five passes each,
/// the two alternating: the figure is what the code costs, not what a busy
/// moment made of it.
struct LinkFinding {
    pages: usize,
    now: Duration,
    regex: Duration,
}

fn time_link_finding(site: &GeneratedSite, origin: &str) -> LinkFinding {
    let pages: Vec<(url::Url, &[u8])> = site
        .files
        .iter()
        .filter(|(_, file)| file.content_type.starts_with("text/html"))
        .filter_map(|(path, file)| {
            let url = url::Url::parse(&format!("{origin}{path}")).ok()?;
            Some((url, file.bytes.as_slice()))
        })
        .collect();
    let pass = |f: &dyn Fn(&[u8], &url::Url) -> usize| {
        let start = std::time::Instant::now();
        let links: usize = pages.iter().map(|(url, body)| f(body, url)).sum();
        std::hint::black_box(links);
        start.elapsed()
    };
    let (mut now, mut regex) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        now = now.min(pass(&|b, u| shared::links::extract_links(b, u).len()));
        regex = regex.min(pass(&|b, u| {
            shared::links::reference::extract_links(b, u).len()
        }));
    }
    LinkFinding {
        pages: pages.len(),
        now,
        regex,
    }
}

/// One whole crawl by lesson `n`, checked against the expected URL set.
fn crawl(
    ctx: &Ctx,
    spec: &Spec,
    n: u8,
    bin: &std::path::Path,
    root: &str,
    expected: &std::collections::BTreeSet<String>,
) -> Result<Outcome> {
    let mut args = vec!["-q".to_string()];
    match n {
        1 => args.extend(["--threads".to_string(), spec.concurrency.to_string()]),
        4 => args.extend(["--max-tasks".to_string(), spec.concurrency.to_string()]),
        _ => {}
    }
    args.push(root.to_string());
    let run = Running::spawn(bin, &args, ctx.child_nofile)?;
    let done = run.wait(spec.crawl_timeout);
    let Some(status) = done.status else {
        return Ok(Outcome::Bad(format!(
            "did not finish in {} s",
            spec.crawl_timeout.as_secs()
        )));
    };
    let report = Report::parse(&done.stdout);
    if let Some(why) = report.mismatch(expected) {
        // The report's failure counters usually say what went wrong.
        let fails: Vec<String> = report
            .stats
            .iter()
            .filter(|(k, _)| k.starts_with("fail") || k.starts_with("status_"))
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let mut why = format!("{why}; {status}");
        if !fails.is_empty() {
            why.push_str(&format!("; report counts {}", fails.join(", ")));
        }
        let errors = done.stderr.trim();
        if !errors.is_empty() {
            why.push_str(&format!("; stderr: {}", procs::tail(errors, 300)));
        }
        return Ok(Outcome::Bad(why));
    }
    if !status.success() {
        return Ok(Outcome::Bad(format!("{status}")));
    }
    Ok(Outcome::Ok(
        done.elapsed,
        report.concurrency.unwrap_or(0),
        done.cpu,
    ))
}

fn render(
    ctx: &Ctx,
    spec: &Spec,
    site: &GeneratedSite,
    server: &Server,
    warm: &baseline::Fetched,
    contenders: &[Contender],
    missing: &[(u8, String)],
) -> Result<Table> {
    let urls = warm.responses as f64;
    let mut args = format!(
        "speed --server {} --pages {} --page-bytes {} --runs {} --concurrency {}",
        server.kind.name(),
        spec.pages,
        spec.page_bytes,
        spec.runs,
        spec.concurrency
    );
    if spec.lessons != [1, 2, 3, 4] {
        let list: Vec<String> = spec.lessons.iter().map(|n| n.to_string()).collect();
        let _ = write!(args, " --lessons {}", list.join(","));
    }
    if let Some(cpus) = spec.baseline_cpus {
        let _ = write!(args, " --baseline-cpus {cpus}");
    }
    let title = format!(
        "Crawl speed: {} pages of {} bytes on {}",
        thousands(spec.pages as u64),
        thousands(spec.page_bytes as u64),
        server.kind.title()
    );
    let mut md = output::header(ctx, &title, &args);

    let statuses: Vec<String> = warm
        .statuses
        .iter()
        .map(|(s, n)| format!("status {s}: {}", thousands(*n as u64)))
        .collect();
    let _ = writeln!(
        md,
        "The site: {} HTML pages and {} other files, {:.1} MB. A complete crawl \
         reports {} URLs ({}) and reads {:.1} MB of bodies.\n",
        thousands(site.page_count() as u64),
        thousands((site.files.len() - site.page_count()) as u64),
        site.total_bytes() as f64 / 1e6,
        thousands(warm.responses as u64),
        statuses.join(", "),
        warm.body_bytes as f64 / 1e6,
    );

    let base = median(&contenders[0].times);
    md.push_str(
        "| crawler | run as | median time | fastest – slowest | URLs/s | × baseline | \
         CPU time | server's CPU time | achieved concurrency | SYNs dropped | result |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let mut tsv = output::tsv(&[
        "name",
        "label",
        "median_secs",
        "urls_per_sec",
        "ratio",
        "status",
    ])?;
    for c in contenders {
        let runs = c.times.len() + c.problems.len();
        let med = if c.problems.is_empty() {
            median(&c.times)
        } else {
            None
        };
        let (time, range, rate, ratio) = match med {
            Some(m) => {
                let fastest = c.times.iter().min().copied().unwrap_or(m);
                let slowest = c.times.iter().max().copied().unwrap_or(m);
                let ratio = base.map(|b| m.as_secs_f64() / b.as_secs_f64());
                (
                    secs(m),
                    format!("{} – {}", secs(fastest), secs(slowest)),
                    format!("{:.0}", urls / m.as_secs_f64()),
                    ratio.map_or("—".to_string(), |r| format!("{r:.2}×")),
                )
            }
            None => ("—".into(), "—".into(), "—".into(), "—".into()),
        };
        let mut conc = c.concurrency.clone();
        conc.sort_unstable();
        let conc = conc
            .get(conc.len() / 2)
            .map_or("—".to_string(), |k| thousands(*k));
        let result = match c.problems.first() {
            None => format!("ok ({runs} of {runs} runs)"),
            Some(why) => format!(
                "**WRONG** in {} of {runs} runs: {}",
                c.problems.len(),
                why.replace('|', "\\|").replace('\n', " ")
            ),
        };
        let totals: Vec<Duration> = c.cpu.iter().map(|c| c.total()).collect();
        let cpu = median(&totals).map_or("—".to_string(), secs);
        let server_cpu = median(&c.server_cpu).map_or("—".to_string(), secs);
        let mut overflows = c.overflows.clone();
        overflows.sort_unstable();
        let overflows = overflows
            .get(overflows.len() / 2)
            .map_or("—".to_string(), |k| thousands(*k));
        let _ = writeln!(
            md,
            "| {} | {} | {time} | {range} | {rate} | {ratio} | {cpu} | {server_cpu} | {conc} | {overflows} | {result} |",
            c.label, c.how
        );
        let status = if c.problems.is_empty() { "ok" } else { "WRONG" };
        tsv.write_record([
            c.name.clone(),
            c.label.clone(),
            med.map_or(String::new(), |m| format!("{:.4}", m.as_secs_f64())),
            med.map_or(String::new(), |m| format!("{:.0}", urls / m.as_secs_f64())),
            match (med, base) {
                (Some(m), Some(b)) => format!("{:.3}", m.as_secs_f64() / b.as_secs_f64()),
                _ => String::new(),
            },
            status.to_string(),
        ])?;
    }
    for (n, why) in missing {
        let _ = writeln!(
            md,
            "| lesson {n} | — | — | — | — | — | — | — | — | — | not measured: {} |",
            why.replace('|', "\\|").replace('\n', " ")
        );
    }
    let _ = writeln!(
        md,
        "\nTimes are wall-clock, from starting the process to its exit, medians of {} runs \
         per crawler, the crawlers' runs alternating. Every lesson ran with `-q` under \
         `ulimit -n {}`; a run counts only if its report lists exactly the {} expected URLs. \
         The baseline opened {} connections for them (one per worker that got a URL, plus \
         one for each connection the server closed). CPU time is user + system time, \
         medians: the crawler's own (the bench process's for the baseline), and the server's \
         during the same run; the machine has {} cores to share between them. *SYNs \
         dropped* is the median growth of the kernel's `ListenOverflows` counter during a \
         run: connection attempts refused because the server's accept queue was full, each \
         retried by the client a second later (the counter is machine-wide).",
        spec.runs,
        ctx.child_nofile,
        thousands(warm.responses as u64),
        thousands(warm.connections as u64),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    Ok(Table {
        markdown: md,
        tsv: output::tsv_text(tsv)?,
    })
}

/// The second table: each crawler's CPU time split into user space and the
/// kernel, per crawl and per URL, beside what finding links costs alone.
fn where_the_cpu_goes(md: &mut String, contenders: &[Contender], links: &LinkFinding, urls: usize) {
    let per_url = |d: Duration| {
        format!(
            "{} ({:.1} µs a URL)",
            secs(d),
            d.as_secs_f64() * 1e6 / urls.max(1) as f64
        )
    };
    md.push_str(
        "\n#### Where the CPU time goes\n\n\
         | crawler | user space | kernel | user space less link finding |\n\
         |---|---:|---:|---:|\n",
    );
    for c in contenders {
        let users: Vec<Duration> = c.cpu.iter().map(|c| c.user).collect();
        let systems: Vec<Duration> = c.cpu.iter().map(|c| c.system).collect();
        let (Some(user), Some(system)) = (median(&users), median(&systems)) else {
            continue;
        };
        let rest = if c.lesson.is_some() {
            per_url(user.saturating_sub(links.now))
        } else {
            "—".to_string()
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {rest} |",
            c.label,
            per_url(user),
            per_url(system)
        );
    }
    let _ = writeln!(
        md,
        "| link finding alone: `shared::links` | {} | — | — |\n\
         | link finding alone: the regex way (`links::reference`) | {} | — | — |",
        per_url(links.now),
        per_url(links.regex)
    );
    let _ = writeln!(
        md,
        "\nUser and kernel times are medians of the correct runs, from `getrusage` of the \
         crawler (of the bench process for the baseline), shown per crawl and per URL of \
         the report. *Link finding alone* is finding and resolving the links of the same {} \
         HTML pages the crawlers parse, timed in the bench process, the fastest of five \
         passes: with `shared::links` as every lesson uses it, and with the regex way it \
         replaced (`shared::links::reference`, which gives the same links). The last column \
         subtracts the first of those from each lesson's user time: what is left is the \
         lesson's own work (its threads or loop, tasks, the seen-set and queue) and the rest \
         of `shared` (the HTTP parser, the URL policy, the report).",
        thousands(links.pages as u64),
    );
}
