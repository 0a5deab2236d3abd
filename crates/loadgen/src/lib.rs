//! `llmscope-loadgen`: load for OpenAI-compatible LLM servers, measured exactly.
//!
//! Data flows one way: a [`LoadSpec`] (what was asked) is [`resolve`]d into a [`LoadPlan`] (the
//! only step that does I/O before the run: prompt file, `/v1/models`); [`run`] drives it — one
//! dispatch loop for every arrival schedule ([`schedule`]), one task per request over a small
//! HTTP/1.1 pool ([`http`]), an SSE splitter ([`sse`]) feeding a pure response reader
//! ([`response`]) — and every request ends as one [`RequestRecord`] on a channel to one
//! aggregator ([`stats`]), which hands batches to an [`Observer`] (progress, records file) and
//! returns a serialisable [`LoadReport`] ([`records_file`] writes the records as JSON lines). The client watches itself ([`monitor`]) and says when it
//! limited the result; [`limits`] raises and checks its descriptor limit before a run.
//!
//! # Definitions
//! - A chunk's arrival time is the kernel's receive timestamp of its bytes (`SO_TIMESTAMPNS`,
//!   [`net`]), so a busy client still stamps exactly; without one, the monotonic clock when the
//!   frame reaches the reader, before any parsing. How late the client read its first tokens is
//!   reported as `client.receive_lag_ms`.
//! - **TTFT**: send → first chunk carrying generated text (answer *or* reasoning); role-only and
//!   empty chunks do not count. **TTFO**: send → first chunk carrying answer text (not reasoning).
//! - **ITL**: every gap between consecutive text chunks. **TPOT**: per request,
//!   `(e2e − TTFT) / (output tokens − 1)`. **e2e**: send → end of the response.
//! - "Send" is when the request starts (connection checkout included). In open loop, TTFT and
//!   e2e are also measured from the *intended* send time (`*_from_schedule`, correcting
//!   coordinated omission) and the schedule lag (actual − intended send) is reported.
//! - **Output tokens**: `usage.completion_tokens` when the server gives it, else the counted text
//!   chunks; both are kept and their mismatch reported.
//! - **Throughput** is over the measured window: first measured send → last response end.

pub mod calibrate;
pub mod chunk;
pub mod clock;
pub mod driver;
pub mod failure;
#[cfg(feature = "fake-server")]
pub mod fake;
pub mod flags;
pub mod http;
pub mod limits;
pub mod merge;
pub mod monitor;
pub mod net;
pub mod plan;
pub mod prompts;
pub mod record;
pub mod records_file;
pub mod report;
pub mod response;
pub mod reuse;
pub mod rng;
pub mod schedule;
pub mod shard;
pub mod slo;
pub mod sse;
pub mod stats;
pub mod text;
pub mod trace;

pub use driver::{Observer, Progress, RunControl, Signal, run};
pub use http::{Secret, Target};
pub use plan::{ArrivalKind, LoadPlan, LoadSpec, PlanError, StagePlan, TraceSpec, resolve};
pub use prompts::{Endpoint, TokenSpec};
pub use record::{ErrorKind, RequestRecord};
pub use report::{LoadReport, StageReport, Summary};
pub use schedule::{Arrival, Mode};
pub use slo::Slo;
