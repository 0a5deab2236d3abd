//! `llmscope run` end to end on the built-in simulated stack (shortened windows), then
//! `report`, `compare` and the HTML report — as a user runs them, through the binary.

use crate::common::{
    closed_port, job, json, llmscope, prometheus, put_load, sim_on_free_ports, sim_with_cluster,
    temp_dir,
};

#[test]
fn default_run_finds_the_batch_limit_and_stores_it() {
    let dir = temp_dir("run");
    let db = dir.join("runs.db");
    let html = dir.join("run.html");
    let (db_s, html_s) = (db.to_str().unwrap(), html.to_str().unwrap());
    let out = llmscope(&[
        "run",
        "--duration",
        "12s",
        "--baseline",
        "3s",
        "--db",
        db_s,
        "--format",
        "json",
        "--html",
        html_s,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["verdict"]["bottleneck"], "batch_limit", "{v:#}");
    assert!(v["verdict"]["confidence"].as_f64().unwrap() >= 0.7);
    let recs = v["recommendations"].as_array().unwrap();
    assert!(
        recs.iter()
            .any(|r| r["action"].as_str().unwrap().contains("max-num-seqs")),
        "{recs:?}"
    );
    assert!(
        v["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["signal"] == "running")
    );
    assert!(v["timeline"]["phases"]["steady"].is_array());
    assert!(v["window_stats"]["running"]["max"].as_f64().unwrap() <= 16.0);
    assert_eq!(v["simulated"], true);
    let run_id = v["run_id"].as_str().unwrap().to_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("simulated"),
        "the run says it is simulated: {stderr}"
    );

    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("batch_limit") && !page.contains("<script"));

    // The stored run renders again to the same verdict, in every format.
    let again = llmscope(&["report", &run_id, "--db", db_s, "--format", "json"]);
    assert_eq!(json(&again)["verdict"]["bottleneck"], "batch_limit");
    let md = llmscope(&["report", &run_id, "--db", db_s, "--format", "markdown"]);
    assert!(String::from_utf8_lossy(&md.stdout).contains("## Verdict: `batch_limit`"));
    let cmp = llmscope(&[
        "compare", &run_id, &run_id, "--db", db_s, "--format", "json",
    ]);
    assert_eq!(json(&cmp)["after"]["bottleneck"], "batch_limit");
    // Issue 26: three runs (here the same one thrice) on one page, charts overlaid; the text
    // formats take two and say so.
    let cmp_html = dir.join("compare.html");
    let cmp_s = cmp_html.to_str().unwrap();
    let three = [&*run_id, &run_id, &run_id];
    let cmp = llmscope(&[&["compare"][..], &three, &["--db", db_s, "--html", cmp_s]].concat());
    assert!(
        cmp.status.success(),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    let page = std::fs::read_to_string(&cmp_html).unwrap();
    let runs = format!("<b>run {run_id}</b>: batch_limit (");
    assert_eq!(page.matches(&runs).count(), 3, "{page}");
    assert!(page.matches("<svg").count() >= 7 && !page.contains("<script"));
    let cmp = llmscope(&[&["compare"][..], &three, &["--db", db_s]].concat());
    let stderr = String::from_utf8_lossy(&cmp.stderr);
    assert!(
        !cmp.status.success() && stderr.contains("take two runs"),
        "{stderr}"
    );

    // Issue 26: the Markdown report links its charts, written as SVG files beside it.
    let md_path = dir.join("run3.md");
    let md_s = md_path.to_str().unwrap();
    let out = llmscope(&["report", &run_id, "--db", db_s, "--markdown", md_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md_text = std::fs::read_to_string(&md_path).unwrap();
    let links: Vec<&str> = md_text
        .lines()
        .filter_map(|l| l.strip_prefix("![")?.split("](").nth(1)?.strip_suffix(')'))
        .collect();
    assert!(links.len() >= 6, "{md_text}");
    assert!(
        md_text.find(links[0]) < md_text.find("## Evidence"),
        "the verdict's chart first"
    );
    for link in &links {
        let svg = std::fs::read_to_string(dir.join(link)).unwrap();
        assert!(
            svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
            "{link}"
        );
        assert!(
            svg.contains("<path class=\"series\" d=\"M"),
            "{link} has data"
        );
    }

    // Issue 26: the run for notebooks — its series in long format and a row per request; an
    // export into a directory that holds anything is refused and leaves it as it was.
    let export = dir.join("export");
    let export_s = export.to_str().unwrap();
    let out = llmscope(&["report", &run_id, "--db", db_s, "--export", export_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let series = std::fs::read_to_string(export.join("series.csv")).unwrap();
    assert!(series.starts_with("time,layer,metric,labels,value\r\n"));
    let running: Vec<&str> = series
        .lines()
        .filter(|l| l.contains(",vllm:num_requests_running,"))
        .collect();
    assert!(running.len() >= 10, "{series:.2000}");
    let requests = std::fs::read_to_string(export.join("requests.csv")).unwrap();
    let ok = requests
        .lines()
        .skip(1)
        .filter(|l| l.ends_with(",true"))
        .count();
    let sent = v["client"]["requests"]["sent"].as_u64().unwrap() as usize;
    assert_eq!(
        requests.lines().count() - 1,
        sent,
        "one row per request sent"
    );
    assert!(ok > 0, "{requests:.2000}");
    let again = llmscope(&["report", &run_id, "--db", db_s, "--export", export_s]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        !again.status.success() && stderr.contains("not empty"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(export.join("series.csv")).unwrap(),
        series
    );

    // An output pointed at the store is refused, and the store keeps its runs.
    let target = closed_port().to_string();
    let target = format!("http://127.0.0.1:{target}");
    for args in [
        vec!["report", &run_id, "--db", db_s, "--html", db_s],
        vec!["compare", &run_id, &run_id, "--db", db_s, "--html", db_s],
        vec!["load", "--target", &target, "--records", db_s],
        vec!["dashboard", "--engine", "vllm@0.26", "--output", db_s],
    ] {
        let out = llmscope(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("refusing to write") && stderr.contains("SQLite database"),
            "{args:?}: {stderr}"
        );
    }
    let again = llmscope(&["report", &run_id, "--db", db_s, "--format", "json"]);
    assert_eq!(json(&again)["verdict"]["bottleneck"], "batch_limit");
    std::fs::remove_dir_all(&dir).ok();
}

/// `--html` naming the store is refused before the run starts, not after its minutes: the store
/// is never created, let alone truncated.
#[test]
fn an_html_path_that_is_the_store_is_refused_before_the_run() {
    let dir = temp_dir("run-html-store");
    let db = dir.join("runs.db");
    let db_s = db.to_str().unwrap();
    let out = llmscope(&["run", "--db", db_s, "--html", db_s]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("refusing to write") && stderr.contains("--db"),
        "{stderr}"
    );
    assert!(!db.exists(), "no run was started");
    std::fs::remove_dir_all(&dir).ok();
}

/// A real target whose metrics do not answer stops the run before any baseline or load.
#[test]
fn an_unreachable_engine_is_refused_before_the_run() {
    let port = closed_port().to_string();
    let target = format!("http://127.0.0.1:{port}");
    let db = temp_dir("run-unreachable").join("r.db");
    let out = llmscope(&["run", "--target", &target, "--db", db.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("engine's metrics at")
            && err.contains("do not answer")
            && !err.contains("baseline:"),
        "{err}"
    );
    let sim_only = llmscope(&[
        "run",
        "--prometheus",
        "http://127.0.0.1:1",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert_eq!(sim_only.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&sim_only.stderr).contains("give the server with --target"));
}

#[test]
fn reports_of_missing_runs_and_stores_fail_clearly() {
    let out = llmscope(&["report", "42", "--db", "/nonexistent/llmscope.db"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run store"));
}

/// `diagnose --prometheus` on a window a real Prometheus recorded while the simulator was loaded.
#[test]
fn diagnose_reads_a_past_window_from_a_real_prometheus() {
    let dir = temp_dir("diag");
    let (_sim, vllm, dcgm) = sim_on_free_ports("2s", &[]);
    let jobs = [
        job("vllm", &vllm, "/metrics", ""),
        job("dcgm", &dcgm, "/metrics", ""),
    ];
    let Some(prometheus) = prometheus("diag", &jobs) else {
        return;
    };
    let prometheus_url = prometheus.url();
    put_load(&vllm, "32", "14s");
    wait_for_the_fall(&prometheus);
    let db = dir.join("d.db");
    let db_s = db.to_str().unwrap();
    let diagnose = |window_and_matchers: &[&str]| {
        let mut args = vec![
            "diagnose",
            "--prometheus",
            &prometheus_url,
            "--step",
            "1s",
            "--max-num-seqs",
            "16",
            "--concurrency",
            "32",
            "--db",
            db_s,
            "--format",
            "json",
        ];
        args.extend_from_slice(window_and_matchers);
        llmscope(&args)
    };
    let out = diagnose(&["--from", "-40s", "--to", "now"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["verdict"]["bottleneck"], "batch_limit", "{v:#}");
    assert!(
        v["window_stats"]["gpu_util"]["max"]
            .as_f64()
            .is_some_and(|u| u > 0.0),
        "dcgm series read back: {v:#}"
    );
    // Stored as a run: `report` renders it again.
    let run = v["run_id"].as_str().unwrap().to_owned();
    let again = llmscope(&["report", &run, "--db", db_s, "--format", "json"]);
    assert_eq!(json(&again)["verdict"]["bottleneck"], "batch_limit");
    // Matchers narrow the read to one deployment: its series alone give the same verdict.
    let narrowed = diagnose(&[
        "--from",
        "-40s",
        "--match",
        "job=\"vllm\"",
        "--match",
        "{job=\"dcgm\"}",
    ]);
    assert_eq!(json(&narrowed)["verdict"]["bottleneck"], "batch_limit");
    let elsewhere = diagnose(&["--from", "-40s", "--match", "job=\"elsewhere\""]);
    assert_eq!(elsewhere.status.code(), Some(2));
    let why = String::from_utf8_lossy(&elsewhere.stderr);
    assert!(why.contains("matching job=\"elsewhere\""), "{why}");
    let empty = diagnose(&[
        "--from",
        "2001-01-01T00:00:00Z",
        "--to",
        "2001-01-01T00:10:00Z",
    ]);
    assert_eq!(empty.status.code(), Some(2));
    let why = String::from_utf8_lossy(&empty.stderr);
    assert!(why.contains("no engine or GPU series"), "{why}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Waits until Prometheus holds the load's end: the engine and the GPU idle over its last 5 s
/// (a few scrapes, past dcgm's 2 s lag), so a window ending now shows the fall. Polled to a
/// deadline, not slept.
fn wait_for_the_fall(prometheus: &crate::common::RealPrometheus) {
    use llmscope_collect::prom::{ApiResponse, QueryData};
    let idle = "max(max_over_time(vllm:num_requests_running[5s])) + max(max_over_time(DCGM_FI_DEV_GPU_UTIL[5s]))";
    let client = prometheus.client();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        loop {
            if let Ok(ApiResponse {
                data: QueryData::Vector(v),
                ..
            }) = client.query(idle, None).await
                && v.first().is_some_and(|(_, p)| p.v == 0.0)
            {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "Prometheus never saw the engine and the GPU idle after the load"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
}

/// `llmscope cost` over a window a real Prometheus recorded from the simulator's Kueue,
/// kube-state-metrics, dcgm and vLLM pages: the GPU-hours the teams file implies, exactly to
/// within a scrape interval.
#[test]
fn cost_matches_the_teams_file_through_a_real_prometheus() {
    let (_sim, vllm, dcgm, cluster) = sim_with_cluster("1s", &["--teams", "example"]);
    let jobs = [
        job(
            "vllm",
            &vllm,
            "/metrics",
            ", labels: {namespace: llm-search}",
        ),
        // As behind a ServiceMonitor without honorLabels: the exporter's own namespace is a
        // target label, so the GPU's pod namespace arrives as `exported_namespace`.
        job(
            "dcgm",
            &dcgm,
            "/metrics",
            ", labels: {namespace: gpu-operator}",
        )
        .replace("honor_labels: true", "honor_labels: false"),
        job("kueue", &cluster, "/kueue/metrics", ""),
        job("ksm", &cluster, "/ksm/metrics", ""),
    ];
    let Some(prometheus) = prometheus("cost", &jobs) else {
        return;
    };
    put_load(&vllm, "8", "10s");
    crate::common::scraped_after(&prometheus, crate::common::unix_now() + 1.0);
    let url = prometheus.url();
    let out = llmscope(&[
        "cost",
        "--prometheus",
        &url,
        "--from",
        "-12s",
        "--to",
        "now",
        "--step",
        "1s",
        "--price",
        "nvidia-l4=0.80/h",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let team = |name: &str| {
        v["teams"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["team"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no team {name}: {v:#}"))
    };
    // The example teams hold 8, 4 and 2 GPUs; 12 s is 1/300 of an hour; one 1 s scrape of slack.
    for (name, gpus) in [("search", 8.0), ("ads", 4.0), ("research", 2.0)] {
        let t = team(name);
        let hours = t["gpu_hours"].as_f64().unwrap();
        let want = gpus * 12.0 / 3600.0;
        assert!(
            (hours - want).abs() <= gpus * 1.0 / 3600.0 + 1e-9,
            "{name}: {hours} GPU-h, want {want}"
        );
        assert!((t["cost"].as_f64().unwrap() - hours * 0.8).abs() < 1e-9);
        assert!(t["busy_gpu_hours"].as_f64().is_some() && t["idle_gpu_hours"].as_f64().is_some());
    }
    assert!(team("search")["output_tokens"].as_f64().unwrap() > 0.0);
    assert!(team("search")["cost_per_million_tokens"].as_f64().unwrap() > 0.0);
    assert!(v["totals"]["gpu_hours"].as_f64().unwrap() > 0.0);
    // The simulated GPU is mapped to search's pod: search's busy hours are its own GPU's, the
    // others' the fleet average, and the warning names exactly those.
    assert_eq!(team("search")["busy_basis"], "workload", "{v:#}");
    for name in ["ads", "research"] {
        assert_eq!(team(name)["busy_basis"], "fleet");
    }
    assert!(
        v["warnings"].as_array().unwrap().iter().any(|w| {
            let w = w.as_str().unwrap();
            w.contains("busy GPU-hours of ads, research use the fleet-average")
        }),
        "{v:#}"
    );
    // Without team labels and prices: said, with the fix, never a silent 0.
    let bare = llmscope(&[
        "cost",
        "--prometheus",
        &url,
        "--from",
        "-12s",
        "--team-label",
        "owner",
        "--format",
        "json",
    ]);
    let b = json(&bare);
    let warnings = b["warnings"].to_string();
    assert!(
        warnings.contains("--metric-labels-allowlist=namespaces=[owner]"),
        "{warnings}"
    );
    assert!(
        b["teams"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["cost"].is_null())
    );
}

/// `run` against a real server whose metrics only Prometheus scrapes: the window is read from
/// Prometheus after the load, under the given matchers, and the verdict is the direct run's.
#[test]
fn run_reads_its_window_from_a_real_prometheus() {
    let (_sim, vllm, dcgm) = sim_on_free_ports("1s", &[]);
    let jobs = [
        job("vllm", &vllm, "/metrics", ", labels: {namespace: llm}"),
        job("dcgm", &dcgm, "/metrics", ", labels: {namespace: gpu}"),
    ];
    let Some(prometheus) = prometheus("run", &jobs) else {
        return;
    };
    let prometheus_url = prometheus.url();
    let db = temp_dir("run-prom").join("r.db");
    let target = format!("http://{vllm}");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--target",
            &target,
            "--prometheus",
            &prometheus_url,
            "--interval",
            "1s",
            "--dcgm-interval",
            "1s",
            "--baseline",
            "3s",
            "--duration",
            "12s",
            "--output-tokens",
            "20",
            "--max-num-seqs",
            "16",
            "--concurrency",
            "32",
            "--db",
            db.to_str().unwrap(),
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        llmscope(&args)
    };
    let out = run(&[
        "--match",
        "namespace=\"llm\"",
        "--match",
        "{namespace=\"gpu\"}",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("vllm >=0.26.0"),
        "pre-flight names the engine: {stderr}"
    );
    assert!(
        stderr.contains("reads running vllm:num_requests_running")
            && stderr.contains("KV-cache usage vllm:kv_cache_usage_perc"),
        "and the names it reads: {stderr}"
    );
    let v = json(&out);
    assert_eq!(v["verdict"]["bottleneck"], "batch_limit", "{v:#}");
    assert!(
        v["window_stats"]["gpu_util"]["max"]
            .as_f64()
            .is_some_and(|u| u > 0.0),
        "dcgm series read through the second matcher: {v:#}"
    );
    // Matchers that exclude the engine fail before any load, saying why.
    let none = run(&["--match", "namespace=\"nowhere\""]);
    assert_eq!(none.status.code(), Some(2));
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(err.contains("no vLLM, SGLang or TGI series"), "{err}");
    assert!(!err.contains("load:"), "no load was sent: {err}");
}

/// Issue 12: a server that rejects every request. The run's verdict is `failing_requests` with
/// the server's message — in JSON, and in the text report of the stored run — the load backs off
/// and stops itself (hundreds of requests, not a million), and the exit code says so.
#[test]
fn a_server_rejecting_every_request_is_the_verdict_in_its_own_words() {
    let (_sim, vllm, dcgm) = sim_on_free_ports("1s", &["--fault-400", "1"]);
    crate::common::wait_until_listening(&vllm);
    let db = temp_dir("run-400").join("r.db");
    let (target, gpu) = (format!("http://{vllm}"), format!("http://{dcgm}/metrics"));
    let started = std::time::Instant::now();
    let out = llmscope(&[
        "run",
        "--target",
        &target,
        "--gpu-metrics",
        &gpu,
        "--max-num-seqs",
        "16",
        "--concurrency",
        "64",
        "--duration",
        "60s",
        "--baseline",
        "1s",
        "--dcgm-interval",
        "1s",
        "--db",
        db.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(started.elapsed().as_secs() < 40, "stopped early: {stderr}");
    assert!(stderr.contains("the load stopped early"), "{stderr}");
    let v = json(&out);
    assert_eq!(v["verdict"]["bottleneck"], "failing_requests", "{v:#}");
    let summary = v["verdict"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("(100%): http_400")
            && summary.contains("simulated rejection (--fault-400)"),
        "{summary}"
    );
    let sent = v["requests"]["sent"].as_u64().unwrap();
    assert!((20..=64 * 20).contains(&sent), "bounded: {sent} sent");
    assert_eq!(v["requests"]["ok"], 0);
    let run_id = v["run_id"].as_str().unwrap();
    let text = llmscope(&["report", run_id, "--db", db.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Verdict: failing_requests")
            && text.contains("server said: simulated rejection (--fault-400)"),
        "{text}"
    );
    let fail_on = llmscope(&[
        "report",
        run_id,
        "--db",
        db.to_str().unwrap(),
        "--fail-on",
        "error",
    ]);
    assert_eq!(fail_on.status.code(), Some(1));
    std::fs::remove_dir_all(db.parent().unwrap()).ok();
}

/// Issue 12: prompt + max_tokens over the model's max_model_len is refused before the baseline,
/// with the numbers (exit 2); 3,000 + 512 on the same 4,096-token model now fits.
#[test]
fn an_over_long_request_is_refused_before_the_run() {
    let db = temp_dir("run-too-long").join("r.db");
    let out = llmscope(&[
        "run",
        "--input-tokens",
        "3700",
        "--max-tokens",
        "512",
        "--duration",
        "8s",
        "--baseline",
        "1s",
        "--db",
        db.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("prompts of up to 3700 tokens")
            && err.contains("max_tokens 512 = 4212")
            && err.contains("max_model_len 4096")
            && !err.contains("baseline:"),
        "{err}"
    );
    std::fs::remove_dir_all(db.parent().unwrap()).ok();
}

/// A trace says when requests come and how long they are: `run --trace` refuses the flags that
/// would say otherwise (exit 2, before anything starts) instead of dropping them.
#[test]
fn run_refuses_length_and_rate_flags_beside_a_trace() {
    let db = temp_dir("run-trace-refused").join("r.db");
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../loadgen/tests/fixtures/traces/mooncake.jsonl"
    );
    for flags in [
        &["--max-tokens", "32"][..],
        &["--turns", "2"],
        &["--rate", "5"],
    ] {
        let mut args = vec!["run", "--trace", trace, "--db", db.to_str().unwrap()];
        args.extend_from_slice(flags);
        let out = llmscope(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(
            err.contains(&format!(
                "--trace sets when requests arrive and how long they are: drop {}",
                flags[0]
            )) && !err.contains("baseline:"),
            "{flags:?}: {err}"
        );
    }
    std::fs::remove_dir_all(db.parent().unwrap()).ok();
}

/// `run --trace` (issue 27): the built-in stack replays a slice of a real Mooncake trace, each
/// request at its time, and the diagnosis weighs the engine's prefix-cache hit rate against what
/// the trace repeats. The oracle is the trace file itself: the requests in the window that fit
/// the context, and the full prompt blocks each shares with an earlier request (512 tokens each).
#[test]
fn run_replays_a_trace_and_weighs_the_prefix_cache_against_its_shared_blocks() {
    use llmscope_loadgen::trace::{self, MOONCAKE_BLOCK_TOKENS, TraceFormat};
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../loadgen/tests/fixtures/traces/mooncake.jsonl"
    );
    let dir = temp_dir("run-trace");
    let db = dir.join("runs.db");
    let out = llmscope(&[
        "run",
        "--preset",
        "bench-tiny",
        "--max-model-len",
        "32768",
        "--trace",
        path,
        "--trace-window",
        "..12s",
        "--time-scale",
        "0.25",
        "--skip-bad-lines",
        "--duration",
        "8s",
        "--baseline",
        "1s",
        "--db",
        db.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("load: trace replay"), "{stderr}");
    let text = std::fs::read_to_string(path).unwrap();
    let window = trace::parse(&text, TraceFormat::Mooncake, false)
        .unwrap()
        .window(0.0, Some(12.0));
    let kept: Vec<_> = window
        .requests
        .iter()
        .filter(|r| r.input_tokens + r.output_tokens <= 32768)
        .collect();
    let mut seen = std::collections::HashSet::new();
    let (mut repeated, mut input) = (0u64, 0u64);
    for r in &kept {
        let full = &r.hash_ids[..r.hash_ids.len().saturating_sub(1)];
        let shared = full.iter().take_while(|id| seen.contains(*id)).count() as u64;
        seen.extend(r.hash_ids.iter().copied());
        repeated += (shared * u64::from(MOONCAKE_BLOCK_TOKENS)).min(u64::from(r.input_tokens));
        input += u64::from(r.input_tokens);
    }
    let v = json(&out);
    let client = &v["client"];
    assert_eq!(
        client["requests"]["sent"].as_u64(),
        Some(kept.len() as u64),
        "{client:#}"
    );
    assert_eq!(
        client["prefix"]["repeated_tokens"].as_u64(),
        Some(repeated),
        "{client:#}"
    );
    let prompt = client["prefix"]["prompt_tokens"].as_f64().unwrap();
    assert!(
        (prompt - input as f64).abs() <= 0.05 * input as f64,
        "prompts sent {prompt} tokens, the trace says {input}"
    );
    let finding = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "prefix_cache")
        .unwrap_or_else(|| panic!("no prefix_cache finding: {:#}", v["findings"]));
    let share = repeated as f64 / prompt;
    let message = finding["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("the load repeats {:.0}%", share * 100.0)),
        "{message}"
    );
}

/// The simulator's prefix cache answers as the real engine's does (issue 27; the real-vLLM tier
/// has the same cell): six shared 256-token prefixes on a 4 MiB pool that 16 running requests
/// fill are evicted before they are reused. The oracle is the simulated engine's own page, read
/// after the run: its hit and lookup counters against what the load repeats, and its
/// preemptions.
#[test]
fn a_prefix_cache_thrashing_on_a_small_pool_is_warned_on_the_simulator_too() {
    let (_sim, vllm, dcgm) = sim_on_free_ports(
        "1s",
        &[
            "--preset",
            "cpu-tiny",
            "--kv-cache-memory-bytes",
            "4194304",
            "--max-model-len",
            "1024",
            "--max-num-seqs",
            "16",
        ],
    );
    crate::common::wait_until_listening(&vllm);
    let dir = temp_dir("run-thrash");
    let db = dir.join("runs.db");
    let (target, gpu) = (format!("http://{vllm}"), format!("http://{dcgm}/metrics"));
    let out = llmscope(&[
        "run",
        "--target",
        &target,
        "--gpu-metrics",
        &gpu,
        // The simulated exporter's interval: the run then waits one, not a real one's 30 s.
        "--dcgm-interval",
        "1s",
        "--max-num-seqs",
        "16",
        "--concurrency",
        "32",
        "--shared-prefix",
        "256",
        "--prefix-groups",
        "6",
        "--input-tokens",
        "64",
        "--max-tokens",
        "64",
        "--duration",
        "8s",
        "--baseline",
        "1s",
        "--interval",
        "500ms",
        "--db",
        db.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, page) = crate::common::get(&vllm, "/metrics");
    let read = |name: &str| crate::common::sample(&page, name).unwrap_or(0.0);
    let hit = read("vllm:prefix_cache_hits_total{") / read("vllm:prefix_cache_queries_total{");
    let preempted = read("vllm:num_preemptions_total{");
    let v = json(&out);
    let p = &v["client"]["prefix"];
    let share = p["repeated_tokens"].as_f64().unwrap() / p["prompt_tokens"].as_f64().unwrap();
    assert!(
        hit < 0.5 * share && preempted > 0.0,
        "the regime: the engine hit {hit:.2} of lookups, the load repeats {share:.2}, {preempted} preemptions"
    );
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "prefix_cache")
        .unwrap_or_else(|| panic!("no prefix_cache finding: {:#}", v["findings"]));
    let message = f["message"].as_str().unwrap();
    assert!(
        f["severity"] == "warning" && message.contains("evicts prefix blocks"),
        "{message}"
    );
    let actions: Vec<&str> = v["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["action"].as_str())
        .collect();
    assert!(
        actions
            .iter()
            .any(|a| a.contains("so shared prefix blocks stay cached"))
            && !actions
                .iter()
                .any(|a| a.contains("Shorten the shared prefix")),
        "{actions:?}"
    );
}

/// The simulator's admission limit answers as vLLM's does (issue 51; the real tier's `c16`
/// server has the same regime): `--max-num-queued-reqs 12` under 32 clients at a cap of 8 turns
/// requests away 503 in vLLM's words and counts them. The oracle is the simulated engine's own
/// page: its admission counter against the requests it finished. Without the limit, the same load
/// is a queue the engine keeps — the batch limit, nothing shed.
#[test]
fn requests_shed_at_the_simulators_admission_limit_are_named_with_its_flag() {
    for limit in [Some("12"), None] {
        let mut flags = vec![
            "--preset",
            "cpu-tiny",
            "--max-num-seqs",
            "8",
            "--metrics-dialect",
            "0.32",
        ];
        if let Some(l) = limit {
            flags.extend(["--max-num-queued-reqs", l]);
        }
        let (_sim, vllm, dcgm) = sim_on_free_ports("1s", &flags);
        crate::common::wait_until_listening(&vllm);
        let dir = temp_dir("run-admission");
        let db = dir.join("runs.db");
        let (target, gpu) = (format!("http://{vllm}"), format!("http://{dcgm}/metrics"));
        let out = llmscope(&[
            "run",
            "--target",
            &target,
            "--gpu-metrics",
            &gpu,
            "--dcgm-interval",
            "1s",
            "--max-num-seqs",
            "8",
            "--concurrency",
            "32",
            "--max-tokens",
            "32",
            "--duration",
            "4s",
            "--baseline",
            "1s",
            "--interval",
            "500ms",
            "--db",
            db.to_str().unwrap(),
            "--format",
            "json",
        ]);
        let (_, page) = crate::common::get(&vllm, "/metrics");
        let summed = |name: &str| -> f64 {
            page.lines()
                .filter(|l| l.starts_with(name))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        };
        let rejected = summed("vllm:admission_rejections_total{");
        let finished = summed("vllm:request_success_total{");
        let oracle = if rejected / (rejected + finished) >= 0.05 {
            "admission_limit"
        } else {
            "batch_limit"
        };
        let v = json(&out);
        let got = v["verdict"]["bottleneck"].as_str().unwrap_or("?");
        assert_eq!(
            got, oracle,
            "limit {limit:?}: the engine turned away {rejected} and finished {finished}; llmscope: {}",
            v["verdict"]
        );
        assert_eq!(
            limit.is_some(),
            rejected > 0.0,
            "limit {limit:?}: {rejected}"
        );
        if limit.is_some() {
            let summary = v["verdict"]["summary"].as_str().unwrap_or("");
            assert!(
                summary.contains("--max-num-queued-reqs")
                    && summary.contains("cannot accept new requests"),
                "{summary}"
            );
        }
    }
}
