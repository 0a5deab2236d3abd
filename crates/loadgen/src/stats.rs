//! Streaming statistics: records in, [`StageReport`] out. Pure and mergeable.
//!
//! [`StageStats::add`] folds one [`RequestRecord`] into HDR histograms (microsecond resolution,
//! 3 significant digits, up to one hour) and counters; [`StageStats::merge`] adds another stage's
//! stats, so a multi-stage run reports each stage and their union without keeping records.

use crate::failure::Samples;
use crate::record::{ErrorKind, RequestRecord};
use crate::report::{
    ClientReport, Goodput, Latencies, LoadInfo, RequestCounts, StageReport, Summary, Throughput,
    TimingCheck, Tokens,
};
use crate::reuse::{ReuseShape, ReuseStats};
use crate::schedule::Mode;
use crate::slo::Slo;
use hdrhistogram::Histogram;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;

pub const MAX_US: u64 = 3_600_000_000;

/// A latency histogram in microseconds.
#[derive(Debug, Clone)]
pub struct Hist(Histogram<u64>);

impl Default for Hist {
    fn default() -> Self {
        Hist(Histogram::new_with_bounds(1, MAX_US, 3).expect("valid HDR bounds"))
    }
}

impl Hist {
    pub fn record_us(&mut self, us: u64) {
        self.0.saturating_record(us.min(MAX_US));
    }

    pub fn record_ns(&mut self, ns: u64) {
        self.record_us((ns + 500) / 1000);
    }

    pub fn merge(&mut self, other: &Hist) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.0.add(&other.0);
    }

    pub fn len(&self) -> u64 {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Percentiles and moments in milliseconds; all `None` when empty.
    pub fn summary(&self) -> Summary {
        let h = &self.0;
        if h.is_empty() {
            return Summary::default();
        }
        // HDR's convention: a bucket (0.1% wide) reads as its highest value, so a percentile is
        // never under-reported.
        let ms = |us: u64| Some(round3(us as f64 / 1e3));
        let q = |q: f64| ms(h.value_at_quantile(q));
        Summary {
            count: h.len(),
            p50: q(0.5),
            p90: q(0.9),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            mean: Some(round3(h.mean() / 1e3)),
            stddev: Some(round3(h.stdev() / 1e3)),
            min: ms(h.min()),
            max: ms(h.max()),
        }
    }
}

/// A histogram travels (a shard's snapshot, `--out`) as its recorded buckets, `[[value, count],
/// …]` with each bucket's highest value: read back, every value lands in the bucket it came from,
/// so percentiles, min, max and moments are the same as before — lossless at the histogram's own
/// precision, and mergeable.
impl Serialize for Hist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.0
                .iter_recorded()
                .map(|v| [v.value_iterated_to(), v.count_at_value()]),
        )
    }
}

impl<'de> Deserialize<'de> for Hist {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let buckets = Vec::<[u64; 2]>::deserialize(d)?;
        let mut h = Hist::default();
        for [value, count] in buckets {
            if value > MAX_US {
                return Err(serde::de::Error::custom(format!(
                    "histogram value {value} µs is past the {MAX_US} µs bound"
                )));
            }
            h.0.record_n(value, count).map_err(|e| {
                serde::de::Error::custom(format!("histogram bucket {value} µs: {e:?}"))
            })?;
        }
        Ok(h)
    }
}

impl Hist {
    /// The bucket `us` falls in, as its highest value: what a percentile of a histogram holding
    /// `us` reads (HDR never under-reports).
    pub fn highest_equivalent_us(us: u64) -> u64 {
        Hist::default().0.highest_equivalent(us.min(MAX_US))
    }
}

fn round3(v: f64) -> f64 {
    (v * 1e3).round() / 1e3
}

/// Everything measured in one stage. It serialises whole (a shard's snapshot), so stages measured
/// by several processes merge exactly ([`StageStats::merge_concurrent`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StageStats {
    pub requests: RequestCounts,
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Per error kind: count and the first distinct server messages.
    pub failures: BTreeMap<ErrorKind, Samples>,
    ttft: Hist,
    ttfo: Hist,
    itl: Hist,
    tpot: Hist,
    e2e: Hist,
    ttft_sched: Hist,
    e2e_sched: Hist,
    lag: Hist,
    delivery: Hist,
    rx_lag: Hist,
    behind: u64,
    tokens: Tokens,
    usage_both: (u64, u64),
    good: u64,
    span: Option<(u64, u64)>,
    closed_windows_ns: u64,
    busy_ns: u128,
    /// Output tokens by arrival time (10 ms buckets of Unix time), until the stage closes its
    /// sending window ([`StageStats::close_sending_window`]).
    arrivals: BTreeMap<u64, f64>,
    /// Output tokens that arrived while sending, and that window, summed over merged stages.
    sending_tokens: f64,
    sending_window_ns: u64,
    /// The sending window itself (Unix ns), when this stage closed one: concurrent shards'
    /// windows overlap, and their union is the merged stage's.
    #[serde(default)]
    sending_span: Option<(u64, u64)>,
    /// Prompt reuse: repeated and cached prompt tokens, TTFT of hits and misses.
    reuse: ReuseStats,
}

/// The arrival buckets of [`StageStats`]: 10 ms.
const ARRIVAL_BUCKET_NS: u64 = 10_000_000;

/// What the driver knows about a stage that the records do not say.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StageMeta {
    pub stage: Option<u32>,
    /// When the stage began (its warmup included), Unix ns.
    #[serde(default)]
    pub started_unix_ns: Option<u64>,
    pub label: String,
    /// `None` for merged stages of different modes.
    pub mode: Option<Mode>,
    pub mode_name: String,
    pub peak_concurrency: u64,
    pub send_window_s: f64,
    /// Mean requests in flight while sending (warmup and drain excluded).
    pub sending_concurrency: Option<f64>,
    pub duration_s: f64,
    /// How the load reuses prompts (shared prefix, sessions).
    pub reuse: ReuseShape,
}

impl StageStats {
    /// Folds one record in.
    pub fn add(&mut self, r: &RequestRecord, slo: &Slo) {
        if r.warmup {
            self.requests.warmup += 1;
            // Its tokens still arrive inside the measured window: the rate the server sustained
            // counts every token that arrived while sending, whichever request it belongs to.
            self.add_arrivals(r);
            return;
        }
        self.requests.sent += 1;
        self.extend_span(r.sent_unix_ns, r.end_unix_ns);
        self.add_arrivals(r);
        self.busy_ns += u128::from(r.e2e_ns());
        if let Some(s) = r.scheduled_unix_ns {
            self.lag.record_ns(r.sent_unix_ns.saturating_sub(s));
        }
        match r.error {
            Some(kind) => {
                self.requests.failed += 1;
                *self.errors.entry(kind).or_default() += 1;
                let samples = self.failures.entry(kind).or_default();
                samples.add(r.error_body.as_deref());
            }
            None => self.add_completed(r, slo),
        }
    }

    /// Spreads the request's output tokens over the arrival times of its text chunks (first
    /// chunk, then the gaps); a chunk carrying several tokens (`--stream-interval`) gets its
    /// share of the server's count. A response without chunk times arrived at its end.
    fn add_arrivals(&mut self, r: &RequestRecord) {
        let tokens = f64::from(r.tokens_out());
        if tokens == 0.0 {
            return;
        }
        let mut add = |bucket: u64, n: f64| *self.arrivals.entry(bucket).or_default() += n;
        let Some(first) = r.first_token_unix_ns.filter(|_| r.chunk_tokens > 0) else {
            add(r.end_unix_ns / ARRIVAL_BUCKET_NS, tokens);
            return;
        };
        let per_chunk = tokens / (r.gaps_us.len() + 1) as f64;
        let (mut t, mut bucket, mut n) = (first, first / ARRIVAL_BUCKET_NS, 1.0);
        for &g in &r.gaps_us {
            t += u64::from(g) * 1_000;
            if t / ARRIVAL_BUCKET_NS != bucket {
                add(bucket, n * per_chunk);
                (bucket, n) = (t / ARRIVAL_BUCKET_NS, 0.0);
            }
            n += 1.0;
        }
        add(bucket, n * per_chunk);
    }

    /// Ends the stage's sending window `[from, to)` (Unix ns: end of warmup to the last send):
    /// counts the output tokens that arrived inside it, and forgets the arrival times.
    pub fn close_sending_window(&mut self, from_ns: u64, to_ns: u64) {
        let range = from_ns / ARRIVAL_BUCKET_NS..to_ns / ARRIVAL_BUCKET_NS;
        self.sending_tokens += self.arrivals.range(range).map(|(_, n)| n).sum::<f64>();
        self.sending_window_ns += to_ns.saturating_sub(from_ns);
        self.sending_span = union(self.sending_span, Some((from_ns, to_ns)));
        self.arrivals.clear();
    }

    fn extend_span(&mut self, start: u64, end: u64) {
        let (a, b) = self.span.unwrap_or((start, end));
        self.span = Some((a.min(start), b.max(end)));
    }

    fn add_completed(&mut self, r: &RequestRecord, slo: &Slo) {
        self.requests.completed += 1;
        self.add_latencies(r);
        self.add_timing(r);
        self.add_tokens(r);
        self.reuse.add(r);
        self.good += u64::from(!slo.is_empty() && slo.met(r));
    }

    /// What the user sees: e2e, TTFT, TTFO, TPOT, and each gap between chunks.
    fn add_latencies(&mut self, r: &RequestRecord) {
        self.e2e.record_ns(r.e2e_ns());
        if let Some(t) = r.ttft_ns() {
            self.ttft.record_ns(t);
        }
        if let Some(t) = r.first_output_unix_ns {
            self.ttfo.record_ns(t.saturating_sub(r.sent_unix_ns));
        }
        if let Some(t) = r.tpot_ns() {
            self.tpot.record_ns(t);
        }
        for &g in &r.gaps_us {
            self.itl.record_us(u64::from(g));
        }
    }

    /// Latencies from the intended send time (open loop), and how exact the first token's
    /// time is: the kernel-to-read lag, reads behind queued data, delivery after the server's
    /// emit stamp.
    fn add_timing(&mut self, r: &RequestRecord) {
        if let Some(s) = r.scheduled_unix_ns {
            self.e2e_sched.record_ns(r.end_unix_ns.saturating_sub(s));
            if let Some(t) = r.first_token_unix_ns {
                self.ttft_sched.record_ns(t.saturating_sub(s));
            }
        }
        if let Some(lag) = r.first_token_rx_lag_us {
            self.rx_lag.record_us(u64::from(lag));
        }
        self.behind += u64::from(r.first_token_behind);
        if let (Some(server), Some(client)) = (r.server_first_token_unix_ns, r.first_token_unix_ns)
        {
            self.delivery.record_ns(client.saturating_sub(server));
        }
    }

    fn add_tokens(&mut self, r: &RequestRecord) {
        let t = &mut self.tokens;
        t.prompt += u64::from(r.prompt_tokens.unwrap_or(0));
        t.prompt_counted += u64::from(r.prompt_tokens.is_some());
        t.output += u64::from(r.tokens_out());
        t.counted_chunks += u64::from(r.chunk_tokens);
        match r.output_tokens {
            None => t.usage_missing += 1,
            Some(u) if r.first_token_unix_ns.is_some() || r.chunk_tokens > 0 => {
                t.mismatched_requests += u64::from(u != r.chunk_tokens);
                self.usage_both.0 += u64::from(u);
                self.usage_both.1 += u64::from(r.chunk_tokens);
            }
            Some(_) => {}
        }
    }

    /// Measured window: first send to last end, summed over merged stages.
    pub fn window_ns(&self) -> u64 {
        self.closed_windows_ns + self.span.map_or(0, |(a, b)| b - a)
    }

    /// Adds another stage's stats.
    pub fn merge(&mut self, o: &StageStats) {
        self.merge_counts(o);
        for (a, b) in self.hists_mut().into_iter().zip(o.hists()) {
            a.merge(b);
        }
        self.merge_tokens(o);
        self.good += o.good;
        self.behind += o.behind;
        self.closed_windows_ns += o.window_ns();
        self.busy_ns += o.busy_ns;
        self.sending_tokens += o.sending_tokens;
        self.sending_window_ns += o.sending_window_ns;
        self.reuse.merge(&o.reuse);
    }

    /// Requests sent, completed, failed (by kind, with the server's messages) and warmup.
    fn merge_counts(&mut self, o: &StageStats) {
        let r = &mut self.requests;
        r.sent += o.requests.sent;
        r.completed += o.requests.completed;
        r.failed += o.requests.failed;
        r.warmup += o.requests.warmup;
        for (k, v) in &o.errors {
            *self.errors.entry(*k).or_default() += v;
        }
        for (k, v) in &o.failures {
            self.failures.entry(*k).or_default().merge(v);
        }
    }

    /// Adds the stats of the same stage measured at the same time by another process (a shard):
    /// counts and histograms add as in [`StageStats::merge`], but the windows overlap, so the
    /// measured window and the sending window are their union, not their sum.
    pub fn merge_concurrent(&mut self, o: &StageStats) {
        let (closed, span, sending) = (self.closed_windows_ns, self.span, self.sending_span);
        let sending_ns = self.sending_window_ns;
        self.merge(o);
        self.closed_windows_ns = closed.max(o.closed_windows_ns);
        self.span = union(span, o.span);
        self.sending_span = union(sending, o.sending_span);
        self.sending_window_ns = match self.sending_span {
            Some((a, b)) if sending.is_some() && o.sending_span.is_some() => b - a,
            _ => sending_ns.max(o.sending_window_ns),
        };
    }

    fn merge_tokens(&mut self, o: &StageStats) {
        let (t, u) = (&mut self.tokens, &o.tokens);
        t.prompt += u.prompt;
        t.prompt_counted += u.prompt_counted;
        t.output += u.output;
        t.counted_chunks += u.counted_chunks;
        t.usage_missing += u.usage_missing;
        t.mismatched_requests += u.mismatched_requests;
        self.usage_both.0 += o.usage_both.0;
        self.usage_both.1 += o.usage_both.1;
    }

    fn hists(&self) -> [&Hist; 10] {
        [
            &self.ttft,
            &self.ttfo,
            &self.itl,
            &self.tpot,
            &self.e2e,
            &self.ttft_sched,
            &self.e2e_sched,
            &self.lag,
            &self.delivery,
            &self.rx_lag,
        ]
    }

    fn hists_mut(&mut self) -> [&mut Hist; 10] {
        [
            &mut self.ttft,
            &mut self.ttfo,
            &mut self.itl,
            &mut self.tpot,
            &mut self.e2e,
            &mut self.ttft_sched,
            &mut self.e2e_sched,
            &mut self.lag,
            &mut self.delivery,
            &mut self.rx_lag,
        ]
    }

    /// The report of these stats (the client part is filled in by the driver).
    pub fn report(&self, meta: &StageMeta, slo: &Slo) -> StageReport {
        let window_s = self.window_ns() as f64 / 1e9;
        StageReport {
            stage: meta.stage,
            label: meta.label.clone(),
            duration_s: meta.duration_s,
            requests: self.requests,
            errors: self.errors.clone(),
            failures: self.failures.clone(),
            latency_ms: self.latencies(),
            throughput: self.throughput(window_s),
            tokens: self.token_report(),
            load: self.load_info(meta, window_s),
            goodput: (!slo.is_empty()).then(|| self.goodput(slo, window_s)),
            timing: (!self.delivery.is_empty()).then(|| TimingCheck {
                first_token_delivery_ms: self.delivery.summary(),
            }),
            client: ClientReport {
                receive_lag_ms: self.rx_lag.summary(),
                first_tokens_read_behind: self.behind,
                ..Default::default()
            },
            prefix: self.reuse.report(&meta.reuse),
        }
    }

    fn throughput(&self, window_s: f64) -> Throughput {
        Throughput {
            requests_per_s: per_s(self.requests.completed, window_s),
            output_tokens_per_s: per_s(self.tokens.output, window_s),
            total_tokens_per_s: per_s(self.tokens.output + self.tokens.prompt, window_s),
            window_s,
            sending_output_tokens_per_s: (self.sending_window_ns > 0)
                .then(|| self.sending_tokens / (self.sending_window_ns as f64 / 1e9)),
        }
    }

    fn goodput(&self, slo: &Slo, window_s: f64) -> Goodput {
        Goodput {
            slo: *slo,
            good: self.good,
            fraction: (self.requests.sent > 0)
                .then(|| self.good as f64 / self.requests.sent as f64),
            requests_per_s: per_s(self.good, window_s),
        }
    }

    fn latencies(&self) -> Latencies {
        let open = !self.lag.is_empty();
        Latencies {
            ttft: self.ttft.summary(),
            ttfo: self.ttfo.summary(),
            itl: self.itl.summary(),
            tpot: self.tpot.summary(),
            e2e: self.e2e.summary(),
            ttft_from_schedule: open.then(|| self.ttft_sched.summary()),
            e2e_from_schedule: open.then(|| self.e2e_sched.summary()),
        }
    }

    fn token_report(&self) -> Tokens {
        let (usage, chunks) = self.usage_both;
        let t = &self.tokens;
        Tokens {
            prompt_mean: (t.prompt_counted > 0)
                .then(|| round3(t.prompt as f64 / t.prompt_counted as f64)),
            mismatch_pct: (usage > 0)
                .then(|| round3(usage.abs_diff(chunks) as f64 * 100.0 / usage as f64)),
            ..self.tokens
        }
    }

    fn load_info(&self, meta: &StageMeta, window_s: f64) -> LoadInfo {
        let mean_concurrency = if window_s > 0.0 {
            self.busy_ns as f64 / 1e9 / window_s
        } else {
            0.0
        };
        let send_rate = if meta.send_window_s > 0.0 {
            self.requests.sent as f64 / meta.send_window_s
        } else {
            0.0
        };
        let (target, achieved, unit, cap) = reach(meta, mean_concurrency, send_rate);
        LoadInfo {
            mode: meta.mode_name.clone(),
            target,
            achieved: achieved.map(round3),
            unit: unit.into(),
            concurrency_cap: cap,
            mean_concurrency: round3(mean_concurrency),
            peak_concurrency: meta.peak_concurrency,
            send_rate: round3(send_rate),
            schedule_lag_ms: (!self.lag.is_empty()).then(|| self.lag.summary()),
            sending_unix_s: self
                .sending_span
                .map(|(a, b)| (a as f64 / 1e9, b as f64 / 1e9)),
        }
    }
}

/// The stages of a run, one after the other, as one: their stats merged and their windows summed
/// (a single stage is its own whole). `mode_name` names the first stage's mode when there are
/// none.
pub fn run_total(
    stages: &[(&StageStats, &StageMeta)],
    reuse: ReuseShape,
    mode_name: &str,
) -> (StageStats, StageMeta) {
    if let [(stats, meta)] = stages {
        return ((*stats).clone(), (*meta).clone());
    }
    let mut stats = StageStats::default();
    let mut meta = StageMeta {
        label: format!("all {} stages", stages.len()),
        reuse,
        ..Default::default()
    };
    let mut busy = 0.0;
    for (s, m) in stages {
        stats.merge(s);
        meta.peak_concurrency = meta.peak_concurrency.max(m.peak_concurrency);
        meta.send_window_s += m.send_window_s;
        busy += m.sending_concurrency.unwrap_or(0.0) * m.send_window_s;
        meta.duration_s += m.duration_s;
    }
    meta.started_unix_ns = stages.first().and_then(|(_, m)| m.started_unix_ns);
    meta.sending_concurrency = (meta.send_window_s > 0.0).then(|| busy / meta.send_window_s);
    let names: Vec<&str> = stages.iter().map(|(_, m)| m.mode_name.as_str()).collect();
    meta.mode_name = match names.first() {
        Some(first) if names.iter().all(|n| n == first) => (*first).to_owned(),
        Some(_) => "mixed".into(),
        None => mode_name.into(),
    };
    (stats, meta)
}

/// The smallest span holding both.
fn union(a: Option<(u64, u64)>, b: Option<(u64, u64)>) -> Option<(u64, u64)> {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
        (x, None) | (None, x) => x,
    }
}

/// `n` per second of `window_s`; 0 for an empty window.
fn per_s(n: u64, window_s: f64) -> f64 {
    if window_s > 0.0 {
        n as f64 / window_s
    } else {
        0.0
    }
}

/// The load the stage's mode asked for and what it achieved, in the mode's unit, and its
/// concurrency cap: (target, achieved, unit, cap); nothing for merged stages of different modes.
fn reach(
    meta: &StageMeta,
    mean_concurrency: f64,
    send_rate: f64,
) -> (Option<f64>, Option<f64>, &'static str, Option<u32>) {
    match meta.mode {
        Some(Mode::Closed { concurrency }) => (
            Some(f64::from(concurrency)),
            Some(meta.sending_concurrency.unwrap_or(mean_concurrency)),
            "concurrency",
            Some(concurrency),
        ),
        Some(Mode::Open { rate, cap, .. } | Mode::Trace { rate, cap }) => {
            (Some(rate), Some(send_rate), "requests_per_s", cap)
        }
        None => (None, None, "", None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(sent_ms: u64, ttft_ms: u64, e2e_ms: u64, tokens: u32) -> RequestRecord {
        let ms = 1_000_000;
        RequestRecord {
            sent_unix_ns: sent_ms * ms,
            first_token_unix_ns: Some((sent_ms + ttft_ms) * ms),
            first_output_unix_ns: Some((sent_ms + ttft_ms) * ms),
            end_unix_ns: (sent_ms + e2e_ms) * ms,
            output_tokens: Some(tokens),
            prompt_tokens: Some(5),
            chunk_tokens: tokens,
            gaps_us: vec![1000; tokens.saturating_sub(1) as usize],
            ..Default::default()
        }
    }

    /// Within HDR's 0.1% resolution.
    fn near(v: Option<f64>, want: f64) -> bool {
        v.is_some_and(|v| (v - want).abs() <= want * 1e-3 + 1e-3)
    }

    #[test]
    fn tokens_count_as_sending_throughput_by_their_arrival_times() {
        let mut s = StageStats::default();
        let slo = Slo::default();
        // 100 tokens 1 ms apart from t = 10 ms, and one long answer: 1,000 tokens from 50 ms,
        // 10 ms apart, most of them after sending ended at 1,000 ms.
        s.add(&rec(0, 10, 110, 100), &slo);
        let mut long = rec(0, 50, 10_050, 1_000);
        long.gaps_us = vec![10_000; 999];
        s.add(&long, &slo);
        // Two tokens per chunk (a server's stream interval): 10 chunks carry 20 tokens.
        let mut paired = rec(0, 500, 510, 10);
        paired.output_tokens = Some(20);
        s.add(&paired, &slo);
        s.close_sending_window(0, 1_000_000_000);
        let r = s.report(&StageMeta::default(), &Slo::default());
        // In [0, 1 s): 100 + 20 + the long answer's tokens at 50, 60, … 990 ms (95).
        let sending = r.throughput.sending_output_tokens_per_s.unwrap();
        assert!((sending - 215.0).abs() < 1e-9, "{sending}");
        // Over the whole window (to the last token at 10.04 s) the rate is far lower.
        assert!(r.throughput.output_tokens_per_s < 120.0);
        let merged = {
            let mut m = StageStats::default();
            m.merge(&s);
            m.merge(&s);
            m.report(&StageMeta::default(), &Slo::default())
        };
        assert_eq!(merged.throughput.sending_output_tokens_per_s, Some(sending));
    }

    #[test]
    fn a_warmup_requests_tokens_that_arrive_while_sending_count_and_nothing_else_of_it() {
        // Long answers sent in the warm-up stream through the measured window: without their
        // tokens a closed loop of long requests reads a fraction of what the server served.
        let mut s = StageStats::default();
        let slo = Slo::default();
        let mut warm = rec(0, 50, 2_050, 200);
        warm.gaps_us = vec![10_000; 199];
        warm.warmup = true;
        s.add(&warm, &slo);
        // The window is [1 s, 2 s) (end of warm-up to the last send): tokens at 1.00 … 1.99 s.
        s.close_sending_window(1_000_000_000, 2_000_000_000);
        let r = s.report(&StageMeta::default(), &slo);
        let sending = r.throughput.sending_output_tokens_per_s.unwrap();
        assert!((sending - 100.0).abs() < 1e-9, "{sending}");
        assert_eq!((r.requests.sent, r.requests.warmup), (0, 1));
        assert_eq!(r.latency_ms.ttft.count, 0, "its latencies stay out");
    }

    #[test]
    fn empty_stats_report_absent_values() {
        let r = StageStats::default().report(&StageMeta::default(), &Slo::default());
        assert_eq!(r.latency_ms.ttft, Summary::default());
        assert_eq!(r.throughput.requests_per_s, 0.0);
        let json = serde_json::to_value(&r).unwrap();
        assert!(json["latency_ms"]["ttft"]["p50"].is_null());
    }

    #[test]
    fn counts_latencies_tokens_and_goodput() {
        let mut s = StageStats::default();
        let slo: Slo = "ttft=15ms".parse().unwrap();
        s.add(&rec(0, 10, 100, 10), &slo);
        s.add(&rec(100, 20, 100, 10), &slo);
        s.add(
            &RequestRecord {
                error: Some(ErrorKind::Http(500)),
                error_body: Some("boom".into()),
                sent_unix_ns: 0,
                end_unix_ns: 1,
                ..Default::default()
            },
            &slo,
        );
        s.add(
            &RequestRecord {
                warmup: true,
                ..rec(0, 1, 1, 1)
            },
            &slo,
        );
        let meta = StageMeta {
            mode: Some(Mode::Closed { concurrency: 2 }),
            mode_name: "closed".into(),
            ..Default::default()
        };
        let r = s.report(&meta, &slo);
        assert_eq!(
            r.requests,
            RequestCounts {
                sent: 3,
                completed: 2,
                failed: 1,
                warmup: 1
            }
        );
        assert_eq!(r.errors[&ErrorKind::Http(500)], 1);
        assert_eq!(
            r.failures[&ErrorKind::Http(500)],
            Samples {
                count: 1,
                bodies: vec!["boom".into()]
            }
        );
        assert_eq!(r.tokens.prompt_mean, Some(5.0));
        assert!(near(r.latency_ms.ttft.p50, 10.0), "{:?}", r.latency_ms.ttft);
        assert!(near(r.latency_ms.ttft.max, 20.0), "{:?}", r.latency_ms.ttft);
        assert_eq!(r.latency_ms.itl.count, 18);
        assert!(
            near(r.latency_ms.tpot.max, 10.0) && near(r.latency_ms.tpot.p50, 8.889),
            "{:?}",
            r.latency_ms.tpot
        );
        assert_eq!(
            (r.tokens.output, r.tokens.prompt, r.tokens.mismatch_pct),
            (20, 10, Some(0.0))
        );
        assert_eq!(r.throughput.window_s, 0.2);
        assert_eq!(r.throughput.output_tokens_per_s, 100.0);
        assert_eq!(r.goodput.unwrap().good, 1);
        assert_eq!(
            r.load.achieved,
            Some(1.0),
            "200 ms busy over a 200 ms window"
        );
        assert!(r.latency_ms.ttft_from_schedule.is_none());
    }

    #[test]
    fn usage_mismatch_is_reported() {
        let mut s = StageStats::default();
        s.add(
            &RequestRecord {
                chunk_tokens: 8,
                ..rec(0, 1, 10, 10)
            },
            &Slo::default(),
        );
        let t = s.report(&StageMeta::default(), &Slo::default()).tokens;
        assert_eq!((t.mismatched_requests, t.mismatch_pct), (1, Some(20.0)));
    }

    #[test]
    fn merge_equals_adding_everything_to_one() {
        let recs: Vec<RequestRecord> = (0..50)
            .map(|i| rec(i * 10, 5 + i % 7, 50 + i, 3 + (i % 5) as u32))
            .collect();
        let (mut a, mut b, mut all) = (
            StageStats::default(),
            StageStats::default(),
            StageStats::default(),
        );
        for (i, r) in recs.iter().enumerate() {
            if i < 20 {
                a.add(r, &Slo::default())
            } else {
                b.add(r, &Slo::default())
            }
            all.add(r, &Slo::default());
        }
        let mut merged = StageStats::default();
        merged.merge(&a);
        merged.merge(&b);
        let (m, w) = (
            merged.report(&StageMeta::default(), &Slo::default()),
            all.report(&StageMeta::default(), &Slo::default()),
        );
        assert_eq!(m.latency_ms, w.latency_ms);
        assert_eq!((m.requests, m.tokens), (w.requests, w.tokens));
    }

    #[test]
    fn open_loop_reports_schedule_lag_and_corrected_latency() {
        let mut s = StageStats::default();
        let r = RequestRecord {
            scheduled_unix_ns: Some(0),
            ..rec(3, 10, 20, 2)
        };
        s.add(&r, &Slo::default());
        let l = s.report(&StageMeta::default(), &Slo::default());
        assert!(near(l.load.schedule_lag_ms.unwrap().p50, 3.0));
        assert!(near(l.latency_ms.ttft_from_schedule.unwrap().p50, 13.0));
        assert!(near(l.latency_ms.e2e_from_schedule.unwrap().p50, 23.0));
    }
}
