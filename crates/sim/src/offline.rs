//! Drives the engine in simulated time, with no sleeping: a 150 s load test runs in milliseconds.
//!
//! [`run_closed_loop`] reproduces the reference method (N clients, each sending its next request
//! as soon as the last one finishes) and samples what a 1 s scrape of `/metrics` and dcgm-exporter
//! would see. Used by calibration tests, and by `whatif` later.

use crate::dcgm::{DcgmReading, DcgmState};
use crate::engine::{Emitted, Engine, NewRequest};
use llmscope_diagnosis::{Concept, EngineFacts, Input, KvCacheConfig, LoadFacts, Signal};

/// A closed-loop workload.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedLoop {
    pub clients: u32,
    pub prompt_tokens: u32,
    pub template_tokens: u32,
    pub max_tokens: u32,
    pub ignore_eos: bool,
    /// Every request has its own prompt (no prefix-cache sharing beyond the chat template).
    pub unique_prompts: bool,
    /// How long clients keep sending (after the idle baseline).
    pub duration_s: f64,
    /// Scrape interval of both exporters.
    pub sample_every_s: f64,
    /// Idle time sampled before the load starts and after the server drains.
    pub idle_s: f64,
    /// dcgm-exporter collect interval (its values only change this often).
    pub dcgm_every_s: f64,
}

impl ClosedLoop {
    /// The reference case of `docs/METHOD.md` for `duration_s`: 32 closed-loop clients, the short
    /// Korean prompt (~55 tokens with the chat template), max_tokens 512, 1 s scrapes.
    pub fn reference_case(duration_s: f64) -> ClosedLoop {
        ClosedLoop {
            clients: 32,
            prompt_tokens: 55,
            template_tokens: 24,
            max_tokens: 512,
            ignore_eos: false,
            unique_prompts: false,
            duration_s,
            sample_every_s: 1.0,
            idle_s: 0.0,
            dcgm_every_s: 1.0,
        }
    }
}

/// What a scrape at time `t` sees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub t: f64,
    pub running: u32,
    pub waiting: u32,
    pub kv_usage: f64,
    pub preemptions: u64,
    pub generation_tokens: u64,
    pub step_tokens_sum: f64,
    pub step_count: u64,
    /// The dcgm-exporter fields as last collected.
    pub dcgm: DcgmReading,
}

/// The samples and totals of an offline run.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub samples: Vec<Sample>,
    pub completed: u64,
    /// When the clients started and stopped sending.
    pub load_window: (f64, f64),
}

impl Trace {
    /// Mean of `f` over samples with `t` in `[from, to)`.
    pub fn mean(&self, from: f64, to: f64, f: impl Fn(&Sample) -> f64) -> f64 {
        let xs: Vec<f64> = self
            .samples
            .iter()
            .filter(|s| s.t >= from && s.t < to)
            .map(f)
            .collect();
        if xs.is_empty() {
            f64::NAN
        } else {
            xs.iter().sum::<f64>() / xs.len() as f64
        }
    }
}

/// Takes the scrapes (and dcgm collections) that fall in `(.., until]`.
struct Scraper {
    dcgm: DcgmState,
    reading: DcgmReading,
    next_sample: f64,
    next_collect: f64,
    every: f64,
    dcgm_every: f64,
}

impl Scraper {
    fn new(engine: &Engine, w: &ClosedLoop) -> Self {
        let mut dcgm = DcgmState::new(engine);
        let reading = dcgm.collect(engine, 0.0, w.dcgm_every_s);
        Self {
            dcgm,
            reading,
            next_sample: 0.0,
            next_collect: w.dcgm_every_s,
            every: w.sample_every_s,
            dcgm_every: w.dcgm_every_s,
        }
    }

    fn until(&mut self, engine: &Engine, until: f64, trace: &mut Trace) {
        while self.next_sample <= until {
            let t = self.next_sample;
            while self.next_collect <= t {
                self.reading = self
                    .dcgm
                    .collect(engine, self.next_collect, self.dcgm_every);
                self.next_collect += self.dcgm_every;
            }
            let st = &engine.stats;
            trace.samples.push(Sample {
                t,
                running: st.running,
                waiting: st.waiting,
                kv_usage: st.kv_usage,
                preemptions: st.preemptions,
                generation_tokens: st.generation_tokens,
                step_tokens_sum: st.hist.iteration_tokens.sum,
                step_count: st.hist.iteration_tokens.count,
                dcgm: self.reading,
            });
            self.next_sample += self.every;
        }
    }
}

/// Runs `w` on `engine`: idle baseline, closed-loop load, drain, idle after.
pub fn run_closed_loop(engine: &mut Engine, w: &ClosedLoop) -> Trace {
    let mut key = 0u64;
    let mut request = || next_request(w, &mut key);
    let (start, stop) = (w.idle_s, w.idle_s + w.duration_s);
    let mut trace = Trace {
        samples: Vec::new(),
        completed: 0,
        load_window: (start, stop),
    };
    let mut scraper = Scraper::new(engine, w);
    scraper.until(engine, start - 1e-9, &mut trace);
    for _ in 0..w.clients {
        engine.add(start, request());
    }
    let now = run_until_drained(engine, &mut scraper, &mut trace, &mut request);
    scraper.until(engine, now + w.idle_s, &mut trace);
    trace
}

/// The workload's next request: all share prompt key 1 unless every prompt is unique, when
/// `key` counts them.
fn next_request(w: &ClosedLoop, key: &mut u64) -> NewRequest {
    NewRequest {
        prompt_tokens: w.prompt_tokens,
        template_tokens: w.template_tokens,
        prompt_key: if w.unique_prompts {
            *key += 1;
            *key
        } else {
            1
        },
        block_keys: std::sync::Arc::from([]),
        max_tokens: w.max_tokens,
        max_tokens_param: Some(w.max_tokens),
        ignore_eos: w.ignore_eos,
        n: 1,
    }
}

/// Steps the engine from the start of the load until it has nothing left to run, scraping as
/// it goes; until the load window closes, each finished request is replaced by a new one.
/// Returns when it drained.
fn run_until_drained(
    engine: &mut Engine,
    scraper: &mut Scraper,
    trace: &mut Trace,
    request: &mut impl FnMut() -> NewRequest,
) -> f64 {
    let (start, stop) = trace.load_window;
    let mut now = start;
    let mut out: Vec<Emitted> = Vec::new();
    while let Some(plan) = engine.schedule(now) {
        let end = now + plan.duration;
        scraper.until(engine, end.min(stop.max(now)).max(now), trace);
        out.clear();
        engine.complete(&plan, end, &mut out);
        let finished = out.iter().filter(|e| e.finish.is_some()).count();
        trace.completed += finished as u64;
        if end < stop {
            for _ in 0..finished {
                engine.add(end, request());
            }
        }
        now = end;
        scraper.until(engine, now, trace);
    }
    now
}

/// The engine's settings as the diagnosis reads them from a real server's flags and pages.
fn engine_facts(engine: &Engine) -> EngineFacts {
    EngineFacts {
        max_num_seqs: Some(engine.cfg.max_num_seqs),
        max_num_batched_tokens: Some(engine.cfg.max_num_batched_tokens),
        time_sliced: false,
        kv_cache: Some(KvCacheConfig {
            block_size: Some(engine.cfg.block_size),
            num_blocks: Some(u64::from(engine.memory.num_gpu_blocks)),
            size_tokens: Some(engine.memory.kv_tokens),
            gpu_memory_utilization: Some(engine.cfg.gpu_memory_utilization),
            prefix_caching: Some(engine.cfg.enable_prefix_caching),
            memory_bytes: engine.cfg.kv_cache_memory_bytes,
            ..KvCacheConfig::default()
        }),
    }
}

/// A concept, the metric it stands for, and how to read it from a [`Sample`].
type SampleField = (Concept, &'static str, fn(&Sample) -> f64);

/// The series a trace gives the diagnosis.
const SAMPLE_FIELDS: [SampleField; 13] = [
    (Concept::Running, "vllm:num_requests_running", |s| {
        s.running as f64
    }),
    (Concept::Waiting, "vllm:num_requests_waiting", |s| {
        s.waiting as f64
    }),
    (Concept::KvUsage, "vllm:kv_cache_usage_perc", |s| s.kv_usage),
    (Concept::Preemptions, "vllm:num_preemptions_total", |s| {
        s.preemptions as f64
    }),
    (
        Concept::GeneratedTokens,
        "vllm:generation_tokens_total",
        |s| s.generation_tokens as f64,
    ),
    (
        Concept::StepTokensSum,
        "vllm:iteration_tokens_total_sum",
        |s| s.step_tokens_sum,
    ),
    (
        Concept::StepCount,
        "vllm:iteration_tokens_total_count",
        |s| s.step_count as f64,
    ),
    (Concept::GpuUtil, "DCGM_FI_DEV_GPU_UTIL", |s| {
        s.dcgm.gpu_util as f64
    }),
    (Concept::MemCopyUtil, "DCGM_FI_DEV_MEM_COPY_UTIL", |s| {
        s.dcgm.mem_copy_util as f64
    }),
    (
        Concept::GrEngineActive,
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        |s| s.dcgm.gr_engine_active,
    ),
    (Concept::DramActive, "DCGM_FI_PROF_DRAM_ACTIVE", |s| {
        s.dcgm.dram_active
    }),
    (
        Concept::TensorActive,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        |s| s.dcgm.pipe_tensor_active,
    ),
    (Concept::PowerWatts, "DCGM_FI_DEV_POWER_USAGE", |s| {
        s.dcgm.power_w
    }),
];

/// The trace as the diagnosis reads it (what `llmscope run` builds from scrapes).
pub fn to_input(trace: &Trace, engine: &Engine, load: LoadFacts) -> Input {
    let mut input = Input {
        engine: engine_facts(engine),
        load,
        scrape_interval_s: trace.samples.get(1).map(|s| s.t - trace.samples[0].t),
        ..Input::default()
    };
    for (concept, name, f) in SAMPLE_FIELDS {
        let points = trace.samples.iter().map(|s| (s.t, f(s))).collect();
        input
            .signals
            .insert(concept, Signal::new(format!("sim {name}"), points));
    }
    input
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::preset;

    /// The reference case of `docs/METHOD.md`: L4 + Qwen2.5-3B, --max-num-seqs 16, 32 closed-loop
    /// clients, the short Korean prompt (~55 tokens with the chat template), max_tokens 512.
    #[test]
    fn l4_reference_case_is_reproduced() {
        let mut e = Engine::new(&preset("l4-qwen2.5-3b").unwrap(), 1).unwrap();
        let w = ClosedLoop::reference_case(150.0);
        let t = run_closed_loop(&mut e, &w);
        let running = t.mean(20.0, 150.0, |s| s.running as f64);
        let waiting = t.mean(20.0, 150.0, |s| s.waiting as f64);
        let kv = t.mean(20.0, 150.0, |s| s.kv_usage);
        let util = t.mean(20.0, 150.0, |s| s.dcgm.gpu_util as f64);
        let power = t.mean(20.0, 150.0, |s| s.dcgm.power_w);
        assert!((running - 16.0).abs() < 0.5, "running {running}");
        assert!((14.5..=16.5).contains(&waiting), "waiting {waiting}");
        assert!((0.01..=0.05).contains(&kv), "kv {kv}");
        assert!((25.0..=40.0).contains(&util), "util {util}");
        assert!((38.0..=50.0).contains(&power), "power {power}");
    }

    #[test]
    fn a_healthy_host_keeps_the_gpu_busy() {
        // Same load with vLLM's normal host overhead: ~90 % util (`docs/SOURCES.md` §sim-l4, A').
        let mut p = preset("l4-qwen2.5-3b").unwrap();
        p.constants.host_step_s = 0.003;
        let mut e = Engine::new(&p, 1).unwrap();
        let w = ClosedLoop::reference_case(60.0);
        let t = run_closed_loop(&mut e, &w);
        let util = t.mean(10.0, 60.0, |s| s.dcgm.gpu_util as f64);
        assert!(util > 80.0, "util {util}");
    }

    #[test]
    fn long_prompts_and_answers_fill_the_kv_cache() {
        // Scenario C of `docs/SOURCES.md` §sim-l4: KV-bound, preemptions.
        let mut p = preset("l4-qwen2.5-3b").unwrap();
        p.engine.max_num_seqs = 64;
        p.constants.host_step_s = 0.003;
        let mut e = Engine::new(&p, 1).unwrap();
        let w = ClosedLoop {
            clients: 64,
            prompt_tokens: 2000,
            template_tokens: 24,
            max_tokens: 800,
            ignore_eos: true,
            unique_prompts: true,
            duration_s: 120.0,
            sample_every_s: 1.0,
            idle_s: 0.0,
            dcgm_every_s: 1.0,
        };
        let t = run_closed_loop(&mut e, &w);
        let kv = t.mean(30.0, 120.0, |s| s.kv_usage);
        assert!(kv > 0.9, "kv {kv}");
        assert!(e.stats.preemptions > 0);
        let running = t.mean(30.0, 120.0, |s| s.running as f64);
        assert!(running < 64.0, "running {running}");
    }

    #[test]
    fn same_seed_same_trace() {
        let p = preset("l4-qwen2.5-3b").unwrap();
        let w = ClosedLoop {
            clients: 8,
            ..ClosedLoop::reference_case(20.0)
        };
        let a = run_closed_loop(&mut Engine::new(&p, 9).unwrap(), &w);
        let b = run_closed_loop(&mut Engine::new(&p, 9).unwrap(), &w);
        assert_eq!(a, b);
    }
}
