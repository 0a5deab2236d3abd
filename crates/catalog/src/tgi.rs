//! Hugging Face TGI's families (`tgi_` prefix, 1.x–3.3.x, maintenance mode;
//! `docs/SOURCES.md` §tgi, and TGI's own reference
//! `docs/source/reference/metrics.md` and `router/src` at `db931fcf`, 2026-01-08). TGI has no
//! TTFT histogram and no KV-usage gauge. The Rust `metrics` exporter adds no `_total` to counters.
//! The per-method forward/decode/filter histograms came with TGI PR #1346 (2023-12-14, ≈1.3.2);
//! the rest is older than 1.0.

use super::model::{Exporter, Family, Kind, Unit, Version};
use crate::Concept as C;

const fn f(name: &'static str, kind: Kind, unit: Unit, labels: &'static [&'static str]) -> Family {
    Family::new(Exporter::Tgi, name, kind, unit, labels).since(Version::new(1, 0, 0))
}

use Kind::{Counter, Gauge, Histogram};
use Unit::{Count, Requests, Seconds, Tokens};

/// Every TGI family the catalog knows.
pub const FAMILIES: &[Family] = &[
    f("tgi_queue_size", Gauge, Requests, &[]).concept(C::Waiting),
    f("tgi_batch_current_size", Gauge, Requests, &[]).concept(C::Running),
    f("tgi_batch_current_max_tokens", Gauge, Tokens, &[])
        .note("token budget in use; / tgi_batch_max_total_tokens approximates KV usage"),
    f("tgi_batch_max_total_tokens", Gauge, Tokens, &[]),
    f("tgi_request_count", Counter, Requests, &[]),
    f("tgi_request_success", Counter, Requests, &[]).concept(C::RequestsFinished),
    f("tgi_request_failure", Counter, Requests, &["err"]),
    f("tgi_request_duration", Histogram, Seconds, &[]).concept(C::E2eLatency),
    f("tgi_request_queue_duration", Histogram, Seconds, &[]).concept(C::QueueTime),
    f("tgi_request_validation_duration", Histogram, Seconds, &[]),
    f("tgi_request_inference_duration", Histogram, Seconds, &[]),
    f(
        "tgi_request_mean_time_per_token_duration",
        Histogram,
        Seconds,
        &[],
    )
    .concept(C::Tpot)
    .note("per-request mean, not per token gap"),
    f("tgi_request_input_length", Histogram, Tokens, &[])
        .note("use _sum as the prompt-token counter"),
    f("tgi_request_generated_tokens", Histogram, Tokens, &[])
        .concept(C::GeneratedTokens)
        .note("use _sum as the generated-token counter"),
    f("tgi_request_max_new_tokens", Histogram, Tokens, &[]),
    f("tgi_batch_next_size", Histogram, Count, &[]),
    f("tgi_batch_inference_count", Counter, Count, &["method"]),
    f("tgi_batch_inference_success", Counter, Count, &["method"]),
    f("tgi_batch_inference_failure", Counter, Count, &["method"]),
    f(
        "tgi_batch_inference_duration",
        Histogram,
        Seconds,
        &["method"],
    )
    .note("method=prefill|decode: the whole batch step, forward + decode + filter"),
    f(
        "tgi_batch_forward_duration",
        Histogram,
        Seconds,
        &["method"],
    )
    .since(AFTER_1_3),
    f("tgi_batch_decode_duration", Histogram, Seconds, &["method"]).since(AFTER_1_3),
    f("tgi_batch_filter_duration", Histogram, Seconds, &["method"]).since(AFTER_1_3),
    f("tgi_batch_concat", Counter, Count, &["reason"]).note(
        "reason=backpressure|wait_exceeded: a waiting batch was concatenated to the running one",
    ),
    f("tgi_batch_concat_duration", Histogram, Seconds, &["method"]),
    f("tgi_request_skipped_tokens", Histogram, Tokens, &[]).note("speculated tokens per request"),
];

/// TGI PR #1346 (2023-12-14): forward/decode/filter histograms per method.
const AFTER_1_3: Version = Version::new(1, 3, 2);
