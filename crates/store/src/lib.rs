//! `llmscope-store`: the SQLite run store (`rusqlite`, bundled SQLite).
//!
//! A [`Store`] is one database file (default `./llmscope.db`) in WAL mode. A run goes:
//! [`Store::create_run`] → [`Store::add_source`] per source → [`Store::write`] batches of
//! samples and scrape health as they arrive (each call one transaction) →
//! [`Store::add_findings`] / [`Store::add_requests`] → [`Store::finish_run`]. Because every batch
//! is committed on its own, a process killed mid-run leaves every completed batch readable, and
//! the run stays `running` (see [`RunStatus`]). [`writer`] runs the writes on their own thread,
//! draining a channel in batches, so async collectors never wait for the disk.
//!
//! Modules: [`schema`] (tables, versioned migrations), `write` (inserts), `read`
//! ([`Store::runs`], [`Store::source_stats`], [`Store::series`] …), [`writer`].
//!
//! The store keeps what it is given: callers remove secrets from configurations and URLs before
//! they get here.

mod read;
pub mod schema;
mod write;
pub mod writer;

pub use read::{RunSummary, SourceStats};
pub use write::WriteStats;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// The default store path.
pub const DEFAULT_PATH: &str = "llmscope.db";

/// A run's id (the `runs.id` column).
pub type RunId = i64;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the store {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error(
        "the store has schema version {found}, this llmscope knows up to {supported}: it was written by a newer llmscope"
    )]
    NewerSchema { found: u32, supported: u32 },
    #[error("run {0} does not exist in the store")]
    NoSuchRun(RunId),
    #[error("source `{source_name}` is not registered in run {run}")]
    NoSuchSource { run: RunId, source_name: String },
    #[error("cannot start the store's writer thread: {0}")]
    Thread(std::io::Error),
    #[error("the store's writer thread stopped unexpectedly")]
    WriterGone,
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("stored JSON is unreadable: {0}")]
    Json(#[from] serde_json::Error),
}

/// The life of a run. A run that stays `Running` after its process ended was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    /// Finished; every source delivered.
    Completed,
    /// Finished, but at least one source failed (see the run's findings).
    Partial,
    /// Stopped early by the user (Ctrl-C).
    Interrupted,
    /// Nothing could be collected.
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Partial => "partial",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }

    fn from_name(s: &str) -> RunStatus {
        [
            RunStatus::Completed,
            RunStatus::Partial,
            RunStatus::Interrupted,
            RunStatus::Failed,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
        .unwrap_or(RunStatus::Running)
    }
}

/// What is known when a run starts.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// The command that made it (`observe`, `run`).
    pub kind: String,
    /// Unix seconds.
    pub started_at: f64,
    /// The observed window `(from, to)` in Unix seconds, when known up front.
    pub window: Option<(f64, f64)>,
    pub tool_version: String,
    /// The resolved configuration, secrets already removed.
    pub config: serde_json::Value,
}

/// A source of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSpec {
    pub name: String,
    /// `scrape` or `prometheus`.
    pub kind: String,
    /// Without credentials.
    pub url: String,
}

/// A finding to keep with a run (a failed source, later the diagnosis' verdicts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// `info`, `warning`, `error`, `critical`.
    pub severity: String,
    /// Stable machine-readable code, e.g. `source_failed`.
    pub code: String,
    pub source: Option<String>,
    pub message: String,
    pub evidence: serde_json::Value,
}

/// One load-generator request, as stored: key columns plus the whole record as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    pub stage: u32,
    pub id: u64,
    pub sent_unix_ns: u64,
    pub end_unix_ns: u64,
    pub first_token_unix_ns: Option<u64>,
    pub status: Option<u16>,
    /// The error kind's name (`http_503`, `stall` …), `None` when it completed.
    pub error: Option<String>,
    pub prompt_tokens: Option<u32>,
    pub output_tokens: Option<u32>,
    /// The whole record, serialised by the load generator.
    pub record: serde_json::Value,
}

/// An open store.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    /// `(run, source name)` → `sources.id`.
    sources: HashMap<(RunId, String), i64>,
    /// `(source id, key)` → `series.id`, so each batch only inserts series it has not seen.
    series_ids: write::SeriesIds,
}

impl Store {
    /// Opens (creating if needed) the store at `path`, in WAL mode, migrated to the current schema.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref();
        let open_err = |source| StoreError::Open {
            path: path.display().to_string(),
            source,
        };
        let conn = Connection::open(path).map_err(open_err)?;
        Self::setup(conn).map_err(|e| match e {
            StoreError::Sqlite(source) => open_err(source),
            other => other,
        })
    }

    /// A private in-memory store (tests, benchmarks).
    pub fn open_in_memory() -> Result<Store, StoreError> {
        Self::setup(Connection::open_in_memory()?)
    }

    fn setup(mut conn: Connection) -> Result<Store, StoreError> {
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        // WAL: readers (`llmscope runs`) never block the writer, and a killed writer loses only
        // its uncommitted transaction. NORMAL sync is durable across process crashes.
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // A 64 MiB page cache keeps the samples B-tree's hot pages in memory: without it every
        // insert re-reads pages through read(2) (measured: most of the insert time in copies).
        conn.pragma_update(None, "cache_size", -65_536)?;
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        // Foreign keys are declared, not enforced: the writer creates a series before its
        // samples in the same transaction, and enforcing cost a B-tree probe per sample.
        conn.pragma_update(None, "foreign_keys", false)?;
        schema::migrate(&mut conn)?;
        Ok(Store {
            conn,
            sources: HashMap::new(),
            series_ids: write::SeriesIds::default(),
        })
    }

    /// The schema version of the open store.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        schema::version(&self.conn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip() {
        for s in [
            RunStatus::Running,
            RunStatus::Completed,
            RunStatus::Partial,
            RunStatus::Interrupted,
            RunStatus::Failed,
        ] {
            assert_eq!(RunStatus::from_name(s.as_str()), s);
        }
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("not.db");
        std::fs::write(&path, b"this is not sqlite, just some text long enough").unwrap();
        let err = Store::open(&path).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("cannot open the store") && msg.contains("not.db"),
            "{msg}"
        );
    }
}
