//! The client's side as charts: latency distributions, throughput over time, failures.
//!
//! The distributions are drawn through the percentiles of the client's summary. Throughput over
//! time is the engine's count of finished requests beside the client's own, per bin, when the
//! run store kept the per-request records (`super::requests`), with the client's mean; failures
//! over time by kind are drawn from those records, and without them the panel gives the totals.

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
    match page.filter(|p| !p.r.requests.is_empty()) {
        Some(page) => failures_over_time(page, c, s),
        None => failures(c, s),
    }
}

/// Failures per second by kind, from the per-request records, when any request failed.
fn failures_over_time(page: &Page, c: &ClientSummary, s: &mut String) {
    if c.request_outcome().failed > 0 || page.r.requests.iter().any(|r| r.error.is_some()) {
        super::requests::failures(page, page.r.requests).write(s);
    }
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
    let title = "Throughput over time (finished requests)";
    let mut p = page.panel(title, HEIGHT, Axis::new("req/s"));
    let finished = "engine finished req/s";
    page.add(&mut p, Concept::RequestsFinished, finished, Side::Left, 1.0);
    if !page.r.requests.is_empty() {
        let completed = super::requests::completed(page, page.r.requests);
        p.line("client completed req/s", Side::Left, completed);
    }
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
        "the engine's finished-requests counter, and the client's per-request records".into();
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
