//! Multi-turn sessions (`--turns`): one task per session holds a worker slot for all its turns
//! (sessions in flight = the concurrency), sends turn after turn — each the conversation so far
//! and the next prompt — and pauses `--think-time` between an answer and the next turn. A failed
//! turn ends its session (the conversation cannot go on without the answer). Sending stops as for
//! single requests: no new turn starts after the stage's sending ends, and an abort cuts a pause
//! short.

use super::{Sent, StageCtx, Tags, Worker, send};
use crate::plan::{SessionPlan, system_message};
use crate::prompts::{self, Prompt};
use crate::response::Outcome;
use bytes::Bytes;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Runs session `index` to its end, then frees its slot.
pub(super) async fn run(
    ctx: Arc<StageCtx>,
    plan: Arc<SessionPlan>,
    intended: Option<Instant>,
    worker: Worker,
    index: u64,
) {
    let mut talk = Conversation::new(&plan, index);
    let mut intended = intended;
    let mut last_error = None;
    for turn in 1..=plan.turns {
        if turn > 1 && !think(&ctx, plan.think).await {
            break;
        }
        let id = ctx.next_id();
        let warmup = Instant::now() < ctx.warmup_end;
        let tags = Tags {
            session: Some(index),
            turn: Some(turn),
            prefix_group: talk.group,
            repeated_tokens: talk.repeated,
        };
        let keep_text = Outcome {
            text: Some(String::new()),
            ..Outcome::default()
        };
        let body = talk.ask(&plan, turn);
        let sent = send(&ctx, id, intended.take(), warmup, body, tags, keep_text).await;
        last_error = sent.error;
        if sent.error.is_some() {
            break;
        }
        talk.answered(sent);
    }
    worker.release(ctx, last_error).await;
}

/// The pause before the next turn; `false` when the session should end instead (sending has
/// stopped, or the run was aborted during the pause).
async fn think(ctx: &StageCtx, pause: Duration) -> bool {
    if ctx.sending_over.load(Ordering::Acquire) {
        return false;
    }
    if !pause.is_zero() {
        let mut abort = ctx.abort.clone();
        tokio::select! {
            _ = abort.wait_for(|a| *a) => return false,
            _ = tokio::time::sleep(pause) => {}
        }
    }
    !ctx.sending_over.load(Ordering::Acquire)
}

/// One session's conversation so far.
struct Conversation {
    index: u64,
    messages: Vec<Value>,
    group: Option<u32>,
    /// Prompt tokens the next turn repeats: the shared prefix (after its group's first session),
    /// then the previous turn's whole prompt and answer. `None` when the server did not count.
    repeated: Option<u32>,
}

impl Conversation {
    fn new(plan: &SessionPlan, index: u64) -> Self {
        let groups = plan.prefixes.len() as u64;
        let mut talk = Conversation {
            index,
            messages: Vec::new(),
            group: None,
            repeated: Some(0),
        };
        if groups > 0 {
            let g = index % groups;
            talk.group = Some(g as u32);
            talk.messages
                .push(system_message(&plan.prefixes[g as usize]));
            if index >= groups {
                talk.repeated = plan.prefix_tokens;
            }
        }
        talk
    }

    /// The body of turn `turn` (1-based): the conversation and the next prompt.
    fn ask(&mut self, plan: &SessionPlan, turn: u32) -> Bytes {
        let n = plan.prompts.len().max(1) as u64;
        let k = (self.index * u64::from(plan.turns) + u64::from(turn - 1)) % n;
        match plan.prompts.get(k as usize) {
            Some(Prompt::Messages(m)) => self.messages.extend(m.iter().cloned()),
            Some(Prompt::Text(t)) => self.messages.push(json!({"role": "user", "content": t})),
            None => {}
        }
        prompts::build_body(&Prompt::Messages(self.messages.clone()), &plan.options)
    }

    /// The answer joins the conversation; the next turn repeats all of this one.
    fn answered(&mut self, sent: Sent) {
        self.repeated = sent.prompt_tokens.map(|p| p + sent.output_tokens);
        let text = sent.text.unwrap_or_default();
        self.messages
            .push(json!({"role": "assistant", "content": text}));
    }
}
