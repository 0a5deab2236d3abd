//! GPU cost attribution, pure: reservations in, GPU-hours and money per team out.
//!
//! Inputs are series already read from Prometheus: Kueue GPU reservations (per namespace through
//! LocalQueues, or per ClusterQueue with a queue → team map), `kube_namespace_labels` for the
//! team label, GPU busy fraction (dcgm) and generated-token counters per namespace. Every
//! integral uses the series' own timestamps (a step function between samples, no resampling),
//! so the GPU-hours of a constant reservation are exact to within one sample interval. What is
//! missing is said, with the fix, in [`CostReport::warnings`] — never silently 0.

use crate::series::Series;
use serde::Serialize;
use std::collections::BTreeMap;

/// A price per GPU-hour for a flavor or GPU model key (`nvidia-l4`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Price {
    pub key: String,
    pub per_gpu_hour: f64,
}

/// Parses `nvidia-l4=0.80/h` (the `/h` is optional).
pub fn parse_price(text: &str) -> Result<Price, String> {
    let (key, value) = text.split_once('=').ok_or_else(|| {
        format!("invalid price `{text}`: write KEY=PRICE/h, e.g. nvidia-l4=0.80/h")
    })?;
    let value = value.trim().trim_end_matches("/h").trim_end_matches("/hr");
    let per_gpu_hour: f64 = value
        .parse()
        .map_err(|_| format!("invalid price `{text}`: `{value}` is not a number"))?;
    if !(per_gpu_hour.is_finite() && per_gpu_hour >= 0.0) || key.trim().is_empty() {
        return Err(format!(
            "invalid price `{text}`: a key and a non-negative price per GPU-hour are needed"
        ));
    }
    Ok(Price {
        key: normalise_key(key),
        per_gpu_hour,
    })
}

/// `NVIDIA L4` / `nvidia_l4` / `Nvidia-L4` → `nvidia-l4`.
pub fn normalise_key(s: &str) -> String {
    s.trim().to_ascii_lowercase().replace([' ', '_'], "-")
}

/// ∫ v dt over `[from, to]` in value-hours: each sample holds until the next one (or `to`).
pub fn integrate_hours(s: &Series, from: f64, to: f64) -> f64 {
    let pts: Vec<_> = s
        .points
        .iter()
        .filter(|p| p.v.is_finite() && p.t <= to)
        .collect();
    let mut total = 0.0;
    for (i, p) in pts.iter().enumerate() {
        let start = p.t.max(from);
        let end = pts.get(i + 1).map_or(to, |n| n.t.min(to));
        if end > start {
            total += p.v * (end - start);
        }
    }
    total / 3600.0
}

/// Increase of a counter over the window, with resets (a drop restarts from 0).
pub fn increase(s: &Series, from: f64, to: f64) -> f64 {
    let pts: Vec<f64> = s
        .points
        .iter()
        .filter(|p| p.t >= from && p.t <= to && p.v.is_finite())
        .map(|p| p.v)
        .collect();
    pts.windows(2)
        .map(|w| if w[1] >= w[0] { w[1] - w[0] } else { w[1] })
        .sum()
}

/// Mean value over the window, time-weighted, over the series that have points in it.
fn time_mean<'a>(s: impl IntoIterator<Item = &'a Series>, from: f64, to: f64) -> Option<f64> {
    let mut area = 0.0;
    let mut covered = 0.0;
    for series in s {
        let Some(first) = series
            .points
            .iter()
            .find(|p| p.t >= from && p.t <= to && p.v.is_finite())
        else {
            continue;
        };
        area += integrate_hours(series, first.t, to);
        covered += (to - first.t) / 3600.0;
    }
    (covered > 0.0).then(|| area / covered)
}

/// GPU series by the namespace of the workload dcgm-exporter mapped them to (`--kubernetes`).
///
/// Behind a ServiceMonitor without `honorLabels` the workload's namespace is
/// `exported_namespace` and `namespace` is the exporter's own; `pod_namespace` is the
/// `--use-old-namespace` spelling. A series is only attributed to a namespace that holds
/// reservations, so the exporter's namespace never passes for a team's.
fn busy_by_namespace<'a>(
    input: &'a CostInput,
    reserving: &[&str],
) -> BTreeMap<&'a str, Vec<&'a Series>> {
    let mut out: BTreeMap<&str, Vec<&Series>> = BTreeMap::new();
    for s in &input.gpu_busy {
        let ns = ["exported_namespace", "pod_namespace", "namespace"]
            .iter()
            .filter_map(|l| s.key.labels.get(l))
            .find(|ns| reserving.contains(ns));
        if let Some(ns) = ns {
            out.entry(ns).or_default().push(s);
        }
    }
    out
}

/// A team's GPU busy fraction and where it came from.
#[derive(Debug, Clone, Copy)]
struct Busy {
    fraction: f64,
    basis: BusyBasis,
}

/// Whose utilisation a team's busy GPU-hours use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BusyBasis {
    /// The GPUs dcgm-exporter attributed to the team's namespaces.
    Workload,
    /// The mean over every GPU in the window (no pod mapping for this team).
    Fleet,
}

/// Everything the computation reads.
#[derive(Debug, Clone, Default)]
pub struct CostInput {
    pub from: f64,
    pub to: f64,
    /// `kueue_local_queue_resource_reservation{resource="nvidia.com/gpu"}` series.
    pub local_queue_reservations: Vec<Series>,
    /// `kueue_cluster_queue_resource_reservation{resource="nvidia.com/gpu"}` series.
    pub cluster_queue_reservations: Vec<Series>,
    /// ClusterQueue → team, for the ClusterQueue fallback.
    pub queue_team: BTreeMap<String, String>,
    /// `kube_namespace_labels` series.
    pub namespace_labels: Vec<Series>,
    /// The namespace label holding the team (`label_team` for `--team-label team`).
    pub team_label: String,
    /// GPU busy as a 0..1 fraction (GR_ENGINE_ACTIVE, or GPU_UTIL / 100), all GPUs.
    pub gpu_busy: Vec<Series>,
    /// `vllm:generation_tokens_total` (or another engine's) series with a namespace label.
    pub generated_tokens: Vec<Series>,
    pub prices: Vec<Price>,
    /// Inputs the caller could not read (`GPU utilisation: query … failed: …`): the answer is
    /// partial, and says so in [`CostReport::missing`].
    pub missing: Vec<String>,
}

/// One team's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TeamCost {
    pub team: String,
    pub namespaces: Vec<String>,
    /// Reserved GPU-hours: always known for a team; for the totals, unknown over no team.
    pub gpu_hours: Option<f64>,
    pub busy_gpu_hours: Option<f64>,
    /// Whose utilisation `busy_gpu_hours` uses (absent when it is unknown).
    pub busy_basis: Option<BusyBasis>,
    pub idle_gpu_hours: Option<f64>,
    pub cost: Option<f64>,
    pub idle_cost: Option<f64>,
    pub output_tokens: Option<f64>,
    pub cost_per_million_tokens: Option<f64>,
    /// Which price applied to which flavor.
    pub prices: Vec<String>,
    pub advice: String,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostReport {
    pub from: f64,
    pub to: f64,
    pub teams: Vec<TeamCost>,
    pub totals: TeamCost,
    pub warnings: Vec<String>,
    /// What could not be read: figures that depend on it are absent, never 0.
    pub missing: Vec<String>,
}

fn label<'a>(s: &'a Series, names: &[&str]) -> Option<&'a str> {
    names.iter().find_map(|n| s.key.labels.get(n))
}

/// namespace → team from `kube_namespace_labels`.
fn teams_of_namespaces(input: &CostInput, warnings: &mut Vec<String>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for s in &input.namespace_labels {
        if let (Some(ns), Some(team)) = (
            label(s, &["namespace", "exported_namespace"]),
            s.key.labels.get(&input.team_label),
        ) {
            map.insert(ns.to_owned(), team.to_owned());
        }
    }
    if map.is_empty() {
        warnings.push(format!(
            "no `{}` on kube_namespace_labels: kube-state-metrics exports namespace labels only with --metric-labels-allowlist=namespaces=[{}] (the label is then `{}`, not `{}`); teams are shown by namespace",
            input.team_label,
            input.team_label.trim_start_matches("label_"),
            input.team_label,
            input.team_label.trim_start_matches("label_")
        ));
    }
    map
}

/// Reservation series grouped by team, with their flavors.
fn reservations_by_team<'a>(
    input: &'a CostInput,
    ns_team: &BTreeMap<String, String>,
    warnings: &mut Vec<String>,
) -> BTreeMap<String, Vec<(String, &'a Series)>> {
    let mut by_team: BTreeMap<String, Vec<(String, &Series)>> = BTreeMap::new();
    if !input.local_queue_reservations.is_empty() {
        for s in &input.local_queue_reservations {
            let ns = label(s, &["namespace", "exported_namespace"])
                .unwrap_or("?")
                .to_owned();
            let team = ns_team.get(&ns).cloned().unwrap_or_else(|| ns.clone());
            by_team.entry(team).or_default().push((ns, s));
        }
    } else if !input.cluster_queue_reservations.is_empty() {
        for s in &input.cluster_queue_reservations {
            let cq = s.key.labels.get("cluster_queue").unwrap_or("?").to_owned();
            let team = input
                .queue_team
                .get(&cq)
                .cloned()
                .unwrap_or_else(|| cq.clone());
            by_team
                .entry(team)
                .or_default()
                .push((format!("cluster_queue {cq}"), s));
        }
        if input.queue_team.is_empty() {
            warnings.push("per-team costs come from ClusterQueues without a --queue-team mapping: teams are shown by ClusterQueue".to_owned());
        }
    } else {
        warnings.push(
            "no Kueue GPU reservations: kueue_local_queue_resource_reservation needs the LocalQueueMetrics feature gate (on by default since Kueue v0.17), kueue_cluster_queue_resource_reservation needs `metrics.enableClusterQueueResources: true` in the Kueue config (note: `kueue_quota_reserved_resources` has never existed)"
                .to_owned(),
        );
    }
    by_team
}

/// Computes the report. Samples no GPU or counter can take — a negative reservation, a busy
/// fraction outside 0..1, a negative token count, NaN — are left out and named in the warnings,
/// never priced.
pub fn compute(input: &CostInput) -> CostReport {
    let mut warnings = Vec::new();
    let input = &possible_only(input, &mut warnings);
    let ns_team = teams_of_namespaces(input, &mut warnings);
    let by_team = reservations_by_team(input, &ns_team, &mut warnings);
    let fleet = time_mean(&input.gpu_busy, input.from, input.to);
    let reserving: Vec<&str> = by_team
        .values()
        .flatten()
        .map(|(ns, _)| ns.as_str())
        .collect();
    let by_ns = busy_by_namespace(input, &reserving);
    let tokens_by_ns = tokens_by_namespace(input);
    if input.generated_tokens.is_empty() {
        warnings.push("no generated-token counters (vllm:generation_tokens_total): cost per million tokens is unknown".to_owned());
    }
    let mut unpriced = Vec::new();
    let teams: Vec<TeamCost> = by_team
        .iter()
        .map(|(team, series)| {
            let busy = team_busy(series, &by_ns, fleet, input);
            team_cost(team, series, busy, &tokens_by_ns, input, &mut unpriced)
        })
        .collect();
    busy_warnings(fleet, &teams, &mut warnings);
    unpriced.sort();
    unpriced.dedup();
    for f in unpriced {
        warnings.push(format!("no price for flavor `{f}`: pass --price {f}=PRICE/h (cost left empty, GPU-hours still counted)"));
    }
    let totals = sum(&teams);
    CostReport {
        from: input.from,
        to: input.to,
        teams,
        totals,
        warnings,
        missing: input.missing.clone(),
    }
}

/// `input` without the samples its inputs cannot take, each series that had some named in
/// `warnings` with how many and their range.
fn possible_only(input: &CostInput, warnings: &mut Vec<String>) -> CostInput {
    let mut out = input.clone();
    let reservation = "a GPU reservation is a count of GPUs, 0 or more";
    let inputs = [
        (
            &mut out.local_queue_reservations,
            Domain::Count,
            reservation,
        ),
        (
            &mut out.cluster_queue_reservations,
            Domain::Count,
            reservation,
        ),
        (
            &mut out.gpu_busy,
            Domain::Fraction,
            "GPU busy time is a fraction from 0 to 1 (0 to 100 %)",
        ),
        (
            &mut out.generated_tokens,
            Domain::Count,
            "a token counter is 0 or more",
        ),
    ];
    for (series, domain, says) in inputs {
        for s in series.iter_mut() {
            let bad: Vec<f64> = s
                .points
                .iter()
                .map(|p| p.v)
                .filter(|v| !domain.holds(*v))
                .collect();
            if bad.is_empty() {
                continue;
            }
            s.points.retain(|p| domain.holds(p.v));
            warnings.push(format!(
                "{}: {} sample(s) left out as impossible ({}): {says} — check the exporter",
                s.key,
                bad.len(),
                value_range(&bad)
            ));
        }
    }
    out
}

/// The values an input can take.
#[derive(Debug, Clone, Copy)]
enum Domain {
    /// GPUs, tokens: finite, 0 or more.
    Count,
    /// A busy fraction: finite, 0 to 1.
    Fraction,
}

impl Domain {
    fn holds(self, v: f64) -> bool {
        v.is_finite()
            && match self {
                Domain::Count => v >= 0.0,
                Domain::Fraction => (0.0..=1.0).contains(&v),
            }
    }
}

/// `-8`, `-8 … -2`, `NaN`, `-8 … 3, NaN`: the range of impossible values, NaN said apart.
fn value_range(values: &[f64]) -> String {
    let numbers: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    let lo = numbers.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut parts = Vec::new();
    match numbers.len() {
        0 => {}
        _ if lo == hi => parts.push(format!("{lo}")),
        _ => parts.push(format!("{lo} … {hi}")),
    }
    if numbers.len() < values.len() {
        parts.push("NaN".to_owned());
    }
    parts.join(", ")
}

/// A team's busy fraction: its own namespaces' GPU utilisation where dcgm carries them, the
/// fleet's otherwise.
fn team_busy(
    series: &[(String, &Series)],
    by_ns: &BTreeMap<&str, Vec<&Series>>,
    fleet: Option<f64>,
    input: &CostInput,
) -> Option<Busy> {
    let mut namespaces: Vec<&str> = series.iter().map(|(ns, _)| ns.as_str()).collect();
    namespaces.sort_unstable();
    namespaces.dedup();
    let own = namespaces
        .iter()
        .filter_map(|ns| by_ns.get(ns))
        .flatten()
        .copied();
    match time_mean(own, input.from, input.to) {
        Some(fraction) => Some(Busy {
            fraction,
            basis: BusyBasis::Workload,
        }),
        None => fleet.map(|fraction| Busy {
            fraction,
            basis: BusyBasis::Fleet,
        }),
    }
}

/// Says where busy GPU-hours could not be measured per team.
fn busy_warnings(fleet: Option<f64>, teams: &[TeamCost], warnings: &mut Vec<String>) {
    let on_fleet: Vec<&str> = teams
        .iter()
        .filter(|t| t.busy_basis == Some(BusyBasis::Fleet))
        .map(|t| t.team.as_str())
        .collect();
    if fleet.is_none() {
        warnings.push(
            "no GPU utilisation (dcgm-exporter) in the window: busy and idle GPU-hours are unknown"
                .to_owned(),
        );
    } else if !on_fleet.is_empty() {
        warnings.push(format!(
            "busy GPU-hours of {} use the fleet-average GPU utilisation: no dcgm series carries their namespaces. dcgm-exporter maps GPUs to pods with --kubernetes (and --kubernetes-virtual-gpus for shared GPUs); behind a ServiceMonitor the workload's namespace is `exported_namespace`",
            on_fleet.join(", ")
        ));
    }
}

fn tokens_by_namespace(input: &CostInput) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for s in &input.generated_tokens {
        let ns = label(s, &["namespace", "exported_namespace"])
            .unwrap_or("")
            .to_owned();
        *out.entry(ns).or_insert(0.0) += increase(s, input.from, input.to);
    }
    out
}

fn team_cost(
    team: &str,
    series: &[(String, &Series)],
    busy: Option<Busy>,
    tokens: &BTreeMap<String, f64>,
    input: &CostInput,
    unpriced: &mut Vec<String>,
) -> TeamCost {
    let mut gpu_hours = 0.0;
    let mut cost = Some(0.0);
    let mut prices = Vec::new();
    let mut namespaces: Vec<String> = Vec::new();
    for (ns, s) in series {
        let hours = integrate_hours(s, input.from, input.to);
        gpu_hours += hours;
        if !namespaces.contains(ns) {
            namespaces.push(ns.clone());
        }
        let flavor = normalise_key(s.key.labels.get("flavor").unwrap_or("unknown"));
        match input.prices.iter().find(|p| p.key == flavor) {
            Some(p) => {
                cost = cost.map(|c| c + hours * p.per_gpu_hour);
                let line = format!("{flavor} at {:.2}/GPU-hour", p.per_gpu_hour);
                if !prices.contains(&line) {
                    prices.push(line);
                }
            }
            None if hours > 0.0 => {
                cost = None;
                unpriced.push(flavor);
            }
            None => {}
        }
    }
    let busy_h = busy.map(|b| gpu_hours * b.fraction);
    let idle_h = busy_h.map(|b| gpu_hours - b);
    let idle_cost = match (cost, idle_h) {
        (Some(c), Some(i)) if gpu_hours > 0.0 => Some(c * i / gpu_hours),
        _ => None,
    };
    let out_tokens: Option<f64> = {
        let t: Vec<f64> = namespaces
            .iter()
            .filter_map(|ns| tokens.get(ns).copied())
            .collect();
        (!t.is_empty()).then(|| t.iter().sum())
    };
    let per_million = match (cost, out_tokens) {
        (Some(c), Some(t)) if t > 0.0 => Some(c / t * 1e6),
        _ => None,
    };
    let mut tc = TeamCost {
        team: team.to_owned(),
        namespaces,
        gpu_hours: Some(gpu_hours),
        busy_gpu_hours: busy_h,
        busy_basis: busy.map(|b| b.basis),
        idle_gpu_hours: idle_h,
        cost,
        idle_cost,
        output_tokens: out_tokens,
        cost_per_million_tokens: per_million,
        prices,
        advice: String::new(),
    };
    tc.advice = advice(gpu_hours, input.to - input.from, busy.map(|b| b.fraction));
    tc
}

/// "holds 8 GPUs, busy 11% → return 6".
fn advice(gpu_hours: f64, window_s: f64, busy: Option<f64>) -> String {
    let held = if window_s > 0.0 {
        gpu_hours * 3600.0 / window_s
    } else {
        0.0
    };
    match busy {
        None => format!("holds {held:.1} GPUs on average; utilisation unknown"),
        Some(b) => {
            let needed = (held * b / 0.7)
                .ceil()
                .max(if held > 0.0 { 1.0 } else { 0.0 });
            let give_back = (held - needed).floor().max(0.0);
            if give_back >= 1.0 {
                format!(
                    "holds {held:.1} GPUs, busy {:.0}% → return {give_back:.0} (keeps the rest near 70% busy)",
                    b * 100.0
                )
            } else {
                format!(
                    "holds {held:.1} GPUs, busy {:.0}%: sized about right",
                    b * 100.0
                )
            }
        }
    }
}

/// The totals row. Sums start at +0.0 (`Sum for f64` starts at -0.0, printed `-0.00`), and a
/// total over no team is unknown, not 0 (issue 12, point 5).
fn sum(teams: &[TeamCost]) -> TeamCost {
    let opt_sum = |f: &dyn Fn(&TeamCost) -> Option<f64>| {
        let first = f(teams.first()?);
        teams[1..].iter().fold(first, |acc, t| Some(acc? + f(t)?))
    };
    let cost = opt_sum(&|t| t.cost);
    let tokens = opt_sum(&|t| t.output_tokens);
    TeamCost {
        team: "total".to_owned(),
        namespaces: teams.iter().flat_map(|t| t.namespaces.clone()).collect(),
        gpu_hours: opt_sum(&|t| t.gpu_hours),
        busy_gpu_hours: opt_sum(&|t| t.busy_gpu_hours),
        busy_basis: None,
        idle_gpu_hours: opt_sum(&|t| t.idle_gpu_hours),
        cost,
        idle_cost: opt_sum(&|t| t.idle_cost),
        output_tokens: tokens,
        cost_per_million_tokens: match (cost, tokens) {
            (Some(c), Some(t)) if t > 0.0 => Some(c / t * 1e6),
            _ => None,
        },
        prices: Vec::new(),
        advice: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{Labels, Point, SeriesKey};

    fn s(name: &str, labels: &[(&str, &str)], pts: &[(f64, f64)]) -> Series {
        Series {
            key: SeriesKey::new(
                name,
                Labels::new(labels.iter().map(|(k, v)| (k.to_string(), v.to_string()))),
            ),
            points: pts.iter().map(|&(t, v)| Point { t, v }).collect(),
        }
    }

    fn flat(v: f64) -> Vec<(f64, f64)> {
        (0..=60).map(|i| (i as f64 * 60.0, v)).collect()
    }

    fn input() -> CostInput {
        CostInput {
            from: 0.0,
            to: 3600.0,
            local_queue_reservations: vec![
                s(
                    "kueue_local_queue_resource_reservation",
                    &[("namespace", "llm-search"), ("flavor", "nvidia-l4")],
                    &flat(8.0),
                ),
                s(
                    "kueue_local_queue_resource_reservation",
                    &[("namespace", "llm-ads"), ("flavor", "nvidia-l4")],
                    &flat(2.0),
                ),
            ],
            namespace_labels: vec![
                s(
                    "kube_namespace_labels",
                    &[("namespace", "llm-search"), ("label_team", "search")],
                    &flat(1.0),
                ),
                s(
                    "kube_namespace_labels",
                    &[("namespace", "llm-ads"), ("label_team", "ads")],
                    &flat(1.0),
                ),
            ],
            team_label: "label_team".to_owned(),
            gpu_busy: vec![s(
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                &[("gpu", "0")],
                &flat(0.11),
            )],
            generated_tokens: vec![s(
                "vllm:generation_tokens_total",
                &[("namespace", "llm-search")],
                &[(0.0, 0.0), (1800.0, 500_000.0), (3600.0, 1_000_000.0)],
            )],
            prices: vec![parse_price("nvidia-l4=0.80/h").unwrap()],
            ..CostInput::default()
        }
    }

    #[test]
    fn gpu_hours_cost_and_tokens_per_team() {
        let r = compute(&input());
        let search = r.teams.iter().find(|t| t.team == "search").unwrap();
        assert!((search.gpu_hours.unwrap() - 8.0).abs() < 1e-9);
        assert!((search.cost.unwrap() - 6.4).abs() < 1e-9);
        assert!((search.busy_gpu_hours.unwrap() - 0.88).abs() < 1e-9);
        assert_eq!(search.output_tokens, Some(1_000_000.0));
        assert!((search.cost_per_million_tokens.unwrap() - 6.4).abs() < 1e-9);
        assert!(search.advice.contains("return 6"), "{}", search.advice);
        assert!((r.totals.gpu_hours.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(
            r.teams
                .iter()
                .find(|t| t.team == "ads")
                .unwrap()
                .output_tokens,
            None
        );
    }

    #[test]
    fn busy_hours_use_the_workloads_own_gpus_when_dcgm_maps_pods() {
        let mut i = input();
        // Behind a ServiceMonitor: `namespace` is the exporter's, `exported_namespace` the pod's.
        let gpu = |uuid: &str, ns: &str, busy: f64| {
            s(
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                &[
                    ("UUID", uuid),
                    ("namespace", "gpu-operator"),
                    ("exported_namespace", ns),
                ],
                &flat(busy),
            )
        };
        i.gpu_busy = vec![
            gpu("GPU-1", "llm-search", 0.5),
            gpu("GPU-2", "llm-search", 0.3),
            gpu("GPU-3", "llm-other", 0.9),
        ];
        let r = compute(&i);
        let team = |n: &str| r.teams.iter().find(|t| t.team == n).unwrap();
        let search = team("search");
        assert_eq!(search.busy_basis, Some(BusyBasis::Workload));
        assert!((search.busy_gpu_hours.unwrap() - 8.0 * 0.4).abs() < 1e-9);
        let ads = team("ads");
        assert_eq!(ads.busy_basis, Some(BusyBasis::Fleet));
        assert!((ads.busy_gpu_hours.unwrap() - 2.0 * (0.5 + 0.3 + 0.9) / 3.0).abs() < 1e-9);
        let fleet: Vec<&String> = r.warnings.iter().filter(|w| w.contains("fleet")).collect();
        assert!(
            fleet.len() == 1 && fleet[0].contains("of ads use") && !fleet[0].contains("search"),
            "{fleet:?}"
        );
        // Every team mapped: no fleet warning at all.
        i.gpu_busy.push(gpu("GPU-4", "llm-ads", 0.2));
        let r = compute(&i);
        assert!(
            !r.warnings.iter().any(|w| w.contains("fleet")),
            "{:?}",
            r.warnings
        );
        // A series without points in the window does not hide the others.
        i.gpu_busy
            .push(s("DCGM_FI_PROF_GR_ENGINE_ACTIVE", &[], &[(-100.0, 1.0)]));
        assert!(compute(&i).teams.iter().all(|t| t.busy_gpu_hours.is_some()));
    }

    #[test]
    fn missing_data_is_explained_not_zeroed() {
        let mut i = input();
        i.namespace_labels.clear();
        i.prices.clear();
        i.gpu_busy.clear();
        let r = compute(&i);
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("--metric-labels-allowlist=namespaces=[team]"))
        );
        assert!(r.warnings.iter().any(|w| w.contains("--price nvidia-l4=")));
        assert!(
            r.teams
                .iter()
                .all(|t| t.cost.is_none() && t.busy_gpu_hours.is_none())
        );
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("no GPU utilisation (dcgm-exporter)"))
        );
        assert!(
            r.teams.iter().any(|t| t.team == "llm-search"),
            "falls back to namespaces"
        );
        let none = compute(&CostInput {
            team_label: "label_team".into(),
            to: 10.0,
            ..CostInput::default()
        });
        assert!(none.warnings.iter().any(
            |w| w.contains("LocalQueueMetrics") && w.contains("kueue_quota_reserved_resources")
        ));
    }

    /// Issue 12: with no team, the totals printed `-0.00` (an empty f64 sum is -0.0).
    #[test]
    fn totals_over_no_team_are_unknown_never_negative_zero() {
        let none = compute(&CostInput {
            to: 10.0,
            missing: vec!["GPU reservations".into()],
            ..CostInput::default()
        });
        let t = &none.totals;
        assert_eq!(
            (t.gpu_hours, t.cost, t.busy_gpu_hours, t.idle_gpu_hours),
            (None, None, None, None)
        );
        assert_eq!((t.idle_cost, t.output_tokens), (None, None));
        assert_eq!(none.missing, ["GPU reservations"]);
        let some = compute(&input());
        assert_eq!(
            some.totals.gpu_hours,
            Some(some.teams.iter().filter_map(|t| t.gpu_hours).sum::<f64>())
        );
        assert!(some.totals.busy_gpu_hours.is_some());
    }

    /// Issue 31: a negative reservation was priced (−8 GPU-hours, −$8) and a busy fraction of 3
    /// (300 %) made busy hours exceed reserved ones, without a word.
    #[test]
    fn impossible_samples_are_named_and_never_priced() {
        let mut i = input();
        let honest = compute(&i);
        i.local_queue_reservations.push(s(
            "kueue_local_queue_resource_reservation",
            &[("namespace", "llm-rogue"), ("flavor", "nvidia-l4")],
            &flat(-8.0),
        ));
        i.local_queue_reservations[0].points[3].v = f64::NAN;
        i.gpu_busy = vec![s("DCGM_FI_PROF_GR_ENGINE_ACTIVE", &[], &flat(3.0))];
        i.generated_tokens[0].points[1].v = -40.0;
        let r = compute(&i);
        let said = |needle: &str| r.warnings.iter().any(|w| w.contains(needle));
        assert!(
            said("llm-rogue") && said("61 sample(s)") && said("-8"),
            "{:?}",
            r.warnings
        );
        assert!(said("NaN"), "{:?}", r.warnings);
        assert!(said("DCGM_FI_PROF_GR_ENGINE_ACTIVE") && said("fraction from 0 to 1"));
        assert!(said("-40") && said("token counter"), "{:?}", r.warnings);
        // Nothing impossible is priced or counted: the rogue team holds no GPU-hours, the
        // others what they held, and no busy hours come from a fraction of 3.
        let rogue = r.teams.iter().find(|t| t.team == "llm-rogue");
        assert!(rogue.is_none_or(|t| t.gpu_hours == Some(0.0) && t.cost.is_none_or(|c| c == 0.0)));
        assert!(r.teams.iter().all(|t| t.busy_gpu_hours.is_none()));
        let total = |r: &CostReport| r.totals.gpu_hours.unwrap();
        assert!(
            (total(&r) - total(&honest)).abs() < 0.02,
            "{} vs {}",
            total(&r),
            total(&honest)
        );
        assert!(r.teams.iter().all(|t| t.cost.is_none_or(|c| c >= 0.0)));
    }

    #[test]
    fn integration_uses_own_timestamps_and_counter_resets() {
        let series = s("x", &[], &[(0.0, 2.0), (900.0, 4.0), (2700.0, 0.0)]);
        // 2 for 900 s + 4 for 1800 s + 0 → (1800 + 7200) / 3600 = 2.5 hours.
        assert!((integrate_hours(&series, 0.0, 3600.0) - 2.5).abs() < 1e-9);
        let c = s(
            "c",
            &[],
            &[(0.0, 10.0), (1.0, 15.0), (2.0, 3.0), (3.0, 5.0)],
        );
        assert_eq!(increase(&c, 0.0, 3.0), 10.0);
        assert!(
            parse_price("l4").is_err()
                && parse_price("l4=-1").is_err()
                && parse_price("=1").is_err()
        );
        assert_eq!(parse_price("NVIDIA L4=1.2").unwrap().key, "nvidia-l4");
    }
}
