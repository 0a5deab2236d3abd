//! The recent past of each deployment, for the status page's charts: the last [`POINTS`]
//! evaluations' key values, in a fixed-size ring per deployment.
//!
//! Memory: one [`Point`] is 24 bytes (a time and four `f32`), so a full ring is
//! `POINTS × 24` = 1,440 bytes plus the ring's own header — about 1.5 KiB per deployment, 1.5 MiB
//! for 1,000 deployments, whatever their replicas. A deployment that leaves the fleet leaves the
//! history with it (see `State::record`).
//!
//! A value the evaluation did not have is stored as `NaN` and drawn as a gap, never as 0.

use crate::evaluate::DeploymentStatus;
use std::collections::VecDeque;

/// Evaluations kept per deployment: an hour at the default interval of 60 s.
pub const POINTS: usize = 60;

/// One deployment at one evaluation; `NaN` where the value was unknown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// When the evaluation read up to (unix seconds).
    pub at: f64,
    /// The fullest replica's KV-cache usage in the window, 0–1.
    pub kv_used: f32,
    /// The mean GPU busy ratio in the window, 0–1.
    pub gpu_busy: f32,
    /// Requests running + waiting at the last sample.
    pub in_engine: f32,
    /// The verdict's confidence, 0–1.
    pub confidence: f32,
}

impl Point {
    /// What `d`, evaluated up to `at`, adds to its history.
    pub fn of(d: &DeploymentStatus, at: f64) -> Point {
        let f = |v: Option<f64>| v.map_or(f32::NAN, |v| v as f32);
        Point {
            at,
            kv_used: f(d.kv_headroom.map(|h| 1.0 - h)),
            gpu_busy: f(d.gpu_headroom.map(|h| 1.0 - h)),
            in_engine: f(d.stall.in_engine),
            confidence: d.confidence as f32,
        }
    }
}

/// The last [`POINTS`] points of one deployment, oldest first.
#[derive(Debug, Clone, Default)]
pub struct History {
    points: VecDeque<Point>,
}

impl History {
    /// Appends `p`, dropping the oldest point once [`POINTS`] are held.
    pub fn push(&mut self, p: Point) {
        if self.points.len() == POINTS {
            self.points.pop_front();
        }
        if self.points.capacity() < POINTS {
            self.points.reserve_exact(POINTS - self.points.len());
        }
        self.points.push_back(p);
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// One value over time, `(unix seconds, value × scale)`; unknown values stay `NaN` (a gap).
    pub fn series(&self, value: impl Fn(&Point) -> f32, scale: f64) -> Vec<(f64, f64)> {
        self.points
            .iter()
            .map(|p| (p.at, f64::from(value(p)) * scale))
            .collect()
    }

    /// The times held, oldest first.
    pub fn times(&self) -> impl Iterator<Item = f64> + '_ {
        self.points.iter().map(|p| p.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(at: f64, kv: f32) -> Point {
        Point {
            at,
            kv_used: kv,
            gpu_busy: f32::NAN,
            in_engine: 3.0,
            confidence: 0.5,
        }
    }

    #[test]
    fn the_ring_keeps_the_last_points_and_no_more() {
        let mut h = History::default();
        for i in 0..(POINTS + 25) {
            h.push(point(i as f64, 0.5));
        }
        assert_eq!(h.len(), POINTS);
        let t: Vec<f64> = h.times().collect();
        assert_eq!(t.first(), Some(&25.0));
        assert_eq!(t.last(), Some(&((POINTS + 24) as f64)));
        assert!(h.points.capacity() < 2 * POINTS, "{}", h.points.capacity());
        assert_eq!(std::mem::size_of::<Point>(), 24);
    }

    #[test]
    fn an_unknown_value_is_a_gap_not_zero() {
        let mut h = History::default();
        h.push(point(0.0, 0.25));
        h.push(point(60.0, f32::NAN));
        let kv = h.series(|p| p.kv_used, 100.0);
        assert_eq!(kv[0], (0.0, 25.0));
        assert!(kv[1].1.is_nan(), "{kv:?}");
        assert!(h.series(|p| p.gpu_busy, 100.0).iter().all(|p| p.1.is_nan()));
    }

    /// The history follows the fleet: a deployment that leaves takes its ring with it, so the
    /// memory is bounded by the deployments of the latest evaluation.
    #[test]
    fn a_deployment_that_leaves_is_forgotten() {
        use crate::evaluate::Evaluation;
        use crate::state::{Shown, State};
        let mut s = State::new(Shown {
            prometheus: String::new(),
            interval_s: 60.0,
            window_s: 900.0,
            shard: "0/1".to_owned(),
            drift_files: 0,
        });
        let eval = |at: f64, ds: Vec<DeploymentStatus>| Evaluation {
            at,
            duration_s: 0.1,
            deployments: ds,
            series: 0,
            points: 0,
            unattributed: 0,
            other_shards: 0,
            warnings: Vec::new(),
        };
        let both = s_status(&["a", "b"]);
        s.record(eval(0.0, both.clone()), 0.0);
        s.record(eval(60.0, both), 60.0);
        s.record(eval(120.0, s_status(&["b"])), 120.0);
        assert_eq!(s.history.len(), 1);
        let b = s.history.values().next().unwrap();
        assert_eq!(b.times().collect::<Vec<_>>(), [0.0, 60.0, 120.0]);
    }

    fn s_status(names: &[&str]) -> Vec<DeploymentStatus> {
        use llmscope_diagnosis::stall::{Stall, StallState};
        let status = |n: &&str| DeploymentStatus {
            key: crate::fleet::DeploymentKey {
                namespace: "llm".to_owned(),
                deployment: (*n).to_owned(),
            },
            replicas: 1,
            bottleneck: llmscope_diagnosis::Bottleneck::None,
            confidence: 0.5,
            summary: String::new(),
            evidence: Vec::new(),
            advice: None,
            kv_headroom: Some(0.5),
            gpu_headroom: None,
            stall: Stall {
                state: StallState::Serving,
                last_progress: None,
                since: None,
                in_engine: Some(2.0),
                why: String::new(),
            },
            drift: Vec::new(),
            findings: Default::default(),
            replica_verdicts: Vec::new(),
        };
        names.iter().map(status).collect()
    }
}
