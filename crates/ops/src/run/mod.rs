//! The whole method of DESIGN §2 on a resolved plan: pre-flight, idle baseline, sustained load
//! while observing, drain, then diagnose and record.
//!
//! Flow: [`preflight`] checks the design and the sources before minutes are spent on them;
//! [`execute`] creates the run, starts one scrape source per target feeding the store's writer
//! for the whole run, sleeps the baseline, runs the load generator (its records streamed to the
//! same writer, so a killed run keeps what completed), waits for the drain, reads the window
//! from Prometheus if that is where the metrics live, reads the run's series back, diagnoses
//! them with the run's facts and records the findings. What the user should hear on the way is
//! told to a [`Narrator`]; the library never prints. [`RunRequest::resolve`] turns what was
//! asked into the plan (starting the simulated stack when there is no target).

mod request;

pub use request::{REFERENCE_PROMPT, RunRequest, fd_preflight};

use crate::OpsError;
use crate::analysis::{self, Analysed, RunFacts};
use crate::interrupt::{Interrupt, load_done_s};
use crate::window::{WindowQuery, matcher_body, read_window};
use llmscope_collect::prom::PromClient;
use llmscope_collect::scrape::{ScrapeConfig, ScrapeSource, ScrapeTarget};
use llmscope_collect::time::unix_now;
use llmscope_collect::{HttpClient, Source, Stop, Window};
use llmscope_core::catalog::{self, Exporter, detect};
use llmscope_core::diagnose::Concept;
use llmscope_core::diagnose::build::signals_from_series;
use llmscope_core::duration::format_duration;
use llmscope_core::series::Batch;
use llmscope_loadgen::{LoadPlan, LoadReport, Observer, Progress, RequestRecord};
use llmscope_store::writer::BatchSender;
use llmscope_store::{NewRun, RequestRow, RunStatus, SourceSpec, Store};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where what the user should hear goes: progress, warnings, notes.
pub trait Narrator: Sync {
    /// A step of the run (`baseline: 10s idle`).
    fn say(&self, line: &str);
    /// Something that weakens the run's result.
    fn warn(&self, line: &str);
    /// Something worth knowing.
    fn note(&self, line: &str);
}

/// What `run` will do, resolved (targets named, the simulated stack already started).
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The OpenAI-compatible server's base URL.
    pub target: String,
    /// Scraped directly for the whole run (the engine first).
    pub scrape: Vec<ScrapeTarget>,
    /// Where the window is read after the load instead, with its URL as shown and stored.
    pub prom: Option<(PromClient, String)>,
    pub matchers: Vec<String>,
    pub simulated: bool,
    pub max_num_seqs: Option<u32>,
    pub max_num_batched_tokens: Option<u32>,
    /// Closed-loop workers, or the cap on in-flight requests of an open-loop `rate`.
    pub concurrency: u32,
    pub rate: Option<f64>,
    pub baseline: Duration,
    pub duration: Duration,
    pub interval: Duration,
    pub drain_timeout: Duration,
    /// Observed after the drain (dcgm values lag by a collect interval).
    pub after: Duration,
    /// Lines for the report's context.
    pub context: Vec<String>,
    /// The resolved configuration as stored with the run (secrets already removed).
    pub config: serde_json::Value,
    pub db: PathBuf,
}

/// A finished (or interrupted) run, diagnosed and recorded.
#[derive(Debug)]
pub struct RunOutcome {
    pub analysed: Analysed,
    /// Why the load stopped before its end, when it did (no request succeeded).
    pub stopped_early: Option<String>,
}

/// Checks the load design and the sources before spending minutes on them: the engine's
/// metrics must answer (a run without them is blind), and the engine and its version are named.
pub async fn preflight(
    plan: &RunPlan,
    http: &HttpClient,
    n: &dyn Narrator,
) -> Result<(), OpsError> {
    design_checks(plan, n)?;
    if plan.simulated {
        return Ok(());
    }
    if let Some((prom, url)) = &plan.prom {
        return prometheus_preflight(prom, url, &plan.matchers, n).await;
    }
    for t in &plan.scrape {
        let url = llmscope_collect::url::redact(&t.uri.to_string());
        match crate::page::fetch_page(http, &t.uri).await {
            Ok(page) => {
                let (mut snap, _) =
                    llmscope_check::inventory::snapshot::Snapshot::parse(url.clone(), &page);
                crate::page::ask_version(http, &t.uri, &mut snap).await;
                n.say(&format!(
                    "{} at {url}: {}",
                    t.name,
                    crate::page::name_versions(&snap)
                ));
                let names: Vec<&str> = snap.families().iter().map(|f| f.name.as_str()).collect();
                let needs: &[(Concept, &str)] = if t.name == "engine" {
                    &ENGINE_NEEDS
                } else {
                    &GPU_NEEDS
                };
                name_what_is_read(&names, needs, n);
            }
            Err(e) if t.name == "engine" => {
                return Err(OpsError::Refused(format!(
                    "the engine's metrics at {url} do not answer ({e}): without them the run is blind. Check --metrics-url (default TARGET/metrics) and that the server exposes /metrics"
                )));
            }
            Err(e) => n.warn(&format!(
                "GPU metrics at {url} do not answer ({e}): GPU-bound verdicts need them"
            )),
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
fn name_what_is_read(names: &[&str], needs: &[(Concept, &str)], n: &dyn Narrator) {
    let mut read = Vec::new();
    for (concept, what) in needs {
        let candidates: Vec<_> = catalog::candidates(*concept).collect();
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
            None => n.warn(&format!(
                "no {what} series (looked for {}): the verdicts that need it cannot be made",
                candidates
                    .iter()
                    .map(|d| d.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    if !read.is_empty() {
        n.say(&format!("reads {}", read.join("; ")));
    }
}

/// What a set of names says about its exporters: `vllm >=0.26.0, dcgm-exporter >=4.5.0`.
fn detected(ds: &[detect::Detection]) -> String {
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
async fn prometheus_preflight(
    prom: &PromClient,
    url: &str,
    matchers: &[String],
    n: &dyn Narrator,
) -> Result<(), OpsError> {
    let now = unix_now();
    let selectors: Vec<String> = matchers
        .iter()
        .map(|m| format!("{{{}}}", matcher_body(m)))
        .collect();
    let refs: Vec<&str> = selectors.iter().map(String::as_str).collect();
    let names = prom
        .label_values("__name__", &refs, Some((now - 600.0, now)))
        .await
        .map_err(|source| OpsError::Prom {
            context: "asking Prometheus which metric names it holds".to_owned(),
            source,
        })?
        .data;
    let found = detect::detect(names.iter().map(String::as_str));
    n.say(&format!("Prometheus {url}: {}", detected(&found)));
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    name_what_is_read(&all, &ENGINE_NEEDS, n);
    name_what_is_read(&all, &GPU_NEEDS, n);
    let matching = if refs.is_empty() {
        String::new()
    } else {
        format!(" matching {}", refs.join(" or "))
    };
    let engine = found.iter().any(|d| {
        matches!(
            d.exporter,
            Exporter::Vllm | Exporter::Sglang | Exporter::Tgi
        )
    });
    if !engine {
        return Err(OpsError::Refused(format!(
            "Prometheus at {url} has no vLLM, SGLang or TGI series in the last 10 minutes{matching}: the engine is not scraped (kube-prometheus-stack selects only ServiceMonitors/PodMonitors labelled release: <helm release>) or the matchers exclude it"
        )));
    }
    if !found.iter().any(|d| d.exporter == Exporter::DcgmExporter) {
        n.warn(&format!(
            "no dcgm-exporter series in Prometheus{}: GPU utilisation is unknown, so GPU-bound verdicts cannot be made",
            if refs.is_empty() {
                ""
            } else {
                " under these matchers (GPU series carry the exporter's labels, or exported_namespace: add a matcher for them)"
            }
        ));
    }
    Ok(())
}

/// The load design: a queue must be able to form.
fn design_checks(plan: &RunPlan, n: &dyn Narrator) -> Result<(), OpsError> {
    if plan.concurrency == 0 {
        return Err(OpsError::Refused(
            "--concurrency must be at least 1".to_owned(),
        ));
    }
    match plan.max_num_seqs {
        Some(m) if plan.rate.is_none() && plan.concurrency <= m => n.warn(&format!(
            "--concurrency {} does not exceed --max-num-seqs {m}: no queue can form, so a batch limit cannot show (use e.g. --concurrency {})",
            plan.concurrency,
            m * 2
        )),
        None => n.note(
            "--max-num-seqs of the server is unknown; pass it so the batch-limit check can compare the running plateau with it",
        ),
        _ => {}
    }
    Ok(())
}

/// Runs the method on `plan` with the load `load`, and records and diagnoses the run.
pub async fn execute(
    plan: &RunPlan,
    load: &LoadPlan,
    interrupt: &Interrupt,
    http: &HttpClient,
    n: &dyn Narrator,
) -> Result<RunOutcome, OpsError> {
    let mut store = Store::open(&plan.db)?;
    let run = store.create_run(&NewRun {
        kind: "run".to_owned(),
        started_at: unix_now(),
        window: None,
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        config: plan.config.clone(),
        planned_s: Some(plan.duration.as_secs_f64()),
    })?;
    let sources: Vec<ScrapeSource> = plan
        .scrape
        .iter()
        .map(|t| ScrapeSource::new(t.clone(), ScrapeConfig::new(plan.interval), http.clone()))
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
    if let Some((_, url)) = &plan.prom {
        store.add_source(
            run,
            &SourceSpec {
                name: "prometheus".to_owned(),
                kind: "prometheus".to_owned(),
                url: url.clone(),
            },
        )?;
    }
    let observed_from = unix_now();
    let writer = llmscope_store::writer::spawn(store, run)?;
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
    n.say(&format!(
        "baseline: {} idle",
        format_duration(plan.baseline)
    ));
    interrupt.sleep(plan.baseline).await;
    n.say(&format!(
        "load: {} workers for {}",
        plan.concurrency,
        format_duration(plan.duration)
    ));
    let report = run_load(load, interrupt, writer.sender(), n).await?;
    let load_started = report.started_unix_ns as f64 / 1e9;
    let load_window = (load_started, load_started + report.total.duration_s);
    if interrupt.at().is_none() {
        n.say("drain: waiting for the server to go idle");
        interrupt.race(drain(http, plan, n)).await;
        interrupt.sleep(plan.after).await;
    }
    stop_handle.stop();
    for t in tasks {
        if let Ok(Err(e)) = t.await {
            n.warn(&e.to_string());
        }
    }
    // The writer finishes when every sender is gone: the sources' clones went with their tasks.
    drop(sink);
    let (mut store, _totals) = writer.finish()?;
    let interrupted_at = interrupt.at();
    if let Some(at) = interrupted_at {
        let done = load_done_s(at, load_started, plan.duration);
        store.interrupt_run(run, at, Some(done))?;
    }
    if let Some((prom, _)) = &plan.prom {
        read_prometheus_window(&mut store, run, prom, plan, observed_from, n).await?;
    }
    let facts = RunFacts {
        max_num_seqs: plan.max_num_seqs,
        max_num_batched_tokens: plan.max_num_batched_tokens,
        concurrency: plan.rate.is_none().then_some(plan.concurrency),
        load_window: Some(load_window),
        client_limited: report.total.client.limited,
        client_note: Some(report.total.client.verdict.clone()).filter(|v| !v.is_empty()),
        scrape_interval_s: Some(plan.interval.as_secs_f64()),
        simulated: plan.simulated,
        context: plan.context.clone(),
        client: Some(report.summary()),
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
    store.finish_run(run, status, unix_now(), None)?;
    analysed.interrupted = analysis::interruption(&store.run(run)?);
    Ok(RunOutcome {
        analysed,
        stopped_early: report.stopped_early.clone(),
    })
}

/// After the load, the run's window as Prometheus recorded it, stored with the run.
async fn read_prometheus_window(
    store: &mut Store,
    run: llmscope_store::RunId,
    prom: &PromClient,
    plan: &RunPlan,
    observed_from: f64,
    n: &dyn Narrator,
) -> Result<(), OpsError> {
    let step = plan.interval.as_secs_f64();
    n.say("reading the window from Prometheus");
    let window = WindowQuery {
        from: observed_from - step,
        to: unix_now(),
        step,
        matchers: &plan.matchers,
    };
    let read = read_window(prom, &window, |series| {
        let mut batch = Batch::new("prometheus");
        for s in series {
            batch.push_series(s);
        }
        store.write(run, &[batch])?;
        Ok(())
    })
    .await?;
    for w in &read.warnings {
        n.warn(&format!("Prometheus: {w}"));
    }
    if read.series == 0 {
        return Err(OpsError::NoData(
            "Prometheus returned no engine or GPU series for the run's window: it held them before the load, so check that it still scrapes the targets (and the --match matchers)".to_owned(),
        ));
    }
    Ok(())
}

/// Streams every finished record and the load's progress to the store writer (so a killed run
/// keeps what completed), and says a progress line every few seconds.
struct RunObserver<'a> {
    store: BatchSender,
    last_line: f64,
    narrator: &'a dyn Narrator,
}

impl Observer for RunObserver<'_> {
    fn records(&mut self, batch: &[RequestRecord]) {
        self.store
            .send_requests(batch.iter().map(request_row).collect());
    }

    fn progress(&mut self, p: &Progress) {
        let elapsed = p.elapsed.as_secs_f64();
        self.store.send_progress(elapsed);
        if elapsed - self.last_line >= 10.0 {
            self.last_line = elapsed;
            self.narrator.say(&format!(
                "load {elapsed:.0}s: {} in flight, {} done, {} failed, {:.0} output tok/s",
                p.in_flight, p.completed, p.failed, p.output_tokens_per_s
            ));
        }
    }
}

/// The load, on its own runtime: its threads are named for the load generator, so its
/// self-check measures the client alone, not the simulator or the scrapers beside it.
async fn run_load(
    plan: &LoadPlan,
    interrupt: &Interrupt,
    store: BatchSender,
    n: &dyn Narrator,
) -> Result<LoadReport, OpsError> {
    let rt = llmscope_loadgen::client::runtime(None).map_err(OpsError::Runtime)?;
    let (plan, run_control) = (plan.clone(), interrupt.control.clone());
    // Progress lines are said from the load's runtime: they are gathered here and said in turn.
    let (lines_tx, mut lines_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let task = rt.spawn(async move {
        let mut observer = RunObserver {
            store,
            last_line: 0.0,
            narrator: &Forward(lines_tx),
        };
        llmscope_loadgen::run(&plan, &mut observer, &run_control).await
    });
    let mut task = std::pin::pin!(task);
    let out = loop {
        tokio::select! {
            Some(line) = lines_rx.recv() => n.say(&line),
            done = &mut task => break done,
        }
    };
    while let Ok(line) = lines_rx.try_recv() {
        n.say(&line);
    }
    rt.shutdown_background();
    out.map_err(|e| OpsError::Task(format!("the load task failed: {e}")))
}

/// A narrator that hands its lines to another task.
struct Forward(tokio::sync::mpsc::UnboundedSender<String>);

impl Narrator for Forward {
    fn say(&self, line: &str) {
        let _ = self.0.send(line.to_owned());
    }
    fn warn(&self, line: &str) {
        let _ = self.0.send(format!("warning: {line}"));
    }
    fn note(&self, line: &str) {
        let _ = self.0.send(format!("note: {line}"));
    }
}

/// Polls the engine's metrics until nothing runs or waits and no token was generated since the
/// poll before (or the drain timeout).
async fn drain(client: &HttpClient, plan: &RunPlan, n: &dyn Narrator) {
    let Some(engine) = plan.scrape.first() else {
        return;
    };
    let headers = hyper::HeaderMap::new();
    let deadline = tokio::time::Instant::now() + plan.drain_timeout;
    let mut idle_at: Option<f64> = None;
    while tokio::time::Instant::now() < deadline {
        let get = llmscope_collect::http::Get {
            uri: engine.uri.clone(),
            headers: &headers,
            timeout: Duration::from_secs(5),
            body_limit: 16 << 20,
        };
        if let Ok(page) = client.get(get).await {
            let (families, _) = promtext::parse_families(&page.body);
            let sum = |concepts: &[Concept]| -> f64 {
                families
                    .iter()
                    .filter(|f| {
                        catalog::lookup(f.name.raw()).is_some_and(|d| concepts.contains(&d.concept))
                    })
                    .flat_map(|f| f.samples.iter().map(|s| s.value))
                    .sum()
            };
            // Idle twice in a row with no token generated in between: a real vLLM 0.32 reads
            // 0 running and 0 waiting in many scrapes while it still works (issue 22).
            let tokens = sum(&[Concept::GeneratedTokens]);
            if sum(&[Concept::Running, Concept::Waiting]) == 0.0 {
                if idle_at == Some(tokens) {
                    return;
                }
                idle_at = Some(tokens);
            } else {
                idle_at = None;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    n.warn(&format!(
        "the server was still busy after --drain-timeout {}",
        format_duration(plan.drain_timeout)
    ));
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
