//! The verdict: one primary bottleneck chosen by the decision table (what to change is
//! [`crate::advice`]).
//!
//! The primary is the first bottleneck finding in the order of [`super::detect::detectors`]
//! (KV capacity when it demonstrably stops admissions, token budget when full steps are not
//! compute-bound, memory bandwidth, GPU compute, batch limit, client, load not reached); every
//! other finding is secondary. The order refines the decision table of `docs/METHOD.md` step 8
//! where GPU_UTIL misleads: it is a duty cycle, so a busy GPU with a full KV cache is KV-bound,
//! not compute-bound. Recommendations carry numbers derived from the evidence (e.g. KV used per
//! running request → how far `--max-num-seqs` can go under 0.85) and the caveats a senior
//! engineer would add.

use crate::detect::{Bottleneck, Finding};
use serde::Serialize;

/// The primary bottleneck and how sure we are.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub bottleneck: Bottleneck,
    pub confidence: f64,
    /// The decision-table row that matched (index into [`DECISION_TABLE`]), if one did.
    pub row: Option<usize>,
    pub summary: String,
}

/// One row of the decision table (`docs/METHOD.md` step 8).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Row {
    pub gpu: &'static str,
    pub kv: &'static str,
    pub waiting: &'static str,
    pub bottleneck: &'static str,
}

pub const DECISION_TABLE: [Row; 4] = [
    Row {
        gpu: "high",
        kv: "any",
        waiting: "yes",
        bottleneck: "GPU compute",
    },
    Row {
        gpu: "low",
        kv: "high",
        waiting: "yes",
        bottleneck: "KV-cache capacity",
    },
    Row {
        gpu: "low",
        kv: "low",
        waiting: "yes",
        bottleneck: "batch limit (--max-num-seqs) or client",
    },
    Row {
        gpu: "low",
        kv: "low",
        waiting: "no",
        bottleneck: "load not reached",
    },
];

fn row_of(b: Bottleneck) -> Option<usize> {
    match b {
        Bottleneck::GpuCompute | Bottleneck::MemoryBandwidth => Some(0),
        Bottleneck::KvCacheCapacity => Some(1),
        Bottleneck::BatchLimit
        | Bottleneck::TokenBudget
        | Bottleneck::Host
        | Bottleneck::FrontEnd => Some(2),
        Bottleneck::LoadNotReached | Bottleneck::Client => Some(3),
        // Not a row: the replicas side by side, not one engine's three layers, show it.
        Bottleneck::FailingRequests
        | Bottleneck::AdmissionLimit
        | Bottleneck::RoutingImbalance
        | Bottleneck::None => None,
    }
}

/// Picks the primary among `findings` (already in precedence order).
pub fn choose(findings: &[Finding]) -> Verdict {
    match findings.iter().find(|f| f.bottleneck.is_some()) {
        Some(f) => {
            let b = f.bottleneck.unwrap_or(Bottleneck::None);
            Verdict {
                bottleneck: b,
                confidence: f.confidence.unwrap_or(0.0),
                row: row_of(b),
                summary: f.message.clone(),
            }
        }
        None => Verdict {
            bottleneck: Bottleneck::None,
            confidence: 0.0,
            row: None,
            summary:
                "no bottleneck could be established from the data (see the data-quality findings)"
                    .to_owned(),
        },
    }
}
