//! The cluster around the simulated server: Kueue and kube-state-metrics pages for a set of teams,
//! so GPU cost attribution (`llmscope cost`) can be tested end to end.
//!
//! A [`Teams`] file (YAML) lists each team's namespace, its Kueue LocalQueue and ClusterQueue, the
//! ResourceFlavor and how many `nvidia.com/gpu` it reserves. [`kueue_page`] renders what Kueue
//! v0.19 exports for that (LocalQueueMetrics on, `enableClusterQueueResources: true`,
//! `replica_role="standalone"`); [`ksm_page`] renders `kube_namespace_labels` with `label_team`, as
//! kube-state-metrics does with `--metric-labels-allowlist=namespaces=[team]`. Both are Go
//! `client_golang` pages: label names sorted, shortest float formatting.

use promtext::MetricType;
use promtext::write::{FloatStyle, Writer};
use serde::Deserialize;

/// One team and what it holds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Team {
    pub team: String,
    pub namespace: String,
    pub local_queue: String,
    pub cluster_queue: String,
    /// ResourceFlavor name (`nvidia-l4`); prices are keyed by it.
    pub flavor: String,
    /// GPUs reserved (quota reservations of its workloads).
    pub gpus: f64,
    /// Nominal quota of its ClusterQueue.
    #[serde(default)]
    pub quota: Option<f64>,
    /// Workloads waiting for quota.
    #[serde(default)]
    pub pending: u32,
}

/// The teams of the simulated cluster.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Teams {
    #[serde(default = "default_cohort")]
    pub cohort: String,
    pub teams: Vec<Team>,
}

fn default_cohort() -> String {
    "gpu-pool".to_owned()
}

/// Why a teams file was rejected.
#[derive(Debug, thiserror::Error)]
pub enum TeamsError {
    #[error("cannot read the teams file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "the teams file {path} is not valid: {message} (expected `teams: [{{team, namespace, local_queue, cluster_queue, flavor, gpus}}]`)"
    )]
    Parse { path: String, message: String },
    #[error("the teams file {path}: {why}")]
    Invalid { path: String, why: String },
}

impl Teams {
    /// Three teams on L4s: search holds 8 GPUs, ads 4, research 2.
    pub fn example() -> Teams {
        let team = |t: &str, gpus: f64, quota: f64, pending: u32| Team {
            team: t.to_owned(),
            namespace: format!("llm-{t}"),
            local_queue: format!("{t}-queue"),
            cluster_queue: format!("{t}-cq"),
            flavor: "nvidia-l4".to_owned(),
            gpus,
            quota: Some(quota),
            pending,
        };
        Teams {
            cohort: default_cohort(),
            teams: vec![
                team("search", 8.0, 8.0, 2),
                team("ads", 4.0, 6.0, 0),
                team("research", 2.0, 4.0, 0),
            ],
        }
    }

    pub fn load(path: &std::path::Path) -> Result<Teams, TeamsError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TeamsError::Read {
            path: p.clone(),
            source,
        })?;
        let teams: Teams = serde_saphyr::from_str(&text).map_err(|e| TeamsError::Parse {
            path: p.clone(),
            message: e.to_string(),
        })?;
        if let Some(t) = teams.teams.iter().find(|t| {
            t.gpus.is_nan() || t.gpus < 0.0 || t.team.is_empty() || t.namespace.is_empty()
        }) {
            return Err(TeamsError::Invalid {
                path: p,
                why: format!("team `{}` needs a name, a namespace and gpus ≥ 0", t.team),
            });
        }
        Ok(teams)
    }
}

const GPU: &str = "nvidia.com/gpu";

/// A gauge family (name, help) and its value for a team.
type GaugeOfTeam = (&'static str, &'static str, fn(&Team) -> f64);

/// Kueue v0.19's page for these teams.
pub fn kueue_page(teams: &Teams) -> String {
    let mut out = String::with_capacity(4096);
    let mut w = Writer::new(&mut out, FloatStyle::GoShortest);
    let role = ("replica_role", "standalone");
    let per_cluster_queue: [GaugeOfTeam; 2] = [
        (
            "kueue_cluster_queue_resource_reservation",
            "Reports the cluster_queue's total resource reservation within all the flavors",
            |t| t.gpus,
        ),
        (
            "kueue_cluster_queue_nominal_quota",
            "Reports the cluster_queue's resource nominal quota within all the flavors",
            |t| t.quota.unwrap_or(t.gpus),
        ),
    ];
    for (name, help, value) in per_cluster_queue {
        w.family(name, help, MetricType::Gauge);
        for t in &teams.teams {
            let labels = [
                ("cluster_queue", t.cluster_queue.as_str()),
                ("cohort", &teams.cohort),
                ("flavor", &t.flavor),
                role,
                ("resource", GPU),
            ];
            w.sample(name, &labels, value(t));
        }
    }
    w.family(
        "kueue_pending_workloads",
        "Number of pending workloads, per 'cluster_queue' and 'status'.",
        MetricType::Gauge,
    );
    for t in &teams.teams {
        for (status, n) in [("active", t.pending), ("inadmissible", 0)] {
            let labels = [
                ("cluster_queue", t.cluster_queue.as_str()),
                role,
                ("status", status),
            ];
            w.sample("kueue_pending_workloads", &labels, n as f64);
        }
    }
    w.family(
        "kueue_local_queue_resource_reservation",
        "Reports the localQueue's total resource reservation within all the flavors",
        MetricType::Gauge,
    );
    for t in &teams.teams {
        let labels = [
            ("flavor", t.flavor.as_str()),
            ("name", &t.local_queue),
            ("namespace", &t.namespace),
            role,
            ("resource", GPU),
        ];
        w.sample("kueue_local_queue_resource_reservation", &labels, t.gpus);
    }
    w.family(
        "kueue_local_queue_pending_workloads",
        "Number of pending workloads, per 'local_queue' and 'status'.",
        MetricType::Gauge,
    );
    for t in &teams.teams {
        let labels = [
            ("name", t.local_queue.as_str()),
            ("namespace", &t.namespace),
            role,
            ("status", "active"),
        ];
        w.sample(
            "kueue_local_queue_pending_workloads",
            &labels,
            t.pending as f64,
        );
    }
    out
}

/// kube-state-metrics' `kube_namespace_labels` with the `team` label allow-listed.
pub fn ksm_page(teams: &Teams) -> String {
    let mut out = String::with_capacity(1024);
    let mut w = Writer::new(&mut out, FloatStyle::GoShortest);
    w.family(
        "kube_namespace_labels",
        "Kubernetes labels converted to Prometheus labels.",
        MetricType::Gauge,
    );
    for t in &teams.teams {
        w.sample(
            "kube_namespace_labels",
            &[("label_team", t.team.as_str()), ("namespace", &t.namespace)],
            1.0,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_parse_and_carry_the_reservations() {
        let teams = Teams::example();
        let page = kueue_page(&teams);
        let (families, errors) = promtext::parse_families(page.as_bytes());
        assert!(errors.is_empty(), "{errors:?}");
        let lq = families
            .iter()
            .find(|f| f.name.raw() == "kueue_local_queue_resource_reservation")
            .unwrap();
        let total: f64 = lq.samples.iter().map(|s| s.value).sum();
        assert_eq!(total, 14.0);
        assert!(page.contains("resource=\"nvidia.com/gpu\""));
        assert!(
            !page.contains("kueue_quota_reserved_resources"),
            "a name that never existed"
        );
        let ksm = ksm_page(&teams);
        assert!(
            ksm.contains(
                "kube_namespace_labels{label_team=\"search\",namespace=\"llm-search\"} 1\n"
            ),
            "{ksm}"
        );
    }

    #[test]
    fn teams_files_are_read_and_checked() {
        let dir = std::env::temp_dir().join(format!("llmscope-teams-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.yaml");
        std::fs::write(&good, "teams:\n  - {team: a, namespace: ns-a, local_queue: q, cluster_queue: cq, flavor: nvidia-l4, gpus: 3}\n").unwrap();
        assert_eq!(Teams::load(&good).unwrap().teams[0].gpus, 3.0);
        let bad = dir.join("bad.yaml");
        std::fs::write(&bad, "teams: [{team: a}]\n").unwrap();
        let err = Teams::load(&bad).unwrap_err().to_string();
        assert!(
            err.contains("bad.yaml") && err.contains("expected"),
            "{err}"
        );
        assert!(
            Teams::load(&dir.join("missing.yaml"))
                .unwrap_err()
                .to_string()
                .contains("cannot read")
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
