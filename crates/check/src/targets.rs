//! Is collection really working? Targets up is not enough: a dcgm-exporter pod can run and
//! serve empty values (no `runtimeClassName: nvidia`). [`assess`] checks, per layer, that the
//! expected families carry real values — dcgm `modelName`/`UUID` non-empty, power > 0, no blank
//! sentinels; vLLM's scheduler and KV families present; Kueue and kube-state-metrics with the
//! gates and allowlists cost attribution needs — plus dcgm pod attribution, and says what to
//! fix for each failure. Pure: the caller hands in target states and sampled series.

use crate::finding::Severity;
use llmscope_catalog::dcgm::is_blank;
use llmscope_catalog::detect::detect;
use serde::Serialize;
use std::collections::BTreeMap;

/// A scrape target as Prometheus reports it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TargetState {
    pub job: String,
    pub url: String,
    /// `up`, `down` or `unknown`.
    pub health: String,
    pub last_error: String,
}

/// One sampled series.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observed {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// What was looked at.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Collection {
    /// Prometheus targets (empty when pages were scraped directly).
    pub targets: Vec<TargetState>,
    pub samples: Vec<Observed>,
    /// Through Prometheus (target labels added, Kueue/KSM expected) or direct pages.
    pub via_prometheus: bool,
}

/// The layer a check belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Targets,
    Gpu,
    Engine,
    Scheduling,
}

/// One verified fact, or a failure with its fix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub layer: Layer,
    pub what: String,
    /// `None` = passed.
    pub severity: Option<Severity>,
    pub detail: String,
    pub fix: Option<String>,
}

impl Check {
    fn ok(layer: Layer, what: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            layer,
            what: what.into(),
            severity: None,
            detail: detail.into(),
            fix: None,
        }
    }

    fn fail(
        layer: Layer,
        what: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            layer,
            what: what.into(),
            severity: Some(Severity::Error),
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn warn(self) -> Check {
        Check {
            severity: self.severity.map(|_| Severity::Warning),
            ..self
        }
    }
}

/// Every sample of an exposition page, for [`assess`] on directly scraped targets.
pub fn observed_in_page(body: &[u8]) -> Vec<Observed> {
    let (families, _) = promtext::parse_families(body);
    families
        .iter()
        .flat_map(|f| &f.samples)
        .map(|s| Observed {
            name: s.name.unescape().into_owned(),
            labels: s
                .labels
                .iter()
                .map(|l| {
                    (
                        l.name.unescape().into_owned(),
                        l.value.unescape().into_owned(),
                    )
                })
                .collect(),
            value: s.value,
        })
        .collect()
}

const RUNTIME_FIX: &str = "the exporter runs without GPU access: set runtimeClassName: nvidia on the dcgm-exporter DaemonSet (or make nvidia the default runtime), and do not request nvidia.com/gpu for it";
const MONITOR_FIX: &str = "kube-prometheus-stack only selects ServiceMonitors/PodMonitors labelled release: <helm release> and ignores prometheus.io/scrape annotations: add the label, or set serviceMonitorSelectorNilUsesHelmValues: false";

/// Every check over `c`, layer by layer.
pub fn assess(c: &Collection) -> Vec<Check> {
    let mut out = targets(c);
    out.extend(gpu(c));
    out.extend(engine(c));
    if c.via_prometheus {
        out.extend(scheduling(c));
    }
    out
}

fn targets(c: &Collection) -> Vec<Check> {
    c.targets
        .iter()
        .map(|t| {
            let what = format!("target {} ({})", t.job, t.url);
            if t.health == "up" {
                return Check::ok(Layer::Targets, what, "up");
            }
            let fix = if t.job.contains("dcgm") {
                format!("{RUNTIME_FIX}; check the exporter's logs and its Service port (9400)")
            } else {
                "check that the pod is running and the Service/port of the monitor point at its /metrics".to_owned()
            };
            Check::fail(Layer::Targets, what, format!("{}: {}", t.health, t.last_error), fix)
        })
        .collect()
}

fn named<'a>(c: &'a Collection, name: &'a str) -> impl Iterator<Item = &'a Observed> + 'a {
    c.samples.iter().filter(move |s| s.name == name)
}

fn gpu(c: &Collection) -> Vec<Check> {
    let dcgm: Vec<&Observed> = c
        .samples
        .iter()
        .filter(|s| s.name.starts_with("DCGM_"))
        .collect();
    if dcgm.is_empty() {
        let fix = if c.via_prometheus {
            MONITOR_FIX
        } else {
            "pass the dcgm-exporter /metrics URL (port 9400)"
        };
        return vec![Check::fail(
            Layer::Gpu,
            "dcgm-exporter series",
            "no DCGM_* series at all",
            fix,
        )];
    }
    let mut out = vec![Check::ok(
        Layer::Gpu,
        "dcgm-exporter series",
        format!("{} series", dcgm.len()),
    )];
    out.push(identity(c));
    out.push(power(c));
    out.push(sentinels(&dcgm));
    out.push(profiling(c));
    if c.via_prometheus {
        out.push(attribution(c));
    }
    out
}

fn identity(c: &Collection) -> Check {
    let what = "GPU identity (modelName, UUID)";
    let power: Vec<&Observed> = named(c, "DCGM_FI_DEV_POWER_USAGE").collect();
    let blank = |s: &&Observed, l: &str| s.labels.get(l).is_none_or(|v| v.is_empty());
    let bad = power
        .iter()
        .filter(|s| blank(s, "modelName") || blank(s, "UUID"))
        .count();
    match (power.len(), bad) {
        (0, _) => Check::fail(
            Layer::Gpu,
            what,
            "no DCGM_FI_DEV_POWER_USAGE series to read it from",
            RUNTIME_FIX,
        ),
        (_, 0) => {
            let model = power[0]
                .labels
                .get("modelName")
                .cloned()
                .unwrap_or_default();
            Check::ok(Layer::Gpu, what, format!("{} GPU(s), {model}", power.len()))
        }
        (n, b) => Check::fail(
            Layer::Gpu,
            what,
            format!("{b} of {n} GPU series have an empty modelName or UUID"),
            RUNTIME_FIX,
        ),
    }
}

fn power(c: &Collection) -> Check {
    let values: Vec<f64> = named(c, "DCGM_FI_DEV_POWER_USAGE")
        .map(|s| s.value)
        .collect();
    let what = "GPU power > 0 W";
    if values.is_empty() {
        return Check::fail(
            Layer::Gpu,
            what,
            "DCGM_FI_DEV_POWER_USAGE is absent",
            RUNTIME_FIX,
        );
    }
    let zero = values
        .iter()
        .filter(|v| **v <= 0.0 || !v.is_finite())
        .count();
    if zero == 0 {
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        Check::ok(Layer::Gpu, what, format!("max {max:.1} W"))
    } else {
        Check::fail(
            Layer::Gpu,
            what,
            format!(
                "{zero} of {} GPUs read 0 W (a real GPU never does)",
                values.len()
            ),
            RUNTIME_FIX,
        )
    }
}

fn sentinels(dcgm: &[&Observed]) -> Check {
    let what = "no DCGM blank sentinels";
    let blank: Vec<&str> = dcgm
        .iter()
        .filter(|s| is_blank(s.value))
        .map(|s| s.name.as_str())
        .collect();
    if blank.is_empty() {
        return Check::ok(Layer::Gpu, what, "every value is a reading");
    }
    Check::fail(
        Layer::Gpu,
        what,
        format!("{} series carry \"no value\" sentinels (≥ 2^47), e.g. {}", blank.len(), blank[0]),
        "the field is not supported on this GPU or driver (or on MIG): drop it from the counters CSV, and treat those values as missing",
    )
    .warn()
}

fn profiling(c: &Collection) -> Check {
    let what = "profiling fields (DCGM_FI_PROF_*)";
    if named(c, "DCGM_FI_PROF_GR_ENGINE_ACTIVE").next().is_some() {
        return Check::ok(Layer::Gpu, what, "DCGM_FI_PROF_GR_ENGINE_ACTIVE present");
    }
    Check::fail(
        Layer::Gpu,
        what,
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE is absent: no engine-active, tensor or DRAM ratios",
        "profiling needs a Volta-or-newer GPU, dcgm-exporter ≥ 4.0 default counters (or dcp-metrics-included.csv) and the SYS_ADMIN capability",
    )
    .warn()
}

fn attribution(c: &Collection) -> Check {
    let what = "dcgm pod attribution";
    let pods: Vec<&str> = named(c, "DCGM_FI_DEV_POWER_USAGE")
        .filter_map(|s| s.labels.get("pod").map(String::as_str))
        .collect();
    let exported =
        named(c, "DCGM_FI_DEV_POWER_USAGE").any(|s| s.labels.contains_key("exported_pod"));
    let own = pods.iter().all(|p| p.contains("dcgm-exporter"));
    match (pods.is_empty(), own, exported) {
        (true, _, _) => Check::ok(Layer::Gpu, what, "no pod label on GPU series"),
        (false, false, _) => Check::ok(Layer::Gpu, what, format!("pod = workload ({})", pods[0])),
        (false, true, true) => Check::fail(
            Layer::Gpu,
            what,
            format!("`pod` is the exporter's own ({}); the workload is in exported_pod", pods[0]),
            "query exported_pod/exported_namespace, or set honorLabels: true on the dcgm-exporter ServiceMonitor",
        )
        .warn(),
        (false, true, false) => Check::fail(
            Layer::Gpu,
            what,
            format!("`pod` is the exporter's own ({}) and no workload pod is mapped", pods[0]),
            "enable pod mapping (kubelet pod-resources socket mounted; --kubernetes-gpu-id-type device-name on GKE; --nvidia-resource-names=nvidia.com/gpu.shared for time-sliced GPUs); until then use the engine's own metrics per pod",
        )
        .warn(),
    }
}

fn engine(c: &Collection) -> Vec<Check> {
    let names: Vec<&str> = c.samples.iter().map(|s| s.name.as_str()).collect();
    let engines: Vec<_> = detect(names.iter().copied())
        .into_iter()
        .filter(|d| matches!(d.exporter.name(), "vllm" | "sglang" | "tgi"))
        .collect();
    let Some(d) = engines.first() else {
        let fix = if c.via_prometheus {
            MONITOR_FIX
        } else {
            "pass the engine's /metrics URL"
        };
        return vec![Check::fail(
            Layer::Engine,
            "serving-engine series",
            "no vLLM, SGLang or TGI series",
            fix,
        )];
    };
    let mut out = vec![Check::ok(
        Layer::Engine,
        "serving-engine series",
        format!("{} {} ({} families)", d.exporter, d.range(), d.matched),
    )];
    if d.exporter.name() == "vllm" {
        for (what, any_of) in [
            ("running requests", &["vllm:num_requests_running"][..]),
            ("waiting requests", &["vllm:num_requests_waiting"][..]),
            (
                "KV-cache usage",
                &["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"][..],
            ),
            ("generated tokens", &["vllm:generation_tokens_total"][..]),
        ] {
            let found = any_of.iter().find(|n| names.contains(n));
            out.push(match found {
                Some(n) => Check::ok(Layer::Engine, what, *n),
                None => Check::fail(
                    Layer::Engine,
                    what,
                    format!("none of {}", any_of.join(", ")),
                    "a partial vLLM page: check the version (llmscope inventory) and that the monitor scrapes the API server port",
                ),
            });
        }
    }
    out
}

fn scheduling(c: &Collection) -> Vec<Check> {
    let has = |prefix: &str| c.samples.iter().any(|s| s.name.starts_with(prefix));
    let mut out = Vec::new();
    if has("kueue_") {
        out.push(presence(
            c,
            "kueue_local_queue_resource_reservation",
            "per-namespace GPU reservations",
            "enable the LocalQueueMetrics feature gate (on by default from Kueue v0.17)",
        ));
        out.push(presence(
            c,
            "kueue_cluster_queue_resource_reservation",
            "per-ClusterQueue GPU reservations",
            "set metrics.enableClusterQueueResources: true in the Kueue manager config",
        ));
    } else {
        out.push(Check::fail(Layer::Scheduling, "Kueue series", "no kueue_* series", "if Kueue runs, scrape its metrics service (https :8443, bearer token) with a release-labelled ServiceMonitor").warn());
    }
    let team = c.samples.iter().any(|s| {
        s.name == "kube_namespace_labels" && s.labels.keys().any(|k| k.starts_with("label_"))
    });
    out.push(if team {
        Check::ok(Layer::Scheduling, "namespace team labels", "kube_namespace_labels carries label_* labels")
    } else {
        Check::fail(
            Layer::Scheduling,
            "namespace team labels",
            "kube_namespace_labels has no label_* labels (or no series)",
            "run kube-state-metrics with --metric-labels-allowlist=namespaces=[team] (Helm: kube-state-metrics.metricLabelsAllowlist); the label is label_team",
        )
        .warn()
    });
    out
}

fn presence(c: &Collection, name: &str, what: &str, fix: &str) -> Check {
    if named(c, name).next().is_some() {
        Check::ok(Layer::Scheduling, what, name)
    } else {
        Check::fail(Layer::Scheduling, what, format!("{name} is absent"), fix).warn()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(name: &str, labels: &[(&str, &str)], value: f64) -> Observed {
        Observed {
            name: name.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            value,
        }
    }

    fn healthy() -> Vec<Observed> {
        let gpu = [
            ("modelName", "NVIDIA L4"),
            ("UUID", "GPU-1"),
            ("pod", "vllm-0"),
        ];
        vec![
            obs("DCGM_FI_DEV_POWER_USAGE", &gpu, 40.8),
            obs("DCGM_FI_DEV_GPU_UTIL", &gpu, 31.0),
            obs("DCGM_FI_PROF_GR_ENGINE_ACTIVE", &gpu, 0.3),
            obs("vllm:num_requests_running", &[], 16.0),
            obs("vllm:num_requests_waiting", &[], 16.0),
            obs("vllm:kv_cache_usage_perc", &[], 0.02),
            obs("vllm:generation_tokens_total", &[], 1e5),
            obs("vllm:num_requests_waiting_by_reason", &[], 16.0),
        ]
    }

    fn failures(checks: &[Check]) -> Vec<&str> {
        checks
            .iter()
            .filter(|c| c.severity.is_some())
            .map(|c| c.what.as_str())
            .collect()
    }

    #[test]
    fn healthy_direct_pages_pass() {
        let c = Collection {
            samples: healthy(),
            ..Collection::default()
        };
        let checks = assess(&c);
        assert!(failures(&checks).is_empty(), "{checks:#?}");
    }

    #[test]
    fn an_exporter_without_the_gpu_is_caught_by_its_values() {
        let blank = [("modelName", ""), ("UUID", ""), ("pod", "x")];
        let mut s = healthy();
        s.retain(|o| !o.name.starts_with("DCGM_"));
        s.push(obs("DCGM_FI_DEV_POWER_USAGE", &blank, 0.0));
        s.push(obs(
            "DCGM_FI_DEV_MEMORY_TEMP",
            &blank,
            9_223_372_036_854_775_794.0,
        ));
        let checks = assess(&Collection {
            samples: s,
            ..Collection::default()
        });
        assert_eq!(
            failures(&checks),
            [
                "GPU identity (modelName, UUID)",
                "GPU power > 0 W",
                "no DCGM blank sentinels",
                "profiling fields (DCGM_FI_PROF_*)"
            ]
        );
        let id = checks
            .iter()
            .find(|c| c.what.starts_with("GPU identity"))
            .unwrap();
        assert!(
            id.fix
                .as_deref()
                .unwrap()
                .contains("runtimeClassName: nvidia")
        );
    }

    #[test]
    fn prometheus_down_targets_missing_layers_and_gates() {
        let c = Collection {
            targets: vec![TargetState {
                job: "dcgm-exporter".into(),
                url: "http://x:9400/metrics".into(),
                health: "down".into(),
                last_error: "connection refused".into(),
            }],
            samples: vec![
                obs("kueue_pending_workloads", &[], 1.0),
                obs("kube_namespace_labels", &[("namespace", "ml")], 1.0),
            ],
            via_prometheus: true,
        };
        let checks = assess(&c);
        let f = failures(&checks);
        assert!(
            f.contains(&"target dcgm-exporter (http://x:9400/metrics)"),
            "{f:?}"
        );
        assert!(f.contains(&"dcgm-exporter series") && f.contains(&"serving-engine series"));
        assert!(
            f.contains(&"per-namespace GPU reservations") && f.contains(&"namespace team labels")
        );
        let gpu = checks
            .iter()
            .find(|c| c.what == "dcgm-exporter series")
            .unwrap();
        assert!(gpu.fix.as_deref().unwrap().contains("release"));
    }

    #[test]
    fn exporter_pod_labels_are_flagged_through_prometheus() {
        let mut s = healthy();
        for o in s.iter_mut().filter(|o| o.name.starts_with("DCGM_")) {
            o.labels.insert("pod".into(), "dcgm-exporter-x7k2p".into());
            o.labels.insert("exported_pod".into(), "vllm-0".into());
        }
        s.push(obs("kueue_local_queue_resource_reservation", &[], 1.0));
        s.push(obs("kueue_cluster_queue_resource_reservation", &[], 1.0));
        s.push(obs(
            "kube_namespace_labels",
            &[("label_team", "search")],
            1.0,
        ));
        let checks = assess(&Collection {
            samples: s,
            via_prometheus: true,
            ..Collection::default()
        });
        assert_eq!(failures(&checks), ["dcgm pod attribution"]);
    }
}
