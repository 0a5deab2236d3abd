//! What to change: the recommendations for a verdict, with numbers derived from its evidence
//! (e.g. KV used per running request → how far `--max-num-seqs` can go under 0.85) and the
//! caveats a senior engineer would add. For failing requests, the advice is read from the
//! server's own messages. After the verdict's own advice comes what the prefix cache calls for
//! ([`crate::detect::PrefixCacheReading`]), whatever the verdict.

use crate::detect::{Bottleneck, Context, Finding, KV_HIGH, KvSplit, PrefixCacheReading, pct};
use crate::signal::Concept;
use crate::verdict::Verdict;
use llmscope_core::number::thousands;
use llmscope_core::outcome::FailureKind;
use serde::Serialize;

/// A change to make, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    pub action: String,
    pub reason: String,
    /// The engine flag and value the action names, where it names one (what `whatif` predicts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setting: Option<Setting>,
    /// What the change is predicted to buy, in words (filled in by whoever can predict it:
    /// `llmscope_ops::whatif`); `None` where nothing was predicted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted: Option<String>,
}

/// An engine flag set to a value (`max-num-seqs` = 32).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Setting {
    /// The flag as `whatif --set` takes it: `max-num-seqs`, `max-num-batched-tokens`,
    /// `kv-cache-memory-bytes`, `gpu-memory-utilization`.
    pub flag: &'static str,
    pub value: f64,
}

pub(crate) fn rec(action: impl Into<String>, reason: impl Into<String>) -> Recommendation {
    Recommendation {
        action: action.into(),
        reason: reason.into(),
        setting: None,
        predicted: None,
    }
}

impl Recommendation {
    fn setting(mut self, flag: &'static str, value: f64) -> Recommendation {
        self.setting = Some(Setting { flag, value });
        self
    }
}

/// What to change for the verdict, plus what the secondary findings call for.
pub fn recommend(cx: &Context, verdict: &Verdict, findings: &[Finding]) -> Vec<Recommendation> {
    let mut out = match verdict.bottleneck {
        Bottleneck::FailingRequests => failing_requests(cx),
        Bottleneck::AdmissionLimit => admission_limit(cx),
        Bottleneck::BatchLimit => batch_limit(cx),
        Bottleneck::KvCacheCapacity => kv_capacity(cx),
        Bottleneck::GpuCompute => gpu_compute(cx),
        Bottleneck::MemoryBandwidth => vec![
            rec(
                "Raise --max-num-seqs (bigger decode batches amortise each weight read)",
                "decode steps stream all weights for a small batch; throughput grows almost linearly with batch until steps turn compute-bound",
            ),
            rec(
                "Quantise the weights (FP8/AWQ) or the KV cache (--kv-cache-dtype fp8)",
                "fewer bytes per step is the direct cure for a bandwidth-bound step",
            ),
        ],
        Bottleneck::TokenBudget => vec![budget_knob(cx)],
        Bottleneck::Client => vec![rec(
            "Give the load generator more cores or run several in parallel, then re-run",
            "the client limited the achieved load, so the server's limit was not measured",
        )],
        Bottleneck::LoadNotReached => load_not_reached(cx),
        Bottleneck::FrontEnd => front_end(cx),
        // The fleet's own advice ([`crate::fleet`]) comes with its finding.
        Bottleneck::Host | Bottleneck::RoutingImbalance | Bottleneck::None => Vec::new(),
    };
    out.extend(prefix_cache(cx, findings));
    out.extend(speculation(cx));
    if findings.iter().any(|f| f.rule == "host") {
        out.push(rec(
            "Find the host-side cost per step: vCPUs for the API server and engine, --enforce-eager (no CUDA graphs), a V0 engine, structured output; try --async-scheduling",
            "the GPU idles between steps while requests run; removing the CPU stall multiplies throughput before any GPU change",
        ));
    }
    if cx.input.gpu_shared() {
        out.push(rec(
            "Do not add replicas on the same shared GPU",
            "replicas split the same GPU time, duplicate the weights and split the KV pool: no throughput is gained",
        ));
    }
    out
}

/// Speculation that does not pay ([`crate::detect::SpecReading::does_not_pay`]): the knob.
fn speculation(cx: &Context) -> Option<Recommendation> {
    let s = crate::detect::SpecReading::read(cx).filter(|s| s.does_not_pay())?;
    Some(rec(
        "Lower num_speculative_tokens in --speculative-config, try another method (a draft model, EAGLE), or turn speculation off; then re-measure ITL and output tokens/s",
        format!(
            "drafts accept {:.2} tokens on average ({} of drafted tokens): the target model verifies each drafted position for less than one token gained",
            s.accepted / s.drafts,
            pct(s.acceptance().unwrap_or(0.0))
        ),
    ))
}

/// What the `prefix_cache` finding calls for, with its numbers: caching turned on, room for the
/// blocks it evicts, routing by prefix across replicas, a shared prefix that can hit.
fn prefix_cache(cx: &Context, findings: &[Finding]) -> Vec<Recommendation> {
    if !findings.iter().any(|f| f.rule == "prefix_cache") {
        return Vec::new();
    }
    let Some(r) = PrefixCacheReading::read(cx) else {
        return Vec::new();
    };
    // A thrashing cache misses because it evicts, not because the prefix differs from one
    // prompt to the next: "keep it identical" would send the user after the wrong cause.
    [
        enable_prefix_caching(&r),
        keep_prefixes_cached(cx, &r),
        route_by_prefix(cx, &r),
        shorten_prefix(&r).filter(|_| !r.thrashing),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn enable_prefix_caching(r: &PrefixCacheReading) -> Option<Recommendation> {
    let repeated = r.off_with_repeats()?;
    let p = r.prefix?;
    Some(rec(
        "Enable prefix caching (--enable-prefix-caching; vLLM V1 turns it on by default, so look for --no-enable-prefix-caching)",
        format!(
            "the load repeats {} of its prompt tokens ({} of {}) and prefix caching is off: every repeated prefix is prefilled again",
            pct(repeated),
            thousands(p.repeated_tokens.unwrap_or(0) as f64),
            thousands(p.prompt_tokens as f64)
        ),
    ))
}

/// Thrashing: the cache evicts prefix blocks under KV pressure before they are reused.
fn keep_prefixes_cached(cx: &Context, r: &PrefixCacheReading) -> Option<Recommendation> {
    if !r.thrashing {
        return None;
    }
    let why = match r.split.filter(KvSplit::falls) {
        Some(s) => format!(
            "the prefix cache hit {} of prompt tokens under KV pressure (KV ≥ {}) against {} below it",
            pct(s.high.rate()),
            pct(KV_HIGH),
            pct(s.low.rate())
        ),
        None => {
            let (rate, repeated) = r.falls_short()?;
            format!(
                "the prefix cache hit {} of prompt tokens while the load repeats {} and {}",
                pct(rate),
                pct(repeated),
                r.pressure_words()
            )
        }
    };
    let pool = cx
        .input
        .engine
        .kv_cache
        .as_ref()
        .and_then(|k| k.size_tokens)
        .map_or(String::new(), |t| {
            format!("; the pool holds {} tokens", thousands(t as f64))
        });
    Some(rec(
        "Give the KV cache more room (--gpu-memory-utilization / --kv-cache-memory-bytes) or lower --max-num-seqs, so shared prefix blocks stay cached",
        format!("{why}: blocks it would have reused were evicted{pool}"),
    ))
}

/// Replicas each caching their own prefixes, reached by a router that ignores them.
fn route_by_prefix(cx: &Context, r: &PrefixCacheReading) -> Option<Recommendation> {
    if cx.input.engines <= 1 || r.off {
        return None;
    }
    let (rate, repeated) = r.falls_short()?;
    Some(rec(
        "Route requests by prefix (session affinity or a prefix-aware router such as llm-d's or vLLM production-stack's), so each prefix lands on the replica that caches it",
        format!(
            "across {} replicas the prefix cache hit {} of prompt tokens while the load repeats {}: a prefix cached on one replica misses on the others",
            cx.input.engines,
            pct(rate),
            pct(repeated)
        ),
    ))
}

fn shorten_prefix(r: &PrefixCacheReading) -> Option<Recommendation> {
    let (shared, mean, rate) = r.long_prefix_missed()?;
    Some(rec(
        "Shorten the shared prefix, or keep it byte-identical at the very start of every prompt",
        format!(
            "the shared prefix is {} tokens, {} of the mean {}-token prompt, yet the cache hit {} of prompt tokens: a prefix that differs anywhere (a date, a request id, a reordered tool list) misses from that token on",
            thousands(f64::from(shared)),
            pct(f64::from(shared) / mean),
            thousands(mean),
            pct(rate)
        ),
    ))
}

fn batch_limit(cx: &Context) -> Vec<Recommendation> {
    let Some((plateau, _)) = cx.running_plateau() else {
        return Vec::new();
    };
    // Per replica: the flag is set per engine, and KV is each engine's own pool.
    let engines = cx.engines();
    let current = cx
        .input
        .engine
        .max_num_seqs
        .map_or(plateau / engines, f64::from)
        .max(1.0);
    let kv_mean = cx.kv().map(|k| k.0);
    let running_mean = cx
        .stats
        .get(&Concept::Running)
        .map(|s| s.mean_nonzero / engines)
        .filter(|r| *r > 0.0);
    let mut out = vec![raise_cap(current, kv_mean, running_mean)];
    out.extend(keep_concurrency(cx));
    out
}

/// Raise the step's token budget, doubled where the engine said it.
fn budget_knob(cx: &Context) -> Recommendation {
    let why = "steps are full of prefill tokens; a larger budget admits prompts faster at the cost of longer steps for running decodes";
    match crate::detect::budget_in_force(cx) {
        Some(b) if b.told => rec(
            format!(
                "Raise --max-num-batched-tokens from {:.0} to {:.0}, then re-measure TTFT and ITL",
                b.tokens,
                b.tokens * 2.0
            ),
            why,
        )
        .setting("max-num-batched-tokens", b.tokens * 2.0),
        Some(b) => {
            let (now, from) = (b.tokens, likely_setting(b.tokens, b.uncertainty));
            rec(
                format!(
                    "Raise --max-num-batched-tokens from about {from:.0} (what the steps carry) to {:.0}, then re-measure TTFT and ITL",
                    2.0 * from
                ),
                format!(
                    "{why}; the budget was read from the engine's step counters ({now:.0} tokens a step), not from the server's flags — check the deployment's --max-num-batched-tokens"
                ),
            )
            .setting("max-num-batched-tokens", 2.0 * from)
        }
        None => rec(
            "Raise --max-num-batched-tokens (e.g. ×2), then re-measure TTFT and ITL",
            why,
        ),
    }
}

/// The setting a budget read from the steps most likely is: the power of two within its
/// uncertainty or 5 % of it (what operators set), else the figure rounded.
fn likely_setting(read: f64, uncertainty: f64) -> f64 {
    let p = 2f64.powf(read.max(1.0).log2().round());
    if (p - read).abs() <= uncertainty.max(0.05 * read) {
        p
    } else {
        read.round()
    }
}

/// Raise `--max-num-seqs` in steps, as far as the KV used per running request allows.
fn raise_cap(current: f64, kv_mean: Option<f64>, running_mean: Option<f64>) -> Recommendation {
    let step1 = current * 2.0;
    match (kv_mean, running_mean) {
        (Some(kv), Some(r)) if kv > 0.0 => {
            let per_req = kv / r;
            let kv_cap = (KV_HIGH / per_req).floor();
            let step1 = step1.min(kv_cap).max(current + 1.0);
            let step2 = (current * 4.0).min(kv_cap).max(step1);
            rec(
                format!(
                    "Raise --max-num-seqs from {current:.0} to {step1:.0}, then {step2:.0}; re-measure KV usage after each step"
                ),
                format!(
                    "each running request holds {:.2}% of the KV cache, so KV stays under {:.0}% up to about {kv_cap:.0} sequences; longer prompts or answers use more KV per request",
                    per_req * 100.0,
                    KV_HIGH * 100.0
                ),
            )
            .setting("max-num-seqs", step1)
        }
        _ => rec(
            format!("Raise --max-num-seqs from {current:.0} to {step1:.0}, watching KV usage"),
            "the batch is full while requests wait; KV usage was not observed, so grow in steps"
                .to_owned(),
        )
        .setting("max-num-seqs", step1),
    }
}

/// The next run must still queue, or it cannot show the next limit.
fn keep_concurrency(cx: &Context) -> Option<Recommendation> {
    let c = cx.input.load.concurrency?;
    let replicas = match cx.input.engines {
        0 | 1 => String::new(),
        n => format!(" × {n} replicas"),
    };
    Some(rec(
        format!("Keep the test concurrency ({c}) above the new --max-num-seqs{replicas}"),
        "a queue must form for the next run to show where the next limit is",
    ))
}

fn kv_capacity(cx: &Context) -> Vec<Recommendation> {
    let mut out = vec![pool_knob(cx)];
    out.push(rec(
        "Use a quantised KV cache (--kv-cache-dtype fp8)",
        "halves the bytes per cached token",
    ));
    out.push(rec(
        "Lower --max-model-len to what requests really need",
        "a smaller bound lets a smaller pool pass vLLM's start-up check and caps how far one long request can grow",
    ));
    if cx
        .stats
        .get(&Concept::Preemptions)
        .is_some_and(|s| s.mean > 0.0)
    {
        out.push(rec(
            "Lower --max-num-seqs until preemptions stop",
            "preempted requests are recomputed from scratch, wasting GPU time on work already done",
        ));
    }
    out
}

/// How the pool was sized and, where the window shows it, how large it must be.
fn pool_sizing(kv: Option<&crate::signal::KvCacheConfig>, need: Option<&PoolNeed>) -> String {
    match (kv, need) {
        (Some(k), Some(n)) => format!(
            "the pool holds {} tokens{}; each running request holds about {:.0} tokens, so {} sequences need at least {:.0} tokens to stay under {:.0}%",
            thousands(n.pool_tokens as f64),
            k.num_blocks
                .zip(k.block_size)
                .map_or(String::new(), |(b, s)| format!(" ({b} blocks of {s})")),
            n.per_request,
            n.seqs,
            n.tokens,
            KV_HIGH * 100.0
        ),
        (Some(k), None) => k.size_tokens.map_or(
            "the KV pool is what is left after weights and activations".to_owned(),
            |t| format!("the pool holds {} tokens", thousands(t as f64)),
        ),
        (None, _) => "the KV pool is what is left after weights and activations".to_owned(),
    }
}

/// The knob that sizes the KV pool on the engine in front of us, with the size it needs.
///
/// The engine says how its pool was sized (`vllm:cache_config_info`): a pool given in bytes
/// (`--kv-cache-memory-bytes`, or `VLLM_CPU_KVCACHE_SPACE` on vLLM's CPU build) is raised in
/// bytes; a pool that is what GPU memory utilisation leaves is raised through that.
fn pool_knob(cx: &Context) -> Recommendation {
    let kv = cx.input.engine.kv_cache.as_ref();
    let need = kv.and_then(|k| pool_need(cx, k));
    let sizing = pool_sizing(kv, need.as_ref());
    match kv.and_then(|k| k.memory_bytes.zip(k.size_tokens)) {
        Some((bytes, tokens)) if tokens > 0 => {
            let target = need
                .as_ref()
                .map(|n| (n.tokens * bytes as f64 / tokens as f64).max(bytes as f64 * 1.25));
            let r = rec(
                format!(
                    "Raise --kv-cache-memory-bytes from {}{} (on vLLM's CPU build VLLM_CPU_KVCACHE_SPACE, in GiB, sizes the same pool when the flag is not given)",
                    mib(bytes as f64),
                    target.map_or(String::new(), |b| format!(" to at least {}", mib(b)))
                ),
                format!("the pool was given a fixed size in bytes; {sizing}"),
            );
            match target {
                Some(b) => r.setting("kv-cache-memory-bytes", b.ceil()),
                None => r,
            }
        }
        _ => {
            let now = kv.and_then(|k| k.gpu_memory_utilization);
            let util = now.map_or(String::new(), |u| format!(" from {u:.2}"));
            let r = rec(
                format!(
                    "Give vLLM more memory for KV: raise --gpu-memory-utilization{util} (up to ~0.95), a larger GPU, or tensor parallelism"
                ),
                sizing,
            );
            match now {
                Some(u) if u < 0.95 => r.setting("gpu-memory-utilization", 0.95),
                _ => r,
            }
        }
    }
}

/// How big the pool must be for the batch cap (or the load) at the KV alert level.
struct PoolNeed {
    pool_tokens: u64,
    per_request: f64,
    seqs: f64,
    tokens: f64,
}

fn pool_need(cx: &Context, kv: &crate::signal::KvCacheConfig) -> Option<PoolNeed> {
    let pool_tokens = kv.size_tokens.filter(|t| *t > 0)?;
    let (kv_mean, _) = cx.kv()?;
    let running = cx
        .stats
        .get(&Concept::Running)
        .map(|s| s.mean_nonzero / cx.engines())
        .filter(|r| *r > 0.0)?;
    let per_request = kv_mean * pool_tokens as f64 / running;
    let seqs = cx.input.engine.max_num_seqs.map(f64::from).or_else(|| {
        cx.input
            .load
            .concurrency
            .map(|c| f64::from(c) / cx.engines())
    })?;
    Some(PoolNeed {
        pool_tokens,
        per_request,
        seqs,
        tokens: (per_request * seqs / KV_HIGH).ceil(),
    })
}

fn mib(bytes: f64) -> String {
    let m = bytes / f64::from(1u32 << 20);
    if m >= 1024.0 {
        format!("{:.1} GiB", m / 1024.0)
    } else {
        format!("{:.0} MiB", m.ceil())
    }
}

fn gpu_compute(cx: &Context) -> Vec<Recommendation> {
    let mut out = vec![if cx.input.gpu_shared() {
        rec(
            "Give each replica a GPU of its own (they share one now), or serve a quantised / smaller model",
            "the shared GPU is busy nearly all the time and requests still queue: its time is one budget for every replica on it, so only more GPUs or less work per token helps",
        )
    } else {
        rec(
            "Scale out onto more GPUs (replicas on dedicated GPUs), or serve a quantised / smaller model",
            "the GPU is busy nearly all the time and requests still queue: only more compute or less work per token helps",
        )
    }];
    if cx.kv().is_some_and(|(m, _)| m < 0.5) {
        out.push(rec(
            "Consider speculative decoding",
            "KV has headroom for draft tokens and decode steps are the cost",
        ));
    }
    out
}

fn load_not_reached(cx: &Context) -> Vec<Recommendation> {
    let cap = cx.input.engine.max_num_seqs;
    let action = match (cx.input.load.concurrency, cap) {
        (Some(c), Some(m)) => format!(
            "Re-run with concurrency above {} (e.g. {} instead of {c})",
            cx.cap_text(m),
            (m * cx.input.engines.max(1) * 2).max(c * 2)
        ),
        _ => "Re-run with more concurrency (above --max-num-seqs) for at least 8 scrape intervals"
            .to_owned(),
    };
    vec![
        rec(action, "without a queue the server's limit is not visible"),
        rec(
            "If this is production traffic: the deployment is over-provisioned for it — consider fewer replicas or a smaller GPU",
            "no queue formed and the GPU has headroom",
        ),
    ]
}

fn front_end(cx: &Context) -> Vec<Recommendation> {
    let mut out = vec![
        rec(
            "Give the API server CPU of its own: raise vLLM's --api-server-count (e.g. 2–4) and the pod's CPU request so each API server process and the engine core get a core",
            "vLLM's front end — HTTP, tokenising, detokenising and streaming — runs in Python processes apart from the engine; requests waited there while the scheduler had room",
        ),
        rec(
            "Stream fewer, larger chunks: --stream-interval 4–8 (vLLM ≥ 0.12)",
            "every streamed chunk costs the API server CPU; batching tokens per chunk cuts that cost with little effect on perceived latency",
        ),
    ];
    if cx.input.load.contention.is_some() {
        out.push(rec(
            "Run the load generator on other cores or another machine, then re-measure",
            "the machine was contended while measuring: the client and the server competed for the same cores",
        ));
    }
    out
}

/// Shed at the admission limit: capacity for the demand, or a limit set to queue more; and the
/// clients' retries, which vLLM's 503 asks to go elsewhere.
fn admission_limit(cx: &Context) -> Vec<Recommendation> {
    let Some(shed) = crate::detect::Shed::read(cx) else {
        return Vec::new();
    };
    let flag = shed.limit.flag();
    let share = pct(shed.share);
    let raise = match shed.limit {
        crate::detect::AdmissionLimitKind::Tokens => format!(
            "Or raise {flag} (vLLM sizes it as the TTFT you accept × the deployment's prefill tokens/s): a deeper prefill backlog is admitted, and TTFT grows with it"
        ),
        _ => format!(
            "Or raise {flag} (vLLM sizes it as data-parallel ranks × --max-num-seqs + the queue depth you accept): more requests wait instead of being refused, and TTFT grows with the queue"
        ),
    };
    vec![
        rec(
            "Add replicas (or route the overflow to another instance): demand exceeds what this deployment admits",
            format!(
                "{share} of requests were turned away at {flag}: the limit shed load as configured, so more capacity is the fix, not the server's logs"
            ),
        ),
        rec(
            raise,
            "the limit trades refused requests for queueing delay; raise it only where clients can wait",
        ),
        rec(
            "Have clients retry 503s with backoff, on another instance where there is one",
            "vLLM answers 503 at its admission limit so that load balancers and SDKs retry elsewhere",
        ),
    ]
}

/// What to fix, read from the server's messages.
fn failing_requests(cx: &Context) -> Vec<Recommendation> {
    let Some(o) = cx.input.load.requests.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<Recommendation> = o.kinds.iter().filter_map(advice).collect();
    out.dedup();
    out.push(rec(
        "Re-run once requests succeed; read no bottleneck from this run",
        "the server refused the load, so the metrics show a server doing little",
    ));
    out
}

/// One kind's advice, from its message where the message says what is wrong.
fn advice(k: &FailureKind) -> Option<Recommendation> {
    let body = k.bodies.first().map(String::as_str).unwrap_or("");
    let lower = body.to_ascii_lowercase();
    let quote = || format!("the server said: \"{body}\"");
    if lower.contains("maximum context length") || lower.contains("max_model_len") {
        return Some(rec(
            "Shorten the prompt (--input-tokens) or lower --max-tokens: prompt + max_tokens exceed the model's max_model_len",
            quote(),
        ));
    }
    if lower.contains("does not exist") || k.status == Some(404) {
        return Some(rec(
            "Pass a model the server serves (--model; see GET /v1/models) and check the target URL",
            quote(),
        ));
    }
    match k.status {
        Some(401 | 403) => Some(rec(
            "Check the API key (--api-key / OPENAI_API_KEY)",
            quote(),
        )),
        Some(429) => Some(rec(
            "Lower --concurrency or --rate below the server's rate limit, or raise the limit",
            quote(),
        )),
        Some(s) if s >= 500 => Some(rec(
            "Read the server's logs: it failed requests with 5xx",
            quote(),
        )),
        Some(_) => Some(rec("Fix the request the server rejects", quote())),
        None => match k.kind.as_str() {
            "connect" | "connection_closed" => Some(rec(
                "Check that the server is up and reachable at --target",
                format!("{} requests could not connect or were closed", k.count),
            )),
            "client_fds" => Some(rec(
                "Raise the client's open-file limit (ulimit -n) or lower --concurrency: the load generator ran out of file descriptors",
                format!(
                    "{} requests could not open a connection on the client",
                    k.count
                ),
            )),
            "ttft_timeout" => Some(rec(
                "Raise --ttft-timeout (or lower the load): the client gave up on requests still waiting for their first token",
                format!(
                    "{} requests had no first token within --ttft-timeout: they were queued on the server, not stalled",
                    k.count
                ),
            )),
            "timeout" | "stall" => Some(rec(
                "Raise --timeout / --idle-timeout, or lower the load: the server stopped answering in time",
                format!("{} requests timed out or stalled", k.count),
            )),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_follows_the_status_and_the_message() {
        let k = |status, body: &str| FailureKind {
            kind: format!("http_{status}"),
            status: Some(status),
            count: 1,
            bodies: vec![body.to_owned()],
        };
        let a = |f| advice(&f).unwrap().action;
        assert!(a(k(404, "The model `x` does not exist.")).contains("--model"));
        assert!(a(k(429, "slow down")).contains("rate limit"));
        assert!(a(k(503, "overloaded")).contains("logs"));
        assert!(a(k(401, "")).contains("API key"));
        let timeout = FailureKind {
            kind: "timeout".into(),
            count: 3,
            ..Default::default()
        };
        assert!(a(timeout).contains("--timeout"));
    }
}
