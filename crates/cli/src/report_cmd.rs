//! `llmscope report RUN`, `llmscope diagnose RUN`, `llmscope compare RUN_A RUN_B`: stored runs,
//! re-diagnosed from their series (the diagnosis is pure, so this is exactly what `run` said,
//! or what a newer llmscope says about the same data) and rendered.

use crate::analysis::{self, Analysed, FailOn, ReportFormat};
use anyhow::{Context, Result};
use llmscope_store::{RunId, Store};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Render a stored run.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  llmscope report 3
  llmscope report 3 --html run3.html
  llmscope report 3 --format markdown > run3.md")]
pub struct ReportArgs {
    /// The run id (see `llmscope runs`).
    pub run: RunId,
    #[arg(long, default_value = "llmscope.db")]
    pub db: PathBuf,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Also write a self-contained HTML report here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Exit 1 when a finding reaches this severity.
    #[arg(long, value_enum, default_value_t = FailOn::Never)]
    pub fail_on: FailOn,
}

fn open(db: &PathBuf) -> Result<Store> {
    if !db.exists() {
        anyhow::bail!(
            "no run store at {} (run `llmscope run` or `llmscope observe` first, or pass --db)",
            db.display()
        );
    }
    Store::open(db).with_context(|| format!("opening the run store {}", db.display()))
}

fn load(store: &Store, run: RunId, db: &std::path::Path) -> Result<Analysed> {
    store.run(run).with_context(|| {
        format!(
            "run {run} is not in {} (see `llmscope runs --db {}`)",
            db.display(),
            db.display()
        )
    })?;
    analysis::analyse(store, run)
}

pub fn report(args: ReportArgs) -> Result<ExitCode> {
    let store = open(&args.db)?;
    let a = load(&store, args.run, &args.db)?;
    analysis::render(
        &a,
        &format!("llmscope run {}", args.run),
        args.format,
        args.html.as_deref(),
    )?;
    Ok(analysis::exit_code(&a.diagnosis, args.fail_on))
}

/// Compare two stored runs (before/after a change).
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:
  llmscope run --max-num-seqs 16 && llmscope run --max-num-seqs 64 && llmscope compare 1 2")]
pub struct CompareArgs {
    pub before: RunId,
    pub after: RunId,
    #[arg(long, default_value = "llmscope.db")]
    pub db: PathBuf,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
}

/// One compared quantity: (name, before, after).
type Row = (String, Option<f64>, Option<f64>);

fn rows(a: &Analysed, b: &Analysed) -> Vec<Row> {
    let stat = |x: &Analysed, k: &str| x.diagnosis.window_stats.get(k).map(|s| s.mean_nonzero);
    let client = |x: &Analysed, path: &[&str]| {
        let mut v = x.facts.client.as_ref()?;
        for p in path {
            v = v.get(p)?;
        }
        v.as_f64()
    };
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
    for (name, path) in [
        ("requests/s", &["throughput", "requests_per_s"][..]),
        ("output tok/s", &["throughput", "output_tokens_per_s"]),
        ("TTFT p50 ms", &["latency_ms", "ttft", "p50"]),
        ("TTFT p99 ms", &["latency_ms", "ttft", "p99"]),
        ("ITL p50 ms", &["latency_ms", "itl", "p50"]),
        ("e2e p99 ms", &["latency_ms", "e2e", "p99"]),
    ] {
        out.push((name.to_owned(), client(a, path), client(b, path)));
    }
    out
}

pub fn compare(args: CompareArgs) -> Result<ExitCode> {
    let store = open(&args.db)?;
    let a = load(&store, args.before, &args.db)?;
    let b = load(&store, args.after, &args.db)?;
    let rows = rows(&a, &b);
    let mut out = std::io::stdout().lock();
    let delta = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) if x != 0.0 => Some((y - x) / x.abs() * 100.0),
        _ => None,
    };
    match args.format {
        ReportFormat::Json => {
            let v = serde_json::json!({
                "before": {"run_id": a.run, "bottleneck": a.diagnosis.verdict.bottleneck.as_str(), "confidence": a.diagnosis.verdict.confidence},
                "after": {"run_id": b.run, "bottleneck": b.diagnosis.verdict.bottleneck.as_str(), "confidence": b.diagnosis.verdict.confidence},
                "rows": rows.iter().map(|(n, x, y)| serde_json::json!({"name": n, "before": x, "after": y, "delta_pct": delta(*x, *y)})).collect::<Vec<_>>(),
            });
            serde_json::to_writer_pretty(&mut out, &v)?;
            writeln!(out)?;
        }
        ReportFormat::Text | ReportFormat::Markdown => {
            let md = args.format == ReportFormat::Markdown;
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
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
