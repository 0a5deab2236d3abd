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
}
