//! What `observe` says when it is done: the run, its window and per-source figures, as text
//! for people or as the `--format json` document.

use super::{ObservePlan, Outcome};
use llmscope_collect::time::format_rfc3339;
use llmscope_core::duration::format_duration;
use std::io::Write;
use std::time::Duration;

impl Outcome {
    /// The `--format json` document.
    pub fn to_json(&self, plan: &ObservePlan) -> serde_json::Value {
        let o = self;
        serde_json::json!({
            "run_id": o.run,
            "db": plan.db.display().to_string(),
            "status": o.status,
            "window": {"from": o.window.0, "to": o.window.1,
                       "from_rfc3339": format_rfc3339(o.window.0), "to_rfc3339": format_rfc3339(o.window.1)},
            "interval_s": plan.interval.as_secs_f64(),
            "sources": o.stats,
            "server_versions": o.versions,
            "findings": o.findings.iter().map(crate::runs::finding_json).collect::<Vec<_>>(),
        })
    }

    /// For people: the run, its window, one line per source, then the findings.
    pub fn write_text(&self, plan: &ObservePlan, out: &mut impl Write) -> std::io::Result<()> {
        self.write_heading(plan, out)?;
        self.write_sources(out)?;
        for f in &self.findings {
            let message = llmscope_core::safe::clean(&f.message);
            writeln!(out, "{}: {message}", f.severity)?;
        }
        Ok(())
    }

    /// One line per source: what it delivered.
    fn write_sources(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(
            out,
            "{:<16} {:<10} {:>8} {:>10} {:>6} {:>8} {:>7}",
            "source", "kind", "series", "samples", "gaps", "scrapes", "failed"
        )?;
        for s in &self.stats {
            writeln!(
                out,
                "{:<16} {:<10} {:>8} {:>10} {:>6} {:>8} {:>7}",
                s.name, s.kind, s.series, s.samples, s.gaps, s.scrapes, s.failed_scrapes
            )?;
        }
        Ok(())
    }

    /// `run 3 in llmscope.db: completed, 1 s window … → …, interval 200 ms`.
    fn write_heading(&self, plan: &ObservePlan, out: &mut impl Write) -> std::io::Result<()> {
        let (from, to) = self.window;
        let secs = (to - from).max(0.0);
        writeln!(
            out,
            "run {} in {}: {}, {} window {} → {}, interval {}",
            self.run,
            plan.db.display(),
            self.status.as_str(),
            format_duration(Duration::from_secs_f64(secs)),
            format_rfc3339(from),
            format_rfc3339(to),
            format_duration(plan.interval)
        )
    }
}
