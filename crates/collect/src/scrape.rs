//! Direct scrape: one scrape loop, parameterised by a per-target context (Prometheus `scrapeLoop`).
//!
//! [`ScrapeSource`] is one target ([`ScrapeTarget`]: a name and a URL) with a [`ScrapeConfig`]
//! (interval, timeout < interval, body-size cap, `Accept` negotiation, gzip). Its loop waits a
//! fixed per-target offset inside the interval (jitter that spreads many targets, stable across
//! runs, as Prometheus does), then scrapes every interval until the window ends or it is
//! stopped. Each scrape becomes one [`Batch`]: the page's samples ([`crate::samples`]) and one
//! [`ScrapeHealth`] (`up`, duration, wire bytes, failure). A failed scrape has no samples — the
//! series simply get no point — and a series missing from a page gets none either.

use crate::http::{Fetched, Get, HttpClient};
use crate::samples::{KeyCache, Page, read_page};
use crate::source::{
    BoxFuture, ProblemLog, Sink, Source, SourceError, SourceReport, Stop, Window, blank_health,
};
use crate::time::unix_now;
use hyper::Uri;
use hyper::header::{self, HeaderMap, HeaderValue};
use llmscope_core::series::{Batch, FailureKind, ScrapeHealth};
use promtext::Format;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// Default cap on a page: 16 MiB (a dcgm page is ~10 KB, a vLLM page ~100 KB).
pub const DEFAULT_BODY_LIMIT: usize = 16 << 20;

/// What we accept, preferring OpenMetrics like Prometheus does.
const ACCEPT_OPENMETRICS: &str =
    "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.1";
const ACCEPT_TEXT: &str = "text/plain;version=0.0.4;q=1.0,*/*;q=0.1";

/// A target: `name=URL`, or a bare URL (named by its `host:port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScrapeTarget {
    pub name: String,
    pub uri: Uri,
}

/// Why a target was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid scrape target `{text}`: {why} (write NAME=URL, e.g. vllm=http://127.0.0.1:8000/metrics)"
)]
pub struct TargetError {
    pub text: String,
    pub why: &'static str,
}

impl FromStr for ScrapeTarget {
    type Err = TargetError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why| TargetError {
            text: crate::url::redact(text),
            why,
        };
        let (name, url) = match text.split_once('=') {
            Some((n, u)) if !n.contains("://") => (Some(n.trim()), u.trim()),
            _ => (None, text.trim()),
        };
        let uri = crate::url::parse_http_url(url).map_err(bad)?;
        let name = match name {
            Some("") => return Err(bad("empty name before `=`")),
            Some(n) if !valid_name(n) => {
                return Err(bad("names are letters, digits, `_`, `-`, `.`"));
            }
            Some(n) => n.to_owned(),
            None => uri.authority().map_or("target", |a| a.as_str()).to_owned(),
        };
        Ok(ScrapeTarget { name, uri })
    }
}

fn valid_name(n: &str) -> bool {
    n.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
}

/// How to scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeConfig {
    pub interval: Duration,
    /// Must be shorter than the interval, so scrapes of one target never overlap.
    pub timeout: Duration,
    pub body_limit: usize,
    /// Ask for OpenMetrics first (else only text 0.0.4).
    pub openmetrics: bool,
    /// Send `Accept-Encoding: gzip`.
    pub gzip: bool,
}

/// Why a scrape configuration was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScrapeConfigError {
    #[error("the scrape interval must be at least 10ms")]
    IntervalTooShort,
    #[error("the scrape timeout ({timeout:?}) must be shorter than the interval ({interval:?})")]
    TimeoutNotBelowInterval {
        timeout: Duration,
        interval: Duration,
    },
    #[error("the body-size limit must be at least 1 KiB")]
    BodyLimitTooSmall,
}

impl ScrapeConfig {
    /// `interval` with a timeout of 80% of it (at most 10 s), 16 MiB cap, OpenMetrics and gzip.
    pub fn new(interval: Duration) -> Self {
        ScrapeConfig {
            interval,
            timeout: interval.mul_f64(0.8).min(Duration::from_secs(10)),
            body_limit: DEFAULT_BODY_LIMIT,
            openmetrics: true,
            gzip: true,
        }
    }

    pub fn validate(&self) -> Result<(), ScrapeConfigError> {
        if self.interval < Duration::from_millis(10) {
            return Err(ScrapeConfigError::IntervalTooShort);
        }
        if self.timeout >= self.interval || self.timeout.is_zero() {
            return Err(ScrapeConfigError::TimeoutNotBelowInterval {
                timeout: self.timeout,
                interval: self.interval,
            });
        }
        if self.body_limit < 1024 {
            return Err(ScrapeConfigError::BodyLimitTooSmall);
        }
        Ok(())
    }

    fn headers(&self, target: &ScrapeTarget) -> HeaderMap {
        let mut h = HeaderMap::new();
        let accept = if self.openmetrics {
            ACCEPT_OPENMETRICS
        } else {
            ACCEPT_TEXT
        };
        h.insert(header::ACCEPT, HeaderValue::from_static(accept));
        if self.gzip {
            h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        }
        h.insert(
            header::USER_AGENT,
            HeaderValue::from_static("llmscope-collect"),
        );
        // Prometheus tells the exporter how long it may take.
        let secs = format!("{:.3}", self.timeout.as_secs_f64());
        if let Ok(v) = HeaderValue::from_str(&secs) {
            h.insert("x-prometheus-scrape-timeout-seconds", v);
        }
        if let Some(a) = target
            .uri
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
        {
            h.insert(header::HOST, a);
        }
        h
    }
}

/// One scrape target as a [`Source`].
#[derive(Debug, Clone)]
pub struct ScrapeSource {
    target: ScrapeTarget,
    cfg: ScrapeConfig,
    client: HttpClient,
}

impl ScrapeSource {
    pub fn new(target: ScrapeTarget, cfg: ScrapeConfig, client: HttpClient) -> Self {
        ScrapeSource {
            target,
            cfg,
            client,
        }
    }
}

impl Source for ScrapeSource {
    fn name(&self) -> &str {
        &self.target.name
    }

    fn kind(&self) -> &'static str {
        "scrape"
    }

    fn url(&self) -> String {
        self.target.uri.to_string()
    }

    fn collect<'a>(
        &'a self,
        window: Window,
        sink: &'a dyn Sink,
        stop: Stop,
    ) -> BoxFuture<'a, Result<SourceReport, SourceError>> {
        Box::pin(async move {
            let Window::Live { duration } = window else {
                return Err(SourceError::PastWindow(self.target.name.clone()));
            };
            let mut ctx = Context::new(&self.target, &self.cfg, &self.client);
            Ok(ctx.run(duration, sink, stop).await)
        })
    }
}

/// The per-target state of the scrape loop.
struct Context<'a> {
    target: &'a ScrapeTarget,
    cfg: &'a ScrapeConfig,
    client: &'a HttpClient,
    headers: HeaderMap,
    cache: KeyCache,
    log: ProblemLog,
    version: Option<String>,
}

impl<'a> Context<'a> {
    fn new(target: &'a ScrapeTarget, cfg: &'a ScrapeConfig, client: &'a HttpClient) -> Self {
        Context {
            target,
            cfg,
            client,
            headers: cfg.headers(target),
            cache: KeyCache::default(),
            log: ProblemLog::default(),
            version: None,
        }
    }

    /// The loop: offset, then one scrape per interval until `duration` is over.
    async fn run(&mut self, duration: Duration, sink: &dyn Sink, mut stop: Stop) -> SourceReport {
        let start_unix = unix_now();
        let end = Instant::now() + duration;
        let mut stopped = self.scrape_until(end, sink, &mut stop).await;
        // The window is the whole duration, not just up to the last scrape.
        if !stopped {
            stopped = stop
                .sleep(end.saturating_duration_since(Instant::now()))
                .await;
        }
        let elapsed = duration.as_secs_f64().min(unix_now() - start_unix);
        SourceReport {
            name: self.target.name.clone(),
            kind: "scrape",
            window: (start_unix, start_unix + elapsed),
            attempts: self.log.attempts,
            failures: self.log.failures,
            problems: std::mem::take(&mut self.log).into_problems(),
            warnings: Vec::new(),
            version: self.version.take(),
            stopped,
        }
    }

    /// Scrapes on fixed ticks until `end`; `true` when stopped early (or the sink went away).
    async fn scrape_until(&mut self, end: Instant, sink: &dyn Sink, stop: &mut Stop) -> bool {
        let mut next = Instant::now() + jitter(self.target, self.cfg.interval);
        while next < end {
            if stop
                .sleep(next.saturating_duration_since(Instant::now()))
                .await
            {
                return true;
            }
            if !sink.send(self.scrape().await) {
                return true;
            }
            // A (bounded) late scrape skips ticks instead of bunching up.
            next += self.cfg.interval;
            while next < Instant::now() {
                next += self.cfg.interval;
            }
        }
        false
    }

    /// One scrape → one batch (samples + health).
    async fn scrape(&mut self) -> Batch {
        let t = unix_now();
        let began = Instant::now();
        let get = Get {
            uri: self.target.uri.clone(),
            headers: &self.headers,
            timeout: self.cfg.timeout,
            body_limit: self.cfg.body_limit,
        };
        let result = self.client.get(get).await;
        let mut batch = Batch::new(self.target.name.clone());
        let mut health = blank_health(t);
        match result {
            Ok(f) => self.read(f, t, &mut health, &mut batch),
            Err(e) => self.fail(&mut health, e.kind(), e.to_string()),
        }
        health.duration_s = began.elapsed().as_secs_f64();
        self.log.record(&health);
        batch.health.push(health);
        batch
    }

    fn read(&mut self, f: Fetched, t: f64, health: &mut ScrapeHealth, batch: &mut Batch) {
        health.status = Some(f.status);
        health.bytes = f.wire_bytes;
        if !(200..300).contains(&f.status) {
            return self.fail(health, FailureKind::Http, http_failure(f.status));
        }
        let page = read_page(
            &f.body,
            Format::from_content_type(&f.content_type),
            t,
            &mut self.cache,
        );
        health.samples = page.samples.len() as u64;
        health.up = page.error_count == 0 || !page.samples.is_empty();
        if let Some(why) = parse_failure(&f.body, &page) {
            self.fail(health, FailureKind::Parse, why);
            health.up = !page.samples.is_empty();
        }
        if self.version.is_none() {
            self.version = detect_version(&page.samples);
        }
        batch.samples = page.samples;
    }

    fn fail(&self, health: &mut ScrapeHealth, kind: FailureKind, why: String) {
        health.up = false;
        health.failure = Some(kind);
        health.message = Some(format!("{} ({}): {why}", self.target.name, self.target.uri));
    }
}

/// `HTTP 503 Service Unavailable`.
fn http_failure(status: u16) -> String {
    let reason = hyper::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    format!("HTTP {status} {reason}")
}

/// What was malformed in a page, if anything: how many lines, the first, and what the body is
/// when it is not exposition at all.
fn parse_failure(body: &[u8], page: &Page) -> Option<String> {
    let e = page.first_error.as_ref()?;
    let mut why = format!("{} malformed line(s), first: {e}", page.error_count);
    // A body that is not exposition at all is named (issue 17), as every reader names it.
    let shape = promtext::Shape::of(body).describe();
    if let (Some(what), true) = (shape, page.samples.is_empty()) {
        why = format!("{what}; {why}");
    }
    Some(why)
}

/// A stable offset in `[0, interval)` for this target.
fn jitter(target: &ScrapeTarget, interval: Duration) -> Duration {
    let mut h = DefaultHasher::new();
    target.name.hash(&mut h);
    target.uri.to_string().hash(&mut h);
    let nanos = interval.as_nanos().max(1) as u64;
    Duration::from_nanos(h.finish() % nanos)
}

/// What a page says about its server: dcgm's driver version label.
fn detect_version(
    samples: &[(
        std::sync::Arc<llmscope_core::series::SeriesKey>,
        llmscope_core::series::Point,
    )],
) -> Option<String> {
    samples.iter().find_map(|(k, _)| {
        k.labels
            .get("DCGM_FI_DRIVER_VERSION")
            .map(|v| format!("dcgm driver {v}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_with_and_without_names() {
        let t: ScrapeTarget = "vllm=http://127.0.0.1:18000/metrics".parse().unwrap();
        assert_eq!(
            (t.name.as_str(), t.uri.to_string().as_str()),
            ("vllm", "http://127.0.0.1:18000/metrics")
        );
        let t: ScrapeTarget = "http://127.0.0.1:9400/metrics?x=a=b".parse().unwrap();
        assert_eq!(t.name, "127.0.0.1:9400");
        for bad in [
            "vllm=",
            "=http://x/metrics",
            "vllm=127.0.0.1:1/metrics",
            "a b=http://x/",
            "ftp://x",
        ] {
            let err = bad.parse::<ScrapeTarget>().unwrap_err();
            assert!(
                err.to_string().contains("invalid scrape target"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn timeout_must_be_below_interval() {
        let cfg = ScrapeConfig::new(Duration::from_secs(1));
        assert_eq!(cfg.timeout, Duration::from_millis(800));
        cfg.validate().unwrap();
        assert_eq!(
            ScrapeConfig::new(Duration::from_secs(60)).timeout,
            Duration::from_secs(10)
        );
        let bad = ScrapeConfig {
            timeout: Duration::from_secs(1),
            ..cfg.clone()
        };
        assert!(matches!(
            bad.validate(),
            Err(ScrapeConfigError::TimeoutNotBelowInterval { .. })
        ));
        let tiny = ScrapeConfig {
            body_limit: 10,
            ..cfg
        };
        assert_eq!(tiny.validate(), Err(ScrapeConfigError::BodyLimitTooSmall));
    }

    #[test]
    fn jitter_is_stable_and_inside_the_interval() {
        let i = Duration::from_secs(1);
        let a: ScrapeTarget = "a=http://127.0.0.1:1/metrics".parse().unwrap();
        let b: ScrapeTarget = "b=http://127.0.0.1:1/metrics".parse().unwrap();
        assert_eq!(jitter(&a, i), jitter(&a, i));
        assert_ne!(jitter(&a, i), jitter(&b, i));
        assert!(jitter(&a, i) < i);
    }

    #[test]
    fn accept_headers_negotiate() {
        let t: ScrapeTarget = "a=http://127.0.0.1:1/metrics".parse().unwrap();
        let cfg = ScrapeConfig::new(Duration::from_secs(1));
        let h = cfg.headers(&t);
        assert!(
            h[header::ACCEPT]
                .to_str()
                .unwrap()
                .starts_with("application/openmetrics-text")
        );
        assert_eq!(h[header::ACCEPT_ENCODING], "gzip");
        let text = ScrapeConfig {
            openmetrics: false,
            gzip: false,
            ..cfg
        };
        let h = text.headers(&t);
        assert!(
            h[header::ACCEPT]
                .to_str()
                .unwrap()
                .starts_with("text/plain")
        );
        assert!(!h.contains_key(header::ACCEPT_ENCODING));
    }
}
