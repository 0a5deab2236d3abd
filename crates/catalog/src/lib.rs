//! The metric catalog: every name the serving engines and exporters expose, by version, with its
//! type, unit, labels and the engine-neutral [`Concept`] it measures; plus the table of names the
//! diagnosis reads per concept.
//!
//! - [`concept`]: the engine-neutral quantities ([`Concept`]) every name is mapped onto.
//! - [`model`]: the vocabulary ([`Exporter`], [`Version`], [`Kind`], [`Unit`], [`Family`] and its
//!   lifecycle [`Status`]).
//! - Data tables, one per source: [`vllm`] (V0/V1 name sets, renames and removals), [`sglang`],
//!   [`tgi`], [`dcgm`] (default counters by version, `Hostname`/`hostname`), [`kueue`] (by version
//!   and feature gate), [`ksm`] (kube-state-metrics); [`MISNOMERS`] (names that never existed) and
//!   [`LABEL_HINTS`] (label names people get wrong).
//! - [`detect`]: which exporter and version range a set of exposed names comes from.
//! - [`METRICS`]/[`candidates`]/[`lookup`]: for a concept, the names the diagnosis tries, newest
//!   first; the first one that has data in a run is used and the choice is reported, so a renamed
//!   metric is never read as 0.
//!
//! Sources: `docs/SOURCES.md` (§vllm-names, §vllm-renames, §sglang, §tgi, §dcgm, §kueue, §ksm).

pub mod buckets;
pub mod concept;
pub mod dcgm;
pub mod detect;
pub mod ksm;
pub mod kueue;
pub mod model;
pub mod producers;
pub mod sglang;
pub mod tgi;
pub mod vllm;

pub use model::{
    CatalogError, Exporter, Family, Kind, LabelHint, Misnomer, PerProcess, Status, Unit, Variant,
    Version,
};

pub use concept::Concept;
use std::fmt;
use std::str::FromStr;

/// How several series of one metric (engines, pods, GPUs) combine into one signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    Sum,
    Max,
    Mean,
}

/// One series name the diagnosis reads for a concept (a selection of the full catalog, with how
/// to aggregate it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    pub concept: Concept,
    pub engine: &'static str,
    pub name: &'static str,
    pub unit: Unit,
    pub aggregate: Aggregate,
    /// Where the name is exposed, as free text (`0.9.2..current`, `removed 0.12.0`).
    pub versions: &'static str,
}

const fn def(
    concept: Concept,
    engine: &'static str,
    name: &'static str,
    unit: Unit,
    aggregate: Aggregate,
    versions: &'static str,
) -> MetricDef {
    MetricDef {
        concept,
        engine,
        name,
        unit,
        aggregate,
        versions,
    }
}

use Aggregate::{Max, Mean, Sum};
use Concept as C;
use Unit::{Count, Fraction, Percent, Requests, Seconds, Watts};

/// Every name the diagnosis can read, newest first within a concept (grouped by concept).
pub const METRICS: &[MetricDef] = &[
    def(
        C::Running,
        "vllm",
        "vllm:num_requests_running",
        Count,
        Sum,
        "all",
    ),
    def(
        C::Running,
        "sglang",
        "sglang:num_running_reqs",
        Count,
        Sum,
        "all",
    ),
    def(
        C::Running,
        "tgi",
        "tgi_batch_current_size",
        Count,
        Sum,
        "1.x..3.3",
    ),
    def(
        C::Waiting,
        "vllm",
        "vllm:num_requests_waiting",
        Count,
        Sum,
        "all",
    ),
    def(
        C::Waiting,
        "sglang",
        "sglang:num_queue_reqs",
        Count,
        Sum,
        "all",
    ),
    def(C::Waiting, "tgi", "tgi_queue_size", Count, Sum, "1.x..3.3"),
    def(
        C::KvUsage,
        "vllm",
        "vllm:kv_cache_usage_perc",
        Fraction,
        Max,
        "0.9.2..current",
    ),
    def(
        C::KvUsage,
        "vllm",
        "vllm:gpu_cache_usage_perc",
        Fraction,
        Max,
        "..0.11 (hidden 0.11, removed 0.12.0)",
    ),
    def(
        C::KvUsage,
        "sglang",
        "sglang:token_usage",
        Fraction,
        Max,
        "all",
    ),
    def(
        C::Preemptions,
        "vllm",
        "vllm:num_preemptions_total",
        Count,
        Sum,
        "all",
    ),
    def(
        C::Preemptions,
        "sglang",
        "sglang:num_retracted_requests_total",
        Count,
        Sum,
        "~2025..current",
    ),
    // Prefix-cache lookups and hits, in prompt tokens (issue 27): V1 from 0.9.2, and the `gpu_`
    // names before 0.11 (which counted blocks until about 0.9.0: the ratio still holds).
    def(
        C::PrefixCacheQueries,
        "vllm",
        "vllm:prefix_cache_queries_total",
        Count,
        Sum,
        "0.9.2..current",
    ),
    def(
        C::PrefixCacheQueries,
        "vllm",
        "vllm:gpu_prefix_cache_queries_total",
        Count,
        Sum,
        "0.7.3..0.11 (hidden 0.11, removed 0.12.0)",
    ),
    def(
        C::PrefixCacheHits,
        "vllm",
        "vllm:prefix_cache_hits_total",
        Count,
        Sum,
        "0.9.2..current",
    ),
    def(
        C::PrefixCacheHits,
        "vllm",
        "vllm:gpu_prefix_cache_hits_total",
        Count,
        Sum,
        "0.7.3..0.11 (hidden 0.11, removed 0.12.0)",
    ),
    def(
        C::GeneratedTokens,
        "vllm",
        "vllm:generation_tokens_total",
        Count,
        Sum,
        "all",
    ),
    def(
        C::GeneratedTokens,
        "sglang",
        "sglang:generation_tokens_total",
        Count,
        Sum,
        "all",
    ),
    // TGI counts generated tokens per request in a histogram: its `_sum` is the running total.
    def(
        C::GeneratedTokens,
        "tgi",
        "tgi_request_generated_tokens_sum",
        Count,
        Sum,
        "all",
    ),
    // Counted in the step a prompt's prefill completes, the whole prompt at once.
    def(
        C::PromptTokens,
        "vllm",
        "vllm:prompt_tokens_total",
        Count,
        Sum,
        "all",
    ),
    def(
        C::StepTokensSum,
        "vllm",
        "vllm:iteration_tokens_total_sum",
        Count,
        Sum,
        "2024-11..current",
    ),
    def(
        C::StepCount,
        "vllm",
        "vllm:iteration_tokens_total_count",
        Count,
        Sum,
        "2024-11..current",
    ),
    // Per-request time histograms (vLLM V1): their `_sum` counters give the time-averaged queue and
    // batch by Little's law, where the gauges only show the instant of each scrape.
    def(
        C::QueuedSeconds,
        "vllm",
        "vllm:request_queue_time_seconds_sum",
        Seconds,
        Sum,
        "0.6.4..current",
    ),
    def(
        C::RunningSeconds,
        "vllm",
        "vllm:request_inference_time_seconds_sum",
        Seconds,
        Sum,
        "0.6.4..current",
    ),
    // Requests finished, every reason summed: with the two counters above, the mean time a
    // finishing request spent in the engine — whether the window holds enough lifetimes for
    // those counters to speak for it.
    def(
        C::RequestsFinished,
        "vllm",
        "vllm:request_success_total",
        Requests,
        Sum,
        "0.4.3..current",
    ),
    // Both reasons summed: which limit turned requests away is in the 503's words.
    def(
        C::AdmissionRejections,
        "vllm",
        "vllm:admission_rejections_total",
        Requests,
        Sum,
        "0.27..current (absent from 0.26.0, present on 0.32.0)",
    ),
    // Speculative decoding (V1 counters; the V0 rate gauges are gone since 0.10).
    def(
        C::SpecDrafts,
        "vllm",
        "vllm:spec_decode_num_drafts_total",
        Count,
        Sum,
        "0.8.5..current, when speculation is configured",
    ),
    def(
        C::SpecDraftTokens,
        "vllm",
        "vllm:spec_decode_num_draft_tokens_total",
        Count,
        Sum,
        "0.5.3..current, when speculation is configured",
    ),
    def(
        C::SpecAcceptedTokens,
        "vllm",
        "vllm:spec_decode_num_accepted_tokens_total",
        Count,
        Sum,
        "0.5.3..current, when speculation is configured",
    ),
    def(
        C::GpuUtil,
        "dcgm",
        "DCGM_FI_DEV_GPU_UTIL",
        Percent,
        Mean,
        "all (not on MIG)",
    ),
    def(
        C::MemCopyUtil,
        "dcgm",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        Percent,
        Mean,
        "all",
    ),
    def(
        C::GrEngineActive,
        "dcgm",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        Fraction,
        Mean,
        "4.0..current default",
    ),
    def(
        C::DramActive,
        "dcgm",
        "DCGM_FI_PROF_DRAM_ACTIVE",
        Fraction,
        Mean,
        "4.0..current default",
    ),
    def(
        C::TensorActive,
        "dcgm",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        Fraction,
        Mean,
        "4.0..current default",
    ),
    def(
        C::PowerWatts,
        "dcgm",
        "DCGM_FI_DEV_POWER_USAGE",
        Watts,
        Sum,
        "all",
    ),
];

/// The candidates for `concept`, newest first.
pub fn candidates(concept: Concept) -> impl Iterator<Item = &'static MetricDef> {
    METRICS.iter().filter(move |m| m.concept == concept)
}

/// The definition of an exposed name, if the catalog knows it.
pub fn lookup(name: &str) -> Option<&'static MetricDef> {
    METRICS.iter().find(|m| m.name == name)
}

/// Names that look like metrics but never existed, and what to use.
pub const MISNOMERS: &[Misnomer] = &[Misnomer {
    exporter: Exporter::Kueue,
    name: "kueue_quota_reserved_resources",
    use_instead: &[
        "kueue_local_queue_resource_reservation",
        "kueue_cluster_queue_resource_reservation",
    ],
    note: "has never existed in any Kueue release; per-team reservations are kueue_local_queue_resource_reservation (LocalQueueMetrics gate) or kueue_cluster_queue_resource_reservation per ClusterQueue (enableClusterQueueResources)",
}];

/// Label names people get wrong.
pub const LABEL_HINTS: &[LabelHint] = &[
    LabelHint {
        exporter: Exporter::KubeStateMetrics,
        wrong: "team",
        right: "label_team",
        note: "kube-state-metrics exports namespace labels as label_<key>, and only those listed in --metric-labels-allowlist=namespaces=[team]",
    },
    LabelHint {
        exporter: Exporter::DcgmExporter,
        wrong: "hostname",
        right: "Hostname",
        note: "released dcgm-exporter (≤ 4.5.3-4.8.2) names it Hostname; main renames it hostname (PR #655)",
    },
    LabelHint {
        exporter: Exporter::DcgmExporter,
        wrong: "uuid",
        right: "UUID",
        note: "dcgm-exporter names it UUID (uuid only with --use-old-namespace)",
    },
    LabelHint {
        exporter: Exporter::DcgmExporter,
        wrong: "model_name",
        right: "modelName",
        note: "GPU series use modelName (only NVLink series use model_name)",
    },
];

/// Every family of every source.
pub fn families() -> impl Iterator<Item = &'static Family> {
    [
        vllm::FAMILIES,
        sglang::FAMILIES,
        tgi::FAMILIES,
        dcgm::FAMILIES,
        kueue::FAMILIES,
        ksm::FAMILIES,
    ]
    .into_iter()
    .flatten()
}

/// A sample name's part after the family name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suffix {
    None,
    Bucket,
    Sum,
    Count,
    /// `prometheus_client`'s creation-time gauge beside counters and histograms.
    Created,
}

/// The family a sample name belongs to, and which of its samples it is.
pub fn resolve(name: &str) -> Option<(&'static Family, Suffix)> {
    if let Some(f) = families().find(|f| f.name == name && f.kind != Kind::Histogram) {
        return Some((f, Suffix::None));
    }
    let suffixes = [
        ("_bucket", Suffix::Bucket),
        ("_sum", Suffix::Sum),
        ("_count", Suffix::Count),
        ("_created", Suffix::Created),
    ];
    suffixes.into_iter().find_map(|(text, suffix)| {
        let base = name.strip_suffix(text)?;
        families().find_map(|f| {
            let stem = match (suffix, f.kind) {
                (Suffix::Created, Kind::Counter) => f.name.strip_suffix("_total").unwrap_or(f.name),
                _ => f.name,
            };
            let fits = match suffix {
                Suffix::Bucket => f.kind == Kind::Histogram,
                Suffix::Sum | Suffix::Count => matches!(f.kind, Kind::Histogram | Kind::Summary),
                Suffix::Created => f.kind != Kind::Gauge,
                Suffix::None => false,
            };
            (fits && stem == base).then_some((f, suffix))
        })
    })
}

/// The family named exactly `name` (a counter with `_total`, a histogram by its base name).
pub fn family(name: &str) -> Option<&'static Family> {
    families().find(|f| f.name == name)
}

/// The misnomer entry for `name`, if it is a known non-existent name.
pub fn misnomer(name: &str) -> Option<&'static Misnomer> {
    MISNOMERS.iter().find(|m| m.name == name)
}

/// An engine or exporter at a version: `vllm@0.26`, `vllm-v0@0.8`, `dcgm-exporter@4.5`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineSpec {
    pub exporter: Exporter,
    pub version: Version,
    pub variant: Variant,
}

impl EngineSpec {
    /// The default engine variant of `exporter` at `version`.
    pub fn new(exporter: Exporter, version: Version) -> EngineSpec {
        let variant = match exporter {
            Exporter::Vllm => vllm::default_variant(version),
            _ => Variant::Any,
        };
        EngineSpec {
            exporter,
            version,
            variant,
        }
    }

    /// How this version exposes `family` (`Removed` for another exporter's family).
    pub fn status(&self, family: &Family) -> Status {
        if family.exporter != self.exporter {
            return Status::Removed;
        }
        family.status_at(self.version, self.variant)
    }

    /// Label names of `family`'s series at this version.
    pub fn labels(&self, family: &Family) -> Vec<&'static str> {
        match self.exporter {
            Exporter::Vllm => vllm::labels_at(family, self.version, self.variant),
            Exporter::DcgmExporter => dcgm::labels_at(self.version),
            Exporter::Kueue => kueue::labels_at(family, self.version),
            _ => family.labels.to_vec(),
        }
    }

    /// Every family this version knows, with its status (never-added and removed ones left out).
    pub fn families(&self) -> impl Iterator<Item = (&'static Family, Status)> + '_ {
        families()
            .filter(|f| f.exporter == self.exporter)
            .map(|f| (f, self.status(f)))
            .filter(|(_, s)| !matches!(s, Status::NotYet | Status::Removed))
    }
}

impl fmt::Display for EngineSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v0 = if self.exporter == Exporter::Vllm && self.variant == Variant::V0 {
            "-v0"
        } else {
            ""
        };
        write!(f, "{}{v0}@{}", self.exporter, self.version)
    }
}

impl FromStr for EngineSpec {
    type Err = CatalogError;

    /// `NAME@VERSION`, or `NAME` alone for the newest version the catalog knows.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, version) = match s.split_once('@') {
            Some((n, v)) => (n, Some(v)),
            None => (s, None),
        };
        if name.is_empty() || version.is_some_and(str::is_empty) {
            return Err(CatalogError::BadSpec(s.to_owned()));
        }
        let exporter: Exporter = name.parse()?;
        let version = match version {
            Some(v) => v.parse()?,
            None => exporter.newest(),
        };
        let mut spec = EngineSpec::new(exporter, version);
        if name.eq_ignore_ascii_case("vllm-v0") {
            spec.variant = Variant::V0;
        }
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_usage_prefers_the_current_name_and_is_a_fraction() {
        let names: Vec<_> = candidates(C::KvUsage).map(|m| m.name).collect();
        assert_eq!(names[0], "vllm:kv_cache_usage_perc");
        assert!(names.contains(&"vllm:gpu_cache_usage_perc"));
        assert!(
            candidates(C::KvUsage).all(|m| m.unit == Fraction),
            "'perc' metrics are 0..1"
        );
        assert_eq!(
            lookup("DCGM_FI_DEV_GPU_UTIL").map(|m| m.unit),
            Some(Percent)
        );
    }

    #[test]
    fn every_concept_but_power_has_an_engine_or_gpu_source() {
        for m in METRICS {
            assert!(!m.name.is_empty() && !m.engine.is_empty());
        }
        assert!(candidates(C::Running).count() >= 3);
    }
    #[test]
    fn names_are_unique_and_diagnosis_names_are_catalogued() {
        let mut seen = std::collections::HashSet::new();
        for f in families() {
            assert!(seen.insert(f.name), "{} listed twice", f.name);
            assert!(
                f.exporter.owns(f.name) || f.name.starts_with("http_"),
                "{}",
                f.name
            );
            // dcgm-exporter and TGI name counters without `_total`.
            let plain = matches!(f.exporter, Exporter::Tgi | Exporter::DcgmExporter);
            if f.kind == Kind::Counter && !plain {
                assert!(
                    f.name.ends_with("_total"),
                    "counter {} lacks _total",
                    f.name
                );
            }
        }
        for m in METRICS {
            let (family, _) =
                resolve(m.name).unwrap_or_else(|| panic!("{} not in catalog", m.name));
            assert!(family.concept.is_some(), "{}", m.name);
            if matches!(m.unit, Fraction | Percent | Watts) {
                assert_eq!(family.unit, m.unit, "{}", m.name);
            }
        }
    }

    #[test]
    fn sample_names_resolve_to_their_family() {
        let (f, s) = resolve("vllm:time_to_first_token_seconds_bucket").unwrap();
        assert_eq!(
            (f.name, s),
            ("vllm:time_to_first_token_seconds", Suffix::Bucket)
        );
        let (f, s) = resolve("vllm:iteration_tokens_total_count").unwrap();
        assert_eq!((f.name, s), ("vllm:iteration_tokens_total", Suffix::Count));
        let (f, s) = resolve("vllm:prompt_tokens_created").unwrap();
        assert_eq!((f.name, s), ("vllm:prompt_tokens_total", Suffix::Created));
        assert_eq!(resolve("vllm:prompt_tokens_total").unwrap().1, Suffix::None);
        let (f, s) = resolve("vllm:iteration_tokens_total_created").unwrap();
        assert_eq!(
            (f.name, s),
            ("vllm:iteration_tokens_total", Suffix::Created)
        );
        assert!(resolve("vllm:kv_cache_usage_perc_bucket").is_none());
        assert!(
            resolve("vllm:time_to_first_token_seconds").is_none(),
            "a histogram has no bare sample"
        );
    }

    #[test]
    fn renames_carry_their_versions_and_successors() {
        let old = family("vllm:gpu_cache_usage_perc").unwrap();
        assert_eq!(old.successor, Some("vllm:kv_cache_usage_perc"));
        assert_eq!(old.removed, Some(Version::new(0, 12, 0)));
        assert_eq!(old.unit, Fraction);
        let spec: EngineSpec = "vllm@0.26".parse().unwrap();
        assert_eq!(spec.status(old), Status::Removed);
        assert_eq!(
            spec.status(family("vllm:kv_cache_usage_perc").unwrap()),
            Status::Present
        );
        let tpot = family("vllm:time_per_output_token_seconds").unwrap();
        assert_eq!(tpot.successor, Some("vllm:inter_token_latency_seconds"));
        let v11: EngineSpec = "vllm@0.11".parse().unwrap();
        assert_eq!(v11.status(tpot), Status::Deprecated);
        assert_eq!(v11.status(old), Status::Hidden);
        assert_eq!(
            "vllm@0.12".parse::<EngineSpec>().unwrap().status(tpot),
            Status::Hidden
        );
        let cpu = family("vllm:cpu_cache_usage_perc").unwrap();
        assert_eq!(
            v11.status(cpu),
            Status::Removed,
            "V0-only names are absent from V1"
        );
        assert!(misnomer("kueue_quota_reserved_resources").is_some());
        assert!(family("kueue_quota_reserved_resources").is_none());
    }

    #[test]
    fn engine_specs_parse_and_pick_the_engine_variant() {
        let s: EngineSpec = "vllm@0.8".parse().unwrap();
        assert_eq!(s.variant, Variant::V1);
        let s: EngineSpec = "vllm-v0@0.8".parse().unwrap();
        assert_eq!(
            (s.variant, s.to_string().as_str()),
            (Variant::V0, "vllm-v0@0.8.0")
        );
        let s: EngineSpec = "dcgm-exporter@4.5".parse().unwrap();
        assert_eq!(s.exporter, Exporter::DcgmExporter);
        let s: EngineSpec = "kueue".parse().unwrap();
        assert_eq!(s.version, Exporter::Kueue.newest());
        assert!("nginx@1.0".parse::<EngineSpec>().is_err());
        assert!("vllm@".parse::<EngineSpec>().is_err());
        assert!("vllm@zero".parse::<EngineSpec>().is_err());
    }

    #[test]
    fn labels_follow_the_version() {
        let kv = family("vllm:kv_cache_usage_perc").unwrap();
        let new: EngineSpec = "vllm@0.26".parse().unwrap();
        assert_eq!(new.labels(kv), vec!["engine", "model_name"]);
        let v0: EngineSpec = "vllm-v0@0.9".parse().unwrap();
        assert_eq!(
            v0.labels(family("vllm:num_requests_running").unwrap()),
            vec!["model_name"]
        );
        let dcgm: EngineSpec = "dcgm-exporter@4.5".parse().unwrap();
        let power = family("DCGM_FI_DEV_POWER_USAGE").unwrap();
        assert!(dcgm.labels(power).contains(&"Hostname"));
        let main: EngineSpec = "dcgm-exporter@4.6".parse().unwrap();
        assert!(main.labels(power).contains(&"hostname"));
        let k15: EngineSpec = "kueue@0.15".parse().unwrap();
        let pending = family("kueue_pending_workloads").unwrap();
        assert!(!k15.labels(pending).contains(&"replica_role"));
        assert!(
            dcgm.families()
                .any(|(f, _)| f.name == "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
        );
        let old: EngineSpec = "dcgm-exporter@3.3".parse().unwrap();
        assert!(
            !old.families()
                .any(|(f, _)| f.name == "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
        );
    }
}
