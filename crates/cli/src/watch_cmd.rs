//! `llmscope watch`: parses the flags and runs `llmscope_watch::service`.

use crate::prom_flags::PromConnection;
use anyhow::{Context, Result, bail};
use llmscope_watch::WatchError;
use llmscope_watch::drift::DriftWatch;
use llmscope_watch::evaluate::{Evaluation, Settings};
use llmscope_watch::fleet::{Grouping, Shard};
use llmscope_watch::service::{self, Reporter, Service};
use llmscope_watch::state::Shown;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  llmscope watch --prometheus http://prometheus:9090 --rules alerts.yaml --dashboards vllm.json
  llmscope watch --prometheus http://mimir/prometheus --header 'X-Scope-OrgID: llm' --shard 0/3
  llmscope watch --prometheus http://127.0.0.1:9090 --once --window 30m")]
pub struct WatchArgs {
    /// Prometheus-compatible server URL, with any path prefix (Mimir: …/prometheus).
    #[arg(long, value_name = "URL")]
    prometheus: String,
    #[command(flatten)]
    conn: PromConnection,
    /// How often to evaluate the fleet.
    #[arg(long, value_parser = crate::args::duration, default_value = "60s")]
    interval: Duration,
    /// How much history each evaluation reads.
    #[arg(long, value_parser = crate::args::duration, default_value = "15m")]
    window: Duration,
    /// Resolution of the read (use the scrape interval).
    #[arg(long, value_parser = crate::args::duration, default_value = "15s")]
    step: Duration,
    /// Requests in the engine with no token generated for this long is a stall.
    #[arg(long, value_parser = crate::args::duration, default_value = "5m")]
    stall_after: Duration,
    /// Address to serve /metrics, /healthz, /readyz and the status page on. Loopback by
    /// default: listening on all interfaces is a deliberate choice (0.0.0.0:9464).
    #[arg(long, default_value = "127.0.0.1:9464")]
    listen: String,
    /// Evaluate the deployments whose key hashes to I of N (N replicas split the fleet).
    #[arg(long, value_name = "I/N", default_value = "0/1", value_parser = Shard::parse)]
    shard: Shard,
    /// Labels that tell deployments apart; `pod` stands for the pod's owner.
    #[arg(long, value_name = "LABELS", default_value = "namespace,pod", value_parser = Grouping::parse)]
    group_by: Grouping,
    /// Label matchers narrowing what is read, e.g. 'namespace=~"llm-.*"' (repeatable: union).
    #[arg(long = "match", value_name = "MATCHERS")]
    matchers: Vec<String>,
    /// The engines' --max-num-seqs, when every deployment shares one.
    #[arg(long)]
    max_num_seqs: Option<u32>,
    /// Grafana dashboards whose queries should follow the engines (for version drift).
    #[arg(long, value_name = "FILE", num_args = 1..)]
    dashboards: Vec<PathBuf>,
    /// Prometheus rule files whose expressions should follow the engines (for version drift).
    #[arg(long, value_name = "FILE", num_args = 1..)]
    rules: Vec<PathBuf>,
    /// Largest dashboard or rule file read.
    #[arg(long, default_value_t = 64 << 20)]
    max_file_size: u64,
    /// Evaluate once, print the result, and exit (1 if a deployment is stalled or drifted).
    #[arg(long)]
    once: bool,
    /// With --once: `text` or `json`.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    format: String,
}

pub fn run(args: WatchArgs) -> Result<ExitCode> {
    let svc = service(&args)?;
    let client = args.conn.client(&args.prometheus)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if args.once {
        return rt.block_on(once(&client, &svc, &args.format));
    }
    rt.block_on(async {
        let (listener, addr) = llmscope_watch::serve::bind(&args.listen).await?;
        eprintln!(
            "llmscope watch: serving http://{addr}/ (/metrics, /healthz, /readyz); every {:.0} s over the last {:.0} s of {}, shard {}",
            svc.interval.as_secs_f64(),
            svc.settings.window,
            svc.shown.prometheus,
            svc.settings.shard
        );
        service::run(client, svc, listener, Printer, stop_signal()).await
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The service configuration the flags describe; nonsense combinations are refused here.
fn service(args: &WatchArgs) -> Result<Service> {
    let (window, step, stall_after) = (
        args.window.as_secs_f64(),
        args.step.as_secs_f64(),
        args.stall_after.as_secs_f64(),
    );
    if step <= 0.0 || window < 2.0 * step {
        bail!("--window ({window:.0} s) must hold at least two --step ({step:.0} s) samples");
    }
    if stall_after >= window {
        bail!(
            "--stall-after ({stall_after:.0} s) must be shorter than --window ({window:.0} s): a stall is seen inside one window"
        );
    }
    if args.interval.is_zero() {
        bail!("--interval must be more than 0 s");
    }
    let files: Vec<PathBuf> = args.dashboards.iter().chain(&args.rules).cloned().collect();
    let drift = DriftWatch::load(&files, args.max_file_size)
        .context("reading the files to watch for drift")?;
    Ok(Service {
        settings: Settings {
            window,
            step,
            stall_after,
            matchers: args.matchers.clone(),
            grouping: args.group_by.clone(),
            shard: args.shard,
            max_num_seqs: args.max_num_seqs,
            drift,
        },
        interval: args.interval,
        shown: Shown {
            prometheus: llmscope_collect::url::redact(&args.prometheus),
            interval_s: args.interval.as_secs_f64(),
            window_s: window,
            shard: args.shard.to_string(),
            drift_files: files.len(),
        },
    })
}

async fn once(
    client: &llmscope_collect::prom::client::PromClient,
    svc: &Service,
    format: &str,
) -> Result<ExitCode> {
    let at = service::window_end(llmscope_collect::time::unix_now(), svc.settings.step);
    let e = llmscope_watch::evaluate::evaluate(client, &svc.settings, at).await?;
    let mut out = std::io::stdout().lock();
    if format == "json" {
        serde_json::to_writer_pretty(&mut out, &e)?;
        println!();
    } else {
        e.write_table(&mut out)?;
    }
    let bad = e.deployments.iter().any(|d| {
        d.stall.state == llmscope_core::diagnose::stall::StallState::Stalled || !d.drift.is_empty()
    });
    Ok(if bad {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Ctrl-C or SIGTERM (what Kubernetes sends) ends the service.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// One line per evaluation on stderr.
struct Printer;

impl Reporter for Printer {
    fn evaluated(&mut self, e: &Evaluation) {
        use std::collections::BTreeMap;
        let mut verdicts: BTreeMap<&str, usize> = BTreeMap::new();
        for d in &e.deployments {
            *verdicts.entry(d.bottleneck.as_str()).or_default() += 1;
        }
        let stalled: Vec<String> = e
            .deployments
            .iter()
            .filter(|d| d.stall.state == llmscope_core::diagnose::stall::StallState::Stalled)
            .map(|d| llmscope_core::safe::terminal(&d.key.to_string()).into_owned())
            .collect();
        let verdicts: Vec<String> = verdicts.iter().map(|(v, n)| format!("{n} {v}")).collect();
        eprintln!(
            "watch: {} deployment(s) in {:.2} s: {}{}",
            e.deployments.len(),
            e.duration_s,
            if verdicts.is_empty() {
                "none found".to_owned()
            } else {
                verdicts.join(", ")
            },
            if stalled.is_empty() {
                String::new()
            } else {
                format!("; STALLED: {}", stalled.join(", "))
            }
        );
    }

    fn failed(&mut self, e: &WatchError) {
        eprintln!(
            "watch: evaluation failed ({}): {}",
            e.kind(),
            llmscope_core::safe::terminal(&llmscope_core::safe::redact(&e.to_string()))
        );
    }
}
