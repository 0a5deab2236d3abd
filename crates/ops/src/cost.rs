//! `llmscope cost`'s inputs, read from a Prometheus-compatible server over `[from, to]`: Kueue
//! GPU reservations (LocalQueue, else ClusterQueue), the namespaces' team labels
//! (kube-state-metrics), GPU busy time and generated tokens. The pricing itself is the pure
//! `llmscope_core::cost::compute`.
//!
//! Which names carry busy time and generated tokens comes from the catalog, not from this file:
//! every engine the catalog knows (vLLM, SGLang, TGI) counts its tokens, and a percent is read as
//! a fraction. A server that cannot be reached, or refuses us, is an error naming the fix; a
//! query the API rejects leaves that input missing, named in the report — never zeros.

use crate::OpsError;
use llmscope_catalog::{self as catalog, MetricDef, Unit};
use llmscope_collect::http::FetchError;
use llmscope_collect::prom::{PromClient, PromError};
use llmscope_core::cost::{self, CostInput, Price};
use llmscope_core::series::Series;
use llmscope_diagnosis::Concept;
use std::collections::BTreeMap;
use std::path::Path;

/// Prices per GPU-hour: `KEY=PRICE/h` items, then a YAML file of `key: price` lines.
pub fn prices(items: &[String], file: Option<&Path>) -> Result<Vec<Price>, OpsError> {
    let mut out: Vec<Price> = items
        .iter()
        .map(|p| cost::parse_price(p).map_err(OpsError::Invalid))
        .collect::<Result<_, _>>()?;
    if let Some(path) = file {
        for (k, v) in prices_file(path)? {
            out.push(cost::parse_price(&format!("{k}={v}")).map_err(OpsError::Invalid)?);
        }
    }
    Ok(out)
}

/// The largest prices file read (a line per flavor).
const PRICES_MAX_BYTES: u64 = 16 << 20;

/// A YAML file of `key: price` lines (a regular file, at most [`PRICES_MAX_BYTES`]).
fn prices_file(path: &Path) -> Result<BTreeMap<String, f64>, OpsError> {
    let text = llmscope_core::files::read_text_bounded(
        path,
        PRICES_MAX_BYTES,
        "a prices file holds a line per flavor",
    )
    .map_err(|e| OpsError::Invalid(format!("reading the prices file: {e}")))?;
    serde_saphyr::from_str(&text).map_err(|e| {
        OpsError::Invalid(format!(
            "the prices file {} is not `key: price` YAML: {e}",
            path.display()
        ))
    })
}

/// `QUEUE=TEAM` items (`--queue-team`) as a map.
pub fn queue_teams(items: &[String]) -> Result<BTreeMap<String, String>, OpsError> {
    items.iter().map(|i| queue_team(i)).collect()
}

fn queue_team(item: &str) -> Result<(String, String), OpsError> {
    let (k, v) = item.split_once('=').ok_or_else(|| {
        OpsError::Invalid(format!("invalid --queue-team `{item}`: write QUEUE=TEAM"))
    })?;
    Ok((k.trim().to_owned(), v.trim().to_owned()))
}

/// Reads every input into `input` (its window and labels already set); returns the server's
/// warnings. `url` names the server in errors (credentials redacted).
pub async fn read_inputs(
    client: &PromClient,
    input: &mut CostInput,
    step: f64,
    url: &str,
) -> Result<Vec<String>, OpsError> {
    let mut r = Reader {
        client,
        from: input.from,
        to: input.to,
        step,
        url,
        warnings: Vec::new(),
        missing: Vec::new(),
    };
    let gpu = r#"resource="nvidia.com/gpu",replica_role!="follower""#;
    let local = format!("kueue_local_queue_resource_reservation{{{gpu}}}");
    input.local_queue_reservations = r.query("Kueue LocalQueue GPU reservations", &local).await?;
    let cluster = format!("kueue_cluster_queue_resource_reservation{{{gpu}}}");
    input.cluster_queue_reservations = r
        .query("Kueue ClusterQueue GPU reservations", &cluster)
        .await?;
    input.namespace_labels = r.query("namespace teams", "kube_namespace_labels").await?;
    input.gpu_busy = r.gpu_busy().await?;
    input.generated_tokens = r.generated_tokens().await?;
    input.missing = r.missing;
    Ok(r.warnings)
}

impl Reader<'_> {
    /// Busy time: the first catalogued name with data, as a 0..1 fraction.
    async fn gpu_busy(&mut self) -> Result<Vec<Series>, OpsError> {
        for def in busy_names() {
            let busy = self.query("GPU utilisation", &as_fraction(def)).await?;
            if !busy.is_empty() {
                return Ok(busy);
            }
        }
        Ok(Vec::new())
    }

    /// Generated tokens: every engine's counter (a fleet may run several engines), each engine
    /// read from its first catalogued name with data.
    async fn generated_tokens(&mut self) -> Result<Vec<Series>, OpsError> {
        let (mut tokens, mut engines_read) = (Vec::new(), Vec::new());
        for def in catalog::candidates(Concept::GeneratedTokens) {
            if engines_read.contains(&def.engine) {
                continue;
            }
            let series = self.query("generated tokens", def.name).await?;
            if !series.is_empty() {
                engines_read.push(def.engine);
                tokens.extend(series);
            }
        }
        Ok(tokens)
    }
}

/// GPU busy-time names, preferred first: the profiling engine-active ratio, then the device's
/// utilisation percent.
fn busy_names() -> impl Iterator<Item = &'static MetricDef> {
    catalog::candidates(Concept::GrEngineActive).chain(catalog::candidates(Concept::GpuUtil))
}

/// The query that reads `def` as a 0..1 fraction.
fn as_fraction(def: &MetricDef) -> String {
    match def.unit {
        Unit::Percent => format!("{} / 100", def.name),
        _ => def.name.to_owned(),
    }
}

struct Reader<'a> {
    client: &'a PromClient,
    from: f64,
    to: f64,
    step: f64,
    url: &'a str,
    warnings: Vec<String>,
    missing: Vec<String>,
}

impl Reader<'_> {
    async fn query(&mut self, what: &str, query: &str) -> Result<Vec<Series>, OpsError> {
        match self
            .client
            .query_range(query, self.from, self.to, self.step)
            .await
        {
            Ok(r) => {
                self.warnings.extend(r.warnings);
                Ok(r.data)
            }
            Err(e @ PromError::Api { .. }) => {
                self.missing
                    .push(format!("{what} (query `{query}` failed: {e})"));
                Ok(Vec::new())
            }
            Err(e) => Err(unreadable(self.url, e)),
        }
    }
}

/// What failed, at which URL, and what to do about it.
fn unreadable(url: &str, e: PromError) -> OpsError {
    let fix = match &e {
        PromError::Http {
            status: 401 | 403, ..
        } => {
            "it refused the credentials: give --bearer-token, or --basic-user and --basic-password, or the --header its proxy needs"
        }
        PromError::Fetch(FetchError::Connect(_) | FetchError::Request(_)) => {
            "check that Prometheus runs there and that --prometheus is its address (e.g. http://prometheus:9090)"
        }
        PromError::Fetch(FetchError::Timeout(_)) => {
            "it did not answer in time: check the address, or raise --query-timeout"
        }
        _ => {
            "check that --prometheus is the Prometheus API's base URL (a proxy or a wrong path answers otherwise)"
        }
    };
    OpsError::Unreadable {
        url: url.to_owned(),
        source: e,
        fix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_and_tokens_come_from_the_catalog() {
        let busy: Vec<String> = busy_names().map(as_fraction).collect();
        assert_eq!(
            busy,
            vec![
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                "DCGM_FI_DEV_GPU_UTIL / 100"
            ]
        );
        let engines: Vec<&str> = catalog::candidates(Concept::GeneratedTokens)
            .map(|d| d.engine)
            .collect();
        for e in ["vllm", "sglang", "tgi"] {
            assert!(engines.contains(&e), "{e} tokens are counted: {engines:?}");
        }
    }
}
