//! Is collection really working (`llmscope targets`)? Through a Prometheus server (every
//! active target up, then the expected families of each layer read with one instant query) or
//! straight from /metrics pages, into a `llmscope_check::targets::Collection` that
//! `llmscope_check::targets::assess` judges.

use crate::OpsError;
use crate::exporter_page::fetch_page;
use hyper::Uri;
use llmscope_check::Severity;
use llmscope_check::targets::{Check, Collection, Observed, TargetState, observed_in_page};
use llmscope_collect::HttpClient;
use llmscope_collect::prom::PromClient;
use llmscope_collect::prom::api::QueryData;
use std::io::Write;

/// Where collection is verified.
#[derive(Debug)]
pub enum TargetsPlan {
    /// A Prometheus server: its active targets and what they collected.
    Prometheus(Box<PromClient>),
    /// /metrics pages, read straight.
    Direct(Vec<Uri>),
}

impl TargetsPlan {
    /// What was collected, read the way the plan says.
    pub async fn collect(&self, http: &HttpClient) -> Result<Collection, OpsError> {
        match self {
            TargetsPlan::Prometheus(client) => through_prometheus(client).await,
            TargetsPlan::Direct(uris) => Ok(direct(http, uris).await),
        }
    }
}

/// The series read through Prometheus: every layer's evidence, nothing more.
const EXPECTED: &str = r#"{__name__=~"DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED|DCGM_FI_PROF_GR_ENGINE_ACTIVE|vllm:num_requests_running|vllm:num_requests_waiting|vllm:kv_cache_usage_perc|vllm:gpu_cache_usage_perc|vllm:generation_tokens_total|vllm:time_to_first_token_seconds_count|sglang:num_running_reqs|sglang:num_queue_reqs|sglang:token_usage|tgi_queue_size|tgi_batch_current_size|kueue_pending_workloads|kueue_local_queue_resource_reservation|kueue_cluster_queue_resource_reservation|kube_namespace_labels"}"#;

/// Every active target of a Prometheus server, and what it collected of each layer.
pub async fn through_prometheus(client: &PromClient) -> Result<Collection, OpsError> {
    let uri = client.base();
    let ctx = |what: &str| {
        let context = format!("{uri}: {what}");
        move |source| OpsError::Prom { context, source }
    };
    let targets = client.targets().await.map_err(ctx("/api/v1/targets"))?;
    let targets = targets.data.active.into_iter().map(target_state).collect();
    let data = client
        .query(EXPECTED, None)
        .await
        .map_err(ctx("query"))?
        .data;
    let samples = match data {
        QueryData::Vector(v) => v.into_iter().map(|(key, p)| observed(&key, p.v)).collect(),
        _ => Vec::new(),
    };
    Ok(Collection {
        targets,
        samples,
        via_prometheus: true,
    })
}

/// An active target as Prometheus reports it, named by its job.
fn target_state(t: llmscope_collect::prom::api::ActiveTarget) -> TargetState {
    TargetState {
        job: t.labels.get("job").cloned().unwrap_or(t.scrape_pool),
        url: t.scrape_url,
        health: t.health,
        last_error: t.last_error,
    }
}

fn observed(key: &llmscope_core::series::SeriesKey, value: f64) -> Observed {
    Observed {
        name: key.name.clone(),
        labels: key
            .labels
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        value,
    }
}

/// The pages at `uris`, read straight: a page that cannot be read is a target down.
pub async fn direct(http: &HttpClient, uris: &[Uri]) -> Collection {
    let mut c = Collection::default();
    for uri in uris {
        let ((health, last_error), body) = match fetch_page(http, uri).await {
            Ok(body) => (page_health(&body), body),
            Err(e) => (("down", e.to_string()), Vec::new()),
        };
        c.targets.push(TargetState {
            job: uri.host().unwrap_or("target").to_owned(),
            url: uri.to_string(),
            health: health.to_owned(),
            last_error,
        });
        c.samples.extend(observed_in_page(&body));
    }
    c
}

/// A page that exposes nothing parseable is not a live target (issue 17).
fn page_health(body: &[u8]) -> (&'static str, String) {
    match promtext::PageReport::read(body).problem() {
        None => ("up", String::new()),
        Some(why) => ("down", why),
    }
}

/// The checks for people: one line each, what to fix under it, a count at the end.
pub fn write_human(w: &mut impl Write, checks: &[Check]) -> std::io::Result<()> {
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
