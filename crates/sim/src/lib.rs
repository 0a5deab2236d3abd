//! `llmscope-sim`: the simulated serving stack.
//!
//! - The **engine model** (pure, no I/O): [`preset`] (GPU, model, engine settings, model
//!   constants), [`engine`] (vLLM V1-like step loop), [`kv`] (block pool with prefix caching),
//!   [`timeline`] (GPU busy intervals), [`stats`] (what `/metrics` reports), [`rng`], [`tokenizer`].
//! - [`options`]: a preset by name plus overrides, checked — what `sim` and `run` are told.
//! - [`fleet`]: N replicas of the stack (`sim --replicas`), each its own GPU or all time-slicing
//!   one.
//! - [`cluster`]: Kueue and kube-state-metrics pages for a set of teams (cost attribution).
//! - [`offline`]: drives the engine in simulated time (no sleeping) — calibration tests and,
//!   `whatif`.
//! - [`fit`]: the engine model fitted to a measured run, and loads replayed on it (`whatif`).
//!
//! Data flows one way: requests → engine steps → stats/timeline → exposition text.

pub mod cluster;
pub mod dcgm;
pub mod dcgm_text;
pub mod engine;
pub mod faults;
pub mod fit;
pub mod fleet;
pub mod kv;
pub mod metrics;
pub mod offline;
pub mod openai;
pub mod options;
pub mod preset;
pub mod rng;
pub mod serve;
pub mod stats;
pub mod timeline;
pub mod tokenizer;
