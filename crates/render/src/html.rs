//! One self-contained HTML page: no scripts, no network, inline SVG charts.
//!
//! The main chart is the "GPU vs waiting" panel of DESIGN §2 step 11: waiting and running requests
//! (left axis) with KV usage and GPU utilisation in percent (right axis) on one time axis, the
//! run's phases shaded behind them. Every piece of text that came from outside (titles, label
//! values, messages) goes through [`esc`].

use crate::{Report, client_rows, num, rel, t0};
use llmscope_core::client::ClientSummary;
use llmscope_core::diagnose::{Concept, DECISION_TABLE, Signal};
use std::fmt::Write as _;
use std::io::{self, Write};

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1b1f24}\
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}\
.verdict{font-size:1.25em;padding:.6em .9em;background:#fff4e5;border-left:5px solid #e8590c}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right}\
td:first-child,th:first-child{text-align:left}.hit{background:#ffe8cc;font-weight:bold}\
.sim{color:#666;font-style:italic}.interrupted{padding:.5em .9em;background:#fff0f0;border-left:5px solid #c92a2a}svg text{font:12px system-ui,sans-serif}";

pub fn write(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let mut s = String::with_capacity(64 * 1024);
    let d = r.diagnosis;
    let _ = write!(
        s,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>",
        esc(&r.title)
    );
    let _ = write!(s, "<h1>{}</h1>", esc(&r.title));
    if r.simulated {
        s.push_str("<p class=\"sim\">Simulated stack (llmscope sim), not real hardware.</p>");
    }
    if !r.context.is_empty() {
        s.push_str("<ul>");
        for line in &r.context {
            let _ = write!(s, "<li>{}</li>", esc(line));
        }
        s.push_str("</ul>");
    }
    if let Some(i) = &r.interrupted {
        let _ = write!(
            s,
            "<p class=\"interrupted\"><b>Run {}</b></p>",
            esc(&i.warning())
        );
    }
    let _ = write!(
        s,
        "<p class=\"verdict\">Verdict: <b>{}</b> (confidence {:.0}%)<br>{}</p>",
        esc(d.verdict.bottleneck.as_str()),
        d.verdict.confidence * 100.0,
        esc(&d.verdict.summary)
    );
    recommendations(r, &mut s);
    failed_requests(r, &mut s);
    s.push_str("<h2>GPU vs waiting</h2>");
    chart(r, &mut s);
    evidence(r, &mut s);
    stats_and_table(r, &mut s);
    if let Some(c) = r.client {
        client(c, &mut s);
    }
    s.push_str("</body></html>\n");
    out.write_all(s.as_bytes())
}

fn recommendations(r: &Report, s: &mut String) {
    let d = r.diagnosis;
    if d.recommendations.is_empty() {
        return;
    }
    s.push_str("<h2>What to change</h2><ol>");
    for rec in &d.recommendations {
        let _ = write!(
            s,
            "<li><b>{}</b><br>{}</li>",
            esc(&rec.action),
            esc(&rec.reason)
        );
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
    let d = r.diagnosis;
    s.push_str("<h2>Evidence</h2><table><tr><th>signal</th><th>statistic</th><th>value</th><th>test</th><th>source</th></tr>");
    for ev in &d.evidence {
        let test = ev
            .threshold
            .map_or(String::new(), |t| format!("{} {}", ev.test, num(t)));
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&ev.signal),
            esc(&ev.statistic),
            num(ev.value),
            esc(&test),
            esc(&ev.source)
        );
    }
    s.push_str("</table><h2>Findings</h2><ul>");
    for f in &d.findings {
        let _ = write!(
            s,
            "<li><b>{:?}</b> <code>{}</code>: {}</li>",
            f.severity,
            esc(f.rule),
            esc(&f.message)
        );
    }
    s.push_str("</ul>");
}

fn stats_and_table(r: &Report, s: &mut String) {
    let d = r.diagnosis;
    s.push_str("<h2>Steady-window statistics</h2><table><tr><th>signal</th><th>max</th><th>min≠0</th><th>mean≠0</th><th>headroom</th></tr>");
    for (name, st) in &d.window_stats {
        let head = st
            .headroom
            .map_or(String::new(), |h| format!("{:.1}%", h * 100.0));
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{head}</td></tr>",
            esc(name),
            num(st.max),
            num(st.min_nonzero),
            num(st.mean_nonzero)
        );
    }
    s.push_str(
        "</table><h2>Timeline</h2><table><tr><th>signal</th><th>rises</th><th>falls</th></tr>",
    );
    let zero = t0(r);
    for e in d
        .edges
        .iter()
        .filter(|e| e.rise.is_some() || e.fall.is_some())
    {
        let f = |t: Option<f64>| t.map_or("—".to_owned(), |t| rel(t, zero));
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(e.concept.name()),
            f(e.rise),
            f(e.fall)
        );
    }
    s.push_str("</table><ul>");
    for o in &d.offsets {
        let f = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:+.0}s"));
        let _ = write!(
            s,
            "<li>{}: lag {} at rise, {} at fall — {:?}</li>",
            esc(o.concept.name()),
            f(o.rise_lag_s),
            f(o.fall_lag_s),
            o.kind
        );
    }
    s.push_str("</ul><h2>Decision table</h2><table><tr><th>GPU</th><th>KV</th><th>waiting</th><th>bottleneck</th></tr>");
    for (i, row) in DECISION_TABLE.iter().enumerate() {
        let class = if d.verdict.row == Some(i) {
            " class=\"hit\""
        } else {
            ""
        };
        let _ = write!(
            s,
            "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            row.gpu,
            row.kv,
            row.waiting,
            esc(row.bottleneck)
        );
    }
    s.push_str("</table>");
}

fn client(c: &ClientSummary, s: &mut String) {
    let rows = client_rows(c);
    s.push_str("<h2>Client side</h2><table><tr><th>ms</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>mean</th></tr>");
    for (name, qs) in &rows {
        let _ = write!(s, "<tr><td>{}</td>", esc(name));
        for q in qs {
            let _ = write!(s, "<td>{}</td>", q.map_or("—".to_owned(), num));
        }
        s.push_str("</tr>");
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
        let max = qs[..4]
            .iter()
            .flatten()
            .fold(0.0f64, |a, b| a.max(*b))
            .max(1e-9);
        for (label, q) in ["p50", "p90", "p95", "p99"].iter().zip(&qs[..4]) {
            let v = q.unwrap_or(0.0);
            let bw = 380.0 * v / max;
            let _ = write!(
                s,
                "<text x=\"0\" y=\"{:.0}\">{} {label}</text><rect x=\"90\" y=\"{:.0}\" width=\"{bw:.1}\" height=\"14\" fill=\"#4c6ef5\"/><text x=\"{:.0}\" y=\"{:.0}\">{} ms</text>",
                y + 12.0,
                esc(name),
                y,
                96.0 + bw,
                y + 12.0,
                num(v)
            );
            y += row_h;
        }
    }
    s.push_str("</svg>");
}

/// The GPU-vs-waiting chart.
fn chart(r: &Report, s: &mut String) {
    let (w, h, left, right, top, bottom) = (1000.0, 340.0, 50.0, 50.0, 16.0, 40.0);
    let sig = |c: Concept| r.input.signal(c);
    let all: Vec<&Signal> = [
        Concept::Running,
        Concept::Waiting,
        Concept::KvUsage,
        Concept::GpuUtil,
    ]
    .iter()
    .filter_map(|c| sig(*c))
    .collect();
    let (t_min, t_max) = all
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| {
            (a.min(t), b.max(t))
        });
    if !t_min.is_finite() || t_max <= t_min {
        s.push_str("<p>No time series to chart.</p>");
        return;
    }
    let counts_max = [Concept::Running, Concept::Waiting]
        .iter()
        .filter_map(|c| sig(*c))
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max);
    let x = |t: f64| left + (t - t_min) / (t_max - t_min) * (w - left - right);
    let y_count = |v: f64| top + (1.0 - v / counts_max) * (h - top - bottom);
    let y_pct = |v: f64| top + (1.0 - v / 100.0) * (h - top - bottom);
    let _ = write!(
        s,
        "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"GPU utilisation, KV usage, running and waiting requests over time\">"
    );
    let p = &r.diagnosis.phases;
    for (span, fill, label) in [
        (p.baseline, "#f1f3f5", "baseline"),
        (p.ramp, "#fff9db", "ramp"),
        (p.steady, "#ebfbee", "steady"),
        (p.drain, "#fff9db", "drain"),
        (p.after, "#f1f3f5", "after"),
    ] {
        if let Some((a, b)) = span {
            let _ = write!(
                s,
                "<rect x=\"{:.1}\" y=\"{top}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\"/><text x=\"{:.1}\" y=\"{:.0}\" fill=\"#868e96\">{label}</text>",
                x(a),
                (x(b) - x(a)).max(0.5),
                h - top - bottom,
                x(a) + 3.0,
                top + 12.0
            );
        }
    }
    let _ = write!(
        s,
        "<line x1=\"{left}\" y1=\"{:.0}\" x2=\"{:.0}\" y2=\"{:.0}\" stroke=\"#adb5bd\"/>",
        h - bottom,
        w - right,
        h - bottom
    );
    for i in 0..=4 {
        let v = counts_max * i as f64 / 4.0;
        let pct = 25.0 * i as f64;
        let _ = write!(
            s,
            "<text x=\"4\" y=\"{:.0}\">{}</text><text x=\"{:.0}\" y=\"{:.0}\">{pct:.0}%</text>",
            y_count(v) + 4.0,
            num(v),
            w - right + 6.0,
            y_pct(pct) + 4.0
        );
    }
    for i in 0..=5 {
        let t = t_min + (t_max - t_min) * i as f64 / 5.0;
        let _ = write!(
            s,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>",
            x(t),
            h - bottom + 16.0,
            rel(t, t_min)
        );
    }
    let series: [(Concept, &str, &str, f64); 4] = [
        (Concept::Waiting, "waiting requests", "#e8590c", 0.0),
        (Concept::Running, "running requests", "#1c7ed6", 0.0),
        (Concept::GpuUtil, "GPU utilisation %", "#2b8a3e", 1.0),
        (Concept::KvUsage, "KV-cache usage %", "#ae3ec9", 100.0),
    ];
    let mut legend_x = left;
    for (c, label, color, pct_scale) in series {
        let Some(sg) = sig(c) else { continue };
        let pts: Vec<String> = sg
            .points
            .iter()
            .filter(|p| p.1.is_finite())
            .map(|&(t, v)| {
                let y = if pct_scale == 0.0 {
                    y_count(v)
                } else {
                    y_pct(v * pct_scale)
                };
                format!("{:.1},{:.1}", x(t), y)
            })
            .collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.8\" points=\"{}\"/>",
            pts.join(" ")
        );
        let _ = write!(
            s,
            "<rect x=\"{legend_x:.0}\" y=\"{:.0}\" width=\"12\" height=\"4\" fill=\"{color}\"/><text x=\"{:.0}\" y=\"{:.0}\">{}</text>",
            h - 12.0,
            legend_x + 16.0,
            h - 7.0,
            esc(label)
        );
        legend_x += 190.0;
    }
    s.push_str("</svg>");
}
