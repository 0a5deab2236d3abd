//! `llmscope check`: PromQL, dashboards and rule files linted against real metric inventories.
//!
//! A [`CheckPlan`] (inputs listed, inventories validated) is [`run`]: every input read as a
//! source, the inventories loaded for the names its queries use (plus the names its recording
//! rules define), then `llmscope-check`'s rules run over each source. The findings come back
//! with the inventories' description and the notes on the way (skipped files, the pages'
//! warnings), never printed.

use crate::OpsError;
use crate::inventory::InventoryPlan;
use llmscope_check::input::{self, Query, Source};
use llmscope_check::{Finding, Inventories, promql};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// What to lint, against what.
#[derive(Debug, Clone)]
pub struct CheckPlan {
    /// Files found (directories already searched).
    pub files: Vec<PathBuf>,
    /// `--expr` expressions, checked as one source.
    pub exprs: Vec<String>,
    pub inventory: InventoryPlan,
    /// The series' scrape interval, when the inventories cannot tell.
    pub scrape_interval: Option<Duration>,
    /// The largest input file read.
    pub max_file_bytes: u64,
}

/// The findings, what they were checked against, and what was said on the way.
#[derive(Debug)]
pub struct Checked {
    pub findings: Vec<Finding>,
    /// The inventories, described (`vllm 0.26 (catalog), …`).
    pub inventories: String,
    pub warnings: Vec<String>,
}

/// The files under `paths` (directories searched for inputs), and a note per path skipped.
pub fn find_files(paths: &[PathBuf]) -> Result<(Vec<PathBuf>, Vec<String>), OpsError> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for p in paths {
        let walk = input::files::walk(p)?;
        skipped.extend(walk.skipped);
        files.extend(walk.files);
    }
    Ok((files, skipped))
}

/// Lints every input of `plan`.
pub async fn run(plan: &CheckPlan) -> Result<Checked, OpsError> {
    let sources = read_sources(plan)?;
    let names: BTreeSet<String> = sources
        .iter()
        .flat_map(|s| &s.queries)
        .flat_map(|q| promql::metric_names(&q.parsed))
        .collect();
    let loaded = plan.inventory.load(&names).await?;
    let inv = with_recorded(loaded.inventories, &sources, plan);
    let mut findings: Vec<Finding> = sources.iter().flat_map(|s| s.errors.clone()).collect();
    for s in &sources {
        findings.extend(input::check_source(s, &inv));
    }
    Ok(Checked {
        findings,
        inventories: inv.sources(),
        warnings: loaded.warnings,
    })
}

/// The inventories, knowing the names the inputs' own rules record and the scrape interval.
fn with_recorded(mut inv: Inventories, sources: &[Source], plan: &CheckPlan) -> Inventories {
    inv.add_recorded(sources.iter().flat_map(|s| s.recorded.iter().cloned()));
    if let Some(i) = plan.scrape_interval {
        inv.set_scrape_interval(i.as_secs_f64());
    }
    inv
}

/// Every input as a source: the `--expr`s together, then one per file.
fn read_sources(plan: &CheckPlan) -> Result<Vec<Source>, OpsError> {
    let mut out = Vec::new();
    if !plan.exprs.is_empty() {
        let queries: Vec<Query> = plan.exprs.iter().map(|e| input::text::expr(e)).collect();
        out.push(Source {
            queries,
            ..Source::default()
        });
    }
    for f in &plan.files {
        let text = input::files::read_text(f, plan.max_file_bytes)?;
        out.push(input::read(&f.display().to_string(), &text));
    }
    Ok(out)
}
