use super::{BUSY_LOW, Context, DRAM_HIGH, Detector, Finding, Severity, finding};
use crate::signal::Concept;

/// GPU idle between steps while requests run: host (CPU) time dominates each step.
pub struct HostBound;
impl Detector for HostBound {
    fn id(&self) -> &'static str {
        "host"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let busy = cx.busy()?;
        let running = cx.stat(Concept::Running)?.mean;
        if busy.value >= BUSY_LOW
            || running < 1.0
            || cx.dram().is_some_and(|d| d.value >= DRAM_HIGH / 2.0)
        {
            return None;
        }
        let ev = vec![
            cx.level_evidence(busy, "<", BUSY_LOW),
            cx.evidence(Concept::Running, "mean", running, ">=", Some(1.0)),
        ];
        let msg = format!(
            "the GPU is idle {:.0}% of the time while {running:.0} requests run: steps are dominated by host (CPU) work — scheduling, input preparation, sampling, streaming",
            (1.0 - busy.value) * 100.0
        );
        Some(finding(self.id(), Severity::Warning, None, 0.6, msg, ev))
    }
}
