//! A window of a Prometheus-compatible server, read for diagnosis: every catalogued name
//! (engines, dcgm-exporter, Kueue, kube-state-metrics) over `[from, to]` at `step`, one name per
//! `query_range` (split under the points limit by the client), each name's series handed to the
//! caller as soon as they arrive. Reading a name at a time keeps a day of a hundred pods to one
//! name's answer in memory instead of the whole window three times over (JSON, series, rows).
//!
//! `--match` matchers (`namespace="llm"` or `{namespace="llm"}`) narrow the read to the
//! deployment under test; several are read as a union (a series matched twice is one series).

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
}

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
        let (series, warnings) =
            answer.map_err(|e| OpsError::Task(format!("reading the window: {e}")))??;
        read.add(&series, warnings);
        if !series.is_empty() {
            each(series)?;
        }
    }
    Ok(read)
}

impl WindowRead {
    /// Counts one name's answer (a name without series is no name read); each warning once.
    fn add(&mut self, series: &[Series], warnings: Vec<String>) {
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
    for s in series {
        batch.push_series(s);
    }
    batch
}

/// One name's series under every matcher (each series once), and the server's warnings.
async fn read_name(
    client: &PromClient,
    name: &str,
    matchers: &[String],
    (from, to, step): (f64, f64, f64),
) -> Result<(Vec<Series>, Vec<String>), OpsError> {
    let (mut series, mut warnings) = (Vec::new(), Vec::new());
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
    }
    series.sort_by(|a, b| a.key.cmp(&b.key));
    series.dedup_by(|a, b| a.key == b.key);
    Ok((series, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each warning once, in the order first seen, across names; 80,000 distinct warnings (a
    /// 3.8 MB answer took 76 s when each was searched for in the list) are all kept.
    #[test]
    fn warnings_are_kept_once_each_in_order() {
        let mut read = WindowRead::default();
        read.add(&[], vec!["b".into(), "a".into(), "b".into()]);
        read.add(&[], vec!["a".into(), "c".into()]);
        assert_eq!(read.warnings, ["b", "a", "c"]);
        let many: Vec<String> = (0..80_000)
            .map(|i| format!("partial response {i}"))
            .collect();
        read.add(&[], many.clone());
        read.add(&[], many);
        assert_eq!(read.warnings.len(), 80_003);
        assert_eq!(read.names, 0, "a name without series is no name read");
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
