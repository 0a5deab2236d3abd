//! `llmscope check` and `llmscope inventory` as a user runs them (child processes): the JSON
//! contract, every input kind, and exit codes 0 / 1 / 2 with `--fail-on`.

use crate::common::{job, json, llmscope, prometheus};
use llmscope_sim::serve::{SimConfig, start};
use std::path::PathBuf;
use std::process::Output;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../check/tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// The simulator's newest vLLM page (0.32), saved the way a user would (`curl … > vllm.prom`).
fn snapshot() -> PathBuf {
    let preset = llmscope_sim::preset::preset("l4-qwen2.5-3b").unwrap();
    let engine = llmscope_sim::engine::Engine::new(&preset, 1).unwrap();
    let page =
        llmscope_sim::metrics::render(&engine, llmscope_sim::metrics::Dialect::LATEST, 1.7e9);
    let path = std::env::temp_dir().join(format!("llmscope-check-{}.prom", std::process::id()));
    std::fs::write(&path, page).unwrap();
    path
}

#[test]
fn renamed_metric_against_a_snapshot_is_an_error_naming_the_new_name() {
    let snap = snapshot();
    let out = llmscope(&[
        "check",
        "--snapshot",
        snap.to_str().unwrap(),
        "--format",
        "json",
        "--expr",
        "max by (pod) (vllm:gpu_cache_usage_perc)",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let f = &v["findings"][0];
    assert!(
        matches!(
            f["rule"].as_str(),
            Some("renamed-metric" | "unknown-metric")
        ),
        "{v}"
    );
    assert!(
        f["suggestion"]
            .as_str()
            .unwrap()
            .contains("vllm:kv_cache_usage_perc"),
        "{v}"
    );
    for key in [
        "rule",
        "severity",
        "metric",
        "message",
        "suggestion",
        "location",
    ] {
        assert!(f.get(key).is_some(), "missing {key}: {f}");
    }
    let ok = llmscope(&[
        "check",
        "--snapshot",
        snap.to_str().unwrap(),
        "--expr",
        "max by (pod) (vllm:kv_cache_usage_perc)",
    ]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    std::fs::remove_file(snap).ok();
}

#[test]
fn engine_inventory_checks_promql_dashboards_and_rules() {
    for (file, rule) in [
        ("queries.promql", "bad-histogram-quantile"),
        ("vllm-grafana-v0.11.0.json", "renamed-metric"),
        ("rules.yaml", "unit-mismatch"),
    ] {
        let out = llmscope(&[
            "check",
            "--engine",
            "vllm@0.26",
            "--engine",
            "dcgm-exporter@4.5",
            "--engine",
            "kube-state-metrics@2.20",
            "--engine",
            "kueue@0.19",
            "--format",
            "json",
            &fixture(file),
        ]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json(&out);
        let rules: Vec<&str> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap())
            .collect();
        assert!(rules.contains(&rule), "{file}: {rules:?}");
        assert!(
            v["findings"][0]["location"]["line"].is_u64(),
            "{file}: lines are reported"
        );
    }
}

#[test]
fn exit_codes_follow_fail_on() {
    let warn_only = [
        "check",
        "--engine",
        "vllm@0.26",
        "--expr",
        "vllm:generation_tokens_total",
    ];
    assert_eq!(
        llmscope(&warn_only).status.code(),
        Some(0),
        "a warning does not fail by default"
    );
    let mut strict = warn_only.to_vec();
    strict.extend(["--fail-on", "warning"]);
    assert_eq!(llmscope(&strict).status.code(), Some(1));
    let never = [
        "check",
        "--engine",
        "vllm@0.26",
        "--fail-on",
        "never",
        "--expr",
        "vllm:nope_metric",
    ];
    assert_eq!(llmscope(&never).status.code(), Some(0));
    let sarif = llmscope(&[
        "check",
        "--engine",
        "vllm@0.26",
        "--format",
        "sarif",
        "--expr",
        "vllm:nope_metric",
    ]);
    assert_eq!(sarif.status.code(), Some(1));
    assert_eq!(
        json(&sarif)["runs"][0]["results"][0]["ruleId"],
        "unknown-metric"
    );
    for usage in [
        &["check", "--expr", "up"][..],
        &["check", "--engine", "vllm@0.26"][..],
        &["check", "--engine", "nginx@1", "--expr", "up"][..],
        &[
            "check",
            "--engine",
            "vllm@0.26",
            "--fail-on",
            "fatal",
            "--expr",
            "up",
        ][..],
        &["check", "--engine", "vllm@0.26", "/no/such/file.promql"][..],
    ] {
        let out = llmscope(usage);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{usage:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inventory_of_a_live_page_and_check_against_metrics_url() {
    let sim = start(SimConfig::new(
        llmscope_sim::preset::preset("l4-qwen2.5-3b").unwrap(),
    ))
    .await
    .expect("simulator");
    let url = sim.vllm_url();
    let metrics = format!("{}/metrics", url.trim_end_matches('/'));
    let dcgm = sim.dcgm_url();
    let (inv, chk) = tokio::task::spawn_blocking(move || {
        let inv = llmscope(&["inventory", "--format", "json", &metrics]);
        let chk = llmscope(&[
            "check",
            "--metrics-url",
            &metrics,
            "--metrics-url",
            &dcgm,
            "--format",
            "json",
            "--expr",
            "max(vllm:kv_cache_usage_perc) * 100 > DCGM_FI_DEV_GPU_UTIL",
            "--expr",
            "avg by (pod) (DCGM_FI_DEV_GPU_UTIL)",
        ]);
        (inv, chk)
    })
    .await
    .unwrap();
    sim.shutdown().await;
    assert_eq!(
        inv.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&inv.stderr)
    );
    let v = json(&inv);
    assert_eq!(v["engine"], "vllm", "{v}");
    assert_eq!(
        v["engines"][0]["version"],
        format!(
            "vllm {} (from /version)",
            llmscope_sim::metrics::Dialect::DEFAULT
        ),
        "the simulator answers /version: {v}"
    );
    assert!(
        v["families"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"] == "vllm:kv_cache_usage_perc")
    );
    assert_eq!(
        chk.status.code(),
        Some(0),
        "warnings only: {}",
        String::from_utf8_lossy(&chk.stdout)
    );
    let c = json(&chk);
    let rules: Vec<&str> = c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, vec!["exporter-attribution"], "{c}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_on_direct_pages() {
    let sim = start(SimConfig::new(
        llmscope_sim::preset::preset("l4-qwen2.5-3b").unwrap(),
    ))
    .await
    .expect("simulator");
    let vllm = format!("{}/metrics", sim.vllm_url());
    let dcgm = sim.dcgm_url();
    let (both, vllm_only) = tokio::task::spawn_blocking(move || {
        (
            llmscope(&["targets", "--format", "json", &vllm, &dcgm]),
            llmscope(&["targets", &vllm]),
        )
    })
    .await
    .unwrap();
    sim.shutdown().await;
    assert_eq!(
        both.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&both.stdout)
    );
    let v = json(&both);
    let checks = v["checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .any(|c| c["what"] == "GPU power > 0 W" && c["severity"].is_null())
    );
    assert_eq!(vllm_only.status.code(), Some(1));
    let text = String::from_utf8_lossy(&vllm_only.stdout);
    assert!(
        text.contains("FAIL gpu        dcgm-exporter series"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_and_targets_against_a_real_prometheus() {
    let sim = start(SimConfig::new(
        llmscope_sim::preset::preset("l4-qwen2.5-3b").unwrap(),
    ))
    .await
    .expect("simulator");
    let vllm = sim.vllm_url().trim_start_matches("http://").to_owned();
    let dcgm = sim
        .dcgm_url()
        .trim_start_matches("http://")
        .trim_end_matches("/metrics")
        .to_owned();
    let jobs = [
        job("vllm", &vllm, "/metrics", ""),
        job("dcgm-exporter", &dcgm, "/metrics", ""),
    ];
    let Some(prom) = tokio::task::spawn_blocking(move || prometheus("check", &jobs))
        .await
        .unwrap()
    else {
        sim.shutdown().await;
        return;
    };
    let url = prom.url();
    let (targets, check) = tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let ready = |done: &dyn Fn(&Output) -> bool, args: &[&str]| loop {
            let out = llmscope(args);
            if done(&out) {
                break out;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "prometheus never had what the test needs: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            std::thread::sleep(std::time::Duration::from_millis(500));
        };
        let power_ok = |out: &Output| {
            out.status.success()
                && json(out)["checks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c["what"] == "GPU power > 0 W" && c["severity"].is_null())
        };
        let targets = ready(
            &power_ok,
            &[
                "targets",
                "--prometheus",
                &url,
                "--format",
                "json",
                "--fail-on",
                "never",
            ],
        );
        // The scrape interval is read from raw `up` samples: wait until a few exist.
        let windowed = |out: &Output| {
            json(out)["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["rule"] == "short-rate-window")
        };
        let check = ready(
            &windowed,
            &[
                "check",
                "--prometheus",
                &url,
                "--format",
                "json",
                "--expr",
                "max by (pod) (vllm:gpu_cache_usage_perc)",
                "--expr",
                "avg by (hostname) (DCGM_FI_DEV_POWER_USAGE)",
                "--expr",
                "sum(rate(vllm:generation_tokens_total[2s]))",
                "--expr",
                "rate(vllm:kv_cache_usage_perc[1m])",
            ],
        );
        (targets, check)
    })
    .await
    .unwrap();
    sim.shutdown().await;
    let t = json(&targets);
    let failed: Vec<&str> = t["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["severity"] == "error")
        .map(|c| c["what"].as_str().unwrap())
        .collect();
    assert!(failed.is_empty(), "{t}");
    let c = json(&check);
    assert_eq!(check.status.code(), Some(1), "{c}");
    let got: Vec<(&str, &str)> = c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap(),
                f["metric"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    for want in [
        ("renamed-metric", "vllm:gpu_cache_usage_perc"),
        ("missing-label", "DCGM_FI_DEV_POWER_USAGE"),
        ("short-rate-window", "-"),
        ("rate-on-gauge", "vllm:kv_cache_usage_perc"),
    ] {
        assert!(got.contains(&want), "{want:?} not in {got:?}");
    }
    let hostname = c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "missing-label")
        .unwrap();
    assert!(
        hostname["suggestion"]
            .as_str()
            .unwrap()
            .contains("Hostname"),
        "{hostname}"
    );
}

/// A real vLLM 0.32.0 page (issue 11), from the core crate's fixtures.
fn capture(which: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../catalog/tests/fixtures/vllm-0.32.0")
        .join(format!("vllm-0.32.0-cpu-{which}.prom"))
}

/// Serves `page` at `/metrics` on a free port, and `{"version":…}` at `/version` when given
/// (anything else: 404), one connection at a time, for as long as the test runs.
fn page_server(page: Vec<u8>, version: Option<&'static str>) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut request = String::new();
            let _ = reader.read_line(&mut request);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = request.split(' ').nth(1).unwrap_or("");
            let (status, body) = match (path, version) {
                ("/metrics", _) => ("200 OK", page.clone()),
                ("/version", Some(v)) => ("200 OK", format!(r#"{{"version":"{v}"}}"#).into_bytes()),
                _ => ("404 Not Found", b"{\"detail\":\"Not Found\"}".to_vec()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(&body);
        }
    });
    format!("http://{addr}/metrics")
}

#[test]
fn inventory_of_a_real_0_32_page_names_0_32_and_no_false_removals() {
    let page = std::fs::read(capture("batch-limit")).unwrap();
    // From a saved page only the names speak; from a live one the engine says its version,
    // and when its /version fails the names are the fallback, not an error.
    let saved = llmscope(&["inventory", capture("batch-limit").to_str().unwrap()]);
    let live = llmscope(&["inventory", &page_server(page.clone(), Some("0.32.0+cpu"))]);
    let no_version = llmscope(&["inventory", &page_server(page, None)]);
    for (out, engine) in [
        (&saved, "engine: vllm >=0.27.0 (from names) (V1 engine)"),
        (
            &live,
            "engine: vllm 0.32.0 (from /version) (V1 engine), names fit >=0.27.0",
        ),
        (
            &no_version,
            "engine: vllm >=0.27.0 (from names) (V1 engine)",
        ),
    ] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains(engine), "want `{engine}` in:\n{stdout}");
        assert!(!stdout.contains("removed"), "{stdout}");
        assert!(!stdout.contains("<0.26"), "{stdout}");
    }
}

#[test]
fn check_against_a_live_0_32_page_names_the_reported_version() {
    let page = std::fs::read(capture("kv-starved")).unwrap();
    // A version the names cannot guess (their best is the newest, 0.32.0): the message must
    // carry what /version said.
    let url = page_server(page, Some("0.31.2"));
    let out = llmscope(&[
        "check",
        "--metrics-url",
        &url,
        "--format",
        "json",
        "--expr",
        "max(vllm:gpu_cache_usage_perc)",
        "--expr",
        "histogram_quantile(0.99, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    let findings = v["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "e2e latency is on a 0.32 page: {v}");
    let f = &findings[0];
    assert_eq!(f["rule"], "renamed-metric", "{v}");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("is not exposed (vllm 0.31.2)"),
        "{v}"
    );
    assert!(
        f["suggestion"]
            .as_str()
            .unwrap()
            .starts_with("use vllm:kv_cache_usage_perc"),
        "{v}"
    );
}
