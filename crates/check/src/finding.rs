//! What a check reports: a [`Finding`] (`llmscope_core::finding::Finding`, the one finding type)
//! with a stable [`Rule`] id, a [`Severity`], the metric it concerns, a message, a suggestion,
//! and a [`Location`] (file, panel or rule, line, column).

use std::fmt;

/// The rules, each with a stable id (`unknown-metric`, …) used in output and `--fail-on`: made by
/// the registry of [`crate::rules`], one per unit.
pub use crate::rules::Rule;

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
