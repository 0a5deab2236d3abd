//! Each replica's folds beside the deployment's (issue 25): which replica a series belongs to,
//! and which serving pods dcgm-exporter puts on one GPU.
//!
//! An engine series belongs to its pod and, under vLLM's data parallelism, its `engine` rank.
//! The pod is kube-prometheus-stack's `pod` target label (`shared/reference/gpu-kueue-prom.md`,
//! the ServiceMonitor relabelling: `namespace,pod,container,job,instance`), else the scrape's
//! `instance` (a direct scrape knows no pods). A dcgm-exporter series names the workload's pod
//! as `exported_pod` once Prometheus scraped it through a ServiceMonitor without `honorLabels`
//! (the target's own `pod` is then the exporter's), or as `pod` when scraped directly with pod
//! mapping on (`gpu-kueue-prom.md` lines 99 and 149). So `exported_pod` always names a
//! workload, and a bare `pod` counts only where it names a pod that serves: otherwise it is the
//! exporter's, and the GPU stays the deployment's alone.

use super::{Axes, Folds};
use crate::signal::{Concept, Input, KvCacheConfig, Replica, ReplicaKey, SharedGpu};
use llmscope_catalog::MetricDef;
use llmscope_core::series::{Labels, Series};
use std::collections::{BTreeMap, BTreeSet};

/// The catalog's producer name for dcgm-exporter's fields.
const DCGM: &str = "dcgm";

/// Each replica's folds, and what dcgm-exporter says about pods and GPUs.
#[derive(Debug, Default)]
pub(super) struct FleetFolds {
    /// The engine's series, per replica.
    engines: BTreeMap<ReplicaKey, Folds>,
    /// dcgm-exporter's series, per pod they name; joined to that pod's replicas at the end.
    gpus: BTreeMap<PodClaim, Folds>,
    /// Per physical GPU, the pods dcgm-exporter names on it.
    gpu_pods: BTreeMap<String, BTreeSet<PodClaim>>,
}

/// A pod a dcgm series names, and whether by `exported_pod` (a workload for certain).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct PodClaim {
    pod: String,
    exported: bool,
}

fn label<'a>(labels: &'a Labels, name: &str) -> Option<&'a str> {
    labels.get(name).filter(|v| !v.is_empty())
}

/// The replica an engine series belongs to.
pub(crate) fn engine_key(labels: &Labels) -> ReplicaKey {
    ReplicaKey {
        pod: label(labels, "pod")
            .or_else(|| label(labels, "instance"))
            .unwrap_or_default()
            .to_owned(),
        rank: label(labels, "engine").map(str::to_owned),
    }
}

/// The pod a dcgm series names, if any.
fn gpu_claim(labels: &Labels) -> Option<PodClaim> {
    let claim = |pod: &str, exported| PodClaim {
        pod: pod.to_owned(),
        exported,
    };
    label(labels, "exported_pod")
        .map(|p| claim(p, true))
        .or_else(|| label(labels, "pod").map(|p| claim(p, false)))
}

/// The physical GPU a dcgm series is about: its `UUID` (`uuid` under `--use-old-namespace`),
/// else its `gpu` index on its `Hostname` (`hostname` on dcgm-exporter's main branch).
fn gpu_id(labels: &Labels) -> Option<String> {
    if let Some(uuid) = label(labels, "UUID").or_else(|| label(labels, "uuid")) {
        return Some(uuid.to_owned());
    }
    let host = label(labels, "Hostname").or_else(|| label(labels, "hostname"))?;
    Some(format!("gpu {} on {host}", label(labels, "gpu")?))
}

impl FleetFolds {
    /// One replica's folds (tests).
    #[cfg(test)]
    pub(super) fn engines_of(&self, key: &ReplicaKey) -> &Folds {
        &self.engines[key]
    }

    pub(super) fn add(&mut self, def: &'static MetricDef, s: &Series, axes: &mut Axes) {
        let labels = &s.key.labels;
        // The API server's admission refusals are counted before any engine sees a request
        // (no `engine` label): a pod's, not a rank's, and kept in the deployment's folds only.
        // Folded per replica, they made a rank-less phantom replica beside each pod's engine,
        // and a real two-replica fleet with one replica queueing read `none` (issue 51).
        if def.concept == Concept::AdmissionRejections {
            return;
        }
        if def.engine != DCGM {
            self.engines
                .entry(engine_key(labels))
                .or_default()
                .add(def, s, axes);
            return;
        }
        let Some(claim) = gpu_claim(labels) else {
            return;
        };
        if let Some(id) = gpu_id(labels) {
            self.gpu_pods.entry(id).or_default().insert(claim.clone());
        }
        self.gpus.entry(claim).or_default().add(def, s, axes);
    }

    /// Whether `claim` names a workload: by `exported_pod`, or a pod whose engine is here.
    fn names_workload(&self, claim: &PodClaim) -> bool {
        claim.exported || self.engines.keys().any(|k| k.pod == claim.pod)
    }

    /// GPUs dcgm-exporter puts two or more workload pods on.
    pub(super) fn shared_gpus(&self) -> Vec<SharedGpu> {
        self.gpu_pods
            .iter()
            .filter_map(|(gpu, claims)| {
                let pods: BTreeSet<&str> = claims
                    .iter()
                    .filter(|c| self.names_workload(c))
                    .map(|c| c.pod.as_str())
                    .collect();
                (pods.len() >= 2).then(|| SharedGpu {
                    gpu: gpu.clone(),
                    pods: pods.into_iter().map(str::to_owned).collect(),
                })
            })
            .collect()
    }

    /// Each replica's input, its pod's GPU series joined in (every rank of a data-parallel pod
    /// reads its pod's GPUs: dcgm-exporter does not say which rank drives which). None for a
    /// single replica: it is the deployment.
    pub(super) fn replicas(self, kv_cache: &Option<KvCacheConfig>) -> Vec<Replica> {
        if self.engines.len() < 2 {
            return Vec::new();
        }
        let serving: BTreeSet<String> = self.engines.keys().map(|k| k.pod.clone()).collect();
        let gpus: Vec<(PodClaim, Folds)> = self
            .gpus
            .into_iter()
            .filter(|(c, _)| c.exported || serving.contains(&c.pod))
            .collect();
        let mut out = Vec::with_capacity(self.engines.len());
        for (key, mut folds) in self.engines {
            for (_, g) in gpus.iter().filter(|(c, _)| c.pod == key.pod) {
                folds.absorb(g);
            }
            let (input, _) = folds.finish();
            out.push(Replica {
                key,
                input: Input {
                    engine: crate::signal::EngineFacts {
                        kv_cache: kv_cache.clone(),
                        ..Default::default()
                    },
                    ..input
                },
            });
        }
        out
    }
}
