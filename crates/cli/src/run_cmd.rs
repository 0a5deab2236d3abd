//! `llmscope run`: the method of `docs/METHOD.md` — pre-flight, idle baseline, sustained load while
//! observing, drain, then diagnose, store and report.
//!
//! Flow: [`RunArgs`] → `llmscope_ops::run::RunRequest` → its plan (targets resolved; with no
//! `--target` the simulated stack is started in-process) → `llmscope_ops::run::execute` (scrape,
//! baseline, load, drain, diagnose, record) → reports.

use crate::output::ReportOutput;
use crate::prom_flags::PromFlags;
use anyhow::{Context, Result};
use llmscope_collect::HttpClient;
use llmscope_loadgen::TokenSpec;
use llmscope_loadgen::flags::TraceFlags;
use llmscope_ops::run::{self, RunRequest, Workload};
use llmscope_sim::options::EngineOptions;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// Run the whole method: baseline, load, observe, diagnose, report.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  llmscope run                                   # the built-in simulated L4 + Qwen2.5-3B stack
  llmscope run --max-num-seqs 64 --html run.html
  llmscope run --format json
  llmscope run --target http://vllm:8000 --gpu-metrics http://node:9400/metrics --max-num-seqs 16
  llmscope run --target http://vllm:8000 --prometheus http://prometheus:9090 \\
      --match 'namespace=\"llm\"' --interval 15s --duration 5m --max-num-seqs 16

With no --target, llmscope starts its simulated stack in-process (preset and engine flags apply
to it). Against a real server, pass --max-num-seqs (what the server runs with) so the batch-limit
check can compare the plateau with it. With --prometheus, nothing is scraped directly: after the
load the window is read from Prometheus (step = --interval, so give its scrape interval).
Exit: 0, or 1 when a finding reaches --fail-on or the load stopped early because no request
succeeded; 2 on errors.")]
pub struct RunArgs {
    #[command(flatten)]
    pub stack: StackArgs,
    /// Closed-loop workers (each sends its next request when the last one ends).
    #[arg(long, default_value_t = 32, help_heading = "Load")]
    pub concurrency: u32,
    /// Open-loop requests per second instead (concurrency then caps in-flight requests).
    #[arg(long, help_heading = "Load")]
    pub rate: Option<f64>,
    /// How long the load runs.
    #[arg(long, default_value = "45s", value_parser = crate::args::duration, help_heading = "Load")]
    pub duration: Duration,
    /// Idle baseline before the load.
    #[arg(long, default_value = "10s", value_parser = crate::args::duration, help_heading = "Load")]
    pub baseline: Duration,
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// A trace replayed instead of the prompt: --concurrency caps requests in flight and
    /// --duration cuts the replay.
    #[command(flatten)]
    pub replay: TraceFlags,
    #[command(flatten)]
    pub out: ReportOutput,
}

/// Where the load goes and where the metrics come from: a target and its pages (or Prometheus),
/// or the simulated stack; shared by `run` and `capacity`.
#[derive(Debug, Clone, clap::Args)]
pub struct StackArgs {
    /// Base URL of an OpenAI-compatible server; without it the simulated stack is started.
    #[arg(long)]
    pub target: Option<String>,
    /// The engine's metrics URL [default: TARGET/metrics].
    #[arg(long)]
    pub metrics_url: Option<String>,
    /// GPU metrics (dcgm-exporter) URL; repeatable.
    #[arg(long = "gpu-metrics")]
    pub gpu_metrics: Vec<String>,
    /// With --prometheus: label matchers for the deployment under test, e.g.
    /// 'namespace="llm",pod=~"vllm-.*"' (repeatable; read as a union).
    #[arg(long = "match", value_name = "MATCHERS", help_heading = "Prometheus")]
    pub matchers: Vec<String>,
    #[command(flatten)]
    pub prom: PromFlags,
    #[command(flatten)]
    pub engine: EngineOptions,
    /// Scrape interval of the metrics targets (with --prometheus: the query step).
    #[arg(long, default_value = "1s", value_parser = crate::args::duration, help_heading = "Observe")]
    pub interval: Duration,
    /// dcgm-exporter's collect interval: the simulated one's [default: 5s, scaled down from the
    /// real 30 s; `capacity`: 1s], or the real one's, so the run observes long enough after the
    /// load for GPU values to fall [default: 30s].
    #[arg(long, value_parser = crate::args::duration, help_heading = "Observe")]
    pub dcgm_interval: Option<Duration>,
    /// Longest wait for the server to go idle after the load.
    #[arg(long, default_value = "60s", value_parser = crate::args::duration, help_heading = "Observe")]
    pub drain_timeout: Duration,
}

/// What each request is: its prompt, its answer's length, the model; shared by `run` and
/// `capacity`.
#[derive(Debug, Clone, clap::Args)]
pub struct ShapeArgs {
    /// Prompt text [default: the reference Korean prompt].
    #[arg(long, help_heading = "Load")]
    pub prompt: Option<String>,
    /// Synthetic prompts of N[±sd] tokens instead of --prompt.
    #[arg(long, help_heading = "Load")]
    pub input_tokens: Option<TokenSpec>,
    /// Exactly M output tokens (sends max_tokens and ignore_eos).
    #[arg(long, help_heading = "Load")]
    pub output_tokens: Option<u32>,
    /// max_tokens of each request [default: run 512, capacity 64].
    #[arg(long, help_heading = "Load")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature of every request, 0 = greedy [default: the server's].
    #[arg(long, value_name = "T", value_parser = llmscope_loadgen::flags::temperature, help_heading = "Load")]
    pub temperature: Option<f64>,
    /// Model name [default: the first in /v1/models].
    #[arg(long, help_heading = "Load")]
    pub model: Option<String>,
    /// API key (sent as a bearer token; never printed or stored).
    #[arg(
        long,
        env = "OPENAI_API_KEY",
        hide_env_values = true,
        help_heading = "Load"
    )]
    pub api_key: Option<String>,
    /// A shared system prompt of N tokens before every prompt (what a prefix cache reuses).
    #[arg(long, value_name = "N", help_heading = "Workload")]
    pub shared_prefix: Option<u32>,
    /// How many different shared prefixes (requests, or sessions, take them in turn).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        requires = "shared_prefix",
        help_heading = "Workload"
    )]
    pub prefix_groups: u32,
    /// Multi-turn sessions of K turns, each sending the conversation so far; sessions in flight
    /// = --concurrency.
    #[arg(long, value_name = "K", help_heading = "Workload")]
    pub turns: Option<u32>,
    /// Pause between a session's answer and its next turn.
    #[arg(long, default_value = "0s", value_parser = crate::args::duration, requires = "turns", help_heading = "Workload")]
    pub think_time: Duration,
}

impl ShapeArgs {
    fn workload(&self) -> Workload {
        Workload {
            shared_prefix: self.shared_prefix,
            prefix_groups: self.prefix_groups,
            turns: self.turns,
            think_time: self.think_time,
            trace: None,
            temperature: self.temperature,
        }
    }
}

/// The load of one run as `run` and each capacity stage hold it.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    pub concurrency: u32,
    pub rate: Option<f64>,
    pub duration: Duration,
    pub baseline: Duration,
    /// The command's max_tokens when `--max-tokens` is not given.
    pub max_tokens: u32,
}

impl StackArgs {
    /// The flags as `llmscope_ops::run` takes them.
    pub fn request(&self, shape: &ShapeArgs, held: Held, db: &Path) -> Result<RunRequest> {
        let prometheus = match self.prom.client()? {
            Some(client) => {
                let url =
                    llmscope_collect::url::redact(self.prom.prometheus.as_deref().unwrap_or(""));
                Some((client, url))
            }
            None => None,
        };
        Ok(RunRequest {
            target: self.target.clone(),
            metrics_url: self.metrics_url.clone(),
            gpu_metrics: self.gpu_metrics.clone(),
            matchers: self.matchers.clone(),
            prometheus,
            engine: self.engine.clone(),
            concurrency: held.concurrency,
            rate: held.rate,
            duration: held.duration,
            baseline: held.baseline,
            prompt: shape.prompt.clone(),
            input_tokens: shape.input_tokens,
            output_tokens: shape.output_tokens,
            max_tokens: shape.max_tokens.unwrap_or(held.max_tokens),
            model: shape.model.clone(),
            api_key: shape.api_key.clone(),
            interval: self.interval,
            dcgm_interval: self.dcgm_interval,
            drain_timeout: self.drain_timeout,
            db: db.to_path_buf(),
            workload: shape.workload(),
        })
    }
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(run_async(args))
}

async fn run_async(args: RunArgs) -> Result<ExitCode> {
    args.out.check()?;
    let request = args.request()?;
    let (plan, sim) = request.resolve(&Say("run")).await?;
    let client = HttpClient::new(None).context("setting up the HTTP client")?;
    run::preflight(&plan, &client, &Say("run")).await?;
    let load_plan = request.prepare_load(&plan.target, &Say("run")).await?;
    let cancel = crate::signals::cancel_on_ctrl_c(said_stopping, Some(exit_at_once));
    let outcome = run::execute(&plan, &load_plan, &cancel, &client, &Say("run")).await;
    if let Some(sim) = sim {
        sim.shutdown().await;
    }
    if let Err(llmscope_ops::OpsError::StoreStopped(stopped)) = &outcome
        && let Some(report) = &stopped.report
    {
        show_load_report(report, args.out.format)?;
    }
    let outcome = outcome?;
    let run = outcome.analysed.run;
    let code = args
        .out
        .finish(&outcome.analysed, &format!("llmscope run {run}"))?;
    match &outcome.stopped_early {
        Some(why) => {
            say(&format!("the load stopped early: {why}"));
            Ok(ExitCode::from(1))
        }
        None => Ok(code),
    }
}

/// What the client measured, on stdout, where the store could not keep it (issue 31, point 4).
fn show_load_report(
    report: &llmscope_loadgen::LoadReport,
    format: crate::output::ReportFormat,
) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match format {
        crate::output::ReportFormat::Json => {
            serde_json::to_writer_pretty(&mut out, report)?;
            writeln!(out)?;
        }
        _ => llmscope_loadgen::text::write_summary(report, &mut out)?,
    }
    out.flush()?;
    Ok(())
}

impl RunArgs {
    /// The flags as `llmscope_ops::run` takes them.
    fn request(&self) -> Result<RunRequest> {
        let held = Held {
            concurrency: self.concurrency,
            rate: self.rate,
            duration: self.duration,
            baseline: self.baseline,
            max_tokens: 512,
        };
        if self.replay.trace.is_some() {
            self.refuse_beside_a_trace()?;
        }
        let mut request = self.stack.request(&self.shape, held, &self.out.db)?;
        request.workload.trace = self.replay.spec();
        Ok(request)
    }

    /// A trace says when each request comes and how long it is: flags that say otherwise are
    /// refused, not silently dropped.
    fn refuse_beside_a_trace(&self) -> Result<()> {
        let s = &self.shape;
        let given = [
            (s.prompt.is_some(), "--prompt"),
            (s.input_tokens.is_some(), "--input-tokens"),
            (s.output_tokens.is_some(), "--output-tokens"),
            (s.max_tokens.is_some(), "--max-tokens"),
            (s.shared_prefix.is_some(), "--shared-prefix"),
            (s.turns.is_some(), "--turns"),
            (self.rate.is_some(), "--rate"),
        ];
        match given.iter().find(|(g, _)| *g) {
            Some((_, flag)) => anyhow::bail!(
                "--trace sets when requests arrive and how long they are: drop {flag} (--concurrency caps requests in flight, --duration cuts the replay)"
            ),
            None => Ok(()),
        }
    }
}

/// A command's narrator: every line on stderr, the command's name before progress lines.
pub struct Say(pub &'static str);

impl run::Narrator for Say {
    fn say(&self, line: &str) {
        eprintln!("llmscope {}: {line}", self.0);
    }
    /// Warnings quote servers (their warnings, errors, names): shown cleaned.
    fn warn(&self, line: &str) {
        eprintln!("warning: {}", llmscope_core::safe::clean(line));
    }
    fn note(&self, line: &str) {
        eprintln!("note: {line}");
    }
}

fn say(line: &str) {
    eprintln!("llmscope run: {line}");
}

/// The first Ctrl-C: the run stops (the token handed to `execute` is cancelled).
fn said_stopping() {
    say(
        "Ctrl-C: stopping the run; in-flight requests drain, then what was measured is diagnosed and stored as interrupted (Ctrl-C again to exit at once)",
    );
}

/// A second Ctrl-C: exit now; the store marks the run interrupted when next opened (its
/// process is gone).
fn exit_at_once() {
    say("second Ctrl-C: exiting now; the run reads back as interrupted");
    std::process::exit(130);
}
