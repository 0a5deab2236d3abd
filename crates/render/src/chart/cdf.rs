//! Distributions as cumulative curves: the share of observations at or below each value, values
//! on a logarithmic axis (a latency's tail spans decades), shares from 0 to 100 % up.

use super::scale::Log;
use super::{
    AXIS_LABELS, Entry, LEFT, LEGEND_ROW, PALETTE, RIGHT, Swatch, TOP, WIDTH, close, esc, legend,
    legend_rows, no_data, open, segment, text,
};
use crate::num;
use std::fmt::Write as _;

/// The plot's height in px.
const HEIGHT: f64 = 220.0;

/// One distribution: `(value, share at or below it)` points, shares from 0 to 1, in value order.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// Several distributions in one unit over one log axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Cdf {
    pub title: String,
    pub unit: String,
    pub curves: Vec<Curve>,
    /// What was missing, said in place of the chart when no curve has a value to show.
    pub missing: String,
}

impl Cdf {
    /// The chart as a `<figure>`, or the sentence [`Cdf::missing`] when there is nothing to draw
    /// (a log axis has no place for 0 or negative values).
    pub fn write(&self, s: &mut String) {
        let Some(axis) = Log::of(self.values()) else {
            no_data(&self.title, &self.missing, s);
            return;
        };
        let entries = self.entries();
        let legend_y = TOP + HEIGHT + AXIS_LABELS + 8.0;
        open(
            &self.title,
            legend_y + legend_rows(&entries) as f64 * LEGEND_ROW,
            s,
        );
        self.axes(axis, s);
        for (i, c) in self.curves.iter().enumerate() {
            curve(c, PALETTE[i % PALETTE.len()], axis, s);
        }
        legend(&entries, legend_y, s);
        close(s);
    }

    fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.0))
    }

    fn entries(&self) -> Vec<Entry<'_>> {
        let drawn = |c: &Curve| c.points.iter().any(|p| Log::of([p.0]).is_some());
        self.curves
            .iter()
            .enumerate()
            .map(|(i, c)| Entry {
                label: &c.label,
                colour: PALETTE[i % PALETTE.len()],
                swatch: if drawn(c) {
                    Swatch::Line
                } else {
                    Swatch::Absent
                },
            })
            .collect()
    }

    /// The frame, shares up the left, the log ticks below with the unit.
    fn axes(&self, axis: Log, s: &mut String) {
        let width = WIDTH - LEFT - RIGHT;
        let _ = write!(
            s,
            "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{width:.0}\" height=\"{HEIGHT}\" fill=\"none\" stroke=\"#ced4da\"/>"
        );
        share_ticks(s);
        value_ticks(axis, &self.unit, s);
    }
}

/// Shares up the left, with faint lines across.
fn share_ticks(s: &mut String) {
    for share in [0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0] {
        let y = y(share);
        segment(s, (LEFT, y), (WIDTH - RIGHT, y), GRID);
        let label = format!("{}%", num(share * 100.0));
        text(s, (LEFT - 4.0, y + 4.0), " text-anchor=\"end\"", &label);
    }
}

/// The log axis's ticks along the bottom, with faint lines up.
fn value_ticks(axis: Log, unit: &str, s: &mut String) {
    let bottom = TOP + HEIGHT;
    for v in axis.ticks() {
        let x = x(axis, v);
        segment(s, (x, TOP), (x, bottom), GRID);
        let label = esc(&format!("{} {unit}", num(v))).into_owned();
        text(s, (x, bottom + 16.0), " text-anchor=\"middle\"", &label);
    }
}

/// Faint grid lines.
const GRID: &str = " stroke=\"#f1f3f5\"";

fn x(axis: Log, v: f64) -> f64 {
    LEFT + axis.frac(v).unwrap_or(0.0) * (WIDTH - LEFT - RIGHT)
}

fn y(share: f64) -> f64 {
    TOP + (1.0 - share.clamp(0.0, 1.0)) * HEIGHT
}

/// One curve through its known points, each point ringed: a curve read from a few percentiles
/// is only known there.
fn curve(c: &Curve, colour: &str, axis: Log, s: &mut String) {
    let px: Vec<(f64, f64)> = c
        .points
        .iter()
        .filter(|p| axis.frac(p.0).is_some() && p.1.is_finite())
        .map(|&(v, share)| (x(axis, v), y(share)))
        .collect();
    if px.is_empty() {
        return;
    }
    let mut d = String::new();
    for (i, (x, y)) in px.iter().enumerate() {
        let _ = write!(d, "{}{x:.1},{y:.1}", if i == 0 { 'M' } else { 'L' });
    }
    let label = esc(&c.label);
    let _ = write!(
        s,
        "<path class=\"series\" d=\"{d}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.8\"><title>{label}</title></path>"
    );
    for (x, y) in px {
        let _ = write!(
            s,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.5\" fill=\"{colour}\"/>"
        );
    }
}
