use super::front_end::concurrency_within_cap;
use super::{Bottleneck, Context, Detector, Finding, Severity, finding};

/// The load generator itself was the limit.
pub struct ClientLimited;
impl Detector for ClientLimited {
    fn id(&self) -> &'static str {
        "client"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let load = &cx.input.load;
        if !load.client_limited {
            return None;
        }
        let note = load
            .client_note
            .as_deref()
            .map_or(String::new(), |n| format!(": {n}"));
        // Server-side evidence outranks the client's self-check: a queue on the server proves the
        // load arrived, and a load shaped so that no queue could form (concurrency within the
        // cap) is "load not reached" whatever the client did.
        let secondary = if cx.queue_sustained() || cx.demand_over_cap().is_some() {
            Some("; the server still queued requests, so its limit was reached regardless")
        } else if concurrency_within_cap(cx) {
            Some("")
        } else {
            None
        };
        if let Some(why) = secondary {
            let msg = format!("the load generator fell short of its load{note}{why}");
            return Some(finding(
                self.id(),
                Severity::Warning,
                None,
                0.8,
                msg,
                Vec::new(),
            ));
        }
        let msg = format!("the load generator was the limit{note}");
        Some(finding(
            self.id(),
            Severity::Error,
            Some(Bottleneck::Client),
            0.8,
            msg,
            Vec::new(),
        ))
    }
}
