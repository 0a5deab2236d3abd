//! `llmscope inventory SOURCE`, and the inventory flags every linting command shares.
//!
//! [`InventoryArgs`] (`--metrics-url`, `--prometheus`, `--snapshot`, `--engine`, repeatable and
//! combinable) resolve into an [`InventoryPlan`] without I/O; [`load`] then fetches pages and
//! Prometheus answers (through `llmscope-collect`'s one HTTP client) and builds the pure
//! inventories of `llmscope-check`. The `inventory` command shows one source: its families
//! (type, HELP, series), the engine and its version, and how its names differ from the newest
//! version the catalog knows. Beside a live page the engine is asked its version
//! (`GET /version`, [`ask_version`]); the names' range is the fallback (issue 11).

use anyhow::{Context, Result, bail};
use hyper::Uri;
use llmscope_check::Inventories;
use llmscope_check::inventory::engine::CatalogInventory;
use llmscope_check::inventory::prom::{PromInventory, PromMetric};
use llmscope_check::inventory::snapshot::Snapshot;
use llmscope_collect::HttpClient;
use llmscope_collect::http::Get;
use llmscope_collect::prom::{PromClient, PromConfig};
use llmscope_core::catalog::detect::{self, Detection, EngineVersion};
use llmscope_core::catalog::{EngineSpec, Exporter, Kind, Version};
use llmscope_core::duration::parse_duration;
use llmscope_core::safe;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

fn duration(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

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
    #[arg(long, value_parser = duration, default_value = "1h", help_heading = "Inventories")]
    pub lookback: Duration,
}

/// One inventory source, validated.
#[derive(Debug, Clone)]
pub enum InventorySource {
    MetricsUrl(Uri),
    Prometheus(Uri),
    Snapshot(PathBuf),
    Engine(EngineSpec),
}

/// Every inventory to load.
#[derive(Debug, Clone)]
pub struct InventoryPlan {
    pub sources: Vec<InventorySource>,
    pub lookback: Duration,
}

impl InventoryArgs {
    /// Validates the flags (no I/O).
    pub fn plan(&self) -> Result<InventoryPlan> {
        let mut sources = Vec::new();
        for u in &self.metrics_urls {
            sources.push(InventorySource::MetricsUrl(http_url(u, "--metrics-url")?));
        }
        for u in &self.prometheus {
            sources.push(InventorySource::Prometheus(http_url(u, "--prometheus")?));
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
    let net = if needs_net { Some(Net::new()?) } else { None };
    for source in &plan.sources {
        match (source, &net) {
            (InventorySource::Snapshot(path), _) => inv.push(Box::new(read_snapshot(path)?)),
            (InventorySource::Engine(spec), _) => inv.push(Box::new(CatalogInventory::new(*spec))),
            (InventorySource::MetricsUrl(uri), Some(net)) => {
                let snap = net.block_on(fetch_snapshot(&net.http, uri))?;
                inv.push(Box::new(snap));
            }
            (InventorySource::Prometheus(uri), Some(net)) => {
                let p = net.block_on(prometheus(&net.http, uri, plan.lookback, names))?;
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
    pub fn new() -> Result<Net> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let http = HttpClient::new(None).context("TLS setup")?;
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

/// GETs a /metrics page.
pub async fn fetch_page(http: &HttpClient, uri: &Uri) -> Result<Vec<u8>> {
    let headers = hyper::HeaderMap::new();
    let got = http
        .get(Get {
            uri: uri.clone(),
            headers: &headers,
            timeout: Duration::from_secs(10),
            body_limit: 64 << 20,
        })
        .await
        .with_context(|| format!("fetching {uri}"))?;
    if got.status != 200 {
        bail!("fetching {uri}: HTTP {}", got.status);
    }
    Ok(got.body.to_vec())
}

/// GETs a /metrics page and, when it is vLLM's, the engine's own version beside it.
pub async fn fetch_snapshot(http: &HttpClient, uri: &Uri) -> Result<Snapshot> {
    let body = fetch_page(http, uri).await?;
    let (mut snap, _) = Snapshot::parse(uri.to_string(), &body);
    warn_page(&uri.to_string(), &body);
    ask_version(http, uri, &mut snap).await;
    Ok(snap)
}

/// Asks the vLLM engine behind the page at `metrics` its version (`GET /version` beside it) and
/// records it on `snap`. Other exporters are not asked; a /version that fails or says nothing
/// readable leaves the range the names give — it is a hint, not a requirement.
pub async fn ask_version(http: &HttpClient, metrics: &Uri, snap: &mut Snapshot) {
    if !snap
        .detections()
        .iter()
        .any(|d| d.exporter == Exporter::Vllm)
    {
        return;
    }
    let reported = llmscope_collect::version::engine_version(http, metrics).await;
    if let Some(v) = reported.ok().as_deref().and_then(Version::from_reported) {
        snap.set_reported_version(Exporter::Vllm, v);
    }
}

/// `vllm 0.32.0 (from /version), dcgm-exporter >=4.5.0 (from names)`, or why there is none.
pub fn name_versions(snap: &Snapshot) -> String {
    let named: Vec<String> = snap
        .engine_versions()
        .iter()
        .map(ToString::to_string)
        .collect();
    if named.is_empty() {
        return "no catalogued exporter recognised (not vLLM, SGLang, TGI or dcgm-exporter?)"
            .to_owned();
    }
    named.join(", ")
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A Prometheus client for `uri`.
pub fn prom_client(http: &HttpClient, uri: &Uri) -> PromClient {
    PromClient::new(PromConfig::new(uri.clone()), http.clone())
}

/// Reads what a Prometheus server holds: every name over the lookback, and for `names`, their
/// labels and values, types, and how long ago the gone ones were last present.
async fn prometheus(
    http: &HttpClient,
    uri: &Uri,
    lookback: Duration,
    names: &BTreeSet<String>,
) -> Result<PromInventory> {
    let client = prom_client(http, uri);
    let end = now();
    let start = end - lookback.as_secs_f64();
    let ctx = || format!("querying {uri}");
    let all = client
        .label_values("__name__", &[], Some((start, end)))
        .await
        .with_context(ctx)?
        .data;
    let recent: BTreeSet<String> = client
        .label_values("__name__", &[], Some((end - 300.0, end)))
        .await
        .with_context(ctx)?
        .data
        .into_iter()
        .collect();
    let meta = client
        .metadata(None)
        .await
        .map(|r| r.data)
        .unwrap_or_default();
    let mut metrics: BTreeMap<String, PromMetric> = BTreeMap::new();
    for name in &all {
        let kind = meta_kind(&meta, name);
        metrics.insert(
            name.clone(),
            PromMetric {
                kind,
                ..PromMetric::default()
            },
        );
    }
    for name in names {
        let Some(m) = metrics.get_mut(name) else {
            continue;
        };
        let selector = format!("{{__name__={name:?}}}");
        let series = client
            .series(&[selector.as_str()], start, end)
            .await
            .with_context(ctx)?
            .data;
        m.series = series.len();
        for key in &series {
            for (l, v) in key.labels.iter() {
                m.labels
                    .entry(l.to_owned())
                    .or_default()
                    .insert(v.to_owned());
            }
        }
        if !recent.contains(name) {
            m.gone_for_s = Some(last_seen_ago(&client, &selector, lookback, end).await);
        }
    }
    let interval = scrape_interval(&client).await;
    Ok(PromInventory::new(
        &uri.to_string(),
        &humantime(lookback),
        metrics,
        interval,
    ))
}

fn meta_kind(
    meta: &BTreeMap<String, Vec<llmscope_collect::prom::api::MetricMetadata>>,
    name: &str,
) -> Option<Kind> {
    let base = ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .filter(|b| meta.contains_key(*b));
    let entry = meta.get(name).or_else(|| base.and_then(|b| meta.get(b)))?;
    match entry.first()?.metric_type.as_str() {
        "counter" => Some(Kind::Counter),
        "gauge" => Some(Kind::Gauge),
        "histogram" => Some(Kind::Histogram),
        "summary" => Some(Kind::Summary),
        _ => None,
    }
}

async fn last_seen_ago(client: &PromClient, selector: &str, lookback: Duration, end: f64) -> f64 {
    let q = format!(
        "max(timestamp(last_over_time({selector}[{}s])))",
        lookback.as_secs().max(1)
    );
    match client.query(&q, Some(end)).await.map(|r| r.data) {
        Ok(llmscope_collect::prom::api::QueryData::Vector(v)) => {
            v.first().map_or(lookback.as_secs_f64(), |(_, p)| end - p.v)
        }
        _ => lookback.as_secs_f64(),
    }
}

/// The shortest scrape interval: the median gap between raw `up` samples of a target over the
/// last 5 minutes (an instant query of a range selector returns the raw samples).
async fn scrape_interval(client: &PromClient) -> Option<f64> {
    let data = client.query("up[5m]", None).await.ok()?.data;
    let llmscope_collect::prom::api::QueryData::Matrix(series) = data else {
        return None;
    };
    series
        .iter()
        .filter_map(|s| {
            let mut gaps: Vec<f64> = s.points.windows(2).map(|w| w[1].t - w[0].t).collect();
            gaps.sort_by(f64::total_cmp);
            gaps.get(gaps.len() / 2).copied()
        })
        .filter(|g| *g > 0.0)
        .reduce(f64::min)
}

fn humantime(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s % 86400 == 0 => format!("{}d", s / 86400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
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
        let net = Net::new()?;
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
