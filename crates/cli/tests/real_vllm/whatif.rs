//! `llmscope whatif` against the real engine (issue 24): the engine model fitted to runs of one
//! server, the change predicted, then the changed server started and measured.
//!
//! Judged as the issue states it: output tok/s within 20 % and TTFT p50 within 30 % of what the
//! changed server measured, and the limit it met the predicted one — where the fit reproduced
//! every run it was fitted to within those targets. Where it did not (a 2-core host shared by
//! engine, API server and client; a real scheduler on a starved KV pool), the output must name
//! each run it mis-reproduces and why, and the measurement must lie in the band the prediction
//! states — a band never narrower than how far apart the base's load measured twice (the host's
//! repeatability). A target measured outside both is measured once more, as the matrix
//! re-measures a disagreement; the same miss twice fails.

use crate::matrix::{Cell, Matrix, set};
use crate::oracle::Setting;
use crate::{Checks, llmscope, text};
use serde_json::Value;

const OUTPUT_TARGET: f64 = 0.2;
const TTFT_TARGET: f64 = 0.3;

/// `llmscope whatif BASE REPEAT… LIGHT MORE… --set CHANGE` on the runs of `m`'s store (`bases`
/// from [`base`], the first the base; `more`, stored runs of the same server such as a capacity
/// search's stages), as JSON.
pub fn predict(
    m: &Matrix<'_>,
    bases: &[Cell],
    light: &Cell,
    more: &[String],
    change: &str,
) -> Value {
    let mut runs: Vec<String> = bases.iter().chain([light]).map(run_id).collect();
    runs.extend(more.iter().cloned());
    let db = m.db().to_string_lossy().to_string();
    let mut args = vec!["whatif"];
    args.extend(runs.iter().map(String::as_str));
    args.extend(["--set", change, "--db", &db, "--format", "json"]);
    let out = llmscope(&args);
    let w: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("whatif {args:?}: stdout is not JSON ({e})\n{}", text(&out)));
    eprintln!(
        "  whatif {change}: predicted {:.0} tok/s (band {}), TTFT p50 {:.0} ms (band {}), limit {} near {}; caveats: {}",
        w["predicted"]["output_tok_s"].as_f64().unwrap_or(f64::NAN),
        w["predicted"]["band"]["output_tok_s"],
        w["predicted"]["ttft_ms"]["p50"]
            .as_f64()
            .unwrap_or(f64::NAN),
        w["predicted"]["band"]["ttft_p50_ms"],
        w["predicted"]["bottleneck"],
        w["predicted"].get("near").unwrap_or(&Value::Null),
        w["caveats"]
    );
    eprintln!(
        "    fit model: {} ; workload replayed for the change: {}",
        w["fit"]["model"], w["base"]["workload"]
    );
    for s in w["fit"]["stages"].as_array().into_iter().flatten() {
        eprintln!(
            "    fit run {}: {} — measured {:.0} tok/s, TTFT {:.0} ms, {}; replayed {:.0}, {:.0} ms, {} (sequences a step: {})",
            s["run"],
            s["load"],
            s["measured"]["output_tok_s"].as_f64().unwrap_or(f64::NAN),
            s["measured"]["ttft_ms"]["p50"].as_f64().unwrap_or(f64::NAN),
            s["measured"]["bottleneck"],
            s["replayed"]["output_tok_s"].as_f64().unwrap_or(f64::NAN),
            s["replayed"]["ttft_ms"]["p50"].as_f64().unwrap_or(f64::NAN),
            s["replayed"]["bottleneck"],
            s["batch"]
        );
    }
    w
}

/// The stored run a cell's report names (`run_id`, a string in the report, a number in a fit).
fn run_id(c: &Cell) -> String {
    match &c.report["run_id"] {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// Whether the host starved the API server through a measurement: the oracle's own mark of a
/// front end that holds requests (as many outside the engine as its `front_end` needs — 15 % of
/// the clients, at least 2), whatever limit it read inside.
fn starved(r: &crate::oracle::Reading, clients: u32) -> bool {
    r.outside >= (0.15 * f64::from(clients)).max(2.0)
}

/// The base a prediction is fitted to and its repeat: the measurements of `cell`'s load in
/// which the engine's own numbers (the oracle) read `regime` — the limit the change is about —
/// with the API server keeping up; the first is the base. The load is measured once more, and
/// a third time where one of the two is not so; two must be so, and go to the fit (the second
/// tells the host's repeatability: on this 2-core host one load measures 30–50 % apart from
/// one run to the next, and the band may be no narrower). A measurement that is not so stays out of the
/// fit: the model keeps a run's time outside the engine as it was, so a base the host starved
/// predicts the host's state, not the change's (a c8 base with 12.5 of 16 requests in the API
/// server put 120 ms of its TTFT there; a KV 4 MiB repeat with 24 of 32 in the API server
/// was replayed 100 % off and widened the band to 0–4,000 tok/s). `None` when fewer are so.
pub fn base(
    m: &mut Matrix<'_>,
    cell: &Cell,
    regime: &str,
    set: Setting,
    answers: u32,
) -> Option<Vec<Cell>> {
    let read = |c: &Cell| {
        let clean = c.reading.expect == Some(regime) && !starved(&c.reading, set.clients);
        eprintln!(
            "  whatif base: the oracle read {:?}, {:.1} of {} outside the engine{}",
            c.reading.expect,
            c.reading.outside,
            set.clients,
            if starved(&c.reading, set.clients) {
                " (the API server held them)"
            } else {
                ""
            }
        );
        clean
    };
    let mut clean: Vec<Cell> = std::iter::once(cell.clone()).filter(&read).collect();
    clean.extend(Some(m.cell(set, answers, &[], " (whatif's base, repeated)")).filter(&read));
    if clean.len() < 2 {
        clean.extend(
            Some(m.cell(set, answers, &[], " (whatif's base, a third time)")).filter(&read),
        );
    }
    (clean.len() >= 2).then_some(clean)
}

/// Measures the changed server (a load whose regime the oracle reads, not judged as
/// a matrix cell — the change may put it on a border between two limits) and judges the
/// prediction `w` against it. The limit measured is the oracle's, read from the engine's own
/// numbers; a target in which the API server held the load (the oracle's `front_end`) is
/// judged only where the prediction carries the API server's capacity (it then names
/// `front_end`), else it is the host's state, not the change's effect: measured once more,
/// then a failure of the floor (a prediction never judged is no pass). A prediction that misses is measured once more; the same miss
/// twice fails.
///
/// The target is `target`'s load with `answers`-token answers on the changed server `m`.
///
/// The host's drift is not corrected for: a control load of 4 clients measured on the changed
/// server (tried, then removed) read the API server, not the engine — it served 519 tok/s where
/// the model replays 798 while the target beside it served 1,747 against the 1,094 that scaling predicted (1,683 unscaled) —
/// so the prediction is held as made, within its band.
pub fn judge(
    checks: &mut Checks,
    name: &str,
    w: &Value,
    m: &mut Matrix<'_>,
    (target, answers): (Setting, u32),
) {
    let clients = target.clients;
    let (mut host_again, mut missed_again) = (false, false);
    let front_end_predicted = w["predicted"]["bottleneck"] == "front_end";
    let found = loop {
        let cell = m.measure(target, answers, &[], " (whatif's target)");
        eprintln!("  {name}: the changed server: {}", cell.reading.line());
        let held = starved(&cell.reading, clients);
        let regime = cell
            .reading
            .expect
            .filter(|e| !e.starts_with("unexplained"))
            .map(|r| {
                if held && front_end_predicted {
                    "front_end"
                } else {
                    r
                }
            })
            .filter(|&r| r != "front_end" || front_end_predicted)
            // The API server held the load where the engine had room: the host's state too.
            .filter(|_| !held || front_end_predicted);
        let Some(regime) = regime else {
            if host_again {
                // The floor (issue 47): a prediction the changed server never let be judged is
                // not a pass.
                checks.expect(
                    &format!("{name}: the changed server's load judged (floor)"),
                    false,
                    || format!(
                        "twice the oracle read {:?} ({:.1} of {clients} outside the engine) where the prediction is the engine's ({}): the host's state, nothing judged",
                        cell.reading.expect, cell.reading.outside, w["predicted"]["bottleneck"]
                    ),
                );
                return;
            }
            eprintln!(
                "  {name}: the oracle read {:?} with {:.1} of {clients} outside the engine; measured once more",
                cell.reading.expect, cell.reading.outside
            );
            host_again = true;
            continue;
        };
        let found = verdict_of(w, &cell.report, regime);
        if found.is_empty() || missed_again {
            break found;
        }
        eprintln!("  {name}: measured once more after: {}", found.join("; "));
        missed_again = true;
    };
    checks.expect(
        &format!("{name}: the prediction holds on the real engine"),
        found.is_empty(),
        || format!("{}\nwhatif: {w}", found.join("\n")),
    );
}

/// The output tok/s the client received: over its sending window where it says one.
fn client_output(report: &Value) -> Option<f64> {
    let t = &report["client"]["throughput"];
    t["sending_output_tokens_per_s"]
        .as_f64()
        .or_else(|| t["output_tokens_per_s"].as_f64())
}

/// What the prediction `w` got wrong against the measured `report` and the limit the oracle
/// read: empty when it holds.
fn verdict_of(w: &Value, report: &Value, limit: &str) -> Vec<String> {
    let p = &w["predicted"];
    let tok = client_output(report);
    let ttft = report["client"]["latency_ms"]["ttft"]["p50"].as_f64();
    let stages = w["fit"]["stages"].as_array().cloned().unwrap_or_default();
    let fit_holds = |key: &str, target: f64| {
        stages
            .iter()
            .all(|s| s["error"][key].as_f64().is_some_and(|e| e.abs() <= target))
    };
    let mut wrong = Vec::new();
    let mut figure = |what: &str,
                      pred: Option<f64>,
                      meas: Option<f64>,
                      band: &Value,
                      target,
                      holds| {
        let (Some(pred), Some(meas)) = (pred, meas) else {
            wrong.push(format!("{what}: predicted {pred:?}, measured {meas:?}"));
            return;
        };
        let err = pred / meas - 1.0;
        let band = band[0].as_f64().zip(band[1].as_f64());
        let in_band = band.is_some_and(|(a, b)| a <= meas && meas <= b);
        let band = band.map_or("none".to_owned(), |(a, b)| format!("[{a:.1}, {b:.1}]"));
        eprintln!(
            "  {what}: predicted {pred:.1}, measured {meas:.1} ({:+.0}%; target {:.0}%{}; band {band}: {})",
            err * 100.0,
            target * 100.0,
            if holds {
                ""
            } else {
                ", the fit itself missed it"
            },
            if in_band { "in" } else { "out" }
        );
        let ok = if holds {
            err.abs() <= target || in_band
        } else {
            in_band
        };
        if !ok {
            wrong.push(format!(
                "{what}: predicted {pred:.1}, measured {meas:.1} ({:+.0}%), band {band}",
                err * 100.0
            ));
        }
    };
    figure(
        "output tok/s",
        p["output_tok_s"].as_f64(),
        tok,
        &p["band"]["output_tok_s"],
        OUTPUT_TARGET,
        fit_holds("output_tok_s", OUTPUT_TARGET),
    );
    figure(
        "TTFT p50 ms",
        p["ttft_ms"]["p50"].as_f64(),
        ttft,
        &p["band"]["ttft_p50_ms"],
        TTFT_TARGET,
        fit_holds("ttft_p50", TTFT_TARGET),
    );
    let near: Vec<&str> = p["near"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let named = p["bottleneck"] == limit || near.contains(&limit);
    eprintln!(
        "  limit: predicted {} (near {near:?}), measured {limit}",
        p["bottleneck"]
    );
    if !named {
        wrong.push(format!(
            "limit: predicted {} (near {near:?}), measured {limit}",
            p["bottleneck"]
        ));
    }
    // Each run the fit mis-reproduces is named in the output, with why.
    let caveats = w["caveats"].to_string();
    for s in &stages {
        let off = s["error"]["output_tok_s"]
            .as_f64()
            .is_some_and(|e| e.abs() > OUTPUT_TARGET);
        let run = format!("run {}:", s["run"]);
        if off && !caveats.contains(&run) {
            wrong.push(format!(
                "{run} is off by more than 20% and no caveat says so"
            ));
        }
    }
    wrong
}

/// The runs a fit needs beside the base: the base's server at 4 clients (the small batches a
/// pinned run lacks).
/// Measured once more where the API server held its requests (a real vLLM 0.32 on 2 cores
/// kept 2.1 of 4 away from its engine, which the fit then replayed 75 % off): the fit needs the
/// engine's small batch, not the host's.
pub fn light(m: &mut Matrix<'_>, cap: u32, answers: u32) -> Cell {
    let first = m.cell(set(cap, 4), answers, &[], " (whatif's light run)");
    if !starved(&first.reading, 4) {
        return first;
    }
    m.cell(set(cap, 4), answers, &[], " (whatif's light run, again)")
}
