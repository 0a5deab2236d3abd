//! What the walk knows about a node's value, and how each PromQL operation combines its
//! operands': a [`Value`] holds the node's label names, unit, the raw counters and selectors
//! feeding it, and what the meaning-level rules follow (histogram `_sum` rates, quantiles,
//! summed fractions, per-process copies). [`super::analyze`] infers one per node, bottom-up;
//! the rules ([`crate::rules`]) read them. Nothing here reports: a value only says what the
//! expression computes.

use super::labels::LabelSet;
use super::names;
use super::units;
use crate::inventory::{Inventories, MetricInfo};
use llmscope_catalog::producers::{NIM, Producer};
use llmscope_catalog::{self as catalog, Exporter, Family, Kind, Suffix, Unit};
use promql_parser::parser::{BinModifier, Call, Expr, LabelModifier, VectorMatchCardinality};

/// What one selector contributes.
#[derive(Debug, Clone, PartialEq)]
pub struct Sel {
    pub name: String,
    pub kind: Option<Kind>,
    pub suffix: Option<Suffix>,
    pub exporter: Option<Exporter>,
}

impl Sel {
    /// A selector of `name`, typed by what an inventory says (`info`), else by the catalog.
    pub fn of(name: &str, info: Option<&MetricInfo>, catalogued: Option<&Family>) -> Sel {
        Sel {
            name: name.to_owned(),
            kind: info.and_then(|i| i.kind).or(catalogued.map(|f| f.kind)),
            suffix: info.and_then(|i| i.suffix),
            exporter: catalogued
                .map(|f| f.exporter)
                .or_else(|| Exporter::of_name(name)),
        }
    }

    /// A raw counter sample: a counter, or a histogram's or summary's `_bucket`/`_sum`/`_count`.
    fn is_counterish(&self) -> bool {
        match (self.kind, self.suffix) {
            (Some(Kind::Counter), Some(Suffix::None) | None) => true,
            (
                Some(Kind::Histogram | Kind::Summary),
                Some(Suffix::Bucket | Suffix::Sum | Suffix::Count),
            ) => true,
            (None, _) => self.name.ends_with("_total"),
            _ => false,
        }
    }

    /// A histogram's `_bucket` series, by the inventory's word or its name.
    pub fn is_bucket(&self) -> bool {
        self.suffix == Some(Suffix::Bucket) || self.name.ends_with("_bucket")
    }

    fn is_histogram_sum(&self) -> bool {
        match self.suffix {
            Some(Suffix::Sum) => true,
            Some(_) => false,
            None => self.name.ends_with("_sum"),
        }
    }
}

/// What the walk knows about a node's value.
#[derive(Debug, Clone)]
pub struct Value {
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
pub struct Copies {
    pub name: String,
    /// The label that tells the copies apart.
    pub label: String,
    /// Why the walk thinks so: the setting under which the catalog's version exports copies, or
    /// `None` when an inventory saw the label on real series.
    pub when: Option<&'static str>,
}

impl Copies {
    /// Whether `name`'s series are per-process copies: an inventory that saw series says so by
    /// their labels; the catalog, by the version of the inventory's engine.
    pub fn of(
        inv: &Inventories,
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
        let spec = names::inventory_spec(inv, family.exporter)?;
        let p = family.per_process_at(spec.version)?;
        Some(Copies {
            name: name.to_owned(),
            label: p.label.to_owned(),
            when: Some(p.when),
        })
    }

    /// Splits `copies` into those an aggregation with `modifier` keeps apart (it keeps their
    /// label) and those it merges (it aggregates across their label).
    pub fn split(
        copies: &[Copies],
        modifier: Option<&LabelModifier>,
    ) -> (Vec<Copies>, Vec<Copies>) {
        let across = |label: &str| match modifier {
            None => true,
            Some(LabelModifier::Include(ls)) => !ls.labels.iter().any(|l| l == label),
            Some(LabelModifier::Exclude(ls)) => ls.labels.iter().any(|l| l == label),
        };
        copies.iter().cloned().partition(|c| !across(&c.label))
    }
}

impl Value {
    pub fn any() -> Value {
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

    pub fn number(v: f64) -> Value {
        Value {
            labels: LabelSet::none(),
            scalar: Some(v),
            ..Value::any()
        }
    }

    pub fn first_name(&self) -> Option<&str> {
        self.sels.first().map(|s| s.name.as_str())
    }

    pub fn is_dcgm(&self) -> bool {
        self.sels
            .iter()
            .any(|s| s.exporter == Some(Exporter::DcgmExporter))
    }

    /// The one catalogued family every selector of the value belongs to (`x_sum / x_count` is
    /// one).
    pub fn family(&self) -> Option<&'static Family> {
        let mut families = self.sels.iter().map(|s| names::family_of(&s.name));
        let first = families.next()??;
        families
            .all(|f| f.is_some_and(|f| f.name == first.name))
            .then_some(first)
    }

    pub fn negated(mut self) -> Value {
        self.scalar = self.scalar.map(|x| -x);
        self
    }

    /// A selector of a present name, with the labels it has (`Any` once a matcher was reported
    /// as selecting nothing: a selector that matches nothing says nothing more about its labels).
    pub fn selected(sel: Sel, labels: LabelSet, copies: Option<Copies>) -> Value {
        Value {
            labels,
            unit: units::of_name(&sel.name),
            raw: if sel.is_counterish() {
                vec![sel.name.clone()]
            } else {
                Vec::new()
            },
            sels: vec![sel],
            copies: copies.into_iter().collect(),
            ..Value::any()
        }
    }

    /// A selector of a name no inventory has. It is kept as raw, so what is wrong besides the
    /// name (a lifetime mean, a ratio of counters) is still said.
    pub fn absent(sel: Sel) -> Value {
        let name = &sel.name;
        let raw = ["_total", "_sum", "_count"]
            .iter()
            .any(|s| name.ends_with(s))
            .then(|| name.clone());
        Value {
            unit: units::of_name(name),
            raw: raw.into_iter().collect(),
            sels: vec![sel],
            ..Value::any()
        }
    }

    /// A selector of a name of producer `p`, which no inventory covers. NIM exports vLLM's
    /// names without the prefix: what they mean is vLLM's, so the meaning-level rules (a
    /// fraction's thresholds, a counter's rate) still apply.
    pub fn uncovered(mut sel: Sel, p: &Producer) -> Value {
        let name = sel.name.clone();
        let mirror = (p.name == NIM.name).then(|| format!("vllm:{name}"));
        if let Some((family, suffix)) = mirror.as_deref().and_then(catalog::resolve) {
            sel.kind = Some(family.kind);
            sel.suffix = Some(suffix);
        }
        Value {
            unit: units::of_name(&name).or_else(|| mirror.as_deref().and_then(units::of_name)),
            sels: vec![sel],
            raw: if name.ends_with("_total") {
                vec![name]
            } else {
                Vec::new()
            },
            ..Value::any()
        }
    }

    /// `op by (…) (inner)`, with the copies the aggregation keeps apart.
    pub fn aggregated(
        op: &str,
        inner: Value,
        modifier: Option<&LabelModifier>,
        kept: Vec<Copies>,
    ) -> Value {
        let counts = matches!(op, "count" | "count_values" | "group");
        let keeps_level = matches!(op, "max" | "min" | "avg" | "topk" | "bottomk");
        Value {
            labels: grouped_labels(op, &inner.labels, modifier),
            unit: units::through_aggregation(op, inner.unit),
            summed_fraction: summed_fraction(op, &inner, modifier, counts),
            raw: if counts { Vec::new() } else { inner.raw },
            sels: inner.sels,
            scalar: None,
            sum_rates: if counts { Vec::new() } else { inner.sum_rates },
            quantile_of: if keeps_level { inner.quantile_of } else { None },
            copies: kept,
        }
    }

    /// `lhs op rhs` (`comparison`: a comparison operator); `lifetime` is the `x_sum / x_count`
    /// pair it divides without rate(), whose raw names the division consumes.
    pub fn joined(
        op: &str,
        comparison: bool,
        modifier: Option<&BinModifier>,
        lhs: Value,
        rhs: Value,
        lifetime: Option<&(String, String)>,
    ) -> Value {
        let j = Join {
            op,
            comparison,
            lhs: &lhs,
            rhs: &rhs,
        };
        Value {
            labels: result_labels(&lhs, &rhs, modifier, op),
            unit: j.unit(modifier),
            raw: j.raw(lifetime),
            scalar: j.scalar(),
            sum_rates: j.sum_rates(),
            quantile_of: None,
            summed_fraction: j.summed_fraction(),
            copies: j.copies(),
            sels: lhs.sels.into_iter().chain(rhs.sels).collect(),
        }
    }

    /// `histogram_quantile(q, buckets)`: the quantile, in the histogram's unit.
    pub fn quantile(args: &[Value]) -> Value {
        let (Some(_), Some(v)) = (args.first(), args.get(1)) else {
            return Value::any();
        };
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
            quantile_of: v.family().map(|f| f.name.to_owned()),
            ..Value::any()
        }
    }

    /// A call of any function but `histogram_quantile`: the value of its first vector argument,
    /// as the function changes it.
    pub fn called(c: &Call, args: Vec<Value>) -> Value {
        let func = c.func.name;
        let first = args
            .into_iter()
            .find(|a| a.scalar.is_none())
            .unwrap_or_else(Value::any);
        match func {
            "rate" | "irate" | "increase" => Value {
                sum_rates: first.histogram_sums(),
                ..first.rated(None)
            },
            "delta" | "idelta" | "deriv" | "resets" | "changes" | "count_over_time"
            | "present_over_time" => first.rated(None),
            "absent" | "absent_over_time" => Value::any(),
            "vector" | "time" | "pi" => Value::number(0.0),
            "timestamp" => first.rated(Some(Unit::Timestamp)),
            "label_replace" | "label_join" => {
                let dst = c.args.args.get(1).and_then(|a| string_arg(a));
                first.relabelled(dst)
            }
            _ => Value {
                unit: units::through_function(func, first.unit),
                ..first
            },
        }
    }

    /// The histogram `_sum` series feeding the value.
    fn histogram_sums(&self) -> Vec<String> {
        self.sels
            .iter()
            .filter(|s| s.is_histogram_sum())
            .map(|s| s.name.clone())
            .collect()
    }

    /// The value with the label `dst` added (`label_replace`, `label_join`).
    fn relabelled(self, dst: Option<String>) -> Value {
        Value {
            labels: self.labels.with(&LabelSet::of(dst, false)),
            ..self
        }
    }

    /// What a function over samples in time makes of the value: no raw counter is left, and
    /// the unit is `unit`.
    fn rated(self, unit: Option<Unit>) -> Value {
        Value {
            unit,
            raw: Vec::new(),
            ..self
        }
    }
}

/// The label names left by aggregation `op` with `modifier`.
fn grouped_labels(op: &str, inner: &LabelSet, modifier: Option<&LabelModifier>) -> LabelSet {
    let labels = match modifier {
        Some(LabelModifier::Include(ls)) => inner.only(&ls.labels),
        Some(LabelModifier::Exclude(ls)) => {
            let drop: Vec<&str> = ls.labels.iter().map(String::as_str).collect();
            inner.without(&drop)
        }
        None => LabelSet::none(),
    };
    match op {
        "count_values" => labels.with(&LabelSet::Any),
        _ => labels,
    }
}

/// The engine fraction a `sum` adds across engines (or that one below it did).
fn summed_fraction(
    op: &str,
    inner: &Value,
    modifier: Option<&LabelModifier>,
    counts: bool,
) -> Option<String> {
    match op {
        "sum" if sums_engine_fraction(inner, modifier) => inner.first_name().map(str::to_owned),
        _ if counts => None,
        _ => inner.summed_fraction.clone(),
    }
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

/// One binary operation, for what its value carries from each side.
struct Join<'a> {
    op: &'a str,
    comparison: bool,
    lhs: &'a Value,
    rhs: &'a Value,
}

impl Join<'_> {
    /// A filtering comparison keeps the compared side's unit; arithmetic and `bool` change it.
    fn unit(&self, modifier: Option<&BinModifier>) -> Option<Unit> {
        if self.comparison && !modifier.is_some_and(|m| m.return_bool) {
            self.lhs.unit.or(self.rhs.unit)
        } else {
            units::through_arithmetic(self.op, self.lhs, self.rhs)
        }
    }

    fn raw(&self, lifetime: Option<&(String, String)>) -> Vec<String> {
        let raw: Vec<String> = match self.op {
            _ if self.comparison => Vec::new(),
            "and" | "unless" => self.lhs.raw.clone(),
            _ => self.both(|v| &v.raw),
        };
        match lifetime {
            Some((sum, count)) => raw.into_iter().filter(|n| n != sum && n != count).collect(),
            None => raw,
        }
    }

    fn scalar(&self) -> Option<f64> {
        match (self.lhs.scalar, self.rhs.scalar) {
            (Some(_), Some(_)) => Some(0.0),
            _ => None,
        }
    }

    fn sum_rates(&self) -> Vec<String> {
        match self.op {
            "/" if self.rhs.scalar.is_none() => Vec::new(),
            _ if self.comparison => self.lhs.sum_rates.clone(),
            "and" | "unless" => self.lhs.sum_rates.clone(),
            _ => self.both(|v| &v.sum_rates),
        }
    }

    fn summed_fraction(&self) -> Option<String> {
        match self.op {
            "/" => None,
            "and" | "unless" => self.lhs.summed_fraction.clone(),
            _ => self
                .lhs
                .summed_fraction
                .clone()
                .or_else(|| self.rhs.summed_fraction.clone()),
        }
    }

    fn copies(&self) -> Vec<Copies> {
        match self.op {
            "and" | "unless" => self.lhs.copies.clone(),
            _ => self.both(|v| &v.copies),
        }
    }

    fn both<T: Clone>(&self, part: impl Fn(&Value) -> &Vec<T>) -> Vec<T> {
        part(self.lhs)
            .iter()
            .chain(part(self.rhs))
            .cloned()
            .collect()
    }
}

/// `x_sum / x_count` of one family with neither under rate()/increase(): their raw names.
pub fn lifetime_pair(lhs: &Value, rhs: &Value) -> Option<(String, String)> {
    lhs.raw.iter().find_map(|sum| {
        let stem = sum.strip_suffix("_sum")?;
        let count = format!("{stem}_count");
        rhs.raw.contains(&count).then(|| (sum.clone(), count))
    })
}

fn result_labels(lhs: &Value, rhs: &Value, m: Option<&BinModifier>, op: &str) -> LabelSet {
    if lhs.scalar.is_some() {
        return rhs.labels.clone();
    }
    if rhs.scalar.is_some() || matches!(op, "and" | "unless") {
        return lhs.labels.clone();
    }
    if op == "or" {
        return lhs.labels.with(&rhs.labels);
    }
    match m {
        Some(m) => matched_labels(lhs, rhs, m),
        None => lhs.labels.clone(),
    }
}

/// The labels of a vector match: `group_left (…)`/`group_right (…)` add the named ones from
/// the other side, `on (…)` keeps only those, `ignoring (…)` drops those.
fn matched_labels(lhs: &Value, rhs: &Value, m: &BinModifier) -> LabelSet {
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

fn string_arg(e: &Expr) -> Option<String> {
    match e {
        Expr::StringLiteral(s) => Some(s.val.clone()),
        _ => None,
    }
}
