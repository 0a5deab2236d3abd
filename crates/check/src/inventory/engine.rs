//! [`CatalogInventory`]: an engine or exporter at a version (`--engine vllm@0.26`), as the
//! catalog says it exposes. Families behind a flag or gate are included (they may be on); names
//! hidden behind vLLM's `--show-hidden-metrics-for-version` and removed names are not.

use super::{Inventory, MetricInfo};
use llmscope_catalog::{EngineSpec, Kind, Status, Suffix, resolve};
use std::collections::BTreeSet;

/// The catalog's inventory of one engine version.
#[derive(Debug, Clone)]
pub struct CatalogInventory {
    spec: EngineSpec,
    source: String,
}

impl CatalogInventory {
    pub fn new(spec: EngineSpec) -> CatalogInventory {
        CatalogInventory {
            spec,
            source: format!("{spec} (catalog)"),
        }
    }
}

impl Inventory for CatalogInventory {
    fn source(&self) -> &str {
        &self.source
    }

    fn metric(&self, name: &str) -> Option<MetricInfo> {
        let (family, suffix) = resolve(name)?;
        if !self.spec.status(family).is_exposed() {
            return None;
        }
        // `_created` series exist only on prometheus_client exporters (vLLM, SGLang single-process).
        if suffix == Suffix::Created && family.exporter.name() != "vllm" {
            return None;
        }
        let mut labels: BTreeSet<String> = self
            .spec
            .labels(family)
            .into_iter()
            .map(str::to_owned)
            .collect();
        if suffix == Suffix::Bucket {
            labels.insert("le".to_owned());
        }
        if family.kind == Kind::Summary && suffix == Suffix::None {
            labels.insert("quantile".to_owned());
        }
        Some(MetricInfo {
            kind: Some(if suffix == Suffix::Created {
                Kind::Gauge
            } else {
                family.kind
            }),
            suffix: Some(suffix),
            labels,
            values: None,
            series: 0,
            help: None,
        })
    }

    fn names(&self) -> Vec<String> {
        self.spec
            .families()
            .filter(|(_, s)| *s != Status::Hidden)
            .flat_map(|(f, _)| f.sample_names())
            .collect()
    }

    fn engines(&self) -> Vec<EngineSpec> {
        vec![self.spec]
    }

    fn adds_target_labels(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposes_the_version_names_only() {
        let inv = CatalogInventory::new("vllm@0.26".parse().unwrap());
        assert!(inv.metric("vllm:kv_cache_usage_perc").is_some());
        assert!(inv.metric("vllm:gpu_cache_usage_perc").is_none());
        let b = inv
            .metric("vllm:inter_token_latency_seconds_bucket")
            .unwrap();
        assert!(b.has_label("le") && b.has_label("model_name"));
        assert!(inv.metric("vllm:inter_token_latency_seconds").is_none());
        let old = CatalogInventory::new("vllm@0.11".parse().unwrap());
        assert!(
            old.metric("vllm:gpu_cache_usage_perc").is_none(),
            "hidden in 0.11"
        );
        assert!(
            old.metric("vllm:time_per_output_token_seconds_sum")
                .is_some(),
            "deprecated, still there"
        );
        assert!(inv.names().iter().any(|n| n == "vllm:kv_cache_usage_perc"));
    }

    #[test]
    fn ksm_label_patterns() {
        let inv = CatalogInventory::new("kube-state-metrics@2.20".parse().unwrap());
        let m = inv.metric("kube_namespace_labels").unwrap();
        assert!(m.has_label("label_team") && !m.has_label("team"));
    }
}
