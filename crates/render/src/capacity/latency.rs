//! The capacity answer's second chart: latency against throughput. Each counted stage is a point
//! at its output tok/s, its TTFT p95 and its end-to-end p95 on a log axis (the two lie decades
//! apart), joined in load order, so the knee shows as the point past which throughput stops
//! growing while latency climbs; the knee's stage is ringed, and the SLO's limits are drawn as
//! lines when `--slo` gave them. Inline SVG; every text escaped.

use super::chart::Scale;
use super::{counted, tok};
use crate::chart::scale::Log;
use crate::html::esc;
use crate::num;
use llmscope_diagnosis::capacity::answer::{Answer, Percentiles, Stage};
use std::fmt::Write as _;

const W: f64 = 900.0;
const H: f64 = 320.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 60.0;

/// The two latencies drawn: name, colour, which percentiles, the SLO key that limits it.
type Latency = (
    &'static str,
    &'static str,
    fn(&Stage) -> &Percentiles,
    &'static str,
);
const LATENCIES: [Latency; 2] = [
    ("TTFT p95", "#e8590c", |s| &s.ttft_ms, "ttft"),
    ("E2E p95", "#5f3dc4", |s| &s.e2e_ms, "e2e"),
];

/// The chart, or a sentence when no counted stage has a latency.
pub(super) fn chart(a: &Answer, s: &mut String) {
    let stages: Vec<&Stage> = counted(a).into_values().collect();
    let slo = slo_limits(a.slo.as_deref().unwrap_or(""));
    let values = stages
        .iter()
        .flat_map(|st| LATENCIES.map(|l| l.2(st).p95))
        .flatten();
    let Some(y) = Log::of(values.chain(slo.iter().map(|l| l.1))) else {
        s.push_str("<p>No counted stage measured a latency: nothing to chart.</p>");
        return;
    };
    let top = stages.iter().map(|st| st.output_tok_s).fold(0.0, f64::max);
    let plot = Plot {
        x: Scale::of(top, 1.0),
        y,
    };
    let _ = write!(
        s,
        "<svg width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"latency against output tokens per second\">"
    );
    plot.axes(s);
    for (key, ms) in &slo {
        plot.slo_line(key, *ms, s);
    }
    for l in LATENCIES {
        plot.series(l, &stages, a.knee.as_ref().map(|k| k.load.value()), s);
    }
    s.push_str("</svg>");
}

/// Throughput across (linear), latency up (log).
struct Plot {
    x: Scale,
    y: Log,
}

impl Plot {
    fn x(&self, tok_s: f64) -> f64 {
        LEFT + tok_s / self.x.top * (W - LEFT - RIGHT)
    }

    fn y(&self, ms: f64) -> Option<f64> {
        Some(TOP + (1.0 - self.y.frac(ms)?) * (H - TOP - BOTTOM))
    }

    fn axes(&self, s: &mut String) {
        let (y0, x1) = (H - BOTTOM, W - RIGHT);
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#adb5bd\"/><line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{y0}\" stroke=\"#adb5bd\"/>"
        );
        for v in self.y.ticks() {
            let Some(y) = self.y(v) else { continue };
            let _ = write!(
                s,
                "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{x1}\" y2=\"{y:.1}\" stroke=\"#f1f3f5\"/><text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                LEFT - 6.0,
                y + 4.0,
                num(v)
            );
        }
        for v in self.x.ticks() {
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>",
                self.x(v),
                y0 + 16.0,
                tok(v)
            );
        }
        let mid_y = (TOP + y0) / 2.0;
        let _ = write!(
            s,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">output tok/s</text><text x=\"16\" y=\"{mid_y:.0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {mid_y:.0})\">ms (log)</text>",
            (LEFT + x1) / 2.0,
            y0 + 34.0
        );
    }

    /// A dashed line at an SLO's limit, named at its right end.
    fn slo_line(&self, key: &str, ms: f64, s: &mut String) {
        let Some(y) = self.y(ms) else { return };
        let x1 = W - RIGHT;
        let _ = write!(
            s,
            "<line class=\"slo\" x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{x1}\" y2=\"{y:.1}\" stroke=\"#c92a2a\" stroke-dasharray=\"6 3\"/><text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#c92a2a\">SLO {} ≤ {} ms</text>",
            x1 - 4.0,
            y - 4.0,
            esc(key),
            num(ms)
        );
    }

    /// One latency through the stages in load order, a dot per stage (ringed at the knee), and
    /// its name beside its last point.
    fn series(&self, l: Latency, stages: &[&Stage], knee: Option<u32>, s: &mut String) {
        let (name, colour, pick, _) = l;
        let points: Vec<(f64, f64, &Stage)> = stages
            .iter()
            .filter_map(|st| Some((self.x(st.output_tok_s), self.y(pick(st).p95?)?, *st)))
            .filter(|p| p.0.is_finite())
            .collect();
        let Some(last) = points.last() else { return };
        let line: Vec<String> = points
            .iter()
            .map(|p| format!("{:.1},{:.1}", p.0, p.1))
            .collect();
        let _ = write!(
            s,
            "<polyline class=\"series\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.8\" points=\"{}\"/>",
            line.join(" ")
        );
        for &(x, y, st) in &points {
            let ring = if Some(st.load.value()) == knee {
                " stroke=\"#343a40\" stroke-width=\"2.5\" r=\"7\""
            } else {
                " r=\"4\""
            };
            let _ = write!(
                s,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" fill=\"{colour}\"{ring}><title>load {}: {} tok/s, {name} {} ms</title></circle>",
                st.load.value(),
                tok(st.output_tok_s),
                pick(st).p95.map_or("—".to_owned(), num)
            );
        }
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{colour}\">{name}</text>",
            last.0 - 60.0,
            last.1 - 10.0
        );
    }
}

/// The TTFT and end-to-end limits of an `--slo` text (`ttft=500ms,e2e=20s`), in ms; a limit
/// written in another unit is left undrawn rather than guessed.
fn slo_limits(text: &str) -> Vec<(&str, f64)> {
    let keys = LATENCIES.map(|l| l.3);
    text.split(',')
        .filter_map(|part| part.trim().split_once('='))
        .filter(|(key, _)| keys.contains(&key.trim()))
        .filter_map(|(key, value)| Some((key.trim(), ms(value.trim())?)))
        .collect()
}

/// `500ms` or `2.5s` in milliseconds.
fn ms(value: &str) -> Option<f64> {
    let (n, k) = match value.strip_suffix("ms") {
        Some(n) => (n, 1.0),
        None => (value.strip_suffix('s')?, 1e3),
    };
    n.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| v * k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_limits_read_ms_and_s_and_skip_the_rest() {
        let got = slo_limits("ttft=500ms, itl=50ms,e2e=2.5s,tpot=1m");
        assert_eq!(got, vec![("ttft", 500.0), ("e2e", 2500.0)]);
        assert!(slo_limits("ttft=5m").is_empty());
        assert!(slo_limits("").is_empty());
    }
}
