//! `llmscope dashboard` and `llmscope rules` as a user runs them (issue 7's contract): valid
//! dashboard JSON with panels and templating, rule files `promtool check rules` accepts, a
//! `PrometheusRule` with `--crd`, older dialects' names, and detection from a live simulator.

use crate::common::{job, llmscope, prometheus};
use llmscope_sim::metrics::Dialect;
use llmscope_sim::preset::preset;
use llmscope_sim::serve::{self, SimConfig};
use serde_json::Value;
use std::process::{Command, Output};
use std::time::Duration;

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn dashboard_is_grafana_json_with_panels_and_templating() {
    let text = stdout(&llmscope(&["dashboard", "--engine", "vllm@0.26"]));
    let d: Value = serde_json::from_str(&text).unwrap();
    assert!(d["panels"].as_array().is_some_and(|p| !p.is_empty()));
    assert!(
        d["templating"]["list"]
            .as_array()
            .is_some_and(|l| !l.is_empty())
    );
    let cm = stdout(&llmscope(&[
        "dashboard",
        "--engine",
        "vllm@0.26",
        "--format",
        "configmap",
    ]));
    assert!(cm.contains("kind: ConfigMap") && cm.contains("grafana_dashboard: \"1\""));
}

#[test]
fn rules_pass_promtool_and_crd_prints_a_prometheus_rule() {
    let yaml = stdout(&llmscope(&["rules", "--engine", "vllm@0.26"]));
    assert!(yaml.starts_with("groups:"));
    let crd = stdout(&llmscope(&[
        "rules",
        "--engine",
        "vllm@0.26",
        "--crd",
        "--release",
        "kps",
    ]));
    assert!(crd.contains("kind: PrometheusRule") && crd.contains("release: kps"));
    let promtool = std::path::Path::new("/usr/bin/promtool");
    if !promtool.is_file() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI needs promtool"
        );
        eprintln!("skipped promtool check: no /usr/bin/promtool");
        return;
    }
    let path = std::env::temp_dir().join(format!("llmscope-rules-{}.yaml", std::process::id()));
    std::fs::write(&path, yaml).unwrap();
    let out = Command::new(promtool)
        .args(["check", "rules"])
        .arg(&path)
        .output()
        .unwrap();
    std::fs::remove_file(&path).ok();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn older_versions_use_their_own_names_and_unknown_engines_fail() {
    let old = stdout(&llmscope(&["rules", "--engine", "vllm@0.8"]));
    assert!(old.contains("vllm:gpu_cache_usage_perc") && !old.contains("vllm:kv_cache_usage_perc"));
    let out = llmscope(&["dashboard", "--engine", "tgi@3.3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("supported: vllm"));
}

#[test]
fn a_live_simulator_is_detected_and_its_names_used() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut cfg = SimConfig::new(preset("l4-qwen2.5-3b").unwrap());
    cfg.dialect = Dialect::parse("0.10").unwrap();
    cfg.dcgm_interval = Duration::from_millis(100);
    let sim = rt.block_on(serve::start(cfg)).unwrap();
    let vllm = format!("{}/metrics", sim.vllm_url());
    let dcgm = sim.dcgm_url();
    // Until the emulated dcgm-exporter has collected once (polled to a deadline, not slept).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let collected = || {
        let out = llmscope(&["inventory", &dcgm]);
        String::from_utf8_lossy(&out.stdout).contains("DCGM_FI_DEV_GPU_UTIL")
    };
    while !collected() {
        assert!(std::time::Instant::now() < deadline, "dcgm never collected");
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = llmscope(&["dashboard", "--metrics-url", &vllm, "--metrics-url", &dcgm]);
    rt.block_on(sim.shutdown());
    let text = stdout(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("(detected)"));
    assert!(
        text.contains("vllm:time_per_output_token_seconds_bucket"),
        "0.10 names"
    );
    assert!(text.contains("DCGM_FI_DEV_GPU_UTIL"));
    assert!(
        !text.contains("kueue_"),
        "no Kueue on the page, no Scheduling row"
    );
}

#[test]
fn a_prometheus_is_read_for_the_names_it_holds() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut cfg = SimConfig::new(preset("l4-qwen2.5-3b").unwrap());
    cfg.dcgm_interval = Duration::from_millis(500);
    let sim = rt.block_on(serve::start(cfg)).unwrap();
    let jobs = [
        job("vllm", &sim.vllm_addr.to_string(), "/metrics", ""),
        job("dcgm", &sim.dcgm_addr.to_string(), "/metrics", ""),
    ];
    let Some(prom) = prometheus("generate", &jobs) else {
        rt.block_on(sim.shutdown());
        return;
    };
    let url = prom.url();
    // Until both targets were scraped, detection sees too little: retry for up to 30 s.
    let mut last = String::new();
    for _ in 0..60 {
        std::thread::sleep(Duration::from_millis(500));
        let out = llmscope(&["rules", "--prometheus", &url, "--lookback", "5m"]);
        last = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && last.contains("DCGM_FI_DEV_GPU_UTIL") {
            break;
        }
    }
    rt.block_on(sim.shutdown());
    assert!(last.contains("absent(vllm:kv_cache_usage_perc)"), "{last}");
    assert!(last.contains("absent(DCGM_FI_DEV_GPU_UTIL)"), "{last}");
    assert!(
        !last.contains("e2e_request_latency"),
        "0.26 has no e2e histogram"
    );
}
