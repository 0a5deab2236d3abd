//! What a check reports: a [`Finding`] (`llmscope_core::finding::Finding`, the one finding type)
//! with a stable [`Rule`] id, a [`Severity`], the metric it concerns, a message, a suggestion,
//! and a [`Location`] (file, panel or rule, line, column).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The rules, each with a stable id (`unknown-metric`, …) used in output and `--fail-on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    UnknownMetric,
    RenamedMetric,
    MissingLabel,
    RateOnGauge,
    CounterWithoutRate,
    BadHistogramQuantile,
    UnitMismatch,
    ShortRateWindow,
    ExporterAttribution,
    ParseError,
    UncoveredProducer,
    BucketRatio,
    RateOfSum,
    LifetimeAverage,
    StepsAsTokens,
    FractionAsPercent,
    UnusedVariable,
    IgnoredVariable,
    NothingChecked,
    FallbackChangesMeaning,
    UnreachableThreshold,
    SummedFraction,
    OtherDialect,
    PerProcessSum,
}

impl Rule {
    pub const ALL: [Rule; 24] = [
        Rule::UnknownMetric,
        Rule::RenamedMetric,
        Rule::MissingLabel,
        Rule::RateOnGauge,
        Rule::CounterWithoutRate,
        Rule::BadHistogramQuantile,
        Rule::UnitMismatch,
        Rule::ShortRateWindow,
        Rule::ExporterAttribution,
        Rule::ParseError,
        Rule::UncoveredProducer,
        Rule::BucketRatio,
        Rule::RateOfSum,
        Rule::LifetimeAverage,
        Rule::StepsAsTokens,
        Rule::FractionAsPercent,
        Rule::UnusedVariable,
        Rule::IgnoredVariable,
        Rule::NothingChecked,
        Rule::FallbackChangesMeaning,
        Rule::UnreachableThreshold,
        Rule::SummedFraction,
        Rule::OtherDialect,
        Rule::PerProcessSum,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Rule::UnknownMetric => "unknown-metric",
            Rule::RenamedMetric => "renamed-metric",
            Rule::MissingLabel => "missing-label",
            Rule::RateOnGauge => "rate-on-gauge",
            Rule::CounterWithoutRate => "counter-without-rate",
            Rule::BadHistogramQuantile => "bad-histogram-quantile",
            Rule::UnitMismatch => "unit-mismatch",
            Rule::ShortRateWindow => "short-rate-window",
            Rule::ExporterAttribution => "exporter-attribution",
            Rule::ParseError => "parse-error",
            Rule::UncoveredProducer => "uncovered-producer",
            Rule::BucketRatio => "bucket-ratio",
            Rule::RateOfSum => "rate-of-sum",
            Rule::LifetimeAverage => "lifetime-average",
            Rule::StepsAsTokens => "steps-as-tokens",
            Rule::FractionAsPercent => "fraction-as-percent",
            Rule::UnusedVariable => "unused-variable",
            Rule::IgnoredVariable => "ignored-variable",
            Rule::NothingChecked => "nothing-checked",
            Rule::FallbackChangesMeaning => "fallback-changes-meaning",
            Rule::UnreachableThreshold => "unreachable-threshold",
            Rule::SummedFraction => "summed-fraction",
            Rule::OtherDialect => "other-dialect",
            Rule::PerProcessSum => "per-process-sum",
        }
    }

    /// One line on what the rule finds (SARIF rule descriptions, `--help`).
    pub fn summary(self) -> &'static str {
        match self {
            Rule::UnknownMetric => {
                "a metric name that no inventory has (PromQL returns nothing, not an error)"
            }
            Rule::RenamedMetric => "a metric name that this version renamed, deprecated or removed",
            Rule::MissingLabel => "a label that no series of the metric carries",
            Rule::RateOnGauge => "rate/irate/increase over a gauge",
            Rule::CounterWithoutRate => "a raw counter in a graph or comparison",
            Rule::BadHistogramQuantile => {
                "histogram_quantile over something that is not _bucket by le"
            }
            Rule::UnitMismatch => "a 0..1 fraction compared with a percent (or the reverse)",
            Rule::ShortRateWindow => "a rate window shorter than 4x the scrape interval",
            Rule::ExporterAttribution => {
                "dcgm series selected by pod/namespace labels that belong to the exporter"
            }
            Rule::ParseError => "PromQL or a file that does not parse",
            Rule::UncoveredProducer => {
                "names of a producer (router, gateway, cache, exporter) that no inventory covers: not checked, said once"
            }
            Rule::BucketRatio => "rate(x_bucket) / rate(x_bucket): 1 per bucket, not a mean",
            Rule::RateOfSum => {
                "rate(x_sum) alone: seconds (or tokens) per second, not a latency or a size"
            }
            Rule::LifetimeAverage => {
                "x_sum / x_count without rate(): the mean since the process started, not the current one"
            }
            Rule::StepsAsTokens => {
                "rate(vllm:iteration_tokens_total_count) shown as tokens/s: it counts engine steps"
            }
            Rule::FractionAsPercent => {
                "a 0..1 fraction on a panel titled as a percent without a percentunit unit"
            }
            Rule::UnusedVariable => "a dashboard variable that no panel uses",
            Rule::IgnoredVariable => {
                "a dashboard variable that most panels filter on and some ignore"
            }
            Rule::NothingChecked => "a file in which no expression could be checked",
            Rule::FallbackChangesMeaning => {
                "`a or b` whose arms are different quantities (not one quantity's names in two versions)"
            }
            Rule::UnreachableThreshold => {
                "a threshold the value cannot reach: above 1 on a 0..1 fraction, beyond a histogram's finite buckets for a quantile"
            }
            Rule::SummedFraction => {
                "sum over an engine's 0..1 fraction across engines or pods: max or avg is meant"
            }
            Rule::OtherDialect => {
                "an expression in MetricsQL (VictoriaMetrics), not PromQL: named, not linted"
            }
            Rule::PerProcessSum => {
                "sum or avg across the per-process copies of one gauge (`pid` in prometheus_client multiprocess mode): max without (pid) is meant"
            }
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// How bad a finding is: the one scale the diagnosis, the linter and `--fail-on` share.
pub use llmscope_core::severity::Severity;

/// Where a finding is: the file (or `--expr`), the panel or rule inside it, and a position.
pub use llmscope_core::finding::Location;

/// One problem found: the one finding type, its rule a [`Rule`].
pub type Finding = llmscope_core::finding::Finding<Rule>;

/// `--fail-on`: the one threshold every command shares.
pub use llmscope_core::severity::FailOn;

/// The severities of `findings`, for [`FailOn::fails`].
pub fn severities(findings: &[Finding]) -> impl Iterator<Item = Severity> + '_ {
    findings.iter().map(|f| f.severity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_on_reads_the_findings_severities() {
        let warn = [Finding::new(Rule::ShortRateWindow, Severity::Warning, "w")];
        assert!(!"error".parse::<FailOn>().unwrap().fails(severities(&warn)));
        assert!(
            "warning"
                .parse::<FailOn>()
                .unwrap()
                .fails(severities(&warn))
        );
    }

    #[test]
    fn rule_ids_are_stable_and_serialise_as_ids() {
        for r in Rule::ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), r.id());
        }
        assert_eq!(Rule::UnknownMetric.id(), "unknown-metric");
    }
}
