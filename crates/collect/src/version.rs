//! What an engine says its own version is: vLLM's OpenAI server answers `GET /version` with
//! `{"version":"0.32.0"}` (issue 11: names alone give only a range).
//!
//! [`version_url`] derives the endpoint from a metrics URL (`http://h:8000/metrics` →
//! `http://h:8000/version`), [`parse_version`] reads the answer, [`engine_version`] does both
//! over the one HTTP client. A missing or odd `/version` is an error value, never a panic: the
//! caller falls back to the names.

use crate::http::{FetchError, Get, HttpClient};
use hyper::Uri;
use hyper::http::uri::PathAndQuery;
use std::time::Duration;

/// Why `/version` gave no version.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VersionError {
    #[error("{0}")]
    Fetch(#[from] FetchError),
    #[error("HTTP {0}")]
    Status(u16),
    #[error("not a JSON object with a string `version`")]
    Body,
}

/// The `/version` URL beside a metrics URL: the last path segment `metrics` becomes `version`
/// (`/vllm/metrics` → `/vllm/version`, behind a path-prefix proxy); any other path is replaced
/// by `/version`. The query is dropped.
pub fn version_url(metrics: &Uri) -> Uri {
    let path = metrics.path().trim_end_matches('/');
    let path = match path.strip_suffix("/metrics") {
        Some(prefix) => format!("{prefix}/version"),
        None => "/version".to_owned(),
    };
    let mut parts = metrics.clone().into_parts();
    parts.path_and_query = PathAndQuery::try_from(path).ok();
    Uri::from_parts(parts).unwrap_or_else(|_| metrics.clone())
}

/// The `version` string of a `/version` answer.
pub fn parse_version(body: &[u8]) -> Result<String, VersionError> {
    #[derive(serde::Deserialize)]
    struct Answer {
        version: String,
    }
    let a: Answer = serde_json::from_slice(body).map_err(|_| VersionError::Body)?;
    let v = a.version.trim();
    if v.is_empty() {
        return Err(VersionError::Body);
    }
    Ok(v.to_owned())
}

/// GETs the `/version` beside `metrics` (short timeout: it is a hint, not the measurement).
pub async fn engine_version(http: &HttpClient, metrics: &Uri) -> Result<String, VersionError> {
    let headers = hyper::HeaderMap::new();
    let got = http
        .get(Get {
            uri: version_url(metrics),
            headers: &headers,
            timeout: Duration::from_secs(3),
            body_limit: 64 << 10,
        })
        .await?;
    if got.status != 200 {
        return Err(VersionError::Status(got.status));
    }
    parse_version(&got.body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> String {
        version_url(&s.parse().unwrap()).to_string()
    }

    #[test]
    fn the_version_url_sits_beside_the_metrics_path() {
        assert_eq!(url("http://h:8000/metrics"), "http://h:8000/version");
        assert_eq!(url("http://h:8000/metrics/"), "http://h:8000/version");
        assert_eq!(
            url("https://h/vllm/a/metrics?x=1"),
            "https://h/vllm/a/version"
        );
        assert_eq!(url("http://h:8000/stats"), "http://h:8000/version");
        assert_eq!(url("http://h:8000"), "http://h:8000/version");
    }

    #[test]
    fn answers_parse_or_say_why_not() {
        assert_eq!(
            parse_version(br#"{"version":"0.32.0"}"#),
            Ok("0.32.0".into())
        );
        assert_eq!(
            parse_version(br#"{"version":" 0.32.0+cpu ","extra":1}"#),
            Ok("0.32.0+cpu".into())
        );
        assert_eq!(parse_version(br#"{"version":""}"#), Err(VersionError::Body));
        assert_eq!(parse_version(br#"{"version":32}"#), Err(VersionError::Body));
        assert_eq!(
            parse_version(b"<html>not found</html>"),
            Err(VersionError::Body)
        );
    }
}
