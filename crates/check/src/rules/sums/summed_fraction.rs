//! `summed-fraction`: `sum` over an engine's 0..1 fraction across engines or pods: the result
//! is no fraction of anything (two engines at 60 % read 1.2); max or avg is meant. Not said of
//! an autoscaler's query: KEDA and prometheus-adapter divide by the replica count.

use crate::finding::{Finding, Rule, Severity};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct SummedFraction;

impl RuleInfo for SummedFraction {
    const ID: &'static str = "summed-fraction";
    const SUMMARY: &'static str =
        "sum over an engine's 0..1 fraction across engines or pods: max or avg is meant";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/llmd-baseline-compare.json");
}

impl Lint for SummedFraction {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        let Fact::Root(root) = fact else {
            return;
        };
        let Some(name) = root.summed_fraction.as_deref().filter(|_| !scope.cx.scaler) else {
            return;
        };
        let f = Finding::new(
            Rule::SummedFraction,
            Severity::Warning,
            format!("`{name}` is a 0..1 fraction per engine, and sum() adds it across engines or pods: the result is no fraction of anything (two engines at 60 % read 1.2)"),
        )
        .metric(name)
        .suggest(format!("max({name}) for the fullest engine, avg({name}) for the mean (or sum by the label that tells engines apart)"));
        out.push(f, Some("sum"));
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Rule;
    use crate::promql::{Context, check_expr};
    use crate::rules::testing::*;

    #[test]
    fn summed_fractions() {
        let f = run("sum(vllm:kv_cache_usage_perc)", true);
        assert_eq!(rules(&f), vec![Rule::SummedFraction], "{f:#?}");
        let f = run("sum by (model_name) (vllm:kv_cache_usage_perc) * 100", true);
        assert!(has(&f, Rule::SummedFraction), "{f:#?}");
        clean("sum by (engine) (vllm:kv_cache_usage_perc)", true);
        clean("max(vllm:kv_cache_usage_perc)", true);
        clean(
            "sum(vllm:kv_cache_usage_perc) / count(vllm:kv_cache_usage_perc)",
            true,
        );
        clean("sum(vllm:num_requests_running)", true);
        // An autoscaler divides by the replica count: there the sum is what is meant.
        let cx = Context {
            graph: false,
            scaler: true,
            ..Context::default()
        };
        assert!(check_expr("sum(vllm:kv_cache_usage_perc)", &inventories(), cx).is_empty());
    }
}
