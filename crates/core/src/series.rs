//! The shared time-series model: what every source (direct scrape, Prometheus API) produces and
//! what the store keeps and the diagnosis reads.
//!
//! - [`Labels`]: a label set, sorted by name, names unique, `__name__` excluded.
//! - [`SeriesKey`]: metric name + [`Labels`]; [`Series`]: a key and its [`Point`]s
//!   (`t` in Unix seconds, `v` as `f64`).
//! - [`ScrapeHealth`]: one scrape or query of a source (`up`, duration, bytes, [`FailureKind`]).
//! - [`Batch`]: what a source hands to the store while a run goes on.
//!
//! A missing sample is **no point**, never a 0: a series that vanishes from a page simply stops
//! getting points, and DCGM's "blank" sentinels ([`is_dcgm_blank`]) are dropped. A `NaN` point
//! exists only if the source itself wrote `NaN`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// A label set: `(name, value)` pairs sorted by name, names unique, without `__name__`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(from = "Vec<(String, String)>", into = "Vec<(String, String)>")]
pub struct Labels(Vec<(String, String)>);

impl Labels {
    /// Sorts `pairs` by name; drops `__name__`; on a duplicate name the last value wins.
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut v: Vec<(String, String)> =
            pairs.into_iter().filter(|(n, _)| n != "__name__").collect();
        // Stable sort keeps the written order of duplicates, so "last wins" below is well defined.
        v.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(String, String)> = Vec::with_capacity(v.len());
        for pair in v {
            match out.last_mut() {
                Some(last) if last.0 == pair.0 => *last = pair,
                _ => out.push(pair),
            }
        }
        Labels(out)
    }

    /// The value of label `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()
            .map(|i| self.0[i].1.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<Vec<(String, String)>> for Labels {
    fn from(pairs: Vec<(String, String)>) -> Self {
        Labels::new(pairs)
    }
}

impl From<Labels> for Vec<(String, String)> {
    fn from(l: Labels) -> Self {
        l.0
    }
}

impl fmt::Display for Labels {
    /// `{a="1",b="x\"y"}` with Prometheus escaping; empty sets print nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        f.write_str("{")?;
        for (i, (n, v)) in self.0.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let v = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            write!(f, "{sep}{n}=\"{v}\"")?;
        }
        f.write_str("}")
    }
}

/// Identity of a series: metric name and labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SeriesKey {
    pub name: String,
    pub labels: Labels,
}

impl SeriesKey {
    pub fn new(name: impl Into<String>, labels: Labels) -> Self {
        SeriesKey {
            name: name.into(),
            labels,
        }
    }
}

impl fmt::Display for SeriesKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.name, self.labels)
    }
}

/// One observation: `t` in Unix seconds, `v` the value (`NaN` only if the source said so).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub t: f64,
    pub v: f64,
}

/// A series and its points, in time order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub key: SeriesKey,
    pub points: Vec<Point>,
}

impl Series {
    /// Holes in the series: consecutive points more than 1.5 × `step` apart. Time before the
    /// first and after the last point is not a hole (a series that vanished is absent, not gappy).
    pub fn gaps(&self, step: f64) -> usize {
        count_gaps(self.points.iter().map(|p| p.t), step)
    }
}

/// Holes in a sorted sequence of timestamps (see [`Series::gaps`]).
pub fn count_gaps(times: impl IntoIterator<Item = f64>, step: f64) -> usize {
    let mut prev: Option<f64> = None;
    let mut gaps = 0;
    for t in times {
        if prev.is_some_and(|p| t - p > 1.5 * step) {
            gaps += 1;
        }
        prev = Some(t);
    }
    gaps
}

/// DCGM FP64 blank threshold: 2^47 (`DCGM_FP64_BLANK`, NVIDIA/DCGM `nvcmvalue.h`).
pub const DCGM_FP64_BLANK: f64 = 140_737_488_355_328.0;
/// DCGM INT64 blank threshold: `0x7ffffffffffffff0` (`DCGM_INT64_BLANK`).
pub const DCGM_INT64_BLANK: i64 = 0x7fff_ffff_ffff_fff0;

/// Whether a sample is a DCGM "no value" sentinel and so must be treated as missing.
///
/// Only DCGM fields (`DCGM_*` names) carry sentinels: a vLLM byte counter may legitimately pass
/// 2^47. Values written as integers use the INT64 threshold (9223372036854775792; DCGM counters
/// such as energy in mJ may exceed 2^47), other values the FP64 one (2^47).
pub fn is_dcgm_blank(name: &str, value: f64, written_as_integer: bool) -> bool {
    if !name.starts_with("DCGM_") {
        return false;
    }
    if written_as_integer {
        // Every INT64 sentinel rounds to 2^63 as an f64, so compare in f64.
        value >= DCGM_INT64_BLANK as f64
    } else {
        value >= DCGM_FP64_BLANK
    }
}

/// Whether a number's text is an integer literal (`42`, `-7`, `9223372036854775794`).
pub fn is_integer_text(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Why one scrape or query of a source failed. Counted by kind, never by message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// No TCP connection (refused, unreachable, DNS).
    Connect,
    /// No complete answer within the timeout.
    Timeout,
    /// A non-2xx HTTP status.
    Http,
    /// The body was larger than the cap.
    TooLarge,
    /// The body could not be decoded (bad gzip, not UTF-8, not JSON).
    Decode,
    /// The exposition had malformed lines (the valid ones are kept).
    Parse,
    /// The Prometheus API answered `status: error` (bad selector, execution error…).
    Api,
    /// The answer was valid but held no data at all.
    NoData,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Connect => "connect",
            FailureKind::Timeout => "timeout",
            FailureKind::Http => "http",
            FailureKind::TooLarge => "too_large",
            FailureKind::Decode => "decode",
            FailureKind::Parse => "parse",
            FailureKind::Api => "api",
            FailureKind::NoData => "no_data",
        }
    }

    pub fn from_name(s: &str) -> Option<Self> {
        use FailureKind::*;
        [Connect, Timeout, Http, TooLarge, Decode, Parse, Api, NoData]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The health of one scrape (or one API query) of a source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScrapeHealth {
    /// When it started, Unix seconds.
    pub t: f64,
    /// Whether samples were taken from it (Prometheus `up`).
    pub up: bool,
    pub duration_s: f64,
    /// Body bytes as received (compressed size when gzip was used).
    pub bytes: u64,
    /// Samples kept (sentinels excluded).
    pub samples: u64,
    pub failure: Option<FailureKind>,
    /// HTTP status, when there was a response.
    pub status: Option<u16>,
    /// A short human explanation of the failure, naming what went wrong (never a secret).
    pub message: Option<String>,
}

/// What a source hands to the store: samples and health records, in arrival order.
///
/// Keys are shared (`Arc`) because a scrape loop emits the same series every interval.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// The source's name (`vllm`, `dcgm`, `prometheus`).
    pub source: String,
    pub samples: Vec<(Arc<SeriesKey>, Point)>,
    pub health: Vec<ScrapeHealth>,
}

impl Batch {
    pub fn new(source: impl Into<String>) -> Self {
        Batch {
            source: source.into(),
            ..Batch::default()
        }
    }

    /// Adds every point of `series`.
    pub fn push_series(&mut self, series: Series) {
        let key = Arc::new(series.key);
        self.samples
            .extend(series.points.into_iter().map(|p| (Arc::clone(&key), p)));
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty() && self.health.is_empty()
    }
}

/// Groups `(key, point)` samples into series sorted by key, points sorted by time.
pub fn group<'a>(samples: impl IntoIterator<Item = &'a (Arc<SeriesKey>, Point)>) -> Vec<Series> {
    let mut by_key: std::collections::BTreeMap<&SeriesKey, Vec<Point>> = Default::default();
    for (key, point) in samples {
        by_key.entry(key.as_ref()).or_default().push(*point);
    }
    by_key
        .into_iter()
        .map(|(key, mut points)| {
            points.sort_by(|a, b| a.t.total_cmp(&b.t));
            Series {
                key: key.clone(),
                points,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        Labels::new(pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())))
    }

    #[test]
    fn labels_are_sorted_unique_and_without_name() {
        let l = labels(&[("pod", "a"), ("__name__", "x"), ("gpu", "0"), ("pod", "b")]);
        assert_eq!(l.iter().collect::<Vec<_>>(), [("gpu", "0"), ("pod", "b")]);
        assert_eq!(l.get("pod"), Some("b"));
        assert_eq!(l.get("nope"), None);
        assert_eq!(l, labels(&[("gpu", "0"), ("pod", "b")]));
    }

    #[test]
    fn keys_print_like_prometheus() {
        let k = SeriesKey::new("vllm:x", labels(&[("b", "q\"\\\n"), ("a", "1")]));
        assert_eq!(k.to_string(), r#"vllm:x{a="1",b="q\"\\\n"}"#);
        assert_eq!(SeriesKey::new("up", Labels::default()).to_string(), "up");
    }

    #[test]
    fn deserialised_pairs_are_normalised() {
        // serde goes through `From<Vec<(String, String)>>`, so stored or hand-written label
        // lists come back sorted and unique.
        let raw = vec![
            ("z".to_owned(), "1".to_owned()),
            ("a".to_owned(), "2".to_owned()),
        ];
        let l = Labels::from(raw);
        assert_eq!(l.iter().collect::<Vec<_>>(), [("a", "2"), ("z", "1")]);
        let back: Vec<(String, String)> = l.into();
        assert_eq!(back[0].0, "a");
    }

    #[test]
    fn dcgm_sentinels_are_blank_only_for_dcgm_fields() {
        let name = "DCGM_FI_DEV_MEMORY_TEMP";
        assert!(is_dcgm_blank(name, 9223372036854775794.0, true));
        assert!(is_dcgm_blank(name, 9223372036854775792.0, true));
        assert!(
            !is_dcgm_blank(name, 4.0e14, true),
            "a big integer counter is real"
        );
        assert!(is_dcgm_blank(name, DCGM_FP64_BLANK, false));
        assert!(is_dcgm_blank(name, 1.5e15, false));
        assert!(!is_dcgm_blank(name, DCGM_FP64_BLANK - 1.0, false));
        assert!(
            !is_dcgm_blank(name, f64::NAN, false),
            "NaN is a value, not a sentinel"
        );
        assert!(!is_dcgm_blank(
            "process_virtual_memory_bytes",
            1.5e15,
            false
        ));
    }

    #[test]
    fn integer_text_detection() {
        for t in ["0", "42", "-7", "+3", "9223372036854775794"] {
            assert!(is_integer_text(t), "{t}");
        }
        for t in ["", "-", "1.0", "1e3", "NaN", "+Inf", "3.471000"] {
            assert!(!is_integer_text(t), "{t}");
        }
    }

    #[test]
    fn gaps_count_holes_not_edges() {
        let pts = |ts: &[f64]| Series {
            key: SeriesKey::new("m", Labels::default()),
            points: ts.iter().map(|&t| Point { t, v: 1.0 }).collect(),
        };
        assert_eq!(pts(&[]).gaps(1.0), 0);
        assert_eq!(pts(&[1.0, 2.0, 3.0]).gaps(1.0), 0);
        assert_eq!(pts(&[1.0, 2.0, 5.0, 6.0, 9.0]).gaps(1.0), 2);
        assert_eq!(pts(&[1.0, 2.4]).gaps(1.0), 0, "jitter is not a gap");
    }

    #[test]
    fn failure_kinds_round_trip() {
        for k in [
            FailureKind::Connect,
            FailureKind::TooLarge,
            FailureKind::NoData,
        ] {
            assert_eq!(FailureKind::from_name(k.as_str()), Some(k));
            assert_eq!(k.to_string(), k.as_str());
        }
        assert_eq!(FailureKind::from_name("x"), None);
    }

    #[test]
    fn batches_share_keys() {
        let mut b = Batch::new("vllm");
        assert!(b.is_empty());
        b.push_series(Series {
            key: SeriesKey::new("m", Labels::default()),
            points: vec![
                Point { t: 1.0, v: 1.0 },
                Point {
                    t: 2.0,
                    v: f64::NAN,
                },
            ],
        });
        assert_eq!(b.samples.len(), 2);
        assert!(Arc::ptr_eq(&b.samples[0].0, &b.samples[1].0));
        assert!(b.samples[1].1.v.is_nan());
    }

    #[test]
    fn grouping_sorts_keys_and_times() {
        let a = Arc::new(SeriesKey::new("a", Labels::default()));
        let b = Arc::new(SeriesKey::new("b", Labels::default()));
        let p = |t| Point { t, v: t };
        let samples = [
            (b.clone(), p(2.0)),
            (a.clone(), p(3.0)),
            (b, p(1.0)),
            (a, p(1.0)),
        ];
        let series = group(&samples);
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].key.name, "a");
        let ts: Vec<f64> = series[1].points.iter().map(|p| p.t).collect();
        assert_eq!(ts, [1.0, 2.0]);
    }
}
