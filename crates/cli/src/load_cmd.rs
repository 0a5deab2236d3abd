//! `llmscope load`: the load generator on the command line.
//!
//! [`LoadArgs`] (clap) → [`llmscope_loadgen::LoadSpec`] → `resolve` (checks the server, the model
//! and the prompts; a bad target or file is a one-line error, exit 2) → `run` on a multi-thread
//! runtime, with Ctrl-C wired to stop (drain in-flight requests for the grace period) and, on a
//! second press, abort. Progress goes to stderr (a bar on a terminal, plain lines otherwise);
//! the summary or the JSON report to stdout; per-request records to `--records FILE.jsonl`.

use crate::args::Format;
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use llmscope_loadgen::flags::LoadFlags;
use llmscope_loadgen::records_file::RecordsFile;
use llmscope_loadgen::shard::{Shard, ShardStage};
use llmscope_loadgen::stats::{StageMeta, StageStats};
use llmscope_loadgen::{
    LoadReport, Observer, Progress, RequestRecord, RunControl, StagePlan, text,
};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

const AFTER_HELP: &str = "\
Definitions (arrival = the kernel's receive time of the bytes, else the monotonic clock when
they reach the reader; always before parsing):
  TTFT  send -> first chunk with generated text (answer or reasoning; role-only/empty chunks excluded)
  TTFO  send -> first chunk with answer text (reasoning excluded)
  ITL   every gap between consecutive text chunks
  TPOT  (e2e - TTFT) / (output tokens - 1), per request
  e2e   send -> end of response
  Open loop also reports TTFT/e2e from the intended send time and the schedule lag.
  Output tokens: usage.completion_tokens, else counted chunks; their mismatch is reported.

Examples:
  llmscope load --target http://127.0.0.1:8000 --concurrency 32 --duration 2m
  llmscope load --rate 10 --arrival poisson --concurrency 64 --duration 60s --format json
  llmscope load --concurrency 1,8,32,64 --duration 30s --warmup 5s --slo ttft=500ms,itl=50ms
  llmscope load --prompts sharegpt.json --max-tokens 256 --requests 500 --records out.jsonl
  llmscope load --input-tokens 512±64 --output-tokens 128 --rate 5,10,20 --duration 60s
  llmscope load --shard 0/3 --start-at 2026-12-03T10:00:00Z --concurrency 96 --duration 60s --out shards/
  llmscope merge shards/

Ctrl-C stops sending and waits for requests in flight (up to --grace); press again to abort.
Exit status: 0 done (server errors are counted in the report); 1 when the load stopped early
because requests kept failing and none succeeded for 5 s (failing closed-loop workers back off
10 ms doubling to 1 s); 2 usage or setup error.";

/// Load an OpenAI-compatible server and report client-side latency and throughput.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct LoadArgs {
    #[command(flatten)]
    flags: LoadFlags,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write one JSON line per request here.
    #[arg(long, value_name = "FILE.jsonl", conflicts_with = "out")]
    records: Option<PathBuf>,
    /// Drive shard I of N of the load (I from 0, as JOB_COMPLETION_INDEX): 1/N of the
    /// concurrency, rate, requests and cap, every N-th request of a trace. Needs --out.
    #[arg(long, value_name = "I/N", requires = "out", help_heading = "Sharding")]
    shard: Option<Shard>,
    /// Hold the first stage until this time (RFC 3339, Unix seconds, or now+DURATION), so that
    /// every shard starts together.
    #[arg(long, value_name = "TIME", value_parser = start_time, help_heading = "Sharding")]
    start_at: Option<SystemTime>,
    /// Write the report, its statistics (mergeable, lossless) and the per-request records into
    /// DIR as shard-I-of-N.json and shard-I-of-N.records.jsonl, for `llmscope merge`.
    #[arg(long, value_name = "DIR", help_heading = "Sharding")]
    out: Option<PathBuf>,
    /// Runtime worker threads [default: the number of cores].
    #[arg(long)]
    threads: Option<usize>,
}

/// `--start-at`: a time as `parse_time` reads it, as a wall-clock instant.
fn start_time(s: &str) -> Result<SystemTime, String> {
    let now = llmscope_core::time::unix_now();
    let t = llmscope_core::time::parse_time(s, now).map_err(|e| e.to_string())?;
    if t < now - 24.0 * 3600.0 {
        return Err(format!(
            "`{s}` is more than a day ago: give the time the shards should start"
        ));
    }
    Ok(SystemTime::UNIX_EPOCH + Duration::from_secs_f64(t))
}

/// Runs `llmscope load`.
pub fn run(args: LoadArgs) -> Result<ExitCode> {
    if let Some(&most) = args.flags.concurrency.iter().max() {
        llmscope_ops::run::fd_preflight(u64::from(most), 1)?;
    }
    let rt = llmscope_loadgen::monitor::runtime(args.threads)
        .context("cannot start the async runtime")?;
    let format = args.format;
    // On a worker thread, not the main one: `--threads N` then means N busy threads in all.
    let task = rt.spawn(async move { load(&args).await });
    let report = rt.block_on(task).context("the load task failed")??;
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        }
        Format::Text => text::write_summary(&report, &mut out)?,
    }
    out.flush()?;
    if let Some(why) = &report.stopped_early {
        eprintln!(
            "llmscope load: stopped early: {}",
            llmscope_core::safe::clean(why)
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

async fn load(args: &LoadArgs) -> Result<LoadReport> {
    if let Some(path) = &args.records {
        llmscope_store::guard::refuse_database(path)?;
    }
    let mut spec = args.flags.spec();
    spec.shard = args.shard.or(args.out.is_some().then(Shard::default));
    spec.start_at = args.start_at;
    let plan = llmscope_loadgen::resolve(&spec).await?;
    for note in &plan.notes {
        eprintln!("note: {}", llmscope_core::safe::clean(note));
    }
    let records_path = match (&args.out, &plan.shard) {
        (Some(dir), Some(part)) => Some(shard_out::prepare(dir, part.shard)?),
        _ => args.records.clone(),
    };
    let records = records_path
        .as_deref()
        .map(RecordsFile::create)
        .transpose()?;
    let mut observer = CliObserver {
        records,
        view: View::new(std::io::stderr().is_terminal()),
        measured: Vec::new(),
    };
    let control = RunControl::new();
    let ctrl_c = stop_on_ctrl_c(&control, args.flags.grace);
    let report = llmscope_loadgen::run(&plan, &mut observer, &control).await;
    ctrl_c.abort();
    observer.view.finish();
    if let Some(r) = observer.records {
        r.finish()?;
    }
    if let (Some(dir), Some(part)) = (&args.out, &plan.shard) {
        let path = shard_out::write(dir, part, &plan, &report, observer.measured)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(report)
}

/// `--out DIR`: where a shard's files go.
mod shard_out {
    use anyhow::{Context, Result};
    use llmscope_loadgen::plan::ShardPlan;
    use llmscope_loadgen::shard::{FORMAT, Shard, ShardFile, ShardStage};
    use llmscope_loadgen::{LoadPlan, LoadReport};
    use std::path::{Path, PathBuf};

    /// Makes the directory and says where the records go.
    pub fn prepare(dir: &Path, shard: Shard) -> Result<PathBuf> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create --out directory {}", dir.display()))?;
        let path = dir.join(ShardFile::records_name(shard));
        llmscope_store::guard::refuse_database(&path)?;
        Ok(path)
    }

    /// Writes the shard file (to a temporary name first: a merge never reads half of one).
    pub fn write(
        dir: &Path,
        part: &ShardPlan,
        plan: &LoadPlan,
        report: &LoadReport,
        stages: Vec<ShardStage>,
    ) -> Result<PathBuf> {
        let file = ShardFile {
            format: FORMAT.into(),
            shard: report.shard.unwrap_or_default(),
            slo: plan.slo,
            whole: part.whole.clone(),
            report: report.clone(),
            stages,
        };
        let path = dir.join(ShardFile::name(part.shard));
        let tmp = dir.join(format!(".{}.tmp", ShardFile::name(part.shard)));
        let bytes = serde_json::to_vec(&file).context("cannot encode the shard file")?;
        std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }
}

/// The first Ctrl-C stops sending and lets requests in flight drain (for the run's grace), the
/// second aborts them; each says which.
fn stop_on_ctrl_c(control: &RunControl, grace: Duration) -> tokio::task::JoinHandle<()> {
    let control = control.clone();
    crate::signals::on_ctrl_c(move |press| {
        if press == 1 {
            eprintln!(
                "\nstopping: waiting up to {} for requests in flight (Ctrl-C again to abort)",
                llmscope_core::duration::format_duration(grace)
            );
            control.stop();
            return true;
        }
        eprintln!("\naborting requests in flight");
        control.abort();
        false
    })
}

struct CliObserver {
    records: Option<RecordsFile>,
    view: View,
    /// Each stage's statistics, whole (written to `--out`).
    measured: Vec<ShardStage>,
}

impl Observer for CliObserver {
    fn stage_started(&mut self, index: u32, plan: &StagePlan) {
        self.view.stage(index, plan);
    }

    fn records(&mut self, batch: &[RequestRecord]) {
        if let Some(r) = &mut self.records {
            r.write(batch);
        }
    }

    fn progress(&mut self, p: &Progress) {
        self.view.update(p);
    }

    fn stage_measured(&mut self, stats: &StageStats, meta: &StageMeta) {
        self.measured.push(ShardStage {
            meta: meta.clone(),
            stats: stats.clone(),
        });
    }
}

/// Progress on stderr: a bar on a terminal, a plain line every 5 s otherwise.
enum View {
    Bar(Option<ProgressBar>),
    Lines(Instant),
}

impl View {
    fn new(terminal: bool) -> Self {
        if terminal {
            View::Bar(None)
        } else {
            View::Lines(Instant::now())
        }
    }

    fn stage(&mut self, index: u32, plan: &StagePlan) {
        match self {
            View::Bar(bar) => {
                if let Some(b) = bar.take() {
                    b.finish_and_clear();
                }
                let b = ProgressBar::new_spinner();
                b.set_style(
                    ProgressStyle::with_template("{spinner} {prefix} {wide_msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                b.set_prefix(format!("stage {}: {}", index + 1, plan.label()));
                *bar = Some(b);
            }
            View::Lines(_) => eprintln!("stage {}: {}", index + 1, plan.label()),
        }
    }

    fn update(&mut self, p: &Progress) {
        let msg = p.line();
        match self {
            View::Bar(Some(b)) => {
                b.set_message(msg);
                b.tick();
            }
            View::Bar(None) => {}
            View::Lines(last) => {
                if last.elapsed() >= Duration::from_secs(5) {
                    *last = Instant::now();
                    eprintln!("  {msg}");
                }
            }
        }
    }

    fn finish(&mut self) {
        if let View::Bar(Some(b)) = self {
            b.finish_and_clear();
        }
    }
}
