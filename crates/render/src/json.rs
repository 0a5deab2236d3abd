//! The `--format json` document of a diagnosed run.

use crate::{Interruption, Report};
use llmscope_diagnosis::{DECISION_TABLE, Diagnosis};
use serde_json::{Value, json};

/// The contract: `verdict.{bottleneck,confidence}`, `evidence`, `recommendations`
/// (`action`, `reason`), `timeline`, `window_stats`, `run_id`, `interrupted` (null, or when and
/// how far a stopped run got), plus findings and the client view; `replicas` (each replica's
/// `pod`, `rank`, `verdict`, `running`, `waiting`, `kv`, `share_of_requests`) only where the
/// deployment has two or more.
pub fn contract(r: &Report) -> Value {
    let d = r.diagnosis;
    let mut doc = json!({
        "run_id": r.run_id,
        "interrupted": r.interrupted.as_ref().map(interrupted),
        "simulated": r.simulated,
        "context": r.context,
        "verdict": verdict(d),
        "evidence": d.evidence,
        "recommendations": d.recommendations,
        "findings": d.findings.iter().map(finding).collect::<Vec<_>>(),
        "timeline": {
            "phases": d.phases,
            "edges": d.edges,
            "offsets": d.offsets,
        },
        "window_stats": d.window_stats,
        "decision_table": decision_table(d),
        "requests": r.input.load.requests,
        "client": r.client,
    });
    if d.replicas.len() >= 2
        && let Some(o) = doc.as_object_mut()
    {
        o.insert("replicas".to_owned(), json!(d.replicas));
    }
    doc
}

/// When and how far a stopped run got.
fn interrupted(i: &Interruption) -> Value {
    json!({
        "at": i.at, "done_s": i.done_s, "planned_s": i.planned_s, "notice": i.notice(),
    })
}

fn verdict(d: &Diagnosis) -> Value {
    json!({
        "bottleneck": d.verdict.bottleneck.as_str(),
        "confidence": round(d.verdict.confidence, 3),
        "summary": d.verdict.summary,
        "decision_table_row": d.verdict.row,
    })
}

/// Every row of the decision table, the verdict's `matched`.
fn decision_table(d: &Diagnosis) -> Vec<Value> {
    DECISION_TABLE
        .iter()
        .enumerate()
        .map(|(i, row)| json!({"gpu": row.gpu, "kv": row.kv, "waiting": row.waiting, "bottleneck": row.bottleneck, "matched": d.verdict.row == Some(i)}))
        .collect()
}

/// A diagnosis finding as the contract has it: `id` (its rule), severity, message, bottleneck,
/// confidence, evidence; then whatever else the finding says (`rule` too).
fn finding(f: &llmscope_diagnosis::Finding) -> serde_json::Value {
    let mut v = json!({
        "id": f.rule,
        "severity": f.severity,
        "message": f.message,
        "bottleneck": f.bottleneck,
        "confidence": f.confidence,
        "evidence": f.evidence,
    });
    if let (Some(out), Ok(serde_json::Value::Object(rest))) =
        (v.as_object_mut(), serde_json::to_value(f))
    {
        for (k, x) in rest {
            out.entry(k).or_insert(x);
        }
    }
    v
}

fn round(v: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (v * f).round() / f
}
