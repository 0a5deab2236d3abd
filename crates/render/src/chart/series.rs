//! Drawing a [`Panel`]: the phases behind, then axes and ticks, rules, marks, the lines with
//! their holes, the evidence dots, and the legend below. `Frame` holds the scales.

use super::scale::{Linear, TimeAxis};
use super::{
    AXIS_LABELS, Band, Entry, GAP_FACTOR, LEFT, LEGEND_ROW, Line, Mark, Panel, RIGHT, SMALL_GREY,
    Side, Swatch, TOP, WIDTH, close, esc, has_data, legend, legend_rows, open, segment, text,
    with_unit,
};

/// Unbroken runs of samples, in time order.
pub(super) type Runs = Vec<Vec<(f64, f64)>>;
use std::fmt::Write as _;

/// Where things go: time across, each side's values up.
pub(super) struct Frame {
    time: TimeAxis,
    height: f64,
    left: Linear,
    right: Option<Linear>,
}

impl Frame {
    fn of(p: &Panel) -> Frame {
        let scale = |side: Side, top: Option<f64>| {
            let max = side_values(p, side).fold(f64::NEG_INFINITY, f64::max);
            top.map_or_else(|| Linear::of(max), |t| Linear::fixed(t, max))
        };
        Frame {
            time: p.time,
            height: p.height,
            left: scale(Side::Left, p.left.top),
            right: p.right.as_ref().map(|a| scale(Side::Right, a.top)),
        }
    }

    pub(super) fn x(&self, t: f64) -> f64 {
        LEFT + self.time.frac(t) * (WIDTH - LEFT - RIGHT)
    }

    /// `v` on `side`'s axis, held inside the plot.
    fn y(&self, v: f64, side: Side) -> f64 {
        let scale = match side {
            Side::Right => self.right.unwrap_or(self.left),
            Side::Left => self.left,
        };
        TOP + (1.0 - scale.frac(v).clamp(0.0, 1.0)) * self.height
    }

    fn bottom(&self) -> f64 {
        TOP + self.height
    }
}

/// Every finite value drawn against `side`: the lines', the rules' and the dots'.
fn side_values(p: &Panel, side: Side) -> impl Iterator<Item = f64> + '_ {
    let lines = p.lines.iter().filter(move |l| l.side == side);
    let rules = p.rules.iter().filter(move |r| r.side == side);
    let dots = p.dots.iter().filter(move |d| d.side == side);
    lines
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .chain(rules.map(|r| r.value))
        .chain(dots.map(|d| d.value))
        .filter(|v| v.is_finite())
}

/// The whole panel.
pub(super) fn write(p: &Panel, s: &mut String) {
    let f = Frame::of(p);
    let entries = entries(p);
    let legend_y = f.bottom() + AXIS_LABELS + 8.0;
    let height = legend_y + legend_rows(&entries) as f64 * LEGEND_ROW;
    open(&p.title, height, s);
    bands(p, &f, s);
    axes(p, &f, s);
    rules(p, &f, s);
    marks(p, &f, s);
    for line in &p.lines {
        draw_line(line, &f, s);
    }
    dots(p, &f, s);
    legend(&entries, legend_y, s);
    close(s);
}

/// The legend: each line (or "no data"), each rule, and the evidence dots if any.
fn entries(p: &Panel) -> Vec<Entry<'_>> {
    let lines = p.lines.iter().map(|l| Entry {
        label: &l.label,
        colour: l.colour,
        swatch: if has_data(&l.points) {
            Swatch::Line
        } else {
            Swatch::Absent
        },
    });
    let rules = p.rules.iter().map(|r| Entry {
        label: &r.label,
        colour: r.colour,
        swatch: Swatch::Dashed,
    });
    let dots = p.dots.first().map(|d| Entry {
        label: "evidence",
        colour: d.colour,
        swatch: Swatch::Dot,
    });
    lines.chain(rules).chain(dots).collect()
}

/// The shaded phases and their names along the top.
fn bands(p: &Panel, f: &Frame, s: &mut String) {
    for b in &p.bands {
        let (x0, x1) = (f.x(b.from).max(LEFT), f.x(b.to).min(WIDTH - RIGHT));
        if x1 > x0 {
            band(b, (x0, x1), f.height, s);
        }
    }
}

/// One phase from `x0` to `x1`, named at its top left.
fn band(b: &Band, (x0, x1): (f64, f64), height: f64, s: &mut String) {
    let (width, fill) = (x1 - x0, b.fill);
    let _ = write!(
        s,
        "<rect x=\"{x0:.1}\" y=\"{TOP}\" width=\"{width:.1}\" height=\"{height:.0}\" fill=\"{fill}\"/>"
    );
    text(s, (x0 + 2.0, TOP - 3.0), SMALL_GREY, &esc(&b.label));
}

/// The frame, value ticks on each side with the units, and time ticks below.
fn axes(p: &Panel, f: &Frame, s: &mut String) {
    let (width, height) = (WIDTH - RIGHT - LEFT, f.height);
    let _ = write!(
        s,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{width:.0}\" height=\"{height:.0}\" fill=\"none\" stroke=\"#ced4da\"/>"
    );
    value_ticks(f, f.left, Side::Left, &p.left.unit, s);
    if let (Some(scale), Some(axis)) = (f.right, &p.right) {
        value_ticks(f, scale, Side::Right, &axis.unit, s);
    }
    time_ticks(f, s);
}

/// Round times along the bottom, in seconds (or minutes, hours) from the run's start.
fn time_ticks(f: &Frame, s: &mut String) {
    let y = f.bottom();
    for t in f.time.ticks() {
        let x = f.x(t);
        segment(s, (x, y), (x, y + 4.0), " stroke=\"#adb5bd\"");
        text(
            s,
            (x, y + 16.0),
            " text-anchor=\"middle\"",
            &f.time.label(t),
        );
    }
}

/// Where a side's tick labels go and how they are anchored.
fn tick_place(side: Side) -> (f64, &'static str) {
    match side {
        Side::Left => (LEFT - 4.0, " text-anchor=\"end\""),
        Side::Right => (WIDTH - RIGHT + 4.0, " text-anchor=\"start\""),
    }
}

/// Ticks up one side, each value with `unit`, and faint grid lines across for the left side.
fn value_ticks(f: &Frame, scale: Linear, side: Side, unit: &str, s: &mut String) {
    let (x, anchor) = tick_place(side);
    for v in scale.ticks() {
        let y = TOP + (1.0 - scale.frac(v)) * f.height;
        if side == Side::Left {
            segment(s, (LEFT, y), (WIDTH - RIGHT, y), " stroke=\"#f1f3f5\"");
        }
        text(s, (x, y + 4.0), anchor, &esc(&with_unit(v, unit)));
    }
}

/// Thresholds and caps: dashed across the plot, named at the right end.
fn rules(p: &Panel, f: &Frame, s: &mut String) {
    for r in p.rules.iter().filter(|r| r.value.is_finite()) {
        let (y, colour) = (f.y(r.value, r.side), r.colour);
        let stroke = format!(" class=\"rule\" stroke=\"{colour}\" stroke-dasharray=\"6 4\"");
        segment(s, (LEFT, y), (WIDTH - RIGHT, y), &stroke);
        let attrs = format!(" text-anchor=\"end\" fill=\"{colour}\" font-size=\"11\"");
        text(s, (WIDTH - RIGHT - 4.0, y - 4.0), &attrs, &esc(&r.label));
    }
}

/// Detected edges: a dotted vertical line each, named at the top.
fn marks(p: &Panel, f: &Frame, s: &mut String) {
    let within = |m: &&Mark| m.t >= f.time.from && m.t <= f.time.to;
    for m in p.marks.iter().filter(within) {
        let (x, colour) = (f.x(m.t), m.colour);
        let stroke = format!(" class=\"mark\" stroke=\"{colour}\" stroke-dasharray=\"2 3\"");
        segment(s, (x, TOP), (x, f.bottom()), &stroke);
        let attrs = format!(" fill=\"{colour}\" font-size=\"10\"");
        text(s, (x + 3.0, TOP + 22.0), &attrs, &esc(&m.label));
    }
}

/// Evidence values: a ringed dot at the time measured, with its value (labels that would
/// collide moved apart by [`label_ys`]).
fn dots(p: &Panel, f: &Frame, s: &mut String) {
    let shown: Vec<_> = p
        .dots
        .iter()
        .filter(|d| d.value.is_finite() && d.t.is_finite())
        .map(|d| (d, f.x(d.t), f.y(d.value, d.side), esc(&d.label)))
        .collect();
    let anchors: Vec<_> = shown
        .iter()
        .map(|(d, x, y, _)| (*x, *y, d.label.chars().count()))
        .collect();
    for ((d, x, y, label), label_y) in shown.iter().zip(label_ys(&anchors)) {
        let _ = write!(
            s,
            "<circle class=\"evidence\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"#fff\" stroke=\"{}\" stroke-width=\"2.5\"><title>{label}</title></circle>",
            d.colour
        );
        text(s, (x + 8.0, label_y), " font-size=\"11\"", label);
    }
}

/// Height of a dot's label line, and the average width of one of its characters, px.
const DOT_LABEL_H: f64 = 13.0;
const DOT_LABEL_CHAR: f64 = 6.2;

/// Where each dot's label goes (its baseline), given each dot's `(x, y, label characters)`:
/// above and right of its dot, or where that would overlap a label placed before it, the first
/// free of just below, a row higher, a row lower, … (the last tried when none is free).
pub(super) fn label_ys(anchors: &[(f64, f64, usize)]) -> Vec<f64> {
    const OFFSETS: [f64; 6] = [-7.0, 17.0, -21.0, 31.0, -35.0, 45.0];
    let mut placed: Vec<(f64, f64, f64)> = Vec::with_capacity(anchors.len());
    for &(x, y, chars) in anchors {
        let (left, right) = (x + 8.0, x + 8.0 + DOT_LABEL_CHAR * chars as f64);
        let free = |b: f64| {
            placed
                .iter()
                .all(|&(l, r, pb)| right <= l || left >= r || (b - pb).abs() >= DOT_LABEL_H)
        };
        let b = OFFSETS
            .iter()
            .map(|o| y + o)
            .find(|&b| free(b))
            .unwrap_or(y + OFFSETS[OFFSETS.len() - 1]);
        placed.push((left, right, b));
    }
    placed.into_iter().map(|p| p.2).collect()
}

/// One line: a path broken at its holes, each wide hole labelled "no data".
fn draw_line(line: &Line, f: &Frame, s: &mut String) {
    let (runs, holes) = split(&line.points);
    let (d, colour, label) = (path(line, f, &runs), line.colour, esc(&line.label));
    let _ = write!(
        s,
        "<path class=\"series\" d=\"{d}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.8\" stroke-linejoin=\"round\" stroke-linecap=\"round\"><title>{label}</title></path>"
    );
    for (a, b) in holes {
        hole(line, f, (a, b), s);
    }
}

/// The `d` of a line's runs, each thinned to what the pixels can show.
fn path(line: &Line, f: &Frame, runs: &[Vec<(f64, f64)>]) -> String {
    let mut d = String::with_capacity(runs.iter().map(Vec::len).sum::<usize>() * 12);
    for run in runs {
        let px = run.iter().map(|&(t, v)| (f.x(t), f.y(v, line.side)));
        path_run(&thin(px.collect()), &mut d);
    }
    d
}

/// A hole in `line` from `a` to `b`, labelled when wide enough to read.
fn hole(line: &Line, f: &Frame, (a, b): (f64, f64), s: &mut String) {
    let (x0, x1) = (f.x(a), f.x(b));
    if x1 - x0 >= 30.0 {
        let (from, to, label) = (f.time.label(a), f.time.label(b), esc(&line.label));
        let content = format!("no data<title>{label}: no samples from {from} to {to}</title>");
        let at = ((x0 + x1) / 2.0, f.bottom() - 4.0);
        text(
            s,
            at,
            " class=\"gap\" text-anchor=\"middle\" fill=\"#868e96\" font-size=\"10\"",
            &content,
        );
    }
}

/// `M x,y L x,y …` of one unbroken run; a lone point is a dot (a zero-length round-capped stroke).
fn path_run(px: &[(f64, f64)], d: &mut String) {
    for (i, (x, y)) in px.iter().enumerate() {
        let cmd = if i == 0 { 'M' } else { 'L' };
        let _ = write!(d, "{cmd}{x:.1},{y:.1}");
    }
    if px.len() == 1 {
        d.push_str("h0.1");
    }
}

/// At most two points per pixel column, the lowest and the highest in time order, so a day of
/// one-second samples draws the same envelope in a page that stays small.
fn thin(px: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if px.len() <= 2 * (WIDTH - LEFT - RIGHT) as usize {
        return px;
    }
    let mut out: Vec<(f64, f64)> = Vec::new();
    for column in px.chunk_by(|a, b| a.0.floor() == b.0.floor()) {
        // y grows downwards: the lowest value has the largest y.
        let low = column
            .iter()
            .copied()
            .fold(column[0], |a, b| if b.1 > a.1 { b } else { a });
        let high = column
            .iter()
            .copied()
            .fold(column[0], |a, b| if b.1 < a.1 { b } else { a });
        let (first, second) = if low.0 <= high.0 {
            (low, high)
        } else {
            (high, low)
        };
        out.push(first);
        if second != first {
            out.push(second);
        }
    }
    out
}

/// The runs of finite points with no hole inside, and the holes between them (from the last
/// sample before to the first after). A hole is a `NaN` sample or a step longer than
/// [`GAP_FACTOR`] × the line's usual interval.
pub(super) fn split(points: &[(f64, f64)]) -> (Runs, Vec<(f64, f64)>) {
    let gap = usual_step(points).map_or(f64::INFINITY, |s| GAP_FACTOR * s);
    let (mut runs, mut holes) = (Vec::new(), Vec::new());
    let mut run: Vec<(f64, f64)> = Vec::new();
    let mut last: Option<f64> = None;
    for &(t, v) in points.iter().filter(|p| p.0.is_finite()) {
        let broken = !v.is_finite() || last.is_some_and(|l| t - l > gap);
        if broken && !run.is_empty() {
            runs.push(std::mem::take(&mut run));
        }
        if v.is_finite() {
            if let Some(l) = last.filter(|_| run.is_empty() && !runs.is_empty()) {
                holes.push((l, t));
            }
            run.push((t, v));
            last = Some(t);
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    (runs, holes)
}

/// The median step between consecutive samples; `None` with fewer than two.
pub(super) fn usual_step(points: &[(f64, f64)]) -> Option<f64> {
    let mut steps: Vec<f64> = points
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|d| d.is_finite() && *d > 0.0)
        .collect();
    steps.sort_by(f64::total_cmp);
    steps.get(steps.len() / 2).copied()
}
