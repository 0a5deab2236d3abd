//! [`PromSource`]: `--match` selectors read with `query_range` over a window, as a
//! [`Source`].
//!
//! A past window is read at once; a live one is waited out and then read (Prometheus did the
//! scraping). Each selector is one query (split under the points limit by the client); its
//! series go to the sink in batches, with one [`ScrapeHealth`] per query. A failed query, or one
//! that matched nothing, is a [`crate::source::Problem`] naming the selector; the other
//! selectors still run. API warnings (Thanos partial responses) are kept in the report.

use super::PromClient;
use crate::source::{
    BoxFuture, ProblemLog, Sink, Source, SourceError, SourceReport, Stop, Window, blank_health,
};
use crate::time::{format_rfc3339, unix_now};
use llmscope_core::series::{Batch, FailureKind, ScrapeHealth, Series, is_dcgm_blank};
use std::time::{Duration, Instant};

/// Series per batch handed to the sink.
const SERIES_PER_BATCH: usize = 64;

/// A Prometheus-compatible server read through `query_range`.
#[derive(Debug, Clone)]
pub struct PromSource {
    name: String,
    client: PromClient,
    matchers: Vec<String>,
    step: Duration,
}

impl PromSource {
    pub fn new(
        name: impl Into<String>,
        client: PromClient,
        matchers: Vec<String>,
        step: Duration,
    ) -> Self {
        PromSource {
            name: name.into(),
            client,
            matchers,
            step,
        }
    }

    async fn read(
        &self,
        from: f64,
        to: f64,
        sink: &dyn Sink,
        log: &mut ProblemLog,
        warnings: &mut Vec<String>,
    ) {
        for m in &self.matchers {
            let (series, health) = self.query(m, from, to, warnings).await;
            if health.up && series.is_empty() {
                let why = format!(
                    "matched no series between {} and {}",
                    format_rfc3339(from),
                    format_rfc3339(to)
                );
                log.note(FailureKind::NoData, self.message(m, &why), health.t);
            }
            log.record(&health);
            if !self.send(series, health, sink) {
                return;
            }
        }
    }

    /// Selector `m`'s series over the window (none when the query failed), and the query's
    /// health; the API's warnings go to `warnings`.
    async fn query(
        &self,
        m: &str,
        from: f64,
        to: f64,
        warnings: &mut Vec<String>,
    ) -> (Vec<Series>, ScrapeHealth) {
        let t = unix_now();
        let began = Instant::now();
        let result = self
            .client
            .query_range(m, from, to, self.step.as_secs_f64())
            .await;
        let mut health = ScrapeHealth {
            up: result.is_ok(),
            duration_s: began.elapsed().as_secs_f64(),
            ..blank_health(t)
        };
        let series = match result {
            Ok(r) => {
                for w in r.warnings {
                    warnings.push(format!("{}: `{m}`: {w}", self.name));
                }
                r.data
            }
            Err(e) => {
                health.failure = Some(e.kind());
                health.message = Some(self.message(m, &e.to_string()));
                Vec::new()
            }
        };
        health.samples = series.iter().map(|s| s.points.len() as u64).sum();
        (series, health)
    }

    /// Sends the series of one query, DCGM sentinels dropped, health in the last batch.
    fn send(&self, series: Vec<Series>, health: ScrapeHealth, sink: &dyn Sink) -> bool {
        let mut batches: Vec<Batch> = Vec::new();
        for chunk in series.chunks(SERIES_PER_BATCH) {
            let mut b = Batch::new(self.name.clone());
            for s in chunk {
                let mut s = s.clone();
                // Through the API, integer-ness is lost: only the FP64 threshold can be applied,
                // and the INT64 sentinels are far above it.
                s.points.retain(|p| !is_dcgm_blank(&s.key.name, p.v, false));
                b.push_series(s);
            }
            batches.push(b);
        }
        let mut last = batches
            .pop()
            .unwrap_or_else(|| Batch::new(self.name.clone()));
        last.health.push(health);
        batches.push(last);
        batches.into_iter().all(|b| sink.send(b))
    }

    fn message(&self, selector: &str, why: &str) -> String {
        format!(
            "{} ({}): `{selector}`: {why}",
            self.name,
            self.client.base()
        )
    }
}

impl Source for PromSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        "prometheus"
    }

    fn url(&self) -> String {
        self.client.base().to_string()
    }

    fn collect<'a>(
        &'a self,
        window: Window,
        sink: &'a dyn Sink,
        mut stop: Stop,
    ) -> BoxFuture<'a, Result<SourceReport, SourceError>> {
        Box::pin(async move {
            if self.matchers.is_empty() {
                return Err(SourceError::Config {
                    source_name: self.name.clone(),
                    why: "no --match selector to read".into(),
                });
            }
            let (from, to, stopped) = window_bounds(window, &mut stop).await;
            let version = self.client.buildinfo().await.ok();
            let mut log = ProblemLog::default();
            let mut warnings = Vec::new();
            self.read(from, to, sink, &mut log, &mut warnings).await;
            Ok(SourceReport {
                name: self.name.clone(),
                kind: "prometheus",
                window: (from, to),
                attempts: log.attempts,
                failures: log.failures,
                problems: log.into_problems(),
                warnings,
                version,
                stopped,
            })
        })
    }
}

/// The window to read: a past one as given; a live one waited out (or until stopped).
async fn window_bounds(window: Window, stop: &mut Stop) -> (f64, f64, bool) {
    match window {
        Window::Past { from, to } => (from, to, false),
        Window::Live { duration } => {
            let from = unix_now();
            let stopped = stop.sleep(duration).await;
            (from, unix_now(), stopped)
        }
    }
}
