//! The one [`Finding`]: what a rule found, wherever it ran — a detector of the diagnosis
//! (`batch_limit`), a rule of the linter (`unknown-metric`), a check of collection
//! (`source_failed`). The diagnosis and the linter make findings, the store keeps them as they
//! are, and every report reads them.
//!
//! A finding names its rule, a [`Severity`] and a message; the rest is said when there is
//! something to say: the metric or source it is about, a suggestion, where in a file
//! ([`Location`]), the bottleneck it points to and how sure, the [`Evidence`] measured, and
//! other facts as their producer recorded them (`detail`). The rule's id is generic: static
//! text for the detectors, an enum for the linter's rules, owned text once stored and read
//! back — one shape, read the same way by every consumer.

use crate::bottleneck::Bottleneck;
use crate::severity::Severity;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// What a rule found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding<R = String> {
    /// The rule that found it, by its stable id.
    pub rule: R,
    pub severity: Severity,
    pub message: String,
    /// The metric it is about, when there is one.
    #[serde(default)]
    pub metric: Option<String>,
    /// The source (a scrape target, a Prometheus) it is about, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// What to change.
    #[serde(default)]
    pub suggestion: Option<String>,
    /// Where in a file (the linter's findings).
    #[serde(default, skip_serializing_if = "Location::is_empty")]
    pub location: Location,
    /// The bottleneck it points to (the diagnosis' findings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<Bottleneck>,
    /// How sure, 0..1 (the diagnosis' findings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// What was measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    /// Other facts, as the producer recorded them (a failed source's counts, the facts a run
    /// was diagnosed with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

impl<R> Finding<R> {
    /// A finding of `rule` with nothing but its message.
    pub fn new(rule: R, severity: Severity, message: impl Into<String>) -> Finding<R> {
        Finding {
            rule,
            severity,
            message: message.into(),
            metric: None,
            source: None,
            suggestion: None,
            location: Location::default(),
            bottleneck: None,
            confidence: None,
            evidence: Vec::new(),
            detail: None,
        }
    }

    pub fn metric(mut self, name: impl Into<String>) -> Finding<R> {
        self.metric = Some(name.into());
        self
    }

    pub fn suggest(mut self, suggestion: impl Into<String>) -> Finding<R> {
        self.suggestion = Some(suggestion.into());
        self
    }

    /// The same finding, its rule named by `f` (e.g. as owned text, to store it).
    pub fn map_rule<S>(self, f: impl FnOnce(R) -> S) -> Finding<S> {
        Finding {
            rule: f(self.rule),
            severity: self.severity,
            message: self.message,
            metric: self.metric,
            source: self.source,
            suggestion: self.suggestion,
            location: self.location,
            bottleneck: self.bottleneck,
            confidence: self.confidence,
            evidence: self.evidence,
            detail: self.detail,
        }
    }
}

impl<R: fmt::Display> Finding<R> {
    /// The finding with its rule as owned text: how it is stored.
    pub fn to_stored(&self) -> Finding<String>
    where
        R: Clone,
    {
        self.clone().map_rule(|r| r.to_string())
    }
}

/// One measured fact behind a finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub signal: Cow<'static, str>,
    pub source: String,
    pub window: Option<(f64, f64)>,
    pub statistic: Cow<'static, str>,
    pub value: f64,
    /// `">="`, `"<"`, `"=="`, or `""` when the value is context rather than a test.
    pub test: Cow<'static, str>,
    pub threshold: Option<f64>,
}

/// Where a finding is: the file (or `--expr`), the panel or rule inside it, and a position.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Location {
    pub file: String,
    /// Dashboard panel title, rule name, or template variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// 1-based line in the file, where the format has lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based column in the file (or in the expression for `--expr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// The expression as written (before variable substitution).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expr: Option<String>,
}

impl Location {
    /// Nowhere in particular (a finding about a run, not a file).
    pub fn is_empty(&self) -> bool {
        *self == Location::default()
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        if let Some(c) = &self.context {
            write!(f, " ({c})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_reads_back_as_it_was_written_whatever_made_it() {
        let mut f = Finding::new("batch_limit", Severity::Warning, "running pinned at 16");
        f.bottleneck = Some(Bottleneck::BatchLimit);
        f.confidence = Some(0.9);
        f.evidence.push(Evidence {
            signal: "running".into(),
            source: "vllm:num_requests_running".into(),
            window: Some((1.0, 2.0)),
            statistic: "max".into(),
            value: 16.0,
            test: "==".into(),
            threshold: Some(16.0),
        });
        let stored = f.to_stored();
        let json = serde_json::to_string(&stored).unwrap();
        let back: Finding = serde_json::from_str(&json).unwrap();
        assert_eq!(back, stored);
        assert!(!json.contains("location"), "no file, no location: {json}");
        let lint = Finding::new("unknown-metric", Severity::Error, "x").metric("m");
        let v = serde_json::to_value(&lint).unwrap();
        assert_eq!(v["metric"], "m");
        assert!(v["suggestion"].is_null() && v.get("evidence").is_none());
    }
}
