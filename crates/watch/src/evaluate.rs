//! One evaluation of the fleet: the last `--window` read once for everyone, split by
//! deployment, each diagnosed as `diagnose` would, and judged for stalls and version drift.
//!
//! Data flow: [`read_window`] hands over one catalogued name's series at a time (six names in
//! flight); each series goes to its deployment's [`SignalBuilder`] (the [`Grouping`] of its
//! labels; other shards' and unattributable series are dropped at once) and is then dropped
//! itself, so memory is one name's answer plus every deployment's per-timestamp folds. A
//! deployment exists when it has engine series. Then, per deployment, the pure diagnosis
//! ([`diagnose`]) and the stall judgement ([`stall::judge`]); the renamed names each deployment
//! exposes come from one instant query ([`DriftWatch::exposed`]).

use crate::WatchError;
use crate::drift::{Drift, DriftWatch};
use crate::fleet::{DeploymentKey, Grouping, Shard};
use llmscope_catalog::Exporter;
use llmscope_collect::prom::client::PromClient;
use llmscope_core::severity::Severity;
use llmscope_diagnosis::build::SignalBuilder;
use llmscope_diagnosis::fleet::ReplicaVerdict;
use llmscope_diagnosis::stall::{self, Stall, StallState};
use llmscope_diagnosis::{Bottleneck, Concept, Input, diagnose};
use llmscope_ops::window::{WindowQuery, read_window};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// What every evaluation does.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Seconds of history each evaluation reads.
    pub window: f64,
    /// Resolution of the read, seconds.
    pub step: f64,
    /// How long requests must sit in the engine with no progress to be a stall, seconds.
    pub stall_after: f64,
    /// `--match` matchers narrowing what is read (a union).
    pub matchers: Vec<String>,
    pub grouping: Grouping,
    pub shard: Shard,
    /// `--max-num-seqs`, when every deployment shares one.
    pub max_num_seqs: Option<u32>,
    pub drift: DriftWatch,
}

/// One deployment's state at one evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct DeploymentStatus {
    pub key: DeploymentKey,
    /// Engine replicas seen (series of the running gauge).
    pub replicas: u32,
    pub bottleneck: Bottleneck,
    pub confidence: f64,
    pub summary: String,
    /// The verdict's evidence, one line each.
    pub evidence: Vec<String>,
    /// The first recommendation, or what to do about a stall.
    pub advice: Option<String>,
    /// 1 − the highest KV-cache usage in the window (the fullest replica), when exported.
    pub kv_headroom: Option<f64>,
    /// 1 − the mean GPU busy ratio in the window, when the GPU series are attributable.
    pub gpu_headroom: Option<f64>,
    pub stall: Stall,
    pub drift: Vec<Drift>,
    /// Findings by severity: the diagnosis', the stall (critical), each drifted name (error).
    pub findings: BTreeMap<Severity, u32>,
    /// Each replica (pod, and `engine` rank) judged on its own, where the deployment has two or
    /// more: its verdict, levels and share of the finished requests.
    pub replica_verdicts: Vec<ReplicaVerdict>,
}

impl DeploymentStatus {
    /// How unevenly the deployment's replicas took its requests: the largest share of the
    /// finished requests over an even share (1 = even; one of 8 replicas taking all = 8).
    /// `None` with fewer than two replicas or a share unknown.
    pub fn imbalance(&self) -> Option<f64> {
        let n = self.replica_verdicts.len();
        if n < 2 {
            return None;
        }
        let shares: Option<Vec<f64>> = self
            .replica_verdicts
            .iter()
            .map(|r| r.share_of_requests)
            .collect();
        let max = shares?.into_iter().reduce(f64::max)?;
        Some(max * n as f64)
    }
}

/// One evaluation of the fleet (this shard's part of it).
#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    /// When it read up to (unix seconds).
    pub at: f64,
    pub duration_s: f64,
    pub deployments: Vec<DeploymentStatus>,
    pub series: usize,
    pub points: u64,
    /// Series whose labels lack a `--group-by` label (e.g. dcgm-exporter without pod mapping).
    pub unattributed: u64,
    /// Deployments seen that belong to other shards.
    pub other_shards: usize,
    /// The server's warnings (e.g. partial responses), after what the read left out of its
    /// answers (points not asked for, series past the cap).
    pub warnings: Vec<String>,
}

/// One deployment's series as they arrive: its signals (each replica's kept apart too, for
/// the fleet's verdicts) and whether an engine exporter was among them.
struct Acc {
    signals: SignalBuilder,
    engine: bool,
}

impl Default for Acc {
    fn default() -> Acc {
        Acc {
            signals: SignalBuilder::per_replica(),
            engine: false,
        }
    }
}

/// Reads the window ending at `now` and evaluates every deployment of this shard.
pub async fn evaluate(
    client: &PromClient,
    s: &Settings,
    now: f64,
) -> Result<Evaluation, WatchError> {
    let started = Instant::now();
    let mut fleet: HashMap<DeploymentKey, Acc> = HashMap::new();
    let mut others: std::collections::HashSet<DeploymentKey> = Default::default();
    let mut unattributed = 0u64;
    let q = WindowQuery {
        from: now - s.window,
        to: now,
        step: s.step,
        matchers: &s.matchers,
    };
    let read = read_window(client, &q, |series| {
        for one in series {
            let Some(key) = s.grouping.key(&one.key.labels) else {
                unattributed += 1;
                continue;
            };
            if !crate::fleet::owns(&s.shard, &key) {
                others.insert(key);
                continue;
            }
            let acc = fleet.entry(key).or_default();
            acc.engine |= matches!(
                Exporter::of_name(&one.key.name),
                Some(Exporter::Vllm | Exporter::Sglang | Exporter::Tgi)
            );
            acc.signals.add(std::slice::from_ref(&one));
        }
        Ok(())
    })
    .await
    .map_err(WatchError::from)?;
    let exposed = s.drift.exposed(client, &s.grouping).await?;
    let mut deployments: Vec<DeploymentStatus> = fleet
        .into_iter()
        .filter(|(_, acc)| acc.engine)
        .map(|(key, acc)| {
            let drift = exposed
                .get(&key)
                .map(|names| s.drift.judge(names))
                .unwrap_or_default();
            judge(key, acc.signals, drift, s)
        })
        .collect();
    deployments.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(Evaluation {
        at: now,
        duration_s: started.elapsed().as_secs_f64(),
        deployments,
        series: read.series,
        points: read.points,
        unattributed,
        other_shards: others.len(),
        warnings: read.notes().into_iter().chain(read.warnings).collect(),
    })
}

/// Diagnoses one deployment's signals.
fn judge(
    key: DeploymentKey,
    signals: SignalBuilder,
    drift: Vec<Drift>,
    s: &Settings,
) -> DeploymentStatus {
    let (mut input, _) = signals.finish();
    input.engine.max_num_seqs = s.max_num_seqs;
    input.scrape_interval_s = Some(s.step);
    let d = diagnose(&input);
    let stall = stall::judge(&input, s.stall_after);
    let mut findings: BTreeMap<Severity, u32> = BTreeMap::new();
    for f in &d.findings {
        *findings.entry(f.severity).or_default() += 1;
    }
    if stall.state == StallState::Stalled {
        *findings.entry(Severity::Critical).or_default() += 1;
    }
    if !drift.is_empty() {
        *findings.entry(Severity::Error).or_default() += drift.len() as u32;
    }
    let advice = if stall.state == StallState::Stalled {
        Some(
            "the engine is alive but not serving: read its log, then restart the pod; a /health probe does not see this"
                .to_owned(),
        )
    } else {
        d.recommendations
            .first()
            .map(|r| format!("{} — {}", r.action, r.reason))
    };
    DeploymentStatus {
        key,
        replicas: input.engines,
        bottleneck: d.verdict.bottleneck,
        confidence: d.verdict.confidence,
        summary: d.verdict.summary.clone(),
        evidence: d
            .evidence
            .iter()
            .map(|e| format!("{} {} {} = {:.3}", e.signal, e.source, e.statistic, e.value))
            .collect(),
        advice,
        kv_headroom: kv_headroom(&input),
        gpu_headroom: gpu_headroom(&input),
        stall,
        drift,
        findings,
        replica_verdicts: d.replicas,
    }
}

fn kv_headroom(input: &Input) -> Option<f64> {
    let kv = input.signal(Concept::KvUsage)?;
    let max = kv
        .points
        .iter()
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    max.is_finite().then(|| (1.0 - max).clamp(0.0, 1.0))
}

fn gpu_headroom(input: &Input) -> Option<f64> {
    let (signal, scale) = match input.signal(Concept::GrEngineActive) {
        Some(s) => (s, 1.0),
        None => (input.signal(Concept::GpuUtil)?, 100.0),
    };
    let values: Vec<f64> = signal
        .points
        .iter()
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() {
        return None;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64 / scale;
    Some((1.0 - mean).clamp(0.0, 1.0))
}

impl Evaluation {
    /// One line per deployment, for `watch --once` and logs.
    pub fn write_table(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        use llmscope_core::safe::terminal;
        writeln!(
            out,
            "{} deployment(s), {} series, {} points, read and judged in {:.2} s{}",
            self.deployments.len(),
            self.series,
            self.points,
            self.duration_s,
            if self.other_shards > 0 {
                format!(" ({} more belong to other shards)", self.other_shards)
            } else {
                String::new()
            }
        )?;
        for d in &self.deployments {
            let stall = match d.stall.state {
                StallState::Stalled => "STALLED",
                StallState::Serving => "serving",
                StallState::Unknown => "stall unknown",
            };
            writeln!(
                out,
                "  {:<40} {:<18} {:.2}  {stall}{}",
                terminal(&d.key.to_string()),
                d.bottleneck.as_str(),
                d.confidence,
                if d.drift.is_empty() { "" } else { "  DRIFT" }
            )?;
            writeln!(out, "      {}", terminal(&d.summary))?;
            if d.stall.state == StallState::Stalled {
                writeln!(out, "      stall: {}", terminal(&d.stall.why))?;
            }
            for x in &d.drift {
                writeln!(
                    out,
                    "      drift: {} use {}; the deployment now exposes {}",
                    terminal(&x.files.join(", ")),
                    terminal(&x.used),
                    terminal(&x.exposed)
                )?;
            }
            if let Some(a) = &d.advice {
                writeln!(out, "      do: {}", terminal(a))?;
            }
        }
        if self.unattributed > 0 {
            writeln!(
                out,
                "  {} series lacked a --group-by label and belong to no deployment",
                self.unattributed
            )?;
        }
        for w in &self.warnings {
            writeln!(out, "  Prometheus warned: {}", terminal(w))?;
        }
        Ok(())
    }
}

impl Evaluation {
    /// Whether a deployment needs someone now: stalled, or drifted from its dashboards/rules.
    pub fn needs_attention(&self) -> bool {
        self.deployments
            .iter()
            .any(|d| d.stall.state == StallState::Stalled || !d.drift.is_empty())
    }

    /// "2 deployment(s) in 0.21 s: 1 batch_limit, 1 load_not_reached; STALLED: llm/batch".
    pub fn summary_line(&self) -> String {
        let mut verdicts: BTreeMap<&str, usize> = BTreeMap::new();
        for d in &self.deployments {
            *verdicts.entry(d.bottleneck.as_str()).or_default() += 1;
        }
        let verdicts: Vec<String> = verdicts.iter().map(|(v, n)| format!("{n} {v}")).collect();
        let stalled: Vec<String> = self
            .deployments
            .iter()
            .filter(|d| d.stall.state == StallState::Stalled)
            .map(|d| llmscope_core::safe::terminal(&d.key.to_string()).into_owned())
            .collect();
        format!(
            "{} deployment(s) in {:.2} s: {}{}",
            self.deployments.len(),
            self.duration_s,
            if verdicts.is_empty() {
                "none found".to_owned()
            } else {
                verdicts.join(", ")
            },
            if stalled.is_empty() {
                String::new()
            } else {
                format!("; STALLED: {}", stalled.join(", "))
            }
        )
    }

    /// The evaluation as `--once` prints it: `text` (a table) or `json`.
    pub fn write(&self, format: &str, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        if format == "json" {
            serde_json::to_writer_pretty(&mut *out, self)?;
            writeln!(out)
        } else {
            self.write_table(out)
        }
    }
}
