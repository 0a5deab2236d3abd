//! Sharded load (issue 29): N processes — N pods of a Kubernetes Indexed Job — each drive 1/N of
//! one load, and `llmscope merge` makes one report of them, exact as one process's.
//!
//! How the data flows:
//! 1. `load --shard I/N` plans the whole load, then [`split`] keeps shard `I`'s share of
//!    each stage: `c/N` closed-loop workers (the first `c mod N` shards take one more), `r/N`
//!    requests per second (independent Poisson or gamma streams add up to the whole rate; constant
//!    arrivals are phased so the union is evenly spaced), its share of `--requests` and of an
//!    open loop's cap, every N-th request of a trace at its own time. Request `k` of the shard is
//!    numbered `k·N + I` ([`Shard::id`]): in the first stage exactly the whole load's request of
//!    that number (its body, prefix group and session are those one process would have given
//!    it), in later stages still unique across shards. So shards do not send the same prompts at
//!    once (which would turn the server's prefix cache into a sharding artefact) and record ids
//!    never collide.
//! 2. `--start-at T` (RFC 3339) holds every shard until `T`, so their first stages line up; the
//!    shard records how late it started ([`ShardInfo`]).
//! 3. Each shard writes its report, its stages' statistics as lossless snapshots (HDR buckets, see
//!    [`crate::stats::Hist`]) and its per-request records under `--out DIR` ([`ShardFile`]).
//! 4. [`crate::merge`] adds the snapshots stage by stage (counts and histograms add, windows are
//!    their union), checks the shards agreed, and checks the merged percentiles against the
//!    records.

use crate::plan::{PlanError, StagePlan};
use crate::report::LoadReport;
pub use crate::report::ShardInfo;
use crate::schedule::{Arrival, Mode};
use crate::slo::Slo;
use crate::stats::{StageMeta, StageStats};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The format tag of a shard file; merge refuses others.
pub const FORMAT: &str = "llmscope-shard/1";

pub use llmscope_core::shard::Shard;

/// Shard `shard`'s share of every stage; an error when a share would be nothing (more shards
/// than workers, requests or cap).
pub fn split(shard: &Shard, stages: &[StagePlan]) -> Result<Vec<StagePlan>, PlanError> {
    let part = Part(*shard);
    stages.iter().map(|sp| part.split_stage(sp)).collect()
}

/// How a shard takes its share of a stage.
struct Part(Shard);

impl Part {
    fn split_stage(&self, sp: &StagePlan) -> Result<StagePlan, PlanError> {
        let mode = match sp.mode {
            Mode::Closed { concurrency } => Mode::Closed {
                concurrency: self.part(concurrency, "--concurrency")?,
            },
            Mode::Open { rate, arrival, cap } => Mode::Open {
                rate: rate / f64::from(self.0.count),
                arrival,
                cap: cap
                    .map(|c| self.part(c, "the --concurrency cap"))
                    .transpose()?,
            },
            // A trace is cut by rows before its stage is planned (`plan::replay`): its rate and
            // requests are already this shard's; only the cap is shared here.
            Mode::Trace { rate, cap } => {
                let cap = cap
                    .map(|c| self.part(c, "the --concurrency cap"))
                    .transpose()?;
                return Ok(StagePlan {
                    mode: Mode::Trace { rate, cap },
                    ..sp.clone()
                });
            }
        };
        let phase = match sp.mode {
            // One process sends at k/r: this shard's requests are k = m·N + I.
            Mode::Open {
                rate,
                arrival: Arrival::Constant,
                ..
            } => Duration::from_secs_f64(f64::from(self.0.index) / rate),
            _ => Duration::ZERO,
        };
        let requests = sp
            .requests
            .map(|n| {
                let share = self.0.share(n);
                if share == 0 {
                    Err(self.none_left(n, "--requests"))
                } else {
                    Ok(share)
                }
            })
            .transpose()?;
        Ok(StagePlan {
            mode,
            phase,
            requests,
            ..sp.clone()
        })
    }

    fn part(&self, n: u32, what: &str) -> Result<u32, PlanError> {
        match self.0.share(u64::from(n)) {
            0 => Err(self.none_left(u64::from(n), what)),
            share => Ok(share as u32),
        }
    }

    fn none_left(&self, n: u64, what: &str) -> PlanError {
        PlanError::Usage(format!(
            "{what} {n} split over {} shards leaves shard {} nothing to send: run at most {n} shards, or raise {what}",
            self.0.count, self.0
        ))
    }
}

/// A stage as the whole load has it (before the split): what the merged report calls it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WholeStage {
    pub label: String,
    pub mode: Mode,
}

impl WholeStage {
    pub fn of(sp: &StagePlan) -> WholeStage {
        WholeStage {
            label: sp.label(),
            mode: sp.mode,
        }
    }
}

/// One stage of a shard: what the driver knew of it and its statistics, whole.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardStage {
    pub meta: StageMeta,
    pub stats: StageStats,
}

/// What a shard writes to `--out DIR` (as `shard-I-of-N.json`, beside its records).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardFile {
    /// [`FORMAT`].
    pub format: String,
    pub shard: ShardInfo,
    pub slo: Slo,
    /// The whole load's stages.
    pub whole: Vec<WholeStage>,
    /// The shard's own report, as `load --format json` printed it.
    pub report: LoadReport,
    pub stages: Vec<ShardStage>,
}

impl ShardFile {
    /// The file's name for shard `s`.
    pub fn name(s: Shard) -> String {
        format!("shard-{}-of-{}.json", s.index, s.count)
    }

    /// The name of its records file.
    pub fn records_name(s: Shard) -> String {
        format!("shard-{}-of-{}.records.jsonl", s.index, s.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(s: &str) -> Shard {
        s.parse().unwrap()
    }

    fn split(s: &str, stages: &[StagePlan]) -> Result<Vec<StagePlan>, PlanError> {
        super::split(&shard(s), stages)
    }

    fn stage(mode: Mode, requests: Option<u64>) -> StagePlan {
        StagePlan {
            mode,
            ramp_up: Duration::ZERO,
            warmup: Duration::ZERO,
            duration: Some(Duration::from_secs(10)),
            requests,
            phase: Duration::ZERO,
        }
    }

    #[test]
    fn a_trace_keeps_its_rows_and_shares_its_cap() {
        let trace = stage(
            Mode::Trace {
                rate: 3.0,
                cap: Some(4),
            },
            Some(30),
        );
        let s = split("3/4", &[trace]).unwrap();
        assert_eq!(
            s[0].mode,
            Mode::Trace {
                rate: 3.0,
                cap: Some(1)
            }
        );
        assert_eq!(s[0].requests, Some(30));
    }

    #[test]
    fn splits_each_kind_of_stage() {
        let closed = split("1/3", &[stage(Mode::Closed { concurrency: 8 }, Some(10))]).unwrap();
        assert_eq!(closed[0].mode, Mode::Closed { concurrency: 3 });
        assert_eq!(closed[0].requests, Some(3));
        let open = split(
            "1/3",
            &[stage(
                Mode::Open {
                    rate: 30.0,
                    arrival: Arrival::Constant,
                    cap: Some(9),
                },
                None,
            )],
        )
        .unwrap();
        assert_eq!(
            open[0].mode,
            Mode::Open {
                rate: 10.0,
                arrival: Arrival::Constant,
                cap: Some(3)
            }
        );
        // One process sends at 0, 1/30, 2/30 …: shard 1 takes 1/30, 4/30 …
        assert!((open[0].phase.as_secs_f64() - 1.0 / 30.0).abs() < 1e-9);
    }

    #[test]
    fn more_shards_than_workers_is_an_error() {
        let err = split("2/3", &[stage(Mode::Closed { concurrency: 2 }, None)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--concurrency 2 split over 3 shards"), "{err}");
    }
}
