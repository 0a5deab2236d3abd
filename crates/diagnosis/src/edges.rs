//! When each signal rose and fell, and what the offsets between sources mean.
//!
//! An edge is the first scrape at which a signal crosses halfway between its baseline level and
//! its steady level (rising at the start of the load, falling after the steady phase). Offsets are
//! measured against the engine's running-requests edge. A lag that is the same at the rise and the
//! fall — or that fits inside the lagging source's own update interval — is sampling alignment
//! between exporters (dcgm-exporter collects every 30 s by default), not a real delay; only an
//! asymmetric lag says something about the system (`docs/METHOD.md` step 6).

use super::signal::{Concept, Input, Signal};
use super::window::Phases;
use serde::Serialize;

/// Rise and fall times of one signal (unix seconds).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Edge {
    pub concept: Concept,
    pub rise: Option<f64>,
    pub fall: Option<f64>,
}

/// How a signal's edges line up with the engine's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Offset {
    pub concept: Concept,
    pub rise_lag_s: Option<f64>,
    pub fall_lag_s: Option<f64>,
    /// The median time between changes of this signal (its effective update interval).
    pub update_interval_s: Option<f64>,
    pub kind: OffsetKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OffsetKind {
    /// Within a scrape of the engine's edges.
    Aligned,
    /// Explained by how often the source updates, or equal at rise and fall.
    SamplingAlignment,
    /// Different at rise and fall: a real delay in the system.
    RealLag,
    /// Not enough edges to say.
    Unknown,
}

/// The edge of `s` for the given phases.
pub fn edge(concept: Concept, s: &Signal, phases: &Phases) -> Edge {
    let (Some(steady), first) = (phases.steady, s.points.first().map(|p| p.0)) else {
        return Edge {
            concept,
            rise: None,
            fall: None,
        };
    };
    let base_end = phases.baseline.map_or(first.unwrap_or(steady.0), |b| b.1);
    let base = mean(s.window(f64::NEG_INFINITY, base_end).map(|p| p.1)).unwrap_or(0.0);
    let level = mean(s.window(steady.0, steady.1).map(|p| p.1));
    let Some(level) = level.filter(|l| (l - base).abs() > 1e-9) else {
        return Edge {
            concept,
            rise: None,
            fall: None,
        };
    };
    let half = base + 0.5 * (level - base);
    let above = |v: f64| if level > base { v >= half } else { v <= half };
    let rise = s
        .points
        .iter()
        .find(|p| p.0 >= base_end && p.1.is_finite() && above(p.1))
        .map(|p| p.0);
    let fall = s
        .points
        .iter()
        .find(|p| p.0 > steady.1 && p.1.is_finite() && !above(p.1))
        .map(|p| p.0);
    Edge {
        concept,
        rise,
        fall,
    }
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Median time between value changes of `s` inside `[from, to]`.
fn update_interval(s: &Signal, from: f64, to: f64) -> Option<f64> {
    let pts: Vec<(f64, f64)> = s.window(from, to).collect();
    let mut changes: Vec<f64> = Vec::new();
    let mut last_change = pts.first()?.0;
    for w in pts.windows(2) {
        if w[1].1 != w[0].1 {
            changes.push(w[1].0 - last_change);
            last_change = w[1].0;
        }
    }
    changes.sort_by(f64::total_cmp);
    changes.get(changes.len() / 2).copied()
}

/// Classifies the offset of `edge` against the engine's `reference` edge.
pub fn offset(edge: &Edge, reference: &Edge, s: &Signal, phases: &Phases, scrape_s: f64) -> Offset {
    let lag = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
    let rise_lag = lag(edge.rise, reference.rise);
    let fall_lag = lag(edge.fall, reference.fall);
    let update = phases.steady.and_then(|(a, b)| update_interval(s, a, b));
    let kind = match (rise_lag, fall_lag) {
        (Some(r), Some(f)) => {
            let tol = scrape_s.max(1e-9);
            // A source that updates every `u` seconds (and may average over `u`, like DCGM's
            // profiling fields) shows an edge up to about 2·u late, at the rise and the fall alike.
            let fits_update =
                update.is_some_and(|u| r.abs() <= 2.0 * u + tol && f.abs() <= 2.0 * u + tol);
            if r.abs() <= tol && f.abs() <= tol {
                OffsetKind::Aligned
            } else if fits_update || (r - f).abs() <= tol.max(0.25 * r.abs().max(f.abs())) {
                OffsetKind::SamplingAlignment
            } else {
                OffsetKind::RealLag
            }
        }
        _ => OffsetKind::Unknown,
    };
    Offset {
        concept: edge.concept,
        rise_lag_s: rise_lag,
        fall_lag_s: fall_lag,
        update_interval_s: update,
        kind,
    }
}

/// Edges of every present signal, and the offsets of the GPU exporter's signals against the
/// engine's `running` (offsets *between sources*; within the engine, waiting draining before
/// running is the system, not a lag).
pub fn timeline(input: &Input, phases: &Phases) -> (Vec<Edge>, Vec<Offset>) {
    let scrape = input.scrape_interval_s.unwrap_or(1.0);
    let edges: Vec<Edge> = input
        .signals
        .iter()
        .filter(|(c, _)| !c.is_counter())
        .map(|(c, s)| edge(*c, s, phases))
        .collect();
    let Some(reference) = edges
        .iter()
        .find(|e| e.concept == Concept::Running)
        .copied()
    else {
        return (edges, Vec::new());
    };
    let offsets = edges
        .iter()
        .filter(|e| e.concept.is_gpu() && (e.rise.is_some() || e.fall.is_some()))
        .filter_map(|e| {
            Some(offset(
                e,
                &reference,
                input.signals.get(&e.concept)?,
                phases,
                scrape,
            ))
        })
        .collect();
    (edges, offsets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(t0: f64, t1: f64, hi: f64, every: f64, n: usize) -> Signal {
        // Holds its value between updates every `every` seconds, sampled each second.
        let pts = (0..n)
            .map(|i| {
                let t = i as f64;
                let sampled_at = (t / every).floor() * every;
                (
                    t,
                    if sampled_at >= t0 && sampled_at < t1 {
                        hi
                    } else {
                        0.0
                    },
                )
            })
            .collect();
        Signal::new("s", pts)
    }

    #[test]
    fn symmetric_dcgm_lag_is_sampling_alignment() {
        let phases = Phases {
            baseline: Some((0.0, 9.0)),
            steady: Some((10.0, 100.0)),
            after: Some((102.0, 150.0)),
            ..Phases::default()
        };
        let running = step(10.0, 101.0, 16.0, 1.0, 150);
        let mut gpu = running.clone();
        for p in &mut gpu.points {
            p.1 = if p.0 >= 43.0 && p.0 < 134.0 {
                32.0
            } else {
                0.0
            };
        }
        let r = edge(Concept::Running, &running, &phases);
        let g = edge(Concept::GpuUtil, &gpu, &phases);
        let o = offset(&g, &r, &gpu, &phases, 1.0);
        assert_eq!(o.rise_lag_s, Some(33.0));
        assert_eq!(o.fall_lag_s, Some(33.0));
        assert_eq!(o.kind, OffsetKind::SamplingAlignment);
    }

    #[test]
    fn asymmetric_lag_is_real() {
        let phases = Phases {
            baseline: Some((0.0, 9.0)),
            steady: Some((12.0, 90.0)),
            ..Phases::default()
        };
        let running = step(10.0, 100.0, 16.0, 1.0, 150);
        let mut kv = running.clone();
        for p in &mut kv.points {
            p.1 = if p.0 >= 11.0 && p.0 < 140.0 { 0.5 } else { 0.0 };
        }
        let o = offset(
            &edge(Concept::KvUsage, &kv, &phases),
            &edge(Concept::Running, &running, &phases),
            &kv,
            &phases,
            1.0,
        );
        assert_eq!(o.kind, OffsetKind::RealLag, "{o:?}");
    }

    #[test]
    fn flat_signals_have_no_edges() {
        let phases = Phases {
            steady: Some((0.0, 5.0)),
            ..Phases::default()
        };
        let flat = Signal::new("f", (0..10).map(|i| (i as f64, 3.0)).collect());
        let e = edge(Concept::PowerWatts, &flat, &phases);
        assert_eq!((e.rise, e.fall), (None, None));
    }
}
