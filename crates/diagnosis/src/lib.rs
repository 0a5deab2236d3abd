//! Diagnosis: engine-neutral signals in, one verdict with evidence out. Pure.
//!
//! Flow: [`Input`] (signals by [`Concept`] + engine and load facts) → [`stale::set_aside`]
//! (gauge readings the engine's counters contradict) → [`window::detect_phases`]
//! → steady-window [`window::WindowStats`] → [`edges::timeline`] (rise/fall, offsets) →
//! [`detect::detectors`] (findings with evidence) → [`verdict::choose`] by the decision table →
//! [`advice::recommend`]. [`diagnose`] runs it all and returns a serialisable [`Diagnosis`].
//! Where the input holds two or more replicas ([`Input::replicas`], kept by
//! [`build::SignalBuilder::per_replica`]), [`fleet::judge`] reads each over the deployment's
//! steady window and adds what only the replicas side by side show (routing imbalance, shared
//! GPUs), which outranks the sum's own verdict.

pub mod advice;
pub mod build;
pub mod capacity;
pub mod detect;
pub mod edges;
pub mod fleet;
pub mod signal;
pub mod stale;
pub mod stall;
pub mod verdict;
pub mod window;

#[cfg(test)]
mod real_runs;

pub use advice::Recommendation;
pub use detect::{Bottleneck, Evidence, Finding, Severity};
pub use fleet::ReplicaVerdict;
pub use signal::{
    Concept, EngineFacts, Input, KvCacheConfig, LoadFacts, Replica, ReplicaKey, SharedGpu, Signal,
};
pub use verdict::{DECISION_TABLE, Verdict};

use serde::Serialize;
use std::collections::BTreeMap;

/// Everything a report shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    pub verdict: Verdict,
    /// The primary finding's evidence.
    pub evidence: Vec<Evidence>,
    /// Every finding, primary first, then secondary and data-quality ones.
    pub findings: Vec<Finding>,
    pub recommendations: Vec<Recommendation>,
    pub phases: window::Phases,
    pub edges: Vec<edges::Edge>,
    pub offsets: Vec<edges::Offset>,
    pub window_stats: BTreeMap<&'static str, window::WindowStats>,
    /// Each replica's own verdict and levels, when the deployment has two or more.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ReplicaVerdict>,
}

/// Phases and steady-window statistics of `input`.
pub fn context(input: &Input) -> detect::Context<'_> {
    context_in(input, window::detect_phases(input))
}

/// `input` read over `phases` found elsewhere (a replica over its deployment's).
pub(crate) fn context_in(input: &Input, phases: window::Phases) -> detect::Context<'_> {
    let stats = phases
        .steady
        .map(|(a, b)| {
            input
                .signals
                .iter()
                .filter_map(|(c, s)| Some((*c, window::window_stats(*c, s, a, b)?)))
                .collect()
        })
        .unwrap_or_default();
    detect::Context {
        input,
        phases,
        stats,
        gauges_stale: false,
    }
}

/// The engine's mean running and waiting requests over `[from, to]` (a capacity stage's measured
/// window, Unix seconds), read as the verdict reads them ([`detect::Context::mean_running`]):
/// gauge readings the engine's counters contradict set aside, and then the counters speak by
/// Little's law where they cover the window ([`detect::Context::counters_cover_window`]). A stage's throughput is measured over that window, so the batch it is compared
/// with must be too, not over the steady phase the gauges alone suggest.
pub fn levels_over(input: &Input, (from, to): (f64, f64)) -> (Option<f64>, Option<f64>) {
    // The input as it is where every reading stands (no copy), else the cleaned one.
    let (clean, gauges_stale) = match stale::set_aside(input) {
        Some((clean, _)) => (std::borrow::Cow::Owned(clean), true),
        None => (std::borrow::Cow::Borrowed(input), false),
    };
    let phases = window::Phases {
        steady: (to > from).then_some((from, to)),
        ..window::Phases::default()
    };
    let stats = clean
        .signals
        .iter()
        .filter_map(|(c, s)| Some((*c, window::window_stats(*c, s, from, to)?)))
        .collect();
    let mut cx = detect::Context {
        input: &clean,
        phases,
        stats,
        gauges_stale: false,
    };
    // The counters speak for stale gauges only where they cover the window: a preempted
    // request's second wait, and a request that outlives it, are not in them (a real vLLM 0.32
    // with a 2,048-token pool and 32 clients: 29.5 requests in its cleaned gauges, 12.5 by its
    // counters, with 18 preemptions a second).
    cx.gauges_stale = gauges_stale && cx.counters_cover_window();
    (
        cx.mean_running().map(|l| l.value),
        cx.mean_waiting().map(|l| l.value),
    )
}

/// How much a contended machine (other work on the client's cores) lowers the verdict's
/// confidence: the server-side evidence stands, the client-side timings are less exact.
pub const CONTENDED_PENALTY: f64 = 0.1;

/// Runs the whole diagnosis, on the readings the engine's own counters do not contradict
/// ([`stale::set_aside`]).
pub fn diagnose(input: &Input) -> Diagnosis {
    match stale::set_aside(input) {
        Some((clean, stale)) => {
            let mut d = judge(&clean, true, input);
            d.findings.push(stale);
            d
        }
        None => judge(input, false, input),
    }
}

/// Judges `input` (its gauges cleaned where `gauges_stale`); the replicas are read from
/// `given`, the input as given (each replica's stale readings are set aside on its own).
fn judge(input: &Input, gauges_stale: bool, given: &Input) -> Diagnosis {
    let cx = detect::Context {
        gauges_stale,
        ..context(input)
    };
    let mut findings: Vec<Finding> = detect::detectors()
        .iter()
        .filter_map(|d| d.detect(&cx))
        .collect();
    let fleet = fleet::judge(given, &cx.phases);
    rank_fleet_findings(&mut findings, fleet.findings);
    detect::demote(&mut findings, input.load.requests.as_ref());
    let mut verdict = verdict::choose(&findings);
    if input.load.contention.is_some() && verdict.bottleneck != Bottleneck::None {
        verdict.confidence = (verdict.confidence - CONTENDED_PENALTY).max(0.05);
    }
    // Primary first; the rest keep precedence order.
    if let Some(i) = findings
        .iter()
        .position(|f| f.bottleneck == Some(verdict.bottleneck))
    {
        let primary = findings.remove(i);
        findings.insert(0, primary);
    }
    let evidence = findings
        .first()
        .filter(|f| f.bottleneck.is_some())
        .map(|f| f.evidence.clone())
        .unwrap_or_default();
    findings.extend(detect::DataQuality.all(&cx));
    let mut recommendations = advice::recommend(&cx, &verdict, &findings);
    if verdict.bottleneck == Bottleneck::RoutingImbalance {
        let verdict_advice = std::mem::replace(&mut recommendations, fleet.advice);
        recommendations.extend(verdict_advice);
    }
    let (edges, offsets) = edges::timeline(input, &cx.phases);
    let window_stats = cx.stats.iter().map(|(c, s)| (c.name(), *s)).collect();
    Diagnosis {
        verdict,
        evidence,
        findings,
        recommendations,
        phases: cx.phases,
        edges,
        offsets,
        window_stats,
        replicas: fleet.replicas,
    }
}

/// The fleet's findings ahead of every engine bottleneck, after failing requests: the replicas
/// that queue hold the deployment back, whatever the sum reads.
fn rank_fleet_findings(findings: &mut Vec<Finding>, fleet: Vec<Finding>) {
    let at = findings
        .iter()
        .rposition(|f| f.rule == "failing_requests" || f.rule == "admission_limit")
        .map_or(0, |i| i + 1);
    let engine = findings.split_off(at);
    findings.extend(fleet);
    findings.extend(engine);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A capacity stage just after a heavier one: the previous stage's tail (8 running, 7
    /// waiting) is still in the engine when this stage's recording starts, then 6 clients hold 6
    /// running, one scrape reading a stale 0 while tokens flow on both sides of it.
    fn stage() -> Input {
        let running = [
            8., 8., 8., 0., 0., 6., 6., 6., 6., 6., 0., 6., 6., 6., 6., 6., 6., 6., 6., 6.,
        ];
        let waiting = [
            7., 7., 7., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0.,
        ];
        let pts = |xs: &[f64]| -> Vec<(f64, f64)> {
            xs.iter().enumerate().map(|(i, v)| (i as f64, *v)).collect()
        };
        let mut tokens = 0.0;
        let counter: Vec<(f64, f64)> = (0..20)
            .map(|i| {
                tokens += if (3..5).contains(&i) { 0.0 } else { 30.0 };
                (f64::from(i), tokens)
            })
            .collect();
        let mut i = Input::default();
        i.signals
            .insert(Concept::Running, Signal::new("r", pts(&running)));
        i.signals
            .insert(Concept::Waiting, Signal::new("w", pts(&waiting)));
        i.signals
            .insert(Concept::GeneratedTokens, Signal::new("t", counter));
        i
    }

    #[test]
    fn levels_are_read_over_the_window_asked_with_stale_zeros_set_aside() {
        let input = stage();
        assert_eq!(levels_over(&input, (6.0, 18.0)), (Some(6.0), Some(0.0)));
        assert_eq!(levels_over(&input, (0.0, 2.0)), (Some(8.0), Some(7.0)));
        assert_eq!(levels_over(&input, (30.0, 40.0)), (None, None));
    }

    /// Stale gauges give way to the engine's per-request time counters only where those cover
    /// the window: with preemptions they miss the second waits, and the cleaned gauges stand.
    #[test]
    fn counters_replace_stale_gauges_only_where_they_cover_the_window() {
        let mut input = stage();
        let rate = |per_s: f64| -> Vec<(f64, f64)> {
            (0..20)
                .map(|i| (f64::from(i), per_s * f64::from(i)))
                .collect()
        };
        for (c, per_s) in [
            (Concept::RunningSeconds, 3.0),
            (Concept::QueuedSeconds, 0.0),
            (Concept::RequestsFinished, 4.0),
        ] {
            input.signals.insert(c, Signal::new("c", rate(per_s)));
        }
        let (running, _) = levels_over(&input, (6.0, 18.0));
        assert!((running.unwrap() - 3.0).abs() < 1e-9, "{running:?}");
        input
            .signals
            .insert(Concept::Preemptions, Signal::new("p", rate(2.0)));
        assert_eq!(levels_over(&input, (6.0, 18.0)), (Some(6.0), Some(0.0)));
    }
}
