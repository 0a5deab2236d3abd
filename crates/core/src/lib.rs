//! `llmscope-core`: the pure middle of llmscope — domain types, units and statistics.
//!
//! No tokio, no HTTP, no database: analysis takes values and returns values. The I/O crates
//! (`sim`, `loadgen`, `collect`, `store`, `cli`) depend on this one, never the other way round.
//!
//! Modules:
//! - [`bottleneck`]: the primary bottleneck of a run, the one answer every report names.
//! - [`outcome`]: what a load generator saw — the typed client summary a run is stored with and
//!   what happened to its requests.
//! - [`cost`]: GPU-hours, idle hours and money per team from Kueue reservations.
//! - [`duration`]: human durations (`5s`, `2m`, `500ms`) as used on every command line.
//! - [`files`]: a file a command line named, read bounded: regular files only, size-limited.
//! - [`finding`]: the one finding every rule makes (diagnosis, linter, collection), stored as is.
//! - [`safe`]: outside text made safe — control characters escaped for terminals, secrets redacted.
//! - [`severity`]: the one severity scale and `--fail-on` threshold.
//! - [`time`]: points in time as users write them (`now`, `-15m`, RFC3339, Unix seconds).

pub mod bottleneck;
pub mod cost;
pub mod duration;
pub mod files;
pub mod finding;
pub mod number;
pub mod outcome;
pub mod safe;
pub mod series;
pub mod severity;
pub mod shard;
pub mod time;
