//! dcgm-exporter's families: the default counters (`etc/default-counters.csv`) by version, the
//! ones only a custom CSV enables, and the GPU label set (`docs/SOURCES.md` §dcgm). Versions are
//! the DCGM part of the image tag (`4.5.3-4.8.2` → 4.5.3).
//!
//! Labels: `gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`, `Hostname` (renamed `hostname` on
//! main after 4.5.3, PR #655), `DCGM_FI_DRIVER_VERSION`, MIG `GPU_I_PROFILE`/`GPU_I_ID`, and with
//! pod mapping `container`/`namespace`/`pod` — which a ServiceMonitor without `honorLabels`
//! renames to `exported_*`, so in Prometheus `pod`/`namespace` are the exporter's own.

use super::model::{Exporter, Family, Kind, Unit, Version};
use crate::Concept as C;

/// Label names of every GPU series.
pub const GPU_LABELS: &[&str] = &[
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
    "err_code",
    "err_msg",
];

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
