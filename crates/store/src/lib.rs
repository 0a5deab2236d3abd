//! `llmscope-store`: the SQLite run store (`rusqlite`, bundled SQLite).
//!
//! A [`Store`] is one database file (default `./llmscope.db`) in WAL mode. A run goes:
//! [`Store::create_run`] → [`Store::add_source`] per source → [`Store::write`] batches of
//! samples and scrape health as they arrive (each call one transaction) →
//! [`Store::add_findings`] / [`Store::add_requests`] → [`Store::finish_run`]. Because every batch
//! is committed on its own, a process killed mid-run leaves every completed batch readable. A
//! run records its owner process ([`owner`]); when a store is opened, a `running` run whose owner
//! is gone is marked `interrupted` (see [`RunStatus`]). [`writer`] runs the writes on their own
//! thread, draining a channel in batches (samples, request records, progress), so async
//! collectors and the load generator never wait for the disk.
//!
//! Modules: [`schema`] (tables, versioned migrations), [`owner`] (is a run's process alive),
//! `write` (inserts), `read`
//! ([`Store::runs`], [`Store::source_stats`], [`Store::series`] …), [`writer`].
//!
//! The store keeps what it is given: callers remove secrets from configurations and URLs before
//! they get here.

mod block;
pub mod guard;
pub mod owner;
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
    #[error(
        "the store has schema version {found} and cannot be written, this llmscope reads version {supported}: open it once where it can be written (llmscope runs) to upgrade it"
    )]
    ReadOnlySchema { found: u32, supported: u32 },
    #[error("run {0} does not exist in the store")]
    NoSuchRun(RunId),
    #[error("source `{source_name}` is not registered in run {run}")]
    NoSuchSource { run: RunId, source_name: String },
    #[error(
        "sample block {block} is unreadable ({why}): the store file is damaged or was written by another program"
    )]
    CorruptBlock { block: i64, why: String },
    #[error("cannot start the store's writer thread: {0}")]
    Thread(std::io::Error),
    #[error("the store's writer thread stopped unexpectedly")]
    WriterGone,
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("stored JSON is unreadable: {0}")]
    Json(#[from] serde_json::Error),
}

/// The life of a run. A `Running` run whose owner process is gone is marked `Interrupted` when the
/// store is next opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    /// Finished; every source delivered.
    Completed,
    /// Finished, but at least one source failed (see the run's findings).
    Partial,
    /// Stopped early: by the user (Ctrl-C), or its process was killed.
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
    /// Seconds the timed part is planned to take (the load of `run`, a live `observe` window).
    pub planned_s: Option<f64>,
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

/// A finding kept with a run (a failed source, the diagnosis' findings): the one finding type,
/// its rule as text.
pub type Finding = llmscope_core::finding::Finding<String>;

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
    /// The block being packed, kept between writes so it is allocated once.
    block_buf: block::Encoder,
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

    /// The store at `path` for reading only (`runs`, `report`, `compare`): opened as usual where
    /// it can be written (so an abandoned run is marked and an old schema upgraded), else read-only
    /// — a read-only mount, a file the user may not write, a folder where SQLite cannot create
    /// its WAL index (then the file is read as it stands, without another writer's last
    /// uncommitted pages). A store too old to read without upgrading says so.
    pub fn open_for_reading(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref();
        match Self::open(path) {
            Ok(store) => Ok(store),
            Err(first) => Self::open_read_only(path).map_err(|_| first),
        }
    }

    /// The store at `path`, read-only, never written (see [`Store::open_for_reading`]).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        use rusqlite::OpenFlags;
        let path = path.as_ref();
        let open_err = |source| StoreError::Open {
            path: path.display().to_string(),
            source,
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)
            .and_then(|c| {
                // Opening is lazy: reading the schema is what finds a WAL index it cannot create.
                schema::version(&c).map_err(|_| rusqlite::Error::InvalidQuery)?;
                Ok(c)
            })
            .or_else(|_| {
                let uri = format!("file:{}?immutable=1", uri_path(path));
                Connection::open_with_flags(uri, flags)
            })
            .map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let found = schema::version(&conn)?;
        if found != schema::CURRENT_VERSION {
            return Err(StoreError::ReadOnlySchema {
                found,
                supported: schema::CURRENT_VERSION,
            });
        }
        Ok(Store {
            conn,
            sources: HashMap::new(),
            series_ids: write::SeriesIds::default(),
            block_buf: block::Encoder::default(),
        })
    }

    /// A private in-memory store (tests, benchmarks).
    pub fn open_in_memory() -> Result<Store, StoreError> {
        Self::setup(Connection::open_in_memory()?)
    }

    fn setup(mut conn: Connection) -> Result<Store, StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // WAL: readers (`llmscope runs`) never block the writer, and a killed writer loses only
        // its uncommitted transaction. NORMAL sync is durable across process crashes.
        enable_wal(&conn)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // A 16 MiB page cache keeps the hot B-tree pages (series, blocks, scrapes) in memory:
        // without it inserts re-read pages through read(2). Blocks are appended, so a larger
        // cache only holds pages already written: at 64 MiB, a day of 100 pods read from
        // Prometheus peaked at 97 MiB of SQLite pages (heaptrack), same insert rate.
        conn.pragma_update(None, "cache_size", -16_384)?;
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        // Foreign keys are declared, not enforced: the writer creates a series before the
        // block that uses it in the same transaction, and enforcing costs a probe per row.
        conn.pragma_update(None, "foreign_keys", false)?;
        schema::migrate(&mut conn)?;
        let mut store = Store {
            conn,
            sources: HashMap::new(),
            series_ids: write::SeriesIds::default(),
            block_buf: block::Encoder::default(),
        };
        store.mark_abandoned_runs()?;
        Ok(store)
    }

    /// The schema version of the open store.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        schema::version(&self.conn)
    }
}

/// `path` as the path of a `file:` URI: `%`, `?` and `#` escaped.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// How long an open or a write waits for another process's lock before it fails.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Switches the store to WAL. On a new store, a second process switching at the same moment gets
/// `SQLITE_BUSY` at once — SQLite does not call the busy handler for a journal-mode change — so
/// it is retried here until [`BUSY_TIMEOUT`] (issue 17).
fn enable_wal(conn: &Connection) -> Result<(), StoreError> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => return Err(e.into()),
        }
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

    /// A v1 store (a row per sample, NaN as NULL) opens as current with every point intact.
    #[test]
    fn a_v1_store_is_migrated_with_its_samples() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(schema::V1).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute_batch(
                "INSERT INTO runs VALUES (1, 'observe', 'completed', 0, 9, 0, 9, '0.1.0', '{}', '{}'),
                                         (2, 'run', 'running', 0, NULL, NULL, NULL, '0.1.0', '{}', '{}');
                 INSERT INTO sources VALUES (1, 1, 'vllm', 'scrape', 'http://x'), (2, 1, 'dcgm', 'scrape', 'http://y');
                 INSERT INTO series VALUES (1, 1, 'a', '[]'), (2, 1, 'b', '[]'), (3, 2, 'c', '[]');
                 INSERT INTO samples VALUES (1, 1.0, 10), (1, 2.0, NULL), (1, 4.0, 40),
                                            (2, 1.0, 5), (3, 3.0, 7);",
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), schema::CURRENT_VERSION);
        assert_eq!(store.run(1).unwrap().samples, 5);
        let series = store.series(1, None).unwrap();
        let got: Vec<(&str, Vec<(f64, String)>)> = series
            .iter()
            .map(|(_, s)| {
                let pts = s.points.iter().map(|p| (p.t, format!("{}", p.v))).collect();
                (s.key.name.as_str(), pts)
            })
            .collect();
        assert_eq!(
            got,
            [
                ("c", vec![(3.0, "7".into())]),
                (
                    "a",
                    vec![(1.0, "10".into()), (2.0, "NaN".into()), (4.0, "40".into())]
                ),
                ("b", vec![(1.0, "5".into())]),
            ]
        );
        let stats = store.source_stats(1, 1.0).unwrap();
        assert_eq!((stats[0].samples, stats[0].gaps), (4, 1));
        // v3's columns: unknown for old runs, and a run with no recorded owner is not guessed at.
        let old = store.run(2).unwrap();
        assert_eq!(old.status, RunStatus::Running);
        assert_eq!(
            (old.interrupted_at, old.done_s, old.planned_s),
            (None, None, None)
        );
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
