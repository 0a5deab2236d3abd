//! kube-state-metrics families llmscope reads for GPU attribution (v2.20.0;
//! `docs/SOURCES.md` §ksm). `kube_namespace_labels` carries `label_<key>`
//! labels, and only for keys in `--metric-labels-allowlist` (nothing at all without one, since
//! v2.10.0).
//!
//! Besides those, the pod, container, node, namespace and workload (Deployment, ReplicaSet,
//! StatefulSet, DaemonSet, Job) families of `docs/metrics/**` at v2.20.0 (`docs/SOURCES.md`
//! §ksm-families), so the linter knows the names dashboards join GPU series with. A family
//! documented only from a later 2.x tag carries that tag as `since`; the others were documented
//! by v2.0.0 already. Labels are the documented ones (`uid` on every pod series).

use super::model::{Exporter, Family, Kind, Unit, Version};
use crate::Concept as C;

const fn f(name: &'static str, unit: Unit, labels: &'static [&'static str]) -> Family {
    Family::new(Exporter::KubeStateMetrics, name, Kind::Gauge, unit, labels)
}
const fn counter(name: &'static str, unit: Unit, labels: &'static [&'static str]) -> Family {
    Family::new(
        Exporter::KubeStateMetrics,
        name,
        Kind::Counter,
        unit,
        labels,
    )
}
const fn v2(minor: u16) -> Version {
    Version::new(2, minor, 0)
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
const POD: &[&str] = &["namespace", "pod", "uid"];
const CONTAINER: &[&str] = &["namespace", "pod", "uid", "container"];
const CONTAINER_REASON: &[&str] = &["namespace", "pod", "uid", "container", "reason"];
const CONTAINER_INFO: &[&str] = &[
    "namespace",
    "pod",
    "uid",
    "container",
    "image",
    "image_id",
    "image_spec",
    "container_id",
];
const INIT_CONTAINER_INFO: &[&str] = &[
    "namespace",
    "pod",
    "uid",
    "container",
    "image",
    "image_id",
    "image_spec",
    "container_id",
    "restart_policy",
];
const POD_PVC: &[&str] = &[
    "namespace",
    "pod",
    "uid",
    "volume",
    "persistentvolumeclaim",
    "ephemeral",
];
const NODE: &[&str] = &["node"];
const DEPLOYMENT: &[&str] = &["namespace", "deployment"];
const REPLICASET: &[&str] = &["namespace", "replicaset"];
const STATEFULSET: &[&str] = &["namespace", "statefulset"];
const DAEMONSET: &[&str] = &["namespace", "daemonset"];
const JOB: &[&str] = &["namespace", "job_name"];
const JOB_CONDITION: &[&str] = &["namespace", "job_name", "condition"];
const OWNER: &[&str] = &[
    "namespace",
    "pod",
    "uid",
    "owner_kind",
    "owner_name",
    "owner_is_controller",
];

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
    // Namespaces (docs/metrics/cluster/namespace-metrics.md).
    f("kube_namespace_created", Unit::Timestamp, &["namespace"]),
    f("kube_namespace_status_condition", Unit::Count, &["namespace", "condition", "status"])
        .note("condition=NamespaceDeletion*Failure, status=true|false|unknown"),
    // Pods (docs/metrics/workload/pod-metrics.md).
    f("kube_pod_annotations", Unit::Info, &["namespace", "pod", "uid", "annotation_*"])
        .since(v2(2))
        .when("--metric-annotations-allowlist=pods=[...]"),
    f("kube_pod_ips", Unit::Info, &["namespace", "pod", "uid", "ip", "ip_family"]).since(v2(5)),
    f("kube_pod_start_time", Unit::Timestamp, POD),
    f("kube_pod_completion_time", Unit::Timestamp, POD),
    f("kube_pod_owner", Unit::Info, OWNER)
        .note("owner_kind=ReplicaSet for a Deployment's pods: join kube_replicaset_owner to reach the Deployment"),
    f("kube_pod_nodeselectors", Unit::Info, &["namespace", "pod", "uid", "nodeselector_*"])
        .since(Version::new(2, 4, 2))
        .when("--metric-opt-in-list=kube_pod_nodeselectors"),
    f("kube_pod_status_qos_class", Unit::Count, &["namespace", "pod", "uid", "qos_class"]).since(v2(8)),
    f("kube_pod_status_ready", Unit::Count, &["namespace", "pod", "uid", "condition"])
        .note("one series per condition=true|false|unknown, the current one 1"),
    f("kube_pod_status_scheduled", Unit::Count, &["namespace", "pod", "uid", "condition"]),
    f("kube_pod_status_reason", Unit::Count, &["namespace", "pod", "uid", "reason"])
        .note("only the reason that is set is emitted (Evicted, NodeLost, Shutdown, …, Other)"),
    f("kube_pod_status_disruption_reason", Unit::Count, &["namespace", "pod", "uid", "reason"])
        .since(v2(20))
        .note("only while a DisruptionTarget condition is present"),
    f("kube_pod_status_scheduled_time", Unit::Timestamp, POD),
    f("kube_pod_status_unschedulable", Unit::Count, POD),
    f("kube_pod_status_unscheduled_time", Unit::Timestamp, POD).since(v2(17)),
    f("kube_pod_status_initialized_time", Unit::Timestamp, POD).since(v2(10)),
    f("kube_pod_status_ready_time", Unit::Timestamp, POD).since(v2(8)),
    f("kube_pod_status_container_ready_time", Unit::Timestamp, POD).since(v2(8)),
    f("kube_pod_created", Unit::Timestamp, POD),
    f("kube_pod_deletion_timestamp", Unit::Timestamp, POD),
    f("kube_pod_restart_policy", Unit::Info, &["namespace", "pod", "uid", "type"]),
    f("kube_pod_overhead_cpu_cores", Unit::Count, POD).note("CPU cores"),
    f("kube_pod_overhead_memory_bytes", Unit::Bytes, POD),
    f("kube_pod_runtimeclass_name_info", Unit::Info, POD),
    f("kube_pod_spec_volumes_persistentvolumeclaims_info", Unit::Info, POD_PVC),
    f("kube_pod_spec_volumes_persistentvolumeclaims_readonly", Unit::Count, POD_PVC),
    f(
        "kube_pod_tolerations",
        Unit::Info,
        &["namespace", "pod", "uid", "key", "operator", "value", "effect", "toleration_seconds"],
    )
    .since(v2(6)),
    f("kube_pod_service_account", Unit::Info, &["namespace", "pod", "uid", "service_account"]).since(v2(10)),
    f("kube_pod_scheduler", Unit::Info, &["namespace", "pod", "uid", "name"]).since(v2(11)),
    f(
        "kube_pod_resourceclaim_info",
        Unit::Info,
        &["namespace", "pod", "uid", "claim_name", "resourceclaim_name", "resourceclaim_template_name"],
    )
    .since(v2(20)),
    // Containers of pods.
    f("kube_pod_container_info", Unit::Info, CONTAINER_INFO),
    f("kube_pod_container_status_waiting", Unit::Count, CONTAINER),
    f("kube_pod_container_status_waiting_reason", Unit::Count, CONTAINER_REASON)
        .note("only while waiting: reason=CrashLoopBackOff|ImagePullBackOff|ContainerCreating|…"),
    f("kube_pod_container_status_running", Unit::Count, CONTAINER),
    f("kube_pod_container_state_started", Unit::Timestamp, CONTAINER),
    f("kube_pod_container_status_terminated", Unit::Count, CONTAINER),
    f("kube_pod_container_status_terminated_reason", Unit::Count, CONTAINER_REASON),
    f("kube_pod_container_status_last_terminated_reason", Unit::Count, CONTAINER_REASON)
        .note("reason=OOMKilled|Error|Completed|…: why the previous run ended"),
    f("kube_pod_container_status_last_terminated_exitcode", Unit::Count, CONTAINER)
        .since(v2(7))
        .note("the exit code itself, not a count"),
    f("kube_pod_container_status_last_terminated_timestamp", Unit::Timestamp, CONTAINER).since(v2(12)),
    f("kube_pod_container_status_ready", Unit::Count, CONTAINER),
    counter("kube_pod_container_status_restarts_total", Unit::Count, CONTAINER)
        .note("use increase()/rate(): container restarts since the pod was created"),
    f("kube_pod_init_container_info", Unit::Info, INIT_CONTAINER_INFO),
    f("kube_pod_init_container_state_started", Unit::Timestamp, CONTAINER).since(v2(20)),
    f("kube_pod_init_container_status_waiting", Unit::Count, CONTAINER),
    f("kube_pod_init_container_status_waiting_reason", Unit::Count, CONTAINER_REASON),
    f("kube_pod_init_container_status_running", Unit::Count, CONTAINER),
    f("kube_pod_init_container_status_terminated", Unit::Count, CONTAINER),
    f("kube_pod_init_container_status_terminated_reason", Unit::Count, CONTAINER_REASON),
    f("kube_pod_init_container_status_last_terminated_reason", Unit::Count, CONTAINER_REASON),
    f("kube_pod_init_container_status_last_terminated_exitcode", Unit::Count, CONTAINER)
        .since(v2(20))
        .note("the exit code itself, not a count"),
    f("kube_pod_init_container_status_last_terminated_timestamp", Unit::Timestamp, CONTAINER).since(v2(20)),
    f("kube_pod_init_container_status_ready", Unit::Count, CONTAINER),
    counter("kube_pod_init_container_status_restarts_total", Unit::Count, CONTAINER),
    f("kube_pod_init_container_resource_requests", Unit::Resource, RESOURCES),
    f("kube_pod_init_container_resource_limits", Unit::Resource, RESOURCES),
    // Nodes (docs/metrics/cluster/node-metrics.md).
    f("kube_node_annotations", Unit::Info, &["node", "annotation_*"])
        .since(v2(2))
        .when("--metric-annotations-allowlist=nodes=[...]"),
    f(
        "kube_node_info",
        Unit::Info,
        &[
            "node",
            "kernel_version",
            "os_image",
            "container_runtime_version",
            "kubelet_version",
            "kubeproxy_version",
            "pod_cidr",
            "provider_id",
            "system_uuid",
            "internal_ip",
        ],
    ),
    f("kube_node_role", Unit::Info, &["node", "role"]),
    f("kube_node_spec_pod_cidrs", Unit::Info, &["node", "pod_cidr"]).since(v2(20)),
    f("kube_node_spec_unschedulable", Unit::Count, NODE),
    f("kube_node_spec_taint", Unit::Info, &["node", "key", "value", "effect"]),
    f("kube_node_status_addresses", Unit::Info, &["node", "type", "address"]).since(v2(11)),
    f("kube_node_status_condition", Unit::Count, &["node", "condition", "status"])
        .note("one series per condition (Ready, MemoryPressure, …) and status=true|false|unknown"),
    f("kube_node_created", Unit::Timestamp, NODE),
    f("kube_node_deletion_timestamp", Unit::Timestamp, NODE).since(v2(7)),
    // Deployments (docs/metrics/workload/deployment-metrics.md).
    f("kube_deployment_annotations", Unit::Info, &["namespace", "deployment", "annotation_*"])
        .since(v2(2))
        .when("--metric-annotations-allowlist=deployments=[...]"),
    f("kube_deployment_labels", Unit::Info, &["namespace", "deployment", "label_*"])
        .when("--metric-labels-allowlist=deployments=[...]"),
    f("kube_deployment_status_replicas", Unit::Count, DEPLOYMENT),
    f("kube_deployment_status_replicas_ready", Unit::Count, DEPLOYMENT).since(v2(2)),
    f("kube_deployment_status_replicas_available", Unit::Count, DEPLOYMENT),
    f("kube_deployment_status_replicas_unavailable", Unit::Count, DEPLOYMENT),
    f("kube_deployment_status_replicas_updated", Unit::Count, DEPLOYMENT),
    f("kube_deployment_status_terminating_replicas", Unit::Count, DEPLOYMENT).since(v2(18)),
    f("kube_deployment_status_observed_generation", Unit::Count, DEPLOYMENT),
    f(
        "kube_deployment_status_condition",
        Unit::Count,
        &["namespace", "deployment", "reason", "condition", "status"],
    ),
    f("kube_deployment_spec_replicas", Unit::Count, DEPLOYMENT),
    f("kube_deployment_spec_paused", Unit::Count, DEPLOYMENT),
    f("kube_deployment_spec_strategy_rollingupdate_max_unavailable", Unit::Count, DEPLOYMENT),
    f("kube_deployment_spec_strategy_rollingupdate_max_surge", Unit::Count, DEPLOYMENT),
    f("kube_deployment_metadata_generation", Unit::Count, DEPLOYMENT),
    f("kube_deployment_created", Unit::Timestamp, DEPLOYMENT),
    f("kube_deployment_deletion_timestamp", Unit::Timestamp, DEPLOYMENT).since(v2(17)),
    f("kube_deployment_owner", Unit::Info, &["namespace", "deployment", "owner_kind", "owner_name"]).since(v2(18)),
    // ReplicaSets (docs/metrics/workload/replicaset-metrics.md).
    f("kube_replicaset_annotations", Unit::Info, &["namespace", "replicaset", "annotation_*"])
        .since(v2(2))
        .when("--metric-annotations-allowlist=replicasets=[...]"),
    f("kube_replicaset_labels", Unit::Info, &["namespace", "replicaset", "label_*"])
        .when("--metric-labels-allowlist=replicasets=[...]"),
    f("kube_replicaset_status_replicas", Unit::Count, REPLICASET),
    f("kube_replicaset_status_fully_labeled_replicas", Unit::Count, REPLICASET),
    f("kube_replicaset_status_ready_replicas", Unit::Count, REPLICASET),
    f("kube_replicaset_status_terminating_replicas", Unit::Count, REPLICASET).since(v2(18)),
    f("kube_replicaset_status_observed_generation", Unit::Count, REPLICASET),
    f("kube_replicaset_spec_replicas", Unit::Count, REPLICASET),
    f("kube_replicaset_metadata_generation", Unit::Count, REPLICASET),
    f("kube_replicaset_created", Unit::Timestamp, REPLICASET),
    f(
        "kube_replicaset_owner",
        Unit::Info,
        &["namespace", "replicaset", "owner_kind", "owner_name", "owner_is_controller"],
    ),
    // StatefulSets (docs/metrics/workload/statefulset-metrics.md).
    f("kube_statefulset_annotations", Unit::Info, &["namespace", "statefulset", "annotation_*"])
        .since(v2(2))
        .when("--metric-annotations-allowlist=statefulsets=[...]"),
    f("kube_statefulset_labels", Unit::Info, &["namespace", "statefulset", "label_*"])
        .when("--metric-labels-allowlist=statefulsets=[...]"),
    f("kube_statefulset_status_replicas", Unit::Count, STATEFULSET),
    f("kube_statefulset_status_replicas_current", Unit::Count, STATEFULSET),
    f("kube_statefulset_status_replicas_ready", Unit::Count, STATEFULSET),
    f("kube_statefulset_status_replicas_available", Unit::Count, STATEFULSET).since(v2(2)),
    f("kube_statefulset_status_replicas_updated", Unit::Count, STATEFULSET),
    f("kube_statefulset_status_observed_generation", Unit::Count, STATEFULSET),
    f("kube_statefulset_replicas", Unit::Count, STATEFULSET).note("the desired replica count (spec)"),
    f("kube_statefulset_ordinals_start", Unit::Count, STATEFULSET).since(v2(9)),
    f("kube_statefulset_metadata_generation", Unit::Count, STATEFULSET),
    f(
        "kube_statefulset_persistentvolumeclaim_retention_policy",
        Unit::Info,
        &["namespace", "statefulset", "when_deleted", "when_scaled"],
    )
    .since(v2(7)),
    f("kube_statefulset_created", Unit::Timestamp, STATEFULSET),
    f("kube_statefulset_status_current_revision", Unit::Info, &["namespace", "statefulset", "revision"]),
    f("kube_statefulset_status_update_revision", Unit::Info, &["namespace", "statefulset", "revision"]),
    f("kube_statefulset_deletion_timestamp", Unit::Timestamp, STATEFULSET).since(v2(17)),
    // DaemonSets (docs/metrics/workload/daemonset-metrics.md).
    f("kube_daemonset_annotations", Unit::Info, &["namespace", "daemonset", "annotation_*"])
        .since(v2(2))
        .when("--metric-annotations-allowlist=daemonsets=[...]"),
    f("kube_daemonset_labels", Unit::Info, &["namespace", "daemonset", "label_*"])
        .when("--metric-labels-allowlist=daemonsets=[...]"),
    f("kube_daemonset_created", Unit::Timestamp, DAEMONSET),
    f("kube_daemonset_status_current_number_scheduled", Unit::Count, DAEMONSET),
    f("kube_daemonset_status_desired_number_scheduled", Unit::Count, DAEMONSET),
    f("kube_daemonset_status_number_available", Unit::Count, DAEMONSET),
    f("kube_daemonset_status_number_misscheduled", Unit::Count, DAEMONSET),
    f("kube_daemonset_status_number_ready", Unit::Count, DAEMONSET),
    f("kube_daemonset_status_number_unavailable", Unit::Count, DAEMONSET),
    f("kube_daemonset_status_observed_generation", Unit::Count, DAEMONSET),
    f("kube_daemonset_status_updated_number_scheduled", Unit::Count, DAEMONSET),
    f("kube_daemonset_metadata_generation", Unit::Count, DAEMONSET),
    f("kube_daemonset_deletion_timestamp", Unit::Timestamp, DAEMONSET).since(v2(17)),
    // Jobs (docs/metrics/workload/job-metrics.md): the label is job_name, not job.
    f("kube_job_annotations", Unit::Info, &["namespace", "job_name", "annotation_*"])
        .since(v2(2))
        .when("--metric-annotations-allowlist=jobs=[...]"),
    f("kube_job_labels", Unit::Info, &["namespace", "job_name", "label_*"])
        .when("--metric-labels-allowlist=jobs=[...]"),
    f("kube_job_info", Unit::Info, JOB),
    f(
        "kube_job_owner",
        Unit::Info,
        &["namespace", "job_name", "owner_kind", "owner_name", "owner_is_controller"],
    ),
    f("kube_job_spec_parallelism", Unit::Count, JOB),
    f("kube_job_spec_completions", Unit::Count, JOB),
    f("kube_job_spec_active_deadline_seconds", Unit::Seconds, JOB),
    f("kube_job_status_active", Unit::Count, JOB),
    f("kube_job_status_succeeded", Unit::Count, JOB),
    f("kube_job_status_failed", Unit::Count, &["namespace", "job_name", "reason"]),
    f("kube_job_status_start_time", Unit::Timestamp, JOB),
    f("kube_job_status_completion_time", Unit::Timestamp, JOB),
    f("kube_job_complete", Unit::Count, JOB_CONDITION),
    f("kube_job_failed", Unit::Count, JOB_CONDITION),
    f("kube_job_created", Unit::Timestamp, JOB),
    f("kube_job_status_suspended", Unit::Count, JOB).since(v2(14)),
    f("kube_job_status_ready", Unit::Count, JOB).since(v2(18)),
];
