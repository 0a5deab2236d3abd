//! `observe`: record metrics from targets (direct scrape) or a Prometheus-compatible server
//! over a window, into the run store.
//!
//! [`execute`] opens the store, starts a run, registers the sources, starts the store's writer
//! thread, runs every source concurrently with their batches going to the writer, then records
//! problems as findings and finishes the run; the [`Outcome`] is computed back from the database.
//! A failing source never stops the others; Ctrl-C stops them all and the run is `interrupted`.
//! [`ObserveRequest::plan`] validates what was asked into the plan; the outcome writes itself
//! as text or JSON.

mod request;
mod summary;

pub use request::ObserveRequest;

use crate::OpsError;
use llmscope_collect::prom::{PromClient, PromConfig, PromSource};
use llmscope_collect::scrape::{ScrapeConfig, ScrapeSource, ScrapeTarget};
use llmscope_collect::time::unix_now;
use llmscope_collect::{HttpClient, Sink, Source, SourceReport, Stop, Window};
use llmscope_core::series::Batch;
use llmscope_core::severity::Severity;
use llmscope_store::{Finding, NewRun, RunId, RunStatus, SourceSpec, SourceStats, Store, writer};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A source to build once the HTTP client exists.
#[derive(Debug, Clone)]
pub enum SourcePlan {
    Scrape(ScrapeTarget, ScrapeConfig),
    Prometheus {
        cfg: PromConfig,
        matchers: Vec<String>,
    },
}

/// The validated command: what to read, over which window, into which store.
#[derive(Debug)]
pub struct ObservePlan {
    pub sources: Vec<SourcePlan>,
    pub window: Window,
    pub interval: Duration,
    pub ca_file: Option<PathBuf>,
    pub db: PathBuf,
    /// The configuration as stored with the run: no secrets.
    pub config: serde_json::Value,
}

/// The name a source's series are stored under.
pub fn source_name(s: &SourcePlan) -> &str {
    match s {
        SourcePlan::Scrape(t, _) => &t.name,
        SourcePlan::Prometheus { .. } => "prometheus",
    }
}

/// What is stored as the run's configuration: no tokens, passwords or header values.
/// What a finished observation produced.
#[derive(Debug)]
pub struct Outcome {
    pub run: RunId,
    pub status: RunStatus,
    pub window: (f64, f64),
    pub stats: Vec<SourceStats>,
    pub versions: BTreeMap<String, String>,
    pub findings: Vec<Finding>,
}

/// Records the plan's window into a new run; `ticker` hears how a live window progresses.
pub async fn execute(plan: &ObservePlan, ticker: Arc<dyn Ticker>) -> Result<Outcome, OpsError> {
    let http = HttpClient::new(plan.ca_file.as_deref())
        .map_err(|e| OpsError::Refused(format!("--ca-file: {e}")))?;
    let sources = build_sources(plan, &http);
    let mut store = Store::open(&plan.db)?;
    let run = store.create_run(&NewRun {
        kind: "observe".into(),
        started_at: unix_now(),
        window: match plan.window {
            Window::Past { from, to } => Some((from, to)),
            Window::Live { .. } => None,
        },
        tool_version: env!("CARGO_PKG_VERSION").into(),
        config: plan.config.clone(),
        planned_s: match plan.window {
            Window::Live { duration } => Some(duration.as_secs_f64()),
            Window::Past { .. } => None,
        },
    })?;
    for s in &sources {
        let spec = SourceSpec {
            name: s.name().to_owned(),
            kind: s.kind().to_owned(),
            url: s.url(),
        };
        store.add_source(run, &spec)?;
    }
    let writer = writer::spawn(store, run)?;
    let results = collect_all(plan, &sources, &writer, ticker).await;
    let (mut store, _) = writer.finish()?;
    finish(&mut store, run, plan, &sources, results)
}

fn build_sources(plan: &ObservePlan, http: &HttpClient) -> Vec<Arc<dyn Source>> {
    let step = plan.interval;
    plan.sources
        .iter()
        .map(|s| -> Arc<dyn Source> {
            match s {
                SourcePlan::Scrape(t, c) => {
                    Arc::new(ScrapeSource::new(t.clone(), c.clone(), http.clone()))
                }
                SourcePlan::Prometheus { cfg, matchers } => {
                    let client = PromClient::new(cfg.clone(), http.clone());
                    Arc::new(PromSource::new(
                        "prometheus",
                        client,
                        matchers.clone(),
                        step,
                    ))
                }
            }
        })
        .collect()
}

type Collected = Vec<(String, Result<SourceReport, llmscope_collect::SourceError>)>;

/// Runs every source at once; Ctrl-C stops them; progress to the ticker.
async fn collect_all(
    plan: &ObservePlan,
    sources: &[Arc<dyn Source>],
    writer: &writer::Writer,
    ticker: Arc<dyn Ticker>,
) -> Collected {
    let (stop_handle, stop) = Stop::new();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stop_handle.stop();
        }
    });
    let tx = writer.sender();
    let sink: Arc<dyn Sink> = Arc::new(move |b: Batch| tx.send(b));
    let mut tasks = tokio::task::JoinSet::new();
    for (i, s) in sources.iter().enumerate() {
        let (s, sink, stop, window) = (Arc::clone(s), Arc::clone(&sink), stop.clone(), plan.window);
        tasks.spawn(async move {
            (
                i,
                s.name().to_owned(),
                s.collect(window, &*sink, stop).await,
            )
        });
    }
    drop(sink);
    let progress = Progress::start(plan.window, writer, ticker);
    let mut out: Vec<(usize, String, _)> = Vec::new();
    while let Some(done) = tasks.join_next().await {
        if let Ok(r) = done {
            out.push(r);
        }
    }
    progress.finish().await;
    ctrl_c.abort();
    out.sort_by_key(|(i, _, _)| *i);
    out.into_iter().map(|(_, n, r)| (n, r)).collect()
}

/// Hears how a live window progresses (the library never prints).
pub trait Ticker: Send + Sync {
    /// How often to be told.
    fn every(&self) -> Duration;
    /// `elapsed` of `planned`, with `samples` stored so far.
    fn tick(&self, elapsed: Duration, planned: Duration, samples: u64);
    /// The window ended.
    fn done(&self);
}

/// Heartbeats to the store (how far the window got: a killed run says so) and ticks.
struct Progress {
    task: Option<tokio::task::JoinHandle<()>>,
    ticker: Arc<dyn Ticker>,
}

impl Progress {
    fn start(window: Window, writer: &writer::Writer, ticker: Arc<dyn Ticker>) -> Progress {
        let Window::Live { duration } = window else {
            return Progress { task: None, ticker };
        };
        let counter = writer.progress_counter();
        let store = writer.sender();
        let t = Arc::clone(&ticker);
        let task = tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            loop {
                tokio::time::sleep(t.every()).await;
                store.send_progress(started.elapsed().as_secs_f64());
                t.tick(
                    started.elapsed(),
                    duration,
                    counter.load(std::sync::atomic::Ordering::Relaxed),
                );
            }
        });
        Progress {
            task: Some(task),
            ticker,
        }
    }

    /// Stops the progress task and waits until it is gone (with its sender to the writer).
    async fn finish(self) {
        if let Some(t) = self.task {
            t.abort();
            let _ = t.await;
            self.ticker.done();
        }
    }
}

/// Findings, versions and status, then the stored per-source statistics.
fn finish(
    store: &mut Store,
    run: RunId,
    plan: &ObservePlan,
    sources: &[Arc<dyn Source>],
    results: Collected,
) -> Result<Outcome, OpsError> {
    let mut findings = Vec::new();
    let mut versions = BTreeMap::new();
    let mut window = match plan.window {
        Window::Past { from, to } => (from, to),
        Window::Live { .. } => (f64::INFINITY, f64::NEG_INFINITY),
    };
    let mut stopped = false;
    for (name, result) in &results {
        match result {
            Ok(r) => {
                findings.extend(report_findings(r));
                if let Some(v) = &r.version {
                    versions.insert(name.clone(), v.clone());
                }
                window = (window.0.min(r.window.0), window.1.max(r.window.1));
                stopped |= r.stopped;
            }
            Err(e) => findings.push(finding(
                Severity::Error,
                "source_failed",
                name,
                e.to_string(),
                serde_json::json!({}),
            )),
        }
    }
    if !window.0.is_finite() {
        window = (unix_now(), unix_now());
    }
    let stats = store.source_stats(run, plan.interval.as_secs_f64())?;
    let status = status(stopped, &stats, &findings, sources.len());
    store.add_findings(run, &findings)?;
    store.set_server_versions(run, &versions)?;
    if status == RunStatus::Interrupted {
        // Sources stop at Ctrl-C: the end of what they delivered is when, its length how far.
        store.interrupt_run(run, window.1, Some((window.1 - window.0).max(0.0)))?;
    }
    store.finish_run(run, status, unix_now(), Some(window))?;
    Ok(Outcome {
        run,
        status,
        window,
        stats,
        versions,
        findings,
    })
}

fn status(stopped: bool, stats: &[SourceStats], findings: &[Finding], n: usize) -> RunStatus {
    if stopped {
        RunStatus::Interrupted
    } else if stats.iter().all(|s| s.samples == 0) || stats.len() < n {
        RunStatus::Failed
    } else if findings.iter().any(|f| f.severity != Severity::Info) {
        RunStatus::Partial
    } else {
        RunStatus::Completed
    }
}

/// One finding per problem kind of a source, plus its API warnings.
fn report_findings(r: &SourceReport) -> Vec<Finding> {
    let mut out: Vec<Finding> = r
        .problems
        .iter()
        .map(|p| {
            let all_failed = r.attempts > 0 && r.failures == r.attempts;
            let severity = if all_failed {
                Severity::Error
            } else {
                Severity::Warning
            };
            let what = if r.kind == "scrape" {
                "scrapes"
            } else {
                "queries"
            };
            let message = format!(
                "{} of {} {what} of `{}` failed ({}); first: {}",
                p.count, r.attempts, r.name, p.kind, p.message
            );
            let message = if p.kind == llmscope_core::series::FailureKind::NoData {
                p.message.clone()
            } else {
                message
            };
            let evidence = serde_json::json!({
                "kind": p.kind, "count": p.count, "attempts": r.attempts,
                "first_t": p.first_t, "last_t": p.last_t,
            });
            finding(
                severity,
                &format!("source_{}", p.kind),
                &r.name,
                message,
                evidence,
            )
        })
        .collect();
    for w in &r.warnings {
        out.push(finding(
            Severity::Warning,
            "api_warning",
            &r.name,
            w.clone(),
            serde_json::json!({}),
        ));
    }
    out
}

fn finding(
    severity: Severity,
    code: &str,
    source: &str,
    message: String,
    detail: serde_json::Value,
) -> Finding {
    let mut f = Finding::new(code.to_owned(), severity, message);
    f.source = Some(source.into());
    f.detail = Some(detail).filter(|d| d.as_object().is_none_or(|o| !o.is_empty()));
    f
}
