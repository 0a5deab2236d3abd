//! A [`Snapshot`]: the inventory of one exposition page (a saved `.prom` file, or a live
//! `/metrics` body the caller fetched), read with `promtext`. It knows every sample name, its
//! family's type and HELP, the label names and values of its series — and nothing a scraper
//! adds (`job`, `instance`, Kubernetes target labels). When the engine behind a live page said
//! its version (vLLM's `GET /version`, fetched by the caller), [`Snapshot::set_reported_version`]
//! records it and every message names that version instead of the names' best guess.

use super::{Inventory, MetricInfo};
use llmscope_catalog::detect::{self, Detection, EngineVersion};
use llmscope_catalog::{EngineSpec, Exporter, Kind, Suffix, Version};
use promtext::MetricType;
use std::collections::BTreeMap;

/// One exposition page as an inventory.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// What the page was given as (a file name, a URL).
    given: String,
    /// `given`, followed by what is doubtful about the engine version its names show (a mix
    /// of versions, or too few names to date it): what messages name the page by.
    source: String,
    metrics: BTreeMap<String, MetricInfo>,
    /// Family name → (type, HELP, series count), in page order of first appearance.
    families: Vec<FamilySummary>,
    detections: Vec<Detection>,
    /// The version the engine reported about itself.
    reported: Option<(Exporter, Version)>,
}

/// A family as the page declares it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FamilySummary {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: &'static str,
    pub help: Option<String>,
    pub series: usize,
}

impl Snapshot {
    /// Reads `text`; lines that do not parse are returned as errors and the rest is kept.
    pub fn parse(source: impl Into<String>, text: &[u8]) -> (Snapshot, Vec<promtext::ParseError>) {
        let (families, errors) = promtext::parse_families(text);
        let source = source.into();
        let mut snap = Snapshot {
            source: source.clone(),
            given: source,
            metrics: BTreeMap::new(),
            families: Vec::new(),
            detections: Vec::new(),
            reported: None,
        };
        for fam in &families {
            snap.add_family(fam);
        }
        snap.detections = detect::detect(snap.metrics.keys().map(String::as_str));
        for d in &mut snap.detections {
            let exporter = d.exporter;
            let labels = snap
                .metrics
                .iter()
                .filter(|(name, _)| exporter.owns(name))
                .flat_map(|(_, m)| m.labels.iter().map(String::as_str));
            detect::refine_with_labels(d, labels);
        }
        snap.describe();
        (snap, errors)
    }

    /// A page is one engine of one version: names of several versions on it, or too few to date
    /// it, are said wherever the page is named, so no message leans on a fitted version.
    fn describe(&mut self) {
        let doubts: Vec<String> = self
            .engine_versions()
            .iter()
            .filter(|v| {
                matches!(v, EngineVersion::Detected(d)
                    if !d.conflicts.is_empty() || d.confidence == detect::Confidence::Low)
            })
            .map(ToString::to_string)
            .collect();
        self.source = match doubts.as_slice() {
            [] => self.given.clone(),
            _ => format!("{} ({})", self.given, doubts.join("; ")),
        };
    }

    fn add_family(&mut self, fam: &promtext::Family<'_>) {
        let family_name = fam.name.unescape().into_owned();
        let kind = kind_of(fam.ty);
        let help = fam.help.as_ref().map(|h| h.unescape().into_owned());
        let mut series = 0;
        for s in &fam.samples {
            let name = s.name.unescape();
            let info = self.metrics.entry(name.to_string()).or_default();
            info.kind = info.kind.or(kind);
            info.suffix = Some(suffix(&family_name, &name));
            info.help = info.help.take().or_else(|| help.clone());
            info.series += 1;
            let values = info.values.get_or_insert_with(BTreeMap::new);
            for l in s.labels.iter() {
                let label = l.name.unescape().into_owned();
                values
                    .entry(label.clone())
                    .or_default()
                    .insert(l.value.unescape().into_owned());
                info.labels.insert(label);
            }
            if !matches!(suffix(&family_name, &name), Suffix::Sum | Suffix::Count) {
                series += 1;
            }
        }
        self.families.push(FamilySummary {
            name: family_name,
            ty: fam.ty.as_str(),
            help,
            series,
        });
    }

    /// The families of the page, in page order.
    pub fn families(&self) -> &[FamilySummary] {
        &self.families
    }

    /// The engines and exporters detected from its names, most names first.
    pub fn detections(&self) -> &[Detection] {
        &self.detections
    }

    /// Records the version `exporter` reported about itself; it wins over the names' range.
    pub fn set_reported_version(&mut self, exporter: Exporter, version: Version) {
        self.reported = Some((exporter, version));
        self.describe();
    }

    /// Each detected engine's version as llmscope can name it (reported, else from names).
    pub fn engine_versions(&self) -> Vec<EngineVersion> {
        self.detections
            .iter()
            .filter_map(|d| {
                let reported = self.reported.filter(|(e, _)| *e == d.exporter);
                EngineVersion::pick(reported, Some(d))
            })
            .collect()
    }
}

fn kind_of(ty: MetricType) -> Option<Kind> {
    match ty {
        MetricType::Counter => Some(Kind::Counter),
        MetricType::Gauge => Some(Kind::Gauge),
        MetricType::Histogram | MetricType::GaugeHistogram => Some(Kind::Histogram),
        MetricType::Summary => Some(Kind::Summary),
        _ => None,
    }
}

/// Which sample of `family` the sample `name` is.
pub fn suffix(family: &str, name: &str) -> Suffix {
    match name.strip_prefix(family) {
        Some("_bucket") => Suffix::Bucket,
        Some("_sum") => Suffix::Sum,
        Some("_count") => Suffix::Count,
        Some("_created") => Suffix::Created,
        _ => Suffix::None,
    }
}

impl Inventory for Snapshot {
    fn source(&self) -> &str {
        &self.source
    }

    fn metric(&self, name: &str) -> Option<MetricInfo> {
        self.metrics.get(name).cloned()
    }

    fn names(&self) -> Vec<String> {
        self.metrics.keys().cloned().collect()
    }

    fn engines(&self) -> Vec<EngineSpec> {
        self.engine_versions()
            .iter()
            .map(EngineVersion::spec)
            .collect()
    }

    fn adds_target_labels(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.02
# TYPE vllm:ttft_seconds histogram
vllm:ttft_seconds_bucket{le=\"1.0\",model_name=\"m\"} 1.0
vllm:ttft_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 2.0
vllm:ttft_seconds_count{model_name=\"m\"} 2.0
vllm:ttft_seconds_sum{model_name=\"m\"} 0.5
broken{ 1
";

    #[test]
    fn samples_keep_type_labels_and_values() {
        let (snap, errors) = Snapshot::parse("page", PAGE.as_bytes());
        assert_eq!(
            errors.len(),
            1,
            "the broken line is reported, the rest kept"
        );
        let kv = snap.metric("vllm:kv_cache_usage_perc").unwrap();
        assert_eq!(kv.kind, Some(Kind::Gauge));
        assert!(kv.has_label("engine") && !kv.has_label("pod"));
        let b = snap.metric("vllm:ttft_seconds_bucket").unwrap();
        assert_eq!(
            (b.kind, b.suffix),
            (Some(Kind::Histogram), Some(Suffix::Bucket))
        );
        assert_eq!(b.values.unwrap()["le"].len(), 2);
        assert!(snap.metric("vllm:ttft_seconds").is_none());
        assert_eq!(snap.families()[1].series, 2);
        assert_eq!(snap.engines()[0].exporter.name(), "vllm");
    }

    #[test]
    fn a_reported_version_replaces_the_guess_from_names() {
        let (mut snap, _) = Snapshot::parse("page", PAGE.as_bytes());
        let guessed = snap.engines()[0].version;
        // One catalogued name on this page: a guess, and said to be one.
        assert!(
            snap.engine_versions()[0]
                .to_string()
                .ends_with("(from names; low confidence: 1 catalogued name)"),
            "{}",
            snap.engine_versions()[0]
        );
        assert!(
            snap.source().contains("low confidence"),
            "{}",
            snap.source()
        );
        snap.set_reported_version(Exporter::Vllm, Version::new(0, 30, 1));
        assert_eq!(snap.source(), "page", "a reported version leaves no doubt");
        assert_eq!(snap.engines()[0].version, Version::new(0, 30, 1));
        assert_ne!(guessed, Version::new(0, 30, 1));
        assert_eq!(
            snap.engine_versions()[0].to_string(),
            "vllm 0.30.1 (from /version)"
        );
        snap.set_reported_version(Exporter::DcgmExporter, Version::new(4, 5, 3));
        assert_eq!(
            snap.engines()[0].version,
            guessed,
            "another exporter's version"
        );
    }

    #[test]
    fn a_page_of_mixed_versions_says_so_where_it_is_named() {
        let page = "# TYPE vllm:num_requests_swapped gauge\nvllm:num_requests_swapped{model_name=\"m\"} 0\n# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.1\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1\n";
        let (snap, _) = Snapshot::parse("mixed.prom", page.as_bytes());
        assert!(
            snap.source()
                .starts_with("mixed.prom (vllm of mixed versions"),
            "{}",
            snap.source()
        );
        assert!(
            snap.source().contains("V0 engine only"),
            "{}",
            snap.source()
        );
    }
}
