//! [`PromInventory`]: what a Prometheus-compatible server holds over a lookback window, filled
//! by the caller from the HTTP API (`label/__name__/values`, `series`, `metadata`, `targets`,
//! and a presence query per name). This module only models the answers, so the rules stay pure.
//!
//! Absence reasons follow pint's `promql/series`: a name never present in the window, or present
//! earlier and gone for N (`was last present 3d ago`).

use super::{Absence, Inventory, MetricInfo};
use llmscope_catalog::detect::{self, Detection};
use llmscope_catalog::{EngineSpec, Kind, resolve};
use std::collections::{BTreeMap, BTreeSet};

/// One metric name as the server holds it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromMetric {
    /// Type from `/api/v1/metadata` (by family name).
    pub kind: Option<Kind>,
    pub help: Option<String>,
    /// Label name → values seen over the window.
    pub labels: BTreeMap<String, BTreeSet<String>>,
    pub series: usize,
    /// Seconds since the last sample, if it is not present now.
    pub gone_for_s: Option<f64>,
}

/// A Prometheus server's inventory over a lookback window.
#[derive(Debug, Clone, Default)]
pub struct PromInventory {
    source: String,
    metrics: BTreeMap<String, PromMetric>,
    scrape_interval_s: Option<f64>,
    detections: Vec<Detection>,
}

impl PromInventory {
    /// `url` for messages; `metrics` by sample name; the shortest scrape interval of its targets.
    pub fn new(
        url: &str,
        lookback: &str,
        metrics: BTreeMap<String, PromMetric>,
        scrape_interval_s: Option<f64>,
    ) -> PromInventory {
        let mut detections = detect::detect(metrics.keys().map(String::as_str));
        for d in &mut detections {
            let exporter = d.exporter;
            let labels = metrics
                .iter()
                .filter(|(name, _)| exporter.owns(name))
                .flat_map(|(_, m)| m.labels.keys().map(String::as_str));
            detect::refine_with_labels(d, labels);
        }
        PromInventory {
            source: format!("prometheus {url} (last {lookback})"),
            metrics,
            scrape_interval_s,
            detections,
        }
    }

    pub fn detections(&self) -> &[Detection] {
        &self.detections
    }
}

impl Inventory for PromInventory {
    fn source(&self) -> &str {
        &self.source
    }

    fn metric(&self, name: &str) -> Option<MetricInfo> {
        let m = self.metrics.get(name).filter(|m| m.gone_for_s.is_none())?;
        let catalogued = resolve(name);
        Some(MetricInfo {
            kind: m.kind.or(catalogued.map(|(f, _)| f.kind)),
            suffix: catalogued.map(|(_, s)| s),
            labels: m.labels.keys().cloned().collect(),
            values: Some(m.labels.clone()),
            series: m.series,
            help: m.help.clone(),
        })
    }

    fn absence(&self, name: &str) -> Absence {
        match self.metrics.get(name).and_then(|m| m.gone_for_s) {
            Some(ago_s) => Absence::LastPresent { ago_s },
            None => Absence::NeverPresent,
        }
    }

    fn names(&self) -> Vec<String> {
        self.metrics.keys().cloned().collect()
    }

    fn engines(&self) -> Vec<EngineSpec> {
        self.detections.iter().map(Detection::spec).collect()
    }

    fn scrape_interval_s(&self) -> Option<f64> {
        self.scrape_interval_s
    }

    fn adds_target_labels(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gone_names_are_absent_with_their_age() {
        let mut m = BTreeMap::new();
        m.insert(
            "vllm:num_requests_running".to_owned(),
            PromMetric {
                labels: [("pod".to_owned(), BTreeSet::from(["vllm-0".to_owned()]))].into(),
                series: 1,
                ..PromMetric::default()
            },
        );
        m.insert(
            "vllm:gpu_cache_usage_perc".to_owned(),
            PromMetric {
                gone_for_s: Some(3.0 * 86400.0),
                ..PromMetric::default()
            },
        );
        let inv = PromInventory::new("http://p", "7d", m, Some(15.0));
        let running = inv.metric("vllm:num_requests_running").unwrap();
        assert_eq!(
            running.kind,
            Some(Kind::Gauge),
            "type from the catalog without metadata"
        );
        assert!(running.has_label("pod"));
        assert!(inv.metric("vllm:gpu_cache_usage_perc").is_none());
        assert_eq!(
            inv.absence("vllm:gpu_cache_usage_perc"),
            Absence::LastPresent { ago_s: 259200.0 }
        );
        assert_eq!(inv.absence("nope"), Absence::NeverPresent);
    }
}
