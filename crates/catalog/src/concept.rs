//! The engine-neutral quantities the diagnosis understands; the catalog maps each engine's
//! exposed names onto them.

use serde::Serialize;

/// One engine-neutral quantity the diagnosis understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Concept {
    /// Requests in the running batch (gauge).
    Running,
    /// Requests waiting to be scheduled (gauge).
    Waiting,
    /// KV-cache usage, a 0..1 fraction (gauge).
    KvUsage,
    /// GPU kernel-busy time, percent 0..100 (DCGM_FI_DEV_GPU_UTIL).
    GpuUtil,
    /// Memory-copy utilisation, percent 0..100 (DCGM_FI_DEV_MEM_COPY_UTIL).
    MemCopyUtil,
    /// Graphics/compute engine active, a 0..1 ratio (DCGM_FI_PROF_GR_ENGINE_ACTIVE).
    GrEngineActive,
    /// Device-memory interface active, a 0..1 ratio (DCGM_FI_PROF_DRAM_ACTIVE).
    DramActive,
    /// Tensor pipe active, a 0..1 ratio (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE).
    TensorActive,
    /// Board power, watts.
    PowerWatts,
    /// Cumulative preemptions (counter).
    Preemptions,
    /// Cumulative generated tokens (counter).
    GeneratedTokens,
    /// Cumulative tokens scheduled over all engine steps (histogram `_sum`, counter).
    StepTokensSum,
    /// Cumulative engine steps (histogram `_count`, counter).
    StepCount,
    /// Cumulative prompt (prefill) tokens (counter).
    PromptTokens,
    /// Cumulative finished requests (counter).
    RequestsFinished,
    /// Seconds finished requests spent waiting in the scheduler's queue, summed (the queue-time
    /// histogram's `_sum`, a counter). Its rate is the mean number waiting (Little's law), whatever
    /// the scrapes saw: every request's whole wait is counted when it finishes.
    QueuedSeconds,
    /// Seconds finished requests spent running (prefill and decode), summed (the inference-time
    /// histogram's `_sum`, a counter); its rate is the mean number running.
    RunningSeconds,
    /// Requests the server's admission limit turned away before any engine saw them (counter;
    /// vLLM `--max-num-queued-reqs` / `--max-num-queued-tokens`, answered 503).
    AdmissionRejections,
    /// Speculative decoding: drafts proposed, tokens drafted and tokens of them accepted
    /// (counters; present only where speculation is configured).
    SpecDrafts,
    SpecDraftTokens,
    SpecAcceptedTokens,
    /// Prefix-cache hits and queries (counters, tokens).
    PrefixCacheHits,
    PrefixCacheQueries,
    /// Time to first token, seconds (histogram).
    Ttft,
    /// Inter-token latency, one observation per token gap, seconds (histogram).
    Itl,
    /// Mean time per output token of each finished request, seconds (histogram).
    Tpot,
    /// End-to-end request latency, seconds (histogram).
    E2eLatency,
    /// Time spent waiting in the queue, seconds (histogram).
    QueueTime,
    /// Tokens scheduled per engine step (histogram).
    TokensPerStep,
    /// Framebuffer memory used / free, MiB (gauge).
    FbUsed,
    FbFree,
    /// SM active, a 0..1 ratio (DCGM_FI_PROF_SM_ACTIVE; not in the default counters).
    SmActive,
    /// Kueue workloads pending admission (gauge).
    PendingWorkloads,
    /// Kueue resources reserved by admitted or reserving workloads (gauge, resource units).
    QuotaReserved,
    /// Kueue nominal quota (gauge, resource units).
    QuotaNominal,
    /// Resources requested by pod containers (kube-state-metrics gauge).
    ResourceRequests,
    /// Namespace labels as `label_*` (kube-state-metrics info gauge, value 1).
    NamespaceLabels,
}

impl Concept {
    pub fn name(self) -> &'static str {
        match self {
            Concept::Running => "running",
            Concept::Waiting => "waiting",
            Concept::KvUsage => "kv_usage",
            Concept::GpuUtil => "gpu_util",
            Concept::MemCopyUtil => "mem_copy_util",
            Concept::GrEngineActive => "gr_engine_active",
            Concept::DramActive => "dram_active",
            Concept::TensorActive => "tensor_active",
            Concept::PowerWatts => "power_watts",
            Concept::Preemptions => "preemptions",
            Concept::GeneratedTokens => "generated_tokens",
            Concept::StepTokensSum => "step_tokens_sum",
            Concept::StepCount => "step_count",
            Concept::PromptTokens => "prompt_tokens",
            Concept::RequestsFinished => "requests_finished",
            Concept::QueuedSeconds => "queued_seconds",
            Concept::RunningSeconds => "running_seconds",
            Concept::AdmissionRejections => "admission_rejections",
            Concept::SpecDrafts => "spec_drafts",
            Concept::SpecDraftTokens => "spec_draft_tokens",
            Concept::SpecAcceptedTokens => "spec_accepted_tokens",
            Concept::PrefixCacheHits => "prefix_cache_hits",
            Concept::PrefixCacheQueries => "prefix_cache_queries",
            Concept::Ttft => "ttft",
            Concept::Itl => "itl",
            Concept::Tpot => "tpot",
            Concept::E2eLatency => "e2e_latency",
            Concept::QueueTime => "queue_time",
            Concept::TokensPerStep => "tokens_per_step",
            Concept::FbUsed => "fb_used",
            Concept::FbFree => "fb_free",
            Concept::SmActive => "sm_active",
            Concept::PendingWorkloads => "pending_workloads",
            Concept::QuotaReserved => "quota_reserved",
            Concept::QuotaNominal => "quota_nominal",
            Concept::ResourceRequests => "resource_requests",
            Concept::NamespaceLabels => "namespace_labels",
        }
    }

    /// Measured by the GPU exporter rather than the serving engine: a different source, sampled
    /// on its own schedule, so its edges are compared with the engine's.
    pub fn is_gpu(self) -> bool {
        matches!(
            self,
            Concept::GpuUtil
                | Concept::MemCopyUtil
                | Concept::GrEngineActive
                | Concept::DramActive
                | Concept::TensorActive
                | Concept::PowerWatts
        )
    }

    /// Counters are read as rates, never as levels.
    pub fn is_counter(self) -> bool {
        matches!(
            self,
            Concept::Preemptions
                | Concept::GeneratedTokens
                | Concept::StepTokensSum
                | Concept::StepCount
                | Concept::PromptTokens
                | Concept::RequestsFinished
                | Concept::QueuedSeconds
                | Concept::RunningSeconds
                | Concept::AdmissionRejections
                | Concept::SpecDrafts
                | Concept::SpecDraftTokens
                | Concept::SpecAcceptedTokens
                | Concept::PrefixCacheHits
                | Concept::PrefixCacheQueries
        )
    }

    /// The divisor that turns a value into a 0..1 fraction, for signals that have one.
    pub fn full_scale(self) -> Option<f64> {
        match self {
            Concept::KvUsage
            | Concept::GrEngineActive
            | Concept::DramActive
            | Concept::TensorActive
            | Concept::SmActive => Some(1.0),
            Concept::GpuUtil | Concept::MemCopyUtil => Some(100.0),
            _ => None,
        }
    }
}
