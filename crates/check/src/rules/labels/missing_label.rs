//! `missing-label`: a label that no series of the metric carries — matched (`{tenant="a"}`),
//! grouped by (`by (team)`), or named in vector matching (`on`, `ignoring`, `group_left`,
//! `group_right`) — and a matched label value no series has. A page or the catalog cannot show
//! what Prometheus adds (target labels, relabelling): against them an unknown label is evidence
//! only when it is a known mistake or a near miss of a label the metric has.

use crate::finding::{Finding, Rule, Severity};
use crate::inventory::MetricInfo;
use crate::promql::labels::{LabelSet, selects_something};
use crate::promql::names;
use crate::promql::value::Value;
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::fact::{BinaryFact, GroupingFact, MatcherFact};
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};
use promql_parser::label::{MatchOp, Matcher};
use promql_parser::parser::{BinModifier, LabelModifier, VectorMatchCardinality};

pub struct MissingLabel;

impl RuleInfo for MissingLabel {
    const ID: &'static str = "missing-label";
    const SUMMARY: &'static str = "a label that no series of the metric carries";
    // Infos: against catalogs a label may come from relabelling.
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/neutree-endpoint-latency.json");
}

impl Lint for MissingLabel {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        match fact {
            Fact::Matcher(m) => matched(m, scope, out),
            Fact::Grouping(g) => grouped(g, scope, out),
            Fact::Binary(b) => vector_matching(b, scope, out),
            _ => {}
        }
    }
}

/// A label used where the metric `name` (with `info`) has only the labels `have`.
struct Missing<'a> {
    name: &'a str,
    label: &'a str,
    info: Option<&'a MetricInfo>,
    have: &'a LabelSet,
    /// Its absence means no series at all (a matcher that must match a value, a `by` label).
    serious: bool,
    /// Where it is used (`is matched`, ``is in `on (pod)` ``).
    how: &'a str,
    /// What to underline.
    needle: &'a str,
}

fn matched(m: &MatcherFact<'_>, scope: &Scope<'_>, out: &mut Hits) {
    let label = m.matcher.name.as_str();
    if m.labels.has(label) {
        unseen_value(m.name, m.info, m.matcher, out);
        return;
    }
    let missing = Missing {
        name: m.name,
        label,
        info: Some(m.info),
        have: m.labels,
        serious: selects_something(m.matcher),
        how: "is matched",
        needle: label,
    };
    say(&missing, scope, out);
}

fn grouped(g: &GroupingFact<'_>, scope: &Scope<'_>, out: &mut Hits) {
    if g.inner.labels.has(g.label) {
        return;
    }
    let info = scope.inv.metric(g.name);
    let how = if g.by { "by" } else { "without" };
    let missing = Missing {
        name: g.name,
        label: g.label,
        info: info.as_ref(),
        have: &g.inner.labels,
        serious: g.by,
        how: &format!("is in `{how} ({})`", g.label),
        needle: g.label,
    };
    say(&missing, scope, out);
}

/// `on (…)`, `ignoring (…)`, `group_left (…)`, `group_right (…)` labels.
fn vector_matching(b: &BinaryFact<'_>, scope: &Scope<'_>, out: &mut Hits) {
    let Some(m) = b.modifier else {
        return;
    };
    let (lhs, rhs) = (b.lhs, b.rhs);
    match &m.matching {
        Some(LabelModifier::Include(ls)) => {
            for l in &ls.labels {
                for side in [lhs, rhs] {
                    side_label(
                        side,
                        l,
                        true,
                        ("on", &format!("is in `on ({l})`")),
                        scope,
                        out,
                    );
                }
            }
        }
        Some(LabelModifier::Exclude(ls)) => {
            for l in ls
                .labels
                .iter()
                .filter(|l| !lhs.labels.has(l) && !rhs.labels.has(l))
            {
                let how = format!("is in `ignoring ({l})`");
                side_label(lhs, l, false, ("ignoring", &how), scope, out);
            }
        }
        None => {}
    }
    group_labels(b, m, scope, out);
}

/// `group_left (…)` labels the right side must have, `group_right (…)` the left.
fn group_labels(b: &BinaryFact<'_>, m: &BinModifier, scope: &Scope<'_>, out: &mut Hits) {
    let (one_side, how) = match &m.card {
        VectorMatchCardinality::ManyToOne(_) => (b.rhs, "group_left"),
        VectorMatchCardinality::OneToMany(_) => (b.lhs, "group_right"),
        _ => return,
    };
    let labels = m.card.labels().map(|ls| ls.labels.as_slice());
    for l in labels.unwrap_or_default() {
        side_label(
            one_side,
            l,
            true,
            (how, &format!("is in `{how} ({l})`")),
            scope,
            out,
        );
    }
}

/// `label` used on one side of a vector match; `(needle, how)` as in [`Missing`].
fn side_label(
    side: &Value,
    label: &str,
    serious: bool,
    (needle, how): (&str, &str),
    scope: &Scope<'_>,
    out: &mut Hits,
) {
    if side.labels.has(label) {
        return;
    }
    let Some(name) = side.first_name() else {
        return;
    };
    let info = scope.inv.metric(name);
    let missing = Missing {
        name,
        label,
        info: info.as_ref(),
        have: &side.labels,
        serious,
        how,
        needle,
    };
    say(&missing, scope, out);
}

fn say(m: &Missing<'_>, scope: &Scope<'_>, out: &mut Hits) {
    let (name, label, how) = (m.name, m.label, m.how);
    let have_names = m.have.names();
    let suggestion = names::label_suggestion(name, label, m.info, &have_names);
    let near_miss = suggestion
        .as_deref()
        .is_some_and(|s| s.starts_with("use `"));
    let partial = scope.inv.adds_target_labels();
    let severity = match (m.serious, partial && !near_miss) {
        (_, true) => Severity::Info,
        (true, false) => Severity::Error,
        (false, false) => Severity::Warning,
    };
    let message = if partial && !near_miss {
        format!(
            "`{label}` {how}, but no series of `{name}` carries it on {}; Prometheus may add it (target labels, relabelling): only a Prometheus inventory can tell",
            scope.inv.sources()
        )
    } else {
        format!(
            "`{label}` {how}, but no series of `{name}` carries it ({})",
            scope.inv.sources()
        )
    };
    let mut f = Finding::new(Rule::MissingLabel, severity, message).metric(name);
    f.suggestion = suggestion;
    out.push(f, Some(m.needle));
}

/// `label="value"` where the inventory saw the label's values and `value` is not among them.
fn unseen_value(name: &str, info: &MetricInfo, m: &Matcher, out: &mut Hits) {
    let Some(shown) = unseen(info, m) else {
        return;
    };
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
    out.push(f, Some(&m.value));
}

/// Up to 8 of the values seen of the label an equality matcher matches on a value none has;
/// `None` when the inventory saw no values of it, or the matcher is no plain value.
fn unseen<'a>(info: &'a MetricInfo, m: &Matcher) -> Option<Vec<&'a str>> {
    let seen = info.values.as_ref()?.get(&m.name)?;
    let plain = m.op == MatchOp::Equal && !m.value.is_empty() && !m.value.contains('$');
    (plain && !seen.contains(&m.value)).then(|| seen.iter().take(8).map(String::as_str).collect())
}

#[cfg(test)]
mod tests {
    use crate::finding::{Rule, Severity};
    use crate::rules::testing::*;

    #[test]
    fn missing_label() {
        let f = only(
            r#"vllm:kv_cache_usage_perc{tenant="a"}"#,
            false,
            Rule::MissingLabel,
        );
        // A page and the catalog cannot show relabelled labels: at most an info (issue 13).
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.message.contains("only a Prometheus inventory"),
            "{}",
            f.message
        );
        let f = only(
            "sum by (team) (kube_namespace_labels)",
            false,
            Rule::MissingLabel,
        );
        assert!(f.suggestion.unwrap().starts_with("use `label_team`"));
        let join = "sum by (namespace) (vllm:num_requests_running) * on (namespace) group_left (team) kube_namespace_labels";
        let f = only(join, false, Rule::MissingLabel);
        assert!(f.message.contains("group_left"), "{}", f.message);
        clean(&join.replace("(team)", "(label_team)"), false);
        clean(
            r#"vllm:kv_cache_usage_perc{pod="vllm-0", model_name="m"}"#,
            false,
        );
        let f = run(
            r#"vllm:request_success_total{finished_reason="success"} > 0"#,
            false,
        );
        assert_eq!(
            rules(&f),
            vec![Rule::MissingLabel, Rule::CounterWithoutRate]
        );
    }

    #[test]
    fn missing_label_value_is_a_warning() {
        let f = run(
            r#"rate(vllm:request_success_total{finished_reason="success"}[5m])"#,
            false,
        );
        assert_eq!(rules(&f), vec![Rule::MissingLabel]);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("length, stop"), "{}", f[0].message);
    }
}
