//! # `timeline`: draw a crawl's trace as an SVG timeline
//!
//! ```text
//! cargo run -p lesson4-asyncio-style -- --demo --trace crawl.json
//! cargo run -p course-tools --bin timeline -- crawl.json -o crawl.svg
//! ```
//!
//! Open the SVG in a browser: hovering over a bar names the URL, the phase
//! and how long it took. (For zooming into a big trace, open the JSON itself
//! in Perfetto or `chrome://tracing`.)

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use course_tools::timeline::{svg, Style};
use trace_check::TraceFile;

const USAGE: &str = "\
timeline: draw a crawl's trace (--trace FILE) as an SVG timeline

Usage: timeline TRACE.json [-o OUT.svg] [--title TEXT] [--span-ms MS]

  -o OUT.svg      where to write (default: TRACE with .svg)
  --title TEXT    a heading (default: the trace's process name)
  --span-ms MS    run the time axis to MS milliseconds (to compare timelines)
";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("timeline: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut input = None;
    let mut output = None;
    let mut style = Style::default();
    let mut title = None;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(());
            }
            "-o" => output = Some(PathBuf::from(value("-o")?)),
            "--title" => title = Some(value("--title")?),
            "--span-ms" => {
                let ms: f64 = value("--span-ms")?.parse().context("--span-ms")?;
                if ms.is_nan() || ms <= 0.0 {
                    bail!("--span-ms must be positive");
                }
                style.span_ms = Some(ms);
            }
            other if other.starts_with('-') => bail!("unknown option {other:?}\n{USAGE}"),
            other if input.is_none() => input = Some(PathBuf::from(other)),
            other => bail!("one trace at a time ({other:?})"),
        }
    }
    let Some(input) = input else {
        bail!("no trace given\n{USAGE}");
    };
    let text =
        std::fs::read_to_string(&input).with_context(|| format!("reading {}", input.display()))?;
    let trace = TraceFile::parse(&text).with_context(|| format!("reading {}", input.display()))?;
    style.title = title.unwrap_or_else(|| trace.process.clone());
    let output = output.unwrap_or_else(|| input.with_extension("svg"));
    std::fs::write(&output, svg(&trace, &style))
        .with_context(|| format!("writing {}", output.display()))?;
    eprintln!("wrote {}", output.display());
    Ok(())
}
