//! [`PromClient`]: `query`, `query_range`, `series`, `label/<name>/values`, `metadata`,
//! `targets`, `status/buildinfo` over the shared [`HttpClient`].
//!
//! Every call is a GET under `<base>/api/v1/` (the base may carry a prefix such as
//! `/prometheus`), with the configured auth and extra headers, a timeout, and up to `retries`
//! retries for [`PromError::is_retryable`] failures. `query_range` splits a long range into
//! chunks of at most [`MAX_POINTS`] points per series ([`split_range`]) and joins the series.

use super::PromError;
use super::api::{self, ApiResponse, BuildInfo, MetricMetadata, QueryData, RawQueryData, Targets};
use crate::http::{Get, HttpClient};
use hyper::Uri;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use llmscope_core::series::{Series, SeriesKey};
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

/// Points per series per range query we ask for; Prometheus and Thanos refuse more than 11,000.
pub const MAX_POINTS: u64 = 10_000;

/// A credential: never printed, never serialised (the one [`llmscope_core::safe::Secret`]).
pub use llmscope_core::safe::Secret;

/// How to authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    Bearer(Secret),
    Basic { user: String, password: Secret },
}

/// Where and how to reach the API.
#[derive(Debug, Clone)]
pub struct PromConfig {
    /// `http(s)://host:port[/prefix]`.
    pub base: Uri,
    pub auth: Option<Auth>,
    /// Extra headers (`X-Scope-OrgID: tenant`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub timeout: Duration,
    pub retries: u32,
    /// Cap on one answer's body.
    pub body_limit: usize,
}

impl PromConfig {
    pub fn new(base: Uri) -> Self {
        PromConfig {
            base,
            auth: None,
            headers: Vec::new(),
            timeout: Duration::from_secs(30),
            retries: 2,
            body_limit: 256 << 20,
        }
    }

    /// Adds a header written `Name: value` (as `--header` takes it); its value is sensitive
    /// (never logged).
    pub fn add_header(&mut self, line: &str) -> Result<(), HeaderError> {
        let bad = |why: &str| HeaderError(format!("invalid --header {why}"));
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| bad(&format!("`{line}`: write `Name: value`")))?;
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|e| bad(&format!("name `{}`: {e}", name.trim())))?;
        let mut value = HeaderValue::from_str(value.trim())
            .map_err(|e| bad(&format!("value for `{name}`: {e}")))?;
        value.set_sensitive(true);
        self.headers.push((name, value));
        Ok(())
    }
}

/// A `--header` that is not `Name: value` with a valid name and value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HeaderError(String);

/// A Prometheus-compatible API.
#[derive(Debug, Clone)]
pub struct PromClient {
    cfg: PromConfig,
    headers: HeaderMap,
    http: HttpClient,
}

impl PromClient {
    pub fn new(cfg: PromConfig, http: HttpClient) -> Self {
        // Header values marked sensitive (X-Scope-OrgID, proxy tokens) are secrets too.
        for (_, v) in cfg.headers.iter().filter(|(_, v)| v.is_sensitive()) {
            if let Ok(v) = v.to_str() {
                llmscope_core::safe::register_secret(v);
            }
        }
        let headers = headers(&cfg);
        PromClient { cfg, headers, http }
    }

    /// The base URL (no credentials: they live in headers).
    pub fn base(&self) -> &Uri {
        &self.cfg.base
    }

    /// An instant query at `time` (server's now when `None`).
    pub async fn query(
        &self,
        query: &str,
        time: Option<f64>,
    ) -> Result<ApiResponse<QueryData>, PromError> {
        let mut params = vec![("query", query.to_owned())];
        params.extend(time.map(|t| ("time", fmt_time(t))));
        let r: ApiResponse<RawQueryData> = self.call("query", &params).await?;
        Ok(ApiResponse {
            data: r.data.into_data()?,
            warnings: r.warnings,
            infos: r.infos,
            dropped: r.dropped,
        })
    }

    /// A range query over `[start, end]` at `step` seconds, split to respect [`MAX_POINTS`].
    pub async fn query_range(
        &self,
        query: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Result<ApiResponse<Vec<Series>>, PromError> {
        let mut merged: BTreeMap<SeriesKey, Series> = BTreeMap::new();
        let (mut warnings, mut infos) = (Vec::new(), Vec::new());
        let (mut seen_w, mut seen_i) = (HashSet::new(), HashSet::new());
        let mut dropped = 0;
        for (s, e) in split_range(start, end, step, MAX_POINTS) {
            let mut chunk = self.query_range_once(query, s, e, step).await?;
            dropped += hold_to_request(&mut chunk.data, s, e, step);
            for series in chunk.data.into_iter().filter(|s| !s.points.is_empty()) {
                merged
                    .entry(series.key.clone())
                    .and_modify(|m| m.points.extend_from_slice(&series.points))
                    .or_insert(series);
            }
            extend_unique(&mut warnings, &mut seen_w, chunk.warnings);
            extend_unique(&mut infos, &mut seen_i, chunk.infos);
        }
        Ok(ApiResponse {
            data: merged.into_values().collect(),
            warnings,
            infos,
            dropped,
        })
    }

    async fn query_range_once(
        &self,
        query: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Result<ApiResponse<Vec<Series>>, PromError> {
        let params = [
            ("query", query.to_owned()),
            ("start", fmt_time(start)),
            ("end", fmt_time(end)),
            ("step", fmt_time(step)),
        ];
        let r: ApiResponse<RawQueryData> = self.call("query_range", &params).await?;
        let data = match r.data.into_data()? {
            QueryData::Matrix(m) => m,
            other => {
                return Err(PromError::Decode {
                    why: format!("query_range answered {other:?} instead of a matrix"),
                });
            }
        };
        Ok(ApiResponse {
            data,
            warnings: r.warnings,
            infos: r.infos,
            dropped: r.dropped,
        })
    }

    /// Label sets of the series matching any of `matchers` in `[start, end]`.
    pub async fn series(
        &self,
        matchers: &[&str],
        start: f64,
        end: f64,
    ) -> Result<ApiResponse<Vec<SeriesKey>>, PromError> {
        let mut params: Vec<(&str, String)> = matchers
            .iter()
            .map(|m| ("match[]", m.to_string()))
            .collect();
        params.push(("start", fmt_time(start)));
        params.push(("end", fmt_time(end)));
        let r: ApiResponse<Vec<BTreeMap<String, String>>> = self.call("series", &params).await?;
        Ok(map_data(r, |sets| sets.iter().map(api::key).collect()))
    }

    /// Values of label `name` (`__name__` lists metric names), optionally within a window.
    pub async fn label_values(
        &self,
        name: &str,
        matchers: &[&str],
        window: Option<(f64, f64)>,
    ) -> Result<ApiResponse<Vec<String>>, PromError> {
        let mut params: Vec<(&str, String)> = matchers
            .iter()
            .map(|m| ("match[]", m.to_string()))
            .collect();
        if let Some((s, e)) = window {
            params.push(("start", fmt_time(s)));
            params.push(("end", fmt_time(e)));
        }
        let path = format!("label/{}/values", escape_label_name(name));
        self.call(&path, &params).await
    }

    /// Metric metadata (type, help, unit), of one metric or all.
    pub async fn metadata(
        &self,
        metric: Option<&str>,
    ) -> Result<ApiResponse<BTreeMap<String, Vec<MetricMetadata>>>, PromError> {
        let params: Vec<(&str, String)> = metric
            .map(|m| ("metric", m.to_owned()))
            .into_iter()
            .collect();
        self.call("metadata", &params).await
    }

    /// The server's scrape targets (Prometheus, Thanos; Mimir has none).
    pub async fn targets(&self) -> Result<ApiResponse<Targets>, PromError> {
        self.call("targets", &[("state", "active".to_owned())])
            .await
    }

    /// The server's version.
    pub async fn buildinfo(&self) -> Result<String, PromError> {
        let r: ApiResponse<BuildInfo> = self.call("status/buildinfo", &[]).await?;
        Ok(r.data.version)
    }

    /// GET `<base>/api/v1/<path>?<params>`, retried when safe.
    async fn call<T: DeserializeOwned>(
        &self,
        path: &str,
        params: &[(&str, String)],
    ) -> Result<ApiResponse<T>, PromError> {
        let uri = self.uri(path, params)?;
        let mut attempt = 0;
        loop {
            match self.call_once(&uri).await {
                Err(e) if e.is_retryable() && attempt < self.cfg.retries => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(200 << attempt)).await;
                }
                other => return other,
            }
        }
    }

    async fn call_once<T: DeserializeOwned>(&self, uri: &Uri) -> Result<ApiResponse<T>, PromError> {
        let get = Get {
            uri: uri.clone(),
            headers: &self.headers,
            timeout: self.cfg.timeout,
            body_limit: self.cfg.body_limit,
        };
        let f = self.http.get(get).await?;
        let decoded = api::decode::<T>(&f.body);
        if (200..300).contains(&f.status) {
            return decoded;
        }
        match decoded {
            // Error envelopes come with 400/422/503…; keep their typed error.
            Err(e @ PromError::Api { .. }) => Err(e),
            _ => Err(PromError::Http {
                status: f.status,
                snippet: snippet(&f.body),
            }),
        }
    }

    fn uri(&self, path: &str, params: &[(&str, String)]) -> Result<Uri, PromError> {
        let prefix = self.cfg.base.path().trim_end_matches('/');
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (k, v) in params {
            query.append_pair(k, v);
        }
        let query = query.finish();
        let scheme = self.cfg.base.scheme_str().unwrap_or("http");
        let auth = self.cfg.base.authority().map_or("", |a| a.as_str());
        let sep = if query.is_empty() { "" } else { "?" };
        format!("{scheme}://{auth}{prefix}/api/v1/{path}{sep}{query}")
            .parse()
            .map_err(|e| PromError::Decode {
                why: format!("cannot build the request URL: {e}"),
            })
    }
}

fn headers(cfg: &PromConfig) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
    h.insert(
        header::USER_AGENT,
        HeaderValue::from_static("llmscope-collect"),
    );
    if let Some(a) = cfg
        .base
        .authority()
        .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
    {
        h.insert(header::HOST, a);
    }
    let auth = match &cfg.auth {
        Some(Auth::Bearer(t)) => Some(format!("Bearer {}", t.expose())),
        Some(Auth::Basic { user, password }) => Some(format!(
            "Basic {}",
            base64(&format!("{user}:{}", password.expose()))
        )),
        None => None,
    };
    if let Some(Ok(mut v)) = auth.map(|a| HeaderValue::from_str(&a)) {
        v.set_sensitive(true);
        h.insert(header::AUTHORIZATION, v);
    }
    for (k, v) in &cfg.headers {
        h.insert(k.clone(), v.clone());
    }
    h
}

/// Splits `[start, end]` into chunks of at most `max_points` steps, on the same step grid.
pub fn split_range(start: f64, end: f64, step: f64, max_points: u64) -> Vec<(f64, f64)> {
    if step.is_nan() || step <= 0.0 || end < start {
        return vec![(start, end)];
    }
    let total = ((end - start) / step).floor() as u64 + 1;
    let mut out = Vec::new();
    let mut i = 0;
    while i < total {
        let n = (total - i).min(max_points.max(1));
        let s = start + i as f64 * step;
        let e = if i + n >= total {
            end
        } else {
            start + (i + n - 1) as f64 * step
        };
        out.push((s, e));
        i += n;
    }
    out
}

/// Unix seconds as the API reads them (millisecond precision, no exponent).
fn fmt_time(t: f64) -> String {
    let s = format!("{t:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Texts each once, in the order first seen; `seen` holds them as a set, so tens of thousands
/// of warnings cost linear time, not quadratic.
fn extend_unique(into: &mut Vec<String>, seen: &mut HashSet<String>, from: Vec<String>) {
    for w in from {
        if seen.insert(w.clone()) {
            into.push(w);
        }
    }
}

/// Holds `series` to what a range query over `[start, end]` at `step` asks: points inside the
/// range (a millisecond's slack: the API's times have millisecond precision), in increasing
/// time, at most one per step of the grid. Returns how many points were dropped — a server
/// answering points from another year, or millions on a 15-minute window, costs this client
/// the decode only, never the diagnosis.
pub fn hold_to_request(series: &mut [Series], start: f64, end: f64, step: f64) -> u64 {
    let grid = if step > 0.0 && end >= start {
        ((end - start) / step).floor() as usize + 1
    } else {
        1
    };
    let (lo, hi) = (start - 1e-3, end + 1e-3);
    let mut dropped = 0u64;
    for s in series {
        let before = s.points.len();
        let mut last = f64::NEG_INFINITY;
        s.points.retain(|p| {
            let keep = p.t >= lo && p.t <= hi && p.t > last;
            if keep {
                last = p.t;
            }
            keep
        });
        s.points.truncate(grid);
        dropped += (before - s.points.len()) as u64;
    }
    dropped
}

fn map_data<A, B>(r: ApiResponse<A>, f: impl FnOnce(&A) -> B) -> ApiResponse<B> {
    ApiResponse {
        data: f(&r.data),
        warnings: r.warnings,
        infos: r.infos,
        dropped: r.dropped,
    }
}

/// Label names with characters outside `[a-zA-Z0-9_]` use Prometheus' `U__` escaping in paths.
fn escape_label_name(name: &str) -> String {
    if name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return name.to_owned();
    }
    let mut out = String::from("U__");
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if c == '_' {
            out.push_str("__");
        } else {
            out.push_str(&format!("_{:x}_", c as u32));
        }
    }
    out
}

/// The start of a non-API body, for messages: one line, printable, short, secrets redacted
/// (before it is cut, so that no half of a secret survives).
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(4096)]);
    let text = llmscope_core::safe::redact(&text);
    let text: String = text.chars().take(200).collect();
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let line = line.trim();
    if line.is_empty() {
        "(empty body)".into()
    } else {
        line.to_owned()
    }
}

fn base64(input: &str) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = input.as_bytes();
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmscope_core::series::{Labels, Point};

    /// A 15-minute read at 15 s asks for 61 points a series: points from 2023, points past the
    /// end, repeats, time running backwards and a million points inside the range are dropped
    /// and counted; what a real Prometheus answers passes untouched.
    #[test]
    fn answers_are_held_to_the_range_and_grid_asked() {
        let (start, end, step) = (1_800_000_000.0, 1_800_000_900.0, 15.0);
        let series = |points: Vec<f64>| Series {
            key: SeriesKey::new("up", Labels::new([])),
            points: points.into_iter().map(|t| Point { t, v: 1.0 }).collect(),
        };
        let grid: Vec<f64> = (0..=60).map(|k| start + 15.0 * f64::from(k)).collect();
        let mut honest = vec![series(grid.clone())];
        assert_eq!(hold_to_request(&mut honest, start, end, step), 0);
        assert_eq!(honest[0].points.len(), 61);

        let mut hostile: Vec<f64> = (0..100_000)
            .map(|k| 1_680_000_000.0 + f64::from(k))
            .collect();
        hostile.extend(&grid[..30]);
        hostile.extend([grid[29], grid[10], end + 15.0]);
        hostile.extend(&grid[30..]);
        hostile.extend((0..1_000_000).map(|k| end - 1.0 + f64::from(k) * 1e-9));
        let n = hostile.len() as u64;
        let mut answered = vec![series(hostile)];
        let dropped = hold_to_request(&mut answered, start, end, step);
        assert_eq!(answered[0].points.len(), 61);
        assert_eq!(dropped, n - 61);
        assert!(
            answered[0]
                .points
                .iter()
                .all(|p| p.t >= start && p.t <= end)
        );
    }

    #[test]
    fn ranges_split_on_the_step_grid() {
        assert_eq!(split_range(0.0, 10.0, 1.0, 100), [(0.0, 10.0)]);
        // 25 points, 10 per chunk: 0..9, 10..19, 20..24.
        assert_eq!(
            split_range(0.0, 24.0, 1.0, 10),
            [(0.0, 9.0), (10.0, 19.0), (20.0, 24.0)]
        );
        // A day at 1 s is 86,401 points: 9 chunks, none over the limit.
        let chunks = split_range(0.0, 86_400.0, 1.0, MAX_POINTS);
        assert_eq!(chunks.len(), 9);
        assert!(chunks.iter().all(|(s, e)| ((e - s) as u64) < MAX_POINTS));
        assert_eq!(chunks.last().unwrap().1, 86_400.0);
        assert_eq!(
            split_range(5.0, 1.0, 1.0, 10),
            [(5.0, 1.0)],
            "the server says why"
        );
    }

    #[test]
    fn times_and_basic_auth_encode() {
        assert_eq!(fmt_time(1_700_000_000.0), "1700000000");
        assert_eq!(fmt_time(1.5), "1.5");
        assert_eq!(base64("user:pass"), "dXNlcjpwYXNz");
        assert_eq!(base64("ab"), "YWI=");
        assert_eq!(escape_label_name("pod"), "pod");
        assert_eq!(escape_label_name("http.status"), "U__http_2e_status");
    }

    #[test]
    fn urls_keep_the_prefix_and_encode_params() {
        let cfg = PromConfig::new("http://127.0.0.1:9009/prometheus/".parse().unwrap());
        let c = PromClient::new(cfg, HttpClient::new(None).unwrap());
        let u = c
            .uri("query", &[("query", "{__name__=~\"vllm:.*\"}".into())])
            .unwrap();
        assert_eq!(u.path(), "/prometheus/api/v1/query");
        assert_eq!(u.query(), Some("query=%7B__name__%3D%7E%22vllm%3A.*%22%7D"));
    }

    #[test]
    fn auth_headers_are_sensitive_and_secrets_never_print() {
        let mut cfg = PromConfig::new("http://x:1".parse().unwrap());
        cfg.auth = Some(Auth::Bearer(Secret::new("tok-123")));
        cfg.headers.push((
            HeaderName::from_static("x-scope-orgid"),
            HeaderValue::from_static("team-a"),
        ));
        let h = headers(&cfg);
        assert!(h[header::AUTHORIZATION].is_sensitive());
        assert_eq!(h["x-scope-orgid"], "team-a");
        assert!(!format!("{cfg:?}").contains("tok-123"));
    }

    #[test]
    fn snippets_are_short_single_lines() {
        assert_eq!(
            snippet(b"<html>\n<body>502</body>"),
            "<html> <body>502</body>"
        );
        assert_eq!(snippet(b""), "(empty body)");
        assert!(snippet(&[b'a'; 1000]).len() <= 200);
    }
}
