//! `lifetime-average`: `x_sum / x_count` without rate(): the mean over everything since the
//! process started, which hardly moves and hides what happens now.

use crate::finding::{Finding, Rule, Severity};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct LifetimeAverage;

impl RuleInfo for LifetimeAverage {
    const ID: &'static str = "lifetime-average";
    const SUMMARY: &'static str =
        "x_sum / x_count without rate(): the mean since the process started, not the current one";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/prodstack-lmcache-dashboard.json");
}

impl Lint for LifetimeAverage {
    fn check(&self, fact: &Fact<'_>, _: &Scope<'_>, out: &mut Hits) {
        let Fact::Binary(b) = fact else {
            return;
        };
        let Some((sum, count)) = b.lifetime else {
            return;
        };
        let f = Finding::new(
            Rule::LifetimeAverage,
            Severity::Warning,
            format!("`{sum}` / `{count}` without rate(): the mean over everything since the process started, which hardly moves and hides what happens now"),
        )
        .metric(sum)
        .suggest(format!(
            "rate({sum}[5m]) / rate({count}[5m]) for the current mean (or increase(…[$__range]) for the dashboard's range)"
        ));
        out.push(f, Some(sum));
    }
}
