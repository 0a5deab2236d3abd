//! The regime matrix of issue 22 on the simulator: the real tier's cells (`--max-num-seqs` 2…32 ×
//! clients at ½, 1, 2, 4× the cap × short and long answers, a small token budget against long
//! prompts, a scarce KV pool), on `cpu-tiny` and the GPU presets, offline (simulated time). The
//! step budget is never told to llmscope (issue 51): it reads it from the engine's steps.
//!
//! Each cell's expected verdict comes from an oracle that reads the simulated engine's own state
//! at each scrape (running, waiting, KV, preemptions, tokens per step, the GPU's busy time) and
//! applies `docs/METHOD.md` step 8 — never from llmscope's signals or findings.
//! `LLMSCOPE_MATRIX_TABLE` appends the table to a file (`scripts/bench-regime-matrix.sh` prints it beside the real one).

use llmscope_diagnosis::{LoadFacts, diagnose};
use llmscope_sim::engine::Engine;
use llmscope_sim::offline::{ClosedLoop, Sample, Trace, run_closed_loop, to_input};
use llmscope_sim::preset::preset;
use std::io::Write;

/// One cell: a preset with its overrides and a closed-loop load.
#[derive(Debug, Clone, Copy)]
struct Cell {
    preset: &'static str,
    cap: u32,
    clients: u32,
    prompt: u32,
    answers: u32,
    budget: Option<u32>,
    /// A KV pool of this many tokens (4 MiB on the real tier's tiny model).
    kv_tokens: Option<u32>,
}

/// What the simulated engine's own state says over the loaded window.
#[derive(Debug, Default)]
struct Reading {
    waiting: f64,
    waiting_share: f64,
    running_max: f64,
    kv_max: f64,
    preemptions: f64,
    tokens_per_step: f64,
    busy: f64,
    tensor: f64,
    dram: f64,
}

fn read(t: &Trace, from: f64, to: f64) -> Reading {
    let inside: Vec<&Sample> = t
        .samples
        .iter()
        .filter(|s| s.t >= from && s.t <= to)
        .collect();
    let (Some(a), Some(b)) = (inside.first(), inside.last()) else {
        return Reading::default();
    };
    let n = inside.len() as f64;
    let mean = |f: &dyn Fn(&Sample) -> f64| inside.iter().map(|s| f(s)).sum::<f64>() / n;
    let steps = (b.step_count - a.step_count) as f64;
    Reading {
        waiting: mean(&|s| f64::from(s.waiting)),
        waiting_share: mean(&|s| f64::from(u8::from(s.waiting > 0))),
        running_max: inside
            .iter()
            .map(|s| f64::from(s.running))
            .fold(0.0, f64::max),
        kv_max: inside.iter().map(|s| s.kv_usage).fold(0.0, f64::max),
        preemptions: (b.preemptions - a.preemptions) as f64,
        tokens_per_step: if steps > 0.0 {
            (b.step_tokens_sum - a.step_tokens_sum) / steps
        } else {
            0.0
        },
        busy: mean(&|s| s.dcgm.gpu_util as f64 / 100.0),
        tensor: mean(&|s| s.dcgm.pipe_tensor_active),
        dram: mean(&|s| s.dcgm.dram_active),
    }
}

/// `docs/METHOD.md` step 8 on the engine's own state: a queue and what stopped admission, or no
/// queue.
fn oracle(r: &Reading, c: &Cell, cpu: bool) -> &'static str {
    let cap = f64::from(c.cap);
    if r.waiting >= 0.5 && r.waiting_share >= 0.5 {
        if r.kv_max >= 0.9 || r.preemptions > 0.0 {
            return "kv_cache_capacity";
        }
        if c.budget
            .is_some_and(|b| r.tokens_per_step >= 0.9 * f64::from(b))
        {
            return "token_budget";
        }
        if !cpu && r.busy >= 0.75 {
            if r.dram >= 0.6 && r.tensor < 0.2 {
                return "memory_bandwidth";
            }
            return "gpu_compute";
        }
        if r.running_max >= cap {
            return "batch_limit";
        }
        return "unexplained_queue";
    }
    if c.clients <= c.cap {
        return "load_not_reached";
    }
    "unexplained_no_queue"
}

fn cells() -> Vec<Cell> {
    let mut out = Vec::new();
    for preset in [
        "cpu-tiny",
        "l4-qwen2.5-3b",
        "h100-llama3.1-8b",
        "h200-qwen2.5-7b",
    ] {
        for cap in [2, 4, 8, 16, 32] {
            for mult in [0.5, 1.0, 2.0, 4.0] {
                for answers in [32, 128] {
                    out.push(Cell {
                        preset,
                        cap,
                        clients: ((f64::from(cap) * mult).round() as u32).max(1),
                        prompt: 40,
                        answers,
                        budget: None,
                        kv_tokens: None,
                    });
                }
            }
        }
        // A prefill budget far below the prompts, and a KV pool far too small.
        for clients in [16, 32] {
            out.push(Cell {
                preset,
                cap: 16,
                clients,
                prompt: 1000,
                answers: 32,
                budget: Some(128),
                kv_tokens: None,
            });
        }
        // Issue 51's case: a 256-token budget under a cap of 64 it never lets fill.
        out.push(Cell {
            preset,
            cap: 64,
            clients: 24,
            prompt: 1200,
            answers: 32,
            budget: Some(256),
            kv_tokens: None,
        });
        for answers in [64, 128] {
            out.push(Cell {
                preset,
                cap: 16,
                clients: 32,
                prompt: 40,
                answers,
                budget: None,
                kv_tokens: Some(2048),
            });
        }
    }
    out
}

/// Runs one cell offline; the oracle's verdict and llmscope's.
fn measure(c: &Cell) -> (String, String, String) {
    let mut p = preset(c.preset).expect("a preset");
    p.engine.max_num_seqs = c.cap;
    if let Some(b) = c.budget {
        p.engine.max_num_batched_tokens = b;
    }
    if let Some(tokens) = c.kv_tokens {
        p.engine.kv_cache_memory_bytes =
            Some((p.model.kv_bytes_per_token() * f64::from(tokens)) as u64);
        p.engine.max_model_len = 1024;
    }
    let cpu = c.preset.starts_with("cpu");
    let w = ClosedLoop {
        clients: c.clients,
        prompt_tokens: c.prompt,
        template_tokens: 24,
        max_tokens: c.answers,
        ignore_eos: true,
        unique_prompts: true,
        duration_s: 40.0,
        sample_every_s: 0.5,
        idle_s: 5.0,
        dcgm_every_s: 1.0,
    };
    let mut e = Engine::new(&p, 1).expect("an engine");
    let trace = run_closed_loop(&mut e, &w);
    let (start, stop) = trace.load_window;
    let reading = read(&trace, start + 10.0, stop - 2.0);
    let want = oracle(&reading, c, cpu);
    let load = LoadFacts {
        concurrency: Some(c.clients),
        ..LoadFacts::default()
    };
    // The step budget is not told (issue 51): llmscope reads it from the engine's steps.
    let mut input = to_input(&trace, &e, load);
    input.engine.max_num_batched_tokens = None;
    let d = diagnose(&input);
    let line = format!(
        "waiting {:.1} ({:.0}% of scrapes) running max {:.0} KV max {:.1}% preempt {:.0} tok/step {:.0} busy {:.0}%",
        reading.waiting,
        reading.waiting_share * 100.0,
        reading.running_max,
        reading.kv_max * 100.0,
        reading.preemptions,
        reading.tokens_per_step,
        reading.busy * 100.0
    );
    (
        want.to_owned(),
        format!(
            "{} ({:.2})",
            d.verdict.bottleneck.as_str(),
            d.verdict.confidence
        ),
        line,
    )
}

#[test]
fn the_simulators_regime_matrix_gets_the_oracles_verdicts() {
    let mut table = String::new();
    let mut wrong = Vec::new();
    let mut unformed = 0;
    for c in cells() {
        let (want, got, line) = measure(&c);
        let extra = match (c.budget, c.kv_tokens) {
            (Some(b), _) => format!(", budget {b}, {}-token prompts", c.prompt),
            (_, Some(kv)) => format!(", KV pool {kv} tokens"),
            _ => String::new(),
        };
        let formed = !want.starts_with("unexplained");
        let agree = got.starts_with(&format!("{want} "));
        table += &format!(
            "| {} | {} | {} | {}{extra} | {want} | {got} | {} | {line} |\n",
            c.preset,
            c.cap,
            c.clients,
            c.answers,
            match (formed, agree) {
                (false, _) => "not formed",
                (true, true) => "yes",
                (true, false) => "NO",
            }
        );
        if !formed {
            unformed += 1;
        } else if !agree {
            wrong.push(format!("{c:?}: oracle {want}, llmscope {got} — {line}"));
        }
    }
    if let Ok(path) = std::env::var("LLMSCOPE_MATRIX_TABLE")
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    {
        let _ = f.write_all(table.as_bytes());
    }
    let cells = cells().len();
    assert!(
        unformed * 10 <= cells,
        "{unformed} of {cells} cells did not form:\n{table}"
    );
    assert!(
        wrong.is_empty(),
        "{} of {cells} cells disagree with the oracle:\n{}\n\n{table}",
        wrong.len(),
        wrong.join("\n")
    );
}
