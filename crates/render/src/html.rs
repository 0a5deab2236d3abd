//! One self-contained HTML page: no scripts, no network, inline SVG charts.
//!
//! The verdict comes first with its own chart (the signals it was read from, against the limit
//! it names, the evidence marked), then what to change; then the charts of the run — the four
//! dashboard panels of `docs/METHOD.md` step 11, every signal as a small multiple by layer, the
//! client's distributions — all on one time axis (`crate::panels`, drawn with [`crate::chart`]);
//! then the tables. Every piece of text that came from outside (titles, label values, messages)
//! goes through [`esc`], the one HTML escaper ([`llmscope_core::safe::html`]).
//!
//! [`write()`] writes the sections in page order, one function each.

use crate::panels::{self, Page};
use crate::{Report, client_rows, num, rel, t0};
use llmscope_core::outcome::ClientSummary;
pub use llmscope_core::safe::html as esc;
use llmscope_diagnosis::DECISION_TABLE;
use std::fmt::Write as _;
use std::io::{self, Write};

pub(crate) const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1b1f24}\
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}\
.verdict{font-size:1.25em;padding:.6em .9em;background:#fff4e5;border-left:5px solid #e8590c}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right}\
td:first-child,th:first-child{text-align:left}.hit{background:#ffe8cc;font-weight:bold}\
.sim{color:#666;font-style:italic}.interrupted{padding:.5em .9em;background:#fff0f0;border-left:5px solid #c92a2a}svg text{font:12px system-ui,sans-serif}\
figure{margin:.6em 0 1em}figcaption{font-weight:600;font-size:.95em;margin-bottom:.2em}svg.chart{max-width:100%;height:auto}\
.nodata p{margin:.2em 0;color:#666;font-style:italic}h3{font-size:1em;margin-top:1.2em}";

pub fn write(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let mut s = String::with_capacity(64 * 1024);
    head(r, &mut s);
    verdict(r, &mut s);
    panels::verdict_chart(r, &mut s);
    recommendations(r, &mut s);
    failed_requests(r, &mut s);
    charts(r, &mut s);
    evidence(r, &mut s);
    findings(r, &mut s);
    window_stats(r, &mut s);
    timeline(r, &mut s);
    decision_table(r, &mut s);
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

/// The run's charts after the verdict: the four dashboard panels, every signal by layer, and
/// the client's side.
/// The markup of every chart of the page, in page order (the verdict's first), with the
/// section headings between them: what the Markdown report takes its SVG files from.
pub(crate) fn chart_markup(r: &Report) -> String {
    let mut s = String::with_capacity(64 * 1024);
    panels::verdict_chart(r, &mut s);
    charts(r, &mut s);
    s
}

fn charts(r: &Report, s: &mut String) {
    let page = Page::of(r);
    s.push_str("<h2>Dashboard</h2>");
    match &page {
        Some(page) => panels::dashboard::write(page, s),
        None => s.push_str("<p>No time series to chart.</p>"),
    }
    if let Some(page) = &page {
        s.push_str("<h2>Every signal, by layer</h2>");
        panels::layers::write(page, s);
    }
    if let Some(c) = r.client {
        client(c, s);
        panels::client::write(page.as_ref(), c, s);
    }
}

/// The client's latency percentiles, as a table.
fn client(c: &ClientSummary, s: &mut String) {
    let rows = client_rows(c);
    s.push_str("<h2>Client side</h2><table><tr><th>ms</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>mean</th></tr>");
    for (name, qs) in &rows {
        let q = qs.map(|q| q.map_or("—".to_owned(), num));
        row(s, "", &[&esc(name), &q[0], &q[1], &q[2], &q[3], &q[4]]);
    }
    s.push_str("</table>");
}
