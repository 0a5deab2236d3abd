//! `llmscope targets`: is collection really working? Through a Prometheus server (every active
//! target up, then the expected families of each layer read with one instant query) or straight
//! from /metrics URLs; the checks themselves are `llmscope_check::targets::assess`.

use crate::inventory_cmd::{Net, fetch_page};
use crate::prom_flags::PromFlags;
use anyhow::{Context, Result, bail};
use hyper::Uri;
use llmscope_check::targets::{Check, Collection, Observed, TargetState, assess, observed_in_page};
use llmscope_check::{FailOn, Severity};
use llmscope_collect::HttpClient;
use llmscope_collect::prom::PromClient;
use llmscope_collect::prom::api::QueryData;
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

/// The series read through Prometheus: every layer's evidence, nothing more.
const EXPECTED: &str = r#"{__name__=~"DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED|DCGM_FI_PROF_GR_ENGINE_ACTIVE|vllm:num_requests_running|vllm:num_requests_waiting|vllm:kv_cache_usage_perc|vllm:gpu_cache_usage_perc|vllm:generation_tokens_total|vllm:time_to_first_token_seconds_count|sglang:num_running_reqs|sglang:num_queue_reqs|sglang:token_usage|tgi_queue_size|tgi_batch_current_size|kueue_pending_workloads|kueue_local_queue_resource_reservation|kueue_cluster_queue_resource_reservation|kube_namespace_labels"}"#;

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
    let net = Net::new(args.prom.conn.ca_file.as_deref())?;
    let collection = match &plan {
        Plan::Prometheus(client) => net.block_on(through_prometheus(client))?,
        Plan::Direct(uris) => net.block_on(direct(&net.http, uris))?,
    };
    let checks = assess(&collection);
    let mut out = std::io::stdout().lock();
    match args.format.as_str() {
        "json" => {
            serde_json::to_writer_pretty(&mut out, &json!({"checks": checks}))?;
            writeln!(out)?;
        }
        _ => human(&mut out, &checks)?,
    }
    let failed = args.fail_on.fails(checks.iter().filter_map(|c| c.severity));
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

async fn through_prometheus(client: &PromClient) -> Result<Collection> {
    let uri = client.base();
    let targets = client
        .targets()
        .await
        .with_context(|| format!("{uri}: /api/v1/targets"))?;
    let targets = targets
        .data
        .active
        .into_iter()
        .map(|t| TargetState {
            job: t.labels.get("job").cloned().unwrap_or(t.scrape_pool),
            url: t.scrape_url,
            health: t.health,
            last_error: t.last_error,
        })
        .collect();
    let data = client
        .query(EXPECTED, None)
        .await
        .with_context(|| format!("{uri}: query"))?
        .data;
    let samples = match data {
        QueryData::Vector(v) => v
            .into_iter()
            .map(|(key, p)| Observed {
                name: key.name.clone(),
                labels: key
                    .labels
                    .iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect(),
                value: p.v,
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Collection {
        targets,
        samples,
        via_prometheus: true,
    })
}

async fn direct(http: &HttpClient, uris: &[Uri]) -> Result<Collection> {
    let mut c = Collection::default();
    for uri in uris {
        let (state, body) = match fetch_page(http, uri).await {
            // A page that exposes nothing parseable is not a live target (issue 17).
            Ok(body) => match promtext::PageReport::read(&body).problem() {
                None => (("up", String::new()), body),
                Some(why) => (("down", why), body),
            },
            Err(e) => (("down", format!("{e:#}")), Vec::new()),
        };
        c.targets.push(TargetState {
            job: uri.host().unwrap_or("target").to_owned(),
            url: uri.to_string(),
            health: state.0.to_owned(),
            last_error: state.1,
        });
        c.samples.extend(observed_in_page(&body));
    }
    Ok(c)
}

fn human(w: &mut impl Write, checks: &[Check]) -> Result<()> {
    for c in checks {
        let mark = match c.severity {
            None => "ok  ",
            Some(Severity::Error | Severity::Critical) => "FAIL",
            Some(Severity::Warning) => "warn",
            Some(Severity::Info) => "info",
        };
        writeln!(
            w,
            "{mark} {:<10} {}: {}",
            format!("{:?}", c.layer).to_lowercase(),
            llmscope_core::safe::clean(&c.what),
            llmscope_core::safe::clean(&c.detail)
        )?;
        if let Some(fix) = &c.fix {
            writeln!(w, "     fix: {fix}")?;
        }
    }
    let failed = checks.iter().filter(|c| c.severity.is_some()).count();
    writeln!(w, "\n{} checks, {failed} not passed", checks.len())?;
    Ok(())
}
