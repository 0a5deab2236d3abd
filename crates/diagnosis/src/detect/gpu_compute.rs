use super::memory_bandwidth::memory_bound;
use super::{BUSY_HIGH, Bottleneck, Context, Detector, Finding, Severity, TENSOR_LOW, finding};
use crate::signal::Concept;

/// High GPU busy time with a sustained queue: the GPU itself is the limit.
pub struct GpuCompute;
impl Detector for GpuCompute {
    fn id(&self) -> &'static str {
        "gpu_compute"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let busy = cx.busy()?;
        if busy.value < BUSY_HIGH || !cx.queue_sustained() || memory_bound(cx) {
            return None;
        }
        // "Busy" by GPU_UTIL is a duty cycle: with tensor activity exported, compute-bound must show there.
        if cx.tensor().is_some_and(|t| t < TENSOR_LOW) {
            return None;
        }
        let (w, share) = cx.waiting()?;
        let mut ev = vec![
            cx.level_evidence(busy, ">=", BUSY_HIGH),
            cx.evidence(Concept::Waiting, "mean", w, ">=", Some(0.5)),
        ];
        if let Some(t) = cx.tensor() {
            ev.push(cx.evidence(Concept::TensorActive, "mean_nonzero", t, "", None));
        }
        let msg = format!(
            "the GPU is busy {:.0}% of the time and requests wait in {:.0}% of samples: the GPU is the limit",
            busy.value * 100.0,
            share * 100.0
        );
        Some(finding(
            self.id(),
            Severity::Error,
            Some(Bottleneck::GpuCompute),
            0.6 + (busy.value - BUSY_HIGH),
            msg,
            ev,
        ))
    }
}
