//! `rate-on-gauge`: rate/irate/increase over a gauge (or a `_created` timestamp). Every
//! decrease reads as a counter reset, and the result is nonsense.

use crate::finding::{Finding, Rule, Severity};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};
use llmscope_catalog::{Kind, Suffix};

pub struct RateOnGauge;

impl RuleInfo for RateOnGauge {
    const ID: &'static str = "rate-on-gauge";
    const SUMMARY: &'static str = "rate/irate/increase over a gauge";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/dynamo-disagg.json");
}

impl Lint for RateOnGauge {
    fn check(&self, fact: &Fact<'_>, _: &Scope<'_>, out: &mut Hits) {
        let Fact::Call(c) = fact else {
            return;
        };
        let func = c.func;
        if !matches!(func, "rate" | "irate" | "increase") {
            return;
        }
        let sels = c
            .args
            .first()
            .map(|a| a.sels.as_slice())
            .unwrap_or_default();
        for s in sels {
            let gauge = s.kind == Some(Kind::Gauge) || s.suffix == Some(Suffix::Created);
            if !gauge {
                continue;
            }
            let f = Finding::new(
                Rule::RateOnGauge,
                Severity::Error,
                format!("`{}` is a gauge: {func}() treats every decrease as a counter reset and returns nonsense", s.name),
            )
            .metric(&s.name)
            .suggest(format!(
                "use the gauge directly, or avg_over_time/max_over_time({}[5m]); deriv() for its slope",
                s.name
            ));
            out.push(f, Some(&s.name));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Rule;
    use crate::rules::testing::*;

    #[test]
    fn rate_on_gauge() {
        only(
            "rate(vllm:kv_cache_usage_perc[5m])",
            false,
            Rule::RateOnGauge,
        );
        only(
            "increase(DCGM_FI_DEV_POWER_USAGE[5m])",
            false,
            Rule::RateOnGauge,
        );
        clean("rate(vllm:generation_tokens_total[5m])", false);
        clean("rate(vllm:time_to_first_token_seconds_count[5m])", false);
    }
}
