//! What `llmscope runs` shows of the store: the runs one line each, or one run's sources and
//! findings — for people, or as JSON. Read-only; writers take `impl Write`.

use crate::OpsError;
use crate::analysis::interruption;
use llmscope_collect::time::format_rfc3339;
use llmscope_core::duration::format_duration;
use llmscope_store::{Finding, RunId, RunSummary, SourceStats, Store};
use std::io::Write;
use std::time::Duration;

/// Every run, one line each (with the notice of an interrupted one under it).
pub fn write_list(out: &mut impl Write, runs: &[RunSummary]) -> std::io::Result<()> {
    if runs.is_empty() {
        return writeln!(out, "no runs yet");
    }
    writeln!(
        out,
        "{:>4}  {:<8} {:<11} {:<24} {:>8} {:>7} {:>10} {:>8}  sources",
        "id", "kind", "status", "started", "length", "series", "samples", "findings"
    )?;
    for r in runs {
        writeln!(out, "{}", line(r))?;
        if let Some(i) = interruption(r) {
            writeln!(out, "      {}", i.notice())?;
        }
    }
    Ok(())
}

/// One run's line of the list.
pub fn line(r: &RunSummary) -> String {
    let length = r
        .window
        .map(|(f, t)| format_duration(Duration::from_secs_f64((t - f).max(0.0))))
        .unwrap_or_else(|| "-".into());
    format!(
        "{:>4}  {:<8} {:<11} {:<24} {:>8} {:>7} {:>10} {:>8}  {}",
        r.id,
        r.kind,
        r.status.as_str(),
        format_rfc3339(r.started_at),
        length,
        r.series,
        r.samples,
        r.findings,
        r.sources.join(",")
    )
}

/// One run in detail: its line, per-source series, samples, gaps (more than 1.5 `step`s apart)
/// and scrapes, and its findings; as JSON when `json`.
pub fn write_run(
    out: &mut impl Write,
    store: &Store,
    id: RunId,
    step: Duration,
    json: bool,
) -> Result<(), OpsError> {
    let run = store.run(id)?;
    let stats = store.source_stats(id, step.as_secs_f64())?;
    let findings = store.findings(id)?;
    if json {
        let interrupted = interruption(&run).map(|i| {
            serde_json::json!({"at": i.at, "done_s": i.done_s, "planned_s": i.planned_s, "notice": i.notice()})
        });
        let findings: Vec<_> = findings.iter().map(finding_json).collect();
        let json = serde_json::json!({"run": run, "interrupted": interrupted, "sources": stats, "findings": findings});
        writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
        return Ok(());
    }
    Ok(write_run_text(out, &run, &stats, &findings)?)
}

fn write_run_text(
    out: &mut impl Write,
    run: &RunSummary,
    stats: &[SourceStats],
    findings: &[Finding],
) -> std::io::Result<()> {
    writeln!(out, "{}", line(run))?;
    if let Some(i) = interruption(run) {
        writeln!(out, "  {}", i.notice())?;
    }
    for s in stats {
        writeln!(
            out,
            "  {:<16} {:<10} {:>7} series {:>10} samples {:>5} gaps {:>6} scrapes {:>5} failed  {}",
            s.name, s.kind, s.series, s.samples, s.gaps, s.scrapes, s.failed_scrapes, s.url
        )?;
    }
    for f in findings {
        writeln!(out, "  {}: {}", f.severity, f.message)?;
    }
    Ok(())
}

/// A stored finding as JSON: the finding, and the names it had before it was one type (`code`
/// for its rule; `evidence` holding the detail of a finding that measured nothing).
pub fn finding_json(f: &Finding) -> serde_json::Value {
    let mut v = serde_json::to_value(f).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("code".to_owned(), f.rule.clone().into());
        if f.evidence.is_empty() {
            let detail = f.detail.clone().unwrap_or_else(|| serde_json::json!({}));
            o.insert("evidence".to_owned(), detail);
        }
    }
    v
}
