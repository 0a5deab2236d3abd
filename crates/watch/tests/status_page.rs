//! Issue 26: the status page in headless Chromium, its history filled by `State::record` as the
//! watch loop fills it: every deployment's sparklines, charts with data, unknown values drawn as
//! gaps, a hostile deployment name escaped, nothing fetched from off the page.
#![allow(clippy::print_stderr)] // a skipped test says why, outside CI

#[path = "../../render/tests/chromium/mod.rs"]
mod chromium;

use chromium::{HOSTILE, rendered};
use llmscope_diagnosis::Bottleneck;
use llmscope_diagnosis::stall::{Stall, StallState};
use llmscope_watch::evaluate::{DeploymentStatus, Evaluation};
use llmscope_watch::fleet::DeploymentKey;
use llmscope_watch::history::POINTS;
use llmscope_watch::state::{Shown, State};
use std::collections::BTreeMap;

/// One deployment at evaluation `n`: KV filling up, GPU busy, requests in the engine.
fn deployment(name: &str, b: Bottleneck, n: u32, kv: Option<f64>) -> DeploymentStatus {
    let stalled = b == Bottleneck::None && n > 15;
    DeploymentStatus {
        key: DeploymentKey {
            namespace: "llm".to_owned(),
            deployment: name.to_owned(),
        },
        replicas: 8,
        bottleneck: b,
        confidence: 0.8,
        summary: format!("{} on {name}", b.as_str()),
        evidence: Vec::new(),
        advice: Some(format!("look at {name}")),
        kv_headroom: kv.map(|u| 1.0 - u),
        gpu_headroom: Some(0.5 - f64::from(n % 5) * 0.05),
        stall: Stall {
            state: if stalled {
                StallState::Stalled
            } else {
                StallState::Serving
            },
            last_progress: None,
            since: None,
            in_engine: Some(f64::from(10 + n % 7)),
            why: format!("why {name}"),
        },
        drift: Vec::new(),
        findings: BTreeMap::new(),
        replica_verdicts: Vec::new(),
    }
}

/// A watch that has evaluated nothing yet.
fn empty_state() -> State {
    State::new(Shown {
        prometheus: "http://prometheus:9090".to_owned(),
        interval_s: 60.0,
        window_s: 900.0,
        shard: "0/1".to_owned(),
        drift_files: 0,
    })
}

/// `evaluations` evaluations a minute apart, recorded as the loop records them: a hostile
/// deployment, batch-limited, whose KV-cache series vanish for evaluations 40–44; one without
/// KV-cache series at all; one that stalls.
fn state(evaluations: u32) -> (State, f64) {
    let mut s = empty_state();
    let t0 = 1_700_000_000.0;
    for n in 0..evaluations {
        let at = t0 + 60.0 * f64::from(n);
        let kv = (!(40..=44).contains(&n)).then_some(0.3 + f64::from(n) * 0.01);
        let e = Evaluation {
            at,
            duration_s: 0.3,
            deployments: vec![
                deployment(&format!("chat-{HOSTILE}"), Bottleneck::BatchLimit, n, kv),
                deployment("embed", Bottleneck::LoadNotReached, n, None),
                deployment("code", Bottleneck::None, n, Some(0.3)),
            ],
            series: 120,
            points: 12_000,
            unattributed: 0,
            other_shards: 0,
            warnings: Vec::new(),
        };
        s.record(e, at + 0.3);
    }
    (s, t0 + 60.0 * f64::from(evaluations))
}

#[test]
fn the_status_page_charts_each_deployments_recent_history_in_chromium() {
    let (state, now) = state(POINTS as u32 + 10);
    assert!(state.history.values().all(|h| h.len() == POINTS));
    let page = llmscope_watch::status_page::render(&state, now);
    let Some((dom, dir)) = rendered("watch", page.as_bytes(), 3) else {
        return;
    };
    // The hostile and the stalled deployments need attention: their charts come first.
    let chart = |name: &str| {
        dom.find(&format!("<figcaption>llm/{name}"))
            .unwrap_or_else(|| panic!("{name}'s chart\n{dom}"))
    };
    let hostile = chart(&format!("chat-{}", chromium::esc_hostile()));
    assert!(hostile < chart("code") && chart("code") < chart("embed"));
    // Every row has its sparklines; the KV-cache hole is spaces, not the lowest block.
    assert_eq!(dom.matches("<td class=\"spark\">").count(), 3, "{dom}");
    let kv_row = dom[dom.find("<td class=\"spark\">").unwrap()..]
        .split("<small>")
        .next()
        .unwrap()
        .to_owned();
    assert!(kv_row.contains("  ") && kv_row.contains('█'), "{kv_row}");
    // A value never known is said so, not drawn at 0.
    let embed = &dom[chart("embed")..];
    assert!(embed.contains("KV-cache used: no data"), "{embed}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn before_a_second_evaluation_the_page_says_charts_will_come() {
    let (state, now) = state(1);
    let page = llmscope_watch::status_page::render(&state, now);
    assert!(page.contains("Charts appear after the second evaluation"));
    assert!(!page.contains("<svg") && !page.contains("<script"));
}

/// At the scale watch is built for — 1,000 deployments, a full history each — the page keeps
/// [`CHARTS`] charts and a sparkline per row, and stays small and quick to build.
#[test]
fn a_thousand_deployments_make_a_small_page() {
    use llmscope_watch::status_page::CHARTS;
    let mut s = empty_state();
    for n in 0..POINTS as u32 {
        let at = 1_700_000_000.0 + 60.0 * f64::from(n);
        let deployments = (0..1000)
            .map(|i| deployment(&format!("d{i}"), Bottleneck::BatchLimit, n, Some(0.5)))
            .collect();
        let e = Evaluation {
            at,
            duration_s: 1.0,
            deployments,
            series: 0,
            points: 0,
            unattributed: 0,
            other_shards: 0,
            warnings: Vec::new(),
        };
        s.record(e, at);
    }
    let started = std::time::Instant::now();
    let page = llmscope_watch::status_page::render(&s, 1_700_004_000.0);
    let took = started.elapsed();
    eprintln!("1,000 deployments: {} bytes in {took:?}", page.len());
    assert_eq!(page.matches("<svg").count(), CHARTS);
    assert_eq!(page.matches("<td class=\"spark\">").count(), 1000);
    assert!(page.len() < 2 * 1024 * 1024, "{} bytes", page.len());
}
