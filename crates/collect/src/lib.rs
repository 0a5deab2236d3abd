//! `llmscope-collect`: reading time series from where they live, into the core series model.
//!
//! Two kinds of [`Source`] behind one interface ([`source`]):
//! - [`scrape::ScrapeSource`]: llmscope scrapes a target itself — one scrape loop per target,
//!   parameterised by a per-target context (interval, timeout < interval, jitter, body-size cap,
//!   `Accept` negotiation, gzip); each page is read by [`samples`] (DCGM sentinels → missing).
//! - [`prom::PromSource`]: a Prometheus-compatible server (Prometheus, Thanos, Mimir,
//!   VictoriaMetrics) read with [`prom::PromClient`].
//!
//! Data flows one way: a source sends [`llmscope_core::series::Batch`]es to a [`Sink`] while it
//! runs (the CLI connects the sink to the store's writer) and returns a [`SourceReport`] whose
//! [`Problem`]s say what failed, by kind. [`http`] is the one HTTP client (hyper 1.x, rustls with
//! `ring`); [`time`] parses `--from`/`--to`; [`url`] checks URLs; [`version`] asks an
//! engine its version (`GET /version`). Nothing here prints.

pub mod http;
pub mod prom;
pub mod samples;
pub mod scrape;
pub mod source;
#[cfg(feature = "real-prometheus")]
pub mod testing;
/// Points in time as users write them (pure; lives in the core, kept here for the callers).
pub use llmscope_core::time;
pub mod url;
pub mod version;

pub use http::HttpClient;
pub use source::{Problem, Sink, Source, SourceError, SourceReport, Stop, StopHandle, Window};
