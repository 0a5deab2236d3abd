//! The shards in a report, as plain data: the shard one process drove ([`ShardInfo`], written by
//! [`crate::driver`]) and the shards a report was merged from ([`ShardsReport`], written by
//! [`crate::merge`]). They live under the report they are fields of, so that the report's types
//! depend on no module that builds them (issue 47: no module cycle of three files or more).

use llmscope_core::outcome::RequestCounts;
use serde::{Deserialize, Serialize};

/// A shard as its report states it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub index: u32,
    pub count: u32,
    /// `--start-at`, Unix ns, when given.
    pub start_at_unix_ns: Option<u64>,
    /// When its first stage began, by its own clock (Unix ns).
    pub started_unix_ns: u64,
    /// How late it began after `--start-at` (ms); `None` without one.
    pub late_ms: Option<f64>,
    /// The server's clock ahead of this shard's (ms, within about ±500 ms: the server's `Date`
    /// header); `None` when the server sends none.
    #[serde(default)]
    pub server_clock_offset_ms: Option<f64>,
}

/// The shards a report was merged from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardsReport {
    pub count: u32,
    pub shards: Vec<ShardFigures>,
    /// Per stage: how far apart the shards began it (ms).
    pub stage_start_spread_ms: Vec<f64>,
    /// No shard late, stages begun together, every shard kept its share.
    pub agreed: bool,
    /// What did not agree, one sentence each.
    pub problems: Vec<String>,
    /// The merged percentiles checked against the shards' records, when they were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<RecordsCheck>,
}

/// One shard's own figures (its whole run).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardFigures {
    pub index: u32,
    pub file: String,
    pub started_unix_ns: u64,
    pub late_ms: Option<f64>,
    /// The server's clock ahead of the shard's (ms, ±500 ms), by its `Date` header.
    pub server_clock_offset_ms: Option<f64>,
    pub stages: usize,
    pub requests: RequestCounts,
    pub output_tokens_per_s: f64,
    pub load_target: Option<f64>,
    pub load_achieved: Option<f64>,
    pub load_unit: String,
    pub client_limited: bool,
    pub client_verdict: String,
}

/// The merged histograms against the records.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordsCheck {
    pub files: usize,
    /// Records read, and those measured (warmup left out) and completed.
    pub records: u64,
    pub measured: u64,
    pub completed: u64,
    pub percentiles: Vec<PercentileCheck>,
    /// Counts match and every percentile is within the histogram's precision of the records'.
    pub agree: bool,
}

/// One percentile, from the merged histogram and from the sorted records.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PercentileCheck {
    pub metric: String,
    pub quantile: f64,
    pub histogram_ms: Option<f64>,
    pub records_ms: Option<f64>,
    pub agree: bool,
}
