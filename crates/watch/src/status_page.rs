//! The status page: one row per deployment — verdict, confidence, stall, drift, the evidence
//! and advice, since when — refreshed every interval. Every text that came from outside (labels,
//! summaries, file names, error messages) is HTML-escaped.

use crate::state::State;
use llmscope_core::diagnose::stall::StallState;
use std::fmt::Write;

/// `text` safe inside HTML elements and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

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
.warn{color:#8a5a00}.ok{color:#0a6b2d}.muted{color:#666}small{color:#555}code{font-size:12px}";

/// The whole page at `now`.
pub fn render(state: &State, now: f64) -> String {
    let mut h = String::with_capacity(8192);
    let refresh = state.shown.interval_s.clamp(5.0, 300.0);
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"{refresh:.0}\">\
<title>llmscope watch</title><style>{STYLE}</style></head><body><h1>llmscope watch</h1>"
    );
    let _ = write!(
        h,
        "<p class=\"muted\">Prometheus <code>{}</code> · every {:.0} s over the last {:.0} s · shard {}",
        escape(&state.shown.prometheus),
        state.shown.interval_s,
        state.shown.window_s,
        escape(&state.shown.shard)
    );
    match (&state.latest, state.last_success) {
        (Some(e), Some(t)) => {
            let _ = write!(
                h,
                " · last evaluation {} ({} deployments, {} series, {:.2} s)",
                ago(now, t),
                e.deployments.len(),
                e.series,
                e.duration_s
            );
        }
        _ => h.push_str(" · no evaluation has succeeded yet"),
    }
    h.push_str("</p>");
    if let Some((t, why)) = &state.last_error
        && state.last_success.is_none_or(|s| *t > s)
    {
        let _ = write!(
            h,
            "<p class=\"bad\">Last evaluation failed {}: {}</p>",
            ago(now, *t),
            escape(why)
        );
    }
    let Some(e) = &state.latest else {
        h.push_str("</body></html>");
        return h;
    };
    if e.deployments.is_empty() {
        h.push_str(
            "<p>No deployment found: no engine series carry the grouping labels in the window.</p>",
        );
    }
    h.push_str("<table><thead><tr><th>namespace</th><th>deployment</th><th>verdict</th><th>confidence</th>\
<th>KV headroom</th><th>GPU headroom</th><th>stall</th><th>drift</th><th>evidence and advice</th><th>since</th></tr></thead><tbody>");
    for d in &e.deployments {
        let since = state.since.get(&d.key);
        let (stall_class, stall_text) = match d.stall.state {
            StallState::Stalled => ("bad", "stalled"),
            StallState::Serving => ("ok", "serving"),
            StallState::Unknown => ("muted", "unknown"),
        };
        let drift = if state.shown.drift_files == 0 {
            "<span class=\"muted\" title=\"no --dashboards or --rules given\">not watched</span>"
                .to_owned()
        } else if d.drift.is_empty() {
            "<span class=\"ok\">none</span>".to_owned()
        } else {
            d.drift
                .iter()
                .map(|x| {
                    format!(
                        "<span class=\"bad\"><code>{}</code> → <code>{}</code></span>",
                        escape(&x.used),
                        escape(&x.exposed)
                    )
                })
                .collect::<Vec<_>>()
                .join("<br>")
        };
        let _ = write!(
            h,
            "<tr data-deployment=\"{dep}\" data-bottleneck=\"{b}\"><td>{ns}</td><td>{dep}</td><td class=\"{vc}\">{b}</td><td>{c:.2}</td><td>{kv}</td><td>{gpu}</td>\
<td class=\"{stall_class}\" title=\"{why}\">{stall_text}</td><td>{drift}</td><td>{lead}{summary}{advice}<br><small>{stall_why}</small></td><td>{since}</td></tr>",
            ns = escape(&d.key.namespace),
            dep = escape(&d.key.deployment),
            b = d.bottleneck.as_str(),
            vc = if d.bottleneck.as_str() == "none" || d.bottleneck.as_str() == "load_not_reached" {
                "ok"
            } else {
                "warn"
            },
            c = d.confidence,
            kv = ratio(d.kv_headroom),
            gpu = ratio(d.gpu_headroom),
            why = escape(&d.stall.why),
            summary = escape(&d.summary),
            advice = d
                .advice
                .as_ref()
                .map(|a| format!("<br><b>Do:</b> {}", escape(a)))
                .unwrap_or_default(),
            stall_why = escape(&d.stall.why),
            // A stall is what matters now; the window's verdict follows it.
            lead = if d.stall.state == StallState::Stalled {
                format!(
                    "<b class=\"bad\">Alive but not serving:</b> {}<br>Over the window: ",
                    escape(&d.stall.why)
                )
            } else {
                String::new()
            },
            since = since.map(|s| ago(now, s.verdict_since)).unwrap_or_default(),
        );
    }
    h.push_str("</tbody></table>");
    if e.unattributed > 0 {
        let _ = write!(
            h,
            "<p class=\"muted\">{} series lacked a grouping label and were not attributed to any deployment.</p>",
            e.unattributed
        );
    }
    h.push_str("</body></html>");
    h
}

#[cfg(test)]
mod tests {
    #[test]
    fn everything_from_outside_is_escaped() {
        assert_eq!(
            super::escape("<script>alert('x')</script> & \"q\"\u{1b}[31m"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;&#27;[31m"
        );
    }
}
