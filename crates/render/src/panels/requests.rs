//! Charts over time from the client's per-request records ([`crate::RequestTiming`], read from
//! the run store): TTFT p95, completed requests per second and failures per second by kind, each
//! in bins of the page's time axis (about 60 of them, at least 1 s wide).
//!
//! Absent is never drawn as 0: a bin no request finished in has no TTFT p95 at all, and the
//! counts are drawn only from the first request sent to the last one ended — inside that span a
//! bin with nothing finished did measure 0, outside it nothing was measured.

use super::Page;
use crate::RequestTiming;
use crate::chart::{Axis, Panel, Side};
use std::collections::BTreeMap;

/// The plot height (px) of each panel.
const HEIGHT: f64 = 150.0;
/// About this many bins across the page.
const BINS: f64 = 60.0;

/// The bins: their width (s), and the index of the bin `t` falls in.
#[derive(Debug, Clone, Copy)]
struct Bins {
    from: f64,
    width: f64,
}

impl Bins {
    fn of(page: &Page) -> Bins {
        let span = page.time.to - page.time.from;
        Bins {
            from: page.time.from,
            width: (span / BINS).round().max(1.0),
        }
    }

    fn index(self, t: f64) -> i64 {
        ((t - self.from) / self.width).floor() as i64
    }

    fn centre(self, i: i64) -> f64 {
        self.from + (i as f64 + 0.5) * self.width
    }
}

/// TTFT p95 (ms) of the requests whose first token came in each bin; bins without one absent.
pub(crate) fn ttft_p95(page: &Page, requests: &[RequestTiming]) -> Panel {
    let bins = Bins::of(page);
    let mut by_bin: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
    for r in requests.iter().filter(|r| r.error.is_none()) {
        if let Some(ttft) = r.ttft_s.filter(|t| t.is_finite()) {
            let ms = ttft * 1e3;
            by_bin
                .entry(bins.index(r.sent + ttft))
                .or_default()
                .push(ms);
        }
    }
    let points = by_bin
        .into_iter()
        .map(|(i, mut v)| (bins.centre(i), p95(&mut v)))
        .collect();
    let title = format!(
        "TTFT p95 over time (the client's requests, {} s bins)",
        bins.width
    );
    let mut p = page.panel(&title, HEIGHT, Axis::new("ms"));
    p.line("TTFT p95", Side::Left, points);
    p.missing = "no request got a first token".into();
    p
}

/// The nearest-rank 95th percentile of `v` (not empty).
fn p95(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = (0.95 * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// Completed requests per second by the client's count, per bin of their end.
pub(crate) fn completed(page: &Page, requests: &[RequestTiming]) -> Vec<(f64, f64)> {
    let ok = requests.iter().filter(|r| r.error.is_none());
    per_second(Bins::of(page), requests, ok)
}

/// Failures per second, one line per error kind, per bin of their end.
pub(crate) fn failures(page: &Page, requests: &[RequestTiming]) -> Panel {
    let bins = Bins::of(page);
    let mut p = page.panel("Failures over time, by kind", HEIGHT, Axis::new("req/s"));
    let mut kinds: Vec<&str> = requests.iter().filter_map(|r| r.error.as_deref()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    for kind in kinds {
        let of_kind = requests.iter().filter(|r| r.error.as_deref() == Some(kind));
        p.line(kind, Side::Left, per_second(bins, requests, of_kind));
    }
    p.missing = "no request failed".into();
    p
}

/// How many of `counted` ended in each bin, per second, over the bins from the first request
/// sent to the last one ended (every request in `all`); 0 inside that span is measured.
fn per_second<'a>(
    bins: Bins,
    all: &[RequestTiming],
    counted: impl Iterator<Item = &'a RequestTiming>,
) -> Vec<(f64, f64)> {
    let first = all.iter().map(|r| r.sent).fold(f64::INFINITY, f64::min);
    let last = all.iter().map(|r| r.end).fold(f64::NEG_INFINITY, f64::max);
    if !(first.is_finite() && last.is_finite()) {
        return Vec::new();
    }
    let mut counts: BTreeMap<i64, u32> = (bins.index(first)..=bins.index(last))
        .map(|i| (i, 0))
        .collect();
    for r in counted {
        *counts.entry(bins.index(r.end)).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(i, n)| (bins.centre(i), f64::from(n) / bins.width))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p95_is_the_nearest_rank() {
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(p95(&mut v), 95.0);
        assert_eq!(p95(&mut [7.0]), 7.0);
    }

    #[test]
    fn counts_are_drawn_only_over_the_span_requests_were_in_flight() {
        let bins = Bins {
            from: 0.0,
            width: 10.0,
        };
        let r = |sent: f64, end: f64| RequestTiming {
            sent,
            end,
            ttft_s: Some(0.1),
            error: None,
        };
        let all = [r(20.0, 25.0), r(21.0, 48.0)];
        let got = per_second(bins, &all, all.iter());
        assert_eq!(got, vec![(25.0, 0.1), (35.0, 0.0), (45.0, 0.1)]);
        assert!(per_second(bins, &[], [].iter()).is_empty());
    }
}
