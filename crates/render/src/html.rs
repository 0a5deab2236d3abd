//! One self-contained HTML page: no scripts, no network, inline SVG charts.
//!
//! The main chart, "GPU vs waiting" (`docs/METHOD.md` step 11), plots waiting and running requests
//! (left axis) with KV usage and GPU utilisation in percent (right axis) on one time axis, the
//! run's phases shaded behind them. Every piece of text that came from outside (titles, label
//! values, messages) goes through [`esc`], the one HTML escaper ([`llmscope_core::safe::html`]).
//!
//! [`write()`] writes the sections in page order, one function each; the chart's scales live in
//! `Frame`.

use crate::{Report, client_rows, num, rel, t0};
use llmscope_core::outcome::ClientSummary;
pub use llmscope_core::safe::html as esc;
use llmscope_diagnosis::{Concept, DECISION_TABLE, Signal};
use std::fmt::Write as _;
use std::io::{self, Write};

pub(crate) const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1b1f24}\
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}\
.verdict{font-size:1.25em;padding:.6em .9em;background:#fff4e5;border-left:5px solid #e8590c}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right}\
td:first-child,th:first-child{text-align:left}.hit{background:#ffe8cc;font-weight:bold}\
.sim{color:#666;font-style:italic}.interrupted{padding:.5em .9em;background:#fff0f0;border-left:5px solid #c92a2a}svg text{font:12px system-ui,sans-serif}";

pub fn write(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let mut s = String::with_capacity(64 * 1024);
    head(r, &mut s);
    verdict(r, &mut s);
    recommendations(r, &mut s);
    failed_requests(r, &mut s);
    s.push_str("<h2>GPU vs waiting</h2>");
    chart(r, &mut s);
    evidence(r, &mut s);
    findings(r, &mut s);
    window_stats(r, &mut s);
    timeline(r, &mut s);
    decision_table(r, &mut s);
    if let Some(c) = r.client {
        client(c, &mut s);
    }
    s.push_str("</body></html>\n");
    out.write_all(s.as_bytes())
}

/// The document head, the title, and what the run was (simulated, context, interrupted).
fn head(r: &Report, s: &mut String) {
    let title = esc(&r.title);
    let _ = write!(
        s,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title><style>{STYLE}</style></head><body><h1>{title}</h1>"
    );
    if r.simulated {
        s.push_str("<p class=\"sim\">Simulated stack (llmscope sim), not real hardware.</p>");
    }
    context(r, s);
    if let Some(i) = &r.interrupted {
        let _ = write!(
            s,
            "<p class=\"interrupted\"><b>Run {}</b></p>",
            esc(&i.warning())
        );
    }
}

/// Targets and versions, one item each.
fn context(r: &Report, s: &mut String) {
    if r.context.is_empty() {
        return;
    }
    s.push_str("<ul>");
    for line in &r.context {
        let _ = write!(s, "<li>{}</li>", esc(line));
    }
    s.push_str("</ul>");
}

fn verdict(r: &Report, s: &mut String) {
    let v = &r.diagnosis.verdict;
    let _ = write!(
        s,
        "<p class=\"verdict\">Verdict: <b>{}</b> (confidence {:.0}%)<br>{}</p>",
        esc(v.bottleneck.as_str()),
        v.confidence * 100.0,
        esc(&v.summary)
    );
}

fn recommendations(r: &Report, s: &mut String) {
    let d = r.diagnosis;
    if d.recommendations.is_empty() {
        return;
    }
    s.push_str("<h2>What to change</h2><ol>");
    for rec in &d.recommendations {
        let (action, reason) = (esc(&rec.action), esc(&rec.reason));
        let predicted = rec.predicted.as_deref().map_or(String::new(), |p| {
            format!("<br><i>predicted:</i> {}", esc(p))
        });
        let _ = write!(s, "<li><b>{action}</b><br>{reason}{predicted}</li>");
    }
    s.push_str("</ol>");
}

fn failed_requests(r: &Report, s: &mut String) {
    let Some((head, kinds)) = crate::failures(r) else {
        return;
    };
    let _ = write!(s, "<h2>Failed requests</h2><p>{}</p><ul>", esc(&head));
    for (kind, bodies) in kinds {
        let _ = write!(s, "<li><code>{}</code>", esc(&kind));
        for body in bodies {
            let _ = write!(s, "<br>server said: <q>{}</q>", esc(body));
        }
        s.push_str("</li>");
    }
    s.push_str("</ul>");
}

fn evidence(r: &Report, s: &mut String) {
    s.push_str("<h2>Evidence</h2><table><tr><th>signal</th><th>statistic</th><th>value</th><th>test</th><th>source</th></tr>");
    for ev in &r.diagnosis.evidence {
        let test = ev
            .threshold
            .map_or(String::new(), |t| format!("{} {}", ev.test, num(t)));
        let (signal, statistic, value) = (esc(&ev.signal), esc(&ev.statistic), num(ev.value));
        row(
            s,
            "",
            &[&signal, &statistic, &value, &esc(&test), &esc(&ev.source)],
        );
    }
    s.push_str("</table>");
}

/// One table row, `<tr{attrs}>`, each cell in a `<td>` (escaped by the caller where it came from
/// outside).
fn row(s: &mut String, attrs: &str, cells: &[&dyn std::fmt::Display]) {
    let _ = write!(s, "<tr{attrs}>");
    for cell in cells {
        let _ = write!(s, "<td>{cell}</td>");
    }
    s.push_str("</tr>");
}

fn findings(r: &Report, s: &mut String) {
    s.push_str("<h2>Findings</h2><ul>");
    for f in &r.diagnosis.findings {
        let (rule, message) = (esc(f.rule), esc(&f.message));
        let _ = write!(
            s,
            "<li><b>{:?}</b> <code>{rule}</code>: {message}</li>",
            f.severity
        );
    }
    s.push_str("</ul>");
}

fn window_stats(r: &Report, s: &mut String) {
    s.push_str("<h2>Steady-window statistics</h2><table><tr><th>signal</th><th>max</th><th>min≠0</th><th>mean≠0</th><th>headroom</th></tr>");
    for (name, st) in &r.diagnosis.window_stats {
        let head = st
            .headroom
            .map_or(String::new(), |h| format!("{:.1}%", h * 100.0));
        let (max, min, mean) = (num(st.max), num(st.min_nonzero), num(st.mean_nonzero));
        row(s, "", &[&esc(name), &max, &min, &mean, &head]);
    }
    s.push_str("</table>");
}

/// When each signal rose and fell, then how far each lagged the load.
fn timeline(r: &Report, s: &mut String) {
    s.push_str("<h2>Timeline</h2><table><tr><th>signal</th><th>rises</th><th>falls</th></tr>");
    let zero = t0(r);
    let at = |t: Option<f64>| t.map_or("—".to_owned(), |t| rel(t, zero));
    let edges = r.diagnosis.edges.iter();
    for e in edges.filter(|e| e.rise.is_some() || e.fall.is_some()) {
        row(s, "", &[&esc(e.concept.name()), &at(e.rise), &at(e.fall)]);
    }
    s.push_str("</table>");
    offsets(r, s);
}

/// How far each signal lagged the load at its rise and at its fall.
fn offsets(r: &Report, s: &mut String) {
    s.push_str("<ul>");
    let lag = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:+.0}s"));
    for o in &r.diagnosis.offsets {
        let (concept, rise, fall) = (esc(o.concept.name()), lag(o.rise_lag_s), lag(o.fall_lag_s));
        let _ = write!(
            s,
            "<li>{concept}: lag {rise} at rise, {fall} at fall — {:?}</li>",
            o.kind
        );
    }
    s.push_str("</ul>");
}

/// The decision table, the verdict's row marked.
fn decision_table(r: &Report, s: &mut String) {
    s.push_str("<h2>Decision table</h2><table><tr><th>GPU</th><th>KV</th><th>waiting</th><th>bottleneck</th></tr>");
    for (i, d) in DECISION_TABLE.iter().enumerate() {
        let hit = r.diagnosis.verdict.row == Some(i);
        let class = if hit { " class=\"hit\"" } else { "" };
        row(s, class, &[&d.gpu, &d.kv, &d.waiting, &esc(d.bottleneck)]);
    }
    s.push_str("</table>");
}

fn client(c: &ClientSummary, s: &mut String) {
    let rows = client_rows(c);
    s.push_str("<h2>Client side</h2><table><tr><th>ms</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>mean</th></tr>");
    for (name, qs) in &rows {
        let q = qs.map(|q| q.map_or("—".to_owned(), num));
        row(s, "", &[&esc(name), &q[0], &q[1], &q[2], &q[3], &q[4]]);
    }
    s.push_str("</table>");
    percentile_bars(&rows, s);
}

/// Horizontal bars of p50/p90/p95/p99 per measure, each on its own scale.
fn percentile_bars(rows: &[(String, [Option<f64>; 5])], s: &mut String) {
    let (w, row_h) = (560.0, 22.0);
    let h = row_h * 4.0 * rows.len() as f64 + 30.0;
    let _ = write!(
        s,
        "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"latency percentiles\">"
    );
    let mut y = 10.0;
    for (name, qs) in rows {
        let max = bar_scale(&qs[..4]);
        for (label, q) in ["p50", "p90", "p95", "p99"].iter().zip(&qs[..4]) {
            bar(
                s,
                y,
                &format!("{} {label}", esc(name)),
                q.unwrap_or(0.0),
                max,
            );
            y += row_h;
        }
    }
    s.push_str("</svg>");
}

/// The longest bar's value (at least a hair above 0, so an all-zero row draws empty bars).
fn bar_scale(qs: &[Option<f64>]) -> f64 {
    qs.iter().flatten().fold(0.0f64, |a, b| a.max(*b)).max(1e-9)
}

/// One bar at `y`: its label, `v` on a scale up to `max`, the value in ms.
fn bar(s: &mut String, y: f64, label: &str, v: f64, max: f64) {
    let bw = 380.0 * v / max;
    let _ = write!(
        s,
        "<text x=\"0\" y=\"{:.0}\">{label}</text><rect x=\"90\" y=\"{y:.0}\" width=\"{bw:.1}\" height=\"14\" fill=\"#4c6ef5\"/><text x=\"{:.0}\" y=\"{:.0}\">{} ms</text>",
        y + 12.0,
        96.0 + bw,
        y + 12.0,
        num(v)
    );
}

/// The GPU-vs-waiting chart's size and margins (px).
const W: f64 = 1000.0;
const H: f64 = 340.0;
const LEFT: f64 = 50.0;
const RIGHT: f64 = 50.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 40.0;

/// The GPU-vs-waiting chart's scales: time across, request counts on the left axis, percent
/// on the right.
struct Frame {
    t_min: f64,
    t_max: f64,
    counts_max: f64,
}

impl Frame {
    /// The scales of `r`'s four signals; `None` when they span no time.
    fn of(r: &Report) -> Option<Frame> {
        use Concept::{GpuUtil, KvUsage, Running, Waiting};
        let (t_min, t_max) = points(r, &[Running, Waiting, KvUsage, GpuUtil])
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                (a.min(p.0), b.max(p.0))
            });
        if !t_min.is_finite() || t_max <= t_min {
            return None;
        }
        let counts_max = points(r, &[Running, Waiting])
            .map(|p| p.1)
            .filter(|v| v.is_finite())
            .fold(1.0f64, f64::max);
        Some(Frame {
            t_min,
            t_max,
            counts_max,
        })
    }

    fn x(&self, t: f64) -> f64 {
        LEFT + (t - self.t_min) / (self.t_max - self.t_min) * (W - LEFT - RIGHT)
    }

    fn y_count(&self, v: f64) -> f64 {
        TOP + (1.0 - v / self.counts_max) * (H - TOP - BOTTOM)
    }

    fn y_pct(&self, v: f64) -> f64 {
        TOP + (1.0 - v / 100.0) * (H - TOP - BOTTOM)
    }

    /// `v` on the left axis (`pct_scale` 0: a count) or on the right (`v × pct_scale` percent).
    fn y(&self, v: f64, pct_scale: f64) -> f64 {
        if pct_scale == 0.0 {
            self.y_count(v)
        } else {
            self.y_pct(v * pct_scale)
        }
    }
}

/// Every point of `concepts`' signals that `r` has.
fn points<'a>(r: &'a Report, concepts: &'a [Concept]) -> impl Iterator<Item = (f64, f64)> + 'a {
    concepts
        .iter()
        .filter_map(|c| r.input.signal(*c))
        .flat_map(|s| s.points.iter().copied())
}

/// The GPU-vs-waiting chart.
fn chart(r: &Report, s: &mut String) {
    let Some(f) = Frame::of(r) else {
        s.push_str("<p>No time series to chart.</p>");
        return;
    };
    let _ = write!(
        s,
        "<svg width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"GPU utilisation, KV usage, running and waiting requests over time\">"
    );
    phases(r, &f, s);
    axes(&f, s);
    lines(r, &f, s);
    s.push_str("</svg>");
}

/// The run's phases, shaded and named behind the lines.
fn phases(r: &Report, f: &Frame, s: &mut String) {
    let p = &r.diagnosis.phases;
    for (span, fill, label) in [
        (p.baseline, "#f1f3f5", "baseline"),
        (p.ramp, "#fff9db", "ramp"),
        (p.steady, "#ebfbee", "steady"),
        (p.drain, "#fff9db", "drain"),
        (p.after, "#f1f3f5", "after"),
    ] {
        if let Some(span) = span {
            shade(s, f, span, fill, label);
        }
    }
}

/// One phase: a band from `a` to `b` (at least half a pixel wide), named at its top left.
fn shade(s: &mut String, f: &Frame, (a, b): (f64, f64), fill: &str, label: &str) {
    let (x, width, height) = (f.x(a), (f.x(b) - f.x(a)).max(0.5), H - TOP - BOTTOM);
    let _ = write!(
        s,
        "<rect x=\"{x:.1}\" y=\"{TOP}\" width=\"{width:.1}\" height=\"{height:.1}\" fill=\"{fill}\"/><text x=\"{:.1}\" y=\"{:.0}\" fill=\"#868e96\">{label}</text>",
        x + 3.0,
        TOP + 12.0
    );
}

/// The time axis and the tick labels: counts left, percent right, time below.
fn axes(f: &Frame, s: &mut String) {
    let (y, x2) = (H - BOTTOM, W - RIGHT);
    let _ = write!(
        s,
        "<line x1=\"{LEFT}\" y1=\"{y:.0}\" x2=\"{x2:.0}\" y2=\"{y:.0}\" stroke=\"#adb5bd\"/>"
    );
    value_ticks(f, s);
    time_ticks(f, s);
}

/// Five ticks up the side: request counts on the left, percent on the right.
fn value_ticks(f: &Frame, s: &mut String) {
    for i in 0..=4 {
        let v = f.counts_max * i as f64 / 4.0;
        let pct = 25.0 * i as f64;
        let _ = write!(
            s,
            "<text x=\"4\" y=\"{:.0}\">{}</text><text x=\"{:.0}\" y=\"{:.0}\">{pct:.0}%</text>",
            f.y_count(v) + 4.0,
            num(v),
            W - RIGHT + 6.0,
            f.y_pct(pct) + 4.0
        );
    }
}

/// Six ticks along the time axis, in seconds from its start.
fn time_ticks(f: &Frame, s: &mut String) {
    for i in 0..=5 {
        let t = f.t_min + (f.t_max - f.t_min) * i as f64 / 5.0;
        let (x, y, at) = (f.x(t), H - BOTTOM + 16.0, rel(t, f.t_min));
        let _ = write!(
            s,
            "<text x=\"{x:.0}\" y=\"{y:.0}\" text-anchor=\"middle\">{at}</text>"
        );
    }
}

/// One line per signal there is, each with its legend entry.
fn lines(r: &Report, f: &Frame, s: &mut String) {
    // (concept, legend, colour, scale to percent; 0 = a count on the left axis)
    let series: [(Concept, &str, &str, f64); 4] = [
        (Concept::Waiting, "waiting requests", "#e8590c", 0.0),
        (Concept::Running, "running requests", "#1c7ed6", 0.0),
        (Concept::GpuUtil, "GPU utilisation %", "#2b8a3e", 1.0),
        (Concept::KvUsage, "KV-cache usage %", "#ae3ec9", 100.0),
    ];
    let mut legend_x = LEFT;
    for (c, label, color, pct_scale) in series {
        let Some(sg) = r.input.signal(c) else {
            continue;
        };
        let points = polyline(f, sg, pct_scale);
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.8\" points=\"{points}\"/>"
        );
        legend(s, legend_x, color, label);
        legend_x += 190.0;
    }
}

/// A legend entry at `x` along the bottom: a swatch of `color` and its label.
fn legend(s: &mut String, x: f64, color: &str, label: &str) {
    let _ = write!(
        s,
        "<rect x=\"{x:.0}\" y=\"{:.0}\" width=\"12\" height=\"4\" fill=\"{color}\"/><text x=\"{:.0}\" y=\"{:.0}\">{}</text>",
        H - 12.0,
        x + 16.0,
        H - 7.0,
        esc(label)
    );
}

/// `x,y x,y …` of a signal's finite points.
fn polyline(f: &Frame, sg: &Signal, pct_scale: f64) -> String {
    let pts: Vec<String> = sg
        .points
        .iter()
        .filter(|p| p.1.is_finite())
        .map(|&(t, v)| format!("{:.1},{:.1}", f.x(t), f.y(v, pct_scale)))
        .collect();
    pts.join(" ")
}
