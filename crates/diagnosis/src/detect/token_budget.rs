use super::{
    BUDGET_FULL, Bottleneck, Context, Detector, Finding, Severity, StepTokens, finding,
};
use crate::signal::Concept;

/// Engine steps full of tokens: `--max-num-batched-tokens` caps prefill (chunked prefill).
pub struct TokenBudget;
impl Detector for TokenBudget {
    fn id(&self) -> &'static str {
        "token_budget"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let budget = f64::from(cx.input.engine.max_num_batched_tokens?);
        let step = cx.step_tokens()?;
        if !spent(step, budget) || !cx.queue_sustained() {
            return None;
        }
        // Full steps that are compute-bound are GPU compute: a bigger budget would only lengthen them.
        if cx.tensor().is_some_and(|t| t >= 0.3) {
            return None;
        }
        let per_step = step.per_step;
        let ev = vec![cx.evidence(
            Concept::StepTokensSum,
            "tokens_per_step",
            per_step,
            ">=",
            Some(BUDGET_FULL * budget - step.uncertainty),
        )];
        let within = if step.uncertainty >= 0.5 {
            format!(
                " (±{:.0}: prompts are counted whole when their prefill completes)",
                step.uncertainty
            )
        } else {
            String::new()
        };
        let msg = format!(
            "engine steps carry {per_step:.0}{within} tokens of a {budget:.0}-token budget: prefill is chunked and queued requests wait for budget"
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

/// Steps carry (nearly) the whole budget, within what the window's edges can move the count.
fn spent(step: StepTokens, budget: f64) -> bool {
    step.per_step + step.uncertainty >= BUDGET_FULL * budget
}

/// Steps carry (nearly) the whole `--max-num-batched-tokens`: the budget, not the batch cap,
/// decides admission.
pub(super) fn budget_spent(cx: &Context) -> bool {
    let budget = cx.input.engine.max_num_batched_tokens.map(f64::from);
    budget
        .zip(cx.step_tokens())
        .is_some_and(|(b, s)| spent(s, b))
}
