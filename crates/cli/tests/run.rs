//! `llmscope run` end to end on the built-in simulated stack (shortened windows), then
//! `report`, `compare` and the HTML report — as a user runs them, through the binary.

use serde_json::Value;
use std::process::{Command, Output};

fn llmscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_llmscope"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("run llmscope")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn default_run_finds_the_batch_limit_and_stores_it() {
    let dir = std::env::temp_dir().join(format!("llmscope-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn reports_of_missing_runs_and_stores_fail_clearly() {
    let out = llmscope(&["report", "42", "--db", "/nonexistent/llmscope.db"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run store"));
}
