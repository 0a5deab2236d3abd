//! What one sample line parses into: [`Sample`], its [`Timestamp`], [`Exemplar`] and [`Suffix`].
//!
//! A `Sample` is `Copy` and borrows everything from the input. The parser fills in the family it
//! assigned the sample to (`ty` and `suffix`; the family name is [`Sample::family_name`]), so
//! consumers of the streaming API get `# TYPE`-based grouping without tracking it themselves.

use crate::MetricType;
use crate::labels::Labels;
use crate::text::Escaped;

/// A sample timestamp, in the unit its format uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Timestamp {
    /// Text format 0.0.4: integer milliseconds since the epoch.
    Millis(i64),
    /// OpenMetrics: float seconds since the epoch.
    Seconds(f64),
}

impl Timestamp {
    /// The timestamp in seconds since the epoch.
    pub fn as_seconds(self) -> f64 {
        match self {
            Timestamp::Millis(ms) => ms as f64 / 1000.0,
            Timestamp::Seconds(s) => s,
        }
    }
}

/// An OpenMetrics exemplar: ` # {trace_id="x"} 1.0 [timestamp]` after a sample's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exemplar<'a> {
    pub labels: Labels<'a>,
    pub value: f64,
    /// Float seconds.
    pub timestamp: Option<f64>,
}

/// Which part of its family a sample is, from the suffix of its name after the family name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Suffix {
    /// The name equals the family name (gauges, untyped, summary quantiles, and text-0.0.4
    /// counters, whose `# TYPE` line already names `x_total`).
    None,
    Total,
    Created,
    Bucket,
    Count,
    Sum,
    /// Gauge histogram `_gcount`.
    GCount,
    /// Gauge histogram `_gsum`.
    GSum,
    /// OpenMetrics info `_info`.
    Info,
}

impl Suffix {
    pub const fn as_str(self) -> &'static str {
        match self {
            Suffix::None => "",
            Suffix::Total => "_total",
            Suffix::Created => "_created",
            Suffix::Bucket => "_bucket",
            Suffix::Count => "_count",
            Suffix::Sum => "_sum",
            Suffix::GCount => "_gcount",
            Suffix::GSum => "_gsum",
            Suffix::Info => "_info",
        }
    }

    /// Every suffix, the empty one first.
    pub const ALL: [Suffix; 9] = [
        Suffix::None,
        Suffix::Total,
        Suffix::Created,
        Suffix::Bucket,
        Suffix::Count,
        Suffix::Sum,
        Suffix::GCount,
        Suffix::GSum,
        Suffix::Info,
    ];

    /// Parses a suffix including its underscore (`"_sum"`).
    pub fn from_suffix(s: &str) -> Option<Self> {
        Some(match s {
            "" => Suffix::None,
            "_total" => Suffix::Total,
            "_created" => Suffix::Created,
            "_bucket" => Suffix::Bucket,
            "_count" => Suffix::Count,
            "_sum" => Suffix::Sum,
            "_gcount" => Suffix::GCount,
            "_gsum" => Suffix::GSum,
            "_info" => Suffix::Info,
            _ => return None,
        })
    }

    /// The suffixes a family of type `ty` may add to its name.
    pub fn allowed(ty: MetricType) -> &'static [Suffix] {
        match ty {
            MetricType::Counter => &[Suffix::Total, Suffix::Created],
            MetricType::Histogram => &[Suffix::Bucket, Suffix::Count, Suffix::Sum, Suffix::Created],
            MetricType::GaugeHistogram => &[Suffix::Bucket, Suffix::GCount, Suffix::GSum],
            MetricType::Summary => &[Suffix::Count, Suffix::Sum, Suffix::Created],
            MetricType::Info => &[Suffix::Info],
            MetricType::Gauge
            | MetricType::StateSet
            | MetricType::Untyped
            | MetricType::Unknown => &[],
        }
    }
}

/// One sample line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample<'a> {
    /// The full sample name (`vllm:iteration_tokens_total_bucket`).
    pub name: Escaped<'a>,
    pub labels: Labels<'a>,
    pub value: f64,
    /// The value exactly as written, for exact integers beyond 2^53 (see [`Sample::int_value`]).
    pub value_text: &'a str,
    pub timestamp: Option<Timestamp>,
    pub exemplar: Option<Exemplar<'a>>,
    /// The type of the family the sample belongs to (`Untyped`/`Unknown` without `# TYPE`).
    pub ty: MetricType,
    /// The part of `name` after the family name.
    pub suffix: Suffix,
    /// 1-based line number.
    pub line: u32,
}

impl<'a> Sample<'a> {
    /// The name of the family the parser assigned this sample to.
    pub fn family_name(&self) -> Escaped<'a> {
        self.name.strip_suffix_len(self.suffix.as_str().len())
    }

    /// The value as an exact integer, if it was written as one (`9223372036854775794`, DCGM's
    /// NOT_SUPPORTED sentinel, which `f64` cannot hold exactly).
    pub fn int_value(&self) -> Option<i64> {
        self.value_text.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffix_round_trips_through_text() {
        for ty in [
            MetricType::Counter,
            MetricType::Histogram,
            MetricType::GaugeHistogram,
            MetricType::Info,
        ] {
            for s in Suffix::allowed(ty) {
                assert_eq!(Suffix::from_suffix(s.as_str()), Some(*s));
            }
        }
        assert_eq!(Suffix::from_suffix("_bogus"), None);
    }

    #[test]
    fn timestamps_convert_to_seconds() {
        assert_eq!(Timestamp::Millis(1500).as_seconds(), 1.5);
        assert_eq!(Timestamp::Seconds(2.25).as_seconds(), 2.25);
    }
}
