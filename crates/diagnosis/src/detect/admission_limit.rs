//! Load shed by the server's own admission limit (issue 51), not a failing server.
//!
//! vLLM's API server refuses a request with HTTP 503 before any engine sees it when the requests
//! in flight (running + waiting) would pass `--max-num-queued-reqs`, or the prompt tokens still in
//! prefill have reached `--max-num-queued-tokens` (`v1/engine/async_llm.py`, `check_admission`),
//! and counts it in `vllm:admission_rejections_total{reason}`. The limit did what it was set for:
//! the deployment lacks capacity for the demand, and the advice is capacity or the limit — not
//! the server's logs. Read from the engine's counter over the whole recording (the first burst of
//! a closed-loop load is turned away too) against the requests it finished, and from the 503s the
//! client saw, whose words say which limit it was.

use super::{Bottleneck, Context, Detector, Evidence, Finding, Severity, growth};
use crate::signal::Concept;
use llmscope_core::outcome::{FAILING_SHARE, FailureKind};

/// vLLM's words for each limit (`vllm/exceptions.py`: `QueueOverflowError`, `MaxQueuedTokensError`).
const REQS_WORDS: &str = "cannot accept new requests";
const TOKENS_WORDS: &str = "prefill token backlog limit";

/// Requests turned away at the admission limit.
pub struct AdmissionLimit;
impl Detector for AdmissionLimit {
    fn id(&self) -> &'static str {
        "admission_limit"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let shed = Shed::read(cx)?;
        let primary = shed.share >= FAILING_SHARE && shed.most_failures;
        Some(Finding {
            bottleneck: primary.then_some(Bottleneck::AdmissionLimit),
            confidence: Some(if shed.engine.is_some() { 0.9 } else { 0.75 }),
            evidence: shed.evidence(cx),
            ..Finding::new(
                self.id(),
                if primary {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                shed.message(cx),
            )
        })
    }
}

/// Which limit turned requests away, as the 503's words say.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    Requests,
    Tokens,
    Both,
    /// The engine counted rejections; the client kept no words of them.
    Unknown,
}

impl Limit {
    /// The flag(s) to name.
    pub fn flag(self) -> &'static str {
        match self {
            Limit::Requests => "--max-num-queued-reqs",
            Limit::Tokens => "--max-num-queued-tokens",
            Limit::Both | Limit::Unknown => "--max-num-queued-reqs / --max-num-queued-tokens",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Limit::Requests => "requests in flight (running + waiting)",
            Limit::Tokens => "prompt tokens waiting for prefill",
            Limit::Both | Limit::Unknown => "requests or prompt tokens queued",
        }
    }
}

/// What the engine and the client saw turned away.
pub struct Shed {
    /// Rejections the engine counted, and requests it finished, over the recording.
    pub engine: Option<(f64, f64)>,
    /// 503s the client saw in vLLM's admission words, of the requests it finished.
    client: Option<(u64, u64)>,
    pub share: f64,
    pub limit: Limit,
    /// The admission 503s are at least half of the client's failures (or the client is unknown).
    most_failures: bool,
    said: Option<String>,
}

impl Shed {
    /// `None` where neither the engine's counter grew nor the client saw an admission 503.
    pub fn read(cx: &Context) -> Option<Shed> {
        let engine = engine_counts(cx);
        let outcome = cx.input.load.requests.as_ref();
        let kinds: Vec<&FailureKind> = outcome
            .map(|o| o.kinds.iter().filter(|k| admission(k).is_some()).collect())
            .unwrap_or_default();
        let client = outcome.map(|o| (kinds.iter().map(|k| k.count).sum::<u64>(), o.ok + o.failed));
        let seen = engine.is_some_and(|(r, _)| r > 0.0) || client.is_some_and(|(n, _)| n > 0);
        if !seen {
            return None;
        }
        let share_of = |(n, all): (f64, f64)| (all > 0.0).then(|| n / all);
        let share = [
            engine.and_then(|(r, done)| share_of((r, r + done))),
            client.and_then(|(n, all)| share_of((n as f64, all as f64))),
        ]
        .into_iter()
        .flatten()
        .fold(0.0, f64::max);
        let most_failures = outcome.is_none_or(|o| {
            client.is_some_and(|(n, _)| n > 0 && 2 * n >= o.failed)
                || (o.failed == 0 && engine.is_some())
        });
        Some(Shed {
            engine,
            client,
            share,
            limit: limit_of(&kinds),
            most_failures,
            said: kinds.iter().find_map(|k| k.bodies.first().cloned()),
        })
    }

    fn message(&self, cx: &Context) -> String {
        let (n, all) = match (self.engine, self.client) {
            (Some((r, done)), _) if r > 0.0 => (r, r + done),
            (_, Some((n, all))) => (n as f64, all as f64),
            _ => (0.0, 0.0),
        };
        let said = self
            .said
            .as_ref()
            .map_or(String::new(), |s| format!(" — the server said: \"{s}\""));
        let behind = match (cx.mean_running(), cx.mean_waiting()) {
            (Some(r), Some(w)) => format!(
                "; behind the limit {:.1} requests ran and {:.1} waited",
                r.value, w.value
            ),
            _ => String::new(),
        };
        format!(
            "the server's admission limit ({}: {}) turned away {n:.0} of {all:.0} requests ({:.0}%) with HTTP 503{said}{behind}: load shed by configuration, not a failing server",
            self.limit.flag(),
            self.limit.what(),
            self.share * 100.0
        )
    }

    fn evidence(&self, cx: &Context) -> Vec<Evidence> {
        let mut ev = Vec::new();
        if let Some((r, done)) = self.engine {
            ev.push(cx.evidence(Concept::AdmissionRejections, "rejected", r, ">", Some(0.0)));
            ev.push(cx.evidence(Concept::RequestsFinished, "finished", done, "", None));
        }
        if let Some((n, all)) = self.client {
            ev.push(Evidence {
                signal: "requests".into(),
                source: "load generator".to_owned(),
                window: cx.input.load.window,
                statistic: "admission_503".into(),
                value: n as f64,
                test: "of".into(),
                threshold: Some(all as f64),
            });
        }
        ev
    }
}

/// The engine's rejections and finished requests over the whole recording: a closed-loop load's
/// first burst is turned away before any steady window.
fn engine_counts(cx: &Context) -> Option<(f64, f64)> {
    let rejected = cx.input.signal(Concept::AdmissionRejections)?;
    let (from, to) = span(rejected)?;
    let done = cx
        .input
        .signal(Concept::RequestsFinished)
        .and_then(|s| growth(s, from, to))
        .unwrap_or(0.0);
    Some((growth(rejected, from, to)?, done))
}

fn span(s: &crate::signal::Signal) -> Option<(f64, f64)> {
    let first = s.points.first()?.0;
    let last = s.points.last()?.0;
    (last > first).then_some((first, last))
}

/// Which limit a failure kind is, by vLLM's words.
fn admission(k: &FailureKind) -> Option<Limit> {
    if k.status != Some(503) {
        return None;
    }
    k.bodies.iter().find_map(|b| {
        if b.contains(REQS_WORDS) {
            Some(Limit::Requests)
        } else if b.contains(TOKENS_WORDS) {
            Some(Limit::Tokens)
        } else {
            None
        }
    })
}

fn limit_of(kinds: &[&FailureKind]) -> Limit {
    let limits: Vec<Limit> = kinds.iter().filter_map(|k| admission(k)).collect();
    match (
        limits.contains(&Limit::Requests),
        limits.contains(&Limit::Tokens),
    ) {
        (true, true) => Limit::Both,
        (true, false) => Limit::Requests,
        (false, true) => Limit::Tokens,
        (false, false) => Limit::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose;
    use crate::signal::{Input, Signal};
    use llmscope_core::outcome::RequestOutcome;

    /// A batch-limited window (running at 16, a queue) whose server turned away `rejected`
    /// requests by the engine's counter, and a client that saw `kinds`.
    fn shed(rejected: f64, ok: u64, kinds: Vec<FailureKind>) -> Input {
        let mut i = Input {
            scrape_interval_s: Some(1.0),
            ..Input::default()
        };
        let on = |t: f64| (15.0..95.0).contains(&t);
        for (c, v) in [
            (Concept::Running, 16.0),
            (Concept::Waiting, 24.0),
            (Concept::KvUsage, 0.03),
        ] {
            let pts = (0..120)
                .map(|k| (f64::from(k), if on(f64::from(k)) { v } else { 0.0 }))
                .collect();
            i.signals.insert(c, Signal::new(c.name(), pts));
        }
        let ramp = |total: f64| {
            (0..120)
                .map(|k| (f64::from(k), total * (f64::from(k) - 15.0).clamp(0.0, 80.0) / 80.0))
                .collect()
        };
        for (c, total) in [
            (Concept::AdmissionRejections, rejected),
            (Concept::RequestsFinished, ok as f64),
        ] {
            i.signals.insert(c, Signal::new(c.name(), ramp(total)));
        }
        i.engine.max_num_seqs = Some(16);
        let failed = kinds.iter().map(|k| k.count).sum();
        i.load.requests = Some(RequestOutcome {
            sent: ok + failed,
            ok,
            failed,
            kinds,
            stopped_early: None,
        });
        i
    }

    fn busy(count: u64) -> FailureKind {
        FailureKind {
            kind: "http_503".into(),
            status: Some(503),
            count,
            bodies: vec!["The engine is currently busy and cannot accept new requests. Please try again later or on a different instance.".into()],
        }
    }

    #[test]
    fn requests_turned_away_at_the_limit_are_the_admission_limit_not_a_failing_server() {
        let d = diagnose(&shed(336.0, 60, vec![busy(336)]));
        assert_eq!(d.verdict.bottleneck, Bottleneck::AdmissionLimit, "{d:?}");
        assert!(d.verdict.summary.contains("--max-num-queued-reqs"));
        assert!(d.verdict.summary.contains("336 of 396"), "{}", d.verdict.summary);
        let first = &d.recommendations[0].action;
        assert!(first.starts_with("Add replicas"), "{first}");
        // Massive shedding keeps the verdict (failing requests would strip every other one).
        assert!(d.findings.iter().any(|f| f.rule == "failing_requests"));
        // The client's words name the token limit where that was the one.
        let tokens = FailureKind {
            bodies: vec!["The engine has reached its prefill token backlog limit. Please try again later or on a different instance.".into()],
            ..busy(50)
        };
        let d = diagnose(&shed(50.0, 200, vec![tokens]));
        assert_eq!(d.verdict.bottleneck, Bottleneck::AdmissionLimit);
        assert!(d.verdict.summary.contains("--max-num-queued-tokens"));
        assert!(d.recommendations[1].action.contains("--max-num-queued-tokens"));
    }

    #[test]
    fn a_few_sheds_or_other_failures_leave_the_verdict_to_others() {
        // 2 of 1,002 shed: said, not the verdict.
        let d = diagnose(&shed(2.0, 1000, vec![busy(2)]));
        assert_ne!(d.verdict.bottleneck, Bottleneck::AdmissionLimit);
        let f = d.findings.iter().find(|f| f.rule == "admission_limit");
        assert!(f.is_some_and(|f| f.bottleneck.is_none()), "{d:?}");
        // Most failures are something else (400s): failing requests, with their own words.
        let bad = FailureKind {
            kind: "http_400".into(),
            status: Some(400),
            count: 300,
            bodies: vec!["maximum context length is 2048 tokens".into()],
        };
        let d = diagnose(&shed(20.0, 100, vec![busy(20), bad]));
        assert_eq!(d.verdict.bottleneck, Bottleneck::FailingRequests);
        // Without the engine's counter, the client's 503s in vLLM's words still say it.
        let mut i = shed(0.0, 60, vec![busy(336)]);
        i.signals.remove(&Concept::AdmissionRejections);
        assert_eq!(diagnose(&i).verdict.bottleneck, Bottleneck::AdmissionLimit);
        // Neither: nothing.
        let d = diagnose(&shed(0.0, 60, Vec::new()));
        assert!(!d.findings.iter().any(|f| f.rule == "admission_limit"));
    }
}
