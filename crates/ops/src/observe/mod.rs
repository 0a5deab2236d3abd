//! `observe`: record metrics from targets (direct scrape) or a Prometheus-compatible server
//! over a window, into the run store.
//!
//! [`execute`] goes through the recording lifecycle ([`crate::record`]): the run is created
//! with its sources registered, every source reads the window at once into the store's writer,
//! then the sources' problems become findings (`ending`) and the run is finished; the
//! [`Outcome`] is computed back from the database. A failing source never stops the others;
//! cancelling ([`Cancel`]: Ctrl-C in the binary) stops them all and the run is `interrupted`.
//! [`ObserveRequest::plan`] validates what was asked into the plan; the outcome writes itself
//! as text or JSON.

mod ending;
mod request;
mod summary;

pub use request::ObserveRequest;

use crate::OpsError;
use crate::cancel::Cancel;
use crate::record::{Recording, RunMeta, source_spec};
use llmscope_collect::prom::{PromClient, PromConfig, PromSource};
use llmscope_collect::scrape::{ScrapeConfig, ScrapeSource, ScrapeTarget};
use llmscope_collect::{HttpClient, Source, Window};
use llmscope_store::writer::BatchSender;
use llmscope_store::{Finding, RunId, RunStatus, SourceSpec, SourceStats, Store};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// Records the plan's window into a new run until it ends or `cancel` fires; `ticker` hears
/// how a live window progresses.
pub async fn execute(
    plan: &ObservePlan,
    ticker: Arc<dyn Ticker>,
    cancel: &Cancel,
) -> Result<Outcome, OpsError> {
    let sources = build_sources(plan)?;
    let mut recording = begin(plan, &sources)?;
    let progress = Progress::start(plan.window, &recording, ticker);
    cancel.race(recording.collected()).await;
    progress.finish().await;
    let (record, results) = recording.stop().await?;
    ending::finish(record, plan, sources.len(), &results)
}

/// The run created with its sources, every source reading the window into it.
fn begin(plan: &ObservePlan, sources: &[Arc<dyn Source>]) -> Result<Recording, OpsError> {
    let specs: Vec<SourceSpec> = sources.iter().map(|s| source_spec(s.as_ref())).collect();
    let mut recording = Recording::begin(Store::open(&plan.db)?, &run_meta(plan), &specs)?;
    for s in sources {
        recording.collect(Arc::clone(s), plan.window);
    }
    Ok(recording)
}

/// The run as created: a past window is known up front, a live one is planned.
fn run_meta(plan: &ObservePlan) -> RunMeta {
    let mut meta = RunMeta::new("observe", plan.config.clone());
    match plan.window {
        Window::Past { from, to } => meta.window = Some((from, to)),
        Window::Live { duration } => meta.planned_s = Some(duration.as_secs_f64()),
    }
    meta
}

/// Every source of the plan, on one HTTP client (trusting `--ca-file` too).
fn build_sources(plan: &ObservePlan) -> Result<Vec<Arc<dyn Source>>, OpsError> {
    let http = HttpClient::new(plan.ca_file.as_deref())
        .map_err(|e| OpsError::Refused(format!("--ca-file: {e}")))?;
    let build = |s: &SourcePlan| -> Arc<dyn Source> {
        match s {
            SourcePlan::Scrape(t, c) => {
                Arc::new(ScrapeSource::new(t.clone(), c.clone(), http.clone()))
            }
            SourcePlan::Prometheus { cfg, matchers } => {
                let client = PromClient::new(cfg.clone(), http.clone());
                let m = matchers.clone();
                Arc::new(PromSource::new("prometheus", client, m, plan.interval))
            }
        }
    };
    Ok(plan.sources.iter().map(build).collect())
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
    fn start(window: Window, recording: &Recording, ticker: Arc<dyn Ticker>) -> Progress {
        let Window::Live { duration } = window else {
            return Progress { task: None, ticker };
        };
        let beat = beat(
            recording.sink(),
            recording.committed(),
            Arc::clone(&ticker),
            duration,
        );
        Progress {
            task: Some(tokio::spawn(beat)),
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

/// Every tick: how far the window got, to the store and to the ticker.
async fn beat(
    store: BatchSender,
    committed: Arc<AtomicU64>,
    t: Arc<dyn Ticker>,
    planned: Duration,
) {
    let started = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(t.every()).await;
        store.send_progress(started.elapsed().as_secs_f64());
        t.tick(
            started.elapsed(),
            planned,
            committed.load(Ordering::Relaxed),
        );
    }
}
