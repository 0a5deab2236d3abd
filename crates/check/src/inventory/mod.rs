//! Inventories: what metric names, labels, label values and types really exist.
//!
//! One [`Inventory`] trait, three kinds behind it:
//! - [`snapshot::Snapshot`]: a `/metrics` page (saved file or a live scrape the caller fetched);
//! - [`engine::CatalogInventory`]: the catalog's idea of an engine at a version (`vllm@0.26`);
//! - [`prom::PromInventory`]: what a Prometheus-compatible server holds over a lookback window,
//!   with pint-style reasons for an absence (never present / last present N ago).
//!
//! [`Inventories`] combines several: a name exists if any of them has it, and its labels are the
//! union — so a query joining vLLM and dcgm series is checked against both. Rules only see this
//! trait; no inventory does I/O.

pub mod engine;
pub mod prom;
pub mod snapshot;

use llmscope_catalog::{EngineSpec, Kind, Suffix};
use std::collections::{BTreeMap, BTreeSet};

/// Labels a scraper adds to every series of a target (Prometheus target labels and the
/// Prometheus Operator's Kubernetes ones), which a page alone does not show.
pub const TARGET_LABELS: &[&str] = &[
    "job",
    "instance",
    "namespace",
    "pod",
    "container",
    "service",
    "endpoint",
    "node",
];

/// What an inventory knows about one sample name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricInfo {
    /// The type of the family the name belongs to, when known.
    pub kind: Option<Kind>,
    /// Which sample of the family the name is (`_bucket`, `_sum`, …).
    pub suffix: Option<Suffix>,
    /// Label names its series carry; `label_*` stands for any name with that prefix.
    pub labels: BTreeSet<String>,
    /// Values seen per label, when the inventory saw series (not for the catalog).
    pub values: Option<BTreeMap<String, BTreeSet<String>>>,
    pub series: usize,
    pub help: Option<String>,
}

impl MetricInfo {
    /// Whether `label` is one of its labels (patterns match by prefix).
    pub fn has_label(&self, label: &str) -> bool {
        label == "__name__"
            || self.labels.iter().any(|l| match l.strip_suffix('*') {
                Some(prefix) => label.starts_with(prefix),
                None => l == label,
            })
    }

    fn merge(&mut self, other: MetricInfo) {
        self.kind = self.kind.or(other.kind);
        self.suffix = self.suffix.or(other.suffix);
        self.labels.extend(other.labels);
        self.series += other.series;
        self.help = self.help.take().or(other.help);
        self.values = match (self.values.take(), other.values) {
            (Some(mut a), Some(b)) => {
                for (k, v) in b {
                    a.entry(k).or_default().extend(v);
                }
                Some(a)
            }
            (a, b) => a.or(b),
        };
    }
}

/// Why a name is absent, as far as the inventory can tell.
#[derive(Debug, Clone, PartialEq)]
pub enum Absence {
    /// No series in the whole inventory (the page, or the lookback window).
    NeverPresent,
    /// Present earlier in the lookback window, not now.
    LastPresent { ago_s: f64 },
}

/// A source of truth about which metrics exist.
pub trait Inventory {
    /// What it is, for messages: `snapshot vllm.prom`, `vllm@0.26.0 (catalog)`, `prometheus http://…`.
    fn source(&self) -> &str;
    /// What it knows about a sample name that exists now, or `None`.
    fn metric(&self, name: &str) -> Option<MetricInfo>;
    /// Why `name` is absent (called when [`Inventory::metric`] is `None`).
    fn absence(&self, _name: &str) -> Absence {
        Absence::NeverPresent
    }
    /// Every sample name it has (for suggestions and engine detection).
    fn names(&self) -> Vec<String>;
    /// The engines and versions behind it (given, or detected from its names).
    fn engines(&self) -> Vec<EngineSpec>;
    /// The scrape interval of its series, when known (seconds).
    fn scrape_interval_s(&self) -> Option<f64> {
        None
    }
    /// Whether a scraper will add [`TARGET_LABELS`] that this inventory cannot show.
    fn adds_target_labels(&self) -> bool;
}

/// Several inventories checked as one.
#[derive(Default)]
pub struct Inventories {
    list: Vec<Box<dyn Inventory>>,
    /// Names produced by recording rules in the checked files: they exist once deployed.
    recorded: BTreeSet<String>,
    scrape_interval_s: Option<f64>,
}

impl std::fmt::Debug for Inventories {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.list.iter().map(|i| i.source()))
            .finish()
    }
}

impl Inventories {
    pub fn new() -> Inventories {
        Inventories::default()
    }

    pub fn push(&mut self, inventory: Box<dyn Inventory>) {
        self.list.push(inventory);
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Sets the scrape interval when the inventories cannot tell it (`--scrape-interval`).
    pub fn set_scrape_interval(&mut self, seconds: f64) {
        self.scrape_interval_s = Some(seconds);
    }

    /// Declares names produced by recording rules.
    pub fn add_recorded(&mut self, names: impl IntoIterator<Item = String>) {
        self.recorded.extend(names);
    }

    pub fn is_recorded(&self, name: &str) -> bool {
        self.recorded.contains(name)
    }

    /// `snapshot a.prom, vllm@0.26.0 (catalog)`.
    pub fn sources(&self) -> String {
        let v: Vec<&str> = self.list.iter().map(|i| i.source()).collect();
        v.join(", ")
    }

    /// The merged knowledge of every inventory that has `name`.
    pub fn metric(&self, name: &str) -> Option<MetricInfo> {
        let mut found: Option<MetricInfo> = None;
        for info in self.list.iter().filter_map(|i| i.metric(name)) {
            match &mut found {
                Some(f) => f.merge(info),
                None => found = Some(info),
            }
        }
        found
    }

    /// The most telling absence across inventories (a "last present" beats "never").
    pub fn absence(&self, name: &str) -> Absence {
        self.list
            .iter()
            .map(|i| i.absence(name))
            .find(|a| matches!(a, Absence::LastPresent { .. }))
            .unwrap_or(Absence::NeverPresent)
    }

    /// Every name of every inventory, sorted, once.
    pub fn names(&self) -> BTreeSet<String> {
        self.list.iter().flat_map(|i| i.names()).collect()
    }

    pub fn engines(&self) -> Vec<EngineSpec> {
        self.list.iter().flat_map(|i| i.engines()).collect()
    }

    /// The shortest known scrape interval (seconds).
    pub fn scrape_interval_s(&self) -> Option<f64> {
        self.list
            .iter()
            .filter_map(|i| i.scrape_interval_s())
            .chain(self.scrape_interval_s)
            .reduce(f64::min)
    }

    pub fn adds_target_labels(&self) -> bool {
        self.list.iter().any(|i| i.adds_target_labels())
    }

    /// Whether every inventory is a part of what is scraped (a page, a catalog), none the
    /// scraper itself (a Prometheus, whose names are all that is scraped).
    pub fn all_partial(&self) -> bool {
        self.list.iter().all(|i| i.adds_target_labels())
    }
}
