//! `nothing-checked`: a file in which no expression could be checked (an HPA on adapter
//! metrics names them only) — said, so that a clean result is not mistaken for a checked one.

use crate::finding::{Finding, Rule, Severity};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct NothingChecked;

impl RuleInfo for NothingChecked {
    const ID: &'static str = "nothing-checked";
    const SUMMARY: &'static str = "a file in which no expression could be checked";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/prodstack-hpa-external.yaml");
}

impl Lint for NothingChecked {
    fn check(&self, fact: &Fact<'_>, _: &Scope<'_>, out: &mut Hits) {
        let Fact::Source(src) = fact else {
            return;
        };
        if !src.queries.is_empty() || !src.errors.is_empty() || !src.templated.is_empty() {
            return;
        }
        let file = src
            .findings
            .first()
            .map(|f| f.location.file.clone())
            .or_else(|| src.file.clone())
            .unwrap_or_default();
        let mut f = Finding::new(
            Rule::NothingChecked,
            Severity::Info,
            "nothing in this file could be checked: it holds no PromQL expression llmscope reads (dashboard targets, rule expr, prometheus-adapter metricsQuery/seriesQuery, KEDA prometheus trigger query)",
        )
        .suggest("an HPA on adapter or external metrics names them only: check the adapter config or ScaledObject that defines them");
        f.location.file = file;
        out.push(f, None);
    }
}
