//! What `llmscope inventory` shows of one source — a live or saved page, or the catalog's view
//! of a version: its families (type, HELP, series), the engine and its version (reported by the
//! engine, else the names' range), and how its names differ from the newest version the catalog
//! knows.

use crate::OpsError;
use llmscope_catalog::EngineSpec;
use llmscope_catalog::detect::{self, Detection, EngineVersion};
use llmscope_check::inventory::snapshot::Snapshot;
use llmscope_core::safe;
use serde_json::json;
use std::io::Write;

/// One source as `llmscope inventory` shows it.
#[derive(Debug, Clone)]
pub struct Listing {
    pub source: String,
    pub families: Vec<llmscope_check::inventory::snapshot::FamilySummary>,
    pub detections: Vec<Detection>,
    /// One per detection: reported by the engine, or the names' range.
    pub versions: Vec<EngineVersion>,
    pub names: Vec<String>,
}

impl Listing {
    /// What a page (live or saved) exposes.
    pub fn from_snapshot(snap: &Snapshot) -> Listing {
        use llmscope_check::Inventory;
        Listing {
            source: snap.source().to_owned(),
            families: snap.families().to_vec(),
            detections: snap.detections().to_vec(),
            versions: snap.engine_versions(),
            names: snap.names(),
        }
    }

    /// What the catalog says a version exposes.
    pub fn from_catalog(spec: EngineSpec) -> Listing {
        let families: Vec<_> = spec.families().map(catalog_family).collect();
        let names: Vec<String> = spec
            .families()
            .flat_map(|(f, _)| f.sample_names())
            .collect();
        let detections = detect::detect(names.iter().map(String::as_str));
        Listing {
            source: format!("{spec} (catalog)"),
            versions: detections
                .iter()
                .filter_map(|d| EngineVersion::pick(None, Some(d)))
                .collect(),
            detections,
            families,
            names,
        }
    }

    /// The `--format json` document.
    pub fn write_json(&self, w: &mut impl Write) -> Result<(), OpsError> {
        let engines: Vec<_> = self
            .detections
            .iter()
            .zip(&self.versions)
            .map(|(d, named)| self.engine_json(d, named))
            .collect();
        let doc = json!({
            "source": self.source,
            "engine": self.detections.first().map(|d| d.exporter.name()),
            "engines": engines,
            "families": self.families,
        });
        serde_json::to_writer_pretty(&mut *w, &doc)?;
        writeln!(w)?;
        Ok(())
    }

    /// One detected engine in the JSON document: its version, the names' range, what matched.
    fn engine_json(&self, d: &Detection, named: &EngineVersion) -> serde_json::Value {
        let reported = match named {
            EngineVersion::Reported { version, .. } => Some(version),
            EngineVersion::Detected(_) => None,
        };
        let names = self.names.iter().map(String::as_str);
        json!({
            "engine": d.exporter,
            "variant": d.variant,
            "version": named.to_string(),
            "reported_version": reported,
            "versions": d.range(),
            "min": d.min, "max": d.max, "below": d.below,
            "matched": d.matched,
            "unknown": d.unknown,
            "missing": d.missing,
            "differences_from_newest": detect::against_newest(d, names),
        })
    }

    /// For people: the engine and its differences from the newest, then one line per family.
    pub fn write_human(&self, w: &mut impl Write) -> std::io::Result<()> {
        let s = self;
        writeln!(
            w,
            "{}: {} families",
            safe::clean(&s.source),
            s.families.len()
        )?;
        if s.detections.is_empty() {
            writeln!(w, "engine: none the catalog knows")?;
        }
        for (d, named) in s.detections.iter().zip(&s.versions) {
            self.write_engine(w, d, named)?;
        }
        writeln!(w)?;
        for f in &s.families {
            let (name, help) = (&f.name, f.help.as_deref().unwrap_or(""));
            let (name, help) = (safe::terminal(name), safe::terminal(help));
            writeln!(w, "{:<10} {:>5}  {name}  {help}", f.ty, f.series)?;
        }
        Ok(())
    }

    /// One detected engine, and each name that differs from the newest version.
    fn write_engine(
        &self,
        w: &mut impl Write,
        d: &Detection,
        named: &EngineVersion,
    ) -> std::io::Result<()> {
        writeln!(w, "{}", engine_line(d, named))?;
        for diff in detect::against_newest(d, self.names.iter().map(String::as_str)) {
            writeln!(w, "  {}", difference(d, &diff))?;
        }
        Ok(())
    }
}

/// `engine: vllm 0.32.0 (from /version) (V1 engine), names fit …, from 40 catalogued names`.
fn engine_line(d: &Detection, named: &EngineVersion) -> String {
    let fit = match named {
        EngineVersion::Reported { .. } => format!(", names fit {}", d.range()),
        EngineVersion::Detected(_) => String::new(),
    };
    let unknown = if d.unknown.is_empty() {
        String::new()
    } else {
        format!(", {} unknown", d.unknown.len())
    };
    format!(
        "engine: {named} ({:?} engine){fit}, from {} catalogued names{unknown}",
        d.variant, d.matched
    )
}

/// A catalogued family as a listing shows it: its unit and status in the version as its HELP.
fn catalog_family(
    (f, status): (&'static llmscope_catalog::Family, llmscope_catalog::Status),
) -> llmscope_check::inventory::snapshot::FamilySummary {
    let only_with = f
        .condition
        .map(|c| format!("; only with {c}"))
        .unwrap_or_default();
    llmscope_check::inventory::snapshot::FamilySummary {
        name: f.name.to_owned(),
        ty: f.kind.name(),
        help: Some(format!("{} ({status:?}{only_with})", f.unit.name())),
        series: 0,
    }
}

/// `vllm:gpu_cache_usage_perc: removed in vllm 0.32.0 → vllm:kv_cache_usage_perc (…)`.
fn difference(d: &Detection, diff: &detect::Difference) -> String {
    let to = diff
        .successor
        .map(|x| format!(" → {x}"))
        .unwrap_or_default();
    let what = match diff.newest {
        llmscope_catalog::Status::Present => "missing here, present in the newest".to_owned(),
        st => format!("{st:?} in {} {}", d.exporter, d.exporter.newest()).to_lowercase(),
    };
    format!("{}: {what}{to} ({})", diff.name, diff.lifetime)
}
