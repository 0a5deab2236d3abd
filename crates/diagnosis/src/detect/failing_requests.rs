//! Failing requests as a verdict (issue 12): when the server refused a real share of the load,
//! that is what the run found, in the server's own words — not a bottleneck read from a window
//! that never carried the load it was meant to.
//!
//! [`RequestOutcome`] is what the load generator counted ([`super::signal::LoadFacts::requests`]):
//! sent, ok, failed, and per error kind a count and the first distinct server messages.
//! [`FailingRequests`] fires at [`FAILING_SHARE`] of finished requests (or when none succeeded);
//! [`demote`] strips the bottleneck from every other finding when the failures are massive
//! ([`MASSIVE_SHARE`]), with a note; the advice reads the messages for what to fix (`crate::advice`).

use super::{Bottleneck, Context, Detector, Evidence, Finding, Severity};
use llmscope_core::outcome::{FAILING_SHARE, RequestOutcome};

/// Requests failed: the server (or the path to it) refused the load.
pub struct FailingRequests;
impl Detector for FailingRequests {
    fn id(&self) -> &'static str {
        "failing_requests"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let o = cx.input.load.requests.as_ref()?;
        if !o.failing() {
            return None;
        }
        let share = o.failed_share()?;
        let severity = if o.massive() {
            Severity::Critical
        } else {
            Severity::Error
        };
        Some(Finding {
            bottleneck: Some(Bottleneck::FailingRequests),
            confidence: Some(0.95),
            evidence: evidence(cx, o, share),
            ..Finding::new(self.id(), severity, message(o, share))
        })
    }
}

/// `1,369,308 of 1,369,308 requests failed (100%): http_400 × 1,369,308 — the server said: "…"`.
fn message(o: &RequestOutcome, share: f64) -> String {
    let kinds: Vec<String> = o
        .kinds
        .iter()
        .map(|k| format!("{} × {}", k.kind, k.count))
        .collect();
    let said: Vec<String> = o
        .kinds
        .iter()
        .flat_map(|k| {
            k.bodies
                .iter()
                .take(2)
                .map(move |b| format!("{}: \"{b}\"", k.kind))
        })
        .take(3)
        .collect();
    let said = if said.is_empty() {
        " (the server gave no message)".to_owned()
    } else {
        format!(" — the server said: {}", said.join("; "))
    };
    let stopped = o.stopped_early.as_ref().map_or(String::new(), |_| {
        "; the load stopped itself early".to_owned()
    });
    format!(
        "{} of {} requests failed ({:.0}%): {}{said}{stopped}",
        o.failed,
        o.ok + o.failed,
        share * 100.0,
        kinds.join(", ")
    )
}

fn evidence(cx: &Context, o: &RequestOutcome, share: f64) -> Vec<Evidence> {
    let ev = |statistic: &'static str, value, test: &'static str, threshold| Evidence {
        signal: "requests".into(),
        source: "load generator".to_owned(),
        window: cx.input.load.window,
        statistic: statistic.into(),
        value,
        test: test.into(),
        threshold,
    };
    vec![
        ev("failed_share", share, ">=", Some(FAILING_SHARE)),
        ev("failed", o.failed as f64, "", None),
        ev("ok", o.ok as f64, "", None),
    ]
}

/// Massive failures: no other finding is a verdict; each says why.
pub fn demote(findings: &mut [Finding], outcome: Option<&RequestOutcome>) {
    let Some(o) = outcome.filter(|o| o.massive()) else {
        return;
    };
    let share = o.failed_share().unwrap_or(1.0) * 100.0;
    // Requests shed by an admission limit are what the run found too (issue 51).
    let kept = ["failing_requests", "admission_limit"];
    for f in findings.iter_mut().filter(|f| !kept.contains(&f.rule)) {
        if f.bottleneck.take().is_some() {
            f.message.push_str(&format!(
                " (not a verdict: {share:.0}% of requests failed, so the window did not carry the intended load)"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose;
    use crate::signal::{Concept, Input, Signal};
    use llmscope_core::outcome::FailureKind;

    fn rejected(ok: u64, failed: u64) -> RequestOutcome {
        RequestOutcome {
            sent: ok + failed,
            ok,
            failed,
            kinds: vec![FailureKind {
                kind: "http_400".into(),
                status: Some(400),
                count: failed,
                bodies: vec!["This model's maximum context length is 4096 tokens. However, you requested 512 output tokens and your prompt contains 3700 input tokens".into()],
            }],
            stopped_early: None,
        }
    }

    /// A batch-limited window (running pinned at 16, a queue, GPU and KV with headroom).
    fn batch_limited() -> Input {
        let mut i = Input {
            scrape_interval_s: Some(1.0),
            ..Input::default()
        };
        let on = |t: f64| (15.0..95.0).contains(&t);
        for (c, v) in [
            (Concept::Running, 16.0),
            (Concept::Waiting, 8.0),
            (Concept::KvUsage, 0.03),
            (Concept::GpuUtil, 30.0),
        ] {
            let pts = (0..120)
                .map(|k| (k as f64, if on(k as f64) { v } else { 0.0 }))
                .collect();
            i.signals.insert(c, Signal::new(c.name(), pts));
        }
        i.engine.max_num_seqs = Some(16);
        i
    }

    #[test]
    fn every_request_failing_is_the_verdict_with_the_servers_words() {
        let mut input = batch_limited();
        assert_eq!(diagnose(&input).verdict.bottleneck, Bottleneck::BatchLimit);
        input.load.requests = Some(rejected(0, 1_369_308));
        let d = diagnose(&input);
        assert_eq!(d.verdict.bottleneck, Bottleneck::FailingRequests, "{d:#?}");
        let s = &d.verdict.summary;
        assert!(
            s.starts_with("1369308 of 1369308 requests failed (100%): http_400 × 1369308")
                && s.contains("maximum context length is 4096"),
            "{s}"
        );
        assert_eq!(d.findings[0].severity, Severity::Critical);
        let batch = d.findings.iter().find(|f| f.rule == "batch_limit").unwrap();
        assert!(batch.bottleneck.is_none() && batch.message.contains("not a verdict"));
        assert!(
            d.recommendations[0].action.contains("max_model_len"),
            "{:?}",
            d.recommendations
        );
        assert_eq!(d.evidence[0].statistic, "failed_share");
    }

    #[test]
    fn a_few_failures_are_not_a_verdict_and_some_are() {
        let mut input = batch_limited();
        input.load.requests = Some(rejected(990, 10));
        assert_eq!(diagnose(&input).verdict.bottleneck, Bottleneck::BatchLimit);
        input.load.requests = Some(rejected(900, 100));
        let d = diagnose(&input);
        assert_eq!(d.verdict.bottleneck, Bottleneck::FailingRequests);
        assert_eq!(d.findings[0].severity, Severity::Error);
        // Under the massive share the batch limit stays a (secondary) bottleneck finding.
        let batch = d.findings.iter().find(|f| f.rule == "batch_limit").unwrap();
        assert_eq!(batch.bottleneck, Some(Bottleneck::BatchLimit));
        input.load.requests = Some(RequestOutcome::default());
        assert_eq!(diagnose(&input).verdict.bottleneck, Bottleneck::BatchLimit);
    }
}
