//! The prefix-cache finding and its advice, on 60 s of load (10 ≤ t < 70) scraped every second.
use super::*;
use crate::detect::Bottleneck;
use crate::diagnose;
use crate::signal::{Input, KvCacheConfig, Signal};
use crate::{Diagnosis, Recommendation};

/// A gauge read every second, `f(k)` while loaded, 0 before and after.
fn gauge(f: &dyn Fn(usize) -> f64) -> Signal {
    let pts = (0..80)
        .map(|k| (k as f64, if (10..70).contains(&k) { f(k) } else { 0.0 }))
        .collect();
    Signal::new("g", pts)
}

/// A counter that grows by `f(k)` at each loaded second `k`.
fn counter(f: &dyn Fn(usize) -> f64) -> Signal {
    let mut total = 0.0;
    let pts = (0..80)
        .map(|k| {
            if (10..70).contains(&k) {
                total += f(k);
            }
            (k as f64, total)
        })
        .collect();
    Signal::new("c", pts)
}

/// 16 running and 4 waiting while loaded, KV as `kv`; the engine looks up 2,000 prompt tokens a
/// second and hits `hit(k)` of them.
fn engine(kv: &dyn Fn(usize) -> f64, hit: &dyn Fn(usize) -> f64) -> Input {
    let mut i = Input {
        scrape_interval_s: Some(1.0),
        ..Input::default()
    };
    i.engine.max_num_seqs = Some(16);
    i.load.concurrency = Some(20);
    i.signals.insert(Concept::Running, gauge(&|_| 16.0));
    i.signals.insert(Concept::Waiting, gauge(&|_| 4.0));
    i.signals.insert(Concept::KvUsage, gauge(kv));
    i.signals
        .insert(Concept::PrefixCacheQueries, counter(&|_| 2000.0));
    i.signals
        .insert(Concept::PrefixCacheHits, counter(&|k| 2000.0 * hit(k)));
    i
}

/// A load that repeats `repeated` of its 100,000 prompt tokens.
fn reuse(repeated: f64) -> PrefixReuse {
    PrefixReuse {
        prompt_tokens: 100_000,
        repeated_tokens: Some((repeated * 100_000.0) as u64),
        ..PrefixReuse::default()
    }
}

fn p50(count: u64, ms: f64) -> Summary {
    Summary {
        count,
        p50: Some(ms),
        ..Summary::default()
    }
}

fn prefix_finding(d: &Diagnosis) -> &Finding {
    d.findings
        .iter()
        .find(|f| f.rule == "prefix_cache")
        .unwrap_or_else(|| panic!("no prefix_cache finding: {:#?}", d.findings))
}

fn advice<'d>(d: &'d Diagnosis, action: &str) -> Option<&'d Recommendation> {
    d.recommendations
        .iter()
        .find(|r| r.action.starts_with(action))
}

fn evidence<'f>(f: &'f Finding, statistic: &str) -> &'f Evidence {
    f.evidence
        .iter()
        .find(|e| e.statistic == statistic)
        .unwrap_or_else(|| panic!("no {statistic} in {:#?}", f.evidence))
}

const KV_ROOM: &str = "Give the KV cache more room";
const ROUTE: &str = "Route requests by prefix";

/// The cache hits about what the load repeats, KV half full: the rate, the counts, the repeat
/// share and how much sooner hits answer, as information; no thrashing, no advice.
#[test]
fn a_healthy_cache_states_its_hit_rate_against_what_the_load_repeats() {
    let mut i = engine(&|_| 0.5, &|_| 0.6);
    i.load.prefix = Some(PrefixReuse {
        ttft_hit: p50(300, 40.0),
        ttft_miss: p50(100, 320.0),
        reported: 400,
        cached_tokens: 58_000,
        ..reuse(0.62)
    });
    let d = diagnose(&i);
    let f = prefix_finding(&d);
    assert_eq!((f.severity, f.bottleneck), (Severity::Info, None));
    // Readings 10..=69: 59 intervals of 2,000 tokens looked up, 1,200 hit.
    assert!(
        f.message.starts_with("the prefix cache hit 60% of the 118,000 prompt tokens the engine looked up over the steady window (70,800 tokens)"),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains("the load repeats 62% of its prompt tokens (62,000 of 100,000"),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("; the server reported 58% of the load's prompt tokens cached (58,000 tokens, in the usage of 400 requests)"),
        "{}",
        f.message
    );
    assert_eq!(evidence(f, "cached_share").value, 0.58);
    assert!(
        !f.message.contains("evicts") && !f.message.contains("under half"),
        "{}",
        f.message
    );
    let rate = evidence(f, "hit_rate");
    assert_eq!((rate.value, rate.test.as_ref()), (0.6, ">="));
    assert_eq!(rate.threshold, Some(0.31));
    assert_eq!(evidence(f, "increase").value, 118_000.0);
    assert!(
        advice(&d, KV_ROOM).is_none() && advice(&d, ROUTE).is_none(),
        "{:?}",
        d.recommendations
    );
    // The verdict is the batch limit's, as it would be without the cache.
    assert_eq!(d.verdict.bottleneck, Bottleneck::BatchLimit);
    // Without running gauges there is no steady phase: the load's window speaks.
    i.signals.remove(&Concept::Running);
    i.load.window = Some((10.0, 69.0));
    let f = PrefixCache.detect(&crate::context(&i)).expect("a finding");
    assert!(
        f.message
            .contains("118,000 prompt tokens the engine looked up over the load window"),
        "{}",
        f.message
    );
    assert_eq!(f.evidence[0].window, Some((10.0, 69.0)));
}

/// Hits fall from 60 % to 10 % of lookups once KV passes 85 %, and the engine preempts: the
/// cache evicts prefix blocks it would have reused — a warning, and room for the KV cache.
#[test]
fn thrashing_under_kv_pressure_is_a_warning_with_the_kv_advice() {
    let high = |k: usize| k >= 40;
    let mut i = engine(&|k| if high(k) { 0.95 } else { 0.5 }, &|k| {
        if high(k) { 0.1 } else { 0.6 }
    });
    i.signals.insert(
        Concept::Preemptions,
        counter(&|k| if high(k) { 1.0 } else { 0.0 }),
    );
    i.engine.kv_cache = Some(KvCacheConfig {
        size_tokens: Some(65_536),
        ..KvCacheConfig::default()
    });
    let d = diagnose(&i);
    let f = prefix_finding(&d);
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.message.contains("under KV pressure (KV ≥ 85%) the hit rate fell to 10% (30 intervals, 60,000 tokens looked up) from 60% below it (29 intervals, 58,000 tokens)"),
        "{}",
        f.message
    );
    let e = evidence(f, "hit_rate_kv_high");
    assert_eq!(
        (e.value, e.test.as_ref(), e.threshold),
        (0.1, "<", Some(0.3))
    );
    assert_eq!(evidence(f, "max").value, 0.95);
    let r = advice(&d, KV_ROOM).expect("KV advice");
    assert!(r.action.contains("lower --max-num-seqs"), "{}", r.action);
    assert_eq!(
        r.reason,
        "the prefix cache hit 10% of prompt tokens under KV pressure (KV ≥ 85%) against 60% below it: blocks it would have reused were evicted; the pool holds 65,536 tokens"
    );
}

/// KV full the whole window (no interval below it to compare with): a load that repeats 70 %
/// of its prompt tokens while the cache hits 20 %, with preemptions, is thrashing too.
#[test]
fn a_cache_far_under_the_repeat_share_with_kv_full_is_thrashing() {
    let mut i = engine(&|_| 0.95, &|_| 0.2);
    i.signals.insert(Concept::Preemptions, counter(&|_| 0.5));
    i.load.prefix = Some(reuse(0.7));
    let d = diagnose(&i);
    let f = prefix_finding(&d);
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.message
            .contains("so the cache hit under half of what it could (20% of 70%)")
            && f.message.contains(
                "while KV reached 95% and the engine preempted 30 requests: it evicts prefix blocks"
            ),
        "{}",
        f.message
    );
    assert_eq!(evidence(f, "hit_rate").test, "<");
    let r = advice(&d, KV_ROOM).expect("KV advice");
    assert!(
        r.reason.starts_with("the prefix cache hit 20% of prompt tokens while the load repeats 70% and KV reached 95%"),
        "{}",
        r.reason
    );
    // The same rates with KV at half and no preemption: nothing is evicted, so no thrashing.
    let mut calm = engine(&|_| 0.5, &|_| 0.2);
    calm.load.prefix = Some(reuse(0.7));
    let d = diagnose(&calm);
    assert_eq!(prefix_finding(&d).severity, Severity::Info);
    assert!(advice(&d, KV_ROOM).is_none(), "{:?}", d.recommendations);
}

/// No prefix-cache counters, a load that repeats half its prompt: the hit rate is unknown and
/// the metrics to expose are named — never a 0 % hit rate.
#[test]
fn absent_counters_with_a_repeating_load_say_unknown_never_zero() {
    let mut i = engine(&|_| 0.5, &|_| 0.0);
    i.signals.remove(&Concept::PrefixCacheHits);
    i.signals.remove(&Concept::PrefixCacheQueries);
    i.load.prefix = Some(reuse(0.5));
    let d = diagnose(&i);
    let f = prefix_finding(&d);
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.message.starts_with("the engine's prefix-cache hit rate is unknown: vllm:prefix_cache_hits_total and vllm:prefix_cache_queries_total")
            && f.message.contains("absent, not 0")
            && f.message.contains("the load repeats 50% of its prompt tokens (50,000 of 100,000"),
        "{}",
        f.message
    );
    assert!(!f.message.contains(" 0%"), "{}", f.message);
    assert!(
        f.evidence.iter().all(|e| e.signal != "prefix_cache_hits"),
        "{:?}",
        f.evidence
    );
    assert_eq!(evidence(f, "repeated_share").value, 0.5);
    // Counters that are there but counted no lookup: still unknown, not 0 %.
    let mut flat = engine(&|_| 0.5, &|_| 0.0);
    flat.signals
        .insert(Concept::PrefixCacheQueries, counter(&|_| 0.0));
    flat.load.prefix = Some(reuse(0.5));
    let f = PrefixCache
        .detect(&crate::context(&flat))
        .expect("a finding");
    assert!(
        f.message.contains("recorded no lookup over the window") && !f.message.contains(" 0%"),
        "{}",
        f.message
    );
    // Nothing from the engine and nothing from the load: nothing to say.
    flat.load.prefix = None;
    assert!(PrefixCache.detect(&crate::context(&flat)).is_none());
}

/// The engine says prefix caching is off while the load repeats 60 % of its prompt tokens.
#[test]
fn prefix_caching_off_with_repeats_is_a_warning_to_enable_it() {
    let mut i = engine(&|_| 0.5, &|_| 0.0);
    i.signals.remove(&Concept::PrefixCacheHits);
    i.signals.remove(&Concept::PrefixCacheQueries);
    i.engine.kv_cache = Some(KvCacheConfig {
        prefix_caching: Some(false),
        ..KvCacheConfig::default()
    });
    i.load.prefix = Some(reuse(0.6));
    let d = diagnose(&i);
    let f = prefix_finding(&d);
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.message.contains("prefix caching is off (vllm:cache_config_info enable_prefix_caching=False) while the load repeats 60% of its prompt tokens"),
        "{}",
        f.message
    );
    let e = f
        .evidence
        .iter()
        .find(|e| e.test == ">=")
        .expect("the repeat-share test");
    assert_eq!((e.value, e.threshold), (0.6, Some(REPEATED_SHARE)));
    let r = advice(&d, "Enable prefix caching").expect("enable advice");
    assert!(r.action.contains("--enable-prefix-caching"), "{}", r.action);
    assert!(
        r.reason
            .starts_with("the load repeats 60% of its prompt tokens (60,000 of 100,000)"),
        "{}",
        r.reason
    );
    // A load that repeats little: caching off is no warning and calls for nothing.
    i.load.prefix = Some(reuse(0.1));
    let d = diagnose(&i);
    assert_eq!(prefix_finding(&d).severity, Severity::Info);
    assert!(advice(&d, "Enable prefix caching").is_none());
}

/// Three replicas behind a router blind to prefixes: the cache hits 25 % of a load that repeats
/// 80 %, KV at 40 % — route by prefix; one replica with the same rates is not told so.
#[test]
fn a_fleet_missing_its_prefixes_is_told_to_route_by_prefix() {
    let mut i = engine(&|_| 0.4, &|_| 0.25);
    i.engines = 3;
    i.load.prefix = Some(reuse(0.8));
    let d = diagnose(&i);
    let f = prefix_finding(&d);
    assert_eq!(f.severity, Severity::Info, "{}", f.message);
    assert!(
        f.message
            .contains("so the cache hit under half of what it could (25% of 80%)"),
        "{}",
        f.message
    );
    let r = advice(&d, ROUTE).expect("route advice");
    assert!(
        r.action.contains("llm-d") && r.action.contains("production-stack"),
        "{}",
        r.action
    );
    assert_eq!(
        r.reason,
        "across 3 replicas the prefix cache hit 25% of prompt tokens while the load repeats 80%: a prefix cached on one replica misses on the others"
    );
    assert!(advice(&d, KV_ROOM).is_none(), "{:?}", d.recommendations);
    i.engines = 1;
    assert!(advice(&diagnose(&i), ROUTE).is_none());
}

/// A 1,500-token shared prefix, three quarters of the mean prompt, of which the cache hits
/// 10 %: the prefix is not reused as sent.
#[test]
fn a_long_shared_prefix_that_misses_is_told_to_stay_identical() {
    let mut i = engine(&|_| 0.4, &|_| 0.1);
    i.load.prefix = Some(PrefixReuse {
        shared_prefix_tokens: Some(1500),
        prompt_tokens: 200_000,
        repeated_tokens: Some(148_500),
        ttft_hit: p50(10, 50.0),
        ttft_miss: p50(90, 400.0),
        ..PrefixReuse::default()
    });
    let d = diagnose(&i);
    let r = advice(&d, "Shorten the shared prefix").expect("prefix advice");
    assert!(
        r.reason.starts_with("the shared prefix is 1,500 tokens, 75% of the mean 2,000-token prompt, yet the cache hit 10% of prompt tokens"),
        "{}",
        r.reason
    );
    // Hitting most of it, the same prefix calls for nothing.
    let mut good = engine(&|_| 0.4, &|_| 0.7);
    good.load.prefix = i.load.prefix.clone();
    assert!(advice(&diagnose(&good), "Shorten the shared prefix").is_none());
}

/// TTFT of hits against misses where the server counted cached tokens; of later turns against
/// first ones for sessions; a load that knows only its TTFT split still speaks.
#[test]
fn ttft_split_names_hits_and_misses_or_first_and_later_turns() {
    let mut i = engine(&|_| 0.5, &|_| 0.6);
    i.load.prefix = Some(PrefixReuse {
        ttft_hit: p50(300, 40.0),
        ttft_miss: p50(100, 320.0),
        ..reuse(0.62)
    });
    // With a queue in the engine, TTFT holds time queued: the split says so.
    let f = PrefixCache.detect(&crate::context(&i)).expect("a finding");
    assert!(
        f.message.contains("hits reached their first token in 40 ms (p50 of 300) against 320 ms for misses (p50 of 100): 8.0× faster — both include time queued"),
        "{}",
        f.message
    );
    i.signals.insert(Concept::Waiting, gauge(&|_| 0.0));
    i.load.concurrency = Some(12);
    let f = PrefixCache.detect(&crate::context(&i)).expect("a finding");
    assert!(
        f.message.ends_with("hits reached their first token in 40 ms (p50 of 300) against 320 ms for misses (p50 of 100): 8.0× faster"),
        "{}",
        f.message
    );
    let e = f
        .evidence
        .iter()
        .find(|e| e.signal == "ttft_hit")
        .expect("hit TTFT");
    assert_eq!(
        (e.value, e.test.as_ref(), e.threshold),
        (40.0, "<", Some(320.0))
    );
    // Sessions, no per-request cached counts: turns speak; the engine's counters are absent.
    i.signals.remove(&Concept::PrefixCacheHits);
    i.load.prefix = Some(PrefixReuse {
        turns: Some(4),
        ttft_first_turn: Some(p50(20, 500.0)),
        ttft_later_turns: Some(p50(60, 100.0)),
        ..PrefixReuse::default()
    });
    let f = PrefixCache.detect(&crate::context(&i)).expect("a finding");
    assert!(
        f.message.contains("hit rate is unknown")
            && f.message.ends_with("later turns reached their first token in 100 ms (p50 of 60) against 500 ms for first turns (p50 of 20): 5.0× faster"),
        "{}",
        f.message
    );
    // Later turns no faster: said so, not a speed-up.
    i.load.prefix.as_mut().unwrap().ttft_later_turns = Some(p50(60, 600.0));
    let f = PrefixCache.detect(&crate::context(&i)).expect("a finding");
    assert!(
        f.message
            .ends_with("against 500 ms for first turns (p50 of 20): no faster"),
        "{}",
        f.message
    );
}
