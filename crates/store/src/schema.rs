//! The schema and its migrations.
//!
//! The schema version is SQLite's `PRAGMA user_version`. [`MIGRATIONS`]`[i]` takes a store from
//! version `i` to `i + 1`, each inside one transaction, so a store is always at a whole version.
//! A store written by a newer llmscope (a version we do not know) is refused, not guessed at.
//!
//! Tables (v2):
//! - `runs`: one row per run — kind, status, times, the window, tool version, the configuration
//!   (JSON, secrets removed by the caller) and server versions (JSON object).
//! - `sources`: the sources of a run (`vllm`, `dcgm`, `prometheus`): kind and URL (no credentials).
//! - `series`: name + labels (JSON array of pairs, sorted) per source.
//! - `blocks`: the points of one written batch of one source, packed (see `block.rs`): one row
//!   per scrape instead of one per sample. v1 had a `samples` table of `(series_id, t, v)` rows;
//!   the v2 migration packs them into blocks (one per source) and drops it.
//! - `scrapes`: the health of every scrape or query of a source.
//! - `requests`: per-request records of the load generator (key columns + the whole record).
//! - `findings`: what went wrong or was found, with severity, code and evidence (JSON).
//!
//! v3 adds to `runs` who owns a running run and how far it got (issue 12, point 4):
//! `owner_pid`, `owner_start` (field 22 of `/proc/<pid>/stat`), `owner_boot` (boot id);
//! `heartbeat_at` (Unix seconds of the writer's last commit); `planned_s` / `done_s` (seconds of
//! the timed part — the load of `run`, the live window of `observe` — planned and done);
//! `interrupted_at`. Runs stored before v3 have none of them (NULL): unknown, not 0.
//!
//! v4 adds to `findings` the whole finding as JSON (`finding`, `llmscope_core::finding::Finding`);
//! the other columns stay filled for readers of the columns. Findings stored before v4 (NULL)
//! are read back from the columns.

use crate::StoreError;
use crate::block;
use llmscope_core::series::Point;
use rusqlite::{Connection, Transaction, TransactionBehavior};

/// One migration: SQL, or code for what SQL cannot do (packing binary blocks).
pub enum Migration {
    Sql(&'static str),
    Code(fn(&Transaction<'_>) -> Result<(), StoreError>),
}

/// Migration `i` goes from schema version `i` to `i + 1`.
pub const MIGRATIONS: &[Migration] = &[
    Migration::Sql(V1),
    Migration::Code(v2),
    Migration::Sql(V3),
    Migration::Sql(V4),
];

/// The schema version this build writes.
pub const CURRENT_VERSION: u32 = MIGRATIONS.len() as u32;

pub(crate) const V1: &str = "
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL,
    status          TEXT NOT NULL,
    started_at      REAL NOT NULL,
    ended_at        REAL,
    window_from     REAL,
    window_to       REAL,
    tool_version    TEXT NOT NULL,
    config          TEXT NOT NULL,
    server_versions TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE sources (
    id     INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name   TEXT NOT NULL,
    kind   TEXT NOT NULL,
    url    TEXT NOT NULL,
    UNIQUE (run_id, name)
);
CREATE TABLE series (
    id        INTEGER PRIMARY KEY,
    source_id INTEGER NOT NULL REFERENCES sources(id),
    name      TEXT NOT NULL,
    labels    TEXT NOT NULL,
    UNIQUE (source_id, name, labels)
);
CREATE TABLE samples (
    series_id INTEGER NOT NULL REFERENCES series(id),
    t         REAL NOT NULL,
    v         REAL,
    PRIMARY KEY (series_id, t)
) WITHOUT ROWID;
CREATE TABLE scrapes (
    source_id  INTEGER NOT NULL REFERENCES sources(id),
    t          REAL NOT NULL,
    up         INTEGER NOT NULL,
    duration_s REAL NOT NULL,
    bytes      INTEGER NOT NULL,
    samples    INTEGER NOT NULL,
    failure    TEXT,
    status     INTEGER,
    message    TEXT
);
CREATE INDEX scrapes_by_source ON scrapes (source_id, t);
CREATE TABLE requests (
    run_id              INTEGER NOT NULL REFERENCES runs(id),
    stage               INTEGER NOT NULL,
    id                  INTEGER NOT NULL,
    sent_unix_ns        INTEGER NOT NULL,
    end_unix_ns         INTEGER NOT NULL,
    first_token_unix_ns INTEGER,
    status              INTEGER,
    error               TEXT,
    prompt_tokens       INTEGER,
    output_tokens       INTEGER,
    record              TEXT NOT NULL
);
CREATE INDEX requests_by_run ON requests (run_id, sent_unix_ns);
CREATE TABLE findings (
    id       INTEGER PRIMARY KEY,
    run_id   INTEGER NOT NULL REFERENCES runs(id),
    severity TEXT NOT NULL,
    code     TEXT NOT NULL,
    source   TEXT,
    message  TEXT NOT NULL,
    evidence TEXT NOT NULL DEFAULT '{}'
);
";

/// v2 → v3: the owner and progress of a run (see the module documentation).
pub(crate) const V3: &str = "
ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
ALTER TABLE runs ADD COLUMN owner_start INTEGER;
ALTER TABLE runs ADD COLUMN owner_boot TEXT;
ALTER TABLE runs ADD COLUMN heartbeat_at REAL;
ALTER TABLE runs ADD COLUMN planned_s REAL;
ALTER TABLE runs ADD COLUMN done_s REAL;
ALTER TABLE runs ADD COLUMN interrupted_at REAL;
";

/// v3 → v4: every finding kept whole (issue 14: one finding type, stored as is).
pub(crate) const V4: &str = "
ALTER TABLE findings ADD COLUMN finding TEXT;
";

/// The store's schema version.
pub fn version(conn: &Connection) -> Result<u32, StoreError> {
    Ok(conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// v1 → v2: `samples` rows become `blocks`, one block per source (up to 65,536 points each).
fn v2(tx: &Transaction<'_>) -> Result<(), StoreError> {
    tx.execute_batch(
        "CREATE TABLE blocks (
             id        INTEGER PRIMARY KEY,
             source_id INTEGER NOT NULL REFERENCES sources(id),
             n         INTEGER NOT NULL,
             data      BLOB NOT NULL
         );
         CREATE INDEX blocks_by_source ON blocks (source_id);",
    )?;
    samples_to_blocks(tx)?;
    tx.execute_batch("DROP TABLE samples;")?;
    Ok(())
}

/// Packs every sample, source by source and series by series in time order, into blocks.
fn samples_to_blocks(tx: &Transaction<'_>) -> Result<(), StoreError> {
    let mut read = tx.prepare(
        "SELECT se.source_id, sa.series_id, sa.t, sa.v FROM samples sa
         JOIN series se ON se.id = sa.series_id ORDER BY se.source_id, sa.series_id, sa.t",
    )?;
    let mut w = BlockWriter {
        insert: tx.prepare("INSERT INTO blocks (source_id, n, data) VALUES (?1, ?2, ?3)")?,
        buf: block::Encoder::default(),
        n: 0,
    };
    w.buf.start();
    let mut current = None;
    let mut rows = read.query([])?;
    while let Some(r) = rows.next()? {
        let (source, series, t): (i64, i64, f64) = (r.get(0)?, r.get(1)?, r.get(2)?);
        let v: Option<f64> = r.get(3)?;
        if current.is_some_and(|c| c != source) || w.n == BlockWriter::MAX {
            w.flush(current.unwrap_or(source))?;
        }
        current = Some(source);
        let v = v.unwrap_or(f64::NAN); // v1 stored NaN as NULL
        w.buf.push(series, Point { t, v });
        w.n += 1;
    }
    if let Some(source) = current {
        w.flush(source)?;
    }
    Ok(())
}

/// The block being filled and how to store it.
struct BlockWriter<'a> {
    insert: rusqlite::Statement<'a>,
    buf: block::Encoder,
    /// Points in `buf`.
    n: i64,
}

impl BlockWriter<'_> {
    const MAX: i64 = 65_536;

    /// Stores the block (if it holds any point) as `source`'s, and starts the next.
    fn flush(&mut self, source: i64) -> Result<(), StoreError> {
        if self.n > 0 {
            self.insert
                .execute(rusqlite::params![source, self.n, self.buf.seal()])?;
        }
        self.buf.start();
        self.n = 0;
        Ok(())
    }
}

/// Brings the store up to [`CURRENT_VERSION`]; returns the version it found.
///
/// Each step reads the version and migrates inside one `BEGIN IMMEDIATE` transaction, so two
/// processes opening one new store at once cannot both see version 0 and both create the
/// tables (issue 17): the second waits (busy timeout) for the first's write lock, then reads the
/// version the first committed. A deferred transaction would read first and fail to upgrade.
pub fn migrate(conn: &mut Connection) -> Result<u32, StoreError> {
    let mut found = None;
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let at = version(&tx)?;
        found.get_or_insert(at);
        if at > CURRENT_VERSION {
            return Err(StoreError::NewerSchema {
                found: at,
                supported: CURRENT_VERSION,
            });
        }
        let Some(step) = MIGRATIONS.get(at as usize) else {
            tx.commit()?;
            return Ok(found.unwrap_or(at));
        };
        match step {
            Migration::Sql(sql) => tx.execute_batch(sql)?,
            Migration::Code(run) => run(&tx)?,
        }
        tx.pragma_update(None, "user_version", at + 1)?;
        tx.commit()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_an_empty_database_once() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), 0);
        assert_eq!(version(&conn).unwrap(), CURRENT_VERSION);
        assert_eq!(migrate(&mut conn).unwrap(), CURRENT_VERSION, "idempotent");
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 7);
    }

    #[test]
    fn refuses_a_newer_schema() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", CURRENT_VERSION + 1)
            .unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(err.to_string().contains("newer llmscope"), "{err}");
    }
}
