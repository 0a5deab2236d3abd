//! From what a user asked `observe` to record to an [`ObservePlan`]: the window (live or past),
//! the sources (scraped targets, a Prometheus with its selectors), their names unique, and the
//! configuration stored with the run (no secrets). No I/O; every error names the flag.

use super::{ObservePlan, SourcePlan, source_name};
use crate::OpsError;
use llmscope_collect::Window;
use llmscope_collect::prom::{Auth, PromConfig};
use llmscope_collect::scrape::ScrapeConfig;
use llmscope_collect::time::{format_rfc3339, parse_time};
use std::path::PathBuf;
use std::time::Duration;

/// What to observe, as asked (`llmscope observe`'s flags, or any front end's).
#[derive(Debug, Clone, Default)]
pub struct ObserveRequest {
    /// Targets to scrape: `NAME=URL` or `URL`.
    pub scrape: Vec<String>,
    /// A Prometheus-compatible server to read, connected.
    pub prometheus: Option<PromConfig>,
    /// Series selectors to read from it.
    pub matchers: Vec<String>,
    /// Record live for this long; or a past window `from`..`to` (times as users write them).
    pub duration: Option<Duration>,
    pub from: Option<String>,
    pub to: Option<String>,
    /// Scrape interval, or the query step.
    pub interval: Duration,
    pub scrape_timeout: Option<Duration>,
    pub body_limit: usize,
    pub openmetrics: bool,
    pub gzip: bool,
    pub ca_file: Option<PathBuf>,
    pub db: PathBuf,
}

fn invalid(why: impl Into<String>) -> OpsError {
    OpsError::Invalid(why.into())
}

impl ObserveRequest {
    /// The validated plan; `now` is when relative times are read from.
    pub fn plan(self, now: f64) -> Result<ObservePlan, OpsError> {
        let window = self.window(now)?;
        let mut sources = self.scrape_sources()?;
        if self.prometheus.is_some() {
            sources.push(self.prometheus_source()?);
        } else if !self.matchers.is_empty() {
            return Err(invalid(
                "--match selects series on a --prometheus server; add --prometheus URL",
            ));
        }
        if sources.is_empty() {
            return Err(invalid(
                "nothing to observe: give --scrape [NAME=]URL (repeatable) or --prometheus URL --match SELECTOR",
            ));
        }
        check_unique_names(&sources)?;
        let config = config_json(self.interval, &sources, window);
        Ok(ObservePlan {
            sources,
            window,
            interval: self.interval,
            ca_file: self.ca_file,
            db: self.db,
            config,
        })
    }

    fn window(&self, now: f64) -> Result<Window, OpsError> {
        match (self.duration, &self.from) {
            (Some(_), Some(_)) => Err(invalid(
                "give either --duration (live) or --from/--to (past window), not both",
            )),
            (Some(duration), None) => self.live(duration),
            (None, Some(from)) => self.past(from, now),
            (None, None) => Err(invalid(
                "say how long: --duration 60s (live) or --from -15m [--to now] (past window)",
            )),
        }
    }

    /// `--duration`: from now on, for that long.
    fn live(&self, duration: Duration) -> Result<Window, OpsError> {
        if duration.is_zero() {
            // Issue 12: it stored an empty failed run and said nothing.
            return Err(invalid(
                "--duration must be above 0 (e.g. --duration 60s): a live window of 0 s records nothing",
            ));
        }
        if self.to.is_some() {
            return Err(invalid(
                "--to goes with --from (a past window), not with --duration",
            ));
        }
        Ok(Window::Live { duration })
    }

    /// `--from [--to]`: a past window, its end now unless given.
    fn past(&self, from: &str, now: f64) -> Result<Window, OpsError> {
        let time = |t: &str| parse_time(t, now).map_err(|e| invalid(e.to_string()));
        let from = time(from)?;
        let to = self.to.as_deref().map_or(Ok(now), time)?;
        if to <= from {
            return Err(invalid(format!(
                "--to ({}) must be after --from ({})",
                format_rfc3339(to),
                format_rfc3339(from)
            )));
        }
        Ok(Window::Past { from, to })
    }

    fn scrape_sources(&self) -> Result<Vec<SourcePlan>, OpsError> {
        if self.scrape.is_empty() {
            return Ok(Vec::new());
        }
        let cfg = self.scrape_config()?;
        self.scrape
            .iter()
            .map(|s| {
                let target = s.parse().map_err(|e| invalid(format!("{e}")))?;
                Ok(SourcePlan::Scrape(target, cfg.clone()))
            })
            .collect()
    }

    /// How every target is scraped, checked.
    fn scrape_config(&self) -> Result<ScrapeConfig, OpsError> {
        let mut cfg = ScrapeConfig::new(self.interval);
        cfg.timeout = self.scrape_timeout.unwrap_or(cfg.timeout);
        cfg.body_limit = self.body_limit;
        cfg.openmetrics = self.openmetrics;
        cfg.gzip = self.gzip;
        cfg.validate()
            .map_err(|e| invalid(format!("--interval / --scrape-timeout / --body-limit: {e}")))?;
        Ok(cfg)
    }

    fn prometheus_source(&self) -> Result<SourcePlan, OpsError> {
        let Some(cfg) = self.prometheus.clone() else {
            return Err(invalid("--prometheus is missing"));
        };
        if self.matchers.is_empty() {
            return Err(invalid(
                "--prometheus needs at least one --match SELECTOR, e.g. --match '{__name__=~\"vllm:.*\"}'",
            ));
        }
        if self.matchers.iter().any(|m| m.trim().is_empty()) {
            return Err(invalid("--match must not be empty"));
        }
        Ok(SourcePlan::Prometheus {
            cfg,
            matchers: self.matchers.clone(),
        })
    }
}

fn check_unique_names(sources: &[SourcePlan]) -> Result<(), OpsError> {
    let mut seen = std::collections::BTreeSet::new();
    for s in sources {
        let name = source_name(s);
        if !seen.insert(name.to_owned()) {
            return Err(invalid(format!(
                "two sources are named `{name}`: name them, e.g. --scrape vllm=URL --scrape dcgm=URL"
            )));
        }
    }
    Ok(())
}

/// What is stored as the run's configuration: no tokens, passwords or header values.
fn config_json(interval: Duration, sources: &[SourcePlan], window: Window) -> serde_json::Value {
    let sources: Vec<serde_json::Value> = sources.iter().map(source_json).collect();
    let window = match window {
        Window::Live { duration } => serde_json::json!({"live_s": duration.as_secs_f64()}),
        Window::Past { from, to } => serde_json::json!({"from": from, "to": to}),
    };
    serde_json::json!({"interval_s": interval.as_secs_f64(), "window": window, "sources": sources})
}

fn source_json(s: &SourcePlan) -> serde_json::Value {
    match s {
        SourcePlan::Scrape(t, c) => serde_json::json!({
            "name": t.name, "kind": "scrape", "url": t.uri.to_string(),
            "timeout_s": c.timeout.as_secs_f64(), "body_limit": c.body_limit,
            "openmetrics": c.openmetrics, "gzip": c.gzip,
        }),
        SourcePlan::Prometheus { cfg, matchers } => serde_json::json!({
            "name": "prometheus", "kind": "prometheus", "url": cfg.base.to_string(),
            "matchers": matchers,
            "auth": match &cfg.auth { Some(Auth::Bearer(_)) => "bearer".to_owned(),
                Some(Auth::Basic { user, .. }) => format!("basic user={user}"), None => "none".to_owned() },
            "headers": cfg.headers.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            "timeout_s": cfg.timeout.as_secs_f64(),
        }),
    }
}
