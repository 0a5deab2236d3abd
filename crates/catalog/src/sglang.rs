//! SGLang's families (`sglang:` prefix, needs `--enable-metrics`;
//! `docs/SOURCES.md` §sglang, read in `python/sglang/srt/metrics/collector.py`
//! @`00ae9c15` (2026) and `func_timer.py`). SGLang versions are not pinned in those sources, so
//! only the inter-token rename carries one (⚠ approximate); the scheduler, PD, HiCache, speculative
//! and per-stage families below are dated "current (2026)" by that collector — present on
//! ≥ 0.5 servers, and some absent from older ones.
//!
//! The rest of the collector (`docs/SOURCES.md` §sglang-collector): every family of
//! `python/sglang/srt/observability/metrics_collector.py` (the collector's path since it left
//! `metrics/`) @`44cedc2b`, and the newer ones of a later copy of that file (pool token counts
//! such as `sglang:kv_used_tokens`, `sglang:full_token_usage`, the constants gauges), whose commit
//! the index did not name (⚠). That later file declares the `kv_transfer_*` gauges as histograms
//! and no longer defines `cache_config_info`, `num_running_reqs_offline_batch` or
//! `num_retractions`; the catalog keeps the @`44cedc2b` kinds and names.

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

use Kind::{Counter, Gauge, Histogram, Summary};
use Unit::{Bytes, Count, Flops, Fraction, Info, Milliseconds, Percent, Requests, Seconds, Tokens};

const PD: &str = "prefill-decode disaggregation";
const GRAMMAR: &str = "structured-output (grammar) requests";
const LORA: &str = "LoRA is enabled";
const HICACHE_STORAGE: &str = "HiCache with a storage backend and storage metrics";
const SWA: &str = "a hybrid sliding-window-attention model";
const MAMBA: &str = "a hybrid Mamba (SSM) model";
const STREAMING: &str = "streaming sessions are enabled";

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
    // The rest of SchedulerMetricsCollector @44cedc2b.
    f("sglang:decode_sum_seq_lens", Gauge, Tokens, SCHED)
        .note("sum of the sequence lengths of the decode batch"),
    f("sglang:num_running_reqs_offline_batch", Gauge, Requests, SCHED)
        .note("low-priority offline batch requests running"),
    f("sglang:max_running_requests_under_SLO", Gauge, Requests, SCHED),
    f("sglang:num_bootstrap_failed_reqs_total", Counter, Requests, SCHED)
        .when(PD),
    f("sglang:num_transfer_failed_reqs_total", Counter, Requests, SCHED)
        .when(PD),
    f("sglang:num_prefill_retries_total", Counter, Count, SCHED).when(PD),
    f("sglang:kv_transfer_speed_gb_s", Gauge, Count, SCHED)
        .when(PD)
        .note("GB/s of the last KV transfer; a histogram (_bucket/_sum/_count) in later main"),
    f("sglang:kv_transfer_latency_ms", Gauge, Milliseconds, SCHED)
        .when(PD)
        .note("a histogram in later main"),
    f("sglang:kv_transfer_bootstrap_ms", Gauge, Milliseconds, SCHED)
        .when(PD)
        .note("a histogram in later main"),
    f("sglang:kv_transfer_alloc_ms", Gauge, Milliseconds, SCHED)
        .when(PD)
        .note("a histogram in later main"),
    f("sglang:kv_transfer_total_mb", Gauge, Count, SCHED)
        .when(PD)
        .note("MB moved by the last KV transfer (the help text says tokens); a histogram in later main"),
    f("sglang:grammar_compilation_time_seconds", Histogram, Seconds, SCHED).when(GRAMMAR),
    f("sglang:num_grammar_cache_hit_total", Counter, Count, SCHED).when(GRAMMAR),
    f("sglang:num_grammar_aborted_total", Counter, Requests, SCHED).when(GRAMMAR),
    f("sglang:num_grammar_timeout_total", Counter, Count, SCHED).when(GRAMMAR),
    f("sglang:num_grammar_total", Counter, Requests, SCHED).when(GRAMMAR),
    f("sglang:grammar_schema_count", Histogram, Count, SCHED).when(GRAMMAR),
    f("sglang:grammar_ebnf_size", Histogram, Count, SCHED).when(GRAMMAR),
    f("sglang:grammar_tree_traversal_time_avg", Histogram, Seconds, SCHED).when(GRAMMAR),
    f("sglang:grammar_tree_traversal_time_max", Histogram, Seconds, SCHED).when(GRAMMAR),
    f("sglang:eplb_balancedness", Summary, Count, EPLB_MODE)
        .when("env SGLANG_ENABLE_EPLB_BALANCEDNESS_METRIC (exported by moe_ep_rank 0)"),
    f("sglang:lora_pool_slots_used", Gauge, Count, SCHED).when(LORA),
    f("sglang:lora_pool_slots_total", Gauge, Count, SCHED).when(LORA),
    f("sglang:lora_pool_utilization", Gauge, Fraction, SCHED).when(LORA),
    f("sglang:num_unique_running_routing_keys", Gauge, Count, SCHED),
    f("sglang:routing_key_running_req_count", Gauge, Count, GT_LE)
        .note("a gauge per bucket (gt < count <= le), not cumulative: no _bucket samples"),
    f("sglang:routing_key_all_req_count", Gauge, Count, GT_LE)
        .note("a gauge per bucket (gt < count <= le), not cumulative: no _bucket samples"),
    f("sglang:dp_cooperation_realtime_tokens_total", Counter, Tokens, DP_MODE)
        .when("DP attention"),
    f("sglang:dp_cooperation_gpu_execution_seconds_total", Counter, Seconds, DP_CATEGORY)
        .when("DP attention"),
    f("sglang:prefill_delayer_wait_forward_passes", Histogram, Count, SCHED)
        .when("the prefill delayer"),
    f("sglang:prefill_delayer_wait_seconds", Histogram, Seconds, SCHED)
        .when("the prefill delayer"),
    f("sglang:prefill_delayer_outcomes_total", Counter, Count, DELAYER)
        .when("the prefill delayer"),
    f("sglang:cache_config_info", Gauge, Info, &["page_size", "num_pages"])
        .note("constant 1; no model_name or rank labels; gone from later main (sglang:page_size, sglang:num_pages)"),
    // RadixCacheMetricsCollector, ExpertDispatchCollector and StorageMetricsCollector @44cedc2b.
    f("sglang:load_back_duration_seconds", Histogram, Seconds, SCHED).when("HiCache"),
    f("sglang:eplb_gpu_physical_count", Histogram, Count, &["layer"])
        .when("expert-parallel load balancing (EPLB) expert dispatch recording"),
    f("sglang:prefetched_tokens_total", Counter, Tokens, STORAGE).when(HICACHE_STORAGE),
    f("sglang:backuped_tokens_total", Counter, Tokens, STORAGE).when(HICACHE_STORAGE),
    f("sglang:prefetch_pgs", Histogram, Count, STORAGE).when(HICACHE_STORAGE),
    f("sglang:backup_pgs", Histogram, Count, STORAGE).when(HICACHE_STORAGE),
    f("sglang:prefetch_bandwidth", Histogram, Count, STORAGE)
        .when(HICACHE_STORAGE)
        .note("GB/s"),
    f("sglang:backup_bandwidth", Histogram, Count, STORAGE)
        .when(HICACHE_STORAGE)
        .note("GB/s"),
    // Later main (⚠ index copy without a commit).
    f("sglang:full_token_usage", Gauge, Fraction, SCHED)
        .note("0..1 usage of the full-attention KV pool; sglang:token_usage is the max over the full, SWA and Mamba pools"),
    f("sglang:kv_used_tokens", Gauge, Tokens, SCHED)
        .note("full-attention KV slots held by running requests; kv_used + kv_available + kv_evictable <= max_total_num_tokens"),
    f("sglang:kv_available_tokens", Gauge, Tokens, SCHED).note("free full-attention KV slots"),
    f("sglang:kv_evictable_tokens", Gauge, Tokens, SCHED)
        .note("radix-cached KV slots no request holds: reusable, and evicted when needed"),
    f("sglang:swa_used_tokens", Gauge, Tokens, SCHED).when(SWA),
    f("sglang:swa_available_tokens", Gauge, Tokens, SCHED).when(SWA),
    f("sglang:swa_evictable_tokens", Gauge, Tokens, SCHED).when(SWA),
    f("sglang:mamba_used_tokens", Gauge, Count, SCHED)
        .when(MAMBA)
        .note("Mamba state slots, not tokens"),
    f("sglang:mamba_available_tokens", Gauge, Count, SCHED)
        .when(MAMBA)
        .note("Mamba state slots, not tokens"),
    f("sglang:mamba_evictable_tokens", Gauge, Count, SCHED)
        .when(MAMBA)
        .note("Mamba state slots, not tokens"),
    f("sglang:num_prefill_bootstrap_queue_reqs", Gauge, Requests, SCHED)
        .when(PD)
        .note("later main's prefill queue gauge, beside sglang:num_prefill_prealloc_queue_reqs of older servers"),
    f("sglang:fwd_occupancy", Gauge, Percent, SCHED)
        .note("forward-pass GPU occupancy in percent; NaN until measured"),
    f("sglang:hicache_host_used_tokens", Gauge, Tokens, SCHED).when("HiCache"),
    f("sglang:hicache_host_total_tokens", Gauge, Tokens, SCHED).when("HiCache"),
    f("sglang:num_streaming_sessions", Gauge, Count, SCHED).when(STREAMING),
    f("sglang:streaming_session_held_tokens", Gauge, Tokens, SCHED).when(STREAMING),
    f("sglang:forward_execution_seconds_total", Counter, Seconds, CATEGORY)
        .note("later main's name for the GPU-busy counter sglang:gpu_execution_seconds_total"),
    f("sglang:dp_cooperation_forward_execution_seconds_total", Counter, Seconds, DP_CATEGORY)
        .when("DP attention"),
    f("sglang:estimated_flops_per_gpu_total", Counter, Flops, SCHED),
    f("sglang:estimated_read_bytes_per_gpu_total", Counter, Bytes, SCHED),
    f("sglang:estimated_write_bytes_per_gpu_total", Counter, Bytes, SCHED),
    f("sglang:page_size", Gauge, Tokens, SCHED).note("set once at start-up"),
    f("sglang:num_pages", Gauge, Count, SCHED).note("KV pages, set once at start-up"),
    f("sglang:context_len", Gauge, Tokens, SCHED).note("set once at start-up"),
    f("sglang:startup_available_gpu_memory_gb", Gauge, Count, SCHED)
        .note("GB, set once at start-up"),
    f("sglang:uncached_prompt_tokens_histogram", Histogram, Tokens, REQ)
        .note("prompt tokens minus cached tokens, per finished request"),
    f("sglang:get_loads_duration_seconds", Histogram, Seconds, REQ)
        .note("time serving /v1/loads"),
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
/// SGLang's GaugeHistogram: one gauge per bucket, with `gt` and `le` labels.
const GT_LE: &[&str] = &[
    "model_name",
    "engine_type",
    "tp_rank",
    "pp_rank",
    "moe_ep_rank",
    "dp_rank",
    "gt",
    "le",
];
const DP_MODE: &[&str] = &[
    "model_name",
    "engine_type",
    "tp_rank",
    "pp_rank",
    "moe_ep_rank",
    "dp_rank",
    "mode",
    "num_prefill_ranks",
];
const DP_CATEGORY: &[&str] = &[
    "model_name",
    "engine_type",
    "tp_rank",
    "pp_rank",
    "moe_ep_rank",
    "dp_rank",
    "category",
    "num_prefill_ranks",
];
const EPLB_MODE: &[&str] = &[
    "model_name",
    "engine_type",
    "tp_rank",
    "pp_rank",
    "moe_ep_rank",
    "dp_rank",
    "forward_mode",
];
const DELAYER: &[&str] = &[
    "model_name",
    "engine_type",
    "tp_rank",
    "pp_rank",
    "moe_ep_rank",
    "dp_rank",
    "input_estimation",
    "output_allow",
    "output_reason",
    "actual_execution",
];
/// The HiCache storage collector's labels (set by the radix cache, not the scheduler).
const STORAGE: &[&str] = &[
    "storage_backend",
    "tp_rank",
    "dp_rank",
    "pp_rank",
    "pp_size",
    "attn_cp_rank",
    "attn_cp_size",
];
