//! `llmscope run`: the whole method of DESIGN §2 — pre-flight, idle baseline, sustained load while
//! observing, drain, then diagnose, store and report.
//!
//! Flow: [`RunArgs`] → a [`Plan`] (targets resolved; with no `--target` the simulated stack is
//! started in-process) → scrape sources feed the store's writer for the whole run → the load
//! generator runs between the baseline and the drain → the run's series are read back from the
//! store and diagnosed ([`crate::analysis`]) → reports.

use crate::interrupt::{Interrupt, load_done_s};
use crate::output::ReportOutput;
use crate::prom_flags::PromFlags;
use crate::sim_cmd::EngineFlags;
use anyhow::{Context, Result, bail};
use llmscope_collect::prom::PromClient;
use llmscope_collect::scrape::{ScrapeConfig, ScrapeSource, ScrapeTarget};
use llmscope_collect::{HttpClient, Source, Stop, Window};
use llmscope_core::diagnose::Concept;
use llmscope_core::diagnose::build::signals_from_series;
use llmscope_core::duration::{format_duration, parse_duration};
use llmscope_loadgen::{
    LoadPlan, LoadReport, LoadSpec, Observer, Progress, RequestRecord, TokenSpec,
};
use llmscope_ops::analysis::{self, RunFacts};
use llmscope_ops::window::{WindowQuery, read_window};
use llmscope_sim::serve::{self, SimConfig, SimHandle};
use llmscope_store::writer::BatchSender;
use llmscope_store::{NewRun, RequestRow, RunStatus, SourceSpec, Store};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The reference prompt of DESIGN §2 (a short Korean chat prompt, ~30 tokens).
pub const REFERENCE_PROMPT: &str = "쿠버네티스 스케줄러가 Pod를 배치하는 과정을 자세히 설명해줘.";

fn duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

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
    pub engine: EngineFlags,
    /// Closed-loop workers (each sends its next request when the last one ends).
    #[arg(long, default_value_t = 32, help_heading = "Load")]
    pub concurrency: u32,
    /// Open-loop requests per second instead (concurrency then caps in-flight requests).
    #[arg(long, help_heading = "Load")]
    pub rate: Option<f64>,
    /// How long the load runs.
    #[arg(long, default_value = "45s", value_parser = duration_arg, help_heading = "Load")]
    pub duration: Duration,
    /// Idle baseline before the load.
    #[arg(long, default_value = "10s", value_parser = duration_arg, help_heading = "Load")]
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
    #[arg(long, default_value = "1s", value_parser = duration_arg, help_heading = "Observe")]
    pub interval: Duration,
    /// dcgm-exporter's collect interval: the simulated one's [default: 5s, scaled down from the
    /// real 30 s], or the real one's, so the run observes long enough after the load for GPU
    /// values to fall [default: 30s].
    #[arg(long, value_parser = duration_arg, help_heading = "Observe")]
    pub dcgm_interval: Option<Duration>,
    /// Longest wait for the server to go idle after the load.
    #[arg(long, default_value = "60s", value_parser = duration_arg, help_heading = "Observe")]
    pub drain_timeout: Duration,
    #[command(flatten)]
    pub out: ReportOutput,
}

/// What `run` will do, resolved.
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
    let mut plan = resolve(&args).await?;
    let client = HttpClient::new(None).context("setting up the HTTP client")?;
    preflight(&args, &plan, &client).await?;
    let load_plan = prepare_load(&args, &plan.target).await?;
    let mut store = Store::open(&args.out.db)
        .with_context(|| format!("opening the run store {}", args.out.db.display()))?;
    let run = store.create_run(&NewRun {
        kind: "run".to_owned(),
        started_at: llmscope_collect::time::unix_now(),
        window: None,
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        config: config_json(&args, &plan),
        planned_s: Some(args.duration.as_secs_f64()),
    })?;
    let sources: Vec<ScrapeSource> = plan
        .scrape
        .iter()
        .map(|t| ScrapeSource::new(t.clone(), ScrapeConfig::new(args.interval), client.clone()))
        .collect();
    for s in &sources {
        store.add_source(
            run,
            &SourceSpec {
                name: s.name().to_owned(),
                kind: s.kind().to_owned(),
                url: s.url(),
            },
        )?;
    }
    if plan.prom.is_some() {
        store.add_source(
            run,
            &SourceSpec {
                name: "prometheus".to_owned(),
                kind: "prometheus".to_owned(),
                url: llmscope_collect::url::redact(args.prom.prometheus.as_deref().unwrap_or("")),
            },
        )?;
    }
    let observed_from = llmscope_collect::time::unix_now();
    let interrupt = Interrupt::watch(say);
    let writer = llmscope_store::writer::spawn(store, run).context("starting the store writer")?;
    let (stop_handle, stop) = Stop::new();
    let sender = writer.sender();
    let sink: Arc<dyn llmscope_collect::Sink> = Arc::new(move |b| sender.send(b));
    let mut tasks = Vec::new();
    for s in sources {
        let (sink, stop) = (Arc::clone(&sink), stop.clone());
        tasks.push(tokio::spawn(async move {
            s.collect(
                Window::Live {
                    duration: Duration::from_secs(24 * 3600),
                },
                sink.as_ref(),
                stop,
            )
            .await
        }));
    }
    say(&format!(
        "baseline: {} idle",
        format_duration(args.baseline)
    ));
    interrupt.sleep(args.baseline).await;
    say(&format!(
        "load: {} workers for {}",
        args.concurrency,
        format_duration(args.duration)
    ));
    let report = load(&load_plan, &interrupt, writer.sender()).await?;
    let load_started = report.started_unix_ns as f64 / 1e9;
    let load_window = (load_started, load_started + report.total.duration_s);
    if interrupt.at().is_none() {
        say("drain: waiting for the server to go idle");
        interrupt
            .race(drain(&client, &plan, args.drain_timeout))
            .await;
        interrupt.sleep(plan.after).await;
    }
    stop_handle.stop();
    for t in tasks {
        if let Ok(Err(e)) = t.await {
            eprintln!("warning: {e}");
        }
    }
    // The writer finishes when every sender is gone: the sources' clones went with their tasks.
    drop(sink);
    let (mut store, _totals) = writer.finish().context("finishing the store writes")?;
    let interrupted_at = interrupt.at();
    if let Some(at) = interrupted_at {
        let done = load_done_s(at, load_started, args.duration);
        store.interrupt_run(run, at, Some(done))?;
    }
    if let Some(prom) = &plan.prom {
        let step = args.interval.as_secs_f64();
        let to = llmscope_collect::time::unix_now();
        say("reading the window from Prometheus");
        let window = WindowQuery {
            from: observed_from - step,
            to,
            step,
            matchers: &args.matchers,
        };
        let read = read_window(prom, &window, |series| {
            let mut batch = llmscope_core::series::Batch::new("prometheus");
            for s in series {
                batch.push_series(s);
            }
            store.write(run, &[batch])?;
            Ok(())
        })
        .await?;
        for w in &read.warnings {
            eprintln!("warning: Prometheus: {w}");
        }
        if read.series == 0 {
            bail!(
                "Prometheus returned no engine or GPU series for the run's window: it held them before the load, so check that it still scrapes the targets (and the --match matchers)"
            );
        }
    }
    let facts = RunFacts {
        max_num_seqs: plan.max_num_seqs,
        max_num_batched_tokens: plan.max_num_batched_tokens,
        concurrency: args.rate.is_none().then_some(args.concurrency),
        load_window: Some(load_window),
        client_limited: report.total.client.limited,
        client_note: Some(report.total.client.verdict.clone()).filter(|v| !v.is_empty()),
        scrape_interval_s: Some(args.interval.as_secs_f64()),
        simulated: plan.sim.is_some(),
        context: plan.context.clone(),
        client: Some(serde_json::to_value(&report)?),
    };
    let series: Vec<_> = store
        .series(run, None)?
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    let (input, res) = signals_from_series(&series);
    let mut analysed = analysis::analyse_input(run, input, &res, facts)?;
    analysis::store_findings(&mut store, &analysed)?;
    let status = match interrupted_at {
        Some(_) => RunStatus::Interrupted,
        None => RunStatus::Completed,
    };
    store.finish_run(run, status, llmscope_collect::time::unix_now(), None)?;
    if let Some(sim) = plan.sim.take() {
        sim.shutdown().await;
    }
    analysed.interrupted = analysis::interruption(&store.run(run)?);
    let code = args.out.finish(&analysed, &format!("llmscope run {run}"))?;
    match &report.stopped_early {
        Some(why) => {
            say(&format!("the load stopped early: {why}"));
            Ok(ExitCode::from(1))
        }
        None => Ok(code),
    }
}

fn say(line: &str) {
    eprintln!("llmscope run: {line}");
}

/// Starts the simulated stack when there is no target; names the scrape targets.
async fn resolve(args: &RunArgs) -> Result<Plan> {
    let (preset, dialect) = args.engine.resolve()?;
    let Some(target) = &args.target else {
        let mut cfg = SimConfig::new(preset.clone());
        cfg.seed = args.engine.seed;
        cfg.dialect = dialect;
        if args.prom.prometheus.is_some() {
            bail!(
                "--prometheus reads a real deployment's window: give the server with --target (the simulated stack is scraped directly)"
            );
        }
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
                "simulated vLLM {} ({}) at {}",
                dialect,
                preset.model.id,
                sim.vllm_url()
            ),
            format!(
                "simulated dcgm-exporter ({}) at {}",
                preset.gpu.model_name,
                sim.dcgm_url()
            ),
        ];
        return Ok(Plan {
            target: sim.vllm_url(),
            max_num_seqs: Some(preset.engine.max_num_seqs),
            max_num_batched_tokens: Some(preset.engine.max_num_batched_tokens),
            sim: Some(sim),
            scrape,
            prom: None,
            context,
            // dcgm values lag by up to one collect interval: observe long enough to see them fall.
            after: (dcgm_interval * 2).max(Duration::from_secs(5)),
        });
    };
    let base = target
        .trim_end_matches('/')
        .trim_end_matches("/v1")
        .to_owned();
    let metrics = args
        .metrics_url
        .clone()
        .unwrap_or_else(|| format!("{base}/metrics"));
    // dcgm values lag by up to one collect interval: observe long enough to see them fall.
    let after = args.dcgm_interval.unwrap_or(Duration::from_secs(30)) + Duration::from_secs(5);
    if let Some(prom) = args.prom.client()? {
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
        return Ok(Plan {
            sim: None,
            target: base,
            scrape: Vec::new(),
            prom: Some(prom),
            max_num_seqs: args.engine.max_num_seqs,
            max_num_batched_tokens: args.engine.max_num_batched_tokens,
            context,
            // Prometheus stores a scrape a moment after it happens: one more interval.
            after: after + args.interval,
        });
    }
    if !args.matchers.is_empty() {
        bail!("--match narrows what is read from Prometheus: it needs --prometheus");
    }
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

/// Checks the load design and the sources before spending minutes on them: the engine's metrics
/// must answer (a run without them is blind), and the engine and its version are named.
async fn preflight(args: &RunArgs, plan: &Plan, http: &HttpClient) -> Result<()> {
    design_checks(args, plan)?;
    if plan.sim.is_some() {
        return Ok(());
    }
    if let Some(prom) = &plan.prom {
        return prometheus_preflight(prom, args).await;
    }
    for t in &plan.scrape {
        let url = llmscope_collect::url::redact(&t.uri.to_string());
        match crate::inventory_cmd::fetch_page(http, &t.uri).await {
            Ok(page) => {
                let (mut snap, _) =
                    llmscope_check::inventory::snapshot::Snapshot::parse(url.clone(), &page);
                crate::inventory_cmd::ask_version(http, &t.uri, &mut snap).await;
                say(&format!(
                    "{} at {url}: {}",
                    t.name,
                    crate::inventory_cmd::name_versions(&snap)
                ));
                let names: Vec<&str> = snap.families().iter().map(|f| f.name.as_str()).collect();
                let needs: &[(Concept, &str)] = if t.name == "engine" {
                    &ENGINE_NEEDS
                } else {
                    &GPU_NEEDS
                };
                name_what_is_read(&names, needs);
            }
            Err(e) if t.name == "engine" => bail!(
                "the engine's metrics at {url} do not answer ({e:#}): without them the run is blind. Check --metrics-url (default TARGET/metrics) and that the server exposes /metrics"
            ),
            Err(e) => eprintln!(
                "warning: GPU metrics at {url} do not answer ({e:#}): GPU-bound verdicts need them"
            ),
        }
    }
    Ok(())
}

/// What the verdict cannot do without, from the engine and from the GPU exporter.
const ENGINE_NEEDS: [(Concept, &str); 3] = [
    (Concept::Running, "running"),
    (Concept::Waiting, "waiting"),
    (Concept::KvUsage, "KV-cache usage"),
];
const GPU_NEEDS: [(Concept, &str); 1] = [(Concept::GpuUtil, "GPU utilisation")];

/// Says which exposed name each needed signal will be read from (an older version's name is
/// said as such), and warns for a signal none of whose names is there: its query would return
/// nothing, silently.
fn name_what_is_read(names: &[&str], needs: &[(Concept, &str)]) {
    let mut read = Vec::new();
    for (concept, what) in needs {
        let candidates: Vec<_> = llmscope_core::catalog::candidates(*concept).collect();
        match candidates.iter().find(|d| names.contains(&d.name)) {
            Some(d) => {
                // Candidates are newest first: the first of the same engine is its current name.
                let newest = candidates
                    .iter()
                    .find(|c| c.engine == d.engine)
                    .unwrap_or(d);
                if std::ptr::eq(*newest, *d) {
                    read.push(format!("{what} {}", d.name));
                } else {
                    read.push(format!(
                        "{what} {} (an older name; newer versions expose {})",
                        d.name, newest.name
                    ));
                }
            }
            None => eprintln!(
                "warning: no {what} series (looked for {}): the verdicts that need it cannot be made",
                candidates
                    .iter()
                    .map(|d| d.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
    if !read.is_empty() {
        say(&format!("reads {}", read.join("; ")));
    }
}

/// What a set of names says about its exporters: `vllm >=0.26.0, dcgm-exporter >=4.5.0`.
fn detected(ds: &[llmscope_core::catalog::detect::Detection]) -> String {
    if ds.is_empty() {
        return "no catalogued exporter recognised (not vLLM, SGLang, TGI or dcgm-exporter?)"
            .to_owned();
    }
    let named: Vec<String> = ds
        .iter()
        .map(|d| format!("{} {}", d.exporter, d.range()))
        .collect();
    format!("{} (detected)", named.join(", "))
}

/// Before loading: does Prometheus hold the engine's series (under these matchers)?
async fn prometheus_preflight(prom: &PromClient, args: &RunArgs) -> Result<()> {
    let now = llmscope_collect::time::unix_now();
    let matchers: Vec<String> = args
        .matchers
        .iter()
        .map(|m| format!("{{{}}}", llmscope_ops::window::matcher_body(m)))
        .collect();
    let refs: Vec<&str> = matchers.iter().map(String::as_str).collect();
    let names = prom
        .label_values("__name__", &refs, Some((now - 600.0, now)))
        .await
        .context("asking Prometheus which metric names it holds")?
        .data;
    let found = llmscope_core::catalog::detect::detect(names.iter().map(String::as_str));
    let url = llmscope_collect::url::redact(args.prom.prometheus.as_deref().unwrap_or(""));
    say(&format!("Prometheus {url}: {}", detected(&found)));
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    name_what_is_read(&all, &ENGINE_NEEDS);
    name_what_is_read(&all, &GPU_NEEDS);
    let engine = found.iter().any(|d| {
        use llmscope_core::catalog::Exporter::*;
        matches!(d.exporter, Vllm | Sglang | Tgi)
    });
    if !engine {
        bail!(
            "Prometheus at {url} has no vLLM, SGLang or TGI series in the last 10 minutes{}: the engine is not scraped (kube-prometheus-stack selects only ServiceMonitors/PodMonitors labelled release: <helm release>) or the matchers exclude it",
            if refs.is_empty() {
                String::new()
            } else {
                format!(" matching {}", refs.join(" or "))
            }
        );
    }
    if !found
        .iter()
        .any(|d| d.exporter == llmscope_core::catalog::Exporter::DcgmExporter)
    {
        eprintln!(
            "warning: no dcgm-exporter series in Prometheus{}: GPU utilisation is unknown, so GPU-bound verdicts cannot be made",
            if refs.is_empty() {
                String::new()
            } else {
                " under these matchers (GPU series carry the exporter's labels, or exported_namespace: add a matcher for them)".to_owned()
            }
        );
    }
    Ok(())
}

/// The load design: a queue must be able to form.
fn design_checks(args: &RunArgs, plan: &Plan) -> Result<()> {
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    match plan.max_num_seqs {
        Some(m) if args.rate.is_none() && args.concurrency <= m => eprintln!(
            "warning: --concurrency {} does not exceed --max-num-seqs {m}: no queue can form, so a batch limit cannot show (use e.g. --concurrency {})",
            args.concurrency,
            m * 2
        ),
        None => eprintln!(
            "note: --max-num-seqs of the server is unknown; pass it so the batch-limit check can compare the running plateau with it"
        ),
        _ => {}
    }
    Ok(())
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

/// Streams every finished record and the load's progress to the store writer (so a killed run
/// keeps what completed), and prints a plain progress line every few seconds.
struct RunObserver {
    store: BatchSender,
    last_line: f64,
}

impl Observer for RunObserver {
    fn records(&mut self, batch: &[RequestRecord]) {
        self.store
            .send_requests(batch.iter().map(request_row).collect());
    }

    fn progress(&mut self, p: &Progress) {
        let elapsed = p.elapsed.as_secs_f64();
        self.store.send_progress(elapsed);
        if elapsed - self.last_line >= 10.0 {
            self.last_line = elapsed;
            say(&format!(
                "load {elapsed:.0}s: {} in flight, {} done, {} failed, {:.0} output tok/s",
                p.in_flight, p.completed, p.failed, p.output_tokens_per_s
            ));
        }
    }
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

async fn load(plan: &LoadPlan, interrupt: &Interrupt, store: BatchSender) -> Result<LoadReport> {
    // The load runs on its own runtime, whose threads are named for the load generator: its
    // self-check then measures the client alone, not the simulator or the scrapers beside it.
    let rt =
        llmscope_loadgen::client::runtime(None).context("starting the load generator's runtime")?;
    let (plan, run_control) = (plan.clone(), interrupt.control.clone());
    let task = rt.spawn(async move {
        let mut observer = RunObserver {
            store,
            last_line: 0.0,
        };
        llmscope_loadgen::run(&plan, &mut observer, &run_control).await
    });
    let out = task.await.context("the load task failed");
    rt.shutdown_background();
    out
}

/// Polls the engine's metrics until nothing runs or waits (or the timeout).
async fn drain(client: &HttpClient, plan: &Plan, timeout: Duration) {
    let Some(engine) = plan.scrape.first() else {
        return;
    };
    let headers = hyper::HeaderMap::new();
    let deadline = tokio::time::Instant::now() + timeout;
    while tokio::time::Instant::now() < deadline {
        let get = llmscope_collect::http::Get {
            uri: engine.uri.clone(),
            headers: &headers,
            timeout: Duration::from_secs(5),
            body_limit: 16 << 20,
        };
        if let Ok(page) = client.get(get).await {
            let (families, _) = promtext::parse_families(&page.body);
            let busy: f64 = families
                .iter()
                .filter(|f| {
                    llmscope_core::catalog::lookup(f.name.raw()).is_some_and(|d| {
                        matches!(
                            d.concept,
                            llmscope_core::diagnose::Concept::Running
                                | llmscope_core::diagnose::Concept::Waiting
                        )
                    })
                })
                .flat_map(|f| f.samples.iter().map(|s| s.value))
                .sum();
            if busy == 0.0 {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    eprintln!(
        "warning: the server was still busy after --drain-timeout {}",
        format_duration(timeout)
    );
}

fn request_row(r: &RequestRecord) -> RequestRow {
    RequestRow {
        stage: r.stage,
        id: r.id,
        sent_unix_ns: r.sent_unix_ns,
        end_unix_ns: r.end_unix_ns,
        first_token_unix_ns: r.first_token_unix_ns,
        status: r.status,
        error: r.error.map(|e| e.to_string()),
        prompt_tokens: r.prompt_tokens,
        output_tokens: r.output_tokens,
        record: serde_json::to_value(r).unwrap_or_default(),
    }
}
