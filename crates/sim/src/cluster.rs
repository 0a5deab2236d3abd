//! The cluster around the simulated server: Kueue and kube-state-metrics pages for a set of teams,
//! so GPU cost attribution (`llmscope cost`) can be tested end to end.
//!
//! A [`Teams`] file (YAML) lists each team's namespace, its Kueue LocalQueue and ClusterQueue, the
//! ResourceFlavor and how many `nvidia.com/gpu` it reserves. [`kueue_page`] renders what Kueue
//! v0.19 exports for that (LocalQueueMetrics on, `enableClusterQueueResources: true`,
//! `replica_role="standalone"`) with the real label sets, types and HELP of v0.19.2
//! `pkg/metrics/metrics.go`. Its counters move: each reserved GPU runs one workload after
//! another, one admission in [`EVICT_EVERY`] is preempted, and [`kueue_page_at`] renders the page
//! at a given time of Kueue's life (the server starts it [`HISTORY_S`] in). [`ksm_page`] renders `kube_namespace_labels` with `label_team`, as
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
    #[error("cannot read the teams file")]
    Read(#[from] llmscope_core::files::FileError),
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
        let text = llmscope_core::files::read_text_bounded(
            path,
            SMALL_FILE_MAX_BYTES,
            "a teams file holds a few lines per team",
        )?;
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

/// The largest teams file read (a few lines per team).
const SMALL_FILE_MAX_BYTES: u64 = 16 << 20;

/// How long the simulated Kueue has been running when the simulator starts: its counters carry
/// an hour of admissions and evictions, as a real one scraped mid-life does (client_golang
/// counter vectors print a series only after its first event, so a fresh Kueue shows no
/// `kueue_evicted_workloads_total` at all).
pub const HISTORY_S: f64 = 3600.0;
/// How long a simulated workload holds its GPU before it finishes and the next is admitted.
pub const WORKLOAD_S: f64 = 600.0;
/// One admission in this many is later evicted (reason `Preempted`) and requeued.
pub const EVICT_EVERY: u64 = 20;

/// What a team's workloads have done since Kueue started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Activity {
    /// Workloads admitted (monotone; evicted ones that come back count again).
    pub admitted: u64,
    /// Workloads evicted by preemption.
    pub evicted: u64,
    /// Workloads admitted and running now (one GPU each).
    pub active: u64,
}

impl Team {
    /// The team's workloads `t` seconds after Kueue started: each reserved GPU runs one
    /// workload after another, each [`WORKLOAD_S`] long, the GPUs' start times spread evenly.
    pub fn activity_at(&self, t: f64) -> Activity {
        let slots = self.gpus.ceil() as u64;
        let t = if t.is_finite() { t.max(0.0) } else { 0.0 };
        let admitted = if slots == 0 {
            0
        } else {
            slots + (t * slots as f64 / WORKLOAD_S).floor() as u64
        };
        Activity {
            admitted,
            evicted: admitted / EVICT_EVERY,
            active: slots,
        }
    }
}

/// The labels of one series and its value.
type Series<'a> = (Vec<(&'static str, &'a str)>, f64);

/// A Kueue family: its name, HELP (v0.19.2 `pkg/metrics/metrics.go`, verbatim), type and the
/// series of every team.
struct KueueFamily<'a> {
    name: &'static str,
    help: String,
    ty: MetricType,
    series: Vec<Series<'a>>,
}

impl<'a> KueueFamily<'a> {
    fn gauge(name: &'static str, help: impl Into<String>, series: Vec<Series<'a>>) -> Self {
        let (help, ty) = (help.into(), MetricType::Gauge);
        KueueFamily {
            name,
            help,
            ty,
            series,
        }
    }

    fn counter(name: &'static str, help: impl Into<String>, series: Vec<Series<'a>>) -> Self {
        let (help, ty) = (help.into(), MetricType::Counter);
        KueueFamily {
            name,
            help,
            ty,
            series,
        }
    }
}

const PENDING_STATUS: &str = "\n'status' can have the following values:
- \"active\" means that the workloads are in the admission queue.
- \"inadmissible\" means there was a failed admission attempt for these workloads and they won't be retried until cluster conditions, which could make this workload admissible, change";

const EVICTION_REASONS: &str = "\nThe label 'reason' can have the following values:
- \"Preempted\" means that the workload was evicted in order to free resources for a workload with a higher priority or reclamation of nominal quota.
- \"PodsReadyTimeout\" means that the eviction took place due to a PodsReady timeout.
- \"AdmissionCheck\" means that the workload was evicted because at least one admission check transitioned to False.
- \"ClusterQueueStopped\" means that the workload was evicted because the ClusterQueue is stopped.
- \"LocalQueueStopped\" means that the workload was evicted because the LocalQueue is stopped.
- \"NodeFailures\" means that the workload was evicted due to node failures when using TopologyAwareScheduling.
- \"Deactivated\" means that the workload was evicted because spec.active is set to false.
The label 'underlying_cause' can have the following values:
- \"\" means that the value in 'reason' label is the root cause for eviction.
- \"AdmissionCheck\" means that the workload was evicted by Kueue due to a rejected admission check.
- \"MaximumExecutionTimeExceeded\" means that the workload was evicted by Kueue due to maximum execution time exceeded.
- \"RequeuingLimitExceeded\" means that the workload was evicted by Kueue due to requeuing limit exceeded.";

/// Kueue v0.19's page for these teams when the simulator starts ([`HISTORY_S`] into Kueue's life).
pub fn kueue_page(teams: &Teams) -> String {
    kueue_page_at(teams, HISTORY_S)
}

/// Kueue v0.19's page `t` seconds after it started. Families in name order and labels sorted,
/// as client_golang gathers them; counters whose labels never saw an event are absent.
pub fn kueue_page_at(teams: &Teams, t: f64) -> String {
    let mut families = kueue_families(teams, t);
    families.sort_by_key(|f| f.name);
    let mut out = String::with_capacity(8192);
    let mut w = Writer::new(&mut out, FloatStyle::GoShortest);
    for f in families.iter().filter(|f| !f.series.is_empty()) {
        w.family(f.name, &f.help, f.ty);
        for (labels, value) in &f.series {
            let mut labels = labels.clone();
            labels.sort_by_key(|(name, _)| *name);
            w.sample(f.name, &labels, *value);
        }
    }
    out
}

const ROLE: (&str, &str) = ("replica_role", "standalone");

fn kueue_families(teams: &Teams, t: f64) -> Vec<KueueFamily<'_>> {
    let mut out = cluster_queue_resources(teams);
    out.extend(cluster_queue_workloads(teams, t));
    out.extend(local_queue_families(teams, t));
    out
}

/// The `enableClusterQueueResources` gauges.
fn cluster_queue_resources(teams: &Teams) -> Vec<KueueFamily<'_>> {
    vec![
        KueueFamily::gauge(
            "kueue_cluster_queue_resource_reservation",
            "Reports the cluster_queue's total resource reservation within all the flavors",
            cq_resource_series(teams, |t| t.gpus),
        ),
        KueueFamily::gauge(
            "kueue_cluster_queue_nominal_quota",
            "Reports the cluster_queue's resource nominal quota within all the flavors",
            cq_resource_series(teams, |t| t.quota.unwrap_or(t.gpus)),
        ),
    ]
}

/// One GPU series per ClusterQueue, valued by `value`.
fn cq_resource_series(teams: &Teams, value: fn(&Team) -> f64) -> Vec<Series<'_>> {
    let mut out = Vec::new();
    for t in &teams.teams {
        let labels = vec![
            cq_label(t),
            ("cohort", teams.cohort.as_str()),
            ("flavor", t.flavor.as_str()),
            ROLE,
            ("resource", GPU),
        ];
        out.push((labels, value(t)));
    }
    out
}

/// Pending, admitted and evicted workloads per ClusterQueue.
fn cluster_queue_workloads(teams: &Teams, t: f64) -> Vec<KueueFamily<'_>> {
    let each = |count: fn(Activity) -> u64, evicted: bool| {
        event_series(teams, t, count, evicted, |team| vec![cq_label(team)])
    };
    vec![
        KueueFamily::gauge(
            "kueue_pending_workloads",
            format!(
                "The number of pending workloads, per 'cluster_queue' and 'status'.{PENDING_STATUS}"
            ),
            pending_series(teams, |team| vec![cq_label(team)]),
        ),
        KueueFamily::counter(
            "kueue_admitted_workloads_total",
            "The total number of admitted workloads per 'cluster_queue'",
            each(|a| a.admitted, false),
        ),
        KueueFamily::gauge(
            "kueue_admitted_active_workloads",
            "The number of admitted Workloads that are active, per 'cluster_queue'",
            cq_active_series(teams, t),
        ),
        KueueFamily::counter(
            "kueue_evicted_workloads_total",
            format!("The number of evicted workloads per 'cluster_queue',{EVICTION_REASONS}"),
            each(|a| a.evicted, true),
        ),
    ]
}

/// Workloads running at `t` per ClusterQueue.
fn cq_active_series(teams: &Teams, t: f64) -> Vec<Series<'_>> {
    teams
        .teams
        .iter()
        .map(|team| {
            (
                vec![cq_label(team), ROLE],
                team.activity_at(t).active as f64,
            )
        })
        .collect()
}

/// Pending workloads per queue (`head` labels it), `active` and `inadmissible` (always 0).
fn pending_series<'a>(
    teams: &'a Teams,
    head: impl Fn(&'a Team) -> Vec<(&'static str, &'a str)>,
) -> Vec<Series<'a>> {
    let mut pending = Vec::new();
    for team in &teams.teams {
        for (status, n) in [("active", team.pending), ("inadmissible", 0)] {
            let mut labels = head(team);
            labels.extend([ROLE, ("status", status)]);
            pending.push((labels, f64::from(n)));
        }
    }
    pending
}
fn cq_label(team: &Team) -> (&'static str, &str) {
    ("cluster_queue", team.cluster_queue.as_str())
}

fn lq_labels(team: &Team) -> Vec<(&'static str, &str)> {
    vec![
        ("name", team.local_queue.as_str()),
        ("namespace", team.namespace.as_str()),
    ]
}

/// A counter's series: one per team that saw at least one event, the eviction counters with
/// `reason="Preempted"` and an empty `underlying_cause` (preemption is its own root cause).
fn event_series<'a>(
    teams: &'a Teams,
    t: f64,
    count: fn(Activity) -> u64,
    evicted: bool,
    head: impl Fn(&'a Team) -> Vec<(&'static str, &'a str)>,
) -> Vec<Series<'a>> {
    let mut out = Vec::new();
    for team in &teams.teams {
        let n = count(team.activity_at(t));
        if n == 0 {
            continue;
        }
        let mut labels = head(team);
        labels.extend([("priority_class", ""), ROLE]);
        if evicted {
            labels.extend([("reason", "Preempted"), ("underlying_cause", "")]);
        }
        out.push((labels, n as f64));
    }
    out
}

/// The LocalQueueMetrics families (on by default since v0.17): the same workloads per team
/// namespace.
fn local_queue_families(teams: &Teams, t: f64) -> Vec<KueueFamily<'_>> {
    let each = |count: fn(Activity) -> u64, evicted: bool| {
        event_series(teams, t, count, evicted, |team| lq_labels(team))
    };
    vec![
        KueueFamily::gauge(
            "kueue_local_queue_pending_workloads",
            format!(
                "The number of pending workloads, per 'local_queue' and 'status'.{PENDING_STATUS}"
            ),
            pending_series(teams, lq_labels),
        ),
        KueueFamily::gauge(
            "kueue_local_queue_resource_reservation",
            "Reports the localQueue's total resource reservation within all the flavors",
            lq_reservation_series(teams),
        ),
        KueueFamily::counter(
            "kueue_local_queue_admitted_workloads_total",
            "The total number of admitted workloads per 'local_queue'",
            each(|a| a.admitted, false),
        ),
        KueueFamily::counter(
            "kueue_local_queue_evicted_workloads_total",
            format!("The number of evicted workloads per 'local_queue',{EVICTION_REASONS}"),
            each(|a| a.evicted, true),
        ),
    ]
}

/// The GPUs each team's LocalQueue holds.
fn lq_reservation_series(teams: &Teams) -> Vec<Series<'_>> {
    teams
        .teams
        .iter()
        .map(|team| {
            let mut labels = lq_labels(team);
            labels.extend([("flavor", team.flavor.as_str()), ROLE, ("resource", GPU)]);
            (labels, team.gpus)
        })
        .collect()
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

    fn family<'a, 'p>(
        families: &'a [promtext::Family<'p>],
        name: &str,
    ) -> Option<&'a promtext::Family<'p>> {
        families.iter().find(|f| f.name.raw() == name)
    }

    #[test]
    fn counters_move_as_workloads_are_admitted_and_evicted() {
        let teams = Teams::example();
        let total = |t: f64, name: &str| {
            let page = kueue_page_at(&teams, t);
            let (families, errors) = promtext::parse_families(page.as_bytes());
            assert!(errors.is_empty(), "{errors:?}");
            family(&families, name).map(|f| f.samples.iter().map(|s| s.value).sum::<f64>())
        };
        let admitted = "kueue_admitted_workloads_total";
        let evicted = "kueue_evicted_workloads_total";
        // 14 GPUs: 14 admitted at once, then 14 per WORKLOAD_S.
        assert_eq!(total(0.0, admitted), Some(14.0));
        assert_eq!(total(HISTORY_S, admitted), Some(14.0 + 14.0 * 6.0));
        assert!(total(HISTORY_S + 120.0, admitted) > total(HISTORY_S, admitted));
        // A fresh Kueue has evicted nothing: client_golang prints no series, no HELP.
        assert_eq!(total(0.0, evicted), None);
        assert!(!kueue_page_at(&teams, 0.0).contains(evicted));
        // An hour in: search (56 admissions) lost 2 workloads, ads (28) 1, research (14) none.
        assert_eq!(total(HISTORY_S, evicted), Some(3.0));
        assert_eq!(
            total(HISTORY_S, "kueue_local_queue_admitted_workloads_total"),
            total(HISTORY_S, admitted)
        );
        let page = kueue_page(&teams);
        assert!(page.contains(
            "kueue_evicted_workloads_total{cluster_queue=\"search-cq\",priority_class=\"\",reason=\"Preempted\",replica_role=\"standalone\",underlying_cause=\"\"} 2\n"
        ), "{page}");
        assert!(!page.contains("research-cq\",priority_class=\"\",reason"));
    }

    /// Every family of the page carries the label set, type and since-version the catalog
    /// records for Kueue v0.19 (itself read from `pkg/metrics/metrics.go`), in name order.
    #[test]
    fn the_page_is_what_kueue_0_19_exports() {
        use llmscope_catalog::{Kind, kueue};
        let page = kueue_page(&Teams::example());
        let (families, errors) = promtext::parse_families(page.as_bytes());
        assert!(errors.is_empty(), "{errors:?}");
        let names: Vec<&str> = families.iter().map(|f| f.name.raw()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(
            names, sorted,
            "client_golang gathers families in name order"
        );
        let at = llmscope_catalog::Version::new(0, 19, 2);
        for f in &families {
            let name = f.name.raw();
            let known = kueue::FAMILIES
                .iter()
                .find(|k| k.name == name)
                .unwrap_or_else(|| panic!("{name} is not a Kueue family"));
            let mut want = kueue::labels_at(known, at);
            want.sort_unstable();
            for s in &f.samples {
                let mut got: Vec<&str> = s.labels.iter().map(|l| l.name.raw()).collect();
                got.sort_unstable();
                assert_eq!(got, want, "{name}");
            }
            let kind = match f.ty {
                MetricType::Counter => Kind::Counter,
                MetricType::Gauge => Kind::Gauge,
                other => panic!("{name}: {other:?}"),
            };
            assert_eq!(kind, known.kind, "{name}");
            assert!(
                f.help.is_some_and(|h| !h.raw().is_empty()),
                "{name} has HELP"
            );
        }
        for name in [
            "kueue_admitted_workloads_total",
            "kueue_evicted_workloads_total",
            "kueue_pending_workloads",
            "kueue_local_queue_resource_reservation",
        ] {
            assert!(names.contains(&name), "{name}");
        }
        let help = family(&families, "kueue_pending_workloads").unwrap().help;
        let help = help.unwrap().unescape();
        assert!(help.contains("\n- \"inadmissible\" means"), "{help:?}");
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
