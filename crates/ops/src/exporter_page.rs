//! A metrics page read for what it says about its exporter: the page itself, and for vLLM the
//! engine's own version beside it (`GET /version`, issue 11). Shared by `inventory`, `check`,
//! `dashboard` and `run`'s pre-flight.

use crate::OpsError;
use hyper::Uri;
use llmscope_catalog::{Exporter, Version};
use llmscope_check::inventory::snapshot::Snapshot;
use llmscope_collect::HttpClient;
use llmscope_collect::http::Get;
use std::time::Duration;

/// GETs a page (10 s, 64 MiB cap); anything but a 200 is an error naming the URL.
pub async fn fetch_page(http: &HttpClient, uri: &Uri) -> Result<Vec<u8>, OpsError> {
    let headers = hyper::HeaderMap::new();
    let get = Get {
        uri: uri.clone(),
        headers: &headers,
        timeout: Duration::from_secs(10),
        body_limit: 64 << 20,
    };
    let got = http.get(get).await.map_err(|e| page_error(uri, e))?;
    if got.status != 200 {
        return Err(page_error(uri, format!("HTTP {}", got.status)));
    }
    Ok(got.body.to_vec())
}

fn page_error(uri: &Uri, why: impl ToString) -> OpsError {
    OpsError::Page {
        url: uri.to_string(),
        why: why.to_string(),
    }
}

/// Asks the vLLM engine behind the page at `metrics` its version (`GET /version` beside it) and
/// records it on `snap`. Other exporters are not asked; a /version that fails or says nothing
/// readable leaves the range the names give — it is a hint, not a requirement.
pub async fn ask_version(http: &HttpClient, metrics: &Uri, snap: &mut Snapshot) {
    if !snap
        .detections()
        .iter()
        .any(|d| d.exporter == Exporter::Vllm)
    {
        return;
    }
    let reported = llmscope_collect::version::engine_version(http, metrics).await;
    if let Some(v) = reported.ok().as_deref().and_then(Version::from_reported) {
        snap.set_reported_version(Exporter::Vllm, v);
    }
}

/// `vllm 0.32.0 (from /version), dcgm-exporter >=4.5.0 (from names)`, or why there is none.
pub fn name_versions(snap: &Snapshot) -> String {
    let named: Vec<String> = snap
        .engine_versions()
        .iter()
        .map(ToString::to_string)
        .collect();
    if named.is_empty() {
        return "no catalogued exporter recognised (not vLLM, SGLang, TGI or dcgm-exporter?)"
            .to_owned();
    }
    named.join(", ")
}
