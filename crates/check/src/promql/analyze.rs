//! The rules over one parsed expression. [`check`] walks the AST bottom-up; each node returns
//! a [`Value`] (its label names, unit, the raw counters and selectors feeding it), and each rule
//! fires where its evidence is complete: names and matchers at selectors, `by`/`on`/`group_*`
//! at aggregations and binary operators, `rate` over gauges and window lengths at calls,
//! fraction-vs-percent at comparisons, raw counters at comparisons and at the root of a graph.

use super::labels::{LabelSet, VAR_PREFIX};
use super::names;
use super::units;
use crate::finding::{Finding, Rule, Severity};
use crate::inventory::{Inventories, MetricInfo};
use llmscope_core::catalog::producers::{NIM, Producer, producer_of};
use llmscope_core::catalog::{self, Exporter, Family, Kind, Suffix, Unit, buckets};
use llmscope_core::diagnose::Concept;
use promql_parser::label::{MatchOp, Matcher};
use promql_parser::parser::{
    AggregateExpr, BinaryExpr, Call, Expr, LabelModifier, VectorMatchCardinality, VectorSelector,
};
use std::time::Duration;

/// Grafana's `$__rate_interval`, `$__interval` and `$__range` are substituted with these
/// distinctive durations in seconds (dashboard-linter's trick, in whole seconds because the parser
/// overflows on large millisecond counts) so the rules can recognise them.
pub const RATE_INTERVAL_S: u64 = 8_869_990;
pub const INTERVAL_S: u64 = 4_867_856;
pub const RANGE_S: u64 = 6_069_770;

/// What the expression is for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    /// Drawn over time (a graph panel, an ad-hoc query): a raw counter is a finding.
    pub graph: bool,
    /// The Grafana panel unit (`percent`, `percentunit`, `s`, `ms`), when there is one.
    pub panel_unit: Option<&'a str>,
    /// What the query is called where it is shown (panel title and legend).
    pub title: Option<&'a str>,
    /// The thresholds the panel shows (colouring a stat or gauge, drawn on a graph).
    pub thresholds: &'a [f64],
    /// Feeds an autoscaler that divides by the replica count (KEDA, prometheus-adapter).
    pub scaler: bool,
}

/// A finding and the text to underline in the expression (a metric, label or function name).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub finding: Finding,
    pub needle: Option<String>,
}

/// What one selector contributes.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sel {
    pub name: String,
    pub kind: Option<Kind>,
    pub suffix: Option<Suffix>,
    pub exporter: Option<Exporter>,
}

/// What the walk knows about a node's value.
#[derive(Debug, Clone)]
pub(super) struct Value {
    pub labels: LabelSet,
    pub unit: Option<Unit>,
    /// Raw counters reaching this node without `rate`/`increase`.
    pub raw: Vec<String>,
    pub sels: Vec<Sel>,
    /// A number literal's value.
    pub scalar: Option<f64>,
    /// Histogram `_sum` series under rate()/increase() not yet divided by anything.
    pub sum_rates: Vec<String>,
    /// The histogram family a `histogram_quantile` here reads, while the value is still that
    /// quantile in the histogram's unit (through max/min/avg, not through arithmetic).
    pub quantile_of: Option<String>,
    /// An engine's 0..1 fraction summed across series, not yet divided by anything.
    pub summed_fraction: Option<String>,
    /// Gauges whose per-process copies (a `pid` label) reach this node unmerged.
    pub copies: Vec<Copies>,
}

/// A gauge exported once per process (catalog [`PerProcess`](catalog::PerProcess), or a `pid`
/// label an inventory saw), whose copies no aggregation has merged yet.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Copies {
    pub name: String,
    /// The label that tells the copies apart.
    pub label: String,
    /// Why the walk thinks so: the setting under which the catalog's version exports copies, or
    /// `None` when an inventory saw the label on real series.
    pub when: Option<&'static str>,
}

impl Value {
    fn any() -> Value {
        Value {
            labels: LabelSet::Any,
            unit: None,
            raw: Vec::new(),
            sels: Vec::new(),
            scalar: None,
            sum_rates: Vec::new(),
            quantile_of: None,
            summed_fraction: None,
            copies: Vec::new(),
        }
    }

    fn number(v: f64) -> Value {
        Value {
            labels: LabelSet::none(),
            scalar: Some(v),
            ..Value::any()
        }
    }

    fn first_name(&self) -> Option<&str> {
        self.sels.first().map(|s| s.name.as_str())
    }

    fn is_dcgm(&self) -> bool {
        self.sels
            .iter()
            .any(|s| s.exporter == Some(Exporter::DcgmExporter))
    }
}

/// Runs every rule over `expr`.
pub fn check(expr: &Expr, inv: &Inventories, cx: Context<'_>) -> Vec<Hit> {
    let mut w = Walk {
        inv,
        hits: Vec::new(),
        covered: None,
    };
    let root = w.expr(expr);
    if cx.graph {
        w.raw_counters(&root.raw, "is drawn as a graph");
    }
    w.rate_of_sum(&root, cx);
    w.steps_as_tokens(&root, cx);
    w.fraction_as_percent(&root, cx);
    w.unreachable_thresholds(&root, cx);
    if let Some(name) = root.summed_fraction.as_ref().filter(|_| !cx.scaler) {
        w.summed_fraction(name);
    }
    if let (Some(panel), Some(unit)) = (cx.panel_unit, root.unit)
        && let Some(f) = units::panel_mismatch(panel, unit, root.first_name())
    {
        w.hits.push(Hit {
            finding: f,
            needle: None,
        });
    }
    w.hits
}

struct Walk<'a> {
    inv: &'a Inventories,
    hits: Vec<Hit>,
    /// Producers some inventory has names of (computed on first use).
    covered: Option<std::collections::BTreeSet<&'static str>>,
}

impl Walk<'_> {
    fn push(&mut self, finding: Finding, needle: Option<&str>) {
        let hit = Hit {
            finding,
            needle: needle.map(str::to_owned),
        };
        if !self.hits.contains(&hit) {
            self.hits.push(hit);
        }
    }

    fn expr(&mut self, e: &Expr) -> Value {
        match e {
            Expr::VectorSelector(vs) => self.selector(vs),
            Expr::MatrixSelector(ms) => self.selector(&ms.vs),
            Expr::Aggregate(a) => self.aggregate(a),
            Expr::Binary(b) => self.binary(b),
            Expr::Call(c) => self.call(c),
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Subquery(s) => self.expr(&s.expr),
            Expr::Unary(u) => {
                let mut v = self.expr(&u.expr);
                v.scalar = v.scalar.map(|x| -x);
                v
            }
            Expr::NumberLiteral(n) => Value::number(n.val),
            Expr::StringLiteral(_) | Expr::Extension(_) => Value::any(),
        }
    }

    // ---- selectors -------------------------------------------------------------------------

    fn selector(&mut self, vs: &VectorSelector) -> Value {
        let Some(name) = selector_name(vs) else {
            return Value::any();
        };
        if name.starts_with(VAR_PREFIX) || names::is_synthetic(&name) || self.inv.is_recorded(&name)
        {
            return Value::any();
        }
        let catalogued = names::family_of(&name);
        let sel = |info: Option<&MetricInfo>| Sel {
            name: name.clone(),
            kind: info.and_then(|i| i.kind).or(catalogued.map(|f| f.kind)),
            suffix: info.and_then(|i| i.suffix),
            exporter: catalogued
                .map(|f| f.exporter)
                .or_else(|| Exporter::of_name(&name)),
        };
        let unit = units::of_name(&name);
        let Some(info) = self.inv.metric(&name) else {
            if catalogued.is_none()
                && let Some(p) = producer_of(&name)
                && !self.covers(p)
            {
                let f = Finding::new(
                    Rule::UncoveredProducer,
                    Severity::Warning,
                    format!(
                        "no inventory covers {} ({}), so `{name}` is not checked",
                        p.name,
                        self.inv.sources()
                    ),
                )
                .metric(&name)
                .suggest(p.hint);
                self.push(f, Some(&name));
                // NIM exports vLLM's names without the prefix: what they mean is vLLM's, so the
                // meaning-level rules (a fraction's thresholds, a counter's rate) still apply.
                let mirror = (p.name == NIM.name).then(|| format!("vllm:{name}"));
                let mirrored = mirror.as_deref().and_then(catalog::resolve);
                let mut s = sel(None);
                if let Some((family, suffix)) = mirrored {
                    s.kind = Some(family.kind);
                    s.suffix = Some(suffix);
                }
                return Value {
                    unit: unit.or_else(|| mirror.as_deref().and_then(units::of_name)),
                    sels: vec![s],
                    raw: if name.ends_with("_total") {
                        vec![name.clone()]
                    } else {
                        Vec::new()
                    },
                    ..Value::any()
                };
            }
            let f = names::absent_name(self.inv, &name);
            self.push(f, Some(&name));
            // Kept as raw, so what is wrong besides the name (a lifetime mean, a ratio of
            // counters) is still said.
            let raw = ["_total", "_sum", "_count"]
                .iter()
                .any(|s| name.ends_with(s))
                .then(|| name.clone());
            return Value {
                unit,
                sels: vec![sel(None)],
                raw: raw.into_iter().collect(),
                ..Value::any()
            };
        };
        if let Some(f) = names::deprecated_name(self.inv, &name) {
            self.push(f, Some(&name));
        }
        let s = sel(Some(&info));
        let mut empty = false;
        for m in vs
            .matchers
            .matchers
            .iter()
            .chain(vs.matchers.or_matchers.iter().flatten())
        {
            empty |= self.matcher(&name, &info, m, &s);
        }
        // A selector already reported as matching nothing says nothing more about its labels.
        let labels = if empty {
            LabelSet::Any
        } else {
            LabelSet::of(info.labels.iter().cloned(), self.inv.adds_target_labels())
        };
        let raw = if is_counterish(&s) {
            vec![name.clone()]
        } else {
            Vec::new()
        };
        Value {
            labels,
            unit,
            raw,
            sels: vec![s],
            copies: self
                .copies_of(&name, &info, catalogued)
                .into_iter()
                .collect(),
            ..Value::any()
        }
    }

    /// Whether `name`'s series are per-process copies: an inventory that saw series says so by
    /// their labels; the catalog, by the version of the inventory's engine.
    fn copies_of(
        &self,
        name: &str,
        info: &MetricInfo,
        family: Option<&'static Family>,
    ) -> Option<Copies> {
        if info.values.is_some() {
            return info.has_label("pid").then(|| Copies {
                name: name.to_owned(),
                label: "pid".to_owned(),
                when: None,
            });
        }
        let family = family?;
        let spec = names::inventory_spec(self.inv, family.exporter)?;
        let p = family.per_process_at(spec.version)?;
        Some(Copies {
            name: name.to_owned(),
            label: p.label.to_owned(),
            when: Some(p.when),
        })
    }

    /// Checks one matcher; true when it was reported as selecting nothing.
    fn matcher(&mut self, name: &str, info: &MetricInfo, m: &Matcher, sel: &Sel) -> bool {
        if m.name == "__name__" || m.name.starts_with(VAR_PREFIX) {
            return false;
        }
        let set = LabelSet::of(info.labels.iter().cloned(), self.inv.adds_target_labels());
        if !set.has(&m.name) {
            let serious = selects_something(m);
            self.missing_label(
                name,
                &m.name,
                Some(info),
                &set,
                serious,
                ("is matched", &m.name),
            );
            return serious;
        }
        if sel.exporter == Some(Exporter::DcgmExporter) {
            self.attribution(name, &m.name, info);
        }
        self.unseen_value(name, info, m);
        false
    }

    /// Whether some inventory has names of producer `p` (then a name of it that is absent is
    /// really absent).
    fn covers(&mut self, p: &'static Producer) -> bool {
        let covered = self.covered.get_or_insert_with(|| {
            self.inv
                .names()
                .iter()
                .filter_map(|n| producer_of(n))
                .map(|p| p.name)
                .collect()
        });
        covered.contains(p.name)
    }

    fn unseen_value(&mut self, name: &str, info: &MetricInfo, m: &Matcher) {
        let Some(seen) = info.values.as_ref().and_then(|v| v.get(&m.name)) else {
            return;
        };
        if m.op != MatchOp::Equal
            || m.value.is_empty()
            || m.value.contains('$')
            || seen.contains(&m.value)
        {
            return;
        }
        let shown: Vec<&str> = seen.iter().take(8).map(String::as_str).collect();
        let Some(example) = shown.first() else {
            return;
        };
        let f = Finding::new(
            Rule::MissingLabel,
            Severity::Warning,
            format!(
                "no series of `{name}` has {}=\"{}\" (seen: {})",
                m.name,
                m.value,
                shown.join(", ")
            ),
        )
        .metric(name)
        .suggest(format!(
            "match a value that exists, e.g. {}=\"{example}\"",
            m.name
        ));
        self.push(f, Some(&m.value));
    }

    /// `how` says where the label is used, `needle` what to underline.
    fn missing_label(
        &mut self,
        name: &str,
        label: &str,
        info: Option<&MetricInfo>,
        have: &LabelSet,
        serious: bool,
        (how, needle): (&str, &str),
    ) {
        let have_names = have.names();
        let suggestion = names::label_suggestion(name, label, info, &have_names);
        // A page or the catalog cannot show what Prometheus adds (target labels, relabelling):
        // against them an unknown label is evidence only when it is a known mistake or a near
        // miss of a label the metric has.
        let near_miss = suggestion
            .as_deref()
            .is_some_and(|s| s.starts_with("use `"));
        let partial = self.inv.adds_target_labels();
        let severity = match (serious, partial && !near_miss) {
            (_, true) => Severity::Info,
            (true, false) => Severity::Error,
            (false, false) => Severity::Warning,
        };
        let message = if partial && !near_miss {
            format!(
                "`{label}` {how}, but no series of `{name}` carries it on {}; Prometheus may add it (target labels, relabelling): only a Prometheus inventory can tell",
                self.inv.sources()
            )
        } else {
            format!(
                "`{label}` {how}, but no series of `{name}` carries it ({})",
                self.inv.sources()
            )
        };
        let mut f = Finding::new(Rule::MissingLabel, severity, message).metric(name);
        f.suggestion = suggestion;
        self.push(f, Some(needle));
    }

    /// dcgm series selected or grouped by `pod`/`namespace`/`container`.
    fn attribution(&mut self, name: &str, label: &str, info: &MetricInfo) {
        if !matches!(label, "pod" | "namespace" | "container") {
            return;
        }
        let values: Vec<&String> = info
            .values
            .as_ref()
            .and_then(|v| v.get(label))
            .map(|s| s.iter().collect())
            .unwrap_or_default();
        let exporter_own = |v: &&String| v.contains("dcgm-exporter") || v.contains("gpu-operator");
        let (severity, why) = if !values.is_empty() && !self.inv.adds_target_labels() {
            if !values.iter().all(exporter_own) {
                return;
            }
            (
                Severity::Error,
                format!(
                    "its `{label}` values ({}) are the exporter's own",
                    join(&values)
                ),
            )
        } else {
            (
                Severity::Warning,
                format!(
                    "through Prometheus, `{label}` on dcgm-exporter series is the exporter's own unless its ServiceMonitor sets honorLabels: true"
                ),
            )
        };
        let f = Finding::new(
            Rule::ExporterAttribution,
            severity,
            format!("`{name}` is selected by `{label}`, but {why}: it does not say which workload used the GPU"),
        )
        .metric(name)
        .suggest(format!(
            "use `exported_{label}` (or set the dcgm-exporter ServiceMonitor's honorLabels: true), with pod mapping on (--kubernetes-gpu-id-type, --nvidia-resource-names for time-sliced GPUs); or use the engine's own metrics per pod"
        ));
        self.push(f, Some(label));
    }

    // ---- aggregations ----------------------------------------------------------------------

    fn aggregate(&mut self, a: &AggregateExpr) -> Value {
        let op = a.op.to_string();
        let param = a.param.as_ref().map(|p| self.expr(p));
        let inner = self.expr(&a.expr);
        let labels = match &a.modifier {
            Some(LabelModifier::Include(ls)) => {
                self.grouping(&inner, &ls.labels, true, "by");
                inner.labels.only(&ls.labels)
            }
            Some(LabelModifier::Exclude(ls)) => {
                self.grouping(&inner, &ls.labels, false, "without");
                let drop: Vec<&str> = ls.labels.iter().map(String::as_str).collect();
                inner.labels.without(&drop)
            }
            None => LabelSet::none(),
        };
        let labels = match (op.as_str(), param.as_ref().map(|p| &p.labels)) {
            ("count_values", _) => labels.with(&LabelSet::Any),
            _ => labels,
        };
        let counts = matches!(op.as_str(), "count" | "count_values" | "group");
        let keeps_level = matches!(op.as_str(), "max" | "min" | "avg" | "topk" | "bottomk");
        let summed_fraction = match op.as_str() {
            "sum" if sums_engine_fraction(&inner, a.modifier.as_ref()) => {
                inner.first_name().map(str::to_owned)
            }
            _ if counts => None,
            _ => inner.summed_fraction.clone(),
        };
        let copies = self.merged_copies(&op, &inner.copies, a.modifier.as_ref());
        Value {
            labels,
            unit: units::through_aggregation(&op, inner.unit),
            raw: if counts { Vec::new() } else { inner.raw },
            sels: inner.sels,
            scalar: None,
            sum_rates: if counts { Vec::new() } else { inner.sum_rates },
            quantile_of: if keeps_level { inner.quantile_of } else { None },
            summed_fraction,
            copies,
        }
    }

    /// An aggregation over per-process copies: one across their label merges them (a finding
    /// when it adds or averages them); one that keeps the label leaves them apart.
    fn merged_copies(
        &mut self,
        op: &str,
        copies: &[Copies],
        modifier: Option<&LabelModifier>,
    ) -> Vec<Copies> {
        let across = |label: &str| match modifier {
            None => true,
            Some(LabelModifier::Include(ls)) => !ls.labels.iter().any(|l| l == label),
            Some(LabelModifier::Exclude(ls)) => ls.labels.iter().any(|l| l == label),
        };
        let mut kept = Vec::new();
        for c in copies {
            if !across(&c.label) {
                kept.push(c.clone());
            } else if matches!(op, "sum" | "avg") {
                self.summed_copies(op, c);
            }
        }
        kept
    }

    fn summed_copies(&mut self, op: &str, c: &Copies) {
        let (name, label) = (&c.name, &c.label);
        let why = match c.when {
            Some(when) => format!(
                "{} exports `{name}` once per process, told apart by `{label}`, with {when}",
                self.inv.sources()
            ),
            None => format!(
                "the series of `{name}` carry `{label}` on {}: one per process",
                self.inv.sources()
            ),
        };
        let effect = match op {
            "avg" => "avg() divides the value by the number of processes",
            _ => "sum() adds copies of one value (and keeps a dead process's last one)",
        };
        let f = Finding::new(
            Rule::PerProcessSum,
            Severity::Warning,
            format!("{why}. The copies are not parts of a whole: one process holds the engine's value, the others 0 or a stale value from before a restart, so {effect}"),
        )
        .metric(name)
        .suggest(format!(
            "merge the copies first: max without ({label}) ({name}); then aggregate that, e.g. max by (pod) (max without ({label}) ({name})), or sum(max without ({label}) ({name})) for an autoscaler"
        ));
        self.push(f, Some(op));
    }

    /// `by (…)`/`without (…)` labels the input does not have.
    fn grouping(&mut self, inner: &Value, labels: &[String], serious: bool, how: &str) {
        let Some(name) = inner.first_name().map(str::to_owned) else {
            return;
        };
        for l in labels {
            if !inner.labels.has(l) {
                let info = self.inv.metric(&name);
                self.missing_label(
                    &name,
                    l,
                    info.as_ref(),
                    &inner.labels,
                    serious,
                    (&format!("is in `{how} ({l})`"), l),
                );
            } else if inner.is_dcgm()
                && let Some(info) = self.inv.metric(&name)
            {
                self.attribution(&name, l, &info);
            }
        }
    }

    // ---- binary operators ------------------------------------------------------------------

    fn binary(&mut self, b: &BinaryExpr) -> Value {
        let start = self.hits.len();
        let lhs = self.expr(&b.lhs);
        let mid = self.hits.len();
        let rhs = self.expr(&b.rhs);
        let op = b.op.to_string();
        if op == "or" {
            self.fallback(&lhs, &rhs, start..mid, mid..self.hits.len());
        }
        let modifier = b.modifier.as_ref();
        if let Some(m) = modifier {
            self.matching(&lhs, &rhs, m);
        }
        let comparison = b.op.is_comparison_operator();
        if comparison {
            self.compared_quantile(&lhs, &rhs, &op);
            if let Some(f) = units::comparison_mismatch(&lhs, &rhs, &op) {
                let needle = lhs.first_name().or(rhs.first_name()).map(str::to_owned);
                self.push(f, needle.as_deref());
            }
            let raw: Vec<String> = lhs.raw.iter().chain(&rhs.raw).cloned().collect();
            self.raw_counters(&raw, &format!("is compared (`{op}`)"));
        }
        let labels = result_labels(&lhs, &rhs, modifier, &op);
        let unit = if comparison && !modifier.is_some_and(|m| m.return_bool) {
            lhs.unit.or(rhs.unit)
        } else {
            units::through_arithmetic(&op, &lhs, &rhs)
        };
        let raw = match op.as_str() {
            _ if comparison => Vec::new(),
            "and" | "unless" => lhs.raw.clone(),
            _ => lhs.raw.iter().chain(&rhs.raw).cloned().collect(),
        };
        let scalar = match (lhs.scalar, rhs.scalar) {
            (Some(_), Some(_)) => Some(0.0),
            _ => None,
        };
        if op == "/" {
            self.histogram_ratios(&lhs, &rhs);
        }
        let lifetime = if op == "/" {
            lifetime_pair(&lhs, &rhs)
        } else {
            None
        };
        if let Some((sum, count)) = &lifetime {
            let f = Finding::new(
                Rule::LifetimeAverage,
                Severity::Warning,
                format!("`{sum}` / `{count}` without rate(): the mean over everything since the process started, which hardly moves and hides what happens now"),
            )
            .metric(sum)
            .suggest(format!(
                "rate({sum}[5m]) / rate({count}[5m]) for the current mean (or increase(…[$__range]) for the dashboard's range)"
            ));
            self.push(f, Some(sum));
        }
        let raw = match &lifetime {
            Some((sum, count)) => raw.into_iter().filter(|n| n != sum && n != count).collect(),
            None => raw,
        };
        let sum_rates = match op.as_str() {
            "/" if rhs.scalar.is_none() => Vec::new(),
            _ if comparison => lhs.sum_rates.clone(),
            "and" | "unless" => lhs.sum_rates.clone(),
            _ => lhs
                .sum_rates
                .iter()
                .chain(&rhs.sum_rates)
                .cloned()
                .collect(),
        };
        let summed_fraction = match op.as_str() {
            "/" => None,
            "and" | "unless" => lhs.summed_fraction.clone(),
            _ => lhs
                .summed_fraction
                .clone()
                .or_else(|| rhs.summed_fraction.clone()),
        };
        let copies = match op.as_str() {
            "and" | "unless" => lhs.copies.clone(),
            _ => lhs.copies.iter().chain(&rhs.copies).cloned().collect(),
        };
        Value {
            labels,
            unit,
            raw,
            sels: lhs.sels.into_iter().chain(rhs.sels).collect(),
            scalar,
            sum_rates,
            quantile_of: None,
            summed_fraction,
            copies,
        }
    }

    /// The finite bucket bounds of `family` (lowest, top) and where they come from: the `le`
    /// values an inventory saw, else the catalog's defaults for the inventory's version.
    fn bucket_bounds(&self, family: &str) -> Option<(f64, f64, String)> {
        let seen = self
            .inv
            .metric(&format!("{family}_bucket"))
            .and_then(|i| i.values)
            .and_then(|v| v.get("le").cloned())
            .unwrap_or_default();
        let finite: Vec<f64> = seen
            .iter()
            .filter_map(|s| s.parse::<f64>().ok())
            .filter(|x| x.is_finite())
            .collect();
        if let (Some(lo), Some(hi)) = (
            finite.iter().copied().reduce(f64::min),
            finite.iter().copied().reduce(f64::max),
        ) {
            return Some((lo, hi, format!("its `le` labels on {}", self.inv.sources())));
        }
        let spec = names::inventory_spec(self.inv, Exporter::Vllm);
        let b = buckets::bounds(family, spec.as_ref().map(|s| s.version))?;
        let whence = match spec {
            Some(s) => format!("vLLM {}'s default buckets", s.version),
            None => "vLLM's default buckets".to_owned(),
        };
        Some((*b.first()?, *b.last()?, whence))
    }

    /// A threshold `t` on a quantile of `family` beyond its finite buckets; `how` says where
    /// the threshold is (`the panel's threshold 80`, `compared \`> 80\``).
    fn beyond_buckets(&mut self, family: &str, t: f64, how: &str, needle: &str) {
        let Some((lo, hi, whence)) = self.bucket_bounds(family) else {
            return;
        };
        let (message, suggestion) = if t > hi {
            (
                format!(
                    "{how} is above the top finite bucket of `{family}` ({} from {whence}): a quantile is at most that bound (it comes back pinned there), so it never crosses {t}",
                    fmt_num(hi)
                ),
                format!(
                    "use a threshold of at most {} (or histogram buckets that reach it)",
                    fmt_num(hi)
                ),
            )
        } else if t > 0.0 && t < lo {
            (
                format!(
                    "{how} is below the lowest bucket of `{family}` ({} from {whence}): under it the quantile is interpolated from 0, not measured",
                    fmt_num(lo)
                ),
                format!(
                    "use a threshold of at least {} (or finer buckets)",
                    fmt_num(lo)
                ),
            )
        } else {
            return;
        };
        let bucket = format!("{family}_bucket");
        let f = Finding::new(Rule::UnreachableThreshold, Severity::Warning, message)
            .metric(&bucket)
            .suggest(suggestion);
        self.push(f, Some(needle));
    }

    /// `histogram_quantile(…) > T` with T beyond the histogram's buckets.
    fn compared_quantile(&mut self, lhs: &Value, rhs: &Value, op: &str) {
        let (q, c) = match (lhs.scalar, rhs.scalar) {
            (None, Some(c)) => (lhs, c),
            (Some(c), None) => (rhs, c),
            _ => return,
        };
        if let Some(family) = q.quantile_of.clone() {
            self.beyond_buckets(
                &family,
                c,
                &format!("the quantile compared `{op} {}`", fmt_num(c)),
                "histogram_quantile",
            );
        }
    }

    /// Panel thresholds the value cannot reach.
    fn unreachable_thresholds(&mut self, root: &Value, cx: Context<'_>) {
        if cx.thresholds.is_empty() || root.scalar.is_some() {
            return;
        }
        if root.unit == Some(Unit::Fraction) {
            let Some(t) = cx.thresholds.iter().copied().find(|t| *t > 1.0) else {
                return;
            };
            let name = root.first_name().unwrap_or("the query").to_owned();
            let shown = match cx.panel_unit {
                Some("percentunit") => format!(
                    " (the panel's `percentunit` shows 0.8 as 80 %, and reads a threshold of {} as {} %)",
                    fmt_num(t),
                    fmt_num(t * 100.0)
                ),
                _ => String::new(),
            };
            let f = Finding::new(
                Rule::UnreachableThreshold,
                Severity::Warning,
                format!(
                    "the panel's threshold {} is never reached: `{name}` is a 0..1 fraction{shown}",
                    fmt_num(t)
                ),
            )
            .metric(&name)
            .suggest(format!(
                "write the threshold as a fraction: {}",
                fmt_num(t / 100.0)
            ));
            self.push(f, Some(&name));
            return;
        }
        if let Some(family) = root.quantile_of.clone() {
            for t in cx.thresholds {
                self.beyond_buckets(
                    &family,
                    *t,
                    &format!("the panel's threshold {}", fmt_num(*t)),
                    "histogram_quantile",
                );
            }
        }
    }

    /// `sum` over an engine's 0..1 fraction across engines or pods.
    fn summed_fraction(&mut self, name: &str) {
        let f = Finding::new(
            Rule::SummedFraction,
            Severity::Warning,
            format!("`{name}` is a 0..1 fraction per engine, and sum() adds it across engines or pods: the result is no fraction of anything (two engines at 60 % read 1.2)"),
        )
        .metric(name)
        .suggest(format!("max({name}) for the fullest engine, avg({name}) for the mean (or sum by the label that tells engines apart)"));
        self.push(f, Some("sum"));
    }

    /// `on (…)`, `ignoring (…)`, `group_left (…)`, `group_right (…)` labels.
    fn matching(&mut self, lhs: &Value, rhs: &Value, m: &promql_parser::parser::BinModifier) {
        match &m.matching {
            Some(LabelModifier::Include(ls)) => {
                for l in &ls.labels {
                    for side in [lhs, rhs] {
                        self.side_label(side, l, true, &format!("is in `on ({l})`"), "on");
                    }
                }
            }
            Some(LabelModifier::Exclude(ls)) => {
                for l in ls
                    .labels
                    .iter()
                    .filter(|l| !lhs.labels.has(l) && !rhs.labels.has(l))
                {
                    self.side_label(
                        lhs,
                        l,
                        false,
                        &format!("is in `ignoring ({l})`"),
                        "ignoring",
                    );
                }
            }
            None => {}
        }
        let (one_side, how) = match &m.card {
            VectorMatchCardinality::ManyToOne(_) => (rhs, "group_left"),
            VectorMatchCardinality::OneToMany(_) => (lhs, "group_right"),
            _ => return,
        };
        for l in m
            .card
            .labels()
            .map(|ls| ls.labels.as_slice())
            .unwrap_or_default()
        {
            self.side_label(one_side, l, true, &format!("is in `{how} ({l})`"), how);
        }
    }

    fn side_label(&mut self, side: &Value, label: &str, serious: bool, how: &str, needle: &str) {
        if side.labels.has(label) {
            return;
        }
        if let Some(name) = side.first_name().map(str::to_owned) {
            let info = self.inv.metric(&name);
            self.missing_label(
                &name,
                label,
                info.as_ref(),
                &side.labels,
                serious,
                (how, needle),
            );
        }
    }

    fn raw_counters(&mut self, raw: &[String], how: &str) {
        for name in raw {
            let f = Finding::new(
                Rule::CounterWithoutRate,
                Severity::Warning,
                format!("`{name}` is a counter (it only grows, and resets on restart) and {how} without rate() or increase()"),
            )
            .metric(name)
            .suggest(format!("rate({name}[5m]) for a per-second rate, increase({name}[1h]) for a count per window"));
            self.push(f, Some(name));
        }
    }

    // ---- function calls --------------------------------------------------------------------

    fn call(&mut self, c: &Call) -> Value {
        let func = c.func.name;
        let args: Vec<Value> = c.args.args.iter().map(|a| self.expr(a)).collect();
        if let Some(range) = c.args.args.iter().find_map(|a| range_of(a)) {
            self.window(func, range);
        }
        if matches!(func, "rate" | "irate" | "increase") {
            self.rate_on_gauge(func, args.first());
        }
        if func == "histogram_quantile" {
            if let Some(buckets) = c.args.args.get(1)
                && !aggregates(buckets)
            {
                self.per_series_quantile(args.get(1));
            }
            return self.histogram_quantile(&args);
        }
        let first = args
            .iter()
            .find(|a| a.scalar.is_none())
            .cloned()
            .unwrap_or_else(Value::any);
        match func {
            "rate" | "irate" | "increase" => {
                let sum_rates = first
                    .sels
                    .iter()
                    .filter(|s| is_histogram_sum(s))
                    .map(|s| s.name.clone())
                    .collect();
                Value {
                    unit: None,
                    raw: Vec::new(),
                    sum_rates,
                    ..first
                }
            }
            "delta" | "idelta" | "deriv" | "resets" | "changes" | "count_over_time"
            | "present_over_time" => Value {
                unit: None,
                raw: Vec::new(),
                ..first
            },
            "absent" | "absent_over_time" => Value::any(),
            "vector" | "time" | "pi" => Value::number(0.0),
            "timestamp" => Value {
                unit: Some(Unit::Timestamp),
                raw: Vec::new(),
                ..first
            },
            "label_replace" | "label_join" => {
                let dst = c.args.args.get(1).and_then(|a| string_arg(a));
                let added = LabelSet::of(dst, false);
                Value {
                    labels: first.labels.with(&added),
                    ..first
                }
            }
            _ => Value {
                unit: units::through_function(func, first.unit),
                ..first
            },
        }
    }

    fn rate_on_gauge(&mut self, func: &str, arg: Option<&Value>) {
        for s in arg.map(|a| a.sels.as_slice()).unwrap_or_default() {
            let gauge = s.kind == Some(Kind::Gauge) || s.suffix == Some(Suffix::Created);
            if !gauge {
                continue;
            }
            let f = Finding::new(
                Rule::RateOnGauge,
                Severity::Error,
                format!("`{}` is a gauge: {func}() treats every decrease as a counter reset and returns nonsense", s.name),
            )
            .metric(&s.name)
            .suggest(format!(
                "use the gauge directly, or avg_over_time/max_over_time({}[5m]); deriv() for its slope",
                s.name
            ));
            self.push(f, Some(&s.name));
        }
    }

    fn window(&mut self, func: &str, range: Duration) {
        let secs = range.as_secs();
        if secs == RATE_INTERVAL_S || secs == RANGE_S {
            return;
        }
        let factor = match func {
            "rate" | "increase" | "delta" | "deriv" => 4.0,
            "irate" | "idelta" => 2.0,
            _ => return,
        };
        let message = if secs == INTERVAL_S {
            format!(
                "{func}() over [$__interval]: zoomed in, $__interval drops to the scrape interval and the graph goes empty or jumpy"
            )
        } else {
            let Some(scrape) = self.inv.scrape_interval_s() else {
                return;
            };
            let secs = range.as_secs_f64();
            if secs >= factor * scrape {
                return;
            }
            format!(
                "{func}() over [{}] sees fewer than {factor:.0} samples at a {} scrape interval: it returns nothing or jumps",
                fmt_secs(secs),
                fmt_secs(scrape)
            )
        };
        let f = Finding::new(Rule::ShortRateWindow, Severity::Warning, message).suggest(match self
            .inv
            .scrape_interval_s()
        {
            Some(s) => format!(
                "use [$__rate_interval] in Grafana, or at least [{}]",
                fmt_secs(factor * s)
            ),
            None => "use [$__rate_interval]".to_owned(),
        });
        self.push(f, Some(func));
    }

    /// `a or b`. Over one quantity's names in two versions (`vllm:kv_cache_usage_perc or
    /// vllm:gpu_cache_usage_perc`, each the other's successor or both of one concept) it is a
    /// deliberate fallback: what the walk said about one arm's name (renamed, removed, unknown)
    /// becomes an info when the other arm exists. Over two different quantities the fallback
    /// silently changes what the panel shows where the first is missing: a finding.
    /// `lhs_hits`/`rhs_hits` are the ranges of `self.hits` each arm's walk added.
    fn fallback(
        &mut self,
        lhs: &Value,
        rhs: &Value,
        lhs_hits: std::ops::Range<usize>,
        rhs_hits: std::ops::Range<usize>,
    ) {
        let (Some(a), Some(b)) = (arm_family(lhs), arm_family(rhs)) else {
            return;
        };
        if a.name == b.name {
            return;
        }
        if !same_quantity(a, b) {
            let (x, y) = (
                lhs.first_name().unwrap_or(a.name).to_owned(),
                rhs.first_name().unwrap_or(b.name).to_owned(),
            );
            let f = Finding::new(
                Rule::FallbackChangesMeaning,
                Severity::Warning,
                format!(
                    "`{x}` or `{y}`: the arms are different quantities ({} vs {}), not one quantity's names in two versions; where `{x}` is missing the panel shows `{y}` under the same title",
                    quantity(a),
                    quantity(b)
                ),
            )
            .metric(&x)
            .suggest(format!(
                "draw them as two queries, or fall back to `{x}`'s own older name{}",
                a.successor
                    .map(|s| format!(" (it was renamed to {s})"))
                    .unwrap_or_default()
            ));
            self.push(f, Some(&y));
            return;
        }
        let exists = |v: &Value| {
            !v.sels.is_empty() && v.sels.iter().all(|s| self.inv.metric(&s.name).is_some())
        };
        let (l, r) = (exists(lhs), exists(rhs));
        let mut soften = |range: std::ops::Range<usize>, arm: &Value, other: &Value| {
            let names: Vec<&str> = arm.sels.iter().map(|s| s.name.as_str()).collect();
            let present = other.first_name().unwrap_or("the other arm");
            for h in &mut self.hits[range] {
                let f = &mut h.finding;
                let about_arm = f.metric.as_deref().is_some_and(|m| names.contains(&m));
                if about_arm
                    && matches!(f.rule, Rule::RenamedMetric | Rule::UnknownMetric)
                    && f.severity > Severity::Info
                {
                    f.severity = Severity::Info;
                    f.message.push_str(&format!(
                        "; here it is a version fallback beside `{present}`, which exists, so the query still returns data"
                    ));
                }
            }
        };
        if r {
            soften(lhs_hits, lhs, rhs);
        }
        if l {
            soften(rhs_hits, rhs, lhs);
        }
    }

    /// `rate(x_bucket) / rate(x_bucket)`: 1 in every bucket.
    fn histogram_ratios(&mut self, lhs: &Value, rhs: &Value) {
        let buckets = |v: &Value| {
            !v.sels.is_empty()
                && v.sels
                    .iter()
                    .all(|s| s.suffix == Some(Suffix::Bucket) || s.name.ends_with("_bucket"))
        };
        if !(buckets(lhs) && buckets(rhs)) {
            return;
        }
        let name = lhs.first_name().unwrap_or("?").to_owned();
        let stem = name.strip_suffix("_bucket").unwrap_or(&name).to_owned();
        let f = Finding::new(
            Rule::BucketRatio,
            Severity::Error,
            format!("`{name}` divided by buckets: every bucket series is divided by itself, so the result is 1 (or NaN), not a mean"),
        )
        .metric(&name)
        .suggest(format!(
            "the mean is rate({stem}_sum[5m]) / rate({stem}_count[5m]); a quantile is histogram_quantile(0.99, sum by (le) (rate({name}[5m])))"
        ));
        self.push(f, Some(&name));
    }

    /// A rate of a histogram's `_sum` left undivided: seconds per second, not a latency.
    fn rate_of_sum(&mut self, root: &Value, cx: Context<'_>) {
        for name in &root.sum_rates {
            let stem = name.strip_suffix("_sum").unwrap_or(name);
            let shown = match cx.panel_unit {
                Some(u) if !u.is_empty() && u != "none" && u != "short" => {
                    format!(" under the unit `{u}`")
                }
                _ => String::new(),
            };
            let f = Finding::new(
                Rule::RateOfSum,
                Severity::Warning,
                format!("rate(`{name}`) alone is drawn{shown}: it is the total observed per second (seconds of latency per second, tokens per second), which grows with traffic, not a per-request value"),
            )
            .metric(name)
            .suggest(format!(
                "divide by the count for the mean: rate({stem}_sum[5m]) / rate({stem}_count[5m]); or histogram_quantile over {stem}_bucket"
            ));
            self.push(f, Some(name));
        }
    }

    /// `rate(vllm:iteration_tokens_total_count)` shown as tokens per second (also spelled
    /// `vllm_iteration_tokens_total_count`, as a pipeline that turns `:` into `_` writes it).
    fn steps_as_tokens(&mut self, root: &Value, cx: Context<'_>) {
        const SPELLINGS: [&str; 2] = [
            "vllm:iteration_tokens_total_count",
            "vllm_iteration_tokens_total_count",
        ];
        let Some(name) = root
            .sels
            .iter()
            .map(|s| s.name.clone())
            .find(|n| SPELLINGS.contains(&n.as_str()))
        else {
            return;
        };
        if !root.raw.is_empty() {
            return;
        }
        let said = format!(
            "{} {}",
            cx.title.unwrap_or_default(),
            cx.panel_unit.unwrap_or_default()
        )
        .to_ascii_lowercase();
        if !(said.contains("tok") || said.contains("tps") || said.contains("throughput")) {
            return;
        }
        let f = Finding::new(
            Rule::StepsAsTokens,
            Severity::Warning,
            format!("`{name}` counts engine steps (one observation per step), but it is shown as tokens per second"),
        )
        .metric(&name)
        .suggest("tokens per second is rate(vllm:iteration_tokens_total_sum[5m]) (or prompt + generation token rates); keep _count for steps per second");
        self.push(f, Some(&name));
    }

    /// A 0..1 fraction on a panel titled as a percent, with no percent unit.
    fn fraction_as_percent(&mut self, root: &Value, cx: Context<'_>) {
        if root.unit != Some(Unit::Fraction) {
            return;
        }
        if !matches!(cx.panel_unit, None | Some("" | "none" | "short")) {
            return;
        }
        let title = cx.title.unwrap_or_default().to_ascii_lowercase();
        if !(title.contains('%') || title.contains("percent")) {
            return;
        }
        let name = root.first_name().unwrap_or("the query").to_owned();
        let f = Finding::new(
            Rule::FractionAsPercent,
            Severity::Warning,
            format!("`{name}` is a 0..1 fraction, but the panel says percent and has no unit: 0.45 reads as 0.45 %"),
        )
        .metric(&name)
        .suggest("set the panel unit to `percentunit` (or multiply by 100 and use `percent`)");
        self.push(f, Some(&name));
    }

    fn histogram_quantile(&mut self, args: &[Value]) -> Value {
        let (Some(q), Some(v)) = (args.first(), args.get(1)) else {
            return Value::any();
        };
        let name = v.first_name().unwrap_or("?").to_owned();
        if let Some(x) = q.scalar.filter(|x| !(0.0..=1.0).contains(x)) {
            self.bad_quantile(
                &name,
                format!("the quantile {x} is outside 0..1 (histogram_quantile returns ±Inf)"),
                format!("write {} for the p{x}", x / 100.0),
            );
        }
        let not_buckets: Vec<&Sel> = v
            .sels
            .iter()
            .filter(|s| s.suffix != Some(Suffix::Bucket) && !s.name.ends_with("_bucket"))
            .collect();
        if let Some(s) = not_buckets.first() {
            self.bad_quantile(
                &s.name,
                format!(
                    "histogram_quantile over `{}`, which is not a histogram's _bucket series",
                    s.name
                ),
                "use the histogram's <name>_bucket series, by le".to_owned(),
            );
        } else if !v.labels.has("le") {
            self.bad_quantile(&name, format!("the aggregation drops `le`, so histogram_quantile over `{name}` has no buckets to read"), "keep le: sum by (le) (rate(<name>_bucket[5m])), adding other labels after le".to_owned());
        }
        self.raw_counters(
            &v.raw,
            "feeds histogram_quantile (so the quantile covers all time since the process started)",
        );
        // The histogram's unit: the catalog's, else what its name says (`…_seconds_bucket`).
        let unit = v.sels.first().and_then(|s| {
            names::family_of(&s.name).map(|f| f.unit).or_else(|| {
                s.name
                    .strip_suffix("_bucket")
                    .filter(|base| base.ends_with("_seconds"))
                    .map(|_| Unit::Seconds)
            })
        });
        Value {
            labels: v.labels.without(&["le"]),
            unit,
            sels: v.sels.clone(),
            quantile_of: arm_family(v).map(|f| f.name.to_owned()),
            ..Value::any()
        }
    }

    /// `histogram_quantile(q, rate(x_bucket[5m]))`: a quantile per series — per pod, per
    /// handler, per model — not the quantile across them; a stat shows one of them.
    fn per_series_quantile(&mut self, buckets: Option<&Value>) {
        let Some(name) = buckets
            .and_then(|v| v.sels.first())
            .filter(|s| s.suffix == Some(Suffix::Bucket) || s.name.ends_with("_bucket"))
            .map(|s| s.name.clone())
        else {
            return;
        };
        let f = Finding::new(
            Rule::BadHistogramQuantile,
            Severity::Warning,
            format!(
                "histogram_quantile over `{name}` without sum by (le): one quantile per series (per pod, handler, model…), not the quantile across them; a single-value panel shows one of them"
            ),
        )
        .metric(&name)
        .suggest(format!(
            "sum the buckets first: histogram_quantile(q, sum by (le) (rate({name}[5m]))); keep series apart with labels after le (sum by (le, pod))"
        ));
        self.push(f, Some("histogram_quantile"));
    }

    fn bad_quantile(&mut self, name: &str, message: String, suggestion: String) {
        let f = Finding::new(Rule::BadHistogramQuantile, Severity::Error, message)
            .metric(name)
            .suggest(suggestion);
        self.push(f, Some("histogram_quantile"));
    }
}

/// The metric name of a selector: its name, or an equality `__name__` matcher.
pub fn selector_name(vs: &VectorSelector) -> Option<String> {
    vs.name.clone().or_else(|| {
        vs.matchers
            .matchers
            .iter()
            .find(|m| m.name == "__name__" && m.op == MatchOp::Equal)
            .map(|m| m.value.clone())
    })
}

/// `sum` over an engine's fraction (vLLM, SGLang, TGI; not a GPU exporter's ratio, whose sum
/// over GPUs is a count of busy GPUs) without a grouping that keeps one series per engine or pod.
fn sums_engine_fraction(inner: &Value, modifier: Option<&LabelModifier>) -> bool {
    let engine = inner.sels.iter().any(|s| {
        matches!(
            s.exporter,
            Some(Exporter::Vllm | Exporter::Sglang | Exporter::Tgi)
        )
    });
    if inner.unit != Some(Unit::Fraction) || !engine {
        return false;
    }
    const PER_ENGINE: [&str; 6] = ["engine", "pod", "instance", "dp_rank", "tp_rank", "gpu"];
    match modifier {
        Some(LabelModifier::Include(ls)) => {
            !ls.labels.iter().any(|l| PER_ENGINE.contains(&l.as_str()))
        }
        Some(LabelModifier::Exclude(_)) | None => true,
    }
}

/// The one catalogued family every selector of an arm belongs to (`x_sum / x_count` is one).
fn arm_family(v: &Value) -> Option<&'static Family> {
    let mut families = v.sels.iter().map(|s| names::family_of(&s.name));
    let first = families.next()??;
    families
        .all(|f| f.is_some_and(|f| f.name == first.name))
        .then_some(first)
}

/// One quantity under two names: one is (a successor of a successor of …) the other, or both
/// are catalogued as the same concept.
fn same_quantity(a: &Family, b: &Family) -> bool {
    let leads_to = |from: &Family, to: &str| {
        let mut next = from.successor;
        for _ in 0..8 {
            match next {
                Some(n) if n == to => return true,
                Some(n) => next = catalog::family(n).and_then(|f| f.successor),
                None => return false,
            }
        }
        false
    };
    leads_to(a, b.name) || leads_to(b, a.name) || (a.concept.is_some() && a.concept == b.concept)
}

/// What a family measures, in a few words.
fn quantity(f: &Family) -> String {
    match f.concept {
        Some(Concept::Itl) => "one observation per token gap".to_owned(),
        Some(Concept::Tpot) => "one observation per finished request".to_owned(),
        Some(c) => c.name().replace('_', " "),
        None => format!("a {} in {}", f.kind.name(), f.unit.name()),
    }
}

fn is_histogram_sum(s: &Sel) -> bool {
    match s.suffix {
        Some(Suffix::Sum) => true,
        Some(_) => false,
        None => s.name.ends_with("_sum"),
    }
}

/// `x_sum / x_count` of one family with neither under rate()/increase(): their raw names.
fn lifetime_pair(lhs: &Value, rhs: &Value) -> Option<(String, String)> {
    lhs.raw.iter().find_map(|sum| {
        let stem = sum.strip_suffix("_sum")?;
        let count = format!("{stem}_count");
        rhs.raw.contains(&count).then(|| (sum.clone(), count))
    })
}

fn is_counterish(s: &Sel) -> bool {
    match (s.kind, s.suffix) {
        (Some(Kind::Counter), Some(Suffix::None) | None) => true,
        (
            Some(Kind::Histogram | Kind::Summary),
            Some(Suffix::Bucket | Suffix::Sum | Suffix::Count),
        ) => true,
        (None, _) => s.name.ends_with("_total"),
        _ => false,
    }
}

/// A matcher that must match a non-empty value (so a missing label means no series at all).
fn selects_something(m: &Matcher) -> bool {
    match &m.op {
        MatchOp::Equal => !m.value.is_empty(),
        MatchOp::Re(re) => !re.is_match(""),
        MatchOp::NotEqual | MatchOp::NotRe(_) => false,
    }
}

fn result_labels(
    lhs: &Value,
    rhs: &Value,
    m: Option<&promql_parser::parser::BinModifier>,
    op: &str,
) -> LabelSet {
    if lhs.scalar.is_some() {
        return rhs.labels.clone();
    }
    if rhs.scalar.is_some() || matches!(op, "and" | "unless") {
        return lhs.labels.clone();
    }
    if op == "or" {
        return lhs.labels.with(&rhs.labels);
    }
    let Some(m) = m else {
        return lhs.labels.clone();
    };
    let extra = m
        .card
        .labels()
        .map(|l| l.labels.clone())
        .unwrap_or_default();
    match (&m.card, &m.matching) {
        (VectorMatchCardinality::ManyToOne(_), _) => lhs.labels.with(&LabelSet::of(extra, false)),
        (VectorMatchCardinality::OneToMany(_), _) => rhs.labels.with(&LabelSet::of(extra, false)),
        (_, Some(LabelModifier::Include(ls))) => lhs.labels.only(&ls.labels),
        (_, Some(LabelModifier::Exclude(ls))) => {
            let drop: Vec<&str> = ls.labels.iter().map(String::as_str).collect();
            lhs.labels.without(&drop)
        }
        _ => lhs.labels.clone(),
    }
}

fn range_of(e: &Expr) -> Option<Duration> {
    match e {
        Expr::MatrixSelector(ms) => Some(ms.range),
        Expr::Subquery(s) => Some(s.range),
        _ => None,
    }
}

fn string_arg(e: &Expr) -> Option<String> {
    match e {
        Expr::StringLiteral(s) => Some(s.val.clone()),
        _ => None,
    }
}

fn join(values: &[&String]) -> String {
    let shown: Vec<&str> = values.iter().take(3).map(|s| s.as_str()).collect();
    shown.join(", ")
}

/// `60`, `0.8`, `2.5e-5`: a number as written in a query or a threshold.
fn fmt_num(x: f64) -> String {
    let s = format!("{x}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

fn fmt_secs(s: f64) -> String {
    if s >= 60.0 && (s % 60.0).abs() < f64::EPSILON {
        format!("{}m", s / 60.0)
    } else {
        format!("{s}s")
    }
}

/// Whether an aggregation (`sum by (le) (…)`, …) is on the way from `e` to its selectors.
fn aggregates(e: &Expr) -> bool {
    match e {
        Expr::Aggregate(_) => true,
        Expr::Paren(p) => aggregates(&p.expr),
        Expr::Subquery(s) => aggregates(&s.expr),
        Expr::Unary(u) => aggregates(&u.expr),
        Expr::Call(c) => c.args.args.iter().any(|a| aggregates(a)),
        Expr::Binary(b) => aggregates(&b.lhs) || aggregates(&b.rhs),
        _ => false,
    }
}
