//! `other-dialect`: an expression in MetricsQL (VictoriaMetrics), not PromQL — named, not
//! linted. An aggregation over a range vector is either dialect's (MetricsQL allows it,
//! Prometheus rejects it), so it is a warning naming both.

use crate::finding::{Finding, Rule, Severity};
use crate::promql::dialect::Foreign;
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct OtherDialect;

impl RuleInfo for OtherDialect {
    const ID: &'static str = "other-dialect";
    const SUMMARY: &'static str =
        "an expression in MetricsQL (VictoriaMetrics), not PromQL: named, not linted";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/vm-alerts-vmanomaly.yml");
}

impl Lint for OtherDialect {
    fn check(&self, fact: &Fact<'_>, _: &Scope<'_>, out: &mut Hits) {
        let Fact::Unparsed(u) = fact else {
            return;
        };
        let f = match &u.foreign {
            Some(Foreign::MetricsQl(what)) => Finding::new(
                Rule::OtherDialect,
                Severity::Info,
                format!("MetricsQL (VictoriaMetrics), not PromQL: {what} is not in PromQL, so this expression is not linted"),
            )
            .suggest("lint it against VictoriaMetrics (vmalert -dryRun), or keep a PromQL form of it for Prometheus datasources"),
            Some(Foreign::RangeAggregation) => Finding::new(
                Rule::OtherDialect,
                Severity::Warning,
                "not PromQL: it aggregates a range vector (like `sum(x[5m])`), which MetricsQL (VictoriaMetrics) allows and Prometheus rejects, so this expression is not linted",
            )
            .suggest("for Prometheus, aggregate a rollup of the range (`sum(sum_over_time(x[5m]))`); for VictoriaMetrics, lint it with vmalert -dryRun"),
            None => return,
        };
        out.push(f, None);
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::{Rule, Severity};
    use crate::rules::testing::*;

    #[test]
    fn metricsql_is_named_not_a_parse_error() {
        let f = run("range_median(rate(vllm:generation_tokens_total[5m]))", true);
        assert_eq!(rules(&f), vec![Rule::OtherDialect], "{f:#?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].message.contains("MetricsQL"), "{}", f[0].message);
        assert!(f[0].message.contains("`range_median`"), "{}", f[0].message);
        // Broken PromQL stays a parse error.
        let f = run("sum(rate(vllm:generation_tokens_total[5m])", true);
        assert_eq!(rules(&f), vec![Rule::ParseError], "{f:#?}");
        // An aggregation over a range (VictoriaMetrics' vmanomaly alerts do it): either dialect.
        let f = run("sum(vllm:num_requests_running[5m]) by (pod)", false);
        assert_eq!(rules(&f), vec![Rule::OtherDialect], "{f:#?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message.contains("Prometheus rejects"),
            "{}",
            f[0].message
        );
    }
}
