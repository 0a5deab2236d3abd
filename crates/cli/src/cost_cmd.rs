//! `llmscope cost`: GPU-hours and cost per team over a window, from a Prometheus-compatible API.
//!
//! Reads Kueue reservations, `kube_namespace_labels`, dcgm utilisation and generated-token
//! counters with `query_range` (the client splits long ranges under the API's point limit), then
//! computes with `llmscope_core::cost` — every integral on the series' own timestamps.

use crate::prom_flags::PromFlags;
use anyhow::{Context, Result, bail};
use llmscope_collect::http::FetchError;
use llmscope_collect::prom::{PromClient, PromError};
use llmscope_core::cost::{self, BusyBasis, CostInput, CostReport, Price, TeamCost};
use llmscope_core::series::Series;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

fn duration_arg(s: &str) -> Result<Duration, String> {
    llmscope_core::duration::parse_duration(s).map_err(|e| e.to_string())
}

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
teams from kube_namespace_labels{label_<--team-label>}. A prices file is YAML: `nvidia-l4: 0.80`.")]
pub struct CostArgs {
    #[command(flatten)]
    pub prom: PromFlags,
    /// Start of the window (RFC3339, Unix seconds, or relative like -24h).
    #[arg(long, allow_hyphen_values = true)]
    pub from: String,
    #[arg(long, allow_hyphen_values = true, default_value = "now")]
    pub to: String,
    /// Query step (the scrape interval is right).
    #[arg(long, default_value = "15s", value_parser = duration_arg)]
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
    let from = llmscope_collect::time::parse_time(&args.from, now)?;
    let to = llmscope_collect::time::parse_time(&args.to, now)?;
    if to <= from {
        bail!("--to must be after --from");
    }
    let mut input = CostInput {
        from,
        to,
        team_label: format!("label_{}", args.team_label.trim_start_matches("label_")),
        prices: prices(&args)?,
        queue_team: pairs(&args.queue_team, "--queue-team")?,
        ..CostInput::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let url = llmscope_collect::url::redact(args.prom.prometheus.as_deref().unwrap_or(""));
    let step = args.step.as_secs_f64();
    let mut warnings = rt.block_on(read(&client, &mut input, step, &url))?;
    let mut report = cost::compute(&input);
    warnings.append(&mut report.warnings);
    report.warnings = warnings;
    write(&report, args.format)?;
    Ok(ExitCode::SUCCESS)
}

fn prices(args: &CostArgs) -> Result<Vec<Price>> {
    let mut out: Vec<Price> = args
        .prices
        .iter()
        .map(|p| cost::parse_price(p).map_err(anyhow::Error::msg))
        .collect::<Result<_>>()?;
    if let Some(path) = &args.prices_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the prices file {}", path.display()))?;
        let map: BTreeMap<String, f64> = serde_saphyr::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "the prices file {} is not `key: price` YAML: {e}",
                path.display()
            )
        })?;
        for (k, v) in map {
            out.push(cost::parse_price(&format!("{k}={v}")).map_err(anyhow::Error::msg)?);
        }
    }
    if out.is_empty() {
        eprintln!("note: no --price given: GPU-hours are computed, costs are left empty");
    }
    Ok(out)
}

fn pairs(items: &[String], flag: &str) -> Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|i| {
            let (k, v) = i
                .split_once('=')
                .with_context(|| format!("invalid {flag} `{i}`: write QUEUE=TEAM"))?;
            Ok((k.trim().to_owned(), v.trim().to_owned()))
        })
        .collect()
}

/// Reads every input. A Prometheus that cannot be reached, or refuses us, is an error naming it
/// and the fix (issue 12, point 5: it printed a total of `-0.00`); a query the API itself
/// rejects leaves that input missing, named in the report, never zeros.
async fn read(
    client: &PromClient,
    input: &mut CostInput,
    step: f64,
    url: &str,
) -> Result<Vec<String>> {
    let (from, to) = (input.from, input.to);
    let mut warnings = Vec::new();
    let mut missing = Vec::new();
    let mut q = async |what: &str, query: &str| -> Result<Vec<Series>> {
        match client.query_range(query, from, to, step).await {
            Ok(r) => {
                warnings.extend(r.warnings);
                Ok(r.data)
            }
            Err(e @ PromError::Api { .. }) => {
                missing.push(format!("{what} (query `{query}` failed: {e})"));
                Ok(Vec::new())
            }
            Err(e) => Err(unreadable(url, &e)),
        }
    };
    let gpu = r#"resource="nvidia.com/gpu",replica_role!="follower""#;
    let local = format!("kueue_local_queue_resource_reservation{{{gpu}}}");
    input.local_queue_reservations = q("Kueue LocalQueue GPU reservations", &local).await?;
    let cluster = format!("kueue_cluster_queue_resource_reservation{{{gpu}}}");
    input.cluster_queue_reservations = q("Kueue ClusterQueue GPU reservations", &cluster).await?;
    input.namespace_labels = q("namespace teams", "kube_namespace_labels").await?;
    input.gpu_busy = q("GPU utilisation", "DCGM_FI_PROF_GR_ENGINE_ACTIVE").await?;
    if input.gpu_busy.is_empty() {
        input.gpu_busy = q("GPU utilisation", "DCGM_FI_DEV_GPU_UTIL / 100").await?;
    }
    input.generated_tokens = q("generated tokens", "vllm:generation_tokens_total").await?;
    input.missing = missing;
    Ok(warnings)
}

/// What failed, at which URL, and what to do about it.
fn unreadable(url: &str, e: &PromError) -> anyhow::Error {
    let fix = match e {
        PromError::Http {
            status: 401 | 403, ..
        } => {
            "it refused the credentials: give --bearer-token, or --basic-user and --basic-password, or the --header its proxy needs"
        }
        PromError::Fetch(FetchError::Connect(_) | FetchError::Request(_)) => {
            "check that Prometheus runs there and that --prometheus is its address (e.g. http://prometheus:9090)"
        }
        PromError::Fetch(FetchError::Timeout(_)) => {
            "it did not answer in time: check the address, or raise --query-timeout"
        }
        _ => {
            "check that --prometheus is the Prometheus API's base URL (a proxy or a wrong path answers otherwise)"
        }
    };
    anyhow::anyhow!(
        "cannot read Prometheus at {url}: {e}; {fix}. No cost is computed from missing data"
    )
}

fn write(r: &CostReport, format: CostFormat) -> Result<()> {
    let mut out = std::io::stdout().lock();
    // `+ 0.0` turns a -0.0 into 0.0: `-0.00` is never printed.
    let f = |v: Option<f64>, d: usize| v.map_or("—".to_owned(), |v| format!("{:.d$}", v + 0.0));
    let basis = |t: &TeamCost| match t.busy_basis {
        Some(BusyBasis::Workload) => "workload",
        Some(BusyBasis::Fleet) => "fleet",
        None => "",
    };
    match format {
        CostFormat::Json => {
            serde_json::to_writer_pretty(&mut out, r)?;
            writeln!(out)?;
        }
        CostFormat::Csv => {
            writeln!(
                out,
                "team,gpu_hours,busy_gpu_hours,busy_basis,idle_gpu_hours,cost,idle_cost,output_tokens,cost_per_million_tokens"
            )?;
            for t in r.teams.iter().chain([&r.totals]) {
                let c = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
                let team = if t.team.contains([',', '"']) {
                    format!("\"{}\"", t.team.replace('"', "\"\""))
                } else {
                    t.team.clone()
                };
                writeln!(
                    out,
                    "{team},{},{},{},{},{},{},{},{}",
                    t.gpu_hours,
                    c(t.busy_gpu_hours),
                    basis(t),
                    c(t.idle_gpu_hours),
                    c(t.cost),
                    c(t.idle_cost),
                    c(t.output_tokens),
                    c(t.cost_per_million_tokens)
                )?;
            }
        }
        CostFormat::Text => {
            writeln!(
                out,
                "GPU cost, {} … {}",
                llmscope_collect::time::format_rfc3339(r.from),
                llmscope_collect::time::format_rfc3339(r.to)
            )?;
            for m in &r.missing {
                writeln!(out, "partial: missing {m}")?;
            }
            if r.teams.is_empty() {
                writeln!(out, "no team held GPUs in the window (see the warnings)")?;
            }
            writeln!(
                out,
                "{:<14} {:>10} {:>10} {:>10} {:>10} {:>10} {:>12} {:>10}",
                "team",
                "GPU-h",
                "busy GPU-h",
                "idle GPU-h",
                "cost",
                "idle cost",
                "out tokens",
                "$/1M tok"
            )?;
            let totals = Some(&r.totals).filter(|_| !r.teams.is_empty());
            for t in r.teams.iter().chain(totals) {
                writeln!(
                    out,
                    "{:<14} {:>10} {:>10} {:>10} {:>10} {:>10} {:>12} {:>10}",
                    t.team,
                    f(Some(t.gpu_hours), 2),
                    // Busy hours from the fleet average, not the team's own GPUs, are marked.
                    match t.busy_basis {
                        Some(BusyBasis::Fleet) => format!("{}*", f(t.busy_gpu_hours, 2)),
                        _ => f(t.busy_gpu_hours, 2),
                    },
                    f(t.idle_gpu_hours, 2),
                    f(t.cost, 2),
                    f(t.idle_cost, 2),
                    f(t.output_tokens, 0),
                    f(t.cost_per_million_tokens, 2)
                )?;
            }
            writeln!(out, "\nWhat to do")?;
            for t in &r.teams {
                writeln!(
                    out,
                    "  {}: {}{}",
                    t.team,
                    t.advice,
                    if t.prices.is_empty() {
                        String::new()
                    } else {
                        format!(" (priced: {})", t.prices.join(", "))
                    }
                )?;
            }
            if r.teams
                .iter()
                .any(|t| t.busy_basis == Some(BusyBasis::Fleet))
            {
                writeln!(out, "  * busy from the fleet-average utilisation")?;
            }
            for w in &r.warnings {
                writeln!(out, "warning: {}", llmscope_core::safe::clean(w))?;
            }
        }
    }
    out.flush()?;
    Ok(())
}
