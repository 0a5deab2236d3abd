//! The engine model: a vLLM V1-like scheduler loop in simulated time.
//!
//! One step = [`Engine::schedule`] (decide the batch, allocate KV blocks, cost the step) then
//! [`Engine::complete`] (advance the scheduled requests, sample tokens, finish requests). The
//! caller owns time: the HTTP server sleeps for [`StepPlan::duration`] between the two, the offline
//! driver just adds it. Nothing here does I/O, so the same model serves the live simulator, tests,
//! and later `whatif` (fit the constants, replay offline).
//!
//! Scheduling follows vLLM V1 (`vllm/v1/core/sched/scheduler.py`): running requests first (decode
//! = 1 token, unfinished prefill chunks continue), then waiting requests FCFS while the token
//! budget lasts and `running < max_num_seqs`; KV blocks of 16 tokens are allocated for this step's
//! tokens only; when they run out the newest running request is preempted (recompute) and no new
//! request is admitted in that step. Step time = host time + roofline GPU time
//! (`docs/SOURCES.md` §sim-model).

use crate::kv::{BlockKey, KvPool};
use crate::preset::{EngineConfig, GpuSpec, ModelConstants, ModelSpec, Preset};
use crate::rng::Rng;
use crate::stats::{EngineStats, FinishReason, RequestHistograms};
use crate::timeline::{GpuInterval, GpuTimeline};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

const MIB: f64 = 1024.0 * 1024.0;

/// A request id, unique within one engine.
pub type ReqId = u64;

/// Hasher for [`ReqId`] keys: ids are sequential, so one multiply spreads them well enough and
/// costs far less than SipHash on the per-token hot path.
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ *b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A map keyed by request id.
pub type IdMap<V> = HashMap<ReqId, V, BuildHasherDefault<IdHasher>>;

/// Why an engine cannot be built from a configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error(
        "model weights ({weights_mib:.0} MiB) plus activations ({activations_mib:.0} MiB) do not fit in \
         --gpu-memory-utilization {utilization} × {memory_mib:.0} MiB; raise --gpu-memory-utilization \
         or lower --max-num-batched-tokens"
    )]
    NoMemoryForKv {
        weights_mib: f64,
        activations_mib: f64,
        utilization: f64,
        memory_mib: f64,
    },
    #[error(
        "the KV cache holds {kv_tokens} tokens, fewer than --max-model-len {max_model_len}; lower \
         --max-model-len or raise --gpu-memory-utilization"
    )]
    KvSmallerThanModelLen { kv_tokens: u64, max_model_len: u32 },
    #[error("invalid engine configuration: {0}")]
    Invalid(&'static str),
}

/// What a client asks for, already tokenised and validated.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRequest {
    pub prompt_tokens: u32,
    /// Leading prompt tokens shared by every request of this model (the chat template).
    pub template_tokens: u32,
    /// Hash of the prompt content (requests with the same prompt share its blocks).
    pub prompt_key: u64,
    /// The key of each full prompt block, by the tokens up to its end
    /// ([`crate::tokenizer::BlockHashes`]): prompts that share a prefix share those blocks. Empty:
    /// every block is keyed by `prompt_key`.
    pub block_keys: std::sync::Arc<[u64]>,
    /// Resolved output cap (`max_tokens`, or what is left of `max_model_len`).
    pub max_tokens: u32,
    /// The `max_tokens` parameter as sent, if it was.
    pub max_tokens_param: Option<u32>,
    pub ignore_eos: bool,
    pub n: u32,
}

/// A token produced for a request in a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Emitted {
    pub id: ReqId,
    /// Index of this output token (0 = first).
    pub index: u32,
    pub finish: Option<FinishReason>,
    /// Prompt tokens found in the prefix cache when the request was first scheduled.
    pub cached: u32,
}

/// One scheduled step, costed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepPlan {
    pub start: f64,
    pub t_host: f64,
    pub t_gpu: f64,
    pub duration: f64,
    pub bytes: f64,
    pub flops: f64,
    pub compute_share: f64,
    pub new_tokens: u32,
    /// (request, tokens scheduled this step).
    pub items: Vec<(ReqId, u32)>,
}

#[derive(Debug, Clone)]
struct Req {
    prompt: u32,
    template: u32,
    prompt_key: u64,
    block_keys: std::sync::Arc<[u64]>,
    max_tokens: u32,
    max_tokens_param: Option<u32>,
    n: u32,
    eos_at: Option<u32>,
    computed: u32,
    output: u32,
    shared_blocks: u32,
    private_blocks: u32,
    cached_hit_tokens: u32,
    prompt_counted: bool,
    /// Times it was preempted (recomputed from scratch).
    preemptions: u32,
    arrival: f64,
    first_scheduled: Option<f64>,
    first_token: Option<f64>,
    last_token: f64,
    finished: bool,
}

impl Req {
    fn num_tokens(&self) -> u32 {
        self.prompt + self.output
    }

    fn blocks(&self) -> u32 {
        self.shared_blocks + self.private_blocks
    }

    fn block_key(&self, b: u32, block_size: u32) -> BlockKey {
        if (b + 1) * block_size <= self.template {
            (0x7E3D_1A7E, b)
        } else if let Some(&k) = self.block_keys.get(b as usize) {
            (k, b)
        } else {
            (self.prompt_key, b)
        }
    }

    /// A request that arrived at `arrival`, with at most `room` output tokens and, unless it
    /// ignores EOS, its end of sequence at `eos_at`.
    fn new(r: &NewRequest, arrival: f64, room: u32, eos_at: Option<u32>) -> Self {
        Req {
            prompt: r.prompt_tokens.max(1),
            template: r.template_tokens,
            prompt_key: r.prompt_key,
            block_keys: r.block_keys.clone(),
            max_tokens: r.max_tokens.clamp(1, room),
            max_tokens_param: r.max_tokens_param,
            n: r.n.max(1),
            eos_at,
            computed: 0,
            output: 0,
            shared_blocks: 0,
            private_blocks: 0,
            cached_hit_tokens: 0,
            prompt_counted: false,
            preemptions: 0,
            arrival,
            first_scheduled: None,
            first_token: None,
            last_token: arrival,
            finished: false,
        }
    }

    /// Full prompt blocks become shareable through the prefix cache.
    fn promote_full_blocks(&mut self, kv: &mut KvPool, bs: u32) {
        let full = self.computed.min(self.prompt) / bs;
        while self.shared_blocks < full {
            let key = self.block_key(self.shared_blocks, bs);
            if !kv.promote(key) {
                break;
            }
            self.private_blocks -= 1;
            self.shared_blocks += 1;
        }
    }

    /// Counts the prompt's tokens once, when its prefill completes.
    fn count_prompt(&mut self, stats: &mut EngineStats) {
        if !self.prompt_counted {
            self.prompt_counted = true;
            stats.prompt_tokens += self.prompt as u64;
            stats.prompt_tokens_cached += self.cached_hit_tokens as u64;
            stats.prompt_tokens_computed += (self.prompt - self.cached_hit_tokens) as u64;
        }
    }

    /// Samples the next output token at `end`; returns its index.
    fn sample(&mut self, stats: &mut EngineStats, end: f64) -> u32 {
        let index = self.output;
        self.output += 1;
        stats.generation_tokens += 1;
        match self.first_token {
            None => {
                self.first_token = Some(end);
                stats.hist.ttft.observe(end - self.arrival);
            }
            Some(_) => stats.hist.itl.observe(end - self.last_token),
        }
        self.last_token = end;
        index
    }

    /// Why the request ends after its latest token: EOS, or its length cap; `None` to go on.
    fn finish_reason(&self, max_model_len: u32) -> Option<FinishReason> {
        if self.eos_at.is_some_and(|e| self.output >= e) {
            Some(FinishReason::Stop)
        } else if self.output >= self.max_tokens || self.num_tokens() >= max_model_len {
            Some(FinishReason::Length)
        } else {
            None
        }
    }

    /// The per-request histograms of a request that finished at `end`.
    fn observe_finished(&self, h: &mut RequestHistograms, end: f64) {
        h.e2e.observe(end - self.arrival);
        h.num_preemptions.observe(self.preemptions as f64);
        h.params_n.observe(self.n as f64);
        h.max_num_generation_tokens.observe(self.max_tokens as f64);
        if let Some(p) = self.max_tokens_param {
            h.params_max_tokens.observe(p as f64);
        }
        if let Some(sched) = self.first_scheduled {
            h.inference.observe(end - sched);
            h.prompt_tokens.observe(self.prompt as f64);
            h.generation_tokens.observe(self.output as f64);
            h.prefill_kv_computed_tokens
                .observe((self.prompt - self.cached_hit_tokens) as f64);
            if let Some(first) = self.first_token {
                h.prefill.observe(first - sched);
                h.decode.observe(self.last_token - first);
                if self.output > 1 {
                    h.tpot
                        .observe((self.last_token - first) / (self.output - 1) as f64);
                }
            }
        }
    }
}

/// Memory layout derived from GPU, model and engine settings (what vLLM logs at start-up).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryPlan {
    pub num_gpu_blocks: u32,
    pub kv_tokens: u64,
    pub weights_mib: f64,
    pub kv_mib: f64,
    /// DCGM FB_USED: constant once the engine has started.
    pub fb_used_mib: f64,
}

impl MemoryPlan {
    pub fn new(
        gpu: &GpuSpec,
        model: &ModelSpec,
        cfg: &EngineConfig,
        k: &ModelConstants,
    ) -> Result<Self, EngineError> {
        if !(cfg.gpu_memory_utilization > 0.0 && cfg.gpu_memory_utilization <= 1.0) {
            return Err(EngineError::Invalid(
                "--gpu-memory-utilization must be in (0, 1]",
            ));
        }
        let requested = cfg.gpu_memory_utilization * gpu.memory_mib;
        let weights_mib = model.weight_bytes() / MIB;
        let activations_mib = activations_mib(model, cfg, k);
        let kv_mib = match cfg.kv_cache_memory_bytes {
            Some(bytes) => bytes as f64 / MIB,
            None => requested - weights_mib - activations_mib - k.non_torch_mib,
        };
        let num_gpu_blocks = kv_blocks(kv_mib, model, cfg).ok_or(EngineError::NoMemoryForKv {
            weights_mib,
            activations_mib,
            utilization: cfg.gpu_memory_utilization,
            memory_mib: gpu.memory_mib,
        })?;
        let kv_tokens = kv_tokens(num_gpu_blocks, cfg)?;
        Ok(Self {
            num_gpu_blocks,
            kv_tokens,
            weights_mib,
            kv_mib,
            fb_used_mib: (k.cuda_context_mib + requested + k.cuda_graph_mib).min(gpu.memory_mib),
        })
    }
}

/// Activation memory for a full step of `max_num_batched_tokens`.
fn activations_mib(model: &ModelSpec, cfg: &EngineConfig, k: &ModelConstants) -> f64 {
    cfg.max_num_batched_tokens as f64 * model.hidden as f64 * k.activation_bytes_per_token_hidden
        / MIB
}

/// How many KV blocks fit in `kv_mib`; `None` when fewer than two do.
fn kv_blocks(kv_mib: f64, model: &ModelSpec, cfg: &EngineConfig) -> Option<u32> {
    let block_bytes = cfg.block_size as f64 * model.kv_bytes_per_token();
    let num_gpu_blocks = (kv_mib * MIB / block_bytes).floor();
    if num_gpu_blocks < 2.0 {
        return None;
    }
    Some(num_gpu_blocks as u32)
}

/// The tokens `num_gpu_blocks` blocks hold; an error when one request of `max_model_len` would
/// not fit.
fn kv_tokens(num_gpu_blocks: u32, cfg: &EngineConfig) -> Result<u64, EngineError> {
    let kv_tokens = num_gpu_blocks as u64 * cfg.block_size as u64;
    if kv_tokens < cfg.max_model_len as u64 {
        return Err(EngineError::KvSmallerThanModelLen {
            kv_tokens,
            max_model_len: cfg.max_model_len,
        });
    }
    Ok(kv_tokens)
}

/// The simulated engine.
#[derive(Debug, Clone)]
pub struct Engine {
    pub gpu: GpuSpec,
    pub model: ModelSpec,
    pub cfg: EngineConfig,
    pub k: ModelConstants,
    pub memory: MemoryPlan,
    pub stats: EngineStats,
    pub timeline: GpuTimeline,
    kv: KvPool,
    rng: Rng,
    reqs: IdMap<Req>,
    waiting: VecDeque<ReqId>,
    running: Vec<ReqId>,
    next_id: ReqId,
}

impl Engine {
    pub fn new(preset: &Preset, seed: u64) -> Result<Self, EngineError> {
        let cfg = &preset.engine;
        if cfg.max_num_seqs == 0 || cfg.max_num_batched_tokens == 0 || cfg.block_size == 0 {
            return Err(EngineError::Invalid(
                "--max-num-seqs, --max-num-batched-tokens and block size must be > 0",
            ));
        }
        if cfg.max_model_len < 2 {
            return Err(EngineError::Invalid("--max-model-len must be at least 2"));
        }
        let memory = MemoryPlan::new(&preset.gpu, &preset.model, cfg, &preset.constants)?;
        Ok(Self {
            gpu: preset.gpu.clone(),
            model: preset.model.clone(),
            cfg: cfg.clone(),
            k: preset.constants.clone(),
            memory,
            stats: EngineStats::new(cfg.max_model_len),
            timeline: GpuTimeline::new(600.0),
            kv: KvPool::new(memory.num_gpu_blocks, cfg.enable_prefix_caching),
            rng: Rng::new(seed),
            reqs: IdMap::default(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            next_id: 1,
        })
    }

    /// Queues a request that arrived at `now`.
    pub fn add(&mut self, now: f64, r: NewRequest) -> ReqId {
        let id = self.next_id;
        self.next_id += 1;
        let eos_at = (!r.ignore_eos).then(|| {
            let draw = self
                .rng
                .lognormal_mean(self.k.output_mean_tokens, self.k.output_sigma);
            draw.round().max(1.0) as u32
        });
        let room = self
            .cfg
            .max_model_len
            .saturating_sub(r.prompt_tokens)
            .max(1);
        self.reqs.insert(id, Req::new(&r, now, room, eos_at));
        self.waiting.push_back(id);
        self.stats.waiting = self.waiting.len() as u32;
        id
    }

    /// The client went away: drop the request wherever it is (vLLM counts it as `abort`).
    pub fn abort(&mut self, id: ReqId, now: f64) {
        let Some(r) = self.reqs.get(&id) else { return };
        if r.finished {
            return;
        }
        self.waiting.retain(|w| *w != id);
        self.running.retain(|w| *w != id);
        self.finish(id, FinishReason::Abort, now);
        self.stats.running = self.running.len() as u32;
        self.stats.waiting = self.waiting.len() as u32;
        self.stats.kv_usage = self.kv.usage();
    }

    pub fn has_work(&self) -> bool {
        !self.running.is_empty() || !self.waiting.is_empty()
    }

    pub fn num_running(&self) -> usize {
        self.running.len()
    }

    pub fn num_waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Chooses this step's batch and costs it. `None` when there is nothing to run.
    pub fn schedule(&mut self, now: f64) -> Option<StepPlan> {
        let mut plan = StepPlan {
            start: now,
            ..StepPlan::default()
        };
        let mut budget = self.cfg.max_num_batched_tokens;
        let preempted = self.schedule_running(&mut plan, &mut budget, now);
        if !preempted {
            self.schedule_waiting(&mut plan, &mut budget, now);
        }
        self.stats.running = self.running.len() as u32;
        self.stats.waiting = self.waiting.len() as u32;
        self.stats.kv_usage = self.kv.usage();
        if plan.items.is_empty() {
            return None;
        }
        self.cost(&mut plan);
        Some(plan)
    }

    /// Running requests first; preempts the newest when blocks run out. True if it preempted.
    fn schedule_running(&mut self, plan: &mut StepPlan, budget: &mut u32, now: f64) -> bool {
        let bs = self.cfg.block_size;
        let mut preempted = false;
        let mut i = 0;
        while i < self.running.len() && *budget > 0 {
            let id = self.running[i];
            let r = &self.reqs[&id];
            let q = (r.num_tokens() - r.computed).min(*budget);
            let need = (r.computed + q).div_ceil(bs).saturating_sub(r.blocks());
            let (any, self_preempted) = self.alloc_or_preempt(id, need, now);
            preempted |= any;
            if self_preempted {
                break;
            }
            let r = self.reqs.get_mut(&id).expect("running request exists");
            r.private_blocks += need;
            plan.items.push((id, q));
            *budget -= q;
            i += 1;
        }
        preempted
    }

    /// Allocates `need` blocks for running request `id`, preempting the newest running requests
    /// until they fit. Returns whether it preempted any, and whether `id` itself was preempted.
    fn alloc_or_preempt(&mut self, id: ReqId, need: u32, now: f64) -> (bool, bool) {
        let mut preempted = false;
        while !self.kv.try_alloc(need) {
            let Some(victim) = self.running.pop() else {
                break;
            };
            self.preempt(victim, now);
            preempted = true;
            if victim == id {
                return (true, true);
            }
        }
        (preempted, false)
    }

    /// Admits waiting requests FCFS while budget, `max_num_seqs` and blocks allow.
    fn schedule_waiting(&mut self, plan: &mut StepPlan, budget: &mut u32, now: f64) {
        while *budget > 0 && (self.running.len() as u32) < self.cfg.max_num_seqs {
            let Some(&id) = self.waiting.front() else {
                break;
            };
            let Some((hits, q, need)) = self.reserve_blocks(id, *budget) else {
                break;
            };
            self.waiting.pop_front();
            self.start_running(id, hits, need, now);
            self.running.push(id);
            plan.items.push((id, q));
            *budget -= q;
        }
    }

    /// Takes the blocks a waiting request needs for up to `budget` tokens this step: its
    /// prefix-cache hits, then new blocks for the rest. Returns (hit blocks, tokens, new blocks),
    /// or `None`, holding nothing, when the blocks are not there.
    fn reserve_blocks(&mut self, id: ReqId, budget: u32) -> Option<(u32, u32, u32)> {
        let bs = self.cfg.block_size;
        let r = &self.reqs[&id];
        let hittable = r.prompt.min(r.num_tokens() - 1) / bs;
        let hits = self
            .kv
            .cached_prefix((0..hittable).map(|b| r.block_key(b, bs)));
        let keys: Vec<BlockKey> = (0..hits).map(|b| r.block_key(b, bs)).collect();
        let start = hits * bs;
        let q = (r.num_tokens() - start).min(budget);
        let need = (start + q).div_ceil(bs) - hits;
        // Hit blocks that are free-but-cached also consume free blocks.
        for key in &keys {
            self.kv.acquire(*key);
        }
        if !self.kv.try_alloc(need) {
            for key in &keys {
                self.kv.release(*key);
            }
            return None;
        }
        Some((hits, q, need))
    }

    /// Moves an admitted request's progress to its cached prefix; the first time it is
    /// scheduled, counts its prefix-cache query and hits and its time in the queue.
    fn start_running(&mut self, id: ReqId, hits: u32, need: u32, now: f64) {
        let start = hits * self.cfg.block_size;
        let r = self.reqs.get_mut(&id).expect("waiting request exists");
        r.computed = start;
        r.shared_blocks = hits;
        r.private_blocks = need;
        if r.first_scheduled.is_none() {
            r.first_scheduled = Some(now);
            r.cached_hit_tokens = start;
            self.stats.prefix_queries += r.prompt as u64;
            self.stats.prefix_hits += start as u64;
            self.stats.hist.queue.observe(now - r.arrival);
        }
    }

    fn preempt(&mut self, id: ReqId, _now: f64) {
        self.release_blocks(id);
        if let Some(r) = self.reqs.get_mut(&id) {
            r.computed = 0;
            r.preemptions += 1;
        }
        self.waiting.push_front(id);
        self.stats.preemptions += 1;
    }

    fn release_blocks(&mut self, id: ReqId) {
        let bs = self.cfg.block_size;
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        for b in 0..r.shared_blocks {
            self.kv.release(r.block_key(b, bs));
        }
        self.kv.free_private(r.private_blocks);
        r.shared_blocks = 0;
        r.private_blocks = 0;
    }

    /// Roofline GPU time + host time for the scheduled items.
    fn cost(&self, plan: &mut StepPlan) {
        let (m, g, k) = (&self.model, &self.gpu, &self.k);
        let (context, attn, samples) = self.batch_shape(plan);
        let t_new: u32 = plan.items.iter().map(|(_, q)| q).sum();
        let t_new_f = t_new as f64;
        let bytes = m.weight_bytes() + m.kv_bytes_per_token() * (context + t_new_f);
        let flops = 2.0 * m.non_embedding_params() * t_new_f
            + 2.0 * m.hidden as f64 * m.vocab as f64 * samples
            + 4.0 * m.layers as f64 * m.heads as f64 * m.head_dim as f64 * attn;
        let t_mem = bytes / (k.eta_bw * g.bandwidth);
        let t_flop = flops / (k.eta_flops * g.peak_flops);
        let roof = t_mem.max(t_flop);
        plan.t_gpu = k.gpu_step_s + k.gpu_layer_s * m.layers as f64 + roof;
        plan.t_host =
            k.host_step_s + k.host_seq_s * plan.items.len() as f64 + k.host_token_s * t_new_f;
        plan.duration = if self.cfg.async_scheduling {
            plan.t_host.max(plan.t_gpu)
        } else {
            plan.t_host + plan.t_gpu
        };
        // A front end that cannot stream the step's tokens as fast as they come paces the steps.
        plan.duration = plan.duration.max(k.frontend_token_s * samples);
        plan.bytes = bytes;
        plan.flops = flops;
        plan.compute_share = if roof > 0.0 { t_flop / roof } else { 0.0 };
        plan.new_tokens = t_new;
    }

    /// The batch's context tokens already in KV, its attention work (new tokens × the context
    /// they attend to), and how many requests sample a token this step.
    fn batch_shape(&self, plan: &StepPlan) -> (f64, f64, f64) {
        let mut context = 0f64;
        let mut attn = 0f64;
        let mut samples = 0f64;
        for &(id, q) in &plan.items {
            let r = &self.reqs[&id];
            let (c, q) = (r.computed as f64, q as f64);
            context += c;
            attn += q * (c + q / 2.0);
            if r.computed + q as u32 == r.num_tokens() {
                samples += 1.0;
            }
        }
        (context, attn, samples)
    }

    /// Applies a step that ended at `end`; pushes produced tokens into `out`.
    pub fn complete(&mut self, plan: &StepPlan, end: f64, out: &mut Vec<Emitted>) {
        self.record_step(plan);
        let mut any_finished = false;
        for &(id, q) in &plan.items {
            if let Some(e) = self.advance(id, q, end) {
                any_finished |= e.finish.is_some();
                out.push(e);
            }
        }
        if any_finished {
            let reqs = &self.reqs;
            self.running
                .retain(|id| reqs.get(id).is_some_and(|r| !r.finished));
            self.reqs.retain(|_, r| !r.finished);
        }
        self.stats.running = self.running.len() as u32;
        self.stats.waiting = self.waiting.len() as u32;
        self.stats.kv_usage = self.kv.usage();
    }

    /// When a step's kernels start after the step does: at once with async scheduling (the
    /// host prepares the next step meanwhile), after its host part without.
    pub fn gpu_offset(&self, plan: &StepPlan) -> f64 {
        if self.cfg.async_scheduling {
            0.0
        } else {
            plan.t_host
        }
    }

    /// The step's GPU interval on the timeline, its size, and its estimated FLOPs and traffic.
    fn record_step(&mut self, plan: &StepPlan) {
        let gpu_start = plan.start + self.gpu_offset(plan);
        self.timeline.push(GpuInterval {
            start: gpu_start,
            end: gpu_start + plan.t_gpu,
            bytes: plan.bytes,
            flops: plan.flops,
            compute_share: plan.compute_share,
        });
        self.stats
            .hist
            .iteration_tokens
            .observe(plan.new_tokens as f64);
        self.stats.est_flops += plan.flops;
        let written = self.model.kv_bytes_per_token() * plan.new_tokens as f64;
        self.stats.est_write_bytes += written;
        self.stats.est_read_bytes += plan.bytes - written;
    }

    /// Advances one request by `q` computed tokens; samples a token when it has caught up.
    fn advance(&mut self, id: ReqId, q: u32, end: f64) -> Option<Emitted> {
        let bs = self.cfg.block_size;
        let r = self.reqs.get_mut(&id)?;
        if r.finished {
            return None;
        }
        r.computed += q;
        r.promote_full_blocks(&mut self.kv, bs);
        if r.computed < r.num_tokens() {
            return None; // a prefill chunk that did not reach the end of the prompt
        }
        r.count_prompt(&mut self.stats);
        let index = r.sample(&mut self.stats, end);
        let finish = r.finish_reason(self.cfg.max_model_len);
        let cached = r.cached_hit_tokens;
        if let Some(reason) = finish {
            self.finish(id, reason, end);
        }
        Some(Emitted {
            id,
            index,
            finish,
            cached,
        })
    }

    /// Records a finished request and frees its blocks (the caller removes it from the queues).
    fn finish(&mut self, id: ReqId, reason: FinishReason, end: f64) {
        self.release_blocks(id);
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        r.finished = true;
        r.observe_finished(&mut self.stats.hist, end);
        self.stats.count_finished(reason);
        if reason == FinishReason::Abort {
            self.reqs.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::preset;

    fn req(prompt: u32, max_tokens: u32, ignore_eos: bool) -> NewRequest {
        NewRequest {
            prompt_tokens: prompt,
            template_tokens: 24,
            prompt_key: 42,
            block_keys: std::sync::Arc::from([]),
            max_tokens,
            max_tokens_param: Some(max_tokens),
            ignore_eos,
            n: 1,
        }
    }

    fn run_to_idle(e: &mut Engine, mut now: f64) -> (f64, Vec<Emitted>) {
        let mut all = Vec::new();
        while let Some(plan) = e.schedule(now) {
            now += plan.duration;
            e.complete(&plan, now, &mut all);
        }
        (now, all)
    }

    #[test]
    fn l4_memory_plan_matches_the_reference_deployment() {
        let e = Engine::new(&preset("l4-qwen2.5-3b").unwrap(), 1).unwrap();
        // Reference: FB used 9194 MiB of 22565; ~4,100 blocks (3,400–4,700 plausible).
        assert!(
            (e.memory.fb_used_mib - 9194.0).abs() < 5.0,
            "{}",
            e.memory.fb_used_mib
        );
        assert!(
            (3400..=4700).contains(&e.memory.num_gpu_blocks),
            "{}",
            e.memory.num_gpu_blocks
        );
    }

    #[test]
    fn a_request_produces_exactly_max_tokens_with_ignore_eos() {
        let mut e = Engine::new(&preset("l4-qwen2.5-3b").unwrap(), 1).unwrap();
        let id = e.add(0.0, req(55, 20, true));
        let (_, out) = run_to_idle(&mut e, 0.0);
        assert_eq!(out.len(), 20);
        assert!(out.iter().all(|x| x.id == id));
        assert_eq!(out.last().unwrap().finish, Some(FinishReason::Length));
        assert_eq!(e.stats.generation_tokens, 20);
        assert_eq!(e.stats.prompt_tokens, 55);
        assert_eq!(e.stats.finished[1], 1);
        assert_eq!(e.kv.used(), 0, "blocks freed");
        assert!(!e.has_work());
    }

    #[test]
    fn running_is_capped_by_max_num_seqs() {
        let mut e = Engine::new(&preset("l4-qwen2.5-3b").unwrap(), 1).unwrap();
        for _ in 0..32 {
            e.add(0.0, req(55, 100, true));
        }
        let plan = e.schedule(0.0).unwrap();
        assert_eq!(plan.items.len(), 16);
        assert_eq!(e.num_running(), 16);
        assert_eq!(e.num_waiting(), 16);
        assert_eq!(e.stats.waiting, 16);
    }

    #[test]
    fn long_prompts_are_chunked_by_the_token_budget() {
        let mut p = preset("l4-qwen2.5-3b").unwrap();
        p.engine.max_num_batched_tokens = 512;
        let mut e = Engine::new(&p, 1).unwrap();
        e.add(0.0, req(2000, 5, true));
        let mut steps = 0;
        let mut now = 0.0;
        let mut out = Vec::new();
        while out.is_empty() {
            let plan = e.schedule(now).unwrap();
            assert!(plan.new_tokens <= 512);
            now += plan.duration;
            e.complete(&plan, now, &mut out);
            steps += 1;
        }
        assert_eq!(steps, 4, "2000 tokens in 512-token chunks");
    }

    #[test]
    fn kv_exhaustion_preempts_the_newest_request() {
        let mut p = preset("l4-llama3.1-8b").unwrap();
        p.engine.max_num_seqs = 64;
        let mut e = Engine::new(&p, 1).unwrap();
        for i in 0..40 {
            let mut r = req(1500, 2000, true);
            r.prompt_key = i;
            e.add(0.0, r);
        }
        let (_, out) = run_to_idle(&mut e, 0.0);
        assert!(e.stats.preemptions > 0, "no preemption");
        assert_eq!(out.iter().filter(|x| x.finish.is_some()).count(), 40);
        assert_eq!(e.kv.used(), 0);
        // Per finished request: one observation each, summing to the engine's counter.
        let per_request = &e.stats.hist.num_preemptions;
        assert_eq!(per_request.count, 40);
        assert_eq!(per_request.sum, e.stats.preemptions as f64);
    }

    #[test]
    fn identical_prompts_hit_the_prefix_cache() {
        let mut e = Engine::new(&preset("l4-qwen2.5-3b").unwrap(), 1).unwrap();
        e.add(0.0, req(100, 3, true));
        let (now, _) = run_to_idle(&mut e, 0.0);
        e.add(now, req(100, 3, true));
        run_to_idle(&mut e, now);
        assert_eq!(e.stats.prefix_queries, 200);
        assert_eq!(
            e.stats.prefix_hits, 96,
            "6 full blocks of the second prompt hit"
        );
    }

    #[test]
    fn abort_frees_blocks_and_counts() {
        let mut e = Engine::new(&preset("l4-qwen2.5-3b").unwrap(), 1).unwrap();
        let id = e.add(0.0, req(55, 100, true));
        let plan = e.schedule(0.0).unwrap();
        let mut out = Vec::new();
        e.complete(&plan, plan.duration, &mut out);
        e.abort(id, 1.0);
        assert_eq!(e.kv.used(), 0);
        assert_eq!(e.stats.finished[2], 1);
        assert!(!e.has_work());
        assert!(e.schedule(2.0).is_none());
    }

    #[test]
    fn impossible_configs_are_rejected_with_the_fix() {
        let mut p = preset("l4-qwen2.5-3b").unwrap();
        p.engine.gpu_memory_utilization = 0.2;
        let err = Engine::new(&p, 1).unwrap_err().to_string();
        assert!(err.contains("--gpu-memory-utilization"), "{err}");
        let mut p = preset("l4-qwen2.5-3b").unwrap();
        p.engine.max_model_len = 200_000;
        let err = Engine::new(&p, 1).unwrap_err().to_string();
        assert!(err.contains("--max-model-len"), "{err}");
    }
}
