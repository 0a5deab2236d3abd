//! `llmscope compare A B`: two diagnosed runs side by side (before/after a change) — the
//! steady-window means of the main signals and the client's throughput and latency, with the
//! change in percent; a value one run lacks is shown as absent (`—`), never as 0.
//!
//! [`write_html_file`] puts two or more runs on one page (`llmscope_render::compare`): their
//! verdicts, what changed in their configuration, the same table with each run's change from
//! the first, and their charts overlaid.

use crate::OpsError;
use crate::analysis::{Analysed, Format};
use llmscope_core::outcome::ClientSummary;
use llmscope_render::compare;
use std::io::Write;

/// One compared quantity: (name, before, after).
type Row = (String, Option<f64>, Option<f64>);

fn rows(a: &Analysed, b: &Analysed) -> Vec<Row> {
    table(&[a, b])
        .into_iter()
        .map(|r| (r.name, r.values[0], r.values[1]))
        .collect()
}

/// The compared quantities of every run in `runs`, in their order.
fn table(runs: &[&Analysed]) -> Vec<compare::Row> {
    let stat = |x: &Analysed, k: &str| x.diagnosis.window_stats.get(k).map(|s| s.mean_nonzero);
    type Pick = fn(&ClientSummary) -> Option<f64>;
    let client = |x: &Analysed, pick: Pick| x.facts.client.as_ref().and_then(pick);
    let row = |name: String, value: &dyn Fn(&Analysed) -> Option<f64>| compare::Row {
        name,
        values: runs.iter().map(|x| value(x)).collect(),
    };
    let mut out: Vec<compare::Row> = [
        "running",
        "waiting",
        "kv_usage",
        "gpu_util",
        "gr_engine_active",
        "generated_tokens",
    ]
    .iter()
    .map(|k| row(format!("{k} (steady mean≠0)"), &|x| stat(x, k)))
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
        out.push(row(name.to_owned(), &|x| client(x, pick)));
    }
    out
}

/// Writes the comparison of `runs` (two or more; the first is the base) as one self-contained
/// HTML page to a new file at `path`.
pub fn write_html_file(runs: &[&Analysed], path: &std::path::Path) -> Result<(), OpsError> {
    let ids: Vec<String> = runs.iter().map(|r| r.run.to_string()).collect();
    let title = format!("llmscope compare {}", ids.join(" "));
    let reports: Vec<_> = runs.iter().map(|r| r.report(&title)).collect();
    let rows = table(runs);
    crate::analysis::write_file(path, |out| compare::html(&title, &reports, &rows, out))
}

/// Writes the comparison of `a` (before) and `b` (after) in `format`.
pub fn write(
    a: &Analysed,
    b: &Analysed,
    format: Format,
    out: &mut dyn Write,
) -> Result<(), OpsError> {
    let rows = rows(a, b);
    match format {
        Format::Json => write_json(a, b, &rows, out)?,
        Format::Markdown => write_markdown(a, b, &rows, out)?,
        Format::Text => write_text(a, b, &rows, out)?,
    }
    Ok(out.flush()?)
}

/// The change from `x` to `y` in percent; none from an absent or zero `x`.
fn delta(x: Option<f64>, y: Option<f64>) -> Option<f64> {
    compare::change(x, y)
}

/// A value, or `—` for an absent one (never 0).
fn shown(v: Option<f64>) -> String {
    v.map_or("—".to_owned(), |v| format!("{v:.3}"))
}

fn shown_delta(x: Option<f64>, y: Option<f64>) -> String {
    delta(x, y).map_or(String::new(), |d| format!("{d:+.1}%"))
}

fn verdict(x: &Analysed) -> &str {
    x.diagnosis.verdict.bottleneck.as_str()
}

fn write_json(
    a: &Analysed,
    b: &Analysed,
    rows: &[Row],
    mut out: &mut dyn Write,
) -> Result<(), OpsError> {
    let side = |x: &Analysed| serde_json::json!({"run_id": x.run, "bottleneck": verdict(x), "confidence": x.diagnosis.verdict.confidence});
    let rows: Vec<_> = rows
        .iter()
        .map(|(n, x, y)| serde_json::json!({"name": n, "before": x, "after": y, "delta_pct": delta(*x, *y)}))
        .collect();
    let v = serde_json::json!({"before": side(a), "after": side(b), "rows": rows});
    serde_json::to_writer_pretty(&mut out, &v)?;
    writeln!(out)?;
    Ok(())
}

fn write_markdown(
    a: &Analysed,
    b: &Analysed,
    rows: &[Row],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "| | run {} | run {} | Δ |\n|---|---|---|---|",
        a.run, b.run
    )?;
    writeln!(out, "| verdict | {} | {} | |", verdict(a), verdict(b))?;
    for (name, x, y) in rows {
        let d = shown_delta(*x, *y);
        writeln!(out, "| {name} | {} | {} | {d} |", shown(*x), shown(*y))?;
    }
    Ok(())
}

fn write_text(
    a: &Analysed,
    b: &Analysed,
    rows: &[Row],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let (ra, rb) = (format!("run {}", a.run), format!("run {}", b.run));
    writeln!(out, "{:<28} {ra:>14} {rb:>14} {:>9}", "", "Δ")?;
    writeln!(
        out,
        "{:<28} {:>14} {:>14}",
        "verdict",
        verdict(a),
        verdict(b)
    )?;
    for (name, x, y) in rows {
        let d = shown_delta(*x, *y);
        writeln!(out, "{name:<28} {:>14} {:>14} {d:>9}", shown(*x), shown(*y))?;
    }
    Ok(())
}
