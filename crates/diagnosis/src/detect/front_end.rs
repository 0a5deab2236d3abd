use super::{Bottleneck, Context, Detector, Finding, Level, Severity, finding};
use crate::signal::Concept;

/// Requests the client had in flight that the engine's gauges never saw: they waited in front of
/// the scheduler — in the API server process (HTTP, tokenisation, detokenisation, streaming), or
/// on the way to it. On a host short of CPU the API server is the hidden queue.
pub struct FrontEndQueue;
impl Detector for FrontEndQueue {
    fn id(&self) -> &'static str {
        "front_end_queue"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let achieved = cx.input.load.achieved_concurrency?;
        let outside = cx.outside_engine()?;
        let threshold = (0.15 * achieved).max(2.0);
        if outside < threshold {
            return None;
        }
        let running = cx.mean_running()?;
        let waiting = cx.mean_waiting().unwrap_or(Level {
            concept: Concept::Waiting,
            value: 0.0,
            statistic: "mean",
        });
        let ev = vec![
            cx.evidence(
                running.concept,
                running.statistic,
                running.value,
                "",
                cx.batch_cap(),
            ),
            cx.level_evidence(waiting, "<", 0.5),
            cx.evidence(
                Concept::Running,
                "client_in_flight_minus_running_and_waiting",
                outside,
                ">=",
                Some(threshold),
            ),
        ];
        // The scheduler held no queue although the load offered more than its batch cap: the
        // requests it never saw were held by the API server, which is then the limit.
        let primary =
            !cx.queue_sustained() && cx.batch_cap().is_some() && !concurrency_within_cap(cx);
        let msg = message(outside, achieved, primary.then_some((waiting, running)));
        let severity = if primary {
            Severity::Error
        } else {
            Severity::Warning
        };
        Some(finding(
            self.id(),
            severity,
            primary.then_some(Bottleneck::FrontEnd),
            confidence(cx),
            msg,
            ev,
        ))
    }
}

/// What the client held that the engine never saw; where the front end is the limit (`primary`:
/// the scheduler's mean waiting and running), that too.
fn message(outside: f64, achieved: f64, primary: Option<(Level, Level)>) -> String {
    let mut msg = format!(
        "{outside:.1} of the {achieved:.1} requests in flight at the client were neither running nor waiting in the engine on average: they queued in front of the scheduler (the API server process or the way to it) — a host short of CPU, or a saturated API server"
    );
    if let Some((waiting, running)) = primary {
        msg += &format!(
            "; the scheduler itself held no queue (mean waiting {:.1}) and ran {:.1} on average: the front end, not the engine, limits this deployment",
            waiting.value, running.value
        );
    }
    msg
}

/// Whether the scheduler held a queue was read from its own queue-time counter, or only from a
/// gauge.
fn confidence(cx: &Context) -> f64 {
    if cx.little_waiting().is_some() {
        0.75
    } else {
        0.6
    }
}

/// The load's own shape ruled a queue out: closed-loop concurrency at or below the batch cap,
/// and a KV pool that never filled nor preempted — a pool too small for the load queues
/// requests under the cap (a real vLLM 0.32 with a 2,048-token pool, 16 clients under a cap of
/// 16: 4.0 waiting, 8 preemptions, KV at 100 %).
pub(super) fn concurrency_within_cap(cx: &Context) -> bool {
    let kv_filled = cx.kv().is_some_and(|(_, max)| max >= super::KV_RISK)
        || cx
            .stat(Concept::Preemptions)
            .is_some_and(|s| s.mean > 0.0);
    match (cx.input.load.concurrency, cx.batch_cap()) {
        (Some(c), Some(cap)) => f64::from(c) <= cap && !kv_filled,
        _ => false,
    }
}
