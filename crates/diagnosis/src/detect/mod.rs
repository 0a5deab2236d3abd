//! Detectors: each reads the steady-window statistics and says what it sees, with evidence.
//!
//! Contract (checked for every detector by the shared harness in `tests.rs`): a detector
//! never panics on empty input, NaN values, gaps or counter resets; it fires only on signals that
//! are present (an absent signal is a data-quality finding, never a 0); every finding cites its
//! evidence — which signal, which window, which statistic, against which threshold — and uses the
//! shared [`Severity`] scale. A finding may name the [`Bottleneck`] it stands for; the verdict picks
//! among those by the decision table (`verdict`).
//!
//! One file per detector. Adding one is that file (a unit struct implementing [`Detector`]) and
//! one line in the `detectors!` registry below, at its place in the order of precedence; the
//! harness in `tests.rs` then runs it on hostile inputs like every other. [`Context`] holds what
//! they all read; [`DataQuality`] is not a bottleneck detector and runs after the verdict.

mod context;
mod data_quality;

pub use admission_limit::{Limit as AdmissionLimitKind, Shed};
pub(crate) use context::growth;
pub use context::{Context, Level, StepTokens};
pub use data_quality::DataQuality;
pub use failing_requests::demote;
pub(crate) use token_budget::budget_in_force;

/// GPU busy fraction at or above which the GPU counts as "high" in the decision table.
pub const BUSY_HIGH: f64 = 0.75;
/// Below this the GPU is clearly idle between steps.
pub const BUSY_LOW: f64 = 0.6;
/// KV usage alert level; above [`KV_RISK`] preemption / OOM risk.
pub const KV_HIGH: f64 = 0.85;
pub const KV_RISK: f64 = 0.9;
/// Share of steady samples with waiting > 0 that makes a queue "sustained".
pub const WAITING_SHARE: f64 = 0.5;
/// DRAM activity that marks memory-bandwidth-bound steps, with tensor activity below TENSOR_LOW.
pub const DRAM_HIGH: f64 = 0.6;
pub const TENSOR_LOW: f64 = 0.2;
/// Share of steady samples at or near the ceiling that makes `running` "pinned" there.
pub const PINNED_SHARE: f64 = 0.7;
/// "Near the ceiling": at least this fraction of it. A real engine admits queued requests in
/// waves (a batch of equal answers ends in one step, the next is admitted over the next steps),
/// so a scrape between two steps sees part of a wave: a real vLLM 0.32 at `--max-num-seqs 16`
/// with 32 clients reads 16 in only 50–80 % of 1 s scrapes, 14–16 in 85–95 %.
pub const NEAR_CEILING: f64 = 0.85;
/// Tokens per step at or above this share of `--max-num-batched-tokens`: the step budget is spent.
pub const BUDGET_FULL: f64 = 0.9;

/// How bad a finding is; the one scale of every detector, the linter and `--fail-on`.
pub use llmscope_core::severity::Severity;

pub use llmscope_core::bottleneck::Bottleneck;

/// One measured fact behind a finding.
pub use llmscope_core::finding::Evidence;

/// What a detector saw: the one finding, its rule a detector's static id.
pub type Finding = llmscope_core::finding::Finding<&'static str>;

/// One detector; see the module docs for its contract.
pub trait Detector {
    fn id(&self) -> &'static str;
    fn detect(&self, cx: &Context) -> Option<Finding>;
}

fn finding(
    id: &'static str,
    severity: Severity,
    bottleneck: Option<Bottleneck>,
    confidence: f64,
    message: String,
    evidence: Vec<Evidence>,
) -> Finding {
    Finding {
        bottleneck,
        confidence: Some(confidence.clamp(0.0, 0.99)),
        evidence,
        ..Finding::new(id, severity, message)
    }
}

/// Declares each detector's file and registers it, in the decision table's order of precedence:
/// one line per detector (`file::Detector`). The first bottleneck finding in this order is the
/// verdict ([`crate::verdict::choose`]).
macro_rules! detectors {
    ($($file:ident :: $unit:ident),* $(,)?) => {
        $(
            mod $file;
            pub use $file::$unit;
        )*

        /// Every bottleneck detector, in the decision table's order of precedence.
        pub fn detectors() -> Vec<Box<dyn Detector>> {
            vec![$(Box::new($unit)),*]
        }
    };
}

detectors! {
    admission_limit::AdmissionLimit,
    failing_requests::FailingRequests,
    kv_capacity::KvCapacity,
    token_budget::TokenBudget,
    memory_bandwidth::MemoryBandwidth,
    gpu_compute::GpuCompute,
    batch_limit::BatchLimit,
    front_end::FrontEndQueue,
    client_limited::ClientLimited,
    load_not_reached::LoadNotReached,
    host::HostBound,
    // Never a bottleneck: last, so they leave the verdict alone (see their module docs).
    speculative::Speculative,
    prefix_cache::PrefixCache,
}

pub use prefix_cache::{KvSplit, Lookups, PrefixCacheReading, pct};
pub use speculative::SpecReading;

#[cfg(test)]
mod tests;
