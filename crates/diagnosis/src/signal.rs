//! What the diagnosis reads: engine-neutral signals, plus facts about the engine and the load.
//!
//! A [`Signal`] is one [`Concept`] (running requests, KV usage, GPU busy, …) as a time series of
//! `(t, v)` points, already aggregated over pods/GPUs by the caller (sum of running, max of KV…).
//! A missing sample is *no point* — never a 0 — so "absent" and "zero" stay different all the way
//! to the verdict. The metric catalog maps each engine's names onto these concepts.

pub use llmscope_catalog::Concept;
use serde::Serialize;
use std::collections::BTreeMap;

/// A time series of one concept: `(unix seconds, value)`, ascending in time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Signal {
    /// Where it came from (metric name and source), for evidence.
    pub source: String,
    pub points: Vec<(f64, f64)>,
}

impl Signal {
    pub fn new(source: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            source: source.into(),
            points,
        }
    }

    /// Points with `t` in `[from, to]` and a finite value.
    pub fn window(&self, from: f64, to: f64) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.points
            .iter()
            .copied()
            .filter(move |(t, v)| *t >= from && *t <= to && v.is_finite())
    }

    /// A counter's per-second rate between consecutive points; a decrease is a reset (the new
    /// value counts from zero), never a negative rate.
    pub fn rate(&self) -> Signal {
        let points = self
            .points
            .windows(2)
            .filter(|w| w[1].0 > w[0].0 && w[0].1.is_finite() && w[1].1.is_finite())
            .map(|w| {
                let delta = if w[1].1 >= w[0].1 {
                    w[1].1 - w[0].1
                } else {
                    w[1].1
                };
                (w[1].0, delta / (w[1].0 - w[0].0))
            })
            .collect();
        Signal {
            source: format!("rate({})", self.source),
            points,
        }
    }
}

/// What is known about the engine's configuration (from flags, `cache_config_info`, the simulator).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EngineFacts {
    pub max_num_seqs: Option<u32>,
    pub max_num_batched_tokens: Option<u32>,
    /// GPU sharing by time-slicing (replicas then share the same GPU time).
    pub time_sliced: bool,
    /// The KV-cache pool as the engine describes it (vLLM: `vllm:cache_config_info` labels).
    pub kv_cache: Option<KvCacheConfig>,
}

/// The KV-cache pool of one engine, as it reports it. Every field is optional: engines and
/// versions label differently, and an absent label is unknown, never 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct KvCacheConfig {
    /// Tokens per KV block.
    pub block_size: Option<u32>,
    /// Blocks in the pool (vLLM calls them `num_gpu_blocks` on every platform).
    pub num_blocks: Option<u64>,
    /// Tokens the pool holds.
    pub size_tokens: Option<u64>,
    /// Bytes given to the pool explicitly (`--kv-cache-memory-bytes`, or on vLLM's CPU build
    /// `VLLM_CPU_KVCACHE_SPACE`); `None` when the pool is what memory utilisation leaves.
    pub memory_bytes: Option<u64>,
    /// Requests of `max_model_len` tokens the pool holds at once.
    pub max_concurrency: Option<f64>,
    pub gpu_memory_utilization: Option<f64>,
    pub prefix_caching: Option<bool>,
}

/// What the load generator knows about itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LoadFacts {
    /// Closed-loop concurrency, if closed-loop.
    pub concurrency: Option<u32>,
    /// Load start and end (unix seconds), if known.
    pub window: Option<(f64, f64)>,
    /// When the client sent requests (unix seconds; warmup excluded), if known: the steady
    /// phase lies inside it — what the engine does with the requests in flight after the client
    /// stopped sending is the drain, however full its queue.
    pub sending: Option<(f64, f64)>,
    /// The client says it was the limit (CPU, event-loop lag, schedule lag).
    pub client_limited: bool,
    /// Its own words on why ("achieved 812 req/s of 1000; client CPU 98%").
    pub client_note: Option<String>,
    /// Requests the client kept in flight on average while sending (closed loop), if known.
    /// Beyond the engine's running + waiting, the rest waited in front of its scheduler.
    pub achieved_concurrency: Option<f64>,
    /// Other work competed for the cores while measuring (the client kept its load or not),
    /// in the client's words ("its threads waited for a core 115 ms per second"): a data-quality
    /// fact that lowers confidence, never a bottleneck.
    pub contention: Option<String>,
    /// What happened to the requests: sent, ok, failed, per error kind with the server's words.
    pub requests: Option<llmscope_core::outcome::RequestOutcome>,
    /// Prompt reuse the client saw: the shared prefix or sessions it sent, the cached prompt
    /// tokens the server reported per request, TTFT of hits and misses.
    pub prefix: Option<llmscope_core::outcome::PrefixReuse>,
}

/// Everything one diagnosis reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Input {
    pub signals: BTreeMap<Concept, Signal>,
    pub engine: EngineFacts,
    pub load: LoadFacts,
    /// Scrape interval of the engine metrics (s), when known: edges and gaps are judged against it.
    pub scrape_interval_s: Option<f64>,
    /// Engine replicas whose running gauges were summed into [`Concept::Running`] (0: unknown,
    /// read as one). A fleet of N replicas is batch-limited at N × `--max-num-seqs`.
    pub engines: u32,
    /// Samples left out because no value of their metric can be that (a KV usage of 300, a
    /// negative running count): bad data, named, never part of a verdict.
    pub rejected: Vec<Rejected>,
    /// Each replica's own signals (pod, and data-parallel rank), when the series named two or
    /// more: the deployment's signals above are their sum, and a sum hides an uneven fleet
    /// (issue 25). Empty for one replica. A replica's facts are the deployment's
    /// ([`Input::replica`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<Replica>,
    /// Physical GPUs that dcgm-exporter attributes to more than one serving pod.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shared_gpus: Vec<SharedGpu>,
}

/// Which replica a series belongs to: its pod (kube-prometheus-stack's `pod` target label, else
/// the scrape's `instance`) and, for vLLM's data-parallel engines, the `engine` rank.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ReplicaKey {
    pub pod: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<String>,
}

impl std::fmt::Display for ReplicaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.rank {
            Some(r) => write!(f, "{} rank {r}", self.pod),
            None => f.write_str(&self.pod),
        }
    }
}

/// One replica's signals, with no facts of its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Replica {
    pub key: ReplicaKey,
    pub input: Input,
}

/// One physical GPU behind several serving pods (time-slicing, MPS, or several containers given
/// the same device): their GPU time and memory are one budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharedGpu {
    /// dcgm-exporter's `UUID`, else `gpu` index on `Hostname`.
    pub gpu: String,
    pub pods: Vec<String>,
}

/// The samples of one catalogued name outside what its unit can take.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejected {
    pub name: &'static str,
    pub concept: Concept,
    pub count: u64,
    /// The lowest and highest value left out.
    pub lowest: f64,
    pub highest: f64,
    /// What the unit can take, in words ("a fraction from 0 to 1").
    pub domain: &'static str,
}

impl Input {
    /// Replica `r`'s input with the deployment's facts: engine flags, scrape interval, and the
    /// load's window (what the client knows of its concurrency is the deployment's, not any
    /// one replica's, so it is left out).
    pub fn replica(&self, r: &Replica) -> Input {
        Input {
            signals: r.input.signals.clone(),
            engine: EngineFacts {
                kv_cache: r.input.engine.kv_cache.clone(),
                ..self.engine.clone()
            },
            load: LoadFacts {
                window: self.load.window,
                sending: self.load.sending,
                ..LoadFacts::default()
            },
            scrape_interval_s: self.scrape_interval_s,
            engines: r.input.engines,
            rejected: r.input.rejected.clone(),
            replicas: Vec::new(),
            shared_gpus: Vec::new(),
        }
    }

    /// The GPU is shared with other replicas: said by the caller (`time_sliced`) or seen in
    /// dcgm-exporter's attribution ([`Input::shared_gpus`]).
    pub fn gpu_shared(&self) -> bool {
        self.engine.time_sliced || !self.shared_gpus.is_empty()
    }

    pub fn signal(&self, c: Concept) -> Option<&Signal> {
        self.signals
            .get(&c)
            .filter(|s| s.points.iter().any(|p| p.1.is_finite()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_treats_a_decrease_as_a_counter_reset() {
        let s = Signal::new("c", vec![(0.0, 10.0), (1.0, 20.0), (2.0, 5.0), (3.0, 15.0)]);
        let r = s.rate();
        assert_eq!(r.points, vec![(1.0, 10.0), (2.0, 5.0), (3.0, 10.0)]);
    }

    #[test]
    fn window_skips_nan_and_out_of_range() {
        let s = Signal::new(
            "g",
            vec![(0.0, 1.0), (1.0, f64::NAN), (2.0, 3.0), (5.0, 4.0)],
        );
        assert_eq!(s.window(0.5, 4.0).collect::<Vec<_>>(), vec![(2.0, 3.0)]);
    }
}
