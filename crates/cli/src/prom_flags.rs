//! Flags that reach a Prometheus-compatible server, resolved into a `PromClient`.

use anyhow::{Context, Result, bail};
use llmscope_collect::HttpClient;
use llmscope_collect::prom::client::{Auth, PromClient, PromConfig, Secret};
use std::path::PathBuf;
use std::time::Duration;

/// A Prometheus-compatible API (Prometheus, Thanos, Mimir, VictoriaMetrics) to read from.
#[derive(Debug, Clone, clap::Args)]
pub struct PromFlags {
    /// Prometheus-compatible server URL, with any path prefix (Mimir: …/prometheus).
    #[arg(long, value_name = "URL", help_heading = "Prometheus")]
    pub prometheus: Option<String>,
    #[command(flatten)]
    pub conn: PromConnection,
}

impl PromFlags {
    /// The client, or `None` without `--prometheus`.
    pub fn client(&self) -> Result<Option<PromClient>> {
        self.prometheus
            .as_deref()
            .map(|url| self.conn.client(url))
            .transpose()
    }
}

/// How every command that talks to a Prometheus-compatible API connects to it: auth, extra
/// headers (e.g. Mimir's `X-Scope-OrgID`), a CA for https, a per-request limit. A path prefix is
/// part of the URL.
#[derive(Debug, Clone, clap::Args)]
pub struct PromConnection {
    /// Bearer token; never stored or printed.
    #[arg(
        long,
        env = "LLMSCOPE_PROMETHEUS_TOKEN",
        hide_env_values = true,
        help_heading = "Prometheus"
    )]
    pub bearer_token: Option<String>,
    /// Basic-auth user (password from $LLMSCOPE_PROMETHEUS_PASSWORD).
    #[arg(long, value_name = "USER", help_heading = "Prometheus")]
    pub basic_user: Option<String>,
    #[arg(
        long,
        env = "LLMSCOPE_PROMETHEUS_PASSWORD",
        hide = true,
        hide_env_values = true
    )]
    pub basic_password: Option<String>,
    /// Extra request header, `Name: value` (repeatable), e.g. 'X-Scope-OrgID: t1'.
    #[arg(
        long = "header",
        value_name = "NAME: VALUE",
        help_heading = "Prometheus"
    )]
    pub headers: Vec<String>,
    /// PEM file of extra CA certificates for https.
    #[arg(long, value_name = "FILE", help_heading = "Prometheus")]
    pub ca_file: Option<PathBuf>,
    /// Limit for one API request.
    #[arg(long, value_parser = crate::args::duration, default_value = "30s", help_heading = "Prometheus")]
    pub query_timeout: Duration,
}

impl PromConnection {
    /// A client for the server at `url`, connected as the flags say.
    pub fn client(&self, url: &str) -> Result<PromClient> {
        Ok(PromClient::new(self.config(url)?, self.http()?))
    }

    /// The HTTP client, trusting `--ca-file` too.
    pub fn http(&self) -> Result<HttpClient> {
        HttpClient::new(self.ca_file.as_deref()).context("setting up TLS")
    }

    /// The API configuration (URL, auth, headers, timeout) of the server at `url`.
    pub fn config(&self, url: &str) -> Result<PromConfig> {
        let redacted = llmscope_collect::url::redact(url);
        let base = llmscope_collect::url::parse_http_url(url)
            .map_err(|why| anyhow::anyhow!("invalid --prometheus `{redacted}`: {why}"))?;
        let mut cfg = PromConfig::new(base);
        cfg.timeout = self.query_timeout;
        cfg.auth = self.auth()?;
        for line in &self.headers {
            cfg.add_header(line)?;
        }
        Ok(cfg)
    }

    fn auth(&self) -> Result<Option<Auth>> {
        match (&self.bearer_token, &self.basic_user) {
            (Some(_), Some(_)) => bail!("give either --bearer-token or --basic-user, not both"),
            (Some(t), None) => Ok(Some(Auth::Bearer(Secret::new(t.trim())))),
            (None, Some(user)) => Ok(Some(Auth::Basic {
                user: user.clone(),
                password: Secret::new(self.basic_password.clone().unwrap_or_default()),
            })),
            (None, None) => Ok(None),
        }
    }
}
