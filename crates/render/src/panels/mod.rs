//! The run report's charts, built from what a [`Report`] carries and drawn with [`crate::chart`],
//! every panel on the run's one time axis with its phases shaded:
//!
//! - [`verdict`]: the verdict's own chart (batch limit: running against the cap and waiting; KV
//!   capacity: usage against 0.85 and 1.0, and preemptions; …), the verdict's evidence marked;
//! - [`dashboard`]: the four panels of `docs/METHOD.md` step 11 (output tokens/s, KV usage,
//!   GPU vs waiting, TTFT p95 over time);
//! - [`layers`]: every signal as a small multiple, grouped by the exporter it came from, its
//!   detected edges and its lag behind the engine drawn;
//! - [`client`]: the client's latency distributions, throughput and failures.
//!
//! `Page` is what they share: the report, the time axis, and how a concept becomes a line.

pub(crate) mod client;
pub(crate) mod dashboard;
pub(crate) mod layers;
pub(crate) mod requests;
pub(crate) mod verdict;

use crate::Report;
use crate::chart::{Axis, Band, Dot, Panel, Side, TimeAxis, with_unit};
use llmscope_diagnosis::{Concept, Evidence};

/// Statistics that are a level of the signal in its own unit, so they can be marked on it.
const LEVELS: [&str; 7] = [
    "plateau",
    "mean",
    "mean_nonzero",
    "max",
    "min_nonzero",
    "median",
    "rate_per_s",
];

/// The report and the time axis its panels share.
pub(crate) struct Page<'r, 'a> {
    pub r: &'r Report<'a>,
    pub time: TimeAxis,
}

impl<'r, 'a> Page<'r, 'a> {
    /// The page of `r`; `None` when its signals span no time.
    pub fn of(r: &'r Report<'a>) -> Option<Self> {
        let signals = r.input.signals.values().flat_map(|s| s.points.iter());
        let load = r.input.load.window.into_iter().flat_map(|(a, b)| [a, b]);
        let mut time = TimeAxis::over(signals.map(|p| p.0).chain(load))?;
        time.zero = crate::t0(r).min(time.from);
        Some(Page { r, time })
    }

    /// An empty panel of `height` px with the run's phases shaded.
    pub fn panel(&self, title: &str, height: f64, left: Axis) -> Panel {
        let mut p = Panel::new(title, self.time, height, left);
        p.bands = self.bands();
        p
    }

    fn bands(&self) -> Vec<Band> {
        let ph = &self.r.diagnosis.phases;
        let spans = [
            (ph.baseline, "#f1f3f5", "baseline"),
            (ph.ramp, "#fff9db", "ramp"),
            (ph.steady, "#ebfbee", "steady"),
            (ph.drain, "#fff9db", "drain"),
            (ph.after, "#f1f3f5", "after"),
        ];
        spans
            .into_iter()
            .filter_map(|(span, fill, label)| {
                let (from, to) = span?;
                let label = label.to_owned();
                Some(Band {
                    from,
                    to,
                    label,
                    fill,
                })
            })
            .collect()
    }

    /// `c`'s points × `k`; a counter as its per-second rate; empty when the run lacks it.
    pub fn points(&self, c: Concept, k: f64) -> Vec<(f64, f64)> {
        let Some(s) = self.r.input.signals.get(&c) else {
            return Vec::new();
        };
        let points = if c.is_counter() {
            s.rate().points
        } else {
            s.points.clone()
        };
        points.into_iter().map(|(t, v)| (t, v * k)).collect()
    }

    /// Adds `c` as a line (× `k`, on `side`).
    pub fn add(&self, p: &mut Panel, c: Concept, label: &str, side: Side, k: f64) {
        p.line(label, side, self.points(c, k));
    }

    /// Adds `c` as a line (× `k`, on `side`) with the verdict's evidence about it marked.
    pub fn add_marked(&self, p: &mut Panel, c: Concept, label: &str, side: Side, k: f64) {
        self.add(p, c, label, side, k);
        let colour = p.lines.last().map_or("#000", |l| l.colour);
        let unit = unit_of(p, side);
        let evidence = self.r.diagnosis.evidence.iter();
        let on_c = evidence.filter(|e| e.signal == c.name() && LEVELS.contains(&&*e.statistic));
        for e in on_c {
            p.dots.push(self.dot(e, k, side, colour, &unit));
        }
    }

    /// One piece of evidence as a dot in the middle of the window it was measured over.
    fn dot(&self, e: &Evidence, k: f64, side: Side, colour: &'static str, unit: &str) -> Dot {
        let (a, b) = e
            .window
            .or(self.r.diagnosis.phases.steady)
            .unwrap_or((self.time.from, self.time.to));
        let test = match e.threshold {
            Some(t) if !e.test.is_empty() => format!(" {} {}", e.test, with_unit(t * k, unit)),
            _ => String::new(),
        };
        Dot {
            t: (a + b) / 2.0,
            value: e.value * k,
            side,
            label: format!("{} {}{test}", e.statistic, with_unit(e.value * k, unit)),
            colour,
        }
    }
}

/// The unit of `side`'s axis.
fn unit_of(p: &Panel, side: Side) -> String {
    match side {
        Side::Left => p.left.unit.clone(),
        Side::Right => p.right.as_ref().map_or(String::new(), |a| a.unit.clone()),
    }
}

/// The verdict's chart, or why there is none.
pub(crate) fn verdict_chart(r: &Report, s: &mut String) {
    match Page::of(r) {
        Some(page) => verdict::panel(&page).write(s),
        None => crate::chart::no_data(
            "the verdict's chart",
            "the run has no time series to chart",
            s,
        ),
    }
}

/// `f(a, b)` at each moment both `a` and `b` have a sample (stamps equal to the millisecond: one
/// scrape stamps all of its series alike); `None` from `f` leaves the moment out.
pub(crate) fn join(
    a: &[(f64, f64)],
    b: &[(f64, f64)],
    f: impl Fn(f64, f64) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let ms = |t: f64| (t * 1000.0).round() as i64;
    let b: std::collections::BTreeMap<i64, f64> = b.iter().map(|&(t, v)| (ms(t), v)).collect();
    a.iter()
        .filter_map(|&(t, x)| Some((t, f(x, *b.get(&ms(t))?)?)))
        .collect()
}
