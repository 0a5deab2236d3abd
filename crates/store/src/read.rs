//! Reads: the run list, per-source statistics, series with their points, health and findings.
//!
//! Everything a summary prints is computed here from the stored rows, so a summary is also a
//! check that the data reached the database.

use crate::block::SeriesPoints;
use crate::{Finding, RunId, RunStatus, SourceSpec, Store, StoreError};
use llmscope_core::series::{FailureKind, Labels, ScrapeHealth, Series, SeriesKey};
use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;
use std::collections::BTreeMap;

/// One line of `llmscope runs`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub id: RunId,
    pub kind: String,
    pub status: RunStatus,
    pub started_at: f64,
    pub ended_at: Option<f64>,
    pub window: Option<(f64, f64)>,
    pub tool_version: String,
    pub server_versions: BTreeMap<String, String>,
    pub sources: Vec<String>,
    pub series: u64,
    pub samples: u64,
    pub requests: u64,
    pub findings: u64,
    /// When the run was stopped early (Ctrl-C, or its process found gone), Unix seconds.
    pub interrupted_at: Option<f64>,
    /// Seconds of the timed part (the load of `run`, a live `observe` window) done and planned;
    /// `None` when unknown (never 0 for unknown).
    pub done_s: Option<f64>,
    pub planned_s: Option<f64>,
}

/// What one source of a run delivered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceStats {
    pub name: String,
    pub kind: String,
    pub url: String,
    pub series: u64,
    pub samples: u64,
    /// Holes inside series: consecutive points more than 1.5 steps apart.
    pub gaps: u64,
    /// Scrapes (or API queries) made, and how many of them failed.
    pub scrapes: u64,
    pub failed_scrapes: u64,
}

const RUN_COLUMNS: &str = "id, kind, status, started_at, ended_at, window_from, window_to,
    tool_version, server_versions,
    (SELECT group_concat(name, ',') FROM (SELECT name FROM sources WHERE run_id = runs.id ORDER BY id)),
    (SELECT count(*) FROM series se JOIN sources so ON so.id = se.source_id WHERE so.run_id = runs.id),
    (SELECT coalesce(sum(b.n), 0) FROM blocks b
        JOIN sources so ON so.id = b.source_id WHERE so.run_id = runs.id),
    (SELECT count(*) FROM requests WHERE run_id = runs.id),
    (SELECT count(*) FROM findings WHERE run_id = runs.id),
    interrupted_at, done_s, planned_s";

impl Store {
    /// Every run, newest first.
    pub fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY id DESC");
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([], run_summary)?;
        rows.map(|r| r?).collect()
    }

    /// One run.
    pub fn run(&self, id: RunId) -> Result<RunSummary, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1");
        let found = self.conn.query_row(&sql, [id], run_summary).optional()?;
        found.ok_or(StoreError::NoSuchRun(id))?
    }

    /// The configuration a run was stored with (secrets already removed when it was written).
    pub fn config(&self, id: RunId) -> Result<serde_json::Value, StoreError> {
        let found: Option<String> = self
            .conn
            .query_row("SELECT config FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()?;
        let text = found.ok_or(StoreError::NoSuchRun(id))?;
        Ok(serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)))
    }

    /// The sources of a run, in the order they were added.
    pub fn sources(&self, run: RunId) -> Result<Vec<SourceSpec>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, kind, url FROM sources WHERE run_id = ?1 ORDER BY id")?;
        let rows = stmt.query_map([run], |r| {
            Ok(SourceSpec {
                name: r.get(0)?,
                kind: r.get(1)?,
                url: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Per-source counts of a run; `step` (seconds) defines a gap.
    pub fn source_stats(&self, run: RunId, step: f64) -> Result<Vec<SourceStats>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT so.id, so.name, so.kind, so.url,
               (SELECT count(*) FROM series WHERE source_id = so.id),
               (SELECT coalesce(sum(n), 0) FROM blocks WHERE source_id = so.id),
               (SELECT count(*) FROM scrapes WHERE source_id = so.id),
               (SELECT count(*) FROM scrapes WHERE source_id = so.id AND up = 0)
             FROM sources so WHERE so.run_id = ?1 ORDER BY so.id",
        )?;
        let rows = stmt.query_map([run], source_stats_row)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, mut stats) = row?;
            stats.gaps = self.source_points(id)?.gaps(1.5 * step);
            out.push(stats);
        }
        Ok(out)
    }

    /// Every point of `source`, per series id, sorted and de-duplicated.
    fn source_points(&self, source: i64) -> Result<SeriesPoints, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, n, data FROM blocks WHERE source_id = ?1 ORDER BY id")?;
        let mut rows = stmt.query([source])?;
        let mut all = SeriesPoints::default();
        while let Some(r) = rows.next()? {
            let data = r.get_ref(2)?.as_blob().map_err(rusqlite::Error::from)?;
            all.add(r.get(0)?, r.get(1)?, data)?;
        }
        all.finish();
        Ok(all)
    }

    /// The series of a run (of one source, or all), points in time order, sorted by key.
    pub fn series(
        &self,
        run: RunId,
        source: Option<&str>,
    ) -> Result<Vec<(String, Series)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT so.name, se.id, se.name, se.labels, so.id FROM series se
             JOIN sources so ON so.id = se.source_id
             WHERE so.run_id = ?1 AND (?2 IS NULL OR so.name = ?2) ORDER BY so.id",
        )?;
        let rows = stmt.query_map(params![run, source], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
        let mut out: Vec<(String, Series)> = Vec::new();
        let mut points_of: Option<(i64, SeriesPoints)> = None;
        for row in rows {
            let (source, id, name, labels, source_id): (String, i64, String, String, i64) = row?;
            let labels: Labels = serde_json::from_str(&labels)?;
            if points_of.as_ref().is_none_or(|(s, _)| *s != source_id) {
                points_of = Some((source_id, self.source_points(source_id)?));
            }
            let points = points_of
                .as_mut()
                .map(|(_, p)| p.take(id))
                .unwrap_or_default();
            let key = SeriesKey::new(name, labels);
            out.push((source, Series { key, points }));
        }
        out.sort_by(|a, b| (&a.0, &a.1.key).cmp(&(&b.0, &b.1.key)));
        Ok(out)
    }

    /// The scrape health records of one source of a run, in time order.
    pub fn health(&self, run: RunId, source: &str) -> Result<Vec<ScrapeHealth>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT sc.t, sc.up, sc.duration_s, sc.bytes, sc.samples, sc.failure, sc.status, sc.message
             FROM scrapes sc JOIN sources so ON so.id = sc.source_id
             WHERE so.run_id = ?1 AND so.name = ?2 ORDER BY sc.t",
        )?;
        let rows = stmt.query_map(params![run, source], |r| {
            let failure: Option<String> = r.get(5)?;
            Ok(ScrapeHealth {
                t: r.get(0)?,
                up: r.get(1)?,
                duration_s: r.get(2)?,
                bytes: r.get::<_, i64>(3)? as u64,
                samples: r.get::<_, i64>(4)? as u64,
                failure: failure.as_deref().and_then(FailureKind::from_name),
                status: r.get(6)?,
                message: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The findings of a run, in the order they were added.
    pub fn findings(&self, run: RunId) -> Result<Vec<Finding>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT severity, code, source, message, evidence, finding FROM findings
             WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([run], |r| {
            let whole: Option<String> = r.get(5)?;
            let columns = (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
            Ok((whole, columns))
        })?;
        let mut out = Vec::new();
        for row in rows {
            out.push(match row? {
                (Some(whole), _) => serde_json::from_str(&whole)?,
                (None, columns) => legacy_finding(columns)?,
            });
        }
        Ok(out)
    }

    /// A run's load-generator records in the order they were sent (the whole record left out:
    /// its columns say what a notebook needs, `record` is `null`).
    pub fn requests(&self, run: RunId) -> Result<Vec<crate::RequestRow>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT stage, id, sent_unix_ns, end_unix_ns, first_token_unix_ns, status, error,
             prompt_tokens, output_tokens FROM requests WHERE run_id = ?1
             ORDER BY sent_unix_ns, stage, id",
        )?;
        let rows = stmt.query_map([run], |r| {
            Ok(crate::RequestRow {
                stage: r.get(0)?,
                id: r.get::<_, i64>(1)? as u64,
                sent_unix_ns: r.get::<_, i64>(2)? as u64,
                end_unix_ns: r.get::<_, i64>(3)? as u64,
                first_token_unix_ns: r.get::<_, Option<i64>>(4)?.map(|t| t as u64),
                status: r.get(5)?,
                error: r.get(6)?,
                prompt_tokens: r.get(7)?,
                output_tokens: r.get(8)?,
                record: serde_json::Value::Null,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// How many load-generator records a run has.
    pub fn request_count(&self, run: RunId) -> Result<u64, StoreError> {
        Ok(self.conn.query_row(
            "SELECT count(*) FROM requests WHERE run_id = ?1",
            [run],
            |r| count(r, 0),
        )?)
    }
}

/// A source's counts (all but its gaps) and its id, from a `source_stats` row.
fn source_stats_row(r: &Row<'_>) -> rusqlite::Result<(i64, SourceStats)> {
    let id: i64 = r.get(0)?;
    let stats = SourceStats {
        name: r.get(1)?,
        kind: r.get(2)?,
        url: r.get(3)?,
        series: count(r, 4)?,
        samples: count(r, 5)?,
        gaps: 0,
        scrapes: count(r, 6)?,
        failed_scrapes: count(r, 7)?,
    };
    Ok((id, stats))
}

fn run_summary(r: &Row<'_>) -> rusqlite::Result<Result<RunSummary, StoreError>> {
    let status: String = r.get(2)?;
    let from: Option<f64> = r.get(5)?;
    let to: Option<f64> = r.get(6)?;
    let versions: String = r.get(8)?;
    let sources: Option<String> = r.get(9)?;
    let server_versions = match serde_json::from_str(&versions) {
        Ok(v) => v,
        Err(e) => return Ok(Err(e.into())),
    };
    Ok(Ok(RunSummary {
        id: r.get(0)?,
        kind: r.get(1)?,
        status: RunStatus::from_name(&status),
        started_at: r.get(3)?,
        ended_at: r.get(4)?,
        window: from.zip(to),
        tool_version: r.get(7)?,
        server_versions,
        sources: sources
            .map(|s| s.split(',').map(str::to_owned).collect())
            .unwrap_or_default(),
        series: count(r, 10)?,
        samples: count(r, 11)?,
        requests: count(r, 12)?,
        findings: count(r, 13)?,
        interrupted_at: r.get(14)?,
        done_s: r.get(15)?,
        planned_s: r.get(16)?,
    }))
}

/// A `count(*)` column (SQLite integers are i64).
fn count(r: &Row<'_>, i: usize) -> rusqlite::Result<u64> {
    r.get::<_, i64>(i).map(|n| n.max(0) as u64)
}

/// A finding stored before v4, from its columns: `evidence` held the measurements (a JSON
/// array) or, for the other producers, their facts (kept as the detail).
fn legacy_finding(
    (severity, code, source, message, evidence): (String, String, Option<String>, String, String),
) -> Result<Finding, StoreError> {
    let severity = severity.parse().map_err(|why: String| {
        StoreError::Json(serde::de::Error::custom(format!("finding severity: {why}")))
    })?;
    let evidence: serde_json::Value = serde_json::from_str(&evidence)?;
    let mut f = Finding::new(code, severity, message);
    f.source = source;
    match serde_json::from_value(evidence.clone()) {
        Ok(measured) if evidence.is_array() => f.evidence = measured,
        _ => f.detail = Some(evidence),
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmscope_core::severity::Severity;

    /// Rows written before v4 had no `finding` column: a diagnosis finding kept its evidence as
    /// an array, a failed source and the run's facts kept an object.
    #[test]
    fn findings_stored_before_v4_read_from_their_columns() {
        let row = |code: &str, evidence: &str| {
            let columns = (
                "warning".to_owned(),
                code.to_owned(),
                None,
                "m".to_owned(),
                evidence.to_owned(),
            );
            legacy_finding(columns).unwrap()
        };
        let diagnosis = row(
            "batch_limit",
            r#"[{"signal":"running","source":"vllm:num_requests_running","window":[1.0,2.0],
                "statistic":"max","value":16.0,"test":"==","threshold":16.0}]"#,
        );
        assert_eq!(diagnosis.severity, Severity::Warning);
        assert_eq!(diagnosis.evidence[0].signal, "running");
        assert!(diagnosis.detail.is_none());
        let facts = row("run_facts", r#"{"max_num_seqs":16}"#);
        assert!(facts.evidence.is_empty());
        assert_eq!(facts.detail.unwrap()["max_num_seqs"], 16);
        let columns = ("loud".into(), "x".into(), None, "m".into(), "{}".into());
        assert!(
            legacy_finding(columns).is_err(),
            "an unknown severity is an error"
        );
    }
}
