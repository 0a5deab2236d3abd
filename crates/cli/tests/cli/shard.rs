//! Sharded load (issue 29), as a user runs it: three `llmscope load --shard I/3` processes held
//! to one `--start-at`, against one simulator, then `llmscope merge`; and one process driving the
//! same whole load after them. The merged report must be the single process's load: the same
//! request count, throughput and TTFT p50/p95 within 10 %, and percentiles equal to the records'
//! own. The load is open-loop at constant spacing: three shards at 8/3 req/s, phased, are exactly
//! one stream at 8 req/s, so the two runs differ only by what sharding changes.

use crate::common::{Reaper, json, llmscope, sim_on_free_ports, temp_dir, unix_now};
use serde_json::Value;
use std::process::{Command, Stdio};

const LOAD: [&str; 12] = [
    "--rate",
    "8",
    "--arrival",
    "constant",
    "--warmup",
    "2s",
    "--duration",
    "15s",
    "--max-tokens",
    "16",
    "--format",
    "json",
];

fn f(v: &Value, path: &[&str]) -> f64 {
    let mut v = v;
    for p in path {
        v = &v[*p];
    }
    v.as_f64()
        .unwrap_or_else(|| panic!("{} is not a number in the report", path.join(".")))
}

fn within(a: f64, b: f64, share: f64, what: &str) {
    assert!(
        (a - b).abs() <= share * b,
        "{what}: merged {a} vs one process {b} (more than {:.0} % apart)",
        share * 100.0
    );
}

#[test]
fn three_shard_processes_merge_into_the_report_of_one_process_driving_the_whole_load() {
    let (_sim, vllm, _dcgm) = sim_on_free_ports("1s", &[]);
    let target = format!("http://{vllm}");
    let dir = temp_dir("shards");
    let out = dir.join("out");
    let start = format!("{:.3}", unix_now() + 3.0);
    let shards: Vec<Reaper> = (0..3)
        .map(|i| {
            let shard = format!("{i}/3");
            let mut args = vec!["load", "--target", &target, "--shard", &shard];
            args.extend(["--start-at", &start, "--out", out.to_str().unwrap()]);
            args.extend(LOAD);
            Reaper(
                Command::new(env!("CARGO_BIN_EXE_llmscope"))
                    .args(&args)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("start a shard"),
            )
        })
        .collect();
    for mut s in shards {
        let status = s.0.wait().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(s.0.stderr.as_mut().unwrap(), &mut err).ok();
        assert!(status.success(), "a shard failed:\n{err}");
    }
    let joined = dir.join("all.jsonl");
    let merged_out = llmscope(&[
        "merge",
        out.to_str().unwrap(),
        "--format",
        "json",
        "--records",
        joined.to_str().unwrap(),
    ]);
    let merged = json(&merged_out);
    let shards = &merged["shards"];
    assert_eq!(
        merged_out.status.code(),
        Some(0),
        "the shards disagreed: {}",
        shards["problems"]
    );
    let single = json(&llmscope(
        &[&["load", "--target", &target][..], &LOAD[..]].concat(),
    ));

    // Counts add up: every shard's requests are in the merge, and the whole is one process's.
    let per_shard: f64 = shards["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| f(s, &["requests", "sent"]))
        .sum();
    assert_eq!(f(&merged, &["requests", "sent"]), per_shard);
    assert_eq!(
        f(&merged, &["requests", "sent"]),
        f(&single, &["requests", "sent"])
    );
    assert_eq!(f(&merged, &["requests", "failed"]), 0.0);
    // One machine, one clock: each shard read the server's Date within its ±0.5 s resolution.
    for s in shards["shards"].as_array().unwrap() {
        let offset = f(s, &["server_clock_offset_ms"]);
        assert!(offset.abs() <= 1_000.0, "{s}");
    }
    assert_eq!(merged["stages"][0]["label"], single["stages"][0]["label"]);
    let records = &shards["records"];
    assert_eq!(records["agree"], true, "{records:#}");
    assert_eq!(f(records, &["measured"]), f(&merged, &["requests", "sent"]));
    let lines = std::fs::read_to_string(&joined).unwrap().lines().count() as f64;
    assert_eq!(lines, f(records, &["records"]));

    let (m, s) = (&merged, &single);
    let tput = ["throughput", "sending_output_tokens_per_s"];
    within(f(m, &tput), f(s, &tput), 0.10, "output tok/s while sending");
    let reqs = ["throughput", "requests_per_s"];
    within(f(m, &reqs), f(s, &reqs), 0.10, "req/s");
    for q in ["p50", "p95"] {
        let path = ["latency_ms", "ttft", q];
        within(f(m, &path), f(s, &path), 0.10, &format!("TTFT {q}"));
    }
    eprintln!(
        "merged vs one process: output tok/s {:.1} vs {:.1}, TTFT p50 {} vs {} ms, p95 {} vs {} ms, stages began {} ms apart",
        f(m, &tput),
        f(s, &tput),
        m["latency_ms"]["ttft"]["p50"],
        s["latency_ms"]["ttft"]["p50"],
        m["latency_ms"]["ttft"]["p95"],
        s["latency_ms"]["ttft"]["p95"],
        shards["stage_start_spread_ms"][0]
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A shard that starts after the shared start is named, and the merge says the shards did not
/// agree (exit 1); a shard missing is a merge that cannot be made (exit 2, naming it).
#[test]
fn a_late_shard_is_named_and_a_missing_one_refused() {
    let (_sim, vllm, _dcgm) = sim_on_free_ports("1s", &[]);
    let target = format!("http://{vllm}");
    let dir = temp_dir("shards-late");
    let out = dir.join("out");
    let past = format!("{:.3}", unix_now() - 5.0);
    for i in ["0/2", "1/2"] {
        let o = llmscope(&[
            "load",
            "--target",
            &target,
            "--shard",
            i,
            "--start-at",
            &past,
            "--out",
            out.to_str().unwrap(),
            "--concurrency",
            "2",
            "--requests",
            "4",
            "--max-tokens",
            "4",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = llmscope(&["merge", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("shard 0/2 began") && err.contains("after --start-at"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("merged from 2 shards"), "{text}");
    assert!(text.contains("sent 4  completed 4"), "{text}");
    std::fs::remove_file(out.join("shard-1-of-2.json")).unwrap();
    let o = llmscope(&["merge", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("shard 1/2 (shard-1-of-2.json) missing"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
