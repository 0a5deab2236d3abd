//! What `llmscope runs` shows of the store: the runs one line each, or one run's sources and
//! findings — for people, or as JSON. Read-only; writers take `impl Write`. The store keeps
//! outside text as it came (redacted); the text written here shows its control characters
//! escaped ([`llmscope_core::safe::terminal`]), so a stored escape sequence cannot reach a terminal.

use crate::OpsError;
use crate::analysis::interruption;
use llmscope_collect::time::format_rfc3339;
use llmscope_core::duration::format_duration;
use llmscope_core::safe::terminal;
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
        terminal(&r.sources.join(","))
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
            terminal(&s.name),
            terminal(&s.kind),
            s.series,
            s.samples,
            s.gaps,
            s.scrapes,
            s.failed_scrapes,
            terminal(&s.url)
        )?;
    }
    for f in findings {
        writeln!(out, "  {}: {}", f.severity, terminal(&f.message))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use llmscope_core::severity::Severity;
    use llmscope_store::RunStatus;

    const EVIL: &str = "evil\x1b]0;PWNED\x07\x1b[2J\r\nFAKE: ok";

    /// Stored text came from outside (a source's URL and name, a finding quoting a server): the
    /// list and the detail show it with its control characters escaped, never raw.
    #[test]
    fn stored_outside_text_reaches_no_terminal_raw() {
        let run = RunSummary {
            id: 7,
            kind: "run".into(),
            status: RunStatus::Completed,
            started_at: 1_800_000_000.0,
            ended_at: Some(1_800_000_060.0),
            window: Some((1_800_000_000.0, 1_800_000_060.0)),
            tool_version: "0".into(),
            server_versions: Default::default(),
            sources: vec![EVIL.into()],
            series: 1,
            samples: 2,
            requests: 3,
            findings: 1,
            interrupted_at: None,
            done_s: None,
            planned_s: None,
        };
        let stats = [SourceStats {
            name: EVIL.into(),
            kind: EVIL.into(),
            url: format!("http://127.0.0.1/{EVIL}"),
            series: 1,
            samples: 2,
            gaps: 0,
            scrapes: 2,
            failed_scrapes: 0,
        }];
        let findings = [Finding::new(EVIL.to_owned(), Severity::Warning, EVIL)];
        let mut out = Vec::new();
        write_list(&mut out, std::slice::from_ref(&run)).unwrap();
        write_run_text(&mut out, &run, &stats, &findings).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains(['\x1b', '\x07', '\r']), "{text:?}");
        assert_eq!(
            text.matches(r"evil\x1b]0;PWNED\x07\x1b[2J\r\nFAKE: ok")
                .count(),
            6,
            "{text}"
        );
    }
}
