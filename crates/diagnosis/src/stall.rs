//! "Alive but not serving": requests in the engine while nothing is generated.
//!
//! A hung engine keeps answering `/health` and `/metrics`: the scheduler gauges (running,
//! waiting) stay where they were, or keep rising as requests arrive, while the progress counters
//! (generated tokens, engine steps) stand still. A load test never sees it — its own requests
//! time out — but a fleet does, hours into a deployment. Gauges frozen after mass aborts look
//! the same from outside: requests reported running, no step taken.
//!
//! Pure: signals in (summed over the deployment's replicas), a [`Stall`] out. A deployment is
//! stalled when, for at least `stall_after` up to its last sample, every sample had requests in
//! the engine and no progress counter moved. Without a progress counter or the running gauge the
//! answer is [`StallState::Unknown`], never "not stalled".

use super::signal::{Concept, Input, Signal};
use serde::Serialize;

/// Whether a deployment is stalled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StallState {
    /// Requests in the engine and no progress for at least `stall_after`.
    Stalled,
    /// Progress seen within `stall_after`, or nothing in the engine.
    Serving,
    /// The running gauge or every progress counter is missing, or the window is shorter than
    /// `stall_after`.
    Unknown,
}

/// The stall judgement and what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stall {
    pub state: StallState,
    /// The last sample at which a progress counter moved (unix seconds), if one did in the
    /// window.
    pub last_progress: Option<f64>,
    /// Since when requests sat in the engine with no progress (unix seconds), when stalled.
    pub since: Option<f64>,
    /// Requests running + waiting at the last sample.
    pub in_engine: Option<f64>,
    /// In words, for the status page and the finding.
    pub why: String,
}

/// Judges the window's tail. `input`'s counters are summed across replicas per timestamp
/// (as [`super::build::SignalBuilder`] makes them), so a replica that progresses keeps the sum
/// moving: a deployment is stalled only when all of it is.
pub fn judge(input: &Input, stall_after: f64) -> Stall {
    let (running, counters) = match readings(input) {
        Ok(r) => r,
        Err(why) => return Stall::unknown(why),
    };
    let waiting = input.signal(Concept::Waiting);
    let in_engine = |t: f64| -> Option<f64> {
        let r = at(running, t)?;
        Some(r + waiting.and_then(|w| at(w, t)).unwrap_or(0.0))
    };
    let Some(&(last_t, _)) = running.points.iter().rev().find(|p| p.1.is_finite()) else {
        return Stall::unknown("the running gauge has no finite sample".to_owned());
    };
    let last_progress = counters
        .iter()
        .filter_map(|c| last_increase(c))
        .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.max(t))));
    let first_t = counters
        .iter()
        .filter_map(|c| c.points.iter().find(|p| p.1.is_finite()).map(|p| p.0))
        .fold(f64::INFINITY, f64::min)
        .min(running.points[0].0);
    // The quiet stretch starts at the last progress (or the window's start if none).
    let quiet_from = last_progress.unwrap_or(first_t);
    let quiet: Vec<f64> = running
        .points
        .iter()
        .filter(|p| p.0 >= quiet_from && p.1.is_finite())
        .filter_map(|p| in_engine(p.0))
        .collect();
    let tail = Tail {
        first_t,
        last_t,
        last_progress,
        quiet_from,
        busy_throughout: !quiet.is_empty() && quiet.iter().all(|&n| n > 0.0),
    };
    let state = tail.state(stall_after);
    let now_in = in_engine(last_t);
    Stall {
        state,
        last_progress,
        since: (state == StallState::Stalled).then_some(quiet_from),
        in_engine: now_in,
        why: tail.why(state, now_in, &quiet, stall_after),
    }
}

impl Stall {
    fn unknown(why: String) -> Stall {
        Stall {
            state: StallState::Unknown,
            last_progress: None,
            since: None,
            in_engine: None,
            why,
        }
    }
}

/// The running gauge and the progress counters present, or why the tail cannot be judged.
fn readings(input: &Input) -> Result<(&Signal, Vec<&Signal>), String> {
    let running = input
        .signal(Concept::Running)
        .ok_or("no running-requests gauge in the window")?;
    let counters: Vec<&Signal> = [Concept::GeneratedTokens, Concept::StepCount]
        .into_iter()
        .filter_map(|c| input.signal(c))
        .collect();
    if counters.is_empty() {
        return Err(
            "no progress counter (generated tokens, engine steps) in the window".to_owned(),
        );
    }
    Ok((running, counters))
}

/// The window's tail as the judgement sees it.
struct Tail {
    first_t: f64,
    last_t: f64,
    last_progress: Option<f64>,
    quiet_from: f64,
    /// Requests sat in the engine at every sample since the last progress.
    busy_throughout: bool,
}

impl Tail {
    fn state(&self, stall_after: f64) -> StallState {
        if self.busy_throughout && self.last_t - self.quiet_from >= stall_after {
            StallState::Stalled
        } else if self.last_progress.is_none() && (self.last_t - self.first_t) < stall_after {
            StallState::Unknown
        } else {
            StallState::Serving
        }
    }

    fn why(
        &self,
        state: StallState,
        now_in: Option<f64>,
        quiet: &[f64],
        stall_after: f64,
    ) -> String {
        let n = now_in.unwrap_or(f64::NAN);
        match state {
            StallState::Stalled => format!(
                "{n:.0} request(s) in the engine and no token generated nor step taken for {:.0} s{}",
                self.last_t - self.quiet_from,
                frozen_note(quiet)
            ),
            StallState::Serving => match self.last_progress {
                Some(t) => format!("progress {:.0} s before the last sample", self.last_t - t),
                None => "nothing in the engine".to_owned(),
            },
            StallState::Unknown => format!(
                "the window holds {:.0} s of samples, shorter than the {stall_after:.0} s a stall must last",
                self.last_t - self.first_t
            ),
        }
    }
}

/// "(gauges frozen at N)" when requests in the engine did not change at all: what mass aborts
/// leave behind, as opposed to a queue that keeps growing in front of a hung engine.
fn frozen_note(quiet: &[f64]) -> String {
    match quiet.first() {
        Some(&f) if quiet.len() > 2 && quiet.iter().all(|&n| n == f) => {
            format!(" (the gauges are frozen at {f:.0})")
        }
        Some(&f) if quiet.last().is_some_and(|&l| l > f) => format!(
            " (requests in the engine grew from {f:.0} to {:.0}: arrivals queue behind it)",
            quiet[quiet.len() - 1]
        ),
        _ => String::new(),
    }
}

/// The value of `s` at `t` exactly (series of one window share their stamps).
fn at(s: &Signal, t: f64) -> Option<f64> {
    let i = s.points.partition_point(|p| p.0 < t);
    s.points
        .get(i)
        .filter(|p| (p.0 - t).abs() < 1e-3 && p.1.is_finite())
        .map(|p| p.1)
}

/// The last sample at which the counter moved (a reset counts as a move: a restarted engine is
/// not a stalled one).
fn last_increase(c: &Signal) -> Option<f64> {
    let finite: Vec<&(f64, f64)> = c.points.iter().filter(|p| p.1.is_finite()).collect();
    finite
        .windows(2)
        .rev()
        .find(|w| w[1].1 != w[0].1)
        .map(|w| w[1].0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(running: &[f64], waiting: &[f64], tokens: &[f64]) -> Input {
        let mut i = Input::default();
        let sig = |name: &str, v: &[f64]| {
            Signal::new(
                name,
                v.iter()
                    .enumerate()
                    .map(|(k, &v)| (1000.0 + 15.0 * k as f64, v))
                    .collect(),
            )
        };
        i.signals
            .insert(Concept::Running, sig("vllm:num_requests_running", running));
        i.signals
            .insert(Concept::Waiting, sig("vllm:num_requests_waiting", waiting));
        i.signals.insert(
            Concept::GeneratedTokens,
            sig("vllm:generation_tokens_total", tokens),
        );
        i
    }

    #[test]
    fn requests_in_the_engine_and_no_tokens_for_long_enough_is_a_stall() {
        // Progress until the 3rd sample, then 6 samples (90 s) with 16 running and none made.
        let i = input(
            &[16.0; 9],
            &[0.0, 0.0, 0.0, 2.0, 4.0, 6.0, 8.0, 9.0, 10.0],
            &[0.0, 100.0, 200.0, 200.0, 200.0, 200.0, 200.0, 200.0, 200.0],
        );
        let s = judge(&i, 60.0);
        assert_eq!(s.state, StallState::Stalled, "{s:?}");
        assert_eq!(s.since, Some(1030.0));
        assert_eq!(s.last_progress, Some(1030.0));
        assert_eq!(s.in_engine, Some(26.0));
        assert!(s.why.contains("for 90 s"), "{}", s.why);
        assert!(s.why.contains("grew from 16 to 26"), "{}", s.why);
        // The same tail judged against a longer threshold is not (yet) a stall.
        assert_eq!(judge(&i, 120.0).state, StallState::Serving);
    }

    #[test]
    fn frozen_gauges_are_named() {
        let i = input(&[5.0; 8], &[0.0; 8], &[50.0; 8]);
        let s = judge(&i, 60.0);
        assert_eq!(s.state, StallState::Stalled, "{s:?}");
        assert_eq!(s.last_progress, None);
        assert!(s.why.contains("frozen at 5"), "{}", s.why);
    }

    #[test]
    fn an_idle_engine_or_a_moving_counter_is_serving() {
        let idle = input(&[0.0; 8], &[0.0; 8], &[50.0; 8]);
        assert_eq!(judge(&idle, 60.0).state, StallState::Serving);
        // One request left the engine for a sample: not "in the engine throughout".
        let gap = input(
            &[3.0, 3.0, 0.0, 3.0, 3.0, 3.0, 3.0, 3.0],
            &[0.0; 8],
            &[50.0; 8],
        );
        assert_eq!(judge(&gap, 60.0).state, StallState::Serving);
        let moving = input(&[16.0; 8], &[4.0; 8], &[0., 1., 2., 3., 4., 5., 6., 7.]);
        let s = judge(&moving, 60.0);
        assert_eq!(s.state, StallState::Serving);
        assert_eq!(s.last_progress, Some(1105.0));
    }

    #[test]
    fn without_the_signals_or_a_long_enough_window_it_is_unknown() {
        let mut i = input(&[16.0; 8], &[0.0; 8], &[50.0; 8]);
        i.signals.remove(&Concept::GeneratedTokens);
        let s = judge(&i, 60.0);
        assert_eq!(s.state, StallState::Unknown);
        assert!(s.why.contains("no progress counter"), "{}", s.why);
        let short = input(&[16.0; 3], &[0.0; 3], &[50.0; 3]);
        assert_eq!(judge(&short, 60.0).state, StallState::Unknown);
        assert_eq!(judge(&Input::default(), 60.0).state, StallState::Unknown);
    }

    #[test]
    fn a_counter_reset_is_progress() {
        let i = input(
            &[4.0; 8],
            &[0.0; 8],
            &[90.0, 90.0, 90.0, 90.0, 0.0, 0.0, 0.0, 0.0],
        );
        let s = judge(&i, 60.0);
        assert_eq!(s.last_progress, Some(1060.0));
        assert_eq!(s.state, StallState::Serving);
    }
}
