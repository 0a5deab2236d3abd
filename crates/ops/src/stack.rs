//! Which stack `dashboard` and `rules` generate for: named by catalog versions, or detected
//! from what live sources really expose, then the GPU exporter and the scheduler set or dropped.

use crate::OpsError;
use crate::inventory::{InventoryPlan, InventorySource};
use llmscope_catalog::{EngineSpec, Exporter};
use llmscope_generate::Stack;
use std::collections::BTreeSet;

/// The GPU exporter and scheduler asked for (`NAME@VERSION`, or `none` to drop the layer).
#[derive(Debug, Clone, Copy, Default)]
pub struct Layers<'a> {
    pub gpu: Option<&'a str>,
    pub scheduler: Option<&'a str>,
    /// The scheduler a stack named by versions gets when none is asked for.
    pub default_scheduler: Option<&'a str>,
}

/// A stack, and what was said on the way (warnings about the pages read, what was detected).
#[derive(Debug)]
pub struct Resolved {
    pub stack: Stack,
    pub notes: Vec<String>,
}

/// The stack: detected from live sources, else from the catalog versions; then the GPU
/// exporter and scheduler (defaults only apply to a stack named by versions).
pub async fn resolve_stack(plan: &InventoryPlan, layers: Layers<'_>) -> Result<Resolved, OpsError> {
    let (specs, live) = split_sources(plan);
    let defaults = live.is_empty();
    let (stack, notes) = if defaults {
        (from_specs(&specs)?, Vec::new())
    } else {
        detected(live, plan).await?
    };
    let gpu = layers.gpu.or(defaults.then_some("dcgm-exporter@4.5"));
    let scheduler = layers
        .scheduler
        .or(layers.default_scheduler.filter(|_| defaults));
    let stack = with_scheduler(with_gpu(stack, gpu)?, scheduler)?;
    Ok(Resolved { stack, notes })
}

/// The catalog versions named, and the live sources to detect from.
fn split_sources(plan: &InventoryPlan) -> (Vec<EngineSpec>, Vec<InventorySource>) {
    let (specs, live): (Vec<_>, Vec<_>) = plan
        .sources
        .iter()
        .cloned()
        .partition(|s| matches!(s, InventorySource::Engine(_)));
    let specs = specs
        .into_iter()
        .filter_map(|s| match s {
            InventorySource::Engine(e) => Some(e),
            _ => None,
        })
        .collect();
    (specs, live)
}

/// The GPU exporter asked for, or none (`none`: the layer dropped).
fn with_gpu(mut stack: Stack, gpu: Option<&str>) -> Result<Stack, OpsError> {
    match gpu {
        Some("none") => stack.gpu = None,
        Some(g) => stack = stack.with_gpu(spec(g, "--gpu")?)?,
        None => {}
    }
    Ok(stack)
}

/// The scheduler asked for, or none (`none`: the layer and kube-state-metrics dropped).
fn with_scheduler(mut stack: Stack, scheduler: Option<&str>) -> Result<Stack, OpsError> {
    match scheduler {
        Some("none") => {
            stack.scheduler = None;
            stack.kube_state_metrics = None;
        }
        Some(k) => stack = stack.with_scheduler(spec(k, "--scheduler")?)?,
        None => {}
    }
    Ok(stack)
}

fn spec(text: &str, flag: &str) -> Result<EngineSpec, OpsError> {
    text.parse()
        .map_err(|e| OpsError::Invalid(format!("{flag} {text} (or `none`): {e}")))
}

/// `--engine vllm@0.26 [--engine dcgm-exporter@4.5 …]`.
fn from_specs(specs: &[EngineSpec]) -> Result<Stack, OpsError> {
    let exporters = [
        Exporter::DcgmExporter,
        Exporter::Kueue,
        Exporter::KubeStateMetrics,
    ];
    let serving = specs.iter().filter(|s| !exporters.contains(&s.exporter));
    let mut serving: Vec<&EngineSpec> = serving.collect();
    serving.sort_by_key(|s| s.exporter != Exporter::Vllm);
    let Some(engine) = serving.first() else {
        return Err(OpsError::Invalid(
            "no engine to generate for: give --engine vllm@VERSION (e.g. vllm@0.26), --metrics-url URL or --prometheus URL".to_owned(),
        ));
    };
    let mut stack = Stack::new(**engine)?;
    for s in specs {
        match s.exporter {
            Exporter::DcgmExporter => stack = stack.with_gpu(*s)?,
            Exporter::Kueue => stack = stack.with_scheduler(*s)?,
            _ => {}
        }
    }
    Ok(stack)
}

/// Detects the stack from what live sources expose.
async fn detected(
    live: Vec<InventorySource>,
    all: &InventoryPlan,
) -> Result<(Stack, Vec<String>), OpsError> {
    let plan = InventoryPlan {
        sources: live,
        lookback: all.lookback,
        ca_file: all.ca_file.clone(),
    };
    let loaded = plan.load(&BTreeSet::new()).await?;
    let stack = Stack::detect(&loaded.inventories.names())?;
    let warnings = loaded.warnings.iter().map(|w| format!("warning: {w}"));
    let mut notes: Vec<String> = warnings.collect();
    notes.push(format!(
        "llmscope: generating for {} (detected)",
        stack.describe()
    ));
    Ok((stack, notes))
}
