//! SGLang's families (`sglang:` prefix, needs `--enable-metrics`;
//! `docs/SOURCES.md` §sglang, read in `python/sglang/srt/metrics/collector.py`
//! @`00ae9c15` (2026) and `func_timer.py`). SGLang versions are not pinned in those sources, so
//! only the inter-token rename carries one (⚠ approximate); the scheduler, PD, HiCache, speculative
//! and per-stage families below are dated "current (2026)" by that collector — present on
//! ≥ 0.5 servers, and some absent from older ones.

use super::model::{Exporter, Family, Kind, Unit, Version};
use crate::Concept as C;

const SCHED: &[&str] = &[
    "model_name",
    "engine_type",
    "tp_rank",
    "pp_rank",
    "moe_ep_rank",
    "dp_rank",
];
const REQ: &[&str] = &["model_name"];

const fn f(name: &'static str, kind: Kind, unit: Unit, labels: &'static [&'static str]) -> Family {
    Family::new(Exporter::Sglang, name, kind, unit, labels)
}

use Kind::{Counter, Gauge, Histogram};
use Unit::{Count, Fraction, Requests, Seconds, Tokens};

/// Every SGLang family the catalog knows.
pub const FAMILIES: &[Family] = &[
    f("sglang:num_running_reqs", Gauge, Requests, SCHED).concept(C::Running),
    f("sglang:num_queue_reqs", Gauge, Requests, SCHED).concept(C::Waiting),
    f("sglang:token_usage", Gauge, Fraction, SCHED)
        .concept(C::KvUsage)
        .note("0..1 fraction of the KV token pool"),
    f("sglang:num_used_tokens", Gauge, Tokens, SCHED),
    f("sglang:max_total_num_tokens", Gauge, Tokens, SCHED),
    f("sglang:gen_throughput", Gauge, Tokens, SCHED).note("tokens/s over the last log interval"),
    f("sglang:cache_hit_rate", Gauge, Fraction, SCHED),
    f("sglang:prompt_tokens_total", Counter, Tokens, REQ)
        .concept(C::PromptTokens)
        .note("incremented when a request finishes"),
    f("sglang:generation_tokens_total", Counter, Tokens, REQ)
        .concept(C::GeneratedTokens)
        .note("incremented when a request finishes"),
    f("sglang:cached_tokens_total", Counter, Tokens, REQ),
    f("sglang:num_requests_total", Counter, Requests, REQ).concept(C::RequestsFinished),
    f("sglang:num_aborted_requests_total", Counter, Requests, REQ),
    f("sglang:num_retracted_requests_total", Counter, Count, SCHED)
        .concept(C::Preemptions)
        .note("retraction is SGLang's preemption"),
    f(
        "sglang:time_to_first_token_seconds",
        Histogram,
        Seconds,
        REQ,
    )
    .concept(C::Ttft),
    f(
        "sglang:time_per_output_token_seconds",
        Histogram,
        Seconds,
        REQ,
    )
    .concept(C::Itl)
    .life(None, None, Some(Version::new(0, 5, 0)))
    .successor("sglang:inter_token_latency_seconds")
    .note("older SGLang (≈≤0.4.x); the rename version is approximate"),
    f(
        "sglang:inter_token_latency_seconds",
        Histogram,
        Seconds,
        REQ,
    )
    .concept(C::Itl)
    .since(Version::new(0, 5, 0)),
    f(
        "sglang:e2e_request_latency_seconds",
        Histogram,
        Seconds,
        REQ,
    )
    .concept(C::E2eLatency),
    f("sglang:queue_time_seconds", Histogram, Seconds, REQ).concept(C::QueueTime),
    // Scheduler state beyond running/queued (collector.py, 2026).
    f("sglang:num_paused_reqs", Gauge, Requests, SCHED),
    f("sglang:num_grammar_queue_reqs", Gauge, Requests, SCHED),
    f("sglang:num_prefill_prealloc_queue_reqs", Gauge, Requests, SCHED)
        .note("prefill-decode disaggregation (PD) queues"),
    f("sglang:num_prefill_inflight_queue_reqs", Gauge, Requests, SCHED),
    f("sglang:num_decode_prealloc_queue_reqs", Gauge, Requests, SCHED),
    f("sglang:num_decode_transfer_queue_reqs", Gauge, Requests, SCHED),
    f("sglang:num_retracted_reqs", Gauge, Requests, SCHED),
    f("sglang:swa_token_usage", Gauge, Fraction, SCHED),
    f("sglang:mamba_usage", Gauge, Fraction, SCHED),
    f("sglang:pending_prealloc_token_usage", Gauge, Fraction, SCHED),
    f("sglang:utilization", Gauge, Fraction, SCHED),
    f("sglang:new_token_ratio", Gauge, Fraction, SCHED),
    f("sglang:is_cuda_graph", Gauge, Count, SCHED),
    f("sglang:spec_accept_length", Gauge, Tokens, SCHED).when("speculative decoding"),
    f("sglang:spec_accept_rate", Gauge, Fraction, SCHED).when("speculative decoding"),
    f("sglang:engine_startup_time", Gauge, Seconds, SCHED),
    f("sglang:engine_load_weights_time", Gauge, Seconds, SCHED),
    f("sglang:num_retracted_input_tokens_total", Counter, Tokens, SCHED),
    f("sglang:num_retracted_output_tokens_total", Counter, Tokens, SCHED),
    f("sglang:num_retractions", Histogram, Count, REQ),
    f("sglang:num_so_requests_total", Counter, Requests, REQ),
    f("sglang:realtime_tokens_total", Counter, Tokens, RT)
        .note("mode=prefill_compute|prefill_cache|decode, counted as the scheduler runs (not at request finish)"),
    f("sglang:gpu_execution_seconds_total", Counter, Seconds, CATEGORY),
    f("sglang:cuda_graph_passes_total", Counter, Count, RT),
    f("sglang:per_stage_req_latency_seconds", Histogram, Seconds, STAGE),
    f("sglang:func_latency_seconds", Histogram, Seconds, &["name"])
        .note("func_timer.py: one series per instrumented function"),
    f("sglang:prompt_tokens_histogram", Histogram, Tokens, REQ)
        .when("--collect-tokens-histogram"),
    f("sglang:generation_tokens_histogram", Histogram, Tokens, REQ)
        .when("--collect-tokens-histogram"),
    // HiCache (hierarchical KV cache) and its storage backends.
    f("sglang:evicted_tokens_total", Counter, Tokens, SCHED).when("HiCache"),
    f("sglang:load_back_tokens_total", Counter, Tokens, SCHED).when("HiCache"),
    f("sglang:eviction_duration_seconds", Histogram, Seconds, SCHED).when("HiCache"),
];

const RT: &[&str] = &[
    "model_name",
    "engine_type",
    "tp_rank",
    "pp_rank",
    "moe_ep_rank",
    "dp_rank",
    "mode",
];
const CATEGORY: &[&str] = &[
    "model_name",
    "engine_type",
    "tp_rank",
    "pp_rank",
    "moe_ep_rank",
    "dp_rank",
    "category",
];
const STAGE: &[&str] = &["model_name", "stage"];
