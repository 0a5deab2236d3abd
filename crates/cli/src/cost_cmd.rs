//! `llmscope cost`: GPU-hours and cost per team over a window, from a Prometheus-compatible API.
//!
//! Reads Kueue reservations, `kube_namespace_labels`, dcgm utilisation and generated-token
//! counters with `query_range` (the client splits long ranges under the API's point limit), then
//! computes with `llmscope_core::cost` — every integral on the series' own timestamps.

use crate::prom_flags::PromFlags;
use anyhow::{Result, bail};
use llmscope_core::cost::{self, CostInput, CostReport};
use llmscope_render::cost_report;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CostFormat {
    Text,
    Json,
    Csv,
}

/// GPU-hours and cost per team, cost per million tokens.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  llmscope cost --prometheus http://prometheus:9090 --from -7d --to now --price nvidia-l4=0.80/h
  llmscope cost --prometheus http://prometheus:9090 --from -24h --prices prices.yaml --format csv
  llmscope cost --prometheus http://prometheus:9090 --from -1h --queue-team search-cq=search

Reserved GPUs come from kueue_local_queue_resource_reservation per namespace (LocalQueueMetrics),
else kueue_cluster_queue_resource_reservation per ClusterQueue (--queue-team maps queues to teams);
teams from kube_namespace_labels{label_<--team-label>}. A prices file is YAML: `nvidia-l4: 0.80`.
Samples no GPU can take (a negative reservation, busy time above 100 %, NaN) are left out and named.

Exit status: 0 when every input was read; 2 when one could not be (the report is still written,
partial, naming it, with what it could not count unknown — never 0), or on an error.")]
pub struct CostArgs {
    #[command(flatten)]
    pub prom: PromFlags,
    /// Start of the window (RFC3339, Unix seconds, or relative like -24h).
    #[arg(long, allow_hyphen_values = true)]
    pub from: String,
    #[arg(long, allow_hyphen_values = true, default_value = "now")]
    pub to: String,
    /// Query step (the scrape interval is right).
    #[arg(long, default_value = "15s", value_parser = crate::args::duration)]
    pub step: Duration,
    /// Price per GPU-hour of a flavor or GPU model: KEY=PRICE/h (repeatable).
    #[arg(long = "price", value_name = "KEY=PRICE/h")]
    pub prices: Vec<String>,
    /// YAML file of prices per GPU-hour (`nvidia-l4: 0.80`).
    #[arg(long = "prices", value_name = "FILE")]
    pub prices_file: Option<PathBuf>,
    /// The namespace label that names the team (kube-state-metrics exports it as label_<name>).
    #[arg(long, default_value = "team")]
    pub team_label: String,
    /// ClusterQueue → team, for the ClusterQueue fallback: QUEUE=TEAM (repeatable).
    #[arg(long = "queue-team", value_name = "QUEUE=TEAM")]
    pub queue_team: Vec<String>,
    #[arg(long, value_enum, default_value_t = CostFormat::Text)]
    pub format: CostFormat,
}

pub fn run(args: CostArgs) -> Result<ExitCode> {
    let Some(client) = args.prom.client()? else {
        bail!("llmscope cost reads Prometheus: give --prometheus URL")
    };
    let now = llmscope_collect::time::unix_now();
    let (from, to) = llmscope_ops::window::parse_window(&args.from, &args.to, now)?;
    let mut input = CostInput {
        from,
        to,
        team_label: format!("label_{}", args.team_label.trim_start_matches("label_")),
        prices: llmscope_ops::cost::prices(&args.prices, args.prices_file.as_deref())?,
        queue_team: llmscope_ops::cost::queue_teams(&args.queue_team)?,
        ..CostInput::default()
    };
    if input.prices.is_empty() {
        eprintln!("note: no --price given: GPU-hours are computed, costs are left empty");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let url = llmscope_collect::url::redact(args.prom.prometheus.as_deref().unwrap_or(""));
    let step = args.step.as_secs_f64();
    let mut warnings = rt.block_on(llmscope_ops::cost::read_inputs(
        &client, &mut input, step, &url,
    ))?;
    let mut report = cost::compute(&input);
    warnings.append(&mut report.warnings);
    report.warnings = warnings;
    write(&report, args.format)?;
    // A partial answer is written in full, then said by the exit status: a script reading
    // the figures must not take what could not be read for nothing spent.
    if !report.missing.is_empty() {
        eprintln!(
            "llmscope cost: partial answer — {} input(s) could not be read: {}",
            report.missing.len(),
            llmscope_core::safe::terminal(&report.missing.join("; "))
        );
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

fn write(r: &CostReport, format: CostFormat) -> Result<()> {
    let format = match format {
        CostFormat::Text => cost_report::Format::Text,
        CostFormat::Json => cost_report::Format::Json,
        CostFormat::Csv => cost_report::Format::Csv,
    };
    cost_report::write(r, format, &mut std::io::stdout().lock())?;
    Ok(())
}
