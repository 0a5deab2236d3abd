//! `bucket-ratio`: `rate(x_bucket) / rate(x_bucket)`. Every bucket series is divided by itself,
//! so the result is 1 (or NaN) per bucket, not a mean.

use crate::finding::{Finding, Rule, Severity};
use crate::promql::value::{Sel, Value};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct BucketRatio;

impl RuleInfo for BucketRatio {
    const ID: &'static str = "bucket-ratio";
    const SUMMARY: &'static str = "rate(x_bucket) / rate(x_bucket): 1 per bucket, not a mean";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/sglang-dashboard.json");
}

impl Lint for BucketRatio {
    fn check(&self, fact: &Fact<'_>, _: &Scope<'_>, out: &mut Hits) {
        let Fact::Binary(b) = fact else {
            return;
        };
        let buckets = |v: &Value| !v.sels.is_empty() && v.sels.iter().all(Sel::is_bucket);
        if b.op != "/" || !(buckets(b.lhs) && buckets(b.rhs)) {
            return;
        }
        let name = b.lhs.first_name().unwrap_or("?");
        let stem = name.strip_suffix("_bucket").unwrap_or(name);
        let f = Finding::new(
            Rule::BucketRatio,
            Severity::Error,
            format!("`{name}` divided by buckets: every bucket series is divided by itself, so the result is 1 (or NaN), not a mean"),
        )
        .metric(name)
        .suggest(format!(
            "the mean is rate({stem}_sum[5m]) / rate({stem}_count[5m]); a quantile is histogram_quantile(0.99, sum by (le) (rate({name}[5m])))"
        ));
        out.push(f, Some(name));
    }
}
