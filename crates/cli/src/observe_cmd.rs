//! `llmscope observe`: record metrics from targets (direct scrape) or a Prometheus-compatible
//! server over a window, into the run store.
//!
//! [`ObserveArgs`] (clap) → `ObserveRequest` → `ObservePlan` (validated: sources, window, no
//! I/O; `llmscope_ops::observe`) → `execute`:
//! open the store, start a run, register the sources, start the store's writer thread, run every
//! source concurrently with their batches going to the writer, then record problems as
//! findings, finish the run and print a summary computed back from the database. A failing
//! source never stops the others; Ctrl-C (handled here: it cancels the token `execute` is
//! handed) stops them all and the run is `interrupted`.

use crate::args::Format;
use crate::prom_flags::PromFlags;
use anyhow::{Context, Result};
use llmscope_collect::time::unix_now;
use llmscope_core::duration::format_duration;
use llmscope_ops::observe::{ObservePlan, ObserveRequest, Outcome, Ticker, execute};
use llmscope_store::RunStatus;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

const AFTER_HELP: &str = "\
Examples:
  llmscope observe --scrape vllm=http://127.0.0.1:8000/metrics --scrape dcgm=http://127.0.0.1:9400/metrics --duration 2m --interval 1s
  llmscope observe --prometheus http://127.0.0.1:9090 --match '{__name__=~\"vllm:.*\"}' --from -15m --to now
  llmscope observe --prometheus https://mimir.example/prometheus --header 'X-Scope-OrgID: team-a' \\
      --match 'DCGM_FI_DEV_GPU_UTIL' --from 2026-01-02T15:00:00Z --to 2026-01-02T16:00:00Z --interval 15s

Direct scrape records the future (--duration); Prometheus reads a past window (--from/--to) or
waits --duration and then reads it. Times: now, -15m, now-1h, RFC3339, Unix seconds.
A missing sample is stored as no point, never a 0; DCGM blank sentinels are dropped. A source
that fails is recorded as a finding and the run goes on with the others.
Exit status: 0 stored, 1 nothing could be collected, 2 usage or runtime error.";

/// Record metrics from targets or a Prometheus-compatible server into the run store.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct ObserveArgs {
    /// Target to scrape: NAME=URL or URL (repeatable), e.g. vllm=http://127.0.0.1:8000/metrics.
    #[arg(long = "scrape", value_name = "[NAME=]URL")]
    scrape: Vec<String>,
    #[command(flatten)]
    prom: PromFlags,
    /// Series selector to read from --prometheus (repeatable).
    #[arg(long = "match", value_name = "SELECTOR")]
    matchers: Vec<String>,
    /// Record live for this long.
    #[arg(long, value_parser = crate::args::duration)]
    duration: Option<Duration>,
    /// Start of a past window (--prometheus only).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    from: Option<String>,
    /// End of a past window [default: now].
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    to: Option<String>,
    /// Scrape interval, or the query step for --prometheus.
    #[arg(long, value_parser = crate::args::duration, default_value = "5s")]
    interval: Duration,
    /// Scrape timeout (below the interval) [default: 80% of the interval, at most 10s].
    #[arg(long, value_parser = crate::args::duration, help_heading = "Scraping")]
    scrape_timeout: Option<Duration>,
    /// Largest page accepted, in bytes (after decompression).
    #[arg(long, default_value_t = llmscope_collect::scrape::DEFAULT_BODY_LIMIT, help_heading = "Scraping")]
    body_limit: usize,
    /// Ask for text 0.0.4 only (no OpenMetrics).
    #[arg(long, help_heading = "Scraping")]
    no_openmetrics: bool,
    /// Do not ask for gzip.
    #[arg(long, help_heading = "Scraping")]
    no_gzip: bool,
    /// The run store.
    #[arg(long, default_value = llmscope_store::DEFAULT_PATH)]
    db: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// What `observe` does, and how it prints.
#[derive(Debug)]
pub struct CliPlan {
    plan: ObservePlan,
    format: Format,
}

/// Second stage: flags → plan (`llmscope_ops::observe::ObserveRequest`). No I/O.
fn resolve(args: ObserveArgs, now: f64) -> Result<CliPlan> {
    let prometheus = match &args.prom.prometheus {
        Some(url) => Some(args.prom.conn.config(url)?),
        None => None,
    };
    let request = ObserveRequest {
        scrape: args.scrape,
        prometheus,
        matchers: args.matchers,
        duration: args.duration,
        from: args.from,
        to: args.to,
        interval: args.interval,
        scrape_timeout: args.scrape_timeout,
        body_limit: args.body_limit,
        openmetrics: !args.no_openmetrics,
        gzip: !args.no_gzip,
        ca_file: args.prom.conn.ca_file,
        db: args.db,
    };
    Ok(CliPlan {
        plan: request.plan(now)?,
        format: args.format,
    })
}

/// `llmscope observe`.
pub fn run(args: ObserveArgs) -> Result<ExitCode> {
    let plan = resolve(args, unix_now())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = rt.block_on(async {
        // The first Ctrl-C stops the sources; later ones are ignored (the run is being stored).
        let cancel = crate::signals::cancel_on_ctrl_c(|| {}, None);
        execute(&plan.plan, Arc::new(StderrTicker::new()), &cancel).await
    })?;
    print_summary(&plan, &outcome)?;
    Ok(if outcome.status == RunStatus::Failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Progress on stderr: a line every 5 s (a spinner on a terminal) while a live window runs.
struct StderrTicker {
    terminal: bool,
}

impl StderrTicker {
    fn new() -> Self {
        StderrTicker {
            terminal: std::io::stderr().is_terminal(),
        }
    }
}

impl Ticker for StderrTicker {
    fn every(&self) -> Duration {
        if self.terminal {
            Duration::from_millis(500)
        } else {
            Duration::from_secs(5)
        }
    }

    fn tick(&self, elapsed: Duration, planned: Duration, samples: u64) {
        let line = format!(
            "observe: {}/{} elapsed, {samples} samples stored",
            format_duration(elapsed),
            format_duration(planned),
        );
        let mut err = std::io::stderr();
        let _ = if self.terminal {
            write!(err, "\r{line}\x1b[K")
        } else {
            writeln!(err, "{line}")
        };
    }

    fn done(&self) {
        if self.terminal {
            eprint!("\r\x1b[K");
        }
    }
}

fn print_summary(cli: &CliPlan, o: &Outcome) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if cli.format == Format::Json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&o.to_json(&cli.plan))?
        )?;
        return Ok(());
    }
    o.write_text(&cli.plan, &mut out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use llmscope_collect::Window;
    use llmscope_ops::cancel::Cancel;
    use llmscope_ops::observe::source_name;
    use llmscope_store::Store;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: ObserveArgs,
    }

    fn plan(line: &str) -> Result<ObservePlan> {
        let argv = std::iter::once("observe").chain(line.split_whitespace());
        Ok(resolve(Cli::try_parse_from(argv)?.args, 1000.0)?.plan)
    }

    #[test]
    fn scrape_plans_name_their_sources() {
        let p = plan("--scrape vllm=http://127.0.0.1:1/metrics --scrape http://127.0.0.1:2/metrics --duration 20s --interval 1s").unwrap();
        let names: Vec<&str> = p.sources.iter().map(source_name).collect();
        assert_eq!(names, ["vllm", "127.0.0.1:2"]);
        assert_eq!(
            p.window,
            Window::Live {
                duration: Duration::from_secs(20)
            }
        );
    }

    #[test]
    fn past_windows_and_prometheus() {
        let p = plan("--prometheus http://127.0.0.1:9090 --match up --from -5m --to now").unwrap();
        assert_eq!(
            p.window,
            Window::Past {
                from: 700.0,
                to: 1000.0
            }
        );
        let p = plan(
            "--prometheus http://127.0.0.1:9090 --match up --from -5m --to -1m --interval 15s",
        )
        .unwrap();
        assert_eq!(
            p.window,
            Window::Past {
                from: 700.0,
                to: 940.0
            }
        );
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        for (line, says) in [
            ("--duration 5s", "nothing to observe"),
            ("--scrape http://x/m", "say how long"),
            ("--scrape http://x/m --duration 5s --from -5m", "not both"),
            (
                "--scrape http://x/m --duration 0",
                "--duration must be above 0",
            ),
            (
                "--scrape http://x/m --duration 0s",
                "--duration must be above 0",
            ),
            (
                "--scrape a=http://x/m --scrape a=http://y/m --duration 5s",
                "two sources are named `a`",
            ),
            (
                "--scrape http://x/m --duration 5s --interval 1s --scrape-timeout 2s",
                "shorter than the interval",
            ),
            ("--prometheus http://x --from -5m", "at least one --match"),
            ("--match up --from -5m", "add --prometheus"),
            (
                "--prometheus x --match up --from -5m",
                "invalid --prometheus",
            ),
            (
                "--prometheus http://x --match up --from -1m --to -5m",
                "must be after",
            ),
            (
                "--prometheus http://x --match up --from yesterday",
                "invalid time `yesterday`",
            ),
            (
                "--prometheus http://x --match up --from -5m --header nocolon",
                "Name: value",
            ),
            (
                "--scrape vllm=localhost:8000 --duration 5s",
                "invalid scrape target",
            ),
        ] {
            let err = format!("{:#}", plan(line).unwrap_err());
            assert!(err.contains(says), "{line}: {err}");
        }
    }

    #[test]
    fn secrets_stay_out_of_the_stored_config() {
        let p = plan(
            "--prometheus http://127.0.0.1:9090 --match up --from -5m --bearer-token s3cr3t --header X-Scope-OrgID:tenant-secret",
        )
        .unwrap();
        let stored = p.config.to_string();
        assert!(
            !stored.contains("s3cr3t") && !stored.contains("tenant-secret"),
            "{stored}"
        );
        assert!(
            stored.contains("bearer") && stored.contains("x-scope-orgid"),
            "{stored}"
        );
        assert!(!format!("{:?}", p.sources).contains("s3cr3t"));
    }

    fn db_in(dir: &tempfile::TempDir) -> String {
        dir.path().join("t.db").display().to_string()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn observes_the_simulator_into_the_store() {
        let mut cfg = llmscope_sim::serve::SimConfig::new(
            llmscope_sim::preset::preset("l4-qwen2.5-3b").unwrap(),
        );
        cfg.dcgm_interval = Duration::from_millis(200);
        let sim = llmscope_sim::serve::start(cfg).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let line = format!(
            "--scrape vllm={}/metrics --scrape dcgm={} --duration 1s --interval 200ms --db {}",
            sim.vllm_url(),
            sim.dcgm_url(),
            db_in(&dir)
        );
        let p = plan(&line).unwrap();
        let before = unix_now();
        let o = execute(&p, Arc::new(StderrTicker::new()), &Cancel::new())
            .await
            .unwrap();
        let after = unix_now();
        assert_eq!(o.status, RunStatus::Completed, "{:?}", o.findings);
        // The live window is the whole second, inside the call: no bound on how late a loaded
        // machine runs it.
        let (from, to) = o.window;
        assert!(to - from >= 0.95, "{:?}", o.window);
        assert!(
            before <= from && to <= after,
            "{before} {:?} {after}",
            o.window
        );
        let names: Vec<&str> = o.stats.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["vllm", "dcgm"]);
        assert!(
            o.stats
                .iter()
                .all(|s| s.series > 10 && s.samples >= 2 * s.series && s.gaps == 0)
        );
        let store = Store::open(&p.db).unwrap();
        let runs = store.runs().unwrap();
        assert_eq!(
            (runs[0].id, runs[0].samples),
            (o.run, o.stats.iter().map(|s| s.samples).sum())
        );
        let mut text = Vec::new();
        o.write_text(&p, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("completed") && text.contains("dcgm"),
            "{text}"
        );
        sim.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dead_source_is_a_finding_and_the_others_go_on() {
        let mut cfg = llmscope_sim::serve::SimConfig::new(
            llmscope_sim::preset::preset("l4-qwen2.5-3b").unwrap(),
        );
        cfg.dcgm_interval = Duration::from_millis(200);
        let sim = llmscope_sim::serve::start(cfg).await.unwrap();
        let dead = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let line = format!(
            "--scrape dcgm={} --scrape gone=http://{dead}/metrics --duration 600ms --interval 200ms --db {}",
            sim.dcgm_url(),
            db_in(&dir)
        );
        let o = execute(
            &plan(&line).unwrap(),
            Arc::new(StderrTicker::new()),
            &Cancel::new(),
        )
        .await
        .unwrap();
        assert_eq!(o.status, RunStatus::Partial);
        let f = &o.findings[0];
        assert_eq!(
            (f.severity.name(), f.rule.as_str(), f.source.as_deref()),
            ("error", "source_connect", Some("gone"))
        );
        assert!(f.message.contains(&dead.to_string()), "{}", f.message);
        let gone = o.stats.iter().find(|s| s.name == "gone").unwrap();
        assert_eq!((gone.samples, gone.failed_scrapes), (0, gone.scrapes));
        let store = Store::open(dir.path().join("t.db")).unwrap();
        let stored = store.findings(o.run).unwrap();
        assert_eq!((stored.len(), &stored[0].message), (1, &f.message));
        sim.shutdown().await;
    }

    #[tokio::test]
    async fn an_unreachable_prometheus_fails_the_run_with_a_named_finding() {
        let dead = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let line = format!(
            "--prometheus http://{dead} --match up --from -1m --db {}",
            db_in(&dir)
        );
        let o = execute(
            &plan(&line).unwrap(),
            Arc::new(StderrTicker::new()),
            &Cancel::new(),
        )
        .await
        .unwrap();
        assert_eq!(o.status, RunStatus::Failed);
        assert!(
            o.findings[0]
                .message
                .contains(&format!("prometheus (http://{dead}/)")),
            "{:?}",
            o.findings
        );
    }

    const KILL_CHILD_DB: &str = "LLMSCOPE_OBSERVE_KILL_CHILD_DB";
    /// The child half of the SIGKILL test: a simulator on its own runtime, and `observe` (the
    /// command's `run`, as `main` calls it) recording it for far longer than the parent waits.
    fn kill_child_observe(db: &str) {
        let sim_rt = tokio::runtime::Runtime::new().unwrap();
        let mut cfg = llmscope_sim::serve::SimConfig::new(
            llmscope_sim::preset::preset("l4-qwen2.5-3b").unwrap(),
        );
        cfg.dcgm_interval = Duration::from_millis(100);
        let sim = sim_rt.block_on(llmscope_sim::serve::start(cfg)).unwrap();
        let line = format!(
            "--scrape vllm={}/metrics --scrape dcgm={} --duration 60s --interval 100ms --db {db}",
            sim.vllm_url(),
            sim.dcgm_url()
        );
        let argv = std::iter::once("observe").chain(line.split_whitespace());
        run(Cli::try_parse_from(argv).unwrap().args).unwrap();
    }

    /// Re-runs this test binary on this test with the child's variable set: that process is the
    /// child (it records until killed), this one the parent.
    #[test]
    fn observe_killed_with_sigkill_leaves_a_readable_store() {
        if let Ok(db) = std::env::var(KILL_CHILD_DB) {
            return kill_child_observe(&db);
        }
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("killed.db");
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "observe_cmd::tests::observe_killed_with_sigkill_leaves_a_readable_store",
            ])
            .env(KILL_CHILD_DB, &db)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let stored = |db: &std::path::Path| {
            Store::open(db)
                .ok()
                .and_then(|s| s.runs().ok())
                .and_then(|r| r.first().map(|r| r.samples))
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while stored(&db).unwrap_or(0) < 500 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let store = Store::open(&db).unwrap();
        let runs = store.runs().unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(
            runs[0].status,
            RunStatus::Interrupted,
            "a killed run reads back as interrupted"
        );
        let at = runs[0].interrupted_at.expect("when");
        assert!(at >= runs[0].started_at, "{:?}", runs[0]);
        assert_eq!(runs[0].planned_s, Some(60.0));
        assert!(runs[0].samples >= 500, "{:?}", runs[0]);
        assert_eq!(runs[0].sources, ["vllm", "dcgm"]);
        let stats = store.source_stats(runs[0].id, 0.1).unwrap();
        assert!(
            stats.iter().all(|s| s.scrapes > 0 && s.samples > 0),
            "{stats:?}"
        );
    }
}
