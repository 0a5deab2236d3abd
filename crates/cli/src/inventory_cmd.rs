//! `llmscope inventory SOURCE`, and the inventory flags every linting command shares.
//!
//! [`InventoryArgs`] (`--metrics-url`, `--prometheus`, `--snapshot`, `--engine`, repeatable and
//! combinable) resolve into an [`InventoryPlan`] without I/O; [`load`] then fetches pages and
//! Prometheus answers (through `llmscope-collect`'s one HTTP client) and builds the pure
//! inventories of `llmscope-check`. The `inventory` command shows one source: its families
//! (type, HELP, series), the engine and its version, and how its names differ from the newest
//! version the catalog knows. Beside a live page the engine is asked its version
//! (`GET /version`, `llmscope_ops::page::ask_version`); the names' range is the fallback (issue 11).

use crate::prom_flags::PromConnection;
use anyhow::{Context, Result};
use hyper::Uri;
use llmscope_check::Inventories;
use llmscope_check::inventory::engine::CatalogInventory;
use llmscope_check::inventory::snapshot::Snapshot;
use llmscope_collect::HttpClient;
use llmscope_collect::prom::{PromClient, PromConfig};
use llmscope_core::catalog::EngineSpec;
use llmscope_core::catalog::detect::{self, Detection, EngineVersion};
use llmscope_core::safe;
use serde_json::json;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Where metric names really exist (repeatable, combinable).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct InventoryArgs {
    /// A live /metrics page (vLLM, dcgm-exporter, Kueue, kube-state-metrics, …).
    #[arg(long = "metrics-url", value_name = "URL", help_heading = "Inventories")]
    pub metrics_urls: Vec<String>,
    /// A Prometheus-compatible server: names, labels, values and types over --lookback.
    #[arg(long = "prometheus", value_name = "URL", help_heading = "Inventories")]
    pub prometheus: Vec<String>,
    /// A saved exposition page (e.g. `curl -s host:8000/metrics > vllm.prom`).
    #[arg(long = "snapshot", value_name = "FILE", help_heading = "Inventories")]
    pub snapshots: Vec<PathBuf>,
    /// The catalog's name set of an engine or exporter version: vllm@0.26, vllm-v0@0.8,
    /// sglang, tgi, dcgm-exporter@4.5, kueue@0.19, kube-state-metrics@2.20.
    #[arg(
        long = "engine",
        value_name = "NAME@VERSION",
        help_heading = "Inventories"
    )]
    pub engines: Vec<String>,
    /// How far back --prometheus looks for a metric (pint's lookback).
    #[arg(long, value_parser = crate::args::duration, default_value = "1h", help_heading = "Inventories")]
    pub lookback: Duration,
    /// How to connect to every --prometheus (auth, headers, CA, timeout).
    #[command(flatten)]
    pub conn: PromConnection,
}

/// One inventory source, validated.
#[derive(Debug, Clone)]
pub enum InventorySource {
    MetricsUrl(Uri),
    Prometheus(Box<PromConfig>),
    Snapshot(PathBuf),
    Engine(EngineSpec),
}

/// Every inventory to load.
#[derive(Debug, Clone)]
pub struct InventoryPlan {
    pub sources: Vec<InventorySource>,
    pub lookback: Duration,
    /// Extra CA certificates for https sources.
    pub ca_file: Option<PathBuf>,
}

impl InventoryArgs {
    /// Validates the flags (no I/O).
    pub fn plan(&self) -> Result<InventoryPlan> {
        let mut sources = Vec::new();
        for u in &self.metrics_urls {
            sources.push(InventorySource::MetricsUrl(http_url(u, "--metrics-url")?));
        }
        for u in &self.prometheus {
            sources.push(InventorySource::Prometheus(Box::new(self.conn.config(u)?)));
        }
        sources.extend(
            self.snapshots
                .iter()
                .cloned()
                .map(InventorySource::Snapshot),
        );
        for e in &self.engines {
            let spec: EngineSpec = e.parse().with_context(|| format!("--engine {e}"))?;
            sources.push(InventorySource::Engine(spec));
        }
        Ok(InventoryPlan {
            sources,
            lookback: self.lookback,
            ca_file: self.conn.ca_file.clone(),
        })
    }
}

fn http_url(text: &str, flag: &str) -> Result<Uri> {
    llmscope_collect::url::parse_http_url(text).map_err(|why| {
        anyhow::anyhow!(
            "invalid {flag} `{}`: {why}",
            llmscope_collect::url::redact(text)
        )
    })
}

/// Loads every inventory; `names` are the metrics the caller will ask about (Prometheus
/// inventories fetch labels and values for those only).
pub fn load(plan: &InventoryPlan, names: &BTreeSet<String>) -> Result<Inventories> {
    let mut inv = Inventories::new();
    let needs_net = plan.sources.iter().any(|s| {
        matches!(
            s,
            InventorySource::MetricsUrl(_) | InventorySource::Prometheus(_)
        )
    });
    let net = if needs_net {
        Some(Net::new(plan.ca_file.as_deref())?)
    } else {
        None
    };
    for source in &plan.sources {
        match (source, &net) {
            (InventorySource::Snapshot(path), _) => inv.push(Box::new(read_snapshot(path)?)),
            (InventorySource::Engine(spec), _) => inv.push(Box::new(CatalogInventory::new(*spec))),
            (InventorySource::MetricsUrl(uri), Some(net)) => {
                let snap = net.block_on(fetch_snapshot(&net.http, uri))?;
                inv.push(Box::new(snap));
            }
            (InventorySource::Prometheus(cfg), Some(net)) => {
                let client = PromClient::new((**cfg).clone(), net.http.clone());
                let p = net.block_on(llmscope_ops::inventory::prometheus(
                    &client,
                    plan.lookback,
                    names,
                ))?;
                inv.push(Box::new(p));
            }
            _ => unreachable!("a network source always has a runtime"),
        }
    }
    Ok(inv)
}

/// The async runtime and HTTP client, created only when a source is remote.
pub struct Net {
    pub rt: tokio::runtime::Runtime,
    pub http: HttpClient,
}

impl Net {
    pub fn new(ca_file: Option<&std::path::Path>) -> Result<Net> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let http = HttpClient::new(ca_file).context("TLS setup")?;
        Ok(Net { rt, http })
    }

    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }
}

pub fn read_snapshot(path: &std::path::Path) -> Result<Snapshot> {
    let limit = llmscope_check::input::files::DEFAULT_MAX_BYTES;
    let text = llmscope_check::input::files::read_bytes(path, limit)?;
    let (snap, _) = Snapshot::parse(path.display().to_string(), &text);
    warn_page(&path.display().to_string(), &text);
    Ok(snap)
}

/// The same warnings for a page, saved or fetched (issue 17): bad lines, duplicates, a body that
/// is not exposition text.
fn warn_page(source: &str, body: &[u8]) {
    let source = llmscope_core::safe::clean(source);
    for w in promtext::PageReport::read(body).warnings(&source) {
        eprintln!("warning: {w}");
    }
}

/// GETs a page; anything but a 200 is an error naming the URL.
pub async fn fetch_page(http: &HttpClient, uri: &Uri) -> Result<Vec<u8>> {
    Ok(llmscope_ops::page::fetch_page(http, uri).await?)
}

/// GETs a /metrics page and, when it is vLLM's, the engine's own version beside it.
pub async fn fetch_snapshot(http: &HttpClient, uri: &Uri) -> Result<Snapshot> {
    let body = fetch_page(http, uri).await?;
    warn_page(&uri.to_string(), &body);
    let (mut snap, _) = Snapshot::parse(uri.to_string(), &body);
    llmscope_ops::page::ask_version(http, uri, &mut snap).await;
    Ok(snap)
}

// ---- the `inventory` command ----------------------------------------------------------------

const AFTER_HELP: &str = "Examples:
  llmscope inventory http://127.0.0.1:8000/metrics
  llmscope inventory vllm.prom --format json
  llmscope inventory vllm@0.10

Exit status: 0 shown, 2 usage or runtime error.";

/// List what a target exposes: families, engine and version range, differences from the newest.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct InventoryCmdArgs {
    /// A /metrics URL, a saved page, or NAME@VERSION for the catalog's view of a version.
    source: String,
    /// Output: human or json.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    format: String,
}

/// One inventory as shown.
struct Shown {
    source: String,
    families: Vec<llmscope_check::inventory::snapshot::FamilySummary>,
    detections: Vec<Detection>,
    /// One per detection: reported by the engine, or the names' range.
    versions: Vec<EngineVersion>,
    names: Vec<String>,
}

pub fn run(args: InventoryCmdArgs) -> Result<ExitCode> {
    let shown = if args.source.starts_with("http://") || args.source.starts_with("https://") {
        let uri = http_url(&args.source, "SOURCE")?;
        let net = Net::new(None)?;
        from_snapshot(net.block_on(fetch_snapshot(&net.http, &uri))?)
    } else if std::path::Path::new(&args.source).exists() {
        from_snapshot(read_snapshot(&PathBuf::from(&args.source))?)
    } else {
        let spec: EngineSpec = args
            .source
            .parse()
            .with_context(|| format!("`{}` is no URL, file or NAME@VERSION", args.source))?;
        from_catalog(spec)
    };
    let mut out = std::io::stdout().lock();
    match args.format.as_str() {
        "json" => write_json(&mut out, &shown)?,
        _ => write_human(&mut out, &shown)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn from_snapshot(snap: Snapshot) -> Shown {
    use llmscope_check::Inventory;
    Shown {
        source: snap.source().to_owned(),
        families: snap.families().to_vec(),
        detections: snap.detections().to_vec(),
        versions: snap.engine_versions(),
        names: snap.names(),
    }
}

fn from_catalog(spec: EngineSpec) -> Shown {
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
    Shown {
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

fn write_json(w: &mut impl Write, s: &Shown) -> Result<()> {
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

fn write_human(w: &mut impl Write, s: &Shown) -> Result<()> {
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
        for diff in detect::against_newest(d, s.names.iter().map(String::as_str)) {
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
