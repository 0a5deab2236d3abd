//! `diagnose --prometheus`: a past window of a Prometheus-compatible server, diagnosed and kept
//! as a run.
//!
//! The window is read a name at a time ([`crate::window`]); each name's series go at once into
//! the store (the run is created when the first name answers, so an empty window leaves no run
//! behind) and into a [`SignalBuilder`], then are dropped. Memory is one name's answer plus the
//! signals, whatever the window's length or the fleet's size. The signals are diagnosed with the
//! caller's facts, and the findings recorded with the run.

use crate::OpsError;
use crate::analysis::{self, Analysed, RunFacts};
use crate::window::{WindowQuery, WindowRead, read_window};
use llmscope_collect::prom::client::PromClient;
use llmscope_collect::time::{format_rfc3339, unix_now};
use llmscope_core::diagnose::build::SignalBuilder;
use llmscope_core::series::Batch;
use llmscope_store::{NewRun, RunId, RunStatus, SourceSpec, Store};
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
    let started = unix_now();
    let w = &d.window;
    let mut signals = SignalBuilder::default();
    let mut kept: Option<(Store, RunId)> = None;
    let read = read_window(client, w, |series| {
        let (store, run) = match &mut kept {
            Some(k) => k,
            None => kept.insert(open_run(&d, started)?),
        };
        signals.add(&series);
        let mut batch = Batch::new("prometheus");
        for s in series {
            batch.push_series(s);
        }
        store.write(*run, &[batch])?;
        Ok(())
    })
    .await?;
    let Some((mut store, run)) = kept else {
        return Err(OpsError::NoData(nothing_found(&d)));
    };
    let mut facts = d.facts;
    facts.scrape_interval_s = Some(w.step);
    facts.context.push(format!(
        "Prometheus {}, window {} … {}",
        d.url,
        format_rfc3339(w.from),
        format_rfc3339(w.to)
    ));
    let (input, res) = signals.finish();
    let analysed = analysis::analyse_input(run, input, &res, facts)?;
    analysis::store_findings(&mut store, &analysed)?;
    store.finish_run(run, RunStatus::Completed, unix_now(), Some((w.from, w.to)))?;
    Ok(Diagnosed {
        analysed,
        store,
        read,
    })
}

/// The store and a new `diagnose` run in it, with Prometheus as its source.
fn open_run(d: &WindowDiagnosis<'_>, started: f64) -> Result<(Store, RunId), OpsError> {
    let mut store = Store::open(d.db)?;
    let w = &d.window;
    let run = store.create_run(&NewRun {
        kind: "diagnose".to_owned(),
        started_at: started,
        window: Some((w.from, w.to)),
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        config: serde_json::json!({"prometheus": d.url, "step_s": w.step, "match": w.matchers}),
        planned_s: None,
    })?;
    store.add_source(
        run,
        &SourceSpec {
            name: "prometheus".to_owned(),
            kind: "prometheus".to_owned(),
            url: d.url.clone(),
        },
    )?;
    Ok((store, run))
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
