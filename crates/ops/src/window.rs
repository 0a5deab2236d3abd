//! A window of a Prometheus-compatible server, read for diagnosis: every catalogued name
//! (engines, dcgm-exporter, Kueue, kube-state-metrics) over `[from, to]` at `step`, one name per
//! `query_range` (split under the points limit by the client), each name's series handed to the
//! caller as soon as they arrive. Reading a name at a time keeps a day of a hundred pods to one
//! name's answer in memory instead of the whole window three times over (JSON, series, rows).
//!
//! `--match` matchers (`namespace="llm"` or `{namespace="llm"}`) narrow the read to the
//! deployment under test; several are read as a union (a series matched twice is one series).
//!
//! Answers are held to the request: the client drops points outside the range and step grid
//! asked ([`llmscope_collect::prom::client::hold_to_request`]), a name brings at most
//! [`MAX_SERIES_PER_NAME`] series, and [`WindowRead::notes`] says what was left out, so a
//! server answering another year's points or a million series costs the decode, not the verdict.

use crate::OpsError;
use futures_util::StreamExt;
use llmscope_collect::prom::client::PromClient;
use llmscope_core::series::{Batch, Series};
use std::sync::Arc;

/// The window to read.
#[derive(Debug, Clone)]
pub struct WindowQuery<'a> {
    pub from: f64,
    pub to: f64,
    pub step: f64,
    pub matchers: &'a [String],
}

/// What was read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowRead {
    /// Names that had series.
    pub names: usize,
    pub series: usize,
    pub points: u64,
    /// The server's warnings (e.g. Thanos partial responses), each once, in the order first seen.
    pub warnings: Vec<String>,
    /// The same warnings as a set: each new one is checked in constant time, so a server
    /// answering tens of thousands of warnings costs linear, not quadratic, time.
    seen: std::collections::HashSet<String>,
    /// Points the server answered outside what was asked (another range, more than the step
    /// grid holds, repeated), dropped before anything read them.
    pub dropped: u64,
    /// Names that answered more series than one name may bring ([`MAX_SERIES_PER_NAME`]):
    /// the name and how many it answered. The first ones by label were read.
    pub capped: Vec<(String, usize)>,
}

/// Series one name may bring to a read: a day of a thousand pods' engines and GPUs is well
/// within it; a server (or a selector) answering more would hold the process's memory hostage.
pub const MAX_SERIES_PER_NAME: usize = 50_000;

/// `--from`/`--to` as users write them (`-30m`, `now`, RFC 3339, Unix seconds), read at `now`;
/// the end must come after the start.
pub fn parse_window(from: &str, to: &str, now: f64) -> Result<(f64, f64), OpsError> {
    let time = |t: &str| {
        llmscope_collect::time::parse_time(t, now).map_err(|e| OpsError::Invalid(e.to_string()))
    };
    let (from, to) = (time(from)?, time(to)?);
    if to <= from {
        return Err(OpsError::Invalid("--to must be after --from".to_owned()));
    }
    Ok((from, to))
}

/// The label matchers of a `--match` value, given as `namespace="llm"` or `{namespace="llm"}`.
pub fn matcher_body(m: &str) -> &str {
    m.trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim()
}

/// The selectors that read `name` under `matchers`.
fn selectors(name: &str, matchers: &[String]) -> Vec<String> {
    if matchers.is_empty() {
        return vec![format!("{{__name__=\"{name}\"}}")];
    }
    matchers
        .iter()
        .map(|m| format!("{{__name__=\"{name}\", {}}}", matcher_body(m)))
        .collect()
}

/// The catalog's names, each once, in a stable order.
fn catalog_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = llmscope_catalog::METRICS.iter().map(|m| m.name).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Names asked for at once: the server prepares the next answers (and the kernel queues them)
/// while one is decoded and stored, and memory stays a few names' answers. On the bench of
/// 100 pods × 24 h (one thread): 3 in flight 2.2-2.6 s / 117-123 MiB, 6 in flight 2.0-2.1 s /
/// 132-139 MiB.
const IN_FLIGHT: usize = 6;

/// Reads the window name by name and gives each name's series (non-empty), in the catalog's
/// order, to `each`.
pub async fn read_window(
    client: &PromClient,
    w: &WindowQuery<'_>,
    mut each: impl FnMut(Vec<Series>) -> Result<(), OpsError>,
) -> Result<WindowRead, OpsError> {
    let mut read = WindowRead::default();
    let matchers: Arc<[String]> = w.matchers.into();
    let (from, to, step) = (w.from, w.to, w.step);
    // Each name is read by a task of its own: the answers keep arriving (and decoding, on the
    // other worker) while `each` stores the previous one.
    let mut answers = futures_util::stream::iter(catalog_names())
        .map(|name| {
            let (client, matchers) = (client.clone(), Arc::clone(&matchers));
            tokio::spawn(async move { read_name(&client, name, &matchers, (from, to, step)).await })
        })
        .buffered(IN_FLIGHT);
    while let Some(answer) = answers.next().await {
        let name = answer.map_err(|e| OpsError::Task(format!("reading the window: {e}")))??;
        let series = read.add(name);
        if !series.is_empty() {
            each(series)?;
        }
    }
    Ok(read)
}

/// One name's answer under every matcher.
struct NameRead {
    name: &'static str,
    series: Vec<Series>,
    warnings: Vec<String>,
    dropped: u64,
}

impl WindowRead {
    /// Counts one name's answer (a name without series is no name read; each warning once) and
    /// gives back its series, held to [`MAX_SERIES_PER_NAME`].
    fn add(&mut self, name: NameRead) -> Vec<Series> {
        let NameRead {
            name,
            mut series,
            warnings,
            dropped,
        } = name;
        self.dropped += dropped;
        if series.len() > MAX_SERIES_PER_NAME {
            self.capped.push((name.to_owned(), series.len()));
            series.truncate(MAX_SERIES_PER_NAME);
        }
        self.count(&series, warnings);
        series
    }

    /// What the read left out, as sentences for the user (empty when it left nothing out).
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.dropped > 0 {
            out.push(format!(
                "the server answered {} points the window did not ask for (outside its range, beyond its step grid, or repeated): dropped, not read",
                llmscope_core::number::thousands(self.dropped as f64)
            ));
        }
        for (name, n) in &self.capped {
            out.push(format!(
                "{name} answered {} series, more than the {} one name may bring: the first {} by label were read — narrow the window with --match",
                llmscope_core::number::thousands(*n as f64),
                llmscope_core::number::thousands(MAX_SERIES_PER_NAME as f64),
                llmscope_core::number::thousands(MAX_SERIES_PER_NAME as f64),
            ));
        }
        out
    }

    fn count(&mut self, series: &[Series], warnings: Vec<String>) {
        self.add_warnings(warnings);
        if !series.is_empty() {
            self.names += 1;
            self.series += series.len();
            self.points += series.iter().map(|s| s.points.len() as u64).sum::<u64>();
        }
    }

    fn add_warnings(&mut self, warnings: Vec<String>) {
        for warning in warnings {
            if self.seen.insert(warning.clone()) {
                self.warnings.push(warning);
            }
        }
    }
}

/// A name's series as one batch of the `prometheus` source, to store.
pub fn prometheus_batch(series: Vec<Series>) -> Batch {
    let mut batch = Batch::new("prometheus");
    // Reserved whole: grown by doubling, one name of 100 pods × 24 h held up to twice its 14 MB.
    let points = series.iter().map(|s| s.points.len()).sum();
    batch.samples.reserve_exact(points);
    for s in series {
        batch.push_series(s);
    }
    batch
}

/// One name's series under every matcher (each series once), the server's warnings, and the
/// points it answered that were not asked for.
async fn read_name(
    client: &PromClient,
    name: &'static str,
    matchers: &[String],
    (from, to, step): (f64, f64, f64),
) -> Result<NameRead, OpsError> {
    let (mut series, mut warnings, mut dropped) = (Vec::new(), Vec::new(), 0);
    for selector in selectors(name, matchers) {
        let r = client
            .query_range(&selector, from, to, step)
            .await
            .map_err(|source| OpsError::Prom {
                context: format!("reading the window ({selector})"),
                source,
            })?;
        series.extend(r.data);
        warnings.extend(r.warnings);
        dropped += r.dropped;
    }
    series.sort_by(|a, b| a.key.cmp(&b.key));
    series.dedup_by(|a, b| a.key == b.key);
    Ok(NameRead {
        name,
        series,
        warnings,
        dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each warning once, in the order first seen, across names; 80,000 distinct warnings (a
    /// 3.8 MB answer took 76 s when each was searched for in the list) are all kept.
    #[test]
    fn warnings_are_kept_once_each_in_order() {
        let mut read = WindowRead::default();
        read.count(&[], vec!["b".into(), "a".into(), "b".into()]);
        read.count(&[], vec!["a".into(), "c".into()]);
        assert_eq!(read.warnings, ["b", "a", "c"]);
        let many: Vec<String> = (0..80_000)
            .map(|i| format!("partial response {i}"))
            .collect();
        read.count(&[], many.clone());
        read.count(&[], many);
        assert_eq!(read.warnings.len(), 80_003);
        assert_eq!(read.names, 0, "a name without series is no name read");
    }

    /// A name answering more series than one name may bring is read to the cap and said; the
    /// points the client dropped are counted across names and said once.
    #[test]
    fn a_name_past_the_series_cap_is_read_to_the_cap_and_said() {
        use llmscope_core::series::{Labels, Point, SeriesKey};
        let one = |i: usize| Series {
            key: SeriesKey::new(
                "kube_pod_labels",
                Labels::new([("pod".to_owned(), format!("p{i:06}"))]),
            ),
            points: vec![Point { t: 0.0, v: 1.0 }],
        };
        let mut read = WindowRead::default();
        let kept = read.add(NameRead {
            name: "kube_pod_labels",
            series: (0..MAX_SERIES_PER_NAME + 7).map(one).collect(),
            warnings: Vec::new(),
            dropped: 1_999_866,
        });
        assert_eq!(kept.len(), MAX_SERIES_PER_NAME);
        assert_eq!(read.series, MAX_SERIES_PER_NAME);
        assert_eq!(
            read.capped,
            [("kube_pod_labels".to_owned(), MAX_SERIES_PER_NAME + 7)]
        );
        let notes = read.notes().join("\n");
        assert!(notes.contains("1,999,866 points"), "{notes}");
        assert!(
            notes.contains("kube_pod_labels answered 50,007 series"),
            "{notes}"
        );
        assert!(WindowRead::default().notes().is_empty());
    }

    #[test]
    fn one_selector_per_name_and_matcher() {
        assert_eq!(
            selectors("vllm:num_requests_running", &[]),
            vec![r#"{__name__="vllm:num_requests_running"}"#]
        );
        let m = vec![
            r#"{namespace="llm"}"#.to_owned(),
            r#"pod=~"a.*""#.to_owned(),
        ];
        assert_eq!(
            selectors("x", &m),
            vec![
                r#"{__name__="x", namespace="llm"}"#,
                r#"{__name__="x", pod=~"a.*"}"#
            ]
        );
        let names = catalog_names();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "each name once");
        assert!(names.contains(&"DCGM_FI_DEV_GPU_UTIL"));
    }
}
