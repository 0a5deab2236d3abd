//! `whatif`: what a change to the deployment buys, predicted from the runs it was measured in.
//!
//! Flow: stored runs (one `run`, or the stages of a capacity search) → [`observe`]: per run, the
//! deployment (`--max-num-seqs`, the step budget, the KV pool from `vllm:cache_config_info`),
//! the workload (closed-loop clients or open-loop rate, the mean prompt and answer the client
//! saw), what the client measured, the verdict, and the engine's counters over every scrape
//! interval in which it worked → [`fit`]: one step model for the deployment from all those
//! intervals (`llmscope_sim::fit`), then each run replayed on it against what was measured —
//! the error per run, and the band of every prediction → [`predict`]: the first run's workload
//! replayed on the deployment with the [`Change`]s applied → [`WhatIf`], rendered as text or
//! JSON. `--confirm` ([`confirm`]) then measures the changed deployment where llmscope runs it
//! (the simulated stack) and sets the measurement beside the prediction.
//!
//! Pure but for reading the store; the replay runs in simulated time (a minute of load in
//! milliseconds).

mod confirm;
mod render;

pub use confirm::confirm;
pub use render::write;

use crate::OpsError;
use crate::analysis::Analysed;
use llmscope_diagnosis::capacity::answer::Percentiles;
use llmscope_diagnosis::{Concept, Input, Signal};
use llmscope_sim::fit::{
    self as model, Arrivals, Deployment, Interval, Replayed, StepModel, Workload,
};
use serde::Serialize;

/// One change to the deployment (`--set max-num-seqs=32`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "flag", content = "value", rename_all = "kebab-case")]
pub enum Change {
    MaxNumSeqs(u32),
    MaxNumBatchedTokens(u32),
    KvCacheMemoryBytes(u64),
    GpuMemoryUtilization(f64),
    Replicas(u32),
}

impl std::str::FromStr for Change {
    type Err = OpsError;

    fn from_str(text: &str) -> Result<Change, OpsError> {
        let (flag, value) = text.split_once('=').ok_or_else(|| {
            invalid(format!(
                "--set {text}: write FLAG=VALUE, e.g. max-num-seqs=32 (flags: {FLAGS})"
            ))
        })?;
        let flag = flag.trim().trim_start_matches("--");
        let value = value.trim();
        let bad = |what: &str| invalid(format!("--set {flag}={value}: {what}"));
        let count = |v: &str| match v.replace('_', "").parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(bad("give a whole number above 0")),
        };
        let small = |v: &str| {
            count(v).and_then(|n| u32::try_from(n).map_err(|_| bad("too large for this flag")))
        };
        Ok(match flag {
            "max-num-seqs" => Change::MaxNumSeqs(small(value)?),
            "max-num-batched-tokens" => Change::MaxNumBatchedTokens(small(value)?),
            "kv-cache-memory-bytes" => Change::KvCacheMemoryBytes(count(value)?),
            "gpu-memory-utilization" => match value.parse::<f64>() {
                Ok(f) if f > 0.0 && f <= 1.0 => Change::GpuMemoryUtilization(f),
                _ => return Err(bad("give a fraction in (0, 1], e.g. 0.9")),
            },
            "replicas" => match small(value)? {
                n if n <= MAX_REPLICAS => Change::Replicas(n),
                _ => {
                    return Err(bad(&format!(
                        "at most {MAX_REPLICAS} engines time-sliced on one GPU (each holds its own copy of the weights and a share of the pool); for more, predict one replica and divide the load"
                    )));
                }
            },
            _ => {
                return Err(invalid(format!(
                    "--set {text}: unknown flag `{flag}`; whatif changes {FLAGS}"
                )));
            }
        })
    }
}

/// The most engines `--set replicas` shares one GPU between.
pub const MAX_REPLICAS: u32 = 64;

const FLAGS: &str =
    "max-num-seqs, max-num-batched-tokens, kv-cache-memory-bytes, gpu-memory-utilization, replicas";

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::MaxNumSeqs(n) => write!(f, "--max-num-seqs {n}"),
            Change::MaxNumBatchedTokens(n) => write!(f, "--max-num-batched-tokens {n}"),
            Change::KvCacheMemoryBytes(b) => write!(f, "--kv-cache-memory-bytes {b}"),
            Change::GpuMemoryUtilization(u) => write!(f, "--gpu-memory-utilization {u}"),
            Change::Replicas(n) => write!(f, "{n} replicas on the same GPU (time-sliced)"),
        }
    }
}

fn invalid(why: String) -> OpsError {
    OpsError::Invalid(why)
}

/// What a client measured, and the verdict (measured), or what the model gives (predicted).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    pub output_tok_s: f64,
    pub req_s: f64,
    pub ttft_ms: Percentiles,
    pub itl_ms: Percentiles,
    pub bottleneck: String,
    /// Predicted only: other limits the model's engine came within a tenth of, or met with its
    /// batch in waves (a real engine a little off the model may meet one of them first). Empty
    /// for a measurement.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub near: Vec<String>,
}

impl Figures {
    fn replayed(r: &Replayed) -> Figures {
        let ms = |s: Option<f64>| s.map(|s| s * 1000.0);
        Figures {
            output_tok_s: r.output_tok_s,
            req_s: r.req_s,
            ttft_ms: Percentiles {
                p50: ms(r.ttft_p50_s),
                p95: ms(r.ttft_p95_s),
            },
            itl_ms: Percentiles {
                p50: ms(r.itl_p50_s),
                p95: ms(r.itl_p95_s),
            },
            bottleneck: r.bottleneck.to_owned(),
            near: r.near.iter().map(|&n| n.to_owned()).collect(),
        }
    }

    /// The limit, and those the model came near: `batch_limit (near kv_cache_capacity)`.
    pub fn limit(&self) -> String {
        if self.near.is_empty() {
            self.bottleneck.clone()
        } else {
            format!("{} (near {})", self.bottleneck, self.near.join(", "))
        }
    }

    /// Whether the limit `measured` met is this prediction's, or one it named as near.
    pub fn reaches(&self, measured: &str) -> bool {
        self.bottleneck == measured || self.near.iter().any(|n| n == measured)
    }
}

/// One stored run as the fit reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub run: i64,
    pub deployment: Deployment,
    /// Whether the run said its step budget (else the engine's default was assumed).
    pub budget_known: bool,
    /// The KV pool in bytes, where the engine said it (`kv_cache_memory_bytes`).
    pub pool_bytes: Option<u64>,
    pub gpu_memory_utilization: Option<f64>,
    /// GPU memory (dcgm framebuffer used + free), MiB, where the run read it.
    pub fb_total_mib: Option<f64>,
    pub workload: Workload,
    pub measured: Figures,
    pub intervals: Vec<Interval>,
    /// Seconds the client sent for (the replay's window).
    pub seconds: f64,
}

/// vLLM's default step budget where a run does not say it (chunked prefill on).
const DEFAULT_BUDGET: u32 = 2048;

/// Reads what the fit needs from a diagnosed run.
pub fn observe(a: &Analysed) -> Result<Observed, OpsError> {
    let run = a.run;
    let client = a.facts.client.as_ref().ok_or_else(|| {
        invalid(format!(
            "run {run} kept no client figures (stored by `observe` or `diagnose`?): whatif fits runs llmscope loaded itself (`llmscope run` or `llmscope capacity`)"
        ))
    })?;
    let max_num_seqs = a
        .facts
        .max_num_seqs
        .or(a.input.engine.max_num_seqs)
        .ok_or_else(|| {
            invalid(format!(
                "run {run} does not say the engine's --max-num-seqs: give it to `llmscope run --max-num-seqs N` so the model knows the cap it was measured under"
            ))
        })?;
    let budget = a
        .facts
        .max_num_batched_tokens
        .or(a.input.engine.max_num_batched_tokens);
    let kv = a.input.engine.kv_cache.clone().unwrap_or_default();
    let kv_tokens = kv
        .size_tokens
        .or_else(|| Some(kv.num_blocks? * u64::from(kv.block_size?)));
    let completed = client.requests.completed.max(1) as f64;
    let prompt = client
        .tokens
        .prompt_mean
        .unwrap_or(client.tokens.prompt as f64 / completed);
    let output = client.tokens.output as f64 / completed;
    if client.tokens.output == 0 {
        return Err(invalid(format!(
            "run {run} completed no request with output: there is nothing to fit"
        )));
    }
    let arrivals = match (client.load.mode.as_str(), client.load.target) {
        ("open", Some(rate)) => Arrivals::Open {
            rate,
            cap: client.load.concurrency_cap.unwrap_or(u32::MAX),
        },
        ("closed", Some(c)) => Arrivals::Closed {
            concurrency: c.round() as u32,
        },
        (mode, _) => {
            return Err(invalid(format!(
                "run {run}: its load was `{mode}`; whatif replays one closed-loop or open-loop load (a trace or mixed stages are not modelled yet)"
            )));
        }
    };
    let seconds = a
        .input
        .load
        .sending
        .map_or(client.throughput.window_s, |(from, to)| to - from);
    Ok(Observed {
        run,
        deployment: Deployment {
            max_num_seqs,
            max_num_batched_tokens: budget.unwrap_or(DEFAULT_BUDGET),
            kv_tokens,
            block_size: kv.block_size.unwrap_or(16),
            replicas: 1,
        },
        budget_known: budget.is_some(),
        pool_bytes: kv.memory_bytes,
        gpu_memory_utilization: kv.gpu_memory_utilization,
        fb_total_mib: fb_total(&a.input),
        workload: Workload {
            arrivals,
            prompt_tokens: prompt.round().max(1.0) as u32,
            output_tokens: output.round().max(1.0) as u32,
            frontend_s: frontend_s(a, client),
            frontend_before_s: None,
            frontend_tok_s: None,
        },
        measured: measured(a, client, output),
        intervals: intervals(&a.input, prompt),
        seconds: seconds.max(1.0),
    })
}

/// What the client measured while it sent (the drain after it left out, as a replay leaves it
/// out): output tokens/s, requests/s at the mean answer, latencies.
fn measured(a: &Analysed, c: &llmscope_core::outcome::ClientSummary, answer: f64) -> Figures {
    let q = |s: &llmscope_core::outcome::Summary| Percentiles {
        p50: s.p50,
        p95: s.p95,
    };
    let sending = c.throughput.sending_output_tokens_per_s;
    Figures {
        output_tok_s: sending.unwrap_or(c.throughput.output_tokens_per_s),
        req_s: sending.map_or(c.throughput.requests_per_s, |t| t / answer.max(1.0)),
        ttft_ms: q(&c.latency_ms.ttft),
        itl_ms: q(&c.latency_ms.itl),
        bottleneck: a.diagnosis.verdict.bottleneck.as_str().to_owned(),
        near: Vec::new(),
    }
}

/// Seconds each request spent outside the engine, by Little's law: the requests the client
/// held in flight that the engine neither ran nor queued (its levels read as the verdict reads
/// them, over the steady window), over the requests completed per second. 0 where unknown.
fn frontend_s(a: &Analysed, c: &llmscope_core::outcome::ClientSummary) -> f64 {
    let in_flight = c.achieved_concurrency().unwrap_or(c.load.mean_concurrency);
    let req_s = c.throughput.requests_per_s;
    let Some(window) = a.diagnosis.phases.steady else {
        return 0.0;
    };
    let (running, waiting) = llmscope_diagnosis::levels_over(&a.input, window);
    let outside = match running {
        Some(r) => in_flight - r - waiting.unwrap_or(0.0),
        None => return 0.0,
    };
    // A difference of two means: under a request, or a twentieth of those in flight, it is
    // their noise (the simulator holds every request in its engine and reads 0.05 outside).
    if req_s <= 0.0 || outside < (0.05 * in_flight).max(1.0) {
        return 0.0;
    }
    outside / req_s
}

/// GPU memory, MiB: dcgm's framebuffer used + free at the first reading with both.
fn fb_total(input: &Input) -> Option<f64> {
    let used = input.signal(Concept::FbUsed)?;
    let free = input.signal(Concept::FbFree)?;
    used.points
        .iter()
        .find_map(|&(t, u)| Some(u + at(free, t)?))
        .filter(|m| *m > 0.0)
}

/// The engine's counters over each scrape interval in which it worked throughout: its step
/// counter moved in the interval and in the ones on either side (the ramp and the drain give
/// the fit the smaller batches a pinned window lacks; counters, not gauges, say it — a real
/// vLLM 0.32 reads 0 running in most scrapes). Each preemption recomputes at least a prompt of
/// `prompt_mean` tokens that no counter counts ([`Interval::recomputed`]).
fn intervals(input: &Input, prompt_mean: f64) -> Vec<Interval> {
    let (Some(steps), Some(generated)) = (
        input.signal(Concept::StepCount),
        input.signal(Concept::GeneratedTokens),
    ) else {
        return Vec::new();
    };
    let prompt = input.signal(Concept::PromptTokens);
    let preempted = input.signal(Concept::Preemptions);
    let all: Vec<Option<Interval>> = steps
        .points
        .windows(2)
        .map(|w| {
            let ((t0, s0), (t1, s1)) = (w[0], w[1]);
            let delta = |s: &Signal| Some(at(s, t1)? - at(s, t0)?);
            let g = delta(generated)?;
            let p = prompt.map_or(Some(0.0), delta)?;
            // An engine with no preemption counter recomputes nothing the fit can know of.
            let k = preempted.map_or(Some(0.0), delta)?;
            (s1 > s0 && g >= 0.0 && p >= 0.0 && k >= 0.0 && t1 > t0).then_some(Interval {
                seconds: t1 - t0,
                steps: s1 - s0,
                generated: g,
                prompt: p,
                recomputed: k * prompt_mean,
            })
        })
        .collect();
    (1..all.len().saturating_sub(1))
        .filter(|&i| all[i - 1].is_some() && all[i + 1].is_some())
        .filter_map(|i| all[i])
        .filter(|i| i.generated > 0.0)
        .collect()
}

/// The value of `s` read at `t` (the same scrape: within a millisecond).
fn at(s: &Signal, t: f64) -> Option<f64> {
    let i = s.points.partition_point(|p| p.0 < t - 1e-3);
    s.points
        .get(i)
        .filter(|p| (p.0 - t).abs() <= 1e-3 && p.1.is_finite())
        .map(|p| p.1)
}

/// The fit: the step model, and each run replayed on it against what it measured.
#[derive(Debug, Clone, Serialize)]
pub struct Fit {
    pub model: StepModel,
    /// The API server's capacity, where a fitted run showed it holding the load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub front_end: Option<FrontEnd>,
    pub stages: Vec<StageFit>,
}

/// The API server as the fitted runs showed it: where one run's requests waited in front of the
/// engine for most of the load (half its clients, the replay's own mark of `front_end`), what
/// it streamed is the most it can — unless another run streamed more, and then its capacity
/// was the host's state of the moment (cores shared with the engine and the client), not a
/// property the model may keep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FrontEnd {
    /// The run that showed it.
    pub run: i64,
    /// Output tokens/s it streamed there.
    pub output_tok_s: f64,
    /// Requests that run's clients held outside the engine, of its concurrency.
    pub outside: (f64, f64),
    /// A fitted run the front end did not hold that streamed more: (run, tok/s). The capacity
    /// is then not applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contradicted_by: Option<(i64, f64)>,
}

impl FrontEnd {
    /// The front end of the run that showed it at its lowest, checked against the others.
    /// A run shows it where its verdict is `front_end`, or where half its clients were outside
    /// the engine and each request spent at least twice as long there as in a fitted run of
    /// fewer clients: a queue that grew with the load. Time outside that did not grow is the
    /// front end's delay, kept as such (a real vLLM 0.32 with 4 clients on 2 cores: 2.6 of 4
    /// outside, served 637 tok/s; 16 clients on the same server then served 1,451).
    fn of(runs: &[Observed]) -> Option<FrontEnd> {
        let clients = |o: &Observed| match o.workload.arrivals {
            Arrivals::Closed { concurrency } => Some(f64::from(concurrency)),
            Arrivals::Open { .. } => None,
        };
        let held = |o: &Observed| {
            let c = clients(o)?;
            let outside = o.workload.frontend_s * o.measured.req_s;
            let queued = runs.iter().any(|l| {
                clients(l).is_some_and(|lc| lc < c)
                    && o.workload.frontend_s >= 2.0 * l.workload.frontend_s
            });
            (o.measured.bottleneck == "front_end" || (outside >= 0.5 * c && queued))
                .then_some((outside, c))
        };
        let (o, outside) = runs
            .iter()
            .filter_map(|o| Some((o, held(o)?)))
            .min_by(|a, b| {
                a.0.measured
                    .output_tok_s
                    .total_cmp(&b.0.measured.output_tok_s)
            })?;
        let cap = o.measured.output_tok_s;
        let contradicted_by = runs
            .iter()
            .filter(|r| held(r).is_none() && r.measured.output_tok_s > cap * (1.0 + MIN_BAND))
            .map(|r| (r.run, r.measured.output_tok_s))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        Some(FrontEnd {
            run: o.run,
            output_tok_s: cap,
            outside,
            contradicted_by,
        })
    }

    /// The capacity the replays carry: none where a run contradicted it.
    fn applied(f: Option<&FrontEnd>) -> Option<f64> {
        f.filter(|f| f.contradicted_by.is_none())
            .map(|f| f.output_tok_s)
    }
}

/// One run, measured and replayed, and how far apart (relative, predicted / measured − 1).
#[derive(Debug, Clone, Serialize)]
pub struct StageFit {
    pub run: i64,
    pub load: Arrivals,
    /// The run's workload as replayed: its time outside the engine split before and after the
    /// engine as the run's TTFT showed it.
    pub workload: Workload,
    /// Sequences per step: the run's counters', and the replay's mean batch.
    pub batch: (Option<f64>, f64),
    pub max_num_seqs: u32,
    pub measured: Figures,
    pub replayed: Figures,
    pub error: Errors,
}

/// Relative errors of a replay against a measurement (absent where either lacks the figure).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Errors {
    pub output_tok_s: Option<f64>,
    pub ttft_p50: Option<f64>,
    pub itl_p50: Option<f64>,
    /// The replay met the limit the run's verdict named.
    pub bottleneck_agrees: bool,
    /// The replay met that limit or came near it ([`Figures::near`]).
    pub bottleneck_in_reach: bool,
}

impl Errors {
    fn between(predicted: &Figures, measured: &Figures) -> Errors {
        let rel = |p: Option<f64>, m: Option<f64>| match (p, m) {
            (Some(p), Some(m)) if m > 0.0 => Some(p / m - 1.0),
            _ => None,
        };
        Errors {
            output_tok_s: rel(Some(predicted.output_tok_s), Some(measured.output_tok_s)),
            ttft_p50: rel(predicted.ttft_ms.p50, measured.ttft_ms.p50),
            itl_p50: rel(predicted.itl_ms.p50, measured.itl_ms.p50),
            bottleneck_agrees: predicted.bottleneck == measured.bottleneck,
            bottleneck_in_reach: predicted.reaches(&measured.bottleneck),
        }
    }
}

/// Simulated seconds before a replay measures: the clients' first wave settles.
fn warmup(seconds: f64) -> f64 {
    (seconds / 4.0).clamp(2.0, 30.0)
}

/// Seconds a replay measures: the run's own sending time, at least 20 s (a short run's
/// percentiles are noisy), at most 5 minutes.
fn replay_seconds(o: &Observed) -> f64 {
    o.seconds.clamp(20.0, 300.0)
}

/// Fits one step model to every run's intervals and replays each run on it.
pub fn fit(runs: &[Observed]) -> Result<Fit, OpsError> {
    let all: Vec<Interval> = runs.iter().flat_map(|o| o.intervals.clone()).collect();
    let model = model::fit(&all).map_err(|e| {
        let ids: Vec<String> = runs.iter().map(|o| o.run.to_string()).collect();
        invalid(format!(
            "cannot fit the engine to run {}: {e}",
            ids.join(", ")
        ))
    })?;
    let front_end = FrontEnd::of(runs);
    let stages = runs
        .iter()
        .map(|o| {
            let seconds = replay_seconds(o);
            let workload = split_front_end(&model, o, FrontEnd::applied(front_end.as_ref()));
            let (r, replayed) = replayed(&model, &o.deployment, &workload, seconds);
            StageFit {
                batch: (batch(o), r.running),
                run: o.run,
                load: o.workload.arrivals,
                workload,
                max_num_seqs: o.deployment.max_num_seqs,
                error: Errors::between(&replayed, &o.measured),
                measured: o.measured.clone(),
                replayed,
            }
        })
        .collect();
    Ok(Fit {
        model,
        front_end,
        stages,
    })
}

/// `w` replayed on `d`: the figures of the replay with clients staggered, and as limits near
/// those a closed loop's clients met in waves too ([`model::replay_with`]: a real engine's batch
/// can keep either shape, so the model names both).
fn replayed(model: &StepModel, d: &Deployment, w: &Workload, seconds: f64) -> (Replayed, Figures) {
    let (r, f, _) = replayed_both(model, d, w, seconds);
    (r, f)
}

/// [`replayed`], and the change with a closed loop's clients in waves (`None` for an open loop).
fn replayed_both(
    model: &StepModel,
    d: &Deployment,
    w: &Workload,
    seconds: f64,
) -> (Replayed, Figures, Option<Waves>) {
    let span = (warmup(seconds), seconds);
    let r = model::replay_with(model, d, w, span, false);
    let mut f = Figures::replayed(&r);
    let mut in_waves = None;
    if matches!(w.arrivals, Arrivals::Closed { .. }) {
        let waves = model::replay_with(model, d, w, span, true);
        let limits = ["kv_cache_capacity", "token_budget", "batch_limit"];
        for &n in std::iter::once(&waves.bottleneck).chain(&waves.near) {
            if limits.contains(&n) && n != f.bottleneck && !f.near.iter().any(|m| m == n) {
                f.near.push(n.to_owned());
            }
        }
        in_waves = Some(Waves::of(&waves));
    }
    (r, f, in_waves)
}

/// `o`'s workload with its time outside the engine split as the run showed it: the part before
/// the scheduler is what the client's TTFT p50 held beyond the engine's own (the run replayed
/// with all of that time after the answer: a closed loop's pace is the same either way); the
/// rest comes after the answer. A real vLLM 0.32 with 4 clients: 62 ms outside by Little's
/// law, a TTFT p50 of 10 ms — the time is the response's end, not its start.
/// Where Little's law read no time outside (within its noise) but the TTFT shows some, that
/// time is the front end's, all before the engine.
/// With the API server's capacity (`front_end`, output tokens/s) the replay queues requests at
/// it; the part of the time outside that was that queue is then not kept as a delay as well:
/// the delay is what is left at the run's own use of the server (none where it held the load).
fn split_front_end(model: &StepModel, o: &Observed, front_end: Option<f64>) -> Workload {
    let mut w = o.workload;
    if let Some(cap) = front_end {
        w.frontend_tok_s = Some(cap);
        let used = (o.measured.output_tok_s / cap).clamp(0.0, 1.0);
        w.frontend_s *= 1.0 - used;
    }
    let Some(measured) = o.measured.ttft_ms.p50 else {
        return w;
    };
    w.frontend_before_s = Some(0.0);
    let seconds = replay_seconds(o);
    let engine = model::replay(model, &o.deployment, &w, warmup(seconds), seconds).ttft_p50_s;
    let before = engine.map(|e| (measured / 1000.0 - e).max(0.0));
    if w.frontend_s <= 0.0 {
        w.frontend_s = before.unwrap_or(0.0);
    }
    w.frontend_before_s = before.map(|b| b.min(w.frontend_s));
    w
}

/// Sequences per step the run's own counters show (generated tokens over steps).
fn batch(o: &Observed) -> Option<f64> {
    let (g, s) = o
        .intervals
        .iter()
        .fold((0.0, 0.0), |(g, s), i| (g + i.generated, s + i.steps));
    (s > 0.0).then(|| g / s)
}

/// A prediction: the figures, and the band the fit's own errors put around them.
#[derive(Debug, Clone, Serialize)]
pub struct Predicted {
    #[serde(flatten)]
    pub figures: Figures,
    pub band: Band,
}

/// The range a predicted figure may fall in: the prediction moved by the largest error the fit
/// made on the runs it was fitted to (at least [`MIN_BAND`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Band {
    pub output_tok_s: (f64, f64),
    pub ttft_p50_ms: Option<(f64, f64)>,
    /// The relative half-widths used.
    pub output_share: f64,
    pub ttft_share: f64,
    /// The most output tok/s any fitted run served, where the prediction goes beyond it: the
    /// band's floor is then no higher than that: the API server there is untested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beyond_measured: Option<f64>,
    /// How far apart fitted runs of the base's own load and settings measured: the host's
    /// repeatability, a floor under the band.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat: Option<Repeat>,
    /// Milliseconds of the base's TTFT spent in front of the engine (the API server), which the
    /// model keeps as they were: the TTFT band reaches down by them, for that time depends on
    /// how busy the front end is, which the model does not hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub front_kept_ms: Option<f64>,
    /// The prediction made again at each edge of what the runs allow a prompt token to cost
    /// ([`StepModel::prompt_token_range`]); the band holds both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cost: Option<PromptEdges>,
    /// The prediction replayed with a closed loop's clients in waves ([`Waves`]); the band
    /// holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waves: Option<Waves>,
}

/// The change's figures with a closed loop's clients started together: requests of one length
/// then finish together, come back together, and each wave's prompts are computed in one step
/// — the shape a real engine's batch may keep or lose by the jitter of its host, which the model
/// cannot tell. A real vLLM 0.32 at `--max-num-seqs 16`, 16 clients of 93-token prompts and
/// 32-token answers: TTFT p50 49–61 ms where the staggered replay gives 42.
///
/// The limit can differ too: a real vLLM 0.32 with an 8 MiB pool (31 usable blocks of 128
/// tokens), 16 sequences of ~157 tokens and 32 clients filled its pool as its batch crossed the
/// first block together; staggered, the model's pool peaks at 77–81 % and the cap is named.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Waves {
    pub output_tok_s: f64,
    pub ttft_p50_ms: Option<f64>,
    /// The limit the batch in waves meets.
    pub bottleneck: &'static str,
}

impl Waves {
    fn of(r: &Replayed) -> Waves {
        let f = Figures::replayed(r);
        Waves {
            output_tok_s: f.output_tok_s,
            ttft_p50_ms: f.ttft_ms.p50,
            bottleneck: r.bottleneck,
        }
    }
}

/// Other predictions of the same change that what the runs show cannot rule out: the band
/// holds each.
#[derive(Debug, Clone, Copy, Default)]
struct Edges {
    prompt_cost: Option<PromptEdges>,
    waves: Option<Waves>,
}

/// The change predicted with a prompt token at the least and the most the fitted runs allow it
/// to cost: where the runs kept one ratio of prompt to answer tokens the split of a step's time
/// between prefill and decode is not known, and it decides how long a step that takes in new
/// requests runs — the TTFT of a batch that admits many at once (the replay's clients then
/// arrive in waves).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PromptEdges {
    /// Milliseconds a prompt token costs at each edge.
    pub ms_per_token: (f64, f64),
    pub output_tok_s: (f64, f64),
    pub ttft_p50_ms: (Option<f64>, Option<f64>),
}

impl PromptEdges {
    /// `predicted` made again on each edge's model: the step and sequence costs refitted to
    /// the same runs with the prompt token's cost held there, the base's front end split again
    /// by it (a costlier prefill leaves less of the base's TTFT to the API server).
    fn of(runs: &[Observed], fit: &Fit, d: &Deployment) -> Option<PromptEdges> {
        let (lo, hi) = fit.model.prompt_token_range?;
        let base = runs.first()?;
        let all: Vec<Interval> = runs.iter().flat_map(|o| o.intervals.clone()).collect();
        let front_end = FrontEnd::applied(fit.front_end.as_ref());
        let at = |cost: f64| {
            let m = model::refit_at(&all, &fit.model, cost);
            let w = split_front_end(&m, base, front_end);
            replayed(&m, d, &w, replay_seconds(base)).1
        };
        let (low, high) = (at(lo), at(hi));
        Some(PromptEdges {
            ms_per_token: (lo * 1e3, hi * 1e3),
            output_tok_s: (low.output_tok_s, high.output_tok_s),
            ttft_p50_ms: (low.ttft_ms.p50, high.ttft_ms.p50),
        })
    }
}

/// Fitted runs of one load on one deployment, and how far apart they measured (the largest
/// over the smallest, less one): what the model cannot be more exact than on that host. A
/// real vLLM 0.32 on 2 cores, its API server, engine core and worker sharing them, served the
/// same 32 clients at a 4 MiB pool 1,867 and then 2,909 tok/s.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Repeat {
    pub runs: usize,
    pub output_tok_s: f64,
    pub ttft_p50: Option<f64>,
}

impl Repeat {
    /// The runs of the fit that repeat the first one's (the base's) load and settings.
    fn of(fit: &Fit) -> Option<Repeat> {
        let base = fit.stages.first()?;
        let same: Vec<&StageFit> = fit
            .stages
            .iter()
            .filter(|s| {
                s.load == base.load
                    && s.max_num_seqs == base.max_num_seqs
                    && s.workload.output_tokens == base.workload.output_tokens
                    && s.workload
                        .prompt_tokens
                        .abs_diff(base.workload.prompt_tokens)
                        <= base.workload.prompt_tokens / 10
            })
            .collect();
        let spread = |v: Vec<f64>| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            (v.len() >= 2 && lo > 0.0).then(|| hi / lo - 1.0)
        };
        Some(Repeat {
            runs: same.len(),
            output_tok_s: spread(same.iter().map(|s| s.measured.output_tok_s).collect())?,
            ttft_p50: spread(same.iter().filter_map(|s| s.measured.ttft_ms.p50).collect()),
        })
    }
}

/// The narrowest band stated: a model is never exact to better than this.
pub const MIN_BAND: f64 = 0.05;

impl Band {
    fn around(f: &Figures, fit: &Fit, edges: Edges) -> Band {
        let Edges { prompt_cost, waves } = edges;
        let worst = |pick: fn(&Errors) -> Option<f64>| {
            fit.stages
                .iter()
                .filter_map(|s| pick(&s.error))
                .map(f64::abs)
                .fold(MIN_BAND, f64::max)
        };
        let repeat = Repeat::of(fit);
        let output_share = worst(|e| e.output_tok_s).max(repeat.map_or(0.0, |r| r.output_tok_s));
        let ttft_share = worst(|e| e.ttft_p50).max(repeat.and_then(|r| r.ttft_p50).unwrap_or(0.0));
        let span = |v: f64, share: f64| (v * (1.0 - share).max(0.0), v * (1.0 + share));
        // Past the most any fitted run served, the API server (HTTP, detokenising, streaming;
        // not in the model) may stop keeping up: the floor is what was served. A real vLLM 0.32
        // on 2 cores predicted 3,550 tok/s at an 8 MiB pool served 2,370–2,770, its API server
        // holding 10–13 of 32 requests away from the engine.
        let most = fit
            .stages
            .iter()
            .map(|s| s.measured.output_tok_s)
            .fold(0.0, f64::max);
        let beyond_measured = (most > 0.0 && f.output_tok_s > most).then_some(most);
        let mut output_tok_s = span(f.output_tok_s, output_share);
        if let Some(most) = beyond_measured {
            output_tok_s.0 = output_tok_s.0.min(most);
        }
        // A real vLLM 0.32 on 2 cores: a cap-8 base kept 37 ms of its TTFT in the API server;
        // at cap 16 the same 16 clients met 15–20 ms there (TTFT 58–67 ms, predicted 89).
        let front_kept_ms = fit
            .stages
            .first()
            .and_then(|s| s.workload.frontend_before_s)
            .map(|s| s * 1000.0)
            .filter(|ms| *ms > 0.0);
        let mut ttft_p50_ms = f.ttft_ms.p50.map(|v| {
            let (lo, hi) = span(v, ttft_share);
            (front_kept_ms.map_or(lo, |ms| lo.min((v - ms).max(0.0))), hi)
        });
        // What a prompt token may cost moves the prediction itself: the band holds it at both.
        if let Some(e) = prompt_cost {
            let (a, b) = e.output_tok_s;
            output_tok_s = (output_tok_s.0.min(a).min(b), output_tok_s.1.max(a).max(b));
            if let Some((lo, hi)) = ttft_p50_ms.as_mut() {
                for t in [e.ttft_p50_ms.0, e.ttft_p50_ms.1].into_iter().flatten() {
                    (*lo, *hi) = (lo.min(t), hi.max(t));
                }
            }
        }
        if let Some(w) = waves {
            output_tok_s = (
                output_tok_s.0.min(w.output_tok_s),
                output_tok_s.1.max(w.output_tok_s),
            );
            if let (Some((lo, hi)), Some(t)) = (ttft_p50_ms.as_mut(), w.ttft_p50_ms) {
                (*lo, *hi) = (lo.min(t), hi.max(t));
            }
        }
        Band {
            output_tok_s,
            ttft_p50_ms,
            output_share,
            ttft_share,
            beyond_measured,
            repeat,
            front_kept_ms,
            prompt_cost,
            waves,
        }
    }
}

/// The answer of `whatif`: the fit, the base run as measured, the changes and the prediction;
/// `confirmed` once the changed deployment was measured (`--confirm`).
#[derive(Debug, Clone, Serialize)]
pub struct WhatIf {
    pub fit: Fit,
    pub base: BaseRun,
    pub changes: Vec<Change>,
    pub deployment: Deployment,
    pub predicted: Predicted,
    pub confirmed: Option<Confirmed>,
    /// What the model leaves out that matters here, in words.
    pub caveats: Vec<String>,
}

/// The run whose workload is replayed.
#[derive(Debug, Clone, Serialize)]
pub struct BaseRun {
    pub run: i64,
    pub workload: Workload,
    pub deployment: Deployment,
    pub measured: Figures,
}

/// The changed deployment measured, beside the prediction.
#[derive(Debug, Clone, Serialize)]
pub struct Confirmed {
    pub run: i64,
    #[serde(flatten)]
    pub figures: Figures,
    pub error: Errors,
    /// Each target and whether the measurement met it.
    pub within: Vec<Target>,
}

/// A target of the prediction (`output tok/s within 20 %`) and whether it was met.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub what: String,
    pub met: bool,
}

/// The deployment of `base` with `changes` applied.
pub fn changed(base: &Observed, changes: &[Change]) -> Result<Deployment, OpsError> {
    let mut d = base.deployment;
    for c in changes {
        match *c {
            Change::MaxNumSeqs(n) => d.max_num_seqs = n,
            Change::MaxNumBatchedTokens(n) => d.max_num_batched_tokens = n,
            Change::Replicas(n) => d.replicas = n,
            Change::KvCacheMemoryBytes(bytes) => d.kv_tokens = Some(pool_tokens(base, bytes)?),
            Change::GpuMemoryUtilization(u) => {
                let bytes = pool_bytes_at(base, u)?;
                d.kv_tokens = Some(pool_tokens(base, bytes)?);
            }
        }
    }
    // Engines time-sliced on one GPU duplicate the weights: each gets a share of the pool.
    if d.replicas > 1 {
        d.kv_tokens = d.kv_tokens.map(|t| t / u64::from(d.replicas));
    }
    holds_one_request(base, &d, changes)?;
    Ok(d)
}

/// vLLM refuses to start with a KV pool that cannot hold one sequence of `--max-model-len`
/// ("To serve at least one request with the model's max seq len …, … KV cache is needed, which
/// is larger than the available KV cache memory"): a changed pool (in whole blocks, each
/// replica's share) must hold one request of the base's workload — its prompt and answer — and
/// two blocks. Said in the words of the flag given, with the least that would do.
fn holds_one_request(base: &Observed, d: &Deployment, changes: &[Change]) -> Result<(), OpsError> {
    let Some(tokens) = d.kv_tokens else {
        return Ok(());
    };
    let block = u64::from(d.block_size.max(1));
    let usable = tokens / block * block;
    let w = &base.workload;
    let request = u64::from(w.prompt_tokens) + u64::from(w.output_tokens) + 1;
    let needed = request.max(2 * block);
    if usable >= needed {
        return Ok(());
    }
    let set: Vec<String> = changes.iter().map(|c| format!("{c}")).collect();
    let replicas = u64::from(d.replicas.max(1));
    let share = if replicas > 1 {
        format!(" ({replicas} replicas' share each)")
    } else {
        String::new()
    };
    let least = base
        .pool_bytes
        .zip(base.deployment.kv_tokens)
        .filter(|&(b, t)| b > 0 && t > 0)
        .map_or(String::new(), |(b, t)| {
            let bytes = (needed * replicas) as f64 * b as f64 / t as f64;
            format!(
                "; a pool of at least {} bytes holds it",
                llmscope_core::number::thousands(bytes.ceil())
            )
        });
    Err(invalid(format!(
        "{}: the KV pool would hold {usable} tokens{share} — less than one request of run {}'s workload ({request} tokens: its prompt and answer) or two blocks of {block}; vLLM refuses to start with a pool that cannot hold one sequence{least}",
        set.join(", "),
        base.run
    )))
}

/// The tokens a pool of `bytes` holds, at the bytes per token the measured pool had.
fn pool_tokens(base: &Observed, bytes: u64) -> Result<u64, OpsError> {
    match (base.pool_bytes, base.deployment.kv_tokens) {
        (Some(b), Some(t)) if b > 0 && t > 0 => Ok((bytes as f64 * t as f64 / b as f64) as u64),
        _ => Err(invalid(format!(
            "run {}: the engine did not say its KV pool in bytes and tokens (`vllm:cache_config_info` with kv_cache_memory_bytes and the pool's size), so a pool in bytes cannot be turned into tokens; use --set max-num-seqs or measure a run whose engine exposes its cache config",
            base.run
        ))),
    }
}

/// The pool `--gpu-memory-utilization u` leaves: the measured pool plus the change in the
/// share of GPU memory vLLM may take (weights and activations stay as they were).
fn pool_bytes_at(base: &Observed, u: f64) -> Result<u64, OpsError> {
    let (Some(u0), Some(fb), Some(tokens)) = (
        base.gpu_memory_utilization,
        base.fb_total_mib,
        base.deployment.kv_tokens,
    ) else {
        return Err(invalid(format!(
            "run {}: predicting --gpu-memory-utilization needs the engine's current value and pool (`vllm:cache_config_info`) and the GPU's memory (dcgm-exporter's FB_USED and FB_FREE); the run lacks one of them — use --set kv-cache-memory-bytes instead",
            base.run
        )));
    };
    let bytes = base.pool_bytes.unwrap_or(0);
    let now = if bytes > 0 {
        bytes as f64
    } else {
        tokens as f64
    };
    let grown = now + (u - u0) * fb * 1024.0 * 1024.0;
    if grown <= 0.0 {
        return Err(invalid(format!(
            "--set gpu-memory-utilization={u}: at that share the weights leave no KV pool (vLLM would refuse to start)"
        )));
    }
    Ok(grown as u64)
}

/// Predicts `changes` on the first of `runs` (the base), fitted on all of them.
pub fn predict(runs: &[Observed], changes: &[Change]) -> Result<WhatIf, OpsError> {
    let base = runs
        .first()
        .ok_or_else(|| invalid("whatif needs at least one run".to_owned()))?;
    let fit = fit(runs)?;
    let deployment = changed(base, changes)?;
    let seconds = replay_seconds(base);
    // The base's workload as its fit replayed it (the front end's time split).
    let workload = fit.stages.first().map_or(base.workload, |s| s.workload);
    let (_, figures, waves) = replayed_both(&fit.model, &deployment, &workload, seconds);
    let edges = Edges {
        prompt_cost: PromptEdges::of(runs, &fit, &deployment),
        waves,
    };
    let band = Band::around(&figures, &fit, edges);
    Ok(WhatIf {
        caveats: caveats(base, &fit, &figures, &band),
        base: BaseRun {
            run: base.run,
            workload,
            deployment: base.deployment,
            measured: base.measured.clone(),
        },
        changes: changes.to_vec(),
        deployment,
        predicted: Predicted { figures, band },
        confirmed: None,
        fit,
    })
}

/// What the model leaves out, where it matters for this prediction.
fn caveats(base: &Observed, fit: &Fit, predicted: &Figures, band: &Band) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(most) = band.beyond_measured {
        out.push(format!(
            "the prediction goes beyond the most any fitted run served ({} output tok/s): whether the API server (HTTP, detokenising, streaming; not in the model) keeps up there is untested, so the band reaches down to that",
            llmscope_core::number::thousands(most)
        ));
    }
    for s in &fit.stages {
        stage_caveats(s, &mut out);
    }
    front_end_caveats(fit, &mut out);
    if let Some(r) = band.repeat {
        out.push(format!(
            "{} fitted runs repeat the base's load on its settings and measured {:.0}% apart in output tok/s{}: the host's own repeatability, so the band is no narrower",
            r.runs,
            r.output_tok_s * 100.0,
            r.ttft_p50
                .map(|t| format!(" and {:.0}% in TTFT p50", t * 100.0))
                .unwrap_or_default()
        ));
    }
    let outside = base.workload.frontend_s;
    // Worth saying where it held a request or more away from the engine (Little's law).
    if fit.front_end.is_none() && outside * base.measured.req_s >= 1.0 {
        out.push(format!(
            "each request spent {:.0} ms outside the engine (the API server: HTTP, tokenising, streaming); the model keeps that time per request as it was, but a front end sharing the engine's cores takes longer as output grows, so more output predicted is an upper bound",
            outside * 1000.0
        ));
    }
    if let (Some(ms), Some((lo, _))) = (band.front_kept_ms, band.ttft_p50_ms) {
        out.push(format!(
            "{ms:.0} ms of the base's TTFT p50 came before the engine (the API server), kept in the prediction as it was: how long the front end holds a request depends on how busy it is, so the TTFT band reaches down to {lo:.0} ms"
        ));
    }
    if let Some(e) = band.prompt_cost {
        let preempted = base.intervals.iter().any(|i| i.recomputed > 0.0);
        prompt_cost_caveat(fit, &e, preempted, &mut out);
    }
    if let Some(w) = band.waves {
        waves_caveat(predicted, &w, &mut out);
    }
    if !base.budget_known {
        out.push(format!(
            "the run did not say --max-num-batched-tokens; vLLM's default {DEFAULT_BUDGET} was assumed"
        ));
    }
    if base.deployment.kv_tokens.is_none() {
        out.push("the engine did not say its KV pool (`vllm:cache_config_info`): the model gives it room for every request, so a KV limit cannot be predicted".to_owned());
    }
    if predicted.bottleneck == "engine_step" {
        out.push("past this load each added sequence lengthens every step: the engine's own step time is the limit".to_owned());
    }
    out
}

/// Where a closed loop's clients moving in waves changes the prediction: how far.
fn waves_caveat(predicted: &Figures, w: &Waves, out: &mut Vec<String>) {
    let moved = |a: f64, b: f64| (a - b).abs() / a.max(b).max(f64::MIN_POSITIVE);
    let ttft = predicted.ttft_ms.p50.zip(w.ttft_p50_ms);
    let ttft_moved = ttft.map_or(0.0, |(a, b)| moved(a, b));
    let limit_moved = w.bottleneck != predicted.bottleneck;
    if moved(predicted.output_tok_s, w.output_tok_s) < MIN_BAND
        && ttft_moved < MIN_BAND
        && !limit_moved
    {
        return;
    }
    let ttft = ttft.map_or(String::new(), |(a, b)| {
        format!(" and TTFT p50 {b:.0} ms (staggered: {a:.0} ms)")
    });
    let limit = if limit_moved {
        let near = if predicted.near.iter().any(|n| n == w.bottleneck) {
            ", named as near"
        } else {
            ""
        };
        format!(
            ", and its limit is {} (staggered: {}){near}",
            w.bottleneck, predicted.bottleneck
        )
    } else {
        String::new()
    };
    out.push(format!(
        "the model's requests are all of the run's mean lengths, and a closed loop of such requests may move in waves — finished, sent again and prefilled together — or stay staggered, as a real host's jitter decides; in waves the change serves {} output tok/s{ttft}{limit}: the band holds both",
        llmscope_core::number::thousands(w.output_tok_s),
    ));
}

/// Where what a prompt token costs moves the prediction: how far, and why the runs do not say.
/// `preempted`: the base's engine preempted (its steps recomputed prompts).
fn prompt_cost_caveat(fit: &Fit, e: &PromptEdges, preempted: bool, out: &mut Vec<String>) {
    let (lo, hi) = e.ms_per_token;
    let ttft = |t: Option<f64>| t.map_or("—".to_owned(), |t| format!("{t:.0} ms"));
    let moved = |(a, b): (f64, f64)| (a - b).abs() / a.max(b).max(f64::MIN_POSITIVE);
    let ttft_moved = match e.ttft_p50_ms {
        (Some(a), Some(b)) => moved((a, b)),
        _ => 0.0,
    };
    if moved(e.output_tok_s) < MIN_BAND && ttft_moved < MIN_BAND {
        return;
    }
    let split = if fit.model.prompt_token_s > 0.0 {
        "fitted".to_owned()
    } else {
        format!(
            "not told from nothing: the runs' prompt tokens{} moved with the generated ones too closely to say (one workload), so the prediction takes none",
            if preempted {
                " (and those their preemptions computed again)"
            } else {
                ""
            }
        )
    };
    out.push(format!(
        "a prompt token's cost is {split}; the runs allow {lo:.4}–{hi:.4} ms, and across that the prediction moves from {} to {} output tok/s and TTFT p50 {} to {} (a costlier prefill lengthens the steps that take in new requests{}): the band holds both",
        llmscope_core::number::thousands(e.output_tok_s.0),
        llmscope_core::number::thousands(e.output_tok_s.1),
        ttft(e.ttft_p50_ms.0),
        ttft(e.ttft_p50_ms.1),
        if preempted {
            ", and leaves less of the preempting base's time to its sequences"
        } else {
            ""
        },
    ));
}

/// Where the fit mis-reproduces fitted run `s`, in words, and why.
fn stage_caveats(s: &StageFit, out: &mut Vec<String>) {
    if let Some(e) = s.error.output_tok_s.filter(|e| e.abs() > 0.2) {
        let thinner = s.batch.0.filter(|&b| b < 0.8 * s.batch.1);
        let why = match thinner {
            Some(b) if s.measured.bottleneck == "kv_cache_capacity" => &format!(
                "the engine ran {b:.1} sequences a step where the model runs {:.1}: its scheduler kept requests it held out of the batch (on a starved KV pool, preempted and admitted again, at worst one at a time), which the model does not do",
                s.batch.1
            ),
            Some(b) => &format!(
                "the engine ran {b:.1} sequences a step where the model runs {:.1}: requests waited in front of it (the API server, a starved host) longer than the run's gauges could tell",
                s.batch.1
            ),
            None => "",
        };
        let why = if !why.is_empty() {
            why
        } else if e > 0.0 {
            "the engine served less than its steps allow: requests waited in front of it (the API server, a starved host), which the model does not hold"
        } else {
            "the engine served more than the fitted steps allow: its steps were cheaper in this run than the line through all runs"
        };
        out.push(format!(
            "run {}: the fitted model is {:+.0}% off its output tokens/s — {why}",
            s.run,
            e * 100.0
        ));
    }
    if s.error.bottleneck_in_reach && !s.error.bottleneck_agrees {
        out.push(format!(
            "run {}: measured `{}`, replayed `{}` with `{}` near: the two limits lie too close together for the model to say which a real engine meets first",
            s.run, s.measured.bottleneck, s.replayed.bottleneck, s.measured.bottleneck
        ));
    } else if !s.error.bottleneck_agrees {
        out.push(format!(
            "run {}: measured `{}`, replayed `{}`: the model does not reproduce that run's limit",
            s.run, s.measured.bottleneck, s.replayed.bottleneck
        ));
    }
}

/// What the API server's capacity does to the prediction, in words.
fn front_end_caveats(fit: &Fit, out: &mut Vec<String>) {
    let Some(f) = fit.front_end else {
        return;
    };
    let tok = llmscope_core::number::thousands;
    out.push(match f.contradicted_by {
        None => format!(
            "run {}: the API server held {:.1} of {:.0} requests in front of the engine at {} output tok/s — the model keeps that as the most it streams, so no change to the engine predicts more; giving it cores of its own (vLLM's --api-server-count, the pod's CPU) is what lifts it",
            f.run,
            f.outside.0,
            f.outside.1,
            tok(f.output_tok_s)
        ),
        Some((run, more)) => format!(
            "run {}: the API server held {:.1} of {:.0} requests in front of the engine at {} output tok/s, yet run {run} streamed {}: its capacity moved with the host's load (cores shared by engine, API server and client), so the model leaves it out and the prediction is the engine's",
            f.run,
            f.outside.0,
            f.outside.1,
            tok(f.output_tok_s),
            tok(more)
        ),
    });
}

/// The runs to fit, read from `store`: each run given, and for a stage of a capacity search
/// every stage of that search (stored one after the other, numbered from 1), in that order and
/// each once. The first run given is the base.
pub fn gather(
    store: &llmscope_store::Store,
    runs: &[llmscope_store::RunId],
) -> Result<Vec<Observed>, OpsError> {
    let mut ids: Vec<llmscope_store::RunId> = Vec::new();
    for &run in runs {
        for id in std::iter::once(run).chain(search_of(store, run)?) {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids.iter()
        .map(|&id| observe(&crate::analysis::analyse(store, id)?))
        .collect()
}

/// The other stages of the capacity search `run` is a stage of (none for a plain run).
fn search_of(
    store: &llmscope_store::Store,
    run: llmscope_store::RunId,
) -> Result<Vec<llmscope_store::RunId>, OpsError> {
    let stage = |id| -> Result<Option<u64>, OpsError> {
        let config = match store.config(id) {
            Ok(c) => c,
            Err(llmscope_store::StoreError::NoSuchRun(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(config
            .get("capacity")
            .and_then(|c| c.get("stage"))
            .and_then(serde_json::Value::as_u64))
    };
    let Some(mut at) = stage(run)? else {
        return Ok(Vec::new());
    };
    let mut first = run;
    while at > 1 && stage(first - 1)? == Some(at - 1) {
        first -= 1;
        at -= 1;
    }
    let mut out = Vec::new();
    let mut id = first;
    while let Some(s) = stage(id)? {
        if id != first && s != at + 1 {
            break;
        }
        at = s;
        out.push(id);
        id += 1;
    }
    Ok(out)
}

impl Change {
    /// The change a recommendation names.
    pub fn from_setting(s: llmscope_diagnosis::advice::Setting) -> Result<Change, OpsError> {
        let value = if s.value.fract() == 0.0 {
            format!("{:.0}", s.value)
        } else {
            s.value.to_string()
        };
        format!("{}={value}", s.flag).parse()
    }
}

/// Adds to every recommendation of `a` that names a flag and a value what that change is
/// predicted to buy, by the engine model fitted to this run alone — or why it could not be
/// predicted. Runs without the client's figures (a window read from Prometheus) are left as
/// they are.
pub fn annotate(a: &mut Analysed) {
    let wanted = a
        .diagnosis
        .recommendations
        .iter()
        .any(|r| r.setting.is_some());
    if !wanted || a.facts.client.is_none() {
        return;
    }
    let observed = observe(a);
    let (run, simulated) = (a.run, a.facts.simulated);
    for r in &mut a.diagnosis.recommendations {
        let Some(setting) = r.setting else {
            continue;
        };
        let predicted = observed
            .as_ref()
            .map_err(ToString::to_string)
            .and_then(|o| {
                let change = Change::from_setting(setting).map_err(|e| e.to_string())?;
                predict(std::slice::from_ref(o), &[change]).map_err(|e| e.to_string())
            });
        r.predicted = Some(match predicted {
            Ok(w) => in_words(&w, run, setting, simulated),
            Err(why) => format!("not predicted: {why}"),
        });
    }
}

/// One stage of a capacity search as its advice is predicted: the run, its diagnosis' advice,
/// and what a fit reads of it (or why it cannot be read).
#[derive(Debug, Clone)]
pub struct Advised {
    pub run: i64,
    pub simulated: bool,
    pub advice: Vec<llmscope_diagnosis::advice::Recommendation>,
    pub observed: Result<Observed, String>,
}

impl Advised {
    pub fn of(a: &Analysed) -> Advised {
        Advised {
            run: a.run,
            simulated: a.facts.simulated,
            advice: a.diagnosis.recommendations.clone(),
            observed: observe(a).map_err(|e| e.to_string()),
        }
    }
}

/// The advice of the stage `cause_run` (a capacity search's cause), each change that names an
/// engine setting predicted by the model fitted to every stage of the search (the cause's
/// stage first: the one replayed). Stages that cannot be read are left out of the fit.
pub fn advise_search(
    stages: &[Advised],
    cause_run: i64,
) -> Vec<llmscope_diagnosis::advice::Recommendation> {
    let Some(cause) = stages.iter().find(|s| s.run == cause_run) else {
        return Vec::new();
    };
    let runs: Result<Vec<Observed>, String> = cause.observed.clone().map(|first| {
        let others = stages
            .iter()
            .filter(|s| s.run != cause_run)
            .filter_map(|s| s.observed.as_ref().ok().cloned());
        std::iter::once(first).chain(others).collect()
    });
    let mut advice = cause.advice.clone();
    for r in &mut advice {
        let Some(setting) = r.setting else {
            continue;
        };
        let predicted = runs.as_ref().map_err(Clone::clone).and_then(|runs| {
            let change = Change::from_setting(setting).map_err(|e| e.to_string())?;
            predict(runs, &[change]).map_err(|e| e.to_string())
        });
        r.predicted = Some(match predicted {
            Ok(w) => in_words(&w, cause_run, setting, cause.simulated),
            Err(why) => format!("not predicted: {why}"),
        });
    }
    advice
}

/// `1,850 output tok/s (1,700–2,000; now 1,120), TTFT p50 95 ms (now 2,400), then limited by …`.
fn in_words(
    w: &WhatIf,
    run: i64,
    s: llmscope_diagnosis::advice::Setting,
    simulated: bool,
) -> String {
    use llmscope_core::number::thousands;
    let p = &w.predicted;
    let m = &w.base.measured;
    let ms = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{} ms", thousands(v)));
    let flag = format!(
        "{}={}",
        s.flag,
        Change::from_setting(s).map_or(s.value.to_string(), |c| match c {
            Change::GpuMemoryUtilization(u) => u.to_string(),
            _ => format!("{:.0}", s.value),
        })
    );
    format!(
        "{} output tok/s ({}–{}; now {}), TTFT p50 {} (now {}), then limited by {} — the engine model fitted to this run (`llmscope whatif {run} --set {flag}` shows the fit{})",
        thousands(p.figures.output_tok_s),
        thousands(p.band.output_tok_s.0),
        thousands(p.band.output_tok_s.1),
        thousands(m.output_tok_s),
        ms(p.figures.ttft_ms.p50),
        ms(m.ttft_ms.p50),
        p.figures.limit(),
        if simulated {
            "; --confirm measures it on the simulated stack"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_preemption_recomputes_a_prompt_the_counters_never_count() {
        // Half-second scrapes of an engine stepping 100 times each, 10 sequences a step, a
        // 93-token prompt every 6.5 steps and one preemption every 10 steps from the fourth
        // interval on.
        let mut input = Input::default();
        let counter = |per: &dyn Fn(usize) -> f64| -> Vec<(f64, f64)> {
            let mut total = 0.0;
            (0..8)
                .map(|k| {
                    let point = (0.5 * k as f64, total);
                    total += per(k);
                    point
                })
                .collect()
        };
        for (c, per) in [
            (Concept::StepCount, &(|_| 100.0) as &dyn Fn(usize) -> f64),
            (Concept::GeneratedTokens, &|_| 1000.0),
            (Concept::PromptTokens, &|_| 93.0 * 100.0 / 6.5),
            (Concept::Preemptions, &|k| if k >= 3 { 10.0 } else { 0.0 }),
        ] {
            input.signals.insert(c, Signal::new("engine", counter(per)));
        }
        let iv = intervals(&input, 93.0);
        assert_eq!(iv.len(), 5, "{iv:?}");
        assert!(iv.iter().all(|i| i.steps == 100.0 && i.generated == 1000.0));
        let recomputed: Vec<f64> = iv.iter().map(|i| i.recomputed).collect();
        assert_eq!(recomputed, [0.0, 0.0, 930.0, 930.0, 930.0]);
        // No preemption counter: nothing recomputed, no interval lost.
        input.signals.remove(&Concept::Preemptions);
        assert!(intervals(&input, 93.0).iter().all(|i| i.recomputed == 0.0));
        assert_eq!(intervals(&input, 93.0).len(), 5);
    }

    #[test]
    fn changes_read_as_flags_and_values() {
        assert_eq!(
            "max-num-seqs=32".parse::<Change>().unwrap(),
            Change::MaxNumSeqs(32)
        );
        assert_eq!(
            "--kv-cache-memory-bytes=8_388_608"
                .parse::<Change>()
                .unwrap(),
            Change::KvCacheMemoryBytes(8_388_608)
        );
        assert_eq!(
            "gpu-memory-utilization=0.95".parse::<Change>().unwrap(),
            Change::GpuMemoryUtilization(0.95)
        );
        for (bad, said) in [
            ("max-num-seqs=0", "above 0"),
            ("max-num-seqs=1e9", "whole number"),
            ("max-num-batched-tokens=99999999999", "too large"),
            ("gpu-memory-utilization=0", "fraction"),
            ("tensor-parallel-size=2", "unknown flag"),
            ("max-num-seqs", "FLAG=VALUE"),
        ] {
            let e = bad.parse::<Change>().unwrap_err().to_string();
            assert!(e.contains(said), "{bad}: {e}");
        }
        let s = llmscope_diagnosis::advice::Setting {
            flag: "max-num-seqs",
            value: 32.0,
        };
        assert_eq!(Change::from_setting(s).unwrap(), Change::MaxNumSeqs(32));
    }

    fn observed() -> Observed {
        Observed {
            run: 7,
            deployment: Deployment {
                max_num_seqs: 16,
                max_num_batched_tokens: 2048,
                kv_tokens: Some(2048),
                block_size: 128,
                replicas: 1,
            },
            budget_known: true,
            pool_bytes: Some(4 << 20),
            gpu_memory_utilization: Some(0.9),
            fb_total_mib: Some(1000.0),
            workload: Workload {
                arrivals: Arrivals::Closed { concurrency: 32 },
                prompt_tokens: 100,
                output_tokens: 64,
                frontend_s: 0.0,
                frontend_before_s: None,
                frontend_tok_s: None,
            },
            measured: Figures {
                output_tok_s: 1000.0,
                req_s: 15.0,
                ttft_ms: Percentiles::default(),
                itl_ms: Percentiles::default(),
                bottleneck: "kv_cache_capacity".to_owned(),
                near: Vec::new(),
            },
            intervals: Vec::new(),
            seconds: 20.0,
        }
    }

    #[test]
    fn the_api_server_s_capacity_is_the_run_it_held_unless_another_streamed_more() {
        // Run 7: 20 of 32 requests outside the engine (1.333 s each at 15 req/s), 1,000 tok/s.
        let mut held = observed();
        held.workload.frontend_s = 20.0 / 15.0;
        let mut light = observed();
        light.run = 8;
        light.workload.arrivals = Arrivals::Closed { concurrency: 4 };
        light.workload.frontend_s = 0.05;
        light.measured.output_tok_s = 600.0;
        // Alone, half the clients outside is a delay as much as a queue: nothing is read.
        assert_eq!(FrontEnd::of(std::slice::from_ref(&held)), None);
        let f = FrontEnd::of(&[held.clone(), light.clone()]).unwrap();
        assert_eq!((f.run, f.output_tok_s), (7, 1000.0));
        assert!((f.outside.0 - 20.0).abs() < 1e-9, "{f:?}");
        assert_eq!(FrontEnd::applied(Some(&f)), Some(1000.0));
        // A run it did not hold that streamed more: the capacity was the host's moment.
        light.measured.output_tok_s = 1400.0;
        let f = FrontEnd::of(&[held.clone(), light.clone()]).unwrap();
        assert_eq!(f.contradicted_by, Some((8, 1400.0)));
        assert_eq!(FrontEnd::applied(Some(&f)), None);
        // Under half the clients outside, and not the verdict: no capacity is read.
        held.workload.frontend_s = 10.0 / 15.0;
        assert_eq!(FrontEnd::of(&[held.clone(), light.clone()]), None);
        // Half outside, but no longer each than with fewer clients: a delay, not a queue.
        held.workload.frontend_s = 20.0 / 15.0;
        light.workload.frontend_s = 1.0;
        light.measured.output_tok_s = 600.0;
        assert_eq!(FrontEnd::of(&[held.clone(), light]), None);
        held.measured.bottleneck = "front_end".to_owned();
        assert!(FrontEnd::of(&[held]).is_some());
    }

    #[test]
    fn a_pool_in_bytes_becomes_tokens_at_the_measured_rate() {
        let o = observed();
        let d = changed(&o, &[Change::KvCacheMemoryBytes(8 << 20)]).unwrap();
        assert_eq!(d.kv_tokens, Some(4096));
        // Utilisation: the pool grows by the added share of the GPU's memory.
        let d = changed(&o, &[Change::GpuMemoryUtilization(0.95)]).unwrap();
        let grown = (4u64 << 20) + (0.05 * 1000.0 * 1024.0 * 1024.0) as u64;
        let want = (grown as f64 * 2048.0 / f64::from(4u32 << 20)) as u64;
        assert!(d.kv_tokens.unwrap().abs_diff(want) <= 1, "{d:?}");
        // Replicas time-sliced on the GPU split its pool.
        let d = changed(&o, &[Change::Replicas(2)]).unwrap();
        assert_eq!((d.replicas, d.kv_tokens), (2, Some(1024)));
        // A pool that cannot hold one request of the workload is refused as vLLM refuses it
        // (it panicked in the replay: issue 50), in the words of the flag, with the least pool.
        for bytes in [1, 16, 8192, 100_000, 300_000] {
            let e = changed(&o, &[Change::KvCacheMemoryBytes(bytes)]).unwrap_err();
            let e = e.to_string();
            assert!(
                e.contains(&format!("--kv-cache-memory-bytes {bytes}"))
                    && e.contains("165 tokens")
                    && e.contains("at least 524,288 bytes"),
                "{e}"
            );
        }
        let e = changed(&o, &[Change::Replicas(16)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("16 replicas' share each"), "{e}");
        assert!(changed(&o, &[Change::Replicas(8)]).is_ok());
        let e = "replicas=512".parse::<Change>().unwrap_err().to_string();
        assert!(e.contains("at most 64 engines"), "{e}");
        // Without the pool in bytes, bytes cannot be predicted: said, not guessed.
        let mut blind = o.clone();
        blind.pool_bytes = None;
        let e = changed(&blind, &[Change::KvCacheMemoryBytes(8 << 20)]).unwrap_err();
        assert!(e.to_string().contains("kv_cache_memory_bytes"), "{e}");
    }

    #[test]
    fn the_band_is_the_worst_error_of_the_fit_and_never_narrower_than_its_floor() {
        let f = |tok: f64, ttft: Option<f64>| Figures {
            output_tok_s: tok,
            req_s: 1.0,
            ttft_ms: Percentiles {
                p50: ttft,
                p95: None,
            },
            itl_ms: Percentiles::default(),
            bottleneck: "batch_limit".to_owned(),
            near: Vec::new(),
        };
        let stage = |err: f64| StageFit {
            run: 1,
            load: Arrivals::Closed { concurrency: 8 },
            workload: observed().workload,
            batch: (Some(8.0), 8.0),
            max_num_seqs: 8,
            measured: f(100.0, Some(10.0)),
            replayed: f(100.0 * (1.0 + err), Some(10.0)),
            error: Errors {
                output_tok_s: Some(err),
                ttft_p50: Some(0.01),
                itl_p50: None,
                bottleneck_agrees: true,
                bottleneck_in_reach: true,
            },
        };
        let fit = Fit {
            front_end: None,
            model: StepModel {
                step_s: 0.002,
                seq_s: 0.0002,
                prompt_token_s: 0.0,
                residual: 0.0,
                intervals: 2,
                batch_range: (1.0, 8.0),
                prompt_token_range: None,
            },
            stages: vec![stage(0.02), stage(-0.12)],
        };
        // Within what the fitted runs served (100 tok/s): the fit's own error each way.
        let b = Band::around(&f(95.0, Some(50.0)), &fit, Edges::default());
        assert!((b.output_share - 0.12).abs() < 1e-9 && (b.ttft_share - MIN_BAND).abs() < 1e-9);
        assert!((b.output_tok_s.0 - 83.6).abs() < 1e-9 && (b.output_tok_s.1 - 106.4).abs() < 1e-9);
        assert_eq!(b.ttft_p50_ms, Some((47.5, 52.5)));
        assert_eq!(b.beyond_measured, None);
        // Beyond it, the floor is what was served: the API server there is untested.
        let b = Band::around(&f(1000.0, Some(50.0)), &fit, Edges::default());
        assert_eq!(b.output_tok_s, (100.0, 1120.0));
        assert_eq!(b.beyond_measured, Some(100.0));
        // Two runs of the base's load measured 50 % apart: the host's repeatability is the
        // narrowest band; a run of another load does not count.
        let mut fit = fit;
        fit.stages[1].measured = f(150.0, Some(12.0));
        let b = Band::around(&f(95.0, Some(50.0)), &fit, Edges::default());
        assert!((b.output_share - 0.5).abs() < 1e-9, "{b:?}");
        assert!((b.ttft_share - 0.2).abs() < 1e-9, "{b:?}");
        assert_eq!(b.repeat.map(|r| r.runs), Some(2));
        fit.stages[1].load = Arrivals::Closed { concurrency: 4 };
        let b = Band::around(&f(95.0, Some(50.0)), &fit, Edges::default());
        assert_eq!((b.repeat, b.output_share), (None, 0.12));
        // 37 ms of the base's TTFT were the API server's, kept as they were: the TTFT band
        // reaches down by them (its top stays the fit's).
        fit.stages[0].workload.frontend_before_s = Some(0.037);
        let b = Band::around(&f(95.0, Some(50.0)), &fit, Edges::default());
        assert_eq!(b.front_kept_ms, Some(37.0));
        let (lo, hi) = b.ttft_p50_ms.unwrap();
        assert!(
            (lo - 13.0).abs() < 1e-9 && (hi - 52.5).abs() < 1e-9,
            "{b:?}"
        );
        // A front end that held nothing before the engine leaves the band as the fit's.
        fit.stages[0].workload.frontend_before_s = Some(0.0);
        let b = Band::around(&f(95.0, Some(50.0)), &fit, Edges::default());
        assert_eq!((b.front_kept_ms, b.ttft_p50_ms), (None, Some((47.5, 52.5))));
        // What a prompt token may cost moves the prediction: the band holds it at both edges
        // (a cap-16 prediction of a real vLLM 0.32's fit: TTFT 28 ms at none, 57 at the most).
        let with = |prompt_cost, waves| {
            Band::around(&f(95.0, Some(50.0)), &fit, Edges { prompt_cost, waves })
        };
        let edges = PromptEdges {
            ms_per_token: (0.0, 0.092),
            output_tok_s: (95.0, 90.0),
            ttft_p50_ms: (Some(50.0), Some(104.0)),
        };
        let b = with(Some(edges), None);
        assert_eq!(b.ttft_p50_ms, Some((47.5, 104.0)));
        assert!((b.output_tok_s.0 - 83.6).abs() < 1e-9, "{b:?}");
        let edges = PromptEdges {
            output_tok_s: (95.0, 70.0),
            ..edges
        };
        assert_eq!(with(Some(edges), None).output_tok_s.0, 70.0);
        // Said with why: a costlier prefill takes time from the sequences of a base that
        // preempted, which is not said of one that did not.
        let mut said = Vec::new();
        prompt_cost_caveat(&fit, &edges, false, &mut said);
        prompt_cost_caveat(&fit, &edges, true, &mut said);
        assert!(said.len() == 2 && !said[0].contains("preempt"), "{said:?}");
        assert!(said[1].contains("the preempting base's time"), "{said:?}");
        // The clients in waves: the band holds that replay's figures too.
        let waves = Waves {
            output_tok_s: 110.0,
            ttft_p50_ms: Some(97.0),
            bottleneck: "batch_limit",
        };
        let b = with(None, Some(waves));
        assert_eq!(b.output_tok_s.1, 110.0);
        assert_eq!(b.ttft_p50_ms.map(|t| t.1), Some(97.0));
        assert!((b.output_tok_s.0 - 83.6).abs() < 1e-9, "{b:?}");
    }

    /// A real vLLM 0.32 fitted on a cap-8 server's capacity search (2.17 ms a step, 0.20 ms a
    /// sequence, 0.05 ms a prompt token) and run at cap 16 with 16 clients of 93-token prompts
    /// and 32-token answers: TTFT p50 49–61 ms, where the staggered replay gives 42. Started
    /// together, the clients' sixteen prompts are computed in one step (1,488 tokens, 80 ms):
    /// each waits for its whole wave's prefill, so the waves' TTFT is the higher, and the
    /// caveat says so with both figures.
    #[test]
    fn a_closed_loop_in_waves_waits_for_its_wave_s_prefill() {
        let model = StepModel {
            step_s: 0.00217,
            seq_s: 0.000203,
            prompt_token_s: 0.0000515,
            residual: 0.0,
            intervals: 100,
            batch_range: (1.0, 8.0),
            prompt_token_range: None,
        };
        let o = observed();
        let d = Deployment {
            max_num_seqs: 16,
            kv_tokens: Some(524_288),
            ..o.deployment
        };
        let w = Workload {
            arrivals: Arrivals::Closed { concurrency: 16 },
            prompt_tokens: 93,
            output_tokens: 32,
            ..o.workload
        };
        let (r, staggered, waves) = replayed_both(&model, &d, &w, 20.0);
        let waves = waves.expect("a closed loop is replayed in waves too");
        let (a, b) = (staggered.ttft_ms.p50.unwrap(), waves.ttft_p50_ms.unwrap());
        assert!(b > 1.5 * a && b > 60.0, "staggered {a} ms, waves {b} ms");
        let mut out = Vec::new();
        waves_caveat(&staggered, &waves, &mut out);
        assert!(
            out.len() == 1 && out[0].contains(&format!("{b:.0} ms (staggered: {a:.0} ms)")),
            "{out:?}"
        );
        // Where the shapes agree, nothing is said.
        let mut out = Vec::new();
        waves_caveat(&staggered, &Waves::of(&r), &mut out);
        assert!(out.is_empty(), "{out:?}");
        // Where only the limit differs, the limit is said.
        let mut out = Vec::new();
        let at_pool = Waves {
            bottleneck: "kv_cache_capacity",
            ..Waves::of(&r)
        };
        let mut named = staggered.clone();
        named.near.push("kv_cache_capacity".to_owned());
        waves_caveat(&named, &at_pool, &mut out);
        assert!(
            out.len() == 1
                && out[0].contains(&format!(
                    "its limit is kv_cache_capacity (staggered: {}), named as near",
                    staggered.bottleneck
                )),
            "{out:?}"
        );
        // An open loop has no waves.
        let open = Workload {
            arrivals: Arrivals::Open {
                rate: 20.0,
                cap: 64,
            },
            ..w
        };
        assert!(replayed_both(&model, &d, &open, 20.0).2.is_none());
    }
}
