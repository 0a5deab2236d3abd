//! `llmscope targets`: is collection really working? Through a Prometheus server (every active
//! target up, then the expected families of each layer read with one instant query) or straight
//! from /metrics URLs (`llmscope_ops::targets`); the checks themselves are
//! `llmscope_check::targets::assess`.

use crate::prom_flags::PromFlags;
use anyhow::{Result, bail};
use llmscope_check::FailOn;
use llmscope_check::targets::assess;
use llmscope_ops::targets::{TargetsPlan, write_human};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

const AFTER_HELP: &str = "Examples:
  llmscope targets --prometheus http://127.0.0.1:9090
  llmscope targets http://127.0.0.1:8000/metrics http://127.0.0.1:9400/metrics

Checks: targets up; dcgm series with a real modelName and UUID, power > 0, no blank sentinels,
profiling fields, pod attribution; vLLM scheduler/KV/token families; Kueue reservation gates and
kube-state-metrics label_team (through Prometheus). Each failure says what to fix.

Exit status: 0 all checks at or below --fail-on pass, 1 a check fails at or above it, 2 usage or runtime error.";

/// Verify collection: targets up and every layer's values real.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct TargetsArgs {
    /// /metrics URLs to check directly (vLLM, dcgm-exporter, …).
    #[arg(value_name = "URL")]
    urls: Vec<String>,
    /// A Prometheus server: its active targets and what they collected (connected with the
    /// same flags as every command that reads Prometheus).
    #[command(flatten)]
    prom: PromFlags,
    /// Output: human or json.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    format: String,
    /// Exit 1 when a check fails at this severity or above: error, warning, info or never.
    #[arg(long, default_value = "error", value_parser = crate::args::fail_on)]
    fail_on: FailOn,
}

impl TargetsArgs {
    fn plan(&self) -> Result<TargetsPlan> {
        let url = |u: &str| crate::args::http_url(u, "URL");
        match (&self.prom.prometheus, self.urls.is_empty()) {
            (Some(_), false) => bail!("give either --prometheus URL or /metrics URLs, not both"),
            (Some(p), true) => Ok(TargetsPlan::Prometheus(Box::new(self.prom.conn.client(p)?))),
            (None, false) => Ok(TargetsPlan::Direct(
                self.urls.iter().map(|u| url(u)).collect::<Result<_>>()?,
            )),
            (None, true) => bail!("nothing to check: give --prometheus URL or /metrics URLs"),
        }
    }
}

pub fn run(args: TargetsArgs) -> Result<ExitCode> {
    let plan = args.plan()?;
    let http = args.prom.conn.http()?;
    let collection = crate::args::block_on(plan.collect(&http))??;
    let checks = assess(&collection);
    let mut out = std::io::stdout().lock();
    match args.format.as_str() {
        "json" => {
            serde_json::to_writer_pretty(&mut out, &json!({"checks": checks}))?;
            writeln!(out)?;
        }
        _ => write_human(&mut out, &checks)?,
    }
    let failed = args.fail_on.fails(checks.iter().filter_map(|c| c.severity));
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
