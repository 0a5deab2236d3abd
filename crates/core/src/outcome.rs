//! What a load generator saw, as plain data: the figures of `llmscope load --format json`
//! (latency [`Summary`]s, [`RequestCounts`], [`Throughput`], [`Tokens`], [`LoadInfo`], the
//! client watching itself in [`ClientReport`]) and [`ClientSummary`], the typed client side a run
//! is stored with and a report shows.
//!
//! The load generator builds a `ClientSummary` from its `LoadReport`; the store keeps it as JSON
//! and the analysis reads it back typed. Its JSON shape is the report's own top level, so runs
//! stored before it existed (the whole `LoadReport` as JSON) still read: the fields it does not
//! keep (stages, goodput, timing) are skipped, and a document that lacks a field it needs, or
//! holds one of the wrong type, is an error (never a silent default).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Distinct messages kept per error kind.
pub const MAX_SAMPLES: usize = 3;

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

/// Prompt reuse as the client saw it (issue 27): what the load repeats on purpose (a shared
/// system prompt, the conversation so far in multi-turn sessions) and, where the server counted
/// cached prompt tokens per request (`usage.prompt_tokens_details.cached_tokens`; vLLM with
/// `--enable-prompt-tokens-details`, the simulator always), TTFT of the requests that hit the
/// prefix cache next to those that missed. Absent fields are unknown, never 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PrefixReuse {
    /// `--shared-prefix`: tokens of the shared system prompt, and `--prefix-groups`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_prefix_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_groups: Option<u32>,
    /// `--turns`: turns per session (each carries the conversation so far).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
    /// Prompt tokens of completed measured requests, summed (the server's count).
    pub prompt_tokens: u64,
    /// Of those, tokens the load repeats from an earlier request: what a prefix cache large
    /// enough would hit (the shared prefix after each group's first request; a turn's whole
    /// previous prompt and answer). `None` when the load does not know (a plain load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeated_tokens: Option<u64>,
    /// Requests whose usage said how many prompt tokens were cached, and those tokens summed.
    pub reported: u64,
    pub cached_tokens: u64,
    /// TTFT of requests that found at least a quarter of their prompt cached (hits: a shared
    /// prefix, the conversation so far — not just a chat template's first block) and of the rest
    /// (misses), per the server's count.
    pub ttft_hit: Summary,
    pub ttft_miss: Summary,
    /// Sessions: TTFT of first turns and of later turns (a miss and a hit, if the cache holds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_first_turn: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_later_turns: Option<Summary>,
}

impl PrefixReuse {
    /// Share of prompt tokens the load repeats: a perfect cache's hit rate.
    pub fn repeated_share(&self) -> Option<f64> {
        let r = self.repeated_tokens?;
        (self.prompt_tokens > 0).then(|| r as f64 / self.prompt_tokens as f64)
    }

    /// Share of reported prompt tokens the server found cached.
    pub fn cached_share(&self) -> Option<f64> {
        (self.reported > 0 && self.prompt_tokens > 0)
            .then(|| self.cached_tokens as f64 / self.prompt_tokens as f64)
    }
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
    /// When the load sent requests (warmup excluded; for several stages, the first stage's
    /// start to the last's end), Unix seconds: the client's own loaded span, which the drain of
    /// the requests still in flight after it does not belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sending_unix_s: Option<(f64, f64)>,
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

/// One error kind: how often, and the first distinct messages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Samples {
    pub count: u64,
    /// The first distinct server messages, at most [`MAX_SAMPLES`].
    pub bodies: Vec<String>,
}

impl Samples {
    /// Counts one failure and keeps its message if it is new and there is room.
    pub fn add(&mut self, body: Option<&str>) {
        self.count += 1;
        if let Some(b) = body {
            self.keep(b);
        }
    }

    /// Keeps `body` with every secret redacted: a server that echoes the API key must not put
    /// it in the report, the store or the terminal (issue 17).
    fn keep(&mut self, body: &str) {
        if self.bodies.len() >= MAX_SAMPLES {
            return;
        }
        let body = crate::safe::redact(body);
        if !self.bodies.iter().any(|b| *b == body) {
            self.bodies.push(body.into_owned());
        }
    }

    pub fn merge(&mut self, other: &Samples) {
        self.count += other.count;
        for b in &other.bodies {
            self.keep(b);
        }
    }
}

/// The client side of a run, typed: what the load asked for and reached, how requests ended
/// (per error kind, with the server's first words), latencies, throughput and tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientSummary {
    pub target: String,
    pub model: String,
    pub endpoint: String,
    pub stream: bool,
    /// Stopped early (Ctrl-C): the figures cover what completed.
    pub interrupted: bool,
    /// The load stopped itself because requests kept failing and none succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<String>,
    pub requests: RequestCounts,
    /// Requests per error kind (`http_503`, `stall`, `cancelled` …).
    pub errors: BTreeMap<String, u64>,
    /// Per error kind: its count and the first distinct messages the server gave.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failures: BTreeMap<String, Samples>,
    pub latency_ms: Latencies,
    pub throughput: Throughput,
    pub tokens: Tokens,
    pub load: LoadInfo,
    pub client: ClientReport,
    /// Prompt reuse (shared prefixes, sessions, cached prompt tokens), when there was any to see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<PrefixReuse>,
}

/// The error kind of requests the client itself cancelled when the run ended.
const CANCELLED: &str = "cancelled";

impl ClientSummary {
    /// The request outcome: counts, and per error kind (most frequent first) its count and the
    /// server's first messages. Requests the client cancelled when the run ended (their grace
    /// ran out) are its own decision, not the server failing them: they are not failures.
    pub fn request_outcome(&self) -> RequestOutcome {
        let cancelled = self.errors.get(CANCELLED).copied().unwrap_or(0);
        let mut kinds: Vec<FailureKind> = self
            .errors
            .iter()
            .filter(|(kind, _)| *kind != CANCELLED)
            .map(|(kind, count)| FailureKind {
                kind: kind.clone(),
                status: kind.strip_prefix("http_").and_then(|s| s.parse().ok()),
                count: *count,
                bodies: self
                    .failures
                    .get(kind)
                    .map(|f| f.bodies.clone())
                    .unwrap_or_default(),
            })
            .collect();
        kinds.sort_by_key(|k| std::cmp::Reverse(k.count));
        RequestOutcome {
            sent: self.requests.sent,
            ok: self.requests.completed,
            failed: self.requests.failed.saturating_sub(cancelled),
            kinds,
            stopped_early: self.stopped_early.clone(),
        }
    }

    /// The closed-loop concurrency the client kept while sending.
    pub fn achieved_concurrency(&self) -> Option<f64> {
        (self.load.unit == "concurrency").then_some(self.load.achieved?)
    }

    /// When the load sent, Unix seconds (see [`LoadInfo::sending_unix_s`]).
    pub fn sending(&self) -> Option<(f64, f64)> {
        self.load.sending_unix_s
    }
}

/// Share of finished requests failing at which failures are the verdict.
pub const FAILING_SHARE: f64 = 0.05;
/// Share at which the window did not carry the intended load: no bottleneck is drawn from it.
pub const MASSIVE_SHARE: f64 = 0.5;

/// What happened to the requests of a load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestOutcome {
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    /// Per error kind, most frequent first.
    pub kinds: Vec<FailureKind>,
    /// The load stopped itself because nothing succeeded (the load generator's sentence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<String>,
}

/// One error kind of a load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FailureKind {
    /// `http_400`, `timeout`, `stream_cut`, …
    pub kind: String,
    /// The HTTP status, for `http_*` kinds.
    pub status: Option<u16>,
    pub count: u64,
    /// The first distinct messages the server gave (sanitised, size-capped).
    pub bodies: Vec<String>,
}

impl RequestOutcome {
    /// Failed share of finished requests; `None` when nothing finished.
    pub fn failed_share(&self) -> Option<f64> {
        let finished = self.ok + self.failed;
        (finished > 0).then(|| self.failed as f64 / finished as f64)
    }

    /// Whether failures are the verdict.
    pub fn failing(&self) -> bool {
        self.failed > 0 && (self.ok == 0 || self.failed_share().is_some_and(|s| s >= FAILING_SHARE))
    }

    /// Whether so many failed that the window did not carry the intended load.
    pub fn massive(&self) -> bool {
        self.failing() && self.failed_share().is_some_and(|s| s >= MASSIVE_SHARE)
    }

    /// The most frequent error kind.
    pub fn worst(&self) -> Option<&FailureKind> {
        self.kinds.iter().max_by_key(|k| k.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run stored before the summary existed kept the load generator's whole report; it
    /// reads as a summary (stages, goodput and timing are left out).
    const OLD_REPORT: &str = r#"{
      "target": "http://127.0.0.1:8000", "model": "Qwen/Qwen2.5-3B-Instruct",
      "endpoint": "chat", "stream": true, "started_unix_ns": 1764000000000000000,
      "interrupted": false,
      "stage": null, "label": "concurrency 32", "duration_s": 45.0,
      "requests": {"sent": 151, "completed": 100, "failed": 51, "warmup": 0},
      "errors": {"cancelled": 50, "http_400": 1},
      "failures": {"http_400": {"count": 1, "bodies": ["max context length is 4096 tokens"]}},
      "latency_ms": {
        "ttft": {"count": 100, "p50": 120.5, "p90": 200.0, "p95": 250.0, "p99": 300.0,
                 "p999": 310.0, "mean": 130.0, "stddev": 20.0, "min": 80.0, "max": 320.0},
        "ttfo": {"count": 0, "p50": null, "p90": null, "p95": null, "p99": null, "p999": null,
                 "mean": null, "stddev": null, "min": null, "max": null},
        "itl": {"count": 0, "p50": null, "p90": null, "p95": null, "p99": null, "p999": null,
                "mean": null, "stddev": null, "min": null, "max": null},
        "tpot": {"count": 0, "p50": null, "p90": null, "p95": null, "p99": null, "p999": null,
                 "mean": null, "stddev": null, "min": null, "max": null},
        "e2e": {"count": 0, "p50": null, "p90": null, "p95": null, "p99": null, "p999": null,
                "mean": null, "stddev": null, "min": null, "max": null}
      },
      "throughput": {"requests_per_s": 2.2, "output_tokens_per_s": 480.0,
                     "total_tokens_per_s": 550.0, "window_s": 45.0},
      "tokens": {"prompt": 3000, "prompt_counted": 100, "prompt_mean": 30.0, "output": 20000,
                 "counted_chunks": 20000, "usage_missing": 0, "mismatched_requests": 0,
                 "mismatch_pct": 0.0},
      "load": {"mode": "closed", "target": 32.0, "achieved": 31.4, "unit": "concurrency",
               "concurrency_cap": null, "mean_concurrency": 31.0, "peak_concurrency": 32,
               "send_rate": 2.3},
      "goodput": {"slo": {}, "good": 100, "fraction": 1.0, "requests_per_s": 2.2},
      "client": {"cores": 2, "cpu_percent_mean": 20.0, "cpu_percent_max": 40.0,
                 "host_cpu_percent_mean": 50.0, "runqueue_wait_percent": 1.0,
                 "receive_lag_ms": {"count": 0, "p50": null, "p90": null, "p95": null,
                   "p99": null, "p999": null, "mean": null, "stddev": null, "min": null,
                   "max": null},
                 "first_tokens_read_behind": 0,
                 "event_loop_lag_ms": {"count": 0, "p50": null, "p90": null, "p95": null,
                   "p99": null, "p999": null, "mean": null, "stddev": null, "min": null,
                   "max": null},
                 "load_reached": true, "limited": false, "verdict": "the client kept up"},
      "stages": [{"stage": 0}]
    }"#;

    #[test]
    fn a_run_stored_with_the_whole_load_report_reads_typed() {
        let s: ClientSummary = serde_json::from_str(OLD_REPORT).unwrap();
        assert_eq!(s.model, "Qwen/Qwen2.5-3B-Instruct");
        assert_eq!(s.latency_ms.ttft.p50, Some(120.5));
        assert_eq!(s.tokens.prompt_mean, Some(30.0));
        assert_eq!(s.achieved_concurrency(), Some(31.4));
        assert!(!s.client.contended, "a field added later defaults");
        let o = s.request_outcome();
        assert_eq!((o.sent, o.ok, o.failed), (151, 100, 1));
        assert_eq!(o.kinds.len(), 1);
        assert_eq!(o.kinds[0].status, Some(400));
        assert_eq!(o.kinds[0].bodies, ["max context length is 4096 tokens"]);
        assert!(!o.failing(), "1 failure in 101 is under the failing share");
        // What it writes reads back the same.
        let again: ClientSummary =
            serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(again, s);
    }

    #[test]
    fn a_summary_missing_what_it_needs_is_an_error() {
        let mut doc: serde_json::Value = serde_json::from_str(OLD_REPORT).unwrap();
        doc.as_object_mut().unwrap().remove("latency_ms");
        assert!(serde_json::from_value::<ClientSummary>(doc).is_err());
        let mut doc: serde_json::Value = serde_json::from_str(OLD_REPORT).unwrap();
        doc["requests"]["sent"] = serde_json::json!("many");
        assert!(serde_json::from_value::<ClientSummary>(doc).is_err());
    }
}
