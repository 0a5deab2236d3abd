//! vLLM's `/metrics` page rendered from [`EngineStats`], for a chosen metrics dialect.
//!
//! The page follows `prometheus_client`'s exposition rules as vLLM serves them
//! (`docs/SOURCES.md` §exposition): families in registration order, label names sorted,
//! `floatToGoString` numbers, histogram buckets then `_count` then `_sum`, and a separate
//! `<name>_created` gauge family after every counter and histogram. [`Dialect`] selects the name
//! set of a vLLM version, so the rest of llmscope can be tested against the renames
//! (`gpu_cache_usage_perc` → `kv_cache_usage_perc`, `time_per_output_token_seconds` →
//! `inter_token_latency_seconds`, …). The newest dialect, 0.32, has exactly the `vllm:` names of
//! real vLLM 0.32.0 pages (`crates/catalog/tests/fixtures/vllm-0.32.0/`) for what the simulator
//! models; what 0.32.0 added over 0.26.0 starts at 0.27, as in the catalog (issue 11).

use crate::engine::Engine;
use crate::stats::{EngineStats, FinishReason, Histogram, RequestHistograms};
use promtext::MetricType;
use promtext::fmt::python_float;
use promtext::write::{FloatStyle, Writer};

/// A vLLM version's metric name set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dialect {
    pub minor: u32,
    pub patch: u32,
}

impl Dialect {
    /// The newest name set the simulator knows (vLLM 0.32).
    pub const LATEST: Dialect = Dialect {
        minor: 32,
        patch: 0,
    };
    /// What the simulator serves unless told otherwise (`SimConfig::new`, `--metrics-dialect`):
    /// still 0.26. Moving it to [`Dialect::LATEST`] changes what the Prometheus-backed CLI tests
    /// see (they pin 0.26 facts: no e2e histogram, `vllm >=0.26.0`), which cannot be run where
    /// no Prometheus is installed; a separate change can move it with those tests.
    pub const DEFAULT: Dialect = Dialect {
        minor: 26,
        patch: 0,
    };
    /// The dialects `--metrics-dialect` accepts, newest first, with what changes in each.
    pub const KNOWN: &'static [(&'static str, &'static str)] = &[
        (
            "0.32",
            "current names: 0.26's plus e2e_request_latency_seconds again, admission_rejections, prompt_tokens_cached_by_source, request_num_preemptions; cache_config_info with kv_cache_size_tokens",
        ),
        (
            "0.26",
            "kv_cache_usage_perc, inter_token_latency_seconds, prompt_tokens_by_source, waiting_by_reason; no e2e_request_latency_seconds",
        ),
        (
            "0.11",
            "kv_cache_usage_perc and inter_token_latency_seconds, plus the deprecated time_per_output_token_seconds",
        ),
        (
            "0.10",
            "gpu_cache_usage_perc and kv_cache_usage_perc, gpu_prefix_cache_*, time_per_output_token_seconds",
        ),
        (
            "0.8",
            "gpu_cache_usage_perc, gpu_prefix_cache_*, time_per_output_token_seconds only",
        ),
    ];

    /// Parses `0.32`, `v0.11`, `0.10.2`.
    pub fn parse(s: &str) -> Option<Dialect> {
        let s = s.trim().trim_start_matches('v');
        let mut parts = s.split('.');
        let major: u32 = parts.next()?.parse().ok()?;
        let minor: u32 = parts.next()?.parse().ok()?;
        let patch: u32 = parts.next().map_or(Some(0), |p| p.parse().ok())?;
        if major != 0 || parts.next().is_some() || !(8..=32).contains(&minor) {
            return None;
        }
        Some(Dialect { minor, patch })
    }

    fn at_least(self, minor: u32, patch: u32) -> bool {
        (self.minor, self.patch) >= (minor, patch)
    }

    fn before(self, minor: u32, patch: u32) -> bool {
        !self.at_least(minor, patch)
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "0.{}.{}", self.minor, self.patch)
    }
}

/// Renders the whole page.
pub fn render(engine: &Engine, dialect: Dialect, created_unix: f64) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let model = engine.model.id;
    let mut p = Page {
        w: Writer::new(&mut out, FloatStyle::Python),
        model,
        created: created_unix,
    };
    let s = &engine.stats;
    // Real 0.32.0 pages register the MFU counters first; 0.26's list does not say where.
    let mfu_first = dialect.at_least(AFTER_0_26, 0);
    if mfu_first {
        mfu_counters(&mut p, s);
    }
    scheduler_gauges(&mut p, s, dialect);
    cache_counters(&mut p, s, dialect);
    token_counters(&mut p, s, dialect);
    request_histograms(&mut p, s, dialect);
    if dialect.at_least(AFTER_0_26, 0) {
        cache_config_info_0_32(&mut p, engine);
    } else {
        cache_config_info(&mut p, engine);
    }
    if dialect.at_least(17, 0) && !mfu_first {
        mfu_counters(&mut p, s);
    }
    out
}

/// Where what real 0.32.0 pages added over 0.26.0 starts (`llmscope_catalog::vllm::AFTER_0_26`).
const AFTER_0_26: u32 = 27;

struct Page<'a> {
    w: Writer<'a>,
    model: &'a str,
    created: f64,
}

impl Page<'_> {
    fn gauge(&mut self, name: &str, help: &str, v: f64) {
        self.w.family(name, help, MetricType::Gauge);
        self.w
            .sample(name, &[("engine", "0"), ("model_name", self.model)], v);
    }

    /// A gauge with one extra label sorted after `engine` and after `model_name`.
    fn gauge_by(&mut self, name: &str, help: &str, label: &str, series: &[(&str, f64)]) {
        self.w.family(name, help, MetricType::Gauge);
        for (value, v) in series {
            self.w.sample(
                name,
                &[("engine", "0"), ("model_name", self.model), (label, value)],
                *v,
            );
        }
    }

    /// `base_total` counter family followed by its `base_created` gauge family.
    fn counter(&mut self, base: &str, help: &str, v: f64) {
        self.counter_by(base, help, None, &[("", v)]);
    }

    fn counter_by(&mut self, base: &str, help: &str, label: Option<&str>, series: &[(&str, f64)]) {
        let total = format!("{base}_total");
        let created = format!("{base}_created");
        for (name, ty, is_created) in [
            (&total, MetricType::Counter, false),
            (&created, MetricType::Gauge, true),
        ] {
            self.w.family(name, help, ty);
            for (value, v) in series {
                let v = if is_created { self.created } else { *v };
                let labels = sorted_labels(self.model, label, value);
                self.w.sample(name, &labels, v);
            }
        }
    }

    fn histogram(&mut self, name: &str, help: &str, h: &Histogram) {
        self.w.family(name, help, MetricType::Histogram);
        let bucket = format!("{name}_bucket");
        let mut le = String::new();
        for (i, cum) in h.cumulative().enumerate() {
            le.clear();
            match h.bounds.get(i) {
                Some(b) => python_float(&mut le, *b),
                None => le.push_str("+Inf"),
            }
            let labels = [
                ("engine", "0"),
                ("le", le.as_str()),
                ("model_name", self.model),
            ];
            self.w.sample(&bucket, &labels, cum as f64);
        }
        let labels = [("engine", "0"), ("model_name", self.model)];
        self.w
            .sample(&format!("{name}_count"), &labels, h.count as f64);
        self.w.sample(&format!("{name}_sum"), &labels, h.sum);
        let created = format!("{name}_created");
        self.w.family(&created, help, MetricType::Gauge);
        self.w.sample(&created, &labels, self.created);
    }
}

/// Label set `engine`, [extra], `model_name`, sorted the way `prometheus_client` sorts.
fn sorted_labels<'b>(
    model: &'b str,
    label: Option<&'b str>,
    value: &'b str,
) -> Vec<(&'b str, &'b str)> {
    let mut labels = vec![("engine", "0"), ("model_name", model)];
    if let Some(l) = label {
        labels.push((l, value));
        labels.sort_by(|a, b| a.0.cmp(b.0));
    }
    labels
}

fn scheduler_gauges(p: &mut Page, s: &EngineStats, d: Dialect) {
    queue_gauges(p, s, d);
    if d.at_least(12, 0) {
        p.gauge_by(
            "vllm:engine_sleep_state",
            "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
            "sleep_state",
            &[("awake", 1.0), ("weights_offloaded", 0.0), ("discard_all", 0.0)],
        );
    }
    kv_usage_gauges(p, s, d);
}

/// Running and waiting requests (and, from 0.20, why they wait).
fn queue_gauges(p: &mut Page, s: &EngineStats, d: Dialect) {
    p.gauge(
        "vllm:num_requests_running",
        "Number of requests in model execution batches.",
        s.running as f64,
    );
    p.gauge(
        "vllm:num_requests_waiting",
        "Number of requests waiting to be processed.",
        s.waiting as f64,
    );
    if d.at_least(20, 0) {
        p.gauge_by(
            "vllm:num_requests_waiting_by_reason",
            "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
            "reason",
            &[("capacity", s.waiting as f64), ("deferred", 0.0)],
        );
    }
}

/// KV-cache usage under its old name (before 0.11), its new one (from 0.9.2), or both.
fn kv_usage_gauges(p: &mut Page, s: &EngineStats, d: Dialect) {
    if d.before(11, 0) {
        p.gauge(
            "vllm:gpu_cache_usage_perc",
            "GPU KV-cache usage. 1 means 100 percent usage.",
            s.kv_usage,
        );
    }
    if d.at_least(9, 2) {
        p.gauge(
            "vllm:kv_cache_usage_perc",
            "KV-cache usage. 1 means 100 percent usage.",
            s.kv_usage,
        );
    }
}

fn cache_counters(p: &mut Page, s: &EngineStats, d: Dialect) {
    prefix_cache_counters(p, s, d);
    if d.at_least(12, 0) {
        unused_cache_counters(p);
    }
    p.counter(
        "vllm:num_preemptions",
        "Cumulative number of preemption from the engine.",
        s.preemptions as f64,
    );
}

/// Prefix-cache queries and hits under their old names (before 0.11), new ones (from 0.9.2), or
/// both.
fn prefix_cache_counters(p: &mut Page, s: &EngineStats, d: Dialect) {
    if d.before(11, 0) {
        p.counter(
            "vllm:gpu_prefix_cache_queries",
            "GPU prefix cache queries, in terms of number of queried tokens.",
            s.prefix_queries as f64,
        );
        p.counter(
            "vllm:gpu_prefix_cache_hits",
            "GPU prefix cache hits, in terms of number of cached tokens.",
            s.prefix_hits as f64,
        );
    }
    if d.at_least(9, 2) {
        p.counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            s.prefix_queries as f64,
        );
        p.counter(
            "vllm:prefix_cache_hits",
            "Prefix cache hits, in terms of number of cached tokens.",
            s.prefix_hits as f64,
        );
    }
}

/// The external (KV connector) and multi-modal caches, which the simulator does not have: 0.
fn unused_cache_counters(p: &mut Page) {
    p.counter("vllm:external_prefix_cache_queries", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", 0.0);
    p.counter("vllm:external_prefix_cache_hits", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", 0.0);
    p.counter(
        "vllm:mm_cache_queries",
        "Multi-modal cache queries, in terms of number of queried items.",
        0.0,
    );
    p.counter(
        "vllm:mm_cache_hits",
        "Multi-modal cache hits, in terms of number of cached items.",
        0.0,
    );
}

fn token_counters(p: &mut Page, s: &EngineStats, d: Dialect) {
    prompt_token_counters(p, s, d);
    p.counter(
        "vllm:generation_tokens",
        "Number of generation tokens processed.",
        s.generation_tokens as f64,
    );
    request_success(p, s, d);
    if d.at_least(AFTER_0_26, 0) {
        admission_rejections(p, s.admission_rejections);
    }
}

/// Prompt tokens, and from 0.16 how many were computed or came from the cache.
fn prompt_token_counters(p: &mut Page, s: &EngineStats, d: Dialect) {
    p.counter(
        "vllm:prompt_tokens",
        "Number of prefill tokens processed.",
        s.prompt_tokens as f64,
    );
    if d.at_least(16, 0) {
        p.counter_by(
            "vllm:prompt_tokens_by_source",
            "Number of prompt tokens by source.",
            Some("source"),
            &[
                ("local_compute", s.prompt_tokens_computed as f64),
                ("local_cache_hit", s.prompt_tokens_cached as f64),
                ("external_kv_transfer", 0.0),
            ],
        );
        p.counter(
            "vllm:prompt_tokens_cached",
            "Number of cached prompt tokens (local + external).",
            s.prompt_tokens_cached as f64,
        );
    }
    if d.at_least(AFTER_0_26, 0) {
        cached_prompt_tokens_by_tier(p, s);
    }
}

/// Cached prompt tokens by the cache tier that held them. The simulator has one cache tier, the
/// device's.
fn cached_prompt_tokens_by_tier(p: &mut Page, s: &EngineStats) {
    p.counter_by(
        "vllm:prompt_tokens_cached_by_source",
        "Prefix-cache hit tokens by the cache tier that supplied them.",
        Some("source"),
        &[
            ("device", s.prefix_hits as f64),
            ("host", 0.0),
            ("p2p", 0.0),
            ("disk", 0.0),
            ("external_unspecified", 0.0),
        ],
    );
}

/// Finished requests by reason; `error` from 0.13, `repetition` from 0.17.
fn request_success(p: &mut Page, s: &EngineStats, d: Dialect) {
    let reasons: Vec<(&str, f64)> = FinishReason::ALL
        .iter()
        .zip(s.finished)
        .filter(|(r, _)| match r {
            FinishReason::Error => d.at_least(13, 0),
            FinishReason::Repetition => d.at_least(17, 0),
            _ => true,
        })
        .map(|(r, n)| (r.as_str(), n as f64))
        .collect();
    p.counter_by(
        "vllm:request_success",
        "Count of successfully processed requests.",
        Some("finished_reason"),
        &reasons,
    );
}

/// The frontend's admission refusals: labelled by model and reason only (no `engine`: counted
/// before an engine sees the request). The simulator models `--max-num-queued-reqs` only, so
/// the tokens reason stays 0.
fn admission_rejections(p: &mut Page, queued_reqs: u64) {
    let help = "Number of admission attempts rejected by the frontend.";
    for (name, ty, created) in [
        (
            "vllm:admission_rejections_total",
            MetricType::Counter,
            false,
        ),
        ("vllm:admission_rejections_created", MetricType::Gauge, true),
    ] {
        p.w.family(name, help, ty);
        for reason in ["max_num_queued_reqs", "max_num_queued_tokens"] {
            let v = match (created, reason) {
                (true, _) => p.created,
                (false, "max_num_queued_reqs") => queued_reqs as f64,
                (false, _) => 0.0,
            };
            p.w.sample(name, &[("model_name", p.model), ("reason", reason)], v);
        }
    }
}

fn request_histograms(p: &mut Page, s: &EngineStats, d: Dialect) {
    token_count_histograms(p, &s.hist);
    request_param_histograms(p, &s.hist);
    latency_histograms(p, &s.hist, d);
    e2e_histogram(p, &s.hist, d);
    phase_histograms(p, &s.hist);
    per_request_histograms(p, &s.hist, d);
}

/// Prompt and answer tokens per request, and tokens per engine step.
fn token_count_histograms(p: &mut Page, h: &RequestHistograms) {
    p.histogram(
        "vllm:request_prompt_tokens",
        "Number of prefill tokens processed.",
        &h.prompt_tokens,
    );
    p.histogram(
        "vllm:request_generation_tokens",
        "Number of generation tokens processed.",
        &h.generation_tokens,
    );
    p.histogram(
        "vllm:iteration_tokens_total",
        "Histogram of number of tokens per engine_step.",
        &h.iteration_tokens,
    );
}

/// What requests asked for: `max_tokens` (as given, and as the engine ran it) and `n`.
fn request_param_histograms(p: &mut Page, h: &RequestHistograms) {
    p.histogram(
        "vllm:request_max_num_generation_tokens",
        "Histogram of maximum number of requested generation tokens.",
        &h.max_num_generation_tokens,
    );
    p.histogram(
        "vllm:request_params_n",
        "Histogram of the n request parameter.",
        &h.params_n,
    );
    p.histogram(
        "vllm:request_params_max_tokens",
        "Histogram of the max_tokens request parameter.",
        &h.params_max_tokens,
    );
}

/// What a client sees: time to the first token, and between tokens under the names of each
/// dialect.
fn latency_histograms(p: &mut Page, h: &RequestHistograms, d: Dialect) {
    p.histogram(
        "vllm:time_to_first_token_seconds",
        "Histogram of time to first token in seconds.",
        &h.ttft,
    );
    if d.before(12, 0) {
        p.histogram(
            "vllm:time_per_output_token_seconds",
            "Histogram of time per output token in seconds.",
            &h.itl,
        );
    }
    if d.at_least(11, 0) {
        p.histogram(
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            &h.itl,
        );
        p.histogram(
            "vllm:request_time_per_output_token_seconds",
            "Histogram of time_per_output_token_seconds per request.",
            &h.tpot,
        );
    }
}

/// The whole request's latency: absent from the page a real vLLM 0.26.0 served
/// (tests/fixtures/vllm-0.26.0-metric-names.txt), present again on real 0.32.0 pages; neither boundary is
/// pinned down (issue 11).
fn e2e_histogram(p: &mut Page, h: &RequestHistograms, d: Dialect) {
    if d.before(26, 0) || d.at_least(AFTER_0_26, 0) {
        p.histogram(
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            &h.e2e,
        );
    }
}

/// Where a request's time went: queue, running, prefill, decode.
fn phase_histograms(p: &mut Page, h: &RequestHistograms) {
    p.histogram(
        "vllm:request_queue_time_seconds",
        "Histogram of time spent in WAITING phase for request.",
        &h.queue,
    );
    p.histogram(
        "vllm:request_inference_time_seconds",
        "Histogram of time spent in RUNNING phase for request.",
        &h.inference,
    );
    p.histogram(
        "vllm:request_prefill_time_seconds",
        "Histogram of time spent in PREFILL phase for request.",
        &h.prefill,
    );
    p.histogram(
        "vllm:request_decode_time_seconds",
        "Histogram of time spent in DECODE phase for request.",
        &h.decode,
    );
}

/// What a request cost the engine: preemptions, and prompt tokens it had to compute.
fn per_request_histograms(p: &mut Page, h: &RequestHistograms, d: Dialect) {
    if d.at_least(AFTER_0_26, 0) {
        p.histogram(
            "vllm:request_num_preemptions",
            "Histogram of the number of times each finished request was preempted.",
            &h.num_preemptions,
        );
    }
    if d.at_least(13, 0) {
        p.histogram(
            "vllm:request_prefill_kv_computed_tokens",
            "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
            &h.prefill_kv_computed_tokens,
        );
    }
}

/// The values both CacheConfig label sets take from the engine, as label text.
struct CacheConfigText {
    block_size: String,
    utilization: String,
    blocks: String,
    prefix_caching: &'static str,
}

impl CacheConfigText {
    fn new(e: &Engine) -> Self {
        let mut utilization = String::new();
        python_float(&mut utilization, e.cfg.gpu_memory_utilization);
        CacheConfigText {
            block_size: e.cfg.block_size.to_string(),
            utilization,
            blocks: e.memory.num_gpu_blocks.to_string(),
            prefix_caching: if e.cfg.enable_prefix_caching {
                "True"
            } else {
                "False"
            },
        }
    }
}

/// The `vllm:cache_config_info` family: one sample, 1, carrying the configuration as labels.
fn write_cache_config(p: &mut Page, labels: &[(&str, &str)]) {
    let name = "vllm:cache_config_info";
    p.w.family(
        name,
        "Information of the LLMEngine CacheConfig",
        MetricType::Gauge,
    );
    p.w.sample(name, labels, 1.0);
}

fn cache_config_info(p: &mut Page, e: &Engine) {
    let c = CacheConfigText::new(e);
    let labels = [
        ("block_size", c.block_size.as_str()),
        ("cache_dtype", "auto"),
        ("calculate_kv_scales", "False"),
        ("cpu_offload_gb", "0"),
        ("enable_prefix_caching", c.prefix_caching),
        ("engine", "0"),
        ("gpu_memory_utilization", c.utilization.as_str()),
        ("is_attention_free", "False"),
        ("num_cpu_blocks", "None"),
        ("num_gpu_blocks", c.blocks.as_str()),
        ("num_gpu_blocks_override", "None"),
        ("prefix_caching_hash_algo", "sha256"),
        ("sliding_window", "None"),
        ("swap_space", "4"),
        ("swap_space_bytes", "4294967296"),
    ];
    write_cache_config(p, &labels);
}

/// 0.32's CacheConfig labels (as real 0.32.0 pages carry them). The sizes come from the
/// simulator's KV model; fields it does not model carry the values a plain dense-model server
/// shows.
fn cache_config_info_0_32(p: &mut Page, e: &Engine) {
    let c = CacheConfigText::new(e);
    let tokens = e.memory.kv_tokens.to_string();
    // vLLM labels the bytes only when the pool was given in bytes (--kv-cache-memory-bytes, or
    // VLLM_CPU_KVCACHE_SPACE on the CPU build); a pool sized by memory utilisation says None.
    let bytes = e
        .cfg
        .kv_cache_memory_bytes
        .map_or_else(|| "None".to_owned(), |b| b.to_string());
    let mut concurrency = String::new();
    python_float(
        &mut concurrency,
        e.memory.kv_tokens as f64 / f64::from(e.cfg.max_model_len),
    );
    let labels = [
        ("_block_size_resolved", "True"),
        ("block_size", c.block_size.as_str()),
        ("cache_dtype", "auto"),
        ("cache_hit_alignment_tokens", "None"),
        ("effective_attention_block_size", c.block_size.as_str()),
        ("enable_mamba_shared_prefix_checkpoint", "False"),
        ("enable_prefix_caching", c.prefix_caching),
        ("engine", "0"),
        ("gpu_memory_utilization", c.utilization.as_str()),
        ("hash_block_size", "None"),
        ("is_attention_free", "False"),
        ("kv_cache_dtype_skip_layers", "[]"),
        ("kv_cache_layout", "None"),
        ("kv_cache_max_concurrency", concurrency.as_str()),
        ("kv_cache_memory_bytes", bytes.as_str()),
        ("kv_cache_size_tokens", tokens.as_str()),
        ("kv_offloading_backend", "native"),
        ("kv_offloading_size", "None"),
        ("kv_sharing_fast_prefill", "False"),
        ("mamba_block_size", "None"),
        ("mamba_cache_dtype", "auto"),
        ("mamba_cache_mode", "none"),
        ("mamba_page_size_padded", "None"),
        ("mamba_ssm_cache_dtype", "float32"),
        ("num_cpu_blocks", "None"),
        ("num_gpu_blocks", c.blocks.as_str()),
        ("num_gpu_blocks_override", "None"),
        ("prefix_cache_retention_interval", "0"),
        ("prefix_caching_hash_algo", "sha256"),
        ("prefix_match_unit", "None"),
        ("replayssm_buffer_len", "16"),
        ("skip_page_size_padded", "None"),
        ("sliding_window", "None"),
        ("swa_bounded_replay", "True"),
        ("use_kda_recoverssm", "False"),
        ("use_replayssm", "False"),
        ("user_specified_block_size", "False"),
    ];
    write_cache_config(p, &labels);
}

fn mfu_counters(p: &mut Page, s: &EngineStats) {
    p.counter("vllm:estimated_flops_per_gpu", "Estimated number of floating point operations per GPU (for Model Flops Utilization calculations).", s.est_flops);
    p.counter("vllm:estimated_read_bytes_per_gpu", "Estimated number of bytes read from memory per GPU (for Model Flops Utilization calculations).", s.est_read_bytes);
    p.counter("vllm:estimated_write_bytes_per_gpu", "Estimated number of bytes written to memory per GPU (for Model Flops Utilization calculations).", s.est_write_bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::preset;

    fn page(d: &str) -> String {
        let e = Engine::new(&preset("l4-qwen2.5-3b").unwrap(), 1).unwrap();
        render(&e, Dialect::parse(d).unwrap(), 1_747_360_800.5)
    }

    fn names(text: &str) -> std::collections::BTreeSet<String> {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| l.split(['{', ' ']).next().unwrap().to_owned())
            .collect()
    }

    /// The `vllm:` sample names of a page.
    fn vllm_names(text: &str) -> std::collections::BTreeSet<String> {
        names(text)
            .into_iter()
            .filter(|n| n.starts_with("vllm:"))
            .collect()
    }

    const REAL_0_32: [&str; 3] = [
        include_str!("../../catalog/tests/fixtures/vllm-0.32.0/vllm-0.32.0-cpu-idle.prom"),
        include_str!("../../catalog/tests/fixtures/vllm-0.32.0/vllm-0.32.0-cpu-batch-limit.prom"),
        include_str!("../../catalog/tests/fixtures/vllm-0.32.0/vllm-0.32.0-cpu-kv-starved.prom"),
    ];

    #[test]
    fn dialect_0_32_exposes_exactly_the_vllm_names_of_real_0_32_pages() {
        assert_eq!(Dialect::LATEST, Dialect::parse("0.32").unwrap());
        let got = vllm_names(&page("0.32"));
        for real in REAL_0_32 {
            let want = vllm_names(real);
            let missing: Vec<_> = want.difference(&got).collect();
            let extra: Vec<_> = got.difference(&want).collect();
            assert!(missing.is_empty(), "missing {missing:?}");
            assert!(extra.is_empty(), "extra {extra:?}");
        }
    }

    /// Label name → value of the first `vllm:cache_config_info` sample of a page.
    fn cache_config(text: &str) -> std::collections::BTreeMap<String, String> {
        let line = text
            .lines()
            .find(|l| l.starts_with("vllm:cache_config_info{"))
            .expect("cache_config_info");
        let inner = &line[line.find('{').unwrap() + 1..line.rfind('}').unwrap()];
        inner
            .split("\",")
            .map(|kv| {
                let (k, v) = kv.split_once("=\"").unwrap();
                (k.to_owned(), v.trim_end_matches('"').to_owned())
            })
            .collect()
    }

    #[test]
    fn cache_config_0_32_has_the_real_labels_with_the_kv_model_values() {
        let e = Engine::new(&preset("l4-qwen2.5-3b").unwrap(), 1).unwrap();
        let got = cache_config(&render(&e, Dialect::LATEST, 1.0));
        let real = cache_config(REAL_0_32[0]);
        let (a, b): (Vec<_>, Vec<_>) = (got.keys().collect(), real.keys().collect());
        assert_eq!(a, b, "label names of the real 0.32.0 page");
        let num = |k: &str| got[k].parse::<f64>().unwrap();
        let blocks = f64::from(e.memory.num_gpu_blocks);
        assert_eq!(num("num_gpu_blocks"), blocks);
        assert_eq!(num("block_size"), f64::from(e.cfg.block_size));
        assert_eq!(
            num("kv_cache_size_tokens"),
            blocks * f64::from(e.cfg.block_size)
        );
        assert_eq!(got["kv_cache_memory_bytes"], "None", "sized by utilisation");
        let mut fixed = e.clone();
        fixed.cfg.kv_cache_memory_bytes = Some(4 << 20);
        let fixed = cache_config(&render(&fixed, Dialect::LATEST, 1.0));
        assert_eq!(fixed["kv_cache_memory_bytes"], "4194304");
        assert_eq!(
            num("kv_cache_max_concurrency"),
            num("kv_cache_size_tokens") / f64::from(e.cfg.max_model_len)
        );
        assert_eq!(num("gpu_memory_utilization"), e.cfg.gpu_memory_utilization);
        assert_eq!(
            got["enable_prefix_caching"],
            if e.cfg.enable_prefix_caching {
                "True"
            } else {
                "False"
            }
        );
        // Real pages size KV the same way: tokens = blocks × block size.
        let real_num = |k: &str| real[k].parse::<f64>().unwrap();
        assert_eq!(
            real_num("kv_cache_size_tokens"),
            real_num("num_gpu_blocks") * real_num("block_size")
        );
    }

    #[test]
    fn dialect_0_32_breaks_waiting_down_and_has_no_engine_label_on_admission() {
        let text = page("0.32");
        let model = "model_name=\"Qwen/Qwen2.5-3B-Instruct\"";
        assert!(text.contains(&format!(
            "vllm:num_requests_waiting_by_reason{{engine=\"0\",{model},reason=\"capacity\"}} 0.0\n"
        )));
        assert!(text.contains(&format!(
            "vllm:num_requests_waiting_by_reason{{engine=\"0\",{model},reason=\"deferred\"}} 0.0\n"
        )));
        assert!(text.contains(&format!(
            "vllm:admission_rejections_total{{{model},reason=\"max_num_queued_reqs\"}} 0.0\n"
        )));
        assert!(
            text.starts_with("# HELP vllm:estimated_flops_per_gpu_total"),
            "MFU first, as on real pages"
        );
    }

    #[test]
    fn dialect_0_26_exposes_exactly_the_vllm_0_26_names() {
        let want: std::collections::BTreeSet<String> =
            include_str!("../tests/fixtures/vllm-0.26.0-metric-names.txt")
                .lines()
                .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
                .map(str::to_owned)
                .collect();
        let got = names(&page("0.26"));
        let missing: Vec<_> = want.difference(&got).collect();
        let extra: Vec<_> = got.difference(&want).collect();
        assert!(missing.is_empty(), "missing {missing:?}");
        assert!(extra.is_empty(), "extra {extra:?}");
    }

    #[test]
    fn old_dialects_use_old_names() {
        let old = names(&page("0.8"));
        assert!(old.contains("vllm:gpu_cache_usage_perc"));
        assert!(old.contains("vllm:time_per_output_token_seconds_bucket"));
        assert!(!old.contains("vllm:kv_cache_usage_perc"));
        assert!(!old.contains("vllm:inter_token_latency_seconds_bucket"));
        let mid = names(&page("0.11"));
        assert!(mid.contains("vllm:kv_cache_usage_perc"));
        assert!(mid.contains("vllm:time_per_output_token_seconds_bucket"));
        assert!(!mid.contains("vllm:gpu_cache_usage_perc"));
    }

    #[test]
    fn format_matches_prometheus_client() {
        let text = page("0.26");
        assert!(text.contains(
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n\
             # TYPE vllm:num_requests_running gauge\n\
             vllm:num_requests_running{engine=\"0\",model_name=\"Qwen/Qwen2.5-3B-Instruct\"} 0.0\n"
        ));
        assert!(text.contains("# TYPE vllm:prompt_tokens_total counter\n"));
        assert!(text.contains("# TYPE vllm:prompt_tokens_created gauge\n"));
        assert!(text.contains(
            "vllm:prompt_tokens_created{engine=\"0\",model_name=\"Qwen/Qwen2.5-3B-Instruct\"} 1.7473608005e+09\n"
        ));
        assert!(text.contains(
            "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"Qwen/Qwen2.5-3B-Instruct\"} 0.0\n"
        ));
        assert!(text.contains(
            "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"2560.0\",model_name=\"Qwen/Qwen2.5-3B-Instruct\"} 0.0\n"
        ));
        assert!(text.contains("# TYPE vllm:iteration_tokens_total histogram\n"));
    }

    #[test]
    fn dialect_parsing() {
        assert_eq!(
            Dialect::parse("v0.11"),
            Some(Dialect {
                minor: 11,
                patch: 0
            })
        );
        assert_eq!(
            Dialect::parse("0.9.2"),
            Some(Dialect { minor: 9, patch: 2 })
        );
        assert_eq!(Dialect::parse("1.0"), None);
        assert_eq!(Dialect::parse("0.7"), None);
        assert_eq!(Dialect::parse("x"), None);
    }
}
