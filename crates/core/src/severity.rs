//! [`Severity`], the one scale every finding uses — the diagnosis', the linter's, the collection
//! checks' — and [`FailOn`], the `--fail-on` threshold every command shares.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How bad a finding is, ordered `Info < Warning < Error < Critical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
    /// The run's result cannot be trusted at all (e.g. most requests failed).
    Critical,
}

impl Severity {
    pub const ALL: [Severity; 4] = [
        Severity::Info,
        Severity::Warning,
        Severity::Error,
        Severity::Critical,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Severity {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Severity::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("expected info, warning, error or critical, got `{s}`"))
    }
}

/// `--fail-on`: the lowest severity that makes a command exit 1, or never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOn {
    Severity(Severity),
    Never,
}

impl FailOn {
    /// Whether findings of these severities make the command fail.
    pub fn fails(self, severities: impl IntoIterator<Item = Severity>) -> bool {
        match self {
            FailOn::Never => false,
            FailOn::Severity(min) => severities.into_iter().any(|s| s >= min),
        }
    }
}

impl std::str::FromStr for FailOn {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "never" {
            return Ok(FailOn::Never);
        }
        s.parse()
            .map(FailOn::Severity)
            .map_err(|_| format!("expected never, info, warning, error or critical, got `{s}`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_on_compares_severities() {
        let warn = [Severity::Warning];
        assert!(!"error".parse::<FailOn>().unwrap().fails(warn));
        assert!("warning".parse::<FailOn>().unwrap().fails(warn));
        assert!("info".parse::<FailOn>().unwrap().fails(warn));
        assert!(!"never".parse::<FailOn>().unwrap().fails(warn));
        assert!(!"info".parse::<FailOn>().unwrap().fails([]));
        assert!(
            "critical"
                .parse::<FailOn>()
                .unwrap()
                .fails([Severity::Critical])
        );
        assert!("fatal".parse::<FailOn>().is_err());
        for s in Severity::ALL {
            assert_eq!(s.name().parse::<Severity>(), Ok(s));
            // JSON reports and stored findings say the same name the terminal shows.
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        }
    }
}
