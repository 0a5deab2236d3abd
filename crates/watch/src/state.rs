//! What watch remembers between evaluations: the latest one, since when each deployment's
//! verdict and stall have held, and its own counters. Nothing else — the series stay in
//! Prometheus.

use crate::WatchError;
use crate::evaluate::Evaluation;
use crate::fleet::DeploymentKey;
use crate::history::{History, Point};
use llmscope_diagnosis::Bottleneck;
use llmscope_diagnosis::stall::StallState;
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
    /// Each current deployment's last evaluations, for the page's charts (bounded: see
    /// [`crate::history`]).
    pub history: HashMap<DeploymentKey, History>,
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
            history: HashMap::new(),
        }
    }

    /// Takes a successful evaluation, finished at `now`, in: verdicts that held keep their age.
    pub fn record(&mut self, e: Evaluation, now: f64) {
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
        self.remember(&e);
        self.evaluations += 1;
        self.durations.observe(e.duration_s);
        self.last_success = Some(now);
        self.latest = Some(e);
    }

    /// Adds `e` to each deployment's history; deployments no longer seen are forgotten.
    fn remember(&mut self, e: &Evaluation) {
        let mut kept = HashMap::with_capacity(e.deployments.len());
        for d in &e.deployments {
            let mut h = self.history.remove(&d.key).unwrap_or_default();
            h.push(Point::of(d, e.at));
            kept.insert(d.key.clone(), h);
        }
        self.history = kept;
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
        // Capped, then redacted: the error may quote a server's body whole.
        let text = e.to_string();
        let kept = llmscope_core::safe::excerpt(&text, llmscope_core::safe::ERROR_TEXT_KEPT);
        self.last_error = Some((at, llmscope_core::safe::redact(&kept).into_owned()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluate::{DeploymentStatus, Evaluation};
    use llmscope_diagnosis::stall::{Stall, StallState};

    fn shown() -> Shown {
        Shown {
            prometheus: "http://p".to_owned(),
            interval_s: 60.0,
            window_s: 900.0,
            shard: "0/1".to_owned(),
            drift_files: 0,
        }
    }

    fn eval(at: f64, b: Bottleneck, stalled: bool) -> Evaluation {
        Evaluation {
            at,
            duration_s: 0.2,
            deployments: vec![DeploymentStatus {
                key: DeploymentKey {
                    namespace: "llm".to_owned(),
                    deployment: "chat".to_owned(),
                },
                replicas: 1,
                bottleneck: b,
                confidence: 0.8,
                summary: "s".to_owned(),
                evidence: Vec::new(),
                advice: None,
                kv_headroom: None,
                gpu_headroom: Some(0.5),
                stall: Stall {
                    state: if stalled {
                        StallState::Stalled
                    } else {
                        StallState::Serving
                    },
                    last_progress: None,
                    since: stalled.then_some(at - 400.0),
                    in_engine: Some(3.0),
                    why: "w".to_owned(),
                },
                drift: Vec::new(),
                findings: BTreeMap::new(),
                replica_verdicts: Vec::new(),
            }],
            series: 10,
            points: 100,
            unattributed: 0,
            other_shards: 0,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn a_verdict_that_holds_keeps_its_age_and_a_change_resets_it() {
        let mut s = State::new(shown());
        s.record(eval(1000.0, Bottleneck::BatchLimit, false), 1000.0);
        s.record(eval(1060.0, Bottleneck::BatchLimit, true), 1060.0);
        let k = &s.latest.as_ref().unwrap().deployments[0].key.clone();
        assert_eq!(s.since[k].verdict_since, 1000.0);
        assert_eq!(
            s.since[k].stalled_since,
            Some(660.0),
            "the stall began before it was judged"
        );
        s.record(eval(1120.0, Bottleneck::KvCacheCapacity, false), 1120.0);
        assert_eq!(s.since[k].verdict_since, 1120.0);
        assert_eq!(s.since[k].stalled_since, None);
        assert_eq!(s.evaluations, 3);
        assert_eq!(s.durations.count, 3);
    }

    #[test]
    fn ready_only_after_a_recent_success_and_says_why_not() {
        let mut s = State::new(shown());
        assert!(s.ready(0.0).unwrap_err().contains("has not finished"));
        let err = WatchError::Input {
            what: "x".to_owned(),
            why: "refused".to_owned(),
        };
        s.failed(10.0, 0.1, &err);
        assert!(s.ready(10.0).unwrap_err().contains("refused"));
        assert_eq!(s.errors.get("other"), Some(&1));
        s.record(eval(100.0, Bottleneck::None, false), 100.0);
        assert!(s.ready(150.0).is_ok());
        let stale = s.ready(100.0 + 181.0).unwrap_err();
        assert!(stale.contains("181 s old"), "{stale}");
    }

    #[test]
    fn unknown_values_are_absent_from_the_metrics_never_zero() {
        let mut s = State::new(shown());
        s.record(eval(990.0, Bottleneck::BatchLimit, true), 1000.0);
        let m = crate::expose::render(&s);
        let id = r#"{deployment="chat",namespace="llm"}"#;
        assert!(m.contains(
            r#"llmscope_bottleneck{deployment="chat",namespace="llm",bottleneck="batch_limit"} 1"#
        ));
        assert!(m.contains(&format!("llmscope_stalled{id} 1")));
        assert!(m.contains(&format!("llmscope_gpu_headroom_ratio{id} 0.5")));
        assert!(
            !m.contains("llmscope_kv_cache_headroom_ratio{"),
            "no KV gauge: no sample\n{m}"
        );
        assert!(
            !m.contains("llmscope_version_drift{"),
            "no files given: no drift sample\n{m}"
        );
        assert!(m.contains("llmscope_watch_evaluation_duration_seconds_bucket{le=\"+Inf\"} 1"));
        assert!(m.contains("llmscope_watch_last_success_timestamp_seconds 1000"));
        // Every sample line parses as the text format.
        let page = promtext_check(&m);
        assert!(page > 20, "{page} samples");
    }

    fn promtext_check(text: &str) -> usize {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .inspect(|l| {
                let v = l.rsplit(' ').next().unwrap();
                assert!(
                    v.parse::<f64>().is_ok() || v == "+Inf",
                    "bad sample line {l}"
                );
            })
            .count()
    }
}
