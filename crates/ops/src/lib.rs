//! The operations of llmscope's method, as a library: what `run`, `observe`, `diagnose` and
//! `watch` share, so every front end says the same thing about the same data (cargo's `ops`:
//! commands parse their arguments, operations do the work).
//!
//! - [`window`]: a Prometheus window read one catalogued name at a time and handed on as it
//!   arrives, so a day of a fleet is never held whole.
//! - [`analysis`]: a stored run (its series and facts) → a diagnosis ready to render; findings
//!   recorded with the run; the report written to any `impl Write`.
//! - [`check`]: PromQL, dashboards and rule files linted against real inventories.
//! - [`compare`]: two runs side by side.
//! - [`cost`]: the inputs of `llmscope cost`, names taken from the catalog.
//! - [`diagnose`]: `diagnose --prometheus` — a window streamed into the store as a run and into
//!   the signals at once, then diagnosed and recorded.
//!
//! - [`record`]: the one recording lifecycle `run`, `observe` and `diagnose` share — a run
//!   created with its sources, the writer and collectors of its live part, stopped, judged and
//!   finished with its findings.
//! - [`cancel`]: the token that stops an operation early; the binary cancels it (Ctrl-C), no
//!   operation watches signals itself.
//! - [`run`]: the whole method on a resolved plan — pre-flight, baseline, load while observing,
//!   drain, diagnose, record — telling a [`run::Narrator`] what happens.
//! - [`capacity`]: a search of the load axis in short stages, each a `run` of its own, for the
//!   knee, the goodput under an SLO and the verdict where the curve bends.
//! - [`inventory`]: what a Prometheus holds, for linting.
//! - [`observe`]: record a window of sources into a run.
//! - [`exporter_page`]: a metrics page and the engine version behind it.
//! - [`runs`]: the store's runs as `llmscope runs` lists them.
//! - [`stack`]: which stack `dashboard` and `rules` generate for.
//! - [`targets`]: is collection working — targets up, every layer's values real.
//!
//! Libraries never print: progress and warnings come back as values.

pub mod analysis;
pub mod cancel;
pub mod capacity;
pub mod check;
pub mod compare;
pub mod cost;
pub mod diagnose;
mod error;
pub mod export;
pub mod exporter_page;
pub mod inventory;
pub mod observe;
pub mod record;
pub mod run;
pub mod runs;
pub mod stack;
pub mod targets;
pub mod whatif;
pub mod window;

pub use error::{Marked, OpsError, StoreStopped};
