//! The metric catalog: which exposed names measure which engine-neutral [`Concept`], for which
//! engine and versions, in which unit, and how to aggregate several series of one name.
//!
//! Names come from `shared/reference/serving-metrics.md` (§0 renames, §12 table) and
//! `gpu-kueue-prom.md` §1. For a concept, candidates are listed newest first; the first one that
//! has data in a run is used and the choice is reported, so a renamed metric is never read as 0.
//! (Issue #6 grows this into the full catalog behind `llmscope check`.)

use crate::diagnose::Concept;

/// How several series of one metric (engines, pods, GPUs) combine into one signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    Sum,
    Max,
    Mean,
}

/// What a number means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A 0..1 fraction, even when the name says "perc".
    Fraction,
    /// 0..100.
    Percent,
    Count,
    Watts,
}

/// One metric name as some engine exposes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    pub concept: Concept,
    pub engine: &'static str,
    pub name: &'static str,
    pub unit: Unit,
    pub aggregate: Aggregate,
    /// Where the name is exposed, as free text (`0.9.2..current`, `removed 0.12.0`).
    pub versions: &'static str,
}

const fn def(
    concept: Concept,
    engine: &'static str,
    name: &'static str,
    unit: Unit,
    aggregate: Aggregate,
    versions: &'static str,
) -> MetricDef {
    MetricDef {
        concept,
        engine,
        name,
        unit,
        aggregate,
        versions,
    }
}

use Aggregate::{Max, Mean, Sum};
use Concept as C;
use Unit::{Count, Fraction, Percent, Watts};

/// Every name the diagnosis can read, newest first within a concept.
pub const METRICS: &[MetricDef] = &[
    def(
        C::Running,
        "vllm",
        "vllm:num_requests_running",
        Count,
        Sum,
        "all",
    ),
    def(
        C::Running,
        "sglang",
        "sglang:num_running_reqs",
        Count,
        Sum,
        "all",
    ),
    def(
        C::Running,
        "tgi",
        "tgi_batch_current_size",
        Count,
        Sum,
        "1.x..3.3",
    ),
    def(
        C::Waiting,
        "vllm",
        "vllm:num_requests_waiting",
        Count,
        Sum,
        "all",
    ),
    def(
        C::Waiting,
        "sglang",
        "sglang:num_queue_reqs",
        Count,
        Sum,
        "all",
    ),
    def(C::Waiting, "tgi", "tgi_queue_size", Count, Sum, "1.x..3.3"),
    def(
        C::KvUsage,
        "vllm",
        "vllm:kv_cache_usage_perc",
        Fraction,
        Max,
        "0.9.2..current",
    ),
    def(
        C::KvUsage,
        "vllm",
        "vllm:gpu_cache_usage_perc",
        Fraction,
        Max,
        "..0.11 (hidden 0.11, removed 0.12.0)",
    ),
    def(
        C::KvUsage,
        "sglang",
        "sglang:token_usage",
        Fraction,
        Max,
        "all",
    ),
    def(
        C::Preemptions,
        "vllm",
        "vllm:num_preemptions_total",
        Count,
        Sum,
        "all",
    ),
    def(
        C::Preemptions,
        "sglang",
        "sglang:num_retracted_requests_total",
        Count,
        Sum,
        "~2025..current",
    ),
    def(
        C::GeneratedTokens,
        "vllm",
        "vllm:generation_tokens_total",
        Count,
        Sum,
        "all",
    ),
    def(
        C::GeneratedTokens,
        "sglang",
        "sglang:generation_tokens_total",
        Count,
        Sum,
        "all",
    ),
    def(
        C::StepTokensSum,
        "vllm",
        "vllm:iteration_tokens_total_sum",
        Count,
        Sum,
        "2024-11..current",
    ),
    def(
        C::StepCount,
        "vllm",
        "vllm:iteration_tokens_total_count",
        Count,
        Sum,
        "2024-11..current",
    ),
    def(
        C::GpuUtil,
        "dcgm",
        "DCGM_FI_DEV_GPU_UTIL",
        Percent,
        Mean,
        "all (not on MIG)",
    ),
    def(
        C::MemCopyUtil,
        "dcgm",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        Percent,
        Mean,
        "all",
    ),
    def(
        C::GrEngineActive,
        "dcgm",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        Fraction,
        Mean,
        "4.0..current default",
    ),
    def(
        C::DramActive,
        "dcgm",
        "DCGM_FI_PROF_DRAM_ACTIVE",
        Fraction,
        Mean,
        "4.0..current default",
    ),
    def(
        C::TensorActive,
        "dcgm",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        Fraction,
        Mean,
        "4.0..current default",
    ),
    def(
        C::PowerWatts,
        "dcgm",
        "DCGM_FI_DEV_POWER_USAGE",
        Watts,
        Sum,
        "all",
    ),
];

/// The candidates for `concept`, newest first.
pub fn candidates(concept: Concept) -> impl Iterator<Item = &'static MetricDef> {
    METRICS.iter().filter(move |m| m.concept == concept)
}

/// The definition of an exposed name, if the catalog knows it.
pub fn lookup(name: &str) -> Option<&'static MetricDef> {
    METRICS.iter().find(|m| m.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_usage_prefers_the_current_name_and_is_a_fraction() {
        let names: Vec<_> = candidates(C::KvUsage).map(|m| m.name).collect();
        assert_eq!(names[0], "vllm:kv_cache_usage_perc");
        assert!(names.contains(&"vllm:gpu_cache_usage_perc"));
        assert!(
            candidates(C::KvUsage).all(|m| m.unit == Fraction),
            "'perc' metrics are 0..1"
        );
        assert_eq!(
            lookup("DCGM_FI_DEV_GPU_UTIL").map(|m| m.unit),
            Some(Percent)
        );
    }

    #[test]
    fn every_concept_but_power_has_an_engine_or_gpu_source() {
        for m in METRICS {
            assert!(!m.name.is_empty() && !m.engine.is_empty());
        }
        assert!(candidates(C::Running).count() >= 3);
    }
}
