//! The GPU's busy timeline: one interval per engine step while kernels run.
//!
//! The engine appends a [`GpuInterval`] per step; the dcgm emulation asks
//! [`GpuTimeline::activity`] for what happened in a window (busy seconds, bytes moved, FLOPs,
//! power-weighted busy time), exactly the quantities NVML and DCGM derive their counters from.
//! Old intervals are pruned so memory stays bounded however long the simulator runs.

use std::collections::VecDeque;

/// Kernels running from `start` to `end` (engine seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuInterval {
    pub start: f64,
    pub end: f64,
    /// Bytes read and written by the step.
    pub bytes: f64,
    /// Tensor FLOPs of the step.
    pub flops: f64,
    /// Share of the step's roofline time that is compute (0 = purely memory-bound, 1 = compute-bound).
    pub compute_share: f64,
}

/// Totals over a window, prorated for intervals that straddle its edges.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Activity {
    pub busy_s: f64,
    pub bytes: f64,
    pub flops: f64,
    /// Σ overlap × compute share: feeds the power model.
    pub compute_weighted_s: f64,
}

/// Recent GPU intervals, oldest first.
#[derive(Debug, Clone, Default)]
pub struct GpuTimeline {
    intervals: VecDeque<GpuInterval>,
    keep_s: f64,
}

impl GpuTimeline {
    /// Keeps at least `keep_s` seconds of history.
    pub fn new(keep_s: f64) -> Self {
        Self {
            intervals: VecDeque::new(),
            keep_s,
        }
    }

    pub fn push(&mut self, iv: GpuInterval) {
        while self
            .intervals
            .front()
            .is_some_and(|f| f.end < iv.start - self.keep_s)
        {
            self.intervals.pop_front();
        }
        self.intervals.push_back(iv);
    }

    /// Activity in `[from, to)`.
    pub fn activity(&self, from: f64, to: f64) -> Activity {
        let mut a = Activity::default();
        for iv in self.intervals.iter().rev() {
            if iv.end <= from {
                break;
            }
            let overlap = iv.end.min(to) - iv.start.max(from);
            if overlap <= 0.0 {
                continue;
            }
            let frac = if iv.end > iv.start {
                overlap / (iv.end - iv.start)
            } else {
                0.0
            };
            a.busy_s += overlap;
            a.bytes += iv.bytes * frac;
            a.flops += iv.flops * frac;
            a.compute_weighted_s += overlap * iv.compute_share;
        }
        a
    }

    /// The interval pushed last.
    pub fn last(&self) -> Option<GpuInterval> {
        self.intervals.back().copied()
    }

    pub fn len(&self) -> usize {
        self.intervals.len()
    }

    pub fn is_empty(&self) -> bool {
        self.intervals.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(start: f64, end: f64) -> GpuInterval {
        GpuInterval {
            start,
            end,
            bytes: 100.0,
            flops: 10.0,
            compute_share: 0.5,
        }
    }

    #[test]
    fn prorates_straddling_intervals() {
        let mut t = GpuTimeline::new(100.0);
        t.push(iv(0.0, 1.0));
        t.push(iv(2.0, 3.0));
        let a = t.activity(0.5, 2.5);
        assert!((a.busy_s - 1.0).abs() < 1e-12);
        assert!((a.bytes - 100.0).abs() < 1e-9);
        assert!((a.compute_weighted_s - 0.5).abs() < 1e-12);
        assert_eq!(t.activity(5.0, 6.0), Activity::default());
    }

    #[test]
    fn prunes_old_history() {
        let mut t = GpuTimeline::new(10.0);
        for i in 0..100 {
            t.push(iv(i as f64, i as f64 + 0.5));
        }
        assert!(t.len() <= 12, "{}", t.len());
    }
}
