//! The capacity search (`llmscope_diagnosis::capacity`) against a brute-force sweep on the
//! simulator's presets: every load from 1 to the largest measured offline, the knee read from
//! all of them, and the search — measuring only the loads it asks for, from the same engine —
//! must land within one rung of it. The engine's own generated-token counter gives the output
//! throughput, and its own gauges say whether a stage held the batch at its cap (running at the
//! cap with a queue) — never llmscope's signals.

use llmscope_diagnosis::capacity::{Knee, Next, Search, Served};
use llmscope_sim::engine::Engine;
use llmscope_sim::offline::{ClosedLoop, run_closed_loop};
use llmscope_sim::preset::preset;
use std::cell::RefCell;
use std::collections::BTreeMap;

/// Output tokens per second of `clients` closed-loop clients, over the steady window, from the
/// engine's own generated-token counter; and whether the engine held its batch at the cap there
/// with requests waiting. (Preemptions do not pin the batch: in the KV-starved cell below they
/// start at 16 clients while the output still grows to 19.)
fn output_tok_s(name: &str, cap: u32, kv_tokens: Option<u32>, clients: u32) -> (f64, bool) {
    let mut p = preset(name).expect("a preset");
    p.engine.max_num_seqs = cap;
    if let Some(tokens) = kv_tokens {
        p.engine.kv_cache_memory_bytes =
            Some((p.model.kv_bytes_per_token() * f64::from(tokens)) as u64);
        p.engine.max_model_len = 1024;
    }
    let w = ClosedLoop {
        clients,
        prompt_tokens: 64,
        template_tokens: 24,
        max_tokens: 64,
        ignore_eos: true,
        unique_prompts: true,
        duration_s: 30.0,
        sample_every_s: 0.5,
        idle_s: 2.0,
        dcgm_every_s: 1.0,
    };
    let mut e = Engine::new(&p, 1).expect("an engine");
    let trace = run_closed_loop(&mut e, &w);
    let (start, stop) = trace.load_window;
    let inside: Vec<_> = trace
        .samples
        .iter()
        .filter(|s| s.t >= start + 10.0 && s.t <= stop - 1.0)
        .collect();
    let (a, b) = (inside.first().unwrap(), inside.last().unwrap());
    let mean = |f: fn(&&llmscope_sim::offline::Sample) -> u32| {
        inside.iter().map(|s| f64::from(f(s))).sum::<f64>() / inside.len() as f64
    };
    let saturated = mean(|s| s.running) >= 0.95 * f64::from(cap) && mean(|s| s.waiting) >= 0.5;
    let tok_s = (b.generation_tokens - a.generation_tokens) as f64 / (b.t - a.t);
    (tok_s, saturated)
}

/// The search run to its end against `measure`; the loads it asked for and its knee.
fn search(max: u32, measure: impl Fn(u32) -> (f64, bool)) -> (Vec<u32>, Knee) {
    let mut s = Search::new(1, max);
    let mut asked = Vec::new();
    loop {
        match s.next() {
            Next::Measure(l) => {
                asked.push(l);
                let (output_tok_s, saturated) = measure(l);
                let served = Served {
                    output_tok_s,
                    goodput_rps: None,
                    saturated,
                };
                s.record(l, served);
            }
            Next::Done(k) => return (asked, k.expect("a knee")),
        }
        assert!(asked.len() < 40, "the search does not end: {asked:?}");
    }
}

#[test]
fn the_search_lands_within_one_rung_of_the_brute_force_knee_on_every_preset() {
    // (preset, --max-num-seqs, KV pool in tokens): the cap binds in the first six; in the last
    // a 1,600-token pool holds a dozen or so requests of up to 152 tokens, so KV capacity bends
    // the curve long before the cap of 48.
    let cells = [
        ("l4-qwen2.5-3b", 16, None),
        ("l4-qwen2.5-3b", 8, None),
        ("h100-llama3.1-8b", 16, None),
        ("h200-qwen2.5-7b", 8, None),
        ("cpu-tiny", 4, None),
        ("l4-llama3.1-8b", 12, None),
        ("l4-qwen2.5-3b", 48, Some(1_600)),
    ];
    let mut table = String::new();
    for (name, cap, kv) in cells {
        let max = if kv.is_some() { 32 } else { 3 * cap };
        let memo = RefCell::new(BTreeMap::new());
        let measure = |l: u32| {
            *memo
                .borrow_mut()
                .entry(l)
                .or_insert_with(|| output_tok_s(name, cap, kv, l))
        };
        let fine: Vec<f64> = (1..=max).map(|l| measure(l).0).collect();
        let peak = fine.iter().copied().fold(f64::MIN, f64::max);
        let brute = (1..=max)
            .find(|l| fine[*l as usize - 1] >= 0.95 * peak)
            .unwrap();
        // A fresh memo would measure again; the engine is deterministic, so the search reads
        // the same values at the loads it asks for.
        let (asked, knee) = search(max, measure);
        table += &format!(
            "{name} cap {cap} kv {kv:?}: brute-force knee {brute}, search {} (asked {asked:?})\n",
            knee.load
        );
        assert!(
            knee.load.abs_diff(brute) <= 1,
            "{name} cap {cap}: the search's knee {} is more than one rung from {brute}\n{table}",
            knee.load
        );
        // Where the batch cap is what bends the curve, the knee is at the cap.
        assert!(
            kv.is_some() || knee.load.abs_diff(cap) <= 1,
            "{name} cap {cap}: knee {} is not at the cap\n{table}",
            knee.load
        );
        assert!(knee.exact(), "{knee:?}");
        assert!(
            kv.is_none() || knee.load < cap / 2,
            "{name}: the KV pool bends the curve long before the cap\n{table}"
        );
        assert!(asked.len() < max as usize / 2 + 4, "{name}: {asked:?}");
    }
}
