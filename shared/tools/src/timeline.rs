//! # Drawing a trace as an SVG timeline
//!
//! A trace (`--trace FILE`) read back by `trace_check::TraceFile`, drawn the
//! way the book shows the four crawlers at work: lanes down the side (the
//! event loop's on top, then one per thread, fetch or worker), time across,
//! each fetch a bar split into its phases in one colour each, the loop's
//! turns as a thin band (dark while it runs callbacks, light while it waits
//! in `poll`), and below, how many fetches were in flight. Every bar has a
//! `<title>`, so hovering over it in a browser names the URL, the phase and
//! how long it took.
//!
//! SVG is text: this is rectangles, lines and labels written with `format!`.

use std::fmt::Write as _;

use shared::fixtures::static_files::html_escape;
use trace_check::{Slice, TraceFile};

/// The phases, in order, with their colours (the legend's order too).
pub const PHASES: [(&str, &str); 6] = [
    ("resolve", "#9467bd"),
    ("connect", "#ff7f0e"),
    ("send", "#2ca02c"),
    ("wait", "#c6dbef"),
    ("read", "#1f77b4"),
    ("links", "#d62728"),
];

/// How to draw one trace.
#[derive(Debug, Clone)]
pub struct Style {
    /// The heading above the lanes.
    pub title: String,
    /// Total width in pixels: the book's text column is about 750.
    pub width: f64,
    /// The time the axis runs to, in milliseconds; `None`: the trace's end.
    /// Timelines drawn to be compared share one.
    pub span_ms: Option<f64>,
    /// At most this many pixels for all the fetch lanes together.
    pub lanes_height: f64,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            title: String::new(),
            width: 760.0,
            span_ms: None,
            lanes_height: 300.0,
        }
    }
}

/// Left of the lanes: their names.
const LABELS: f64 = 118.0;
/// Right margin.
const RIGHT: f64 = 12.0;
/// The loop's band.
const LOOP_H: f64 = 12.0;
/// The in-flight chart.
const CHART_H: f64 = 48.0;

/// The trace's end, in milliseconds: where its last slice ends.
pub fn end_ms(trace: &TraceFile) -> f64 {
    trace.slices.iter().map(Slice::end).fold(0.0, f64::max) / 1000.0
}

/// Draw `trace` as a standalone SVG document.
pub fn svg(trace: &TraceFile, style: &Style) -> String {
    let span_ms = style.span_ms.unwrap_or_else(|| end_ms(trace)).max(1.0);
    let plot_w = style.width - LABELS - RIGHT;
    let x = |us: f64| LABELS + (us / 1000.0 / span_ms * plot_w).clamp(0.0, plot_w);
    let w = |us: f64| (us / 1000.0 / span_ms * plot_w).max(0.6);

    let has_loop = trace.turns().next().is_some();
    let lanes: Vec<u64> = trace.fetch_lanes().into_iter().collect();
    let lane_h = (style.lanes_height / lanes.len().max(1) as f64).clamp(3.0, 16.0);
    let bar_h = if lane_h >= 8.0 {
        lane_h - 3.0
    } else {
        lane_h - 1.0
    };

    let mut body = String::new();
    let mut y = 8.0;
    if !style.title.is_empty() {
        let _ = writeln!(
            body,
            r#"<text x="0" y="{}" class="title">{}</text>"#,
            y + 12.0,
            html_escape(&style.title)
        );
        y += 20.0;
    }
    // The legend.
    let mut lx = LABELS;
    for (name, colour) in PHASES {
        let _ = writeln!(
            body,
            r#"<rect x="{lx:.1}" y="{:.1}" width="10" height="10" fill="{colour}"/><text x="{:.1}" y="{:.1}">{name}</text>"#,
            y + 2.0,
            lx + 14.0,
            y + 11.0
        );
        lx += 20.0 + 7.0 * name.len() as f64 + 14.0;
    }
    if has_loop {
        let _ = writeln!(
            body,
            r##"<rect x="{lx:.1}" y="{:.1}" width="10" height="10" fill="#333"/><text x="{:.1}" y="{:.1}">loop runs</text>"##,
            y + 2.0,
            lx + 14.0,
            y + 11.0
        );
    }
    y += 22.0;

    // The event loop's band.
    if has_loop {
        let _ = writeln!(
            body,
            r#"<text x="{:.1}" y="{:.1}" class="lane">event loop</text>"#,
            LABELS - 6.0,
            y + LOOP_H - 2.0
        );
        let _ = writeln!(
            body,
            r##"<rect x="{LABELS}" y="{y:.1}" width="{plot_w:.1}" height="{LOOP_H}" fill="#eee"/>"##
        );
        for run in trace
            .slices
            .iter()
            .filter(|s| s.cat == "loop" && s.name == "run")
        {
            let ran = run.arg_u64("ran").unwrap_or(0);
            let _ = writeln!(
                body,
                r##"<rect x="{:.2}" y="{y:.1}" width="{:.2}" height="{LOOP_H}" fill="#333"><title>loop runs {ran} ready callbacks or task steps: {}</title></rect>"##,
                x(run.ts),
                w(run.dur),
                duration(run.dur)
            );
        }
        y += LOOP_H + 6.0;
    }

    // The fetch lanes.
    let lanes_top = y;
    for (i, lane) in lanes.iter().enumerate() {
        let top = lanes_top + i as f64 * lane_h;
        let label = trace.lanes.get(lane).cloned().unwrap_or_default();
        // Too thin to name each: then the lanes are counted instead (below).
        let show = lane_h >= 10.0;
        if show {
            let _ = writeln!(
                body,
                r#"<text x="{:.1}" y="{:.1}" class="lane">{}</text>"#,
                LABELS - 6.0,
                top + bar_h.min(10.0),
                html_escape(&label)
            );
        }
    }
    if lane_h < 10.0 {
        let _ = writeln!(
            body,
            r#"<text x="{:.1}" y="{:.1}" class="lane">{} lanes</text>"#,
            LABELS - 6.0,
            lanes_top + lanes.len() as f64 * lane_h / 2.0 + 4.0,
            lanes.len()
        );
    }
    for fetch in trace.fetches() {
        let Some(i) = lanes.iter().position(|l| *l == fetch.tid) else {
            continue;
        };
        let top = lanes_top + i as f64 * lane_h;
        let outcome = match (fetch.arg_u64("status"), fetch.arg_str("error")) {
            (Some(status), _) => format!("status {status}"),
            (_, Some(kind)) => format!("failed: {kind}"),
            _ if fetch.args.contains_key("abandoned") => "given back".to_owned(),
            _ => "unfinished".to_owned(),
        };
        let mut extra = String::new();
        if let Some(attempt) = fetch.arg_u64("attempt") {
            let _ = write!(extra, ", attempt {attempt}");
        }
        if let Some(id) = fetch.arg_u64("connection") {
            let reused = fetch.args.get("reused").and_then(|v| v.as_bool()) == Some(true);
            let _ = write!(
                extra,
                ", connection {id}{}",
                if reused { " (reused)" } else { " (new)" }
            );
        }
        let failed = fetch.arg_str("error").is_some();
        let _ = writeln!(
            body,
            r#"<g><title>{}&#10;{outcome}{extra}, {}</title>"#,
            html_escape(&fetch.name),
            duration(fetch.dur)
        );
        let _ = writeln!(
            body,
            r##"<rect x="{:.2}" y="{top:.1}" width="{:.2}" height="{bar_h:.1}" fill="#fff" stroke="{}" stroke-width="0.6"/>"##,
            x(fetch.ts),
            w(fetch.dur),
            if failed { "#c00" } else { "#777" }
        );
        for phase in trace.phases_of(fetch) {
            let colour = PHASES
                .iter()
                .find(|(name, _)| *name == phase.name)
                .map_or("#999", |(_, c)| c);
            let _ = writeln!(
                body,
                r#"<rect x="{:.2}" y="{top:.1}" width="{:.2}" height="{bar_h:.1}" fill="{colour}"><title>{} — {} — {}</title></rect>"#,
                x(phase.ts),
                w(phase.dur),
                html_escape(&fetch.name),
                phase.name,
                duration(phase.dur)
            );
        }
        // A hair of white where it ends, so that back-to-back fetches on a
        // lane read as separate bars.
        if w(fetch.dur) > 3.0 {
            let _ = writeln!(
                body,
                r##"<rect x="{:.2}" y="{top:.1}" width="1" height="{bar_h:.1}" fill="#fff"/>"##,
                x(fetch.end()) - 1.0
            );
        }
        body.push_str("</g>\n");
    }
    y = lanes_top + lanes.len() as f64 * lane_h + 6.0;

    // Fetches in flight, as a step line.
    let peak = trace
        .counter_max("fetches in flight")
        .unwrap_or(0.0)
        .max(1.0);
    let chart_top = y;
    let _ = writeln!(
        body,
        r#"<text x="{:.1}" y="{:.1}" class="lane">in flight</text><text x="{:.1}" y="{:.1}" class="lane small">peak {}</text>"#,
        LABELS - 6.0,
        chart_top + 14.0,
        LABELS - 6.0,
        chart_top + 28.0,
        peak
    );
    let base = chart_top + CHART_H;
    let mut points = format!("{LABELS:.1},{base:.1}");
    let mut level = base;
    for sample in trace
        .counters
        .iter()
        .filter(|c| c.name == "fetches in flight")
    {
        let px = x(sample.ts);
        let next = base - sample.value / peak * (CHART_H - 4.0);
        let _ = write!(points, " {px:.2},{level:.1} {px:.2},{next:.1}");
        level = next;
    }
    let _ = write!(points, " {:.1},{level:.1}", LABELS + plot_w);
    let _ = writeln!(
        body,
        r##"<rect x="{LABELS}" y="{chart_top:.1}" width="{plot_w:.1}" height="{CHART_H}" fill="#fafafa"/><polyline points="{points}" fill="none" stroke="#1f77b4" stroke-width="1.2"/>"##
    );
    y = base + 4.0;

    // The time axis.
    let step = tick_step(span_ms, 6.0);
    let _ = writeln!(
        body,
        r##"<line x1="{LABELS}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#444"/>"##,
        LABELS + plot_w
    );
    let mut t = 0.0;
    while t <= span_ms + 1e-9 {
        let px = LABELS + t / span_ms * plot_w;
        let _ = writeln!(
            body,
            r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#ccc" stroke-dasharray="2,3"/><text x="{px:.1}" y="{:.1}" class="tick">{}</text>"##,
            lanes_top - 2.0,
            y + 4.0,
            y + 16.0,
            tick_label(t, step)
        );
        t += step;
    }
    y += 22.0;

    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{y:.0}" viewBox="0 0 {w:.0} {y:.0}" font-family="sans-serif" font-size="11">
<style>.title{{font-size:13px;font-weight:bold}} .lane{{text-anchor:end;fill:#333}} .small{{font-size:10px;fill:#777}} .tick{{text-anchor:middle;fill:#555;font-size:10px}}</style>
<rect width="100%" height="100%" fill="#fff"/>
{body}</svg>
"##,
        w = style.width
    )
}

/// A round step (1, 2 or 5 × 10^k) that cuts `0..span` into about `parts`
/// parts: the ticks of the timelines and of the benchmark charts.
pub fn tick_step(span: f64, parts: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let rough = span / parts;
    let magnitude = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= rough)
        .unwrap_or(10.0 * magnitude)
}

/// `0 ms`, `250 ms`, `1.5 s`.
fn tick_label(t_ms: f64, step: f64) -> String {
    if t_ms == 0.0 {
        "0".to_owned()
    } else if t_ms >= 1000.0 {
        let decimals = if step >= 1000.0 { 0 } else { 1 };
        format!("{:.*} s", decimals, t_ms / 1000.0)
    } else {
        format!("{t_ms:.0} ms")
    }
}

/// A duration in microseconds, as people read it.
fn duration(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace() -> TraceFile {
        let t = shared::trace::Trace::capture("test <&> \"lesson\"");
        let span = t.fetch("http://h/?a=1&b=<2>", shared::trace::Lane::Worker(1));
        span.in_scope(|| {
            shared::trace::phase(shared::trace::Phase::Connect);
            shared::trace::phase(shared::trace::Phase::Wait);
        });
        span.end(&shared::FetchStatistic {
            status: Some(200),
            ..Default::default()
        });
        t.finish().unwrap();
        TraceFile::parse(&t.captured().unwrap()).unwrap()
    }

    #[test]
    fn draws_fetches_with_titles_and_escapes_text() {
        let svg = svg(&trace(), &Style::default());
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("http://h/?a=1&amp;b=&lt;2&gt; — wait — "));
        assert!(svg.contains("status 200"));
        assert!(!svg.contains("b=<2>"), "raw text would break the SVG");
        assert_eq!(
            svg.matches("<title>").count(),
            svg.matches("</title>").count()
        );
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(600.0, 6.0), 100.0);
        assert_eq!(tick_step(1500.0, 6.0), 500.0);
        assert_eq!(tick_step(7.0, 6.0), 2.0);
        assert_eq!(tick_label(1500.0, 500.0), "1.5 s");
        assert_eq!(tick_label(250.0, 50.0), "250 ms");
    }
}
