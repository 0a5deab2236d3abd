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
use llmscope_loadgen::records_file::RecordsFile;
use llmscope_loadgen::{
    ArrivalKind, Endpoint, LoadReport, LoadSpec, Observer, Progress, RequestRecord, RunControl,
    Secret, Slo, StagePlan, TokenSpec, text,
};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

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

Ctrl-C stops sending and waits for requests in flight (up to --grace); press again to abort.
Exit status: 0 done (server errors are counted in the report); 1 when the load stopped early
because requests kept failing and none succeeded for 5 s (failing closed-loop workers back off
10 ms doubling to 1 s); 2 usage or setup error.";

/// Load an OpenAI-compatible server and report client-side latency and throughput.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct LoadArgs {
    /// Base URL of the server (http://host:port; a trailing /v1 is accepted).
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    target: String,
    /// API to load.
    #[arg(long, value_enum, default_value_t = Endpoint::Chat)]
    endpoint: Endpoint,
    /// Ask for whole responses instead of streams (no TTFT/ITL then).
    #[arg(long)]
    no_stream: bool,
    /// Model name [default: the first one in /v1/models].
    #[arg(long)]
    model: Option<String>,
    /// API key, sent as a bearer token; never printed or stored.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Extra request header, `Name: value` (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Closed-loop workers; a list runs one stage each (1,8,32). With --rate: the in-flight cap.
    #[arg(long, value_delimiter = ',')]
    concurrency: Vec<u32>,
    /// Open-loop requests per second; a list runs one stage each.
    #[arg(long, value_delimiter = ',')]
    rate: Vec<f64>,
    /// Open-loop inter-arrival distribution.
    #[arg(long, value_enum, default_value_t = ArrivalKind::Poisson)]
    arrival: ArrivalKind,
    /// Gamma shape of the arrivals: 1 = Poisson, < 1 burstier, > 1 smoother.
    #[arg(long)]
    burstiness: Option<f64>,
    /// Grow concurrency (or rate) linearly from zero over this time.
    #[arg(long, value_parser = crate::args::duration, default_value = "0")]
    ramp_up: Duration,
    /// Measured sending time per stage (after the warmup) [default: 30s without --requests].
    #[arg(long, value_parser = crate::args::duration)]
    duration: Option<Duration>,
    /// Measured requests per stage.
    #[arg(long)]
    requests: Option<u64>,
    /// Load sent first and left out of the statistics, per stage.
    #[arg(long, value_parser = crate::args::duration, default_value = "0")]
    warmup: Duration,
    /// One prompt for every request.
    #[arg(long)]
    prompt: Option<String>,
    /// Prompt file: JSONL of {"prompt":…} or {"messages":[…]}, or a ShareGPT JSON array.
    #[arg(long = "prompts", value_name = "FILE")]
    prompts_file: Option<PathBuf>,
    /// Synthetic prompts of N (±SD) tokens [default: 128].
    #[arg(long, value_name = "N[±SD]")]
    input_tokens: Option<TokenSpec>,
    /// Exact answer length: sets max_tokens and, on vLLM, ignore_eos.
    #[arg(long, value_name = "M")]
    output_tokens: Option<u32>,
    /// Cap on answer length (max_tokens).
    #[arg(long, value_name = "M")]
    max_tokens: Option<u32>,
    /// Objectives for goodput, e.g. ttft=500ms,itl=50ms,tpot=40ms,e2e=20s.
    #[arg(long)]
    slo: Option<Slo>,
    /// Limit for one whole request.
    #[arg(long, value_parser = crate::args::duration, default_value = "10m")]
    timeout: Duration,
    /// Limit for the wait before a response's first token — queued on the server, then prefill
    /// (counted as `ttft_timeout`). Generous on purpose: a saturated server keeps a request
    /// queued as long as it takes, and that queue is what a test measures.
    #[arg(long, value_parser = crate::args::duration, default_value = "10m")]
    ttft_timeout: Duration,
    /// Limit for a pause between chunks once tokens flow (counted as `stall`).
    #[arg(long, value_parser = crate::args::duration, default_value = "30s")]
    idle_timeout: Duration,
    /// After sending stops, how long requests in flight may take before they are cancelled.
    #[arg(long, value_parser = crate::args::duration, default_value = "30s")]
    grace: Duration,
    /// Seed of arrivals and synthetic prompts.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Ask `llmscope sim` for its emit timestamps and report first-token delivery error.
    #[arg(long)]
    check_timing: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write one JSON line per request here.
    #[arg(long, value_name = "FILE.jsonl")]
    records: Option<PathBuf>,
    /// Runtime worker threads [default: the number of cores].
    #[arg(long)]
    threads: Option<usize>,
}

impl LoadArgs {
    fn spec(&self) -> LoadSpec {
        let mut headers = self.headers.clone();
        if self.check_timing {
            headers.push("x-llmscope-timestamps: 1".into());
        }
        let duration = match (self.duration, self.requests) {
            (None, None) => Some(Duration::from_secs(30)),
            (d, _) => d,
        };
        LoadSpec {
            target: self.target.clone(),
            endpoint: self.endpoint,
            stream: !self.no_stream,
            model: self.model.clone(),
            api_key: self
                .api_key
                .clone()
                .filter(|k| !k.is_empty())
                .map(Secret::new),
            headers,
            concurrency: self.concurrency.clone(),
            rate: self.rate.clone(),
            arrival: self.arrival,
            burstiness: self.burstiness,
            ramp_up: self.ramp_up,
            duration,
            requests: self.requests,
            warmup: self.warmup,
            prompt: self.prompt.clone(),
            prompts_file: self.prompts_file.clone(),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            max_tokens: self.max_tokens,
            slo: self.slo.unwrap_or_default(),
            timeout: self.timeout,
            ttft_timeout: self.ttft_timeout,
            idle_timeout: self.idle_timeout,
            grace: self.grace,
            seed: self.seed,
        }
    }
}

/// Runs `llmscope load`.
pub fn run(args: LoadArgs) -> Result<ExitCode> {
    if let Some(&most) = args.concurrency.iter().max() {
        llmscope_ops::run::fd_preflight(u64::from(most), 1)?;
    }
    let rt = llmscope_loadgen::client::runtime(args.threads)
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
    let plan = llmscope_loadgen::resolve(&args.spec()).await?;
    for note in &plan.notes {
        eprintln!("note: {}", llmscope_core::safe::clean(note));
    }
    let records = args
        .records
        .as_deref()
        .map(RecordsFile::create)
        .transpose()?;
    let mut observer = CliObserver {
        records,
        view: View::new(std::io::stderr().is_terminal()),
    };
    let control = RunControl::new();
    let ctrl_c = control.stop_on_ctrl_c(args.grace, |line| eprintln!("\n{line}"));
    let report = llmscope_loadgen::run(&plan, &mut observer, &control).await;
    ctrl_c.abort();
    observer.view.finish();
    if let Some(r) = observer.records {
        r.finish()?;
    }
    Ok(report)
}

struct CliObserver {
    records: Option<RecordsFile>,
    view: View,
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
