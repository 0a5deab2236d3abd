//! `llmscope capacity` end to end on the simulated stack: the JSON contract, every stage a stored
//! run that `runs` and `report` read, the HTML answer, and autoscaling objects whose threshold is
//! the measured per-replica load and that validate strictly against Kubernetes' schema and
//! KEDA's CRD. The expected knee is the engine's own setting (`--max-num-seqs 4`).

use crate::common::{json, llmscope, temp_dir};
use crate::deploy::{repo, validate_with, validator};
use serde_json::Value;
use std::path::PathBuf;

/// A short search on the simulated H100 (steps of milliseconds) at `--max-num-seqs 4`.
fn search(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let db = dir.join("runs.db");
    let mut args = vec![
        "capacity",
        "--preset",
        "h100-llama3.1-8b",
        "--max-num-seqs",
        "4",
        "--output-tokens",
        "32",
        "--stage",
        "2500ms",
        "--warmup",
        "500ms",
        "--baseline",
        "300ms",
        "--interval",
        "200ms",
        "--dcgm-interval",
        "200ms",
        "--max-concurrency",
        "16",
        "--db",
        db.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    llmscope(&args)
}

#[test]
fn capacity_answers_with_the_contract_stores_every_stage_and_writes_valid_autoscaling() {
    let dir = temp_dir("capacity");
    let html = dir.join("capacity.html");
    let k8s = dir.join("k8s");
    let out = search(
        &dir,
        &[
            "--slo",
            "ttft=2s",
            "--format",
            "json",
            "--html",
            html.to_str().unwrap(),
            "--autoscaling-out",
            k8s.to_str().unwrap(),
            "--deployment",
            "vllm-h100",
            "--namespace",
            "llm",
        ],
    );
    let a = json(&out);
    let stages = a["stages"].as_array().expect("stages");
    assert!(stages.len() >= 4, "{a:#}");
    for s in stages {
        for field in ["concurrency", "output_tok_s", "req_s", "goodput_rps"] {
            assert!(s[field].is_number(), "{field} in {s:#}");
        }
        assert!(s["ttft_ms"]["p50"].is_number() && s["ttft_ms"]["p95"].is_number());
        assert!(s["verdict"]["bottleneck"].is_string() && s["verdict"]["confidence"].is_number());
    }
    let knee = &a["knee"];
    let at = knee["concurrency"].as_u64().expect("a knee");
    assert!(
        (4..=6).contains(&at),
        "knee {at}, the engine's cap is 4: {a:#}"
    );
    assert_eq!(knee["bottleneck"], "batch_limit", "{a:#}");
    assert!(knee["output_tok_s"].is_number() && knee["req_s"].is_number());
    assert!(a["max_goodput"]["goodput_rps"].is_number());
    assert!(a["max_goodput"]["concurrency"].is_number());
    let ids: Vec<i64> = a["run_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), stages.len());
    stored(&dir, &ids);
    let page = std::fs::read_to_string(&html).expect("the HTML answer");
    assert!(page.contains("<svg") && page.contains("knee"), "{page}");
    advice(&a, &page);
    autoscaling(&k8s, &a);
}

/// The cause's advice names the cap to raise, with what the model fitted to every stage of the
/// search predicts it buys (issue 24): more than the knee served.
fn advice(a: &Value, page: &str) {
    let advice = a["advice"].as_array().expect("advice");
    let raise = advice
        .iter()
        .find(|r| r["setting"]["flag"] == "max-num-seqs")
        .unwrap_or_else(|| panic!("no advice to raise --max-num-seqs: {a:#}"));
    let predicted = raise["predicted"].as_str().expect("a prediction");
    let tok: f64 = predicted
        .split(" output tok/s")
        .next()
        .map(|t| t.replace(',', ""))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("not a prediction: {predicted}"));
    let knee = a["knee"]["output_tok_s"].as_f64().unwrap();
    assert!(
        tok > knee * 1.2,
        "raising the cap predicted {tok} against {knee} at the knee: {predicted}"
    );
    assert!(
        page.contains("What to change") && page.contains("predicted:"),
        "{page}"
    );
}

/// Every stage is a run `runs` lists as `capacity` and `report` renders.
fn stored(dir: &std::path::Path, ids: &[i64]) {
    let db = dir.join("runs.db");
    let runs = json(&llmscope(&[
        "runs",
        "--db",
        db.to_str().unwrap(),
        "--format",
        "json",
    ]));
    let listed = runs
        .as_array()
        .or(runs["runs"].as_array())
        .expect("runs")
        .clone();
    for id in ids {
        let run = listed.iter().find(|r| r["id"].as_i64() == Some(*id));
        assert_eq!(
            run.map(|r| r["kind"].clone()),
            Some(Value::from("capacity")),
            "{runs:#}"
        );
    }
    let last = ids.last().unwrap().to_string();
    let report = llmscope(&[
        "report",
        &last,
        "--db",
        db.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(json(&report)["verdict"]["bottleneck"].is_string());
}

/// The three files, the threshold the measured load, valid against the real schemas.
fn autoscaling(k8s: &std::path::Path, a: &Value) {
    let per_replica = a["per_replica"].as_u64().expect("a per-replica load");
    let files: Vec<PathBuf> = [
        "keda-scaledobject.yaml",
        "hpa.yaml",
        "prometheus-adapter-rules.yaml",
    ]
    .iter()
    .map(|f| k8s.join(f))
    .collect();
    let keda = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        keda.contains(&format!("threshold: '{per_replica}'"))
            || keda.contains(&format!("threshold: \"{per_replica}\"")),
        "{keda}"
    );
    assert!(
        keda.contains("vllm:num_requests_running") && keda.contains("vllm:num_requests_waiting"),
        "{keda}"
    );
    let hpa = std::fs::read_to_string(&files[1]).unwrap();
    assert!(
        hpa.contains("name: vllm-h100") && hpa.contains("namespace: llm"),
        "{hpa}"
    );
    let Some(python) = validator() else { return };
    let crd = repo().join("crates/generate/tests/fixtures/schemas/keda.sh_scaledobjects.yaml");
    let (ok, report) = validate_with(&python, &[crd], &files[..2]);
    assert!(ok, "{report}");
    assert!(
        report.contains("ScaledObject/vllm-h100")
            && report.contains("HorizontalPodAutoscaler/vllm-h100"),
        "{report}"
    );
}

#[test]
fn autoscaling_from_a_rate_search_is_refused_before_anything_is_written() {
    let dir = temp_dir("capacity-rate");
    let k8s = dir.join("k8s");
    let out = search(
        &dir,
        &[
            "--rate",
            "--autoscaling-out",
            k8s.to_str().unwrap(),
            "--budget",
            "30s",
        ],
    );
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("drop --rate"), "{text}");
    assert!(!k8s.exists());
}

#[test]
fn a_stage_of_no_time_is_refused_before_anything_starts() {
    let out = llmscope(&["capacity", "--stage", "0s"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("--stage 0s measures nothing"), "{text}");
}

/// Issue 50: what would fail after a search of minutes is refused before it starts — a stage
/// longer than the budget, an SLO of 0, a Deployment name Kubernetes refuses, a user's own
/// `hpa.yaml` or a link in the `--autoscaling-out` folder — each naming the flag. Every case
/// ends at once: no simulated stack starts (the store is never created).
#[test]
fn what_a_search_could_not_finish_with_is_refused_before_it_starts() {
    let dir = temp_dir("capacity-refused");
    let db = dir.join("runs.db");
    let k8s = dir.join("k8s");
    std::fs::create_dir_all(&k8s).unwrap();
    let out_dir = k8s.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--stage", "1000h", "--budget", "1m"],
            "--stage 1000h (after --warmup",
        ),
        (vec!["--slo", "ttft=0"], "no request meets a limit of 0"),
        (
            vec!["--autoscaling-out", out_dir, "--deployment", "Not_A_Name"],
            "not a valid Deployment name",
        ),
    ];
    for (args, says) in &cases {
        let mut all = vec!["capacity", "--db", db.to_str().unwrap()];
        all.extend(args);
        let out = llmscope(&all);
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains(says), "{args:?}: {text}");
    }
    // The user's own hpa.yaml is never overwritten; a link is never followed out.
    let hpa = k8s.join("hpa.yaml");
    std::fs::write(&hpa, "# my own HPA\n").unwrap();
    let args = ["--autoscaling-out", out_dir, "--deployment", "vllm"];
    let mut all = vec!["capacity", "--db", db.to_str().unwrap()];
    all.extend(args);
    let out = llmscope(&all);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("llmscope did not write it"), "{text}");
    assert_eq!(std::fs::read_to_string(&hpa).unwrap(), "# my own HPA\n");
    std::fs::remove_file(&hpa).unwrap();
    let outside = dir.join("outside.yaml");
    std::os::unix::fs::symlink(&outside, &hpa).unwrap();
    let out = llmscope(&all);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("symbolic link"), "{text}");
    assert!(!outside.exists());
    assert!(!db.exists(), "a refused search stored nothing");
}
