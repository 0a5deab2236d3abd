//! `unknown-metric`: a metric name that no inventory has. PromQL returns nothing for it, not an
//! error, so a dashboard panel stays empty and an alert never fires.

use crate::finding::Rule;
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct UnknownMetric;

impl RuleInfo for UnknownMetric {
    const ID: &'static str = "unknown-metric";
    const SUMMARY: &'static str =
        "a metric name that no inventory has (PromQL returns nothing, not an error)";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/vllm-performance-statistics-51dacb5.json");
}

impl Lint for UnknownMetric {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        if let Fact::Selector(s) = fact {
            s.say_absent(scope, Rule::UnknownMetric, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Rule;
    use crate::rules::testing::*;

    #[test]
    fn unknown_metric() {
        let f = only("sum(vllm:num_request_running)", false, Rule::UnknownMetric);
        assert_eq!(
            f.suggestion.as_deref(),
            Some("did you mean vllm:num_requests_running?")
        );
        let f = only(
            r#"{__name__="kueue_quota_reserved_resources"}"#,
            false,
            Rule::UnknownMetric,
        );
        assert!(
            f.suggestion
                .unwrap()
                .contains("kueue_local_queue_resource_reservation")
        );
        clean("sum(vllm:num_requests_running)", false);
        clean(r#"{__name__="vllm:num_requests_running"}"#, false);
        clean("up == 0", false);
    }

    #[test]
    fn recording_rules_count_as_existing() {
        let mut inv = inventories();
        assert_eq!(
            rules(&run_with(&inv, "job:tokens:rate5m > 0", false, None)),
            vec![Rule::UnknownMetric]
        );
        inv.add_recorded(["job:tokens:rate5m".to_owned()]);
        assert!(run_with(&inv, "job:tokens:rate5m > 0", false, None).is_empty());
    }
}
