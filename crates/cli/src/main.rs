//! `llmscope`: the command-line shell. Parses arguments, resolves them into plans, and calls the
//! library crates. The only crate that prints, and the only one that uses `anyhow`.
#![allow(clippy::print_stdout, clippy::print_stderr)]
// Doc comments here are clap's `--help` text, where `<name>` is the placeholder users read.
#![allow(rustdoc::invalid_html_tags)]

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod args;
mod capacity_cmd;
mod check_cmd;
mod cost_cmd;
mod dashboard_cmd;
mod inventory_cmd;
mod load_cmd;
mod merge_cmd;
mod observe_cmd;
mod output;
mod prom_flags;
mod report_cmd;
mod rules_cmd;
mod run_cmd;
mod runs_cmd;
mod signals;
mod sim_cmd;
mod targets_cmd;
mod watch_cmd;
mod whatif_cmd;

/// Tells why an LLM serving deployment is slow or wasteful.
#[derive(Debug, Parser)]
#[command(name = "llmscope", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The whole method: baseline, load, observe, diagnose, report (simulated stack by default).
    Run(Box<run_cmd::RunArgs>),
    /// Find the knee: how much a deployment serves within its SLO, and what limits it there.
    Capacity(Box<capacity_cmd::CapacityArgs>),
    /// Diagnose a stored run again (its series, through the current diagnosis).
    Diagnose(report_cmd::DiagnoseArgs),
    /// Render a stored run: terminal, JSON, Markdown, HTML.
    Report(report_cmd::ReportArgs),
    /// Compare two stored runs side by side, with deltas.
    Compare(report_cmd::CompareArgs),
    /// Lint PromQL, Grafana dashboards and rule files against real metric inventories.
    Check(check_cmd::CheckArgs),
    /// List what a target exposes: families, detected engine and version, renamed names.
    Inventory(inventory_cmd::InventoryCmdArgs),
    /// Generate a Grafana dashboard for the engine version in front of you.
    Dashboard(dashboard_cmd::DashboardArgs),
    /// Generate Prometheus recording and alerting rules (or a PrometheusRule) for it.
    Rules(rules_cmd::RulesArgs),
    /// Verify collection: targets up, and every layer's values real (what to fix if not).
    Targets(targets_cmd::TargetsArgs),
    /// GPU-hours and cost per team, cost per million tokens (from Prometheus).
    Cost(cost_cmd::CostArgs),
    /// Run the simulated serving stack (vLLM-compatible server + dcgm-exporter).
    Sim(sim_cmd::SimArgs),
    /// Load an OpenAI-compatible server and report client-side latency and throughput.
    Load(load_cmd::LoadArgs),
    /// Merge the shards of a sharded load (`load --shard I/N --out DIR`) into one report.
    Merge(merge_cmd::MergeArgs),
    /// Record metrics from targets (direct scrape) or a Prometheus-compatible server.
    Observe(observe_cmd::ObserveArgs),
    /// List the runs kept in the store.
    Runs(runs_cmd::RunsArgs),
    /// Predict what a change buys (--max-num-seqs, KV pool, replicas), fitted to stored runs.
    Whatif(whatif_cmd::WhatifArgs),
    /// Diagnose every deployment a Prometheus sees, every interval; serve the verdicts as metrics.
    Watch(Box<watch_cmd::WatchArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run_cmd::run(*args),
        Command::Capacity(args) => capacity_cmd::run(*args),
        Command::Diagnose(args) => report_cmd::diagnose(args),
        Command::Report(args) => report_cmd::report(args),
        Command::Compare(args) => report_cmd::compare(args),
        Command::Check(args) => check_cmd::run(args),
        Command::Inventory(args) => inventory_cmd::run(args),
        Command::Dashboard(args) => dashboard_cmd::run(args),
        Command::Rules(args) => rules_cmd::run(args),
        Command::Targets(args) => targets_cmd::run(args),
        Command::Cost(args) => cost_cmd::run(args),
        Command::Sim(args) => sim_cmd::run(args),
        Command::Load(args) => load_cmd::run(args),
        Command::Merge(args) => merge_cmd::run(args),
        Command::Observe(args) => observe_cmd::run(args),
        Command::Runs(args) => runs_cmd::run(args),
        Command::Watch(args) => watch_cmd::run(*args),
        Command::Whatif(args) => whatif_cmd::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {}", llmscope_core::safe::clean(&format!("{err:#}")));
            ExitCode::from(2)
        }
    }
}

/// A closed stdout (e.g. `| head`) is not an error (ripgrep does the same).
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        let io = e.downcast_ref::<std::io::Error>().map(std::io::Error::kind);
        let json = e
            .downcast_ref::<serde_json::Error>()
            .and_then(serde_json::Error::io_error_kind);
        io.or(json) == Some(std::io::ErrorKind::BrokenPipe)
    })
}
