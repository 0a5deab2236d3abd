//! The engine's own statistics: the numbers vLLM's `/metrics` exposes, kept as plain data.
//!
//! [`EngineStats`] is updated by the engine as it schedules and finishes requests (gauges at
//! schedule time, as vLLM's `make_stats()` does; counters and histograms when tokens are produced
//! and requests finish). Rendering to exposition text, per metrics dialect, lives in `metrics`.

/// TTFT buckets (seconds), vLLM V1.
pub const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
/// Inter-token latency and per-request TPOT buckets (seconds).
pub const ITL_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
/// Request latency buckets (seconds): e2e, queue, inference, prefill, decode.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];
/// Tokens per engine step.
pub const ITERATION_TOKEN_BUCKETS: &[f64] = &[
    1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0,
];
/// The `n` request parameter.
pub const PARAMS_N_BUCKETS: &[f64] = &[1.0, 2.0, 5.0, 10.0, 20.0];
/// Preemptions of one finished request (`vllm:request_num_preemptions`, as real 0.32.0 pages
/// bucket it).
pub const PREEMPTION_BUCKETS: &[f64] = &[1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0];

/// vLLM's `build_1_2_5_buckets(max)`: 1, 2, 5, 10, 20, 50, … up to and including `max`.
pub fn buckets_1_2_5(max: u32) -> Vec<f64> {
    let mut out = Vec::new();
    let mut exp = 1u64;
    'outer: loop {
        for m in [1u64, 2, 5] {
            let v = m * exp;
            if v > max as u64 {
                break 'outer;
            }
            out.push(v as f64);
        }
        exp *= 10;
    }
    out
}

/// A cumulative-on-render histogram with fixed upper bounds (`le`), like `prometheus_client`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub bounds: Vec<f64>,
    /// Non-cumulative counts per bucket; the last one is `+Inf`.
    pub counts: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    pub fn new(bounds: &[f64]) -> Self {
        Self {
            bounds: bounds.to_vec(),
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    pub fn observe(&mut self, v: f64) {
        let idx = self.bounds.partition_point(|b| *b < v);
        self.counts[idx] += 1;
        self.sum += v;
        self.count += 1;
    }

    /// Cumulative counts, one per bound and a last one for `+Inf`.
    pub fn cumulative(&self) -> impl Iterator<Item = u64> + '_ {
        self.counts.iter().scan(0u64, |acc, c| {
            *acc += c;
            Some(*acc)
        })
    }
}

/// Why a request finished (`finished_reason` label values, in vLLM's creation order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    Abort,
    Error,
    Repetition,
}

impl FinishReason {
    pub const ALL: [FinishReason; 5] = [
        FinishReason::Stop,
        FinishReason::Length,
        FinishReason::Abort,
        FinishReason::Error,
        FinishReason::Repetition,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::Abort => "abort",
            FinishReason::Error => "error",
            FinishReason::Repetition => "repetition",
        }
    }
}

/// Per-request histograms, observed when requests produce tokens and finish.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestHistograms {
    pub ttft: Histogram,
    pub itl: Histogram,
    pub tpot: Histogram,
    pub e2e: Histogram,
    pub queue: Histogram,
    pub inference: Histogram,
    pub prefill: Histogram,
    pub decode: Histogram,
    pub prompt_tokens: Histogram,
    pub generation_tokens: Histogram,
    pub max_num_generation_tokens: Histogram,
    pub params_n: Histogram,
    pub params_max_tokens: Histogram,
    pub prefill_kv_computed_tokens: Histogram,
    pub iteration_tokens: Histogram,
    /// Times each finished request was preempted.
    pub num_preemptions: Histogram,
}

impl RequestHistograms {
    pub fn new(max_model_len: u32) -> Self {
        let tokens = buckets_1_2_5(max_model_len);
        Self {
            ttft: Histogram::new(TTFT_BUCKETS),
            itl: Histogram::new(ITL_BUCKETS),
            tpot: Histogram::new(ITL_BUCKETS),
            e2e: Histogram::new(LATENCY_BUCKETS),
            queue: Histogram::new(LATENCY_BUCKETS),
            inference: Histogram::new(LATENCY_BUCKETS),
            prefill: Histogram::new(LATENCY_BUCKETS),
            decode: Histogram::new(LATENCY_BUCKETS),
            prompt_tokens: Histogram::new(&tokens),
            generation_tokens: Histogram::new(&tokens),
            max_num_generation_tokens: Histogram::new(&tokens),
            params_n: Histogram::new(PARAMS_N_BUCKETS),
            params_max_tokens: Histogram::new(&tokens),
            prefill_kv_computed_tokens: Histogram::new(&tokens),
            iteration_tokens: Histogram::new(ITERATION_TOKEN_BUCKETS),
            num_preemptions: Histogram::new(PREEMPTION_BUCKETS),
        }
    }
}

/// Everything vLLM's `/metrics` reports about the engine.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineStats {
    pub running: u32,
    pub waiting: u32,
    /// KV-cache usage, a 0..1 fraction.
    pub kv_usage: f64,
    pub preemptions: u64,
    /// All prompt tokens of requests that prefilled, including prefix-cache hits.
    pub prompt_tokens: u64,
    pub prompt_tokens_computed: u64,
    pub prompt_tokens_cached: u64,
    pub generation_tokens: u64,
    pub prefix_queries: u64,
    pub prefix_hits: u64,
    /// Finished requests by [`FinishReason::ALL`] order.
    pub finished: [u64; 5],
    pub est_flops: f64,
    pub est_read_bytes: f64,
    pub est_write_bytes: f64,
    /// Requests the API server turned away at `--max-num-queued-reqs` (vLLM counts them in
    /// `vllm:admission_rejections_total{reason="max_num_queued_reqs"}`).
    pub admission_rejections: u64,
    pub hist: RequestHistograms,
}

impl EngineStats {
    pub fn new(max_model_len: u32) -> Self {
        Self {
            running: 0,
            waiting: 0,
            kv_usage: 0.0,
            preemptions: 0,
            prompt_tokens: 0,
            prompt_tokens_computed: 0,
            prompt_tokens_cached: 0,
            generation_tokens: 0,
            prefix_queries: 0,
            prefix_hits: 0,
            finished: [0; 5],
            est_flops: 0.0,
            est_read_bytes: 0.0,
            est_write_bytes: 0.0,
            admission_rejections: 0,
            hist: RequestHistograms::new(max_model_len),
        }
    }

    pub fn count_finished(&mut self, reason: FinishReason) {
        let idx = FinishReason::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(0);
        self.finished[idx] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_two_five_buckets_stop_at_max() {
        assert_eq!(
            buckets_1_2_5(4096),
            vec![
                1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0
            ]
        );
        assert_eq!(buckets_1_2_5(10), vec![1.0, 2.0, 5.0, 10.0]);
    }

    #[test]
    fn histogram_le_is_inclusive() {
        let mut h = Histogram::new(&[1.0, 2.0]);
        for v in [0.5, 1.0, 1.5, 2.0, 3.0] {
            h.observe(v);
        }
        assert_eq!(h.cumulative().collect::<Vec<_>>(), vec![2, 4, 5]);
        assert_eq!(h.count, 5);
        assert_eq!(h.sum, 8.0);
    }
}
