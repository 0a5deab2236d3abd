//! The schema and its migrations.
//!
//! The schema version is SQLite's `PRAGMA user_version`. [`MIGRATIONS`]`[i]` takes a store from
//! version `i` to `i + 1`, each inside one transaction, so a store is always at a whole version.
//! A store written by a newer llmscope (a version we do not know) is refused, not guessed at.
//!
//! Tables (v1):
//! - `runs`: one row per run — kind, status, times, the window, tool version, the configuration
//!   (JSON, secrets removed by the caller) and server versions (JSON object).
//! - `sources`: the sources of a run (`vllm`, `dcgm`, `prometheus`): kind and URL (no credentials).
//! - `series`: name + labels (JSON array of pairs, sorted) per source.
//! - `samples`: `(series_id, t, v)`; `v` NULL means the source said `NaN` (SQLite has no NaN).
//! - `scrapes`: the health of every scrape or query of a source.
//! - `requests`: per-request records of the load generator (key columns + the whole record).
//! - `findings`: what went wrong or was found, with severity, code and evidence (JSON).

use crate::StoreError;
use rusqlite::Connection;

/// Migration `i` goes from schema version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[V1];

/// The schema version this build writes.
pub const CURRENT_VERSION: u32 = MIGRATIONS.len() as u32;

const V1: &str = "
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

/// The store's schema version.
pub fn version(conn: &Connection) -> Result<u32, StoreError> {
    Ok(conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// Brings the store up to [`CURRENT_VERSION`]; returns the version it found.
pub fn migrate(conn: &mut Connection) -> Result<u32, StoreError> {
    let found = version(conn)?;
    if found > CURRENT_VERSION {
        return Err(StoreError::NewerSchema {
            found,
            supported: CURRENT_VERSION,
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", i as u32 + 1)?;
        tx.commit()?;
    }
    Ok(found)
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
