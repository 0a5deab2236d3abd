//! `llmscope runs`: the runs kept in the store — a list, or one run's sources and findings.
//!
//! Read-only in spirit: it opens the store (WAL lets it read while `observe` writes) and prints.
//! Opening the store marks a `running` run whose process is gone `interrupted`; its committed
//! samples and requests are all there, and every interrupted run says when and how far it got.

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use llmscope_collect::time::format_rfc3339;
use llmscope_core::duration::format_duration;
use llmscope_store::{RunSummary, Store};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const AFTER_HELP: &str = "\
Examples:
  llmscope runs
  llmscope runs --db /tmp/x.db --format json
  llmscope runs --run 3 --interval 1s     (one run: per-source series, samples, gaps, findings)";

/// List the runs kept in the store.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct RunsArgs {
    /// The run store.
    #[arg(long, default_value = llmscope_store::DEFAULT_PATH)]
    db: PathBuf,
    /// Show one run in detail.
    #[arg(long, value_name = "ID")]
    run: Option<i64>,
    /// Step that defines a gap in --run details (the run's scrape interval).
    #[arg(long, value_parser = |s: &str| llmscope_core::duration::parse_duration(s).map_err(|e| e.to_string()), default_value = "5s")]
    interval: Duration,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// `llmscope runs`.
pub fn run(args: RunsArgs) -> Result<ExitCode> {
    if !args.db.exists() {
        bail!(
            "no store at {}: record a run with `llmscope observe --db {}` first, or pass --db",
            args.db.display(),
            args.db.display()
        );
    }
    let store = Store::open(&args.db)?;
    let mut out = std::io::stdout().lock();
    match args.run {
        Some(id) => show(&store, id, &args, &mut out)?,
        None => list(&store, args.format, &mut out)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn list(store: &Store, format: Format, out: &mut impl Write) -> Result<()> {
    let runs = store.runs()?;
    if format == Format::Json {
        writeln!(out, "{}", serde_json::to_string_pretty(&runs)?)?;
        return Ok(());
    }
    if runs.is_empty() {
        writeln!(out, "no runs yet")?;
        return Ok(());
    }
    writeln!(
        out,
        "{:>4}  {:<8} {:<11} {:<24} {:>8} {:>7} {:>10} {:>8}  sources",
        "id", "kind", "status", "started", "length", "series", "samples", "findings"
    )?;
    for r in &runs {
        writeln!(out, "{}", line(r))?;
        if let Some(i) = llmscope_ops::analysis::interruption(r) {
            writeln!(out, "      {}", i.notice())?;
        }
    }
    Ok(())
}

fn line(r: &RunSummary) -> String {
    let length = r
        .window
        .map(|(f, t)| format_duration(Duration::from_secs_f64((t - f).max(0.0))))
        .unwrap_or_else(|| "-".into());
    format!(
        "{:>4}  {:<8} {:<11} {:<24} {:>8} {:>7} {:>10} {:>8}  {}",
        r.id,
        r.kind,
        r.status.as_str(),
        format_rfc3339(r.started_at),
        length,
        r.series,
        r.samples,
        r.findings,
        r.sources.join(",")
    )
}

fn show(store: &Store, id: i64, args: &RunsArgs, out: &mut impl Write) -> Result<()> {
    let run = store.run(id).with_context(|| format!("--run {id}"))?;
    let stats = store.source_stats(id, args.interval.as_secs_f64())?;
    let findings = store.findings(id)?;
    if args.format == Format::Json {
        let interrupted = llmscope_ops::analysis::interruption(&run).map(|i| {
            serde_json::json!({"at": i.at, "done_s": i.done_s, "planned_s": i.planned_s, "notice": i.notice()})
        });
        let json = serde_json::json!({"run": run, "interrupted": interrupted, "sources": stats, "findings": findings});
        writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
        return Ok(());
    }
    writeln!(out, "{}", line(&run))?;
    if let Some(i) = llmscope_ops::analysis::interruption(&run) {
        writeln!(out, "  {}", i.notice())?;
    }
    for s in &stats {
        writeln!(
            out,
            "  {:<16} {:<10} {:>7} series {:>10} samples {:>5} gaps {:>6} scrapes {:>5} failed  {}",
            s.name, s.kind, s.series, s.samples, s.gaps, s.scrapes, s.failed_scrapes, s.url
        )?;
    }
    for f in &findings {
        writeln!(out, "  {}: {}", f.severity, f.message)?;
    }
    Ok(())
}
