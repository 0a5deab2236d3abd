//! Speculative decoding, said whenever the engine speculates (issue 51): how many drafted tokens
//! the target model accepted, what a draft buys, and whether it buys less than it costs.
//!
//! vLLM V1 counts, per engine, the drafts proposed (`vllm:spec_decode_num_drafts_total`), the
//! tokens drafted (`…_num_draft_tokens_total`) and the drafted tokens accepted
//! (`…_num_accepted_tokens_total`); the families exist only where speculation is configured.
//! The acceptance rate is accepted ÷ drafted — what vLLM's own log line and its removed V0 gauge
//! report — and the mean accepted length of a draft is accepted ÷ drafts. Read over the whole
//! recording, as a run's acceptance is quoted. Each draft's tokens are verified by the target
//! model in the step: a draft accepting fewer than one token on average spends a step's work on
//! `k` positions to gain less than one, so speculation does not pay here — said, with the knob
//! (`num_speculative_tokens` in `--speculative-config`, or no speculation). It is not a verdict:
//! what speculation costs in step time needs the same load without it (`whatif` does not model
//! speculation yet).

use super::{Context, Detector, Evidence, Finding, Severity, growth};
use crate::signal::Concept;

/// Accepted tokens per draft below which speculation is said not to pay.
pub const PAYS_PER_DRAFT: f64 = 1.0;

/// The engine speculates: acceptance and what a draft buys.
pub struct Speculative;
impl Detector for Speculative {
    fn id(&self) -> &'static str {
        "speculative_decoding"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let s = SpecReading::read(cx)?;
        let (severity, message) = s.said();
        Some(Finding {
            bottleneck: None,
            confidence: Some(0.9),
            evidence: s.evidence(cx),
            ..Finding::new(self.id(), severity, message)
        })
    }
}

/// What the engine's speculation counters say over the recording.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpecReading {
    pub drafts: f64,
    pub drafted: f64,
    pub accepted: f64,
}

impl SpecReading {
    /// `None` where the engine exports no speculation counters (speculation off).
    pub fn read(cx: &Context) -> Option<SpecReading> {
        let whole = |c: Concept| {
            let s = cx.input.signal(c)?;
            let (first, last) = (s.points.first()?.0, s.points.last()?.0);
            growth(s, first, last)
        };
        Some(SpecReading {
            drafts: whole(Concept::SpecDrafts).unwrap_or(0.0),
            drafted: whole(Concept::SpecDraftTokens)?,
            accepted: whole(Concept::SpecAcceptedTokens)?,
        })
    }

    /// Accepted of drafted tokens, where any were drafted.
    pub fn acceptance(&self) -> Option<f64> {
        (self.drafted > 0.0).then(|| self.accepted / self.drafted)
    }

    /// Tokens drafted and accepted per draft, where drafts are counted.
    fn per_draft(&self) -> Option<(f64, f64)> {
        (self.drafts > 0.0).then(|| (self.drafted / self.drafts, self.accepted / self.drafts))
    }

    /// Speculation spends more than it gains: a draft accepts under one token on average.
    pub fn does_not_pay(&self) -> bool {
        self.per_draft()
            .is_some_and(|(_, accepted)| accepted < PAYS_PER_DRAFT)
    }

    fn said(&self) -> (Severity, String) {
        let Some(rate) = self.acceptance() else {
            return (
                Severity::Info,
                "speculative decoding is configured but proposed no drafts over the run (an n-gram drafter finds no match in these prompts): it neither helps nor costs here".to_owned(),
            );
        };
        let per_draft = self.per_draft().map_or(String::new(), |(k, a)| {
            format!("; a draft of {k:.1} tokens has {a:.2} accepted on average")
        });
        let head = format!(
            "speculative decoding: {:.1}% of drafted tokens accepted ({:.0} of {:.0}){per_draft}",
            rate * 100.0,
            self.accepted,
            self.drafted
        );
        if self.does_not_pay() {
            (
                Severity::Warning,
                format!(
                    "{head} — under one token a draft: the target model verifies every drafted position for less than one token gained, so speculation costs more than it saves here"
                ),
            )
        } else {
            (Severity::Info, head)
        }
    }

    fn evidence(&self, cx: &Context) -> Vec<Evidence> {
        let mut ev = vec![cx.evidence(
            Concept::SpecDraftTokens,
            "drafted",
            self.drafted,
            "",
            None,
        )];
        if let Some(rate) = self.acceptance() {
            ev.push(cx.evidence(
                Concept::SpecAcceptedTokens,
                "acceptance_rate",
                rate,
                "",
                None,
            ));
        }
        if let Some((_, accepted)) = self.per_draft() {
            ev.push(cx.evidence(
                Concept::SpecDrafts,
                "accepted_per_draft",
                accepted,
                ">=",
                Some(PAYS_PER_DRAFT),
            ));
        }
        ev
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose;
    use crate::signal::{Input, Signal};

    fn speculating(drafts: f64, drafted: f64, accepted: f64) -> Input {
        let mut i = Input {
            scrape_interval_s: Some(1.0),
            ..Input::default()
        };
        let ramp = |total: f64| -> Vec<(f64, f64)> {
            (0..60)
                .map(|k| (f64::from(k), total * (f64::from(k) - 10.0).clamp(0.0, 40.0) / 40.0))
                .collect()
        };
        for (c, total) in [
            (Concept::SpecDrafts, drafts),
            (Concept::SpecDraftTokens, drafted),
            (Concept::SpecAcceptedTokens, accepted),
        ] {
            i.signals.insert(c, Signal::new(c.name(), ramp(total)));
        }
        i
    }

    fn finding(i: &Input) -> Option<Finding> {
        diagnose(i)
            .findings
            .into_iter()
            .find(|f| f.rule == "speculative_decoding")
    }

    #[test]
    fn acceptance_and_what_a_draft_buys_are_said_and_a_draft_under_one_token_warned() {
        let f = finding(&speculating(100.0, 400.0, 300.0)).expect("said");
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.message.contains("75.0% of drafted tokens accepted (300 of 400)")
                && f.message.contains("a draft of 4.0 tokens has 3.00 accepted"),
            "{}",
            f.message
        );
        let f = finding(&speculating(100.0, 400.0, 60.0)).expect("said");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("costs more than it saves"), "{}", f.message);
        let f = finding(&speculating(0.0, 0.0, 0.0)).expect("said");
        assert!(f.message.contains("proposed no drafts"), "{}", f.message);
        // Speculation off: the families are absent, nothing is said.
        assert!(finding(&Input::default()).is_none());
    }
}
