//! The step's token budget (`--max-num-batched-tokens`) as the limit, told or not.
//!
//! vLLM's scheduler admits a waiting request at its next step while the step has token budget
//! left, the batch is below `--max-num-seqs` and the KV pool can hold it (`v1/core/sched/
//! scheduler.py`: `while token_budget > 0` over the waiting queue). So a queue the scheduler holds
//! through the window while the batch has room and KV has room can only be the budget — spent
//! step after step by chunked prefill (issue 51: `--max-num-seqs 64 --max-num-batched-tokens 256`,
//! 1,200-token prompts, 24 clients — 3.9 of 64 running, 19.6 waiting, every step 256 tokens).
//! The budget is then read from the steps themselves: the mean tokens a step carries is the
//! budget in force, with the uncertainty the window's edges leave ([`StepTokens`]). Where the
//! flag is given it only confirms (the steps carry at least [`BUDGET_FULL`] of it).

use super::{
    BUDGET_FULL, BUSY_HIGH, Bottleneck, Context, Detector, Evidence, Finding, KV_HIGH, KV_RISK, NEAR_CEILING,
    Severity, StepTokens, finding,
};
use crate::signal::Concept;

/// Engine steps full of tokens: `--max-num-batched-tokens` caps prefill (chunked prefill).
pub struct TokenBudget;
impl Detector for TokenBudget {
    fn id(&self) -> &'static str {
        "token_budget"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        if compute_bound(cx) {
            return None;
        }
        let (reading, step) = read(cx)?;
        Some(reading.finding(self.id(), cx, step))
    }
}

/// The budget where a queue is held and the steps spend it, told or inferred, with the steps.
fn read(cx: &Context) -> Option<(Reading, StepTokens)> {
    let step = cx.step_tokens()?;
    if !cx.queue_sustained() {
        return None;
    }
    let reading = match cx.input.engine.max_num_batched_tokens {
        Some(budget) => told(step, f64::from(budget))?,
        None => inferred(cx, step)?,
    };
    Some((reading, step))
}

/// Full steps on a GPU busy and computing are GPU compute (that detector names it): a bigger
/// budget would only lengthen them. Tensor work alone is not that: a simulated H100 under a
/// 256-token budget ran its tensor pipes ≥ 30 % while busy 70 % of the time, and with this rule
/// reading tensor activity alone no detector named the queue of 16 it held (`none`).
fn compute_bound(cx: &Context) -> bool {
    cx.tensor().is_some_and(|t| t >= 0.3) && cx.busy().is_some_and(|b| b.value >= BUSY_HIGH)
}

/// How the budget was found: the flag the user gave, or the steps and the room around them.
struct Reading {
    budget: f64,
    told: bool,
    /// Sequences decoded per step and the batch cap they are below (inferred only).
    room: Option<Room>,
}

/// The batch's room: sequences decoded per step against the cap (or the running ceiling).
#[derive(Clone, Copy)]
struct Room {
    decoded: f64,
    ceiling: f64,
}

fn told(step: StepTokens, budget: f64) -> Option<Reading> {
    spent(step, budget).then_some(Reading {
        budget,
        told: true,
        room: None,
    })
}

/// The budget read without the flag: a queue, the batch and the KV pool with room, no
/// preemptions, and steps carrying at least `--max-num-seqs` tokens (vLLM refuses a budget below
/// it: `config/scheduler.py`). `None` where any is not shown.
fn inferred(cx: &Context, step: StepTokens) -> Option<Reading> {
    let room = batch_room(cx)?;
    let kv_room = cx
        .kv()
        .is_some_and(|(mean, max)| mean < KV_HIGH && max < KV_RISK);
    let preempting = cx.stat(Concept::Preemptions).is_some_and(|s| s.mean > 0.0);
    let possible = step.per_step + step.uncertainty >= room.ceiling;
    (kv_room && !preempting && possible).then_some(Reading {
        budget: step.per_step,
        told: false,
        room: Some(room),
    })
}

/// The batch has room, read as the method reads it on the engine's numbers: the running gauge
/// never reached `--max-num-seqs` in the window and fewer sequences than [`NEAR_CEILING`] of it
/// were decoded per step. Without the cap there is no telling: a real vLLM 0.32 at
/// `--max-num-seqs 32`, batch-limited, decoded 5.5–13.9 sequences a step while its batch moved
/// in waves, and its gauge's ceiling was the cap itself.
fn batch_room(cx: &Context) -> Option<Room> {
    let decoded = cx.decode_batch()?;
    let cap = f64::from(cx.input.engine.max_num_seqs?);
    let (ceiling, _) = cx.running_plateau()?;
    let running = cx.mean_running().map_or(decoded, |l| l.value / cx.engines());
    let engines = cx.engines();
    (ceiling < cap * engines && decoded < NEAR_CEILING * cap && running < NEAR_CEILING * cap)
        .then_some(Room {
            decoded,
            ceiling: cap,
        })
}

impl Reading {
    fn finding(&self, id: &'static str, cx: &Context, step: StepTokens) -> Finding {
        let per_step = step.per_step;
        let threshold = if self.told {
            Some(BUDGET_FULL * self.budget - step.uncertainty)
        } else {
            None
        };
        let mut ev = vec![cx.evidence(
            Concept::StepTokensSum,
            "tokens_per_step",
            per_step,
            ">=",
            threshold,
        )];
        ev.extend(self.room_evidence(cx));
        let within = if step.uncertainty >= 0.5 {
            format!(
                " (±{:.0}: prompts are counted whole when their prefill completes)",
                step.uncertainty
            )
        } else {
            String::new()
        };
        let waiting = cx
            .mean_waiting()
            .map_or(String::new(), |w| format!(" while {:.1} requests wait", w.value));
        let msg = match self.room {
            None => format!(
                "engine steps carry {per_step:.0}{within} tokens of a {:.0}-token budget{waiting}: prefill is chunked and queued requests wait for budget",
                self.budget
            ),
            Some(r) => format!(
                "engine steps carry {per_step:.0}{within} tokens each{waiting}, though the batch decodes only {:.1} sequences of --max-num-seqs {:.0} and KV has room: the step's token budget is spent — about {per_step:.0} tokens (--max-num-batched-tokens, inferred from the steps)",
                r.decoded,
                r.ceiling
            ),
        };
        // Inferred by elimination: sure of the limit, less of the figure.
        let confidence = if self.told { 0.8 } else { 0.75 };
        finding(
            id,
            Severity::Error,
            Some(Bottleneck::TokenBudget),
            confidence,
            msg,
            ev,
        )
    }

    fn room_evidence(&self, cx: &Context) -> Vec<Evidence> {
        let Some(r) = self.room else {
            return Vec::new();
        };
        let mut ev = vec![cx.evidence(
            Concept::GeneratedTokens,
            "decoded_per_step",
            r.decoded,
            "<",
            Some(NEAR_CEILING * r.ceiling),
        )];
        if let Some((mean, _)) = cx.kv() {
            ev.push(cx.evidence(Concept::KvUsage, "mean_nonzero", mean, "<", Some(KV_HIGH)));
        }
        ev
    }
}

/// Steps carry (nearly) the whole budget, within what the window's edges can move the count.
fn spent(step: StepTokens, budget: f64) -> bool {
    step.per_step + step.uncertainty >= BUDGET_FULL * budget
}

/// The budget in force where the steps spend it: the flag, or the tokens a step carries where
/// the budget was inferred ([`TokenBudget`]), with how far the window's edges can move that
/// figure. `None` where the budget does not bind.
pub(crate) fn budget_in_force(cx: &Context) -> Option<BudgetInForce> {
    let (r, step) = read(cx)?;
    Some(BudgetInForce {
        tokens: r.budget,
        told: r.told,
        uncertainty: step.uncertainty,
    })
}

/// See [`budget_in_force`].
pub(crate) struct BudgetInForce {
    pub tokens: f64,
    /// From the flag (else read from the steps).
    pub told: bool,
    pub uncertainty: f64,
}

/// Steps carry (nearly) the whole `--max-num-batched-tokens`: the budget, not the batch cap,
/// decides admission.
pub(super) fn budget_spent(cx: &Context) -> bool {
    let budget = cx.input.engine.max_num_batched_tokens.map(f64::from);
    budget
        .zip(cx.step_tokens())
        .is_some_and(|(b, s)| spent(s, b))
}
