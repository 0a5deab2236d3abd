//! The walk over one parsed expression. [`check`] walks the AST bottom-up and infers a
//! [`Value`] per node (its label names, unit, the raw counters and selectors feeding it: see
//! [`super::value`]); at each place where a rule may have something to say it hands the rules
//! ([`crate::rules`]) a [`Fact`]: names and matchers at selectors, `by`/`without` labels and
//! merged copies at aggregations, both sides at binary operators, the arguments at calls, raw
//! counters where they are used, and the whole value at the root. The walk itself says nothing.

use super::dialect;
use super::labels::{LabelSet, VAR_PREFIX, selects_something};
use super::names;
use super::parse::PromqlError;
use super::value::{Copies, Sel, Value, lifetime_pair};
use crate::finding::Finding;
use crate::inventory::{Inventories, MetricInfo};
use crate::rules::fact::{
    AggregateFact, BinaryFact, CallFact, GroupingFact, MatcherFact, ModifierFact, RawCounters,
    SelectorFact, Unparsed, Use,
};
use crate::rules::{self, Fact, Hits, Lint, Scope};
use llmscope_catalog::Family;
use llmscope_catalog::producers::producer_of;
use promql_parser::label::{MatchOp, Matcher};
use promql_parser::parser::{AggregateExpr, BinaryExpr, Call, Expr, LabelModifier, VectorSelector};
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

/// Runs every rule over `expr`.
pub fn check(expr: &Expr, inv: &Inventories, cx: Context<'_>) -> Vec<Hit> {
    check_with(expr, inv, cx, rules::ALL)
}

/// Runs `rules` over `expr`.
pub(crate) fn check_with(
    expr: &Expr,
    inv: &Inventories,
    cx: Context<'_>,
    rules: &[&dyn Lint],
) -> Vec<Hit> {
    let scope = Scope::new(inv, cx);
    let mut w = Walk {
        scope: &scope,
        rules,
        hits: Hits::distinct(),
    };
    let root = w.expr(expr);
    w.say(&Fact::Raw(&RawCounters {
        names: &root.raw,
        used: Use::Root,
    }));
    w.say(&Fact::Root(&root));
    w.hits.into_hits()
}

/// Runs `rules` over `text`, which did not parse with `error` (`refused`: Prometheus refuses it,
/// though `promql-parser` would read it; [`super::prom3::Lowered::refused`]).
pub(crate) fn check_unparsed(
    text: &str,
    error: &PromqlError,
    refused: bool,
    inv: &Inventories,
    cx: Context<'_>,
    rules: &[&dyn Lint],
) -> Vec<Hit> {
    let fact = Unparsed {
        text,
        error,
        refused,
        foreign: dialect::foreign(text, error, refused),
    };
    let mut hits = Hits::distinct();
    rules::judge(
        rules,
        &Fact::Unparsed(&fact),
        &Scope::new(inv, cx),
        &mut hits,
    );
    hits.into_hits()
}

/// Runs `rules` over the range modifiers [`super::prom3::lower`] took out of an expression.
pub(crate) fn check_modifiers(
    modifiers: &[(usize, &'static str)],
    inv: &Inventories,
    rules: &[&dyn Lint],
) -> Vec<Hit> {
    let scope = Scope::new(inv, Context::default());
    let mut hits = Hits::distinct();
    for &(offset, word) in modifiers {
        rules::judge(
            rules,
            &Fact::Modifier(&ModifierFact { word, offset }),
            &scope,
            &mut hits,
        );
    }
    hits.into_hits()
}

struct Walk<'a> {
    scope: &'a Scope<'a>,
    rules: &'a [&'a dyn Lint],
    hits: Hits,
}

impl Walk<'_> {
    fn say(&mut self, fact: &Fact<'_>) {
        rules::judge(self.rules, fact, self.scope, &mut self.hits);
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
            Expr::Unary(u) => self.expr(&u.expr).negated(),
            Expr::NumberLiteral(n) => Value::number(n.val),
            Expr::StringLiteral(_) | Expr::Extension(_) => Value::any(),
        }
    }

    // ---- selectors -------------------------------------------------------------------------

    fn selector(&mut self, vs: &VectorSelector) -> Value {
        let Some(name) = selector_name(vs) else {
            return Value::any();
        };
        let inv = self.scope.inv;
        if name.starts_with(VAR_PREFIX) || names::is_synthetic(&name) || inv.is_recorded(&name) {
            return Value::any();
        }
        let catalogued = names::family_of(&name);
        let info = inv.metric(&name);
        let uncovered = match (&info, catalogued) {
            (None, None) => producer_of(&name).filter(|p| !self.scope.covers(p)),
            _ => None,
        };
        self.say(&Fact::Selector(&SelectorFact::new(
            &name,
            info.as_ref(),
            uncovered,
        )));
        let sel = Sel::of(&name, info.as_ref(), catalogued);
        match (info, uncovered) {
            (Some(info), _) => self.present(vs, sel, &info, catalogued),
            (None, Some(p)) => Value::uncovered(sel, p),
            (None, None) => Value::absent(sel),
        }
    }

    /// A selector of a name some inventory has: each of its matchers, then its value.
    fn present(
        &mut self,
        vs: &VectorSelector,
        sel: Sel,
        info: &MetricInfo,
        catalogued: Option<&'static Family>,
    ) -> Value {
        let inv = self.scope.inv;
        let set = LabelSet::of(info.labels.iter().cloned(), inv.adds_target_labels());
        let mut empty = false;
        for m in matchers(vs) {
            if m.name == "__name__" || m.name.starts_with(VAR_PREFIX) {
                continue;
            }
            self.say(&Fact::Matcher(&MatcherFact {
                name: &sel.name,
                info,
                matcher: m,
                labels: &set,
                exporter: sel.exporter,
            }));
            // A matcher that must match a label the metric lacks selects nothing.
            empty |= !set.has(&m.name) && selects_something(m);
        }
        let labels = if empty { LabelSet::Any } else { set };
        let copies = Copies::of(inv, &sel.name, info, catalogued);
        Value::selected(sel, labels, copies)
    }

    // ---- aggregations ----------------------------------------------------------------------

    fn aggregate(&mut self, a: &AggregateExpr) -> Value {
        let op = a.op.to_string();
        if let Some(p) = &a.param {
            self.expr(p);
        }
        let inner = self.expr(&a.expr);
        let modifier = a.modifier.as_ref();
        self.grouping(&inner, modifier);
        let (kept, merged) = Copies::split(&inner.copies, modifier);
        self.say(&Fact::Aggregate(&AggregateFact {
            op: &op,
            expr: a,
            inner: &inner,
            merged: &merged,
        }));
        Value::aggregated(&op, inner, modifier, kept)
    }

    /// The labels of `by (…)`/`without (…)`, each a fact.
    fn grouping(&mut self, inner: &Value, modifier: Option<&LabelModifier>) {
        let (labels, by) = match modifier {
            Some(LabelModifier::Include(ls)) => (&ls.labels, true),
            Some(LabelModifier::Exclude(ls)) => (&ls.labels, false),
            None => return,
        };
        let Some(name) = inner.first_name() else {
            return;
        };
        for label in labels {
            self.say(&Fact::Grouping(&GroupingFact {
                name,
                label,
                inner,
                by,
            }));
        }
    }

    // ---- binary operators ------------------------------------------------------------------

    fn binary(&mut self, b: &BinaryExpr) -> Value {
        let start = self.hits.len();
        let lhs = self.expr(&b.lhs);
        let mid = self.hits.len();
        let rhs = self.expr(&b.rhs);
        let arms = [start..mid, mid..self.hits.len()];
        self.joined(b, lhs, rhs, arms)
    }

    /// `lhs op rhs`, both sides walked (`arms`: the hits each side's walk added).
    fn joined(
        &mut self,
        b: &BinaryExpr,
        lhs: Value,
        rhs: Value,
        arms: [std::ops::Range<usize>; 2],
    ) -> Value {
        let op = b.op.to_string();
        let comparison = b.op.is_comparison_operator();
        let lifetime = if op == "/" {
            lifetime_pair(&lhs, &rhs)
        } else {
            None
        };
        self.say(&Fact::Binary(&BinaryFact {
            op: &op,
            comparison,
            lhs: &lhs,
            rhs: &rhs,
            modifier: b.modifier.as_ref(),
            arms,
            lifetime: lifetime.as_ref(),
        }));
        if comparison {
            let raw: Vec<String> = lhs.raw.iter().chain(&rhs.raw).cloned().collect();
            self.say(&Fact::Raw(&RawCounters {
                names: &raw,
                used: Use::Compared(&op),
            }));
        }
        let modifier = b.modifier.as_ref();
        Value::joined(&op, comparison, modifier, lhs, rhs, lifetime.as_ref())
    }

    // ---- function calls --------------------------------------------------------------------

    fn call(&mut self, c: &Call) -> Value {
        let args: Vec<Value> = c.args.args.iter().map(|a| self.expr(a)).collect();
        self.say(&Fact::Call(&CallFact {
            func: c.func.name,
            call: c,
            args: &args,
            range: c.args.args.iter().find_map(|a| range_of(a)),
        }));
        if c.func.name != "histogram_quantile" {
            return Value::called(c, args);
        }
        if let [_, buckets, ..] = args.as_slice() {
            self.say(&Fact::Raw(&RawCounters {
                names: &buckets.raw,
                used: Use::Quantile,
            }));
        }
        Value::quantile(&args)
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

/// Every matcher of a selector, `or`-ed ones included.
fn matchers(vs: &VectorSelector) -> impl Iterator<Item = &Matcher> {
    vs.matchers
        .matchers
        .iter()
        .chain(vs.matchers.or_matchers.iter().flatten())
}

fn range_of(e: &Expr) -> Option<Duration> {
    match e {
        Expr::MatrixSelector(ms) => Some(ms.range),
        Expr::Subquery(s) => Some(s.range),
        _ => None,
    }
}
