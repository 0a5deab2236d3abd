//! `llmscope-check`: no more silent metric-name failures. Checks PromQL, Grafana dashboards and
//! Prometheus rule files against real metric inventories and the catalog of engine versions.
//!
//! Flow: [`input`] reads sources (an `--expr`, `.promql` files, dashboard JSON, rule YAML and
//! `PrometheusRule` manifests) into located [`input::Query`]s → [`promql::check_expr`] walks
//! each expression, inferring what it computes, and hands the [`rules`] (one unit per
//! [`finding::Rule`] id) their facts, judged against [`inventory::Inventories`] → [`Finding`]s
//! → [`report`] writes them as text, JSON or SARIF. [`targets`] checks that collection really works (targets
//! up, and real values in every layer).
//! Everything here is pure — the caller fetches pages and API answers and hands them in — except
//! [`input::files`], which opens the files and folders `check` is pointed at, bounded.

pub mod finding;
pub mod input;
pub mod inventory;
pub mod promql;
pub mod report;
pub mod rules;
pub mod targets;

pub use finding::{FailOn, Finding, Location, Rule, Severity};
pub use inventory::{Inventories, Inventory};
