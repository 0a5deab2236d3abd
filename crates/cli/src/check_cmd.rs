//! `llmscope check`: lint PromQL, Grafana dashboards and Prometheus rule files against real
//! metric inventories.
//!
//! [`CheckArgs`] → [`CheckPlan`] (inputs found, inventories validated, no I/O beyond listing
//! directories) → read sources → load inventories for the names the queries use → run the rules
//! of `llmscope-check` → report (human, JSON, SARIF) → exit 1 when findings reach `--fail-on`.

use crate::inventory_cmd::{InventoryArgs, load};
use anyhow::{Result, bail};
use llmscope_check::input::{self, Query, Source};
use llmscope_check::{FailOn, Finding, promql, report};
use llmscope_ops::inventory::InventoryPlan;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const AFTER_HELP: &str = "Examples:
  llmscope check --engine vllm@0.26 --expr 'max by (pod) (vllm:gpu_cache_usage_perc)'
  llmscope check --snapshot vllm.prom --snapshot dcgm.prom dashboards/ rules.yaml
  llmscope check --metrics-url http://127.0.0.1:8000/metrics grafana.json --format sarif
  llmscope check --prometheus http://prometheus:9090 --lookback 7d alerts.yaml

Inputs: .promql files (one expression per blank-line-separated block), Grafana dashboard .json
(panels, rows, templating; $var, ${var}, [[var]], $__rate_interval substituted), Prometheus rule
files and PrometheusRule manifests (.yaml/.yml). Directories are searched for those.

Rules: unknown-metric, renamed-metric, missing-label, rate-on-gauge, counter-without-rate,
bad-histogram-quantile, unit-mismatch, short-rate-window, exporter-attribution, parse-error.

Exit status: 0 no finding at or above --fail-on, 1 findings at or above it, 2 usage or runtime error.";

/// Lint PromQL, dashboards and rule files against real metric inventories.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
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

/// The validated work.
#[derive(Debug)]
pub struct CheckPlan {
    files: Vec<PathBuf>,
    exprs: Vec<String>,
    inventory: InventoryPlan,
    scrape_interval: Option<Duration>,
    format: String,
    fail_on: FailOn,
    max_file_bytes: u64,
}

impl CheckArgs {
    fn plan(self) -> Result<CheckPlan> {
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
        let mut files = Vec::new();
        for f in &self.files {
            let walk = input::files::walk(f)?;
            for s in &walk.skipped {
                eprintln!("note: skipped {}", llmscope_core::safe::clean(s));
            }
            files.extend(walk.files);
        }
        Ok(CheckPlan {
            files,
            exprs: self.exprs,
            inventory,
            scrape_interval: self.scrape_interval,
            format: self.format,
            fail_on: self.fail_on,
            max_file_bytes: self.max_file_size.saturating_mul(1 << 20),
        })
    }
}

pub fn run(args: CheckArgs) -> Result<ExitCode> {
    let plan = args.plan()?;
    let sources = read_sources(&plan)?;
    let names: BTreeSet<String> = sources
        .iter()
        .flat_map(|s| &s.queries)
        .flat_map(|q| promql::metric_names(&q.parsed))
        .collect();
    let mut inv = load(&plan.inventory, &names)?;
    inv.add_recorded(sources.iter().flat_map(|s| s.recorded.iter().cloned()));
    if let Some(i) = plan.scrape_interval {
        inv.set_scrape_interval(i.as_secs_f64());
    }
    let mut findings: Vec<Finding> = sources.iter().flat_map(|s| s.errors.clone()).collect();
    for s in &sources {
        findings.extend(input::check_source(s, &inv));
    }
    write(&plan, &findings, &inv.sources())?;
    Ok(
        if plan
            .fail_on
            .fails(llmscope_check::finding::severities(&findings))
        {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// Every input as a source: the `--expr`s together, then one per file.
fn read_sources(plan: &CheckPlan) -> Result<Vec<Source>> {
    let mut out = Vec::new();
    if !plan.exprs.is_empty() {
        let queries: Vec<Query> = plan.exprs.iter().map(|e| input::text::expr(e)).collect();
        out.push(Source {
            queries,
            ..Source::default()
        });
    }
    for f in &plan.files {
        let text = input::files::read_text(f, plan.max_file_bytes)?;
        out.push(input::read(&f.display().to_string(), &text));
    }
    Ok(out)
}

fn write(plan: &CheckPlan, findings: &[Finding], sources: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match plan.format.as_str() {
        "json" => report::json(&mut out, findings, sources)?,
        "sarif" => report::sarif(&mut out, findings)?,
        _ => report::human(&mut out, findings, sources)?,
    }
    Ok(())
}
