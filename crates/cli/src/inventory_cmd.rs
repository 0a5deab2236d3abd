//! `llmscope inventory SOURCE`, and the inventory flags every linting command shares.
//!
//! [`InventoryArgs`] (`--metrics-url`, `--prometheus`, `--snapshot`, `--engine`, repeatable and
//! combinable) resolve into an `llmscope_ops::inventory::InventoryPlan` without I/O. The
//! `inventory` command shows one source as `llmscope_ops::inventory::listing::Listing` says it
//! (issue 11: the engine's own version beside a live page, the names' range as the fallback).

use crate::prom_flags::PromConnection;
use anyhow::{Context, Result};
use llmscope_catalog::EngineSpec;
use llmscope_ops::inventory::listing::Listing;
use llmscope_ops::inventory::{self, InventoryPlan, InventorySource};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Where metric names really exist (repeatable, combinable).
#[derive(Debug, Clone, clap::Args)]
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

impl InventoryArgs {
    /// Validates the flags (no I/O).
    pub fn plan(&self) -> Result<InventoryPlan> {
        let mut sources = Vec::new();
        for u in &self.metrics_urls {
            sources.push(InventorySource::MetricsUrl(crate::args::http_url(
                u,
                "--metrics-url",
            )?));
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

/// Warnings about the pages read, on stderr (they quote the pages: shown cleaned).
pub fn warn(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {}", llmscope_core::safe::clean(w));
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

pub fn run(args: InventoryCmdArgs) -> Result<ExitCode> {
    let mut warnings = Vec::new();
    let listing = if args.source.starts_with("http://") || args.source.starts_with("https://") {
        let uri = crate::args::http_url(&args.source, "SOURCE")?;
        let http = inventory::http_client(None)?;
        let fetched = inventory::fetch_snapshot(&http, &uri, &mut warnings);
        Listing::from_snapshot(&crate::args::block_on(fetched)??)
    } else if std::path::Path::new(&args.source).exists() {
        Listing::from_snapshot(&inventory::read_snapshot(
            std::path::Path::new(&args.source),
            &mut warnings,
        )?)
    } else {
        let spec: EngineSpec = args
            .source
            .parse()
            .with_context(|| format!("`{}` is no URL, file or NAME@VERSION", args.source))?;
        Listing::from_catalog(spec)
    };
    warn(&warnings);
    let mut out = std::io::stdout().lock();
    match args.format.as_str() {
        "json" => listing.write_json(&mut out)?,
        _ => listing.write_human(&mut out)?,
    }
    Ok(ExitCode::SUCCESS)
}
