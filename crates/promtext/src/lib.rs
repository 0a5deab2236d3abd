//! `promtext`: the Prometheus exposition format (text 0.0.4 and OpenMetrics 1.0), read and written.
//!
//! - [`write`](mod@write): [`write::Writer`] renders families byte-for-byte as `prometheus_client` (vLLM) or
//!   dcgm-exporter print them; [`fmt`] holds the number formatting rules.
//! - [`parse`]: [`Parser`] streams [`Event`]s (`# HELP`, `# TYPE`, `# UNIT`, [`Sample`], `# EOF`)
//!   over `&[u8]` without copying names, labels or values; the private `lex` module reads the
//!   tokens of one line and `group` assigns samples to families by `# TYPE`.
//! - [`family`]: [`parse_families`] collects the stream into [`Family`] values plus the
//!   [`ParseError`]s of the bad lines (lenient) or the first one (strict).
//! - [`page_report`]: [`PageReport`], what a whole page says about itself (bad lines, duplicate
//!   series, a body that is JSON or binary) — the one warning every reader of a page prints.
//! - [`text`], [`labels`], [`sample`]: the borrowed value types ([`Escaped`] strings with lazy
//!   unescaping, [`Labels`], [`Sample`]); [`error`]: [`ParseError`] and [`ErrorKind`].
//!
//! No I/O, no async: bytes in, events/text out.
//!
//! ```
//! use promtext::{Event, MetricType, ParseOptions, Parser, parse_families};
//!
//! let page = b"# TYPE vllm:iteration_tokens_total histogram\n\
//!     vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"+Inf\"} 852.0\n\
//!     vllm:iteration_tokens_total_count{engine=\"0\"} 852.0\n\
//!     vllm:iteration_tokens_total_sum{engine=\"0\"} 5.052943e+06\n";
//! // Streaming: one event per meaningful line, nothing copied.
//! for event in Parser::new(page, ParseOptions::lenient()) {
//!     if let Ok(Event::Sample(s)) = event {
//!         assert_eq!(s.family_name(), "vllm:iteration_tokens_total");
//!         assert_eq!(s.labels.get("engine").unwrap(), "0");
//!     }
//! }
//! // Whole page: families grouped by `# TYPE`, plus the errors of bad lines.
//! let (families, errors) = parse_families(page);
//! assert!(errors.is_empty());
//! assert_eq!(families[0].ty, MetricType::Histogram);
//! assert_eq!(families[0].samples[2].value, 5052943.0);
//! ```

pub mod error;
pub mod family;
pub mod fmt;
mod format;
mod group;
pub mod labels;
mod lex;
pub mod openmetrics;
pub mod page_report;
pub mod parse;
pub mod sample;
pub mod text;
pub mod write;

pub use error::{ErrorKind, ParseError};
pub use family::{Family, parse_families, parse_families_with};
pub use labels::{Label, Labels};
pub use page_report::{PageReport, Shape};
pub use parse::{Event, Format, ParseOptions, Parser};
pub use sample::{Exemplar, Sample, Suffix, Timestamp};
pub use text::Escaped;

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

/// The fuzz target's body (`fuzz/fuzz_targets/parse.rs`), public so property tests run it too.
///
/// Parses `data` leniently and strictly in both formats, touches every lazily decoded string, and
/// checks the invariants between the modes. It panics only if one of those invariants is broken.
pub fn fuzz_parse(data: &[u8]) {
    for format in [Format::Text, Format::OpenMetrics] {
        let lenient = ParseOptions::lenient().with_format(format);
        let all: Vec<_> = Parser::new(data, lenient).collect();
        check_strict(data, lenient, &all);
        for item in &all {
            match item {
                Ok(event) => touch(event),
                Err(e) => {
                    assert!(e.line >= 1 && e.column >= 1 && e.text.len() <= error::MAX_LINE_TEXT)
                }
            }
        }
        check_families(data, lenient, &all);
        // What every reader of a page says of it, and OpenMetrics' rules, on any page.
        let (families, errors) = parse_families_with(data, lenient);
        let report = PageReport::new(data, &families, &errors);
        assert!(report.errors == errors.len() && report.warnings("fuzz").len() <= 4);
        let _ = openmetrics::violations(data, &families);
    }
}

/// Strict mode yields what lenient mode does, up to and including the first error.
fn check_strict(data: &[u8], lenient: ParseOptions, all: &[Result<Event<'_>, ParseError>]) {
    let strict: Vec<_> = Parser::new(
        data,
        ParseOptions {
            strict: true,
            ..lenient
        },
    )
    .collect();
    let first_err = all.iter().position(Result::is_err);
    let expected = first_err.map_or(all.len(), |i| i + 1);
    assert_eq!(
        strict.len(),
        expected,
        "strict mode must stop right after the first error"
    );
    // Compared as printed: a NaN value is never `==` to itself, yet both modes read it alike.
    assert!(
        strict
            .iter()
            .zip(all)
            .all(|(s, l)| s == l || format!("{s:?}") == format!("{l:?}")),
        "strict and lenient disagree"
    );
}

/// Grouping into families keeps every sample and every error of the event stream.
fn check_families(data: &[u8], lenient: ParseOptions, all: &[Result<Event<'_>, ParseError>]) {
    let (families, errors) = parse_families_with(data, lenient);
    let samples: usize = families.iter().map(|f| f.samples.len()).sum();
    let events = all
        .iter()
        .filter(|e| matches!(e, Ok(Event::Sample(_))))
        .count();
    assert_eq!(samples, events, "every sample lands in exactly one family");
    assert_eq!(
        errors.len(),
        all.len() - all.iter().filter(|e| e.is_ok()).count()
    );
}

fn touch(event: &Event<'_>) {
    let _ = match event {
        Event::Help { name, text } => name.unescape().len() + text.unescape().len(),
        Event::Type { name, ty } => name.unescape().len() + ty.as_str().len(),
        Event::Unit { name, unit } => name.unescape().len() + unit.len(),
        Event::Sample(s) => {
            let labels = s.exemplar.map(|e| e.labels).into_iter().chain([s.labels]);
            let lens = labels
                .flat_map(|l| l.iter())
                .map(|l| l.name.unescape().len() + l.value.unescape().len());
            s.family_name().unescape().len() + lens.sum::<usize>()
        }
        Event::Eof => 0,
    };
}
