//! Phases of a run and statistics over its loaded window.
//!
//! [`detect_phases`] reads the phases from the series themselves — not from when the load
//! generator says it ran: requests in the system (running + waiting) rise from zero (ramp), hold a
//! plateau (steady), and fall back (drain). Baseline is before the first request, after is after
//! the last. [`WindowStats`] are the numbers of `docs/METHOD.md` step 7 over the steady phase:
//! max, min and mean excluding zeros, headroom = 1 − mean for fraction signals.

use super::signal::{Concept, Input, Signal};
use serde::Serialize;

/// Time spans of one run (unix seconds); `None` when the phase did not happen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Phases {
    pub baseline: Option<(f64, f64)>,
    pub ramp: Option<(f64, f64)>,
    pub steady: Option<(f64, f64)>,
    pub drain: Option<(f64, f64)>,
    pub after: Option<(f64, f64)>,
}

/// Requests in the system at each scrape: running + waiting, joined on timestamps.
fn in_system(input: &Input) -> Vec<(f64, f64)> {
    let Some(running) = input.signal(Concept::Running) else {
        return Vec::new();
    };
    let waiting = input.signal(Concept::Waiting);
    running
        .points
        .iter()
        .filter(|p| p.1.is_finite())
        .map(|&(t, r)| {
            let w = waiting.and_then(|w| value_at(w, t)).unwrap_or(0.0);
            (t, r + w)
        })
        .collect()
}

/// The value of `s` at the latest point not after `t` (what a query at `t` would see), if any
/// point lies within one scrape gap.
fn value_at(s: &Signal, t: f64) -> Option<f64> {
    let idx = s.points.partition_point(|p| p.0 <= t + 1e-9);
    idx.checked_sub(1)
        .map(|i| s.points[i].1)
        .filter(|v| v.is_finite())
}

/// Reads the phases from running + waiting; where those gauges place a steady phase shorter than
/// half of the time the engine's own token counter says it worked steadily (readings missing or
/// set aside as stale — a real vLLM 0.32 under load can read 0 in most scrapes), the counter
/// places the phases instead.
///
/// Where the client says when it sent, the steady phase lies inside that span: after the client
/// stopped, the requests still in flight drain, however full the engine's queue looks (a real
/// vLLM 0.32 on a starved host held the client's requests in its API server for most of an 8 s
/// load, then let all 31 into a 4 MiB KV pool as the load ended — a 3 s queue of 24 in the drain
/// that the gauges alone took for the plateau).
pub fn detect_phases(input: &Input) -> Phases {
    let sending = input.load.sending.filter(|&(lo, hi)| {
        // Bounds no reading falls in (another clock, a stored run cut differently) bound nothing.
        input
            .signal(Concept::Running)
            .is_some_and(|s| s.points.iter().any(|p| p.0 >= lo && p.0 <= hi))
    });
    let phases = gauge_phases(input, sending);
    let Some(tokens) = token_span(input, sending) else {
        return phases;
    };
    let steady = phases.steady.map_or(0.0, |(a, b)| b - a);
    if steady >= 0.5 * (tokens.steady.1 - tokens.steady.0) {
        return phases;
    }
    let times = input
        .signals
        .values()
        .flat_map(|s| s.points.iter().map(|p| p.0));
    let (first, last) = times.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| {
        (a.min(t), b.max(t))
    });
    let span = |a: f64, b: f64| (b > a).then_some((a, b));
    Phases {
        baseline: span(first, tokens.start),
        ramp: span(tokens.start, tokens.steady.0),
        steady: Some(tokens.steady),
        drain: span(tokens.steady.1, tokens.end),
        after: span(tokens.end, last),
    }
}

/// When the engine generated tokens: from the last idle reading of its counter (`start`) through
/// the intervals at a steady pace (rate at least half the median of the working intervals) to the
/// last interval with any token (`end`).
struct TokenSpan {
    start: f64,
    steady: (f64, f64),
    end: f64,
}

fn token_span(input: &Input, sending: Option<(f64, f64)>) -> Option<TokenSpan> {
    let counter = input.signal(Concept::GeneratedTokens)?;
    let rate = counter.rate();
    let working: Vec<usize> = (0..rate.points.len())
        .filter(|&i| rate.points[i].1 > 0.0 && rate.points[i].1.is_finite())
        .collect();
    let (&i0, &i1) = (working.first()?, working.last()?);
    if working.len() < 3 {
        return None;
    }
    // The pace is the load's: intervals that end while the client sent, where that is known.
    let loaded: Vec<(f64, f64)> = working
        .iter()
        .map(|&i| rate.points[i])
        .filter(|p| inside(p.0, sending))
        .collect();
    let median = percentile(loaded.iter().map(|p| p.1).collect(), 0.5);
    let steady: Vec<f64> = loaded
        .iter()
        .filter(|p| p.1 >= 0.5 * median)
        .map(|p| p.0)
        .collect();
    // A rate point at t covers the interval since the counter's reading before it.
    let start = counter
        .points
        .iter()
        .rev()
        .find(|p| p.0 < rate.points[i0].0)
        .map_or(rate.points[i0].0, |p| p.0);
    Some(TokenSpan {
        start,
        steady: (*steady.first()?, *steady.last()?),
        end: rate.points[i1].0,
    })
}

/// Whether `t` falls within `bounds` (anywhere when they are not known).
fn inside(t: f64, bounds: Option<(f64, f64)>) -> bool {
    bounds.is_none_or(|(lo, hi)| t >= lo && t <= hi)
}

fn gauge_phases(input: &Input, sending: Option<(f64, f64)>) -> Phases {
    let load = in_system(input);
    let (Some(first), Some(last)) = (load.first(), load.last()) else {
        return Phases::default();
    };
    let active: Vec<&(f64, f64)> = load.iter().filter(|p| p.1 > 0.0).collect();
    let (Some(a0), Some(a1)) = (active.first(), active.last()) else {
        return Phases {
            baseline: Some((first.0, last.0)),
            ..Phases::default()
        };
    };
    // The plateau the load held while the client sent, where that is known.
    let plateau = percentile(
        active
            .iter()
            .filter(|p| inside(p.0, sending))
            .map(|p| p.1)
            .collect(),
        0.9,
    );
    let high: Vec<f64> = load
        .iter()
        .filter(|p| inside(p.0, sending) && p.1 >= 0.9 * plateau)
        .map(|p| p.0)
        .collect();
    let (Some(&s0), Some(&s1)) = (high.first(), high.last()) else {
        // Nothing was in the system while the client sent.
        return Phases {
            baseline: Some((first.0, a0.0)).filter(|(a, b)| b > a),
            ..Phases::default()
        };
    };
    let span = |a: f64, b: f64| (b > a).then_some((a, b));
    let before = load.iter().rev().find(|p| p.0 < a0.0).map(|p| p.0);
    let after = load.iter().find(|p| p.0 > a1.0).map(|p| p.0);
    Phases {
        baseline: before.and_then(|b| span(first.0, b)),
        ramp: span(a0.0, s0),
        steady: Some((s0, s1)).filter(|(a, b)| b >= a),
        drain: span(s1, a1.0),
        after: after.and_then(|a| span(a, last.0)),
    }
}

fn percentile(mut xs: Vec<f64>, q: f64) -> f64 {
    xs.retain(|x| x.is_finite());
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let idx = ((xs.len() - 1) as f64 * q).round() as usize;
    xs[idx]
}

/// Statistics of one signal over a window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WindowStats {
    pub samples: usize,
    pub duration_s: f64,
    pub max: f64,
    /// Smallest non-zero value (NaN when every value was 0).
    pub min_nonzero: f64,
    /// Mean of the non-zero values.
    pub mean_nonzero: f64,
    /// Mean of all values.
    pub mean: f64,
    /// Share of samples above zero.
    pub nonzero_share: f64,
    /// 1 − mean as a fraction of full scale, for fraction and percent signals.
    pub headroom: Option<f64>,
}

/// Statistics of `s` over `[from, to]`; `None` when no point falls inside.
pub fn window_stats(concept: Concept, s: &Signal, from: f64, to: f64) -> Option<WindowStats> {
    let source = if concept.is_counter() {
        s.rate()
    } else {
        s.clone()
    };
    let xs: Vec<(f64, f64)> = source.window(from, to).collect();
    if xs.is_empty() {
        return None;
    }
    let values: Vec<f64> = xs.iter().map(|p| p.1).collect();
    let nonzero: Vec<f64> = values.iter().copied().filter(|v| *v != 0.0).collect();
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let mean_nonzero = if nonzero.is_empty() {
        0.0
    } else {
        nonzero.iter().sum::<f64>() / nonzero.len() as f64
    };
    Some(WindowStats {
        samples: xs.len(),
        duration_s: xs[xs.len() - 1].0 - xs[0].0,
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        min_nonzero: nonzero.iter().copied().fold(f64::NAN, f64::min),
        mean_nonzero,
        mean,
        nonzero_share: nonzero.len() as f64 / values.len() as f64,
        headroom: concept.full_scale().map(|full| 1.0 - mean_nonzero / full),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signal::Signal;

    fn input(running: &[f64], waiting: &[f64]) -> Input {
        let pts = |xs: &[f64]| xs.iter().enumerate().map(|(i, v)| (i as f64, *v)).collect();
        let mut i = Input::default();
        i.signals
            .insert(Concept::Running, Signal::new("r", pts(running)));
        i.signals
            .insert(Concept::Waiting, Signal::new("w", pts(waiting)));
        i
    }

    #[test]
    fn finds_baseline_ramp_steady_drain_after() {
        let r = [0., 0., 4., 16., 16., 16., 16., 8., 0., 0.];
        let w = [0., 0., 0., 12., 16., 16., 15., 0., 0., 0.];
        let p = detect_phases(&input(&r, &w));
        assert_eq!(p.baseline, Some((0.0, 1.0)));
        assert_eq!(p.ramp, Some((2.0, 4.0)), "28 of 32 is still ramping");
        assert_eq!(p.steady, Some((4.0, 6.0)));
        assert_eq!(p.drain, Some((6.0, 7.0)));
        assert_eq!(p.after, Some((8.0, 9.0)));
    }

    /// The shape a real vLLM 0.32 took on a starved host (4 MiB KV pool, 32 clients, 8 s):
    /// the API server let about one request at a time into the engine while the client sent,
    /// then all of them as the load ended; the engine queued 24 in what was already the drain.
    fn flood_at_the_end() -> Input {
        let mut r = vec![0., 0., 0., 0.];
        let mut w = vec![0., 0., 0., 0.];
        r.extend([1.; 16]);
        w.extend([0.; 16]);
        r.extend([7., 8., 8., 7., 8., 7., 6., 4., 1., 0., 0., 0.]);
        w.extend([24., 25., 24., 23., 17., 12., 6., 1., 0., 0., 0., 0.]);
        let mut i = input(&r, &w);
        // Tokens trickled while the front end held the requests (the engine stood still in
        // every other interval), and flowed at three times that pace once they were all in.
        let mut total = 0.0;
        let tokens = (0..r.len())
            .map(|t| {
                total += match t {
                    4..20 if t % 2 == 0 => 50.0,
                    20..28 => 150.0,
                    _ => 0.0,
                };
                (t as f64, total)
            })
            .collect();
        i.signals
            .insert(Concept::GeneratedTokens, Signal::new("g", tokens));
        i
    }

    #[test]
    fn the_steady_phase_lies_where_the_client_sent() {
        // Alone, the gauges take the queue of the drain for the plateau.
        let p = detect_phases(&flood_at_the_end());
        assert_eq!(p.steady, Some((20.0, 27.0)));
        // Told the client sent from t=4 to t=20, the steady phase is the load's.
        let mut i = flood_at_the_end();
        i.load.sending = Some((4.0, 20.0));
        let p = detect_phases(&i);
        let (a, b) = p.steady.expect("a steady phase");
        assert!(a >= 4.0 && b <= 20.0 && b - a >= 10.0, "{p:?}");
        assert!(p.drain.is_some_and(|(d, _)| d == b), "{p:?}");
        // A plateau inside the sending span is left as it was.
        let r = [0., 0., 4., 16., 16., 16., 16., 8., 0., 0.];
        let w = [0., 0., 0., 12., 16., 16., 15., 0., 0., 0.];
        let mut i = input(&r, &w);
        i.load.sending = Some((2.0, 6.5));
        assert_eq!(detect_phases(&i).steady, Some((4.0, 6.0)));
        // Cut short, what is cut off joins the drain.
        i.load.sending = Some((2.0, 5.0));
        let p = detect_phases(&i);
        assert_eq!((p.steady, p.drain), (Some((4.0, 5.0)), Some((5.0, 7.0))));
    }

    #[test]
    fn idle_run_is_all_baseline() {
        let p = detect_phases(&input(&[0., 0., 0.], &[0., 0., 0.]));
        assert_eq!(p.baseline, Some((0.0, 2.0)));
        assert!(p.steady.is_none());
        assert_eq!(detect_phases(&Input::default()), Phases::default());
    }

    #[test]
    fn stats_exclude_zeros_where_asked() {
        let s = Signal::new(
            "kv",
            vec![(0.0, 0.0), (1.0, 0.02), (2.0, 0.03), (3.0, f64::NAN)],
        );
        let st = window_stats(Concept::KvUsage, &s, 0.0, 3.0).unwrap();
        assert_eq!(st.samples, 3);
        assert_eq!(st.max, 0.03);
        assert_eq!(st.min_nonzero, 0.02);
        assert!((st.mean_nonzero - 0.025).abs() < 1e-12);
        assert!((st.headroom.unwrap() - 0.975).abs() < 1e-12);
        assert!(window_stats(Concept::KvUsage, &s, 10.0, 20.0).is_none());
    }
}
