//! What `llmscope watch` is asked (as clap arguments behind the `clap` feature), checked and
//! turned into the [`Service`] it runs.

use crate::WatchError;
use crate::drift::DriftWatch;
use crate::evaluate::Settings;
use crate::fleet::{Grouping, Shard};
use crate::service::Service;
use crate::state::Shown;
use std::path::PathBuf;
use std::time::Duration;

/// How often, over what, for whom, and where to serve.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct WatchOptions {
    /// How often to evaluate the fleet.
    #[cfg_attr(feature = "clap", arg(long, value_parser = llmscope_core::duration::parse_duration, default_value = "60s"))]
    pub interval: Duration,
    /// How much history each evaluation reads.
    #[cfg_attr(feature = "clap", arg(long, value_parser = llmscope_core::duration::parse_duration, default_value = "15m"))]
    pub window: Duration,
    /// Resolution of the read (use the scrape interval).
    #[cfg_attr(feature = "clap", arg(long, value_parser = llmscope_core::duration::parse_duration, default_value = "15s"))]
    pub step: Duration,
    /// Requests in the engine with no token generated for this long is a stall.
    #[cfg_attr(feature = "clap", arg(long, value_parser = llmscope_core::duration::parse_duration, default_value = "5m"))]
    pub stall_after: Duration,
    /// Address to serve /metrics, /healthz, /readyz and the status page on. Loopback by
    /// default: listening on all interfaces is a deliberate choice (0.0.0.0:9464).
    #[cfg_attr(feature = "clap", arg(long, default_value = "127.0.0.1:9464"))]
    pub listen: String,
    /// Evaluate the deployments whose key hashes to I of N (N replicas split the fleet).
    #[cfg_attr(feature = "clap", arg(long, value_name = "I/N", default_value = "0/1", value_parser = Shard::parse))]
    pub shard: Shard,
    /// Labels that tell deployments apart; `pod` stands for the pod's owner.
    #[cfg_attr(feature = "clap", arg(long, value_name = "LABELS", default_value = "namespace,pod", value_parser = Grouping::parse))]
    pub group_by: Grouping,
    /// Label matchers narrowing what is read, e.g. 'namespace=~"llm-.*"' (repeatable: union).
    #[cfg_attr(feature = "clap", arg(long = "match", value_name = "MATCHERS"))]
    pub matchers: Vec<String>,
    /// The engines' --max-num-seqs, when every deployment shares one.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_num_seqs: Option<u32>,
    /// Grafana dashboards whose queries should follow the engines (for version drift).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE", num_args = 1..))]
    pub dashboards: Vec<PathBuf>,
    /// Prometheus rule files whose expressions should follow the engines (for version drift).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE", num_args = 1..))]
    pub rules: Vec<PathBuf>,
    /// Largest dashboard or rule file read.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 64 << 20))]
    pub max_file_size: u64,
    /// Evaluate once, print the result, and exit (1 if a deployment is stalled or drifted).
    #[cfg_attr(feature = "clap", arg(long))]
    pub once: bool,
    /// With --once: `text` or `json`.
    #[cfg_attr(feature = "clap", arg(long, default_value = "text", value_parser = ["text", "json"]))]
    pub format: String,
}

impl WatchOptions {
    /// The service these options describe, reading from the Prometheus shown as `prometheus`
    /// (credentials already redacted); nonsense combinations are refused with the flag named.
    pub fn plan(&self, prometheus: String) -> Result<Service, WatchError> {
        let (window, step, stall_after) = (
            self.window.as_secs_f64(),
            self.step.as_secs_f64(),
            self.stall_after.as_secs_f64(),
        );
        let refuse = |why: String| WatchError::Input {
            what: "llmscope watch".to_owned(),
            why,
        };
        if step <= 0.0 || window < 2.0 * step {
            return Err(refuse(format!(
                "--window ({window:.0} s) must hold at least two --step ({step:.0} s) samples"
            )));
        }
        if stall_after >= window {
            return Err(refuse(format!(
                "--stall-after ({stall_after:.0} s) must be shorter than --window ({window:.0} s): a stall is seen inside one window"
            )));
        }
        if self.interval.is_zero() {
            return Err(refuse("--interval must be more than 0 s".to_owned()));
        }
        let files: Vec<PathBuf> = self.dashboards.iter().chain(&self.rules).cloned().collect();
        let drift = DriftWatch::load(&files, self.max_file_size)?;
        Ok(Service {
            settings: Settings {
                window,
                step,
                stall_after,
                matchers: self.matchers.clone(),
                grouping: self.group_by.clone(),
                shard: self.shard,
                max_num_seqs: self.max_num_seqs,
                drift,
            },
            interval: self.interval,
            shown: Shown {
                prometheus,
                interval_s: self.interval.as_secs_f64(),
                window_s: window,
                shard: self.shard.to_string(),
                drift_files: files.len(),
            },
        })
    }
}
