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

use anyhow::{Context, Result};
use course_tools::timeline::{svg, Style};
use trace_check::TraceFile;

/// Draw a crawl's trace (`--trace FILE`) as an SVG timeline.
#[derive(clap::Parser)]
struct Cli {
    /// The trace a lesson wrote with `--trace`.
    trace: PathBuf,
    /// Where to write (default: TRACE with .svg).
    #[arg(short = 'o', value_name = "OUT.svg")]
    output: Option<PathBuf>,
    /// A heading (default: the trace's process name).
    #[arg(long)]
    title: Option<String>,
    /// Run the time axis to MS milliseconds (to compare timelines).
    #[arg(long, value_name = "MS", value_parser = positive)]
    span_ms: Option<f64>,
}

/// A positive number of milliseconds.
fn positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(ms) if ms > 0.0 && ms.is_finite() => Ok(ms),
        _ => Err("must be a positive number".to_string()),
    }
}

fn main() -> ExitCode {
    match run(<Cli as clap::Parser>::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("timeline: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let input = cli.trace;
    let mut style = Style {
        span_ms: cli.span_ms,
        ..Style::default()
    };
    let title = cli.title;
    let output = cli.output;
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
