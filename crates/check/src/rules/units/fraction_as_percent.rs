//! `fraction-as-percent`: a 0..1 fraction on a panel titled as a percent with no unit: 0.45
//! reads as 0.45 %.

use crate::finding::{Finding, Rule, Severity};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};
use llmscope_catalog::Unit;

pub struct FractionAsPercent;

impl RuleInfo for FractionAsPercent {
    const ID: &'static str = "fraction-as-percent";
    const SUMMARY: &'static str =
        "a 0..1 fraction on a panel titled as a percent without a percentunit unit";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/prodstack-vllm-dashboard-2026-05.json");
}

impl Lint for FractionAsPercent {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        let Fact::Root(root) = fact else {
            return;
        };
        if root.unit != Some(Unit::Fraction)
            || !matches!(scope.cx.panel_unit, None | Some("" | "none" | "short"))
        {
            return;
        }
        let title = scope.cx.title.unwrap_or_default().to_ascii_lowercase();
        if !(title.contains('%') || title.contains("percent")) {
            return;
        }
        let name = root.first_name().unwrap_or("the query");
        let f = Finding::new(
            Rule::FractionAsPercent,
            Severity::Warning,
            format!("`{name}` is a 0..1 fraction, but the panel says percent and has no unit: 0.45 reads as 0.45 %"),
        )
        .metric(name)
        .suggest("set the panel unit to `percentunit` (or multiply by 100 and use `percent`)");
        out.push(f, Some(name));
    }
}
