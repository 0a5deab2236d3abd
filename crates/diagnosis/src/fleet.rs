//! The fleet (issue 25): each replica judged by the same detectors as the deployment, over the
//! deployment's steady window, and what only the replicas side by side show.
//!
//! A deployment's signals are its replicas' sum, judged against `--max-num-seqs` × replicas.
//! A sum hides an uneven fleet: one replica queueing behind a round-robin Service while seven
//! idle reads, summed, as "load not reached" or a mild batch limit. So every replica of
//! [`Input::replicas`] is read (its verdict, levels and share of the finished
//! requests) and compared:
//!
//! - **routing imbalance** (`routing_imbalance`): some pods hold a sustained queue (by the
//!   statistics the detectors use, [`crate::detect::Context::queue_sustained`]) while others
//!   have none and a batch below their cap: the deployment has room its router does not use;
//! - **data-parallel rank imbalance** (`rank_imbalance`): the same across the `engine` ranks of
//!   one pod;
//! - **a shared GPU** (`shared_gpu`): dcgm-exporter puts several serving pods on one physical
//!   GPU, so adding replicas there adds no throughput (`docs/METHOD.md` step 9).
//!
//! The two imbalances name [`Bottleneck::RoutingImbalance`] and come before every engine
//! bottleneck (only failing requests outrank them): the replicas that queue are what holds the
//! deployment back, whatever their sum reads. [`judge`] returns the replicas' verdicts, the
//! findings and their advice; [`crate::diagnose`] puts them in the [`crate::Diagnosis`].

use crate::advice::Recommendation;
use crate::detect::{self, Bottleneck, Context, Evidence, Finding, NEAR_CEILING, Severity};
use crate::signal::{Concept, Input, Replica, ReplicaKey};
use crate::window::Phases;
use crate::{stale, verdict};
use serde::Serialize;
use std::borrow::Cow;

/// A replica's share of the finished requests at or above this multiple of an even share
/// (1/N) is an uneven split by the router, said as such (8 replicas: 19 % or more).
pub const UNEVEN_SHARE: f64 = 1.5;

/// How many replicas a message names before "and N more".
const NAMED: usize = 3;

/// One replica as a report shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplicaVerdict {
    pub pod: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<String>,
    /// The replica's own verdict, by the same detectors as the deployment's.
    pub verdict: Bottleneck,
    /// Mean requests running and waiting over the deployment's steady window.
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    /// Mean KV-cache usage (0..1) of its non-zero samples.
    pub kv: Option<f64>,
    /// Its share (0..1) of the requests the deployment finished in the window.
    pub share_of_requests: Option<f64>,
    /// Seconds a finished request waited in its queue on average (the engine's queue-time
    /// counter), where the engine counts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_s_per_request: Option<f64>,
}

/// What the fleet adds to a diagnosis.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fleet {
    /// Every replica, in key order; empty for a single replica.
    pub replicas: Vec<ReplicaVerdict>,
    /// Fleet findings: the imbalances (bottleneck findings) first, then shared GPUs.
    pub findings: Vec<Finding>,
    /// What the imbalances call for, in the findings' order.
    pub advice: Vec<Recommendation>,
}

/// One replica (or one pod, its ranks together) read over the deployment's window.
#[derive(Debug, Clone)]
struct Reading {
    name: String,
    verdict: Bottleneck,
    running: Option<f64>,
    waiting: Option<f64>,
    kv: Option<f64>,
    /// Requests finished and seconds they queued, over the window (counter growth).
    finished: Option<f64>,
    queued_s: Option<f64>,
    /// A queue held through the window.
    queued: bool,
    /// `--max-num-seqs` × its engines, when the flag is known.
    cap: Option<f64>,
    /// The highest running count in the window.
    ceiling: Option<f64>,
}

/// Reads every replica of `input` over `phases` (the deployment's), and what they show side
/// by side. Nothing for a deployment of one replica with a GPU of its own.
pub fn judge(input: &Input, phases: &Phases) -> Fleet {
    let readings: Vec<(ReplicaKey, Reading)> = input
        .replicas
        .iter()
        .map(|r| (r.key.clone(), read(input, r, phases)))
        .collect();
    let mut fleet = Fleet {
        replicas: verdicts(&readings),
        ..Fleet::default()
    };
    let window = phases.steady;
    let pods = by_pod(&readings);
    if let Some(i) = Imbalance::find(&pods) {
        fleet.findings.push(i.finding("routing_imbalance", window));
        fleet.advice.push(i.routing_advice(input.gpu_shared()));
    }
    for (pod, ranks) in ranks_by_pod(&readings) {
        if let Some(i) = Imbalance::find(&ranks) {
            fleet.findings.push(i.finding("rank_imbalance", window));
            fleet.advice.push(i.rank_advice(&pod));
        }
    }
    fleet
        .findings
        .extend(input.shared_gpus.iter().map(shared_gpu));
    fleet
}

/// Replica `r` judged over the deployment's steady window (its own, where the deployment had
/// none): the detectors, on the deployment's engine facts.
fn read(parent: &Input, r: &Replica, phases: &Phases) -> Reading {
    let own = parent.replica(r);
    let (input, gauges_stale) = match stale::set_aside(&own) {
        Some((clean, _)) => (clean, true),
        None => (own, false),
    };
    let phases = match phases.steady {
        Some(_) => *phases,
        None => crate::window::detect_phases(&input),
    };
    let cx = Context {
        gauges_stale,
        ..crate::context_in(&input, phases)
    };
    let mut findings: Vec<Finding> = detect::detectors()
        .iter()
        .filter_map(|d| d.detect(&cx))
        .collect();
    detect::demote(&mut findings, None);
    let growth = |c| {
        let (a, b) = cx.phases.steady?;
        detect::growth(cx.input.signal(c)?, a, b)
    };
    Reading {
        name: r.key.to_string(),
        verdict: verdict::choose(&findings).bottleneck,
        running: mean_running(&cx),
        waiting: cx.mean_waiting().map(|l| l.value),
        kv: cx.kv().map(|(mean, _)| mean),
        finished: growth(Concept::RequestsFinished),
        queued_s: growth(Concept::QueuedSeconds),
        queued: cx.queue_sustained(),
        cap: cx.batch_cap(),
        ceiling: cx.running_plateau().map(|(c, _)| c),
    }
}

/// A replica's mean running batch over the window, as the detectors read it — except where
/// that reading is Little's law on per-request time counters that do not cover the window
/// ([`Context::counters_cover_window`]), its gauges set aside as stale: the counters count a
/// request when it finishes, so with most of the window's requests unfinished they give a
/// floor, not the level (a real vLLM 0.32 replica behind least connections read 0.8 running
/// where its engine held 3.85 over the load, and was taken for room). There the engine's own
/// step counters speak: generated tokens per step, one a step for each sequence decoding —
/// however long requests live, wherever the scrapes fell (with speculative decoding a sequence
/// makes more than one a step: the batch reads high, which never shows room it did not have).
/// Without them, unknown (never room).
fn mean_running(cx: &Context) -> Option<f64> {
    let level = cx.mean_running()?;
    if level.concept != Concept::RunningSeconds || cx.counters_cover_window() {
        return Some(level.value);
    }
    let (a, b) = cx.phases.steady?;
    let steps = detect::growth(cx.input.signal(Concept::StepCount)?, a, b).filter(|n| *n > 0.0)?;
    Some(detect::growth(cx.input.signal(Concept::GeneratedTokens)?, a, b)? / steps)
}

/// Each reading's share of the finished requests, and what a report shows of it.
fn verdicts(readings: &[(ReplicaKey, Reading)]) -> Vec<ReplicaVerdict> {
    let rs: Vec<&Reading> = readings.iter().map(|(_, r)| r).collect();
    let shares = shares(&rs);
    readings
        .iter()
        .zip(shares)
        .map(|((key, r), share)| ReplicaVerdict {
            pod: key.pod.clone(),
            rank: key.rank.clone(),
            verdict: r.verdict,
            running: r.running,
            waiting: r.waiting,
            kv: r.kv,
            share_of_requests: share,
            queue_s_per_request: r.queue_per_request(),
        })
        .collect()
}

/// Each reading's share of the requests all of them finished; `None` where a reading has no
/// count or none finished at all.
fn shares(readings: &[&Reading]) -> Vec<Option<f64>> {
    let total: f64 = readings.iter().filter_map(|r| r.finished).sum();
    readings
        .iter()
        .map(|r| r.finished.filter(|_| total > 0.0).map(|n| n / total))
        .collect()
}

impl Reading {
    fn queue_per_request(&self) -> Option<f64> {
        match (self.queued_s, self.finished) {
            (Some(q), Some(n)) if n > 0.0 => Some(q / n),
            _ => None,
        }
    }

    /// The ranks of one pod read as the pod: levels and counts summed, KV at its highest, a
    /// queue where any rank holds one, and the verdict of the first rank that queues.
    fn combine(name: &str, ranks: &[&Reading]) -> Reading {
        let sum = |f: fn(&Reading) -> Option<f64>| {
            let xs: Vec<f64> = ranks.iter().filter_map(|r| f(r)).collect();
            (!xs.is_empty()).then(|| xs.iter().sum())
        };
        let first = ranks.iter().find(|r| r.queued).or(ranks.first());
        Reading {
            name: name.to_owned(),
            verdict: first.map_or(Bottleneck::None, |r| r.verdict),
            // A rank whose batch is unknown leaves the pod's unknown, not smaller.
            running: ranks.iter().map(|r| r.running).sum::<Option<f64>>(),
            waiting: sum(|r| r.waiting),
            kv: ranks.iter().filter_map(|r| r.kv).reduce(f64::max),
            finished: sum(|r| r.finished),
            queued_s: sum(|r| r.queued_s),
            queued: ranks.iter().any(|r| r.queued),
            cap: sum(|r| r.cap),
            ceiling: sum(|r| r.ceiling),
        }
    }
}

/// One reading per pod (its ranks combined, vLLM labels even a lone engine `engine="0"`),
/// named by the pod, in pod order.
fn by_pod(readings: &[(ReplicaKey, Reading)]) -> Vec<Reading> {
    group(readings)
        .into_iter()
        .map(|(pod, ranks)| {
            let rs: Vec<&Reading> = ranks.iter().map(|(_, r)| *r).collect();
            match rs.as_slice() {
                [one] => Reading {
                    name: pod.to_owned(),
                    ..(*one).clone()
                },
                _ => Reading::combine(pod, &rs),
            }
        })
        .collect()
}

/// Per pod with two or more ranks, its ranks' readings.
fn ranks_by_pod(readings: &[(ReplicaKey, Reading)]) -> Vec<(String, Vec<Reading>)> {
    group(readings)
        .into_iter()
        .filter(|(_, ranks)| ranks.len() >= 2)
        .map(|(pod, ranks)| {
            let rs = ranks.iter().map(|(_, r)| (*r).clone()).collect();
            (pod.to_owned(), rs)
        })
        .collect()
}

/// The readings grouped by pod (keys are sorted, so a pod's ranks are adjacent).
fn group(readings: &[(ReplicaKey, Reading)]) -> Vec<(&str, Vec<(&ReplicaKey, &Reading)>)> {
    let mut out: Vec<(&str, Vec<(&ReplicaKey, &Reading)>)> = Vec::new();
    for (k, r) in readings {
        match out.last_mut() {
            Some((pod, v)) if *pod == k.pod => v.push((k, r)),
            _ => out.push((k.pod.as_str(), vec![(k, r)])),
        }
    }
    out
}

/// Replicas that queue beside replicas with room.
struct Imbalance<'a> {
    all: &'a [Reading],
    hot: Vec<&'a Reading>,
    cool: Vec<&'a Reading>,
    shares: Vec<Option<f64>>,
}

impl<'a> Imbalance<'a> {
    /// Some replicas hold a queue while others have none and run below their cap (the flag's,
    /// else the highest batch a queueing replica ran): `None` for an even fleet, queueing or
    /// not.
    fn find(all: &'a [Reading]) -> Option<Imbalance<'a>> {
        if all.len() < 2 {
            return None;
        }
        let hot: Vec<&Reading> = all.iter().filter(|r| r.queued).collect();
        if hot.is_empty() {
            return None;
        }
        let hot_ceiling = hot.iter().filter_map(|r| r.ceiling).reduce(f64::max);
        let room = |r: &Reading| match (r.running, r.cap.or(hot_ceiling)) {
            (Some(x), Some(cap)) => x < NEAR_CEILING * cap,
            _ => false,
        };
        let cool: Vec<&Reading> = all.iter().filter(|r| !r.queued && room(r)).collect();
        if cool.is_empty() {
            return None;
        }
        let refs: Vec<&Reading> = all.iter().collect();
        Some(Imbalance {
            all,
            hot,
            cool,
            shares: shares(&refs),
        })
    }

    fn share_of(&self, r: &Reading) -> Option<f64> {
        let i = self.all.iter().position(|x| std::ptr::eq(x, r))?;
        self.shares[i]
    }

    /// The hot replicas' share of the requests together, and the highest share as a multiple
    /// of an even one.
    fn unevenness(&self) -> (Option<f64>, Option<f64>) {
        let hot: Vec<f64> = self.hot.iter().filter_map(|r| self.share_of(r)).collect();
        let together = (hot.len() == self.hot.len()).then(|| hot.iter().sum());
        let max = self.shares.iter().flatten().copied().reduce(f64::max);
        (together, max.map(|m| m * self.all.len() as f64))
    }

    fn finding(&self, rule: &'static str, window: Option<(f64, f64)>) -> Finding {
        let (_, max_over_even) = self.unevenness();
        let caps_known = self.all.iter().all(|r| r.cap.is_some());
        let mut confidence: f64 = 0.75;
        if caps_known {
            confidence += 0.1;
        }
        if max_over_even.is_some_and(|x| x >= UNEVEN_SHARE) {
            confidence += 0.1;
        }
        Finding {
            bottleneck: Some(Bottleneck::RoutingImbalance),
            confidence: Some(confidence.min(0.95)),
            evidence: self.evidence(window),
            ..Finding::new(rule, Severity::Warning, self.message(rule))
        }
    }

    fn message(&self, rule: &str) -> String {
        let what = if rule == "rank_imbalance" {
            "data-parallel ranks"
        } else {
            "replicas"
        };
        let hot = self
            .hot
            .iter()
            .take(NAMED)
            .map(|r| r.describe())
            .collect::<Vec<_>>()
            .join("; ");
        let more = more(self.hot.len());
        let cool_running = mean(self.cool.iter().filter_map(|r| r.running));
        let (together, max_over_even) = self.unevenness();
        let split = match (together, max_over_even) {
            (Some(t), Some(x)) => format!(
                "; the queueing {what} finished {:.0}% of the requests, the busiest {x:.1}× an even share",
                t * 100.0
            ),
            _ => String::new(),
        };
        format!(
            "requests queue on {hot}{more} while {} of {} {what} hold no queue and run {:.1} on average, below their cap: the deployment has room its routing does not use{split}",
            self.cool.len(),
            self.all.len(),
            cool_running.unwrap_or(0.0),
        )
    }

    fn evidence(&self, window: Option<(f64, f64)>) -> Vec<Evidence> {
        let ev = |signal: &'static str, source: &str, statistic: &'static str, value, test, t| {
            Evidence {
                signal: Cow::Borrowed(signal),
                source: source.to_owned(),
                window,
                statistic: Cow::Borrowed(statistic),
                value,
                test: Cow::Borrowed(test),
                threshold: t,
            }
        };
        let mut out = Vec::new();
        for r in &self.hot {
            if let Some(w) = r.waiting {
                out.push(ev("waiting", &r.name, "mean", w, ">=", Some(0.5)));
            }
            if let Some(x) = r.running {
                out.push(ev("running", &r.name, "mean", x, "", r.cap));
            }
            if let Some(s) = self.share_of(r) {
                let even = 1.0 / self.all.len() as f64;
                out.push(ev("requests_finished", &r.name, "share", s, "", Some(even)));
            }
            if let Some(q) = r.queue_per_request() {
                out.push(ev("queue_time", &r.name, "mean_per_request_s", q, "", None));
            }
        }
        let cool = format!("{} replicas without a queue", self.cool.len());
        if let Some(w) = mean(self.cool.iter().filter_map(|r| r.waiting)) {
            out.push(ev("waiting", &cool, "mean", w, "<", Some(0.5)));
        }
        if let Some(x) = mean(self.cool.iter().filter_map(|r| r.running)) {
            let cap = mean(self.cool.iter().filter_map(|r| r.cap));
            out.push(ev(
                "running",
                &cool,
                "mean",
                x,
                "<",
                cap.map(|c| NEAR_CEILING * c),
            ));
        }
        if let Some(q) = mean(self.cool.iter().filter_map(|r| r.queue_per_request())) {
            out.push(ev("queue_time", &cool, "mean_per_request_s", q, "", None));
        }
        if let (_, Some(x)) = self.unevenness() {
            let all = format!("{} replicas", self.all.len());
            out.push(ev(
                "requests_finished",
                &all,
                "max_share_over_even",
                x,
                ">=",
                Some(UNEVEN_SHARE),
            ));
        }
        out
    }

    /// Names of the hot replicas, for advice.
    fn hot_names(&self) -> String {
        let names: Vec<&str> = self
            .hot
            .iter()
            .take(NAMED)
            .map(|r| r.name.as_str())
            .collect();
        format!("{}{}", names.join(", "), more(self.hot.len()))
    }

    /// The numbers the advice repeats.
    fn numbers(&self) -> String {
        let waiting = self.hot.iter().filter_map(|r| r.waiting).sum::<f64>();
        let cool_running = mean(self.cool.iter().filter_map(|r| r.running)).unwrap_or(0.0);
        let split = match self.unevenness() {
            (Some(t), Some(x)) => format!(
                " after taking {:.0}% of the requests (the busiest {x:.1}× an even share)",
                t * 100.0
            ),
            _ => String::new(),
        };
        format!(
            "{} held {waiting:.1} waiting{split}, while {} of {} ran {cool_running:.1} on average with no queue",
            self.hot_names(),
            self.cool.len(),
            self.all.len(),
        )
    }

    fn routing_advice(&self, gpu_shared: bool) -> Recommendation {
        let caveat = if gpu_shared {
            "; these replicas share a GPU, so more of them is no fix either"
        } else {
            "; more replicas behind the same routing leave the queue where it is"
        };
        crate::advice::rec(
            "Route by each replica's queue and KV use instead of round-robin or connection count: a queue/KV-aware router (vLLM production-stack's router, llm-d's endpoint picker, the Gateway API inference extension); and review session affinity that pins clients to the queueing replicas",
            format!(
                "{}: the deployment had room the routing did not use{caveat}",
                self.numbers()
            ),
        )
    }

    fn rank_advice(&self, pod: &str) -> Recommendation {
        crate::advice::rec(
            format!(
                "Balance {pod}'s data-parallel ranks by their queues: vLLM's own API server does so by default; with external or hybrid load balancing (--data-parallel-external-lb, --data-parallel-hybrid-lb) the router in front must read each rank's queue"
            ),
            format!(
                "{}: the pod had room on ranks its balancing did not use",
                self.numbers()
            ),
        )
    }
}

impl Reading {
    /// `pod-0 (12.0 waiting, 16.0 running; its own verdict: batch_limit)`.
    fn describe(&self) -> String {
        let level = |x: Option<f64>| x.map_or("?".to_owned(), |v| format!("{v:.1}"));
        format!(
            "{} ({} waiting, {} running; its own verdict: {})",
            self.name,
            level(self.waiting),
            level(self.running),
            self.verdict.as_str()
        )
    }
}

fn more(n: usize) -> String {
    match n.saturating_sub(NAMED) {
        0 => String::new(),
        k => format!(" and {k} more"),
    }
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = xs.fold((0usize, 0.0), |(n, s), x| (n + 1, s + x));
    (n > 0).then(|| sum / n as f64)
}

/// Serving pods on one physical GPU: their headroom is one.
fn shared_gpu(g: &crate::signal::SharedGpu) -> Finding {
    let pods = g.pods.join(", ");
    let message = format!(
        "{} serving pods share one GPU ({}): {pods}. Their GPU time, memory bandwidth and memory are one budget, so adding replicas there adds no throughput — each more replica splits the same GPU time, loads the weights again and splits the KV pool",
        g.pods.len(),
        g.gpu
    );
    Finding {
        evidence: vec![Evidence {
            signal: Cow::Borrowed("gpu"),
            source: g.gpu.clone(),
            window: None,
            statistic: Cow::Borrowed("serving_pods"),
            value: g.pods.len() as f64,
            test: Cow::Borrowed(">="),
            threshold: Some(2.0),
        }],
        ..Finding::new("shared_gpu", Severity::Warning, message)
            .suggest("Give each replica a GPU of its own before adding replicas, or run fewer replicas on the shared GPU")
    }
}

#[cfg(test)]
mod tests;
