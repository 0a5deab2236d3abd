//! The status page: one row per deployment — verdict, confidence, stall, drift, the evidence
//! and advice, since when — refreshed every interval. Every text that came from outside (labels,
//! summaries, file names, error messages) is HTML-escaped by [`html`], the one escaper.
//!
//! [`render`] writes the head, the status line (what watch reads and its last evaluation), the
//! last failure, then the table, one `row` per deployment, each with a sparkline of its recent
//! KV-cache usage, GPU busy and requests in the engine, then charts of the same for the
//! deployments that need attention first (at most [`CHARTS`], so a page for 1,000 deployments
//! stays small). Both are drawn with `llmscope_render::chart` from `State::history`, on one
//! time axis; an unknown value is a gap, never 0.

use crate::drift::Drift;
use crate::evaluate::{DeploymentStatus, Evaluation};
use crate::history::{History, Point};
use crate::state::State;
use llmscope_core::safe::html;
use llmscope_diagnosis::stall::StallState;
use llmscope_render::chart::{Axis, Panel, Side, TimeAxis, sparkline};
use std::fmt::Write;

/// Deployments drawn as charts under the table, those needing attention first.
pub const CHARTS: usize = 12;
/// Characters in a row's sparkline.
const SPARK_WIDTH: usize = 24;

fn ago(now: f64, t: f64) -> String {
    let s = (now - t).max(0.0);
    if s < 120.0 {
        format!("{s:.0} s ago")
    } else if s < 7200.0 {
        format!("{:.0} min ago", s / 60.0)
    } else {
        format!("{:.1} h ago", s / 3600.0)
    }
}

fn ratio(v: Option<f64>) -> String {
    v.map(|v| format!("{:.0} %", v * 100.0))
        .unwrap_or_else(|| "—".to_owned())
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1d1d1f}\
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:.4rem .6rem;\
text-align:left;vertical-align:top}th{background:#f4f4f6}.bad{color:#b00020;font-weight:600}\
.warn{color:#8a5a00}.ok{color:#0a6b2d}.muted{color:#666}small{color:#555}code{font-size:12px}.spark{font:11px/1.2 monospace;white-space:pre}svg text{font:12px system-ui,sans-serif}figure{margin:.6em 0 1em}figcaption{font-weight:600;font-size:.95em;margin-bottom:.2em}svg.chart{max-width:100%;height:auto}";

/// The whole page at `now`.
pub fn render(state: &State, now: f64) -> String {
    let mut h = String::with_capacity(8192);
    head(&mut h, state);
    status_line(&mut h, state, now);
    last_failure(&mut h, state, now);
    if let Some(e) = &state.latest {
        table(&mut h, state, e, now);
        charts(&mut h, state, e);
    }
    h.push_str("</body></html>");
    h
}

/// The document head, refreshing every interval, and the title.
fn head(h: &mut String, state: &State) {
    let refresh = state.shown.interval_s.clamp(5.0, 300.0);
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"{refresh:.0}\">\
<title>llmscope watch</title><style>{STYLE}</style></head><body><h1>llmscope watch</h1>"
    );
}

/// What watch reads, how often, and how its last evaluation went.
fn status_line(h: &mut String, state: &State, now: f64) {
    let _ = write!(
        h,
        "<p class=\"muted\">Prometheus <code>{}</code> · every {:.0} s over the last {:.0} s · shard {}",
        html(&state.shown.prometheus),
        state.shown.interval_s,
        state.shown.window_s,
        html(&state.shown.shard)
    );
    last_evaluation(h, state, now);
    h.push_str("</p>");
}

/// When the last evaluation succeeded and what it saw, or that none has.
fn last_evaluation(h: &mut String, state: &State, now: f64) {
    let (Some(e), Some(t)) = (&state.latest, state.last_success) else {
        h.push_str(" · no evaluation has succeeded yet");
        return;
    };
    let _ = write!(
        h,
        " · last evaluation {} ({} deployments, {} series, {:.2} s)",
        ago(now, t),
        e.deployments.len(),
        e.series,
        e.duration_s
    );
}

/// The last failure, when no evaluation has succeeded since.
fn last_failure(h: &mut String, state: &State, now: f64) {
    if let Some((t, why)) = &state.last_error
        && state.last_success.is_none_or(|s| *t > s)
    {
        let _ = write!(
            h,
            "<p class=\"bad\">Last evaluation failed {}: {}</p>",
            ago(now, *t),
            html(why)
        );
    }
}

/// One row per deployment of the latest evaluation, and what it could not attribute.
fn table(h: &mut String, state: &State, e: &Evaluation, now: f64) {
    if e.deployments.is_empty() {
        h.push_str(
            "<p>No deployment found: no engine series carry the grouping labels in the window.</p>",
        );
    }
    h.push_str("<table><thead><tr><th>namespace</th><th>deployment</th><th>verdict</th><th>confidence</th>\
<th>KV headroom</th><th>GPU headroom</th><th>recent</th><th>stall</th><th>drift</th><th>evidence and advice</th><th>since</th></tr></thead><tbody>");
    let time = time_axis(state);
    for d in &e.deployments {
        row(h, state, d, (now, time));
    }
    h.push_str("</tbody></table>");
    unattributed(h, e.unattributed);
}

/// How many series no deployment could be named for, when any.
fn unattributed(h: &mut String, series: u64) {
    if series > 0 {
        let _ = write!(
            h,
            "<p class=\"muted\">{series} series lacked a grouping label and were not attributed to any deployment.</p>"
        );
    }
}

/// One deployment: who, the verdict and headroom, the stall, the drift, the words, since when.
/// `at` is the page's time and the charts' time axis.
fn row(h: &mut String, state: &State, d: &DeploymentStatus, at: (f64, Option<TimeAxis>)) {
    let (now, time) = at;
    verdict_cells(h, d);
    recent_cell(h, state.history.get(&d.key), time);
    stall_cell(h, d);
    let _ = write!(h, "<td>{}</td>", drift_cell(state, d));
    words_cell(h, d);
    let since = state.since.get(&d.key);
    let since = since.map(|s| ago(now, s.verdict_since)).unwrap_or_default();
    let _ = write!(h, "<td>{since}</td></tr>");
}

/// The row's start (named by deployment and verdict for scripts), who, the verdict, its
/// confidence and the headroom.
fn verdict_cells(h: &mut String, d: &DeploymentStatus) {
    let (dep, b) = (html(&d.key.deployment), d.bottleneck.as_str());
    let _ = write!(
        h,
        "<tr data-deployment=\"{dep}\" data-bottleneck=\"{b}\"><td>{}</td><td>{dep}</td><td class=\"{}\">{b}</td><td>{:.2}</td><td>{}</td><td>{}</td>",
        html(&d.key.namespace),
        verdict_class(b),
        d.confidence,
        ratio(d.kv_headroom),
        ratio(d.gpu_headroom),
    );
}

/// A value a row and a chart show: its name, its scale to the axis' unit, where it is read
/// from, and which axis.
struct Measure {
    label: &'static str,
    scale: f64,
    value: fn(&Point) -> f32,
    side: Side,
}

const MEASURES: [Measure; 3] = [
    Measure {
        label: "KV-cache used",
        scale: 100.0,
        value: |p| p.kv_used,
        side: Side::Left,
    },
    Measure {
        label: "GPU busy",
        scale: 100.0,
        value: |p| p.gpu_busy,
        side: Side::Left,
    },
    Measure {
        label: "in engine",
        scale: 1.0,
        value: |p| p.in_engine,
        side: Side::Right,
    },
];

/// One time axis for every deployment's history: from the oldest point held to the newest;
/// `None` before two evaluations.
fn time_axis(state: &State) -> Option<TimeAxis> {
    TimeAxis::over(state.history.values().flat_map(History::times))
}

/// The deployment's recent values as sparklines, one line each; a gap where a value was unknown.
fn recent_cell(h: &mut String, history: Option<&History>, time: Option<TimeAxis>) {
    let (Some(history), Some(time)) = (history, time) else {
        h.push_str("<td class=\"muted\">—</td>");
        return;
    };
    h.push_str("<td class=\"spark\">");
    for m in MEASURES {
        let (line, label) = (
            sparkline(&history.series(m.value, m.scale), time, SPARK_WIDTH),
            m.label,
        );
        let _ = write!(
            h,
            "<span title=\"{label}\">{line}</span> <small>{label}</small><br>"
        );
    }
    h.push_str("</td>");
}

/// Charts of the recent history, those needing attention (a bottleneck, a stall) first.
fn charts(h: &mut String, state: &State, e: &Evaluation) {
    let Some(time) = time_axis(state) else {
        if !e.deployments.is_empty() {
            h.push_str("<p class=\"muted\">Charts appear after the second evaluation.</p>");
        }
        return;
    };
    let mut order: Vec<&DeploymentStatus> = e.deployments.iter().collect();
    order.sort_by_key(|d| !needs_attention(d));
    let _ = write!(
        h,
        "<h2>The last {} evaluations</h2>",
        crate::history::POINTS
    );
    if order.len() > CHARTS {
        let _ = write!(
            h,
            "<p class=\"muted\">The first {CHARTS} of {} deployments, those needing attention first; every row above has its sparklines.</p>",
            order.len()
        );
    }
    for d in order.into_iter().take(CHARTS) {
        if let Some(history) = state.history.get(&d.key) {
            panel(d, history, time).write(h);
        }
    }
}

/// A bottleneck to act on, or a stall.
fn needs_attention(d: &DeploymentStatus) -> bool {
    verdict_class(d.bottleneck.as_str()) == "warn" || d.stall.state == StallState::Stalled
}

/// One deployment's chart: KV-cache used and GPU busy in percent, requests in the engine.
fn panel(d: &DeploymentStatus, history: &History, time: TimeAxis) -> Panel {
    let title = format!(
        "{}/{}: {}",
        d.key.namespace,
        d.key.deployment,
        d.bottleneck.as_str()
    );
    let mut p = Panel::new(title, time, 90.0, Axis::percent());
    p.right = Some(Axis::new("req"));
    for s in MEASURES {
        p.line(s.label, s.side, history.series(s.value, s.scale));
    }
    p.missing = "no KV-cache, GPU or queue series in the recent evaluations".to_owned();
    p
}

/// `ok` for a deployment with nothing to fix, `warn` for a bottleneck.
fn verdict_class(bottleneck: &str) -> &'static str {
    if bottleneck == "none" || bottleneck == "load_not_reached" {
        "ok"
    } else {
        "warn"
    }
}

fn stall_cell(h: &mut String, d: &DeploymentStatus) {
    let (class, text) = match d.stall.state {
        StallState::Stalled => ("bad", "stalled"),
        StallState::Serving => ("ok", "serving"),
        StallState::Unknown => ("muted", "unknown"),
    };
    let why = html(&d.stall.why);
    let _ = write!(h, "<td class=\"{class}\" title=\"{why}\">{text}</td>");
}

/// Each drifted name, `none`, or `not watched` without files to drift from.
fn drift_cell(state: &State, d: &DeploymentStatus) -> String {
    if state.shown.drift_files == 0 {
        return "<span class=\"muted\" title=\"no --dashboards or --rules given\">not watched</span>"
            .to_owned();
    }
    if d.drift.is_empty() {
        return "<span class=\"ok\">none</span>".to_owned();
    }
    let names: Vec<String> = d.drift.iter().map(drifted).collect();
    names.join("<br>")
}

/// `used → exposed`: what the dashboards select, and what the deployment exposes instead.
fn drifted(x: &Drift) -> String {
    let (used, exposed) = (html(&x.used), html(&x.exposed));
    format!("<span class=\"bad\"><code>{used}</code> → <code>{exposed}</code></span>")
}

/// The summary, led by the stall when there is one, the advice, and the stall's reason.
fn words_cell(h: &mut String, d: &DeploymentStatus) {
    let why = html(&d.stall.why);
    // A stall is what matters now; the window's verdict follows it.
    let lead = if d.stall.state == StallState::Stalled {
        format!("<b class=\"bad\">Alive but not serving:</b> {why}<br>Over the window: ")
    } else {
        String::new()
    };
    let advice = d
        .advice
        .as_deref()
        .map(|a| format!("<br><b>Do:</b> {}", html(a)));
    let _ = write!(
        h,
        "<td>{lead}{}{}<br><small>{why}</small></td>",
        html(&d.summary),
        advice.unwrap_or_default()
    );
}

#[cfg(test)]
mod tests {
    use crate::state::{Shown, State};

    /// Text from outside reaches the page only escaped (the escaper itself is
    /// `llmscope_core::safe::html`, tested there with this test's former assertion).
    #[test]
    fn everything_from_outside_is_escaped() {
        let mut state = State::new(Shown {
            prometheus: "http://p/<script>alert('x')</script>".to_owned(),
            interval_s: 60.0,
            window_s: 900.0,
            shard: "0/1 & \"q\"\u{1b}[31m".to_owned(),
            drift_files: 0,
        });
        state.last_error = Some((1.0, "<b>bad</b>".to_owned()));
        let page = super::render(&state, 2.0);
        assert!(
            page.contains("http://p/&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;")
                && page.contains("0/1 &amp; &quot;q&quot;&#27;[31m")
                && page.contains("&lt;b&gt;bad&lt;/b&gt;"),
            "{page}"
        );
        assert!(!page.contains("<script") && !page.contains('\u{1b}'));
    }
}
