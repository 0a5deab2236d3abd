//! Every signal of the run as a small multiple, grouped by the exporter that produced it (the
//! engine, dcgm-exporter, Kueue and kube-state-metrics), each with its detected edges; a GPU
//! signal also shows the engine's edges, so its lag behind the engine is seen, not only listed.

use super::Page;
use crate::chart::{Axis, Mark, Panel, Side};
use llmscope_diagnosis::Concept;
use llmscope_diagnosis::edges::{Offset, OffsetKind};
use std::fmt::Write as _;

/// The plot height (px) of one small multiple.
const HEIGHT: f64 = 64.0;

/// Whether a concept belongs to a layer.
type Belongs = fn(Concept) -> bool;

/// The layers in page order: heading, and whether a concept belongs to it.
const LAYERS: [(&str, Belongs); 3] = [
    ("Serving engine", is_engine),
    ("GPU (dcgm-exporter)", is_dcgm),
    ("Scheduling (Kueue, kube-state-metrics)", is_scheduling),
];

fn is_dcgm(c: Concept) -> bool {
    c.is_gpu() || matches!(c, Concept::FbUsed | Concept::FbFree | Concept::SmActive)
}

fn is_scheduling(c: Concept) -> bool {
    matches!(
        c,
        Concept::PendingWorkloads
            | Concept::QuotaReserved
            | Concept::QuotaNominal
            | Concept::ResourceRequests
    )
}

fn is_engine(c: Concept) -> bool {
    !is_dcgm(c) && !is_scheduling(c) && c != Concept::NamespaceLabels
}

/// Each layer the run has a signal of: its heading, then one panel per signal.
pub(crate) fn write(page: &Page, s: &mut String) {
    for (heading, belongs) in LAYERS {
        let concepts: Vec<Concept> = page
            .r
            .input
            .signals
            .keys()
            .copied()
            .filter(|c| belongs(*c))
            .collect();
        if concepts.is_empty() {
            continue;
        }
        let _ = write!(s, "<h3>{heading}</h3>");
        for c in concepts {
            panel(page, c).write(s);
        }
    }
}

/// One signal: its line, its edges, and for a GPU signal the engine's edges and its lag.
fn panel(page: &Page, c: Concept) -> Panel {
    let (unit, k) = unit(c);
    let offset = page.r.diagnosis.offsets.iter().find(|o| o.concept == c);
    let title = match offset {
        Some(o) => format!("{} — {}", c.name(), lag_text(o)),
        None => c.name().to_owned(),
    };
    let mut p = page.panel(&title, HEIGHT, Axis::new(unit));
    page.add(&mut p, c, c.name(), Side::Left, k);
    p.marks = edges(page, c, "", "#343a40");
    if offset.is_some() {
        p.marks
            .extend(edges(page, Concept::Running, "engine ", "#adb5bd"));
    }
    p.missing = format!("{} has no sample", c.name());
    p
}

/// `lags the engine by +33 s at its rise and +33 s at its fall (sampling alignment, not a
/// delay)`.
fn lag_text(o: &Offset) -> String {
    let lag = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:+.0} s"));
    let kind = match o.kind {
        OffsetKind::Aligned => "aligned",
        OffsetKind::SamplingAlignment => "sampling alignment, not a delay",
        OffsetKind::RealLag => "a real delay",
        OffsetKind::Unknown => "too few edges to say",
    };
    format!(
        "lags the engine by {} at its rise and {} at its fall ({kind})",
        lag(o.rise_lag_s),
        lag(o.fall_lag_s),
    )
}

/// `c`'s detected rise and fall as marks named `{prefix}rises` / `{prefix}falls`.
fn edges(page: &Page, c: Concept, prefix: &str, colour: &'static str) -> Vec<Mark> {
    let Some(e) = page.r.diagnosis.edges.iter().find(|e| e.concept == c) else {
        return Vec::new();
    };
    let mark = |t: f64, what: &str| Mark {
        t,
        label: format!("{prefix}{what}"),
        colour,
    };
    let rise = e.rise.map(|t| mark(t, "rises"));
    rise.into_iter()
        .chain(e.fall.map(|t| mark(t, "falls")))
        .collect()
}

/// The unit a concept is drawn in and the factor from its own: ratios as percent, counters as
/// rates.
fn unit(c: Concept) -> (&'static str, f64) {
    use Concept::*;
    match c {
        KvUsage | GrEngineActive | DramActive | TensorActive | SmActive => ("%", 100.0),
        GpuUtil | MemCopyUtil => ("%", 1.0),
        Running | Waiting => ("req", 1.0),
        PowerWatts => ("W", 1.0),
        FbUsed | FbFree => ("MiB", 1.0),
        GeneratedTokens | PromptTokens | StepTokensSum | PrefixCacheHits | PrefixCacheQueries => {
            ("tok/s", 1.0)
        }
        RequestsFinished | StepCount | Preemptions => ("/s", 1.0),
        QueuedSeconds | RunningSeconds => ("s/s", 1.0),
        Ttft | Itl | Tpot | E2eLatency | QueueTime => ("s", 1.0),
        _ => ("", 1.0),
    }
}
