//! From a stored run to a rendered report: the shared back half of `run`, `diagnose` and `report`.
//!
//! The facts a diagnosis needs beyond the series (engine flags, load shape, the client's own
//! report) are stored with the run as a `run_facts` finding, so `report RUN` re-diagnoses the
//! stored series exactly as `run` did (the diagnosis is pure and deterministic).

use crate::OpsError;
use llmscope_core::outcome::ClientSummary;
use llmscope_core::outcome::RequestOutcome;
use llmscope_diagnosis::build::{Resolution, signals_from_series};
use llmscope_diagnosis::{Concept, Diagnosis, EngineFacts, Input, LoadFacts, Severity, diagnose};
use llmscope_loadgen::LoadReport;
use llmscope_render::{Interruption, Report, RequestTiming, html, json, markdown, terminal};
use llmscope_store::{Finding, RunId, RunStatus, RunSummary, Store};
use serde::{Deserialize, Serialize};
use std::io::Write;

/// Facts stored with a run, beside its series.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunFacts {
    pub max_num_seqs: Option<u32>,
    pub max_num_batched_tokens: Option<u32>,
    pub concurrency: Option<u32>,
    pub load_window: Option<(f64, f64)>,
    pub client_limited: bool,
    pub client_note: Option<String>,
    pub scrape_interval_s: Option<f64>,
    pub simulated: bool,
    pub context: Vec<String>,
    /// The client side of the load, typed: the request outcome, the concurrency kept and the
    /// contention are read from it (one source, so runs stored before those were read get them
    /// too). Runs stored before it was typed kept the whole `llmscope load --format json`
    /// report here; that JSON reads as a summary.
    pub client: Option<ClientSummary>,
}

/// The request outcome of a load report (see [`ClientSummary::request_outcome`]).
pub fn request_outcome(r: &LoadReport) -> RequestOutcome {
    r.summary().request_outcome()
}

const FACTS_CODE: &str = "run_facts";

/// A diagnosed run, ready to render.
#[derive(Debug)]
pub struct Analysed {
    pub run: RunId,
    pub facts: RunFacts,
    pub input: Input,
    pub diagnosis: Diagnosis,
    /// Which metric name each concept was read from (`running ← vllm:num_requests_running`).
    pub used: Vec<String>,
    /// The same, typed.
    pub names: Vec<(Concept, &'static str)>,
    /// When and how far, if the run was stopped before its end.
    pub interrupted: Option<Interruption>,
    /// The client's requests as the store kept them (empty for a run without a load).
    pub requests: Vec<RequestTiming>,
}

/// What a report says about a run stopped before its end (`None` for one that was not).
pub fn interruption(run: &RunSummary) -> Option<Interruption> {
    if run.status != RunStatus::Interrupted {
        return None;
    }
    let at = run.interrupted_at.or(run.ended_at)?;
    Some(Interruption {
        at: llmscope_collect::time::format_rfc3339(at),
        done_s: run.done_s,
        planned_s: run.planned_s,
    })
}

/// Reads the run's series and facts from the store and diagnoses them.
/// A run stored without facts (e.g. by `observe`) is diagnosed with none; facts that are stored
/// but cannot be read are an error.
pub fn analyse(store: &Store, run: RunId) -> Result<Analysed, OpsError> {
    let series: Vec<_> = store
        .series(run, None)?
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    let facts = stored_facts(store, run)?;
    let (input, res) = signals_from_series(&series);
    let mut a = analyse_input(run, input, &res, facts)?;
    a.interrupted = interruption(&store.run(run)?);
    a.requests = request_timings(store, run)?;
    Ok(a)
}

/// The run's stored requests as the charts over time take them.
pub fn request_timings(store: &Store, run: RunId) -> Result<Vec<RequestTiming>, OpsError> {
    let s = |ns: u64| ns as f64 / 1e9;
    let rows = store.requests(run)?;
    let timing = |r: llmscope_store::RequestRow| RequestTiming {
        sent: s(r.sent_unix_ns),
        end: s(r.end_unix_ns),
        ttft_s: r
            .first_token_unix_ns
            .and_then(|t| t.checked_sub(r.sent_unix_ns))
            .map(s),
        error: r.error,
    };
    Ok(rows.into_iter().map(timing).collect())
}

/// The facts stored with a run: none for a run stored without (e.g. by `observe`); facts that
/// cannot be read are an error.
fn stored_facts(store: &Store, run: RunId) -> Result<RunFacts, OpsError> {
    let findings = store.findings(run)?;
    let Some(f) = findings.into_iter().find(|f| f.rule == FACTS_CODE) else {
        return Ok(RunFacts::default());
    };
    serde_json::from_value(f.detail.unwrap_or_default()).map_err(|e| OpsError::Facts {
        run,
        why: e.to_string(),
    })
}

/// Diagnoses signals built from a run's series (`input`, as [`signals_from_series`] or a
/// [`llmscope_diagnosis::build::SignalBuilder`] made them) with the run's facts.
pub fn analyse_input(
    run: RunId,
    mut input: Input,
    res: &Resolution,
    facts: RunFacts,
) -> Result<Analysed, OpsError> {
    input.engine = EngineFacts {
        max_num_seqs: facts.max_num_seqs,
        max_num_batched_tokens: facts.max_num_batched_tokens,
        time_sliced: false,
        kv_cache: input.engine.kv_cache.take(),
    };
    input.load = load_facts(&facts);
    input.scrape_interval_s = facts.scrape_interval_s;
    let diagnosis = diagnose(&input);
    let used = res
        .used
        .iter()
        .map(|(c, name)| format!("{} ← {name}", c.name()))
        .collect();
    let mut a = Analysed {
        run,
        facts,
        input,
        diagnosis,
        used,
        names: res.used.clone(),
        interrupted: None,
        requests: Vec::new(),
    };
    crate::whatif::annotate(&mut a);
    Ok(a)
}

/// What the diagnosis knows of the load: its shape, and what the client saw.
fn load_facts(facts: &RunFacts) -> LoadFacts {
    let report = facts.client.as_ref();
    LoadFacts {
        concurrency: facts.concurrency,
        window: facts.load_window,
        sending: report.and_then(ClientSummary::sending),
        client_limited: facts.client_limited,
        client_note: facts.client_note.clone(),
        achieved_concurrency: report.and_then(ClientSummary::achieved_concurrency),
        contention: report.and_then(|r| r.client.contention.clone()),
        requests: report.map(ClientSummary::request_outcome),
        prefix: report.and_then(|r| r.prefix.clone()),
    }
}

/// The facts and every finding of the diagnosis, as stored with the run.
pub fn stored_findings(a: &Analysed) -> Result<Vec<Finding>, OpsError> {
    let mut rows = vec![facts_finding(&a.facts)?];
    rows.extend(a.diagnosis.findings.iter().map(|f| f.to_stored()));
    Ok(rows)
}

/// The facts as an `info` finding of their own, read back by [`analyse`].
fn facts_finding(facts: &RunFacts) -> Result<Finding, OpsError> {
    let mut f = Finding::new(
        FACTS_CODE.to_owned(),
        Severity::Info,
        "facts the diagnosis used (engine flags, load shape, client report)",
    );
    f.detail = Some(serde_json::to_value(facts)?);
    Ok(f)
}

/// The formats a report is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Markdown,
}

impl Analysed {
    pub(crate) fn report(&self, title: &str) -> Report<'_> {
        let mut context = self.facts.context.clone();
        if !self.used.is_empty() {
            context.push(format!("signals: {}", self.used.join(", ")));
        }
        Report {
            title: title.to_owned(),
            run_id: Some(self.run.to_string()),
            simulated: self.facts.simulated,
            context,
            diagnosis: &self.diagnosis,
            input: &self.input,
            client: self.facts.client.as_ref(),
            interrupted: self.interrupted.clone(),
            requests: &self.requests,
        }
    }

    /// Writes the report under `title` in `format`; `color` for a terminal.
    pub fn write(
        &self,
        title: &str,
        format: Format,
        mut out: &mut dyn Write,
        color: bool,
    ) -> Result<(), OpsError> {
        let report = self.report(title);
        match format {
            Format::Text => terminal::write(&report, &mut out, color)?,
            Format::Markdown => markdown::write(&report, &mut out)?,
            Format::Json => {
                serde_json::to_writer_pretty(&mut *out, &json::contract(&report))?;
                writeln!(out)?;
            }
        }
        Ok(out.flush()?)
    }

    /// Writes the self-contained HTML report under `title` to a file at `path`.
    pub fn write_html_file(&self, title: &str, path: &std::path::Path) -> Result<(), OpsError> {
        write_file(path, |out| html::write(&self.report(title), out))
    }

    /// Writes the Markdown report under `title` to `path`, its charts as SVG files in
    /// `<stem>-charts/` beside it (linked relative to it, so the two move together). Chart files
    /// of an earlier report at the same path are replaced, and nothing else in that folder.
    pub fn write_markdown_file(&self, title: &str, path: &std::path::Path) -> Result<(), OpsError> {
        let report = self.report(title);
        let charts = markdown::chart_files(&report);
        let stem = path
            .file_stem()
            .map_or("report".into(), |s| s.to_string_lossy());
        let dir_name = format!("{stem}-charts");
        let dir = path.with_file_name(&dir_name);
        if !charts.is_empty() {
            std::fs::create_dir_all(&dir).map_err(|source| OpsError::Create {
                path: dir.display().to_string(),
                source,
            })?;
        }
        for c in &charts {
            write_file(&dir.join(&c.file), |out| out.write_all(c.svg.as_bytes()))?;
        }
        write_file(path, |out| {
            markdown::write_linked(&report, &dir_name, &charts, out)
        })
    }

    /// Writes the self-contained HTML report under `title`.
    pub fn write_html(&self, title: &str, mut out: &mut dyn Write) -> Result<(), OpsError> {
        html::write(&self.report(title), &mut out)?;
        Ok(out.flush()?)
    }
}

/// Writes a page to a new file at `path` with `write` (never over a database: a report path
/// mistaken for the store would truncate it).
pub(crate) fn write_file(
    path: &std::path::Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<(), OpsError> {
    let shown = || path.display().to_string();
    llmscope_store::guard::refuse_database(path)?;
    let file = std::fs::File::create(path).map_err(|source| OpsError::Create {
        path: shown(),
        source,
    })?;
    let mut out = std::io::BufWriter::new(file);
    write(&mut out)
        .and_then(|()| out.flush())
        .map_err(|source| OpsError::WriteFile {
            path: shown(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmscope_loadgen::ErrorKind;

    /// Requests the client cancelled when the run's grace ran out are not the server failing
    /// them: a deep queue drained at the end must not read as failing requests.
    #[test]
    fn cancellations_at_the_end_of_a_run_are_not_failures() {
        let mut r = LoadReport::default();
        r.total.requests.sent = 151;
        r.total.requests.completed = 100;
        r.total.requests.failed = 51;
        r.total.errors.insert(ErrorKind::Cancelled, 50);
        r.total.errors.insert(ErrorKind::Http(400), 1);
        let o = request_outcome(&r);
        assert_eq!((o.ok, o.failed), (100, 1));
        assert_eq!(o.kinds.len(), 1);
        assert_eq!(o.kinds[0].kind, "http_400");
        assert!(!o.failing(), "1 failure in 101 is under the failing share");
    }

    /// Facts stored by the old code kept the whole load report as `client`; they read typed,
    /// and a client report that cannot be read fails the facts, never defaults them.
    #[test]
    fn facts_of_old_runs_read_and_broken_ones_fail() {
        let mut report = LoadReport::default();
        report.total.requests.sent = 7;
        report.total.tokens.prompt_mean = Some(30.0);
        let old = serde_json::json!({
            "max_num_seqs": 16, "max_num_batched_tokens": null, "concurrency": 32,
            "load_window": [1.0, 2.0], "client_limited": false, "client_note": null,
            "scrape_interval_s": 1.0, "simulated": true, "context": [],
            "client": serde_json::to_value(&report).unwrap(),
        });
        let facts: RunFacts = serde_json::from_value(old.clone()).unwrap();
        let client = facts.client.unwrap();
        assert_eq!(client.requests.sent, 7);
        assert_eq!(client.tokens.prompt_mean, Some(30.0));
        let mut broken = old;
        broken["client"]["requests"] = serde_json::json!("seven");
        assert!(serde_json::from_value::<RunFacts>(broken).is_err());
    }
}
