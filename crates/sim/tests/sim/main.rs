//! End-to-end tests of the simulated stack: real sockets on 127.0.0.1:0, a minimal HTTP/1.1
//! client, the pages parsed back with `promtext`; and the diagnosis scenarios ([`scenarios`]).

mod capacity;
mod fit_real;
mod matrix;
mod scenarios;

use llmscope_sim::faults::Faults;
use llmscope_sim::metrics::Dialect;
use llmscope_sim::preset::preset;
use llmscope_sim::serve::{self, SimConfig, SimHandle};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Resp {
    status: u16,
    body: String,
}

/// One HTTP/1.1 request with `Connection: close`; reads to the end (de-chunking the body).
async fn http(addr: SocketAddr, method: &str, path: &str, body: &str, extra: &str) -> Resp {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw).await; // a simulated disconnect may end with a reset
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    Resp { status, body }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

async fn start(cfg: SimConfig) -> SimHandle {
    serve::start(cfg).await.unwrap()
}

fn cfg() -> SimConfig {
    let mut c = SimConfig::new(preset("l4-qwen2.5-3b").unwrap());
    c.dcgm_interval = Duration::from_millis(500);
    c
}

const PROMPT: &str = "쿠버네티스 스케줄러가 Pod를 배치하는 과정을 자세히 설명해줘.";

fn chat_body(max_tokens: u32, stream: bool) -> String {
    serde_json::json!({
        "model": "Qwen/Qwen2.5-3B-Instruct",
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens, "ignore_eos": true, "stream": stream,
        "stream_options": {"include_usage": true}
    })
    .to_string()
}

/// `data:` payloads of an SSE body.
fn events(body: &str) -> Vec<&str> {
    body.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .collect()
}

#[tokio::test]
async fn streams_chat_completions_like_vllm() {
    let sim = start(cfg()).await;
    let r = http(
        sim.vllm_addr,
        "POST",
        "/v1/chat/completions",
        &chat_body(6, true),
        "x-llmscope-timestamps: 1\r\n",
    )
    .await;
    assert_eq!(r.status, 200);
    let ev = events(&r.body);
    assert_eq!(*ev.last().unwrap(), "[DONE]");
    let json: Vec<serde_json::Value> = ev[..ev.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(json[0]["choices"][0]["delta"]["role"], "assistant");
    let usage = &json.last().unwrap()["usage"];
    assert_eq!(usage["completion_tokens"], 6);
    assert_eq!(usage["prompt_tokens"], 55, "template + reference prompt");
    let content: Vec<_> = json
        .iter()
        .filter(|j| {
            j["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|c| !c.is_empty())
        })
        .collect();
    assert!(!content.is_empty());
    assert_eq!(
        content.last().unwrap()["choices"][0]["finish_reason"],
        "length"
    );
    let stamps: Vec<u64> = json
        .iter()
        .map(|j| j["llmscope_emit_unix_ns"].as_u64().unwrap())
        .collect();
    assert!(
        stamps.windows(2).all(|w| w[0] <= w[1]),
        "emit timestamps are monotonic"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn answers_non_streaming_and_completions() {
    let sim = start(cfg()).await;
    let r = http(
        sim.vllm_addr,
        "POST",
        "/v1/chat/completions",
        &chat_body(3, false),
        "",
    )
    .await;
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["usage"]["completion_tokens"], 3);
    assert_eq!(v["object"], "chat.completion");
    let body = r#"{"prompt":"hello world","max_tokens":4,"stream":true}"#;
    let r = http(sim.vllm_addr, "POST", "/v1/completions", body, "").await;
    let ev = events(&r.body);
    let first: serde_json::Value = serde_json::from_str(ev[0]).unwrap();
    assert_eq!(first["object"], "text_completion");
    let r = http(sim.vllm_addr, "GET", "/v1/models", "", "").await;
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["data"][0]["id"], "Qwen/Qwen2.5-3B-Instruct");
    assert_eq!(v["data"][0]["max_model_len"], 4096);
    assert_eq!(
        http(sim.vllm_addr, "GET", "/health", "", "").await.status,
        200
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn rejects_bad_requests_the_way_vllm_does() {
    let sim = start(cfg()).await;
    let wrong_model = r#"{"model":"gpt-4","messages":[{"role":"user","content":"hi"}]}"#;
    let r = http(
        sim.vllm_addr,
        "POST",
        "/v1/chat/completions",
        wrong_model,
        "",
    )
    .await;
    assert_eq!(r.status, 404);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["error"]["type"], "NotFoundError");
    let long = serde_json::json!({"messages":[{"role":"user","content":"word ".repeat(5000)}],"max_tokens":100}).to_string();
    let r = http(sim.vllm_addr, "POST", "/v1/chat/completions", &long, "").await;
    assert_eq!(r.status, 400);
    assert!(
        r.body.contains("maximum context length is 4096 tokens"),
        "{}",
        r.body
    );
    let r = http(
        sim.vllm_addr,
        "POST",
        "/v1/chat/completions",
        "{not json",
        "",
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        http(sim.vllm_addr, "GET", "/nope", "", "").await.status,
        404
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn metrics_pages_parse_and_carry_every_vllm_0_26_name() {
    // (The default dialect is 0.26; 0.32 only adds names to it.)
    let sim = start(cfg()).await;
    let page = http(sim.vllm_addr, "GET", "/metrics", "", "").await.body;
    let (families, errors) = promtext::parse_families(page.as_bytes());
    assert!(errors.is_empty(), "{errors:?}");
    let names: std::collections::BTreeSet<String> = families
        .iter()
        .flat_map(|f| f.samples.iter().map(|s| s.name.raw().to_owned()))
        .collect();
    for want in include_str!("../fixtures/vllm-0.26.0-metric-names.txt")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        assert!(names.contains(want), "missing {want}");
    }
    // Until the emulated dcgm-exporter has collected once (polled to a deadline, not slept).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let dcgm = loop {
        let body = http(sim.dcgm_addr, "GET", "/metrics", "", "").await.body;
        if body.contains("DCGM_FI_DEV_POWER_USAGE{") || std::time::Instant::now() > deadline {
            break body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (families, errors) = promtext::parse_families(dcgm.as_bytes());
    assert!(errors.is_empty(), "{errors:?}");
    let fb = families
        .iter()
        .find(|f| f.name.raw() == "DCGM_FI_DEV_FB_USED")
        .unwrap();
    assert_eq!(fb.samples[0].value, 9194.0);
    assert_eq!(
        fb.samples[0].labels.get("modelName").unwrap().raw(),
        "NVIDIA L4"
    );
    let power = families
        .iter()
        .find(|f| f.name.raw() == "DCGM_FI_DEV_POWER_USAGE")
        .unwrap();
    assert!(
        (39.0..=41.0).contains(&power.samples[0].value),
        "idle power {}",
        power.samples[0].value
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn old_dialect_serves_old_names() {
    let mut c = cfg();
    c.dialect = Dialect::parse("0.8").unwrap();
    let sim = start(c).await;
    let page = http(sim.vllm_addr, "GET", "/metrics", "", "").await.body;
    assert!(page.contains("\nvllm:gpu_cache_usage_perc{"));
    assert!(page.contains("\nvllm:time_per_output_token_seconds_bucket{"));
    assert!(!page.contains("vllm:kv_cache_usage_perc"));
    sim.shutdown().await;
}

#[tokio::test]
async fn injects_every_fault_kind() {
    let with = |f: Faults| {
        let mut c = cfg();
        c.faults = f;
        c
    };
    let sim = start(with(Faults {
        http_500: 1.0,
        metrics_down: 1.0,
        ..Faults::default()
    }))
    .await;
    assert_eq!(
        http(
            sim.vllm_addr,
            "POST",
            "/v1/chat/completions",
            &chat_body(3, true),
            ""
        )
        .await
        .status,
        500
    );
    assert_eq!(
        http(sim.vllm_addr, "GET", "/metrics", "", "").await.status,
        503
    );
    sim.shutdown().await;

    let sim = start(with(Faults {
        http_429: 1.0,
        metrics_garbage: 1.0,
        ..Faults::default()
    }))
    .await;
    assert_eq!(
        http(
            sim.vllm_addr,
            "POST",
            "/v1/chat/completions",
            &chat_body(3, true),
            ""
        )
        .await
        .status,
        429
    );
    let page = http(sim.vllm_addr, "GET", "/metrics", "", "").await.body;
    assert!(
        !promtext::parse_families(page.as_bytes()).1.is_empty(),
        "garbage must not parse cleanly"
    );
    sim.shutdown().await;

    let sim = start(with(Faults {
        disconnect: 1.0,
        ..Faults::default()
    }))
    .await;
    let r = http(
        sim.vllm_addr,
        "POST",
        "/v1/chat/completions",
        &chat_body(8, true),
        "",
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(
        !r.body.contains("[DONE]"),
        "a disconnected stream never finishes"
    );
    sim.shutdown().await;

    let sim = start(with(Faults {
        malformed: 1.0,
        ..Faults::default()
    }))
    .await;
    let r = http(
        sim.vllm_addr,
        "POST",
        "/v1/chat/completions",
        &chat_body(8, true),
        "",
    )
    .await;
    let bad = events(&r.body)
        .iter()
        .filter(|e| **e != "[DONE]" && serde_json::from_str::<serde_json::Value>(e).is_err())
        .count();
    assert_eq!(bad, 1);
    sim.shutdown().await;

    let sim = start(with(Faults {
        stall: 1.0,
        stall_for: Duration::from_millis(1500),
        ..Faults::default()
    }))
    .await;
    let t = std::time::Instant::now();
    let r = http(
        sim.vllm_addr,
        "POST",
        "/v1/chat/completions",
        &chat_body(4, true),
        "",
    )
    .await;
    assert!(r.body.contains("[DONE]"));
    assert!(
        t.elapsed() >= Duration::from_millis(1500),
        "stalled {:?}",
        t.elapsed()
    );
    sim.shutdown().await;
}

/// Values of the unlabeled-enough series we watch, from one scrape.
fn read(page: &str) -> BTreeMap<String, f64> {
    let (families, _) = promtext::parse_families(page.as_bytes());
    families
        .iter()
        .flat_map(|f| f.samples.iter())
        .filter(|s| s.labels.get("le").is_none())
        .map(|s| (s.name.raw().to_owned(), s.value))
        .collect()
}

/// The reference case, shortened: 32 closed-loop clients against `--max-num-seqs 16`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_load_reaches_the_calibrated_steady_state() {
    let sim = start(cfg()).await;
    let addr = sim.vllm_addr;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let body = serde_json::json!({
        "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 512, "stream": true
    })
    .to_string();
    let mut clients = Vec::new();
    for _ in 0..32 {
        let (stop, body) = (stop.clone(), body.clone());
        clients.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                assert_eq!(
                    http(addr, "POST", "/v1/chat/completions", &body, "")
                        .await
                        .status,
                    200
                );
            }
        }));
    }
    // Past the start, by the engine's own progress (about 6 s of this load), however slowly a
    // loaded machine starts the clients: polled to a deadline, not slept.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let v = read(&http(addr, "GET", "/metrics", "", "").await.body);
        let generated = v.get("vllm:generation_tokens_total").copied();
        if generated.is_some_and(|t| t >= 1000.0) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the engine generated {generated:?} tokens"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut samples = Vec::new();
    for _ in 0..8 {
        let v = read(&http(addr, "GET", "/metrics", "", "").await.body);
        let d = read(&http(sim.dcgm_addr, "GET", "/metrics", "", "").await.body);
        samples.push((
            v["vllm:num_requests_running"],
            v["vllm:num_requests_waiting"],
            v["vllm:kv_cache_usage_perc"],
            d["DCGM_FI_DEV_GPU_UTIL"],
        ));
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }
    let n = samples.len() as f64;
    let mean = |f: fn(&(f64, f64, f64, f64)) -> f64| samples.iter().map(f).sum::<f64>() / n;
    let (running, waiting, kv, util) = (mean(|s| s.0), mean(|s| s.1), mean(|s| s.2), mean(|s| s.3));
    assert!(
        (15.0..=16.0).contains(&running),
        "running {running} {samples:?}"
    );
    assert!(
        (13.0..=16.5).contains(&waiting),
        "waiting {waiting} {samples:?}"
    );
    assert!((0.01..=0.05).contains(&kv), "kv {kv} {samples:?}");
    assert!((25.0..=40.0).contains(&util), "util {util} {samples:?}");
    sim.shutdown().await;
}

#[tokio::test]
async fn stream_interval_batches_tokens_into_fewer_chunks() {
    let mut c = cfg();
    c.preset.engine.stream_interval = 4;
    let sim = start(c).await;
    let r = http(
        sim.vllm_addr,
        "POST",
        "/v1/chat/completions",
        &chat_body(10, true),
        "",
    )
    .await;
    let json: Vec<serde_json::Value> = events(&r.body)
        .iter()
        .filter(|e| **e != "[DONE]")
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let texts: Vec<&str> = json[1..]
        .iter()
        .filter_map(|j| j["choices"][0]["delta"]["content"].as_str())
        .collect();
    // First token alone, then 4 at a time (tokens 2–4, 5–8), then the last two with the finish.
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert_eq!(json.last().unwrap()["usage"]["completion_tokens"], 10);
    sim.shutdown().await;
}

#[tokio::test]
async fn version_answers_the_dialect_it_serves() {
    for (dialect, want) in [("0.32", "0.32.0"), ("0.10", "0.10.0")] {
        let mut c = cfg();
        c.dialect = llmscope_sim::metrics::Dialect::parse(dialect).unwrap();
        let sim = start(c).await;
        let got = http(sim.vllm_addr, "GET", "/version", "", "").await.body;
        sim.shutdown().await;
        assert_eq!(got, format!(r#"{{"version":"{want}"}}"#));
    }
}

/// `/tokenize` counts a chat's messages (template included) and a completion's prompt exactly as
/// the generation endpoints charge them in `usage.prompt_tokens`, and names `max_model_len`.
#[tokio::test]
async fn tokenize_agrees_with_usage_prompt_tokens() {
    let sim = start(cfg()).await;
    let messages = serde_json::json!([{"role": "user", "content": PROMPT}]);
    let body = serde_json::json!({"model": "Qwen/Qwen2.5-3B-Instruct", "messages": messages});
    let t = http(sim.vllm_addr, "POST", "/tokenize", &body.to_string(), "").await;
    assert_eq!(t.status, 200, "{}", t.body);
    let t: serde_json::Value = serde_json::from_str(&t.body).unwrap();
    let chat = http(
        sim.vllm_addr,
        "POST",
        "/v1/chat/completions",
        &chat_body(2, false),
        "",
    )
    .await;
    let chat: serde_json::Value = serde_json::from_str(&chat.body).unwrap();
    assert_eq!(t["count"], chat["usage"]["prompt_tokens"], "{t} vs {chat}");
    assert_eq!(t["max_model_len"], 4096);
    assert_eq!(
        t["tokens"].as_array().unwrap().len() as u64,
        t["count"].as_u64().unwrap()
    );

    let text = "the people of this city would like more water";
    let tok = serde_json::json!({"model": "Qwen/Qwen2.5-3B-Instruct", "prompt": text});
    let t = http(sim.vllm_addr, "POST", "/tokenize", &tok.to_string(), "").await;
    let t: serde_json::Value = serde_json::from_str(&t.body).unwrap();
    let body =
        serde_json::json!({"model": "Qwen/Qwen2.5-3B-Instruct", "prompt": text, "max_tokens": 2});
    let c = http(
        sim.vllm_addr,
        "POST",
        "/v1/completions",
        &body.to_string(),
        "",
    )
    .await;
    let c: serde_json::Value = serde_json::from_str(&c.body).unwrap();
    assert_eq!(t["count"], c["usage"]["prompt_tokens"], "{t} vs {c}");
    let bad = http(sim.vllm_addr, "POST", "/tokenize", "{\"model\":\"x\"}", "").await;
    assert_eq!(bad.status, 404);
    let models = http(sim.vllm_addr, "GET", "/v1/models", "", "").await;
    let models: serde_json::Value = serde_json::from_str(&models.body).unwrap();
    assert_eq!(models["data"][0]["max_model_len"], 4096);
    sim.shutdown().await;
}

/// `--fault-400 1`: every generation is refused with 400 and vLLM's error body.
#[tokio::test]
async fn fault_400_rejects_every_request_with_a_vllm_body() {
    let mut c = cfg();
    c.faults = Faults {
        http_400: 1.0,
        ..Faults::default()
    };
    let sim = start(c).await;
    for stream in [true, false] {
        let r = http(
            sim.vllm_addr,
            "POST",
            "/v1/chat/completions",
            &chat_body(3, stream),
            "",
        )
        .await;
        assert_eq!(r.status, 400);
        let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["error"]["type"], "BadRequestError");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--fault-400"),
            "{v}"
        );
    }
    sim.shutdown().await;
}
