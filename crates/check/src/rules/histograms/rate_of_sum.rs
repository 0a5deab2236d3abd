//! `rate-of-sum`: `rate(x_sum)` drawn alone — the total observed per second (seconds of latency
//! per second, tokens per second), which grows with traffic, not a per-request value.

use crate::finding::{Finding, Rule, Severity};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct RateOfSum;

impl RuleInfo for RateOfSum {
    const ID: &'static str = "rate-of-sum";
    const SUMMARY: &'static str =
        "rate(x_sum) alone: seconds (or tokens) per second, not a latency or a size";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/vllm-grafana-2026-05.json");
}

impl Lint for RateOfSum {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        let Fact::Root(root) = fact else {
            return;
        };
        let shown = match scope.cx.panel_unit {
            Some(u) if !u.is_empty() && u != "none" && u != "short" => {
                format!(" under the unit `{u}`")
            }
            _ => String::new(),
        };
        for name in &root.sum_rates {
            let stem = name.strip_suffix("_sum").unwrap_or(name);
            let f = Finding::new(
                Rule::RateOfSum,
                Severity::Warning,
                format!("rate(`{name}`) alone is drawn{shown}: it is the total observed per second (seconds of latency per second, tokens per second), which grows with traffic, not a per-request value"),
            )
            .metric(name)
            .suggest(format!(
                "divide by the count for the mean: rate({stem}_sum[5m]) / rate({stem}_count[5m]); or histogram_quantile over {stem}_bucket"
            ));
            out.push(f, Some(name));
        }
    }
}
