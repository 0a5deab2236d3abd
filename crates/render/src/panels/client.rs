//! The client's side as charts: latency distributions, throughput over time, failures.
//!
//! The report carries the client's *summary* (percentiles, means, totals per error kind), not
//! its per-request records: the distributions are drawn through the percentiles it kept, the
//! throughput over time is the engine's (with the client's mean beside it), and failures over
//! time cannot be drawn — the panel says so and gives the totals.

use super::Page;
use crate::chart::{Axis, Cdf, Curve, Rule, Side, no_data};
use llmscope_core::outcome::{ClientSummary, Summary};
use llmscope_diagnosis::Concept;

/// The plot height (px) of the throughput panel.
const HEIGHT: f64 = 150.0;

/// The client's charts: distributions, throughput over time, failures by kind.
pub(crate) fn write(page: Option<&Page>, c: &ClientSummary, s: &mut String) {
    distributions(c).write(s);
    match page {
        Some(page) => throughput(page, c, s),
        None => no_data("Throughput over time", "the run has no time series", s),
    }
    failures(c, s);
}

/// TTFT, ITL and end-to-end latency as cumulative curves through the client's percentiles.
fn distributions(c: &ClientSummary) -> Cdf {
    let l = &c.latency_ms;
    Cdf {
        title: "Client latencies, cumulative (through the client's percentiles; log axis)".into(),
        unit: "ms".into(),
        curves: vec![
            curve("TTFT", &l.ttft),
            curve("ITL", &l.itl),
            curve("E2E", &l.e2e),
        ],
        missing: "the client recorded no latency".into(),
    }
}

/// The points of a summary's cumulative curve: min, p50 … p99.9, max at their shares.
pub(crate) fn curve(label: &str, s: &Summary) -> Curve {
    let known = [
        (s.min, 0.0),
        (s.p50, 0.5),
        (s.p90, 0.9),
        (s.p95, 0.95),
        (s.p99, 0.99),
        (s.p999, 0.999),
        (s.max, 1.0),
    ];
    Curve {
        label: label.into(),
        points: known
            .into_iter()
            .filter_map(|(v, share)| Some((v?, share)))
            .collect(),
    }
}

/// Requests finished per second by the engine, with the client's mean over its window.
fn throughput(page: &Page, c: &ClientSummary, s: &mut String) {
    let title = "Throughput over time (the engine's count of finished requests)";
    let mut p = page.panel(title, HEIGHT, Axis::new("req/s"));
    let finished = "engine finished req/s";
    page.add(&mut p, Concept::RequestsFinished, finished, Side::Left, 1.0);
    let rate = c.throughput.requests_per_s;
    if rate > 0.0 {
        p.rules.push(Rule {
            label: format!("client mean {} req/s", crate::num(rate)),
            value: rate,
            side: Side::Left,
            colour: "#868e96",
        });
    }
    p.missing =
        "the engine's finished-requests counter (the client keeps no series over time)".into();
    p.write(s);
}

/// Failures over time need per-request records; the totals per kind are what the report has.
fn failures(c: &ClientSummary, s: &mut String) {
    let o = c.request_outcome();
    if o.failed == 0 {
        return;
    }
    let kinds: Vec<String> = o
        .kinds
        .iter()
        .map(|k| format!("{} × {}", k.kind, k.count))
        .collect();
    let missing = format!(
        "failures over time need the client's per-request records, which this report does not carry; in all, {} of {} failed: {}",
        o.failed,
        o.ok + o.failed,
        kinds.join(", ")
    );
    no_data("Failures over time, by kind", &missing, s);
}
