//! kube-state-metrics families llmscope reads for GPU attribution (v2.20.0;
//! `docs/SOURCES.md` §ksm). `kube_namespace_labels` carries `label_<key>`
//! labels, and only for keys in `--metric-labels-allowlist` (nothing at all without one, since
//! v2.10.0).

use super::model::{Exporter, Family, Kind, Unit, Version};
use crate::Concept as C;

const fn f(name: &'static str, unit: Unit, labels: &'static [&'static str]) -> Family {
    Family::new(Exporter::KubeStateMetrics, name, Kind::Gauge, unit, labels)
}

const RESOURCES: &[&str] = &[
    "namespace",
    "pod",
    "uid",
    "container",
    "node",
    "resource",
    "unit",
];
const NODE_RESOURCES: &[&str] = &["node", "resource", "unit"];

/// Every kube-state-metrics family the catalog knows.
pub const FAMILIES: &[Family] = &[
    f("kube_namespace_labels", Unit::Info, &["namespace", "label_*"])
        .concept(C::NamespaceLabels)
        .since(Version::new(2, 0, 0))
        .when("--metric-labels-allowlist=namespaces=[team] (no series at all without an allowlist since v2.10)")
        .note("namespace labels appear as label_<key> (e.g. label_team), not under their own name"),
    f("kube_namespace_annotations", Unit::Info, &["namespace", "annotation_*"])
        .when("--metric-annotations-allowlist"),
    f("kube_namespace_status_phase", Unit::Count, &["namespace", "phase"]),
    f("kube_pod_info", Unit::Info, &["namespace", "pod", "uid", "host_ip", "pod_ip", "node", "created_by_kind", "created_by_name", "priority_class", "host_network"]),
    f("kube_pod_labels", Unit::Info, &["namespace", "pod", "uid", "label_*"])
        .when("--metric-labels-allowlist=pods=[...]"),
    f("kube_pod_container_resource_requests", Unit::Resource, RESOURCES)
        .concept(C::ResourceRequests)
        .note("GPUs as resource=\"nvidia_com_gpu\" (sanitised), unit=\"integer\""),
    f("kube_pod_container_resource_limits", Unit::Resource, RESOURCES),
    f("kube_pod_status_phase", Unit::Count, &["namespace", "pod", "uid", "phase"]),
    f("kube_node_status_allocatable", Unit::Resource, NODE_RESOURCES),
    f("kube_node_status_capacity", Unit::Resource, NODE_RESOURCES),
    f("kube_node_labels", Unit::Info, &["node", "label_*"]).when("--metric-labels-allowlist=nodes=[...]"),
];
