//! Kueue's families (v0.19.2 `pkg/metrics/metrics.go`, each with the release that added it) and
//! the gates that switch them on (`docs/SOURCES.md` §kueue). Every metric but
//! `kueue_build_info` has `replica_role` since v0.16.

use super::model::{Exporter, Family, Kind, Unit, Version};
use crate::Concept as C;

const fn v(minor: u16) -> Version {
    Version::new(0, minor, 0)
}
const fn f(name: &'static str, kind: Kind, unit: Unit, labels: &'static [&'static str]) -> Family {
    Family::new(Exporter::Kueue, name, kind, unit, labels)
}

const CQ_RES: &[&str] = &[
    "cohort",
    "cluster_queue",
    "flavor",
    "resource",
    "replica_role",
];
const LQ: &[&str] = &["name", "namespace", "replica_role"];
const LQ_PC: &[&str] = &["name", "namespace", "priority_class", "replica_role"];
const LQ_RES: &[&str] = &["name", "namespace", "flavor", "resource", "replica_role"];
const CQ_PC: &[&str] = &["cluster_queue", "priority_class", "replica_role"];
const CQ: &[&str] = &["cluster_queue", "replica_role"];
const CQ_RESOURCES: &str = "manager config metrics.enableClusterQueueResources: true";
const LQ_GATE: &str =
    "feature gate LocalQueueMetrics (alpha, off in v0.10–v0.16; beta, on from v0.17)";

use Kind::{Counter, Gauge, Histogram};
use Unit::{Count, Info, Resource, Seconds};

/// Every Kueue family the catalog knows.
pub const FAMILIES: &[Family] = &[
    f("kueue_admission_attempts_total", Counter, Count, &["result", "replica_role"]).since(v(2)),
    f("kueue_admission_attempt_duration_seconds", Histogram, Seconds, &["result", "replica_role"]).since(v(2)),
    f("kueue_pending_workloads", Gauge, Count, &["cluster_queue", "status", "replica_role"])
        .concept(C::PendingWorkloads)
        .since(v(2)),
    f("kueue_admitted_workloads_total", Counter, Count, CQ_PC).since(v(2)),
    f("kueue_admission_wait_time_seconds", Histogram, Seconds, CQ_PC).since(v(2)),
    f("kueue_admitted_active_workloads", Gauge, Count, CQ).since(v(2)),
    f("kueue_cluster_queue_status", Gauge, Count, &["cluster_queue", "status", "replica_role"]).since(v(2)),
    f("kueue_reserving_active_workloads", Gauge, Count, CQ).since(v(5)),
    f("kueue_cluster_queue_resource_reservation", Gauge, Resource, CQ_RES)
        .concept(C::QuotaReserved)
        .since(v(5))
        .when(CQ_RESOURCES)
        .note("resource=\"nvidia.com/gpu\" (raw Kubernetes name); GPUs as a count"),
    f("kueue_cluster_queue_resource_usage", Gauge, Resource, CQ_RES).since(v(5)).when(CQ_RESOURCES),
    f("kueue_cluster_queue_nominal_quota", Gauge, Resource, CQ_RES)
        .concept(C::QuotaNominal)
        .since(v(5))
        .when(CQ_RESOURCES),
    f("kueue_cluster_queue_borrowing_limit", Gauge, Resource, CQ_RES)
        .since(v(5))
        .when(CQ_RESOURCES)
        .note("+Inf when unset"),
    f("kueue_cluster_queue_lending_limit", Gauge, Resource, CQ_RES)
        .since(v(6))
        .when(CQ_RESOURCES)
        .note("+Inf when unset"),
    f("kueue_cluster_queue_weighted_share", Gauge, Count, &["cluster_queue", "cohort", "replica_role"])
        .since(v(7))
        .when(CQ_RESOURCES),
    f("kueue_quota_reserved_workloads_total", Counter, Count, CQ_PC)
        .since(v(7))
        .note("counts workloads, not resources"),
    f("kueue_quota_reserved_wait_time_seconds", Histogram, Seconds, CQ_PC).since(v(7)),
    f("kueue_admission_checks_wait_time_seconds", Histogram, Seconds, CQ_PC).since(v(7)),
    f("kueue_evicted_workloads_total", Counter, Count, &["cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role"]).since(v(7)),
    f("kueue_preempted_workloads_total", Counter, Count, &["preempting_cluster_queue", "reason", "replica_role"]).since(v(8)),
    f("kueue_admission_cycle_preemption_skips", Gauge, Count, CQ).since(v(9)),
    f("kueue_local_queue_pending_workloads", Gauge, Count, &["name", "namespace", "status", "replica_role"])
        .since(v(10))
        .when(LQ_GATE),
    f("kueue_local_queue_admitted_workloads_total", Counter, Count, LQ_PC).since(v(10)).when(LQ_GATE),
    f("kueue_local_queue_quota_reserved_workloads_total", Counter, Count, LQ_PC).since(v(10)).when(LQ_GATE),
    f("kueue_local_queue_evicted_workloads_total", Counter, Count, &["name", "namespace", "reason", "underlying_cause", "priority_class", "replica_role"]).since(v(10)).when(LQ_GATE),
    f("kueue_local_queue_admission_wait_time_seconds", Histogram, Seconds, LQ_PC).since(v(10)).when(LQ_GATE),
    f("kueue_local_queue_quota_reserved_wait_time_seconds", Histogram, Seconds, LQ_PC).since(v(10)).when(LQ_GATE),
    f("kueue_local_queue_admission_checks_wait_time_seconds", Histogram, Seconds, LQ_PC).since(v(10)).when(LQ_GATE),
    f("kueue_local_queue_reserving_active_workloads", Gauge, Count, LQ).since(v(10)).when(LQ_GATE),
    f("kueue_local_queue_admitted_active_workloads", Gauge, Count, LQ).since(v(10)).when(LQ_GATE),
    f("kueue_local_queue_resource_reservation", Gauge, Resource, LQ_RES)
        .concept(C::QuotaReserved)
        .since(v(10))
        .when(LQ_GATE)
        .note("per team namespace; behind a ServiceMonitor without honorLabels the label is exported_namespace"),
    f("kueue_local_queue_resource_usage", Gauge, Resource, LQ_RES).since(v(10)).when(LQ_GATE),
    f("kueue_local_queue_status", Gauge, Count, &["name", "namespace", "active", "replica_role"]).since(v(10)).when(LQ_GATE),
    f("kueue_cohort_weighted_share", Gauge, Count, &["cohort", "replica_role"]).since(v(11)),
    f("kueue_evicted_workloads_once_total", Counter, Count, &["cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role"]).since(v(12)),
    f("kueue_ready_wait_time_seconds", Histogram, Seconds, CQ_PC).since(v(12)).when("waitForPodsReady"),
    f("kueue_admitted_until_ready_wait_time_seconds", Histogram, Seconds, CQ_PC).since(v(12)).when("waitForPodsReady"),
    f("kueue_build_info", Gauge, Info, &["git_version", "git_commit", "build_date", "go_version", "compiler", "platform"]).since(v(13)),
    f("kueue_pods_ready_to_evicted_time_seconds", Histogram, Seconds, &["cluster_queue", "reason", "underlying_cause", "replica_role"]).since(v(13)),
    f("kueue_replaced_workload_slices_total", Counter, Count, CQ).since(v(13)),
    f("kueue_finished_workloads", Gauge, Count, CQ).since(v(16)),
    f("kueue_finished_workloads_total", Counter, Count, CQ_PC).since(v(16)),
    f("kueue_local_queue_finished_workloads", Gauge, Count, LQ).since(v(16)).when(LQ_GATE),
    f("kueue_local_queue_finished_workloads_total", Counter, Count, LQ_PC).since(v(16)).when(LQ_GATE),
    f("kueue_cohort_subtree_quota", Gauge, Resource, &["cohort", "flavor", "resource", "replica_role"]).since(v(17)),
    f("kueue_cohort_subtree_resource_reservations", Gauge, Resource, &["cohort", "flavor", "resource", "replica_role"]).since(v(17)),
    f("kueue_cohort_subtree_admitted_workloads_total", Counter, Count, &["cohort", "priority_class", "replica_role"]).since(v(17)),
    f("kueue_cohort_subtree_admitted_active_workloads", Gauge, Count, &["cohort", "replica_role"]).since(v(17)),
    f("kueue_cluster_queue_info", Gauge, Info, &["cluster_queue", "parent_cohort", "root_cohort", "replica_role"]).since(v(18)),
    f("kueue_cohort_info", Gauge, Info, &["cohort", "parent_cohort", "root_cohort", "replica_role"]).since(v(18)),
    f("kueue_cluster_queue_resource_pending", Gauge, Resource, &["cluster_queue", "resource", "replica_role"]).since(v(18)).when(CQ_RESOURCES),
    f("kueue_workload_creation_latency_seconds", Histogram, Seconds, &["job_kind", "replica_role"]).since(v(18)),
    f("kueue_workload_eviction_latency_seconds", Histogram, Seconds, &["cluster_queue", "reason", "replica_role"]).since(v(18)),
    f("kueue_unadmitted_workloads", Gauge, Count, &["cluster_queue", "reason", "underlying_cause", "replica_role"]).since(v(19)).when("feature gate UnadmittedWorkloadsObservability"),
    f("kueue_local_queue_unadmitted_workloads", Gauge, Count, &["name", "namespace", "cluster_queue", "reason", "underlying_cause", "replica_role"]).since(v(19)).when("feature gate UnadmittedWorkloadsObservability + LocalQueueMetrics"),
    f("kueue_local_queue_admission_fair_sharing_usage", Gauge, Count, &["name", "namespace", "cluster_queue", "replica_role"]).since(v(19)).when("feature gate AdmissionFairSharing"),
    f("kueue_pod_scheduling_gate_removal_seconds", Histogram, Seconds, &["name", "cluster_queue", "is_group", "replica_role"]).since(v(19)),
    f("multikueue_workloads_dispatched_total", Counter, Count, &["cluster_queue", "cluster", "replica_role"]).since(v(19)).when("MultiKueue"),
    f("multikueue_workloads_admitted_total", Counter, Count, &["cluster_queue", "cluster", "replica_role"]).since(v(19)).when("MultiKueue"),
];

/// Label names of a Kueue family at `version`: `replica_role` only since v0.16.
pub fn labels_at(family: &Family, version: Version) -> Vec<&'static str> {
    family
        .labels
        .iter()
        .copied()
        .filter(|l| *l != "replica_role" || version >= v(16))
        .collect()
}
