//! Who is who in the fleet: the deployment a series belongs to, and which replica of `watch`
//! evaluates it.
//!
//! A deployment is the series' values of the `--group-by` labels (default `namespace,pod`),
//! where a pod name stands for its owner: Kubernetes names a Deployment's pods
//! `<name>-<pod-template-hash>-<suffix>`, a StatefulSet's `<name>-<ordinal>`, a DaemonSet's or
//! Job's `<name>-<suffix>`, with hash and suffix drawn from the alphabet
//! `bcdfghjklmnpqrstvwxz2456789` (no vowels, no look-alikes). The owner is what survives a
//! rollout; a pod name is not.

use llmscope_core::series::Labels;
use std::fmt;

/// The labels that tell deployments apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grouping {
    labels: Vec<String>,
}

impl Default for Grouping {
    fn default() -> Self {
        Grouping {
            labels: vec!["namespace".to_owned(), "pod".to_owned()],
        }
    }
}

impl Grouping {
    /// From `--group-by a,b,c`.
    pub fn parse(spec: &str) -> Result<Grouping, String> {
        let labels: Vec<String> = spec
            .split(',')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        if labels.is_empty() {
            return Err("--group-by needs at least one label, e.g. namespace,pod".to_owned());
        }
        if let Some(bad) = labels.iter().find(|l| !is_label_name(l)) {
            return Err(format!(
                "--group-by: `{bad}` is not a Prometheus label name (letters, digits, `_`; not starting with a digit)"
            ));
        }
        Ok(Grouping { labels })
    }

    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The deployment `labels` belong to, or `None` when a grouping label is missing.
    ///
    /// A series that carried a grouping label itself and was scraped without `honor_labels`
    /// has it as `exported_<label>`, the scrape target's own value in its place: dcgm-exporter
    /// names the pod that uses the GPU, and its chart's ServiceMonitor does not honour labels,
    /// so `pod` is the exporter's pod and `exported_pod` the workload's. The exported value wins.
    pub fn key(&self, labels: &Labels) -> Option<DeploymentKey> {
        let mut namespace = String::new();
        let mut parts: Vec<&str> = Vec::with_capacity(self.labels.len());
        for l in &self.labels {
            let exported = labels
                .get(&format!("exported_{l}"))
                .filter(|v| !v.is_empty());
            let v = exported.or_else(|| labels.get(l).filter(|v| !v.is_empty()))?;
            match l.as_str() {
                "namespace" => namespace = v.to_owned(),
                "pod" => parts.push(owner(v)),
                _ => parts.push(v),
            }
        }
        Some(DeploymentKey {
            namespace,
            deployment: parts.join("/"),
        })
    }
}

fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A deployment: its namespace (empty when not grouped by one) and its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct DeploymentKey {
    pub namespace: String,
    pub deployment: String,
}

impl fmt::Display for DeploymentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.deployment)
        } else {
            write!(f, "{}/{}", self.namespace, self.deployment)
        }
    }
}

/// Kubernetes' alphabet for generated name parts.
fn generated(part: &str, len: std::ops::RangeInclusive<usize>) -> bool {
    len.contains(&part.len())
        && part
            .bytes()
            .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
}

/// The owner's name of a pod (see the module's text); a name that fits no pattern is its own.
pub fn owner(pod: &str) -> &str {
    let parts: Vec<&str> = pod.rsplitn(3, '-').collect();
    match parts.as_slice() {
        // <name>-<pod-template-hash>-<suffix>
        [suffix, hash, name] if generated(suffix, 5..=5) && generated(hash, 5..=10) => name,
        // <name>-<suffix> (DaemonSet, Job) or <name>-<ordinal> (StatefulSet)
        [last, ..] if generated(last, 5..=5) || is_ordinal(last) => {
            &pod[..pod.len() - last.len() - 1]
        }
        _ => pod,
    }
}

fn is_ordinal(s: &str) -> bool {
    !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit())
}

pub use llmscope_core::shard::Shard;

/// Whether `shard` of the watch replicas evaluates `key` (`--shard I/N`: the deployments whose
/// key hashes to I modulo N). FNV-1a over `namespace/deployment`: stable across builds and
/// machines, so N replicas agree without talking to each other.
pub fn owns(shard: &Shard, key: &DeploymentKey) -> bool {
    if shard.count == 1 {
        return true;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = key
        .namespace
        .bytes()
        .chain(std::iter::once(b'/'))
        .chain(key.deployment.bytes());
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    shard.takes(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        Labels::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn a_pod_stands_for_its_owner() {
        assert_eq!(owner("vllm-llama-7d9f8c6b5d-x2k9p"), "vllm-llama");
        assert_eq!(owner("vllm-0"), "vllm");
        assert_eq!(owner("qwen-server-12"), "qwen-server");
        assert_eq!(owner("dcgm-exporter-h5x2q"), "dcgm-exporter");
        // Vowels are never generated: a plain name stays whole.
        assert_eq!(owner("my-model-server"), "my-model-server");
        assert_eq!(owner("vllm"), "vllm");
    }

    #[test]
    fn the_key_is_namespace_and_owner_and_needs_every_label() {
        let g = Grouping::default();
        let k = g
            .key(&labels(&[
                ("namespace", "llm"),
                ("pod", "chat-5d8f7c9b6-x7k2p"),
                ("engine", "0"),
            ]))
            .unwrap();
        assert_eq!(k.to_string(), "llm/chat");
        assert_eq!(g.key(&labels(&[("namespace", "llm")])), None);
        // A GPU series behind dcgm-exporter's ServiceMonitor (honorLabels false): the target
        // labels are the exporter's, the workload's are exported_* (dcgm-exporter issue #340).
        let gpu = g
            .key(&labels(&[
                ("namespace", "gpu-operator"),
                ("pod", "nvidia-dcgm-exporter-h5x2q"),
                ("exported_namespace", "llm"),
                ("exported_pod", "chat-5d8f7c9b6-x7k2p"),
                ("gpu", "0"),
            ]))
            .unwrap();
        assert_eq!(gpu.to_string(), "llm/chat");
        let by_job = Grouping::parse("job, model_name").unwrap();
        let k = by_job
            .key(&labels(&[("job", "vllm"), ("model_name", "qwen")]))
            .unwrap();
        assert_eq!(k.to_string(), "vllm/qwen");
        assert!(Grouping::parse(" , ").is_err());
        assert!(
            Grouping::parse("namespace,1pod")
                .unwrap_err()
                .contains("1pod")
        );
    }

    #[test]
    fn shards_split_the_fleet_exactly_once() {
        assert!(Shard::parse("3/3").is_err());
        assert!(Shard::parse("0/0").is_err());
        assert!(Shard::parse("x").is_err());
        let shards: Vec<Shard> = (0..3)
            .map(|i| Shard::parse(&format!("{i}/3")).unwrap())
            .collect();
        let mut per = [0usize; 3];
        for d in 0..300 {
            let key = DeploymentKey {
                namespace: "llm".to_owned(),
                deployment: format!("model-{d}"),
            };
            let owners: Vec<usize> = (0..3).filter(|&i| owns(&shards[i], &key)).collect();
            assert_eq!(owners.len(), 1, "{key} owned by {owners:?}");
            per[owners[0]] += 1;
        }
        assert!(per.iter().all(|&n| n > 70), "balanced enough: {per:?}");
    }
}
