//! The method of `docs/METHOD.md` on a resolved plan: pre-flight, idle baseline, sustained load
//! while observing, drain, then diagnose and record.
//!
//! Flow: [`preflight`] checks the design and the sources before minutes are spent on them;
//! [`execute`] goes through the recording lifecycle ([`crate::record`]): it creates the run
//! with one scrape source per target feeding the store's writer for the whole run, sleeps the
//! baseline, runs the load generator (`load`: its records streamed to the same writer, so a
//! killed run keeps what completed), waits for the drain (`drain`), stops the recording,
//! reads the window from Prometheus if that is where the metrics live, reads the run's series
//! back, diagnoses them with the run's facts, records the findings and finishes the run.
//! Cancelling ([`Cancel`]: Ctrl-C in the binary) stops the load and cuts the baseline and drain
//! short; what was measured is diagnosed and stored `interrupted`. What the user should hear on
//! the way is told to a [`Narrator`]; the library never prints. [`RunRequest::resolve`] turns
//! what was asked into the plan (starting the simulated stack when there is no target).

mod drain;
mod load;
mod preflight;
mod request;

pub use preflight::preflight;
pub use request::{REFERENCE_PROMPT, RunRequest, Workload, fd_preflight};

use crate::OpsError;
use crate::analysis::{self, Analysed, RunFacts};
use crate::cancel::Cancel;
use crate::record::{
    Ending, Recording, RunMeta, RunRecord, SourceResult, prometheus_spec, source_spec,
};
use crate::window::{WindowQuery, prometheus_batch, read_window};
use llmscope_collect::prom::PromClient;
use llmscope_collect::scrape::{ScrapeConfig, ScrapeSource, ScrapeTarget};
use llmscope_collect::time::unix_now;
use llmscope_collect::{HttpClient, Source, Window};
use llmscope_core::duration::format_duration;
use llmscope_diagnosis::build::signals_from_series;
use llmscope_loadgen::{LoadPlan, LoadReport};
use llmscope_store::{RunStatus, SourceSpec, Store};
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
    /// What the run is stored as (`run`; `capacity` for a stage of a capacity search).
    pub kind: &'static str,
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
    /// What the client measured.
    pub report: LoadReport,
}

/// Runs the method on `plan` with the load `load`, and records and diagnoses the run;
/// `cancel` stops it early (it is then stored `interrupted`, what was measured diagnosed).
pub async fn execute(
    plan: &RunPlan,
    load: &LoadPlan,
    cancel: &Cancel,
    http: &HttpClient,
    n: &dyn Narrator,
) -> Result<RunOutcome, OpsError> {
    let mut recording = begin(plan, http)?;
    let observed_from = unix_now();
    // The user's Ctrl-C, or the store refusing writes (a full disk), stops what is measured.
    let stopping = recording.stopping(cancel);
    let report = measure(plan, load, &stopping, &recording, http, n).await?;
    let (mut record, sources) = match recording.stop().await {
        Err(OpsError::StoreStopped(mut stopped)) => {
            stopped.db = Some(plan.db.clone());
            stopped.report = Some(Box::new(report));
            return Err(OpsError::StoreStopped(stopped));
        }
        other => other?,
    };
    warn_failed(&sources, n);
    let status = stopped_at(&mut record, cancel.at(), &report, plan)?;
    if let Some((prom, _)) = &plan.prom {
        read_prometheus_window(&mut record, prom, plan, observed_from, n).await?;
    }
    Ok(RunOutcome {
        analysed: judge(record, run_facts(plan, &report), status)?,
        stopped_early: report.stopped_early.clone(),
        report,
    })
}

/// How the run ends: `interrupted` at `at` when it was cancelled (with how much of the load was
/// done), else `completed`.
fn stopped_at(
    record: &mut RunRecord,
    at: Option<f64>,
    report: &LoadReport,
    plan: &RunPlan,
) -> Result<RunStatus, OpsError> {
    let Some(at) = at else {
        return Ok(RunStatus::Completed);
    };
    let done = load_done_s(at, load_started(report), plan.duration);
    record.interrupt(at, Some(done))?;
    Ok(RunStatus::Interrupted)
}

/// The run created with its sources, each target scraped for the whole run.
fn begin(plan: &RunPlan, http: &HttpClient) -> Result<Recording, OpsError> {
    let store = Store::open(&plan.db)?;
    let sources = scrapers(plan, http);
    let mut specs: Vec<SourceSpec> = sources.iter().map(|s| source_spec(s.as_ref())).collect();
    specs.extend(plan.prom.as_ref().map(|(_, url)| prometheus_spec(url)));
    let mut meta = RunMeta::new(plan.kind, plan.config.clone());
    meta.planned_s = Some(plan.duration.as_secs_f64());
    let mut recording = Recording::begin(store, &meta, &specs)?;
    for s in sources {
        recording.collect(s, WHOLE_RUN);
    }
    Ok(recording)
}

/// Scrapers stop with the recording, long before this.
const WHOLE_RUN: Window = Window::Live {
    duration: Duration::from_secs(24 * 3600),
};

/// One scraper per target, at the plan's interval.
fn scrapers(plan: &RunPlan, http: &HttpClient) -> Vec<Arc<dyn Source>> {
    let scraper = |t: &ScrapeTarget| -> Arc<dyn Source> {
        let cfg = ScrapeConfig::new(plan.interval);
        Arc::new(ScrapeSource::new(t.clone(), cfg, http.clone()))
    };
    plan.scrape.iter().map(scraper).collect()
}

/// Baseline, load and drain, while the recording records; cancelling cuts them short (the
/// drain is skipped).
async fn measure(
    plan: &RunPlan,
    load: &LoadPlan,
    cancel: &Cancel,
    recording: &Recording,
    http: &HttpClient,
    n: &dyn Narrator,
) -> Result<LoadReport, OpsError> {
    n.say(&format!(
        "baseline: {} idle",
        format_duration(plan.baseline)
    ));
    cancel.sleep(plan.baseline).await;
    let shape = match load.stages.first() {
        // A trace replay, an open loop or sessions: the stage says what it is.
        Some(stage) if !matches!(stage.mode, llmscope_loadgen::Mode::Closed { .. }) => {
            stage.label()
        }
        _ if load.sessions.is_some() => format!("{} sessions in flight", plan.concurrency),
        _ => format!("{} workers", plan.concurrency),
    };
    n.say(&format!(
        "load: {shape} for {}",
        format_duration(plan.duration)
    ));
    let report = load::run_load(load, cancel, &recording.halted(), recording.sink(), n).await?;
    if !cancel.is_cancelled() {
        after_load(plan, cancel, http, n).await;
    }
    Ok(report)
}

/// The drain, then what is observed after it (dcgm values lag).
async fn after_load(plan: &RunPlan, cancel: &Cancel, http: &HttpClient, n: &dyn Narrator) {
    n.say("drain: waiting for the server to go idle");
    cancel.race(drain::drain(http, plan, n)).await;
    cancel.sleep(plan.after).await;
}

/// A source that could not even start weakens the run: said, not fatal.
fn warn_failed(sources: &[SourceResult], n: &dyn Narrator) {
    for (_, result) in sources {
        if let Err(e) = result {
            n.warn(&e.to_string());
        }
    }
}

/// When the load started, Unix seconds.
fn load_started(report: &LoadReport) -> f64 {
    report.started_unix_ns as f64 / 1e9
}

/// Seconds of the load done at `at`: from the load's start, within `0..=planned`.
fn load_done_s(at: f64, load_started: f64, planned: Duration) -> f64 {
    (at - load_started).clamp(0.0, planned.as_secs_f64())
}

/// What the diagnosis needs beyond the series, stored with the run.
fn run_facts(plan: &RunPlan, report: &LoadReport) -> RunFacts {
    let load_started = load_started(report);
    RunFacts {
        max_num_seqs: plan.max_num_seqs,
        max_num_batched_tokens: plan.max_num_batched_tokens,
        concurrency: plan.rate.is_none().then_some(plan.concurrency),
        load_window: Some((load_started, load_started + report.total.duration_s)),
        client_limited: report.total.client.limited,
        client_note: Some(report.total.client.verdict.clone()).filter(|v| !v.is_empty()),
        scrape_interval_s: Some(plan.interval.as_secs_f64()),
        simulated: plan.simulated,
        context: plan.context.clone(),
        client: Some(report.summary()),
    }
}

/// Diagnoses the run's series with its facts, stores the findings and ends the run.
fn judge(record: RunRecord, facts: RunFacts, status: RunStatus) -> Result<Analysed, OpsError> {
    let (input, res) = signals_from_series(&record.series()?);
    let run = record.id();
    let mut analysed = analysis::analyse_input(run, input, &res, facts)?;
    let store = record.finish(Ending {
        status,
        findings: &analysis::stored_findings(&analysed)?,
        versions: None,
        window: None,
    })?;
    analysed.interrupted = analysis::interruption(&store.run(run)?);
    analysed.requests = analysis::request_timings(&store, run)?;
    Ok(analysed)
}

/// After the load, the run's window as Prometheus recorded it, stored with the run.
async fn read_prometheus_window(
    record: &mut RunRecord,
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
        record.write(prometheus_batch(series))
    })
    .await?;
    for w in read.warnings.iter().chain(&read.notes()) {
        n.warn(&format!("Prometheus: {w}"));
    }
    if read.series == 0 {
        return Err(OpsError::NoData(
            "Prometheus returned no engine or GPU series for the run's window: it held them before the load, so check that it still scrapes the targets (and the --match matchers)".to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_done_is_clamped_to_the_plan() {
        let planned = Duration::from_secs(30);
        assert_eq!(load_done_s(112.0, 100.0, planned), 12.0);
        assert_eq!(
            load_done_s(90.0, 100.0, planned),
            0.0,
            "during the baseline"
        );
        assert_eq!(load_done_s(190.0, 100.0, planned), 30.0, "during the drain");
    }
}
