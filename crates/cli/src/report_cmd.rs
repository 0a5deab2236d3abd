//! `llmscope report RUN`, `llmscope diagnose RUN`, `llmscope compare RUN_A RUN_B`: stored runs,
//! re-diagnosed from their series (the diagnosis is pure, so this is exactly what `run` said,
//! or what a newer llmscope says about the same data) and rendered.

use crate::output::{ReportFormat, ReportOutput};
use crate::prom_flags::PromFlags;
use anyhow::{Context, Result};
use llmscope_ops::analysis::{self, Analysed, RunFacts};
use llmscope_ops::diagnose::{WindowDiagnosis, diagnose_window};
use llmscope_ops::window::WindowQuery;
use llmscope_store::{RunId, Store};
use std::path::PathBuf;
use std::process::ExitCode;

/// Render a stored run.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  llmscope report 3
  llmscope report 3 --html run3.html
  llmscope report 3 --format markdown > run3.md
  llmscope report 3 --export run3/   # series.csv and requests.csv for a notebook")]
pub struct ReportArgs {
    /// The run id (see `llmscope runs`).
    pub run: RunId,
    /// Also write the run's series (long format) and per-request records as CSV into this
    /// directory (new or empty).
    #[arg(long, value_name = "DIR")]
    pub export: Option<PathBuf>,
    #[command(flatten)]
    pub out: ReportOutput,
}

fn open(db: &PathBuf) -> Result<Store> {
    if !db.exists() {
        anyhow::bail!(
            "no run store at {} (run `llmscope run` or `llmscope observe` first, or pass --db)",
            db.display()
        );
    }
    Store::open_for_reading(db).with_context(|| format!("opening the run store {}", db.display()))
}

fn load(store: &Store, run: RunId, db: &std::path::Path) -> Result<Analysed> {
    store.run(run).with_context(|| {
        format!(
            "run {run} is not in {} (see `llmscope runs --db {}`)",
            db.display(),
            db.display()
        )
    })?;
    Ok(analysis::analyse(store, run)?)
}

pub fn report(args: ReportArgs) -> Result<ExitCode> {
    let store = open(&args.out.db)?;
    let a = load(&store, args.run, &args.out.db)?;
    if let Some(dir) = &args.export {
        let e = llmscope_ops::export::export(&store, args.run, dir)?;
        eprintln!(
            "exported {} samples to {} and {} requests to {}",
            e.samples,
            dir.join("series.csv").display(),
            e.requests,
            dir.join("requests.csv").display()
        );
    }
    args.out.finish(&a, &format!("llmscope run {}", args.run))
}

/// Diagnose a stored run again, or any past window read from Prometheus.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  llmscope diagnose 3
  llmscope diagnose --prometheus http://prometheus:9090 --from -30m --to now --max-num-seqs 16
  llmscope diagnose --prometheus http://prometheus:9090 --match 'namespace=\"llm\"' --from -1h
  llmscope diagnose --prometheus https://mimir/prometheus --header 'X-Scope-OrgID: llm' --from 2026-11-29T10:00:00Z --to 2026-11-29T10:30:00Z

From Prometheus, the engine's and dcgm-exporter's series named in the catalog are read with
query_range at --step and stored as a run (kind `diagnose`), so `llmscope report` works on it.")]
pub struct DiagnoseArgs {
    /// A stored run to diagnose again (see `llmscope runs`); or use --prometheus.
    #[arg(required_unless_present = "prometheus")]
    pub run: Option<RunId>,
    #[command(flatten)]
    pub prom: PromFlags,
    /// Label matchers for the deployment to diagnose, e.g. 'namespace="llm"' (repeatable; read
    /// as a union). Without them every engine and GPU series in Prometheus is read.
    #[arg(long = "match", value_name = "MATCHERS", help_heading = "Prometheus")]
    pub matchers: Vec<String>,
    /// Start of the window (RFC3339, Unix seconds, or relative like -30m).
    #[arg(long, allow_hyphen_values = true, help_heading = "Prometheus")]
    pub from: Option<String>,
    /// End of the window.
    #[arg(
        long,
        allow_hyphen_values = true,
        default_value = "now",
        help_heading = "Prometheus"
    )]
    pub to: String,
    /// Query step (use the scrape interval).
    #[arg(long, default_value = "15s", value_parser = crate::args::duration, help_heading = "Prometheus")]
    pub step: std::time::Duration,
    /// The server's --max-num-seqs, so the batch-limit check can compare the plateau with it.
    #[arg(long)]
    pub max_num_seqs: Option<u32>,
    /// The server's --max-num-batched-tokens.
    #[arg(long)]
    pub max_num_batched_tokens: Option<u32>,
    /// Closed-loop concurrency of the load in the window, if known.
    #[arg(long)]
    pub concurrency: Option<u32>,
    #[command(flatten)]
    pub out: ReportOutput,
}

pub fn diagnose(args: DiagnoseArgs) -> Result<ExitCode> {
    args.out.check()?;
    let Some(client) = args.prom.client()? else {
        let run = args.run.context("give a RUN id or --prometheus")?;
        let export = None;
        return report(ReportArgs {
            run,
            export,
            out: args.out,
        });
    };
    let from = args
        .from
        .as_deref()
        .context("--prometheus needs --from (e.g. --from -30m)")?;
    let now = llmscope_collect::time::unix_now();
    let (from, to) = llmscope_ops::window::parse_window(from, &args.to, now)?;
    let url = llmscope_collect::url::redact(args.prom.prometheus.as_deref().unwrap_or(""));
    let facts = RunFacts {
        max_num_seqs: args.max_num_seqs,
        max_num_batched_tokens: args.max_num_batched_tokens,
        concurrency: args.concurrency,
        ..RunFacts::default()
    };
    // One thread: the next names' answers queue in the sockets while one is stored, and every
    // buffer comes from one allocator arena (two threads peaked at 170-190 MiB instead of 120).
    let d = crate::args::block_on(diagnose_window(
        &client,
        WindowDiagnosis {
            url,
            window: WindowQuery {
                from,
                to,
                step: args.step.as_secs_f64(),
                matchers: &args.matchers,
            },
            facts,
            db: &args.out.db,
        },
    ))??;
    for w in d.read.warnings.iter().chain(&d.read.notes()) {
        eprintln!("warning: Prometheus: {}", llmscope_core::safe::clean(w));
    }
    let run = d.analysed.run;
    args.out
        .finish(&d.analysed, &format!("llmscope diagnose (run {run})"))
}

/// Compare stored runs (before/after a change).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  llmscope run --max-num-seqs 16 && llmscope run --max-num-seqs 64 && llmscope compare 1 2
  llmscope compare 1 2 3 --html compare.html   # three runs, charts overlaid")]
pub struct CompareArgs {
    /// The runs: the first is the base. The text, JSON and Markdown formats take two; --html
    /// takes two or more.
    #[arg(num_args = 2.., required = true)]
    pub runs: Vec<RunId>,
    #[arg(long, default_value = "llmscope.db")]
    pub db: PathBuf,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Also write the comparison as a self-contained HTML page here (charts overlaid).
    #[arg(long)]
    pub html: Option<PathBuf>,
}

pub fn compare(args: CompareArgs) -> Result<ExitCode> {
    if args.html.as_ref() == Some(&args.db) {
        anyhow::bail!(
            "refusing to write {}: it is the run store given by --db (an SQLite database); choose another --html path",
            args.db.display()
        );
    }
    let store = open(&args.db)?;
    let runs = args
        .runs
        .iter()
        .map(|&run| load(&store, run, &args.db))
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Analysed> = runs.iter().collect();
    if let Some(path) = &args.html {
        llmscope_ops::compare::write_html_file(&refs, path)?;
    }
    match refs.as_slice() {
        [a, b] => {
            let mut out = std::io::stdout().lock();
            llmscope_ops::compare::write(a, b, args.format.into(), &mut out)?;
        }
        _ => match &args.html {
            Some(path) => println!(
                "wrote the comparison of {} runs to {}",
                refs.len(),
                path.display()
            ),
            None => anyhow::bail!(
                "the text, JSON and Markdown comparisons take two runs, and {} were given: give two, or --html PATH to put all of them on one page",
                refs.len()
            ),
        },
    }
    Ok(ExitCode::SUCCESS)
}
