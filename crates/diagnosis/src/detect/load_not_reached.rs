use super::front_end::concurrency_within_cap;
use super::{BUSY_HIGH, Bottleneck, Context, Detector, Finding, Severity, WAITING_SHARE, finding};
use crate::signal::Concept;

/// No queue ever formed: the server had capacity to spare.
pub struct LoadNotReached;
impl Detector for LoadNotReached {
    fn id(&self) -> &'static str {
        "load_not_reached"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let (waiting, share) = cx.waiting()?;
        let running = cx.stat(Concept::Running)?;
        let by_design = concurrency_within_cap(cx);
        if cx.queue_sustained()
            || (cx.input.load.client_limited && !by_design)
            || (!by_design && cx.demand_over_cap().is_some())
        {
            return None;
        }
        let mut ev = vec![
            cx.evidence(
                Concept::Waiting,
                "share_nonzero",
                share,
                "<",
                Some(WAITING_SHARE),
            ),
            cx.evidence(Concept::Running, "max", running.max, "", cx.batch_cap()),
        ];
        let concurrency = cx.input.load.concurrency;
        let cap = cx.input.engine.max_num_seqs;
        let why = match (concurrency, cap, cx.batch_cap()) {
            (Some(c), Some(m), Some(_)) if by_design => format!(
                "concurrency {c} never exceeds {}, so no queue can form",
                cx.cap_text(m)
            ),
            _ => format!(
                "running peaked at {:.0} and waiting averaged {waiting:.2}",
                running.max
            ),
        };
        if let Some(b) = cx.busy() {
            ev.push(cx.level_evidence(b, "", BUSY_HIGH));
        }
        let msg = format!("the load did not saturate the server: {why}");
        Some(finding(
            self.id(),
            Severity::Warning,
            Some(Bottleneck::LoadNotReached),
            if by_design { 0.9 } else { 0.8 },
            msg,
            ev,
        ))
    }
}
