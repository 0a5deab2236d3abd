//! `llmscope whatif` end to end on the simulated stack: a run of the embedded default (batch
//! limit at --max-num-seqs 16, 32 clients), its advice's prediction, then `whatif --set
//! max-num-seqs=32 --confirm` — the prediction against the changed deployment measured.

use crate::common::{json, llmscope, temp_dir};

#[test]
fn the_default_runs_advice_is_predicted_and_confirmed() {
    let dir = temp_dir("whatif");
    let db = dir.join("runs.db");
    let db_s = db.to_str().unwrap();
    let out = llmscope(&[
        "run",
        "--duration",
        "20s",
        "--baseline",
        "2s",
        "--db",
        db_s,
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["verdict"]["bottleneck"], "batch_limit", "{v:#}");
    let first = &v["recommendations"][0];
    assert_eq!(first["setting"]["flag"], "max-num-seqs", "{first:#}");
    let predicted = first["predicted"].as_str().unwrap_or_default();
    assert!(
        predicted.contains("output tok/s") && predicted.contains("whatif"),
        "the advice carries its prediction: {first:#}"
    );
    let run = v["run_id"].as_str().unwrap().to_owned();

    let out = llmscope(&[
        "whatif",
        &run,
        "--set",
        "max-num-seqs=32",
        "--confirm",
        "--db",
        db_s,
        "--format",
        "json",
    ]);
    let w = json(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The contract of issue 24.
    let stage = &w["fit"]["stages"][0];
    assert!(stage["error"]["output_tok_s"].is_number(), "{w:#}");
    let p = &w["predicted"];
    for k in ["output_tok_s", "req_s"] {
        assert!(p[k].as_f64().is_some_and(|x| x > 0.0), "{k}: {w:#}");
    }
    assert!(p["ttft_ms"]["p50"].is_number() && p["ttft_ms"]["p95"].is_number());
    assert!(p["band"]["output_tok_s"].is_array() && p["bottleneck"].is_string());
    // The fitted engine reproduces the run it was fitted to.
    let err = stage["error"]["output_tok_s"].as_f64().unwrap();
    assert!(
        err.abs() < 0.2,
        "the fit is {err:+.2} off its own run: {w:#}"
    );
    // Raising the cap to the clients' 32 is predicted to buy output, and confirmed.
    let measured = w["base"]["measured"]["output_tok_s"].as_f64().unwrap();
    assert!(
        p["output_tok_s"].as_f64().unwrap() > 1.3 * measured,
        "{w:#}"
    );
    let c = &w["confirmed"];
    assert!(c["output_tok_s"].is_number(), "{w:#}\n{stderr}");
    let within = c["within"].as_array().unwrap();
    assert!(
        out.status.success() && within.iter().all(|t| t["met"] == true),
        "the confirmation lands within the targets: {within:#?}\n{w:#}\n{stderr}"
    );
}

#[test]
fn whatif_refuses_what_it_cannot_predict_by_name() {
    let dir = temp_dir("whatif-refuse");
    let db = dir.join("runs.db");
    let db_s = db.to_str().unwrap();
    let out = llmscope(&["whatif", "1", "--set", "max-num-seqs=32", "--db", db_s]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no run store"), "{err}");
    for (set, said) in [
        ("max-num-seqs=lots", "whole number"),
        ("max-num-seq=32", "unknown flag"),
        ("gpu-memory-utilization=1.5", "fraction"),
        ("32", "FLAG=VALUE"),
    ] {
        let out = llmscope(&["whatif", "1", "--set", set, "--db", db_s]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(said), "{set}: {err}");
    }
}
