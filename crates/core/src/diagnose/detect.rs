//! Detectors: each reads the steady-window statistics and says what it sees, with evidence.
//!
//! Contract (checked for every detector by the shared harness in the tests below): a detector
//! never panics on empty input, NaN values, gaps or counter resets; it fires only on signals that
//! are present (an absent signal is a data-quality finding, never a 0); every finding cites its
//! evidence — which signal, which window, which statistic, against which threshold — and uses the
//! shared [`Severity`] scale. A finding may name the [`Bottleneck`] it stands for; the verdict picks
//! among those by the decision table (`verdict`).

use super::signal::{Concept, Input};
use super::window::{Phases, WindowStats};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// GPU busy fraction at or above which the GPU counts as "high" in the decision table.
pub const BUSY_HIGH: f64 = 0.75;
/// Below this the GPU is clearly idle between steps.
pub const BUSY_LOW: f64 = 0.6;
/// KV usage alert level; above [`KV_RISK`] preemption / OOM risk.
pub const KV_HIGH: f64 = 0.85;
pub const KV_RISK: f64 = 0.9;
/// Share of steady samples with waiting > 0 that makes a queue "sustained".
pub const WAITING_SHARE: f64 = 0.5;
/// DRAM activity that marks memory-bandwidth-bound steps, with tensor activity below TENSOR_LOW.
pub const DRAM_HIGH: f64 = 0.6;
pub const TENSOR_LOW: f64 = 0.2;
/// Share of steady samples at or near the ceiling that makes `running` "pinned" there.
pub const PINNED_SHARE: f64 = 0.7;
/// "Near the ceiling": at least this fraction of it. A real engine admits queued requests in
/// waves (a batch of equal answers ends in one step, the next is admitted over the next steps),
/// so a scrape between two steps sees part of a wave: a real vLLM 0.32 at `--max-num-seqs 16`
/// with 32 clients reads 16 in only 50–80 % of 1 s scrapes, 14–16 in 85–95 %.
pub const NEAR_CEILING: f64 = 0.85;
/// Tokens per step at or above this share of `--max-num-batched-tokens`: the step budget is spent.
pub const BUDGET_FULL: f64 = 0.9;

/// How bad a finding is; the one scale of every detector, the linter and `--fail-on`.
pub use crate::severity::Severity;

/// The primary bottleneck of a run (the contract's `verdict.bottleneck`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// A real share of the requests failed (issue 12): the verdict before any other.
    FailingRequests,
    GpuCompute,
    KvCacheCapacity,
    BatchLimit,
    Client,
    LoadNotReached,
    MemoryBandwidth,
    Host,
    TokenBudget,
    /// Requests queued in front of the scheduler — in the API server process — while the
    /// scheduler had room: the front end, not the engine, limits the deployment.
    FrontEnd,
    None,
}

impl Bottleneck {
    pub fn as_str(self) -> &'static str {
        match self {
            Bottleneck::FailingRequests => "failing_requests",
            Bottleneck::GpuCompute => "gpu_compute",
            Bottleneck::KvCacheCapacity => "kv_cache_capacity",
            Bottleneck::BatchLimit => "batch_limit",
            Bottleneck::Client => "client",
            Bottleneck::LoadNotReached => "load_not_reached",
            Bottleneck::MemoryBandwidth => "memory_bandwidth",
            Bottleneck::Host => "host",
            Bottleneck::TokenBudget => "token_budget",
            Bottleneck::FrontEnd => "front_end",
            Bottleneck::None => "none",
        }
    }
}

/// One measured fact behind a finding.
pub use crate::finding::Evidence;

/// What a detector saw: the one finding, its rule a detector's static id.
pub type Finding = crate::finding::Finding<&'static str>;

/// What detectors read: the input, its phases and steady-window statistics.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    pub input: &'a Input,
    pub phases: Phases,
    pub stats: BTreeMap<Concept, WindowStats>,
    /// Gauge readings the engine's counters contradicted were set aside ([`super::stale`]): the
    /// gauges that are left are a biased sample, so means come from the counters.
    pub gauges_stale: bool,
}

/// A level read from the steady window, with its evidence.
#[derive(Debug, Clone, Copy)]
pub struct Level {
    pub concept: Concept,
    pub value: f64,
    pub statistic: &'static str,
}

impl Context<'_> {
    fn stat(&self, c: Concept) -> Option<&WindowStats> {
        self.stats.get(&c).filter(|s| s.samples > 0)
    }

    /// GPU busy fraction: GR_ENGINE_ACTIVE when exported (it works on MIG too), else GPU_UTIL.
    pub fn busy(&self) -> Option<Level> {
        [Concept::GrEngineActive, Concept::GpuUtil]
            .into_iter()
            .find_map(|c| {
                let s = self.stat(c)?;
                Some(Level {
                    concept: c,
                    value: s.mean_nonzero / c.full_scale()?,
                    statistic: "mean_nonzero",
                })
            })
    }

    pub fn kv(&self) -> Option<(f64, f64)> {
        self.stat(Concept::KvUsage).map(|s| (s.mean_nonzero, s.max))
    }

    /// Waiting requests: mean and the share of samples with a queue.
    pub fn waiting(&self) -> Option<(f64, f64)> {
        self.stat(Concept::Waiting)
            .map(|s| (s.mean, s.nonzero_share))
    }

    /// Mean requests waiting in the scheduler over the steady window by Little's law: the
    /// engine's summed queue time per second. Unlike the gauge it does not depend on where the
    /// scrapes fell, and a stale or reset gauge does not touch it.
    pub fn little_waiting(&self) -> Option<f64> {
        self.settled_rate(Concept::QueuedSeconds)
    }

    /// Mean requests running over the steady window by Little's law (summed running time per second).
    pub fn little_running(&self) -> Option<f64> {
        self.settled_rate(Concept::RunningSeconds)
    }

    /// A per-request time counter's growth per second between its first and last reading in the
    /// steady window less its first quarter (a counter reset counts from zero). Little's law holds
    /// for a system in a steady state; a closed-loop load starts every client at once, and the
    /// first wave's queueing is a transient counted when those requests finish (a real vLLM 0.32 at
    /// --max-num-seqs 4 with 16 clients: 12 requests queued 13.8 s between them in the first
    /// second, none after). Only growth between two readings inside the window counts, so an
    /// interval that straddles its start cannot carry the first wave in.
    fn settled_rate(&self, c: Concept) -> Option<f64> {
        let (a, b) = self.phases.steady?;
        let from = a + (b - a) / 4.0;
        let points: Vec<(f64, f64)> = self.input.signal(c)?.window(from, b).collect();
        let (first, last) = (points.first()?, points.last()?);
        let span = last.0 - first.0;
        let grown: f64 = points
            .windows(2)
            .map(|w| {
                if w[1].1 >= w[0].1 {
                    w[1].1 - w[0].1
                } else {
                    w[1].1
                }
            })
            .sum();
        (span > 0.0).then_some(grown / span)
    }

    /// Mean waiting: the gauge's mean over the steady window while its readings stand (many
    /// samples of the state, exact however long requests last); by Little's law where readings
    /// were set aside as stale, or no gauge is left. The [`Level`] says which it was.
    pub fn mean_waiting(&self) -> Option<Level> {
        let gauge = self.waiting().map(|w| Level {
            concept: Concept::Waiting,
            value: w.0,
            statistic: "mean",
        });
        let little = self.little_waiting().map(|value| Level {
            concept: Concept::QueuedSeconds,
            value,
            statistic: "mean_waiting_by_littles_law",
        });
        self.prefer(gauge, little)
    }

    /// Mean running, read like [`Context::mean_waiting`].
    pub fn mean_running(&self) -> Option<Level> {
        let gauge = self.stat(Concept::Running).map(|s| Level {
            concept: Concept::Running,
            value: s.mean,
            statistic: "mean",
        });
        let little = self.little_running().map(|value| Level {
            concept: Concept::RunningSeconds,
            value,
            statistic: "mean_running_by_littles_law",
        });
        self.prefer(gauge, little)
    }

    fn prefer(&self, gauge: Option<Level>, counter: Option<Level>) -> Option<Level> {
        if self.gauges_stale {
            counter.or(gauge)
        } else {
            gauge.or(counter)
        }
    }

    /// A queue in the engine's scheduler held requests through the window. Where the engine
    /// counts queue time, that counter decides (Little's law: every request's whole wait, however
    /// the scrapes fell); else the waiting gauge must show a queue in most scrapes. A gauge is a
    /// snapshot: on a real vLLM 0.32 the few readings left after stale ones are set aside can all
    /// fall in the first wave of a closed-loop load.
    pub fn queue_sustained(&self) -> bool {
        match self.little_waiting() {
            Some(w) => w >= 0.5,
            None => self
                .waiting()
                .is_some_and(|(mean, share)| share >= WAITING_SHARE && mean >= 0.5),
        }
    }

    /// The load kept more requests than the batch cap in the system — in the scheduler's queue,
    /// or, where the engine does not count queue time, possibly in front of it. Where it does
    /// count queue time, that counter alone says whether the scheduler held a queue.
    pub fn queued(&self) -> bool {
        self.queue_sustained()
            || (self.little_waiting().is_none() && self.demand_over_cap().is_some())
    }

    /// Requests the client kept in flight beyond the batch cap, when it kept clearly more:
    /// demand above the cap, whether the excess waited in the scheduler's queue (the waiting
    /// gauge) or in front of it (a starved API server holds requests the gauge never sees).
    pub fn demand_over_cap(&self) -> Option<f64> {
        let achieved = self.input.load.achieved_concurrency?;
        let cap = self.batch_cap()?;
        let over = achieved - cap;
        (over >= (0.1 * cap).max(1.0)).then_some(over)
    }

    /// Requests in flight at the client that were neither running nor waiting in the engine, on
    /// average over the steady window.
    pub fn outside_engine(&self) -> Option<f64> {
        let achieved = self.input.load.achieved_concurrency?;
        let running = self.mean_running()?.value;
        let waiting = self.mean_waiting().map_or(0.0, |l| l.value);
        Some(achieved - running - waiting)
    }

    pub fn dram(&self) -> Option<Level> {
        [Concept::DramActive, Concept::MemCopyUtil]
            .into_iter()
            .find_map(|c| {
                let s = self.stat(c)?;
                Some(Level {
                    concept: c,
                    value: s.mean_nonzero / c.full_scale()?,
                    statistic: "mean_nonzero",
                })
            })
    }

    pub fn tensor(&self) -> Option<f64> {
        self.stat(Concept::TensorActive).map(|s| s.mean_nonzero)
    }

    /// Engine replicas behind the summed running signal (at least one).
    pub fn engines(&self) -> f64 {
        f64::from(self.input.engines.max(1))
    }

    /// The batch cap of everything behind the running signal: `--max-num-seqs` × replicas.
    pub fn batch_cap(&self) -> Option<f64> {
        self.input
            .engine
            .max_num_seqs
            .map(|m| f64::from(m) * self.engines())
    }

    /// `--max-num-seqs 16`, or `--max-num-seqs 16 × 10 replicas`.
    pub fn cap_text(&self, m: u32) -> String {
        match self.input.engines {
            0 | 1 => format!("--max-num-seqs {m}"),
            n => format!("--max-num-seqs {m} × {n} replicas"),
        }
    }

    /// The ceiling of `running` in the steady window (its highest value) and the share of
    /// samples at or near it (within [`NEAR_CEILING`]). Near, not at: a real engine admits
    /// queued requests in waves, and a scrape between two engine steps sees part of a wave.
    pub fn running_plateau(&self) -> Option<(f64, f64)> {
        let (a, b) = self.phases.steady?;
        let values: Vec<f64> = self
            .input
            .signal(Concept::Running)?
            .window(a, b)
            .map(|p| p.1.round())
            .collect();
        let ceiling = values.iter().copied().reduce(f64::max)?;
        let near = values
            .iter()
            .filter(|v| **v >= (NEAR_CEILING * ceiling).floor())
            .count();
        Some((ceiling, near as f64 / values.len() as f64))
    }

    /// Sequences decoded per engine step, per engine, over the steady window: generated tokens
    /// per step from the engine's own counters (each running sequence emits one token a step).
    /// Unlike a gauge read once per scrape, counters see every step, so this is the mean batch
    /// the engine really ran, however the scrapes fell between its steps.
    pub fn decode_batch(&self) -> Option<f64> {
        let tokens = self.stat(Concept::GeneratedTokens)?.mean;
        let steps = self.stat(Concept::StepCount)?.mean;
        (steps > 0.0 && tokens.is_finite()).then(|| tokens / steps)
    }

    /// Mean tokens per engine step over the steady window.
    pub fn tokens_per_step(&self) -> Option<f64> {
        let sum = self.stat(Concept::StepTokensSum)?.mean;
        let count = self.stat(Concept::StepCount)?.mean;
        (count > 0.0).then(|| sum / count)
    }

    pub fn evidence(
        &self,
        c: Concept,
        statistic: &'static str,
        value: f64,
        test: &'static str,
        threshold: Option<f64>,
    ) -> Evidence {
        Evidence {
            signal: c.name().into(),
            source: self
                .input
                .signals
                .get(&c)
                .map(|s| s.source.clone())
                .unwrap_or_default(),
            window: self.phases.steady,
            statistic: statistic.into(),
            value,
            test: test.into(),
            threshold,
        }
    }

    fn level_evidence(&self, l: Level, test: &'static str, threshold: f64) -> Evidence {
        self.evidence(l.concept, l.statistic, l.value, test, Some(threshold))
    }
}

/// One detector; see the module docs for its contract.
pub trait Detector {
    fn id(&self) -> &'static str;
    fn detect(&self, cx: &Context) -> Option<Finding>;
}

fn finding(
    id: &'static str,
    severity: Severity,
    bottleneck: Option<Bottleneck>,
    confidence: f64,
    message: String,
    evidence: Vec<Evidence>,
) -> Finding {
    Finding {
        bottleneck,
        confidence: Some(confidence.clamp(0.0, 0.99)),
        evidence,
        ..Finding::new(id, severity, message)
    }
}

/// High GPU busy time with a sustained queue: the GPU itself is the limit.
pub struct GpuCompute;
impl Detector for GpuCompute {
    fn id(&self) -> &'static str {
        "gpu_compute"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let busy = cx.busy()?;
        if busy.value < BUSY_HIGH || !cx.queue_sustained() || memory_bound(cx) {
            return None;
        }
        // "Busy" by GPU_UTIL is a duty cycle: with tensor activity exported, compute-bound must show there.
        if cx.tensor().is_some_and(|t| t < TENSOR_LOW) {
            return None;
        }
        let (w, share) = cx.waiting()?;
        let mut ev = vec![
            cx.level_evidence(busy, ">=", BUSY_HIGH),
            cx.evidence(Concept::Waiting, "mean", w, ">=", Some(0.5)),
        ];
        if let Some(t) = cx.tensor() {
            ev.push(cx.evidence(Concept::TensorActive, "mean_nonzero", t, "", None));
        }
        let msg = format!(
            "the GPU is busy {:.0}% of the time and requests wait in {:.0}% of samples: the GPU is the limit",
            busy.value * 100.0,
            share * 100.0
        );
        Some(finding(
            self.id(),
            Severity::Error,
            Some(Bottleneck::GpuCompute),
            0.6 + (busy.value - BUSY_HIGH),
            msg,
            ev,
        ))
    }
}

fn memory_bound(cx: &Context) -> bool {
    let dram_high = cx.dram().is_some_and(|d| d.value >= DRAM_HIGH);
    dram_high && cx.tensor().is_none_or(|t| t < TENSOR_LOW)
}

/// Busy GPU moving weights and KV, not computing: decode steps bound by memory bandwidth.
pub struct MemoryBandwidth;
impl Detector for MemoryBandwidth {
    fn id(&self) -> &'static str {
        "memory_bandwidth"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let dram = cx.dram()?;
        let busy = cx.busy()?;
        if !cx.queue_sustained() || !memory_bound(cx) || busy.value < BUSY_HIGH {
            return None;
        }
        let mut ev = vec![
            cx.level_evidence(dram, ">=", DRAM_HIGH),
            cx.level_evidence(busy, ">=", BUSY_HIGH),
        ];
        if let Some(t) = cx.tensor() {
            ev.push(cx.evidence(
                Concept::TensorActive,
                "mean_nonzero",
                t,
                "<",
                Some(TENSOR_LOW),
            ));
        }
        let msg = format!(
            "memory traffic is {:.0}% of peak while the tensor pipes idle: each step streams the weights for a small batch (memory-bandwidth bound)",
            dram.value * 100.0
        );
        Some(finding(
            self.id(),
            Severity::Error,
            Some(Bottleneck::MemoryBandwidth),
            0.75,
            msg,
            ev,
        ))
    }
}

/// KV cache near full: admissions stall and requests get preempted.
pub struct KvCapacity;
impl Detector for KvCapacity {
    fn id(&self) -> &'static str {
        "kv_cache_capacity"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let (mean, max) = cx.kv()?;
        if mean < KV_HIGH && max < KV_RISK {
            return None;
        }
        let mut ev = vec![
            cx.evidence(Concept::KvUsage, "mean_nonzero", mean, ">=", Some(KV_HIGH)),
            cx.evidence(Concept::KvUsage, "max", max, ">=", Some(KV_RISK)),
        ];
        let preempting = cx
            .stat(Concept::Preemptions)
            .map(|s| s.mean)
            .filter(|r| *r > 0.0);
        if let Some(r) = preempting {
            ev.push(cx.evidence(Concept::Preemptions, "rate_per_s", r, ">", Some(0.0)));
        }
        // KV limits admission when requests are preempted or fewer run than the batch cap allows;
        // then it is the bottleneck however busy the GPU looks (GPU_UTIL is a duty cycle).
        let below_cap = match (cx.running_plateau(), cx.batch_cap()) {
            (Some((plateau, _)), Some(cap)) => plateau < cap,
            _ => true,
        };
        let primary = cx.queued() && (preempting.is_some() || below_cap);
        let msg = format!(
            "KV cache at {:.0}% (max {:.0}%){}: requests wait for KV blocks",
            mean * 100.0,
            max * 100.0,
            if preempting.is_some() {
                " with preemptions"
            } else {
                ""
            }
        );
        let confidence = 0.7 + if preempting.is_some() { 0.2 } else { 0.0 };
        Some(finding(
            self.id(),
            if max >= KV_RISK {
                Severity::Critical
            } else {
                Severity::Warning
            },
            primary.then_some(Bottleneck::KvCacheCapacity),
            confidence,
            msg,
            ev,
        ))
    }
}

/// Engine steps full of tokens: `--max-num-batched-tokens` caps prefill (chunked prefill).
pub struct TokenBudget;
impl Detector for TokenBudget {
    fn id(&self) -> &'static str {
        "token_budget"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let budget = cx.input.engine.max_num_batched_tokens? as f64;
        let per_step = cx.tokens_per_step()?;
        if per_step < BUDGET_FULL * budget || !cx.queue_sustained() {
            return None;
        }
        // Full steps that are compute-bound are GPU compute: a bigger budget would only lengthen them.
        if cx.tensor().is_some_and(|t| t >= 0.3) {
            return None;
        }
        let ev = vec![cx.evidence(
            Concept::StepTokensSum,
            "tokens_per_step",
            per_step,
            ">=",
            Some(BUDGET_FULL * budget),
        )];
        let msg = format!(
            "engine steps carry {per_step:.0} tokens of a {budget:.0}-token budget: prefill is chunked and queued requests wait for budget"
        );
        Some(finding(
            self.id(),
            Severity::Error,
            Some(Bottleneck::TokenBudget),
            0.8,
            msg,
            ev,
        ))
    }
}

/// Steps carry (nearly) the whole `--max-num-batched-tokens`: the budget, not the batch cap,
/// decides admission.
fn budget_spent(cx: &Context) -> bool {
    let budget = cx.input.engine.max_num_batched_tokens.map(f64::from);
    budget
        .zip(cx.tokens_per_step())
        .is_some_and(|(b, t)| t >= BUDGET_FULL * b)
}

/// `running` pinned at `--max-num-seqs` with a queue, GPU and KV with headroom.
pub struct BatchLimit;
impl Detector for BatchLimit {
    fn id(&self) -> &'static str {
        "batch_limit"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let (plateau, share) = cx.running_plateau()?;
        let (waiting, _) = cx.waiting()?;
        let cap = cx.batch_cap();
        // `waiting` must be exported (an absent queue gauge is a data-quality finding).
        // Pinned: the gauge sits at its ceiling in most scrapes, or — where scrapes fall between
        // the waves of a lockstep batch — the engine's counters show full batches step after step.
        let per_engine_cap = cx.input.engine.max_num_seqs.map(f64::from);
        let batch = cx.decode_batch();
        let full_steps = batch
            .zip(per_engine_cap)
            .is_some_and(|(b, c)| b >= NEAR_CEILING * c);
        // Or by elimination: vLLM's scheduler admits a waiting request at its next step unless the
        // batch is full, the KV pool cannot hold it or the step's token budget is spent. A queue
        // the scheduler itself held through the window, with running seen at the cap and KV and
        // the budget ruled out below (and by the detectors before this one), is the cap binding —
        // however few scrapes caught the batch full (a real vLLM 0.32 at --max-num-seqs 4 showed
        // it in 64 % of them on a busy host, and its gauges read 0 in many more).
        let by_elimination = cx.queue_sustained() && cap == Some(plateau);
        if !cx.queued()
            || (share < PINNED_SHARE && !full_steps && !by_elimination)
            || plateau < 1.0
            || cap.is_some_and(|c| c != plateau)
        {
            return None;
        }
        if cx.busy().is_some_and(|b| b.value >= BUSY_HIGH)
            || cx.kv().is_some_and(|(m, _)| m >= KV_HIGH)
            || budget_spent(cx)
        {
            return None;
        }
        // The queue's mean by Little's law where the engine counts queue time; the gauge's otherwise.
        let queue = cx.mean_waiting().map_or(waiting, |l| l.value);
        let mut ev = vec![
            cx.evidence(Concept::Running, "plateau", plateau, "==", cap),
            cx.evidence(
                Concept::Running,
                "share_at_plateau",
                share,
                ">=",
                Some(PINNED_SHARE),
            ),
            cx.evidence(Concept::Waiting, "mean", waiting, ">=", Some(0.5)),
        ];
        if let Some(w) = cx.little_waiting() {
            ev.push(cx.evidence(
                Concept::QueuedSeconds,
                "mean_waiting_by_littles_law",
                w,
                ">=",
                Some(0.5),
            ));
        }
        let over = cx.demand_over_cap();
        if let Some(o) = over {
            ev.push(cx.evidence(
                Concept::Running,
                "client_in_flight_over_cap",
                o,
                ">=",
                cap.map(|c| (0.1 * c).max(1.0)),
            ));
        }
        let mut confidence =
            0.55 + 0.2 * ((share - PINNED_SHARE) / (1.0 - PINNED_SHARE)).clamp(-0.5, 1.0);
        if cap.is_some() {
            confidence += 0.1;
        }
        if let (Some(b), Some(c)) = (batch, per_engine_cap) {
            ev.push(cx.evidence(
                Concept::GeneratedTokens,
                "decoded_per_step",
                b,
                ">=",
                Some(NEAR_CEILING * c),
            ));
            if full_steps {
                confidence += 0.05;
            }
        }
        if let Some(c) = cx.input.load.concurrency {
            let expected = c as f64 - plateau;
            ev.push(cx.evidence(
                Concept::Waiting,
                "expected_concurrency_minus_plateau",
                expected,
                "",
                None,
            ));
            if (queue - expected).abs() <= 0.2 * expected.max(1.0) {
                confidence += 0.1;
            }
        }
        // Running pinned at the cap with a queue is the batch limit by definition; GPU and KV
        // only say how far raising it can go. Each missing layer lowers confidence and is named.
        let mut missing = Vec::new();
        match cx.busy() {
            Some(b) => {
                ev.push(cx.level_evidence(b, "<", BUSY_HIGH));
                confidence += 0.03;
            }
            None => {
                missing.push("GPU");
                confidence -= 0.1;
            }
        }
        match cx.kv() {
            Some((kv, _)) => {
                ev.push(cx.evidence(Concept::KvUsage, "mean_nonzero", kv, "<", Some(KV_HIGH)));
                confidence += 0.02;
            }
            None => {
                missing.push("KV-cache");
                confidence -= 0.1;
            }
        }
        let headroom = match missing.as_slice() {
            [] => "with GPU and KV headroom".to_owned(),
            m => format!(
                "{}; no {} metrics, so that headroom is unverified",
                if m.contains(&"KV-cache") {
                    "KV headroom unknown"
                } else {
                    "with KV headroom"
                },
                m.join(" or ")
            ),
        };
        let msg = format!(
            "running is {} {plateau:.0} ({}at or near it in {:.0}% of samples) while {queue:.1} requests wait on average{}, {headroom}: the batch limit caps throughput",
            if share < PINNED_SHARE && !full_steps {
                "held by the scheduler's queue at"
            } else {
                "pinned at"
            },
            match (cap, cx.input.engines) {
                (None, _) => String::new(),
                (Some(_), 0 | 1) => "= --max-num-seqs; ".to_owned(),
                (Some(_), n) => format!("= --max-num-seqs × {n} replicas; "),
            },
            share * 100.0,
            match (over, cx.input.load.achieved_concurrency) {
                (Some(_), Some(a)) if !cx.queue_sustained() =>
                    format!(" in the engine and the client keeps {a:.1} in flight"),
                _ => String::new(),
            }
        );
        Some(finding(
            self.id(),
            Severity::Error,
            Some(Bottleneck::BatchLimit),
            confidence,
            msg,
            ev,
        ))
    }
}

/// GPU idle between steps while requests run: host (CPU) time dominates each step.
pub struct HostBound;
impl Detector for HostBound {
    fn id(&self) -> &'static str {
        "host"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let busy = cx.busy()?;
        let running = cx.stat(Concept::Running)?.mean;
        if busy.value >= BUSY_LOW
            || running < 1.0
            || cx.dram().is_some_and(|d| d.value >= DRAM_HIGH / 2.0)
        {
            return None;
        }
        let ev = vec![
            cx.level_evidence(busy, "<", BUSY_LOW),
            cx.evidence(Concept::Running, "mean", running, ">=", Some(1.0)),
        ];
        let msg = format!(
            "the GPU is idle {:.0}% of the time while {running:.0} requests run: steps are dominated by host (CPU) work — scheduling, input preparation, sampling, streaming",
            (1.0 - busy.value) * 100.0
        );
        Some(finding(self.id(), Severity::Warning, None, 0.6, msg, ev))
    }
}

/// The load generator itself was the limit.
pub struct ClientLimited;
impl Detector for ClientLimited {
    fn id(&self) -> &'static str {
        "client"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let load = &cx.input.load;
        if !load.client_limited {
            return None;
        }
        let note = load
            .client_note
            .as_deref()
            .map_or(String::new(), |n| format!(": {n}"));
        // Server-side evidence outranks the client's self-check: a queue on the server proves the
        // load arrived, and a load shaped so that no queue could form (concurrency within the
        // cap) is "load not reached" whatever the client did.
        let secondary = if cx.queue_sustained() || cx.demand_over_cap().is_some() {
            Some("; the server still queued requests, so its limit was reached regardless")
        } else if concurrency_within_cap(cx) {
            Some("")
        } else {
            None
        };
        if let Some(why) = secondary {
            let msg = format!("the load generator fell short of its load{note}{why}");
            return Some(finding(
                self.id(),
                Severity::Warning,
                None,
                0.8,
                msg,
                Vec::new(),
            ));
        }
        let msg = format!("the load generator was the limit{note}");
        Some(finding(
            self.id(),
            Severity::Error,
            Some(Bottleneck::Client),
            0.8,
            msg,
            Vec::new(),
        ))
    }
}

/// Requests the client had in flight that the engine's gauges never saw: they waited in front of
/// the scheduler — in the API server process (HTTP, tokenisation, detokenisation, streaming), or
/// on the way to it. On a host short of CPU the API server is the hidden queue.
pub struct FrontEndQueue;
impl Detector for FrontEndQueue {
    fn id(&self) -> &'static str {
        "front_end_queue"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let achieved = cx.input.load.achieved_concurrency?;
        let outside = cx.outside_engine()?;
        let threshold = (0.15 * achieved).max(2.0);
        if outside < threshold {
            return None;
        }
        let running = cx.mean_running()?;
        let waiting = cx.mean_waiting().unwrap_or(Level {
            concept: Concept::Waiting,
            value: 0.0,
            statistic: "mean",
        });
        let ev = vec![
            cx.evidence(
                running.concept,
                running.statistic,
                running.value,
                "",
                cx.batch_cap(),
            ),
            cx.level_evidence(waiting, "<", 0.5),
            cx.evidence(
                Concept::Running,
                "client_in_flight_minus_running_and_waiting",
                outside,
                ">=",
                Some(threshold),
            ),
        ];
        // The scheduler held no queue although the load offered more than its batch cap: the
        // requests it never saw were held by the API server, which is then the limit.
        let primary =
            !cx.queue_sustained() && cx.batch_cap().is_some() && !concurrency_within_cap(cx);
        let mut msg = format!(
            "{outside:.1} of the {achieved:.1} requests in flight at the client were neither running nor waiting in the engine on average: they queued in front of the scheduler (the API server process or the way to it) — a host short of CPU, or a saturated API server"
        );
        if primary {
            msg += &format!(
                "; the scheduler itself held no queue (mean waiting {:.1}) and ran {:.1} on average: the front end, not the engine, limits this deployment",
                waiting.value, running.value
            );
        }
        let severity = if primary {
            Severity::Error
        } else {
            Severity::Warning
        };
        // Whether the scheduler held a queue was read from its own queue-time counter, or only
        // from a gauge.
        let confidence = if cx.little_waiting().is_some() {
            0.75
        } else {
            0.6
        };
        Some(finding(
            self.id(),
            severity,
            primary.then_some(Bottleneck::FrontEnd),
            confidence,
            msg,
            ev,
        ))
    }
}

/// The load's own shape ruled a queue out: closed-loop concurrency at or below the batch cap.
fn concurrency_within_cap(cx: &Context) -> bool {
    match (cx.input.load.concurrency, cx.batch_cap()) {
        (Some(c), Some(cap)) => f64::from(c) <= cap,
        _ => false,
    }
}

/// No queue ever formed: the server had capacity to spare.
pub struct LoadNotReached;
impl Detector for LoadNotReached {
    fn id(&self) -> &'static str {
        "load_not_reached"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let (waiting, share) = cx.waiting()?;
        let running = cx.stat(Concept::Running)?;
        let by_design = concurrency_within_cap(cx);
        if cx.queue_sustained()
            || (cx.input.load.client_limited && !by_design)
            || (!by_design && cx.demand_over_cap().is_some())
        {
            return None;
        }
        let mut ev = vec![
            cx.evidence(
                Concept::Waiting,
                "share_nonzero",
                share,
                "<",
                Some(WAITING_SHARE),
            ),
            cx.evidence(Concept::Running, "max", running.max, "", cx.batch_cap()),
        ];
        let concurrency = cx.input.load.concurrency;
        let cap = cx.input.engine.max_num_seqs;
        let why = match (concurrency, cap, cx.batch_cap()) {
            (Some(c), Some(m), Some(total)) if f64::from(c) <= total => format!(
                "concurrency {c} never exceeds {}, so no queue can form",
                cx.cap_text(m)
            ),
            _ => format!(
                "running peaked at {:.0} and waiting averaged {waiting:.2}",
                running.max
            ),
        };
        if let Some(b) = cx.busy() {
            ev.push(cx.level_evidence(b, "", BUSY_HIGH));
        }
        let msg = format!("the load did not saturate the server: {why}");
        Some(finding(
            self.id(),
            Severity::Warning,
            Some(Bottleneck::LoadNotReached),
            if by_design { 0.9 } else { 0.8 },
            msg,
            ev,
        ))
    }
}

/// Data quality: absent signals, a missing steady phase, a window too short for the scrapes.
pub struct DataQuality;
impl DataQuality {
    pub fn all(&self, cx: &Context) -> Vec<Finding> {
        let mut out = Vec::new();
        for (c, why) in [
            (Concept::Running, "the engine's running-requests gauge"),
            (Concept::Waiting, "the engine's waiting-requests gauge"),
            (
                Concept::KvUsage,
                "KV-cache usage (vLLM ≥ 0.9.2: vllm:kv_cache_usage_perc; older: vllm:gpu_cache_usage_perc)",
            ),
            (
                Concept::GpuUtil,
                "GPU utilisation (dcgm-exporter DCGM_FI_DEV_GPU_UTIL)",
            ),
        ] {
            if cx.input.signal(c).is_none() {
                let msg = format!(
                    "{} is absent (no samples — not zero): {why}; check the metric name and the scrape target",
                    c.name()
                );
                out.push(finding(
                    "missing-signal",
                    Severity::Warning,
                    None,
                    1.0,
                    msg,
                    Vec::new(),
                ));
            }
        }
        if let Some(c) = cx.input.load.contention.as_deref() {
            let msg = format!(
                "the machine was contended while measuring ({c}): client-side timings are less exact and the verdict's confidence is lowered"
            );
            out.push(finding(
                "contended-machine",
                Severity::Warning,
                None,
                1.0,
                msg,
                Vec::new(),
            ));
        }
        let scrape = cx.input.scrape_interval_s.unwrap_or(1.0);
        match cx.phases.steady {
            None => out.push(finding(
                "no-steady-phase",
                Severity::Warning,
                None,
                1.0,
                "no steady loaded phase was found: the load never held (raise concurrency or duration)".to_owned(),
                Vec::new(),
            )),
            Some((a, b)) if b - a < 8.0 * scrape => out.push(finding(
                "short-window",
                Severity::Warning,
                None,
                1.0,
                format!("the steady window lasted {:.0}s, under 8 scrape intervals ({:.0}s): short bursts are missed by scrapes; run longer", b - a, 8.0 * scrape),
                Vec::new(),
            )),
            _ => {}
        }
        out.extend(self.gaps(cx, scrape));
        out
    }

    fn gaps(&self, cx: &Context, scrape: f64) -> Option<Finding> {
        let s = cx.input.signal(Concept::Running)?;
        let gaps = s
            .points
            .windows(2)
            .filter(|w| w[1].0 - w[0].0 > 3.0 * scrape)
            .count();
        (gaps > 0).then(|| {
            finding(
                "scrape-gaps",
                Severity::Warning,
                None,
                1.0,
                format!(
                    "{gaps} gap(s) longer than 3 scrape intervals in {}: a target was down or slow",
                    s.source
                ),
                Vec::new(),
            )
        })
    }
}

/// Every bottleneck detector, in the decision table's order of precedence.
pub fn detectors() -> Vec<Box<dyn Detector>> {
    vec![
        Box::new(super::failures::FailingRequests),
        Box::new(KvCapacity),
        Box::new(TokenBudget),
        Box::new(MemoryBandwidth),
        Box::new(GpuCompute),
        Box::new(BatchLimit),
        Box::new(FrontEndQueue),
        Box::new(ClientLimited),
        Box::new(LoadNotReached),
        Box::new(HostBound),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::signal::Signal;
    use crate::diagnose::{context, diagnose};

    /// The shared harness: every detector on empty, NaN-only, gappy and counter-reset inputs.
    fn hostile_inputs() -> Vec<Input> {
        let mut out = vec![Input::default()];
        let all = [
            Concept::Running,
            Concept::Waiting,
            Concept::KvUsage,
            Concept::GpuUtil,
            Concept::MemCopyUtil,
            Concept::GrEngineActive,
            Concept::DramActive,
            Concept::TensorActive,
            Concept::PowerWatts,
            Concept::Preemptions,
            Concept::GeneratedTokens,
            Concept::StepTokensSum,
            Concept::StepCount,
        ];
        let make = |f: &dyn Fn(usize) -> Option<f64>| {
            let mut i = Input {
                scrape_interval_s: Some(1.0),
                ..Input::default()
            };
            for c in all {
                let pts = (0..60)
                    .filter_map(|k| f(k).map(|v| (k as f64, v)))
                    .collect();
                i.signals.insert(c, Signal::new(c.name(), pts));
            }
            i
        };
        out.push(make(&|_| Some(f64::NAN)));
        out.push(make(&|k| {
            (k % 7 != 0 && !(20..35).contains(&k)).then_some(5.0)
        }));
        out.push(make(&|k| {
            Some(if k < 30 {
                k as f64 * 10.0
            } else {
                (k - 30) as f64
            })
        }));
        out.push(make(&|_| Some(0.0)));
        out.push(make(&|k| {
            Some(if k % 2 == 0 { f64::INFINITY } else { -1.0 })
        }));
        out
    }

    #[test]
    fn every_detector_survives_hostile_input_and_cites_evidence() {
        for input in hostile_inputs() {
            let cx = context(&input);
            for d in detectors() {
                if let Some(f) = d.detect(&cx) {
                    assert_eq!(f.rule, d.id());
                    assert!((0.0..1.0).contains(&f.confidence.unwrap_or(-1.0)));
                    if f.bottleneck.is_some() && f.rule != "client" {
                        assert!(!f.evidence.is_empty(), "{} fired without evidence", f.rule);
                    }
                }
            }
            let _ = DataQuality.all(&cx);
            let _ = diagnose(&input);
        }
    }

    /// Three replicas read together (Prometheus, one series per pod): running sums to 3 × 16, which
    /// is the fleet's batch cap, and the advice stays per replica.
    #[test]
    fn a_fleet_is_batch_limited_at_replicas_times_max_num_seqs() {
        use crate::series::{Labels, Point, Series, SeriesKey};
        let pod = |name: &str, pod: &str, f: &dyn Fn(f64) -> f64| Series {
            key: SeriesKey::new(name, Labels::new([("pod".to_owned(), pod.to_owned())])),
            points: (0..120)
                .map(|k| {
                    let t = k as f64;
                    let on = if (15.0..95.0).contains(&t) { 1.0 } else { 0.0 };
                    Point { t, v: on * f(t) }
                })
                .collect(),
        };
        let mut series = Vec::new();
        for p in ["a", "b", "c"] {
            series.push(pod("vllm:num_requests_running", p, &|_| 16.0));
            series.push(pod("vllm:num_requests_waiting", p, &|_| 8.0));
            series.push(pod("vllm:kv_cache_usage_perc", p, &|_| 0.03));
            series.push(pod("DCGM_FI_DEV_GPU_UTIL", p, &|_| 30.0));
        }
        let (mut input, _) = crate::diagnose::build::signals_from_series(&series);
        input.engine.max_num_seqs = Some(16);
        input.scrape_interval_s = Some(1.0);
        assert_eq!(input.engines, 3);
        let d = diagnose(&input);
        assert_eq!(d.verdict.bottleneck, Bottleneck::BatchLimit, "{d:#?}");
        let primary = d.findings.iter().find(|f| f.rule == "batch_limit").unwrap();
        assert!(
            primary.message.contains("× 3 replicas"),
            "{}",
            primary.message
        );
        let first = &d.recommendations[0].action;
        assert!(first.contains("from 16 to 32"), "{first}");
        // Read as one engine, 48 running is not a plateau at --max-num-seqs 16.
        input.engines = 1;
        assert_ne!(diagnose(&input).verdict.bottleneck, Bottleneck::BatchLimit);
    }

    /// 60 s loaded between 10 s of idle on each side: running, waiting and KV as given.
    fn loaded(running: f64, waiting: f64) -> Input {
        let shape = |v: f64| -> Vec<(f64, f64)> {
            (0..80)
                .map(|k| (k as f64, if (10..70).contains(&k) { v } else { 0.0 }))
                .collect()
        };
        let mut i = Input {
            scrape_interval_s: Some(1.0),
            ..Input::default()
        };
        i.engine.max_num_seqs = Some(16);
        i.load.concurrency = Some(32);
        i.signals
            .insert(Concept::Running, Signal::new("r", shape(running)));
        i.signals
            .insert(Concept::Waiting, Signal::new("w", shape(waiting)));
        i.signals
            .insert(Concept::KvUsage, Signal::new("kv", shape(0.02)));
        i
    }

    fn ids(d: &crate::diagnose::Diagnosis) -> Vec<&'static str> {
        d.findings.iter().map(|f| f.rule).collect()
    }

    /// A client that fell short while the server queued is a warning; the server's limit stands.
    #[test]
    fn a_server_queue_outranks_the_clients_self_check() {
        let mut i = loaded(16.0, 14.0);
        i.load.client_limited = true;
        i.load.client_note = Some("client-limited: achieved 30 concurrency of 32".into());
        let d = diagnose(&i);
        assert_eq!(
            d.verdict.bottleneck,
            Bottleneck::BatchLimit,
            "{:?}",
            ids(&d)
        );
        let client = d.findings.iter().find(|f| f.rule == "client").unwrap();
        assert_eq!(client.severity, Severity::Warning);
        assert!(client.bottleneck.is_none() && client.message.contains("reached regardless"));
    }

    /// Concurrency within the cap cannot build a queue: load not reached, whatever the client did;
    /// above the cap with no queue and a client that missed its load, the client is the verdict.
    #[test]
    fn concurrency_within_the_cap_is_load_not_reached_whatever_the_client_did() {
        let mut i = loaded(16.0, 0.0);
        i.load.concurrency = Some(16);
        i.load.client_limited = true;
        assert_eq!(diagnose(&i).verdict.bottleneck, Bottleneck::LoadNotReached);
        let mut above = loaded(9.0, 0.0);
        above.load.client_limited = true;
        assert_eq!(diagnose(&above).verdict.bottleneck, Bottleneck::Client);
    }

    /// A contended machine is data quality: same verdict, 0.1 less confidence, said once.
    #[test]
    fn a_contended_machine_lowers_confidence_and_is_not_a_bottleneck() {
        let calm = diagnose(&loaded(16.0, 16.0));
        let mut i = loaded(16.0, 16.0);
        i.load.contention = Some("its threads waited for a core 600 ms per second".into());
        let busy = diagnose(&i);
        assert_eq!(busy.verdict.bottleneck, calm.verdict.bottleneck);
        let drop = calm.verdict.confidence - busy.verdict.confidence;
        assert!(
            (drop - crate::diagnose::CONTENDED_PENALTY).abs() < 1e-9,
            "{drop}"
        );
        assert!(ids(&busy).contains(&"contended-machine"));
    }

    /// A starved API server holds requests the waiting gauge never sees: the client's in-flight
    /// count shows the demand, the batch limit stands, and the hidden queue is named.
    #[test]
    fn demand_held_in_front_of_the_scheduler_still_shows_the_batch_limit() {
        let mut i = loaded(16.0, 0.0);
        i.load.achieved_concurrency = Some(31.5);
        let d = diagnose(&i);
        assert_eq!(
            d.verdict.bottleneck,
            Bottleneck::BatchLimit,
            "{:?}",
            ids(&d)
        );
        let front = d
            .findings
            .iter()
            .find(|f| f.rule == "front_end_queue")
            .unwrap();
        assert!(
            front.message.starts_with("15.5 of the 31.5"),
            "{}",
            front.message
        );
        // Without the client's count, the same gauges are not enough to call it.
        i.load.achieved_concurrency = None;
        assert_ne!(diagnose(&i).verdict.bottleneck, Bottleneck::BatchLimit);
    }

    /// A counter rising by `per_s` every second while loaded (10 ≤ t < 70).
    fn counter(per_s: f64) -> Signal {
        let mut total = 0.0;
        let pts = (0..80)
            .map(|k| {
                if (10..70).contains(&k) {
                    total += per_s;
                }
                (k as f64, total)
            })
            .collect();
        Signal::new("c", pts)
    }

    /// Issue 22's cap-4 case: the scheduler kept a queue (the engine's queue-time counter says 4.8
    /// waiting on average), running reached the cap but in only 40 % of scrapes, KV near empty: the
    /// cap binds by elimination, never "none".
    #[test]
    fn a_scheduler_queue_with_the_cap_reached_is_the_batch_limit_by_elimination() {
        let mut i = loaded(4.0, 5.0);
        i.engine.max_num_seqs = Some(4);
        i.load.concurrency = Some(12);
        let pts: Vec<(f64, f64)> = (0..80)
            .map(|k| {
                let v = match k {
                    10..70 if k % 5 < 2 => 4.0,
                    10..70 => 2.0,
                    _ => 0.0,
                };
                (k as f64, v)
            })
            .collect();
        i.signals.insert(Concept::Running, Signal::new("r", pts));
        i.signals.insert(Concept::QueuedSeconds, counter(4.8));
        let d = diagnose(&i);
        assert_eq!(
            d.verdict.bottleneck,
            Bottleneck::BatchLimit,
            "{:?}",
            ids(&d)
        );
        assert!(
            d.verdict
                .summary
                .contains("held by the scheduler's queue at 4"),
            "{}",
            d.verdict.summary
        );
        // Without the counter and with the gauge's queue in few scrapes, nothing proves the queue.
        i.signals.remove(&Concept::QueuedSeconds);
        let sparse: Vec<(f64, f64)> = (0..80)
            .map(|k| {
                (
                    k as f64,
                    if (10..70).contains(&k) && k % 3 == 0 {
                        5.0
                    } else {
                        0.0
                    },
                )
            })
            .collect();
        i.signals.insert(Concept::Waiting, Signal::new("w", sparse));
        assert_ne!(diagnose(&i).verdict.bottleneck, Bottleneck::BatchLimit);
    }

    /// Requests held in front of the scheduler while it had no queue of its own (its queue-time
    /// counter near 0) and the load offered more than the cap: the API server is the limit.
    #[test]
    fn no_scheduler_queue_with_demand_over_the_cap_is_the_front_end() {
        let mut i = loaded(16.0, 0.0);
        i.load.achieved_concurrency = Some(31.0);
        i.signals.insert(Concept::QueuedSeconds, counter(0.1));
        i.signals.insert(Concept::RunningSeconds, counter(9.0));
        let d = diagnose(&i);
        assert_eq!(d.verdict.bottleneck, Bottleneck::FrontEnd, "{:?}", ids(&d));
        assert!(
            d.verdict.summary.contains("the front end, not the engine"),
            "{}",
            d.verdict.summary
        );
        assert!(
            d.recommendations[0].action.contains("--api-server-count"),
            "{:?}",
            d.recommendations
        );
        // Concurrency within the cap: no queue could form — load not reached, front end secondary.
        i.load.concurrency = Some(16);
        let d = diagnose(&i);
        assert_eq!(d.verdict.bottleneck, Bottleneck::LoadNotReached);
        assert!(ids(&d).contains(&"front_end_queue"));
    }

    #[test]
    fn absent_signals_are_reported_not_zeroed() {
        let d = diagnose(&Input::default());
        assert_eq!(d.verdict.bottleneck, Bottleneck::None);
        assert!(
            d.findings
                .iter()
                .any(|f| f.rule == "missing-signal" && f.message.contains("kv_usage"))
        );
    }
}
