//! `fallback-changes-meaning`: `a or b` whose arms are different quantities. Over one
//! quantity's names in two versions (`vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc`,
//! each the other's successor or both of one concept) the `or` is a deliberate fallback: what
//! was said about one arm's name (renamed, removed, unknown) becomes an info when the other arm
//! exists. Over two different quantities the fallback silently changes what the panel shows
//! where the first is missing: a finding.

use crate::finding::{Finding, Rule, Severity};
use crate::promql::value::Value;
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::fact::BinaryFact;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};
use llmscope_catalog::{self as catalog, Family};
use llmscope_diagnosis::Concept;
use std::ops::Range;

pub struct FallbackChangesMeaning;

impl RuleInfo for FallbackChangesMeaning {
    const ID: &'static str = "fallback-changes-meaning";
    const SUMMARY: &'static str =
        "`a or b` whose arms are different quantities (not one quantity's names in two versions)";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/neutree-endpoint-latency.json");
}

impl Lint for FallbackChangesMeaning {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        let Fact::Binary(b) = fact else {
            return;
        };
        if b.op != "or" {
            return;
        }
        let (Some(x), Some(y)) = (b.lhs.family(), b.rhs.family()) else {
            return;
        };
        if x.name == y.name {
            return;
        }
        if same_quantity(x, y) {
            soften_fallback(b, scope, out);
        } else {
            changed_meaning(b, x, y, out);
        }
    }
}

fn changed_meaning(b: &BinaryFact<'_>, a: &Family, c: &Family, out: &mut Hits) {
    let x = b.lhs.first_name().unwrap_or(a.name).to_owned();
    let y = b.rhs.first_name().unwrap_or(c.name).to_owned();
    let f = Finding::new(
        Rule::FallbackChangesMeaning,
        Severity::Warning,
        format!(
            "`{x}` or `{y}`: the arms are different quantities ({} vs {}), not one quantity's names in two versions; where `{x}` is missing the panel shows `{y}` under the same title",
            quantity(a),
            quantity(c)
        ),
    )
    .metric(&x)
    .suggest(format!(
        "draw them as two queries, or fall back to `{x}`'s own older name{}",
        a.successor
            .map(|s| format!(" (it was renamed to {s})"))
            .unwrap_or_default()
    ));
    out.push(f, Some(&y));
}

/// A version fallback: what was said about an arm's names becomes an info when the other arm
/// exists.
fn soften_fallback(b: &BinaryFact<'_>, scope: &Scope<'_>, out: &mut Hits) {
    let exists = |v: &Value| {
        !v.sels.is_empty() && v.sels.iter().all(|s| scope.inv.metric(&s.name).is_some())
    };
    let (l, r) = (exists(b.lhs), exists(b.rhs));
    let [lhs_hits, rhs_hits] = b.arms.clone();
    if r {
        soften(out, lhs_hits, b.lhs, b.rhs);
    }
    if l {
        soften(out, rhs_hits, b.rhs, b.lhs);
    }
}

/// The renamed and unknown names of `arm` said at `range`, made infos beside `other`.
fn soften(out: &mut Hits, range: Range<usize>, arm: &Value, other: &Value) {
    let names: Vec<&str> = arm.sels.iter().map(|s| s.name.as_str()).collect();
    let present = other.first_name().unwrap_or("the other arm");
    for h in out.said_mut(range) {
        let f = &mut h.finding;
        let about_arm = f.metric.as_deref().is_some_and(|m| names.contains(&m));
        if about_arm
            && matches!(f.rule, Rule::RenamedMetric | Rule::UnknownMetric)
            && f.severity > Severity::Info
        {
            f.severity = Severity::Info;
            f.message.push_str(&format!(
                "; here it is a version fallback beside `{present}`, which exists, so the query still returns data"
            ));
        }
    }
}

/// One quantity under two names: one is (a successor of a successor of …) the other, or both
/// are catalogued as the same concept.
fn same_quantity(a: &Family, b: &Family) -> bool {
    let leads_to = |from: &Family, to: &str| {
        let mut next = from.successor;
        for _ in 0..8 {
            match next {
                Some(n) if n == to => return true,
                Some(n) => next = catalog::family(n).and_then(|f| f.successor),
                None => return false,
            }
        }
        false
    };
    leads_to(a, b.name) || leads_to(b, a.name) || (a.concept.is_some() && a.concept == b.concept)
}

/// What a family measures, in a few words.
fn quantity(f: &Family) -> String {
    match f.concept {
        Some(Concept::Itl) => "one observation per token gap".to_owned(),
        Some(Concept::Tpot) => "one observation per finished request".to_owned(),
        Some(c) => c.name().replace('_', " "),
        None => format!("a {} in {}", f.kind.name(), f.unit.name()),
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::{Rule, Severity};
    use crate::rules::testing::*;

    #[test]
    fn version_fallbacks_are_an_info_when_one_arm_exists() {
        for expr in [
            "vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc",
            "max by (model_name) (vllm:gpu_cache_usage_perc{model_name=\"m\"} or vllm:kv_cache_usage_perc{model_name=\"m\"})",
            "histogram_quantile(0.9, sum by (le) (rate(vllm:time_per_output_token_seconds_bucket[5m]) or rate(vllm:inter_token_latency_seconds_bucket[5m])))",
        ] {
            let f = run(expr, true);
            assert_eq!(worst(&f), Some(Severity::Info), "{expr}: {f:#?}");
            let said = f
                .iter()
                .find(|f| f.rule == Rule::RenamedMetric)
                .unwrap_or_else(|| panic!("{expr}: {f:#?}"));
            assert!(
                said.message.contains("version fallback"),
                "{}",
                said.message
            );
        }
        // Without the `or`, the removed name is what it always was.
        let f = run("vllm:gpu_cache_usage_perc", true);
        assert!(worst(&f) > Some(Severity::Info), "{f:#?}");
    }

    #[test]
    fn fallbacks_that_change_meaning_are_said() {
        let f = run(
            "histogram_quantile(0.9, sum by (le) (rate(vllm:request_time_per_output_token_seconds_bucket[5m]) or rate(vllm:inter_token_latency_seconds_bucket[5m])))",
            true,
        );
        let said = f
            .iter()
            .find(|f| f.rule == Rule::FallbackChangesMeaning)
            .unwrap_or_else(|| panic!("{f:#?}"));
        assert_eq!(said.severity, Severity::Warning);
        assert!(
            said.message.contains("per finished request"),
            "{}",
            said.message
        );
        assert!(said.message.contains("per token gap"), "{}", said.message);
        // Two unrelated names, one of which exists: the other's absence is not softened.
        let f = run(
            "vllm:num_requests_running or vllm:num_requests_swapped",
            true,
        );
        assert!(
            f.iter().any(|f| f.rule == Rule::FallbackChangesMeaning),
            "{f:#?}"
        );
        assert!(
            f.iter()
                .any(|f| f.rule == Rule::RenamedMetric && f.severity > Severity::Info),
            "{f:#?}"
        );
        // `or` between a metric and a constant is no fallback between names.
        clean("vllm:num_requests_running or vector(0)", true);
    }
}
