//! Value parsers shared by the commands' flags.

use std::time::Duration;

/// `--format` of the commands that print a summary or a JSON document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// A duration flag: `30s`, `5m`, `1h30m`, `250ms`.
pub fn duration(s: &str) -> Result<Duration, String> {
    llmscope_core::duration::parse_duration(s).map_err(|e| e.to_string())
}

/// A `--fail-on` flag: never, info, warning, error or critical.
pub fn fail_on(s: &str) -> Result<llmscope_core::severity::FailOn, String> {
    s.parse()
}

/// Runs `f` to its end on a runtime of one thread (commands that wait on a few requests).
pub fn block_on<F: std::future::Future>(f: F) -> anyhow::Result<F::Output> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))?;
    Ok(rt.block_on(f))
}

/// An http(s) URL flag; the error names the flag and shows the URL without credentials.
pub fn http_url(text: &str, flag: &str) -> anyhow::Result<hyper::Uri> {
    llmscope_collect::url::parse_http_url(text).map_err(|why| {
        let shown = llmscope_collect::url::redact(text);
        anyhow::anyhow!("invalid {flag} `{shown}`: {why}")
    })
}
