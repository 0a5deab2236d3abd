//! `whatif --confirm`: the base run made again on the simulated stack with the change applied,
//! measured and diagnosed as `run` does, and set beside the prediction with the targets it met.

use super::{Change, Confirmed, Errors, Target, WhatIf};
use crate::OpsError;
use crate::cancel::Cancel;
use crate::run::{self, Narrator, RunRequest};
use llmscope_collect::HttpClient;
use std::path::PathBuf;

/// Output tokens/s and TTFT p50 within these shares of the prediction (issue 24's targets).
pub const OUTPUT_TARGET: f64 = 0.2;
pub const TTFT_TARGET: f64 = 0.3;

/// Runs the base run of `w` again, changed, from its stored `config`, into the store at `db`;
/// fills `w.confirmed`.
pub async fn confirm(
    w: &mut WhatIf,
    config: &serde_json::Value,
    db: PathBuf,
    cancel: &Cancel,
    http: &HttpClient,
    n: &dyn Narrator,
) -> Result<(), OpsError> {
    let mut req = RunRequest::rerun(w.base.run, config, db)?;
    for c in &w.changes {
        apply(&mut req, *c)?;
    }
    n.say(&format!(
        "confirm: run {} again on the simulated stack with {}",
        w.base.run,
        w.changes
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let (plan, sim) = req.resolve(n).await?;
    let measured = async {
        run::preflight(&plan, http, n).await?;
        let load = req.prepare_load(&plan.target, n).await?;
        run::execute(&plan, &load, cancel, http, n).await
    }
    .await;
    if let Some(sim) = sim {
        sim.shutdown().await;
    }
    let o = super::observe(&measured?.analysed)?;
    let error = Errors::between(&w.predicted.figures, &o.measured);
    w.confirmed = Some(Confirmed {
        run: o.run,
        within: targets(&error),
        figures: o.measured,
        error,
    });
    Ok(())
}

/// The change on the simulated engine's flags.
fn apply(req: &mut RunRequest, c: Change) -> Result<(), OpsError> {
    let e = &mut req.engine;
    match c {
        Change::MaxNumSeqs(v) => e.max_num_seqs = Some(v),
        Change::MaxNumBatchedTokens(v) => e.max_num_batched_tokens = Some(v),
        Change::KvCacheMemoryBytes(v) => e.kv_cache_memory_bytes = Some(v),
        Change::GpuMemoryUtilization(v) => e.gpu_memory_utilization = Some(v),
        Change::Replicas(_) => {
            return Err(OpsError::Invalid(
                "--confirm runs one simulated engine: replicas sharing a GPU are predicted, not confirmed here".to_owned(),
            ));
        }
    }
    Ok(())
}

/// The targets a confirmed prediction is held to.
fn targets(e: &Errors) -> Vec<Target> {
    let within = |v: Option<f64>, share: f64| v.is_some_and(|v| v.abs() <= share);
    vec![
        Target {
            what: format!(
                "output tok/s within {:.0}% ({})",
                OUTPUT_TARGET * 100.0,
                share(e.output_tok_s)
            ),
            met: within(e.output_tok_s, OUTPUT_TARGET),
        },
        Target {
            what: format!(
                "TTFT p50 within {:.0}% ({})",
                TTFT_TARGET * 100.0,
                share(e.ttft_p50)
            ),
            met: within(e.ttft_p50, TTFT_TARGET),
        },
        Target {
            what: if e.bottleneck_agrees || !e.bottleneck_in_reach {
                "the predicted limit is the measured one".to_owned()
            } else {
                "the measured limit is one the prediction named as near".to_owned()
            },
            met: e.bottleneck_in_reach,
        },
    ]
}

/// How far the prediction was from the measurement, in words.
fn share(e: Option<f64>) -> String {
    e.map_or("not measured".to_owned(), |e| {
        format!("predicted {:+.0}% of measured", e * 100.0)
    })
}
