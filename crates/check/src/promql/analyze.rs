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
use llmscope_core::catalog::{Exporter, Kind, Suffix, Unit};
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
}

impl Value {
    fn any() -> Value {
        Value {
            labels: LabelSet::Any,
            unit: None,
            raw: Vec::new(),
            sels: Vec::new(),
            scalar: None,
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
    };
    let root = w.expr(expr);
    if cx.graph {
        w.raw_counters(&root.raw, "is drawn as a graph");
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
            let f = names::absent_name(self.inv, &name);
            self.push(f, Some(&name));
            return Value {
                unit,
                sels: vec![sel(None)],
                ..Value::any()
            };
        };
        if let Some(f) = names::deprecated_name(self.inv, &name) {
            self.push(f, Some(&name));
        }
        let s = sel(Some(&info));
        for m in vs
            .matchers
            .matchers
            .iter()
            .chain(vs.matchers.or_matchers.iter().flatten())
        {
            self.matcher(&name, &info, m, &s);
        }
        let labels = LabelSet::of(info.labels.iter().cloned(), self.inv.adds_target_labels());
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
            scalar: None,
        }
    }

    fn matcher(&mut self, name: &str, info: &MetricInfo, m: &Matcher, sel: &Sel) {
        if m.name == "__name__" || m.name.starts_with(VAR_PREFIX) {
            return;
        }
        let set = LabelSet::of(info.labels.iter().cloned(), self.inv.adds_target_labels());
        if !set.has(&m.name) {
            self.missing_label(
                name,
                &m.name,
                Some(info),
                &set,
                selects_something(m),
                ("is matched", &m.name),
            );
            return;
        }
        if sel.exporter == Some(Exporter::DcgmExporter) {
            self.attribution(name, &m.name, info);
        }
        self.unseen_value(name, info, m);
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
        let mut f = Finding::new(
            Rule::MissingLabel,
            if serious {
                Severity::Error
            } else {
                Severity::Warning
            },
            format!(
                "`{label}` {how}, but no series of `{name}` carries it ({})",
                self.inv.sources()
            ),
        )
        .metric(name);
        f.suggestion = names::label_suggestion(name, label, info, &have_names);
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
        Value {
            labels,
            unit: units::through_aggregation(&op, inner.unit),
            raw: if counts { Vec::new() } else { inner.raw },
            sels: inner.sels,
            scalar: None,
        }
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
        let lhs = self.expr(&b.lhs);
        let rhs = self.expr(&b.rhs);
        let op = b.op.to_string();
        let modifier = b.modifier.as_ref();
        if let Some(m) = modifier {
            self.matching(&lhs, &rhs, m);
        }
        let comparison = b.op.is_comparison_operator();
        if comparison {
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
        Value {
            labels,
            unit,
            raw,
            sels: lhs.sels.into_iter().chain(rhs.sels).collect(),
            scalar,
        }
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
            return self.histogram_quantile(&args);
        }
        let first = args
            .iter()
            .find(|a| a.scalar.is_none())
            .cloned()
            .unwrap_or_else(Value::any);
        match func {
            "rate" | "irate" | "increase" | "delta" | "idelta" | "deriv" | "resets" | "changes"
            | "count_over_time" | "present_over_time" => Value {
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
                "{func}() over [{}] sees fewer than {factor:.0} samples at a {}s scrape interval: it returns nothing or jumps",
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
        let unit = v
            .sels
            .first()
            .and_then(|s| names::family_of(&s.name))
            .map(|f| f.unit);
        Value {
            labels: v.labels.without(&["le"]),
            unit,
            raw: Vec::new(),
            sels: v.sels.clone(),
            scalar: None,
        }
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

fn fmt_secs(s: f64) -> String {
    if s >= 60.0 && (s % 60.0).abs() < f64::EPSILON {
        format!("{}m", s / 60.0)
    } else {
        format!("{s}s")
    }
}
