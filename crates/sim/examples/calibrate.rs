//! Prints the L4 reference case as the simulator reproduces it (offline, simulated time):
//! `cargo run -q -p llmscope-sim --example calibrate [output_mean]`.
#![allow(clippy::print_stdout)]

use llmscope_sim::engine::Engine;
use llmscope_sim::offline::{ClosedLoop, run_closed_loop};
use llmscope_sim::preset::preset;

fn main() {
    let mut p = preset("l4-qwen2.5-3b").expect("preset");
    if let Some(mean) = std::env::args().nth(1).and_then(|a| a.parse().ok()) {
        p.constants.output_mean_tokens = mean;
    }
    let mut e = Engine::new(&p, 1).expect("engine");
    let w = ClosedLoop::reference_case(150.0);
    let t = run_closed_loop(&mut e, &w);
    let (a, b) = (20.0, 150.0);
    let max_kv = t
        .samples
        .iter()
        .filter(|s| s.t >= a)
        .map(|s| s.kv_usage)
        .fold(0.0, f64::max);
    println!(
        "L4 + Qwen2.5-3B, --max-num-seqs 16, 32 clients, 150 s (steady 20–150 s), output mean {}",
        p.constants.output_mean_tokens
    );
    println!("running        {:.1}", t.mean(a, b, |s| s.running as f64));
    println!("waiting        {:.1}", t.mean(a, b, |s| s.waiting as f64));
    println!(
        "KV usage       {:.2}% mean, {:.2}% max",
        100.0 * t.mean(a, b, |s| s.kv_usage),
        100.0 * max_kv
    );
    println!(
        "GPU util       {:.1}%",
        t.mean(a, b, |s| s.dcgm.gpu_util as f64)
    );
    println!("power          {:.1} W", t.mean(a, b, |s| s.dcgm.power_w));
    println!(
        "FB used        {} MiB of {}",
        t.samples[0].dcgm.fb_used_mib, e.gpu.memory_mib
    );
    println!("KV blocks      {}", e.memory.num_gpu_blocks);
    let tok = (t.samples.last().unwrap().generation_tokens as f64
        - t.samples
            .iter()
            .find(|s| s.t >= a)
            .unwrap()
            .generation_tokens as f64)
        / (b - a);
    println!("gen tok/s      {tok:.0}");
}
