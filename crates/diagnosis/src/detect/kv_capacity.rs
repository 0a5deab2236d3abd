use super::{Bottleneck, Context, Detector, Finding, KV_HIGH, KV_RISK, Severity, finding};
use crate::signal::Concept;

/// KV cache near full: admissions stall and requests get preempted.
pub struct KvCapacity;
impl Detector for KvCapacity {
    fn id(&self) -> &'static str {
        "kv_cache_capacity"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let (mean, max) = cx.kv()?;
        if mean < KV_HIGH && max < KV_RISK {
            return None;
        }
        let mut ev = vec![
            cx.evidence(Concept::KvUsage, "mean_nonzero", mean, ">=", Some(KV_HIGH)),
            cx.evidence(Concept::KvUsage, "max", max, ">=", Some(KV_RISK)),
        ];
        let preempting = cx
            .stat(Concept::Preemptions)
            .map(|s| s.mean)
            .filter(|r| *r > 0.0);
        if let Some(r) = preempting {
            ev.push(cx.evidence(Concept::Preemptions, "rate_per_s", r, ">", Some(0.0)));
        }
        // KV limits admission when requests are preempted or fewer run than the batch cap allows;
        // then it is the bottleneck however busy the GPU looks (GPU_UTIL is a duty cycle).
        let below_cap = match (cx.running_plateau(), cx.batch_cap()) {
            (Some((plateau, _)), Some(cap)) => plateau < cap,
            _ => true,
        };
        let primary = cx.queued() && (preempting.is_some() || below_cap);
        let msg = format!(
            "KV cache at {:.0}% (max {:.0}%){}: requests wait for KV blocks",
            mean * 100.0,
            max * 100.0,
            if preempting.is_some() {
                " with preemptions"
            } else {
                ""
            }
        );
        let confidence = 0.7 + if preempting.is_some() { 0.2 } else { 0.0 };
        Some(finding(
            self.id(),
            if max >= KV_RISK {
                Severity::Critical
            } else {
                Severity::Warning
            },
            primary.then_some(Bottleneck::KvCacheCapacity),
            confidence,
            msg,
            ev,
        ))
    }
}
