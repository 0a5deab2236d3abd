//! What a Prometheus-compatible server holds, as an inventory `check` and `dashboard` lint
//! against: every metric name over the lookback with its type (from the metadata API), and for
//! the names asked about their series count, label values, and how long ago a gone one was
//! last seen; plus the server's scrape interval.

use crate::OpsError;
use llmscope_catalog::Kind;
use llmscope_check::inventory::prom::{PromInventory, PromMetric};
use llmscope_collect::prom::{PromClient, PromError};
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
    let end = now();
    let start = end - lookback.as_secs_f64();
    let all = names_between(client, start, end).await?;
    let recent: BTreeSet<String> = names_between(client, end - 300.0, end)
        .await?
        .into_iter()
        .collect();
    let mut metrics = typed(client, &all).await;
    for name in names {
        if let Some(m) = metrics.get_mut(name) {
            let gone = (!recent.contains(name)).then_some(lookback);
            describe(client, name, m, (start, end), gone).await?;
        }
    }
    let interval = scrape_interval(client).await;
    let uri = client.base().to_string();
    Ok(PromInventory::new(
        &uri,
        &humantime(lookback),
        metrics,
        interval,
    ))
}

/// A failed query, naming the server.
fn failed(client: &PromClient) -> impl Fn(PromError) -> OpsError + '_ {
    move |source| OpsError::Prom {
        context: format!("querying {}", client.base()),
        source,
    }
}

/// The metric names that had samples between `start` and `end`.
async fn names_between(client: &PromClient, start: f64, end: f64) -> Result<Vec<String>, OpsError> {
    let names = client
        .label_values("__name__", &[], Some((start, end)))
        .await
        .map_err(failed(client))?;
    Ok(names.data)
}

/// Every name, typed from the metadata API (untyped where it says nothing).
async fn typed(client: &PromClient, all: &[String]) -> BTreeMap<String, PromMetric> {
    let meta = client
        .metadata(None)
        .await
        .map(|r| r.data)
        .unwrap_or_default();
    let metric = |name: &String| PromMetric {
        kind: meta_kind(&meta, name),
        ..PromMetric::default()
    };
    all.iter()
        .map(|name| (name.clone(), metric(name)))
        .collect()
}

/// A name asked about: its series count and label values over `(start, end)`, and for one gone
/// from the last 5 minutes, how long ago it was last seen within `gone_within`.
async fn describe(
    client: &PromClient,
    name: &str,
    m: &mut PromMetric,
    (start, end): (f64, f64),
    gone_within: Option<Duration>,
) -> Result<(), OpsError> {
    let selector = format!("{{__name__={name:?}}}");
    let series = client
        .series(&[selector.as_str()], start, end)
        .await
        .map_err(failed(client))?
        .data;
    m.series = series.len();
    add_labels(m, &series);
    if let Some(lookback) = gone_within {
        m.gone_for_s = Some(last_seen_ago(client, &selector, lookback, end).await);
    }
    Ok(())
}

/// Every label value of `series`, by label name.
fn add_labels(m: &mut PromMetric, series: &[llmscope_core::series::SeriesKey]) {
    for (l, v) in series.iter().flat_map(|key| key.labels.iter()) {
        m.labels
            .entry(l.to_owned())
            .or_default()
            .insert(v.to_owned());
    }
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
