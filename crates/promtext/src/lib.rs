//! `promtext`: the Prometheus exposition format (text 0.0.4 and OpenMetrics 1.0), read and written.
//!
//! - [`write`]: [`write::Writer`] renders families byte-for-byte as `prometheus_client` (vLLM) or
//!   dcgm-exporter print them; [`fmt`] holds the number formatting rules.
//! - parsing (see the parser modules) reads `&[u8]` without copying names, labels or values.
//!
//! No I/O, no async: bytes in, events/text out.

pub mod fmt;
pub mod write;

/// The metric type of a family, as written after `# TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Summary,
    /// Prometheus text `untyped`.
    Untyped,
    /// OpenMetrics `unknown`.
    Unknown,
    Info,
    StateSet,
    GaugeHistogram,
}

impl MetricType {
    pub fn as_str(self) -> &'static str {
        match self {
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
            MetricType::Histogram => "histogram",
            MetricType::Summary => "summary",
            MetricType::Untyped => "untyped",
            MetricType::Unknown => "unknown",
            MetricType::Info => "info",
            MetricType::StateSet => "stateset",
            MetricType::GaugeHistogram => "gaugehistogram",
        }
    }

    /// Parses the word after `# TYPE <name>`.
    pub fn from_word(s: &[u8]) -> Option<Self> {
        Some(match s {
            b"counter" => MetricType::Counter,
            b"gauge" => MetricType::Gauge,
            b"histogram" => MetricType::Histogram,
            b"summary" => MetricType::Summary,
            b"untyped" => MetricType::Untyped,
            b"unknown" => MetricType::Unknown,
            b"info" => MetricType::Info,
            b"stateset" => MetricType::StateSet,
            b"gaugehistogram" => MetricType::GaugeHistogram,
            _ => return None,
        })
    }
}
