//! The exposition format of a page (text 0.0.4 or OpenMetrics 1.0): a leaf that the lexer's
//! errors, the parser and the page report all read, so none of them reaches the others for it.

use crate::MetricType;

/// The exposition format, which decides timestamp units and the type of untyped families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text format 0.0.4: integer millisecond timestamps, `untyped`.
    Text,
    /// OpenMetrics 1.0: float second timestamps, `unknown`, a final `# EOF`.
    OpenMetrics,
}

impl Format {
    /// OpenMetrics if the page ends with `# EOF` (trailing whitespace ignored), else text.
    pub fn sniff(input: &[u8]) -> Format {
        if input.trim_ascii_end().ends_with(b"# EOF") {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }

    /// From an HTTP `Content-Type` (`application/openmetrics-text; version=1.0.0` → OpenMetrics).
    pub fn from_content_type(content_type: &str) -> Format {
        if content_type
            .trim_start()
            .starts_with("application/openmetrics-text")
        {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }

    pub(crate) fn untyped(self) -> MetricType {
        match self {
            Format::Text => MetricType::Untyped,
            Format::OpenMetrics => MetricType::Unknown,
        }
    }
}
