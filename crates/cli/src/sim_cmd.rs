//! `llmscope sim`: runs the simulated serving stack until interrupted (Ctrl-C or SIGTERM).
//!
//! The flags are `llmscope-sim`'s own options (`EngineOptions`, `Faults`, `ServeOptions`, with
//! its `clap` feature); they resolve there into a checked `SimConfig`.

use anyhow::Context;
use llmscope_sim::faults::Faults;
use llmscope_sim::fleet;
use llmscope_sim::options::{EngineOptions, ServeOptions};
use llmscope_sim::preset;
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
  llmscope sim --replicas 3 --port 0 --dcgm-port 0
  llmscope sim --replicas 2 --share-gpu --gpu-memory-utilization 0.4   # time-slicing one GPU
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
    let cfgs = args.serve.fleet(&args.engine, &args.faults)?;
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        let summary = cfgs[0].summary();
        let stop = crate::signals::on_shutdown();
        let sims = fleet::start(cfgs).await?;
        let replicas = sims.len();
        eprintln!(
            "llmscope sim: {summary}; {}{}",
            sims[0].memory_summary(),
            replica_note(replicas, args.serve.share_gpu)
        );
        let mut out = std::io::stdout().lock();
        for sim in &sims {
            sim.write_endpoints(&mut out)?;
        }
        drop(out);
        stop.cancelled().await;
        for sim in sims {
            sim.shutdown().await;
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `; N replicas (pods vllm-0…), one GPU time-sliced` — nothing for one replica.
fn replica_note(replicas: usize, share_gpu: bool) -> String {
    if replicas < 2 {
        return String::new();
    }
    let gpus = if share_gpu {
        "one GPU time-sliced"
    } else {
        "a GPU each"
    };
    format!(
        "; {replicas} replicas (pods vllm-0…vllm-{}), {gpus}",
        replicas - 1
    )
}
