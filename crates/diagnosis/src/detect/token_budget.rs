use super::{BUDGET_FULL, Bottleneck, Context, Detector, Finding, Severity, finding};
use crate::signal::Concept;

/// Engine steps full of tokens: `--max-num-batched-tokens` caps prefill (chunked prefill).
pub struct TokenBudget;
impl Detector for TokenBudget {
    fn id(&self) -> &'static str {
        "token_budget"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let budget = cx.input.engine.max_num_batched_tokens? as f64;
        let per_step = cx.tokens_per_step()?;
        if per_step < BUDGET_FULL * budget || !cx.queue_sustained() {
            return None;
        }
        // Full steps that are compute-bound are GPU compute: a bigger budget would only lengthen them.
        if cx.tensor().is_some_and(|t| t >= 0.3) {
            return None;
        }
        let ev = vec![cx.evidence(
            Concept::StepTokensSum,
            "tokens_per_step",
            per_step,
            ">=",
            Some(BUDGET_FULL * budget),
        )];
        let msg = format!(
            "engine steps carry {per_step:.0} tokens of a {budget:.0}-token budget: prefill is chunked and queued requests wait for budget"
        );
        Some(finding(
            self.id(),
            Severity::Error,
            Some(Bottleneck::TokenBudget),
            0.8,
            msg,
            ev,
        ))
    }
}

/// Steps carry (nearly) the whole `--max-num-batched-tokens`: the budget, not the batch cap,
/// decides admission.
pub(super) fn budget_spent(cx: &Context) -> bool {
    let budget = cx.input.engine.max_num_batched_tokens.map(f64::from);
    budget
        .zip(cx.tokens_per_step())
        .is_some_and(|(b, t)| t >= BUDGET_FULL * b)
}
