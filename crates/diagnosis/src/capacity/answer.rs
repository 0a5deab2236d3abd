//! The answer of a capacity search, as plain data: every stage measured (each a stored run with
//! its own verdict), the knee, the most goodput under the SLO, the cause at the knee, and the
//! per-replica load an autoscaler should hold.
//!
//! Flow: the caller measures stages and records each in a [`super::Search`] and as a [`Stage`];
//! [`Answer::assemble`] reads the search's knee and the stages' verdicts into the answer. Pure.
//! Serialised, it is `llmscope capacity --format json`: the contract fields (`stages[]` with
//! `concurrency`|`rate`, `output_tok_s`, `req_s`, `goodput_rps`, `ttft_ms{p50,p95}`,
//! `verdict{bottleneck,confidence}`; `knee`; `max_goodput`; `run_ids`) and more.

use super::{Knee, Search, Stop};
use crate::{Bottleneck, Evidence};
use serde::Serialize;

/// The load axis searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// Closed-loop clients, each sending its next request when the last one ends.
    Concurrency,
    /// Open-loop arrivals, whole requests per second.
    Rate,
}

impl Axis {
    /// `concurrency 16` / `16 req/s`.
    pub fn describe(self, load: u32) -> String {
        match self {
            Axis::Concurrency => format!("concurrency {load}"),
            Axis::Rate => format!("{load} req/s"),
        }
    }
}

/// A load on the axis, serialised under the axis' name (`"concurrency": 16` or `"rate": 16`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Load {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
}

impl Load {
    pub fn on(axis: Axis, load: u32) -> Load {
        match axis {
            Axis::Concurrency => Load {
                concurrency: Some(load),
                rate: None,
            },
            Axis::Rate => Load {
                concurrency: None,
                rate: Some(load),
            },
        }
    }

    /// The load, whichever the axis.
    pub fn value(&self) -> u32 {
        self.concurrency.or(self.rate).unwrap_or(0)
    }
}

/// The median and the 95th percentile of a latency, in milliseconds (absent: no request gave one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50: Option<f64>,
    pub p95: Option<f64>,
}

/// A stage's verdict, by the same method as `llmscope run`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageVerdict {
    pub bottleneck: Bottleneck,
    pub confidence: f64,
    pub summary: String,
    /// The primary finding's evidence.
    pub evidence: Vec<Evidence>,
}

/// One stage: a load held for a short window, stored as a run of its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stage {
    #[serde(flatten)]
    pub load: Load,
    /// The stored run (`llmscope report RUN` shows it).
    pub run_id: i64,
    /// Output tokens per second over the stage's steady window (warm-up left out).
    pub output_tok_s: f64,
    /// Completed requests per second over the measured window.
    pub req_s: f64,
    /// Requests per second meeting every objective (`null` without `--slo`).
    pub goodput_rps: Option<f64>,
    /// The share of the measured requests meeting every objective (`null` without `--slo`).
    pub goodput_fraction: Option<f64>,
    pub ttft_ms: Percentiles,
    pub itl_ms: Percentiles,
    pub e2e_ms: Percentiles,
    pub completed: u64,
    pub failed: u64,
    /// The engine's requests running, mean over the stage's steady window (absent: not read).
    pub running_mean: Option<f64>,
    /// The engine's requests waiting, mean over the stage's steady window.
    pub waiting_mean: Option<f64>,
    /// Wall-clock seconds the stage took (baseline, load, drain, tail).
    pub seconds: f64,
    /// The measured window, Unix seconds `[from, to]`: the end of the warm-up to the end of
    /// sending as planned (a stage cut short by Ctrl-C ended earlier); a dashboard's time range
    /// for this stage.
    pub window: Option<(f64, f64)>,
    pub verdict: StageVerdict,
    /// Why the client could not keep this load, when it could not (its reading is then the
    /// client's limit, not the server's, and is kept out of the search).
    pub client_limited: Option<String>,
    /// The stage was stopped before its end (Ctrl-C).
    pub interrupted: bool,
}

/// Why the search ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Ended {
    /// The knee is pinned: the ladder stopped and the bisection is done.
    Found { stop: StopReason },
    /// `--budget` ran out before the next stage.
    Budget { next: Option<u32> },
    /// Cancelled (Ctrl-C); the stages before are kept.
    Interrupted,
    /// A stage's requests failed: the server's own words.
    Failing { load: u32, words: String },
    /// The client could not keep a stage's load; its limit is not the server's.
    ClientLimited { load: u32, words: String },
    /// No stage served any output.
    NoOutput,
}

/// Why the ladder stopped climbing (see [`Stop`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Throughput stopped growing while latency grew (added load became queueing).
    Plateau,
    /// Goodput under the SLO fell.
    GoodputFell,
    /// The engine held its batch at `--max-num-seqs` with a queue: more load could only queue.
    Saturated,
    /// `--max-concurrency` (or `--max-rate`) was measured.
    MaxLoad,
}

impl From<Stop> for StopReason {
    fn from(s: Stop) -> StopReason {
        match s {
            Stop::Plateau => StopReason::Plateau,
            Stop::GoodputFell => StopReason::GoodputFell,
            Stop::Saturated => StopReason::Saturated,
            Stop::MaxLoad => StopReason::MaxLoad,
        }
    }
}

/// The knee: the smallest load measured at [`super::KNEE_SHARE`] of the peak throughput.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KneeAnswer {
    #[serde(flatten)]
    pub load: Load,
    /// The largest load measured below it: the knee lies in `(below, load]`.
    pub below: Option<u32>,
    /// Pinned to one unit.
    pub exact: bool,
    /// The search ended before it stopped climbing: the knee is at least this.
    pub at_least: bool,
    pub output_tok_s: f64,
    pub req_s: f64,
    pub ttft_ms: Percentiles,
    pub itl_ms: Percentiles,
    pub e2e_ms: Percentiles,
    /// What limits the deployment there: the verdict past the knee (at it when nothing was
    /// measured past it).
    pub bottleneck: Bottleneck,
    /// The highest output throughput any stage reached, and at what load.
    pub peak_output_tok_s: f64,
    pub peak_at: u32,
}

/// Why the curve bends: the verdicts of the stage at the knee and just past it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    pub bottleneck: Bottleneck,
    /// One sentence: `past concurrency 16 the batch limit holds: …`.
    pub sentence: String,
    /// The run of the stage the cause was read from.
    pub run_id: i64,
    pub evidence: Vec<Evidence>,
    /// The verdict at the knee itself.
    pub at_knee: Bottleneck,
    /// The smallest load whose own verdict is this cause: where it starts to bind (KV
    /// capacity: where preemptions and a queue begin, which may be below the knee when output
    /// still creeps up under preemption).
    pub binds_from: Option<u32>,
}

/// The most goodput under the SLO, and the load where it was reached.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MaxGoodput {
    pub goodput_rps: f64,
    #[serde(flatten)]
    pub load: Load,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    pub axis: Axis,
    /// The objectives goodput was measured against (`ttft=500ms,…`), if any.
    pub slo: Option<String>,
    pub stages: Vec<Stage>,
    pub knee: Option<KneeAnswer>,
    /// `null` without `--slo`.
    pub max_goodput: Option<MaxGoodput>,
    pub cause: Option<Cause>,
    /// What to change about the cause (its stage's advice), each with what it is predicted to
    /// buy where whoever assembled the answer could predict it (`llmscope_ops::whatif`, fitted
    /// to every stage of the search).
    pub advice: Vec<crate::advice::Recommendation>,
    /// The load one replica holds within the SLO (with `--slo`: where goodput peaked; else the
    /// knee): the autoscaling threshold.
    pub per_replica: Option<u32>,
    pub ended: Ended,
    pub run_ids: Vec<i64>,
    pub budget_s: f64,
    pub elapsed_s: f64,
}

impl Answer {
    /// The answer from the stages measured (in the order measured), the search they fed, and why
    /// it ended.
    pub fn assemble(
        axis: Axis,
        slo: Option<String>,
        stages: Vec<Stage>,
        search: &Search,
        ended: Ended,
        (budget_s, elapsed_s): (f64, f64),
    ) -> Answer {
        let mut knee = search.knee().and_then(|k| knee(axis, &stages, &k, &ended));
        let cause = knee
            .as_ref()
            .and_then(|k| cause(axis, &stages, k))
            .map(|c| Cause {
                binds_from: binds_from(&stages, c.bottleneck),
                ..c
            });
        if let (Some(k), Some(c)) = (&mut knee, &cause) {
            k.bottleneck = c.bottleneck;
        }
        let max_goodput = slo.as_ref().and_then(|_| max_goodput(axis, &stages));
        // Without an SLO: the knee, or where its cause starts to bind if that is below it (past
        // it requests queue or are preempted, however output creeps up).
        let binds = cause.as_ref().and_then(|c| c.binds_from);
        let per_replica = match (&max_goodput, &knee) {
            (Some(g), _) => Some(g.load.value()),
            (None, Some(k)) if !k.at_least => {
                Some(binds.map_or(k.load.value(), |b| b.min(k.load.value())))
            }
            _ => None,
        };
        Answer {
            axis,
            slo,
            run_ids: stages.iter().map(|s| s.run_id).collect(),
            stages,
            knee,
            max_goodput,
            cause,
            advice: Vec::new(),
            per_replica,
            ended,
            budget_s,
            elapsed_s,
        }
    }
}

/// The stage the search counted at `load` (the last one measured there that it took).
fn counted(stages: &[Stage], load: u32) -> Option<&Stage> {
    stages
        .iter()
        .rev()
        .find(|s| s.load.value() == load && s.client_limited.is_none() && !s.interrupted)
}

/// The knee with the figures of its stage; "at least" when the ladder never stopped.
fn knee(axis: Axis, stages: &[Stage], k: &Knee, ended: &Ended) -> Option<KneeAnswer> {
    let at = counted(stages, k.load)?;
    let beyond = past(stages, k.load);
    let limit = beyond.unwrap_or(at);
    Some(KneeAnswer {
        load: Load::on(axis, k.load),
        below: k.below,
        exact: k.exact(),
        // Still growing at the largest load measured: the knee lies beyond it.
        at_least: k.stop.is_none()
            || matches!(ended, Ended::Interrupted | Ended::Budget { .. })
            || (k.stop == Some(Stop::MaxLoad) && beyond.is_none()),
        output_tok_s: at.output_tok_s,
        req_s: at.req_s,
        ttft_ms: at.ttft_ms,
        itl_ms: at.itl_ms,
        e2e_ms: at.e2e_ms,
        bottleneck: limit.verdict.bottleneck,
        peak_output_tok_s: k.peak.1,
        peak_at: k.peak.0,
    })
}

/// The smallest counted load whose verdict is `b` (not for "no limit" verdicts).
fn binds_from(stages: &[Stage], b: Bottleneck) -> Option<u32> {
    if names_no_limit(b) {
        return None;
    }
    let loads = stages.iter().map(|s| s.load.value());
    loads
        .filter(|l| counted(stages, *l).is_some_and(|s| s.verdict.bottleneck == b))
        .min()
}

/// The smallest counted stage above `load` whose verdict read the engine; the smallest counted
/// one where none did. A stage whose engine metrics did not answer (its verdict: no limit could
/// be established) says nothing of what holds past the knee: a real vLLM 0.32 on 2 cores left a
/// stage's `/metrics` unanswered for seconds, and the knee's cause read `none` where the next
/// stage's engine preempted.
fn past(stages: &[Stage], load: u32) -> Option<&Stage> {
    let above = counted_above(stages, load);
    let read = above
        .iter()
        .find(|s| s.verdict.bottleneck != Bottleneck::None);
    read.or(above.first()).copied()
}

/// The counted stages above `load`, smallest load first, one a load.
fn counted_above(stages: &[Stage], load: u32) -> Vec<&Stage> {
    let mut above: Vec<u32> = stages
        .iter()
        .map(|s| s.load.value())
        .filter(|l| *l > load)
        .collect();
    above.sort_unstable();
    above.dedup();
    above
        .into_iter()
        .filter_map(|l| counted(stages, l))
        .collect()
}

/// The verdict past the knee, with its evidence, in one sentence — or, where that stage saw no
/// queue although its batch grew and its output did not, the engine's compute ([`compute`]).
fn cause(axis: Axis, stages: &[Stage], k: &KneeAnswer) -> Option<Cause> {
    let load = k.load.value();
    let at = counted(stages, load)?;
    let Some(p) = past(stages, load) else {
        return Some(verdict_cause(axis, "at", load, (at, None), at));
    };
    if let Some(c) = compute(axis, load, at, p) {
        return Some(c);
    }
    // The stage just past the knee can sit a rung short of the limit that bends the curve (a
    // real engine at --max-num-seqs 8 reached 95 % of its peak at 7 clients, and 8 clients hold
    // no queue): a knee has a cause, so it is the first limit measured further out.
    let limit = limit_above(stages, load).filter(|_| names_no_limit(p.verdict.bottleneck));
    // Where `past` passed over stages that read nothing, the cause says which load it is from.
    let nearest = counted_above(stages, load).first().map(|s| s.load.value());
    let further = (nearest != Some(p.load.value())).then_some(p.load.value());
    Some(match limit {
        Some(l) => verdict_cause(axis, "past", load, (l, Some(l.load.value())), at),
        None => verdict_cause(axis, "past", load, (p, further), at),
    })
}

/// A verdict that names no limit (load not reached, none).
fn names_no_limit(b: Bottleneck) -> bool {
    matches!(b, Bottleneck::LoadNotReached | Bottleneck::None)
}

/// The smallest counted stage above `load` whose verdict names a limit.
fn limit_above(stages: &[Stage], load: u32) -> Option<&Stage> {
    counted_above(stages, load)
        .into_iter()
        .find(|s| !names_no_limit(s.verdict.bottleneck))
}

/// `past concurrency 16 the batch limit holds: <the stage's verdict>`.
/// The cause read from `from`'s verdict; `further`: the load it was measured at, where that is
/// not the stage just past the knee.
fn verdict_cause(
    axis: Axis,
    word: &str,
    load: u32,
    (from, further): (&Stage, Option<u32>),
    at: &Stage,
) -> Cause {
    Cause {
        bottleneck: from.verdict.bottleneck,
        sentence: format!(
            "{word} {} {} holds{}: {}",
            axis.describe(load),
            label(from.verdict.bottleneck),
            further.map_or(String::new(), |l| format!(" (from {})", axis.describe(l))),
            from.verdict.summary
        ),
        run_id: from.run_id,
        evidence: from.verdict.evidence.clone(),
        at_knee: at.verdict.bottleneck,
        binds_from: None,
    }
}

/// The batch grew by this much past the knee…
const BATCH_GREW: f64 = 1.5;
/// …while the output grew by less than this share, and fewer than this many requests waited.
const OUTPUT_FLAT: f64 = 0.05;
const NO_QUEUE: f64 = 0.5;

/// Compute saturation, read across two stages: past the knee the engine ran a larger batch
/// (its own gauge) with no queue, yet produced no more output — each step slowed in proportion
/// to the batch. One window alone sees no queue and calls the load not reached; the pair shows
/// the load was reached and the engine's compute (GPU, or the host of a CPU build) is the limit.
fn compute(axis: Axis, load: u32, at: &Stage, p: &Stage) -> Option<Cause> {
    let quiet = names_no_limit(p.verdict.bottleneck);
    let (ra, rp) = (at.running_mean?, p.running_mean?);
    let grew = rp >= BATCH_GREW * ra && ra > 0.0;
    let flat = p.output_tok_s < (1.0 + OUTPUT_FLAT) * at.output_tok_s;
    if !(quiet && grew && flat && p.waiting_mean.is_none_or(|w| w < NO_QUEUE)) {
        return None;
    }
    let sentence = format!(
        "past {} the engine's compute holds: its batch grew from {ra:.1} to {rp:.1} running requests ({}) while output stayed at {:.0} → {:.0} tok/s, so each step slowed in proportion to the batch; no queue formed, so neither the batch limit nor KV capacity binds (the GPU's compute — or, on a CPU build or a busy host, the host's)",
        axis.describe(load),
        axis.describe(p.load.value()),
        at.output_tok_s,
        p.output_tok_s
    );
    let ev = |statistic: &'static str, value: f64, stage: &Stage| Evidence {
        signal: std::borrow::Cow::Borrowed(if statistic.starts_with("output") {
            "output_tokens"
        } else {
            "running"
        }),
        source: format!("stage run {}", stage.run_id),
        window: stage.window,
        statistic: std::borrow::Cow::Borrowed(statistic),
        value,
        test: std::borrow::Cow::Borrowed(""),
        threshold: None,
    };
    Some(Cause {
        bottleneck: Bottleneck::GpuCompute,
        sentence,
        run_id: p.run_id,
        evidence: vec![
            ev("mean_at_knee", ra, at),
            ev("mean_past_knee", rp, p),
            ev("output_tok_s_at_knee", at.output_tok_s, at),
            ev("output_tok_s_past_knee", p.output_tok_s, p),
        ],
        at_knee: at.verdict.bottleneck,
        binds_from: None,
    })
}

/// The most goodput any counted stage reached (the smallest load on a tie).
fn max_goodput(axis: Axis, stages: &[Stage]) -> Option<MaxGoodput> {
    let mut best: Option<(u32, f64)> = None;
    for s in stages {
        let (l, Some(g)) = (s.load.value(), s.goodput_rps) else {
            continue;
        };
        let better = best.is_none_or(|(bl, bg)| g > bg || (g == bg && l < bl));
        if g.is_finite() && counted(stages, l).is_some_and(|c| std::ptr::eq(c, s)) && better {
            best = Some((l, g));
        }
    }
    best.map(|(l, g)| MaxGoodput {
        goodput_rps: g,
        load: Load::on(axis, l),
    })
}

/// The bottleneck as said in a sentence.
pub fn label(b: Bottleneck) -> &'static str {
    match b {
        Bottleneck::FailingRequests => "failing requests",
        Bottleneck::AdmissionLimit => "the admission limit (--max-num-queued-reqs)",
        Bottleneck::GpuCompute => "GPU compute",
        Bottleneck::KvCacheCapacity => "KV-cache capacity",
        Bottleneck::BatchLimit => "the batch limit (--max-num-seqs)",
        Bottleneck::Client => "the client",
        Bottleneck::LoadNotReached => "nothing in the server (load not reached)",
        Bottleneck::MemoryBandwidth => "memory bandwidth",
        Bottleneck::Host => "the host",
        Bottleneck::TokenBudget => "the token budget (--max-num-batched-tokens)",
        Bottleneck::FrontEnd => "the API server's front end",
        Bottleneck::RoutingImbalance => "the routing between replicas",
        Bottleneck::None => "no single limit",
    }
}

#[cfg(test)]
mod tests {
    use super::super::Served;
    use super::*;

    fn stage(load: u32, tok: f64, b: Bottleneck, goodput: Option<f64>) -> Stage {
        Stage {
            load: Load::on(Axis::Concurrency, load),
            run_id: i64::from(load),
            output_tok_s: tok,
            req_s: tok / 100.0,
            goodput_rps: goodput,
            goodput_fraction: None,
            ttft_ms: Percentiles::default(),
            itl_ms: Percentiles::default(),
            e2e_ms: Percentiles::default(),
            completed: 10,
            failed: 0,
            running_mean: None,
            waiting_mean: None,
            seconds: 10.0,
            window: None,
            verdict: StageVerdict {
                bottleneck: b,
                confidence: 0.9,
                summary: format!("{} at {load}", b.as_str()),
                evidence: Vec::new(),
            },
            client_limited: None,
            interrupted: false,
        }
    }

    /// Stages for a cap of 16: load not reached below, the batch limit at and past it.
    fn capped() -> (Vec<Stage>, Search) {
        let mut search = Search::new(1, 64);
        let mut stages = Vec::new();
        for l in [1, 2, 4, 8, 16, 32, 12, 14, 15] {
            let tok = 100.0 * f64::from(l.min(16));
            let b = if l < 16 {
                Bottleneck::LoadNotReached
            } else {
                Bottleneck::BatchLimit
            };
            let goodput = Some(if l <= 16 { f64::from(l) } else { 8.0 });
            stages.push(stage(l, tok, b, goodput));
            search.record(
                l,
                Served {
                    output_tok_s: tok,
                    goodput_rps: goodput,
                    saturated: false,
                },
            );
        }
        (stages, search)
    }

    /// The real engine at --max-num-seqs 8 (CI's starved host): 95 % of the peak at 7 clients,
    /// no queue at 8, the batch limit at 16. The knee has a cause: the first limit past it.
    #[test]
    fn a_quiet_stage_just_past_the_knee_gives_way_to_the_limit_further_out() {
        let mut search = Search::new(1, 64);
        let mut stages = Vec::new();
        for (l, tok) in [
            (1, 99.0),
            (2, 180.0),
            (4, 259.0),
            (8, 350.0),
            (16, 350.0),
            (6, 297.0),
            (7, 345.0),
        ] {
            let b = if l < 16 {
                Bottleneck::LoadNotReached
            } else {
                Bottleneck::BatchLimit
            };
            stages.push(stage(l, tok, b, None));
            let saturated = b == Bottleneck::BatchLimit;
            let served = Served {
                output_tok_s: tok,
                goodput_rps: None,
                saturated,
            };
            search.record(l, served);
        }
        let stop = Ended::Found {
            stop: StopReason::Saturated,
        };
        let a = Answer::assemble(
            Axis::Concurrency,
            None,
            stages,
            &search,
            stop,
            (300.0, 90.0),
        );
        let k = a.knee.as_ref().unwrap();
        assert_eq!((k.load.value(), k.bottleneck), (7, Bottleneck::BatchLimit));
        let c = a.cause.as_ref().unwrap();
        assert_eq!(
            (c.bottleneck, c.run_id, c.at_knee),
            (Bottleneck::BatchLimit, 16, Bottleneck::LoadNotReached)
        );
        assert!(
            c.sentence.starts_with(
                "past concurrency 7 the batch limit (--max-num-seqs) holds (from concurrency 16):"
            ),
            "{}",
            c.sentence
        );
    }

    /// A stage whose engine metrics did not answer (its verdict: none could be established)
    /// is passed over for the next that read the engine, in the knee and its cause alike.
    #[test]
    fn a_stage_that_read_nothing_past_the_knee_is_passed_over() {
        let (mut stages, mut search) = capped();
        stages
            .iter_mut()
            .find(|s| s.load.value() == 32)
            .unwrap()
            .verdict
            .bottleneck = Bottleneck::None;
        let mut kv = stage(64, 1600.0, Bottleneck::KvCacheCapacity, Some(8.0));
        kv.verdict.summary = "preempted at 64".to_owned();
        stages.push(kv);
        search.record(
            64,
            Served {
                output_tok_s: 1600.0,
                goodput_rps: Some(8.0),
                saturated: false,
            },
        );
        let stop = Ended::Found {
            stop: StopReason::Plateau,
        };
        let a = Answer::assemble(
            Axis::Concurrency,
            None,
            stages,
            &search,
            stop,
            (300.0, 100.0),
        );
        let k = a.knee.as_ref().unwrap();
        assert_eq!(
            (k.load.value(), k.bottleneck),
            (16, Bottleneck::KvCacheCapacity)
        );
        let c = a.cause.as_ref().unwrap();
        assert_eq!((c.bottleneck, c.run_id), (Bottleneck::KvCacheCapacity, 64));
        assert!(
            c.sentence.starts_with(
                "past concurrency 16 KV-cache capacity holds (from concurrency 64): preempted at 64"
            ),
            "{}",
            c.sentence
        );
    }

    #[test]
    fn the_cause_is_the_verdict_just_past_the_knee() {
        let (stages, search) = capped();
        let stop = Ended::Found {
            stop: StopReason::Plateau,
        };
        let a = Answer::assemble(
            Axis::Concurrency,
            Some("ttft=1s".into()),
            stages,
            &search,
            stop,
            (300.0, 100.0),
        );
        let k = a.knee.as_ref().unwrap();
        assert_eq!((k.load.value(), k.below, k.exact), (16, Some(15), true));
        assert_eq!(k.bottleneck, Bottleneck::BatchLimit);
        let c = a.cause.as_ref().unwrap();
        assert_eq!((c.bottleneck, c.run_id), (Bottleneck::BatchLimit, 32));
        assert!(
            c.sentence
                .starts_with("past concurrency 16 the batch limit")
        );
        assert_eq!(a.max_goodput.unwrap().load.value(), 16);
        assert_eq!(a.per_replica, Some(16));
        assert_eq!(a.run_ids.len(), 9);
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["stages"][0]["concurrency"], 1);
        assert!(json["stages"][0].get("rate").is_none());
        assert_eq!(json["knee"]["concurrency"], 16);
        assert_eq!(json["knee"]["bottleneck"], "batch_limit");
        assert_eq!(json["stages"][4]["verdict"]["bottleneck"], "batch_limit");
        assert_eq!(json["max_goodput"]["concurrency"], 16);
        assert_eq!(json["ended"]["reason"], "found");
    }

    #[test]
    fn a_batch_that_grows_without_output_or_queue_is_the_engines_compute() {
        // The real CPU vLLM at --max-num-seqs 8: output flat from 4 clients on, the batch
        // doubling, nothing waiting — each step takes twice as long.
        let mut search = Search::new(1, 32);
        let mut stages = Vec::new();
        for (l, tok, running) in [
            (1, 106.0, 0.8),
            (2, 181.0, 1.5),
            (4, 241.0, 2.8),
            (8, 232.0, 5.7),
            (3, 187.0, 2.4),
        ] {
            let mut s = stage(l, tok, Bottleneck::LoadNotReached, None);
            (s.running_mean, s.waiting_mean) = (Some(running), Some(0.0));
            stages.push(s);
            search.record(
                l,
                Served {
                    output_tok_s: tok,
                    goodput_rps: None,
                    saturated: false,
                },
            );
        }
        let found = Ended::Found {
            stop: StopReason::Plateau,
        };
        let a = Answer::assemble(
            Axis::Concurrency,
            None,
            stages.clone(),
            &search,
            found.clone(),
            (300.0, 60.0),
        );
        let c = a.cause.unwrap();
        assert_eq!(
            (c.bottleneck, c.at_knee, c.run_id),
            (Bottleneck::GpuCompute, Bottleneck::LoadNotReached, 8)
        );
        assert!(
            c.sentence.contains("from 2.8 to 5.7 running"),
            "{}",
            c.sentence
        );
        assert_eq!(a.knee.unwrap().bottleneck, Bottleneck::GpuCompute);
        // A queue past the knee is the scheduler's to explain, not compute's.
        stages[3].waiting_mean = Some(4.0);
        let a = Answer::assemble(
            Axis::Concurrency,
            None,
            stages,
            &search,
            found,
            (300.0, 60.0),
        );
        assert_eq!(a.cause.unwrap().bottleneck, Bottleneck::LoadNotReached);
    }

    #[test]
    fn kv_capacity_binding_below_the_knee_sets_the_replica_load() {
        // The real CPU vLLM with a 2,048-token pool and 384-token answers: preemptions from 8
        // clients on, output still creeping up to 16 — the knee by output is 14, but past 8
        // requests are preempted and wait.
        let mut search = Search::new(1, 16);
        let mut stages = Vec::new();
        for (l, tok) in [
            (1, 99.0),
            (2, 172.0),
            (4, 233.0),
            (8, 259.0),
            (16, 310.0),
            (12, 291.0),
            (14, 303.0),
            (13, 291.0),
        ] {
            let b = if l >= 8 {
                Bottleneck::KvCacheCapacity
            } else {
                Bottleneck::LoadNotReached
            };
            stages.push(stage(l, tok, b, None));
            search.record(
                l,
                Served {
                    output_tok_s: tok,
                    goodput_rps: None,
                    saturated: false,
                },
            );
        }
        let found = Ended::Found {
            stop: StopReason::MaxLoad,
        };
        let a = Answer::assemble(
            Axis::Concurrency,
            None,
            stages,
            &search,
            found,
            (300.0, 170.0),
        );
        let c = a.cause.unwrap();
        assert_eq!(
            (a.knee.unwrap().load.value(), c.bottleneck),
            (14, Bottleneck::KvCacheCapacity)
        );
        assert_eq!(c.binds_from, Some(8));
        assert_eq!(
            a.per_replica,
            Some(8),
            "not the knee: past 8 requests are preempted"
        );
    }

    #[test]
    fn without_an_slo_there_is_no_max_goodput_and_the_knee_is_the_replica_load() {
        let (stages, search) = capped();
        let a = Answer::assemble(
            Axis::Concurrency,
            None,
            stages,
            &search,
            Ended::Found {
                stop: StopReason::Plateau,
            },
            (300.0, 100.0),
        );
        assert_eq!(a.max_goodput, None);
        assert_eq!(a.per_replica, Some(16));
        assert!(serde_json::to_value(&a).unwrap()["max_goodput"].is_null());
    }

    #[test]
    fn an_interrupted_search_says_at_least_and_names_no_replica_load() {
        let mut search = Search::new(1, 64);
        let mut stages = Vec::new();
        for l in [1, 2, 4] {
            stages.push(stage(
                l,
                100.0 * f64::from(l),
                Bottleneck::LoadNotReached,
                None,
            ));
            search.record(
                l,
                Served {
                    output_tok_s: 100.0 * f64::from(l),
                    goodput_rps: None,
                    saturated: false,
                },
            );
        }
        let mut cut = stage(8, 50.0, Bottleneck::LoadNotReached, None);
        cut.interrupted = true;
        stages.push(cut);
        let a = Answer::assemble(
            Axis::Concurrency,
            None,
            stages,
            &search,
            Ended::Interrupted,
            (300.0, 40.0),
        );
        let k = a.knee.unwrap();
        assert!(k.at_least && !k.exact);
        assert_eq!(k.load.value(), 4);
        assert_eq!(a.per_replica, None);
        assert_eq!(
            a.run_ids,
            vec![1, 2, 4, 8],
            "the cut stage is still a stored run"
        );
    }

    #[test]
    fn a_client_limited_stage_is_not_read_as_the_server() {
        let (mut stages, search) = capped();
        let mut limited = stage(64, 10.0, Bottleneck::Client, None);
        limited.client_limited = Some("the client's CPU was saturated".into());
        stages.push(limited);
        let a = Answer::assemble(
            Axis::Rate,
            None,
            stages,
            &search,
            Ended::ClientLimited {
                load: 64,
                words: "saturated".into(),
            },
            (300.0, 100.0),
        );
        assert_eq!(a.knee.as_ref().unwrap().load.rate, Some(16));
        assert_eq!(a.cause.unwrap().run_id, 32);
    }
}
