//! `llmscope-generate`: Grafana dashboards and Prometheus rules that are right for the engine
//! version in front of them (issue 7). Hand-written dashboards rot when an engine renames a
//! metric; these are generated from the catalog, so every query names a series that version
//! exposes.
//!
//! Flow: a [`Stack`] (engine, GPU exporter and scheduler versions, from `--engine` flags or
//! detected from an inventory's names) → [`Signals`] (the exact family names each panel and rule
//! reads, picked from the catalog) → [`dashboard::build`] (a [`grafana::Dashboard`]) and
//! [`rules::build`] (a [`promrules::RuleFile`], optionally wrapped in a `PrometheusRule`) →
//! [`output`] writes JSON or YAML with a stable key order and no timestamps.
//! Everything is pure: no I/O, no clock.
//!
//! [`autoscaling`] turns a measured per-replica capacity (requests in flight within the SLO) into
//! a KEDA `ScaledObject`, or an `autoscaling/v2` HPA with the prometheus-adapter rule behind it.

pub mod autoscaling;
pub mod dashboard;
pub mod grafana;
pub mod output;
pub mod promql;
pub mod promrules;
pub mod rules;
pub mod signals;
pub mod stack;
pub mod stall;
pub mod watch;

pub use signals::Signals;
pub use stack::{GenerateError, Stack};
