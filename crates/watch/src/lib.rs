//! `llmscope watch`: every deployment a Prometheus-compatible server sees, diagnosed every
//! `--interval` over the last `--window`, and said as metrics (`/metrics`), probes (`/healthz`,
//! `/readyz`) and a status page (`/`). The source of truth stays in Prometheus: watch keeps no
//! series of its own, only the last evaluation, since when each verdict has held and a short
//! ring of each deployment's last evaluations for the page's charts ([`history`]), so any
//! number of replicas (`--shard I/N`) can come and go.
//!
//! Flow, one way: Prometheus → [`evaluate`] (the window read once for the fleet, split by
//! [`fleet`] keys, diagnosed per deployment, stalls and [`drift`] judged) → [`state::State`]
//! (the latest evaluation, verdict ages, watch's own counters) → [`expose`] (the metrics text),
//! [`status_page`] (the status page), [`serve`] (HTTP). [`service::run`] is the loop.

pub mod drift;
pub mod evaluate;
pub mod expose;
pub mod fleet;
pub mod history;
pub mod options;
pub mod serve;
pub mod service;
pub mod state;
pub mod status_page;

use llmscope_collect::prom::PromError;
use llmscope_ops::OpsError;

/// Why watch could not do something.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    // (`error`, not `source`: the message already says it, and a source would be said twice.)
    #[error("Prometheus: {context}: {error}")]
    Prom { context: String, error: PromError },
    #[error(transparent)]
    Ops(OpsError),
    #[error("{what}: {why}")]
    Input { what: String, why: String },
    #[error(
        "cannot listen on {addr}: {error}; pick a free address with --listen (e.g. 127.0.0.1:9465)"
    )]
    Listen { addr: String, error: std::io::Error },
}

impl From<OpsError> for WatchError {
    fn from(e: OpsError) -> Self {
        match e {
            OpsError::Prom { context, source } => WatchError::Prom {
                context,
                error: source,
            },
            other => WatchError::Ops(other),
        }
    }
}

impl WatchError {
    /// The `kind` label of `llmscope_watch_prometheus_query_errors_total`: how the query failed
    /// (connect, timeout, http, api, decode, …), or `other` for failures that are not a query's.
    pub fn kind(&self) -> &'static str {
        match self {
            WatchError::Prom { error, .. } => error.kind().as_str(),
            _ => "other",
        }
    }
}
