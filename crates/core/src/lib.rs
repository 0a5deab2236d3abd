//! `llmscope-core`: the pure middle of llmscope — domain types, units and statistics.
//!
//! No tokio, no HTTP, no database: analysis takes values and returns values. The I/O crates
//! (`sim`, `loadgen`, `collect`, `store`, `cli`) depend on this one, never the other way round.
//!
//! Modules:
//! - [`catalog`]: which exposed metric names measure which concept, per engine and version.
//! - [`client`]: what a load generator saw, and the typed client summary a run is stored with.
//! - [`cost`]: GPU-hours, idle hours and money per team from Kueue reservations.
//! - [`diagnose`]: signals in, one verdict with evidence out (phases, window statistics, edges,
//!   detectors, decision table, recommendations).
//! - [`duration`]: human durations (`5s`, `2m`, `500ms`) as used on every command line.
//! - [`finding`]: the one finding every rule makes (diagnosis, linter, collection), stored as is.
//! - [`safe`]: outside text made safe — control characters escaped for terminals, secrets redacted.
//! - [`severity`]: the one severity scale and `--fail-on` threshold.
//! - [`time`]: points in time as users write them (`now`, `-15m`, RFC3339, Unix seconds).

pub mod catalog;
pub mod client;
pub mod cost;
pub mod diagnose;
pub mod duration;
pub mod finding;
pub mod number;
pub mod safe;
pub mod series;
pub mod severity;
pub mod time;
