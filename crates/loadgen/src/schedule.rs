//! Arrival schedules: *when* each request should be sent. Pure functions of the plan and a seed.
//!
//! - [`Mode::Closed`]: N workers; each sends its next request as soon as its last one ends. There
//!   is no intended send time; a ramp-up opens the N slots one by one ([`closed_ramp_offsets`]).
//! - [`Mode::Open`]: requests arrive at a target rate whatever the server does
//!   ([`OpenArrivals`]: constant spacing, Poisson, or gamma with a burstiness), optionally capped
//!   by a concurrency limit. A ramp-up grows the rate linearly from 0 to the target.
//! - [`Mode::Trace`]: requests at the times a trace gives ([`crate::trace`]).
//!
//! The driver (`driver.rs`) turns these offsets into sends; this module never touches a clock.

use crate::rng::Rng;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How inter-arrival gaps are drawn in open-loop mode.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Exactly `1/rate` apart.
    Constant,
    /// Exponential gaps (a Poisson process).
    Poisson,
    /// Gamma gaps with shape `burstiness` (1 = Poisson, < 1 burstier, > 1 smoother), as
    /// `vllm bench serve --burstiness`.
    Gamma { burstiness: f64 },
}

/// The load shape of one stage.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Mode {
    /// `concurrency` workers, each sending back to back.
    Closed { concurrency: u32 },
    /// `rate` requests per second, with at most `cap` in flight when given.
    Open {
        rate: f64,
        arrival: Arrival,
        cap: Option<u32>,
    },
    /// A trace's requests at the trace's own times (the plan holds them); `rate` is the trace's
    /// mean, requests over its span.
    Trace { rate: f64, cap: Option<u32> },
}

impl Mode {
    /// `"closed"` or `"open"`.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Closed { .. } => "closed",
            Mode::Open { .. } => "open",
            Mode::Trace { .. } => "trace",
        }
    }

    /// The most requests this mode keeps in flight, if bounded.
    pub fn concurrency_limit(&self) -> Option<u32> {
        match *self {
            Mode::Closed { concurrency } => Some(concurrency),
            Mode::Open { cap, .. } | Mode::Trace { cap, .. } => cap,
        }
    }
}

/// Intended send offsets (from the stage start) of an open-loop stage. Infinite: the driver stops
/// taking from it at the stage's end.
#[derive(Debug, Clone)]
pub struct OpenArrivals {
    rng: Rng,
    rate: f64,
    arrival: Arrival,
    ramp_s: f64,
    /// Position in "full-rate time": where the process would be without the ramp.
    u: f64,
    started: bool,
}

impl OpenArrivals {
    /// Arrivals at `rate` per second (`rate > 0`), ramping linearly from 0 over `ramp`.
    pub fn new(rate: f64, arrival: Arrival, ramp: Duration, seed: u64) -> Self {
        let ramp_s = ramp.as_secs_f64();
        OpenArrivals {
            rng: Rng::new(seed),
            rate,
            arrival,
            ramp_s,
            u: 0.0,
            started: false,
        }
    }

    fn gap(&mut self) -> f64 {
        match self.arrival {
            Arrival::Constant => 1.0 / self.rate,
            Arrival::Poisson => self.rng.exp1() / self.rate,
            Arrival::Gamma { burstiness } => self.rng.gamma(burstiness) / (burstiness * self.rate),
        }
    }

    /// Maps full-rate time `u` to wall time when the rate grows as `rate · t / T` for `t < T`:
    /// the expected count by `t` is `rate · t² / 2T`, so `t = √(2Tu)` until `u = T/2`.
    fn ramped(&self, u: f64) -> f64 {
        let t = self.ramp_s;
        if t <= 0.0 {
            u
        } else if u < t / 2.0 {
            (2.0 * t * u).sqrt()
        } else {
            u + t / 2.0
        }
    }
}

impl Iterator for OpenArrivals {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.started {
            self.u += self.gap();
        }
        self.started = true;
        Some(Duration::from_secs_f64(self.ramped(self.u).min(1e9)))
    }
}

/// When each of the `n` closed-loop slots opens during a ramp-up: slot `k` at `ramp · k / n`.
pub fn closed_ramp_offsets(n: u32, ramp: Duration) -> impl Iterator<Item = Duration> {
    (0..n).map(move |k| ramp.mul_f64(k as f64 / n.max(1) as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_before(a: OpenArrivals, secs: f64) -> usize {
        a.take_while(|d| d.as_secs_f64() < secs).count()
    }

    #[test]
    fn constant_is_evenly_spaced_from_zero() {
        let v: Vec<f64> = OpenArrivals::new(4.0, Arrival::Constant, Duration::ZERO, 1)
            .take(5)
            .map(|d| d.as_secs_f64())
            .collect();
        assert_eq!(v, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    }

    #[test]
    fn every_arrival_kind_meets_the_rate() {
        for arrival in [
            Arrival::Constant,
            Arrival::Poisson,
            Arrival::Gamma { burstiness: 0.5 },
        ] {
            let n = count_before(OpenArrivals::new(200.0, arrival, Duration::ZERO, 9), 100.0);
            assert!((n as f64 / 20_000.0 - 1.0).abs() < 0.03, "{arrival:?}: {n}");
        }
    }

    #[test]
    fn burstiness_changes_the_spread_not_the_mean() {
        let cv = |b: f64| {
            let a = OpenArrivals::new(10.0, Arrival::Gamma { burstiness: b }, Duration::ZERO, 5);
            let t: Vec<f64> = a.take(20_001).map(|d| d.as_secs_f64()).collect();
            let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
            let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let sd = (gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
            assert!((m - 0.1).abs() < 0.005, "mean gap {m}");
            sd / m
        };
        assert!(cv(0.25) > 1.5 && cv(4.0) < 0.7, "{} {}", cv(0.25), cv(4.0));
    }

    #[test]
    fn ramp_sends_half_as_many_during_the_ramp() {
        let ramp = Duration::from_secs(10);
        let during = count_before(OpenArrivals::new(100.0, Arrival::Constant, ramp, 1), 10.0);
        let both = count_before(OpenArrivals::new(100.0, Arrival::Constant, ramp, 1), 20.0);
        assert!((during as i64 - 500).abs() <= 2, "{during}");
        assert!((both - during) as i64 - 1000 <= 2, "{both}");
    }

    #[test]
    fn closed_ramp_opens_every_slot_within_the_ramp() {
        let v: Vec<Duration> = closed_ramp_offsets(4, Duration::from_secs(8)).collect();
        assert_eq!(v, [0, 2, 4, 6].map(Duration::from_secs));
    }

    proptest::proptest! {
        #[test]
        fn offsets_never_go_back(rate in 0.01f64..1e5, b in 0.05f64..10.0, ramp in 0u64..100, seed: u64) {
            let a = OpenArrivals::new(rate, Arrival::Gamma { burstiness: b }, Duration::from_secs(ramp), seed);
            let v: Vec<Duration> = a.take(200).collect();
            proptest::prop_assert!(v.windows(2).all(|w| w[0] <= w[1]));
        }
    }
}
