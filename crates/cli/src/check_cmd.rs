//! `llmscope check`: lint PromQL, Grafana dashboards and Prometheus rule files against real
//! metric inventories.
//!
//! [`CheckArgs`] → `llmscope_ops::check::CheckPlan` (inputs found, inventories validated, no
//! I/O beyond listing directories) → `llmscope_ops::check::run` (sources read, inventories
//! loaded for the names the queries use, the rules run) → report (human, JSON, SARIF) → exit 1
//! when findings reach `--fail-on`.

use crate::inventory_cmd::InventoryArgs;
use anyhow::{Result, bail};
use llmscope_check::{FailOn, finding, input, report};
use llmscope_ops::check::{self, CheckPlan};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const EXAMPLES: &str = "Examples:
  llmscope check --engine vllm@0.26 --expr 'max by (pod) (vllm:gpu_cache_usage_perc)'
  llmscope check --snapshot vllm.prom --snapshot dcgm.prom dashboards/ rules.yaml
  llmscope check --metrics-url http://127.0.0.1:8000/metrics grafana.json --format sarif
  llmscope check --prometheus http://prometheus:9090 --lookback 7d alerts.yaml

Inputs: .promql files (one expression per blank-line-separated block), Grafana dashboard .json
(panels, rows, templating; $var, ${var}, [[var]], $__rate_interval substituted), Prometheus rule
files and PrometheusRule manifests (.yaml/.yml). Directories are searched for those.";

const EXIT_STATUS: &str = "Exit status: 0 no finding at or above --fail-on, 1 findings at or above it, 2 usage or runtime error.";

/// The help's epilogue: examples, inputs, every rule the linter has (from its registry, so the
/// list cannot fall behind), exit status.
fn after_help() -> String {
    let rules = finding::Rule::ALL
        .iter()
        .map(|r| format!("  {:<26} {}", r.id(), r.summary()))
        .collect::<Vec<_>>()
        .join("\n");
    format!("{EXAMPLES}\n\nRules:\n{rules}\n\n{EXIT_STATUS}")
}

/// Lint PromQL, dashboards and rule files against real metric inventories.
#[derive(Debug, clap::Args)]
#[command(after_help = after_help())]
pub struct CheckArgs {
    /// Files or directories: .promql, dashboard .json, rule .yaml/.yml.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// A PromQL expression (repeatable).
    #[arg(long = "expr", value_name = "PROMQL")]
    exprs: Vec<String>,
    #[command(flatten)]
    inventory: InventoryArgs,
    /// Scrape interval of the series, when the inventories cannot tell (for short-rate-window).
    #[arg(long, value_parser = crate::args::duration)]
    scrape_interval: Option<Duration>,
    /// Output format.
    #[arg(long, default_value = "human", value_parser = ["human", "json", "sarif"])]
    format: String,
    /// Exit 1 when a finding reaches this severity: error, warning, info or never.
    #[arg(long, default_value = "error", value_parser = crate::args::fail_on)]
    fail_on: FailOn,
    /// The largest input file read, in MiB (only regular files are read).
    #[arg(long, value_name = "MIB", default_value_t = input::files::DEFAULT_MAX_BYTES >> 20)]
    max_file_size: u64,
}

/// The validated work, and how to report it.
#[derive(Debug)]
struct Plan {
    check: CheckPlan,
    format: String,
    fail_on: FailOn,
}

impl CheckArgs {
    fn plan(self) -> Result<Plan> {
        if self.files.is_empty() && self.exprs.is_empty() {
            bail!(
                "nothing to check: give --expr PROMQL or files (.promql, dashboard .json, rules .yaml)"
            );
        }
        let inventory = self.inventory.plan()?;
        if inventory.sources.is_empty() {
            bail!(
                "no inventory to check against: give --snapshot FILE, --metrics-url URL, --prometheus URL or --engine NAME@VERSION (e.g. --engine vllm@0.26)"
            );
        }
        let (files, skipped) = check::find_files(&self.files)?;
        for s in &skipped {
            eprintln!("note: skipped {}", llmscope_core::safe::clean(s));
        }
        Ok(Plan {
            check: CheckPlan {
                files,
                exprs: self.exprs,
                inventory,
                scrape_interval: self.scrape_interval,
                max_file_bytes: self.max_file_size.saturating_mul(1 << 20),
            },
            format: self.format,
            fail_on: self.fail_on,
        })
    }
}

pub fn run(args: CheckArgs) -> Result<ExitCode> {
    let plan = args.plan()?;
    let checked = crate::args::block_on(check::run(&plan.check))??;
    crate::inventory_cmd::warn(&checked.warnings);
    let (findings, sources) = (&checked.findings, checked.inventories.as_str());
    let mut out = std::io::stdout().lock();
    match plan.format.as_str() {
        "json" => report::json(&mut out, findings, sources)?,
        "sarif" => report::sarif(&mut out, findings)?,
        _ => report::human(&mut out, findings, sources)?,
    }
    let fails = plan.fail_on.fails(finding::severities(findings));
    Ok(if fails {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
