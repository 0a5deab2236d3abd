//! `llmscope load` as a user runs it: a child process against the in-process fake vLLM server
//! (127.0.0.1:0), checking the JSON contract, the records file, exit codes and Ctrl-C (SIGINT).

use crate::common::json;
use llmscope_loadgen::fake::{self, FakeConfig};
use serde_json::Value;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `llmscope ARGS…` started with piped output, to be waited on with [`wait`] or signalled.
fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_llmscope"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start llmscope")
}

/// Waits for the child, killing it after `limit` so a hang fails the test instead of blocking.
fn wait(mut child: Child, limit: Duration) -> Output {
    let t = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if t.elapsed() > limit {
            child.kill().ok();
            panic!("llmscope did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_contract_and_records_file() {
    let server = fake::start(FakeConfig::default()).await;
    let records =
        std::env::temp_dir().join(format!("llmscope-load-test-{}.jsonl", std::process::id()));
    let child = spawn(&[
        "load",
        "--target",
        &server.url,
        "--concurrency",
        "4",
        "--duration",
        "300ms",
        "--format",
        "json",
        "--records",
        records.to_str().unwrap(),
        "--api-key",
        "sk-never-shown",
    ]);
    let out = wait(child, Duration::from_secs(20));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = json(&out);
    let (sent, completed, failed) = (
        j["requests"]["sent"].as_u64().unwrap(),
        j["requests"]["completed"].as_u64().unwrap(),
        j["requests"]["failed"].as_u64().unwrap(),
    );
    assert!(sent > 10 && sent == completed + failed, "{}", j["requests"]);
    for m in ["ttft", "itl", "tpot", "e2e"] {
        assert!(j["latency_ms"][m]["p99"].is_f64(), "{m}");
    }
    assert_eq!(j["load"]["mode"], "closed");
    assert!(j["throughput"]["output_tokens_per_s"].as_f64().unwrap() > 0.0);
    assert!(
        j["throughput"]["sending_output_tokens_per_s"]
            .as_f64()
            .is_some_and(|r| r > 0.0),
        "{}",
        j["throughput"]
    );
    let lines = std::fs::read_to_string(&records).unwrap();
    std::fs::remove_file(&records).ok();
    assert_eq!(lines.lines().count() as u64, sent);
    let first: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert!(first["sent_unix_ns"].as_u64().unwrap() > 1_600_000_000_000_000_000);
    let all = format!(
        "{}{}{lines}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains("never-shown"), "the API key leaked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_drains_and_still_reports() {
    let server = fake::start(FakeConfig {
        tokens: 10,
        token_interval: Duration::from_millis(20),
        ..Default::default()
    })
    .await;
    let child = spawn(&[
        "load",
        "--target",
        &server.url,
        "--concurrency",
        "4",
        "--duration",
        "60s",
        "--format",
        "json",
    ]);
    // Until the load is really running (requests reached the server), then Ctrl-C: polled to a
    // deadline, not slept, so a slow start on a loaded machine does not signal too early.
    let deadline = Instant::now() + Duration::from_secs(30);
    while server
        .seen
        .requests
        .load(std::sync::atomic::Ordering::Relaxed)
        < 8
    {
        assert!(Instant::now() < deadline, "the load never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = child.id().to_string();
    let kill = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(kill.success());
    let t = Instant::now();
    let out = wait(child, Duration::from_secs(15));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "drain took {:?}",
        t.elapsed()
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = json(&out);
    assert_eq!(j["interrupted"], true);
    assert!(
        j["requests"]["completed"].as_u64().unwrap() >= 8,
        "{}",
        j["requests"]
    );
    assert_eq!(
        j["requests"]["failed"], 0,
        "in-flight requests were drained, not cut: {}",
        j["errors"]
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopping"));
}

#[test]
fn unreachable_target_is_one_line_and_exit_2() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let out = wait(
        spawn(&["load", "--target", &url, "--requests", "1"]),
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("cannot reach") && err.contains(&url), "{err}");
}

#[test]
fn bad_flags_are_usage_errors() {
    let out = wait(
        spawn(&[
            "load",
            "--rate",
            "5",
            "--arrival",
            "gamma",
            "--requests",
            "1",
        ]),
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--burstiness"));
}

/// `llmscope load` against a server that rejects everything stops itself, exits 1 and says why,
/// with the server's message in the JSON report.
#[test]
fn load_stops_when_every_request_is_rejected() {
    let (_sim, vllm, _dcgm) = crate::common::sim_on_free_ports("1s", &["--fault-400", "1"]);
    crate::common::wait_until_listening(&vllm);
    let target = format!("http://{vllm}");
    let out = crate::common::llmscope(&[
        "load",
        "--target",
        &target,
        "--concurrency",
        "32",
        "--duration",
        "60s",
        "--format",
        "json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("stopped early") && stderr.contains("http_400"),
        "{stderr}"
    );
    let v = crate::common::json(&out);
    assert!(v["requests"]["sent"].as_u64().unwrap() <= 32 * 20, "{v:#}");
    assert!(
        v["failures"]["http_400"]["bodies"][0]
            .as_str()
            .unwrap()
            .contains("--fault-400"),
        "{v:#}"
    );
}

/// A real Mooncake trace replayed against the simulator (issue 27): every request of the window
/// at its time, and the blocks the trace says requests share are prefix-cache hits in the
/// engine's own counter. The oracle is the trace's `hash_ids`, not llmscope's report.
#[test]
fn a_mooncake_trace_replays_on_time_and_its_shared_blocks_hit_the_prefix_cache() {
    use llmscope_loadgen::trace::{self, MOONCAKE_BLOCK_TOKENS, TraceFormat};
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../loadgen/tests/fixtures/traces/mooncake.jsonl"
    );
    let (_sim, vllm, _dcgm) = crate::common::sim_on_free_ports(
        "1s",
        &["--preset", "bench-tiny", "--max-model-len", "32768"],
    );
    crate::common::wait_until_listening(&vllm);
    let out = crate::common::llmscope(&[
        "load",
        "--target",
        &format!("http://{vllm}"),
        "--trace",
        path,
        "--trace-window",
        "..12s",
        "--time-scale",
        "0.25",
        "--skip-bad-lines",
        "--format",
        "json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The oracle: the window's requests that fit 32768 tokens, and the prompt blocks each
    // shares with an earlier one (a run of leading ids seen before).
    let text = std::fs::read_to_string(path).unwrap();
    let window = trace::parse(&text, TraceFormat::Mooncake, false)
        .unwrap()
        .window(0.0, Some(12.0));
    let kept: Vec<_> = window
        .requests
        .iter()
        .filter(|r| r.input_tokens + r.output_tokens <= 32768)
        .collect();
    // Each block id, and when (replayed: the trace's offset × 0.25) it was first sent. A block
    // can hit only once the request that brought it finished its prefill: shared with a request
    // sent at least SETTLED before, it must hit; shared with one sent just before, it may not
    // have yet (a loaded host runs the two at once) — the hits lie between those two counts.
    const SETTLED: f64 = 0.5;
    let mut first_sent = std::collections::HashMap::new();
    let (mut shared_blocks, mut settled_blocks) = (0usize, 0usize);
    for r in &kept {
        let at = r.offset_s * 0.25;
        let run = r
            .hash_ids
            .iter()
            .take_while(|id| first_sent.contains_key(*id));
        shared_blocks += run.clone().count();
        settled_blocks += run.take_while(|id| at - first_sent[*id] >= SETTLED).count();
        for id in &r.hash_ids {
            first_sent.entry(*id).or_insert(at);
        }
    }
    assert!(
        stderr.contains("2 request(s) longer than max_model_len 32768 left out"),
        "{stderr}"
    );
    let v = crate::common::json(&out);
    assert_eq!(v["load"]["mode"], "trace", "{v:#}");
    let n = kept.len() as u64;
    assert_eq!(v["requests"]["sent"].as_u64(), Some(n), "{v:#}");
    assert_eq!(v["requests"]["completed"].as_u64(), Some(n), "{v:#}");
    // Sent at the trace's times (a loose bound: CI hosts are shared; the bench measures it).
    let lag = v["load"]["schedule_lag_ms"]["p99"].as_f64().unwrap();
    assert!(lag < 100.0, "send time vs trace offset, p99 {lag} ms");
    let (_, metrics) = crate::common::get(&vllm, "/metrics");
    let hits = crate::common::sample(&metrics, "vllm:prefix_cache_hits_total{").unwrap();
    let expected = (shared_blocks as u32 * MOONCAKE_BLOCK_TOKENS) as f64;
    let settled = (settled_blocks as u32 * MOONCAKE_BLOCK_TOKENS) as f64;
    assert!(
        settled > 0.5 * expected,
        "{settled} of {expected}: a trace of shared blocks"
    );
    // Each shared run is cut at a 16-token KV block and carries the chat template: within 5 %.
    assert!(
        hits >= settled * 0.95 && hits <= expected * 1.05,
        "prefix-cache hit tokens {hits}, the trace's shared blocks {expected} ({settled} shared with a request sent {SETTLED} s or more before)"
    );
}

/// `--shared-prefix N --prefix-groups G` (issue 27, point 2): after the first request of each
/// group, every request's N-token system prompt is a prefix-cache hit in the engine's own counter;
/// without it, only the chat template is.
#[test]
fn shared_prefix_groups_hit_the_prefix_cache() {
    let hits_after = |extra: &[&str]| -> f64 {
        let (_sim, vllm, _dcgm) = crate::common::sim_on_free_ports("1s", &[]);
        crate::common::wait_until_listening(&vllm);
        let target = format!("http://{vllm}");
        let mut args = vec![
            "load",
            "--target",
            &target,
            "--input-tokens",
            "64",
            "--output-tokens",
            "4",
            "--requests",
            "30",
            "--concurrency",
            "1",
        ];
        args.extend_from_slice(extra);
        let out = crate::common::llmscope(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (_, metrics) = crate::common::get(&vllm, "/metrics");
        crate::common::sample(&metrics, "vllm:prefix_cache_hits_total{").unwrap()
    };
    let (n, groups, prefix) = (30.0, 3.0, 512.0);
    let shared = hits_after(&["--shared-prefix", "512", "--prefix-groups", "3"]);
    let plain = hits_after(&[]);
    // The chat template (a few dozen tokens) is shared by every request either way.
    assert!(plain <= n * 64.0, "no shared prefix: {plain} hit tokens");
    let expected = (n - groups) * prefix;
    assert!(
        shared >= expected * 0.95 && shared <= expected + n * 64.0,
        "{shared} hit tokens, {expected} expected from {groups} groups of a {prefix}-token prefix"
    );
}

/// `--turns 3`: each session's turns carry the conversation so far, so every later turn finds
/// the earlier turns' prompt in the prefix cache. The oracle is the engine's own hit counter and
/// its own prompt counts: the cached tokens the records carry add up to the engine's hits, and a
/// turn hits at least the full blocks of the previous turn's prompt.
#[test]
fn sessions_carry_the_conversation_and_later_turns_hit_the_prefix_cache() {
    let (_sim, vllm, _dcgm) = crate::common::sim_on_free_ports("1s", &[]);
    crate::common::wait_until_listening(&vllm);
    let target = format!("http://{vllm}");
    let records =
        std::env::temp_dir().join(format!("llmscope-sessions-{}.jsonl", std::process::id()));
    let out = crate::common::llmscope(&[
        "load",
        "--target",
        &target,
        "--input-tokens",
        "100",
        "--output-tokens",
        "12",
        "--turns",
        "3",
        "--think-time",
        "20ms",
        "--concurrency",
        "2",
        "--requests",
        "12",
        "--format",
        "json",
        "--records",
        records.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = std::fs::read_to_string(&records).unwrap();
    std::fs::remove_file(&records).ok();
    let recs: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 12, "4 sessions of 3 turns");
    let (_, metrics) = crate::common::get(&vllm, "/metrics");
    let engine_hits = crate::common::sample(&metrics, "vllm:prefix_cache_hits_total{").unwrap();
    let cached: f64 = recs
        .iter()
        .map(|r| r["cached_tokens"].as_f64().unwrap())
        .sum();
    assert_eq!(
        cached, engine_hits,
        "records' cached tokens vs the engine's hit counter"
    );
    let block = 16;
    for r in &recs {
        let (session, turn) = (r["session"].as_u64().unwrap(), r["turn"].as_u64().unwrap());
        if turn == 1 {
            continue;
        }
        let prev = recs
            .iter()
            .find(|p| p["session"] == session && p["turn"] == turn - 1)
            .expect("the previous turn");
        let prev_prompt = prev["prompt_tokens"].as_u64().unwrap();
        let prompt = r["prompt_tokens"].as_u64().unwrap();
        let answer = prev["output_tokens"].as_u64().unwrap();
        assert!(
            prompt > prev_prompt + answer + 50,
            "turn {turn} of session {session}: {prompt} prompt tokens after {prev_prompt} + {answer}"
        );
        let hit = r["cached_tokens"].as_u64().unwrap();
        assert!(
            hit >= prev_prompt / block * block - block && hit < prompt,
            "turn {turn} of session {session}: {hit} cached of {prompt}; the previous prompt was {prev_prompt}"
        );
        assert_eq!(r["repeated_tokens"].as_u64(), Some(prev_prompt + answer));
    }
    let j = json(&out);
    let p = &j["prefix"];
    assert_eq!(p["turns"], 3);
    assert_eq!(p["cached_tokens"].as_f64(), Some(engine_hits));
    assert_eq!(p["ttft_first_turn"]["count"], 4);
    assert_eq!(p["ttft_later_turns"]["count"], 8);
    assert_eq!(
        (
            p["ttft_hit"]["count"].as_u64(),
            p["ttft_miss"]["count"].as_u64()
        ),
        (Some(8), Some(4))
    );
}
