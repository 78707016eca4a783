//! `chart`: the results as two SVG bar charts, written by hand.
//!
//! SVG is text: a few `<rect>`s for bars, `<line>`s for the axis and grid,
//! `<text>` for labels and values. Both charts are horizontal bar charts —
//! the labels read left to right and the values sit at the end of each bar —
//! drawn from the TSV files that `speed` and `memory` wrote.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Result};
use course_tools::timeline::tick_step;
use shared::fixtures::static_files::html_escape;

use crate::output::{self, bytes, thousands};
use crate::Ctx;

/// Total width of a chart, and where its bars start and may end.
const WIDTH: f64 = 800.0;
const BAR_X: f64 = 220.0;
const BAR_MAX: f64 = 400.0;
const ROW: f64 = 28.0;
const BAR_H: f64 = 18.0;

/// One bar.
struct Bar {
    /// Left of the axis: what the bar is.
    label: String,
    /// Its length in axis units. `None`: no bar, `text` explains why (a
    /// wrong crawl).
    value: Option<f64>,
    /// Right of the bar: the value as people read it.
    text: String,
    /// One colour per lesson, the same in both charts.
    colour: &'static str,
}

/// A titled group of bars.
struct Group {
    /// Printed above the group (empty: none).
    title: String,
    /// The bars, top to bottom.
    bars: Vec<Bar>,
}

fn colour(name: &str) -> &'static str {
    match name {
        // The baseline, and the same held to fewer CPUs (`--baseline-cpus`).
        _ if name.starts_with("baseline") => "#8c8c8c",
        "lesson1" => "#4e79a7",
        "lesson2" => "#f28e2b",
        "lesson3" => "#59a14f",
        _ => "#e15759",
    }
}

pub fn draw(ctx: &Ctx) -> Result<()> {
    let results = ctx.results_dir()?;
    let img = ctx.img_dir()?;
    let mut drew = 0;

    let mut groups = Vec::new();
    for (server, title) in [
        ("fixture", "on the course's serve (one thread)"),
        ("nginx", "on nginx"),
    ] {
        let path = results.join(format!("speed-{server}.tsv"));
        if !path.is_file() {
            continue;
        }
        let mut bars = Vec::new();
        for row in output::read_tsv(&path)? {
            let name = row.get("name").cloned().unwrap_or_default();
            let value: Option<f64> = row.get("median_secs").and_then(|v| v.parse().ok());
            let ratio: Option<f64> = row.get("ratio").and_then(|v| v.parse().ok());
            let text = match (value, ratio) {
                (Some(v), Some(r)) if name != "baseline" => format!("{v:.2} s · {r:.1}× baseline"),
                (Some(v), _) => format!("{v:.2} s"),
                _ => "WRONG result: not timed".to_string(),
            };
            // The table's long baseline label does not fit beside a bar.
            let label = if name == "baseline" {
                "baseline (no parsing)".to_string()
            } else {
                row.get("label").cloned().unwrap_or(name.clone())
            };
            bars.push(Bar {
                label,
                value,
                text,
                colour: colour(&name),
            });
        }
        groups.push(Group {
            title: title.to_string(),
            bars,
        });
    }
    if !groups.is_empty() {
        // `speed-<server>.tsv` holds the default site's figures (other
        // sizes get their own file names), so the title can say which.
        let title = format!(
            "Whole crawl of {} pages of {} KiB (median wall time, shorter is better)",
            thousands(crate::speed::DEFAULT_PAGES as u64),
            crate::speed::DEFAULT_PAGE_BYTES / 1024
        );
        let svg = bar_chart(&title, &groups, "seconds", None, |v| format!("{v}"));
        write(&img.join("speed.svg"), &svg)?;
        drew += 1;
    }

    let path = results.join("memory.tsv");
    if path.is_file() {
        let mut bars = Vec::new();
        for row in output::read_tsv(&path)? {
            let name = row.get("name").cloned().unwrap_or_default();
            let value: Option<f64> = row.get("per_fetch").and_then(|v| v.parse().ok());
            let fetches: u64 = row.get("fetches").and_then(|v| v.parse().ok()).unwrap_or(0);
            bars.push(Bar {
                label: format!(
                    "{} ({} in flight)",
                    row.get("label").cloned().unwrap_or(name.clone()),
                    thousands(fetches)
                ),
                // Drawn in KiB so the axis has round numbers.
                value: value.map(|v| v.max(0.0) / 1024.0),
                text: value.map_or("failed".to_string(), bytes),
                colour: colour(&name),
            });
        }
        let svg = bar_chart(
            "User-space memory per fetch in flight (smaller is better)",
            &[Group {
                title: String::new(),
                bars,
            }],
            "KiB per fetch in flight",
            Some((1.0, "1 KiB")),
            |v| format!("{v}"),
        );
        write(&img.join("memory.svg"), &svg)?;
        drew += 1;
    }
    if drew == 0 {
        bail!(
            "no results to chart in {} (run speed or memory first)",
            results.display()
        );
    }
    Ok(())
}

fn write(path: &Path, svg: &str) -> Result<()> {
    std::fs::write(path, svg)?;
    eprintln!("  wrote {}", path.display());
    Ok(())
}

/// Horizontal bars on one shared scale, with an optional marked value.
fn bar_chart(
    title: &str,
    groups: &[Group],
    unit: &str,
    mark: Option<(f64, &str)>,
    tick_label: impl Fn(f64) -> String,
) -> String {
    let max_value = groups
        .iter()
        .flat_map(|g| g.bars.iter().filter_map(|b| b.value))
        .chain(mark.map(|m| m.0))
        .fold(0.0f64, f64::max);
    let step = tick_step(max_value, 5.0);
    let top = (max_value / step).ceil().max(1.0) * step;
    let x_of = |v: f64| BAR_X + BAR_MAX * (v / top);

    let rows: usize = groups
        .iter()
        .map(|g| g.bars.len() + usize::from(!g.title.is_empty()))
        .sum();
    let plot_top = 64.0;
    let plot_bottom = plot_top + rows as f64 * ROW + 8.0;
    let height = plot_bottom + 50.0;

    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"13\">"
    );
    let _ = writeln!(
        s,
        "<rect width=\"{WIDTH}\" height=\"{height}\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"26\" font-size=\"15\" font-weight=\"bold\" text-anchor=\"middle\">{}</text>",
        WIDTH / 2.0,
        html_escape(title)
    );

    // Grid and axis labels.
    let mut v = 0.0;
    while v <= top + step / 2.0 {
        let x = x_of(v);
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{plot_top}\" x2=\"{x:.1}\" y2=\"{plot_bottom}\" stroke=\"#e0e0e0\"/>\n\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            plot_bottom + 16.0,
            html_escape(&tick_label((v * 1e6).round() / 1e6))
        );
        v += step;
    }
    let _ = writeln!(
        s,
        "<line x1=\"{BAR_X}\" y1=\"{plot_top}\" x2=\"{BAR_X}\" y2=\"{plot_bottom}\" stroke=\"#333\"/>\n\
         <line x1=\"{BAR_X}\" y1=\"{plot_bottom}\" x2=\"{:.1}\" y2=\"{plot_bottom}\" stroke=\"#333\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\">{}</text>",
        BAR_X + BAR_MAX,
        BAR_X + BAR_MAX / 2.0,
        plot_bottom + 36.0,
        html_escape(unit)
    );

    let mut y = plot_top + 4.0;
    for g in groups {
        if !g.title.is_empty() {
            let _ = writeln!(
                s,
                "<text x=\"10\" y=\"{:.1}\" font-weight=\"bold\">{}</text>",
                y + BAR_H - 4.0,
                html_escape(&g.title)
            );
            y += ROW;
        }
        for b in &g.bars {
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                BAR_X - 8.0,
                y + BAR_H - 5.0,
                html_escape(&b.label)
            );
            match b.value {
                Some(v) => {
                    let w = (x_of(v) - BAR_X).max(1.0);
                    let _ = writeln!(
                        s,
                        "<rect x=\"{BAR_X}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{BAR_H}\" fill=\"{}\"/>\n\
                         <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                        b.colour,
                        BAR_X + w + 6.0,
                        y + BAR_H - 5.0,
                        html_escape(&b.text)
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#c00\">{}</text>",
                        BAR_X + 6.0,
                        y + BAR_H - 5.0,
                        html_escape(&b.text)
                    );
                }
            }
            y += ROW;
        }
    }

    if let Some((value, label)) = mark {
        let x = x_of(value);
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{plot_bottom}\" stroke=\"#c00\" \
             stroke-dasharray=\"5,4\" stroke-width=\"1.5\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#c00\">{}</text>",
            plot_top - 8.0,
            x + 4.0,
            plot_top - 10.0,
            html_escape(label)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(10.0, 5.0), 2.0);
        assert_eq!(tick_step(3.2, 5.0), 1.0);
        assert_eq!(tick_step(24_000.0, 5.0), 5_000.0);
        assert_eq!(tick_step(0.0, 5.0), 1.0);
    }

    #[test]
    fn a_chart_is_well_formed_text() {
        let svg = bar_chart(
            "t <&>",
            &[Group {
                title: "g".into(),
                bars: vec![
                    Bar {
                        label: "a".into(),
                        value: Some(1.5),
                        text: "1.5 s".into(),
                        colour: "#000",
                    },
                    Bar {
                        label: "b".into(),
                        value: None,
                        text: "WRONG".into(),
                        colour: "#000",
                    },
                ],
            }],
            "seconds",
            Some((1.0, "mark")),
            |v| format!("{v}"),
        );
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("t &lt;&amp;&gt;"));
        assert_eq!(svg.matches("<rect").count(), 2); // background + one bar
    }
}
