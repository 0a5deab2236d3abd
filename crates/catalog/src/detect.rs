//! Which exporter, engine variant and version range a set of exposed names comes from, and how
//! those names differ from the newest version the catalog knows.
//!
//! Every release boundary in the catalog is a candidate version. A candidate is scored by
//! *hard* misses (a name it could not expose: not yet added, or removed) and *soft* misses (a name
//! it exposes only behind a flag, or an always-on family the page lacks); the candidates with the
//! fewest misses form the range. So `kv_cache_usage_perc` + `gpu_cache_usage_perc` reads as
//! 0.9.2–0.10.x, `inter_token_latency_seconds` as ≥ 0.11, `num_requests_waiting_by_reason` as
//! ≥ 0.20, `admission_rejections_total` as ≥ 0.27. A partial page (one scrape of a pod
//! mid-restart) only costs soft points.
//!
//! Names give a range; an engine that says its version (vLLM's `GET /version`) gives it exactly.
//! [`EngineVersion`] holds whichever llmscope has, and says which it is.

use super::model::{Exporter, Family, Status, Variant, Version};
use super::{EngineSpec, families, resolve};
use serde::Serialize;
use std::collections::BTreeSet;

/// One detected source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detection {
    pub exporter: Exporter,
    pub variant: Variant,
    /// The oldest and newest candidate releases that fit best.
    pub min: Version,
    pub max: Version,
    /// The next release after `max` (an exclusive upper bound); `None` when `max` is the newest
    /// the catalog knows.
    pub below: Option<Version>,
    /// Catalogued families seen.
    pub matched: usize,
    /// Names with this exporter's prefix that the catalog does not know.
    pub unknown: Vec<String>,
    /// Always-on families of `max` that the names lack.
    pub missing: Vec<&'static str>,
    /// Misses of the best candidate: (hard, soft).
    pub misses: (usize, usize),
    /// How far the names date the source: low from one or two catalogued names (any range
    /// fits them), or when they contradict each other.
    pub confidence: Confidence,
    /// Pairs of names that no one release exposes together (a V0-engine name with a V1-engine
    /// one, a name removed before another was added): the source mixes versions, and the
    /// range is only the least-bad fit.
    pub conflicts: Vec<String>,
}

/// How far a [`Detection`] can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    High,
    Low,
}

/// At most this many catalogued names date nothing: the always-on families such a source lacks
/// say it is partial, not old.
const FEW_NAMES: usize = 2;

impl Detection {
    /// `>=0.9.2, <0.11.0`, or `>=0.26.0` when the newest known release fits.
    pub fn range(&self) -> String {
        match self.below {
            Some(b) => format!(">={}, <{b}", self.min),
            None => format!(">={}", self.min),
        }
    }

    /// The best-fitting release as an engine spec (its newest fitting version).
    pub fn spec(&self) -> EngineSpec {
        EngineSpec {
            exporter: self.exporter,
            version: self.max,
            variant: self.variant,
        }
    }
}

/// Detects every exporter whose names appear in `names` (family or sample names), most
/// matched names first.
pub fn detect<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<Detection> {
    let names: Vec<&str> = names.into_iter().collect();
    let mut out: Vec<Detection> = Exporter::ALL
        .into_iter()
        .filter_map(|e| detect_one(e, &names))
        .collect();
    out.sort_by_key(|d| std::cmp::Reverse(d.matched));
    out
}

fn detect_one(exporter: Exporter, names: &[&str]) -> Option<Detection> {
    let seen: BTreeSet<&'static str> = names
        .iter()
        .filter_map(|n| resolve(n))
        .map(|(f, _)| f)
        .filter(|f| f.exporter == exporter && f.exporter.owns(f.name))
        .map(|f| f.name)
        .collect();
    let unknown: Vec<String> = names
        .iter()
        .filter(|n| exporter.owns(n) && resolve(n).is_none())
        .map(|n| (*n).to_owned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if seen.is_empty() {
        return None;
    }
    let candidates = candidates(exporter, ceiling(exporter, &seen));
    let few = seen.len() <= FEW_NAMES;
    let scored: Vec<(EngineSpec, (usize, usize))> = candidates
        .iter()
        .map(|spec| (*spec, score(spec, &seen, !few)))
        .collect();
    let best = scored.iter().map(|(s, m)| (*m, prefer(s))).min()?;
    let fits: Vec<&EngineSpec> = scored
        .iter()
        .filter(|(s, m)| (*m, prefer(s)) == best)
        .map(|(s, _)| s)
        .collect();
    let (first, last) = (fits.first()?, fits.last()?);
    let below = candidates
        .iter()
        .filter(|c| c.variant == last.variant && c.version > last.version)
        .map(|c| c.version)
        .next();
    Some(Detection {
        exporter,
        variant: last.variant,
        min: first.version,
        max: last.version,
        below,
        matched: seen.len(),
        unknown,
        missing: required(last)
            .filter(|f| pre_created(exporter) && !seen.contains(f.name))
            .map(|f| f.name)
            .collect(),
        misses: best.0,
        confidence: if few || best.0.0 > 0 {
            Confidence::Low
        } else {
            Confidence::High
        },
        conflicts: if best.0.0 > 0 {
            conflicts(&seen)
        } else {
            Vec::new()
        },
    })
}

/// Why no release exposes all of `seen`: engine-variant and era conflicts, named by example.
fn conflicts(seen: &BTreeSet<&'static str>) -> Vec<String> {
    let fams: Vec<&'static Family> = seen.iter().filter_map(|n| super::family(n)).collect();
    let mut out = Vec::new();
    let only = |v: Variant| fams.iter().find(|f| f.variant == v);
    if let (Some(a), Some(b)) = (only(Variant::V0), only(Variant::V1)) {
        out.push(format!(
            "`{}` (V0 engine only) with `{}` (V1 engine only)",
            a.name, b.name
        ));
    }
    let newest = fams.iter().max_by_key(|f| f.since);
    let first_gone = fams
        .iter()
        .filter(|f| f.restored.is_none())
        .filter_map(|f| f.removed.map(|r| (r, *f)))
        .min_by_key(|(r, _)| *r);
    if let (Some(new), Some((removed, old))) = (newest, first_gone)
        && new.since >= removed
    {
        out.push(format!(
            "`{}` (since {}) with `{}` (removed {removed})",
            new.name, new.since, old.name
        ));
    }
    if out.is_empty() {
        out.push("names that no one release exposes together".to_owned());
    }
    out
}

/// Ties go to the engine a version runs by default.
fn prefer(spec: &EngineSpec) -> u8 {
    u8::from(spec.variant != EngineSpec::new(spec.exporter, spec.version).variant)
}

/// Families a version exposes by default, always (no flag or gate needed).
fn required(spec: &EngineSpec) -> impl Iterator<Item = &'static Family> + '_ {
    families().filter(move |f| {
        f.exporter == spec.exporter
            && f.condition.is_none()
            && f.exporter.owns(f.name)
            && spec.status(f).is_exposed()
    })
}

/// Label names that date a page: present only from that version on.
const LABEL_SINCE: &[(Exporter, &str, Version)] = &[
    (Exporter::Vllm, "engine", Version::new(0, 8, 3)),
    (Exporter::Kueue, "replica_role", Version::new(0, 16, 0)),
];

/// Raises `d.min` with what the label names of its series show (`replica_role` → Kueue ≥ 0.16).
pub fn refine_with_labels<'a>(d: &mut Detection, labels: impl IntoIterator<Item = &'a str>) {
    let labels: BTreeSet<&str> = labels.into_iter().collect();
    for (exporter, label, since) in LABEL_SINCE {
        if *exporter == d.exporter && labels.contains(label) && *since > d.min && *since <= d.max {
            d.min = *since;
        }
    }
}

/// Whether an exporter creates every family at start-up (vLLM), so a missing family says
/// something about the version; Kueue, kube-state-metrics and dcgm-exporter create series per
/// object or per configured field, so absence proves nothing.
fn pre_created(exporter: Exporter) -> bool {
    matches!(exporter, Exporter::Vllm)
}

/// Hard and soft misses of `spec` for `seen`; a `complete` source also costs a soft point per
/// always-on family it lacks.
fn score(spec: &EngineSpec, seen: &BTreeSet<&'static str>, complete: bool) -> (usize, usize) {
    let mut hard = 0;
    let mut soft = 0;
    for name in seen {
        let Some(f) = super::family(name) else {
            continue;
        };
        match spec.status(f) {
            Status::NotYet | Status::Removed => hard += 1,
            Status::Hidden => soft += 1,
            Status::Present | Status::Deprecated => {}
        }
    }
    if complete && pre_created(spec.exporter) {
        soft += required(spec).filter(|f| !seen.contains(f.name)).count();
    }
    (hard, soft)
}

/// The highest version a detection of `seen` considers: the newest the catalog knows, raised to
/// the release that added a name of `seen` where that release is later (the catalog holds vLLM
/// 0.33.0's connector families, read from its source, though no 0.33.0 page was observed). Such a
/// name then dates its page to its release instead of reading as a mix of versions; a page
/// without one keeps the catalog's newest as its ceiling.
fn ceiling(exporter: Exporter, seen: &BTreeSet<&'static str>) -> Version {
    seen.iter()
        .filter_map(|n| super::family(n))
        .filter(|f| f.exporter == exporter)
        .map(|f| f.since)
        .fold(exporter.newest(), Version::max)
}

/// Every release boundary of `exporter` in the catalog up to `newest` (and each minor release
/// between), with the engine variants that version could run, oldest first.
fn candidates(exporter: Exporter, newest: Version) -> Vec<EngineSpec> {
    let mut versions: BTreeSet<Version> = families()
        .filter(|f| f.exporter == exporter)
        .flat_map(|f| [Some(f.since), f.deprecated, f.hidden, f.removed, f.restored])
        .flatten()
        .filter(|v| *v <= newest)
        .collect();
    versions.insert(newest);
    if exporter == Exporter::Vllm || exporter == Exporter::Kueue {
        let lo = versions.first().map_or(0, |v| v.minor);
        versions.extend((lo..=newest.minor).map(|m| Version::new(0, m, 0)));
    }
    versions
        .into_iter()
        .flat_map(|v| {
            variants(exporter, v).map(move |variant| EngineSpec {
                exporter,
                version: v,
                variant,
            })
        })
        .collect()
}

/// vLLM ran V0 until ≈0.11 and V1 from 0.7.1 (default from 0.8.0); the others have one engine.
fn variants(exporter: Exporter, v: Version) -> impl Iterator<Item = Variant> {
    let pick = match exporter {
        Exporter::Vllm => [
            (v < Version::new(0, 11, 0)).then_some(Variant::V0),
            (v >= Version::new(0, 7, 1)).then_some(Variant::V1),
        ],
        _ => [Some(Variant::Any), None],
    };
    pick.into_iter().flatten()
}

/// An engine's version as llmscope could name it: reported by the engine itself (vLLM's
/// `GET /version`), or read from its metric names (a range). Displays as
/// `vllm 0.32.0 (from /version)` or `vllm >=0.27.0 (from names)`.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineVersion {
    Reported {
        exporter: Exporter,
        version: Version,
    },
    Detected(Detection),
}

impl EngineVersion {
    /// The reported version when there is one, else the detection from names.
    pub fn pick(
        reported: Option<(Exporter, Version)>,
        detection: Option<&Detection>,
    ) -> Option<Self> {
        match (reported, detection) {
            (Some((exporter, version)), _) => Some(EngineVersion::Reported { exporter, version }),
            (None, Some(d)) => Some(EngineVersion::Detected(d.clone())),
            (None, None) => None,
        }
    }

    /// The engine version to check against: the reported one, else the newest fitting one.
    pub fn spec(&self) -> EngineSpec {
        match self {
            EngineVersion::Reported { exporter, version } => EngineSpec::new(*exporter, *version),
            EngineVersion::Detected(d) => d.spec(),
        }
    }
}

impl std::fmt::Display for EngineVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineVersion::Reported { exporter, version } => {
                write!(f, "{exporter} {version} (from /version)")
            }
            EngineVersion::Detected(d) => match d.conflicts.first() {
                Some(c) => write!(
                    f,
                    "{} of mixed versions (from names: {c}; no one release fits, nearest {})",
                    d.exporter,
                    d.range()
                ),
                None if d.confidence == Confidence::Low => write!(
                    f,
                    "{} {} (from names; low confidence: {} catalogued name{})",
                    d.exporter,
                    d.range(),
                    d.matched,
                    if d.matched == 1 { "" } else { "s" }
                ),
                None => write!(f, "{} {} (from names)", d.exporter, d.range()),
            },
        }
    }
}

/// How a name seen on a page stands in the newest version the catalog knows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub name: &'static str,
    /// Its status in the newest version (`deprecated`, `hidden`, `removed`, or `present` for
    /// a newest-version name the page lacks).
    pub newest: Status,
    pub successor: Option<&'static str>,
    pub lifetime: String,
    pub note: &'static str,
}

/// The names of `detection` that the newest version no longer exposes as they are, then (for
/// exporters that pre-create their families) the always-on names of the newest version that the
/// page lacks. The newest version is the catalog's, or a later one the names show (see `ceiling`).
pub fn against_newest<'a>(
    detection: &Detection,
    names: impl IntoIterator<Item = &'a str>,
) -> Vec<Difference> {
    let seen: BTreeSet<&'static str> = names
        .into_iter()
        .filter_map(resolve)
        .map(|(f, _)| f)
        .filter(|f| f.exporter == detection.exporter)
        .map(|f| f.name)
        .collect();
    let newest = EngineSpec::new(detection.exporter, ceiling(detection.exporter, &seen));
    let diff = |f: &'static Family, newest: Status| Difference {
        name: f.name,
        newest,
        successor: f.successor,
        lifetime: f.lifetime(),
        note: f.note,
    };
    let mut out: Vec<Difference> = seen
        .iter()
        .filter_map(|n| super::family(n))
        .filter(|f| newest.status(f) != Status::Present)
        .map(|f| diff(f, newest.status(f)))
        .collect();
    out.extend(
        required(&newest)
            .filter(|f| pre_created(f.exporter) && !seen.contains(f.name))
            .map(|f| diff(f, Status::Present)),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vllm::AFTER_0_26;

    fn vllm(names: &[&str]) -> Detection {
        detect(names.iter().copied())
            .into_iter()
            .find(|d| d.exporter == Exporter::Vllm)
            .expect("vllm detected")
    }

    const BASE: &[&str] = &[
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:num_preemptions_total",
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:time_to_first_token_seconds_bucket",
    ];

    fn with(extra: &[&'static str]) -> Vec<&'static str> {
        BASE.iter().chain(extra).copied().collect()
    }

    #[test]
    fn mixed_versions_are_said_not_fitted() {
        // A V0-engine name (swapped requests) with a V1-engine one (the V1 KV name) and a name
        // from 0.20 on: no release exposes them together.
        let mut names = BASE.to_vec();
        names.extend([
            "vllm:num_requests_swapped",
            "vllm:kv_cache_usage_perc",
            "vllm:num_requests_waiting_by_reason",
        ]);
        let d = vllm(&names);
        assert_eq!(d.confidence, Confidence::Low);
        assert!(
            d.conflicts
                .iter()
                .any(|c| c.contains("V0 engine only") && c.contains("V1 engine only")),
            "{:?}",
            d.conflicts
        );
        let shown = EngineVersion::Detected(d).to_string();
        assert!(shown.contains("mixed versions"), "{shown}");
        // A consistent page has none.
        let d = vllm(BASE);
        assert!(d.conflicts.is_empty(), "{:?}", d.conflicts);
    }

    #[test]
    fn one_name_is_low_confidence_and_a_wide_range() {
        let d = vllm(&["vllm:num_requests_running"]);
        assert_eq!(d.confidence, Confidence::Low);
        assert_eq!(d.below, None, "{}", d.range());
        assert!(d.min < Version::new(0, 8, 0), "{}", d.range());
        let shown = EngineVersion::Detected(d).to_string();
        assert!(
            shown.contains("low confidence: 1 catalogued name"),
            "{shown}"
        );
    }

    #[test]
    fn both_kv_names_mean_0_9_2_to_0_10() {
        let d = vllm(&with(&[
            "vllm:kv_cache_usage_perc",
            "vllm:gpu_cache_usage_perc",
            "vllm:time_per_output_token_seconds_bucket",
        ]));
        assert_eq!(d.variant, Variant::V1);
        assert!(d.min >= Version::new(0, 9, 2), "{}", d.range());
        assert_eq!(d.below, Some(Version::new(0, 11, 0)), "{}", d.range());
    }

    #[test]
    fn new_names_set_lower_bounds() {
        let d = vllm(&with(&[
            "vllm:kv_cache_usage_perc",
            "vllm:inter_token_latency_seconds_sum",
        ]));
        assert!(d.min >= Version::new(0, 11, 0), "{}", d.range());
        let d = vllm(&with(&["vllm:prompt_tokens_by_source_total"]));
        assert!(d.min >= Version::new(0, 16, 0), "{}", d.range());
        let d = vllm(&with(&["vllm:num_requests_waiting_by_reason"]));
        assert!(d.min >= Version::new(0, 20, 0), "{}", d.range());
        assert_eq!(d.exporter.name(), "vllm");
    }

    #[test]
    fn only_the_old_kv_name_means_before_0_9_2() {
        let d = vllm(&with(&[
            "vllm:gpu_cache_usage_perc",
            "vllm:gpu_prefix_cache_hits_total",
        ]));
        assert!(d.max < Version::new(0, 9, 2), "{}", d.range());
        assert!(d.min >= Version::new(0, 7, 3), "{}", d.range());
    }

    #[test]
    fn v0_only_names_pick_the_v0_engine() {
        let d = vllm(&with(&[
            "vllm:gpu_cache_usage_perc",
            "vllm:num_requests_swapped",
        ]));
        assert_eq!(d.variant, Variant::V0, "{}", d.range());
    }

    #[test]
    fn other_exporters_and_unknown_names() {
        let found = detect([
            "DCGM_FI_DEV_GPU_UTIL",
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            "DCGM_FI_DEV_MADE_UP",
            "kueue_pending_workloads",
            "kueue_local_queue_resource_reservation",
            "up",
        ]);
        let dcgm = found
            .iter()
            .find(|d| d.exporter == Exporter::DcgmExporter)
            .unwrap();
        assert!(
            dcgm.min >= Version::new(4, 0, 0),
            "PROF is default from 4.0"
        );
        assert_eq!(dcgm.unknown, vec!["DCGM_FI_DEV_MADE_UP".to_owned()]);
        let kueue = found
            .iter()
            .find(|d| d.exporter == Exporter::Kueue)
            .unwrap();
        assert_eq!(kueue.min, Version::new(0, 10, 0), "{}", kueue.range());
        assert_eq!(
            kueue.below,
            None,
            "absent Kueue families say nothing: {}",
            kueue.range()
        );
        let mut kueue = kueue.clone();
        refine_with_labels(&mut kueue, ["cluster_queue", "replica_role"]);
        assert_eq!(kueue.min, Version::new(0, 16, 0));
        assert!(detect(["up", "process_cpu_seconds_total"]).is_empty());
    }

    /// The sample names of a saved exposition page (no parser in the core: a name is what comes
    /// before `{` or the first space of a sample line).
    fn page_names(page: &str) -> Vec<&str> {
        page.lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| l.split(['{', ' ']).next())
            .collect()
    }

    const CAPTURES_0_32: [(&str, &str); 3] = [
        (
            "idle",
            include_str!("../tests/fixtures/vllm-0.32.0/vllm-0.32.0-cpu-idle.prom"),
        ),
        (
            "batch-limit",
            include_str!("../tests/fixtures/vllm-0.32.0/vllm-0.32.0-cpu-batch-limit.prom"),
        ),
        (
            "kv-starved",
            include_str!("../tests/fixtures/vllm-0.32.0/vllm-0.32.0-cpu-kv-starved.prom"),
        ),
    ];

    #[test]
    fn real_0_32_pages_read_as_a_range_holding_0_32_with_a_raised_lower_bound() {
        let real = Version::new(0, 32, 0);
        for (what, page) in CAPTURES_0_32 {
            let names = page_names(page);
            let d = vllm(&names);
            assert_eq!(d.variant, Variant::V1, "{what}");
            assert!(d.min <= real && real <= d.max, "{what}: {}", d.range());
            assert!(d.below.is_none_or(|b| real < b), "{what}: {}", d.range());
            assert!(
                d.min >= AFTER_0_26,
                "{what}: newest families ignored: {}",
                d.range()
            );
            assert_eq!(d.misses, (0, 0), "{what}: {}", d.range());
            assert!(d.unknown.is_empty(), "{what}: {:?}", d.unknown);
            let differences = against_newest(&d, names.iter().copied());
            assert!(differences.is_empty(), "{what}: {differences:?}");
        }
    }

    #[test]
    fn every_vllm_family_of_the_0_32_pages_is_catalogued_as_present_in_0_32() {
        let spec = EngineSpec::new(Exporter::Vllm, Version::new(0, 32, 0));
        for (what, page) in CAPTURES_0_32 {
            for line in page.lines().filter(|l| l.starts_with("# TYPE vllm:")) {
                let name = line.split(' ').nth(2).unwrap();
                // A histogram resolves by its family name, a `_created` gauge by its sample name.
                let family = super::super::family(name)
                    .or_else(|| resolve(name).map(|(f, _)| f))
                    .unwrap_or_else(|| panic!("{what}: {name} not catalogued"));
                assert_eq!(spec.status(family), Status::Present, "{what}: {name}");
            }
        }
    }

    #[test]
    fn the_0_26_name_set_reads_as_0_26_not_newer() {
        let page = include_str!("../../sim/tests/fixtures/vllm-0.26.0-metric-names.txt");
        let names: Vec<&str> = page.lines().filter(|l| !l.starts_with('#')).collect();
        let d = vllm(&names);
        assert_eq!(d.range(), ">=0.26.0, <0.27.0");
        assert_eq!(d.misses, (0, 0));
    }

    #[test]
    fn a_reported_version_wins_over_names() {
        let d = vllm(&with(&["vllm:admission_rejections_total"]));
        let named = EngineVersion::pick(None, Some(&d)).unwrap();
        assert_eq!(named.to_string(), "vllm >=0.27.0 (from names)");
        assert_eq!(named.spec().version, d.max);
        let reported =
            EngineVersion::pick(Some((Exporter::Vllm, Version::new(0, 32, 0))), Some(&d)).unwrap();
        assert_eq!(reported.to_string(), "vllm 0.32.0 (from /version)");
        assert_eq!(reported.spec().version, Version::new(0, 32, 0));
        assert_eq!(reported.spec().variant, Variant::V1);
        assert!(EngineVersion::pick(None, None).is_none());
    }

    #[test]
    fn a_name_of_a_release_after_the_newest_dates_its_page_to_that_release() {
        // vLLM 0.33.0's Mooncake connector histogram: catalogued from source, beyond 0.32.0.
        let names = with(&[
            "vllm:kv_cache_usage_perc",
            "vllm:admission_rejections_total",
            "vllm:mooncake_xfer_time_seconds_bucket",
        ]);
        let d = vllm(&names);
        assert_eq!(d.range(), ">=0.33.0", "{d:?}");
        assert_eq!(d.misses.0, 0, "{d:?}");
        assert!(d.conflicts.is_empty(), "{:?}", d.conflicts);
        assert!(d.unknown.is_empty(), "{:?}", d.unknown);
        let differences = against_newest(&d, names.iter().copied());
        assert!(
            differences
                .iter()
                .all(|x| x.name != "vllm:mooncake_xfer_time_seconds"),
            "{differences:?}"
        );
        // Without such a name the ceiling stays the catalog's newest.
        let d = vllm(&with(&[
            "vllm:kv_cache_usage_perc",
            "vllm:admission_rejections_total",
            "vllm:kv_offload_tiering_chunk_hits_total",
        ]));
        assert_eq!(d.range(), ">=0.27.0", "{d:?}");
        assert_eq!(d.max, Exporter::Vllm.newest());
    }

    #[test]
    fn differences_name_the_successor() {
        let names = with(&["vllm:gpu_cache_usage_perc"]);
        let d = vllm(&names);
        let diff = against_newest(&d, names.iter().copied());
        let kv = diff
            .iter()
            .find(|x| x.name == "vllm:gpu_cache_usage_perc")
            .unwrap();
        assert_eq!(kv.newest, Status::Removed);
        assert_eq!(kv.successor, Some("vllm:kv_cache_usage_perc"));
        assert!(
            diff.iter()
                .any(|x| x.name == "vllm:kv_cache_usage_perc" && x.newest == Status::Present)
        );
    }
}
