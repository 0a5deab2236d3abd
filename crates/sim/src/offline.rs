//! Drives the engine in simulated time, with no sleeping: a 150 s load test runs in milliseconds.
//!
//! [`run_closed_loop`] reproduces the reference method (N clients, each sending its next request
//! as soon as the last one finishes) and samples what a 1 s scrape of `/metrics` and dcgm-exporter
//! would see. Used by calibration tests, and by `whatif` later.

use crate::dcgm::DcgmState;
use crate::engine::{Emitted, Engine, NewRequest};

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
    pub duration_s: f64,
    pub sample_every_s: f64,
}

/// What a scrape at time `t` sees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub t: f64,
    pub running: u32,
    pub waiting: u32,
    pub kv_usage: f64,
    /// DCGM GPU_UTIL (%), read fresh at `t` (a 1 s collect interval).
    pub gpu_util: i64,
    pub power_w: f64,
    pub generation_tokens: u64,
}

/// The samples and totals of an offline run.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub samples: Vec<Sample>,
    pub completed: u64,
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

/// Runs `w` on `engine` from time 0.
pub fn run_closed_loop(engine: &mut Engine, w: &ClosedLoop) -> Trace {
    let mut key = 0u64;
    let mut request = || NewRequest {
        prompt_tokens: w.prompt_tokens,
        template_tokens: w.template_tokens,
        prompt_key: if w.unique_prompts {
            key += 1;
            key
        } else {
            1
        },
        max_tokens: w.max_tokens,
        max_tokens_param: Some(w.max_tokens),
        ignore_eos: w.ignore_eos,
        n: 1,
    };
    for _ in 0..w.clients {
        engine.add(0.0, request());
    }
    let mut dcgm = DcgmState::new(engine);
    let mut trace = Trace {
        samples: Vec::new(),
        completed: 0,
    };
    let mut now = 0.0;
    let mut next_sample = w.sample_every_s;
    let mut out: Vec<Emitted> = Vec::new();
    while now < w.duration_s {
        let Some(plan) = engine.schedule(now) else {
            break;
        };
        let end = now + plan.duration;
        while next_sample <= end && next_sample <= w.duration_s {
            let d = dcgm.collect(engine, next_sample, w.sample_every_s);
            trace.samples.push(Sample {
                t: next_sample,
                running: engine.stats.running,
                waiting: engine.stats.waiting,
                kv_usage: engine.stats.kv_usage,
                gpu_util: d.gpu_util,
                power_w: d.power_w,
                generation_tokens: engine.stats.generation_tokens,
            });
            next_sample += w.sample_every_s;
        }
        out.clear();
        engine.complete(&plan, end, &mut out);
        for e in &out {
            if e.finish.is_some() {
                trace.completed += 1;
                engine.add(end, request());
            }
        }
        now = end;
    }
    trace
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::preset;

    /// The reference case of DESIGN §2: L4 + Qwen2.5-3B, --max-num-seqs 16, 32 closed-loop
    /// clients, the short Korean prompt (~55 tokens with the chat template), max_tokens 512.
    #[test]
    fn l4_reference_case_is_reproduced() {
        let mut e = Engine::new(&preset("l4-qwen2.5-3b").unwrap(), 1).unwrap();
        let w = ClosedLoop {
            clients: 32,
            prompt_tokens: 55,
            template_tokens: 24,
            max_tokens: 512,
            ignore_eos: false,
            unique_prompts: false,
            duration_s: 150.0,
            sample_every_s: 1.0,
        };
        let t = run_closed_loop(&mut e, &w);
        let running = t.mean(20.0, 150.0, |s| s.running as f64);
        let waiting = t.mean(20.0, 150.0, |s| s.waiting as f64);
        let kv = t.mean(20.0, 150.0, |s| s.kv_usage);
        let util = t.mean(20.0, 150.0, |s| s.gpu_util as f64);
        let power = t.mean(20.0, 150.0, |s| s.power_w);
        assert!((running - 16.0).abs() < 0.5, "running {running}");
        assert!((14.5..=16.5).contains(&waiting), "waiting {waiting}");
        assert!((0.01..=0.05).contains(&kv), "kv {kv}");
        assert!((25.0..=40.0).contains(&util), "util {util}");
        assert!((38.0..=50.0).contains(&power), "power {power}");
    }

    #[test]
    fn a_healthy_host_keeps_the_gpu_busy() {
        // Same load with vLLM's normal host overhead: ~90 % util (simulator-model.md §6, A').
        let mut p = preset("l4-qwen2.5-3b").unwrap();
        p.constants.host_step_s = 0.003;
        let mut e = Engine::new(&p, 1).unwrap();
        let w = ClosedLoop {
            clients: 32,
            prompt_tokens: 55,
            template_tokens: 24,
            max_tokens: 512,
            ignore_eos: false,
            unique_prompts: false,
            duration_s: 60.0,
            sample_every_s: 1.0,
        };
        let t = run_closed_loop(&mut e, &w);
        let util = t.mean(10.0, 60.0, |s| s.gpu_util as f64);
        assert!(util > 80.0, "util {util}");
    }

    #[test]
    fn long_prompts_and_answers_fill_the_kv_cache() {
        // Scenario C of simulator-model.md §6: KV-bound, preemptions.
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
            prompt_tokens: 55,
            template_tokens: 24,
            max_tokens: 512,
            ignore_eos: false,
            unique_prompts: false,
            duration_s: 20.0,
            sample_every_s: 1.0,
        };
        let a = run_closed_loop(&mut Engine::new(&p, 9).unwrap(), &w);
        let b = run_closed_loop(&mut Engine::new(&p, 9).unwrap(), &w);
        assert_eq!(a, b);
    }
}
