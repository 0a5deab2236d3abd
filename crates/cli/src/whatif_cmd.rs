//! `llmscope whatif RUN… --set FLAG=VALUE [--confirm]`: what a change buys, predicted by the
//! engine model fitted to stored runs (`llmscope_ops::whatif`); with `--confirm`, measured on
//! the simulated stack beside the prediction.

use crate::output::ReportFormat;
use anyhow::{Context, Result};
use llmscope_ops::whatif::{self, Change};
use llmscope_store::{RunId, Store};
use std::path::PathBuf;
use std::process::ExitCode;

/// Predict what a change buys, from stored runs.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  llmscope run                                         # the simulated stack: note the run id
  llmscope whatif 1 --set max-num-seqs=32              # predicted output, TTFT, ITL and the next limit
  llmscope whatif 1 --set max-num-seqs=32 --confirm    # then measured on the simulated stack
  llmscope whatif 7 --set kv-cache-memory-bytes=8388608 --format json   # 7: a capacity stage, its whole search is fitted

Exit status: 0 predicted (and, with --confirm, within the targets: output tok/s 20 %, TTFT p50 30 %,
the same limit); 1 confirmed outside a target; 2 cannot predict (what is missing is said).")]
pub struct WhatifArgs {
    /// Runs to fit the engine model to: a run, runs at different loads, or a stage of a capacity
    /// search (its whole search is taken). The first run's load is the one replayed.
    #[arg(required = true)]
    pub runs: Vec<RunId>,
    /// A change to predict: max-num-seqs=N, max-num-batched-tokens=N, kv-cache-memory-bytes=N,
    /// gpu-memory-utilization=F, replicas=N (engines time-sliced on the same GPU). Repeatable.
    #[arg(long = "set", value_name = "FLAG=VALUE")]
    pub set: Vec<String>,
    /// Make the change on the simulated stack (runs that ran there), measure, and print the
    /// measurement beside the prediction.
    #[arg(long)]
    pub confirm: bool,
    #[arg(long, default_value = "llmscope.db")]
    pub db: PathBuf,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
}

pub fn run(args: WhatifArgs) -> Result<ExitCode> {
    let changes: Vec<Change> = args
        .set
        .iter()
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    if !args.db.exists() {
        anyhow::bail!(
            "no run store at {} (run `llmscope run` or `llmscope capacity` first, or pass --db)",
            args.db.display()
        );
    }
    let (mut answer, config) = {
        let store = Store::open_for_reading(&args.db)
            .with_context(|| format!("opening the run store {}", args.db.display()))?;
        let runs = whatif::gather(&store, &args.runs)?;
        let answer = whatif::predict(&runs, &changes)?;
        (answer, store.config(args.runs[0])?)
    };
    if args.confirm {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        let client =
            llmscope_collect::HttpClient::new(None).context("setting up the HTTP client")?;
        rt.block_on(async {
            let cancel = crate::signals::cancel_on_ctrl_c(|| {}, None);
            let say = crate::run_cmd::Say("whatif");
            whatif::confirm(
                &mut answer,
                &config,
                args.db.clone(),
                &cancel,
                &client,
                &say,
            )
            .await
        })?;
    }
    whatif::write(&answer, args.format.into(), &mut std::io::stdout().lock())?;
    let missed = answer
        .confirmed
        .as_ref()
        .is_some_and(|c| c.within.iter().any(|t| !t.met));
    Ok(if missed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
