//! Diagnosis accuracy: simulator scenarios kept as readable fixtures (`tests/scenarios/*.json`),
//! one or more per verdict. Each names a preset, overrides, a closed-loop workload and what the
//! diagnosis must say. A domain expert adds a case by adding a file — no Rust needed.
//!
//! The simulator runs offline (simulated time), scraped every second with dcgm collecting every
//! 5 s, with 20 s of idle baseline before and after — the shape of a real `llmscope run`.

use llmscope_diagnosis::{LoadFacts, diagnose};
use llmscope_sim::engine::Engine;
use llmscope_sim::offline::{ClosedLoop, run_closed_loop, to_input};
use llmscope_sim::preset::preset;
use serde_json::Value;

fn u(v: &Value, key: &str, default: u64) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(default)
}

fn run_case(path: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let case: Value = serde_json::from_str(&text).map_err(|e| format!("bad fixture: {e}"))?;
    let mut p = preset(case["preset"].as_str().unwrap_or("")).ok_or("unknown preset")?;
    if let Some(ms) = case.get("host_overhead_ms").and_then(Value::as_f64) {
        p.constants.host_step_s = ms / 1000.0;
    }
    let engine = &case["engine"];
    p.engine.max_num_seqs = u(engine, "max_num_seqs", p.engine.max_num_seqs as u64) as u32;
    p.engine.max_num_batched_tokens = u(
        engine,
        "max_num_batched_tokens",
        p.engine.max_num_batched_tokens as u64,
    ) as u32;
    if let Some(len) = engine.get("max_model_len").and_then(Value::as_u64) {
        p.engine.max_model_len = len as u32;
    }
    if let Some(bytes) = engine.get("kv_cache_memory_bytes").and_then(Value::as_u64) {
        p.engine.kv_cache_memory_bytes = Some(bytes);
    }
    let w = &case["workload"];
    let load = ClosedLoop {
        clients: u(w, "clients", 32) as u32,
        prompt_tokens: u(w, "prompt_tokens", 55) as u32,
        template_tokens: u(w, "template_tokens", 24) as u32,
        max_tokens: u(w, "max_tokens", 512) as u32,
        ignore_eos: w
            .get("ignore_eos")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        unique_prompts: w
            .get("unique_prompts")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        duration_s: u(w, "duration_s", 120) as f64,
        sample_every_s: 1.0,
        idle_s: 20.0,
        dcgm_every_s: 5.0,
    };
    let mut e = Engine::new(&p, 1).map_err(|e| e.to_string())?;
    let trace = run_closed_loop(&mut e, &load);
    let note = case
        .get("client_limited")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let facts = LoadFacts {
        // What the test asked for; a client that kept fewer in flight says so in its note.
        concurrency: Some(u(w, "target_concurrency", u64::from(load.clients)) as u32),
        window: Some(trace.load_window),
        client_limited: note.is_some(),
        client_note: note,
        ..LoadFacts::default()
    };
    let d = diagnose(&to_input(&trace, &e, facts));
    let expect = &case["expect"];
    let got = d.verdict.bottleneck.as_str();
    let summary = format!(
        "verdict {got} ({:.2}): {}\nfindings: {:?}\nstats: {:?}",
        d.verdict.confidence,
        d.verdict.summary,
        d.findings.iter().map(|f| f.rule).collect::<Vec<_>>(),
        d.window_stats
            .iter()
            .map(|(k, s)| format!("{k}={:.3}/{:.3}", s.mean_nonzero, s.max))
            .collect::<Vec<_>>()
    );
    if expect["bottleneck"].as_str() != Some(got) {
        return Err(format!("expected {}\n{summary}", expect["bottleneck"]));
    }
    for ev in expect["evidence"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !d.evidence.iter().any(|x| x.signal == ev) {
            return Err(format!("evidence lacks {ev}\n{summary}"));
        }
    }
    if let Some(r) = expect["recommendation"].as_str()
        && !d.recommendations.iter().any(|x| x.action.contains(r))
    {
        return Err(format!(
            "no recommendation mentions `{r}`: {:?}\n{summary}",
            d.recommendations
        ));
    }
    for id in expect["secondary"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !d.findings.iter().any(|f| f.rule == id) {
            return Err(format!("secondary finding {id} missing\n{summary}"));
        }
    }
    Ok(())
}

#[test]
fn every_scenario_fixture_gets_its_verdict() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    assert!(paths.len() >= 7, "one fixture per verdict at least");
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|p| run_case(p).err().map(|e| format!("{}: {e}", p.display())))
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}
