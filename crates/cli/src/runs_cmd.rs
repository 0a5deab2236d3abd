//! `llmscope runs`: the runs kept in the store — a list, or one run's sources and findings.
//!
//! Read-only in spirit: it opens the store (WAL lets it read while `observe` writes) and prints.
//! Opening the store marks a `running` run whose process is gone `interrupted`; its committed
//! samples and requests are all there, and every interrupted run says when and how far it got.

use crate::args::Format;
use anyhow::{Context, Result, bail};
use llmscope_ops::runs;
use llmscope_store::Store;
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

/// `llmscope runs`.
pub fn run(args: RunsArgs) -> Result<ExitCode> {
    if !args.db.exists() {
        bail!(
            "no store at {}: record a run with `llmscope observe --db {}` first, or pass --db",
            args.db.display(),
            args.db.display()
        );
    }
    let store = Store::open_for_reading(&args.db)?;
    let mut out = std::io::stdout().lock();
    match args.run {
        Some(id) => runs::write_run(
            &mut out,
            &store,
            id,
            args.interval,
            args.format == Format::Json,
        )
        .with_context(|| format!("--run {id}"))?,
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
    Ok(runs::write_list(out, &runs)?)
}
