//! `unused-variable`: a dashboard variable that no panel (and no other variable) uses: choosing
//! a value changes nothing.

use crate::finding::{Finding, Rule, Severity};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct UnusedVariable;

impl RuleInfo for UnusedVariable {
    const ID: &'static str = "unused-variable";
    const SUMMARY: &'static str = "a dashboard variable that no panel uses";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/vllm-query-statistics-51dacb5.json");
}

impl Lint for UnusedVariable {
    fn check(&self, fact: &Fact<'_>, _: &Scope<'_>, out: &mut Hits) {
        let Fact::Variable(v) = fact else {
            return;
        };
        // A dashboard without panel queries uses its variables elsewhere, if at all.
        if !v.using.is_empty() || v.by_variables || v.others.is_empty() {
            return;
        }
        let name = v.name;
        let f = Finding::new(
            Rule::UnusedVariable,
            Severity::Warning,
            format!("the variable `${name}` is defined, but no panel or other variable uses it: choosing a value changes nothing"),
        )
        .suggest(format!("filter the panels on it (e.g. {{…=~\"${name}\"}}), or remove it"));
        out.push(v.located(f), None);
    }
}
