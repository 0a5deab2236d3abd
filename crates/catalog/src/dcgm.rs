//! dcgm-exporter's families: the default counters (`etc/default-counters.csv`) by version, the
//! ones only a custom CSV enables, and the GPU label set (`docs/SOURCES.md` §dcgm). Versions are
//! the DCGM part of the image tag (`4.5.3-4.8.2` → 4.5.3).
//!
//! Labels: `gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`, `Hostname` (renamed `hostname` on
//! main after 4.5.3, PR #655), `DCGM_FI_DRIVER_VERSION`, MIG `GPU_I_PROFILE`/`GPU_I_ID`, and with
//! pod mapping `container`/`namespace`/`pod` — which a ServiceMonitor without `honorLabels`
//! renames to `exported_*`, so in Prometheus `pod`/`namespace` are the exporter's own.
//!
//! Every field line of both shipped CSVs is catalogued (the commented-out ones as needing a
//! custom counters CSV), and so are the exporter's own `DCGM_EXP_*` counters, with the labels
//! their collectors add, and `DCGM_FI_DEV_FB_TOTAL`, a DCGM field no shipped CSV lists
//! (`docs/SOURCES.md` §dcgm-fields). CSV `label` lines are label names, not families.

use super::model::{Exporter, Family, Kind, Unit, Version};
use crate::Concept as C;

/// The labels of a GPU's series (its identity, MIG instance, and with pod mapping the pod's),
/// then `extra`: what one collector adds.
macro_rules! gpu_labels {
    ($($extra:literal),*) => {
        &[
            "gpu",
            "UUID",
            "pci_bus_id",
            "device",
            "modelName",
            "Hostname",
            "DCGM_FI_DRIVER_VERSION",
            "GPU_I_PROFILE",
            "GPU_I_ID",
            "container",
            "namespace",
            "pod",
            "pod_uid",
            "vgpu",
            $($extra),*
        ]
    };
}

/// Label names of every GPU series.
pub const GPU_LABELS: &[&str] = gpu_labels!("err_code", "err_msg");

const fn f(name: &'static str, kind: Kind, unit: Unit) -> Family {
    Family::new(Exporter::DcgmExporter, name, kind, unit, GPU_LABELS)
}
const fn gauge(name: &'static str, unit: Unit) -> Family {
    f(name, Kind::Gauge, unit)
}
const fn counter(name: &'static str, unit: Unit) -> Family {
    f(name, Kind::Counter, unit)
}

/// PROF fields joined the default counters in 4.0.0 (before, only `dcp-metrics-included.csv`).
const PROF_DEFAULT: Version = Version::new(4, 0, 0);
const CUSTOM_CSV: &str =
    "a custom counters CSV (-f / Helm customMetrics); commented out in the default CSV";
/// A DCGM field the exporter accepts in a counters CSV (it resolves names through go-dcgm's field
/// table) though neither shipped CSV lists it, commented or not.
const UNLISTED_FIELD: &str = "a custom counters CSV that lists it (-f / Helm customMetrics); in neither shipped CSV, not even commented out";
/// A DCGM field the default counters CSV does not export, which a custom one may list.
const LISTED_FIELD: &str =
    "a custom counters CSV that lists it (-f / Helm customMetrics); the default CSV does not";
const VIOLATION_NOTE: &str =
    "throttling time, in ns per the CSV help (in us before PR #589); a counter of time, not events";

const fn exp(name: &'static str, labels: &'static [&'static str]) -> Family {
    Family::new(
        Exporter::DcgmExporter,
        name,
        Kind::Counter,
        Unit::Count,
        labels,
    )
}
/// The GPU labels plus what the XID-count collector adds.
const EXP_XID_LABELS: &[&str] = gpu_labels!("window_size_in_ms", "xid");
/// The GPU labels plus what the clock-events collector adds.
const EXP_CLOCK_LABELS: &[&str] = gpu_labels!("window_size_in_ms", "clock_event");
/// The GPU labels plus what the health collector adds.
const EXP_HEALTH_LABELS: &[&str] = gpu_labels!("health_watch", "health_error_code");
/// The GPU labels plus what the P2P-status collector adds.
const EXP_P2P_LABELS: &[&str] = gpu_labels!("peer_gpu", "link_status");

use Unit::{Celsius, Count, Fraction, Megahertz, MiB, Millijoules, Percent, Watts};

/// Every dcgm-exporter family the catalog knows.
pub const FAMILIES: &[Family] = &[
    gauge("DCGM_FI_DEV_SM_CLOCK", Megahertz),
    gauge("DCGM_FI_DEV_MEM_CLOCK", Megahertz),
    gauge("DCGM_FI_DEV_MEMORY_TEMP", Celsius),
    gauge("DCGM_FI_DEV_GPU_TEMP", Celsius),
    gauge("DCGM_FI_DEV_POWER_USAGE", Watts).concept(C::PowerWatts),
    counter("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Millijoules),
    counter("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Count),
    gauge("DCGM_FI_DEV_GPU_UTIL", Percent)
        .concept(C::GpuUtil)
        .note("percent 0..100; not supported on MIG instances (use DCGM_FI_PROF_GR_ENGINE_ACTIVE)"),
    gauge("DCGM_FI_DEV_MEM_COPY_UTIL", Percent).concept(C::MemCopyUtil),
    gauge("DCGM_FI_DEV_ENC_UTIL", Percent),
    gauge("DCGM_FI_DEV_DEC_UTIL", Percent),
    gauge("DCGM_FI_DEV_XID_ERRORS", Count).note("the value of the last XID error, not a count"),
    gauge("DCGM_FI_DEV_FB_FREE", MiB).concept(C::FbFree),
    gauge("DCGM_FI_DEV_FB_USED", MiB).concept(C::FbUsed),
    gauge("DCGM_FI_DEV_FB_RESERVED", MiB)
        .note("left out of the Helm chart's built-in counters list"),
    counter("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", Count),
    gauge("DCGM_FI_DEV_VGPU_LICENSE_STATUS", Count),
    counter("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", Count),
    counter("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", Count),
    gauge("DCGM_FI_DEV_ROW_REMAP_FAILURE", Count),
    gauge("DCGM_FI_PROF_GR_ENGINE_ACTIVE", Fraction)
        .concept(C::GrEngineActive)
        .since(PROF_DEFAULT)
        .when("DCGM profiling (Volta or newer, SYS_ADMIN)")
        .note("a 0..1 ratio, not percent"),
    gauge("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", Fraction)
        .concept(C::TensorActive)
        .since(PROF_DEFAULT)
        .when("DCGM profiling (Volta or newer, SYS_ADMIN)")
        .note("a 0..1 ratio, not percent"),
    gauge("DCGM_FI_PROF_DRAM_ACTIVE", Fraction)
        .concept(C::DramActive)
        .since(PROF_DEFAULT)
        .when("DCGM profiling (Volta or newer, SYS_ADMIN)")
        .note("a 0..1 ratio, not percent"),
    gauge("DCGM_FI_PROF_PCIE_TX_BYTES", Unit::BytesPerSecond)
        .since(PROF_DEFAULT)
        .when("DCGM profiling (Volta or newer, SYS_ADMIN)"),
    gauge("DCGM_FI_PROF_PCIE_RX_BYTES", Unit::BytesPerSecond)
        .since(PROF_DEFAULT)
        .when("DCGM profiling (Volta or newer, SYS_ADMIN)"),
    // dcgm-exporter's own CSV (dcp-metrics-included.csv) declares them gauges; DCGM samples them
    // per second like the PCIe fields. Dynamo's disaggregated-serving dashboard turns them on.
    gauge("DCGM_FI_PROF_NVLINK_TX_BYTES", Unit::BytesPerSecond)
        .when(CUSTOM_CSV)
        .note("bytes per second, already a rate"),
    gauge("DCGM_FI_PROF_NVLINK_RX_BYTES", Unit::BytesPerSecond)
        .when(CUSTOM_CSV)
        .note("bytes per second, already a rate"),
    gauge("DCGM_FI_PROF_SM_ACTIVE", Fraction)
        .concept(C::SmActive)
        .when(CUSTOM_CSV)
        .note("a 0..1 ratio averaged over all SMs"),
    gauge("DCGM_FI_PROF_SM_OCCUPANCY", Fraction).when(CUSTOM_CSV),
    gauge("DCGM_FI_PROF_PIPE_FP64_ACTIVE", Fraction).when(CUSTOM_CSV),
    gauge("DCGM_FI_PROF_PIPE_FP32_ACTIVE", Fraction).when(CUSTOM_CSV),
    gauge("DCGM_FI_PROF_PIPE_FP16_ACTIVE", Fraction).when(CUSTOM_CSV),
    counter("DCGM_FI_DEV_POWER_VIOLATION", Count).when(CUSTOM_CSV),
    counter("DCGM_FI_DEV_THERMAL_VIOLATION", Count).when(CUSTOM_CSV),
    counter("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", Count).when(CUSTOM_CSV),
    counter("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Count).when(CUSTOM_CSV),
    // The rest of the commented-out lines of etc/default-counters.csv and
    // etc/dcp-metrics-included.csv (4.5.3-4.8.2), with the type the CSV gives them.
    counter("DCGM_FI_DEV_SYNC_BOOST_VIOLATION", Count)
        .when(CUSTOM_CSV)
        .note(VIOLATION_NOTE),
    counter("DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", Count)
        .when(CUSTOM_CSV)
        .note(VIOLATION_NOTE),
    counter("DCGM_FI_DEV_LOW_UTIL_VIOLATION", Count)
        .when(CUSTOM_CSV)
        .note(VIOLATION_NOTE),
    counter("DCGM_FI_DEV_RELIABILITY_VIOLATION", Count)
        .when(CUSTOM_CSV)
        .note(VIOLATION_NOTE),
    counter("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", Count)
        .when(CUSTOM_CSV)
        .note("persistent single-bit ECC errors over the GPU's life"),
    counter("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", Count)
        .when(CUSTOM_CSV)
        .note("persistent double-bit ECC errors over the GPU's life"),
    counter("DCGM_FI_DEV_RETIRED_SBE", Count).when(CUSTOM_CSV),
    counter("DCGM_FI_DEV_RETIRED_DBE", Count).when(CUSTOM_CSV),
    counter("DCGM_FI_DEV_RETIRED_PENDING", Count).when(CUSTOM_CSV),
    counter("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", Count).when(CUSTOM_CSV),
    counter("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", Count).when(CUSTOM_CSV),
    counter("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", Count).when(CUSTOM_CSV),
    counter("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", Count).when(CUSTOM_CSV),
    counter("DCGM_FI_DEV_NVLINK_BANDWIDTH_L0", Unit::Bytes)
        .when(CUSTOM_CSV)
        .note("NVLink link 0 only, header and payload bytes"),
    // The exporter's own counters (internal/pkg/counters/const.go), commented out in the default
    // CSV only; each series is a count over the last window_size_in_ms.
    exp("DCGM_EXP_XID_ERRORS_COUNT", EXP_XID_LABELS)
        .since(Version::new(3, 3, 5))
        .when(CUSTOM_CSV)
        .note("XID errors per xid code within the last window (-x, default 300000 ms), not a lifetime total"),
    exp("DCGM_EXP_CLOCK_EVENTS_COUNT", EXP_CLOCK_LABELS)
        .since(Version::new(3, 3, 5))
        .when(CUSTOM_CSV)
        .note("clock events (throttle reasons, clock_event=power_cap|hw_slowdown|sw_thermal|…) within the last window, not a lifetime total"),
    exp("DCGM_EXP_GPU_HEALTH_STATUS", EXP_HEALTH_LABELS)
        .since(Version::new(4, 0, 0))
        .when(CUSTOM_CSV)
        .note("declared a counter, but the value is DCGM's health result per incident (health_watch, health_error_code)"),
    exp("DCGM_EXP_P2P_STATUS", EXP_P2P_LABELS)
        .since(Version::new(4, 3, 1))
        .when(CUSTOM_CSV)
        .note("declared a counter, but the value is a link status code per peer_gpu (0 = OK; link_status names it)"),
    // A DCGM field (dcgm_fields.h, field 250) no shipped CSV lists: total = FREE + USED + RESERVED
    // on default deployments.
    gauge("DCGM_FI_DEV_FB_TOTAL", MiB)
        .when(UNLISTED_FIELD)
        .note("absent with the shipped CSVs and the Helm chart's list: ratios over it come out empty; DCGM_FI_DEV_FB_FREE + DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_RESERVED gives the total"),
    // DCGM fields real dashboards and rules read that the default CSV does not list: present
    // only where a custom counters CSV adds them (Canonical's hardware-observer charm ships one
    // with the fan speed).
    gauge("DCGM_FI_DEV_FAN_SPEED", Percent)
        .when(LISTED_FIELD)
        .note("fan speed in percent of its maximum; DCGM reports none for passively cooled data-centre GPUs"),
    gauge("DCGM_FI_DEV_POWER_MGMT_LIMIT", Watts)
        .when(LISTED_FIELD)
        .note("the power limit the driver enforces now, in watts"),
];

/// The exporter's label set at `version`: `Hostname` until 4.5.x, `hostname` after (main).
pub fn labels_at(version: Version) -> Vec<&'static str> {
    let renamed = version > Exporter::DcgmExporter.newest();
    GPU_LABELS
        .iter()
        .map(|l| {
            if *l == "Hostname" && renamed {
                "hostname"
            } else {
                l
            }
        })
        .collect()
}

/// Values at or above these mean "no value" (DCGM blank sentinels), never a reading.
pub const BLANK_INT64: f64 = 9_223_372_036_854_775_792.0;
pub const BLANK_FP64: f64 = 140_737_488_355_328.0;

/// Whether a dcgm value is a blank sentinel.
pub fn is_blank(v: f64) -> bool {
    v >= BLANK_FP64
}
