//! The run's summary as plain, serialisable data: [`LoadReport`] is the `--format json` contract.
//!
//! A report holds one [`StageReport`] per stage and, flattened at the top level, the stages
//! merged (for a single stage, that stage). Latencies are in milliseconds; a [`Summary`] whose
//! `count` is 0 has every statistic `null` (absent, never a fake 0).

use crate::failure::Samples;
use crate::record::ErrorKind;
use crate::slo::Slo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Distribution of one measure, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: u64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub mean: Option<f64>,
    pub stddev: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// Request accounting: `sent = completed + failed`; warmup requests are counted apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestCounts {
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    pub warmup: u64,
}

/// Client-side latencies. See the crate docs for the definitions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    /// Time to first token (first chunk with answer or reasoning text).
    pub ttft: Summary,
    /// Time to first output token (first chunk with answer text, reasoning excluded).
    pub ttfo: Summary,
    /// Gaps between consecutive text chunks (all gaps of all requests).
    pub itl: Summary,
    /// `(e2e − ttft) / (output tokens − 1)` per request.
    pub tpot: Summary,
    /// Send to end of response.
    pub e2e: Summary,
    /// Open loop: TTFT measured from the intended send time (coordinated omission corrected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_from_schedule: Option<Summary>,
    /// Open loop: e2e measured from the intended send time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_from_schedule: Option<Summary>,
}

/// Rates over the measured window (end of warmup to the last response).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    pub total_tokens_per_s: f64,
    pub window_s: f64,
    /// Output tokens that arrived while requests were being sent (warmup and drain excluded),
    /// per second of that window, from each chunk's arrival time: the rate the server sustained
    /// under this load. `output_tokens_per_s` also spans the drain, where a few long answers
    /// can stretch the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sending_output_tokens_per_s: Option<f64>,
}

/// Token counts: the server's `usage` and the client's own chunk count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    /// Σ `usage.prompt_tokens` of completed requests.
    pub prompt: u64,
    /// Completed requests whose `usage` gave `prompt_tokens`.
    #[serde(default)]
    pub prompt_counted: u64,
    /// The achieved prompt length: mean `usage.prompt_tokens` (the server's count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_mean: Option<f64>,
    /// Σ output tokens of completed requests (`usage.completion_tokens`, else counted chunks).
    pub output: u64,
    /// Σ text chunks counted by the client.
    pub counted_chunks: u64,
    /// Completed requests without a `usage` count.
    pub usage_missing: u64,
    /// Completed requests whose `usage` and chunk count differ.
    pub mismatched_requests: u64,
    /// |Σ usage − Σ chunks| / Σ usage, in percent, over requests that had both.
    pub mismatch_pct: Option<f64>,
}

/// What load was asked for and what was reached.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadInfo {
    /// `closed`, `open`, or `mixed` for merged stages of both kinds.
    pub mode: String,
    /// Closed: concurrency asked for; open: requests/s asked for.
    pub target: Option<f64>,
    /// Closed: mean requests in flight while sending; open: requests/s actually sent.
    pub achieved: Option<f64>,
    /// The unit of `target` and `achieved`: `concurrency` or `requests_per_s`.
    pub unit: String,
    pub concurrency_cap: Option<u32>,
    /// Mean requests in flight over the window (Little's law: Σ e2e / window).
    pub mean_concurrency: f64,
    pub peak_concurrency: u64,
    /// Requests sent per second while sending.
    pub send_rate: f64,
    /// Open loop: actual − intended send time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lag_ms: Option<Summary>,
}

/// Requests that met `--slo`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Goodput {
    pub slo: Slo,
    pub good: u64,
    pub fraction: Option<f64>,
    pub requests_per_s: f64,
}

/// Timing accuracy against the server's own emit stamps (`x-llmscope-timestamps: 1`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimingCheck {
    /// Client arrival − server emit time of each first token.
    pub first_token_delivery_ms: Summary,
}

/// The client watching itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientReport {
    pub cores: u32,
    /// Process CPU time / wall time, in percent of one core.
    pub cpu_percent_mean: Option<f64>,
    pub cpu_percent_max: Option<f64>,
    /// Whole machine busy, in percent of all cores.
    pub host_cpu_percent_mean: Option<f64>,
    /// Time the client's threads waited for a core (other processes), in percent of wall time.
    pub runqueue_wait_percent: Option<f64>,
    /// From the kernel receiving a first token to the client reading it: how late the client
    /// got to its sockets. Latencies use the kernel's time, so this lag is not in them.
    pub receive_lag_ms: Summary,
    /// First tokens read with more data already queued behind them: their stamps may be late by
    /// up to the gap between events (Linux merges queued segments under the newest timestamp).
    pub first_tokens_read_behind: u64,
    /// How late a task that yields is polled again (run-queue delay).
    pub event_loop_lag_ms: Summary,
    /// Achieved ≥ 95% of the target.
    pub load_reached: Option<bool>,
    /// The client failed to keep the load it was asked for, for a reason of its own side.
    pub limited: bool,
    /// Other work competed for the cores while measuring: timings are less exact (a data-quality
    /// fact, not a bottleneck).
    #[serde(default)]
    pub contended: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<String>,
    /// One plain sentence on the above.
    pub verdict: String,
}

/// One stage (or the merge of all).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageReport {
    /// Stage index; `null` for the merge of several stages.
    pub stage: Option<u32>,
    pub label: String,
    pub duration_s: f64,
    pub requests: RequestCounts,
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Per error kind: its count and the first distinct messages the server gave.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failures: BTreeMap<ErrorKind, Samples>,
    pub latency_ms: Latencies,
    pub throughput: Throughput,
    pub tokens: Tokens,
    pub load: LoadInfo,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<Goodput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<TimingCheck>,
    pub client: ClientReport,
}

/// The whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    pub target: String,
    pub model: String,
    pub endpoint: String,
    pub stream: bool,
    pub started_unix_ns: u64,
    /// Stopped early (Ctrl-C): the figures cover what completed.
    pub interrupted: bool,
    /// The run stopped itself because requests kept failing and none succeeded: why, in one
    /// sentence with the server's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<String>,
    #[serde(flatten)]
    pub total: StageReport,
    pub stages: Vec<StageReport>,
}
