//! The catalog's vocabulary: [`Exporter`]s and their [`Version`]s, metric [`Kind`]s and
//! [`Unit`]s, and one [`Family`] per exposed name with its lifecycle (since, deprecated, hidden,
//! removed, successor). [`Family::status_at`] answers "does version X expose this name, and how".

use crate::Concept;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Who exposes a family: a serving engine or an exporter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exporter {
    Vllm,
    Sglang,
    Tgi,
    DcgmExporter,
    Kueue,
    KubeStateMetrics,
}

impl Exporter {
    pub const ALL: [Exporter; 6] = [
        Exporter::Vllm,
        Exporter::Sglang,
        Exporter::Tgi,
        Exporter::DcgmExporter,
        Exporter::Kueue,
        Exporter::KubeStateMetrics,
    ];

    /// The name used on the command line (`--engine vllm@0.26`) and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Exporter::Vllm => "vllm",
            Exporter::Sglang => "sglang",
            Exporter::Tgi => "tgi",
            Exporter::DcgmExporter => "dcgm-exporter",
            Exporter::Kueue => "kueue",
            Exporter::KubeStateMetrics => "kube-state-metrics",
        }
    }

    /// The newest version the catalog knows (what "current" means in findings). vLLM stays at
    /// 0.32.0, the newest release whose pages were observed, though the catalog also holds the
    /// connector names 0.33.0 added (read from its source): a page showing one of those is dated
    /// to 0.33 by detection, which raises its ceiling for it (`detect`).
    pub fn newest(self) -> Version {
        match self {
            Exporter::Vllm => Version::new(0, 32, 0),
            Exporter::Sglang => Version::new(0, 5, 0),
            Exporter::Tgi => Version::new(3, 3, 7),
            Exporter::DcgmExporter => Version::new(4, 5, 3),
            Exporter::Kueue => Version::new(0, 19, 2),
            Exporter::KubeStateMetrics => Version::new(2, 20, 0),
        }
    }

    /// Whether the catalog holds every name this exporter has exposed: the serving engines,
    /// whose catalogs were read from their sources across versions. Then a name near a catalogued
    /// one is a misspelling even where no inventory of the engine is loaded. The exporters'
    /// catalogs (dcgm-exporter, Kueue, kube-state-metrics) hold the names llmscope reads, a
    /// part of what they expose.
    pub fn catalogued_whole(self) -> bool {
        matches!(self, Exporter::Vllm | Exporter::Sglang | Exporter::Tgi)
    }

    /// Whether a metric name belongs to this exporter's namespace (its prefix).
    pub fn owns(self, name: &str) -> bool {
        match self {
            Exporter::Vllm => name.starts_with("vllm:"),
            Exporter::Sglang => name.starts_with("sglang:"),
            Exporter::Tgi => name.starts_with("tgi_"),
            Exporter::DcgmExporter => name.starts_with("DCGM_"),
            Exporter::Kueue => name.starts_with("kueue_") || name.starts_with("multikueue_"),
            Exporter::KubeStateMetrics => name.starts_with("kube_"),
        }
    }

    /// The exporter whose prefix `name` carries.
    pub fn of_name(name: &str) -> Option<Exporter> {
        Exporter::ALL.into_iter().find(|e| e.owns(name))
    }
}

impl fmt::Display for Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Exporter {
    type Err = CatalogError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "vllm" | "vllm-v1" | "vllm-v0" => Exporter::Vllm,
            "sglang" => Exporter::Sglang,
            "tgi" | "text-generation-inference" => Exporter::Tgi,
            "dcgm-exporter" | "dcgm" => Exporter::DcgmExporter,
            "kueue" => Exporter::Kueue,
            "kube-state-metrics" | "ksm" => Exporter::KubeStateMetrics,
            _ => return Err(CatalogError::UnknownExporter(s.to_owned())),
        })
    }
}

/// What the catalog cannot resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error(
        "unknown engine or exporter `{0}` (known: vllm, vllm-v0, sglang, tgi, dcgm-exporter, kueue, kube-state-metrics)"
    )]
    UnknownExporter(String),
    #[error("bad version `{0}` (expected e.g. 0.26, v0.11.1 or 4.5.3-4.8.2)")]
    BadVersion(String),
    #[error("expected NAME@VERSION (e.g. vllm@0.26), got `{0}`")]
    BadSpec(String),
}

/// A release version, `major.minor.patch`. dcgm-exporter's `4.5.3-4.8.2` tags are read by
/// their first (DCGM) part, the way its images and docs name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u16,
    pub minor: u16,
    pub patch: u16,
}

impl Version {
    pub const fn new(major: u16, minor: u16, patch: u16) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl FromStr for Version {
    type Err = CatalogError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || CatalogError::BadVersion(s.to_owned());
        let core = s.trim().trim_start_matches('v');
        let core = core.split(['-', '+']).next().unwrap_or_default();
        let mut parts = core.split('.');
        let mut next = |required: bool| match parts.next() {
            Some(p) => p.parse::<u16>().map_err(|_| bad()),
            None if required => Err(bad()),
            None => Ok(0),
        };
        let v = Version::new(next(true)?, next(true)?, next(false)?);
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(v)
    }
}

impl Version {
    /// Reads the version an engine reports about itself (`GET /version`): `0.32.0`,
    /// `0.32.0+cpu`, `v0.11.1.dev12+g1a2b3c`, `0.33.0rc1`. Pre-release and build parts are
    /// dropped, so a dev or rc build reads as the release it leads to.
    pub fn from_reported(s: &str) -> Option<Version> {
        let core = s.trim().trim_start_matches('v');
        let core = core.split(['+', '-']).next()?;
        let mut parts = core.split('.').map(|p| {
            let digits = p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len());
            p[..digits].parse::<u16>().ok()
        });
        let major = parts.next()??;
        let minor = parts.next()??;
        let patch = parts.next().flatten().unwrap_or(0);
        Some(Version::new(major, minor, patch))
    }
}

/// The metric type, as `# TYPE` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
    Summary,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
            Kind::Summary => "summary",
        }
    }
}

/// What a number means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A 0..1 fraction, even when the name says "perc".
    Fraction,
    /// 0..100.
    Percent,
    Count,
    Tokens,
    Requests,
    Seconds,
    Milliseconds,
    Watts,
    Millijoules,
    MiB,
    Bytes,
    BytesPerSecond,
    Megahertz,
    Celsius,
    /// Floating-point operations.
    Flops,
    /// Unix time, seconds.
    Timestamp,
    /// Constant 1; the information is in the labels.
    Info,
    /// Kubernetes resource units (cores, bytes, GPUs) depending on a `resource` label.
    Resource,
}

impl Unit {
    /// Whether a finite value is one this unit can take: a fraction within 0..1, a percent
    /// within 0..100, counts, times, sizes and rates 0 or more. Temperatures, timestamps, info
    /// gauges and resource units are not judged.
    pub fn holds(self, v: f64) -> bool {
        match self {
            Unit::Fraction => (0.0..=1.0).contains(&v),
            Unit::Percent => (0.0..=100.0).contains(&v),
            Unit::Celsius | Unit::Timestamp | Unit::Info | Unit::Resource => true,
            _ => v >= 0.0,
        }
    }

    /// The values [`Unit::holds`], in words.
    pub fn domain(self) -> &'static str {
        match self {
            Unit::Fraction => "a fraction from 0 to 1",
            Unit::Percent => "a percent from 0 to 100",
            Unit::Celsius | Unit::Timestamp | Unit::Info | Unit::Resource => "any number",
            _ => "0 or more",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Unit::Fraction => "0..1 fraction",
            Unit::Percent => "percent (0..100)",
            Unit::Count => "count",
            Unit::Tokens => "tokens",
            Unit::Requests => "requests",
            Unit::Seconds => "seconds",
            Unit::Milliseconds => "milliseconds",
            Unit::Watts => "W",
            Unit::Millijoules => "mJ",
            Unit::MiB => "MiB",
            Unit::Bytes => "bytes",
            Unit::BytesPerSecond => "bytes/s",
            Unit::Megahertz => "MHz",
            Unit::Celsius => "°C",
            Unit::Flops => "FLOPs",
            Unit::Timestamp => "unix seconds",
            Unit::Info => "info (constant 1)",
            Unit::Resource => "resource units",
        }
    }
}

/// Which vLLM engine exposes a family: both, only the V0 engine, or only V1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    Any,
    V0,
    V1,
}

/// One exposed name and its history. Counters are named with `_total`, histograms and summaries
/// by their base name (samples add `_bucket`/`_sum`/`_count`, and `_created` for
/// `prometheus_client` exporters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    pub exporter: Exporter,
    pub name: &'static str,
    pub kind: Kind,
    pub unit: Unit,
    /// Label names of its series (besides `le`/`quantile`); `label_*` stands for any label with
    /// that prefix (`*` alone: any label). Scrape-added target labels (`job`, `instance`, `pod`, …) are not listed.
    pub labels: &'static [&'static str],
    pub concept: Option<Concept>,
    pub variant: Variant,
    pub since: Version,
    pub deprecated: Option<Version>,
    /// From this version on the name is only exposed with an opt-in flag.
    pub hidden: Option<Version>,
    /// The first version that no longer exposes it.
    pub removed: Option<Version>,
    /// The first version that exposes it again after `removed` (a name that went away and came
    /// back, like vLLM's e2e histogram: absent from 0.26.0, present in 0.32.0).
    pub restored: Option<Version>,
    /// The name to use instead, once deprecated or removed.
    pub successor: Option<&'static str>,
    /// Exposed only when something is switched on (a flag, a feature gate, a custom CSV).
    pub condition: Option<&'static str>,
    /// Semantics worth saying (unit surprises, how to replace a removed name).
    pub note: &'static str,
    /// Versions that export one copy of each series per process (see [`PerProcess`]).
    pub per_process: Option<PerProcess>,
}

/// A family a `prometheus_client` in multiprocess mode exports once per process. With
/// `PROMETHEUS_MULTIPROC_DIR` set (vLLM sets it when it runs several API-server processes), each
/// process writes its own copy of every series; the collector adds the copies of counters and
/// histograms, but a gauge in the default mode `all` comes out once per process, told apart by
/// a `pid` label. The copies are not parts of a whole: the process that received the engine's
/// stats holds the value, the others 0, or a stale last value after a restart. Summing or
/// averaging across that label is wrong; `max without (pid)` merges them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerProcess {
    /// The label that tells the copies apart.
    pub label: &'static str,
    /// The first version that exports per-process copies.
    pub since: Version,
    /// The first version that exports one merged series again, if any.
    pub until: Option<Version>,
    /// When the copies appear (a flag or setting).
    pub when: &'static str,
}

impl PerProcess {
    /// Whether `version` exports the copies (when [`PerProcess::when`] holds).
    pub fn at(&self, version: Version) -> bool {
        version >= self.since && self.until.is_none_or(|u| version < u)
    }
}

/// How a version exposes a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not yet added in this version.
    NotYet,
    Present,
    /// Still exposed, but deprecated (use the successor).
    Deprecated,
    /// Exposed only with an opt-in flag (vLLM `--show-hidden-metrics-for-version`).
    Hidden,
    Removed,
}

impl Status {
    /// Exposed by default.
    pub fn is_exposed(self) -> bool {
        matches!(self, Status::Present | Status::Deprecated)
    }
}

impl Family {
    pub const fn new(
        exporter: Exporter,
        name: &'static str,
        kind: Kind,
        unit: Unit,
        labels: &'static [&'static str],
    ) -> Family {
        Family {
            exporter,
            name,
            kind,
            unit,
            labels,
            concept: None,
            variant: Variant::Any,
            since: Version::new(0, 0, 0),
            deprecated: None,
            hidden: None,
            removed: None,
            restored: None,
            successor: None,
            condition: None,
            note: "",
            per_process: None,
        }
    }

    pub const fn concept(self, c: Concept) -> Family {
        Family {
            concept: Some(c),
            ..self
        }
    }

    pub const fn only(self, variant: Variant) -> Family {
        Family { variant, ..self }
    }

    pub const fn since(self, v: Version) -> Family {
        Family { since: v, ..self }
    }

    /// Deprecated, hidden and removed versions (any may be `None`).
    pub const fn life(
        self,
        deprecated: Option<Version>,
        hidden: Option<Version>,
        removed: Option<Version>,
    ) -> Family {
        Family {
            deprecated,
            hidden,
            removed,
            ..self
        }
    }

    /// Exposed again from `v` on, after its removal.
    pub const fn restored(self, v: Version) -> Family {
        Family {
            restored: Some(v),
            ..self
        }
    }

    pub const fn successor(self, name: &'static str) -> Family {
        Family {
            successor: Some(name),
            ..self
        }
    }

    pub const fn when(self, condition: &'static str) -> Family {
        Family {
            condition: Some(condition),
            ..self
        }
    }

    pub const fn note(self, note: &'static str) -> Family {
        Family { note, ..self }
    }

    /// Exported once per process in the versions and setting `p` says.
    pub const fn per_process(self, p: PerProcess) -> Family {
        Family {
            per_process: Some(p),
            ..self
        }
    }

    /// The per-process copies `version` exports, if it does.
    pub fn per_process_at(&self, version: Version) -> Option<&PerProcess> {
        self.per_process.as_ref().filter(|p| p.at(version))
    }

    /// How `version` of the `variant` engine exposes this family.
    pub fn status_at(&self, version: Version, variant: Variant) -> Status {
        let engine_matches = self.variant == Variant::Any || self.variant == variant;
        if version < self.since {
            return Status::NotYet;
        }
        if !engine_matches || self.is_removed_at(version) {
            return Status::Removed;
        }
        if self.hidden.is_some_and(|h| version >= h) {
            return Status::Hidden;
        }
        if self.deprecated.is_some_and(|d| version >= d) {
            return Status::Deprecated;
        }
        Status::Present
    }

    /// Whether `version` falls after its removal and before any return.
    fn is_removed_at(&self, version: Version) -> bool {
        let gone = self.removed.is_some_and(|r| version >= r);
        gone && self.restored.is_none_or(|back| version < back)
    }

    /// The sample names its series use (`_bucket`/`_sum`/`_count` for histograms).
    pub fn sample_names(&self) -> Vec<String> {
        match self.kind {
            Kind::Histogram => ["_bucket", "_sum", "_count"]
                .iter()
                .map(|s| format!("{}{s}", self.name))
                .collect(),
            Kind::Summary => ["", "_sum", "_count"]
                .iter()
                .map(|s| format!("{}{s}", self.name))
                .collect(),
            Kind::Counter | Kind::Gauge => vec![self.name.to_owned()],
        }
    }

    /// Whether `label` is one of its labels (`label_*` patterns match by prefix).
    pub fn has_label(&self, label: &str) -> bool {
        self.labels.iter().any(|l| match l.strip_suffix('*') {
            Some(prefix) => label.starts_with(prefix),
            None => *l == label,
        })
    }

    /// Its lifecycle as text: `0.9.2..` , `..0.12.0 (deprecated 0.9.2, hidden 0.11.0)`.
    pub fn lifetime(&self) -> String {
        let mut s = format!("since {}", self.since);
        if let Some(d) = self.deprecated {
            s.push_str(&format!(", deprecated {d}"));
        }
        if let Some(h) = self.hidden {
            s.push_str(&format!(", hidden {h}"));
        }
        if let Some(r) = self.removed {
            s.push_str(&format!(", removed {r}"));
        }
        if let Some(b) = self.restored {
            s.push_str(&format!(", back {b}"));
        }
        s
    }
}

/// A name that looks like a metric but never existed (a doc or memory error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Misnomer {
    pub exporter: Exporter,
    pub name: &'static str,
    pub use_instead: &'static [&'static str],
    pub note: &'static str,
}

/// A label name people get wrong, and the right one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabelHint {
    pub exporter: Exporter,
    pub wrong: &'static str,
    pub right: &'static str,
    pub note: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_from_every_spelling() {
        assert_eq!("0.26".parse::<Version>(), Ok(Version::new(0, 26, 0)));
        assert_eq!("v0.11.1".parse::<Version>(), Ok(Version::new(0, 11, 1)));
        assert_eq!("4.5.3-4.8.2".parse::<Version>(), Ok(Version::new(4, 5, 3)));
        assert!("0".parse::<Version>().is_err());
        assert!("0.x".parse::<Version>().is_err());
        assert!("1.2.3.4".parse::<Version>().is_err());
        assert!(Version::new(0, 9, 2) < Version::new(0, 10, 0));
    }

    #[test]
    fn reported_versions_drop_build_and_prerelease_parts() {
        let r = Version::from_reported;
        assert_eq!(r("0.32.0"), Some(Version::new(0, 32, 0)));
        assert_eq!(r("0.32.0+cpu"), Some(Version::new(0, 32, 0)));
        assert_eq!(r("v0.11.1.dev12+g1a2b3c"), Some(Version::new(0, 11, 1)));
        assert_eq!(r("0.33.0rc1"), Some(Version::new(0, 33, 0)));
        assert_eq!(r("0.9"), Some(Version::new(0, 9, 0)));
        assert_eq!(r("unknown"), None);
        assert_eq!(r("0"), None);
        assert_eq!(r(""), None);
    }

    #[test]
    fn a_restored_family_is_removed_only_in_between() {
        let v = |m| Version::new(0, m, 0);
        let f = Family::new(Exporter::Vllm, "x", Kind::Histogram, Unit::Seconds, &[])
            .life(None, None, Some(v(26)))
            .restored(v(27));
        assert_eq!(f.status_at(v(25), Variant::V1), Status::Present);
        assert_eq!(f.status_at(v(26), Variant::V1), Status::Removed);
        assert_eq!(f.status_at(v(27), Variant::V1), Status::Present);
        assert_eq!(f.status_at(v(32), Variant::V1), Status::Present);
        assert_eq!(f.lifetime(), "since 0.0.0, removed 0.26.0, back 0.27.0");
    }

    #[test]
    fn status_follows_the_lifecycle() {
        let v = |m, p| Version::new(0, m, p);
        let f = Family::new(Exporter::Vllm, "x", Kind::Gauge, Unit::Fraction, &[])
            .since(v(2, 0))
            .life(Some(v(9, 2)), Some(v(11, 0)), Some(v(12, 0)));
        assert_eq!(f.status_at(v(1, 0), Variant::V1), Status::NotYet);
        assert_eq!(f.status_at(v(9, 1), Variant::V1), Status::Present);
        assert_eq!(f.status_at(v(10, 0), Variant::V1), Status::Deprecated);
        assert_eq!(f.status_at(v(11, 1), Variant::V1), Status::Hidden);
        assert_eq!(f.status_at(v(12, 0), Variant::V1), Status::Removed);
        let v0_only = f.only(Variant::V0);
        assert_eq!(v0_only.status_at(v(9, 1), Variant::V1), Status::Removed);
    }

    #[test]
    fn per_process_copies_hold_in_their_versions_only() {
        let v = |m| Version::new(0, m, 0);
        let f = Family::new(Exporter::Vllm, "x", Kind::Gauge, Unit::Fraction, &[]).per_process(
            PerProcess {
                label: "pid",
                since: Version::new(0, 9, 2),
                until: Some(v(12)),
                when: "w",
            },
        );
        assert!(f.per_process_at(v(9)).is_none());
        assert_eq!(f.per_process_at(v(10)).map(|p| p.label), Some("pid"));
        assert!(f.per_process_at(v(11)).is_some());
        assert!(f.per_process_at(v(12)).is_none());
        let plain = Family::new(Exporter::Vllm, "y", Kind::Gauge, Unit::Count, &[]);
        assert!(plain.per_process_at(v(10)).is_none());
    }

    #[test]
    fn label_patterns_match_by_prefix() {
        let f = Family::new(
            Exporter::KubeStateMetrics,
            "kube_namespace_labels",
            Kind::Gauge,
            Unit::Info,
            &["namespace", "label_*"],
        );
        assert!(f.has_label("label_team"));
        assert!(f.has_label("namespace"));
        assert!(!f.has_label("team"));
    }
}
