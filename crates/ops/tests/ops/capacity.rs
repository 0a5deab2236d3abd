//! `capacity` on the in-process simulator: a search that finds the batch cap the simulator was
//! configured with (the expected answer is the engine's own setting, never llmscope's output),
//! every stage a stored run; Ctrl-C keeping the finished stages; failing requests ending the
//! search with the server's words; the budget stopping it.

use crate::{DEADLINE, Heard, poll, sim_request};
use llmscope_collect::HttpClient;
use llmscope_core::bottleneck::Bottleneck;
use llmscope_diagnosis::capacity::{Axis, Ended};
use llmscope_loadgen::Slo;
use llmscope_ops::cancel::Cancel;
use llmscope_ops::capacity::{self, CapacityPlan, Searched};
use llmscope_ops::run::RunRequest;
use llmscope_sim::options::EngineOptions;
use llmscope_store::{RunStatus, Store};
use std::path::Path;
use std::time::Duration;

/// The simulated H100 stack (a healthy host: steps of milliseconds) at `--max-num-seqs cap`
/// (or `target`), 32-token answers.
fn request(db: &Path, cap: u32, target: Option<String>) -> RunRequest {
    let engine = EngineOptions {
        preset: "h100-llama3.1-8b".to_owned(),
        max_num_seqs: Some(cap),
        ..EngineOptions::default()
    };
    RunRequest {
        metrics_url: target.as_ref().map(|t| format!("{t}/metrics")),
        target,
        engine,
        concurrency: 16,
        output_tokens: Some(32),
        ..sim_request(db, Duration::from_secs(2))
    }
}

fn plan(max: u32, budget: Duration) -> CapacityPlan {
    CapacityPlan {
        axis: Axis::Concurrency,
        start: 1,
        max,
        in_flight_cap: 64,
        stage: Duration::from_millis(2_500),
        warmup: Duration::from_millis(500),
        baseline: Duration::from_millis(300),
        budget,
        slo: Slo::default(),
        slo_text: None,
    }
}

/// Resolves `request` and searches with `cap` until it ends or `cancel` fires.
async fn search(
    request: RunRequest,
    cap: &CapacityPlan,
    cancel: Cancel,
    heard: &Heard,
) -> Searched {
    let (mut plan, sim) = request.resolve(heard).await.unwrap();
    plan.after = Duration::from_millis(400);
    let load = request.prepare_load(&plan.target, heard).await.unwrap();
    let http = HttpClient::new(None).unwrap();
    let out = capacity::search(&plan, &load, cap, &cancel, &http, heard).await;
    if let Some(sim) = sim {
        sim.shutdown().await;
    }
    out.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_search_finds_the_configured_cap_and_stores_every_stage() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let heard = Heard::default();
    let cap = plan(16, Duration::from_secs(300));
    let s = search(request(&db, 4, None), &cap, Cancel::new(), &heard).await;
    let a = &s.answer;
    let loads: Vec<u32> = a.stages.iter().map(|s| s.load.value()).collect();
    let k = a.knee.as_ref().expect("a knee");
    assert!(
        k.load.value().abs_diff(4) <= 1,
        "the knee {} is not at the configured cap 4: {loads:?}",
        k.load.value()
    );
    assert!(matches!(a.ended, Ended::Found { .. }), "{:?}", a.ended);
    assert!(k.exact && !k.at_least, "{k:?}");
    assert_eq!(
        k.bottleneck,
        Bottleneck::BatchLimit,
        "past the cap the batch limit holds: {:?}",
        a.stages
            .iter()
            .map(|s| (s.load.value(), s.verdict.bottleneck))
            .collect::<Vec<_>>()
    );
    assert_eq!(s.gauges.running, Some("vllm:num_requests_running"));
    // Every stage is a run of its own, completed, in the order measured.
    let runs = Store::open(&db).unwrap().runs().unwrap();
    let mut ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, a.run_ids);
    for r in &runs {
        assert_eq!(
            (r.kind.as_str(), r.status),
            ("capacity", RunStatus::Completed)
        );
    }
    assert_eq!(
        heard.count("→"),
        a.stages.len(),
        "one result line per stage"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_keeps_every_finished_stage_and_says_at_least() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let heard = std::sync::Arc::new(Heard::default());
    let cancel = Cancel::new();
    let (h, c) = (heard.clone(), cancel.clone());
    // Cancelled while the third stage runs.
    let watcher = tokio::spawn(async move {
        poll("the third stage", || {
            (h.count("stage 3: load:") > 0).then_some(())
        })
        .await;
        c.cancel();
    });
    let cap = plan(64, Duration::from_secs(300));
    let s = search(request(&db, 8, None), &cap, cancel, &heard).await;
    watcher.await.unwrap();
    let a = &s.answer;
    assert_eq!(a.ended, Ended::Interrupted);
    assert_eq!(a.stages.len(), 3, "{:?}", a.stages);
    assert!(a.stages[2].interrupted && !a.stages[1].interrupted);
    let k = a.knee.as_ref().expect("the knee so far");
    assert!(k.at_least, "{k:?}");
    assert_eq!(
        a.per_replica, None,
        "no autoscaling threshold from a cut search"
    );
    let store = Store::open(&db).unwrap();
    let status: Vec<RunStatus> = a
        .run_ids
        .iter()
        .map(|id| store.run(*id).unwrap().status)
        .collect();
    assert_eq!(
        status,
        [
            RunStatus::Completed,
            RunStatus::Completed,
            RunStatus::Interrupted
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_requests_end_the_search_with_the_servers_words() {
    let preset = llmscope_sim::preset::preset("l4-qwen2.5-3b").unwrap();
    let mut cfg = llmscope_sim::serve::SimConfig::new(preset);
    cfg.dcgm_interval = Duration::from_millis(200);
    cfg.faults.http_500 = 1.0;
    let sim = llmscope_sim::serve::start(cfg).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let heard = Heard::default();
    let cap = plan(64, Duration::from_secs(300));
    let target = Some(sim.vllm_url());
    let s = tokio::time::timeout(
        DEADLINE,
        search(request(&db, 16, target), &cap, Cancel::new(), &heard),
    )
    .await
    .expect("the search ends");
    sim.shutdown().await;
    let a = &s.answer;
    let Ended::Failing { load, words } = &a.ended else {
        panic!("{:?}", a.ended);
    };
    assert_eq!((*load, a.stages.len()), (1, 1));
    assert!(words.contains("500"), "{words}");
    assert_eq!(a.stages[0].verdict.bottleneck, Bottleneck::FailingRequests);
    assert!(a.knee.is_none() || a.knee.as_ref().is_some_and(|k| k.at_least));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_stops_the_search_before_a_stage_that_would_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let heard = Heard::default();
    let cap = plan(64, Duration::from_secs(5));
    let s = search(request(&db, 16, None), &cap, Cancel::new(), &heard).await;
    let a = &s.answer;
    assert!(
        matches!(a.ended, Ended::Budget { next: Some(_) }),
        "{:?}",
        a.ended
    );
    assert!(!a.stages.is_empty() && a.elapsed_s <= 5.0 + 1.0, "{a:?}");
    assert!(a.knee.as_ref().is_some_and(|k| k.at_least));
    assert_eq!(heard.count("--budget 5s"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_axis_holds_open_loop_arrivals_and_stops_at_the_largest_rate() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let heard = Heard::default();
    let mut cap = plan(4, Duration::from_secs(300));
    cap.axis = Axis::Rate;
    cap.slo = "ttft=5s".parse().unwrap();
    cap.slo_text = Some("ttft=5s".into());
    let s = search(request(&db, 16, None), &cap, Cancel::new(), &heard).await;
    let a = &s.answer;
    let loads: Vec<u32> = a.stages.iter().map(|s| s.load.value()).collect();
    // Well under what the engine serves (16 sequences of 32 tokens): every rate is served, so
    // output grows to the largest rate (3 is measured to pin the share of the peak).
    let seen: Vec<_> = a
        .stages
        .iter()
        .map(|s| {
            (
                s.load.value(),
                s.output_tok_s,
                s.req_s,
                s.goodput_rps,
                s.completed,
            )
        })
        .collect();
    assert_eq!(loads, [1, 2, 4, 3], "{seen:?}");
    assert_eq!(
        a.ended,
        Ended::Found {
            stop: llmscope_diagnosis::capacity::answer::StopReason::MaxLoad
        }
    );
    assert!(
        a.stages
            .iter()
            .all(|s| s.load.rate.is_some() && s.load.concurrency.is_none())
    );
    let k = a.knee.as_ref().unwrap();
    assert!(
        k.at_least && k.load.rate == Some(4),
        "still growing at 4: {k:?}"
    );
    let g = a.max_goodput.expect("goodput under the SLO");
    assert_eq!(g.load.rate, Some(4));
    let store = Store::open(&db).unwrap();
    for id in &a.run_ids {
        assert_eq!(store.run(*id).unwrap().kind, "capacity");
    }
}
