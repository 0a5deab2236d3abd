//! `capacity`: how much a deployment serves before it stops scaling, and why — a search of the
//! load axis in short stages, each one `run` of its own.
//!
//! Flow: the plan of `run` (targets resolved, the simulated stack started once) and the load
//! resolved once; then, until the pure [`Search`] says done: the next load → a stage's
//! [`RunPlan`] and [`LoadPlan`] (that load, a warm-up left out of the figures, `--slo` goodput)
//! → [`run::execute`] (baseline, load, drain, diagnose, stored as a `capacity` run) → what it
//! served recorded in the search and kept as a [`Stage`]. A stage whose requests fail ends the
//! search with the server's words; a stage the client could not keep ends it without being read
//! as the server's limit; Ctrl-C keeps every stage finished; the budget is checked before each
//! stage against what the stages so far took. [`Answer::assemble`] makes the answer.

mod output;

pub use output::{Autoscaling, check_autoscaling, write_autoscaling, write_html};

use crate::OpsError;
use crate::cancel::Cancel;
use crate::run::{self, Narrator, RunOutcome, RunPlan};
use llmscope_collect::HttpClient;
use llmscope_core::duration::format_duration;
use llmscope_core::outcome::Summary;
use llmscope_diagnosis::capacity::answer::{
    Answer, Axis, Ended, Load, Percentiles, Stage, StageVerdict,
};
use llmscope_diagnosis::capacity::{Next, Search, Served};
use llmscope_diagnosis::{Bottleneck, Concept};
use llmscope_loadgen::{Arrival, LoadPlan, LoadReport, Mode, Slo, StagePlan};
use std::time::{Duration, Instant};

/// How the search goes.
#[derive(Debug, Clone)]
pub struct CapacityPlan {
    pub axis: Axis,
    /// The first load measured (at least 1).
    pub start: u32,
    /// The largest load measured.
    pub max: u32,
    /// Open loop: the cap on requests in flight.
    pub in_flight_cap: u32,
    /// Each stage's measured load time, after its warm-up.
    pub stage: Duration,
    /// Each stage's warm-up: sent, not counted.
    pub warmup: Duration,
    /// Each stage's idle baseline.
    pub baseline: Duration,
    /// The whole search's time.
    pub budget: Duration,
    /// What goodput counts (empty: no goodput).
    pub slo: Slo,
    /// The objectives as the user wrote them.
    pub slo_text: Option<String>,
}

/// A finished search: the answer, and the engine's gauge names it read (for autoscaling).
#[derive(Debug, Clone)]
pub struct Searched {
    pub answer: Answer,
    /// The engine's running and waiting gauges as the stages found them.
    pub gauges: Gauges,
}

/// The engine's own gauges of requests running and waiting, by the names it exposes.
#[derive(Debug, Clone, Default)]
pub struct Gauges {
    pub running: Option<&'static str>,
    pub waiting: Option<&'static str>,
}

impl Gauges {
    fn read(&mut self, names: &[(Concept, &'static str)]) {
        for (c, name) in names {
            match c {
                Concept::Running => self.running = Some(name),
                Concept::Waiting => self.waiting = Some(name),
                _ => {}
            }
        }
    }
}

/// Searches `plan`'s deployment for its knee with `load`'s requests; every stage is stored.
pub async fn search(
    plan: &RunPlan,
    load: &LoadPlan,
    cap: &CapacityPlan,
    cancel: &Cancel,
    http: &HttpClient,
    n: &dyn Narrator,
) -> Result<Searched, OpsError> {
    let started = Instant::now();
    let mut s = Searching {
        search: Search::new(cap.start, cap.max),
        stages: Vec::new(),
        advised: Vec::new(),
        gauges: Gauges::default(),
        cap,
        started,
    };
    let mut retried = std::collections::BTreeSet::new();
    let ended = loop {
        let load_at = match s.search.next() {
            Next::Measure(l) => l,
            Next::Done(k) => break found(k),
        };
        if let Some(end) = s.over_budget(load_at, plan, n) {
            break end;
        }
        let outcome = stage(plan, load, cap, load_at, s.stages.len(), cancel, http, n).await?;
        match s.take(load_at, &outcome, cancel, n) {
            // A client short of a core for a moment is not a client that cannot keep the load
            // (a 2-core host running the engine beside it kept 1.9 of 2 once): the stage is kept
            // uncounted and measured once more; a second shortfall ends the search.
            Some(Ended::ClientLimited { load, words }) if retried.insert(load) => {
                n.warn(&format!(
                    "the client could not keep {} ({words}); measuring it once more",
                    cap.axis.describe(load)
                ));
            }
            Some(end) => break end,
            None => {}
        }
    };
    let elapsed = started.elapsed().as_secs_f64();
    let budget = cap.budget.as_secs_f64();
    let mut answer = Answer::assemble(
        cap.axis,
        cap.slo_text.clone(),
        s.stages,
        &s.search,
        ended,
        (budget, elapsed),
    );
    if let Some(c) = &answer.cause {
        answer.advice = crate::whatif::advise_search(&s.advised, c.run_id);
    }
    Ok(Searched {
        answer,
        gauges: s.gauges,
    })
}

/// Why a search that the search itself ended, ended.
fn found(knee: Option<llmscope_diagnosis::capacity::Knee>) -> Ended {
    match knee.and_then(|k| k.stop) {
        Some(stop) => Ended::Found { stop: stop.into() },
        None => Ended::NoOutput,
    }
}

/// The search under way.
struct Searching<'a> {
    search: Search,
    stages: Vec<Stage>,
    /// Each stage's advice, and what a fit reads of it.
    advised: Vec<crate::whatif::Advised>,
    gauges: Gauges,
    cap: &'a CapacityPlan,
    started: Instant,
}

impl Searching<'_> {
    /// The end, when the next stage would not fit in what is left of the budget (judged by the
    /// longest stage so far, or the plan before any); else the progress line.
    fn over_budget(&self, next: u32, plan: &RunPlan, n: &dyn Narrator) -> Option<Ended> {
        let used = self.started.elapsed();
        let longest = self.stages.iter().map(|s| s.seconds).fold(0.0, f64::max);
        let planned = planned(plan, self.cap).as_secs_f64();
        let estimate = Duration::from_secs(longest.max(planned).ceil() as u64);
        if !self.stages.is_empty() && used + estimate > self.cap.budget {
            n.warn(&format!(
                "--budget {}: {} used, and the next stage ({}) takes about {}; stopping here",
                format_duration(self.cap.budget),
                format_duration(used),
                self.cap.axis.describe(next),
                format_duration(estimate)
            ));
            return Some(Ended::Budget { next: Some(next) });
        }
        n.say(&format!(
            "stage {}: {} for {} (about {}; {} of {} used)",
            self.stages.len() + 1,
            self.cap.axis.describe(next),
            format_duration(self.cap.warmup + self.cap.stage),
            format_duration(estimate),
            format_duration(Duration::from_secs(used.as_secs())),
            format_duration(self.cap.budget)
        ));
        None
    }

    /// Keeps a finished stage; the end when it ends the search.
    fn take(
        &mut self,
        load: u32,
        o: &RunOutcome,
        cancel: &Cancel,
        n: &dyn Narrator,
    ) -> Option<Ended> {
        let seconds = stage_seconds(self.started, &self.stages);
        self.gauges.read(&o.analysed.names);
        self.advised.push(crate::whatif::Advised::of(&o.analysed));
        let stage = measured(self.cap, load, o, seconds, cancel.is_cancelled());
        n.say(&stage_line(self.stages.len() + 1, self.cap.axis, &stage));
        let end = stage_end(load, &stage, o);
        if end.is_none() {
            let served = Served {
                output_tok_s: stage.output_tok_s,
                goodput_rps: stage.goodput_rps,
                saturated: stage.verdict.bottleneck == Bottleneck::BatchLimit,
            };
            self.search.record(load, served);
        }
        self.stages.push(stage);
        end
    }
}

/// Seconds since the last stage ended (or the search began).
fn stage_seconds(started: Instant, stages: &[Stage]) -> f64 {
    let before: f64 = stages.iter().map(|s| s.seconds).sum();
    (started.elapsed().as_secs_f64() - before).max(0.0)
}

/// What a stage is planned to take: baseline, warm-up, load, and the tail after it.
fn planned(plan: &RunPlan, cap: &CapacityPlan) -> Duration {
    cap.baseline + cap.warmup + cap.stage + plan.after + Duration::from_secs(2)
}

/// The end a stage brings: Ctrl-C, failing requests or requests shed at the admission limit
/// (with the server's words: loads past it measure the limit, not the engine), or a load the
/// client could not keep.
fn stage_end(load: u32, stage: &Stage, o: &RunOutcome) -> Option<Ended> {
    if stage.interrupted {
        return Some(Ended::Interrupted);
    }
    let refused = matches!(
        stage.verdict.bottleneck,
        Bottleneck::FailingRequests | Bottleneck::AdmissionLimit
    );
    if refused || o.stopped_early.is_some() {
        return Some(Ended::Failing {
            load,
            words: failing_words(o),
        });
    }
    let words = stage.client_limited.clone()?;
    Some(Ended::ClientLimited { load, words })
}

/// The server's own words for its failures: the first messages it answered with.
fn failing_words(o: &RunOutcome) -> String {
    let bodies = o
        .report
        .total
        .failures
        .iter()
        .flat_map(|(kind, samples)| samples.bodies.iter().map(move |b| format!("{kind}: {b}")));
    let bodies: Vec<String> = bodies.take(3).collect();
    let said = o.stopped_early.clone();
    let summary = &o.analysed.diagnosis.verdict.summary;
    match (bodies.is_empty(), said) {
        (false, _) => format!("{summary} — the server said: {}", bodies.join(" | ")),
        (true, Some(why)) => format!("{summary} — {why}"),
        (true, None) => summary.clone(),
    }
}

/// One stage: `run` at `load`, stored as a `capacity` run.
#[allow(clippy::too_many_arguments)]
async fn stage(
    plan: &RunPlan,
    load: &LoadPlan,
    cap: &CapacityPlan,
    at: u32,
    index: usize,
    cancel: &Cancel,
    http: &HttpClient,
    n: &dyn Narrator,
) -> Result<RunOutcome, OpsError> {
    let stage_plan = stage_run_plan(plan, cap, at, index);
    let stage_load = stage_load(load, cap, at);
    let n = Prefixed(n, index + 1);
    run::execute(&stage_plan, &stage_load, cancel, http, &n).await
}

/// The run of one stage: `load` on the axis, the stage's windows, stored as `capacity`.
fn stage_run_plan(plan: &RunPlan, cap: &CapacityPlan, load: u32, index: usize) -> RunPlan {
    let mut p = plan.clone();
    p.kind = "capacity";
    match cap.axis {
        Axis::Concurrency => (p.concurrency, p.rate) = (load, None),
        Axis::Rate => (p.concurrency, p.rate) = (cap.in_flight_cap, Some(f64::from(load))),
    }
    p.baseline = cap.baseline;
    p.duration = cap.warmup + cap.stage;
    if let serde_json::Value::Object(m) = &mut p.config {
        m.insert("concurrency".into(), p.concurrency.into());
        m.insert("rate".into(), p.rate.into());
        m.insert("duration_s".into(), p.duration.as_secs_f64().into());
        m.insert("baseline_s".into(), p.baseline.as_secs_f64().into());
        let stage = serde_json::json!({"stage": index + 1, "axis": cap.axis, "load": load,
            "warmup_s": cap.warmup.as_secs_f64(), "slo": cap.slo_text});
        m.insert("capacity".into(), stage);
    }
    p
}

/// The load of one stage: one stage at `load`, its warm-up left out, goodput under the SLO.
/// Open-loop arrivals are evenly spaced: a short stage of Poisson arrivals offers its rate only
/// on average (8 arrivals in a 2.5 s stage vary by a third), and the search compares stages.
fn stage_load(load: &LoadPlan, cap: &CapacityPlan, at: u32) -> LoadPlan {
    let mode = match cap.axis {
        Axis::Concurrency => Mode::Closed { concurrency: at },
        Axis::Rate => Mode::Open {
            rate: f64::from(at),
            arrival: Arrival::Constant,
            cap: Some(cap.in_flight_cap),
        },
    };
    let mut l = load.clone();
    l.stages = vec![StagePlan {
        mode,
        ramp_up: Duration::ZERO,
        warmup: cap.warmup,
        duration: Some(cap.stage),
        requests: None,
        phase: Duration::ZERO,
    }];
    l.slo = cap.slo;
    l
}

/// What a stage served, with its verdict.
fn measured(
    cap: &CapacityPlan,
    load: u32,
    o: &RunOutcome,
    seconds: f64,
    interrupted: bool,
) -> Stage {
    let axis = cap.axis;
    let r: &LoadReport = &o.report;
    let t = &r.total;
    let d = &o.analysed.diagnosis;
    let client = &t.client;
    let window = measured_window(r, cap);
    let (running_mean, waiting_mean) = llmscope_diagnosis::levels_over(&o.analysed.input, window);
    Stage {
        load: Load::on(axis, load),
        run_id: o.analysed.run,
        output_tok_s: t
            .throughput
            .sending_output_tokens_per_s
            .unwrap_or(t.throughput.output_tokens_per_s),
        req_s: t.throughput.requests_per_s,
        goodput_rps: t.goodput.as_ref().map(|g| g.requests_per_s),
        goodput_fraction: t.goodput.as_ref().and_then(|g| g.fraction),
        ttft_ms: percentiles(&t.latency_ms.ttft),
        itl_ms: percentiles(&t.latency_ms.itl),
        e2e_ms: percentiles(&t.latency_ms.e2e),
        completed: t.requests.completed,
        failed: t.requests.failed,
        running_mean,
        waiting_mean,
        seconds,
        window: Some(window),
        verdict: StageVerdict {
            bottleneck: d.verdict.bottleneck,
            confidence: d.verdict.confidence,
            summary: d.verdict.summary.clone(),
            evidence: d.evidence.clone(),
        },
        client_limited: client.limited.then(|| client.verdict.clone()),
        interrupted,
    }
}

/// The end of the warm-up to the end of sending as planned, Unix seconds.
fn measured_window(r: &LoadReport, cap: &CapacityPlan) -> (f64, f64) {
    let from = r.started_unix_ns as f64 / 1e9 + cap.warmup.as_secs_f64();
    (from, from + cap.stage.as_secs_f64())
}

fn percentiles(s: &Summary) -> Percentiles {
    Percentiles {
        p50: s.p50,
        p95: s.p95,
    }
}

/// `stage 3: concurrency 4 → 1,234 output tok/s, 5.1 req/s, batch_limit (0.90); 14 s, run 17`.
fn stage_line(i: usize, axis: Axis, s: &Stage) -> String {
    let goodput = s
        .goodput_rps
        .map_or(String::new(), |g| format!(", goodput {g:.2} req/s"));
    format!(
        "stage {i}: {} → {:.0} output tok/s, {:.2} req/s{goodput}, {} ({:.2}); {:.0} s, run {}",
        axis.describe(s.load.value()),
        s.output_tok_s,
        s.req_s,
        s.verdict.bottleneck.as_str(),
        s.verdict.confidence,
        s.seconds,
        s.run_id
    )
}

/// A narrator that says which stage a line is from.
struct Prefixed<'a>(&'a dyn Narrator, usize);

impl Narrator for Prefixed<'_> {
    fn say(&self, line: &str) {
        self.0.say(&format!("stage {}: {line}", self.1));
    }
    fn warn(&self, line: &str) {
        self.0.warn(&format!("stage {}: {line}", self.1));
    }
    fn note(&self, line: &str) {
        self.0.note(&format!("stage {}: {line}", self.1));
    }
}
