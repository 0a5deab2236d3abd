//! How an observation ends: what the sources reported becomes findings (one per problem kind
//! of a source, its API warnings, a source that could not start), the versions they told and
//! the window they covered; with the stored per-source statistics that gives the run's status.

use super::{ObservePlan, Outcome};
use crate::OpsError;
use crate::record::{Ending, RunRecord, SourceResult};
use llmscope_collect::time::unix_now;
use llmscope_collect::{Problem, SourceReport, Window};
use llmscope_core::series::FailureKind;
use llmscope_core::severity::Severity;
use llmscope_store::{Finding, RunStatus, SourceStats};
use std::collections::BTreeMap;

/// Findings, versions and status, then the stored per-source statistics.
pub(super) fn finish(
    mut record: RunRecord,
    plan: &ObservePlan,
    sources: usize,
    results: &[SourceResult],
) -> Result<Outcome, OpsError> {
    let r = Reported::read(plan.window, results);
    let (run, interval) = (record.id(), plan.interval.as_secs_f64());
    let stats = record.store().source_stats(run, interval)?;
    let status = status(r.stopped, &stats, &r.findings, sources);
    if status == RunStatus::Interrupted {
        interrupted(&mut record, r.window)?;
    }
    record.finish(Ending {
        status,
        findings: &r.findings,
        versions: Some(&r.versions),
        window: Some(r.window),
    })?;
    Ok(r.outcome(run, status, stats))
}

/// Sources stop at Ctrl-C: the end of what they delivered is when, its length how far.
fn interrupted(record: &mut RunRecord, (from, to): (f64, f64)) -> Result<(), OpsError> {
    record.interrupt(to, Some((to - from).max(0.0)))
}

/// What the sources' reports say together.
struct Reported {
    findings: Vec<Finding>,
    versions: BTreeMap<String, String>,
    /// The window covered: the plan's for a past one, from the reports for a live one.
    window: (f64, f64),
    /// A source was stopped before its window ended.
    stopped: bool,
}

impl Reported {
    fn read(window: Window, results: &[SourceResult]) -> Reported {
        let mut r = Reported::new(window);
        for (name, result) in results {
            match result {
                Ok(report) => r.add(name, report),
                Err(e) => r.findings.push(source_failed(name, &e.to_string())),
            }
        }
        if !r.window.0.is_finite() {
            r.window = (unix_now(), unix_now());
        }
        r
    }

    /// Nothing reported yet: a past window is the plan's, a live one grows from the reports.
    fn new(window: Window) -> Reported {
        let window = match window {
            Window::Past { from, to } => (from, to),
            Window::Live { .. } => (f64::INFINITY, f64::NEG_INFINITY),
        };
        Reported {
            findings: Vec::new(),
            versions: BTreeMap::new(),
            window,
            stopped: false,
        }
    }

    fn add(&mut self, name: &str, report: &SourceReport) {
        self.findings.extend(report_findings(report));
        if let Some(v) = &report.version {
            self.versions.insert(name.to_owned(), v.clone());
        }
        let (from, to) = report.window;
        self.window = (self.window.0.min(from), self.window.1.max(to));
        self.stopped |= report.stopped;
    }

    fn outcome(
        self,
        run: llmscope_store::RunId,
        status: RunStatus,
        stats: Vec<SourceStats>,
    ) -> Outcome {
        Outcome {
            run,
            status,
            window: self.window,
            stats,
            versions: self.versions,
            findings: self.findings,
        }
    }
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

fn source_failed(name: &str, why: &str) -> Finding {
    let none = serde_json::json!({});
    finding(Severity::Error, "source_failed", name, why.to_owned(), none)
}

/// One finding per problem kind of a source, plus its API warnings.
fn report_findings(r: &SourceReport) -> Vec<Finding> {
    let mut out: Vec<Finding> = r.problems.iter().map(|p| problem_finding(r, p)).collect();
    for w in &r.warnings {
        let none = serde_json::json!({});
        out.push(finding(
            Severity::Warning,
            "api_warning",
            &r.name,
            w.clone(),
            none,
        ));
    }
    out
}

/// A problem kind: an error when every attempt failed, else a warning.
fn problem_finding(r: &SourceReport, p: &Problem) -> Finding {
    let all_failed = r.attempts > 0 && r.failures == r.attempts;
    let severity = if all_failed {
        Severity::Error
    } else {
        Severity::Warning
    };
    let evidence = serde_json::json!({
        "kind": p.kind, "count": p.count, "attempts": r.attempts,
        "first_t": p.first_t, "last_t": p.last_t,
    });
    let code = format!("source_{}", p.kind);
    finding(severity, &code, &r.name, problem_message(r, p), evidence)
}

fn problem_message(r: &SourceReport, p: &Problem) -> String {
    if p.kind == FailureKind::NoData {
        return p.message.clone();
    }
    let what = if r.kind == "scrape" {
        "scrapes"
    } else {
        "queries"
    };
    format!(
        "{} of {} {what} of `{}` failed ({}); first: {}",
        p.count, r.attempts, r.name, p.kind, p.message
    )
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
