//! Inserts: runs, sources, batches of samples and health, requests, findings.
//!
//! [`Store::write`] is the hot path: one transaction per call, cached prepared statements, a
//! series-id cache so a scrape that repeats last interval's series does no lookups in SQLite, and
//! one packed `blocks` row per batch (see `block.rs`) instead of a row per sample.
//!
//! Every outside text that is stored (configuration, source URLs, scrape messages, request
//! errors and records, findings and their evidence) goes through [`llmscope_core::safe::redact`]
//! first: a 401 body that echoes the bearer token, or a token in a URL query, never reaches the
//! store (issue 17).

use crate::block;
use crate::owner::Owner;
use crate::{Finding, NewRun, RequestRow, RunId, RunStatus, SourceSpec, Store, StoreError};
use llmscope_core::safe::redact;
use llmscope_core::series::{Batch, ScrapeHealth, SeriesKey};
use rusqlite::{OptionalExtension, Transaction, params};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

type Fast = foldhash::fast::RandomState;

/// `(source id, key)` → `series.id`, by the key's value and by its address.
///
/// A scrape loop re-sends the same `Arc`s every interval, so most lookups hash two integers
/// instead of a whole key (hashing keys was a tenth of the writer's time at 1,000 targets). The
/// address map holds the `Arc`, so no other key can reuse an address while it is listed.
#[derive(Debug, Default)]
pub(crate) struct SeriesIds {
    // Keys are ours or a scraped page's; foldhash is seeded per process.
    by_key: HashMap<(i64, Arc<SeriesKey>), i64, Fast>,
    by_ptr: HashMap<(i64, usize), (Arc<SeriesKey>, i64), Fast>,
    /// Per series id, the time of the last point stored: a sample repeated with its own
    /// timestamp, or the shared end of two split Prometheus ranges, is not stored twice.
    last_t: HashMap<i64, f64, Fast>,
}

impl SeriesIds {
    fn get(&mut self, source: i64, key: &Arc<SeriesKey>) -> Option<i64> {
        let addr = Arc::as_ptr(key) as usize;
        if let Some((_, id)) = self.by_ptr.get(&(source, addr)) {
            return Some(*id);
        }
        let id = *self.by_key.get(&(source, Arc::clone(key)))?;
        self.by_ptr.insert((source, addr), (Arc::clone(key), id));
        Some(id)
    }

    fn insert(&mut self, source: i64, key: &Arc<SeriesKey>, id: i64) {
        let addr = Arc::as_ptr(key) as usize;
        self.by_ptr.insert((source, addr), (Arc::clone(key), id));
        self.by_key.insert((source, Arc::clone(key)), id);
    }

    fn extend(&mut self, other: SeriesIds) {
        self.by_key.extend(other.by_key);
        self.by_ptr.extend(other.by_ptr);
    }
}

/// What one [`Store::write`] call stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    pub samples: u64,
    pub new_series: u64,
    pub health: u64,
}

impl Store {
    /// Starts a run in status `running`, owned by this process.
    pub fn create_run(&mut self, run: &NewRun) -> Result<RunId, StoreError> {
        let (from, to) = run.window.unzip();
        let owner = Owner::current();
        self.conn.execute(
            "INSERT INTO runs (kind, status, started_at, window_from, window_to, tool_version, config,
               planned_s, owner_pid, owner_start, owner_boot)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                run.kind,
                RunStatus::Running.as_str(),
                run.started_at,
                from,
                to,
                run.tool_version,
                redact(&run.config.to_string()),
                run.planned_s,
                owner.as_ref().map(|o| o.pid),
                owner.as_ref().map(|o| o.start_ticks as i64),
                owner.as_ref().map(|o| o.boot_id.as_str()),
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Marks every `running` run whose owner process is gone (or whose pid now belongs to another
    /// process) `interrupted`, at its last heartbeat; returns their ids. [`Store::open`] calls it.
    /// Runs without a recorded owner (stored before schema v3) are left as they are.
    pub fn mark_abandoned_runs(&mut self) -> Result<Vec<RunId>, StoreError> {
        let gone = self.abandoned_runs()?;
        for &id in &gone {
            // Another process opening the store at the same time may have done it already.
            self.conn.execute(
                "UPDATE runs SET status = 'interrupted',
                   interrupted_at = coalesce(heartbeat_at, started_at),
                   ended_at = coalesce(ended_at, heartbeat_at, started_at)
                 WHERE id = ?1 AND status = 'running'",
                [id],
            )?;
        }
        Ok(gone)
    }

    /// The `running` runs whose owner process is gone.
    fn abandoned_runs(&self) -> Result<Vec<RunId>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, owner_pid, owner_start, owner_boot FROM runs
             WHERE status = 'running' AND owner_pid IS NOT NULL",
        )?;
        let rows = stmt.query_map([], |r| {
            let owner = Owner {
                pid: r.get(1)?,
                start_ticks: r.get::<_, i64>(2)? as u64,
                boot_id: r.get(3)?,
            };
            Ok((r.get::<_, RunId>(0)?, owner))
        })?;
        let mut gone = Vec::new();
        for row in rows {
            let (id, owner) = row?;
            if !owner.is_alive() {
                gone.push(id);
            }
        }
        Ok(gone)
    }

    /// Records that `run` is alive at `at`, with `done_s` seconds of its timed part done (if
    /// known): if its process dies, this is when and how far, as far as the store knows.
    pub fn heartbeat(
        &mut self,
        run: RunId,
        at: f64,
        done_s: Option<f64>,
    ) -> Result<(), StoreError> {
        let n = self.conn.execute(
            "UPDATE runs SET heartbeat_at = ?2, done_s = coalesce(?3, done_s) WHERE id = ?1",
            params![run, at, done_s],
        )?;
        if n == 0 {
            return Err(StoreError::NoSuchRun(run));
        }
        Ok(())
    }

    /// Records that `run` was stopped early at `at`, with `done_s` seconds of its timed part done;
    /// its status becomes `interrupted` ([`Store::finish_run`] later sets when it ended).
    pub fn interrupt_run(
        &mut self,
        run: RunId,
        at: f64,
        done_s: Option<f64>,
    ) -> Result<(), StoreError> {
        let n = self.conn.execute(
            "UPDATE runs SET status = 'interrupted', interrupted_at = ?2,
               done_s = coalesce(?3, done_s) WHERE id = ?1",
            params![run, at, done_s],
        )?;
        if n == 0 {
            return Err(StoreError::NoSuchRun(run));
        }
        Ok(())
    }

    /// Registers a source of `run` (again: returns the existing id).
    pub fn add_source(&mut self, run: RunId, spec: &SourceSpec) -> Result<i64, StoreError> {
        self.conn.execute(
            "INSERT INTO sources (run_id, name, kind, url) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (run_id, name) DO NOTHING",
            params![run, spec.name, spec.kind, redact(&spec.url)],
        )?;
        let id = self.source_id(run, &spec.name)?;
        Ok(id)
    }

    fn source_id(&mut self, run: RunId, name: &str) -> Result<i64, StoreError> {
        if let Some(id) = self.sources.get(&(run, name.to_owned())) {
            return Ok(*id);
        }
        let id: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM sources WHERE run_id = ?1 AND name = ?2",
                params![run, name],
                |r| r.get(0),
            )
            .optional()?;
        let id = id.ok_or_else(|| StoreError::NoSuchSource {
            run,
            source_name: name.to_owned(),
        })?;
        self.sources.insert((run, name.to_owned()), id);
        Ok(id)
    }

    /// Stores `batches` of `run` in one transaction: all of them or none.
    pub fn write(&mut self, run: RunId, batches: &[Batch]) -> Result<WriteStats, StoreError> {
        let mut ids = Vec::with_capacity(batches.len());
        for b in batches {
            ids.push(self.source_id(run, &b.source)?);
        }
        let mut stats = WriteStats::default();
        let mut fresh = SeriesIds::default();
        let mut buf = std::mem::take(&mut self.block_buf);
        let known = &mut self.series_ids;
        let done = (|| -> Result<(), StoreError> {
            let tx = self.conn.transaction()?;
            for (b, &source) in batches.iter().zip(&ids) {
                insert_samples(&tx, (known, &mut fresh), source, b, &mut buf, &mut stats)?;
                insert_health(&tx, source, &b.health)?;
                stats.health += b.health.len() as u64;
            }
            Ok(tx.commit()?)
        })();
        self.block_buf = buf;
        if let Err(e) = done {
            // Last times were updated as points were packed: after a rollback they may name
            // points that were never stored, so forget them all (a repeat is then stored again,
            // and reads keep one copy).
            self.series_ids.last_t.clear();
            return Err(e);
        }
        // Only now are the new series ids real.
        self.series_ids.extend(fresh);
        Ok(stats)
    }

    /// Stores load-generator records of `run` in one transaction.
    pub fn add_requests(&mut self, run: RunId, rows: &[RequestRow]) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO requests (run_id, stage, id, sent_unix_ns, end_unix_ns,
                 first_token_unix_ns, status, error, prompt_tokens, output_tokens, record)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?;
            for r in rows {
                stmt.execute(params![
                    run,
                    r.stage,
                    r.id as i64,
                    r.sent_unix_ns as i64,
                    r.end_unix_ns as i64,
                    r.first_token_unix_ns.map(|t| t as i64),
                    r.status,
                    r.error.as_deref().map(redact),
                    r.prompt_tokens,
                    r.output_tokens,
                    redact(&r.record.to_string())
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores findings of `run`.
    pub fn add_findings(&mut self, run: RunId, findings: &[Finding]) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        for f in findings {
            // The columns a reader of v3 knows: evidence holds the measurements, else the detail.
            let evidence = match (&f.evidence[..], &f.detail) {
                ([], Some(detail)) => detail.clone(),
                ([], None) => serde_json::json!({}),
                (evidence, _) => serde_json::to_value(evidence)?,
            };
            tx.execute(
                "INSERT INTO findings (run_id, severity, code, source, message, evidence, finding)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    run,
                    f.severity.name(),
                    f.rule,
                    f.source,
                    redact(&f.message),
                    redact(&evidence.to_string()),
                    redact(&serde_json::to_string(f)?),
                ],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Records the versions the sources reported (`{"prometheus": "2.42.0", …}`).
    pub fn set_server_versions(
        &mut self,
        run: RunId,
        versions: &BTreeMap<String, String>,
    ) -> Result<(), StoreError> {
        let json = serde_json::to_string(versions)?;
        self.update_run(
            run,
            "UPDATE runs SET server_versions = ?2 WHERE id = ?1",
            &json,
        )
    }

    /// Ends a run with `status` at `ended_at`, setting its window if it had none.
    pub fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        ended_at: f64,
        window: Option<(f64, f64)>,
    ) -> Result<(), StoreError> {
        let (from, to) = window.unzip();
        let n = self.conn.execute(
            "UPDATE runs SET status = ?2, ended_at = ?3,
               window_from = coalesce(window_from, ?4), window_to = coalesce(window_to, ?5)
             WHERE id = ?1",
            params![run, status.as_str(), ended_at, from, to],
        )?;
        if n == 0 {
            return Err(StoreError::NoSuchRun(run));
        }
        Ok(())
    }

    fn update_run(&mut self, run: RunId, sql: &str, value: &str) -> Result<(), StoreError> {
        if self.conn.execute(sql, params![run, value])? == 0 {
            return Err(StoreError::NoSuchRun(run));
        }
        Ok(())
    }
}

/// The batch's points as one block; a point repeating its series' last stored time is skipped.
fn insert_samples(
    tx: &Transaction<'_>,
    (known, fresh): (&mut SeriesIds, &mut SeriesIds),
    source: i64,
    batch: &Batch,
    buf: &mut block::Encoder,
    stats: &mut WriteStats,
) -> Result<(), StoreError> {
    buf.start();
    let mut n = 0i64;
    let mut last: Option<(&Arc<SeriesKey>, i64)> = None;
    for (key, point) in &batch.samples {
        let id = match last {
            // Consecutive points of one series (a Prometheus range) skip the lookup.
            Some((k, id)) if Arc::ptr_eq(k, key) => id,
            _ => series_id(tx, known, fresh, source, key, stats)?,
        };
        last = Some((key, id));
        match known.last_t.entry(id) {
            Entry::Occupied(e) if *e.get() == point.t => continue,
            Entry::Occupied(mut e) => *e.get_mut() = point.t,
            Entry::Vacant(e) => {
                e.insert(point.t);
            }
        }
        buf.push(id, *point);
        n += 1;
    }
    if n > 0 {
        let mut insert =
            tx.prepare_cached("INSERT INTO blocks (source_id, n, data) VALUES (?1, ?2, ?3)")?;
        insert.execute(params![source, n, buf.seal()])?;
    }
    stats.samples += n as u64;
    Ok(())
}

fn series_id(
    tx: &Transaction<'_>,
    known: &mut SeriesIds,
    fresh: &mut SeriesIds,
    source: i64,
    key: &Arc<SeriesKey>,
    stats: &mut WriteStats,
) -> Result<i64, StoreError> {
    // Ids already committed, then ids created by this (uncommitted) transaction.
    if let Some(id) = known.get(source, key).or_else(|| fresh.get(source, key)) {
        return Ok(id);
    }
    let labels = serde_json::to_string(&key.labels)?;
    let mut find = tx.prepare_cached(
        "INSERT INTO series (source_id, name, labels) VALUES (?1, ?2, ?3)
         ON CONFLICT (source_id, name, labels) DO UPDATE SET name = excluded.name
         RETURNING id",
    )?;
    let id: i64 = find.query_row(params![source, key.name, labels], |r| r.get(0))?;
    stats.new_series += 1;
    fresh.insert(source, key, id);
    Ok(id)
}

fn insert_health(
    tx: &Transaction<'_>,
    source: i64,
    health: &[ScrapeHealth],
) -> Result<(), StoreError> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO scrapes (source_id, t, up, duration_s, bytes, samples, failure, status, message)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for h in health {
        stmt.execute(params![
            source,
            h.t,
            h.up,
            h.duration_s,
            h.bytes as i64,
            h.samples as i64,
            h.failure.map(|f| f.as_str()),
            h.status,
            h.message.as_deref().map(redact)
        ])?;
    }
    Ok(())
}
