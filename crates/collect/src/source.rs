//! The one source interface: direct scrape ([`crate::scrape::ScrapeSource`]) and the Prometheus
//! API ([`crate::prom::PromSource`]) both implement [`Source`].
//!
//! A source is asked to [`Source::collect`] a [`Window`] — live (from now on, for a duration) or
//! past (a time range) — and hands what it reads to a [`Sink`] as [`Batch`]es of the core series
//! model while it goes, so a store can commit them as they come. It returns a [`SourceReport`]:
//! what was asked, the server version if it told, and the [`Problem`]s met (counted by
//! [`FailureKind`], with the first message) — failures are reported, never turned into zeros.

use llmscope_core::series::{Batch, FailureKind, ScrapeHealth};
use serde::Serialize;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::watch;

/// A boxed future, so sources can live in one `Vec<Box<dyn Source>>`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What to read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Window {
    /// From now, for this long (direct scrape records it; Prometheus is read at the end).
    Live { duration: Duration },
    /// A past range, Unix seconds, both ends included.
    Past { from: f64, to: f64 },
}

/// Where batches go. `false` means the receiver is gone and the source should stop.
pub trait Sink: Send + Sync {
    fn send(&self, batch: Batch) -> bool;
}

impl<F: Fn(Batch) -> bool + Send + Sync> Sink for F {
    fn send(&self, batch: Batch) -> bool {
        self(batch)
    }
}

/// Tells running sources to stop early (Ctrl-C). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Stop(Option<watch::Receiver<bool>>);

/// The sending half of [`Stop`].
#[derive(Debug)]
pub struct StopHandle(watch::Sender<bool>);

impl Stop {
    pub fn new() -> (StopHandle, Stop) {
        let (tx, rx) = watch::channel(false);
        (StopHandle(tx), Stop(Some(rx)))
    }

    /// A stop that never fires.
    pub fn never() -> Stop {
        Stop(None)
    }

    pub fn is_stopped(&self) -> bool {
        self.0.as_ref().is_some_and(|rx| *rx.borrow())
    }

    /// Resolves when stop was requested (never, if the handle is dropped without stopping).
    pub async fn stopped(&mut self) {
        if let Some(rx) = &mut self.0
            && rx.wait_for(|s| *s).await.is_ok()
        {
            return;
        }
        std::future::pending::<()>().await;
    }

    /// Sleeps for `d` unless stopped first; `true` when stopped.
    pub async fn sleep(&mut self, d: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(d) => self.is_stopped(),
            _ = self.stopped() => true,
        }
    }
}

impl StopHandle {
    pub fn stop(&self) {
        let _ = self.0.send(true);
    }
}

/// A problem a source met, aggregated by kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    pub kind: FailureKind,
    pub count: u64,
    /// The first occurrence's message; it names the source and what failed.
    pub message: String,
    pub first_t: f64,
    pub last_t: f64,
}

/// What a source did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceReport {
    pub name: String,
    /// `scrape` or `prometheus`.
    pub kind: &'static str,
    /// The window actually covered, Unix seconds.
    pub window: (f64, f64),
    /// Scrapes made (direct) or queries sent (Prometheus).
    pub attempts: u64,
    pub failures: u64,
    pub problems: Vec<Problem>,
    /// Warnings the server attached to good answers (Thanos partial responses…).
    pub warnings: Vec<String>,
    /// `"2.42.0"` for Prometheus `buildinfo`, the driver for dcgm, … when known.
    pub version: Option<String>,
    /// Whether it was stopped early.
    pub stopped: bool,
}

/// Why a source could not even start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SourceError {
    #[error(
        "source `{0}` scrapes live targets and cannot read the past: use --duration, or --prometheus for a past window"
    )]
    PastWindow(String),
    #[error("source `{source_name}`: {why}")]
    Config { source_name: String, why: String },
}

/// A source of series.
pub trait Source: Send + Sync {
    /// The source's name (`vllm`, `dcgm`, `prometheus`).
    fn name(&self) -> &str;
    /// `scrape` or `prometheus`.
    fn kind(&self) -> &'static str;
    /// Its URL, without credentials.
    fn url(&self) -> String;
    /// Reads `window`, sending batches to `sink` as it goes.
    fn collect<'a>(
        &'a self,
        window: Window,
        sink: &'a dyn Sink,
        stop: Stop,
    ) -> BoxFuture<'a, Result<SourceReport, SourceError>>;
}

/// Aggregates health records into [`Problem`]s by kind.
#[derive(Debug, Default)]
pub struct ProblemLog {
    by_kind: BTreeMap<FailureKind, Problem>,
    pub attempts: u64,
    pub failures: u64,
}

impl ProblemLog {
    /// Counts one scrape/query; a failed one (or one with a failure kind) is a problem.
    pub fn record(&mut self, h: &ScrapeHealth) {
        self.attempts += 1;
        if !h.up {
            self.failures += 1;
        }
        let Some(kind) = h.failure else { return };
        let message = h.message.clone().unwrap_or_else(|| kind.to_string());
        self.note(kind, message, h.t);
    }

    /// Counts a problem that is not one scrape (e.g. a selector with no data).
    pub fn note(&mut self, kind: FailureKind, message: String, t: f64) {
        let p = self.by_kind.entry(kind).or_insert(Problem {
            kind,
            count: 0,
            message,
            first_t: t,
            last_t: t,
        });
        p.count += 1;
        p.last_t = t;
    }

    pub fn into_problems(self) -> Vec<Problem> {
        self.by_kind.into_values().collect()
    }
}

/// The health of a scrape or query at `t` before anything is known of it: down, nothing read.
pub(crate) fn blank_health(t: f64) -> ScrapeHealth {
    ScrapeHealth {
        t,
        up: false,
        duration_s: 0.0,
        bytes: 0,
        samples: 0,
        failure: None,
        status: None,
        message: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(t: f64, up: bool, failure: Option<FailureKind>) -> ScrapeHealth {
        ScrapeHealth {
            t,
            up,
            duration_s: 0.0,
            bytes: 0,
            samples: 0,
            failure,
            status: None,
            message: failure.map(|k| format!("first {k} at {t}")),
        }
    }

    #[test]
    fn problems_aggregate_by_kind_keeping_the_first_message() {
        let mut log = ProblemLog::default();
        log.record(&h(1.0, true, None));
        log.record(&h(2.0, false, Some(FailureKind::Http)));
        log.record(&h(3.0, false, Some(FailureKind::Http)));
        log.record(&h(4.0, true, Some(FailureKind::Parse)));
        assert_eq!((log.attempts, log.failures), (4, 2));
        let problems = log.into_problems();
        assert_eq!(problems.len(), 2);
        assert_eq!(problems[0].kind, FailureKind::Http);
        assert_eq!(
            (problems[0].count, problems[0].first_t, problems[0].last_t),
            (2, 2.0, 3.0)
        );
        assert_eq!(problems[0].message, "first http at 2");
    }

    #[tokio::test]
    async fn stop_interrupts_sleep() {
        let (handle, mut stop) = Stop::new();
        assert!(!stop.is_stopped());
        handle.stop();
        assert!(stop.sleep(Duration::from_secs(60)).await);
        let mut never = Stop::never();
        assert!(!never.sleep(Duration::from_millis(1)).await);
    }

    #[test]
    fn closures_are_sinks() {
        let seen = std::sync::Mutex::new(0);
        let sink = |b: Batch| {
            *seen.lock().unwrap() += b.samples.len();
            true
        };
        assert!(Sink::send(&sink, Batch::new("x")));
        assert_eq!(*seen.lock().unwrap(), 0);
    }
}
