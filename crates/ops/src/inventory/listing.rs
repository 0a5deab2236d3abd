//! What `llmscope inventory` shows of one source — a live or saved page, or the catalog's view
//! of a version: its families (type, HELP, series), the engine and its version (reported by the
//! engine, else the names' range), and how its names differ from the newest version the catalog
//! knows.

use crate::OpsError;
use llmscope_check::inventory::snapshot::Snapshot;
use llmscope_core::catalog::EngineSpec;
use llmscope_core::catalog::detect::{self, Detection, EngineVersion};
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
        let families: Vec<_> = spec
            .families()
            .map(
                |(f, status)| llmscope_check::inventory::snapshot::FamilySummary {
                    name: f.name.to_owned(),
                    ty: f.kind.name(),
                    help: Some(format!(
                        "{} ({status:?}{})",
                        f.unit.name(),
                        f.condition
                            .map(|c| format!("; only with {c}"))
                            .unwrap_or_default()
                    )),
                    series: 0,
                },
            )
            .collect();
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
        let s = self;
        let engines: Vec<_> = s
        .detections
        .iter()
        .zip(&s.versions)
        .map(|(d, named)| {
            let reported = match named {
                EngineVersion::Reported { version, .. } => Some(version),
                EngineVersion::Detected(_) => None,
            };
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
                "differences_from_newest": detect::against_newest(d, s.names.iter().map(String::as_str)),
            })
        })
        .collect();
        let doc = json!({
            "source": s.source,
            "engine": s.detections.first().map(|d| d.exporter.name()),
            "engines": engines,
            "families": s.families,
        });
        serde_json::to_writer_pretty(&mut *w, &doc)?;
        writeln!(w)?;
        Ok(())
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
            writeln!(
                w,
                "{:<10} {:>5}  {}  {}",
                f.ty,
                f.series,
                safe::terminal(&f.name),
                safe::terminal(f.help.as_deref().unwrap_or(""))
            )?;
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
        let fit = match named {
            EngineVersion::Reported { .. } => format!(", names fit {}", d.range()),
            EngineVersion::Detected(_) => String::new(),
        };
        writeln!(
            w,
            "engine: {named} ({:?} engine){fit}, from {} catalogued names{}",
            d.variant,
            d.matched,
            if d.unknown.is_empty() {
                String::new()
            } else {
                format!(", {} unknown", d.unknown.len())
            }
        )?;
        for diff in detect::against_newest(d, self.names.iter().map(String::as_str)) {
            let to = diff
                .successor
                .map(|x| format!(" → {x}"))
                .unwrap_or_default();
            let what = match diff.newest {
                llmscope_core::catalog::Status::Present => {
                    "missing here, present in the newest".to_owned()
                }
                st => format!("{st:?} in {} {}", d.exporter, d.exporter.newest()).to_lowercase(),
            };
            writeln!(w, "  {}: {what}{to} ({})", diff.name, diff.lifetime)?;
        }
        Ok(())
    }
}
