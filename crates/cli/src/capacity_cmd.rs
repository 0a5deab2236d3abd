//! `llmscope capacity`: how much a deployment serves within its SLO, where it stops scaling, and
//! what limits it there.
//!
//! Flow: [`CapacityArgs`] → the plan of `run` (`StackArgs`, `ShapeArgs`: the simulated stack
//! without `--target`) → `llmscope_ops::capacity::search` (stages, each a stored run) → the
//! answer on stdout (text or JSON), in an HTML file, and autoscaling objects in a folder.

use crate::run_cmd::{Held, Say, ShapeArgs, StackArgs};
use anyhow::{Context, Result, bail};
use llmscope_collect::HttpClient;
use llmscope_core::duration::format_duration;
use llmscope_diagnosis::capacity::{Answer, Axis, Ended};
use llmscope_loadgen::Slo;
use llmscope_ops::capacity::{self, Autoscaling, CapacityPlan, Searched};
use llmscope_ops::run;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Find the knee: the load past which a deployment stops scaling, its cause, and the goodput
/// within an SLO.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  llmscope capacity                              # the built-in simulated stack (knee at its cap, 16)
  llmscope capacity --slo ttft=500ms,e2e=20s --html capacity.html
  llmscope capacity --target http://vllm:8000 --max-num-seqs 8 --max-concurrency 32 --format json
  llmscope capacity --target http://vllm:8000 --rate --max-concurrency 40 --slo ttft=1s
  llmscope capacity --target http://vllm:8000 --slo ttft=1s --autoscaling-out k8s/ \\
      --deployment vllm-qwen --namespace llm

The search doubles the load from --start until output stops growing (a doubling adds under 5%),
goodput under --slo falls, or --max-concurrency is measured; then it bisects to the knee: the
smallest load at 95% of the peak output. Each stage is a run of its own (llmscope runs, report,
compare work on it), diagnosed like `llmscope run`. Ctrl-C keeps every finished stage.
Exit: 0; 1 when a stage's requests failed; 2 on errors.")]
pub struct CapacityArgs {
    #[command(flatten)]
    pub stack: StackArgs,
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Search the open-loop rate (whole requests per second, evenly spaced) instead of
    /// closed-loop clients.
    #[arg(long, help_heading = "Search")]
    pub rate: bool,
    /// The first load measured.
    #[arg(long, default_value_t = 1, help_heading = "Search")]
    pub start: u32,
    /// The largest load measured (clients; with --rate, requests per second).
    #[arg(
        long,
        alias = "max-rate",
        default_value_t = 256,
        help_heading = "Search"
    )]
    pub max_concurrency: u32,
    /// With --rate: the cap on requests in flight.
    #[arg(long, default_value_t = 512, help_heading = "Search")]
    pub max_in_flight: u32,
    /// Each stage's measured load time (after its warm-up).
    #[arg(long, default_value = "6s", value_parser = crate::args::duration, help_heading = "Search")]
    pub stage: Duration,
    /// Each stage's warm-up: sent but left out of the figures.
    #[arg(long, default_value = "2s", value_parser = crate::args::duration, help_heading = "Search")]
    pub warmup: Duration,
    /// Each stage's idle baseline.
    #[arg(long, default_value = "1s", value_parser = crate::args::duration, help_heading = "Search")]
    pub baseline: Duration,
    /// The whole search's time: no stage starts that would not end within it.
    #[arg(long, default_value = "5m", value_parser = crate::args::duration, help_heading = "Search")]
    pub budget: Duration,
    /// Objectives for goodput, e.g. ttft=500ms,itl=50ms,tpot=40ms,e2e=20s.
    #[arg(long, help_heading = "Search")]
    pub slo: Option<String>,
    #[command(flatten)]
    pub out: CapacityOutput,
    #[command(flatten)]
    pub autoscaling: AutoscalingArgs,
}

/// Where the answer goes.
#[derive(Debug, Clone, clap::Args)]
pub struct CapacityOutput {
    /// Run store (every stage is a run in it).
    #[arg(long, default_value = llmscope_store::DEFAULT_PATH, help_heading = "Output")]
    pub db: PathBuf,
    #[arg(long, value_enum, default_value_t = crate::args::Format::Text, help_heading = "Output")]
    pub format: crate::args::Format,
    /// Also write a self-contained HTML report here.
    #[arg(long, help_heading = "Output")]
    pub html: Option<PathBuf>,
}

/// Autoscaling objects from the measured knee.
#[derive(Debug, Clone, clap::Args)]
pub struct AutoscalingArgs {
    /// Write a KEDA ScaledObject, an HPA (external metric) and the prometheus-adapter rule that
    /// feeds it into this folder, thresholds from the measured per-replica load.
    #[arg(long, value_name = "DIR", help_heading = "Autoscaling")]
    pub autoscaling_out: Option<PathBuf>,
    /// The Deployment they scale.
    #[arg(long, default_value = "vllm", help_heading = "Autoscaling")]
    pub deployment: String,
    #[arg(long, help_heading = "Autoscaling")]
    pub namespace: Option<String>,
    #[arg(long, default_value_t = 1, help_heading = "Autoscaling")]
    pub min_replicas: u32,
    #[arg(long, default_value_t = 10, help_heading = "Autoscaling")]
    pub max_replicas: u32,
    /// The Prometheus KEDA queries [default: --prometheus, else the in-cluster
    /// `http://prometheus-operated.monitoring.svc:9090`].
    #[arg(long, value_name = "URL", help_heading = "Autoscaling")]
    pub scaler_prometheus: Option<String>,
}

pub fn run(args: CapacityArgs) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(capacity_async(args))
}

async fn capacity_async(mut args: CapacityArgs) -> Result<ExitCode> {
    args.check()?;
    let cap = args.plan()?;
    if args.stack.target.is_none() && args.stack.dcgm_interval.is_none() {
        // Short stages: the simulated dcgm-exporter collects every second, so each stage's tail
        // after the drain is two seconds, not ten.
        args.stack.dcgm_interval = Some(Duration::from_secs(1));
    }
    let held = Held {
        concurrency: args
            .max_concurrency
            .max(args.max_in_flight.saturating_mul(u32::from(args.rate))),
        rate: None,
        duration: args.warmup + args.stage,
        baseline: args.baseline,
        // Short answers: a stage drains in seconds, so a search fits its budget.
        max_tokens: 64,
    };
    let request = args.stack.request(&args.shape, held, &args.out.db)?;
    let say = Say("capacity");
    let (mut plan, sim) = request.resolve(&say).await?;
    if let (true, Some(dcgm)) = (plan.simulated, args.stack.dcgm_interval) {
        // The simulated dcgm lags by one collect interval: two show the fall.
        plan.after = plan.after.min(dcgm * 2);
    }
    let client = HttpClient::new(None).context("setting up the HTTP client")?;
    run::preflight(&plan, &client, &say).await?;
    let load = request.prepare_load(&plan.target, &say).await?;
    let cancel = crate::signals::cancel_on_ctrl_c(said_stopping, Some(exit_at_once));
    let searched = capacity::search(&plan, &load, &cap, &cancel, &client, &say).await;
    if let Some(sim) = sim {
        sim.shutdown().await;
    }
    args.finish(&searched?)
}

impl CapacityArgs {
    /// Refuses, before any stage, outputs that would overwrite the store or a database.
    fn check(&self) -> Result<()> {
        if let Some(html) = &self.out.html {
            llmscope_store::guard::refuse_database(html)?;
            if html == &self.out.db {
                bail!(
                    "refusing to write {}: it is the run store given by --db; choose another --html path",
                    html.display()
                );
            }
        }
        if self.start == 0 || self.start > self.max_concurrency {
            bail!(
                "--start {} must be at least 1 and at most --max-concurrency {}",
                self.start,
                self.max_concurrency
            );
        }
        if self.stage.is_zero() {
            bail!("--stage 0s measures nothing: give each stage a few seconds (e.g. --stage 6s)");
        }
        if self.rate && self.autoscaling.autoscaling_out.is_some() {
            bail!(
                "--autoscaling-out scales on requests in flight per replica, which a rate search does not measure: drop --rate (or --autoscaling-out)"
            );
        }
        if self.autoscaling.min_replicas > self.autoscaling.max_replicas {
            bail!("--min-replicas is above --max-replicas");
        }
        if self.warmup + self.stage > self.budget {
            bail!(
                "--stage {} (after --warmup {}) is longer than the whole --budget {}: no stage would end inside it; shorten --stage or raise --budget",
                format_duration(self.stage),
                format_duration(self.warmup),
                format_duration(self.budget)
            );
        }
        if let Some(dir) = &self.autoscaling.autoscaling_out {
            capacity::check_autoscaling(&self.autoscaling_opts(), dir)?;
        }
        Ok(())
    }

    /// The search as `llmscope_ops::capacity` takes it.
    fn plan(&self) -> Result<CapacityPlan> {
        let slo = match &self.slo {
            Some(text) => text
                .parse::<Slo>()
                .map_err(|e| anyhow::anyhow!("--slo {text}: {e}"))?,
            None => Slo::default(),
        };
        Ok(CapacityPlan {
            axis: if self.rate {
                Axis::Rate
            } else {
                Axis::Concurrency
            },
            start: self.start,
            max: self.max_concurrency,
            in_flight_cap: self.max_in_flight,
            stage: self.stage,
            warmup: self.warmup,
            baseline: self.baseline,
            budget: self.budget,
            slo,
            slo_text: self.slo.clone(),
        })
    }

    /// The answer on stdout, then the HTML file and the autoscaling objects (a write that fails
    /// never loses the answer of a search that took minutes); the exit code.
    fn finish(&self, s: &Searched) -> Result<ExitCode> {
        let a = &s.answer;
        {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            match self.out.format {
                crate::args::Format::Json => {
                    serde_json::to_writer_pretty(&mut out, a)?;
                    writeln!(out)?;
                }
                crate::args::Format::Text => {
                    llmscope_render::capacity::text(a, &mut out, stdout.is_terminal())?;
                }
            }
            out.flush()?;
        }
        let title = format!("llmscope capacity (runs {})", runs(a));
        if let Some(path) = &self.out.html {
            capacity::write_html(a, &title, path)?;
            eprintln!(
                "llmscope capacity: HTML report written to {}",
                path.display()
            );
        }
        if let Some(dir) = &self.autoscaling.autoscaling_out {
            for path in capacity::write_autoscaling(s, &self.autoscaling_opts(), dir)? {
                eprintln!("llmscope capacity: wrote {}", path.display());
            }
        }
        Ok(match a.ended {
            Ended::Failing { .. } => ExitCode::from(1),
            _ => ExitCode::SUCCESS,
        })
    }

    /// What the autoscaling objects scale and read, from the flags.
    fn autoscaling_opts(&self) -> Autoscaling {
        let a = &self.autoscaling;
        Autoscaling {
            deployment: a.deployment.clone(),
            namespace: a.namespace.clone(),
            prometheus: a
                .scaler_prometheus
                .clone()
                .or_else(|| self.stack.prom.prometheus.clone())
                .unwrap_or_else(|| "http://prometheus-operated.monitoring.svc:9090".to_owned()),
            matchers: self.stack.matchers.clone(),
            min_replicas: a.min_replicas,
            max_replicas: a.max_replicas,
        }
    }
}

/// `3–11`: the stored runs of the stages.
fn runs(a: &Answer) -> String {
    match (a.run_ids.first(), a.run_ids.last()) {
        (Some(f), Some(l)) if f != l => format!("{f}–{l}"),
        (Some(f), _) => f.to_string(),
        _ => "none".to_owned(),
    }
}

fn said_stopping() {
    eprintln!(
        "llmscope capacity: Ctrl-C: stopping; the stage under way drains and is stored as interrupted, every finished stage is kept (Ctrl-C again to exit at once)"
    );
}

fn exit_at_once() {
    eprintln!(
        "llmscope capacity: second Ctrl-C: exiting now; the stage under way reads back as interrupted"
    );
    std::process::exit(130);
}
