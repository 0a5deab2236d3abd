//! The engine model fitted to a measured deployment, and loads replayed on it offline: what
//! `llmscope whatif` predicts with.
//!
//! Data flow: the engine's own counters over intervals of a run ([`Interval`]: seconds, engine
//! steps, generated and prompt tokens, preemptions — `vllm:iteration_tokens_total_count`,
//! `vllm:generation_tokens_total`, `vllm:prompt_tokens_total`, `vllm:num_preemptions_total`) →
//! [`fit`]: the time of a step is `a + c·sequences + d·prefill tokens`, by least squares over the
//! intervals (counters, not gauges: a real vLLM 0.32 reads 0 running in most scrapes, its
//! counters never skip a step) →
//! a [`StepModel`] → [`Deployment::preset`]: the simulator's engine with that step (all of it
//! host time, no GPU roofline) and the deployment's caps and KV pool → [`replay`]: a workload
//! run on it in simulated time, measured as a client measures (output tokens/s, TTFT and ITL
//! percentiles of the requests sent in the window), and the limit it met, judged from the
//! engine's own state as the diagnosis judges a run.
//!
//! What the model leaves out, and says so where it predicts: the API server in front of the
//! engine (its time is not in the engine's steps), prefix-cache reuse (every replayed prompt is
//! its own), and answer lengths (each is the measured mean).

use crate::engine::{Emitted, Engine, NewRequest, ReqId};
use crate::preset::{Preset, preset};
use std::collections::HashMap;

/// What the engine's counters say about one interval in which it worked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub seconds: f64,
    /// Engine steps (the step-size histogram's count).
    pub steps: f64,
    /// Tokens generated: one per sequence decoded in a step.
    pub generated: f64,
    /// Prompt tokens of the requests that finished their prefill.
    pub prompt: f64,
    /// Prompt tokens computed again after preemptions, which no counter counts: vLLM counts a
    /// request's prompt once, at its first token, and a preempted request recomputes it (and
    /// what it had generated) when it runs again. The interval's preemptions × the mean prompt:
    /// a floor. A real vLLM 0.32 with a 4 MiB pool preempted 0.13 times a step at 10 sequences,
    /// recomputing about as many tokens as its prompt counter rose by; fitted without them, the
    /// steps of that starved batch (5.1–5.9 ms) were put on each sequence, and a pool that ended
    /// the preemptions was predicted 16–30 % slower than the engine then ran.
    pub recomputed: f64,
}

/// The time of one engine step: `step_s + seq_s·sequences + prompt_token_s·prefill tokens` (a
/// request's prompt, and what a preempted one computes again).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StepModel {
    pub step_s: f64,
    pub seq_s: f64,
    pub prompt_token_s: f64,
    /// Root-mean-square of the intervals' relative residuals (how well one line holds them).
    pub residual: f64,
    /// Intervals fitted, and the range of sequences per step they spanned.
    pub intervals: usize,
    pub batch_range: (f64, f64),
    /// What the intervals allow a prompt token to cost (two standard errors either side of the
    /// unconstrained estimate, never below 0), where that is a range: one workload's prompt and
    /// generated tokens move together, so how a step's time splits between them is told only by
    /// the noise of when prefills fall (a real vLLM 0.32, 93-token prompts and 32-token answers:
    /// 0.025 ± 0.033 ms a prompt token, and 0.44 ± 0.10 ms a sequence against 0.51 ± 0.02 ms
    /// where prompts cost nothing). `prompt_token_s` is the estimate where it lies two standard
    /// errors clear of 0, else 0 — how a prediction moves across the range is its own band.
    /// `None`: the intervals fix it (or held too few to say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_token_range: Option<(f64, f64)>,
}

/// Standard errors a fitted cost must lie clear of 0 to be kept (about 95 %).
const CLEAR_OF_ZERO: f64 = 2.0;

/// Why no model could be fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    #[error(
        "the engine's step counter did not move in any interval: the run has no `vllm:iteration_tokens_total` (or the engine never worked); a fit reads the engine's own step and token counters"
    )]
    NoSteps,
    #[error(
        "every interval ran about the same batch ({lo:.1}–{hi:.1} sequences per step): the cost of a step cannot be split into its fixed part and its per-sequence part; fit on a capacity search (`llmscope capacity`) or on runs at different --concurrency"
    )]
    OneBatchSize { lo: f64, hi: f64 },
}

/// Batch sizes this far apart (sequences per step, relative) make the per-sequence cost
/// measurable.
const MIN_SPREAD: f64 = 0.25;

/// Fits the step model to `intervals` (pure). Each interval says
/// `seconds = a·steps + c·generated + d·(prompt + recomputed)`; the rows are weighed by their
/// length. Where one workload keeps the prompt tokens in step with the generated ones, it is the
/// preemptions' recomputing that tells a prompt token's cost from a sequence's.
pub fn fit(intervals: &[Interval]) -> Result<StepModel, FitError> {
    let rows: Vec<&Interval> = intervals.iter().filter(|i| usable(i)).collect();
    if rows.is_empty() {
        return Err(FitError::NoSteps);
    }
    let batch = |i: &Interval| i.generated / i.steps;
    let (lo, hi) = rows.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), i| {
        (lo.min(batch(i)), hi.max(batch(i)))
    });
    if hi - lo < MIN_SPREAD * hi.max(1.0) {
        return Err(FitError::OneBatchSize { lo, hi });
    }
    let range = prompt_cost(&rows);
    // The prompt's own cost only where the intervals tell it from 0.
    let kept = range.is_none_or(|(lo, _)| lo > 0.0);
    let coef = non_negative(&rows, [true, true, kept], &|i| i.seconds);
    Ok(model_of(&rows, coef, (lo, hi), range))
}

/// The model with `coef` (step, sequence, prompt token) over `rows`, and its residual.
fn model_of(
    rows: &[&Interval],
    coef: [f64; 3],
    batch_range: (f64, f64),
    prompt_token_range: Option<(f64, f64)>,
) -> StepModel {
    let predicted = |i: &Interval| (0..3).map(|k| coef[k] * columns(i)[k]).sum::<f64>();
    let residual = (rows
        .iter()
        .map(|i| (predicted(i) / i.seconds - 1.0).powi(2))
        .sum::<f64>()
        / rows.len() as f64)
        .sqrt();
    StepModel {
        step_s: coef[0],
        seq_s: coef[1],
        prompt_token_s: coef[2],
        residual,
        intervals: rows.len(),
        batch_range,
        prompt_token_range,
    }
}

/// `model` fitted again with a prompt token costing `prompt_token_s` (the step and sequence
/// costs refitted to the same intervals): the model at an edge of
/// [`StepModel::prompt_token_range`].
pub fn refit_at(intervals: &[Interval], model: &StepModel, prompt_token_s: f64) -> StepModel {
    let rows: Vec<&Interval> = intervals.iter().filter(|i| usable(i)).collect();
    let d = prompt_token_s.max(0.0);
    let mut coef = non_negative(&rows, [true, true, false], &|i| {
        i.seconds - d * columns(i)[2]
    });
    coef[2] = d;
    model_of(&rows, coef, model.batch_range, model.prompt_token_range)
}

fn usable(i: &Interval) -> bool {
    i.steps >= 1.0 && i.generated > 0.0 && i.seconds > 0.0
}

fn columns(i: &Interval) -> [f64; 3] {
    [i.steps, i.generated, i.prompt + i.recomputed]
}

/// Least squares of `y` on the `used` columns with no cost below 0: a negative one is dropped
/// and the rest fitted again.
fn non_negative(rows: &[&Interval], mut used: [bool; 3], y: &dyn Fn(&Interval) -> f64) -> [f64; 3] {
    loop {
        let c = least_squares(rows, used, y);
        match (0..3).find(|&k| used[k] && c[k] < 0.0) {
            Some(k) => used[k] = false,
            None => return c,
        }
    }
}

/// The prompt token's cost as the intervals allow it: the unconstrained three-column estimate
/// two standard errors either side (its variance: the residual variance over what of the
/// prompt column the other two do not explain), the low edge at least 0. `None` where the
/// intervals fix it: too few to leave a residual, no prompt tokens, or an exact fit.
fn prompt_cost(rows: &[&Interval]) -> Option<(f64, f64)> {
    let n = rows.len();
    if n <= 3 {
        return None;
    }
    let all = least_squares(rows, [true; 3], &|i| i.seconds);
    let sq = |c: [f64; 3], y: &dyn Fn(&Interval) -> f64| {
        rows.iter()
            .map(|i| {
                let x = columns(i);
                (y(i) - (0..3).map(|k| c[k] * x[k]).sum::<f64>()).powi(2)
            })
            .sum::<f64>()
    };
    let rss = sq(all, &|i| i.seconds);
    let prefill = |i: &Interval| columns(i)[2];
    let apart = sq(least_squares(rows, [true, true, false], &prefill), &prefill);
    if rss <= 0.0 || apart.is_nan() || apart <= 0.0 {
        return None;
    }
    let se = (rss / (n - 3) as f64 / apart).sqrt();
    let d = all[2];
    Some((
        (d - CLEAR_OF_ZERO * se).max(0.0),
        (d + CLEAR_OF_ZERO * se).max(0.0),
    ))
}

/// Least squares of `y` on the `used` columns (the others 0), by the normal equations (three
/// columns at most: Gaussian elimination with partial pivoting).
fn least_squares(rows: &[&Interval], used: [bool; 3], y: &dyn Fn(&Interval) -> f64) -> [f64; 3] {
    let cols: Vec<usize> = (0..3).filter(|&k| used[k]).collect();
    let n = cols.len();
    let mut m = vec![vec![0.0; n + 1]; n];
    for i in rows {
        let xi = columns(i);
        for (r, &kr) in cols.iter().enumerate() {
            for (c, &kc) in cols.iter().enumerate() {
                m[r][c] += xi[kr] * xi[kc];
            }
            m[r][n] += xi[kr] * y(i);
        }
    }
    for p in 0..n {
        let pivot = (p..n)
            .max_by(|&a, &b| m[a][p].abs().total_cmp(&m[b][p].abs()))
            .unwrap_or(p);
        m.swap(p, pivot);
        if m[p][p].abs() < 1e-300 {
            continue;
        }
        let pivot_row = m[p].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != p {
                let f = row[p] / pivot_row[p];
                for (x, y) in row.iter_mut().zip(&pivot_row).skip(p) {
                    *x -= f * y;
                }
            }
        }
    }
    let mut out = [0.0; 3];
    for (r, &k) in cols.iter().enumerate() {
        out[k] = if m[r][r].abs() < 1e-300 {
            0.0
        } else {
            m[r][n] / m[r][r]
        };
    }
    out
}

/// The settings of a deployment the model runs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Deployment {
    pub max_num_seqs: u32,
    pub max_num_batched_tokens: u32,
    /// The KV pool in tokens (`num_gpu_blocks × block_size`); `None`: not a limit the run showed.
    pub kv_tokens: Option<u64>,
    pub block_size: u32,
    /// Engines sharing one GPU by time-slicing: their steps take turns.
    pub replicas: u32,
}

/// KV room assumed where the run did not say its pool: no request of the workload waits for it.
const UNKNOWN_POOL_TOKENS: u64 = 1 << 24;

impl Deployment {
    /// The simulator's engine with `model`'s step, as host time (`cpu-tiny`'s shape: no GPU
    /// roofline, no front end), and this deployment's caps and pool; `max_model_len` fits the
    /// longest request of `w`.
    pub fn preset(&self, model: &StepModel, w: &Workload) -> Preset {
        let mut p = preset("cpu-tiny").expect("the cpu-tiny preset exists");
        p.name = "fitted";
        let k = &mut p.constants;
        // The sim's host time: step + seq·items + token·new tokens. A decode item is one
        // sequence and one token, so the fitted per-sequence cost is shared between them: an
        // item's `seq_s − prompt_token_s` may be below 0 (a fit whose prompt token costs more
        // than a sequence), its time never is — every item computes at least one token.
        k.host_token_s = model.prompt_token_s;
        k.host_seq_s = model.seq_s - model.prompt_token_s;
        k.host_step_s = model.step_s;
        k.frontend_token_s = 0.0;
        // The measured step holds all of the engine's time: no roofline on top of it.
        p.gpu.bandwidth = f64::INFINITY;
        p.gpu.peak_flops = f64::INFINITY;
        let e = &mut p.engine;
        e.max_num_seqs = self.max_num_seqs;
        e.max_num_batched_tokens = self.max_num_batched_tokens;
        e.block_size = self.block_size.max(1);
        let tokens = self.kv_tokens.unwrap_or(UNKNOWN_POOL_TOKENS);
        let bytes = tokens as f64 * p.model.kv_bytes_per_token();
        e.kv_cache_memory_bytes = Some(bytes.ceil() as u64);
        let longest = w.prompt_tokens + w.output_tokens + 1;
        e.max_model_len = longest.max(2).min(tokens.min(u64::from(u32::MAX)) as u32);
        e.enable_prefix_caching = false;
        p
    }
}

/// How load arrives.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Clients each sending the next request when the last one ends.
    Closed { concurrency: u32 },
    /// Requests per second, evenly spaced, at most `cap` in flight.
    Open { rate: f64, cap: u32 },
}

/// A workload: its arrivals, the mean prompt and answer of its requests, and the time each
/// spends outside the engine.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Workload {
    pub arrivals: Arrivals,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    /// Seconds a request spends between the client and the engine's scheduler, both ways (the
    /// API server: HTTP, tokenising, closing the response): by Little's law the requests the
    /// client held that the engine never saw, over the requests finished per second.
    pub frontend_s: f64,
    /// The part of `frontend_s` before the engine admits a request — in every TTFT; the rest
    /// comes after its last token (the response closed, the client's next request sent).
    /// `None`: half.
    pub frontend_before_s: Option<f64>,
    /// The most output tokens per second the API server streamed, where a run showed it holding
    /// the load (its work is per token: detokenising, one event per token): one server, each
    /// request taking its answer's share of that before it reaches the scheduler. `None`: not a
    /// limit any run showed — the front end is a delay, never a queue.
    pub frontend_tok_s: Option<f64>,
}

/// The least time a request spends between client and scheduler: never none, so a request
/// sent as the last one ends reaches the engine after its next step has begun and waits for it
/// (the simulator's 32 clients at --max-num-seqs 32 read TTFT p50 164 ms, two 81 ms steps; a
/// replay without it gave one).
pub const MIN_FRONTEND_S: f64 = 0.001;

/// What a replay measured, as a client would, and the limit the engine met.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Replayed {
    pub output_tok_s: f64,
    pub req_s: f64,
    pub ttft_p50_s: Option<f64>,
    pub ttft_p95_s: Option<f64>,
    pub itl_p50_s: Option<f64>,
    pub itl_p95_s: Option<f64>,
    /// Time means over the window, per engine.
    pub running: f64,
    pub waiting: f64,
    pub kv_max: f64,
    pub preemptions: u64,
    pub tokens_per_step: f64,
    /// Share of the window each engine's batch sat at its cap (time-weighted).
    pub at_cap: f64,
    /// The verdict the engine's state gives, in the diagnosis' words.
    pub bottleneck: &'static str,
    /// Other limits the replayed engine came within reach of (its measure within a tenth of
    /// where the diagnosis calls it): a real engine a little off the model may meet them first.
    pub near: Vec<&'static str>,
}

/// Runs `w` on `d` with `model`'s step for `seconds` of simulated time after `warmup_s`.
/// Engines sharing a GPU (`replicas`) take turns: one step at a time, each request going to the
/// engine with the fewest in it.
pub fn replay(
    model: &StepModel,
    d: &Deployment,
    w: &Workload,
    warmup_s: f64,
    seconds: f64,
) -> Replayed {
    replay_with(model, d, w, (warmup_s, seconds), false)
}

/// [`replay`], with a closed loop's clients started at once when `lockstep`: requests of one
/// length then finish together and the batch moves in waves — as a real vLLM 0.32 ran it (an
/// 8 MiB pool, 16 running 157-token requests: KV 97–100 % at its peaks with a preemption, which
/// a staggered batch never reaches; the simulator's own server, whose timing jitters, does not).
pub fn replay_with(
    model: &StepModel,
    d: &Deployment,
    w: &Workload,
    (warmup_s, seconds): (f64, f64),
    lockstep: bool,
) -> Replayed {
    let p = d.preset(model, w);
    let engines = (0..d.replicas.max(1))
        .map(|i| Engine::new(&p, u64::from(i) + 1).expect("a fitted preset builds"))
        .collect();
    let mut r = Replay {
        engines,
        cap: d.max_num_seqs,
        lockstep,
        w: *w,
        from: warmup_s,
        to: warmup_s + seconds,
        now: 0.0,
        key: 0,
        sent: HashMap::new(),
        last: HashMap::new(),
        ttft: Vec::new(),
        itl: Vec::new(),
        tokens: 0,
        in_flight: 0,
        next_arrival: 0.0,
        arriving: Vec::new(),
        frontend_free: 0.0,
        state: StateMeans::default(),
    };
    r.run();
    r.measured(d)
}

/// A replay under way.
struct Replay {
    engines: Vec<Engine>,
    /// Each engine's `--max-num-seqs`.
    cap: u32,
    /// Clients start at once (see [`replay_with`]).
    lockstep: bool,
    w: Workload,
    from: f64,
    to: f64,
    now: f64,
    key: u64,
    /// Per (engine, request): when sent, and when its last token came.
    sent: HashMap<(usize, ReqId), f64>,
    last: HashMap<(usize, ReqId), f64>,
    ttft: Vec<f64>,
    itl: Vec<f64>,
    tokens: u64,
    in_flight: u32,
    next_arrival: f64,
    /// Requests sent by the client and still on their way to the scheduler: (when they reach
    /// it, when they were sent), latest first.
    arriving: Vec<(f64, f64)>,
    /// When the API server (where it has a capacity) is next free.
    frontend_free: f64,
    state: StateMeans,
}

/// Time-weighted sums of the engines' state over the window.
#[derive(Debug, Default)]
struct StateMeans {
    seconds: f64,
    running: f64,
    waiting: f64,
    kv_max: f64,
    steps: f64,
    step_tokens: f64,
    at_cap: f64,
    preemptions_from: Option<u64>,
}

impl Replay {
    fn run(&mut self) {
        // Clients start spread over the first half of the warm-up, unless in lockstep: started
        // together, requests of one length finish together and keep moving in waves.
        if let Arrivals::Closed { concurrency } = self.w.arrivals {
            let gap = if self.lockstep {
                0.0
            } else {
                self.from / 2.0 / f64::from(concurrency.max(1))
            };
            for k in 0..concurrency {
                self.send(f64::from(k) * gap);
            }
        }
        let mut out: Vec<Emitted> = Vec::new();
        let mut turn = 0usize;
        loop {
            self.arrive();
            self.admit();
            let n = self.engines.len();
            // The next engine with work, in turn (one GPU, time-sliced).
            let next = (0..n)
                .map(|k| (turn + k) % n)
                .find_map(|i| self.engines[i].schedule(self.now).map(|plan| (i, plan)));
            let Some((i, plan)) = next else {
                // Idle until the next request reaches the scheduler, or the window ends.
                let next = match self.w.arrivals {
                    Arrivals::Open { .. } if self.now < self.to => self.next_arrival,
                    _ => f64::INFINITY,
                };
                let next = self.arriving.last().map_or(next, |a| next.min(a.0));
                let until = if next.is_finite() {
                    self.now.max(next)
                } else if self.now < self.to {
                    self.to
                } else {
                    break;
                };
                self.idle(until);
                continue;
            };
            turn = i + 1;
            let end = self.now + plan.duration;
            self.observe(plan.duration, plan.new_tokens);
            out.clear();
            self.engines[i].complete(&plan, end, &mut out);
            self.now = end;
            for e in &out {
                self.emitted(i, e);
            }
            if self.now > self.to + 600.0 {
                break; // a model that cannot drain; the window is long over
            }
            if self.now >= self.to
                && self.arriving.is_empty()
                && self.engines.iter().all(|e| !e.has_work())
            {
                break;
            }
        }
    }

    /// The client sends a request at `sent`: it reaches the scheduler the front end's time
    /// before the engine later — after its turn at the API server, where that has a capacity
    /// (first come, first served).
    fn send(&mut self, sent: f64) {
        let mut at = sent;
        if let Some(work) = self.frontend_work() {
            self.frontend_free = self.frontend_free.max(sent) + work;
            at = self.frontend_free;
        }
        let at = at + self.before();
        let i = self.arriving.partition_point(|a| a.0 > at);
        self.arriving.insert(i, (at, sent));
        self.in_flight += 1;
    }

    /// Hands the scheduler every request that reached it by now.
    fn admit(&mut self) {
        while self.arriving.last().is_some_and(|a| a.0 <= self.now) {
            let (_, sent) = self.arriving.pop().expect("a request arriving");
            self.hand_to_engine(sent);
        }
    }

    /// The request sent at `sent` to the engine with the fewest requests in it.
    fn hand_to_engine(&mut self, sent: f64) {
        self.key += 1;
        let i = (0..self.engines.len())
            .min_by_key(|&i| self.engines[i].num_running() + self.engines[i].num_waiting())
            .unwrap_or(0);
        let id = self.engines[i].add(
            self.now,
            NewRequest {
                prompt_tokens: self.w.prompt_tokens.max(1),
                template_tokens: 0,
                prompt_key: self.key,
                block_keys: std::sync::Arc::from([]),
                max_tokens: self.w.output_tokens.max(1),
                max_tokens_param: Some(self.w.output_tokens.max(1)),
                ignore_eos: true,
                n: 1,
            },
        );
        self.sent.insert((i, id), sent);
    }

    /// Open loop: every arrival due by now, unless the cap on requests in flight holds it.
    fn arrive(&mut self) {
        let Arrivals::Open { rate, cap } = self.w.arrivals else {
            return;
        };
        while self.next_arrival <= self.now && self.now < self.to && rate > 0.0 {
            if self.in_flight < cap {
                self.send(self.next_arrival);
            }
            self.next_arrival += 1.0 / rate;
        }
    }

    fn emitted(&mut self, engine: usize, e: &Emitted) {
        let key = (engine, e.id);
        let Some(&sent) = self.sent.get(&key) else {
            return;
        };
        let measured = sent >= self.from && sent < self.to;
        // Tokens stream back as the engine makes them; the front end's time after the engine
        // is the answer's end (the response closed, the client's next request made).
        let seen = self.now;
        if seen >= self.from && seen < self.to {
            self.tokens += 1;
        }
        if measured {
            match self.last.insert(key, seen) {
                None => self.ttft.push(seen - sent),
                Some(prev) => self.itl.push(seen - prev),
            }
        }
        if e.finish.is_some() {
            self.last.remove(&key);
            self.sent.remove(&key);
            self.in_flight -= 1;
            let next = seen + self.frontend() - self.before();
            if matches!(self.w.arrivals, Arrivals::Closed { .. }) && next < self.to {
                self.send(next);
            }
        }
    }

    /// Seconds of the API server's time one request takes, where it has a capacity.
    fn frontend_work(&self) -> Option<f64> {
        let tok_s = self.w.frontend_tok_s.filter(|t| *t > 0.0)?;
        Some(f64::from(self.w.output_tokens.max(1)) / tok_s)
    }

    /// The workload's time outside the engine, at least [`MIN_FRONTEND_S`].
    fn frontend(&self) -> f64 {
        self.w.frontend_s.max(MIN_FRONTEND_S)
    }

    /// The front end's time before the scheduler: as the workload says, else half; never all
    /// of it or none (see [`MIN_FRONTEND_S`]).
    fn before(&self) -> f64 {
        let f = self.frontend();
        let half = MIN_FRONTEND_S / 2.0;
        self.w
            .frontend_before_s
            .unwrap_or(f / 2.0)
            .clamp(half, f - half)
    }

    /// The engines stand idle until `until`: nothing running, nothing waiting.
    fn idle(&mut self, until: f64) {
        let from = self.now.max(self.from);
        let to = until.min(self.to);
        if to > from {
            self.state.seconds += to - from;
        }
        self.now = until;
    }

    /// Weighs the engines' state by the step about to run, inside the window.
    fn observe(&mut self, duration: f64, new_tokens: u32) {
        if self.now < self.from || self.now >= self.to {
            return;
        }
        let s = &mut self.state;
        let n = self.engines.len() as f64;
        let running: usize = self.engines.iter().map(Engine::num_running).sum();
        let waiting: usize = self.engines.iter().map(Engine::num_waiting).sum();
        s.seconds += duration;
        s.running += duration * running as f64 / n;
        s.waiting += duration * waiting as f64 / n;
        s.steps += 1.0;
        s.step_tokens += f64::from(new_tokens);
        let full = self
            .engines
            .iter()
            .filter(|e| e.num_running() >= self.cap as usize)
            .count();
        s.at_cap += duration * full as f64 / n;
        let preempted: u64 = self.engines.iter().map(|e| e.stats.preemptions).sum();
        s.preemptions_from.get_or_insert(preempted);
        for e in &self.engines {
            s.kv_max = s.kv_max.max(e.stats.kv_usage);
        }
    }

    fn measured(mut self, d: &Deployment) -> Replayed {
        let seconds = self.to - self.from;
        let preempted: u64 = self.engines.iter().map(|e| e.stats.preemptions).sum();
        let s = &self.state;
        let mean = |x: f64| if s.seconds > 0.0 { x / s.seconds } else { 0.0 };
        let state = State {
            running: mean(s.running),
            waiting: mean(s.waiting),
            at_cap: mean(s.at_cap),
            kv_max: s.kv_max,
            preemptions: preempted - s.preemptions_from.unwrap_or(preempted),
            tokens_per_step: if s.steps > 0.0 {
                s.step_tokens / s.steps
            } else {
                0.0
            },
        };
        let (bottleneck, near) = state.limits(d, &self.w);
        let State {
            running,
            waiting,
            at_cap,
            kv_max,
            preemptions,
            tokens_per_step,
        } = state;
        Replayed {
            output_tok_s: self.tokens as f64 / seconds,
            // Requests/s at the answer's length, as the tokens came (requests sent late in the
            // window end after it).
            req_s: self.tokens as f64 / seconds / f64::from(self.w.output_tokens.max(1)),
            ttft_p50_s: quantile(&mut self.ttft, 0.5),
            ttft_p95_s: quantile(&mut self.ttft, 0.95),
            itl_p50_s: quantile(&mut self.itl, 0.5),
            itl_p95_s: quantile(&mut self.itl, 0.95),
            running,
            waiting,
            kv_max,
            preemptions,
            tokens_per_step,
            at_cap,
            bottleneck,
            near,
        }
    }
}

/// The replayed engines' state over the window, as the diagnosis reads a run's.
struct State {
    running: f64,
    waiting: f64,
    at_cap: f64,
    kv_max: f64,
    preemptions: u64,
    tokens_per_step: f64,
}

/// Where the diagnosis calls the batch pinned: the share of samples at the cap
/// (`llmscope_diagnosis`'s `PINNED_SHARE`; the simulator does not depend on it).
const PINNED_SHARE: f64 = 0.7;

impl State {
    /// The limit the replayed engine met, by the method's order — a queue the KV pool, the
    /// step's token budget or the batch cap explains; no queue with the load within what the
    /// deployment admits is load not reached — and the others it came within a tenth of.
    fn limits(&self, d: &Deployment, w: &Workload) -> (&'static str, Vec<&'static str>) {
        let budget = f64::from(d.max_num_batched_tokens);
        let cap = f64::from(d.max_num_seqs);
        // Each limit's measure against the mark where the diagnosis calls it (≥ 1: met).
        let kv = if self.preemptions > 0 {
            1.0
        } else {
            self.kv_max / 0.9
        };
        let marks = [
            ("kv_cache_capacity", kv),
            ("token_budget", self.tokens_per_step / (0.9 * budget)),
            (
                "batch_limit",
                (self.running / (0.9 * cap)).max(self.at_cap / PINNED_SHARE),
            ),
        ];
        let queued = self.waiting >= 0.5;
        let first = marks.iter().find(|m| queued && m.1 >= 1.0).map(|m| m.0);
        // Clients whose requests the front end holds (a closed loop's, outside the engines).
        let outside = match w.arrivals {
            Arrivals::Closed { concurrency } => {
                let held = (self.running + self.waiting) * f64::from(d.replicas.max(1));
                f64::from(concurrency) - held
            }
            Arrivals::Open { .. } => 0.0,
        };
        // The front end holds the load where half the clients are outside while the engine
        // had room for more than it got, or they queue at the API server's capacity; with
        // fewer clients than its cap and no capacity that time outside is a delay the load
        // never passes (a real vLLM 0.32, 4 clients under a cap of 8: 2.6 of them outside,
        // read load_not_reached by the diagnosis and by the engine's numbers).
        let room = d.max_num_seqs * d.replicas.max(1);
        let queues = |c: u32| c > room || w.frontend_tok_s.is_some();
        let bottleneck = first.unwrap_or(match w.arrivals {
            _ if queued => "engine_step",
            Arrivals::Closed { concurrency }
                if queues(concurrency) && outside >= 0.5 * f64::from(concurrency) =>
            {
                "front_end"
            }
            Arrivals::Closed { concurrency } if concurrency > room => "engine_step",
            _ => "load_not_reached",
        });
        let near = marks
            .iter()
            .filter(|m| m.0 != bottleneck && m.1 >= 0.9)
            .map(|m| m.0)
            .collect();
        (bottleneck, near)
    }
}

fn quantile(v: &mut [f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Intervals an engine with this step would show at these batch sizes (1 s each).
    fn intervals(step: (f64, f64, f64), batches: &[f64], prompt_per_step: f64) -> Vec<Interval> {
        batches
            .iter()
            .map(|&b| {
                let t = step.0 + step.1 * b + step.2 * prompt_per_step;
                let steps = 1.0 / t;
                Interval {
                    seconds: 1.0,
                    steps,
                    generated: steps * b,
                    prompt: steps * prompt_per_step,
                    recomputed: 0.0,
                }
            })
            .collect()
    }

    #[test]
    fn a_fit_recovers_the_step_it_was_made_from() {
        let mut rows = intervals((0.0021, 0.00026, 0.00002), &[1.0, 4.0, 8.0, 16.0], 3.0);
        rows.extend(intervals((0.0021, 0.00026, 0.00002), &[2.0, 12.0], 40.0));
        let m = fit(&rows).unwrap();
        assert!((m.step_s - 0.0021).abs() < 1e-6, "{m:?}");
        assert!((m.seq_s - 0.00026).abs() < 1e-7, "{m:?}");
        assert!((m.prompt_token_s - 0.00002).abs() < 1e-7, "{m:?}");
        assert!(m.residual < 1e-6 && m.batch_range == (1.0, 16.0));
    }

    #[test]
    fn one_batch_size_cannot_be_split() {
        let rows = intervals((0.002, 0.0002, 0.0), &[16.0, 16.0, 15.5], 1.0);
        assert!(matches!(fit(&rows), Err(FitError::OneBatchSize { .. })));
        assert_eq!(fit(&[]), Err(FitError::NoSteps));
    }

    #[test]
    fn a_negative_cost_is_dropped_not_kept() {
        // Prompt tokens that made steps no slower: their cost is 0, not below.
        let mut rows = intervals((0.002, 0.0003, 0.0), &[1.0, 8.0], 0.0);
        rows.extend(intervals((0.002, 0.0003, 0.0), &[4.0], 50.0));
        rows[2].seconds *= 0.97;
        let m = fit(&rows).unwrap();
        assert!(
            m.prompt_token_s >= 0.0 && m.step_s > 0.0 && m.seq_s > 0.0,
            "{m:?}"
        );
    }

    /// Half-second intervals of an engine stepping `step` at each batch of `batches`, with
    /// `ratio` prompt tokens a generated token arriving in whole 93-token prompts as they fall
    /// (some intervals one more, some one fewer) and the host's time jittering ±6 % — as a
    /// real engine's counters scraped every 0.5 s read.
    fn noisy(step: (f64, f64, f64), batches: &[f64], ratio: f64) -> Vec<Interval> {
        let mut out = Vec::new();
        for (k, &b) in batches.iter().cycle().take(48).enumerate() {
            let steps = (0.5 / (step.0 + step.1 * b + step.2 * ratio * b)).round();
            let generated = steps * b;
            let prompts = (generated * ratio / 93.0).round() + [0.0, 1.0, -1.0, 2.0][k % 4];
            let prompt = prompts.max(0.0) * 93.0;
            let jitter = 1.0 + 0.06 * [0.3, -0.8, 0.5, -0.1, 0.9, -0.6, 0.1][k % 7];
            let seconds = (step.0 * steps + step.1 * generated + step.2 * prompt) * jitter;
            out.push(Interval {
                seconds,
                steps,
                generated,
                prompt,
                recomputed: 0.0,
            });
        }
        out
    }

    #[test]
    fn one_workload_cannot_tell_a_prompt_token_from_a_sequence() {
        // 93-token prompts, 32-token answers: every interval about 2.9 prompt tokens a
        // generated one, whatever the batch. The prompt's cost is left at 0 with the range the
        // intervals allow (holding the true one), its time carried by the sequence's.
        let truth = (0.0019, 0.0004, 0.00004);
        let rows = noisy(truth, &[1.0, 2.0, 4.0, 8.0], 93.0 / 32.0);
        let m = fit(&rows).unwrap();
        let (lo, hi) = m.prompt_token_range.expect("a range");
        assert!(lo == 0.0 && hi > truth.2, "{m:?}");
        assert_eq!(m.prompt_token_s, 0.0, "{m:?}");
        let carried = truth.1 + truth.2 * 93.0 / 32.0;
        assert!((m.seq_s / carried - 1.0).abs() < 0.1, "{m:?} vs {carried}");
        // Held at the range's top, the rest refits around it.
        let top = refit_at(&rows, &m, hi);
        assert_eq!(top.prompt_token_s, hi);
        assert!(top.seq_s < m.seq_s, "{top:?}");
    }

    #[test]
    fn two_workloads_tell_it_and_keep_it() {
        // 32- and 128-token answers to the same prompts: the ratio moves, the cost is fitted.
        let truth = (0.0019, 0.0004, 0.00004);
        let mut rows = noisy(truth, &[1.0, 2.0, 4.0, 8.0], 93.0 / 32.0);
        rows.extend(noisy(truth, &[1.0, 4.0, 8.0], 93.0 / 128.0));
        let m = fit(&rows).unwrap();
        let (lo, hi) = m.prompt_token_range.expect("a range");
        assert!(lo > 0.0 && lo <= truth.2 && truth.2 <= hi, "{m:?}");
        assert!((m.prompt_token_s / truth.2 - 1.0).abs() < 0.3, "{m:?}");
        // Refitted at the cost the fit found, the model is the fit's.
        let same = refit_at(&rows, &m, m.prompt_token_s);
        assert!((same.seq_s - m.seq_s).abs() < 1e-9 && (same.step_s - m.step_s).abs() < 1e-9);
    }

    /// Half-second intervals of a batch starved of KV: `batch` sequences a step, a prompt
    /// finishing every 6.5 steps, and `preempt[k]` preemptions a step, each recomputing a
    /// 93-token prompt the engine's counters never count — as a real vLLM 0.32 with a 4 MiB pool
    /// ran 32 clients (10.3 sequences, 0.07–0.17 preemptions a step).
    fn starved(step: (f64, f64, f64), batch: f64, preempt: &[f64]) -> Vec<Interval> {
        preempt
            .iter()
            .enumerate()
            .map(|(k, &pre)| {
                let prompt_per_step = 93.0 / 6.5;
                let t = step.0 + step.1 * batch + step.2 * (prompt_per_step + pre * 93.0);
                let steps = (0.5 / t).round();
                let jitter = 1.0 + 0.02 * [0.3, -0.8, 0.5, -0.1, 0.9, -0.6, 0.1][k % 7];
                Interval {
                    seconds: t * steps * jitter,
                    steps,
                    generated: steps * batch,
                    prompt: steps * prompt_per_step,
                    recomputed: steps * pre * 93.0,
                }
            })
            .collect()
    }

    #[test]
    fn a_starved_batch_recomputing_its_prompts_is_not_a_costlier_sequence() {
        // The base preempts as its pool fills; the light run beside it does not. Each
        // preemption recomputes a prompt: counted, the steps' extra time goes to the prompt
        // tokens, and an unstarved 16-sequence batch is predicted at the step it takes.
        let truth = (0.0026, 0.0002, 0.00005);
        let preempt = [0.07, 0.17, 0.1, 0.15, 0.12, 0.09, 0.16, 0.13];
        let mut rows = starved(truth, 10.3, &preempt.repeat(4));
        rows.extend(noisy(truth, &[3.9, 4.0], 93.0 / 64.0));
        let step16 = |m: &StepModel| m.step_s + m.seq_s * 16.0 + m.prompt_token_s * 93.0 / 6.5;
        let true16 = truth.0 + truth.1 * 16.0 + truth.2 * 93.0 / 6.5;
        let m = fit(&rows).unwrap();
        assert!((m.prompt_token_s / truth.2 - 1.0).abs() < 0.25, "{m:?}");
        assert!((step16(&m) / true16 - 1.0).abs() < 0.03, "{m:?}");
        // Blind to what the preemptions recompute, the fit puts it on each sequence: the
        // unstarved batch is predicted slower than it runs.
        let blind: Vec<Interval> = rows
            .iter()
            .map(|i| Interval {
                recomputed: 0.0,
                ..*i
            })
            .collect();
        let b = fit(&blind).unwrap();
        assert!(b.seq_s > 1.3 * truth.1, "{b:?}");
        assert!(step16(&b) / true16 - 1.0 > 0.08, "{b:?} vs {true16}");
    }

    fn model() -> StepModel {
        StepModel {
            step_s: 0.002,
            seq_s: 0.00025,
            prompt_token_s: 0.00002,
            residual: 0.0,
            intervals: 4,
            batch_range: (1.0, 8.0),
            prompt_token_range: None,
        }
    }

    fn deployment(cap: u32) -> Deployment {
        Deployment {
            max_num_seqs: cap,
            max_num_batched_tokens: 2048,
            kv_tokens: None,
            block_size: 16,
            replicas: 1,
        }
    }

    fn closed(c: u32) -> Workload {
        Workload {
            arrivals: Arrivals::Closed { concurrency: c },
            prompt_tokens: 100,
            output_tokens: 64,
            frontend_s: 0.0,
            frontend_before_s: None,
            frontend_tok_s: None,
        }
    }

    #[test]
    fn the_fitted_engine_steps_as_fitted() {
        // 8 clients under a cap of 8: every step decodes 8, and an ITL is one such step.
        let r = replay(&model(), &deployment(8), &closed(8), 2.0, 10.0);
        let step = 0.002 + 0.00025 * 8.0;
        let itl = r.itl_p50_s.unwrap();
        assert!((itl / step - 1.0).abs() < 0.02, "{itl} vs {step}");
        assert!((r.output_tok_s * step / 8.0 - 1.0).abs() < 0.1, "{r:?}");
        assert_eq!(r.bottleneck, "load_not_reached");
    }

    #[test]
    fn a_sequence_cheaper_than_a_prompt_token_steps_as_fitted() {
        // A fit may make a prompt token dearer than a decoded sequence (one workload leaves the
        // split to noise; the band holds its edges): the replay still decodes at the fitted
        // sequence cost, not at the prompt token's.
        let m = StepModel {
            seq_s: 0.000_01,
            prompt_token_s: 0.000_1,
            ..model()
        };
        let r = replay(&m, &deployment(8), &closed(8), 2.0, 10.0);
        let step = m.step_s + m.seq_s * 8.0;
        let itl = r.itl_p50_s.unwrap();
        assert!((itl / step - 1.0).abs() < 0.02, "{itl} vs {step}");
    }

    #[test]
    fn a_cap_below_the_clients_is_the_batch_limit_and_raising_it_buys_throughput() {
        let at8 = replay(&model(), &deployment(8), &closed(32), 2.0, 10.0);
        assert_eq!(at8.bottleneck, "batch_limit", "{at8:?}");
        assert!(at8.waiting > 20.0 && (at8.running - 8.0).abs() < 0.5);
        let at32 = replay(&model(), &deployment(32), &closed(32), 2.0, 10.0);
        assert_eq!(at32.bottleneck, "load_not_reached", "{at32:?}");
        // A step of 32 costs 10 ms against 4 ms at 8: 3.2 tokens/ms against 2.
        let gain = at32.output_tok_s / at8.output_tok_s;
        assert!((gain - 1.6).abs() < 0.15, "{gain}");
        assert!(at32.ttft_p50_s.unwrap() < at8.ttft_p50_s.unwrap() / 5.0);
    }

    #[test]
    fn a_small_pool_preempts_and_is_the_kv_limit() {
        let mut d = deployment(32);
        d.kv_tokens = Some(1024);
        let r = replay(&model(), &d, &closed(32), 2.0, 10.0);
        assert_eq!(r.bottleneck, "kv_cache_capacity", "{r:?}");
    }

    #[test]
    fn replicas_time_sliced_on_one_gpu_split_its_time() {
        // Two engines taking turns on one GPU each pay the fixed cost of their own steps: 16
        // sequences every 12 ms between them is what one engine gives every 6 ms — no more
        // output (seed 001 §7-3), though the queue moves into the second engine's batch.
        let one = replay(&model(), &deployment(16), &closed(32), 2.0, 10.0);
        let mut d = deployment(16);
        d.replicas = 2;
        let two = replay(&model(), &d, &closed(32), 2.0, 10.0);
        let gain = two.output_tok_s / one.output_tok_s;
        assert!((gain - 1.0).abs() < 0.05, "{gain}: {one:?} {two:?}");
        assert!(two.itl_p50_s.unwrap() > 1.8 * one.itl_p50_s.unwrap());
        // One engine with the same 32 sequences does better: one fixed cost per step.
        let merged = replay(&model(), &deployment(32), &closed(32), 2.0, 10.0);
        assert!(merged.output_tok_s > 1.15 * two.output_tok_s);
    }

    /// 16 requests of 157 tokens fill 31 of 32 128-token blocks only when they pass 128 tokens
    /// together: in waves (clients started at once) the pool fills and preempts; staggered, it
    /// does not, and the cap binds.
    #[test]
    fn a_batch_in_waves_fills_a_pool_a_staggered_one_does_not() {
        let d = Deployment {
            kv_tokens: Some(4096),
            block_size: 128,
            ..deployment(16)
        };
        let w = Workload {
            prompt_tokens: 93,
            output_tokens: 64,
            ..closed(32)
        };
        let staggered = replay_with(&model(), &d, &w, (5.0, 20.0), false);
        let waves = replay_with(&model(), &d, &w, (5.0, 20.0), true);
        assert_eq!(staggered.bottleneck, "batch_limit", "{staggered:?}");
        assert!(staggered.kv_max < 0.9, "{staggered:?}");
        assert_eq!(waves.bottleneck, "kv_cache_capacity", "{waves:?}");
        assert!(waves.kv_max >= 0.99, "{waves:?}");
    }

    #[test]
    fn time_outside_the_engine_keeps_clients_from_it() {
        // 32 clients, each request 200 ms outside the engine: the engine sees fewer at once,
        // and each client's TTFT carries the front end's time before the engine (half).
        let mut w = closed(32);
        let inside = replay(&model(), &deployment(32), &w, 2.0, 10.0);
        w.frontend_s = 0.2;
        let outside = replay(&model(), &deployment(32), &w, 2.0, 10.0);
        assert!(
            outside.running < inside.running - 4.0,
            "{inside:?} {outside:?}"
        );
        assert!(outside.ttft_p50_s.unwrap() >= 0.1, "{outside:?}");
        // By Little's law the clients hold running + requests/s × the front end's time.
        let held = outside.running + outside.req_s * 0.2;
        assert!((held / 32.0 - 1.0).abs() < 0.1, "{held}: {outside:?}");
        // Where the run showed most of that time after the engine (streaming back), the first
        // token comes sooner by the part moved; the engine's pace does not change.
        w.frontend_before_s = Some(0.02);
        let late = replay(&model(), &deployment(32), &w, 2.0, 10.0);
        let sooner = outside.ttft_p50_s.unwrap() - late.ttft_p50_s.unwrap();
        assert!((sooner - 0.08).abs() < 0.01, "{sooner}: {late:?}");
        let pace = late.output_tok_s / outside.output_tok_s;
        assert!((pace - 1.0).abs() < 0.02, "{pace}");
    }

    #[test]
    fn an_api_server_at_its_capacity_is_the_limit_and_a_bigger_batch_buys_nothing() {
        // 32 clients, 64-token answers, under a cap of 8: the engine alone serves its batch
        // limit. An API server that streams at most half that holds the rest of the clients in
        // its queue — the limit is the front end's, and raising the cap buys nothing.
        let free = replay(&model(), &deployment(8), &closed(32), 2.0, 20.0);
        assert_eq!(free.bottleneck, "batch_limit", "{free:?}");
        let mut w = closed(32);
        w.frontend_tok_s = Some(free.output_tok_s / 2.0);
        let held = replay(&model(), &deployment(8), &w, 2.0, 20.0);
        let share = held.output_tok_s / (free.output_tok_s / 2.0);
        assert!((share - 1.0).abs() < 0.05, "{share}: {held:?}");
        assert_eq!(held.bottleneck, "front_end", "{held:?}");
        let raised = replay(&model(), &deployment(32), &w, 2.0, 20.0);
        let bought = raised.output_tok_s / held.output_tok_s;
        assert!((bought - 1.0).abs() < 0.05, "{bought}: {raised:?}");
        assert_eq!(raised.bottleneck, "front_end", "{raised:?}");
        // The queue is in front of the engine: in every TTFT.
        assert!(
            held.ttft_p50_s.unwrap() > 2.0 * free.ttft_p50_s.unwrap(),
            "{held:?} {free:?}"
        );
        // A capacity above what the engine serves is never met.
        w.frontend_tok_s = Some(free.output_tok_s * 3.0);
        let roomy = replay(&model(), &deployment(8), &w, 2.0, 20.0);
        assert_eq!(roomy.bottleneck, "batch_limit", "{roomy:?}");
        assert!((roomy.output_tok_s / free.output_tok_s - 1.0).abs() < 0.05);
    }

    #[test]
    fn an_open_loop_under_its_capacity_is_not_limited() {
        let w = Workload {
            arrivals: Arrivals::Open {
                rate: 20.0,
                cap: 64,
            },
            prompt_tokens: 100,
            output_tokens: 64,
            frontend_s: 0.0,
            frontend_before_s: None,
            frontend_tok_s: None,
        };
        let r = replay(&model(), &deployment(16), &w, 2.0, 20.0);
        assert!((r.req_s / 20.0 - 1.0).abs() < 0.1, "{r:?}");
        assert_eq!(r.bottleneck, "load_not_reached");
    }
}
