//! `experimental-syntax`: PromQL that Prometheus refuses unless a feature flag is on — its
//! experimental functions and aggregations (`mad_over_time`, `limitk`, `info`, …; flag
//! `promql-experimental-functions`) and the range modifiers `anchored` and `smoothed` (flag
//! `promql-extended-range-selectors`), and `fill`/`fill_left`/`fill_right` on a binary operator
//! (flag `promql-binop-fill-modifiers`). Said with the flag, so a rule or panel that works on one
//! Prometheus is not silently broken on another (it fails to load or query there).

use crate::finding::{Finding, Rule, Severity};
use crate::promql::prom3::{EXPERIMENTAL, FILL_FLAG, FUNCTIONS_FLAG, RANGE_MODIFIERS_FLAG};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct ExperimentalSyntax;

impl RuleInfo for ExperimentalSyntax {
    const ID: &'static str = "experimental-syntax";
    const SUMMARY: &'static str =
        "PromQL that Prometheus parses only behind a feature flag (named)";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("fixtures/promtool-features.yml");
}

impl Lint for ExperimentalSyntax {
    fn check(&self, fact: &Fact<'_>, _: &Scope<'_>, out: &mut Hits) {
        let (what, flag, needle) = match fact {
            Fact::Call(c) if EXPERIMENTAL.contains(&c.func) => (
                format!("`{}()` is an experimental Prometheus function", c.func),
                FUNCTIONS_FLAG,
                c.func.to_owned(),
            ),
            Fact::Aggregate(a) if EXPERIMENTAL.contains(&a.op) => (
                format!("`{}` is an experimental Prometheus aggregation", a.op),
                FUNCTIONS_FLAG,
                a.op.to_owned(),
            ),
            Fact::Binary(b)
                if b.modifier.is_some_and(|m| {
                    m.fill_values.lhs.is_some() || m.fill_values.rhs.is_some()
                }) =>
            {
                (
                    format!(
                        "a fill modifier on `{}` is experimental in Prometheus",
                        b.op
                    ),
                    FILL_FLAG,
                    "fill".to_owned(),
                )
            }
            Fact::Modifier(m) => (
                format!(
                    "the range modifier `{}` is experimental in Prometheus (3.7 on)",
                    m.word
                ),
                RANGE_MODIFIERS_FLAG,
                format!("\u{0}{}", m.offset),
            ),
            _ => return,
        };
        let f = Finding::new(
            Rule::ExperimentalSyntax,
            Severity::Warning,
            format!(
                "{what}: Prometheus refuses the expression unless it runs with --enable-feature={flag}"
            ),
        )
        .suggest(format!(
            "run Prometheus with --enable-feature={flag} (and any other evaluator of this query), or drop it"
        ));
        out.push(f, Some(&needle));
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::{Rule, Severity};
    use crate::rules::testing::*;

    #[test]
    fn experimental_functions_aggregations_and_modifiers_name_their_flag() {
        // Expressions from Prometheus's own parser tests (promql/parser/parse_test.go) and
        // PromQL test data (promql/promqltest/testdata), at d15adb9.
        for (expr, flag) in [
            (
                "mad_over_time(vllm:num_requests_running[5m])",
                "promql-experimental-functions",
            ),
            (
                "limitk(5, vllm:num_requests_running)",
                "promql-experimental-functions",
            ),
            (
                "limit_ratio(0.5, vllm:num_requests_running)",
                "promql-experimental-functions",
            ),
            (
                "sort_by_label(vllm:num_requests_running, \"pod\")",
                "promql-experimental-functions",
            ),
            (
                "rate(vllm:generation_tokens_total[5m] anchored)",
                "promql-extended-range-selectors",
            ),
            (
                "increase(vllm:generation_tokens_total[1h] smoothed)",
                "promql-extended-range-selectors",
            ),
        ] {
            let f = only(expr, false, Rule::ExperimentalSyntax);
            assert_eq!(f.severity, Severity::Warning);
            assert!(f.message.contains(flag), "{expr}: {}", f.message);
        }
        clean("rate(vllm:generation_tokens_total[5m])", false);
    }
}
