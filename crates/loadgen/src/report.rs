//! The run's summary as plain, serialisable data: [`LoadReport`] is the `--format json` contract.
//!
//! A report holds one [`StageReport`] per stage and, flattened at the top level, the stages
//! merged (for a single stage, that stage). Latencies are in milliseconds; a [`Summary`] whose
//! `count` is 0 has every statistic `null` (absent, never a fake 0).

mod shards;

use crate::failure::Samples;
use crate::record::ErrorKind;
use crate::slo::Slo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use llmscope_core::outcome::{
    ClientReport, ClientSummary, Latencies, LoadInfo, PrefixReuse, RequestCounts, Summary,
    Throughput, Tokens,
};
/// The plain figures of a report live in `llmscope-core` (the typed client summary a run stores
/// is made of them), so the store and the renderers read them without this crate.
pub use shards::{PercentileCheck, RecordsCheck, ShardFigures, ShardInfo, ShardsReport};

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
    /// Prompt reuse: the shared prefix or sessions sent, and the cached prompt tokens the server
    /// reported per request, with TTFT of hits and misses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<PrefixReuse>,
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
    /// This process drove one shard of a sharded load (`--shard`, `--start-at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// The shards this report was merged from (`llmscope merge`), and how well they agreed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<ShardsReport>,
    #[serde(flatten)]
    pub total: StageReport,
    pub stages: Vec<StageReport>,
}

impl LoadReport {
    /// The typed client summary a run is stored with (the stages merged; goodput and timing
    /// left out).
    pub fn summary(&self) -> ClientSummary {
        let t = &self.total;
        ClientSummary {
            target: self.target.clone(),
            model: self.model.clone(),
            endpoint: self.endpoint.clone(),
            stream: self.stream,
            interrupted: self.interrupted,
            stopped_early: self.stopped_early.clone(),
            requests: t.requests,
            errors: t.errors.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            failures: t
                .failures
                .iter()
                .map(|(k, s)| (k.to_string(), s.clone()))
                .collect(),
            latency_ms: t.latency_ms.clone(),
            throughput: t.throughput,
            tokens: t.tokens,
            load: t.load.clone(),
            client: t.client.clone(),
            prefix: t.prefix.clone(),
        }
    }
}
