//! Gauge readings the engine's own counters contradict, set aside before anything is judged.
//!
//! An engine cannot generate tokens with nothing running. Where the scheduler gauges (running,
//! waiting, KV usage) read 0 at a scrape while the generated-token counter rose in the intervals
//! on both sides of it, the zero is not the engine's state but a stale or reset gauge: a real vLLM
//! 0.32 (CPU build) under a steady closed-loop load reads 0 running *and* 0 waiting *and* 0 KV in
//! 8–70 % of its scrapes, while its counters and per-request time histograms account for every
//! token (issue 22: at `--max-num-seqs 4` with 12 clients this turned a persistent queue into
//! "no bottleneck"). Those readings are removed from the three gauges — absent, never 0 — and
//! said in a data-quality finding; a zero with no tokens on one side (the load's edges, an idle
//! engine) is kept.

use super::detect::{Finding, Severity};
use super::signal::{Concept, Input, Signal};

/// The gauges one engine-side stats snapshot sets together.
const GAUGES: [Concept; 3] = [Concept::Running, Concept::Waiting, Concept::KvUsage];

/// Times of the running gauge's zero readings that the token counter contradicts.
fn contradicted(input: &Input) -> Vec<f64> {
    let (Some(running), Some(tokens)) = (
        input.signal(Concept::Running),
        input.signal(Concept::GeneratedTokens),
    ) else {
        return Vec::new();
    };
    let rose = |from: f64, to: f64| {
        let at = |t: f64| {
            let i = tokens.points.partition_point(|p| p.0 <= t + 1e-9);
            i.checked_sub(1).map(|i| tokens.points[i].1)
        };
        matches!((at(from), at(to)), (Some(a), Some(b)) if b > a)
    };
    running
        .points
        .windows(3)
        .filter(|w| w[1].1 == 0.0 && rose(w[0].0, w[1].0) && rose(w[1].0, w[2].0))
        .map(|w| w[1].0)
        .collect()
}

/// Whether `t` is one of the `stale` times (ascending, as the running gauge's points are): the
/// gauges of one scrape share its stamp.
fn is_stale(stale: &[f64], t: f64) -> bool {
    let i = stale.partition_point(|x| *x < t - 1e-6);
    stale.get(i).is_some_and(|x| (x - t).abs() < 1e-6)
}

/// `input` with contradicted zero readings removed from the scheduler gauges, and the finding
/// that says so; `None` when every reading stands.
pub fn set_aside(input: &Input) -> Option<(Input, Finding)> {
    let stale = contradicted(input);
    if stale.is_empty() {
        return None;
    }
    let loaded = input
        .signal(Concept::GeneratedTokens)
        .map_or(0, |s| s.points.len());
    let mut clean = input.clone();
    for c in GAUGES {
        if let Some(s) = clean.signals.get_mut(&c) {
            let points = s
                .points
                .iter()
                .copied()
                .filter(|(t, v)| !(*v == 0.0 && is_stale(&stale, *t)))
                .collect();
            *s = Signal::new(s.source.clone(), points);
        }
    }
    let source = input
        .signal(Concept::Running)
        .map_or("the running gauge", |s| s.source.as_str());
    let message = format!(
        "{source} read 0 in {} of {loaded} scrapes while the engine's own token counter rose before and after each: an engine cannot generate tokens with nothing running, so those zero readings of running, waiting and KV usage are stale and were set aside (absent, not 0); the time averages come from the engine's counters",
        stale.len()
    );
    let finding = Finding {
        confidence: Some(0.95),
        ..Finding::new("stale-gauge", Severity::Warning, message)
    };
    Some((clean, finding))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(running: &[f64], tokens: &[f64]) -> Input {
        let pts = |xs: &[f64]| xs.iter().enumerate().map(|(i, v)| (i as f64, *v)).collect();
        let mut i = Input::default();
        i.signals
            .insert(Concept::Running, Signal::new("r", pts(running)));
        i.signals
            .insert(Concept::Waiting, Signal::new("w", pts(running)));
        i.signals
            .insert(Concept::GeneratedTokens, Signal::new("g", pts(tokens)));
        i
    }

    #[test]
    fn a_zero_between_two_rising_intervals_is_set_aside_and_edges_are_kept() {
        // Idle, load (with stale zeros at t=3 and t=5), idle after the last token.
        let running = [0., 0., 4., 0., 4., 0., 4., 0., 0.];
        let tokens = [0., 0., 10., 20., 30., 40., 50., 50., 50.];
        let (clean, f) = set_aside(&input(&running, &tokens)).unwrap();
        let r = &clean.signals[&Concept::Running].points;
        assert_eq!(
            r.iter().map(|p| p.0).collect::<Vec<_>>(),
            [0., 1., 2., 4., 6., 7., 8.]
        );
        assert_eq!(clean.signals[&Concept::Waiting].points.len(), 7);
        assert!(
            f.message.contains("read 0 in 2 of 9 scrapes"),
            "{}",
            f.message
        );
        // No token counter, or no contradiction: nothing is touched.
        assert!(set_aside(&input(&[0., 4., 4., 0.], &[0., 5., 10., 10.])).is_none());
        let mut no_counter = input(&running, &tokens);
        no_counter.signals.remove(&Concept::GeneratedTokens);
        assert!(set_aside(&no_counter).is_none());
    }
}
