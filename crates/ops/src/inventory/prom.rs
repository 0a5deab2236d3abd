//! What a Prometheus-compatible server holds, as an inventory `check` and `dashboard` lint
//! against: every metric name over the lookback with its type (from the metadata API), and for
//! the names asked about their series count, label values, and how long ago a gone one was
//! last seen; plus the server's scrape interval.

use crate::OpsError;
use llmscope_check::inventory::prom::{PromInventory, PromMetric};
use llmscope_collect::prom::PromClient;
use llmscope_core::catalog::Kind;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Reads what a Prometheus server holds: every name over the lookback, and for `names`, their
/// labels and values, types, and how long ago the gone ones were last present.
pub async fn prometheus(
    client: &PromClient,
    lookback: Duration,
    names: &BTreeSet<String>,
) -> Result<PromInventory, OpsError> {
    let uri = client.base();
    let end = now();
    let start = end - lookback.as_secs_f64();
    let ctx = |source| OpsError::Prom {
        context: format!("querying {uri}"),
        source,
    };
    let all = client
        .label_values("__name__", &[], Some((start, end)))
        .await
        .map_err(ctx)?
        .data;
    let recent: BTreeSet<String> = client
        .label_values("__name__", &[], Some((end - 300.0, end)))
        .await
        .map_err(ctx)?
        .data
        .into_iter()
        .collect();
    let meta = client
        .metadata(None)
        .await
        .map(|r| r.data)
        .unwrap_or_default();
    let mut metrics: BTreeMap<String, PromMetric> = BTreeMap::new();
    for name in &all {
        let kind = meta_kind(&meta, name);
        metrics.insert(
            name.clone(),
            PromMetric {
                kind,
                ..PromMetric::default()
            },
        );
    }
    for name in names {
        let Some(m) = metrics.get_mut(name) else {
            continue;
        };
        let selector = format!("{{__name__={name:?}}}");
        let series = client
            .series(&[selector.as_str()], start, end)
            .await
            .map_err(ctx)?
            .data;
        m.series = series.len();
        for key in &series {
            for (l, v) in key.labels.iter() {
                m.labels
                    .entry(l.to_owned())
                    .or_default()
                    .insert(v.to_owned());
            }
        }
        if !recent.contains(name) {
            m.gone_for_s = Some(last_seen_ago(client, &selector, lookback, end).await);
        }
    }
    let interval = scrape_interval(client).await;
    Ok(PromInventory::new(
        &uri.to_string(),
        &humantime(lookback),
        metrics,
        interval,
    ))
}

fn meta_kind(
    meta: &BTreeMap<String, Vec<llmscope_collect::prom::api::MetricMetadata>>,
    name: &str,
) -> Option<Kind> {
    let base = ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .filter(|b| meta.contains_key(*b));
    let entry = meta.get(name).or_else(|| base.and_then(|b| meta.get(b)))?;
    match entry.first()?.metric_type.as_str() {
        "counter" => Some(Kind::Counter),
        "gauge" => Some(Kind::Gauge),
        "histogram" => Some(Kind::Histogram),
        "summary" => Some(Kind::Summary),
        _ => None,
    }
}

async fn last_seen_ago(client: &PromClient, selector: &str, lookback: Duration, end: f64) -> f64 {
    let q = format!(
        "max(timestamp(last_over_time({selector}[{}s])))",
        lookback.as_secs().max(1)
    );
    match client.query(&q, Some(end)).await.map(|r| r.data) {
        Ok(llmscope_collect::prom::api::QueryData::Vector(v)) => {
            v.first().map_or(lookback.as_secs_f64(), |(_, p)| end - p.v)
        }
        _ => lookback.as_secs_f64(),
    }
}

/// The shortest scrape interval: the median gap between raw `up` samples of a target over the
/// last 5 minutes (an instant query of a range selector returns the raw samples).
async fn scrape_interval(client: &PromClient) -> Option<f64> {
    let data = client.query("up[5m]", None).await.ok()?.data;
    let llmscope_collect::prom::api::QueryData::Matrix(series) = data else {
        return None;
    };
    series
        .iter()
        .filter_map(|s| {
            let mut gaps: Vec<f64> = s.points.windows(2).map(|w| w[1].t - w[0].t).collect();
            gaps.sort_by(f64::total_cmp);
            gaps.get(gaps.len() / 2).copied()
        })
        .filter(|g| *g > 0.0)
        .reduce(f64::min)
}

fn humantime(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s % 86400 == 0 => format!("{}d", s / 86400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}
