//! `llmscope targets`: is collection really working? Through a Prometheus server (every active
//! target up, then the expected families of each layer read with one instant query) or straight
//! from /metrics URLs (`llmscope_ops::targets`); the checks themselves are
//! `llmscope_check::targets::assess`.

use crate::prom_flags::PromFlags;
use anyhow::{Result, bail};
use hyper::Uri;
use llmscope_check::FailOn;
use llmscope_check::targets::assess;
use llmscope_collect::prom::PromClient;
use llmscope_ops::targets::{direct, through_prometheus, write_human};
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

enum Plan {
    Prometheus(Box<PromClient>),
    Direct(Vec<Uri>),
}

impl TargetsArgs {
    fn plan(&self) -> Result<Plan> {
        let url = |u: &str| {
            llmscope_collect::url::parse_http_url(u).map_err(|why| {
                anyhow::anyhow!("invalid URL `{}`: {why}", llmscope_collect::url::redact(u))
            })
        };
        match (&self.prom.prometheus, self.urls.is_empty()) {
            (Some(_), false) => bail!("give either --prometheus URL or /metrics URLs, not both"),
            (Some(p), true) => Ok(Plan::Prometheus(Box::new(self.prom.conn.client(p)?))),
            (None, false) => Ok(Plan::Direct(
                self.urls.iter().map(|u| url(u)).collect::<Result<_>>()?,
            )),
            (None, true) => bail!("nothing to check: give --prometheus URL or /metrics URLs"),
        }
    }
}

pub fn run(args: TargetsArgs) -> Result<ExitCode> {
    let plan = args.plan()?;
    let collection = match &plan {
        Plan::Prometheus(client) => crate::args::block_on(through_prometheus(client))??,
        Plan::Direct(uris) => {
            let http = args.prom.conn.http()?;
            crate::args::block_on(direct(&http, uris))?
        }
    };
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
