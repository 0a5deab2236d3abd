use super::{
    BUSY_HIGH, Bottleneck, Context, DRAM_HIGH, Detector, Finding, Severity, TENSOR_LOW, finding,
};
use crate::signal::Concept;

pub(super) fn memory_bound(cx: &Context) -> bool {
    let dram_high = cx.dram().is_some_and(|d| d.value >= DRAM_HIGH);
    dram_high && cx.tensor().is_none_or(|t| t < TENSOR_LOW)
}

/// Busy GPU moving weights and KV, not computing: decode steps bound by memory bandwidth.
pub struct MemoryBandwidth;
impl Detector for MemoryBandwidth {
    fn id(&self) -> &'static str {
        "memory_bandwidth"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let dram = cx.dram()?;
        let busy = cx.busy()?;
        if !cx.queue_sustained() || !memory_bound(cx) || busy.value < BUSY_HIGH {
            return None;
        }
        let mut ev = vec![
            cx.level_evidence(dram, ">=", DRAM_HIGH),
            cx.level_evidence(busy, ">=", BUSY_HIGH),
        ];
        if let Some(t) = cx.tensor() {
            ev.push(cx.evidence(
                Concept::TensorActive,
                "mean_nonzero",
                t,
                "<",
                Some(TENSOR_LOW),
            ));
        }
        let msg = format!(
            "memory traffic is {:.0}% of peak while the tensor pipes idle: each step streams the weights for a small batch (memory-bandwidth bound)",
            dram.value * 100.0
        );
        Some(finding(
            self.id(),
            Severity::Error,
            Some(Bottleneck::MemoryBandwidth),
            0.75,
            msg,
            ev,
        ))
    }
}
