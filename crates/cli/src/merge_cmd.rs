//! `llmscope merge`: the shards of a sharded load (`load --shard I/N --out DIR`) as one report.
//!
//! Paths → [`llmscope_loadgen::merge::read`] (every shard once, of one load) → `merge` (the
//! stages' snapshots added exactly) → `check_records` (the shards' records streamed: counts and
//! percentiles checked against the merged histograms, and copied to `--records` when asked) →
//! the report in `load`'s form, with the shards beside it.

use crate::args::Format;
use anyhow::{Context, Result};
use llmscope_loadgen::merge;
use llmscope_loadgen::text;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const AFTER_HELP: &str = "\
Each shard wrote shard-I-of-N.json (its report and its stages' histograms) and
shard-I-of-N.records.jsonl beside it. The merged report has the form of `llmscope load
--format json`: counts and histograms added, each stage's window the union of the shards'.
It names a shard that began late (> 1 s after --start-at), stages the shards began apart
(> 1 s, or 2 % of the stage), and a shard that could not keep its share (the merged stage is
then client-limited too). The merged percentiles are checked against the records.

Examples:
  llmscope merge shards/
  llmscope merge shards/ --format json --records all.jsonl
  llmscope merge /out --wait 2h --format json    (the merge Job of deploy/load-job.yaml)

Exit status: 0 merged, and the shards agreed; 1 merged, but the shards disagreed (named)
or the records do not match the histograms; 2 cannot merge (a shard missing, twice, or of
another load; an unreadable file).";

/// Merge the shards of a sharded load into one report.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct MergeArgs {
    /// The shards' --out directories, or their shard-I-of-N.json files.
    #[arg(required = true, value_name = "DIR|FILE")]
    paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write the union of the shards' per-request records here (one JSON line each).
    #[arg(long, value_name = "FILE.jsonl")]
    records: Option<PathBuf>,
    /// Do not read the records (no count or percentile check against them).
    #[arg(long, conflicts_with = "records")]
    no_records_check: bool,
    /// Wait up to this long for shards still running (their files appear when they finish):
    /// a merge Job started beside the shards' Job.
    #[arg(long, value_parser = crate::args::duration, default_value = "0s")]
    wait: Duration,
}

/// Runs `llmscope merge`.
pub fn run(args: MergeArgs) -> Result<ExitCode> {
    let shards = merge::read_waiting(&args.paths, args.wait)?;
    let mut report = merge::merge(&shards);
    if !args.no_records_check {
        let check = match &args.records {
            Some(path) => {
                llmscope_store::guard::refuse_database(path)?;
                let file = File::create(path)
                    .with_context(|| format!("cannot create {}", path.display()))?;
                let mut w = BufWriter::with_capacity(1 << 16, file);
                let c = merge::check_records(&shards, &report, Some((path, &mut w)))?;
                w.flush()
                    .with_context(|| format!("cannot write {}", path.display()))?;
                c
            }
            None => merge::check_records(&shards, &report, None)?,
        };
        if let Some(s) = report.shards.as_mut() {
            s.records = Some(check);
        }
    }
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        }
        Format::Text => text::write_summary(&report, &mut out)?,
    }
    out.flush()?;
    let Some(s) = &report.shards else {
        return Ok(ExitCode::SUCCESS);
    };
    let records_ok = s.records.as_ref().is_none_or(|c| c.agree);
    for p in &s.problems {
        eprintln!("llmscope merge: {}", llmscope_core::safe::clean(p));
    }
    if !records_ok {
        eprintln!(
            "llmscope merge: the shards' records do not match the merged histograms (see `records`)"
        );
    }
    Ok(if s.agreed && records_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
