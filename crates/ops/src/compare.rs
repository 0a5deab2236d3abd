//! `llmscope compare A B`: two diagnosed runs side by side (before/after a change) — the
//! steady-window means of the main signals and the client's throughput and latency, with the
//! change in percent; a value one run lacks is shown as absent (`—`), never as 0.

use crate::OpsError;
use crate::analysis::{Analysed, Format};
use llmscope_core::client::ClientSummary;
use std::io::Write;

/// One compared quantity: (name, before, after).
type Row = (String, Option<f64>, Option<f64>);

fn rows(a: &Analysed, b: &Analysed) -> Vec<Row> {
    let stat = |x: &Analysed, k: &str| x.diagnosis.window_stats.get(k).map(|s| s.mean_nonzero);
    type Pick = fn(&ClientSummary) -> Option<f64>;
    let client = |x: &Analysed, pick: Pick| x.facts.client.as_ref().and_then(pick);
    let mut out: Vec<Row> = [
        "running",
        "waiting",
        "kv_usage",
        "gpu_util",
        "gr_engine_active",
        "generated_tokens",
    ]
    .iter()
    .map(|k| (format!("{k} (steady mean≠0)"), stat(a, k), stat(b, k)))
    .collect();
    let picks: [(&str, Pick); 6] = [
        ("requests/s", |c| Some(c.throughput.requests_per_s)),
        ("output tok/s", |c| Some(c.throughput.output_tokens_per_s)),
        ("TTFT p50 ms", |c| c.latency_ms.ttft.p50),
        ("TTFT p99 ms", |c| c.latency_ms.ttft.p99),
        ("ITL p50 ms", |c| c.latency_ms.itl.p50),
        ("e2e p99 ms", |c| c.latency_ms.e2e.p99),
    ];
    for (name, pick) in picks {
        out.push((name.to_owned(), client(a, pick), client(b, pick)));
    }
    out
}

/// Writes the comparison of `a` (before) and `b` (after) in `format`.
pub fn write(
    a: &Analysed,
    b: &Analysed,
    format: Format,
    mut out: &mut dyn Write,
) -> Result<(), OpsError> {
    let rows = rows(a, b);
    let delta = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) if x != 0.0 => Some((y - x) / x.abs() * 100.0),
        _ => None,
    };
    match format {
        Format::Json => {
            let v = serde_json::json!({
                "before": {"run_id": a.run, "bottleneck": a.diagnosis.verdict.bottleneck.as_str(), "confidence": a.diagnosis.verdict.confidence},
                "after": {"run_id": b.run, "bottleneck": b.diagnosis.verdict.bottleneck.as_str(), "confidence": b.diagnosis.verdict.confidence},
                "rows": rows.iter().map(|(n, x, y)| serde_json::json!({"name": n, "before": x, "after": y, "delta_pct": delta(*x, *y)})).collect::<Vec<_>>(),
            });
            serde_json::to_writer_pretty(&mut out, &v)?;
            writeln!(out)?;
        }
        Format::Text | Format::Markdown => {
            let md = format == Format::Markdown;
            let f = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:.3}"));
            if md {
                writeln!(
                    out,
                    "| | run {} | run {} | Δ |\n|---|---|---|---|",
                    a.run, b.run
                )?;
                writeln!(
                    out,
                    "| verdict | {} | {} | |",
                    a.diagnosis.verdict.bottleneck.as_str(),
                    b.diagnosis.verdict.bottleneck.as_str()
                )?;
            } else {
                writeln!(
                    out,
                    "{:<28} {:>14} {:>14} {:>9}",
                    "",
                    format!("run {}", a.run),
                    format!("run {}", b.run),
                    "Δ"
                )?;
                writeln!(
                    out,
                    "{:<28} {:>14} {:>14}",
                    "verdict",
                    a.diagnosis.verdict.bottleneck.as_str(),
                    b.diagnosis.verdict.bottleneck.as_str()
                )?;
            }
            for (name, x, y) in &rows {
                let d = delta(*x, *y).map_or(String::new(), |d| format!("{d:+.1}%"));
                if md {
                    writeln!(out, "| {name} | {} | {} | {d} |", f(*x), f(*y))?;
                } else {
                    writeln!(out, "{name:<28} {:>14} {:>14} {d:>9}", f(*x), f(*y))?;
                }
            }
        }
    }
    Ok(out.flush()?)
}
