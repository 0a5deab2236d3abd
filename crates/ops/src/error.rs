//! [`OpsError`]: what can go wrong in an operation, by kind.

use llmscope_collect::prom::PromError;
use llmscope_store::{RunId, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("Prometheus: {context}: {source}")]
    Prom { context: String, source: PromError },
    /// The facts stored with a run cannot be read: re-diagnosing with defaults would give a
    /// different verdict than the run had, so this is an error, never a silent default.
    #[error(
        "run {run}: the facts stored with it cannot be read ({why}); it was written by an incompatible llmscope or the store is damaged"
    )]
    Facts { run: RunId, why: String },
    #[error("{0}")]
    NoData(String),
    /// The server cannot be read at all (refused, unreachable, not an API): nothing is computed
    /// from missing data.
    #[error(
        "cannot read Prometheus at {url}: {source}; {fix}. No cost is computed from missing data"
    )]
    Unreadable {
        url: String,
        source: PromError,
        fix: &'static str,
    },
    /// A metrics page that cannot be read.
    #[error("fetching {url}: {why}")]
    Page { url: String, why: String },
    /// What was asked cannot make a plan: what is wrong, naming the flag to change.
    #[error("{0}")]
    Invalid(String),
    /// The plan cannot work (a pre-flight check failed): what is wrong and what to do.
    #[error("{0}")]
    Refused(String),
    #[error("TLS setup: {0}")]
    Tls(#[from] llmscope_collect::http::TlsError),
    /// An input file (a saved page, a dashboard, a rule file) that cannot be read.
    #[error(transparent)]
    File(#[from] llmscope_check::input::files::FileError),
    #[error("starting the simulated stack: {0}")]
    Sim(#[from] llmscope_sim::serve::SimError),
    #[error(transparent)]
    SimOptions(#[from] llmscope_sim::options::OptionsError),
    #[error("preparing the load: {0}")]
    Load(#[from] llmscope_loadgen::PlanError),
    #[error(transparent)]
    Limit(#[from] llmscope_loadgen::limits::LimitError),
    #[error(transparent)]
    Generate(#[from] llmscope_generate::GenerateError),
    #[error("autoscaling objects: {0}")]
    Autoscaling(#[from] llmscope_generate::autoscaling::AutoscalingError),
    #[error("cannot start an async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("{0}")]
    Task(String),
    /// An output path that is a database (the store itself, most likely).
    #[error(transparent)]
    WouldOverwrite(#[from] llmscope_store::guard::WouldOverwrite),
    #[error(
        "refusing to export into {path}: it is not empty ({entries} entries there); give a new or empty directory, or remove what is in it first"
    )]
    ExportDirNotEmpty { path: String, entries: usize },
    #[error("creating {path}: {source}")]
    Create {
        path: String,
        source: std::io::Error,
    },
    #[error("writing {path}: {source}")]
    WriteFile {
        path: String,
        source: std::io::Error,
    },
    #[error("writing the report: {0}")]
    Write(#[from] std::io::Error),
    #[error("encoding the report: {0}")]
    Json(#[from] serde_json::Error),
    /// The store stopped taking writes during a recording (a full disk): what was recorded
    /// before stays, the load was stopped, and the client's report travels with the error so
    /// the front end can still show it.
    #[error("{0}")]
    StoreStopped(Box<StoreStopped>),
}

/// A recording whose store stopped taking writes ([`OpsError::StoreStopped`]).
#[derive(Debug)]
pub struct StoreStopped {
    pub run: RunId,
    /// The database error that stopped the writer ("database or disk is full").
    pub error: String,
    /// How far the run could be marked `failed`.
    pub marked: Marked,
    /// The store's file, when the operation knows it.
    pub db: Option<std::path::PathBuf>,
    /// What the load generator measured, when there was a load.
    pub report: Option<Box<llmscope_loadgen::LoadReport>>,
}

/// How far a run whose store stopped taking writes could still be marked `failed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marked {
    /// `failed`, with a finding saying why.
    WithReason,
    /// `failed`, but the finding saying why could not be written (why not).
    WithoutReason(String),
    /// Not even that (why not): it reads `interrupted` at its last commit.
    Not(String),
}

impl std::fmt::Display for StoreStopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (run, error) = (self.run, &self.error);
        let db = self
            .db
            .as_ref()
            .map_or_else(String::new, |p| format!(" {}", p.display()));
        write!(f, "the store{db} stopped taking writes: {error}. ")?;
        if self.report.is_some() {
            write!(f, "The load was stopped at once (its report is above). ")?;
        }
        match &self.marked {
            Marked::WithReason => write!(
                f,
                "Run {run} is stored `failed` with this reason and what was recorded before it (llmscope runs --run {run})"
            )?,
            Marked::WithoutReason(why) => write!(
                f,
                "Run {run} is stored `failed` with what was recorded before it; the reason could not be stored with it ({why})"
            )?,
            Marked::Not(why) => write!(
                f,
                "Run {run} keeps what was recorded before it, but could not even be marked failed ({why}): it reads `interrupted` at its last commit"
            )?,
        }
        write!(
            f,
            ". Free space where the store lives, or give --db a file on another disk, and run again"
        )
    }
}
