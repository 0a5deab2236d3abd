//! `ignored-variable`: a dashboard variable that panels filter on while others over the same
//! metrics ignore it: those panels show every value whatever is chosen. A query that matches
//! the variable's label on a value of its own (`namespace="$baseline"` beside
//! `namespace="$llm_d"` in a dashboard comparing two deployments) chose what it shows; it does
//! not ignore the variable (issue 13: llm-d's baseline-compare.json).

use crate::finding::{Finding, Rule, Severity};
use crate::input::Query;
use crate::input::grafana::uses;
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::fact::VariableFact;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct IgnoredVariable;

impl RuleInfo for IgnoredVariable {
    const ID: &'static str = "ignored-variable";
    const SUMMARY: &'static str = "a dashboard variable that most panels filter on and some ignore";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/sglang-dashboard.json");
}

impl Lint for IgnoredVariable {
    fn check(&self, fact: &Fact<'_>, _: &Scope<'_>, out: &mut Hits) {
        let Fact::Variable(v) = fact else {
            return;
        };
        if !filters(v) {
            return;
        }
        let ignoring = ignoring(v);
        if ignoring.is_empty() {
            return;
        }
        let name = v.name;
        let mut titles: Vec<&str> = ignoring.iter().filter_map(|q| panel_title(q)).collect();
        titles.dedup();
        let shown = titles
            .iter()
            .take(3)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        let f = Finding::new(
            Rule::IgnoredVariable,
            Severity::Warning,
            format!(
                "{} queries filter on `${name}`, but {} over the same metrics ignore it ({shown}{}): those panels show every value whatever is chosen",
                v.using.len(),
                ignoring.len(),
                if titles.len() > 3 { ", …" } else { "" }
            ),
        )
        .suggest(format!("add the same ${name} matcher to those queries, or say in their titles that they cover all"));
        out.push(v.located(f), None);
    }
}

/// Whether some query that uses the variable filters on it (as a label value).
fn filters(v: &VariableFact<'_>) -> bool {
    let name = v.name;
    v.using.iter().any(|q| {
        q.text.contains(&format!("\"${name}\""))
            || q.text.contains(&format!("\"${{{name}}}\""))
            || q.text.contains(&format!("~\"${name}"))
            || q.text.contains(&format!("\"${{{name}:"))
    })
}

/// The panel queries over the same metrics (by namespace) as those using the variable that
/// neither use it nor match a label the users select with it.
fn ignoring<'a>(v: &VariableFact<'a>) -> Vec<&'a Query> {
    let spaces: Vec<String> = v.using.iter().filter_map(|q| namespace(q)).collect();
    let selected = selected_labels(v.using, v.name);
    v.others
        .iter()
        .copied()
        .filter(|q| namespace(q).is_some_and(|n| spaces.contains(&n)))
        .filter(|q| {
            !crate::promql::label_matchers(&q.parsed)
                .iter()
                .any(|(l, _)| selected.contains(l))
        })
        .collect()
}

/// The engine or exporter namespace of a query's first metric (`vllm`, `sglang`, `tgi`, …).
fn namespace(q: &Query) -> Option<String> {
    let name = crate::promql::metric_names(&q.parsed).into_iter().next()?;
    Some(match name.split_once(':') {
        Some((ns, _)) => ns.to_owned(),
        None => name.split('_').next().unwrap_or_default().to_owned(),
    })
}

/// The labels whose matchers take the value of variable `name` (`namespace` for
/// `{namespace="$ns"}`) in the queries that use it.
fn selected_labels(using: &[&Query], name: &str) -> Vec<String> {
    let mut out: Vec<String> = using
        .iter()
        .flat_map(|q| crate::promql::label_matchers(&q.parsed))
        .filter(|(_, value)| uses(value, name))
        .map(|(label, _)| label)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The panel's title in a query's context (`panel "KV" (timeseries), query A` → `"KV"`).
fn panel_title(q: &Query) -> Option<&str> {
    let c = q.location.context.as_deref()?;
    Some(
        c.split(" (")
            .next()
            .unwrap_or(c)
            .trim_start_matches("panel "),
    )
}
