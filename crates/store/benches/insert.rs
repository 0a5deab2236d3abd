//! Bench: store insert rate, samples/s, through the writer thread as `observe` uses it.
//!
//! `cargo bench -p llmscope-store --bench insert -- [SERIES] [SCRAPES]` (defaults 1000, 300):
//! each batch is one scrape of SERIES series (one point each), like a large vLLM page; all
//! batches are queued at once, so the writer coalesces them as it would under heavy load. A
//! second pass sends one batch at a time and waits for it (one commit per scrape).
#![allow(clippy::print_stdout)]

use llmscope_core::series::{Batch, Labels, Point, SeriesKey};
use llmscope_store::{NewRun, SourceSpec, Store, writer};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let arg = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (series, scrapes) = (arg(0, 1000), arg(1, 300));
    let keys: Vec<Arc<SeriesKey>> = (0..series)
        .map(|i| {
            let labels = [
                ("gpu", "0"),
                ("UUID", "GPU-1"),
                ("pod", "vllm-0"),
                ("i", &i.to_string()),
            ];
            let labels = Labels::new(labels.map(|(n, v)| (n.to_owned(), v.to_owned())));
            Arc::new(SeriesKey::new(format!("vllm:metric_{}", i % 50), labels))
        })
        .collect();
    for (name, coalesce) in [
        ("queued (coalesced commits)", true),
        ("one commit per scrape", false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path().join("bench.db")).unwrap();
        let run = store.create_run(&new_run()).unwrap();
        let spec = SourceSpec {
            name: "s".into(),
            kind: "scrape".into(),
            url: "http://x".into(),
        };
        store.add_source(run, &spec).unwrap();
        let (start, cpu0) = (Instant::now(), cpu_seconds());
        let samples = if coalesce {
            queued(store, run, &keys, scrapes)
        } else {
            one_by_one(store, run, &keys, scrapes)
        };
        let (secs, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
        println!(
            "{name}: {samples} samples ({series} series x {scrapes} scrapes) in {secs:.2}s = {:.0} samples/s; \
             CPU {cpu:.2}s = {:.0} samples per CPU-second",
            samples as f64 / secs,
            samples as f64 / cpu.max(0.01)
        );
    }
}

fn batch(keys: &[Arc<SeriesKey>], t: usize) -> Batch {
    let mut b = Batch::new("s");
    b.samples = keys
        .iter()
        .map(|k| {
            (
                Arc::clone(k),
                Point {
                    t: t as f64,
                    v: t as f64 * 0.5,
                },
            )
        })
        .collect();
    b
}

fn queued(store: Store, run: i64, keys: &[Arc<SeriesKey>], scrapes: usize) -> u64 {
    let w = writer::spawn(store, run).unwrap();
    let tx = w.sender();
    for t in 0..scrapes {
        tx.send(batch(keys, t));
    }
    drop(tx);
    w.finish().unwrap().1.samples
}

fn one_by_one(mut store: Store, run: i64, keys: &[Arc<SeriesKey>], scrapes: usize) -> u64 {
    (0..scrapes)
        .map(|t| store.write(run, &[batch(keys, t)]).unwrap().samples)
        .sum()
}

fn new_run() -> NewRun {
    NewRun {
        kind: "bench".into(),
        started_at: 0.0,
        window: None,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        config: serde_json::json!({}),
        planned_s: None,
    }
}

/// utime + stime of this process, from /proc/self/stat (clock ticks of 1/100 s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}
