//! SGLang's families (`sglang:` prefix, needs `--enable-metrics`;
//! `shared/reference/serving-metrics.md` §7). SGLang versions are not pinned in the reference,
//! so only the inter-token rename carries one (⚠ approximate).

use super::model::{Exporter, Family, Kind, Unit, Version};
use crate::diagnose::Concept as C;

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
];
