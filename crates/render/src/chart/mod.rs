//! Small inline-SVG charts every report draws with: what a chart shows is data ([`Panel`],
//! [`Cdf`]); [`Panel::write`] and [`Cdf::write`] turn it into one `<figure>` of markup.
//!
//! - [`Panel`]: a time-series panel — several [`Line`]s on a left and an optional right axis,
//!   each with its unit; [`Rule`]s (thresholds, caps) across it; the run's phases shaded
//!   ([`Band`]); vertical [`Mark`]s (detected edges); [`Dot`]s (evidence values). Every panel of
//!   a page takes the same [`TimeAxis`], so small multiples line up.
//! - [`Cdf`]: distributions as cumulative curves over a logarithmic axis (latencies).
//! - [`sparkline`]: one line of Unicode blocks for a terminal, on the same time axis.
//!
//! Missing data is never drawn as 0: a line breaks where its samples stop for longer than
//! [`GAP_FACTOR`] × its usual interval (or where a sample is `NaN`), and the hole is labelled
//! "no data"; a line with no sample at all is named "no data" in the legend, and a panel with no
//! data at all becomes a sentence saying what was missing, not empty axes. Output is
//! deterministic: the same data gives the same bytes. Every text goes through [`esc`].

mod cdf;
pub mod scale;
mod series;
mod spark;

pub use cdf::{Cdf, Curve};
pub use scale::TimeAxis;
pub use spark::sparkline;

use llmscope_core::safe::html as esc;
use std::fmt::Write as _;

/// A chart's width in px; panels keep it, so their time axes line up on the page.
pub const WIDTH: f64 = 1000.0;
/// Room for the axes' tick labels, left and right of the plot.
const LEFT: f64 = 64.0;
const RIGHT: f64 = 64.0;
/// Room above the plot for phase names, below it for time labels.
const TOP: f64 = 14.0;
const AXIS_LABELS: f64 = 22.0;
/// One row of the legend.
const LEGEND_ROW: f64 = 16.0;

/// A sample interval this many times the usual one is a hole in the line, not a slope.
pub const GAP_FACTOR: f64 = 2.5;

/// Colours for lines, in the order a panel takes them.
pub const PALETTE: [&str; 8] = [
    "#1c7ed6", "#e8590c", "#2b8a3e", "#ae3ec9", "#c92a2a", "#0c8599", "#5f3dc4", "#868e96",
];

/// Which value axis a line, rule or dot is read against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
}

/// A value axis: its unit, and a fixed top (100 for percent) or one found from the data.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub unit: String,
    pub top: Option<f64>,
}

impl Axis {
    pub fn new(unit: impl Into<String>) -> Axis {
        Axis {
            unit: unit.into(),
            top: None,
        }
    }

    /// Percent, 0 to 100.
    pub fn percent() -> Axis {
        Axis {
            unit: "%".to_owned(),
            top: Some(100.0),
        }
    }
}

/// One series: `(unix seconds, value)` points in time order, drawn in `colour`.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub label: String,
    pub colour: &'static str,
    pub side: Side,
    pub points: Vec<(f64, f64)>,
}

/// A horizontal line at a value: a threshold or a cap.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub label: String,
    pub value: f64,
    pub side: Side,
    pub colour: &'static str,
}

/// A vertical line at a moment: a detected edge.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub t: f64,
    pub label: String,
    pub colour: &'static str,
}

/// One value marked on the chart: a piece of evidence at the time it was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Dot {
    pub t: f64,
    pub value: f64,
    pub side: Side,
    pub label: String,
    pub colour: &'static str,
}

/// A shaded span of time: a phase of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    pub from: f64,
    pub to: f64,
    pub label: String,
    pub fill: &'static str,
}

/// A time-series panel (see the module's documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub title: String,
    pub time: TimeAxis,
    /// The plot's height in px (the figure adds axis labels and the legend).
    pub height: f64,
    pub left: Axis,
    pub right: Option<Axis>,
    pub lines: Vec<Line>,
    pub rules: Vec<Rule>,
    pub marks: Vec<Mark>,
    pub dots: Vec<Dot>,
    pub bands: Vec<Band>,
    /// What was missing, said in place of the chart when no line has a sample.
    pub missing: String,
}

impl Panel {
    /// An empty panel of `height` px on `time`, values in `left`'s unit.
    pub fn new(title: impl Into<String>, time: TimeAxis, height: f64, left: Axis) -> Panel {
        Panel {
            title: title.into(),
            time,
            height,
            left,
            right: None,
            lines: Vec::new(),
            rules: Vec::new(),
            marks: Vec::new(),
            dots: Vec::new(),
            bands: Vec::new(),
            missing: "no data".to_owned(),
        }
    }

    /// Adds a line in the next colour of [`PALETTE`].
    pub fn line(&mut self, label: impl Into<String>, side: Side, points: Vec<(f64, f64)>) {
        let colour = PALETTE[self.lines.len() % PALETTE.len()];
        self.lines.push(Line {
            label: label.into(),
            colour,
            side,
            points,
        });
    }

    /// Whether any line has a finite sample.
    pub fn has_data(&self) -> bool {
        self.lines.iter().any(|l| has_data(&l.points))
    }

    /// The panel as a `<figure>`: an SVG chart, or the sentence [`Panel::missing`] when no line
    /// has data.
    pub fn write(&self, s: &mut String) {
        if self.has_data() {
            series::write(self, s);
        } else {
            no_data(&self.title, &self.missing, s);
        }
    }
}

/// Whether `points` has a finite value.
fn has_data(points: &[(f64, f64)]) -> bool {
    points.iter().any(|p| p.0.is_finite() && p.1.is_finite())
}

/// A chart that could not be drawn: its title and what was missing, said in words.
pub fn no_data(title: &str, missing: &str, s: &mut String) {
    let _ = write!(
        s,
        "<figure class=\"nodata\"><figcaption>{}</figcaption><p>no data: {}</p></figure>",
        esc(title),
        esc(missing)
    );
}

/// `16 req`, `85%`, `0.5`: a value and its unit as axes and labels show them.
pub fn with_unit(v: f64, unit: &str) -> String {
    match unit {
        "" => crate::num(v),
        "%" => format!("{}%", crate::num(v)),
        unit => format!("{} {unit}", crate::num(v)),
    }
}

/// Small grey text: phase names.
const SMALL_GREY: &str = " fill=\"#868e96\" font-size=\"10\"";

/// A `<text>` at `at` with `attrs`; `content` is markup, escaped by the caller.
fn text(s: &mut String, (x, y): (f64, f64), attrs: &str, content: &str) {
    let _ = write!(s, "<text x=\"{x:.1}\" y=\"{y:.1}\"{attrs}>{content}</text>");
}

/// A `<line>` from `a` to `b` with `attrs`.
fn segment(s: &mut String, (x1, y1): (f64, f64), (x2, y2): (f64, f64), attrs: &str) {
    let _ = write!(
        s,
        "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\"{attrs}/>"
    );
}

/// Opens a figure with its caption and an SVG of `height` px labelled `title`.
fn open(title: &str, height: f64, s: &mut String) {
    let title = esc(title);
    let _ = write!(
        s,
        "<figure class=\"chart\"><figcaption>{title}</figcaption><svg class=\"chart\" width=\"{WIDTH}\" height=\"{height:.0}\" viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" aria-label=\"{title}\">"
    );
}

fn close(s: &mut String) {
    s.push_str("</svg></figure>");
}

/// One legend entry: what it names, its colour, and how its swatch looks.
struct Entry<'a> {
    label: &'a str,
    colour: &'a str,
    swatch: Swatch,
}

#[derive(Clone, Copy, PartialEq)]
enum Swatch {
    Line,
    Dashed,
    Dot,
    Absent,
}

/// The legend's rows: entries laid left to right from `x0`, a new row where one would pass the
/// right edge. Returns how many rows there are.
fn legend_rows(entries: &[Entry]) -> usize {
    legend_layout(entries).last().map_or(0, |&(_, row)| row + 1)
}

/// Each entry's x and row.
fn legend_layout(entries: &[Entry]) -> Vec<(f64, usize)> {
    let (mut x, mut row) = (LEFT, 0);
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let width = 30.0 + 6.6 * e.label.chars().count() as f64;
        if x > LEFT && x + width > WIDTH - RIGHT {
            (x, row) = (LEFT, row + 1);
        }
        out.push((x, row));
        x += width;
    }
    out
}

/// The legend, its first row at `y`.
fn legend(entries: &[Entry], y: f64, s: &mut String) {
    for (e, (x, row)) in entries.iter().zip(legend_layout(entries)) {
        let y = y + row as f64 * LEGEND_ROW;
        swatch(e, x, y, s);
        let (label, fill) = match e.swatch {
            Swatch::Absent => (format!("{}: no data", esc(e.label)), "#868e96"),
            _ => (esc(e.label).into_owned(), "#1b1f24"),
        };
        let _ = write!(
            s,
            "<text x=\"{:.0}\" y=\"{:.0}\" fill=\"{fill}\">{label}</text>",
            x + 20.0,
            y + 4.0
        );
    }
}

/// A legend entry's swatch at `(x, y)`.
fn swatch(e: &Entry, x: f64, y: f64, s: &mut String) {
    let c = e.colour;
    let _ = match e.swatch {
        Swatch::Line => write!(
            s,
            "<rect x=\"{x:.0}\" y=\"{:.0}\" width=\"14\" height=\"3\" fill=\"{c}\"/>",
            y - 1.0
        ),
        Swatch::Dashed | Swatch::Absent => write!(
            s,
            "<line x1=\"{x:.0}\" y1=\"{y:.0}\" x2=\"{:.0}\" y2=\"{y:.0}\" stroke=\"{c}\" stroke-dasharray=\"4 3\"/>",
            x + 14.0
        ),
        Swatch::Dot => write!(
            s,
            "<circle cx=\"{:.0}\" cy=\"{y:.0}\" r=\"4\" fill=\"#fff\" stroke=\"{c}\" stroke-width=\"2\"/>",
            x + 7.0
        ),
    };
}

#[cfg(test)]
mod tests;
