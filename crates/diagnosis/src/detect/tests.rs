//! The detectors' shared harness and their cases.
use super::*;
use crate::signal::Signal;
use crate::signal::{Concept, Input};
use crate::{context, diagnose};

/// The shared harness: every detector on empty, NaN-only, gappy and counter-reset inputs.
fn hostile_inputs() -> Vec<Input> {
    let mut out = vec![Input::default()];
    let all = [
        Concept::Running,
        Concept::Waiting,
        Concept::KvUsage,
        Concept::GpuUtil,
        Concept::MemCopyUtil,
        Concept::GrEngineActive,
        Concept::DramActive,
        Concept::TensorActive,
        Concept::PowerWatts,
        Concept::Preemptions,
        Concept::GeneratedTokens,
        Concept::StepTokensSum,
        Concept::StepCount,
        Concept::PromptTokens,
        Concept::RequestsFinished,
        Concept::PrefixCacheHits,
        Concept::PrefixCacheQueries,
        Concept::AdmissionRejections,
        Concept::SpecDrafts,
        Concept::SpecDraftTokens,
        Concept::SpecAcceptedTokens,
    ];
    let make = |f: &dyn Fn(usize) -> Option<f64>| {
        let mut i = Input {
            scrape_interval_s: Some(1.0),
            ..Input::default()
        };
        for c in all {
            let pts = (0..60)
                .filter_map(|k| f(k).map(|v| (k as f64, v)))
                .collect();
            i.signals.insert(c, Signal::new(c.name(), pts));
        }
        i
    };
    out.push(make(&|_| Some(f64::NAN)));
    out.push(make(&|k| {
        (k % 7 != 0 && !(20..35).contains(&k)).then_some(5.0)
    }));
    out.push(make(&|k| {
        Some(if k < 30 {
            k as f64 * 10.0
        } else {
            (k - 30) as f64
        })
    }));
    out.push(make(&|_| Some(0.0)));
    out.push(make(&|k| {
        Some(if k % 2 == 0 { f64::INFINITY } else { -1.0 })
    }));
    // A load's own prompt reuse that cannot be: no prompt tokens, NaN and negative TTFTs.
    let nan = llmscope_core::outcome::Summary {
        count: 3,
        p50: Some(f64::NAN),
        ..Default::default()
    };
    let mut odd = make(&|k| Some(if k < 30 { k as f64 } else { 0.0 }));
    odd.load.prefix = Some(llmscope_core::outcome::PrefixReuse {
        shared_prefix_tokens: Some(u32::MAX),
        repeated_tokens: Some(7),
        ttft_hit: nan.clone(),
        ttft_miss: llmscope_core::outcome::Summary {
            p50: Some(-1.0),
            ..nan
        },
        ..Default::default()
    });
    out.push(odd);
    out
}

#[test]
fn every_detector_survives_hostile_input_and_cites_evidence() {
    for input in hostile_inputs() {
        let cx = context(&input);
        for d in detectors() {
            if let Some(f) = d.detect(&cx) {
                assert_eq!(f.rule, d.id());
                assert!((0.0..1.0).contains(&f.confidence.unwrap_or(-1.0)));
                if (f.bottleneck.is_some() && f.rule != "client") || f.rule == "prefix_cache" {
                    assert!(!f.evidence.is_empty(), "{} fired without evidence", f.rule);
                }
            }
        }
        let _ = DataQuality.all(&cx);
        let _ = diagnose(&input);
    }
}

/// Three replicas read together (Prometheus, one series per pod): running sums to 3 × 16, which
/// is the fleet's batch cap, and the advice stays per replica.
#[test]
fn a_fleet_is_batch_limited_at_replicas_times_max_num_seqs() {
    use llmscope_core::series::{Labels, Point, Series, SeriesKey};
    let pod = |name: &str, pod: &str, f: &dyn Fn(f64) -> f64| Series {
        key: SeriesKey::new(name, Labels::new([("pod".to_owned(), pod.to_owned())])),
        points: (0..120)
            .map(|k| {
                let t = k as f64;
                let on = if (15.0..95.0).contains(&t) { 1.0 } else { 0.0 };
                Point { t, v: on * f(t) }
            })
            .collect(),
    };
    let mut series = Vec::new();
    for p in ["a", "b", "c"] {
        series.push(pod("vllm:num_requests_running", p, &|_| 16.0));
        series.push(pod("vllm:num_requests_waiting", p, &|_| 8.0));
        series.push(pod("vllm:kv_cache_usage_perc", p, &|_| 0.03));
        series.push(pod("DCGM_FI_DEV_GPU_UTIL", p, &|_| 30.0));
    }
    let (mut input, _) = crate::build::signals_from_series(&series);
    input.engine.max_num_seqs = Some(16);
    input.scrape_interval_s = Some(1.0);
    assert_eq!(input.engines, 3);
    let d = diagnose(&input);
    assert_eq!(d.verdict.bottleneck, Bottleneck::BatchLimit, "{d:#?}");
    let primary = d.findings.iter().find(|f| f.rule == "batch_limit").unwrap();
    assert!(
        primary.message.contains("× 3 replicas"),
        "{}",
        primary.message
    );
    let first = &d.recommendations[0].action;
    assert!(first.contains("from 16 to 32"), "{first}");
    // Read as one engine, 48 running is not a plateau at --max-num-seqs 16.
    input.engines = 1;
    assert_ne!(diagnose(&input).verdict.bottleneck, Bottleneck::BatchLimit);
}

/// 60 s loaded between 10 s of idle on each side: running, waiting and KV as given.
fn loaded(running: f64, waiting: f64) -> Input {
    let shape = |v: f64| -> Vec<(f64, f64)> {
        (0..80)
            .map(|k| (k as f64, if (10..70).contains(&k) { v } else { 0.0 }))
            .collect()
    };
    let mut i = Input {
        scrape_interval_s: Some(1.0),
        ..Input::default()
    };
    i.engine.max_num_seqs = Some(16);
    i.load.concurrency = Some(32);
    i.signals
        .insert(Concept::Running, Signal::new("r", shape(running)));
    i.signals
        .insert(Concept::Waiting, Signal::new("w", shape(waiting)));
    i.signals
        .insert(Concept::KvUsage, Signal::new("kv", shape(0.02)));
    i
}

fn ids(d: &crate::Diagnosis) -> Vec<&'static str> {
    d.findings.iter().map(|f| f.rule).collect()
}

/// A client that fell short while the server queued is a warning; the server's limit stands.
#[test]
fn a_server_queue_outranks_the_clients_self_check() {
    let mut i = loaded(16.0, 14.0);
    i.load.client_limited = true;
    i.load.client_note = Some("client-limited: achieved 30 concurrency of 32".into());
    let d = diagnose(&i);
    assert_eq!(
        d.verdict.bottleneck,
        Bottleneck::BatchLimit,
        "{:?}",
        ids(&d)
    );
    let client = d.findings.iter().find(|f| f.rule == "client").unwrap();
    assert_eq!(client.severity, Severity::Warning);
    assert!(client.bottleneck.is_none() && client.message.contains("reached regardless"));
}

/// Concurrency within the cap cannot build a queue: load not reached, whatever the client did;
/// above the cap with no queue and a client that missed its load, the client is the verdict.
#[test]
fn concurrency_within_the_cap_is_load_not_reached_whatever_the_client_did() {
    let mut i = loaded(16.0, 0.0);
    i.load.concurrency = Some(16);
    i.load.client_limited = true;
    assert_eq!(diagnose(&i).verdict.bottleneck, Bottleneck::LoadNotReached);
    let mut above = loaded(9.0, 0.0);
    above.load.client_limited = true;
    assert_eq!(diagnose(&above).verdict.bottleneck, Bottleneck::Client);
}

/// Under the cap, a KV pool that filled can queue what the cap would not: nothing is ruled out
/// by design, and no message says a queue cannot form (a real vLLM 0.32 with a 2,048-token
/// pool, 16 clients under a cap of 16: 4.0 waiting, KV at 100 %, its gauges stale to us).
#[test]
fn a_full_kv_pool_under_the_cap_is_not_load_not_reached_by_design() {
    let mut i = loaded(16.0, 0.0);
    i.load.concurrency = Some(16);
    let kv = (0..80)
        .map(|k| (f64::from(k), if (10..70).contains(&k) { 0.95 } else { 0.0 }))
        .collect();
    i.signals.insert(Concept::KvUsage, Signal::new("kv", kv));
    let d = diagnose(&i);
    assert!(
        !d.findings
            .iter()
            .any(|f| f.message.contains("no queue can form")),
        "{:?}",
        d.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
    let lnr = d.findings.iter().find(|f| f.rule == "load_not_reached");
    assert!(
        lnr.is_none_or(|f| f.confidence.is_some_and(|c| c < 0.9)),
        "{lnr:?}"
    );
}

/// A contended machine is data quality: same verdict, 0.1 less confidence, said once.
#[test]
fn a_contended_machine_lowers_confidence_and_is_not_a_bottleneck() {
    let calm = diagnose(&loaded(16.0, 16.0));
    let mut i = loaded(16.0, 16.0);
    i.load.contention = Some("its threads waited for a core 600 ms per second".into());
    let busy = diagnose(&i);
    assert_eq!(busy.verdict.bottleneck, calm.verdict.bottleneck);
    let drop = calm.verdict.confidence - busy.verdict.confidence;
    assert!((drop - crate::CONTENDED_PENALTY).abs() < 1e-9, "{drop}");
    assert!(ids(&busy).contains(&"contended-machine"));
}

/// A starved API server holds requests the waiting gauge never sees: the client's in-flight
/// count shows the demand, the batch limit stands, and the hidden queue is named.
#[test]
fn demand_held_in_front_of_the_scheduler_still_shows_the_batch_limit() {
    let mut i = loaded(16.0, 0.0);
    i.load.achieved_concurrency = Some(31.5);
    let d = diagnose(&i);
    assert_eq!(
        d.verdict.bottleneck,
        Bottleneck::BatchLimit,
        "{:?}",
        ids(&d)
    );
    let front = d
        .findings
        .iter()
        .find(|f| f.rule == "front_end_queue")
        .unwrap();
    assert!(
        front.message.starts_with("15.5 of the 31.5"),
        "{}",
        front.message
    );
    // Without the client's count, the same gauges are not enough to call it.
    i.load.achieved_concurrency = None;
    assert_ne!(diagnose(&i).verdict.bottleneck, Bottleneck::BatchLimit);
}

/// A counter rising by `per_s` every second while loaded (10 ≤ t < 70).
fn counter(per_s: f64) -> Signal {
    let mut total = 0.0;
    let pts = (0..80)
        .map(|k| {
            if (10..70).contains(&k) {
                total += per_s;
            }
            (k as f64, total)
        })
        .collect();
    Signal::new("c", pts)
}

/// Issue 22's cap-4 case: the scheduler kept a queue (the engine's queue-time counter says 4.8
/// waiting on average), running reached the cap but in only 40 % of scrapes, KV near empty: the
/// cap binds by elimination, never "none".
#[test]
fn a_scheduler_queue_with_the_cap_reached_is_the_batch_limit_by_elimination() {
    let mut i = loaded(4.0, 5.0);
    i.engine.max_num_seqs = Some(4);
    i.load.concurrency = Some(12);
    let pts: Vec<(f64, f64)> = (0..80)
        .map(|k| {
            let v = match k {
                10..70 if k % 5 < 2 => 4.0,
                10..70 => 2.0,
                _ => 0.0,
            };
            (k as f64, v)
        })
        .collect();
    i.signals.insert(Concept::Running, Signal::new("r", pts));
    i.signals.insert(Concept::QueuedSeconds, counter(4.8));
    let d = diagnose(&i);
    assert_eq!(
        d.verdict.bottleneck,
        Bottleneck::BatchLimit,
        "{:?}",
        ids(&d)
    );
    assert!(
        d.verdict
            .summary
            .contains("held by the scheduler's queue at 4"),
        "{}",
        d.verdict.summary
    );
    // Without the counter and with the gauge's queue in few scrapes, nothing proves the queue.
    i.signals.remove(&Concept::QueuedSeconds);
    let sparse: Vec<(f64, f64)> = (0..80)
        .map(|k| {
            (
                k as f64,
                if (10..70).contains(&k) && k % 3 == 0 {
                    5.0
                } else {
                    0.0
                },
            )
        })
        .collect();
    i.signals.insert(Concept::Waiting, Signal::new("w", sparse));
    assert_ne!(diagnose(&i).verdict.bottleneck, Bottleneck::BatchLimit);
}

/// Requests held in front of the scheduler while it had no queue of its own (its queue-time
/// counter near 0) and the load offered more than the cap: the API server is the limit.
#[test]
fn no_scheduler_queue_with_demand_over_the_cap_is_the_front_end() {
    let mut i = loaded(16.0, 0.0);
    i.load.achieved_concurrency = Some(31.0);
    i.signals.insert(Concept::QueuedSeconds, counter(0.1));
    i.signals.insert(Concept::RunningSeconds, counter(9.0));
    let d = diagnose(&i);
    assert_eq!(d.verdict.bottleneck, Bottleneck::FrontEnd, "{:?}", ids(&d));
    assert!(
        d.verdict.summary.contains("the front end, not the engine"),
        "{}",
        d.verdict.summary
    );
    assert!(
        d.recommendations[0].action.contains("--api-server-count"),
        "{:?}",
        d.recommendations
    );
    // Concurrency within the cap: no queue could form — load not reached, front end secondary.
    i.load.concurrency = Some(16);
    let d = diagnose(&i);
    assert_eq!(d.verdict.bottleneck, Bottleneck::LoadNotReached);
    assert!(ids(&d).contains(&"front_end_queue"));
}

#[test]
fn absent_signals_are_reported_not_zeroed() {
    let d = diagnose(&Input::default());
    assert_eq!(d.verdict.bottleneck, Bottleneck::None);
    assert!(
        d.findings
            .iter()
            .any(|f| f.rule == "missing-signal" && f.message.contains("kv_usage"))
    );
}

/// Issue 31: a KV usage of 300 (30,000 %) gave `kv_cache_capacity` at 0.70. No fraction can be
/// 300: those samples are left out and named, and the verdict is drawn without them.
#[test]
fn impossible_values_are_named_and_kept_out_of_the_verdict() {
    use llmscope_core::series::{Labels, Point, Series, SeriesKey};
    let series = |name: &str, v: f64| Series {
        key: SeriesKey::new(name, Labels::default()),
        points: (0..80)
            .map(|k| Point {
                t: f64::from(k),
                v: if (10..70).contains(&k) { v } else { 0.0 },
            })
            .collect(),
    };
    let (mut i, _) = crate::build::signals_from_series(&[
        series("vllm:num_requests_running", 10.0),
        series("vllm:num_requests_waiting", 20.0),
        series("vllm:kv_cache_usage_perc", 300.0),
    ]);
    i.scrape_interval_s = Some(1.0);
    i.engine.max_num_seqs = Some(16);
    i.load.concurrency = Some(32);
    assert_eq!(i.rejected.len(), 1, "{:?}", i.rejected);
    assert_eq!((i.rejected[0].count, i.rejected[0].highest), (60, 300.0));
    let d = diagnose(&i);
    assert_ne!(d.verdict.bottleneck, Bottleneck::KvCacheCapacity, "{d:?}");
    let said = d
        .findings
        .iter()
        .find(|f| f.rule == "impossible-values")
        .map(|f| f.message.clone())
        .unwrap_or_default();
    assert!(
        said.contains("60 sample(s) of vllm:kv_cache_usage_perc were 300")
            && said.contains("a fraction from 0 to 1"),
        "{said}"
    );
    // A negative running count is no count either.
    let (i, _) = crate::build::signals_from_series(&[series("vllm:num_requests_running", -4.0)]);
    assert_eq!(i.rejected[0].lowest, -4.0);
}

/// A chunked prefill the counters see only when it completes (vLLM counts the whole prompt in
/// that step): 1,000-token prompts under a 128-token budget, five decodes and a 123-token chunk
/// in each of eight steps a second, scraped every half second — the real vLLM 0.32 on a starved
/// host, whose 8 s windows read 105–150 tokens per step for a true 128 by where they fell. An
/// 8 s steady window, every phase of the prefill cycle against the scrapes.
fn chunked_prefill(phase: f64) -> Input {
    let mut i = loaded(5.0, 11.0);
    i.engine.max_num_batched_tokens = Some(128);
    let (mut sum, mut steps, mut prompts) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..160 {
        let t = f64::from(k) * 0.5;
        // Steps taken by t, only while loaded (10 ≤ t < 18 in the window below).
        let n = ((t - 10.0).clamp(0.0, 8.0) * 8.0).floor();
        let done = (123.0 * n / 1000.0 + phase).floor() - phase.floor();
        sum.push((t, 5.0 * n + 1000.0 * done));
        steps.push((t, n));
        prompts.push((t, 1000.0 * done));
    }
    for (c, pts) in [
        (Concept::StepTokensSum, sum),
        (Concept::StepCount, steps),
        (Concept::PromptTokens, prompts),
    ] {
        i.signals.insert(c, Signal::new(c.name(), pts));
    }
    let gauge = |v: f64| {
        (0..160)
            .map(|k| {
                let t = f64::from(k) * 0.5;
                (t, if (10.0..18.0).contains(&t) { v } else { 0.0 })
            })
            .collect()
    };
    i.signals
        .insert(Concept::Running, Signal::new("running", gauge(5.0)));
    i.signals
        .insert(Concept::Waiting, Signal::new("waiting", gauge(11.0)));
    i
}

#[test]
fn tokens_per_step_hold_whole_prefill_cycles_wherever_the_window_falls() {
    for p in 0..10 {
        let input = chunked_prefill(f64::from(p) / 10.0);
        let cx = context(&input);
        let s = cx.step_tokens().expect("steps in the window");
        assert!(
            (s.per_step - 128.0).abs() <= s.uncertainty + 0.5,
            "phase {p}: {s:?}"
        );
        assert!(
            s.uncertainty > 0.0 && s.uncertainty < 15.0,
            "phase {p}: {s:?}"
        );
        let d = diagnose(&input);
        assert_eq!(
            d.verdict.bottleneck,
            Bottleneck::TokenBudget,
            "phase {p}: {s:?} {:?}",
            ids(&d)
        );
    }
    // Steps far from full stay clear of the line whatever the phase: a 256-token budget.
    let mut half = chunked_prefill(0.5);
    half.engine.max_num_batched_tokens = Some(256);
    assert_ne!(diagnose(&half).verdict.bottleneck, Bottleneck::TokenBudget);
}

/// The chunked prefill above with the decoded tokens the engine counts (five a step), and no
/// `--max-num-batched-tokens` given.
fn chunked_prefill_untold(phase: f64) -> Input {
    let mut i = chunked_prefill(phase);
    i.engine.max_num_batched_tokens = None;
    let generated = (0..160)
        .map(|k| {
            let t = f64::from(k) * 0.5;
            (t, 5.0 * ((t - 10.0).clamp(0.0, 8.0) * 8.0).floor())
        })
        .collect();
    i.signals.insert(
        Concept::GeneratedTokens,
        Signal::new("generated", generated),
    );
    i
}

/// Not told the budget (issue 51), the steps say it: a queue, five of sixteen sequences decoding
/// and KV with room leave vLLM's scheduler only the step's budget to hold requests back, and the
/// budget is what the steps carry — 128 within their uncertainty, wherever the window falls. The
/// advice doubles it. The batch at its cap, a full KV pool or an unknown cap are not read so.
#[test]
fn the_budget_is_read_from_the_steps_when_not_told() {
    for p in 0..10 {
        let input = chunked_prefill_untold(f64::from(p) / 10.0);
        let d = diagnose(&input);
        assert_eq!(
            d.verdict.bottleneck,
            Bottleneck::TokenBudget,
            "phase {p}: {:?} {}",
            ids(&d),
            d.verdict.summary
        );
        let f = &d.findings[0];
        let read = f
            .evidence
            .iter()
            .find(|e| e.statistic == "tokens_per_step")
            .map(|e| e.value)
            .unwrap_or(0.0);
        assert!((read - 128.0).abs() <= 15.0, "phase {p}: read {read}");
        assert!(
            f.message.contains("inferred from the steps"),
            "{}",
            f.message
        );
        let advice = &d.recommendations[0];
        assert!(
            advice
                .action
                .contains("--max-num-batched-tokens from about 128")
                && advice.action.contains("to 256")
                && advice.setting.is_some_and(|s| s.value == 256.0),
            "{advice:?}"
        );
    }
    let verdict = |i: &Input| diagnose(i).verdict.bottleneck;
    // The batch reached its cap in the window: the budget is not what held the queue.
    let mut capped = chunked_prefill_untold(0.5);
    let mut running = capped.signals[&Concept::Running].points.clone();
    running[40].1 = 16.0;
    capped
        .signals
        .insert(Concept::Running, Signal::new("running", running));
    assert_ne!(verdict(&capped), Bottleneck::TokenBudget);
    // No cap given: nothing tells the budget from a batch moving in waves.
    let mut uncapped = chunked_prefill_untold(0.5);
    uncapped.engine.max_num_seqs = None;
    assert_ne!(verdict(&uncapped), Bottleneck::TokenBudget);
    // A full KV pool holds admissions itself.
    let mut full = chunked_prefill_untold(0.5);
    let kv = full.signals[&Concept::KvUsage]
        .points
        .iter()
        .map(|&(t, v)| (t, if v > 0.0 { 0.97 } else { 0.0 }))
        .collect();
    full.signals.insert(Concept::KvUsage, Signal::new("kv", kv));
    assert_ne!(verdict(&full), Bottleneck::TokenBudget);
}
