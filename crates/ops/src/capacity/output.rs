//! Where a capacity answer goes besides stdout: the HTML report, and the autoscaling objects
//! (KEDA `ScaledObject`, HPA on an external metric, the prometheus-adapter rule behind it) with
//! their threshold from the measured per-replica load.

use super::Searched;
use crate::OpsError;
use llmscope_diagnosis::capacity::{Answer, Axis};
use llmscope_generate::autoscaling::{self, AutoscalingSpec};
use std::path::{Path, PathBuf};

/// Writes the answer as one self-contained HTML page to `path` (never over a database).
pub fn write_html(a: &Answer, title: &str, path: &Path) -> Result<(), OpsError> {
    llmscope_store::guard::refuse_database(path)?;
    let page = llmscope_render::capacity::html(a, title);
    write(path, &page)
}

fn write(path: &Path, text: &str) -> Result<(), OpsError> {
    std::fs::write(path, text).map_err(|source| OpsError::WriteFile {
        path: path.display().to_string(),
        source,
    })
}

/// What the autoscaling objects scale and where they read from.
#[derive(Debug, Clone)]
pub struct Autoscaling {
    /// The Deployment they scale.
    pub deployment: String,
    pub namespace: Option<String>,
    /// The Prometheus the scaler queries.
    pub prometheus: String,
    /// Label matchers that select the deployment's pods.
    pub matchers: Vec<String>,
    pub min_replicas: u32,
    pub max_replicas: u32,
}

/// Writes the autoscaling objects into `dir` (created if missing); the paths written.
///
/// Refused, with what to do, when the search found no per-replica load (no knee, or only "at
/// least" one), when it searched the rate axis (the objects scale on requests in flight, which
/// a rate does not give), or when the engine's running gauge was never read.
pub fn write_autoscaling(
    s: &Searched,
    opts: &Autoscaling,
    dir: &Path,
) -> Result<Vec<PathBuf>, OpsError> {
    let spec = spec(s, opts)?;
    let files = autoscaling::files(&spec)?;
    std::fs::create_dir_all(dir).map_err(|source| OpsError::Create {
        path: dir.display().to_string(),
        source,
    })?;
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        llmscope_store::guard::refuse_database(&path)?;
        write(&path, &text)?;
        written.push(path);
    }
    Ok(written)
}

/// The generator's input from the answer.
fn spec(s: &Searched, opts: &Autoscaling) -> Result<AutoscalingSpec, OpsError> {
    let a = &s.answer;
    if a.axis == Axis::Rate {
        return Err(OpsError::Invalid(
            "--autoscaling-out scales on requests in flight per replica: search the concurrency axis (drop --rate)".to_owned(),
        ));
    }
    let Some(per_replica) = a.per_replica else {
        return Err(OpsError::Invalid(format!(
            "--autoscaling-out: the search found no per-replica load to scale on ({}); give it more --budget or a larger --max-concurrency",
            why_none(a)
        )));
    };
    let (Some(running), Some(waiting)) = (s.gauges.running, s.gauges.waiting) else {
        return Err(OpsError::NoData(
            "--autoscaling-out: the engine's running and waiting gauges were not read in any stage, so there is nothing to scale on; check the engine's metrics (llmscope targets)".to_owned(),
        ));
    };
    Ok(AutoscalingSpec {
        name: opts.deployment.clone(),
        namespace: opts.namespace.clone(),
        prometheus: opts.prometheus.clone(),
        running: running.to_owned(),
        waiting: waiting.to_owned(),
        matchers: opts
            .matchers
            .iter()
            .flat_map(|m| split_matchers(m))
            .collect(),
        per_replica_in_flight: per_replica,
        min_replicas: opts.min_replicas,
        max_replicas: opts.max_replicas,
        provenance: provenance(a, per_replica),
    })
}

/// Why an answer has no per-replica load.
fn why_none(a: &Answer) -> &'static str {
    match &a.knee {
        None => "no knee was found",
        Some(k) if k.at_least => "the knee is only known as a lower bound",
        Some(_) => "no stage met the SLO",
    }
}

/// What the threshold was measured from, said with the objects.
fn provenance(a: &Answer, per_replica: u32) -> Vec<String> {
    let mut lines = vec![format!(
        "{per_replica} requests in flight per replica, measured by llmscope capacity (runs {:?})",
        a.run_ids
    )];
    if let Some(k) = &a.knee {
        lines.push(format!(
            "knee at concurrency {} ({:.0} output tok/s), limited by {}",
            k.load.value(),
            k.output_tok_s,
            k.bottleneck.as_str()
        ));
    }
    if let (Some(g), Some(slo)) = (&a.max_goodput, &a.slo) {
        lines.push(format!(
            "max goodput {:.2} req/s under {slo} at concurrency {}",
            g.goodput_rps,
            g.load.value()
        ));
    }
    lines
}

/// `namespace="llm",pod=~"vllm-.*"` (one `--match`) → each matcher, commas inside quotes kept.
fn split_matchers(text: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted, mut escaped) = (Vec::new(), String::new(), false, false);
    for c in text.chars() {
        match c {
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            '"' if !escaped => quoted = !quoted,
            _ => {}
        }
        escaped = c == '\\' && !escaped;
        if c != ',' || quoted {
            cur.push(c);
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::split_matchers;

    #[test]
    fn one_match_flag_may_hold_several_matchers() {
        assert_eq!(
            split_matchers(r#"namespace="llm", pod=~"vllm-.*""#),
            [r#"namespace="llm""#, r#"pod=~"vllm-.*""#]
        );
        assert_eq!(
            split_matchers(r#"a="x,y",b!="\"q,""#),
            [r#"a="x,y""#, r#"b!="\"q,""#]
        );
        assert!(split_matchers(" , ").is_empty());
    }
}
