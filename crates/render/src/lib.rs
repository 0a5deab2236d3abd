//! `llmscope-render`: turns a [`Report`] (a diagnosis, the signals behind it, the client's view)
//! into text for people and machines. Pure: every renderer writes to `impl Write` or returns a
//! value; no I/O of its own.
//!
//! - [`json::contract`]: the `--format json` document (`verdict`, `evidence`, `recommendations`,
//!   `timeline`, `window_stats`, `run_id`, …).
//! - [`terminal::write`]: verdict first, then evidence, timeline, window statistics, the decision
//!   table with the matched row marked, and the client-side latency summary.
//! - [`markdown::write`]: the same for issues and pull requests.
//! - [`cost_report::write`]: `llmscope cost`'s table, CSV or JSON.
//! - [`csv`]: RFC 4180 fields and records for `report --export`.
//! - [`html::write`]: one self-contained page with inline SVG charts; every label value escaped.
//! - [`chart`]: the one chart engine every report draws with (time-series panels, CDFs,
//!   sparklines); `panels` builds the run report's charts from a [`Report`] with it.
//! - [`compare::html`]: several runs on one page, their charts overlaid, a table of changes.

pub mod capacity;
pub mod chart;
pub mod compare;
pub mod cost_report;
pub mod csv;
pub mod html;
pub mod json;
pub mod markdown;
mod panels;
pub mod terminal;

use llmscope_core::outcome::{ClientSummary, RequestOutcome, Summary};
use llmscope_diagnosis::{Diagnosis, Input};

/// Everything a report shows about one run.
#[derive(Debug, Clone)]
pub struct Report<'a> {
    pub title: String,
    pub run_id: Option<String>,
    /// Run against the built-in simulated stack.
    pub simulated: bool,
    /// Targets and versions, one line each (`vllm 0.26 at http://…`).
    pub context: Vec<String>,
    pub diagnosis: &'a Diagnosis,
    pub input: &'a Input,
    /// The client side of the load, if a load ran.
    pub client: Option<&'a ClientSummary>,
    /// Set when the run was stopped before its end: every format says so before the verdict.
    pub interrupted: Option<Interruption>,
    /// The client's requests, one each, when the run store kept them (empty otherwise): the
    /// charts over time (TTFT p95, throughput, failures by kind) are drawn from them.
    pub requests: &'a [RequestTiming],
}

/// One request the client sent, as the charts over time need it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestTiming {
    /// Unix seconds it was sent and it ended.
    pub sent: f64,
    pub end: f64,
    /// Seconds from sending to its first token, if one came.
    pub ttft_s: Option<f64>,
    /// Its error kind (`http_503`, `stall` …); `None` when it completed.
    pub error: Option<String>,
}

/// A run stopped before its end (Ctrl-C, or its process was killed), issue 12 point 4.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Interruption {
    /// When, as the caller shows times (RFC 3339).
    pub at: String,
    /// Seconds of the timed part (the load) done and planned; `None` when unknown.
    pub done_s: Option<f64>,
    pub planned_s: Option<f64>,
}

impl Interruption {
    /// `interrupted at 2026-05-01T10:00:12.000Z, 12 s of 30 s`; an unknown part is said so.
    pub fn notice(&self) -> String {
        let secs = |v: f64| format!("{v:.0} s");
        let how_far = match (self.done_s, self.planned_s) {
            (Some(d), Some(p)) => format!(", {} of {}", secs(d), secs(p)),
            (Some(d), None) => format!(", after {}", secs(d)),
            (None, Some(p)) => format!(", how far into the planned {} is unknown", secs(p)),
            (None, None) => String::new(),
        };
        format!("interrupted at {}{how_far}", self.at)
    }

    /// The notice with what it means for the verdict.
    pub fn warning(&self) -> String {
        format!(
            "{}: the verdict covers only what was measured before",
            self.notice()
        )
    }
}

/// Each error kind (`http_400 × 812`) with the server's first messages.
pub(crate) type FailureLines<'a> = Vec<(String, &'a [String])>;

/// The failed-requests block, when requests failed: a headline, then each error kind with the
/// server's first messages (already sanitised and capped by the load generator).
pub(crate) fn failures<'a>(r: &Report<'a>) -> Option<(String, FailureLines<'a>)> {
    let o = r.input.load.requests.as_ref().filter(|o| o.failed > 0)?;
    let kinds = o
        .kinds
        .iter()
        .map(|k| (format!("{} × {}", k.kind, k.count), k.bodies.as_slice()))
        .collect();
    Some((failures_headline(o), kinds))
}

/// `809 of 812 requests failed (100%); stopped early: …`.
fn failures_headline(o: &RequestOutcome) -> String {
    let share = o
        .failed_share()
        .map_or(String::new(), |s| format!(" ({:.0}%)", s * 100.0));
    let stopped = o
        .stopped_early
        .as_ref()
        .map_or(String::new(), |w| format!("; stopped early: {w}"));
    let (failed, sent) = (o.failed, o.ok + o.failed);
    format!("{failed} of {sent} requests failed{share}{stopped}")
}

/// Seconds since `t0`, for tables and axes.
pub(crate) fn rel(t: f64, t0: f64) -> String {
    format!("{:+.0}s", t - t0)
}

/// The run's first timestamp: the zero of every relative time shown.
pub(crate) fn t0(r: &Report) -> f64 {
    r.input
        .signals
        .values()
        .filter_map(|s| s.points.first().map(|p| p.0))
        .fold(f64::INFINITY, f64::min)
        .min(r.diagnosis.phases.steady.map_or(f64::INFINITY, |s| s.0))
}

/// A number for people: at most 3 significant decimals, no trailing zeros.
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        return "—".to_owned();
    }
    // Past a billion, digits stop meaning anything (1e308 would print 309 of them).
    if v.abs() >= 1e9 {
        return llmscope_core::number::short(v);
    }
    let s = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// The per-replica table's header and rows (pod, rank, own verdict, running, waiting, KV,
/// share of requests), when the deployment has two or more replicas; pod names as read, for
/// each format to escape.
pub(crate) const REPLICA_HEAD: [&str; 7] = [
    "pod", "rank", "verdict", "running", "waiting", "KV", "requests",
];

pub(crate) fn replica_rows(r: &Report) -> Vec<[String; 7]> {
    let reps = &r.diagnosis.replicas;
    if reps.len() < 2 {
        return Vec::new();
    }
    let level = |x: Option<f64>| x.map_or("—".to_owned(), |v| format!("{v:.1}"));
    let pct = |x: Option<f64>| x.map_or("—".to_owned(), |v| format!("{:.1}%", v * 100.0));
    reps.iter()
        .map(|x| {
            [
                x.pod.clone(),
                x.rank.clone().unwrap_or_default(),
                x.verdict.as_str().to_owned(),
                level(x.running),
                level(x.waiting),
                pct(x.kv),
                pct(x.share_of_requests),
            ]
        })
        .collect()
}

/// Client latency rows: (measure, p50, p90, p95, p99, mean) in ms.
pub(crate) fn client_rows(client: &ClientSummary) -> Vec<(String, [Option<f64>; 5])> {
    let l = &client.latency_ms;
    let row = |name: &str, s: &Summary| (name.to_owned(), [s.p50, s.p90, s.p95, s.p99, s.mean]);
    vec![
        row("TTFT", &l.ttft),
        row("ITL", &l.itl),
        row("TPOT", &l.tpot),
        row("E2E", &l.e2e),
    ]
}

#[cfg(test)]
mod tests {
    use super::num;

    /// Issue 31: an impossible value in the evidence printed as 309 digits.
    #[test]
    fn numbers_never_run_to_hundreds_of_digits() {
        assert_eq!(num(1234.4), "1234");
        assert_eq!(num(0.12345), "0.1235");
        assert_eq!(num(1e308), "1.000e308");
        assert!(num(-f64::MAX).len() < 12);
        assert_eq!(num(f64::NAN), "—");
    }
}
