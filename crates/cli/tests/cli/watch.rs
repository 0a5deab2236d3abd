//! `llmscope watch` against a real Prometheus scraping two simulated deployments (issue 15):
//! one healthy (4 streams against `--max-num-seqs 16`), one batch-limited (32 streams) whose
//! engine hangs partway (`--fault-hang-after`: `/health` and `/metrics` keep answering, the
//! engine takes no step). The verdict metrics must be right, and the stall flag must rise
//! within two intervals of the stall lasting `--stall-after`; the status page is rendered in
//! headless Chromium and its screenshot kept in the test's output folder.

use crate::common::{Reaper, get, job, prometheus, sample, sim_on_free_ports, unix_now, watch_log};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const INTERVAL_S: f64 = 3.0;
const STALL_AFTER_S: f64 = 12.0;
const HANG_AFTER_S: f64 = 55.0;

fn load(host_port: &str, concurrency: &str, duration: &str) -> Reaper {
    let child = Command::new(env!("CARGO_BIN_EXE_llmscope"))
        .args(["load", "--target", &format!("http://{host_port}")])
        .args([
            "--concurrency",
            concurrency,
            "--duration",
            duration,
            "--max-tokens",
            "64",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("llmscope load");
    Reaper(child)
}

#[test]
fn watch_names_each_deployments_verdict_and_raises_the_stall_flag() {
    // The healthy deployment runs an older vLLM (0.8 names: `vllm:gpu_cache_usage_perc`), the
    // other a newer one (`vllm:kv_cache_usage_perc`); the rules watch was given use the old name,
    // so the newer deployment has drifted from them.
    let (_healthy, chat, chat_dcgm) = sim_on_free_ports("1s", &["--metrics-dialect", "0.8"]);
    let dir = crate::common::temp_dir("watch");
    let rules = dir.join("kv-alerts.yaml");
    std::fs::write(
        &rules,
        "groups:\n- name: kv\n  rules:\n  - alert: KvCacheFull\n    expr: max by (namespace, pod) (vllm:gpu_cache_usage_perc) > 0.95\n    for: 5m\n",
    )
    .unwrap();
    let hang = format!("{HANG_AFTER_S}s");
    let (_limited, batch, batch_dcgm) =
        sim_on_free_ports("1s", &["--fault-hang-after", &hang, "--seed", "7"]);
    let sims_started = Instant::now();
    let chat_labels = ", labels: {namespace: llm, pod: chat-5d8f7c9b6-x7k2p}";
    let batch_labels = ", labels: {namespace: llm, pod: batch-6c9f8d7b5-q2w4z}";
    let Some(prom) = prometheus(
        "watch",
        &[
            job("chat", &chat, "/metrics", chat_labels),
            job("chat-dcgm", &chat_dcgm, "/metrics", chat_labels),
            job("batch", &batch, "/metrics", batch_labels),
            job("batch-dcgm", &batch_dcgm, "/metrics", batch_labels),
        ],
    ) else {
        return;
    };
    let _chat_load = load(&chat, "4", "150s");
    let _batch_load = load(&batch, "32", "150s");
    let load_started = Instant::now();

    let mut watch = Command::new(env!("CARGO_BIN_EXE_llmscope"))
        .args([
            "watch",
            "--prometheus",
            &prom.url(),
            "--listen",
            "127.0.0.1:0",
        ])
        .args([
            "--interval",
            &format!("{INTERVAL_S}s"),
            "--window",
            "60s",
            "--step",
            "1s",
        ])
        .args([
            "--stall-after",
            &format!("{STALL_AFTER_S}s"),
            "--max-num-seqs",
            "16",
        ])
        .arg("--rules")
        .arg(&rules)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("llmscope watch");
    let stderr = watch.stderr.take().unwrap();
    let _watch = Reaper(watch);
    let (addr, log) = watch_log(stderr);
    assert_eq!(get(&addr, "/healthz").0, 200);
    let shown = || log.lock().unwrap().join("\n");

    // 1. The verdicts: right once the window holds the load, and they stay right.
    let chat_verdict =
        r#"llmscope_bottleneck{deployment="chat",namespace="llm",bottleneck="load_not_reached"}"#;
    let batch_verdict =
        r#"llmscope_bottleneck{deployment="batch",namespace="llm",bottleneck="batch_limit"}"#;
    let deadline = Instant::now() + Duration::from_secs(50);
    let right_at = loop {
        let (_, m) = get(&addr, "/metrics");
        if sample(&m, chat_verdict) == Some(1.0) && sample(&m, batch_verdict) == Some(1.0) {
            break load_started.elapsed().as_secs_f64();
        }
        assert!(
            Instant::now() < deadline,
            "verdicts not right after 50 s of load:\n{m}\nwatch said:\n{}",
            shown()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    eprintln!("watch: both verdicts right {right_at:.1} s after the load started");
    // The simulated engines queue at once: a few seconds of load in the window are enough, so
    // the verdicts are due by two intervals after a short warm-up.
    assert!(
        right_at <= 10.0 + 2.0 * INTERVAL_S,
        "verdicts right only {right_at:.1} s after the load started"
    );
    let (ready, _) = get(&addr, "/readyz");
    assert_eq!(ready, 200, "ready after a successful evaluation");
    let (_, m) = get(&addr, "/metrics");
    for d in ["chat", "batch"] {
        let id = format!(r#"{{deployment="{d}",namespace="llm"}}"#);
        assert_eq!(
            sample(&m, &format!("llmscope_stalled{id}")),
            Some(0.0),
            "{d} serving:\n{m}"
        );
        let kv = sample(&m, &format!("llmscope_kv_cache_headroom_ratio{id}")).expect("KV headroom");
        assert!((0.0..=1.0).contains(&kv), "{kv}");
        let gpu = sample(&m, &format!("llmscope_gpu_headroom_ratio{id}"))
            .expect("GPU headroom (dcgm attributed by pod)");
        assert!((0.0..=1.0).contains(&gpu), "{gpu}");
    }
    assert_eq!(sample(&m, "llmscope_watch_deployments"), Some(2.0), "{m}");
    promtool_check_metrics(&m);
    let drift = |d: &str| {
        sample(
            &m,
            &format!(r#"llmscope_version_drift{{deployment="{d}",namespace="llm"}}"#),
        )
    };
    assert_eq!(
        drift("chat"),
        Some(0.0),
        "the 0.8 deployment exposes the name the rules use:\n{m}"
    );
    assert_eq!(
        drift("batch"),
        Some(1.0),
        "the newer deployment renamed it:\n{m}"
    );
    assert!(
        sample(&m, "llmscope_watch_last_success_timestamp_seconds")
            .is_some_and(|t| unix_now() - t < 3.0 * INTERVAL_S)
    );
    assert!(
        sample(&m, "llmscope_watch_evaluation_duration_seconds_count").is_some_and(|n| n >= 1.0)
    );
    assert_eq!(
        sample(
            &m,
            r#"llmscope_watch_prometheus_query_errors_total{kind="connect"}"#
        ),
        Some(0.0)
    );

    // What `rules --watch` and `dashboard --watch` generate lints clean against watch's own
    // page: every name they select is one watch exposes.
    let page = format!("http://{addr}/metrics");
    for (cmd, file) in [
        ("rules", "watch-rules.yaml"),
        ("dashboard", "watch-dashboard.json"),
    ] {
        let out = crate::common::llmscope(&[cmd, "--watch"]);
        assert!(
            out.status.success(),
            "{cmd} --watch: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = dir.join(file);
        std::fs::write(&path, &out.stdout).unwrap();
        let path = path.display().to_string();
        let lint = crate::common::llmscope(&["check", &path, "--metrics-url", &page]);
        let said = String::from_utf8_lossy(&lint.stdout);
        assert!(
            said.lines().any(|l| l.starts_with("0 errors,")) && lint.status.success(),
            "{cmd} --watch against watch's /metrics:\n{said}"
        );
    }

    // 2. The stall: the batch engine hangs HANG_AFTER_S after its start; the flag must rise
    //    within two intervals (plus a scrape) of the stall having lasted STALL_AFTER_S.
    let stalled = r#"llmscope_stalled{deployment="batch",namespace="llm"}"#;
    let due = HANG_AFTER_S + STALL_AFTER_S + 2.0 * INTERVAL_S + 2.0;
    let rose_at = loop {
        let (_, m) = get(&addr, "/metrics");
        let t = sims_started.elapsed().as_secs_f64();
        if sample(&m, stalled) == Some(1.0) {
            break t;
        }
        assert!(
            t < due + 5.0,
            "the stall flag did not rise by {due:.0} s after the sim started:\n{m}\nwatch said:\n{}",
            shown()
        );
        assert!(
            sample(&m, r#"llmscope_stalled{deployment="chat",namespace="llm"}"#) != Some(1.0),
            "the healthy deployment is never stalled:\n{m}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    eprintln!(
        "watch: stall flag rose {rose_at:.1} s after the sims started (hang at {HANG_AFTER_S} s, stall-after {STALL_AFTER_S} s, interval {INTERVAL_S} s)"
    );
    assert!(
        rose_at >= HANG_AFTER_S + STALL_AFTER_S - 1.0,
        "raised too early: {rose_at:.1} s"
    );
    assert!(
        rose_at <= due,
        "raised {rose_at:.1} s after start, due by {due:.1} s"
    );
    let (_, m) = get(&addr, "/metrics");
    assert_eq!(
        sample(&m, r#"llmscope_stalled{deployment="chat",namespace="llm"}"#),
        Some(0.0)
    );
    assert!(
        sample(
            &m,
            r#"llmscope_findings{deployment="batch",namespace="llm",severity="critical"}"#
        )
        .is_some_and(|n| n >= 1.0),
        "{m}"
    );

    // 3. The status page: escaped, one row per deployment, rendered by a real browser.
    let (status, page) = get(&addr, "/");
    assert_eq!(status, 200);
    assert!(
        page.contains(r#"data-deployment="batch" data-bottleneck="#),
        "{page}"
    );
    assert!(
        page.contains(r#"data-deployment="chat" data-bottleneck="load_not_reached""#),
        "{page}"
    );
    assert!(
        page.contains("stalled") && page.contains("alive but not serving"),
        "{page}"
    );
    assert!(page.contains("http-equiv=\"refresh\""), "auto-refresh");
    assert!(
        page.contains(
            "<code>vllm:gpu_cache_usage_perc</code> → <code>vllm:kv_cache_usage_perc</code>"
        ),
        "{page}"
    );
    screenshot(&addr);
    std::fs::remove_dir_all(&dir).ok();
}

/// `promtool check metrics` (the Prometheus project's own linter of exposition text and
/// naming) has nothing to say about watch's `/metrics`.
fn promtool_check_metrics(metrics: &str) {
    let Some(promtool) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("promtool"))
            .find(|p| p.is_file())
    }) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "promtool is required in CI (apt-get install -y prometheus)"
        );
        eprintln!("skipped promtool check metrics: no promtool on PATH");
        return;
    };
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(metrics.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The page at `addr` in headless Chromium: its DOM has both rows, and the screenshot is kept
/// under the test's output folder (`target/tmp/watch-status.png`).
fn screenshot(addr: &str) {
    let Some(chromium) = ["chromium", "chromium-browser"].iter().find_map(|b| {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(b))
                .find(|p| p.is_file())
        })
    }) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "chromium is required in CI (apt-get install -y chromium)"
        );
        eprintln!("skipped the screenshot: no chromium on PATH");
        return;
    };
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let profile = out.join(format!("watch-chromium-{}", std::process::id()));
    let shot = out.join("watch-status.png");
    let run = |extra: &[String]| {
        Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            .args([
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ])
            .arg("--window-size=1400,700")
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(format!("http://{addr}/"))
            .stderr(Stdio::null())
            .output()
            .expect("chromium runs")
    };
    let dom = run(&["--dump-dom".to_owned()]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("<td>batch</td>") && dom.contains("<td>chat</td>"),
        "the browser's DOM has both rows:\n{dom}"
    );
    let shot_run = run(&[format!("--screenshot={}", shot.display())]);
    assert!(
        shot_run.status.success(),
        "chromium exited with {}",
        shot_run.status
    );
    let png = std::fs::read(&shot).expect("a screenshot was written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "screenshot of {} bytes",
        png.len()
    );
    eprintln!("watch: status page screenshot at {}", shot.display());
    std::fs::remove_dir_all(&profile).ok();
}
