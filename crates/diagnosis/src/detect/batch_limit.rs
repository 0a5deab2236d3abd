use super::token_budget::budget_spent;
use super::{
    BUSY_HIGH, Bottleneck, Context, Detector, Evidence, Finding, KV_HIGH, NEAR_CEILING,
    PINNED_SHARE, Severity, finding,
};
use crate::signal::Concept;

/// `running` pinned at `--max-num-seqs` with a queue, GPU and KV with headroom.
pub struct BatchLimit;
impl Detector for BatchLimit {
    fn id(&self) -> &'static str {
        "batch_limit"
    }
    fn detect(&self, cx: &Context) -> Option<Finding> {
        let p = Pinned::read(cx)?;
        let mut ev = p.plateau_evidence(cx);
        let mut confidence = p.confidence(cx, &mut ev);
        let headroom = headroom(cx, &mut ev, &mut confidence);
        let msg = p.message(cx, &headroom);
        Some(finding(
            self.id(),
            Severity::Error,
            Some(Bottleneck::BatchLimit),
            confidence,
            msg,
            ev,
        ))
    }
}

/// What the window shows of the running batch against its cap, once the cap is what binds.
struct Pinned {
    plateau: f64,
    share: f64,
    /// The waiting gauge's mean.
    waiting: f64,
    /// The queue's mean by Little's law where the engine counts queue time; the gauge's otherwise.
    queue: f64,
    cap: Option<f64>,
    /// Tokens decoded per engine step, and `--max-num-seqs` of one engine.
    batch: Option<(f64, f64)>,
    full_steps: bool,
}

impl Pinned {
    /// `None` unless running is held at the cap with a queue and GPU, KV and budget ruled out.
    fn read(cx: &Context) -> Option<Pinned> {
        let (plateau, share) = cx.running_plateau()?;
        // `waiting` must be exported (an absent queue gauge is a data-quality finding).
        let (waiting, _) = cx.waiting()?;
        let cap = cx.batch_cap();
        // Pinned: the gauge sits at its ceiling in most scrapes, or — where scrapes fall between
        // the waves of a lockstep batch — the engine's counters show full batches step after step.
        let batch = cx.decode_batch().zip(cx.input.engine.max_num_seqs.map(f64::from));
        let full_steps = batch.is_some_and(|(b, c)| b >= NEAR_CEILING * c);
        // Or by elimination: vLLM's scheduler admits a waiting request at its next step unless the
        // batch is full, the KV pool cannot hold it or the step's token budget is spent. A queue
        // the scheduler itself held through the window, with running seen at the cap and KV and
        // the budget ruled out below (and by the detectors before this one), is the cap binding —
        // however few scrapes caught the batch full (a real vLLM 0.32 at --max-num-seqs 4 showed
        // it in 64 % of them on a busy host, and its gauges read 0 in many more).
        let by_elimination = cx.queue_sustained() && cap == Some(plateau);
        if !cx.queued()
            || (share < PINNED_SHARE && !full_steps && !by_elimination)
            || plateau < 1.0
            || cap.is_some_and(|c| c != plateau)
            || other_limit(cx)
        {
            return None;
        }
        let queue = cx.mean_waiting().map_or(waiting, |l| l.value);
        Some(Pinned {
            plateau,
            share,
            waiting,
            queue,
            cap,
            batch,
            full_steps,
        })
    }

    fn plateau_evidence(&self, cx: &Context) -> Vec<Evidence> {
        let mut ev = vec![
            cx.evidence(Concept::Running, "plateau", self.plateau, "==", self.cap),
            cx.evidence(
                Concept::Running,
                "share_at_plateau",
                self.share,
                ">=",
                Some(PINNED_SHARE),
            ),
            cx.evidence(Concept::Waiting, "mean", self.waiting, ">=", Some(0.5)),
        ];
        if let Some(w) = cx.little_waiting() {
            ev.push(cx.evidence(
                Concept::QueuedSeconds,
                "mean_waiting_by_littles_law",
                w,
                ">=",
                Some(0.5),
            ));
        }
        if let Some(o) = cx.demand_over_cap() {
            ev.push(cx.evidence(
                Concept::Running,
                "client_in_flight_over_cap",
                o,
                ">=",
                self.cap.map(|c| (0.1 * c).max(1.0)),
            ));
        }
        ev
    }

    /// Confidence from how firmly running is pinned, the cap known, full steps and a queue of
    /// the size the client's concurrency predicts; their evidence is added to `ev`.
    fn confidence(&self, cx: &Context, ev: &mut Vec<Evidence>) -> f64 {
        let pinned = (self.share - PINNED_SHARE) / (1.0 - PINNED_SHARE);
        let mut confidence = 0.55 + 0.2 * pinned.clamp(-0.5, 1.0);
        if self.cap.is_some() {
            confidence += 0.1;
        }
        if let Some((b, c)) = self.batch {
            ev.push(cx.evidence(
                Concept::GeneratedTokens,
                "decoded_per_step",
                b,
                ">=",
                Some(NEAR_CEILING * c),
            ));
            if self.full_steps {
                confidence += 0.05;
            }
        }
        if let Some(c) = cx.input.load.concurrency {
            let expected = c as f64 - self.plateau;
            ev.push(cx.evidence(
                Concept::Waiting,
                "expected_concurrency_minus_plateau",
                expected,
                "",
                None,
            ));
            if (self.queue - expected).abs() <= 0.2 * expected.max(1.0) {
                confidence += 0.1;
            }
        }
        confidence
    }

    fn message(&self, cx: &Context, headroom: &str) -> String {
        let how = if self.share < PINNED_SHARE && !self.full_steps {
            "held by the scheduler's queue at"
        } else {
            "pinned at"
        };
        let cap = match (self.cap, cx.input.engines) {
            (None, _) => String::new(),
            (Some(_), 0 | 1) => "= --max-num-seqs; ".to_owned(),
            (Some(_), n) => format!("= --max-num-seqs × {n} replicas; "),
        };
        let client = match (cx.demand_over_cap(), cx.input.load.achieved_concurrency) {
            (Some(_), Some(a)) if !cx.queue_sustained() => {
                format!(" in the engine and the client keeps {a:.1} in flight")
            }
            _ => String::new(),
        };
        format!(
            "running is {how} {:.0} ({cap}at or near it in {:.0}% of samples) while {:.1} requests wait on average{client}, {headroom}: the batch limit caps throughput",
            self.plateau,
            self.share * 100.0,
            self.queue,
        )
    }
}

/// A busy GPU, a full KV cache or a spent token budget: another limit explains the queue.
fn other_limit(cx: &Context) -> bool {
    cx.busy().is_some_and(|b| b.value >= BUSY_HIGH)
        || cx.kv().is_some_and(|(m, _)| m >= KV_HIGH)
        || budget_spent(cx)
}

/// Running pinned at the cap with a queue is the batch limit by definition; GPU and KV only say
/// how far raising it can go. Each missing layer lowers confidence and is named.
fn headroom(cx: &Context, ev: &mut Vec<Evidence>, confidence: &mut f64) -> String {
    let mut missing = Vec::new();
    match cx.busy() {
        Some(b) => {
            ev.push(cx.level_evidence(b, "<", BUSY_HIGH));
            *confidence += 0.03;
        }
        None => {
            missing.push("GPU");
            *confidence -= 0.1;
        }
    }
    match cx.kv() {
        Some((kv, _)) => {
            ev.push(cx.evidence(Concept::KvUsage, "mean_nonzero", kv, "<", Some(KV_HIGH)));
            *confidence += 0.02;
        }
        None => {
            missing.push("KV-cache");
            *confidence -= 0.1;
        }
    }
    match missing.as_slice() {
        [] => "with GPU and KV headroom".to_owned(),
        m => format!(
            "{}; no {} metrics, so that headroom is unverified",
            if m.contains(&"KV-cache") {
                "KV headroom unknown"
            } else {
                "with KV headroom"
            },
            m.join(" or ")
        ),
    }
}
