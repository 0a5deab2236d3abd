//! `llmscope sim`: runs the simulated serving stack until interrupted (Ctrl-C or SIGTERM).
//!
//! The flags are `llmscope-sim`'s own options (`EngineOptions`, `Faults`, `ServeOptions`, with
//! its `clap` feature); they resolve there into a checked `SimConfig`.

use anyhow::Context;
use llmscope_sim::faults::Faults;
use llmscope_sim::options::{EngineOptions, ServeOptions};
use llmscope_sim::preset;
use llmscope_sim::serve;
use std::io::Write;
use std::process::ExitCode;

/// Run the simulated serving stack: a vLLM-compatible server and a dcgm-exporter.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  llmscope sim
  llmscope sim --preset l4-qwen2.5-3b --port 18000 --dcgm-port 19400 --dcgm-interval 5s --seed 1
  llmscope sim --port 0 --dcgm-port 0 --max-num-seqs 64 --metrics-dialect 0.10
  llmscope sim --fault-500 0.01 --fault-disconnect 0.02
  llmscope sim --teams example          # + Kueue and kube-state-metrics pages for three teams
  llmscope sim --list-presets")]
pub struct SimArgs {
    #[command(flatten)]
    pub engine: EngineOptions,
    #[command(flatten)]
    pub faults: Faults,
    #[command(flatten)]
    pub serve: ServeOptions,
    /// List the presets and exit.
    #[arg(long)]
    pub list_presets: bool,
}

pub fn run(args: SimArgs) -> anyhow::Result<ExitCode> {
    if args.list_presets {
        let mut out = std::io::stdout().lock();
        for p in preset::presets() {
            writeln!(out, "{:<18} {}", p.name, p.summary)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let cfg = args.serve.config(&args.engine, &args.faults)?;
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        let summary = cfg.summary();
        let stop = crate::signals::on_shutdown();
        let sim = serve::start(cfg).await?;
        eprintln!("llmscope sim: {summary}; {}", sim.memory_summary());
        sim.write_endpoints(&mut std::io::stdout().lock())?;
        stop.cancelled().await;
        sim.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}
