//! `llmscope compare A B [C…] --html`: runs side by side on one page, drawn with
//! [`crate::chart`] like a run's report.
//!
//! The page says each run's verdict, then what changed in the configuration (the context lines
//! some runs have and others lack), then the table of compared quantities with each run's change
//! from the first, then the same charts overlaid — one line per run, every run on its own clock
//! (seconds from its first scrape), so a before and an after recorded hours apart line up — and
//! the client's latency distributions overlaid. Phases differ between runs, so no panel shades
//! them. A value a run lacks is shown as `—` and a series it lacks is not drawn, never as 0.

use crate::chart::{Axis, Cdf, Panel, Side, TimeAxis};
use crate::html::{STYLE, esc};
use crate::{Report, num};
use llmscope_core::outcome::{ClientSummary, Summary};
use llmscope_diagnosis::Concept;
use std::fmt::Write as _;
use std::io::{self, Write};

/// One compared quantity: its name and each run's value, in the order of the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

/// The plot height (px) of each overlaid panel.
const HEIGHT: f64 = 150.0;

/// The signals overlaid, each as (concept, title, unit, factor).
const OVERLAID: [(Concept, &str, &str, f64); 5] = [
    (Concept::GeneratedTokens, "Output tokens/s", "tok/s", 1.0),
    (Concept::Running, "Running requests", "req", 1.0),
    (Concept::Waiting, "Waiting requests", "req", 1.0),
    (Concept::KvUsage, "KV-cache usage", "%", 100.0),
    (Concept::GpuUtil, "GPU utilisation", "%", 1.0),
];

/// The comparison of `runs` (the first is the base every change is measured from) as one
/// self-contained page.
pub fn html(title: &str, runs: &[Report], rows: &[Row], out: &mut impl Write) -> io::Result<()> {
    let mut s = String::with_capacity(64 * 1024);
    let title = esc(title);
    let _ = write!(
        s,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title><style>{STYLE}</style></head><body><h1>{title}</h1>"
    );
    verdicts(runs, &mut s);
    configuration(runs, &mut s);
    deltas(runs, rows, &mut s);
    charts(runs, &mut s);
    s.push_str("</body></html>\n");
    out.write_all(s.as_bytes())
}

/// How a run is named on the page: `run 3`, or its title when it has no id.
fn name(r: &Report) -> String {
    r.run_id
        .as_ref()
        .map_or_else(|| r.title.clone(), |id| format!("run {id}"))
}

/// Each run's verdict, one line each.
fn verdicts(runs: &[Report], s: &mut String) {
    s.push_str("<h2>Verdicts</h2><ul class=\"verdicts\">");
    for r in runs {
        let v = &r.diagnosis.verdict;
        let _ = write!(
            s,
            "<li><b>{}</b>: {} (confidence {})</li>",
            esc(&name(r)),
            esc(v.bottleneck.as_str()),
            num(v.confidence)
        );
    }
    s.push_str("</ul>");
}

/// Every context line (targets, versions, flags, signals read) some runs have and others lack:
/// what changed between them.
fn configuration(runs: &[Report], s: &mut String) {
    let changed = changed_lines(runs);
    s.push_str("<h2>What changed in the configuration</h2>");
    if changed.is_empty() {
        s.push_str("<p>The runs' targets, versions and settings read the same.</p>");
        return;
    }
    header_row(runs, "", false, s);
    for line in changed {
        let _ = write!(s, "<tr><td>{}</td>", esc(line));
        for r in runs {
            let has = r.context.iter().any(|c| c == line);
            s.push_str(if has { "<td>yes</td>" } else { "<td>—</td>" });
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
}

/// The context lines not every run has, in the order first seen.
fn changed_lines<'r>(runs: &'r [Report]) -> Vec<&'r String> {
    let mut lines: Vec<&String> = Vec::new();
    for line in runs.iter().flat_map(|r| &r.context) {
        let everywhere = runs.iter().all(|r| r.context.contains(line));
        if !everywhere && !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}

/// `<table><tr><th>first</th><th>run 1</th>…` (and a Δ column per later run when `deltas`).
fn header_row(runs: &[Report], first: &str, deltas: bool, s: &mut String) {
    let _ = write!(s, "<table><tr><th>{}</th>", esc(first));
    for r in runs {
        let _ = write!(s, "<th>{}</th>", esc(&name(r)));
    }
    if deltas {
        for r in runs.iter().skip(1) {
            let _ = write!(s, "<th>Δ {}</th>", esc(&name(r)));
        }
    }
    s.push_str("</tr>");
}

/// The compared quantities, each run's value and its change from the first run's.
fn deltas(runs: &[Report], rows: &[Row], s: &mut String) {
    s.push_str("<h2>Compared</h2>");
    header_row(runs, "", true, s);
    for row in rows {
        let _ = write!(s, "<tr><td>{}</td>", esc(&row.name));
        for v in &row.values {
            let _ = write!(s, "<td>{}</td>", v.map_or("—".to_owned(), num));
        }
        let base = row.values.first().copied().flatten();
        for v in row.values.iter().skip(1) {
            let d = change(base, *v).map_or(String::new(), |d| format!("{d:+.1}%"));
            let _ = write!(s, "<td>{d}</td>");
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
}

/// The change from `x` to `y` in percent; none from an absent or zero `x`.
pub fn change(x: Option<f64>, y: Option<f64>) -> Option<f64> {
    match (x, y) {
        (Some(x), Some(y)) if x != 0.0 => Some((y - x) / x.abs() * 100.0),
        _ => None,
    }
}

/// The overlaid signals and client distributions.
fn charts(runs: &[Report], s: &mut String) {
    s.push_str("<h2>Charts, overlaid (each run from its first scrape)</h2>");
    let Some(time) = shared_time(runs) else {
        crate::chart::no_data("the signals", "no run has a time series", s);
        return latencies(runs, s);
    };
    for (c, title, unit, k) in OVERLAID {
        overlaid(runs, time, c, title, unit, k).write(s);
    }
    latencies(runs, s);
}

/// One axis for every run, each on its own clock: 0 is its first scrape.
fn shared_time(runs: &[Report]) -> Option<TimeAxis> {
    let ends = runs.iter().flat_map(|r| {
        let t0 = crate::t0(r);
        let times = r.input.signals.values().flat_map(|s| s.points.iter());
        times.map(move |p| p.0 - t0)
    });
    let mut time = TimeAxis::over(ends.chain([0.0]))?;
    time.zero = 0.0;
    Some(time)
}

/// `c` of every run on one panel, one line each (a run without it gets an empty line, so each
/// run keeps its colour on every panel).
fn overlaid(runs: &[Report], time: TimeAxis, c: Concept, title: &str, unit: &str, k: f64) -> Panel {
    let axis = if unit == "%" {
        Axis::percent()
    } else {
        Axis::new(unit)
    };
    let mut p = Panel::new(title, time, HEIGHT, axis);
    for r in runs {
        p.line(name(r), Side::Left, shifted(r, c, k));
    }
    p.missing = format!("no run has {}", c.name());
    p
}

/// `c`'s points in `r` × `k` (a counter as its rate), timed from the run's first scrape.
fn shifted(r: &Report, c: Concept, k: f64) -> Vec<(f64, f64)> {
    let Some(sig) = r.input.signals.get(&c) else {
        return Vec::new();
    };
    let points = if c.is_counter() {
        sig.rate().points
    } else {
        sig.points.clone()
    };
    let t0 = crate::t0(r);
    points.into_iter().map(|(t, v)| (t - t0, v * k)).collect()
}

/// TTFT and end-to-end latency of every run that ran a load, overlaid (log axis).
fn latencies(runs: &[Report], s: &mut String) {
    type Pick = fn(&ClientSummary) -> &Summary;
    let kinds: [(&str, Pick); 2] = [
        ("TTFT", |c| &c.latency_ms.ttft),
        ("E2E", |c| &c.latency_ms.e2e),
    ];
    for (what, pick) in kinds {
        let curves = runs
            .iter()
            .filter_map(|r| Some(crate::panels::client::curve(&name(r), pick(r.client?))))
            .collect();
        Cdf {
            title: format!("Client {what}, cumulative (through each run's percentiles; log axis)"),
            unit: "ms".into(),
            curves,
            missing: "no run has the client's latencies".into(),
        }
        .write(s);
    }
}
