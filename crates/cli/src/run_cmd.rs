//! `llmscope run`: the whole method of DESIGN §2 — pre-flight, idle baseline, sustained load while
//! observing, drain, then diagnose, store and report.
//!
//! Flow: [`RunArgs`] → a [`Plan`] (targets resolved; with no `--target` the simulated stack is
//! started in-process) → scrape sources feed the store's writer for the whole run → the load
//! generator runs between the baseline and the drain → the run's series are read back from the
//! store and diagnosed ([`crate::analysis`]) → reports.

use crate::output::ReportOutput;
use crate::prom_flags::PromFlags;
use anyhow::{Context, Result, bail};
use llmscope_collect::HttpClient;
use llmscope_collect::prom::PromClient;
use llmscope_collect::scrape::ScrapeTarget;
use llmscope_core::duration::format_duration;
use llmscope_loadgen::{LoadPlan, LoadSpec, TokenSpec};
use llmscope_ops::interrupt::Interrupt;
use llmscope_ops::run::{self, RunPlan};
use llmscope_sim::options::EngineOptions;
use llmscope_sim::serve::{self, SimConfig, SimHandle};
use std::process::ExitCode;
use std::time::Duration;

/// The reference prompt of DESIGN §2 (a short Korean chat prompt, ~30 tokens).
pub const REFERENCE_PROMPT: &str = "쿠버네티스 스케줄러가 Pod를 배치하는 과정을 자세히 설명해줘.";

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
    /// Prompt text [default: the reference Korean prompt].
    #[arg(long, help_heading = "Load")]
    pub prompt: Option<String>,
    /// Synthetic prompts of N[±sd] tokens instead of --prompt.
    #[arg(long, help_heading = "Load")]
    pub input_tokens: Option<TokenSpec>,
    /// Exactly M output tokens (sends max_tokens and ignore_eos).
    #[arg(long, help_heading = "Load")]
    pub output_tokens: Option<u32>,
    /// max_tokens of each request.
    #[arg(long, default_value_t = 512, help_heading = "Load")]
    pub max_tokens: u32,
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
    /// Scrape interval of the metrics targets (with --prometheus: the query step).
    #[arg(long, default_value = "1s", value_parser = crate::args::duration, help_heading = "Observe")]
    pub interval: Duration,
    /// dcgm-exporter's collect interval: the simulated one's [default: 5s, scaled down from the
    /// real 30 s], or the real one's, so the run observes long enough after the load for GPU
    /// values to fall [default: 30s].
    #[arg(long, value_parser = crate::args::duration, help_heading = "Observe")]
    pub dcgm_interval: Option<Duration>,
    /// Longest wait for the server to go idle after the load.
    #[arg(long, default_value = "60s", value_parser = crate::args::duration, help_heading = "Observe")]
    pub drain_timeout: Duration,
    #[command(flatten)]
    pub out: ReportOutput,
}

/// Where `run` sends load and reads metrics, resolved.
struct Plan {
    sim: Option<SimHandle>,
    target: String,
    scrape: Vec<ScrapeTarget>,
    /// With --prometheus: where the window is read after the load (no direct scrape).
    prom: Option<PromClient>,
    max_num_seqs: Option<u32>,
    max_num_batched_tokens: Option<u32>,
    context: Vec<String>,
    after: Duration,
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(run_async(args))
}

async fn run_async(args: RunArgs) -> Result<ExitCode> {
    if args.duration < args.interval * 8 {
        eprintln!(
            "warning: --duration {} is under 8 scrape intervals ({}): scrapes miss short bursts; the steady window may be too short to judge",
            format_duration(args.duration),
            format_duration(args.interval * 8)
        );
    }
    // Against the in-process simulator both ends of every connection are ours.
    let per_connection = if args.target.is_none() { 2 } else { 1 };
    crate::load_cmd::fd_preflight(u64::from(args.concurrency), per_connection)?;
    let (plan, sim) = resolve(&args).await?;
    let client = HttpClient::new(None).context("setting up the HTTP client")?;
    run::preflight(&plan, &client, &Say).await?;
    let load_plan = prepare_load(&args, &plan.target).await?;
    let interrupt = Interrupt::watch(say);
    let outcome = run::execute(&plan, &load_plan, &interrupt, &client, &Say).await;
    if let Some(sim) = sim {
        sim.shutdown().await;
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

/// `run`'s narrator: every line on stderr.
struct Say;

impl run::Narrator for Say {
    fn say(&self, line: &str) {
        say(line);
    }
    fn warn(&self, line: &str) {
        eprintln!("warning: {line}");
    }
    fn note(&self, line: &str) {
        eprintln!("note: {line}");
    }
}

fn say(line: &str) {
    eprintln!("llmscope run: {line}");
}

/// The plan `llmscope_ops::run` carries out, and the simulated stack when it was started.
async fn resolve(args: &RunArgs) -> Result<(RunPlan, Option<SimHandle>)> {
    let targets = resolve_targets(args).await?;
    let config = config_json(args, &targets);
    let prom = match targets.prom {
        Some(client) => {
            let url = llmscope_collect::url::redact(args.prom.prometheus.as_deref().unwrap_or(""));
            Some((client, url))
        }
        None => None,
    };
    let plan = RunPlan {
        target: targets.target,
        scrape: targets.scrape,
        prom,
        matchers: args.matchers.clone(),
        simulated: targets.sim.is_some(),
        max_num_seqs: targets.max_num_seqs,
        max_num_batched_tokens: targets.max_num_batched_tokens,
        concurrency: args.concurrency,
        rate: args.rate,
        baseline: args.baseline,
        duration: args.duration,
        interval: args.interval,
        drain_timeout: args.drain_timeout,
        after: targets.after,
        context: targets.context,
        config,
        db: args.out.db.clone(),
    };
    Ok((plan, targets.sim))
}

/// Where the load goes and the metrics come from: the simulated stack (started here) without a
/// `--target`, else Prometheus with `--prometheus`, else the target's pages scraped directly.
async fn resolve_targets(args: &RunArgs) -> Result<Plan> {
    // The engine flags are checked whatever the target (they describe the simulated one).
    let (preset, dialect) = args.engine.resolve()?;
    let Some(target) = &args.target else {
        return simulated(args, preset, dialect).await;
    };
    let base = target
        .trim_end_matches('/')
        .trim_end_matches("/v1")
        .to_owned();
    // dcgm values lag by up to one collect interval: observe long enough to see them fall.
    let after = args.dcgm_interval.unwrap_or(Duration::from_secs(30)) + Duration::from_secs(5);
    if let Some(prom) = args.prom.client()? {
        return through_prometheus(args, base, prom, after);
    }
    scraped(args, base, after)
}

/// No `--target`: the simulated stack, started in-process.
async fn simulated(
    args: &RunArgs,
    preset: llmscope_sim::preset::Preset,
    dialect: llmscope_sim::metrics::Dialect,
) -> Result<Plan> {
    if args.prom.prometheus.is_some() {
        bail!(
            "--prometheus reads a real deployment's window: give the server with --target (the simulated stack is scraped directly)"
        );
    }
    let mut cfg = SimConfig::new(preset.clone());
    cfg.seed = args.engine.seed;
    cfg.dialect = dialect;
    let dcgm_interval = args.dcgm_interval.unwrap_or(Duration::from_secs(5));
    cfg.dcgm_interval = dcgm_interval;
    let sim = serve::start(cfg)
        .await
        .context("starting the simulated stack")?;
    say(&format!(
        "no --target: running against the simulated stack at {} ({} on {}, --max-num-seqs {}, dcgm every {}) — simulated, not real hardware",
        sim.vllm_url(),
        preset.model.id,
        preset.gpu.model_name,
        preset.engine.max_num_seqs,
        format_duration(dcgm_interval)
    ));
    let scrape = vec![
        target_arg(&format!("vllm={}/metrics", sim.vllm_url()))?,
        target_arg(&format!("dcgm={}", sim.dcgm_url()))?,
    ];
    let context = vec![
        format!(
            "simulated vLLM {dialect} ({}) at {}",
            preset.model.id,
            sim.vllm_url()
        ),
        format!(
            "simulated dcgm-exporter ({}) at {}",
            preset.gpu.model_name,
            sim.dcgm_url()
        ),
    ];
    Ok(Plan {
        target: sim.vllm_url(),
        max_num_seqs: Some(preset.engine.max_num_seqs),
        max_num_batched_tokens: Some(preset.engine.max_num_batched_tokens),
        sim: Some(sim),
        scrape,
        prom: None,
        context,
        // dcgm values lag by up to one collect interval: observe long enough to see them fall.
        after: (dcgm_interval * 2).max(Duration::from_secs(5)),
    })
}

/// `--prometheus`: nothing is scraped; the window is read from Prometheus after the load.
fn through_prometheus(
    args: &RunArgs,
    base: String,
    prom: PromClient,
    after: Duration,
) -> Result<Plan> {
    if args.metrics_url.is_some() || !args.gpu_metrics.is_empty() {
        bail!(
            "with --prometheus the window is read from Prometheus: drop --metrics-url and --gpu-metrics (or drop --prometheus to scrape them directly)"
        );
    }
    let url = llmscope_collect::url::redact(args.prom.prometheus.as_deref().unwrap_or(""));
    let mut context = vec![
        format!("target {base}"),
        format!(
            "series read from Prometheus {url} after the load, step {}",
            format_duration(args.interval)
        ),
    ];
    context.extend(args.matchers.iter().map(|m| format!("matchers {m}")));
    Ok(Plan {
        sim: None,
        target: base,
        scrape: Vec::new(),
        prom: Some(prom),
        max_num_seqs: args.engine.max_num_seqs,
        max_num_batched_tokens: args.engine.max_num_batched_tokens,
        context,
        // Prometheus stores a scrape a moment after it happens: one more interval.
        after: after + args.interval,
    })
}

/// The target's own pages (and `--gpu-metrics`), scraped directly for the whole run.
fn scraped(args: &RunArgs, base: String, after: Duration) -> Result<Plan> {
    if !args.matchers.is_empty() {
        bail!("--match narrows what is read from Prometheus: it needs --prometheus");
    }
    let metrics = args
        .metrics_url
        .clone()
        .unwrap_or_else(|| format!("{base}/metrics"));
    let mut scrape = vec![target_arg(&format!("engine={metrics}"))?];
    for (i, g) in args.gpu_metrics.iter().enumerate() {
        scrape.push(target_arg(&format!("gpu{i}={g}"))?);
    }
    let mut context = vec![
        format!("target {base}"),
        format!("engine metrics {metrics}"),
    ];
    // Without a GPU exporter there is no dcgm lag to wait out: a few scrapes show the fall.
    let after = if args.gpu_metrics.is_empty() {
        context.push(
            "no --gpu-metrics: GPU utilisation is unknown, so GPU-bound verdicts cannot be made (batch-limit, KV-cache and load verdicts still can)"
                .to_owned(),
        );
        (args.interval * 5).max(Duration::from_secs(5))
    } else {
        after
    };
    Ok(Plan {
        sim: None,
        target: base,
        scrape,
        prom: None,
        max_num_seqs: args.engine.max_num_seqs,
        max_num_batched_tokens: args.engine.max_num_batched_tokens,
        context,
        after,
    })
}

fn target_arg(text: &str) -> Result<ScrapeTarget> {
    text.parse::<ScrapeTarget>().map_err(anyhow::Error::from)
}

fn config_json(args: &RunArgs, plan: &Plan) -> serde_json::Value {
    serde_json::json!({
        "target": plan.target,
        "scrape": plan.scrape.iter().map(|t| format!("{}={}", t.name, llmscope_collect::url::redact(&t.uri.to_string()))).collect::<Vec<_>>(),
        "simulated": plan.sim.is_some(),
        "prometheus": args.prom.prometheus.as_deref().map(llmscope_collect::url::redact),
        "match": args.matchers,
        "preset": args.engine.preset,
        "max_num_seqs": plan.max_num_seqs,
        "concurrency": args.concurrency,
        "rate": args.rate,
        "duration_s": args.duration.as_secs_f64(),
        "baseline_s": args.baseline.as_secs_f64(),
        "interval_s": args.interval.as_secs_f64(),
        "max_tokens": args.max_tokens,
        "api_key": args.api_key.as_ref().map(|_| "<redacted>"),
    })
}

/// Resolves the load before the run starts: bad load flags, an unreachable target or a missing
/// model fail here, not after the baseline.
async fn prepare_load(args: &RunArgs, target: &str) -> Result<LoadPlan> {
    let spec = LoadSpec {
        target: target.to_owned(),
        model: args.model.clone(),
        api_key: args.api_key.clone().map(llmscope_loadgen::Secret::new),
        concurrency: vec![args.concurrency],
        rate: args.rate.into_iter().collect(),
        duration: Some(args.duration),
        prompt: Some(
            args.prompt
                .clone()
                .unwrap_or_else(|| REFERENCE_PROMPT.to_owned()),
        )
        .filter(|_| args.input_tokens.is_none()),
        input_tokens: args.input_tokens,
        output_tokens: args.output_tokens,
        // --output-tokens sets max_tokens itself (with ignore_eos).
        max_tokens: args.output_tokens.is_none().then_some(args.max_tokens),
        seed: args.engine.seed,
        grace: Duration::from_secs(60),
        ..LoadSpec::default()
    };
    let plan = llmscope_loadgen::resolve(&spec)
        .await
        .context("preparing the load")?;
    for note in &plan.notes {
        eprintln!("note: {note}");
    }
    Ok(plan)
}
