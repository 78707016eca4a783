//! # Reading and checking a crawl's trace
//!
//! `--trace FILE` makes every lesson write what it did over time in the
//! Trace Event Format (see `shared::trace`). This crate reads such a file
//! back ([`TraceFile::parse`], with `serde_json`, a parser that is not the
//! course's own) and checks that it says what a trace must say:
//!
//! - [`TraceFile::problems`]: the shape of any trace — phases nest inside
//!   their fetch, nothing overlaps on one lane, each lane is named;
//! - [`suite`]: the cases every lesson's `tests/trace.rs` runs, crawling
//!   scripted sites with the trace on.
//!
//! The timeline tool (`course-tools`' `timeline`) draws from the same
//! [`TraceFile`].

pub mod suite;

use std::collections::BTreeMap;

use anyhow::{bail, Context};
use serde_json::{Map, Value};

/// A trace, read back.
#[derive(Debug, Clone, Default)]
pub struct TraceFile {
    /// The process's name (`lesson4: the asyncio-style crawler`).
    pub process: String,
    /// Each lane's name, by its `tid`.
    pub lanes: BTreeMap<u64, String>,
    /// Every complete (`X`) event: fetches, phases, loop turns.
    pub slices: Vec<Slice>,
    /// Every counter (`C`) sample, in the file's order.
    pub counters: Vec<Sample>,
}

/// A slice of time on one lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// The URL for a fetch; the phase's or the loop's step's name otherwise.
    pub name: String,
    /// `fetch`, `phase` or `loop`.
    pub cat: String,
    /// The lane.
    pub tid: u64,
    /// Start, in microseconds since the trace began.
    pub ts: f64,
    /// Length, in microseconds.
    pub dur: f64,
    /// What else it says (a fetch's status or error, a turn's counts).
    pub args: Map<String, Value>,
}

impl Slice {
    /// Where it ends.
    pub fn end(&self) -> f64 {
        self.ts + self.dur
    }

    /// Does it lie within `outer` (allowing for the rounding of the file's
    /// three decimals)?
    pub fn within(&self, outer: &Slice) -> bool {
        const SLACK: f64 = 0.002;
        self.ts + SLACK >= outer.ts && self.end() <= outer.end() + SLACK
    }

    /// A string argument.
    pub fn arg_str(&self, key: &str) -> Option<&str> {
        self.args.get(key).and_then(Value::as_str)
    }

    /// A number argument.
    pub fn arg_u64(&self, key: &str) -> Option<u64> {
        self.args.get(key).and_then(Value::as_u64)
    }
}

/// One value of a counter.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The counter (`fetches in flight`, `open sockets`, `URLs queued`).
    pub name: String,
    /// When, in microseconds since the trace began.
    pub ts: f64,
    /// The value from then on.
    pub value: f64,
}

impl TraceFile {
    /// Read a trace. An error says what is not a trace: not JSON, no
    /// `traceEvents` array, an event without the fields its phase needs.
    pub fn parse(text: &str) -> anyhow::Result<TraceFile> {
        let root: Value = serde_json::from_str(text).context("not valid JSON")?;
        let events = root
            .get("traceEvents")
            .and_then(Value::as_array)
            .context("no traceEvents array")?;
        let mut trace = TraceFile::default();
        for (i, event) in events.iter().enumerate() {
            trace
                .add(event)
                .with_context(|| format!("event {i}: {event}"))?;
        }
        Ok(trace)
    }

    fn add(&mut self, event: &Value) -> anyhow::Result<()> {
        let field = |name: &str| event.get(name).context(format!("no {name:?}"));
        let text = |name: &str| -> anyhow::Result<String> {
            Ok(field(name)?
                .as_str()
                .context(format!("{name:?} is not a string"))?
                .to_owned())
        };
        let number = |name: &str| -> anyhow::Result<f64> {
            field(name)?
                .as_f64()
                .context(format!("{name:?} is not a number"))
        };
        let args = || -> Map<String, Value> {
            event
                .get("args")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        match text("ph")?.as_str() {
            "X" => {
                let dur = number("dur")?;
                if dur < 0.0 {
                    bail!("negative duration");
                }
                self.slices.push(Slice {
                    name: text("name")?,
                    cat: text("cat")?,
                    tid: field("tid")?.as_u64().context("tid is not a number")?,
                    ts: number("ts")?,
                    dur,
                    args: args(),
                });
            }
            "C" => {
                let value = args()
                    .values()
                    .next()
                    .and_then(Value::as_f64)
                    .context("a counter without a value")?;
                self.counters.push(Sample {
                    name: text("name")?,
                    ts: number("ts")?,
                    value,
                });
            }
            "M" => {
                let name = args()
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                match (text("name")?.as_str(), name) {
                    ("process_name", Some(name)) => self.process = name,
                    ("thread_name", Some(name)) => {
                        let tid = field("tid")?.as_u64().context("tid is not a number")?;
                        self.lanes.insert(tid, name);
                    }
                    _ => {}
                }
            }
            other => bail!("unexpected phase {other:?}"),
        }
        Ok(())
    }

    /// The fetch slices (one per fetch, or per attempt in lesson 4).
    pub fn fetches(&self) -> impl Iterator<Item = &Slice> {
        self.slices.iter().filter(|s| s.cat == "fetch")
    }

    /// The phase slices that lie within `fetch`, on its lane, in order.
    pub fn phases_of<'a>(&'a self, fetch: &'a Slice) -> Vec<&'a Slice> {
        let mut phases: Vec<&Slice> = self
            .slices
            .iter()
            .filter(|s| s.cat == "phase" && s.tid == fetch.tid && s.within(fetch))
            .collect();
        phases.sort_by(|a, b| a.ts.total_cmp(&b.ts));
        phases
    }

    /// The lanes fetches ran on.
    pub fn fetch_lanes(&self) -> std::collections::BTreeSet<u64> {
        self.fetches().map(|s| s.tid).collect()
    }

    /// The event loop's turns (lessons 2–4).
    pub fn turns(&self) -> impl Iterator<Item = &Slice> {
        self.slices
            .iter()
            .filter(|s| s.cat == "loop" && s.name == "turn")
    }

    /// Microseconds the event loop spent blocked in `poll`, over all turns.
    pub fn time_in_poll(&self) -> f64 {
        self.slices
            .iter()
            .filter(|s| s.cat == "loop" && s.name == "poll")
            .map(|s| s.dur)
            .sum()
    }

    /// The highest value counter `name` took.
    pub fn counter_max(&self, name: &str) -> Option<f64> {
        self.counters
            .iter()
            .filter(|c| c.name == name)
            .map(|c| c.value)
            .reduce(f64::max)
    }

    /// What is wrong with this trace's shape, if anything: every phase lies
    /// within exactly one fetch on its lane; fetches on one lane do not
    /// overlap, nor do the phases of one fetch, nor the loop's turns; a
    /// turn's `poll` and `run` lie within it; every lane is named; every
    /// fetch says how it ended.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let by_lane = |cat: &str, name: Option<&str>| {
            let mut lanes: BTreeMap<u64, Vec<&Slice>> = BTreeMap::new();
            for s in self
                .slices
                .iter()
                .filter(|s| s.cat == cat && name.is_none_or(|n| s.name == n))
            {
                lanes.entry(s.tid).or_default().push(s);
            }
            for slices in lanes.values_mut() {
                slices.sort_by(|a, b| a.ts.total_cmp(&b.ts));
            }
            lanes
        };
        let overlaps =
            |what: &str, lanes: &BTreeMap<u64, Vec<&Slice>>, problems: &mut Vec<String>| {
                for (tid, slices) in lanes {
                    for pair in slices.windows(2) {
                        if pair[1].ts + 0.002 < pair[0].end() {
                            problems.push(format!(
                                "{what} overlap on lane {tid}: {:?} and {:?}",
                                pair[0].name, pair[1].name
                            ));
                        }
                    }
                }
            };
        let fetches = by_lane("fetch", None);
        overlaps("fetches", &fetches, &mut problems);
        overlaps("phases", &by_lane("phase", None), &mut problems);
        overlaps("turns", &by_lane("loop", Some("turn")), &mut problems);
        for phase in self.slices.iter().filter(|s| s.cat == "phase") {
            let homes = fetches
                .get(&phase.tid)
                .map_or(0, |f| f.iter().filter(|f| phase.within(f)).count());
            if homes != 1 {
                problems.push(format!(
                    "phase {:?} at {} on lane {} lies within {homes} fetches",
                    phase.name, phase.ts, phase.tid
                ));
            }
        }
        let turns: Vec<&Slice> = self.turns().collect();
        for step in self
            .slices
            .iter()
            .filter(|s| s.cat == "loop" && s.name != "turn")
        {
            if !turns.iter().any(|t| t.tid == step.tid && step.within(t)) {
                problems.push(format!("loop {:?} at {} is in no turn", step.name, step.ts));
            }
        }
        for tid in self.slices.iter().map(|s| s.tid) {
            if !self.lanes.contains_key(&tid) {
                problems.push(format!("lane {tid} has no name"));
                break;
            }
        }
        for fetch in self.fetches() {
            let ended = ["status", "error", "abandoned", "unfinished"]
                .iter()
                .any(|key| fetch.args.contains_key(*key));
            if !ended {
                problems.push(format!("fetch {:?} does not say how it ended", fetch.name));
            }
        }
        if self.process.is_empty() {
            problems.push("the process has no name".to_owned());
        }
        problems
    }
}
