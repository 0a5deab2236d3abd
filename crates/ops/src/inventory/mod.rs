//! Inventories: where metric names really exist, for `check`, `dashboard`, `rules` and
//! `inventory`.
//!
//! An [`InventoryPlan`] (validated sources: live pages, Prometheus servers, saved pages,
//! catalog versions) is [`InventoryPlan::load`]ed into `llmscope-check`'s pure inventories;
//! what a page says is wrong with itself comes back as warnings, never printed. `prom` reads
//! what a Prometheus holds; [`listing`] is what `llmscope inventory` shows of one source.

pub mod listing;
mod prom;

pub use prom::prometheus;

use crate::OpsError;
use crate::exporter_page::{ask_version, fetch_page};
use hyper::Uri;
use llmscope_catalog::EngineSpec;
use llmscope_check::inventory::engine::CatalogInventory;
use llmscope_check::inventory::snapshot::Snapshot;
use llmscope_check::{Inventories, Inventory};
use llmscope_collect::HttpClient;
use llmscope_collect::prom::{PromClient, PromConfig};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One inventory source, validated.
#[derive(Debug, Clone)]
pub enum InventorySource {
    MetricsUrl(Uri),
    Prometheus(Box<PromConfig>),
    Snapshot(PathBuf),
    Engine(EngineSpec),
}

impl InventorySource {
    fn remote(&self) -> bool {
        matches!(
            self,
            InventorySource::MetricsUrl(_) | InventorySource::Prometheus(_)
        )
    }
}

/// Every inventory to load.
#[derive(Debug, Clone)]
pub struct InventoryPlan {
    pub sources: Vec<InventorySource>,
    pub lookback: Duration,
    /// Extra CA certificates for https sources.
    pub ca_file: Option<PathBuf>,
}

/// Inventories, and what their pages said was wrong with themselves (bad lines, duplicates,
/// a body that is not exposition text), one warning each.
#[derive(Debug)]
pub struct Loaded {
    pub inventories: Inventories,
    pub warnings: Vec<String>,
}

impl InventoryPlan {
    /// Loads every inventory; `names` are the metrics the caller will ask about (Prometheus
    /// inventories fetch labels and values for those only).
    pub async fn load(&self, names: &BTreeSet<String>) -> Result<Loaded, OpsError> {
        let mut inv = Inventories::new();
        let mut warnings = Vec::new();
        let http = match self.sources.iter().any(InventorySource::remote) {
            true => Some(http_client(self.ca_file.as_deref())?),
            false => None,
        };
        for source in &self.sources {
            inv.push(
                self.inventory(source, http.as_ref(), names, &mut warnings)
                    .await?,
            );
        }
        Ok(Loaded {
            inventories: inv,
            warnings,
        })
    }
}

impl InventoryPlan {
    /// One source's inventory; what weakens it goes to `warnings`.
    async fn inventory(
        &self,
        source: &InventorySource,
        http: Option<&HttpClient>,
        names: &BTreeSet<String>,
        warnings: &mut Vec<String>,
    ) -> Result<Box<dyn Inventory>, OpsError> {
        Ok(match (source, http) {
            (InventorySource::Snapshot(path), _) => Box::new(read_snapshot(path, warnings)?),
            (InventorySource::Engine(spec), _) => Box::new(CatalogInventory::new(*spec)),
            (InventorySource::MetricsUrl(uri), Some(http)) => {
                Box::new(fetch_snapshot(http, uri, warnings).await?)
            }
            (InventorySource::Prometheus(cfg), Some(http)) => {
                let client = PromClient::new((**cfg).clone(), http.clone());
                Box::new(prometheus(&client, self.lookback, names).await?)
            }
            _ => unreachable!("a network source always has a client"),
        })
    }
}

/// The HTTP client, trusting `ca_file` too.
pub fn http_client(ca_file: Option<&Path>) -> Result<HttpClient, OpsError> {
    Ok(HttpClient::new(ca_file)?)
}

/// A saved page; its problems are added to `warnings`.
pub fn read_snapshot(path: &Path, warnings: &mut Vec<String>) -> Result<Snapshot, OpsError> {
    let limit = llmscope_check::input::files::DEFAULT_MAX_BYTES;
    let text = llmscope_check::input::files::read_bytes(path, limit)?;
    let source = path.display().to_string();
    warnings.extend(page_warnings(&source, &text));
    Ok(Snapshot::parse(source, &text).0)
}

/// A live /metrics page and, when it is vLLM's, the engine's own version beside it; its
/// problems are added to `warnings`.
pub async fn fetch_snapshot(
    http: &HttpClient,
    uri: &Uri,
    warnings: &mut Vec<String>,
) -> Result<Snapshot, OpsError> {
    let body = fetch_page(http, uri).await?;
    warnings.extend(page_warnings(&uri.to_string(), &body));
    let (mut snap, _) = Snapshot::parse(uri.to_string(), &body);
    ask_version(http, uri, &mut snap).await;
    Ok(snap)
}

/// The same warnings for a page, saved or fetched (issue 17).
fn page_warnings(source: &str, body: &[u8]) -> Vec<String> {
    let source = llmscope_core::safe::clean(source);
    promtext::PageReport::read(body).warnings(&source)
}
