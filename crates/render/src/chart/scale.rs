//! Axes as numbers: a linear axis from 0 in round steps, a logarithmic axis over whole decades,
//! and a time axis in seconds from the run's start. Pure arithmetic; drawing is elsewhere.

/// A value axis from 0 to `top` in ticks of `step` (1, 2 or 5 × a power of ten).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Linear {
    pub step: f64,
    pub top: f64,
}

impl Linear {
    /// An axis that holds `max` in about four ticks. A `max` that is 0, negative or not a
    /// number still gives an axis (0 to 1), so a flat series draws on its floor.
    pub fn of(max: f64) -> Linear {
        let max = if max.is_finite() && max > 0.0 {
            max
        } else {
            1.0
        };
        let step = round_step(max / 4.0);
        Linear {
            step,
            top: (max / step).ceil().max(1.0) * step,
        }
    }

    /// A fixed axis from 0 to `top` (percent: 100) in four ticks, widened if `max` is above it.
    pub fn fixed(top: f64, max: f64) -> Linear {
        if max.is_finite() && max > top {
            return Linear::of(max);
        }
        Linear {
            step: top / 4.0,
            top,
        }
    }

    /// Where `v` lies from 0 (bottom) to 1 (top).
    pub fn frac(self, v: f64) -> f64 {
        v / self.top
    }

    /// Every tick from 0 to the top.
    pub fn ticks(self) -> impl Iterator<Item = f64> {
        let n = (self.top / self.step).round() as u32;
        (0..=n).map(move |i| f64::from(i) * self.step)
    }
}

/// The smallest of 1, 2, 5 × 10ⁿ at least `raw`.
fn round_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// A logarithmic axis over the decades `10^lo ..= 10^hi` (latencies spanning 1 ms to 10 s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Log {
    pub lo: i32,
    pub hi: i32,
}

impl Log {
    /// The whole decades around `values`' positive finite members; `None` when there are none
    /// (0 and negative values have no place on a log axis).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Log> {
        let (min, max) = values
            .into_iter()
            .filter(|v| v.is_finite() && *v > 0.0)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        if !min.is_finite() {
            return None;
        }
        let lo = min.log10().floor() as i32;
        let hi = (max.log10().ceil() as i32).max(lo + 1);
        Some(Log { lo, hi })
    }

    /// Where `v` lies from 0 (left) to 1 (right); `None` for a value a log axis cannot show.
    pub fn frac(self, v: f64) -> Option<f64> {
        (v.is_finite() && v > 0.0)
            .then(|| (v.log10() - f64::from(self.lo)) / f64::from(self.hi - self.lo))
    }

    /// Each decade; with three decades or fewer, 2× and 5× each decade too.
    pub fn ticks(self) -> Vec<f64> {
        let fine = self.hi - self.lo <= 3;
        let mut out = Vec::new();
        for e in self.lo..=self.hi {
            let decade = 10f64.powi(e);
            out.push(decade);
            if fine && e < self.hi {
                out.extend([2.0 * decade, 5.0 * decade]);
            }
        }
        out
    }
}

/// The time axis every panel of a page shares, so small multiples line up: Unix seconds from
/// `from` to `to`, labelled in seconds from `zero` (the run's first scrape).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeAxis {
    pub from: f64,
    pub to: f64,
    pub zero: f64,
}

impl TimeAxis {
    /// The span of `times`, labelled from its start; `None` when they span no time.
    pub fn over(times: impl IntoIterator<Item = f64>) -> Option<TimeAxis> {
        let (from, to) = times
            .into_iter()
            .filter(|t| t.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| {
                (a.min(t), b.max(t))
            });
        (from.is_finite() && to > from).then_some(TimeAxis {
            from,
            to,
            zero: from,
        })
    }

    /// Where `t` lies from 0 (left) to 1 (right).
    pub fn frac(self, t: f64) -> f64 {
        (t - self.from) / (self.to - self.from)
    }

    /// Ticks at round numbers of seconds from `zero` (5 s, 10 s, 30 s, 1 min, 5 min …), about six.
    pub fn ticks(self) -> Vec<f64> {
        let span = self.to - self.from;
        let step = [
            1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0,
        ]
        .into_iter()
        .find(|s| span / s <= 8.0)
        .unwrap_or_else(|| (span / 6.0 / 3600.0).ceil() * 3600.0);
        let first = ((self.from - self.zero) / step).ceil() as i64;
        let last = ((self.to - self.zero) / step).floor() as i64;
        (first..=last)
            .map(|i| self.zero + i as f64 * step)
            .collect()
    }

    /// `+90s`, or `+12m` past ten minutes, `+3h` past three hours.
    pub fn label(self, t: f64) -> String {
        let s = t - self.zero;
        let span = self.to - self.from;
        if span > 3.0 * 3600.0 && (s / 3600.0).fract() == 0.0 {
            format!("{:+.0}h", s / 3600.0)
        } else if span > 600.0 && (s / 60.0).fract() == 0.0 {
            format!("{:+.0}m", s / 60.0)
        } else {
            format!("{s:+.0}s")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_axes_end_on_a_round_tick_above_the_data() {
        assert_eq!(
            Linear::of(16.0),
            Linear {
                step: 5.0,
                top: 20.0
            }
        );
        assert_eq!(
            Linear::of(2200.0),
            Linear {
                step: 1000.0,
                top: 3000.0
            }
        );
        assert_eq!(
            Linear::of(100.0),
            Linear {
                step: 50.0,
                top: 100.0
            }
        );
        let t: Vec<f64> = Linear::of(16.0).ticks().collect();
        assert_eq!(t, vec![0.0, 5.0, 10.0, 15.0, 20.0]);
    }

    #[test]
    fn a_flat_or_empty_series_still_gets_an_axis() {
        for max in [0.0, -3.0, f64::NAN, f64::INFINITY] {
            let l = Linear::of(max);
            assert!(l.top > 0.0 && l.step > 0.0, "{max}: {l:?}");
        }
    }

    #[test]
    fn a_fixed_percent_axis_widens_only_for_data_above_it() {
        assert_eq!(Linear::fixed(100.0, 31.8).top, 100.0);
        assert_eq!(Linear::fixed(100.0, 31.8).step, 25.0);
        assert_eq!(Linear::fixed(100.0, 130.0).top, 150.0);
    }

    #[test]
    fn log_axes_span_whole_decades_and_tick_each() {
        let l = Log::of([3.2, 4100.0, 0.0, -1.0, f64::NAN]).unwrap();
        assert_eq!(l, Log { lo: 0, hi: 4 });
        assert_eq!(l.ticks(), vec![1.0, 10.0, 100.0, 1000.0, 10000.0]);
        let fine = Log::of([12.0, 450.0]).unwrap();
        assert_eq!(
            fine.ticks(),
            vec![10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
        );
        assert_eq!(l.frac(100.0), Some(0.5));
        assert_eq!(l.frac(0.0), None, "0 has no place on a log axis");
        assert!(Log::of([0.0, -2.0]).is_none());
        assert_eq!(Log::of([5.0]).unwrap(), Log { lo: 0, hi: 1 });
    }

    #[test]
    fn time_ticks_are_round_seconds_from_the_start() {
        let t = TimeAxis::over([1000.5, 1100.5]).unwrap();
        let ticks = t.ticks();
        assert_eq!(ticks.first(), Some(&1000.5));
        assert_eq!(t.label(ticks[1]), "+15s");
        assert!(ticks.len() <= 9, "{ticks:?}");
        let ten_minutes = TimeAxis::over([0.0, 600.0]).unwrap();
        assert_eq!(ten_minutes.label(120.0), "+120s");
        let hour = TimeAxis::over([0.0, 3600.0]).unwrap();
        assert_eq!(hour.label(600.0), "+10m");
        assert!(TimeAxis::over([5.0, 5.0]).is_none());
    }
}
