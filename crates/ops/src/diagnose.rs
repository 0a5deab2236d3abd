//! `diagnose --prometheus`: a past window of a Prometheus-compatible server, diagnosed and kept
//! as a run.
//!
//! The window is read a name at a time ([`crate::window`]); each name's series go at once into
//! the store (the run is created when the first name answers, so an empty window leaves no run
//! behind) and into a [`SignalBuilder`], then are dropped: the recording lifecycle
//! ([`crate::record`]) without a live part. Memory is one name's answer plus the
//! signals, whatever the window's length or the fleet's size. The signals are diagnosed with the
//! caller's facts, and the findings recorded with the run.

use crate::OpsError;
use crate::analysis::{self, Analysed, RunFacts};
use crate::record::{Ending, RunMeta, RunRecord, prometheus_spec};
use crate::window::{WindowQuery, WindowRead, prometheus_batch, read_window};
use llmscope_collect::prom::client::PromClient;
use llmscope_collect::time::format_rfc3339;
use llmscope_core::series::Series;
use llmscope_diagnosis::build::SignalBuilder;
use llmscope_store::{RunStatus, Store};
use std::path::Path;

/// A window to diagnose and where to keep it.
#[derive(Debug, Clone)]
pub struct WindowDiagnosis<'a> {
    /// The server's URL as it may be stored and shown (credentials redacted).
    pub url: String,
    pub window: WindowQuery<'a>,
    /// What the caller knows of the engine and the load; the step and the window are added.
    pub facts: RunFacts,
    pub db: &'a Path,
}

/// The diagnosed window, its run in `store`, and what was read.
#[derive(Debug)]
pub struct Diagnosed {
    pub analysed: Analysed,
    pub store: Store,
    pub read: WindowRead,
}

/// Reads, stores and diagnoses the window.
pub async fn diagnose_window(
    client: &PromClient,
    d: WindowDiagnosis<'_>,
) -> Result<Diagnosed, OpsError> {
    let mut kept = Kept::new(&d);
    let read = read_window(client, &d.window, |series| kept.keep(series)).await?;
    let Some(record) = kept.record else {
        return Err(OpsError::NoData(nothing_found(&d)));
    };
    let (analysed, store) = judge(record, kept.signals, &d, read.notes())?;
    Ok(Diagnosed {
        analysed,
        store,
        read,
    })
}

/// Diagnoses the signals with the caller's facts, stores the findings and ends the run.
/// What the read left out of the server's answers goes with the facts, so the report says it.
fn judge(
    record: RunRecord,
    signals: SignalBuilder,
    d: &WindowDiagnosis<'_>,
    left_out: Vec<String>,
) -> Result<(Analysed, Store), OpsError> {
    let (input, res) = signals.finish();
    let mut facts = facts(d);
    facts
        .context
        .extend(left_out.into_iter().map(|n| format!("Prometheus: {n}")));
    let analysed = analysis::analyse_input(record.id(), input, &res, facts)?;
    let store = record.finish(Ending {
        status: RunStatus::Completed,
        findings: &analysis::stored_findings(&analysed)?,
        versions: None,
        window: Some((d.window.from, d.window.to)),
    })?;
    Ok((analysed, store))
}

/// Where each name's series go as they arrive: the run (created with the first of them) and
/// the signals.
struct Kept<'a> {
    d: &'a WindowDiagnosis<'a>,
    /// Started when asked, not when the first name answered.
    meta: RunMeta,
    record: Option<RunRecord>,
    signals: SignalBuilder,
}

impl<'a> Kept<'a> {
    fn new(d: &'a WindowDiagnosis<'a>) -> Kept<'a> {
        Kept {
            d,
            meta: run_meta(d),
            record: None,
            signals: SignalBuilder::per_replica(),
        }
    }

    fn keep(&mut self, series: Vec<Series>) -> Result<(), OpsError> {
        let record = match &mut self.record {
            Some(r) => r,
            None => self.record.insert(open_run(self.d, &self.meta)?),
        };
        self.signals.add(&series);
        record.write(prometheus_batch(series))
    }
}

/// The run as created: a `diagnose` run of the window, started when asked.
fn run_meta(d: &WindowDiagnosis<'_>) -> RunMeta {
    let w = &d.window;
    let config = serde_json::json!({"prometheus": d.url, "step_s": w.step, "match": w.matchers});
    let mut meta = RunMeta::new("diagnose", config);
    meta.window = Some((w.from, w.to));
    meta
}

/// The store and a new `diagnose` run in it, with Prometheus as its source.
fn open_run(d: &WindowDiagnosis<'_>, meta: &RunMeta) -> Result<RunRecord, OpsError> {
    RunRecord::create(Store::open(d.db)?, meta, &[prometheus_spec(&d.url)])
}

/// The caller's facts, with the step and the window.
fn facts(d: &WindowDiagnosis<'_>) -> RunFacts {
    let (w, mut facts) = (&d.window, d.facts.clone());
    facts.scrape_interval_s = Some(w.step);
    facts.context.push(format!(
        "Prometheus {}, window {} … {}",
        d.url,
        format_rfc3339(w.from),
        format_rfc3339(w.to)
    ));
    facts
}

/// Why an empty window is empty, and what to check.
fn nothing_found(d: &WindowDiagnosis<'_>) -> String {
    let m = d.window.matchers;
    let (matching, check) = if m.is_empty() {
        (String::new(), "")
    } else {
        (format!(" matching {}", m.join(" or ")), ", the matchers")
    };
    format!(
        "Prometheus at {} has no engine or GPU series in that window{matching} (looked for the catalog's vLLM, SGLang, TGI and dcgm-exporter names); check the window{check} and that the targets are scraped",
        d.url
    )
}
