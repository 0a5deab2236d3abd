//! End-to-end tests of the load generator against the in-process fake vLLM server
//! (`llmscope_loadgen::fake`, on 127.0.0.1:0). Every run is bounded to well under a second or two.

use llmscope_loadgen::fake::{self, FakeConfig, FakeServer, Fault};
use llmscope_loadgen::{
    ArrivalKind, Endpoint, ErrorKind, LoadReport, LoadSpec, Observer, PlanError, RequestRecord,
    RunControl, Secret, resolve, run,
};
use std::time::Duration;

fn spec(server: &FakeServer) -> LoadSpec {
    LoadSpec {
        target: server.url.clone(),
        requests: Some(20),
        concurrency: vec![4],
        // A stall fault never resumes, so this bounds only its tests' time; at 300 ms a healthy
        // request on a loaded 2-core machine was miscounted as a stall (issue 17).
        idle_timeout: Duration::from_secs(2),
        grace: Duration::from_secs(2),
        ..Default::default()
    }
}

async fn load(spec: &LoadSpec) -> LoadReport {
    let plan = resolve(spec).await.expect("plan");
    run(&plan, &mut (), &RunControl::new()).await
}

fn assert_accounted(r: &LoadReport) {
    let q = r.total.requests;
    assert_eq!(q.sent, q.completed + q.failed, "{q:?}");
    assert_eq!(
        q.failed,
        r.total.errors.values().sum::<u64>(),
        "{:?}",
        r.total.errors
    );
}

#[tokio::test]
async fn closed_loop_streaming_chat_meets_the_json_contract() {
    let server = fake::start(FakeConfig::default()).await;
    let r = load(&spec(&server)).await;
    assert_eq!(
        (r.total.requests.sent, r.total.requests.completed),
        (20, 20)
    );
    let j = serde_json::to_value(&r).unwrap();
    for key in ["sent", "completed", "failed"] {
        assert!(j["requests"][key].is_u64(), "requests.{key}");
    }
    assert!(j["errors"].is_object());
    for m in ["ttft", "itl", "tpot", "e2e"] {
        for q in ["p50", "p90", "p95", "p99", "mean"] {
            assert!(
                j["latency_ms"][m][q].is_f64(),
                "latency_ms.{m}.{q} in {}",
                j["latency_ms"]
            );
        }
    }
    assert!(j["throughput"]["requests_per_s"].as_f64().unwrap() > 0.0);
    assert!(j["throughput"]["output_tokens_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(j["load"]["mode"], "closed");
    assert_eq!(j["load"]["target"], 4.0);
    assert!(j["load"]["achieved"].as_f64().unwrap() > 1.0);
    assert_eq!(r.total.tokens.output, 20 * 8);
    assert_eq!(r.total.tokens.mismatch_pct, Some(0.0));
    assert_eq!(r.total.latency_ms.itl.count, 20 * 7);
    assert!(
        r.total.latency_ms.ttft.p50.unwrap() >= 5.0,
        "the fake waits 5 ms before the first token"
    );
    assert_eq!(r.model, "fake/model");
    assert!(r.total.load.peak_concurrency <= 4);
}

#[tokio::test]
async fn both_endpoints_streaming_and_not() {
    let server = fake::start(FakeConfig::default()).await;
    for endpoint in [Endpoint::Chat, Endpoint::Completions] {
        for stream in [true, false] {
            let r = load(&LoadSpec {
                endpoint,
                stream,
                requests: Some(6),
                ..spec(&server)
            })
            .await;
            assert_eq!(
                r.total.requests.completed, 6,
                "{endpoint:?} stream={stream}: {:?}",
                r.total.errors
            );
            assert_eq!(r.total.tokens.output, 6 * 8, "{endpoint:?} stream={stream}");
            assert_eq!(r.total.latency_ms.ttft.count, if stream { 6 } else { 0 });
            assert_eq!(r.total.latency_ms.e2e.count, 6);
            let body = server.seen.last_body.lock().unwrap().clone().unwrap();
            assert_eq!(body["stream"], stream);
            assert_eq!(body.get("messages").is_some(), endpoint == Endpoint::Chat);
            assert_eq!(
                body["stream_options"]["include_usage"].as_bool(),
                stream.then_some(true)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_every_arrival_kind_hits_its_rate() {
    let server = fake::start(FakeConfig::default()).await;
    for (arrival, burstiness) in [
        (ArrivalKind::Constant, None),
        (ArrivalKind::Poisson, None),
        (ArrivalKind::Gamma, Some(0.5)),
    ] {
        let s = LoadSpec {
            rate: vec![200.0],
            concurrency: vec![],
            arrival,
            burstiness,
            requests: None,
            duration: Some(Duration::from_millis(500)),
            ..spec(&server)
        };
        let r = load(&s).await;
        let sent = r.total.requests.sent as f64;
        assert!(
            (60.0..=140.0).contains(&sent),
            "{arrival:?}: sent {sent} of ~100"
        );
        assert_eq!(r.total.load.mode, "open");
        assert!(r.total.load.schedule_lag_ms.as_ref().unwrap().count > 0);
        assert!(
            r.total
                .latency_ms
                .ttft_from_schedule
                .as_ref()
                .unwrap()
                .count
                > 0
        );
        assert_accounted(&r);
        if arrival == ArrivalKind::Constant {
            let lag = r.total.load.schedule_lag_ms.unwrap().p50.unwrap();
            // Generous: debug build on a shared 2-core machine; a broken pacer lags by seconds.
            assert!(lag < 25.0, "constant-rate sends lag {lag} ms");
        }
    }
}

#[tokio::test]
async fn open_loop_cap_holds_concurrency() {
    let server = fake::start(FakeConfig {
        ttft: Duration::from_millis(50),
        ..Default::default()
    })
    .await;
    let s = LoadSpec {
        rate: vec![500.0],
        concurrency: vec![3],
        requests: Some(15),
        arrival: ArrivalKind::Constant,
        ..spec(&server)
    };
    let r = load(&s).await;
    assert_eq!(r.total.requests.completed, 15);
    assert_eq!(r.total.load.peak_concurrency, 3);
    assert_eq!(r.total.load.concurrency_cap, Some(3));
    let lag = r.total.load.schedule_lag_ms.unwrap();
    assert!(
        lag.p99.unwrap() > 50.0,
        "waiting for a slot is schedule lag: {lag:?}"
    );
    let (ttft, from_sched) = (
        r.total.latency_ms.ttft.p99.unwrap(),
        r.total.latency_ms.ttft_from_schedule.unwrap().p99.unwrap(),
    );
    assert!(
        from_sched > ttft + 50.0,
        "coordinated omission corrected: {from_sched} vs {ttft}"
    );
}

#[tokio::test]
async fn closed_loop_ramp_warmup_and_stages() {
    let server = fake::start(FakeConfig {
        ttft: Duration::from_millis(20),
        ..Default::default()
    })
    .await;
    let s = LoadSpec {
        concurrency: vec![1, 4],
        requests: None,
        duration: Some(Duration::from_millis(300)),
        warmup: Duration::from_millis(100),
        ramp_up: Duration::from_millis(200),
        ..spec(&server)
    };
    let r = load(&s).await;
    assert_eq!(r.stages.len(), 2);
    assert_eq!(r.stages[0].load.peak_concurrency, 1);
    assert_eq!(r.stages[1].load.peak_concurrency, 4);
    assert!(
        r.stages.iter().all(|s| s.requests.warmup > 0),
        "warmup requests are counted apart"
    );
    let sum: u64 = r.stages.iter().map(|s| s.requests.sent).sum();
    assert_eq!(r.total.requests.sent, sum);
    assert_eq!(r.total.stage, None);
    assert!(r.stages[1].throughput.requests_per_s > r.stages[0].throughput.requests_per_s * 1.5);
    for st in &r.stages {
        assert!(
            st.duration_s >= 0.4 && st.duration_s < 1.5,
            "{}",
            st.duration_s
        );
    }
}

#[tokio::test]
async fn each_fault_is_counted_by_kind_and_the_run_goes_on() {
    let cases = [
        (Fault::Http500, ErrorKind::Http(500)),
        (Fault::Http429, ErrorKind::Http(429)),
        (Fault::Disconnect, ErrorKind::StreamCut),
        (Fault::Stall, ErrorKind::Stall),
        (Fault::Malformed, ErrorKind::MalformedSse),
        (Fault::InBandError, ErrorKind::StreamError),
    ];
    for (fault, kind) in cases {
        let server = fake::start(FakeConfig {
            fault: Some(fault),
            fault_every: 3,
            ..Default::default()
        })
        .await;
        let r = load(&LoadSpec {
            requests: Some(12),
            ..spec(&server)
        })
        .await;
        assert_accounted(&r);
        assert_eq!(r.total.requests.sent, 12, "{fault:?}");
        assert_eq!(
            r.total.errors.get(&kind),
            Some(&4),
            "{fault:?}: {:?}",
            r.total.errors
        );
        assert_eq!(r.total.requests.completed, 8, "{fault:?}");
    }
}

#[tokio::test]
async fn faults_under_open_loop_stay_accounted() {
    let server = fake::start(FakeConfig {
        fault: Some(Fault::Disconnect),
        fault_every: 2,
        ..Default::default()
    })
    .await;
    let s = LoadSpec {
        rate: vec![300.0],
        concurrency: vec![],
        requests: None,
        duration: Some(Duration::from_millis(300)),
        ..spec(&server)
    };
    let r = load(&s).await;
    assert_accounted(&r);
    assert!(r.total.errors[&ErrorKind::StreamCut] > 10);
}

#[tokio::test]
async fn bad_input_fails_before_the_run_with_a_fix() {
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let e = resolve(&LoadSpec {
        target: url,
        requests: Some(1),
        ..Default::default()
    })
    .await
    .unwrap_err();
    assert!(matches!(e, PlanError::Unreachable { .. }), "{e}");
    assert!(e.to_string().contains("llmscope sim"), "{e}");

    let html = fake::start(FakeConfig {
        not_openai: true,
        ..Default::default()
    })
    .await;
    let e = resolve(&spec(&html)).await.unwrap_err();
    assert!(
        matches!(e, PlanError::NotOpenAi { .. }) && e.to_string().contains("--target"),
        "{e}"
    );

    let server = fake::start(FakeConfig::default()).await;
    let e = resolve(&LoadSpec {
        model: Some("nope".into()),
        ..spec(&server)
    })
    .await
    .unwrap_err();
    assert!(
        e.to_string().contains("fake/model") && e.to_string().contains("--model"),
        "{e}"
    );

    let empty = std::env::temp_dir().join(format!("llmscope-empty-{}.jsonl", std::process::id()));
    std::fs::write(&empty, "\n").unwrap();
    let e = resolve(&LoadSpec {
        prompts_file: Some(empty.clone()),
        ..spec(&server)
    })
    .await
    .unwrap_err();
    std::fs::remove_file(&empty).ok();
    assert!(e.to_string().contains("has no prompts"), "{e}");
    assert_eq!(e.to_string().lines().count(), 1);
}

#[tokio::test]
async fn prompt_files_and_token_options_shape_the_body() {
    let server = fake::start(FakeConfig::default()).await;
    let file = std::env::temp_dir().join(format!("llmscope-prompts-{}.jsonl", std::process::id()));
    std::fs::write(
        &file,
        "{\"messages\":[{\"role\":\"user\",\"content\":\"from file\"}]}\n",
    )
    .unwrap();
    let r = load(&LoadSpec {
        prompts_file: Some(file.clone()),
        output_tokens: Some(5),
        requests: Some(3),
        ..spec(&server)
    })
    .await;
    std::fs::remove_file(&file).ok();
    assert_eq!(r.total.tokens.output, 15);
    let body = server.seen.last_body.lock().unwrap().clone().unwrap();
    assert_eq!(body["messages"][0]["content"], "from file");
    assert_eq!(
        (body["max_tokens"].as_u64(), body["ignore_eos"].as_bool()),
        (Some(5), Some(true))
    );

    load(&LoadSpec {
        input_tokens: Some("40±5".parse().unwrap()),
        max_tokens: Some(4),
        requests: Some(2),
        ..spec(&server)
    })
    .await;
    let body = server.seen.last_body.lock().unwrap().clone().unwrap();
    let words = body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .split(' ')
        .count();
    assert!((20..=60).contains(&words), "{words}");
    assert!(body.get("ignore_eos").is_none());
}

#[tokio::test]
async fn reasoning_usage_mismatch_and_emit_timestamps() {
    let cfg = FakeConfig {
        reasoning_tokens: 3,
        usage_skew: 2,
        token_interval: Duration::from_millis(10),
        ..Default::default()
    };
    let server = fake::start(cfg).await;
    let s = LoadSpec {
        headers: vec!["x-llmscope-timestamps: 1".into()],
        requests: Some(4),
        ..spec(&server)
    };
    let r = load(&s).await;
    let l = &r.total.latency_ms;
    assert!(
        l.ttfo.p50.unwrap() >= l.ttft.p50.unwrap() + 25.0,
        "TTFO after 3 reasoning tokens: {:?} {:?}",
        l.ttfo,
        l.ttft
    );
    assert_eq!(r.total.tokens.mismatched_requests, 4);
    assert_eq!(
        r.total.tokens.mismatch_pct,
        Some(20.0),
        "usage 10 vs 8 counted"
    );
    let delivery = r
        .total
        .timing
        .as_ref()
        .expect("timing check")
        .first_token_delivery_ms
        .clone();
    assert_eq!(delivery.count, 4);
    assert!(delivery.p99.unwrap() < 50.0, "{delivery:?}");
}

#[tokio::test]
async fn the_api_key_is_sent_and_never_reported() {
    let server = fake::start(FakeConfig::default()).await;
    let s = LoadSpec {
        api_key: Some(Secret::new("sk-test-hush")),
        requests: Some(2),
        ..spec(&server)
    };
    let plan = resolve(&s).await.unwrap();
    assert!(!format!("{plan:?}").contains("hush"));
    let r = run(&plan, &mut (), &RunControl::new()).await;
    assert_eq!(
        server.seen.last_authorization.lock().unwrap().as_deref(),
        Some("Bearer sk-test-hush")
    );
    assert!(!serde_json::to_string(&r).unwrap().contains("hush"));
}

#[derive(Default)]
struct Collect(Vec<RequestRecord>, u32);

impl Observer for Collect {
    fn records(&mut self, batch: &[RequestRecord]) {
        self.0.extend_from_slice(batch);
    }
    fn progress(&mut self, _: &llmscope_loadgen::Progress) {
        self.1 += 1;
    }
}

#[tokio::test]
async fn every_request_yields_one_record_in_order_of_time() {
    let server = fake::start(FakeConfig {
        fault: Some(Fault::Http500),
        fault_every: 4,
        ..Default::default()
    })
    .await;
    let plan = resolve(&LoadSpec {
        requests: Some(30),
        ..spec(&server)
    })
    .await
    .unwrap();
    let mut seen = Collect::default();
    let r = run(&plan, &mut seen, &RunControl::new()).await;
    assert_eq!(seen.0.len() as u64, r.total.requests.sent);
    let mut ids: Vec<u64> = seen.0.iter().map(|r| r.id).collect();
    ids.sort();
    assert_eq!(ids, (0..30).collect::<Vec<_>>());
    for rec in &seen.0 {
        assert!(rec.sent_unix_ns <= rec.end_unix_ns);
        assert_eq!(rec.error.is_some(), rec.status == Some(500), "{rec:?}");
        if rec.ok() {
            assert!(rec.first_token_unix_ns.unwrap() >= rec.sent_unix_ns);
        }
    }
}

#[tokio::test]
async fn stop_drains_in_flight_and_keeps_what_completed() {
    let server = fake::start(FakeConfig {
        token_interval: Duration::from_millis(20),
        tokens: 10,
        ..Default::default()
    })
    .await;
    let plan = resolve(&LoadSpec {
        requests: None,
        duration: Some(Duration::from_secs(30)),
        ..spec(&server)
    })
    .await
    .unwrap();
    let control = RunControl::new();
    let c = control.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        c.stop();
    });
    let t = std::time::Instant::now();
    let r = run(&plan, &mut (), &control).await;
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(r.interrupted);
    assert!(r.total.requests.completed >= 4);
    assert_eq!(
        r.total.requests.failed, 0,
        "in-flight requests were drained: {:?}",
        r.total.errors
    );
}

#[tokio::test]
async fn grace_then_cancel_counts_stalled_requests() {
    let server = fake::start(FakeConfig {
        fault: Some(Fault::Stall),
        fault_every: 1,
        ..Default::default()
    })
    .await;
    let s = LoadSpec {
        idle_timeout: Duration::from_secs(60),
        grace: Duration::from_millis(300),
        requests: None,
        duration: Some(Duration::from_millis(200)),
        ..spec(&server)
    };
    let t = std::time::Instant::now();
    let r = load(&s).await;
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_accounted(&r);
    assert_eq!(r.total.errors.get(&ErrorKind::Cancelled), Some(&4));
}

/// The real simulator, in-process, with every fault it can inject: every request is accounted for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llmscope_sim_faults_are_all_accounted_for() {
    let mut cfg =
        llmscope_sim::serve::SimConfig::new(llmscope_sim::preset::preset("bench-tiny").unwrap());
    cfg.faults = llmscope_sim::faults::Faults {
        http_500: 0.05,
        http_429: 0.05,
        disconnect: 0.05,
        stall: 0.05,
        stall_for: Duration::from_secs(5),
        malformed: 0.05,
        ..Default::default()
    };
    let sim = llmscope_sim::serve::start(cfg).await.expect("sim starts");
    let s = LoadSpec {
        target: sim.vllm_url(),
        concurrency: vec![16],
        requests: Some(300),
        output_tokens: Some(16),
        idle_timeout: Duration::from_millis(500),
        ..Default::default()
    };
    let r = load(&s).await;
    sim.shutdown().await;
    assert_accounted(&r);
    assert_eq!(r.total.requests.sent, 300);
    for kind in [
        ErrorKind::Http(500),
        ErrorKind::Http(429),
        ErrorKind::StreamCut,
        ErrorKind::Stall,
        ErrorKind::MalformedSse,
    ] {
        assert!(
            r.total.errors.get(&kind).is_some_and(|n| *n > 0),
            "{kind}: {:?}",
            r.total.errors
        );
    }
    assert!(r.total.requests.completed > 200, "{:?}", r.total.requests);
    assert_eq!(r.model, "llmscope/tiny-bench");
}

/// Issue 12: a server that rejects every request. The closed loop backs off and the run stops
/// itself after a few seconds — hundreds of requests, not the million of a loop that re-sends at
/// once — and the report keeps what the server said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_rejects_everything_is_not_flooded_and_is_quoted() {
    let mut cfg =
        llmscope_sim::serve::SimConfig::new(llmscope_sim::preset::preset("bench-tiny").unwrap());
    cfg.faults.http_400 = 1.0;
    let sim = llmscope_sim::serve::start(cfg).await.expect("sim starts");
    let s = LoadSpec {
        target: sim.vllm_url(),
        concurrency: vec![64],
        duration: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let r = load(&s).await;
    let took = started.elapsed();
    sim.shutdown().await;
    assert_accounted(&r);
    let q = r.total.requests;
    assert_eq!(q.completed, 0);
    // 64 workers backing off 10 ms → 1 s for about 5 s: about 12 sends each.
    assert!((20..=64 * 20).contains(&q.sent), "{q:?} sent in {took:?}");
    assert!(took < Duration::from_secs(15), "stopped early: {took:?}");
    let why = r
        .stopped_early
        .as_deref()
        .expect("the run says why it stopped");
    assert!(
        why.contains("http_400") && why.contains("--fault-400"),
        "{why}"
    );
    assert!(!r.interrupted);
    let f = &r.total.failures[&ErrorKind::Http(400)];
    assert_eq!(f.count, q.failed);
    assert_eq!(f.bodies.len(), 1, "one distinct body: {:?}", f.bodies);
    assert!(
        f.bodies[0].starts_with("simulated rejection (--fault-400)"),
        "{:?}",
        f.bodies
    );
    let json = serde_json::to_value(&r).unwrap();
    assert!(
        json["failures"]["http_400"]["bodies"][0].is_string(),
        "{json:#}"
    );
    let mut text = Vec::new();
    llmscope_loadgen::text::write_summary(&r, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("stopped early") && text.contains("server said: simulated rejection"),
        "{text}"
    );
}

/// `--input-tokens N` is N tokens on the server's tokenizer, chat template included: calibrated
/// through the simulator's `/tokenize`, the achieved mean `usage.prompt_tokens` lands within ±2 %
/// — for the 3,000-token case (then 3,000 + 512 fits the 4,096-token model) and for 500
/// on the completions endpoint with a spread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_tokens_land_on_the_servers_tokenizer() {
    let cfg =
        llmscope_sim::serve::SimConfig::new(llmscope_sim::preset::preset("l4-qwen2.5-3b").unwrap());
    let sim = llmscope_sim::serve::start(cfg).await.expect("sim starts");
    let cases = [
        (Endpoint::Chat, "3000", Some(512), None),
        (Endpoint::Completions, "500±50", None, Some(4)),
        (Endpoint::Chat, "500", None, Some(4)),
    ];
    for (endpoint, tokens, max_tokens, output_tokens) in cases {
        let s = LoadSpec {
            target: sim.vllm_url(),
            endpoint,
            concurrency: vec![8],
            requests: Some(24),
            input_tokens: Some(tokens.parse().unwrap()),
            max_tokens,
            output_tokens,
            ..Default::default()
        };
        let plan = resolve(&s).await.expect("plan");
        assert!(
            plan.notes.iter().any(|n| n.contains("POST /tokenize")),
            "{:?}",
            plan.notes
        );
        let r = run(&plan, &mut (), &RunControl::new()).await;
        assert_eq!(
            r.total.requests.failed, 0,
            "{tokens}: {:?}",
            r.total.failures
        );
        let want = f64::from(s.input_tokens.unwrap().mean);
        let got = r.total.tokens.prompt_mean.expect("usage.prompt_tokens");
        assert!(
            (got - want).abs() <= 0.02 * want,
            "{endpoint:?} {tokens}: achieved {got} tokens"
        );
    }
    sim.shutdown().await;
}

/// Prompt + max_tokens over the model's max_model_len is refused before any load, with the
/// numbers.
#[tokio::test]
async fn over_long_requests_are_refused_before_the_load() {
    let cfg =
        llmscope_sim::serve::SimConfig::new(llmscope_sim::preset::preset("l4-qwen2.5-3b").unwrap());
    let sim = llmscope_sim::serve::start(cfg).await.expect("sim starts");
    let s = LoadSpec {
        target: sim.vllm_url(),
        requests: Some(10),
        input_tokens: Some("3700".parse().unwrap()),
        max_tokens: Some(512),
        ..Default::default()
    };
    let e = resolve(&s).await.unwrap_err();
    sim.shutdown().await;
    assert!(
        matches!(
            e,
            PlanError::TooLong {
                prompt: 3700,
                max_tokens: 512,
                max_model_len: 4096
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("3700 tokens") && e.to_string().contains("= 4212"),
        "{e}"
    );
}

/// Issue 16: queued is not stalled. One sequence at a time and four clients: the last request
/// waits ~36 s in the server's queue for its first token — beyond the 30 s idle limit — and with
/// the default limits every request completes; none is cancelled as a stall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_queue_completes_its_queued_requests_with_the_default_limits() {
    let mut p = llmscope_sim::preset::preset("bench-tiny").unwrap();
    p.engine.max_num_seqs = 1;
    p.constants.host_step_s = 0.1;
    let sim = llmscope_sim::serve::start(llmscope_sim::serve::SimConfig::new(p))
        .await
        .expect("sim starts");
    let s = LoadSpec {
        target: sim.vllm_url(),
        concurrency: vec![4],
        requests: Some(4),
        output_tokens: Some(120),
        ..Default::default()
    };
    assert_eq!(
        s.idle_timeout,
        Duration::from_secs(30),
        "the default limits"
    );
    let r = load(&s).await;
    sim.shutdown().await;
    assert_accounted(&r);
    assert_eq!(r.total.requests.completed, 4, "{:?}", r.total.errors);
    let worst = r.total.latency_ms.ttft.max.unwrap_or(0.0);
    assert!(worst > 30_000.0, "the deepest request queued {worst} ms");
}
