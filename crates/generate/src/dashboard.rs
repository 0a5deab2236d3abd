//! The Grafana dashboard for a stack: rows **Serving** (the four panels of `docs/METHOD.md`
//! step 11 — token throughput, KV saturation `max by (pod)` with its 0.85 line, GPU utilisation overlaid
//! with waiting requests, TTFT quantiles — then per-request throughput, ITL, e2e or inference
//! time, queue time, preemptions, prefix-cache hits), **GPU** (dcgm-exporter) and
//! **Scheduling** (Kueue, kube-state-metrics). Panels are [`PanelSpec`]s first, laid out into
//! [`grafana::Panel`]s by [`build`]; units follow the catalog (a 0..1 fraction is
//! `percentunit`, never `* 100`).

use crate::grafana::{
    self, Annotation, Annotations, Custom, Dashboard, FieldConfig, FieldDefaults, GridPos, Matcher,
    Override, Panel, PanelOptions, Property, Step, Target, Templating, Thresholds, ThresholdsStyle,
    TimeRange, ValueMapping, Variable,
};
use crate::promql::{Sel, agg, quantile, rate};
use crate::promrules::Metadata;
use crate::signals::{EngineSignals, GpuSignals, SchedulerSignals, Signals};
use crate::stack::Stack;
use llmscope_catalog::Family;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Grafana's rate window that adapts to the scrape interval and the zoom.
pub const WINDOW: &str = "$__rate_interval";
/// KV-cache usage at which `docs/METHOD.md` step 8 calls for an alert.
pub const KV_THRESHOLD: f64 = 0.85;
const QUANTILES: [(f64, &str); 3] = [(0.5, "p50"), (0.95, "p95"), (0.99, "p99")];

/// A panel before layout: what it shows and in which unit.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelSpec {
    pub title: String,
    pub description: String,
    /// Grafana unit id.
    pub unit: &'static str,
    pub range: Option<(f64, f64)>,
    pub threshold: Option<f64>,
    /// (expr, legend), refIds A, B, … in order.
    pub targets: Vec<(String, String)>,
    /// The query drawn on a right axis, and its unit (overlays).
    pub right_axis: Option<(usize, &'static str)>,
    /// A graph, or a state timeline whose values are named by these mappings.
    pub kind: PanelKind,
}

/// How a panel draws its series.
#[derive(Debug, Clone, PartialEq)]
pub enum PanelKind {
    Timeseries,
    /// A Grafana `state-timeline` across the full width: one band per series, each value
    /// shown by its mapping (value, text, colour).
    StateTimeline(Vec<(f64, &'static str, &'static str)>),
}

impl PanelSpec {
    pub(crate) fn new(
        title: &str,
        unit: &'static str,
        description: impl Into<String>,
    ) -> PanelSpec {
        PanelSpec {
            title: title.to_owned(),
            description: description.into(),
            unit,
            range: None,
            threshold: None,
            targets: Vec::new(),
            right_axis: None,
            kind: PanelKind::Timeseries,
        }
    }

    pub(crate) fn state_timeline(
        title: &str,
        description: &str,
        mappings: Vec<(f64, &'static str, &'static str)>,
    ) -> PanelSpec {
        PanelSpec {
            kind: PanelKind::StateTimeline(mappings),
            ..PanelSpec::new(title, "short", description)
        }
    }

    pub(crate) fn query(mut self, expr: String, legend: &str) -> PanelSpec {
        self.targets.push((expr, legend.to_owned()));
        self
    }

    pub(crate) fn fraction(mut self) -> PanelSpec {
        self.range = Some((0.0, 1.0));
        self
    }
}

/// A titled row of panels.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub title: &'static str,
    pub panels: Vec<PanelSpec>,
}

/// Title and uid of the generated dashboard.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DashboardOptions {
    pub title: Option<String>,
    pub uid: Option<String>,
}

fn engine_sel(f: &Family) -> Sel {
    Sel::of(f).with(&engine_matchers())
}

fn engine_matchers() -> Vec<String> {
    vec![
        "model_name=~\"$model_name\"".to_owned(),
        "pod=~\"$pod\"".to_owned(),
    ]
}

fn gpu_sel(f: &Family) -> Sel {
    Sel::of(f).with(&["instance=~\"$instance\"".to_owned()])
}

/// The rows for `stack`, in order (Serving, then GPU and Scheduling when the stack has them).
pub fn rows(stack: &Stack, s: &Signals) -> Vec<Row> {
    let mut out = vec![Row {
        title: "Serving",
        panels: serving(stack, s),
    }];
    if let Some(g) = &s.gpu {
        out.push(Row {
            title: "GPU",
            panels: gpu(g),
        });
    }
    if let Some(k) = &s.scheduler {
        out.push(Row {
            title: "Scheduling",
            panels: scheduling(k),
        });
    }
    out
}

fn serving(stack: &Stack, s: &Signals) -> Vec<PanelSpec> {
    let e = &s.engine;
    let mut out = vec![throughput(e), per_request(e), kv(e), gpu_vs_waiting(s)];
    out.push(scheduler_state(e));
    let mut latency = vec![
        ("Time to first token", e.ttft),
        ("Inter-token latency", e.itl),
    ];
    latency.push(("End-to-end request latency", e.e2e));
    out.extend(
        latency
            .into_iter()
            .filter_map(|(t, f)| Some(quantiles(t, f?))),
    );
    if e.e2e.is_none() {
        out.extend(inference_instead_of_e2e(stack, e));
    }
    out.extend(e.queue_time.map(|f| quantiles("Queue time", f)));
    out.extend(e.preemptions.map(preemptions));
    out.extend(prefix_cache(e));
    out
}

fn sum_rate_by(labels: &[&str], f: &Family) -> String {
    agg("sum", labels, &rate(&engine_sel(f), WINDOW))
}

fn throughput(e: &EngineSignals) -> PanelSpec {
    let p = PanelSpec::new(
        "Token throughput",
        "suffix: tok/s",
        "Generated (and prompt) tokens per second per model: rate() of the token counters.",
    )
    .query(
        sum_rate_by(&["model_name"], e.generation_tokens),
        "{{model_name}} generated",
    );
    match e.prompt_tokens {
        Some(f) => p.query(sum_rate_by(&["model_name"], f), "{{model_name}} prompt"),
        None => p,
    }
}

fn per_request(e: &EngineSignals) -> PanelSpec {
    let running = format!("avg_over_time({}[{WINDOW}])", engine_sel(e.running));
    let expr = format!(
        "{} / ({} > 0)",
        sum_rate_by(&["model_name"], e.generation_tokens),
        agg("sum", &["model_name"], &running)
    );
    PanelSpec::new(
        "Generated tokens per running request",
        "suffix: tok/s",
        format!(
            "Decode speed one request sees: the rate of {} over the mean of the {} gauge (avg_over_time, never a rate() of a gauge).",
            e.generation_tokens.name, e.running.name
        ),
    )
    .query(expr, "{{model_name}}")
}

fn kv(e: &EngineSignals) -> PanelSpec {
    let mut p = PanelSpec::new(
        "KV-cache usage",
        "percentunit",
        format!(
            "{} per pod (max by pod), {}. The line is the 0.85 alert level; above 0.9 the engine preempts.",
            e.kv_usage.name, e.kv_usage.note
        ),
    )
    .query(agg("max", &["pod"], &engine_sel(e.kv_usage).to_string()), "{{pod}}")
    .fraction();
    p.threshold = Some(KV_THRESHOLD);
    p
}

/// GPU utilisation (left, percent) with waiting requests (right): high GPU + waiting is GPU
/// compute, low GPU + waiting is a batch or KV limit (`docs/METHOD.md` step 8).
fn gpu_vs_waiting(s: &Signals) -> PanelSpec {
    let waiting = agg("sum", &["pod"], &engine_sel(s.engine.waiting).to_string());
    let Some(util) = s.gpu.as_ref().and_then(|g| g.util) else {
        return PanelSpec::new(
            "Waiting requests",
            "short",
            "Requests waiting to be scheduled.",
        )
        .query(waiting, "waiting {{pod}}");
    };
    let mut p = PanelSpec::new(
        "GPU utilisation and waiting requests",
        "percent",
        "GPU utilisation (left, percent 0..100) against waiting requests (right). Waiting with a busy GPU: GPU compute; waiting with an idle GPU: batch limit or KV capacity.",
    )
    .query(agg("avg", &["instance"], &gpu_sel(util).to_string()), "GPU util {{instance}}")
    .query(waiting, "waiting {{pod}}");
    p.range = Some((0.0, 100.0));
    p.right_axis = Some((1, "short"));
    p
}

fn scheduler_state(e: &EngineSignals) -> PanelSpec {
    PanelSpec::new(
        "Running and waiting requests",
        "short",
        "Running pinned at a plateau with waiting above 0 is the --max-num-seqs batch limit.",
    )
    .query(
        agg("sum", &["pod"], &engine_sel(e.running).to_string()),
        "running {{pod}}",
    )
    .query(
        agg("sum", &["pod"], &engine_sel(e.waiting).to_string()),
        "waiting {{pod}}",
    )
}

fn quantiles(title: &str, f: &Family) -> PanelSpec {
    let bucket = Sel::bucket(f).with(&engine_matchers());
    let mut p = PanelSpec::new(
        title,
        "s",
        format!("p50/p95/p99 of {} per model. {}", f.name, f.note),
    );
    for (q, name) in QUANTILES {
        let legend = format!("{name} {{{{model_name}}}}");
        p = p.query(quantile(q, &bucket, &["model_name"], WINDOW), &legend);
    }
    p
}

/// Versions without the e2e histogram (vLLM 0.26): show server-side inference time and say why.
fn inference_instead_of_e2e(stack: &Stack, e: &EngineSignals) -> Option<PanelSpec> {
    let mut p = quantiles("Request inference time", e.inference_time?);
    p.description = format!(
        "{} exposes no vllm:e2e_request_latency_seconds, so no e2e panel: server-side e2e ≈ queue time + this inference time. {}",
        stack.engine, p.description
    );
    Some(p)
}

fn preemptions(f: &Family) -> PanelSpec {
    PanelSpec::new(
        "Preemptions per second",
        "short",
        "Requests preempted because the KV cache could not hold the batch; they are recomputed.",
    )
    .query(sum_rate_by(&["pod"], f), "{{pod}}")
}

fn prefix_cache(e: &EngineSignals) -> Option<PanelSpec> {
    let (hits, queries) = (e.prefix_hits?, e.prefix_queries?);
    let expr = format!(
        "{} / {}",
        sum_rate_by(&["model_name"], hits),
        sum_rate_by(&["model_name"], queries)
    );
    let p = PanelSpec::new(
        "Prefix-cache hit ratio",
        "percentunit",
        format!(
            "rate({}) / rate({}): the share of prompt tokens served from the prefix cache.",
            hits.name, queries.name
        ),
    );
    Some(p.query(expr, "{{model_name}}").fraction())
}

fn gpu_by(f: &Family) -> String {
    agg("avg", &["instance", "gpu"], &gpu_sel(f).to_string())
}

fn gpu_panel(
    title: &str,
    unit: &'static str,
    desc: &str,
    series: &[(Option<&Family>, &str)],
) -> Option<PanelSpec> {
    let mut p = PanelSpec::new(title, unit, desc);
    for (f, legend) in series {
        if let Some(f) = f {
            p = p.query(gpu_by(f), &format!("{legend} {{{{instance}}}}/{{{{gpu}}}}"));
        }
    }
    (!p.targets.is_empty()).then_some(p)
}

fn gpu(g: &GpuSignals) -> Vec<PanelSpec> {
    let fb = gpu_panel(
        "Framebuffer memory",
        "mbytes",
        "DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE, MiB.",
        &[(g.fb_used, "used"), (g.fb_free, "free")],
    );
    let power = gpu_panel(
        "Power",
        "watt",
        "DCGM_FI_DEV_POWER_USAGE, W.",
        &[(g.power, "power")],
    );
    [gpu_util(g), gpu_activity(g), fb, power]
        .into_iter()
        .flatten()
        .collect()
}

/// Kernel-busy time and memory-copy utilisation, percent.
fn gpu_util(g: &GpuSignals) -> Option<PanelSpec> {
    gpu_panel(
        "GPU utilisation",
        "percent",
        "DCGM_FI_DEV_GPU_UTIL (kernel-busy time) and DCGM_FI_DEV_MEM_COPY_UTIL, percent 0..100. GPU_UTIL is not supported on MIG.",
        &[(g.util, "util"), (g.mem_copy_util, "mem copy")],
    )
    .map(|p| PanelSpec {
        range: Some((0.0, 100.0)),
        ..p
    })
}

/// The DCGM profiling ratios.
fn gpu_activity(g: &GpuSignals) -> Option<PanelSpec> {
    gpu_panel(
        "Engine, tensor and DRAM activity",
        "percentunit",
        "DCGM profiling ratios (0..1): graphics engine active, tensor pipe active, DRAM active.",
        &[
            (g.gr_engine_active, "engine"),
            (g.tensor_active, "tensor"),
            (g.dram_active, "DRAM"),
        ],
    )
    .map(PanelSpec::fraction)
}

fn scheduling(k: &SchedulerSignals) -> Vec<PanelSpec> {
    [pending_workloads(k), workload_flow(k), reserved_gpus(k)]
        .into_iter()
        .flatten()
        .collect()
}

fn pending_workloads(k: &SchedulerSignals) -> Option<PanelSpec> {
    let f = k.pending?;
    let p = PanelSpec::new(
        "Pending workloads",
        "short",
        "Kueue workloads waiting for quota, per ClusterQueue and status.",
    );
    Some(p.query(
        agg("sum", &["cluster_queue", "status"], f.name),
        "{{cluster_queue}} {{status}}",
    ))
}

/// Admissions and evictions per second.
fn workload_flow(k: &SchedulerSignals) -> Option<PanelSpec> {
    let mut flow = PanelSpec::new(
        "Admitted and evicted workloads per second",
        "short",
        "Kueue admissions and evictions per ClusterQueue.",
    );
    for (f, what) in [(k.admitted, "admitted"), (k.evicted, "evicted")] {
        if let Some(f) = f {
            let expr = agg("sum", &["cluster_queue"], &rate(&Sel::of(f), WINDOW));
            flow = flow.query(expr, &format!("{what} {{{{cluster_queue}}}}"));
        }
    }
    (!flow.targets.is_empty()).then_some(flow)
}

/// GPUs reserved per team: LocalQueue reservations per namespace, joined with the namespace's
/// `label_team` from kube-state-metrics (`docs/METHOD.md` step 12); per ClusterQueue on older
/// Kueue.
fn reserved_gpus(k: &SchedulerSignals) -> Option<PanelSpec> {
    let f = k.reservation?;
    let (expr, legend) = reservation_by_team(f, k.namespace_labels);
    let desc = format!(
        "{} (needs {}). {}. kube_namespace_labels carries label_team only with --metric-labels-allowlist=namespaces=[team].",
        f.name,
        f.condition.unwrap_or("no flag"),
        f.note.trim_end_matches('.')
    );
    Some(PanelSpec::new("Reserved GPUs per team", "short", desc).query(expr, legend))
}

/// The GPU reservations of `f` summed per team (through `namespace_labels`), per namespace, or
/// per ClusterQueue, and the legend that names them.
fn reservation_by_team(f: &Family, namespace_labels: Option<&Family>) -> (String, &'static str) {
    let sel = Sel::of(f).with(&["resource=\"nvidia.com/gpu\"".to_owned()]);
    match (f.name, namespace_labels) {
        ("kueue_local_queue_resource_reservation", Some(ns)) => (
            agg(
                "sum",
                &["label_team"],
                &format!("{sel} * on (namespace) group_left (label_team) {}", ns.name),
            ),
            "{{label_team}}",
        ),
        ("kueue_local_queue_resource_reservation", None) => (
            agg("sum", &["namespace"], &sel.to_string()),
            "{{namespace}}",
        ),
        _ => (
            agg("sum", &["cluster_queue"], &sel.to_string()),
            "{{cluster_queue}}",
        ),
    }
}

// ------------------------------------------------------------------ layout

/// Places rows and panels on Grafana's 24-column grid: a row bar, then two panels per line.
struct Layout {
    next_id: u32,
    y: u32,
    panels: Vec<Panel>,
}

impl Layout {
    fn row(&mut self, title: &str) {
        let id = self.id();
        self.panels.push(Panel {
            collapsed: Some(false),
            datasource: None,
            description: String::new(),
            field_config: None,
            grid_pos: GridPos {
                h: 1,
                w: 24,
                x: 0,
                y: self.y,
            },
            id,
            options: None,
            panels: Some(Vec::new()),
            targets: Vec::new(),
            title: title.to_owned(),
            kind: "row".to_owned(),
        });
        self.y += 1;
    }

    /// State timelines first, each the full width; then the graphs, two per line.
    fn panels(&mut self, specs: &[PanelSpec]) {
        let (wide, graphs): (Vec<&PanelSpec>, Vec<&PanelSpec>) = specs
            .iter()
            .partition(|s| matches!(s.kind, PanelKind::StateTimeline(_)));
        self.state_timelines(&wide);
        self.graphs(&graphs);
    }

    fn state_timelines(&mut self, specs: &[&PanelSpec]) {
        for spec in specs {
            let pos = GridPos {
                h: 8,
                w: 24,
                x: 0,
                y: self.y,
            };
            let id = self.id();
            self.panels.push(state_timeline(spec, pos, id));
            self.y += 8;
        }
    }

    fn graphs(&mut self, graphs: &[&PanelSpec]) {
        for (i, spec) in graphs.iter().enumerate() {
            let x = if i % 2 == 0 { 0 } else { 12 };
            let pos = GridPos {
                h: 8,
                w: 12,
                x,
                y: self.y,
            };
            let id = self.id();
            self.panels.push(timeseries(spec, pos, id));
            if x == 12 || i + 1 == graphs.len() {
                self.y += 8;
            }
        }
    }

    fn id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }
}

fn ref_id(i: usize) -> String {
    char::from(b'A' + i as u8).to_string()
}

fn timeseries(spec: &PanelSpec, grid_pos: GridPos, id: u32) -> Panel {
    let targets = spec
        .targets
        .iter()
        .enumerate()
        .map(|(i, (expr, legend))| Target {
            datasource: grafana::datasource(),
            expr: expr.clone(),
            legend_format: legend.clone(),
            ref_id: ref_id(i),
        })
        .collect();
    Panel {
        collapsed: None,
        datasource: Some(grafana::datasource()),
        description: spec.description.clone(),
        field_config: Some(field_config(spec)),
        grid_pos,
        id,
        options: Some(PanelOptions::standard()),
        panels: None,
        targets,
        title: spec.title.clone(),
        kind: "timeseries".to_owned(),
    }
}

/// A state timeline: the graph's targets and datasource, merged bands, values named by their
/// mappings.
fn state_timeline(spec: &PanelSpec, grid_pos: GridPos, id: u32) -> Panel {
    let mut panel = timeseries(spec, grid_pos, id);
    panel.kind = "state-timeline".to_owned();
    panel.options = Some(PanelOptions::state_timeline());
    if let (Some(fc), PanelKind::StateTimeline(m)) = (panel.field_config.as_mut(), &spec.kind) {
        fc.defaults.mappings = Some(vec![ValueMapping::values(m)]);
    }
    panel
}

fn field_config(spec: &PanelSpec) -> FieldConfig {
    let thresholds = spec.threshold.map(red_above);
    let custom = spec.threshold.map(|_| Custom {
        thresholds_style: ThresholdsStyle {
            mode: "line".to_owned(),
        },
    });
    let overrides = spec
        .right_axis
        .iter()
        .map(|(i, unit)| right_axis(*i, unit))
        .collect();
    FieldConfig {
        defaults: FieldDefaults {
            custom,
            max: spec.range.map(|r| r.1),
            min: spec.range.map(|r| r.0),
            mappings: None,
            thresholds,
            unit: spec.unit.to_owned(),
        },
        overrides,
    }
}

/// Green, then red from `t` on.
fn red_above(t: f64) -> Thresholds {
    Thresholds {
        mode: "absolute".to_owned(),
        steps: vec![
            Step {
                color: "green".to_owned(),
                value: None,
            },
            Step {
                color: "red".to_owned(),
                value: Some(t),
            },
        ],
    }
}

/// Moves one query's series to a right axis with its own unit and no fixed range.
fn right_axis(index: usize, unit: &str) -> Override {
    let prop = |id: &str, value: serde_json::Value| Property {
        id: id.to_owned(),
        value,
    };
    Override {
        matcher: Matcher {
            id: "byFrameRefID".to_owned(),
            options: ref_id(index),
        },
        properties: vec![
            prop("custom.axisPlacement", "right".into()),
            prop("unit", unit.into()),
            prop("min", 0.into()),
            prop("max", serde_json::Value::Null),
        ],
    }
}

fn variables(s: &Signals) -> Vec<Variable> {
    let running = s.engine.running.name;
    let mut v = vec![
        Variable::datasource(),
        Variable::label_values(
            "model_name",
            "Model",
            format!("label_values({running}, model_name)"),
        ),
        Variable::label_values(
            "pod",
            "Pod",
            format!("label_values({running}{{model_name=~\"$model_name\"}}, pod)"),
        ),
    ];
    if let Some(f) = s.gpu.as_ref().and_then(|g| g.all().first().copied()) {
        let q = format!("label_values({}, instance)", f.name);
        v.push(Variable::label_values("instance", "GPU exporter", q));
    }
    v
}

/// The dashboard for `stack`.
pub fn build(stack: &Stack, s: &Signals, opts: &DashboardOptions) -> Dashboard {
    let engine = stack.engine.to_string();
    let frame = Frame {
        description: format!(
            "Generated by llmscope for {}: every query names a series this version exposes. Regenerate when a version changes (llmscope dashboard).",
            stack.describe()
        ),
        tags: vec![
            "llmscope".to_owned(),
            stack.engine.exporter.name().to_owned(),
        ],
        title: opts
            .title
            .clone()
            .unwrap_or_else(|| format!("LLM serving: {engine} (llmscope)")),
        uid: opts.uid.clone().unwrap_or_else(|| uid(&engine)),
    };
    assemble(frame, rows(stack, s), variables(s))
}

/// What surrounds a dashboard's panels.
pub(crate) struct Frame {
    pub description: String,
    pub tags: Vec<String>,
    pub title: String,
    pub uid: String,
}

/// Lays `rows` out on the grid and wraps them with `frame` and the variables.
pub(crate) fn assemble(frame: Frame, rows: Vec<Row>, variables: Vec<Variable>) -> Dashboard {
    Dashboard {
        annotations: Annotations {
            list: vec![Annotation::builtin()],
        },
        description: frame.description,
        editable: true,
        graph_tooltip: 1,
        panels: lay_out(rows),
        refresh: "30s".to_owned(),
        schema_version: 39,
        tags: frame.tags,
        templating: Templating { list: variables },
        time: TimeRange {
            from: "now-1h".to_owned(),
            to: "now".to_owned(),
        },
        timezone: String::new(),
        title: frame.title,
        uid: frame.uid,
        version: 1,
    }
}

/// Each row's bar, then its panels.
fn lay_out(rows: Vec<Row>) -> Vec<Panel> {
    let mut layout = Layout {
        next_id: 0,
        y: 0,
        panels: Vec::new(),
    };
    for row in rows {
        layout.row(row.title);
        layout.panels(&row.panels);
    }
    layout.panels
}

/// `llmscope-vllm-0-26-0`: stable per engine version, within Grafana's 40 characters.
fn uid(engine: &str) -> String {
    let clean: String = engine
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("llmscope-{clean}").chars().take(40).collect()
}

/// A `ConfigMap` the Grafana sidecar (kube-prometheus-stack) picks up by its `grafana_dashboard`
/// label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMap {
    pub api_version: String,
    pub kind: String,
    pub metadata: Metadata,
    pub data: BTreeMap<String, String>,
}

impl ConfigMap {
    pub fn wrap(name: &str, namespace: Option<String>, dashboard_json: String) -> ConfigMap {
        ConfigMap {
            api_version: "v1".to_owned(),
            kind: "ConfigMap".to_owned(),
            metadata: Metadata {
                name: name.to_owned(),
                namespace,
                labels: BTreeMap::from([
                    (
                        "app.kubernetes.io/managed-by".to_owned(),
                        "llmscope".to_owned(),
                    ),
                    ("grafana_dashboard".to_owned(), "1".to_owned()),
                ]),
            },
            data: BTreeMap::from([(format!("{name}.json"), dashboard_json)]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dashboard(engine: &str) -> Dashboard {
        let stack = Stack::new(engine.parse().unwrap())
            .unwrap()
            .with_gpu("dcgm-exporter@4.5".parse().unwrap())
            .unwrap()
            .with_scheduler("kueue@0.19".parse().unwrap())
            .unwrap();
        build(
            &stack,
            &Signals::resolve(&stack).unwrap(),
            &DashboardOptions::default(),
        )
    }

    fn panel<'a>(d: &'a Dashboard, title: &str) -> &'a Panel {
        d.panels.iter().find(|p| p.title == title).unwrap()
    }

    #[test]
    fn kv_is_a_fraction_with_the_alert_line() {
        let d = dashboard("vllm@0.26");
        let kv = panel(&d, "KV-cache usage");
        let fc = kv.field_config.as_ref().unwrap();
        assert_eq!(fc.defaults.unit, "percentunit");
        assert_eq!(
            fc.defaults.thresholds.as_ref().unwrap().steps[1].value,
            Some(0.85)
        );
        assert!(
            kv.targets[0]
                .expr
                .starts_with("max by (pod) (vllm:kv_cache_usage_perc{")
        );
        assert!(!kv.targets[0].expr.contains("100"), "no * 100 guesses");
    }

    #[test]
    fn per_request_throughput_never_rates_a_gauge() {
        let d = dashboard("vllm@0.26");
        let e = &panel(&d, "Generated tokens per running request").targets[0].expr;
        assert!(e.contains("avg_over_time(vllm:num_requests_running"));
        assert!(!e.contains("rate(vllm:num_requests_running"));
    }

    #[test]
    fn e2e_comes_from_the_catalog_view_of_the_version() {
        let new = dashboard("vllm@0.26");
        assert!(
            new.panels
                .iter()
                .all(|p| p.title != "End-to-end request latency")
        );
        assert!(
            panel(&new, "Request inference time")
                .description
                .contains("no vllm:e2e_request_latency_seconds")
        );
        let old = dashboard("vllm@0.10");
        assert!(
            panel(&old, "End-to-end request latency").targets[0]
                .expr
                .contains("vllm:e2e_request_latency_seconds_bucket")
        );
    }

    #[test]
    fn layout_has_three_rows_unique_ids_and_no_overlap() {
        let d = dashboard("vllm@0.26");
        let rows: Vec<_> = d
            .panels
            .iter()
            .filter(|p| p.kind == "row")
            .map(|p| p.title.as_str())
            .collect();
        assert_eq!(rows, ["Serving", "GPU", "Scheduling"]);
        let mut ids: Vec<_> = d.panels.iter().map(|p| p.id).collect();
        ids.dedup();
        assert_eq!(ids.len(), d.panels.len());
        let mut cells = std::collections::HashSet::new();
        for p in &d.panels {
            let g = p.grid_pos;
            for x in g.x..g.x + g.w {
                for y in g.y..g.y + g.h {
                    assert!(cells.insert((x, y)), "{} overlaps at {x},{y}", p.title);
                }
            }
        }
        assert_eq!(uid("vllm@0.26.0"), "llmscope-vllm-0-26-0");
    }
}
