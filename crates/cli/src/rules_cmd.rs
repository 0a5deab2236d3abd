//! `llmscope rules`: a Prometheus rule file (or a `PrometheusRule` manifest with `--crd`) right
//! for the engine version in front of it: recording rules, the alerts of the method, and
//! `absent()` guards for every series the dashboard and rules read.
//!
//! [`RulesArgs`] → the shared [`StackArgs`] → `llmscope-generate` → YAML on stdout or `--output`.

use crate::dashboard_cmd::{StackArgs, emit, resolve_stack};
use anyhow::Result;
use llmscope_generate::promrules::{CrdOptions, PrometheusRule};
use llmscope_generate::rules::{self, RulesOptions};
use llmscope_generate::{Signals, output};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const AFTER_HELP: &str = "Examples:
  llmscope rules --engine vllm@0.26 > rules.yaml && promtool check rules rules.yaml
  llmscope rules --engine vllm@0.26 --crd --release kube-prometheus-stack --namespace monitoring
  llmscope rules --metrics-url http://vllm:8000/metrics --metrics-url http://dcgm:9400/metrics --slo-ttft 1s
  llmscope rules --watch --crd --release kube-prometheus-stack --namespace monitoring --name llmscope-watch

Alerts: VllmKvCacheHigh (KV >= 0.85 for 5m), VllmKvCacheCritical (>= 0.95), VllmRequestsWaiting
(waiting > 0 for 5m), VllmBatchLimit (waiting while KV < 0.5 and GPU util < 50%),
VllmTtftSloBreach (TTFT p95 > --slo-ttft), VllmPreemptions, VllmNoProgress (requests running or
waiting while no token is generated and no engine step runs: alive but not serving),
VllmQueueTimeHigh (queue-time p95 > --queue-time), DcgmValuesNotReal, KueueAdmissionStalled
(with --scheduler: workloads queued, none admitted in 15m), and LlmscopeSeriesAbsent for every
series read (a rename is noticed the day it happens).
--watch prints the alerts on llmscope watch's own metrics instead, for where watch runs:
LlmscopeDeploymentStalled, LlmscopeDeploymentBottlenecked (kv_cache_capacity, batch_limit or
gpu_compute for 30m), LlmscopeWatchStale (no evaluation in 3 intervals), LlmscopeWatchAbsent,
LlmscopeWatchQueryErrors. They are a separate file because they name series that exist only
where watch runs.
kube-prometheus-stack only loads PrometheusRules carrying its `release` label: pass --release.
With --engine, --gpu defaults to dcgm-exporter@4.5; --scheduler adds absence guards for Kueue.";

/// Generate Prometheus recording and alerting rules for the engine version in front of you.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct RulesArgs {
    #[command(flatten)]
    stack: StackArgs,
    /// TTFT p95 objective for VllmTtftSloBreach.
    #[arg(long, value_parser = crate::args::duration, default_value = "2s")]
    slo_ttft: Duration,
    /// Queue-time p95 above which VllmQueueTimeHigh fires.
    #[arg(long, value_parser = crate::args::duration, default_value = "5s")]
    queue_time: Duration,
    /// The alerts on `llmscope watch`'s own metrics instead (stalled or bottlenecked
    /// deployments, stale or failing evaluations); they need no engine version.
    #[arg(long, conflicts_with_all = WATCH_CONFLICTS)]
    watch: bool,
    /// Print a PrometheusRule manifest (Prometheus Operator) instead of a rule file.
    #[arg(long)]
    crd: bool,
    /// The `release` label kube-prometheus-stack selects rules by (--crd).
    #[arg(long)]
    release: Option<String>,
    /// Manifest name (--crd).
    #[arg(long, default_value = "llmscope-vllm")]
    name: String,
    /// Manifest namespace (--crd).
    #[arg(long)]
    namespace: Option<String>,
    /// Write here instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

/// The engine flags `--watch` has no use for: watch's alerts read watch's own metrics.
pub const WATCH_CONFLICTS: [&str; 6] = [
    "metrics_urls",
    "prometheus",
    "snapshots",
    "engines",
    "gpu",
    "scheduler",
];

pub fn run(args: RulesArgs) -> Result<ExitCode> {
    let file = if args.watch {
        llmscope_generate::watch::rules()
    } else {
        let stack = resolve_stack(&args.stack, None)?;
        let signals = Signals::resolve(&stack)?;
        let opts = RulesOptions {
            slo_ttft_s: args.slo_ttft.as_secs_f64(),
            queue_time_s: args.queue_time.as_secs_f64(),
        };
        rules::build(&stack, &signals, &opts)
    };
    let text = if args.crd {
        let crd = CrdOptions {
            name: args.name,
            namespace: args.namespace,
            release: args.release,
        };
        output::yaml(&PrometheusRule::wrap(file, &crd))?
    } else {
        output::yaml(&file)?
    };
    emit(args.output.as_ref(), &text)?;
    Ok(ExitCode::SUCCESS)
}
