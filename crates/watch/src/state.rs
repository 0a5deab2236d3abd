//! What watch remembers between evaluations: the latest one, since when each deployment's
//! verdict and stall have held, and its own counters. Nothing else — the series stay in
//! Prometheus.

use crate::WatchError;
use crate::evaluate::Evaluation;
use crate::fleet::DeploymentKey;
use llmscope_core::diagnose::Bottleneck;
use llmscope_core::diagnose::stall::StallState;
use std::collections::{BTreeMap, HashMap};

/// Upper bounds (s) of the evaluation-duration histogram.
pub const DURATION_BUCKETS: [f64; 11] =
    [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

/// How watch is set up, as shown on its page and metrics.
#[derive(Debug, Clone)]
pub struct Shown {
    /// The Prometheus URL, credentials redacted.
    pub prometheus: String,
    pub interval_s: f64,
    pub window_s: f64,
    pub shard: String,
    /// Dashboards and rule files given for drift.
    pub drift_files: usize,
}

/// Since when a deployment's verdict and stall hold (unix seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Since {
    pub bottleneck: Bottleneck,
    pub verdict_since: f64,
    pub stalled_since: Option<f64>,
}

/// The evaluation-duration histogram.
#[derive(Debug, Clone, Default)]
pub struct Durations {
    /// Cumulative counts per bucket of [`DURATION_BUCKETS`].
    pub buckets: [u64; DURATION_BUCKETS.len()],
    pub count: u64,
    pub sum: f64,
}

impl Durations {
    fn observe(&mut self, s: f64) {
        for (b, le) in self.buckets.iter_mut().zip(DURATION_BUCKETS) {
            if s <= le {
                *b += 1;
            }
        }
        self.count += 1;
        self.sum += s;
    }
}

/// Everything `/metrics`, `/readyz` and the page read.
#[derive(Debug, Clone)]
pub struct State {
    pub shown: Shown,
    pub latest: Option<Evaluation>,
    pub since: HashMap<DeploymentKey, Since>,
    pub evaluations: u64,
    pub durations: Durations,
    pub last_success: Option<f64>,
    /// The last failure: when, and what it said.
    pub last_error: Option<(f64, String)>,
    /// Failed Prometheus queries by kind.
    pub errors: BTreeMap<&'static str, u64>,
}

impl State {
    pub fn new(shown: Shown) -> State {
        State {
            shown,
            latest: None,
            since: HashMap::new(),
            evaluations: 0,
            durations: Durations::default(),
            last_success: None,
            last_error: None,
            errors: BTreeMap::new(),
        }
    }

    /// Takes a successful evaluation in: verdicts that held keep their age.
    pub fn record(&mut self, e: Evaluation) {
        let mut since = HashMap::with_capacity(e.deployments.len());
        for d in &e.deployments {
            let before = self.since.get(&d.key);
            let verdict_since = match before {
                Some(b) if b.bottleneck == d.bottleneck => b.verdict_since,
                _ => e.at,
            };
            let stalled_since = (d.stall.state == StallState::Stalled).then(|| {
                before
                    .and_then(|b| b.stalled_since)
                    .or(d.stall.since)
                    .unwrap_or(e.at)
            });
            since.insert(
                d.key.clone(),
                Since {
                    bottleneck: d.bottleneck,
                    verdict_since,
                    stalled_since,
                },
            );
        }
        self.since = since;
        self.evaluations += 1;
        self.durations.observe(e.duration_s);
        self.last_success = Some(e.at);
        self.latest = Some(e);
    }

    /// Takes a failed evaluation in; the previous one stays shown (marked stale by its age).
    pub fn failed(&mut self, at: f64, duration_s: f64, e: &WatchError) {
        self.evaluations += 1;
        self.durations.observe(duration_s);
        if matches!(e, WatchError::Prom { .. }) {
            *self.errors.entry(e.kind()).or_default() += 1;
        } else {
            *self.errors.entry("other").or_default() += 1;
        }
        self.last_error = Some((at, llmscope_core::safe::redact(&e.to_string()).into_owned()));
    }

    /// Ready once an evaluation succeeded, and as long as the last success is within three
    /// intervals; otherwise why not.
    pub fn ready(&self, now: f64) -> Result<(), String> {
        let Some(last) = self.last_success else {
            return Err(match &self.last_error {
                Some((_, why)) => {
                    format!("no evaluation has succeeded yet; the last failed: {why}")
                }
                None => "the first evaluation has not finished yet".to_owned(),
            });
        };
        let age = now - last;
        let limit = 3.0 * self.shown.interval_s;
        if age > limit {
            return Err(format!(
                "the last successful evaluation is {age:.0} s old (more than 3 intervals of {:.0} s){}",
                self.shown.interval_s,
                self.last_error
                    .as_ref()
                    .map(|(_, w)| format!("; the last failed: {w}"))
                    .unwrap_or_default()
            ));
        }
        Ok(())
    }
}
