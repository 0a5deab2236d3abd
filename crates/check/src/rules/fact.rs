//! What a rule sees: one [`Fact`] per place where something may be wrong, read-only and
//! complete for that place, judged in a [`Scope`] (the inventories, and what the expression is
//! for); what the rule finds goes into [`Hits`].
//!
//! The walk over an expression ([`crate::promql::analyze`]) gives, bottom-up: a
//! [`SelectorFact`] per metric selector, then a [`MatcherFact`] per label matcher of a present
//! name; a [`GroupingFact`] per `by`/`without` label, then an [`AggregateFact`]; a
//! [`BinaryFact`]; a [`CallFact`]; [`RawCounters`] wherever raw counters are used (compared,
//! fed to `histogram_quantile`, at the root); and last [`Fact::Root`]. An expression that does
//! not parse gives one [`Unparsed`]. The readers give what only a whole file shows: a
//! [`VariableFact`] per dashboard variable, and [`Fact::Source`] per file checked.
//!
//! Facts are read-only. Two things are shared rather than inferred by the walk: the verdict on
//! an absent name ([`SelectorFact::absent`], worked out once for the three name rules), and the
//! hits said so far, which one rule revises (`fallback-changes-meaning` turns what was said about
//! a version fallback's missing arm into an info: [`Hits::said_mut`]).

use crate::finding::{Finding, Location, Rule};
use crate::input::{Query, Source};
use crate::inventory::{Inventories, MetricInfo};
use crate::promql::analyze::{Context, Hit};
use crate::promql::dialect::Foreign;
use crate::promql::labels::LabelSet;
use crate::promql::names;
use crate::promql::parse::{PromqlError, line_col};
use crate::promql::value::{Copies, Value};
use llmscope_catalog::Exporter;
use llmscope_catalog::producers::{Producer, producer_of};
use promql_parser::label::Matcher;
use promql_parser::parser::{AggregateExpr, BinModifier, Call};
use std::cell::OnceCell;
use std::collections::BTreeSet;
use std::ops::Range;
use std::time::Duration;

/// One place a rule may have something to say about.
#[derive(Debug)]
pub enum Fact<'a> {
    Unparsed(&'a Unparsed<'a>),
    Selector(&'a SelectorFact<'a>),
    Matcher(&'a MatcherFact<'a>),
    Grouping(&'a GroupingFact<'a>),
    Aggregate(&'a AggregateFact<'a>),
    Binary(&'a BinaryFact<'a>),
    Call(&'a CallFact<'a>),
    /// A range modifier Prometheus reads only behind a feature flag, taken out before parsing.
    Modifier(&'a ModifierFact),
    Raw(&'a RawCounters<'a>),
    /// The value of the whole expression, as the panel or rule shows it.
    Root(&'a Value),
    Variable(&'a VariableFact<'a>),
    /// A file checked, after its expressions.
    Source(&'a Source),
}

/// What facts are judged against.
#[derive(Debug)]
pub struct Scope<'a> {
    /// The inventories (none for a dashboard's variables, judged as the file is read).
    pub inv: &'a Inventories,
    /// What the expression is for (a default one for a file's own facts).
    pub cx: Context<'a>,
    /// Producers some inventory has names of (computed on first use).
    covered: OnceCell<BTreeSet<&'static str>>,
}

impl<'a> Scope<'a> {
    pub fn new(inv: &'a Inventories, cx: Context<'a>) -> Scope<'a> {
        Scope {
            inv,
            cx,
            covered: OnceCell::new(),
        }
    }

    /// Whether some inventory has names of producer `p` (then a name of it that is absent is
    /// really absent).
    pub fn covers(&self, p: &Producer) -> bool {
        let covered = self.covered.get_or_init(|| {
            self.inv
                .names()
                .iter()
                .filter_map(|n| producer_of(n))
                .map(|p| p.name)
                .collect()
        });
        covered.contains(p.name)
    }
}

/// An expression that does not parse.
#[derive(Debug)]
pub struct Unparsed<'a> {
    pub text: &'a str,
    pub error: &'a PromqlError,
    /// Prometheus refuses it, though `promql-parser` reads it ([`crate::promql::prom3`]).
    pub refused: bool,
    /// The dialect it is written in instead, if it is.
    pub foreign: Option<Foreign>,
}

/// A selector of a metric name — not a Grafana variable, a name Prometheus makes up, or one a
/// recording rule in the checked files produces.
#[derive(Debug)]
pub struct SelectorFact<'a> {
    pub name: &'a str,
    /// What the inventories know of it; `None`: no inventory has it.
    pub info: Option<&'a MetricInfo>,
    /// The producer of a name no inventory has and no catalog owns, when no inventory covers
    /// that producer (then the name cannot be judged at all).
    pub uncovered: Option<&'static Producer>,
    /// The verdict on an absent name, worked out once for the rules that share it.
    absent: OnceCell<Finding>,
}

impl<'a> SelectorFact<'a> {
    pub fn new(
        name: &'a str,
        info: Option<&'a MetricInfo>,
        uncovered: Option<&'static Producer>,
    ) -> Self {
        SelectorFact {
            name,
            info,
            uncovered,
            absent: OnceCell::new(),
        }
    }

    /// What is wrong with a name no inventory has, from its producer that some inventory does
    /// cover: [`names::absent_name`]'s verdict, whose rule is `unknown-metric`,
    /// `renamed-metric` or `uncovered-producer`. `None` for a present or uncovered name.
    pub fn absent(&self, inv: &Inventories) -> Option<&Finding> {
        if self.info.is_some() || self.uncovered.is_some() {
            return None;
        }
        Some(
            self.absent
                .get_or_init(|| names::absent_name(inv, self.name)),
        )
    }

    /// Says the verdict on an absent name ([`SelectorFact::absent`]) when it is `rule`'s.
    pub fn say_absent(&self, scope: &Scope<'_>, rule: Rule, out: &mut Hits) {
        if let Some(f) = self.absent(scope.inv).filter(|f| f.rule == rule) {
            out.push(f.clone(), Some(self.name));
        }
    }
}

/// One label matcher of a selector whose name an inventory has (`__name__` and matchers on a
/// Grafana variable's placeholder label excepted).
#[derive(Debug)]
pub struct MatcherFact<'a> {
    pub name: &'a str,
    pub info: &'a MetricInfo,
    pub matcher: &'a Matcher,
    /// The labels the metric's series can carry.
    pub labels: &'a LabelSet,
    pub exporter: Option<Exporter>,
}

/// One label of an aggregation's `by (…)` or `without (…)`, over a value with a metric name.
#[derive(Debug)]
pub struct GroupingFact<'a> {
    /// The first metric name feeding the aggregation.
    pub name: &'a str,
    pub label: &'a str,
    pub inner: &'a Value,
    /// `by` (the label must be there to group by it), not `without`.
    pub by: bool,
}

/// An aggregation (`sum`, `avg`, `count`, …).
#[derive(Debug)]
pub struct AggregateFact<'a> {
    pub op: &'a str,
    /// The aggregation as written: its grouping (`by`/`without`) and its argument.
    pub expr: &'a AggregateExpr,
    pub inner: &'a Value,
    /// The per-process copies it merges: it aggregates across the label that tells them apart.
    pub merged: &'a [Copies],
}

/// A binary operation.
#[derive(Debug)]
pub struct BinaryFact<'a> {
    pub op: &'a str,
    pub comparison: bool,
    pub lhs: &'a Value,
    pub rhs: &'a Value,
    pub modifier: Option<&'a BinModifier>,
    /// Which of the hits so far each side's walk added (left, right).
    pub arms: [Range<usize>; 2],
    /// `x_sum / x_count` of one family, neither under rate(): the raw names.
    pub lifetime: Option<&'a (String, String)>,
}

/// A function call, its arguments' values inferred.
#[derive(Debug)]
pub struct CallFact<'a> {
    pub func: &'a str,
    pub call: &'a Call,
    pub args: &'a [Value],
    /// The range of its first range-vector or subquery argument.
    pub range: Option<Duration>,
}

/// A range modifier (`anchored`, `smoothed`) at a byte offset of the expression.
#[derive(Debug)]
pub struct ModifierFact {
    pub word: &'static str,
    pub offset: usize,
}

/// Raw counters (no rate()/increase() on the way) where a value is used.
#[derive(Debug)]
pub struct RawCounters<'a> {
    pub names: &'a [String],
    pub used: Use<'a>,
}

/// Where a value is used.
#[derive(Debug, Clone, Copy)]
pub enum Use<'a> {
    /// The whole expression's value, as shown (drawn when the context is a graph).
    Root,
    /// Compared by operator `op`.
    Compared(&'a str),
    /// Fed to `histogram_quantile` as its buckets.
    Quantile,
}

/// A dashboard variable a panel can use (query, custom, textbox, constant or interval; not a
/// built-in `__…`).
#[derive(Debug)]
pub struct VariableFact<'a> {
    pub name: &'a str,
    /// The panel queries that use it, in their text, title or panel context.
    pub using: &'a [&'a Query],
    /// The panel queries that do not.
    pub others: &'a [&'a Query],
    /// Whether another variable's definition uses it.
    pub by_variables: bool,
    /// The dashboard's file and text, where the variable is defined.
    pub file: &'a str,
    pub content: &'a str,
}

impl VariableFact<'_> {
    /// `f`, placed at the variable: the file, `variable $name`, and the line of its definition.
    pub fn located(&self, mut f: Finding) -> Finding {
        let name = self.name;
        f.location = Location {
            file: self.file.to_owned(),
            context: Some(format!("variable ${name}")),
            line: self
                .content
                .find(&format!("\"name\": \"{name}\""))
                .map(|at| line_col(self.content, at).0),
            ..Location::default()
        };
        f
    }
}

/// The findings of one run, in the order said, each with the text to underline.
#[derive(Debug, Default)]
pub struct Hits {
    list: Vec<Hit>,
    /// A hit already said is not said again (within one expression).
    distinct: bool,
}

impl Hits {
    /// Hits of one expression, where a hit already said is not said again.
    pub fn distinct() -> Hits {
        Hits {
            list: Vec::new(),
            distinct: true,
        }
    }

    /// Says `finding`; `needle` is the text to underline in the expression.
    pub fn push(&mut self, finding: Finding, needle: Option<&str>) {
        let hit = Hit {
            finding,
            needle: needle.map(str::to_owned),
        };
        if !(self.distinct && self.list.contains(&hit)) {
            self.list.push(hit);
        }
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The hits said at `range` (of [`Hits::len`]s), to revise.
    pub fn said_mut(&mut self, range: Range<usize>) -> &mut [Hit] {
        &mut self.list[range]
    }

    pub fn into_hits(self) -> Vec<Hit> {
        self.list
    }

    pub fn into_findings(self) -> Vec<Finding> {
        self.list.into_iter().map(|h| h.finding).collect()
    }
}
