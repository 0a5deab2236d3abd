//! dcgm-exporter's `/metrics` page, rendered from a [`DcgmReading`].
//!
//! Field order and HELP texts follow `etc/default-counters.csv` of dcgm-exporter 4.5; labels follow
//! its GPU template (`gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`, `Hostname`, then the CSV
//! `label` fields such as `DCGM_FI_DRIVER_VERSION`); integer fields print `%d`, doubles `%f`
//! (`docs/SOURCES.md` §dcgm).

use crate::dcgm::DcgmReading;
use promtext::MetricType;
use promtext::write::{FloatStyle, Writer};

/// Identity of the simulated GPU, fixed for the life of the exporter.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuIdentity {
    pub uuid: String,
    pub model_name: String,
    pub hostname: String,
    pub driver_version: String,
    pub has_nvlink: bool,
    /// The pod holding the GPU, as dcgm-exporter `--kubernetes` maps it through the kubelet's
    /// PodResources API: `(container, namespace, pod)`, appended after the GPU labels.
    pub pod: Option<[String; 3]>,
}

enum V {
    I(i64),
    F(f64),
}

/// One field: name, type, HELP text, and its value in a collection.
type Field = (
    &'static str,
    MetricType,
    &'static str,
    fn(&DcgmReading) -> V,
);

/// The CSV's fields before NVLink: clocks, temperature, power, PCIe, utilization, errors, memory.
const DEVICE_FIELDS: [Field; 15] = [
    (
        "DCGM_FI_DEV_SM_CLOCK",
        MetricType::Gauge,
        "SM clock frequency (in MHz).",
        |r| V::I(r.sm_clock_mhz),
    ),
    (
        "DCGM_FI_DEV_MEM_CLOCK",
        MetricType::Gauge,
        "Memory clock frequency (in MHz).",
        |r| V::I(r.mem_clock_mhz),
    ),
    (
        "DCGM_FI_DEV_MEMORY_TEMP",
        MetricType::Gauge,
        "Memory temperature (in C).",
        |r| V::I(r.memory_temp_c),
    ),
    (
        "DCGM_FI_DEV_GPU_TEMP",
        MetricType::Gauge,
        "GPU temperature (in C).",
        |r| V::I(r.gpu_temp_c),
    ),
    (
        "DCGM_FI_DEV_POWER_USAGE",
        MetricType::Gauge,
        "Power draw (in W).",
        |r| V::F(r.power_w),
    ),
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        MetricType::Counter,
        "Total energy consumption since boot (in mJ).",
        |r| V::I(r.energy_mj),
    ),
    (
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        MetricType::Counter,
        "Total number of PCIe retries.",
        |_| V::I(0),
    ),
    (
        "DCGM_FI_DEV_GPU_UTIL",
        MetricType::Gauge,
        "GPU utilization (in %).",
        |r| V::I(r.gpu_util),
    ),
    (
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        MetricType::Gauge,
        "Memory utilization (in %).",
        |r| V::I(r.mem_copy_util),
    ),
    (
        "DCGM_FI_DEV_ENC_UTIL",
        MetricType::Gauge,
        "Encoder utilization (in %).",
        |_| V::I(0),
    ),
    (
        "DCGM_FI_DEV_DEC_UTIL",
        MetricType::Gauge,
        "Decoder utilization (in %).",
        |_| V::I(0),
    ),
    (
        "DCGM_FI_DEV_XID_ERRORS",
        MetricType::Gauge,
        "Value of the last XID error encountered.",
        |_| V::I(0),
    ),
    (
        "DCGM_FI_DEV_FB_FREE",
        MetricType::Gauge,
        "Framebuffer memory free (in MiB).",
        |r| V::I(r.fb_free_mib),
    ),
    (
        "DCGM_FI_DEV_FB_USED",
        MetricType::Gauge,
        "Framebuffer memory used (in MiB).",
        |r| V::I(r.fb_used_mib),
    ),
    (
        "DCGM_FI_DEV_FB_RESERVED",
        MetricType::Gauge,
        "Framebuffer memory reserved (in MiB).",
        |r| V::I(r.fb_reserved_mib),
    ),
];

/// Exported only on GPUs with NVLink.
const NVLINK_FIELD: Field = (
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    MetricType::Counter,
    "Total number of NVLink bandwidth counters for all lanes.",
    |_| V::I(0),
);

/// The CSV's fields after NVLink: vGPU license, remapped rows, then the DCP (profiling) ratios.
const LICENSE_AND_PROFILING_FIELDS: [Field; 9] = [
    (
        "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
        MetricType::Gauge,
        "vGPU License status",
        |_| V::I(0),
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        MetricType::Counter,
        "Number of remapped rows for uncorrectable errors",
        |_| V::I(0),
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        MetricType::Counter,
        "Number of remapped rows for correctable errors",
        |_| V::I(0),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        MetricType::Gauge,
        "Whether remapping of rows has failed",
        |_| V::I(0),
    ),
    (
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        MetricType::Gauge,
        "Ratio of time the graphics engine is active.",
        |r| V::F(r.gr_engine_active),
    ),
    (
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        MetricType::Gauge,
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        |r| V::F(r.pipe_tensor_active),
    ),
    (
        "DCGM_FI_PROF_DRAM_ACTIVE",
        MetricType::Gauge,
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        |r| V::F(r.dram_active),
    ),
    (
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        MetricType::Gauge,
        "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.",
        |r| V::F(r.pcie_tx_bytes),
    ),
    (
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        MetricType::Gauge,
        "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.",
        |r| V::F(r.pcie_rx_bytes),
    ),
];

/// Renders one collection.
pub fn render(id: &GpuIdentity, r: &DcgmReading) -> String {
    let labels = gpu_labels(id);
    let nvlink = id.has_nvlink.then_some(&NVLINK_FIELD);
    let fields = DEVICE_FIELDS
        .iter()
        .chain(nvlink)
        .chain(&LICENSE_AND_PROFILING_FIELDS);
    let mut out = String::with_capacity(8 * 1024);
    let mut w = Writer::new(&mut out, FloatStyle::GoFixed6);
    for (name, ty, help, value) in fields {
        w.family(name, help, *ty);
        match value(r) {
            V::I(i) => w.sample_int(name, &labels, i),
            V::F(f) => w.sample(name, &labels, f),
        }
    }
    out
}

/// The GPU template's labels, then the pod's when the exporter maps GPUs to pods.
fn gpu_labels(id: &GpuIdentity) -> Vec<(&str, &str)> {
    let mut labels: Vec<(&str, &str)> = vec![
        ("gpu", "0"),
        ("UUID", &id.uuid),
        ("pci_bus_id", "00000000:01:00.0"),
        ("device", "nvidia0"),
        ("modelName", &id.model_name),
        ("Hostname", &id.hostname),
        ("DCGM_FI_DRIVER_VERSION", &id.driver_version),
    ];
    if let Some([container, namespace, pod]) = &id.pod {
        labels.extend([
            ("container", container.as_str()),
            ("namespace", namespace.as_str()),
            ("pod", pod.as_str()),
        ]);
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dcgm::DcgmState;
    use crate::engine::Engine;
    use crate::preset::preset;

    #[test]
    fn renders_dcgm_exporter_lines() {
        let e = Engine::new(&preset("l4-qwen2.5-3b").unwrap(), 1).unwrap();
        let r = DcgmState::new(&e).collect(&e, 10.0, 5.0);
        let id = GpuIdentity {
            uuid: "GPU-00000000-1111-2222-3333-444444444444".into(),
            model_name: "NVIDIA L4".into(),
            hostname: "node-a".into(),
            driver_version: "580.126.09".into(),
            has_nvlink: false,
            pod: None,
        };
        let text = render(&id, &r);
        assert!(text.contains("# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n# TYPE DCGM_FI_DEV_FB_USED gauge\n"));
        assert!(text.contains(
            "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-00000000-1111-2222-3333-444444444444\",pci_bus_id=\"00000000:01:00.0\",device=\"nvidia0\",modelName=\"NVIDIA L4\",Hostname=\"node-a\",DCGM_FI_DRIVER_VERSION=\"580.126.09\"} 9194\n"
        ), "{text}");
        assert!(
            text.contains("} 40.000000\n"),
            "idle power with %f formatting"
        );
        assert!(
            text.contains("DCGM_FI_DEV_GPU_UTIL{") && text.contains("DCGM_FI_PROF_DRAM_ACTIVE{")
        );
        assert!(!text.contains("NVLINK"));
    }
}
