//! `renamed-metric`: a metric name that the inventory's version renamed, deprecated, hid or
//! removed — absent (an error: the panel is empty) or still there but deprecated (a warning:
//! it goes empty when it is removed).

use crate::finding::Rule;
use crate::promql::names;
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct RenamedMetric;

impl RuleInfo for RenamedMetric {
    const ID: &'static str = "renamed-metric";
    const SUMMARY: &'static str = "a metric name that this version renamed, deprecated or removed";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/prodstack-vllm-dashboard-2026-05.json");
}

impl Lint for RenamedMetric {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        let Fact::Selector(s) = fact else {
            return;
        };
        if s.info.is_none() {
            s.say_absent(scope, Rule::RenamedMetric, out);
        } else if let Some(f) = names::deprecated_name(scope.inv, s.name) {
            out.push(f, Some(s.name));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::{Rule, Severity};
    use crate::rules::testing::*;

    #[test]
    fn renamed_metric() {
        let f = only(
            "max by (pod) (vllm:gpu_cache_usage_perc)",
            false,
            Rule::RenamedMetric,
        );
        assert_eq!(f.severity, Severity::Error);
        assert!(f.suggestion.unwrap().contains("vllm:kv_cache_usage_perc"));
        clean("max by (pod) (vllm:kv_cache_usage_perc)", false);
    }
}
