//! vLLM's `/metrics` names, V0 and V1 engines, with the versions that added, deprecated, hid
//! and removed them (`docs/SOURCES.md` §vllm-names, §vllm-renames; the names a real
//! vLLM 0.26.0 served, `vllm-0.26.0-metric-names.txt`, and three pages a real vLLM 0.32.0
//! served, `crates/catalog/tests/fixtures/vllm-0.32.0/`).
//!
//! Labels are the V1 set (`engine`, `model_name`, + per-metric ones); V0 pages have no `engine`
//! label, and V1 pages before 0.8.3 neither (see [`labels_at`]). Versions dated only by
//! merge date in those sources are placed at the next release (marked ≈ in notes).
//!
//! Between 0.26.0 and 0.32.0 no release was observed and vLLM's tagged history could not be read
//! (issue 11): a change seen first on the 0.32.0 pages is placed at [`AFTER_0_26`], the first
//! release it can have come with, so names never push a page's range above its real version.
//!
//! The KV-connector families (NIXL, the offloading connector, 3FS) and the realtime WebSocket
//! families come from `docs/SOURCES.md` §vllm-connectors; all are absent unless that connector or
//! endpoint is in use, so none of them dates a plain page.
//!
//! Every name the installed vLLM 0.32.0 package registers is catalogued
//! (`crates/catalog/tests/fixtures/vllm-0.32.0-source-names.txt`, §vllm-0.32-source). Those never on
//! a plain page (more connectors, the tiering offload spec, dev-mode and parser families) were read
//! in that source only: they are placed at [`AFTER_0_26`] too, though no earlier source was read
//! to show they were absent before (their notes say so). The names vLLM 0.33.0 added (connector
//! families only) are dated 0.33.0; the catalog's newest vLLM stays 0.32.0 (no 0.33.0 page was
//! observed), and a page showing one of them raises its detected range to 0.33 (`detect`).

use super::model::{Exporter, Family, Kind, PerProcess, Unit, Variant, Version};
use crate::Concept as C;

const fn v(minor: u16, patch: u16) -> Version {
    Version::new(0, minor, patch)
}
const fn some(minor: u16, patch: u16) -> Option<Version> {
    Some(v(minor, patch))
}

const EM: &[&str] = &["engine", "model_name"];
const fn f(name: &'static str, kind: Kind, unit: Unit, labels: &'static [&'static str]) -> Family {
    Family::new(Exporter::Vllm, name, kind, unit, labels)
}
const fn gauge(name: &'static str, unit: Unit) -> Family {
    f(name, Kind::Gauge, unit, EM)
}
const fn counter(name: &'static str, unit: Unit) -> Family {
    f(name, Kind::Counter, unit, EM)
}
const fn hist(name: &'static str, unit: Unit) -> Family {
    f(name, Kind::Histogram, unit, EM)
}

use Kind::{Counter, Gauge, Histogram, Summary};
use Unit::{Count, Flops, Fraction, Info, Milliseconds, Requests, Seconds, Timestamp, Tokens};
use Variant::{V0, V1};

const SPEC: &str = "speculative decoding is configured";
const NIXL: &str = "the NIXL KV connector (--kv-transfer-config NixlConnector)";
const OFFLOAD: &str = "the offloading KV connector (OffloadingConnector; --kv-offloading-size with the native backend)";
const HF3FS: &str = "the 3FS KV connector (HF3FSKVConnector)";
const OFFLOAD_CPU: &str = "the offloading KV connector with the CPU backend";
const TIERING: &str = "the offloading KV connector with the tiering spec (kv_connector_extra_config spec_name=TieringOffloadingSpec)";
const SIMPLE_OFFLOAD: &str = "the simple CPU offloading KV connector (SimpleCPUOffloadConnector)";
const HISPARSE: &str = "the HiSparse KV connector (HiSparseConnector)";
const MOONCAKE_STORE: &str = "the Mooncake store KV connector (MooncakeStoreConnector)";
const MOONCAKE: &str = "the Mooncake KV connector (MooncakeConnector)";
const UMBP: &str = "the UMBP store KV connector (UMBPStoreConnector)";
const KV_CONSUMER: &str = "a KV connector in a consumer role (kv_role kv_consumer or kv_both)";
const SLEEP_OPS: &str =
    "VLLM_SERVER_DEV_MODE=1, from the first /sleep, /wake_up or /release_kv_cache_memory call";
const WEIGHT_OPS: &str = "VLLM_SERVER_DEV_MODE=1, from the first weight-transfer call (/init_weight_transfer_engine, /start_weight_update, /update_weights, …)";
const DIFFUSION: &str = "a discrete-diffusion model (its config has canvas_length)";
const REALTIME: &str = "a speech-to-text model serving the realtime WebSocket endpoint";
/// Connector families carry the transfer direction besides `engine` and `model_name`.
const EM_TRANSFER: &[&str] = &["engine", "model_name", "transfer_type"];
/// The tiering offload spec's families carry the tier they measure.
const EM_TIER: &[&str] = &["engine", "model_name", "tier"];
/// Connector families per store operation (and its outcome, for the Mooncake store).
const EM_OPERATION: &[&str] = &["engine", "model_name", "operation"];
const EM_OPERATION_STATUS: &[&str] = &["engine", "model_name", "operation", "status"];
/// The dev-mode operation families are module-level, labelled by operation only.
const OPERATION: &[&str] = &["operation"];
/// The names vLLM 0.33.0 added over 0.32.0 (§vllm-0.32-source): connector families only.
const V0_33: Version = v(33, 0);
/// The flat offloading-connector names are absent from upstream main at 9aaf83ef5
/// (2026-05-19, after 0.20.2): the earliest release they can have come with.
const FLAT_OFFLOAD: Version = v(21, 0);
/// Where a change seen first in 0.32.0 (absent from 0.26.0) is placed: the earliest release it
/// can have come with. Its notes say "0.27–0.32".
pub const AFTER_0_26: Version = v(27, 0);
const DEPRECATED_V0_08: (Option<Version>, Option<Version>, Option<Version>) =
    (some(8, 0), some(9, 0), some(9, 1));

/// `vllm:kv_cache_usage_perc` was declared without a multiprocess mode from its start (0.9.2)
/// until the fix merged 2025-11-17 (d4acf518d, `mostrecent`; first release ≈0.12.0), unlike the
/// running/waiting gauges and `vllm:gpu_cache_usage_perc` beside it, which were `mostrecent` from
/// the start of multiprocess metrics. With `--api-server-count > 1` vLLM runs `prometheus_client`
/// in multiprocess mode (`PROMETHEUS_MULTIPROC_DIR`, `vllm/v1/metrics/prometheus.py`), so each
/// API-server process exported its own copy with a `pid` label (`docs/SOURCES.md` §vllm-processes).
const MULTI_API_SERVER_COPIES: PerProcess = PerProcess {
    label: "pid",
    since: v(9, 2),
    until: some(12, 0),
    when: "--api-server-count > 1 (prometheus_client multiprocess mode)",
};

/// Every vLLM family the catalog knows.
pub const FAMILIES: &[Family] = &[
    // Scheduler state.
    gauge("vllm:num_requests_running", Requests)
        .concept(C::Running)
        .since(v(2, 4)),
    gauge("vllm:num_requests_waiting", Requests)
        .concept(C::Waiting)
        .since(v(2, 4))
        .note("waiting + skipped-waiting requests"),
    f(
        "vllm:num_requests_waiting_by_reason",
        Gauge,
        Requests,
        &["engine", "model_name", "reason"],
    )
    .only(V1)
    .since(v(20, 0))
    .note("reason=capacity|deferred; sums to vllm:num_requests_waiting (merged 2026-04-13, ≈0.20)"),
    gauge("vllm:num_requests_swapped", Requests)
        .only(V0)
        .life(DEPRECATED_V0_08.0, DEPRECATED_V0_08.1, DEPRECATED_V0_08.2)
        .note("V1 does not swap; watch rate(vllm:num_preemptions_total[5m]) instead"),
    f(
        "vllm:engine_sleep_state",
        Gauge,
        Count,
        &["engine", "model_name", "sleep_state"],
    )
    .only(V1)
    .since(v(12, 0)),
    f(
        "vllm:num_requests_kv_fetch_by_stage",
        Gauge,
        Requests,
        &["engine", "model_name", "stage"],
    )
    .only(V1)
    .since(AFTER_0_26)
    .when(KV_CONSUMER)
    .note("waiting requests by the stage of their async KV load, stage=waiting_to_start|in_progress|completed_waiting; the decode side of P/D; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    // KV cache.
    gauge("vllm:kv_cache_usage_perc", Fraction)
        .concept(C::KvUsage)
        .only(V1)
        .since(v(9, 2))
        .per_process(MULTI_API_SERVER_COPIES)
        .note("a 0..1 fraction despite the name: 1 means 100 percent"),
    gauge("vllm:gpu_cache_usage_perc", Fraction)
        .concept(C::KvUsage)
        .since(v(2, 4))
        .life(some(9, 2), some(11, 0), some(12, 0))
        .successor("vllm:kv_cache_usage_perc")
        .note("same 0..1 fraction under the new name; V0 went away with the V0 engine (≈0.11)"),
    gauge("vllm:cpu_cache_usage_perc", Fraction)
        .only(V0)
        .since(v(2, 4))
        .life(DEPRECATED_V0_08.0, DEPRECATED_V0_08.1, DEPRECATED_V0_08.2)
        .note("no replacement: V1 does not offload the KV cache to CPU"),
    gauge("vllm:gpu_prefix_cache_hit_rate", Fraction)
        .only(V0)
        .since(v(5, 5))
        .life(DEPRECATED_V0_08.0, DEPRECATED_V0_08.1, DEPRECATED_V0_08.2)
        .note("V1: rate(vllm:prefix_cache_hits_total[5m]) / rate(vllm:prefix_cache_queries_total[5m])"),
    gauge("vllm:cpu_prefix_cache_hit_rate", Fraction)
        .only(V0)
        .since(v(5, 5))
        .life(DEPRECATED_V0_08.0, DEPRECATED_V0_08.1, DEPRECATED_V0_08.2)
        .note("no replacement: V1 does not offload the KV cache to CPU"),
    counter("vllm:gpu_prefix_cache_queries_total", Tokens)
        .concept(C::PrefixCacheQueries)
        .only(V1)
        .since(v(7, 3))
        .life(some(9, 2), some(11, 0), some(12, 0))
        .successor("vllm:prefix_cache_queries_total")
        .note("counted blocks until ≈0.9.0, tokens after"),
    counter("vllm:gpu_prefix_cache_hits_total", Tokens)
        .concept(C::PrefixCacheHits)
        .only(V1)
        .since(v(7, 3))
        .life(some(9, 2), some(11, 0), some(12, 0))
        .successor("vllm:prefix_cache_hits_total")
        .note("counted blocks until ≈0.9.0, tokens after"),
    counter("vllm:prefix_cache_queries_total", Tokens)
        .concept(C::PrefixCacheQueries)
        .only(V1)
        .since(v(9, 2)),
    counter("vllm:prefix_cache_hits_total", Tokens)
        .concept(C::PrefixCacheHits)
        .only(V1)
        .since(v(9, 2)),
    counter("vllm:external_prefix_cache_queries_total", Tokens)
        .only(V1)
        .since(v(11, 1))
        .note("stays 0 without a KV connector"),
    counter("vllm:external_prefix_cache_hits_total", Tokens)
        .only(V1)
        .since(v(11, 1))
        .note("stays 0 without a KV connector"),
    counter("vllm:mm_cache_queries_total", Count)
        .only(V1)
        .since(v(11, 1)),
    counter("vllm:mm_cache_hits_total", Count)
        .only(V1)
        .since(v(11, 1)),
    // Work done.
    counter("vllm:num_preemptions_total", Count)
        .concept(C::Preemptions)
        .since(v(4, 3))
        .note("V1 exposes it since 0.8.0"),
    counter("vllm:prompt_tokens_total", Tokens)
        .concept(C::PromptTokens)
        .since(v(3, 0))
        .note("all prompt tokens, including prefix-cache hits"),
    f(
        "vllm:prompt_tokens_by_source_total",
        Counter,
        Tokens,
        &["engine", "model_name", "source"],
    )
    .only(V1)
    .since(v(16, 0))
    .note("source=local_compute|local_cache_hit|external_kv_transfer"),
    counter("vllm:prompt_tokens_cached_total", Tokens)
        .only(V1)
        .since(v(16, 0)),
    f(
        "vllm:prompt_tokens_cached_by_source_total",
        Counter,
        Tokens,
        &["engine", "model_name", "source"],
    )
    .only(V1)
    .since(AFTER_0_26)
    .note("prefix-cache hit tokens by tier, source=device|host|disk|p2p|external_unspecified; sums to prefix_cache_hits + external_prefix_cache_hits; absent from a real 0.26.0 page, present on real 0.32.0 pages: added in 0.27–0.32"),
    counter("vllm:prompt_tokens_recomputed_total", Tokens)
        .only(V1)
        .since(v(16, 0))
        .life(None, None, some(20, 0))
        .note("removed without replacement (≈0.20)"),
    counter("vllm:generation_tokens_total", Tokens)
        .concept(C::GeneratedTokens)
        .since(v(3, 0)),
    f(
        "vllm:request_success_total",
        Counter,
        Requests,
        &["engine", "finished_reason", "model_name"],
    )
    .concept(C::RequestsFinished)
    .since(v(4, 3))
    .note("finished_reason=stop|length|abort (+error ≈0.13, +repetition ≈0.17); counts aborts too"),
    f(
        "vllm:admission_rejections_total",
        Counter,
        Requests,
        &["model_name", "reason"],
    )
    .concept(C::AdmissionRejections)
    .only(V1)
    .since(AFTER_0_26)
    .note("frontend admission refusals, reason=max_num_queued_reqs|max_num_queued_tokens; no engine label (counted before any engine sees the request); absent from a real 0.26.0 page, present on real 0.32.0 pages: added in 0.27–0.32"),
    gauge("vllm:avg_prompt_throughput_toks_per_s", Tokens)
        .only(V0)
        .life(None, None, some(7, 1))
        .note("use rate(vllm:prompt_tokens_total[5m])"),
    gauge("vllm:avg_generation_throughput_toks_per_s", Tokens)
        .only(V0)
        .life(None, None, some(7, 1))
        .note("use rate(vllm:generation_tokens_total[5m])"),
    counter("vllm:tokens_total", Tokens)
        .only(V0)
        .life(None, None, some(8, 0))
        .note("declared but never filled"),
    counter("vllm:corrupted_requests_total", Requests)
        .only(V1)
        .since(v(11, 1))
        .when("env VLLM_COMPUTE_NANS_IN_LOGITS=1"),
    f(
        "vllm:watermark_requests_total",
        Counter,
        Requests,
        &["engine", "model_name", "status"],
    )
    .only(V1)
    .since(AFTER_0_26)
    .when("--watermark-config")
    .note("finished requests by watermark status, status=watermarked|skipped|not_watermarked; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    // Request histograms.
    hist("vllm:request_prompt_tokens", Tokens).since(v(4, 2)),
    hist("vllm:request_generation_tokens", Tokens).since(v(4, 2)),
    hist("vllm:iteration_tokens_total", Tokens)
        .concept(C::TokensPerStep)
        .since(v(6, 4))
        .note("a histogram despite the _total: _count counts engine steps, not tokens"),
    hist("vllm:request_max_num_generation_tokens", Tokens).since(v(6, 4)),
    hist("vllm:request_params_n", Count).since(v(4, 2)),
    hist("vllm:request_params_max_tokens", Tokens).since(v(6, 4)),
    hist("vllm:request_params_best_of", Count)
        .only(V0)
        .since(v(4, 2))
        .life(None, None, some(6, 3)),
    hist("vllm:time_to_first_token_seconds", Seconds)
        .concept(C::Ttft)
        .since(v(3, 0))
        .note("from frontend arrival, so it includes queue time"),
    hist("vllm:time_per_output_token_seconds", Seconds)
        .concept(C::Itl)
        .since(v(3, 0))
        .life(some(11, 0), some(12, 0), some(15, 0))
        .successor("vllm:inter_token_latency_seconds")
        .note("identical observations (one per inter-token gap); the per-request mean is vllm:request_time_per_output_token_seconds"),
    hist("vllm:inter_token_latency_seconds", Seconds)
        .concept(C::Itl)
        .since(v(11, 0)),
    hist("vllm:request_time_per_output_token_seconds", Seconds)
        .concept(C::Tpot)
        .only(V1)
        .since(v(11, 0))
        .note("one observation per finished request (its mean time per output token)"),
    hist("vllm:e2e_request_latency_seconds", Seconds)
        .concept(C::E2eLatency)
        .since(v(3, 0))
        .life(None, None, some(26, 0))
        .restored(AFTER_0_26)
        .note("absent from a real vLLM 0.26.0 page, present again on real 0.32.0 pages (issue 11; neither release boundary is pinned down); where absent, server-side e2e ≈ vllm:request_queue_time_seconds + vllm:request_inference_time_seconds"),
    hist("vllm:request_queue_time_seconds", Seconds)
        .concept(C::QueueTime)
        .since(v(6, 4)),
    hist("vllm:request_inference_time_seconds", Seconds)
        .concept(C::RunningSeconds)
        .since(v(6, 4)),
    hist("vllm:request_prefill_time_seconds", Seconds).since(v(6, 4)),
    hist("vllm:request_decode_time_seconds", Seconds).since(v(6, 4)),
    hist("vllm:request_prefill_kv_computed_tokens", Tokens)
        .only(V1)
        .since(v(13, 0)),
    hist("vllm:request_num_preemptions", Count)
        .only(V1)
        .since(AFTER_0_26)
        .note("preemptions per finished request, buckets 1,2,3,4,5,10,20 (most requests land in le=1 with 0); absent from a real 0.26.0 page, present on real 0.32.0 pages: added in 0.27–0.32"),
    hist("vllm:time_in_queue_requests", Seconds)
        .only(V0)
        .since(v(6, 4))
        .life(DEPRECATED_V0_08.0, DEPRECATED_V0_08.1, DEPRECATED_V0_08.2)
        .successor("vllm:request_queue_time_seconds"),
    hist("vllm:model_forward_time_milliseconds", Milliseconds)
        .only(V0)
        .since(v(6, 4))
        .life(DEPRECATED_V0_08.0, DEPRECATED_V0_08.1, DEPRECATED_V0_08.2)
        .note("V1: vllm:request_prefill_time_seconds / vllm:request_decode_time_seconds / vllm:request_inference_time_seconds"),
    hist("vllm:model_execute_time_milliseconds", Milliseconds)
        .only(V0)
        .since(v(6, 4))
        .life(DEPRECATED_V0_08.0, DEPRECATED_V0_08.1, DEPRECATED_V0_08.2)
        .note("V1: vllm:request_prefill_time_seconds / vllm:request_decode_time_seconds / vllm:request_inference_time_seconds"),
    // Info.
    f("vllm:cache_config_info", Gauge, Info, &["engine", "*"])
        .since(v(5, 5))
        .note("constant 1; one label per CacheConfig field (block_size, cache_dtype, enable_prefix_caching, gpu_memory_utilization, num_gpu_blocks, …), changing with vLLM versions; no model_name"),
    f("vllm:lora_requests_info", Gauge, Timestamp, &["max_lora", "running_lora_adapters", "waiting_lora_adapters"])
        .since(v(6, 3))
        .when("LoRA is enabled")
        .note("the value is a unix timestamp; take the series with the max value"),
    // Speculative decoding.
    counter("vllm:spec_decode_num_drafts_total", Count)
        .concept(C::SpecDrafts)
        .only(V1)
        .since(v(8, 5))
        .when(SPEC),
    counter("vllm:spec_decode_num_draft_tokens_total", Tokens)
        .concept(C::SpecDraftTokens)
        .since(v(5, 3))
        .when(SPEC),
    counter("vllm:spec_decode_num_accepted_tokens_total", Tokens)
        .concept(C::SpecAcceptedTokens)
        .since(v(5, 3))
        .when(SPEC),
    f("vllm:spec_decode_num_accepted_tokens_per_pos_total", Counter, Tokens, &["engine", "model_name", "position"])
        .only(V1)
        .since(v(8, 5))
        .when(SPEC),
    // A discrete-diffusion model fills the spec-decode counters under its own names (drafts →
    // denoising steps, draft tokens → canvas positions, accepted tokens → committed tokens).
    counter("vllm:diffusion_num_denoising_steps_total", Count)
        .only(V1)
        .since(AFTER_0_26)
        .when(DIFFUSION)
        .note("the spec_decode_num_drafts_total of a diffusion model; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    counter("vllm:diffusion_num_canvas_positions_total", Tokens)
        .only(V1)
        .since(AFTER_0_26)
        .when(DIFFUSION)
        .note("canvas positions evaluated (the spec_decode_num_draft_tokens_total of a diffusion model); ⚠ dated as vllm:diffusion_num_denoising_steps_total"),
    counter("vllm:diffusion_num_committed_tokens_total", Tokens)
        .only(V1)
        .since(AFTER_0_26)
        .when(DIFFUSION)
        .note("tokens finalized (the spec_decode_num_accepted_tokens_total of a diffusion model); ⚠ dated as vllm:diffusion_num_denoising_steps_total"),
    gauge("vllm:spec_decode_draft_acceptance_rate", Fraction)
        .only(V0)
        .since(v(5, 3))
        .life(None, None, some(10, 0))
        .when(SPEC)
        .note("V1: rate(vllm:spec_decode_num_accepted_tokens_total[5m]) / rate(vllm:spec_decode_num_draft_tokens_total[5m])"),
    gauge("vllm:spec_decode_efficiency", Fraction)
        .only(V0)
        .since(v(5, 3))
        .life(None, None, some(10, 0))
        .when(SPEC)
        .note("V1: compute from the spec_decode_num_* counters"),
    counter("vllm:spec_decode_num_emitted_tokens_total", Tokens)
        .only(V0)
        .since(v(5, 3))
        .life(None, None, some(10, 0))
        .when(SPEC)
        .note("V1: compute from the spec_decode_num_* counters"),
    // Optional families.
    counter("vllm:estimated_flops_per_gpu_total", Flops)
        .only(V1)
        .since(v(17, 0))
        .note("TFLOP/s = rate(vllm:estimated_flops_per_gpu_total[1m]) / 1e12; always on the page (registered unconditionally since merge 2026-02-23, ≈0.17), but counts only with --enable-mfu-metrics: 0 otherwise"),
    counter("vllm:estimated_read_bytes_per_gpu_total", Unit::Bytes)
        .only(V1)
        .since(v(17, 0))
        .note("always on the page (registered unconditionally since merge 2026-02-23, ≈0.17), but counts only with --enable-mfu-metrics: 0 otherwise"),
    counter("vllm:estimated_write_bytes_per_gpu_total", Unit::Bytes)
        .only(V1)
        .since(v(17, 0))
        .note("always on the page (registered unconditionally since merge 2026-02-23, ≈0.17), but counts only with --enable-mfu-metrics: 0 otherwise"),
    hist("vllm:kv_block_lifetime_seconds", Seconds)
        .only(V1)
        .since(v(13, 0))
        .when("--kv-cache-metrics"),
    hist("vllm:kv_block_idle_before_evict_seconds", Seconds)
        .only(V1)
        .since(v(13, 0))
        .when("--kv-cache-metrics"),
    hist("vllm:kv_block_reuse_gap_seconds", Seconds)
        .only(V1)
        .since(v(13, 0))
        .when("--kv-cache-metrics"),
    // KV connectors (vllm/distributed/kv_transfer/kv_connector/v1/*): registered by the
    // connector's own KVConnectorPromMetrics, with the engine's labels.
    hist("vllm:nixl_xfer_time_seconds", Seconds)
        .only(V1)
        .since(v(11, 1))
        .when(NIXL)
        .note("merged 2025-10-29 (≈0.11.1)"),
    hist("vllm:nixl_post_time_seconds", Seconds)
        .only(V1)
        .since(v(11, 1))
        .when(NIXL),
    hist("vllm:nixl_bytes_transferred", Unit::Bytes)
        .only(V1)
        .since(v(11, 1))
        .when(NIXL)
        .note("bytes per transfer, buckets 2 KiB to 8 GiB"),
    hist("vllm:nixl_num_descriptors", Count)
        .only(V1)
        .since(v(11, 1))
        .when(NIXL),
    counter("vllm:nixl_num_failed_transfers_total", Count)
        .only(V1)
        .since(v(11, 1))
        .when(NIXL),
    counter("vllm:nixl_num_failed_notifications_total", Count)
        .only(V1)
        .since(v(11, 1))
        .when(NIXL),
    counter("vllm:nixl_num_kv_expired_reqs_total", Requests)
        .only(V1)
        .since(v(15, 0))
        .when(NIXL)
        .note("counted on the prefill instance; merged 2026-01-19 (≈0.15)"),
    counter("vllm:nixl_num_notifications_after_expiry_total", Count)
        .only(V1)
        .since(AFTER_0_26)
        .when(NIXL)
        .note("completion notices for requests no longer tracked (their KV lease had expired, the blocks maybe reused), one per remote rank; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    f("vllm:kv_offload_total_bytes_total", Counter, Unit::Bytes, EM_TRANSFER)
        .only(V1)
        .since(v(15, 0))
        .when(OFFLOAD)
        .note("declared vllm:kv_offload_total_bytes; transfer_type=GPU_to_CPU (stores) or CPU_to_GPU (loads); merged 2026-01-27 (≈0.15); kept as a deprecated twin of vllm:kv_offload_store_bytes_total / vllm:kv_offload_load_bytes_total once those exist"),
    f("vllm:kv_offload_total_time_total", Counter, Seconds, EM_TRANSFER)
        .only(V1)
        .since(v(15, 0))
        .when(OFFLOAD)
        .note("seconds spent transferring, per transfer_type; the flat names split it into load and store time"),
    f("vllm:kv_offload_size", Histogram, Unit::Bytes, EM_TRANSFER)
        .only(V1)
        .since(v(15, 0))
        .when(OFFLOAD)
        .note("bytes per transfer, buckets 1e6..2e8"),
    counter("vllm:kv_offload_load_bytes_total", Unit::Bytes)
        .only(V1)
        .since(FLAT_OFFLOAD)
        .when(OFFLOAD)
        .note("bytes loaded back from the offload tier to GPU; ⚠ read in a later copy of offloading/metrics.py whose commit the index did not name: the version is a lower bound (absent at 9aaf83ef5, 2026-05-19)"),
    counter("vllm:kv_offload_load_time_total", Seconds)
        .only(V1)
        .since(FLAT_OFFLOAD)
        .when(OFFLOAD)
        .note("⚠ lower-bound version, as vllm:kv_offload_load_bytes_total"),
    hist("vllm:kv_offload_load_size", Unit::Bytes)
        .only(V1)
        .since(FLAT_OFFLOAD)
        .when(OFFLOAD)
        .note("⚠ lower-bound version, as vllm:kv_offload_load_bytes_total"),
    counter("vllm:kv_offload_store_bytes_total", Unit::Bytes)
        .only(V1)
        .since(FLAT_OFFLOAD)
        .when(OFFLOAD)
        .note("bytes stored from GPU to the offload tier; ⚠ lower-bound version, as vllm:kv_offload_load_bytes_total"),
    counter("vllm:kv_offload_store_time_total", Seconds)
        .only(V1)
        .since(FLAT_OFFLOAD)
        .when(OFFLOAD)
        .note("⚠ lower-bound version, as vllm:kv_offload_load_bytes_total"),
    hist("vllm:kv_offload_store_size", Unit::Bytes)
        .only(V1)
        .since(FLAT_OFFLOAD)
        .when(OFFLOAD)
        .note("⚠ lower-bound version, as vllm:kv_offload_load_bytes_total"),
    counter("vllm:kv_offload_stores_skipped_total", Count)
        .only(V1)
        .since(FLAT_OFFLOAD)
        .when("the offloading KV connector with a store reuse threshold of 2 or more")
        .note("stores skipped because the block was not reused often enough; ⚠ lower-bound version"),
    gauge("vllm:kv_offload_cpu_cache_usage_perc", Fraction)
        .only(V1)
        .since(FLAT_OFFLOAD)
        .when(OFFLOAD_CPU)
        .note("a 0..1 fraction of the CPU tier pinned by transfers in flight, not how full the tier is; ⚠ lower-bound version"),
    gauge("vllm:kv_offload_cpu_cache_write_usage_perc", Fraction)
        .only(V1)
        .since(AFTER_0_26)
        .when(OFFLOAD_CPU)
        .note("the share of vllm:kv_offload_cpu_cache_usage_perc pinned by stores in flight; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    gauge("vllm:kv_offload_cpu_cache_read_usage_perc", Fraction)
        .only(V1)
        .since(AFTER_0_26)
        .when(OFFLOAD_CPU)
        .note("the share of vllm:kv_offload_cpu_cache_usage_perc pinned by loads in flight; ⚠ dated as vllm:kv_offload_cpu_cache_write_usage_perc"),
    hist("vllm:kv_offload_cpu_allocation_size", Count)
        .only(V1)
        .since(AFTER_0_26)
        .when(OFFLOAD_CPU)
        .note("CPU chunks asked for per store preparation, buckets 1..262144; ⚠ dated as vllm:kv_offload_cpu_cache_write_usage_perc"),
    hist("vllm:kv_offload_lookup_sync_delay_seconds", Seconds)
        .only(V1)
        .since(AFTER_0_26)
        .when(OFFLOAD)
        .note("time one offload lookup call blocks the scheduler, buckets 10 µs..1 s; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    hist("vllm:kv_offload_lookup_async_delay_seconds", Seconds)
        .only(V1)
        .since(AFTER_0_26)
        .when(OFFLOAD)
        .note("from a lookup first deferring to the lookup that resolves it (or the request finishing), buckets 100 µs..10 s; ⚠ dated as vllm:kv_offload_lookup_sync_delay_seconds"),
    counter("vllm:kv_offload_allocation_failure_total", Count)
        .only(V1)
        .since(AFTER_0_26)
        .when(OFFLOAD)
        .note("store allocations in the offload tier that failed; declared vllm:kv_offload_allocation_failure; ⚠ dated as vllm:kv_offload_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_config_info", Gauge, Info, &["engine", "model_name", "*"])
        .only(V1)
        .since(V0_33)
        .when(OFFLOAD)
        .note("static configuration of the offload managers, one label per fact the offloading spec declares, from the first scheduler step; per engine, not the instance total; added in 0.33.0"),
    // The tiering offload spec (a CPU primary tier in front of secondary tiers): its own names
    // besides the CPU backend's.
    f("vllm:kv_offload_tiering_lookup_sync_delay_seconds", Histogram, Seconds, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("blocking time of one per-chunk lookup in a tier that resolved as hit or miss, by tier; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    f("vllm:kv_offload_tiering_lookup_async_delay_seconds", Histogram, Seconds, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("from a tier lookup first asking to retry to its resolution, by tier; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_read_bytes_total", Counter, Unit::Bytes, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("bytes read from a secondary tier into the primary (CPU) tier; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_read_time_total", Counter, Seconds, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("seconds spent reading from a secondary tier; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_write_bytes_total", Counter, Unit::Bytes, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("bytes written from the primary tier to a secondary tier; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_write_time_total", Counter, Seconds, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("seconds spent writing to a secondary tier; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_promotion_job_failures_total", Counter, Count, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("failed promotions (secondary → primary) by tier; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_cascade_job_failures_total", Counter, Count, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("failed cascades (primary → secondary) by tier; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_chunk_queries_total", Counter, Count, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("chunk lookups sent to a tier; hit rate = rate(…chunk_hits_total) / rate(…chunk_queries_total) per tier; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_chunk_hits_total", Counter, Count, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("chunk lookups a tier answered with a hit; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    counter("vllm:kv_offload_tiering_promotion_allocation_failures_total", Count)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("promotions that failed for want of primary-tier space (no tier label); ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_primary_write_usage_perc", Gauge, Fraction, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("0..1 share of the primary tier taken by writes coming from a secondary tier; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_primary_read_usage_perc", Gauge, Fraction, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("0..1 share of the primary tier taken by reads going to a secondary tier; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_active_promotion_jobs", Gauge, Count, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_active_cascade_jobs", Gauge, Count, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_backpressure_store_latency_ema", Gauge, Seconds, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("moving average of store latency to a tier in seconds per MiB, not seconds; what back-pressure detection reads; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_backpressure_stores_dropped_total", Counter, Count, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("stores to a tier dropped under back-pressure; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_backpressure_blocks_dropped_total", Counter, Count, EM_TIER)
        .only(V1)
        .since(AFTER_0_26)
        .when(TIERING)
        .note("blocks dropped under back-pressure on a tier; ⚠ dated as vllm:kv_offload_tiering_lookup_sync_delay_seconds"),
    f("vllm:kv_offload_tiering_promotion_latency_seconds", Histogram, Seconds, EM_TIER)
        .only(V1)
        .since(V0_33)
        .when(TIERING)
        .note("time of a promotion from a secondary tier, buckets 100 µs..10 s; added in 0.33.0 (PR #53910); ⚠ kind, tier label and buckets from a release digest, not read in source"),
    // The simple CPU offloading connector.
    f(
        "vllm:simple_kv_offload_save_outcomes_total",
        Counter,
        Count,
        &["engine", "model_name", "outcome"],
    )
    .only(V1)
    .since(AFTER_0_26)
    .when(SIMPLE_OFFLOAD)
    .note("store decisions, outcome=stored|dropped_cpu_full|dropped_request_gone|dropped_null_block|dropped_not_hashed|skipped_already_cached|skipped_in_flight; eager-mode stores only; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    counter("vllm:simple_kv_offload_load_blocks_total", Count)
        .only(V1)
        .since(AFTER_0_26)
        .when(SIMPLE_OFFLOAD)
        .note("KV blocks loaded back to GPU (prefill avoided by offload hits); ⚠ dated as vllm:simple_kv_offload_save_outcomes_total"),
    gauge("vllm:simple_kv_offload_used_blocks", Count)
        .only(V1)
        .since(AFTER_0_26)
        .when(SIMPLE_OFFLOAD)
        .note("pool blocks pinned by transfers in flight or cache hits, evictable cached blocks not counted; the pool size is the capacity_blocks label of vllm:simple_kv_offload_info; ⚠ dated as vllm:simple_kv_offload_save_outcomes_total"),
    gauge("vllm:simple_kv_offload_pending_store_blocks", Count)
        .only(V1)
        .since(AFTER_0_26)
        .when(SIMPLE_OFFLOAD)
        .note("blocks in stores not yet done; one that only grows is a stuck transfer; ⚠ dated as vllm:simple_kv_offload_save_outcomes_total"),
    f(
        "vllm:simple_kv_offload_info",
        Gauge,
        Info,
        &["engine", "model_name", "backend", "page_cache", "lazy_offload", "capacity_blocks"],
    )
    .only(V1)
    .since(AFTER_0_26)
    .when(SIMPLE_OFFLOAD)
    .note("constant 1; backend=cpu|disk, capacity_blocks is the pool size; ⚠ dated as vllm:simple_kv_offload_save_outcomes_total"),
    // The HiSparse connector (a host KV store behind device hot buffers).
    counter("vllm:hisparse_cache_hits_total", Count)
        .only(V1)
        .since(AFTER_0_26)
        .when(HISPARSE)
        .note("device hot-buffer hits; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    counter("vllm:hisparse_cache_misses_total", Count)
        .only(V1)
        .since(AFTER_0_26)
        .when(HISPARSE)
        .note("device hot-buffer misses; ⚠ dated as vllm:hisparse_cache_hits_total"),
    counter("vllm:hisparse_host_to_device_bytes_total", Unit::Bytes)
        .only(V1)
        .since(AFTER_0_26)
        .when(HISPARSE)
        .note("⚠ dated as vllm:hisparse_cache_hits_total"),
    gauge("vllm:hisparse_host_cache_usage_perc", Fraction)
        .only(V1)
        .since(AFTER_0_26)
        .when(HISPARSE)
        .note("a 0..1 fraction of the host KV store in use, evictable cached blocks counted free; ⚠ dated as vllm:hisparse_cache_hits_total"),
    gauge("vllm:hisparse_pending_page_transfers", Count)
        .only(V1)
        .since(AFTER_0_26)
        .when(HISPARSE)
        .note("write-backs and restores not yet done; ⚠ dated as vllm:hisparse_cache_hits_total"),
    hist("vllm:hisparse_host_block_lifetime_seconds", Seconds)
        .only(V1)
        .since(AFTER_0_26)
        .when("the HiSparse KV connector with --kv-cache-metrics")
        .note("sampled like vllm:kv_block_lifetime_seconds, for host blocks; ⚠ dated as vllm:hisparse_cache_hits_total"),
    hist("vllm:hisparse_host_block_idle_before_evict_seconds", Seconds)
        .only(V1)
        .since(AFTER_0_26)
        .when("the HiSparse KV connector with --kv-cache-metrics")
        .note("⚠ dated as vllm:hisparse_cache_hits_total"),
    hist("vllm:hisparse_host_block_reuse_gap_seconds", Seconds)
        .only(V1)
        .since(AFTER_0_26)
        .when("the HiSparse KV connector with --kv-cache-metrics")
        .note("⚠ dated as vllm:hisparse_cache_hits_total"),
    // The Mooncake store connector: one series set per RPC and outcome.
    f("vllm:mooncake_store_operation_time_seconds", Histogram, Seconds, EM_OPERATION_STATUS)
        .only(V1)
        .since(AFTER_0_26)
        .when(MOONCAKE_STORE)
        .note("time of one store RPC, operation=save_exists|save_put|load_get|lookup_exists, status=ok|error; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    f("vllm:mooncake_store_operation_total", Counter, Count, EM_OPERATION_STATUS)
        .only(V1)
        .since(AFTER_0_26)
        .when(MOONCAKE_STORE)
        .note("store RPCs; ⚠ dated as vllm:mooncake_store_operation_time_seconds"),
    f("vllm:mooncake_store_operation_keys_total", Counter, Count, EM_OPERATION_STATUS)
        .only(V1)
        .since(AFTER_0_26)
        .when(MOONCAKE_STORE)
        .note("keys the RPCs touched; ⚠ dated as vllm:mooncake_store_operation_time_seconds"),
    f("vllm:mooncake_store_operation_bytes_total", Counter, Unit::Bytes, EM_OPERATION_STATUS)
        .only(V1)
        .since(AFTER_0_26)
        .when(MOONCAKE_STORE)
        .note("⚠ dated as vllm:mooncake_store_operation_time_seconds"),
    f("vllm:mooncake_store_operation_failed_keys_total", Counter, Count, EM_OPERATION_STATUS)
        .only(V1)
        .since(AFTER_0_26)
        .when(MOONCAKE_STORE)
        .note("⚠ dated as vllm:mooncake_store_operation_time_seconds"),
    // The Mooncake (P2P) connector: NIXL's set under its own prefix, added in 0.33.0 (0.32.0 kept
    // the stats without exporting them).
    hist("vllm:mooncake_xfer_time_seconds", Seconds)
        .only(V1)
        .since(V0_33)
        .when(MOONCAKE)
        .note("duration of one KV transfer, buckets 5 ms..5 s; added in 0.33.0"),
    hist("vllm:mooncake_bytes_transferred", Unit::Bytes)
        .only(V1)
        .since(V0_33)
        .when(MOONCAKE)
        .note("bytes per transfer, buckets 2 KiB..8 GiB; added in 0.33.0"),
    hist("vllm:mooncake_num_descriptors", Count)
        .only(V1)
        .since(V0_33)
        .when(MOONCAKE)
        .note("descriptors per transfer; added in 0.33.0"),
    counter("vllm:mooncake_num_failed_transfers_total", Count)
        .only(V1)
        .since(V0_33)
        .when(MOONCAKE)
        .note("added in 0.33.0"),
    counter("vllm:mooncake_num_failed_recvs_total", Count)
        .only(V1)
        .since(V0_33)
        .when(MOONCAKE)
        .note("added in 0.33.0"),
    counter("vllm:mooncake_num_kv_expired_reqs_total", Requests)
        .only(V1)
        .since(V0_33)
        .when(MOONCAKE)
        .note("counted on the prefill instance; added in 0.33.0"),
    // The UMBP store connector, added in 0.33.0: per operation.
    f("vllm:umbp_transfer_submitted_total", Counter, Count, EM_OPERATION)
        .only(V1)
        .since(V0_33)
        .when(UMBP)
        .note("objects submitted; added in 0.33.0"),
    f("vllm:umbp_transfer_completed_total", Counter, Count, EM_OPERATION)
        .only(V1)
        .since(V0_33)
        .when(UMBP)
        .note("added in 0.33.0"),
    f("vllm:umbp_transfer_failed_total", Counter, Count, EM_OPERATION)
        .only(V1)
        .since(V0_33)
        .when(UMBP)
        .note("added in 0.33.0"),
    f("vllm:umbp_transfer_bytes_total", Counter, Unit::Bytes, EM_OPERATION)
        .only(V1)
        .since(V0_33)
        .when(UMBP)
        .note("added in 0.33.0"),
    hist("vllm:hf3fs_save_duration_seconds", Seconds)
        .only(V1)
        .since(v(19, 0))
        .when(HF3FS)
        .note("merged 2026-04-07 (≈0.19)"),
    hist("vllm:hf3fs_load_duration_seconds", Seconds)
        .only(V1)
        .since(v(19, 0))
        .when(HF3FS),
    counter("vllm:hf3fs_num_failed_save_total", Count)
        .only(V1)
        .since(v(19, 0))
        .when(HF3FS),
    counter("vllm:hf3fs_num_failed_load_total", Count)
        .only(V1)
        .since(v(19, 0))
        .when(HF3FS),
    // The realtime speech-to-text endpoint's WebSocket middleware: module-level metrics, no labels.
    f("vllm:websocket_connections_active", Gauge, Count, &[])
        .only(V1)
        .since(v(17, 0))
        .when(REALTIME)
        .note("merged 2026-03-04 (≈0.17)"),
    f("vllm:websocket_connections_total", Counter, Count, &[])
        .only(V1)
        .since(v(17, 0))
        .when(REALTIME),
    f("vllm:websocket_connection_duration_seconds", Histogram, Seconds, &[])
        .only(V1)
        .since(v(17, 0))
        .when(REALTIME),
    // Dev-mode endpoints of the API server: module-level, created at an endpoint's first call,
    // labelled by operation only (no engine or model_name).
    f("vllm:sleep_mode_operation_duration_seconds", Histogram, Seconds, OPERATION)
        .only(V1)
        .since(AFTER_0_26)
        .when(SLEEP_OPS)
        .note("operation=sleep|release_kv_cache_memory|wake, buckets 10 ms..600 s; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    f("vllm:sleep_mode_operations_in_flight", Gauge, Count, OPERATION)
        .only(V1)
        .since(AFTER_0_26)
        .when(SLEEP_OPS)
        .note("operations awaited now, summed over API-server processes; > 0 means paused on purpose, not hung; ⚠ dated as vllm:sleep_mode_operation_duration_seconds"),
    f("vllm:rl_weight_update_operation_duration_seconds", Histogram, Seconds, OPERATION)
        .only(V1)
        .since(AFTER_0_26)
        .when(WEIGHT_OPS)
        .note("operation=init|shutdown|start|start_draft|update|finish, buckets 10 ms..600 s; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    f("vllm:rl_weight_update_operations_in_flight", Gauge, Count, OPERATION)
        .only(V1)
        .since(AFTER_0_26)
        .when(WEIGHT_OPS)
        .note("weight-transfer operations awaited now, summed over API-server processes; > 0 means paused for an RL weight sync, not hung; ⚠ dated as vllm:rl_weight_update_operation_duration_seconds"),
    // The API server's tool-call parser.
    f(
        "vllm:tool_call_parser_invocations_total",
        Counter,
        Count,
        &["model_name", "mode", "outcome", "request_type"],
    )
    .only(V1)
    .since(AFTER_0_26)
    .when("--tool-call-parser")
    .note("parser runs, once per choice (non-streaming) or per delta (streaming); mode=streaming|non_streaming, outcome=tool_call|no_tool_call (a parser failure counts as no_tool_call), request_type=chat_completions|responses|other; no engine label; ⚠ read in the 0.32.0 source only: dated 0.27–0.32, no earlier source read"),
    // prometheus-fastapi-instrumentator on the same page.
    f("http_requests_total", Counter, Requests, &["handler", "method", "status"])
        .when("the API server's HTTP instrumentation (on by default)"),
    f("http_request_duration_seconds", Histogram, Seconds, &["handler", "method"])
        .when("the API server's HTTP instrumentation (on by default)"),
    f("http_request_duration_highr_seconds", Histogram, Seconds, &[])
        .when("the API server's HTTP instrumentation (on by default)"),
    f("http_request_size_bytes", Summary, Unit::Bytes, &["handler"])
        .when("the API server's HTTP instrumentation (on by default)"),
    f("http_response_size_bytes", Summary, Unit::Bytes, &["handler"])
        .when("the API server's HTTP instrumentation (on by default)"),
];

/// The engine a vLLM version runs by default: V1 from 0.8.0 (and the only one from ≈0.11).
pub fn default_variant(version: Version) -> Variant {
    if version >= v(8, 0) { V1 } else { V0 }
}

/// Label names of a vLLM family at `version`: no `engine` label on V0, nor on V1 before 0.8.3.
pub fn labels_at(family: &Family, version: Version, variant: Variant) -> Vec<&'static str> {
    let has_engine = variant == V1 && version >= v(8, 3);
    family
        .labels
        .iter()
        .copied()
        .filter(|l| *l != "engine" || has_engine)
        .collect()
}
