//! `llmscope dashboard`: a Grafana dashboard right for the engine version in front of it, and
//! the source flags `rules` shares.
//!
//! [`StackArgs`] (`--engine`, `--gpu`, `--scheduler`, or a live `--metrics-url`/`--prometheus`
//! whose names are detected) → [`resolve_stack`] (`llmscope_ops::stack`) → `llmscope-generate` builds the model from the
//! catalog → JSON (or a Grafana-sidecar `ConfigMap`) on stdout or `--output`.

use crate::inventory_cmd::InventoryArgs;
use anyhow::{Context, Result};
use llmscope_generate::dashboard::{self, ConfigMap, DashboardOptions};
use llmscope_generate::{Signals, Stack, output};
use llmscope_ops::stack::Layers;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = "Examples:
  llmscope dashboard --engine vllm@0.26 > vllm.json
  llmscope dashboard --engine vllm@0.10 --gpu dcgm-exporter@4.5 --scheduler none
  llmscope dashboard --metrics-url http://vllm:8000/metrics --metrics-url http://dcgm:9400/metrics
  llmscope dashboard --prometheus http://prometheus:9090 --format configmap --namespace monitoring
  llmscope dashboard --watch > fleet.json      # the fleet of llmscope watch

Names and labels come from the metric catalog for the engine version: given by --engine, or
detected from what --metrics-url / --prometheus really expose (then only exposed names are used).
With --engine, --gpu defaults to dcgm-exporter@4.5 and --scheduler to kueue@0.19; `none` drops
the GPU or Scheduling row.";

/// What the artefacts are generated for.
#[derive(Debug, Clone, clap::Args)]
pub struct StackArgs {
    #[command(flatten)]
    pub inventory: InventoryArgs,
    /// The GPU exporter and version (dcgm-exporter@4.5), or `none`.
    #[arg(long, value_name = "NAME@VERSION")]
    pub gpu: Option<String>,
    /// The scheduler and version (kueue@0.19), or `none`.
    #[arg(long, value_name = "NAME@VERSION")]
    pub scheduler: Option<String>,
}

/// Generate a Grafana dashboard for the engine version in front of you.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct DashboardArgs {
    #[command(flatten)]
    stack: StackArgs,
    /// The fleet dashboard of `llmscope watch` instead: verdicts over time per deployment, the
    /// stall flag, confidence, headroom and watch's health; it needs no engine version.
    #[arg(long, conflicts_with_all = crate::rules_cmd::WATCH_CONFLICTS)]
    watch: bool,
    /// grafana-json (an importable classic dashboard) or configmap (for the Grafana sidecar).
    #[arg(long, default_value = "grafana-json", value_parser = ["grafana-json", "json", "configmap"])]
    format: String,
    /// Dashboard title (default: "LLM serving: <engine> (llmscope)").
    #[arg(long)]
    title: Option<String>,
    /// Dashboard uid (default: llmscope-<engine>-<version>).
    #[arg(long)]
    uid: Option<String>,
    /// ConfigMap name (--format configmap).
    #[arg(long, default_value = "llmscope-vllm")]
    name: String,
    /// ConfigMap namespace (--format configmap).
    #[arg(long)]
    namespace: Option<String>,
    /// Write here instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

pub fn run(args: DashboardArgs) -> Result<ExitCode> {
    let opts = DashboardOptions {
        title: args.title,
        uid: args.uid,
    };
    let board = if args.watch {
        llmscope_generate::watch::dashboard(&opts)
    } else {
        let stack = resolve_stack(&args.stack, Some("kueue@0.19"))?;
        dashboard::build(&stack, &Signals::resolve(&stack)?, &opts)
    };
    let json = output::json(&board)?;
    let text = match args.format.as_str() {
        "configmap" => output::yaml(&ConfigMap::wrap(&args.name, args.namespace, json))?,
        _ => json,
    };
    emit(args.output.as_ref(), &text)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` to `path`, or to stdout.
pub fn emit(path: Option<&PathBuf>, text: &str) -> Result<()> {
    match path {
        Some(p) => {
            llmscope_store::guard::refuse_database(p)?;
            std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))
        }
        None => Ok(std::io::stdout().lock().write_all(text.as_bytes())?),
    }
}

/// The stack from the flags (`llmscope_ops::stack::resolve_stack`).
pub fn resolve_stack(args: &StackArgs, default_scheduler: Option<&str>) -> Result<Stack> {
    let layers = Layers {
        gpu: args.gpu.as_deref(),
        scheduler: args.scheduler.as_deref(),
        default_scheduler,
    };
    let plan = args.inventory.plan()?;
    let resolved = crate::args::block_on(llmscope_ops::stack::resolve_stack(&plan, layers))??;
    for n in &resolved.notes {
        eprintln!("{n}");
    }
    Ok(resolved.stack)
}
