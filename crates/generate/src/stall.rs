//! Stall alerts (issue 15): an engine alive but not serving, a request queue that grows old, a
//! Kueue that stops admitting. Names come from the [`Signals`] of the detected version, like
//! every other rule; each alert reads only series that have an absence guard
//! ([`crate::rules::dependencies`]), so a rename makes the guard fire instead of the alert
//! silently never firing.
//!
//! - `VllmNoProgress`: requests running or waiting while neither generated tokens nor engine
//!   steps (`vllm:iteration_tokens_total_count`, a histogram whose `_count` counts steps) move.
//!   Two counters, because a long prefill makes steps without generating a token, and a dialect
//!   without the steps histogram still has the token counter.
//! - `VllmQueueTimeHigh`: p95 of `vllm:request_queue_time_seconds` over a threshold.
//! - `KueueAdmissionStalled`: workloads in the admission queue and no admission in the window.

use crate::promql::{Sel, agg, quantile, rate};
use crate::promrules::Rule;
use crate::rules::{RulesOptions, SPLIT, alert, verdict};
use crate::signals::Signals;
use llmscope_catalog::Family;
use llmscope_diagnosis::detect::Bottleneck;

/// How long without progress before an engine counts as stalled (`watch --stall-after`'s default).
const STALL_WINDOW: &str = "5m";
/// The window in which a Kueue with pending workloads must have admitted one.
pub const ADMISSION_WINDOW: &str = "15m";

/// The engine's stall alerts the version's names allow.
pub fn engine(s: &Signals, opts: &RulesOptions) -> Vec<Rule> {
    let mut out = vec![no_progress(s)];
    out.extend(queue_time(s, opts));
    out
}

fn sum_rate(sel: &Sel, window: &str) -> String {
    agg("sum", SPLIT, &rate(sel, window))
}

/// `(running + waiting > 0) and tokens == 0 [and steps == 0]`, matched per serving pod.
fn no_progress(s: &Signals) -> Rule {
    let (expr, evidence) = no_progress_expr(s);
    alert(
        "VllmNoProgress",
        expr,
        "5m",
        "critical",
        [
            "{{ $labels.pod }} is alive but not serving",
            &format!(
                "vLLM {{{{ $labels.model_name }}}} on {{{{ $labels.pod }}}} in {{{{ $labels.namespace }}}} has had requests running or waiting for 10 minutes while {evidence}: the engine is stuck (a hung step, a dead worker, a deadlocked scheduler). Requests will time out; restart the pod and keep its logs."
            ),
        ],
        "llmscope verdict: stalled (alive but not serving). `llmscope watch` reports it as llmscope_stalled; confirm with `llmscope diagnose --prometheus URL --since 1h`.",
    )
}

/// The no-progress expression, and what in it does not move (for the description).
fn no_progress_expr(s: &Signals) -> (String, String) {
    let e = &s.engine;
    let on = SPLIT.join(", ");
    let busy = format!(
        "({} + {}) > 0",
        agg("sum", SPLIT, &Sel::of(e.running).to_string()),
        agg("sum", SPLIT, &Sel::of(e.waiting).to_string())
    );
    let tokens = sum_rate(&Sel::of(e.generation_tokens), STALL_WINDOW);
    let mut expr = format!("({busy}) and on ({on}) ({tokens} == 0)");
    let mut evidence = format!("{} does not move", e.generation_tokens.name);
    if let Some(steps) = e.steps {
        let count = Sel::named(&format!("{}_count", steps.name));
        let steps_rate = sum_rate(&count, STALL_WINDOW);
        expr.push_str(&format!(" and on ({on}) ({steps_rate} == 0)"));
        evidence = format!(
            "neither {} nor the engine steps ({count}) move",
            e.generation_tokens.name
        );
    }
    (expr, evidence)
}

/// Queue-time p95 above `opts.queue_time_s`.
fn queue_time(s: &Signals, opts: &RulesOptions) -> Option<Rule> {
    let h = s.engine.queue_time?;
    let p95 = quantile(0.95, &Sel::bucket(h), SPLIT, "5m");
    let limit = opts.queue_time_s;
    Some(alert(
        "VllmQueueTimeHigh",
        format!("{p95} > {limit}"),
        "10m",
        "warning",
        [
            "Requests wait long in the queue of {{ $labels.pod }}",
            &format!(
                "vLLM {{{{ $labels.model_name }}}} on {{{{ $labels.pod }}}} in {{{{ $labels.namespace }}}} has had a queue-time p95 ({}) above {limit} s for 10 minutes: requests wait for a slot in the running batch before any work starts.",
                h.name
            ),
        ],
        &verdict(
            Bottleneck::BatchLimit,
            "or kv_cache_capacity / gpu_compute, by KV usage and GPU utilisation while they queue.",
        ),
    ))
}

/// Kueue: active pending workloads and no admission in [`ADMISSION_WINDOW`]. `unless` rather
/// than `increase(…) == 0`: client_golang prints no `kueue_admitted_workloads_total` series for
/// a ClusterQueue that never admitted, and that queue must alert too. Followers of an HA Kueue
/// report the same queues (`replica_role`, v0.16+); the matcher keeps the leader (and the
/// unlabelled series of older releases).
pub fn admission(s: &Signals) -> Option<Rule> {
    let k = s.scheduler.as_ref()?;
    let (pending, admitted) = (k.pending?, k.admitted?);
    Some(alert(
        "KueueAdmissionStalled",
        admission_stalled_expr(pending, admitted),
        "5m",
        "warning",
        [
            "ClusterQueue {{ $labels.cluster_queue }} admits nothing while workloads wait",
            &format!(
                "ClusterQueue {{{{ $labels.cluster_queue }}}} has had {{{{ $value }}}} workloads in its admission queue and admitted none in {ADMISSION_WINDOW}, for 5 minutes: quota is exhausted and nothing finishes, a flavor or admission check is stuck, or the Kueue controller is not scheduling."
            ),
        ],
        "llmscope verdict: not a serving bottleneck — the deployment's pods are not admitted. Check `kubectl get clusterqueue,workloads -A` and `llmscope cost --prometheus URL` for who holds the quota.",
    ))
}

/// Active pending workloads per ClusterQueue, unless it admitted one in the window; the
/// leader's series only.
fn admission_stalled_expr(pending: &Family, admitted: &Family) -> String {
    let leader = "replica_role!=\"follower\"".to_owned();
    let active = Sel::of(pending).with(&["status=\"active\"".to_owned(), leader.clone()]);
    let admissions = format!(
        "increase({}[{ADMISSION_WINDOW}])",
        Sel::of(admitted).with(&[leader])
    );
    let by = ["cluster_queue"];
    format!(
        "({} > 0) unless on (cluster_queue) ({} > 0)",
        agg("sum", &by, &active.to_string()),
        agg("sum", &by, &admissions)
    )
}
