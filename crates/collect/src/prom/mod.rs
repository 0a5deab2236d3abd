//! The Prometheus HTTP API: a client ([`PromClient`]) and a [`Source`](crate::source::Source)
//! over it ([`PromSource`]).
//!
//! Works with Prometheus, Thanos, Mimir and VictoriaMetrics: a path prefix in the base URL
//! (`http://mimir/prometheus`), extra headers (`X-Scope-OrgID`), bearer or basic auth, TLS.
//! [`api`] decodes the envelope and results (pure); [`client`] sends the requests (timeouts,
//! retries only for failures that cannot have run the query twice, range splitting under the
//! 11,000-points-per-series limit); [`source`] reads `--match` selectors over a window.

pub mod api;
pub mod client;
pub mod source;

pub use api::{ApiResponse, ErrorType, MetricMetadata, QueryData, Targets};
pub use client::{Auth, PromClient, PromConfig, Secret, split_range};
pub use source::PromSource;

use crate::http::FetchError;
use llmscope_core::series::FailureKind;

/// Why an API call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PromError {
    #[error("{0}")]
    Fetch(#[from] FetchError),
    /// A non-2xx answer that was not an API envelope (a proxy, a wrong URL).
    #[error("HTTP {status}: {snippet}")]
    Http { status: u16, snippet: String },
    /// The API said `status: error`.
    #[error("{error_type}: {message}")]
    Api {
        error_type: ErrorType,
        message: String,
    },
    #[error("{why}")]
    Decode { why: String },
}

impl PromError {
    pub fn kind(&self) -> FailureKind {
        match self {
            PromError::Fetch(e) => e.kind(),
            PromError::Http { .. } => FailureKind::Http,
            PromError::Api { .. } => FailureKind::Api,
            PromError::Decode { .. } => FailureKind::Decode,
        }
    }

    /// Failures after which sending the same read again is safe and may succeed: no connection,
    /// or the server/proxy said it is unavailable.
    pub fn is_retryable(&self) -> bool {
        match self {
            PromError::Fetch(FetchError::Connect(_)) => true,
            PromError::Http { status, .. } => matches!(status, 502..=504),
            PromError::Api { error_type, .. } => *error_type == ErrorType::Unavailable,
            _ => false,
        }
    }
}
