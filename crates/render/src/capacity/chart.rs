//! The capacity answer's chart: output tok/s against load, the knee marked, stages coloured by
//! their verdict, goodput on its own axis. Inline SVG, every text escaped.

use super::{counted, tok};
use crate::html::esc;
use crate::num;
use llmscope_diagnosis::Bottleneck;
use llmscope_diagnosis::capacity::answer::{Answer, Axis, KneeAnswer, Stage};
use std::fmt::Write as _;

/// The chart's size and margins (px).
const W: f64 = 900.0;
const H: f64 = 380.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 70.0;
const TOP: f64 = 24.0;
const BOTTOM: f64 = 80.0;
/// The knee marker's colour: apart from every verdict's.
const KNEE_COLOUR: &str = "#343a40";

/// An axis from 0 to `top` in ticks of `step` (1, 2 or 5 × a power of ten).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Scale {
    step: f64,
    pub(super) top: f64,
}

impl Scale {
    /// An axis that holds `max` in about four ticks, each at least `min_step`.
    pub(super) fn of(max: f64, min_step: f64) -> Scale {
        let max = if max.is_finite() { max.max(0.0) } else { 0.0 };
        let raw = max.max(min_step) / 4.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag)
            .max(min_step);
        let top = (max / step).ceil().max(1.0) * step;
        Scale { step, top }
    }

    /// Every tick from 0 to the top.
    pub(super) fn ticks(self) -> impl Iterator<Item = f64> {
        let n = (self.top / self.step).round() as u32;
        (0..=n).map(move |i| f64::from(i) * self.step)
    }
}

/// The chart's scales: load across, output tok/s on the left, goodput req/s on the right.
struct Plot {
    load: Scale,
    tok: Scale,
    goodput: Option<Scale>,
}

impl Plot {
    fn of(a: &Answer, points: &[&Stage]) -> Plot {
        let knee = a.knee.as_ref().map_or(0, |k| k.load.value());
        let loads = points.iter().map(|s| s.load.value()).chain([knee]);
        let tok = points.iter().map(|s| s.output_tok_s).fold(0.0, f64::max);
        let goodput = points.iter().filter_map(|s| s.goodput_rps);
        let goodput = goodput.filter(|g| g.is_finite()).reduce(f64::max);
        Plot {
            load: Scale::of(f64::from(loads.max().unwrap_or(1)), 1.0),
            tok: Scale::of(tok, 1.0),
            goodput: goodput.map(|g| Scale::of(g, 0.1)),
        }
    }

    fn x(&self, load: f64) -> f64 {
        LEFT + load / self.load.top * (W - LEFT - RIGHT)
    }

    fn y(v: f64, scale: Scale) -> f64 {
        TOP + (1.0 - v / scale.top) * (H - TOP - BOTTOM)
    }
}

/// The stages the chart plots: those counted, with a finite throughput, by load.
fn plotted(a: &Answer) -> Vec<&Stage> {
    let counted = counted(a).into_values();
    counted.filter(|s| s.output_tok_s.is_finite()).collect()
}

/// Output tok/s against load, the knee marked, stages coloured by verdict; goodput on the
/// right-hand axis when measured.
pub(super) fn chart(a: &Answer, s: &mut String) {
    let points = plotted(a);
    if points.is_empty() {
        s.push_str("<p>No stage was counted: nothing to chart.</p>");
        return;
    }
    let p = Plot::of(a, &points);
    let _ = write!(
        s,
        "<svg width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"output tokens per second against load\">"
    );
    axes(&p, a.axis, s);
    throughput(&p, a.axis, &points, s);
    if let Some(g) = p.goodput {
        goodput(&p, g, &points, s);
    }
    if let Some(k) = &a.knee {
        let cause = a.cause.as_ref().map(|c| c.bottleneck.as_str());
        knee_marker(&p, k, cause, s);
    }
    legend(&p, &points, s);
    s.push_str("</svg>");
}

/// The axes, their ticks and labels: load below, tok/s left, goodput right.
fn axes(p: &Plot, axis: Axis, s: &mut String) {
    let (y0, x1) = (H - BOTTOM, W - RIGHT);
    let _ = write!(
        s,
        "<line x1=\"{LEFT}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#adb5bd\"/><line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{y0}\" stroke=\"#adb5bd\"/>"
    );
    for v in p.tok.ticks() {
        let y = Plot::y(v, p.tok);
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{x1}\" y2=\"{y:.1}\" stroke=\"#f1f3f5\"/><text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            y + 4.0,
            tok(v)
        );
    }
    load_ticks(p, s);
    let across = match axis {
        Axis::Concurrency => "concurrency (requests in flight)",
        Axis::Rate => "offered rate (req/s)",
    };
    axis_labels(s, across, "output tok/s");
    if let Some(g) = p.goodput {
        goodput_axis(g, s);
    }
}

/// The load ticks along the bottom.
fn load_ticks(p: &Plot, s: &mut String) {
    for v in p.load.ticks() {
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>",
            p.x(v),
            H - BOTTOM + 16.0,
            num(v)
        );
    }
}

/// The name of the load axis (below) and of the left axis (turned up its side).
fn axis_labels(s: &mut String, across: &str, left: &str) {
    let (mid_x, mid_y) = ((LEFT + W - RIGHT) / 2.0, (TOP + H - BOTTOM) / 2.0);
    let _ = write!(
        s,
        "<text x=\"{mid_x:.0}\" y=\"{:.0}\" text-anchor=\"middle\">{across}</text><text x=\"16\" y=\"{mid_y:.0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {mid_y:.0})\">{left}</text>",
        H - BOTTOM + 34.0
    );
}

/// The right-hand axis: goodput req/s, its ticks and its name.
fn goodput_axis(g: Scale, s: &mut String) {
    let (x, y0, mid_y) = (W - RIGHT, H - BOTTOM, (TOP + H - BOTTOM) / 2.0);
    let _ = write!(
        s,
        "<line x1=\"{x}\" y1=\"{TOP}\" x2=\"{x}\" y2=\"{y0}\" stroke=\"#adb5bd\"/>"
    );
    for v in g.ticks() {
        let _ = write!(
            s,
            "<text x=\"{:.0}\" y=\"{:.1}\" fill=\"#1c7ed6\">{}</text>",
            x + 6.0,
            Plot::y(v, g) + 4.0,
            num(v)
        );
    }
    let lx = W - 12.0;
    let _ = write!(
        s,
        "<text x=\"{lx}\" y=\"{mid_y:.0}\" text-anchor=\"middle\" fill=\"#1c7ed6\" transform=\"rotate(90 {lx} {mid_y:.0})\">goodput req/s</text>"
    );
}

/// The throughput line through the counted stages, one point each, coloured by its verdict.
fn throughput(p: &Plot, axis: Axis, points: &[&Stage], s: &mut String) {
    let xy = |st: &Stage| {
        let x = p.x(f64::from(st.load.value()));
        (x, Plot::y(st.output_tok_s, p.tok))
    };
    let line: Vec<String> = points
        .iter()
        .map(|st| xy(st))
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    let _ = write!(
        s,
        "<polyline class=\"series\" fill=\"none\" stroke=\"#495057\" stroke-width=\"1.8\" points=\"{}\"/>",
        line.join(" ")
    );
    for st in points {
        let (x, y) = xy(st);
        let (load, fill) = (st.load.value(), colour(st.verdict.bottleneck));
        let tip = esc(&tooltip(axis, st)).into_owned();
        let _ = write!(
            s,
            "<circle class=\"stage\" data-load=\"{load}\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"{fill}\"><title>{tip}</title></circle>"
        );
    }
}

/// A point's tooltip: its load, throughput, verdict (the server's words included) and run.
fn tooltip(axis: Axis, st: &Stage) -> String {
    let v = &st.verdict;
    format!(
        "{}: {} output tok/s, {} req/s; {} ({:.0}%): {}; run {}",
        axis.describe(st.load.value()),
        tok(st.output_tok_s),
        num(st.req_s),
        v.bottleneck.as_str(),
        v.confidence * 100.0,
        v.summary,
        st.run_id
    )
}

/// Goodput against load on the right-hand axis: a dashed line and a square per stage.
fn goodput(p: &Plot, g: Scale, points: &[&Stage], s: &mut String) {
    let xy: Vec<(u32, f64, f64)> = points
        .iter()
        .filter_map(|st| Some((st.load.value(), st.goodput_rps.filter(|g| g.is_finite())?)))
        .map(|(l, v)| (l, p.x(f64::from(l)), Plot::y(v, g)))
        .collect();
    let line: Vec<String> = xy
        .iter()
        .map(|(_, x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    let _ = write!(
        s,
        "<polyline fill=\"none\" stroke=\"#1c7ed6\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\" points=\"{}\"/>",
        line.join(" ")
    );
    for (load, x, y) in xy {
        let _ = write!(
            s,
            "<rect class=\"goodput\" data-load=\"{load}\" x=\"{:.1}\" y=\"{:.1}\" width=\"6\" height=\"6\" fill=\"#1c7ed6\"/>",
            x - 3.0,
            y - 3.0
        );
    }
}

/// A vertical line at the knee's load, named at its top with its cause (the verdict past it).
fn knee_marker(p: &Plot, k: &KneeAnswer, cause: Option<&str>, s: &mut String) {
    let (load, y0) = (k.load.value(), H - BOTTOM);
    let x = p.x(f64::from(load));
    let name = if k.at_least {
        format!("knee ≥ {load}")
    } else {
        format!("knee {load}")
    };
    let name = match cause {
        Some(c) => format!("{name}: {}", esc(c)),
        None => name,
    };
    let _ = write!(
        s,
        "<line class=\"knee\" x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{y0}\" stroke=\"{KNEE_COLOUR}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/><text x=\"{:.1}\" y=\"{:.0}\" fill=\"{KNEE_COLOUR}\">{name}</text>",
        x + 4.0,
        TOP - 8.0
    );
}

/// One entry per verdict plotted, then goodput and the knee, along the bottom.
fn legend(p: &Plot, points: &[&Stage], s: &mut String) {
    let (mut x, mut y) = (LEFT, H - BOTTOM + 56.0);
    for (name, fill) in legend_entries(p, points) {
        let width = 24.0 + 7.0 * name.chars().count() as f64;
        if x + width > W - RIGHT {
            (x, y) = (LEFT, y + 18.0);
        }
        let _ = write!(
            s,
            "<rect x=\"{x:.0}\" y=\"{:.0}\" width=\"10\" height=\"10\" fill=\"{fill}\"/><text x=\"{:.0}\" y=\"{y:.0}\">{name}</text>",
            y - 9.0,
            x + 14.0
        );
        x += width;
    }
}

/// The legend's entries (our own words) and colours: each verdict plotted, in the order first
/// seen, then goodput when measured, then the knee.
fn legend_entries(p: &Plot, points: &[&Stage]) -> Vec<(&'static str, &'static str)> {
    let mut entries: Vec<(&str, &str)> = Vec::new();
    for b in points.iter().map(|st| st.verdict.bottleneck) {
        if !entries.iter().any(|(name, _)| *name == b.as_str()) {
            entries.push((b.as_str(), colour(b)));
        }
    }
    if p.goodput.is_some() {
        entries.push(("goodput req/s (right axis)", "#1c7ed6"));
    }
    entries.push(("knee", KNEE_COLOUR));
    entries
}

/// A verdict's colour on the chart.
fn colour(b: Bottleneck) -> &'static str {
    match b {
        Bottleneck::FailingRequests => "#c92a2a",
        Bottleneck::AdmissionLimit => "#f76707",
        Bottleneck::GpuCompute => "#2b8a3e",
        Bottleneck::KvCacheCapacity => "#ae3ec9",
        Bottleneck::BatchLimit => "#e8590c",
        Bottleneck::Client => "#868e96",
        Bottleneck::LoadNotReached => "#74c0fc",
        Bottleneck::MemoryBandwidth => "#1864ab",
        Bottleneck::Host => "#5f3dc4",
        Bottleneck::TokenBudget => "#f08c00",
        Bottleneck::FrontEnd => "#0ca678",
        Bottleneck::RoutingImbalance => "#d6336c",
        Bottleneck::None => "#495057",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_hold_their_maximum_in_round_steps() {
        assert_eq!(
            Scale::of(32.0, 1.0),
            Scale {
                step: 10.0,
                top: 40.0
            }
        );
        assert_eq!(
            Scale::of(1_600.0, 1.0),
            Scale {
                step: 500.0,
                top: 2_000.0
            }
        );
        assert_eq!(
            Scale::of(0.0, 1.0),
            Scale {
                step: 1.0,
                top: 1.0
            }
        );
        assert_eq!(Scale::of(f64::NAN, 0.1).top, 0.1);
        assert_eq!(Scale::of(3.0, 1.0).ticks().count(), 4);
    }
}
