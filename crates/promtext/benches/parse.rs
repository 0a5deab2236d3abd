//! Parser throughput on a realistic mixed page: the vLLM fixture replicated over 8 engines and 2
//! models, plus the dcgm-exporter fixture over 4 nodes of 8 GPUs (each family appears once, with
//! the series of every variant). No criterion: a median of timed rounds is enough here and keeps
//! the build lean.
//!
//! Prints the page size and the median MB/s (1 MB = 10^6 bytes) of: the streaming API, the
//! streaming API plus iterating every label, and `parse_families`. If `PROMTEXT_BENCH_PAGE` is set,
//! the page is written there first (for `scripts/bench_promtext_python.py`).
//! `PROMTEXT_BENCH_ONLY=streaming|streaming+labels|families` runs just one measurement.
#![allow(clippy::print_stdout)]

use promtext::{Event, ParseOptions, Parser, parse_families};
use std::hint::black_box;
use std::time::{Duration, Instant};

const VLLM: &str = include_str!("../tests/fixtures/vllm-0.26.prom");
const DCGM: &str = include_str!("../tests/fixtures/dcgm-4.5.prom");
const MODELS: [&str; 2] = ["Qwen/Qwen3-8B", "meta-llama/Llama-3.3-70B-Instruct"];
const ROUNDS: usize = 21;
const ROUND_TIME: Duration = Duration::from_millis(100);

/// Splits a page into blocks that each start at a `# HELP` line (leading comments dropped).
fn blocks(page: &str) -> Vec<Vec<&str>> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    for line in page.lines() {
        if line.starts_with("# HELP ") {
            out.push(Vec::new());
        }
        if let Some(block) = out.last_mut() {
            block.push(line);
        }
    }
    out
}

/// Writes each block once, with its sample lines repeated through every label rewrite in `variants`.
fn replicate(out: &mut String, page: &str, variants: &[Vec<(String, String)>]) {
    for block in blocks(page) {
        let (meta, samples): (Vec<&str>, Vec<&str>) =
            block.iter().partition(|l| l.starts_with('#'));
        meta.iter().for_each(|l| push_line(out, l));
        let varies = samples.iter().any(|l| {
            variants[0]
                .iter()
                .any(|(from, _)| l.contains(from.as_str()))
        });
        let variants = if varies { variants } else { &variants[..1] };
        for rewrites in variants {
            for line in &samples {
                let mut line = (*line).to_owned();
                for (from, to) in rewrites {
                    line = line.replace(from.as_str(), to);
                }
                push_line(out, &line);
            }
        }
    }
}

fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    out.push('\n');
}

fn build_page() -> String {
    let mut page = String::new();
    let vllm: Vec<Vec<(String, String)>> = (0..4)
        .map(|k| {
            vec![
                ("engine=\"0\"".into(), format!("engine=\"{}\"", 2 * k)),
                ("engine=\"1\"".into(), format!("engine=\"{}\"", 2 * k + 1)),
                (
                    format!("model_name=\"{}\"", MODELS[0]),
                    format!("model_name=\"{}\"", MODELS[k / 2]),
                ),
            ]
        })
        .collect();
    replicate(&mut page, VLLM, &vllm);
    let dcgm: Vec<Vec<(String, String)>> = (1..=4)
        .map(|h| {
            vec![(
                "Hostname=\"gpu-node-01\"".into(),
                format!("Hostname=\"gpu-node-{h:02}\""),
            )]
        })
        .collect();
    replicate(&mut page, DCGM, &dcgm);
    page
}

/// One way of consuming the page; returns something derived from it so it cannot be optimised out.
type Workload = fn(&[u8]) -> f64;

fn streaming(page: &[u8]) -> f64 {
    let mut acc = 0.0;
    for event in Parser::new(page, ParseOptions::lenient()) {
        if let Ok(Event::Sample(s)) = event {
            acc += s.value;
        }
    }
    acc
}

fn streaming_with_labels(page: &[u8]) -> f64 {
    let mut acc = 0.0;
    for event in Parser::new(page, ParseOptions::lenient()) {
        if let Ok(Event::Sample(s)) = event {
            acc += s.value + s.labels.iter().map(|l| l.value.raw().len()).sum::<usize>() as f64;
        }
    }
    acc
}

fn families(page: &[u8]) -> f64 {
    let (families, errors) = parse_families(page);
    (families.len() + errors.len()) as f64
}

/// MB/s over `ROUNDS` rounds of about `ROUND_TIME` each: the median and the best round (the
/// best shows what the code can do when the machine's other core is quiet).
struct Rates {
    median: f64,
    best: f64,
}

fn measure(page: &[u8], f: Workload) -> Rates {
    let start = Instant::now();
    black_box(f(black_box(page)));
    let once = start.elapsed().max(Duration::from_micros(1));
    let iters = (ROUND_TIME.as_secs_f64() / once.as_secs_f64())
        .ceil()
        .max(1.0) as usize;
    let megabytes = (page.len() * iters) as f64 / 1e6;
    let mut rates: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(f(black_box(page)));
            }
            megabytes / start.elapsed().as_secs_f64()
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    Rates {
        median: rates[ROUNDS / 2],
        best: rates[ROUNDS - 1],
    }
}

fn main() {
    let page = build_page();
    if let Ok(path) = std::env::var("PROMTEXT_BENCH_PAGE") {
        std::fs::write(&path, &page).unwrap_or_else(|e| panic!("writing {path}: {e}"));
    }
    let (fams, errors) = parse_families(page.as_bytes());
    assert!(
        errors.is_empty(),
        "bench page must parse cleanly: {:?}",
        errors.first()
    );
    let samples: usize = fams.iter().map(|f| f.samples.len()).sum();
    println!(
        "page: {} bytes, {} lines, {} families, {} samples",
        page.len(),
        page.lines().count(),
        fams.len(),
        samples
    );
    let bytes = page.as_bytes();
    // PROMTEXT_BENCH_ONLY=<name> runs one measurement (handy under a profiler).
    let only = std::env::var("PROMTEXT_BENCH_ONLY").ok();
    let runs: [(&str, Workload); 3] = [
        ("streaming", streaming),
        ("streaming+labels", streaming_with_labels),
        ("families", families),
    ];
    for (name, f) in runs {
        if only.as_deref().is_none_or(|o| o == name) {
            let r = measure(bytes, f);
            let (median, best) = (r.median, r.best);
            println!("{name}: {median:.1} MB/s median of {ROUNDS} rounds (best {best:.1})");
        }
    }
}
