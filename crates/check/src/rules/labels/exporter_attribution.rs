//! `exporter-attribution`: dcgm-exporter series selected or grouped by `pod`, `namespace` or
//! `container`. Through Prometheus those labels are the exporter pod's own (unless its
//! ServiceMonitor sets honorLabels), so they do not say which workload used the GPU.

use crate::finding::{Finding, Rule, Severity};
use crate::inventory::MetricInfo;
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};
use llmscope_catalog::Exporter;

pub struct ExporterAttribution;

impl RuleInfo for ExporterAttribution {
    const ID: &'static str = "exporter-attribution";
    const SUMMARY: &'static str =
        "dcgm series selected by pod/namespace labels that belong to the exporter";
    // Hand-written (fixtures/README.md: "small inputs for the contract tests"): no real file in
    // the corpus selects dcgm series by pod or namespace.
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::File {
        path: "fixtures/queries.promql",
        inventories: &["vllm@0.26", "dcgm-exporter@4.5"],
    };
}

impl Lint for ExporterAttribution {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        match fact {
            Fact::Matcher(m)
                if m.labels.has(&m.matcher.name) && m.exporter == Some(Exporter::DcgmExporter) =>
            {
                attribution(scope, m.name, &m.matcher.name, m.info, out);
            }
            Fact::Grouping(g) if g.inner.labels.has(g.label) && g.inner.is_dcgm() => {
                if let Some(info) = scope.inv.metric(g.name) {
                    attribution(scope, g.name, g.label, &info, out);
                }
            }
            _ => {}
        }
    }
}

/// dcgm series `name` selected or grouped by `label`.
fn attribution(scope: &Scope<'_>, name: &str, label: &str, info: &MetricInfo, out: &mut Hits) {
    if !matches!(label, "pod" | "namespace" | "container") {
        return;
    }
    let Some((severity, why)) = evidence(scope, label, info) else {
        return;
    };
    let f = Finding::new(
        Rule::ExporterAttribution,
        severity,
        format!("`{name}` is selected by `{label}`, but {why}: it does not say which workload used the GPU"),
    )
    .metric(name)
    .suggest(format!(
        "use `exported_{label}` (or set the dcgm-exporter ServiceMonitor's honorLabels: true), with pod mapping on (--kubernetes-gpu-id-type, --nvidia-resource-names for time-sliced GPUs); or use the engine's own metrics per pod"
    ));
    out.push(f, Some(label));
}

/// How sure it is that `label` is the exporter's own, and why: an error where the inventory's
/// values of the label are all the exporter's, a warning where only Prometheus can tell, none
/// where the values show workloads.
fn evidence(scope: &Scope<'_>, label: &str, info: &MetricInfo) -> Option<(Severity, String)> {
    let values: Vec<&String> = info
        .values
        .as_ref()
        .and_then(|v| v.get(label))
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    if values.is_empty() || scope.inv.adds_target_labels() {
        return Some((
            Severity::Warning,
            format!(
                "through Prometheus, `{label}` on dcgm-exporter series is the exporter's own unless its ServiceMonitor sets honorLabels: true"
            ),
        ));
    }
    let exporter_own = |v: &&String| v.contains("dcgm-exporter") || v.contains("gpu-operator");
    values.iter().all(exporter_own).then(|| {
        (
            Severity::Error,
            format!(
                "its `{label}` values ({}) are the exporter's own",
                join(&values)
            ),
        )
    })
}

fn join(values: &[&String]) -> String {
    let shown: Vec<&str> = values.iter().take(3).map(|s| s.as_str()).collect();
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use crate::finding::{Rule, Severity};
    use crate::inventory::Inventories;
    use crate::inventory::prom::{PromInventory, PromMetric};
    use crate::rules::testing::*;
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn exporter_attribution() {
        let f = only(
            r#"DCGM_FI_DEV_GPU_UTIL{pod="vllm-0"}"#,
            false,
            Rule::ExporterAttribution,
        );
        assert!(f.suggestion.unwrap().contains("exported_pod"));
        only(
            "avg by (namespace) (DCGM_FI_DEV_GPU_UTIL)",
            false,
            Rule::ExporterAttribution,
        );
        clean("avg by (Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL)", false);
        clean(r#"vllm:num_requests_running{pod="vllm-0"}"#, false);
        let prom = |pods: &[&str]| {
            let labels: BTreeMap<String, BTreeSet<String>> = [(
                "pod".to_owned(),
                pods.iter().map(|p| (*p).to_owned()).collect(),
            )]
            .into();
            let m = PromMetric {
                labels,
                series: 1,
                ..PromMetric::default()
            };
            let mut inv = Inventories::new();
            inv.push(Box::new(PromInventory::new(
                "http://p",
                "1h",
                [("DCGM_FI_DEV_GPU_UTIL".to_owned(), m)].into(),
                Some(15.0),
            )));
            inv
        };
        let f = run_with(
            &prom(&["dcgm-exporter-x7k2p"]),
            "avg by (pod) (DCGM_FI_DEV_GPU_UTIL)",
            false,
            None,
        );
        assert_eq!(rules(&f), vec![Rule::ExporterAttribution]);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            run_with(
                &prom(&["vllm-0"]),
                "avg by (pod) (DCGM_FI_DEV_GPU_UTIL)",
                false,
                None
            )
            .is_empty()
        );
    }
}
