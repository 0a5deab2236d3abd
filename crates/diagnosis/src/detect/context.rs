//! What detectors read: the input, its phases and steady-window statistics, and the levels and
//! evidence every detector derives from them the same way.

use super::{Evidence, NEAR_CEILING, WAITING_SHARE};
use crate::signal::{Concept, Input};
use crate::window::{Phases, WindowStats};
use std::collections::BTreeMap;

/// Request lifetimes the settled window must hold for the engine's per-request time counters
/// (counted when a request finishes) to speak for it alone ([`Context::counters_cover_window`]).
pub const COUNTER_TURNOVERS: f64 = 2.0;

/// What detectors read: the input, its phases and steady-window statistics.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    pub input: &'a Input,
    pub phases: Phases,
    pub stats: BTreeMap<Concept, WindowStats>,
    /// Gauge readings the engine's counters contradicted were set aside ([`crate::stale`]): the
    /// gauges that are left are a biased sample, so means come from the counters.
    pub gauges_stale: bool,
}

/// Tokens per engine step ([`Context::step_tokens`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepTokens {
    pub per_step: f64,
    /// How far the window's edges can move `per_step`, either way.
    pub uncertainty: f64,
}

/// A counter's growth between its readings at or after `from` and at or before `to` (a reset
/// counts from zero); `None` without two readings there.
pub(crate) fn growth(s: &crate::signal::Signal, from: f64, to: f64) -> Option<f64> {
    let points: Vec<(f64, f64)> = s.window(from, to).collect();
    (points.len() >= 2).then(|| {
        points
            .windows(2)
            .map(|w| {
                if w[1].1 >= w[0].1 {
                    w[1].1 - w[0].1
                } else {
                    w[1].1
                }
            })
            .sum()
    })
}

/// A level read from the steady window, with its evidence.
#[derive(Debug, Clone, Copy)]
pub struct Level {
    pub concept: Concept,
    pub value: f64,
    pub statistic: &'static str,
}

impl Context<'_> {
    pub(crate) fn stat(&self, c: Concept) -> Option<&WindowStats> {
        self.stats.get(&c).filter(|s| s.samples > 0)
    }

    /// GPU busy fraction: GR_ENGINE_ACTIVE when exported (it works on MIG too), else GPU_UTIL.
    pub fn busy(&self) -> Option<Level> {
        self.first_fraction(&[Concept::GrEngineActive, Concept::GpuUtil])
    }

    /// The mean (of non-zero samples) of the first of `concepts` the window has, as a 0..1
    /// fraction of its full scale.
    fn first_fraction(&self, concepts: &[Concept]) -> Option<Level> {
        concepts.iter().find_map(|&c| {
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
    pub(crate) fn settled_rate(&self, c: Concept) -> Option<f64> {
        let (a, b) = self.phases.steady?;
        let from = a + (b - a) / 4.0;
        let s = self.input.signal(c)?;
        let mut points = s.window(from, b);
        let first = points.next()?;
        let span = points.last()?.0 - first.0;
        (span > 0.0)
            .then(|| growth(s, from, b))
            .flatten()
            .map(|g| g / span)
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

    pub(crate) fn prefer(&self, gauge: Option<Level>, counter: Option<Level>) -> Option<Level> {
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
        let gauge = || {
            self.waiting()
                .is_some_and(|(mean, share)| share >= WAITING_SHARE && mean >= 0.5)
        };
        match self.little_waiting() {
            Some(w) if self.counters_cover_window() => w >= 0.5,
            Some(w) => w >= 0.5 || gauge(),
            None => gauge(),
        }
    }

    /// Whether the queue-time counter can speak for the settled window on its own. It grows by a
    /// request's first wait when the request finishes, so it misses two kinds of wait:
    ///
    /// - a preempted request waits again, and vLLM counts that wait as inference time (a real
    ///   vLLM 0.32 with a 2,048-token KV pool, 16 clients: 6.4 waiting in every scrape and 14
    ///   preemptions while the queue-time counter grew by 0.2/s);
    /// - a wait whose request finishes after the window. Where the requests finishing in the
    ///   settled window spent more than half of it in the engine (`COUNTER_TURNOVERS`), they
    ///   are mostly those admitted first, without a wait, and the queue behind them is not
    ///   counted yet (a real vLLM 0.32 at --max-num-seqs 16, 32 clients, 128-token answers on a
    ///   starved host: 15.3 waiting in every scrape while the queue-time counter grew by 0.0/s,
    ///   requests finishing in a 4.9 s settled window after about 5 s in the engine).
    ///
    /// Either way the waiting gauge speaks beside the counter.
    pub fn counters_cover_window(&self) -> bool {
        let preempted = self
            .settled_rate(Concept::Preemptions)
            .is_some_and(|r| r > 0.0);
        let (Some((a, b)), Some(q), Some(r), Some(n)) = (
            self.phases.steady,
            self.settled_rate(Concept::QueuedSeconds),
            self.settled_rate(Concept::RunningSeconds),
            self.settled_rate(Concept::RequestsFinished),
        ) else {
            return !preempted;
        };
        // No request finished: the counters saw none of the window.
        let outlived = n <= 0.0 || 0.75 * (b - a) < COUNTER_TURNOVERS * (q + r) / n;
        !preempted && !outlived
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

    /// DRAM activity as a fraction: DRAM_ACTIVE when exported, else MEM_COPY_UTIL.
    pub fn dram(&self) -> Option<Level> {
        self.first_fraction(&[Concept::DramActive, Concept::MemCopyUtil])
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
        self.step_tokens().map(|s| s.per_step)
    }

    /// Tokens per engine step over the steady window, and how far the window's edges can move
    /// the figure. vLLM counts a prompt's tokens in the step its prefill completes, all at once,
    /// while the chunked prefill spent them over the steps before: a 1,000-token prompt under a
    /// 128-token budget adds ~1,000 to one step and ~0 to the seven before it. A window that cuts
    /// a cycle counts its steps without its prompt, or its prompt without its steps (a real vLLM
    /// 0.32 on a starved host, ~50 steps in the window: 105–150 tokens per step for a true ~128,
    /// by where the window fell). So the count runs from the first scrape that saw a prefill
    /// complete to the last, off only by the prefill in flight at either end: at most one prompt,
    /// and at most the steps of the scrape interval each completion fell in — the uncertainty.
    pub fn step_tokens(&self) -> Option<StepTokens> {
        let (a, b) = self.phases.steady?;
        let sum = self.input.signal(Concept::StepTokensSum)?;
        let count = self.input.signal(Concept::StepCount)?;
        let steps = growth(count, a, b).filter(|n| *n > 0.0)?;
        let prompt = self.input.signal(Concept::PromptTokens);
        let rises: Vec<(f64, f64)> = prompt.map_or(Vec::new(), |p| {
            p.points
                .windows(2)
                .filter(|w| w[0].1.is_finite() && w[1].1 > w[0].1 && (a..=b).contains(&w[1].0))
                .map(|w| (w[1].0, w[1].1 - w[0].1))
                .collect()
        });
        // One prompt: the mean of those finishing in the window, else the largest single rise.
        let finished = self
            .input
            .signal(Concept::RequestsFinished)
            .and_then(|f| growth(f, a, b))
            .filter(|n| *n > 0.0);
        let one_prompt = match (prompt.and_then(|p| growth(p, a, b)), finished) {
            (Some(tokens), Some(n)) => tokens / n,
            _ => rises.iter().map(|r| r.1).fold(0.0, f64::max),
        };
        if let [(from, _), .., (to, _)] = rises.as_slice()
            && let Some(n) = growth(count, *from, *to).filter(|n| *n > 0.0)
        {
            let per_step = growth(sum, *from, *to)? / n;
            let intervals = count.window(a, b).count().saturating_sub(1).max(1) as f64;
            let interval = per_step * steps / intervals;
            return Some(StepTokens {
                per_step,
                uncertainty: one_prompt.min(interval) / n,
            });
        }
        Some(StepTokens {
            per_step: growth(sum, a, b)? / steps,
            uncertainty: one_prompt / steps,
        })
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

    pub(crate) fn level_evidence(&self, l: Level, test: &'static str, threshold: f64) -> Evidence {
        self.evidence(l.concept, l.statistic, l.value, test, Some(threshold))
    }
}
