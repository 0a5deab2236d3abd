//! The one HTTP client of collection: GETs with a timeout, a body-size cap, gzip, and TLS.
//!
//! [`HttpClient`] wraps hyper 1.x's pooled client (hyper-util) over an `http`/`https` connector
//! (rustls with the `ring` provider; system roots plus an optional CA file). One client is
//! shared by every scrape loop and API call of a run. [`HttpClient::get`] returns a [`Fetched`]
//! body (gunzipped, never larger than the cap) or a [`FetchError`] whose
//! [`FetchError::kind`] is the [`FailureKind`] that scrape health records count.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use llmscope_core::series::FailureKind;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Why a GET failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FetchError {
    #[error("cannot connect: {0}")]
    Connect(String),
    #[error("no answer within {}", llmscope_core::duration::format_duration(*.0))]
    Timeout(Duration),
    #[error("body larger than the {limit}-byte limit")]
    TooLarge { limit: usize },
    #[error("unreadable body: {0}")]
    Decode(String),
    #[error("request failed: {0}")]
    Request(String),
}

impl FetchError {
    pub fn kind(&self) -> FailureKind {
        match self {
            FetchError::Connect(_) | FetchError::Request(_) => FailureKind::Connect,
            FetchError::Timeout(_) => FailureKind::Timeout,
            FetchError::TooLarge { .. } => FailureKind::TooLarge,
            FetchError::Decode(_) => FailureKind::Decode,
        }
    }
}

/// Why the client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read CA file {path}: {why}")]
    CaFile { path: String, why: String },
    #[error("TLS setup failed: {0}")]
    Rustls(#[from] rustls::Error),
}

/// A successful response (any status).
#[derive(Debug, Clone)]
pub struct Fetched {
    pub status: u16,
    /// Lower-cased `Content-Type`, `""` when absent.
    pub content_type: String,
    /// The body, decompressed.
    pub body: Bytes,
    /// Bytes as they came over the wire (compressed size for gzip).
    pub wire_bytes: u64,
}

/// One GET.
#[derive(Debug, Clone)]
pub struct Get<'a> {
    pub uri: Uri,
    pub headers: &'a HeaderMap,
    pub timeout: Duration,
    /// Cap on the body, before and after decompression.
    pub body_limit: usize,
}

/// The shared HTTP client.
#[derive(Debug, Clone)]
pub struct HttpClient {
    inner: Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
}

impl HttpClient {
    /// A client trusting the system roots and, if given, the certificates of a PEM `ca_file`.
    pub fn new(ca_file: Option<&Path>) -> Result<HttpClient, TlsError> {
        let tls = tls_config(ca_file)?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(Duration::from_secs(10)));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let inner = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(https);
        Ok(HttpClient { inner })
    }

    /// GETs `req.uri`; any status is a [`Fetched`], transport problems are errors.
    pub async fn get(&self, req: Get<'_>) -> Result<Fetched, FetchError> {
        let mut request = Request::new(Empty::new());
        *request.uri_mut() = req.uri.clone();
        *request.headers_mut() = req.headers.clone();
        let work = async {
            let resp = self.inner.request(request).await.map_err(client_error)?;
            read_response(resp, req.body_limit).await
        };
        tokio::time::timeout(req.timeout, work)
            .await
            .map_err(|_| FetchError::Timeout(req.timeout))?
    }
}

fn client_error(e: hyper_util::client::legacy::Error) -> FetchError {
    // The chain reads "client error (Connect): tcp connect error: Connection refused"; its
    // innermost cause is the part a user can act on.
    let mut cause: &dyn std::error::Error = &e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    if e.is_connect() {
        FetchError::Connect(cause.to_string())
    } else {
        FetchError::Request(cause.to_string())
    }
}

async fn read_response(
    resp: hyper::Response<Incoming>,
    limit: usize,
) -> Result<Fetched, FetchError> {
    let status = resp.status().as_u16();
    let headers = resp.headers();
    let text = |h| {
        headers
            .get(h)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase()
    };
    let content_type = text(header::CONTENT_TYPE);
    let gzip = text(header::CONTENT_ENCODING).contains("gzip");
    // A declared length sizes the buffer once (a large answer would otherwise be copied as it
    // doubles); it is only a hint, the cap still applies to what arrives.
    let declared = text(header::CONTENT_LENGTH).parse::<usize>().ok();
    let raw = read_capped(resp.into_body(), limit, declared).await?;
    let wire_bytes = raw.len() as u64;
    let body = if gzip { gunzip(&raw, limit)? } else { raw };
    Ok(Fetched {
        status,
        content_type,
        body,
        wire_bytes,
    })
}

/// Reads a body, failing as soon as it passes `limit` bytes.
async fn read_capped(
    mut body: Incoming,
    limit: usize,
    declared: Option<usize>,
) -> Result<Bytes, FetchError> {
    let mut buf: Option<Bytes> = None;
    let mut joined = Vec::new();
    let expect = declared.unwrap_or(0).min(limit);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| FetchError::Request(format!("body cut: {e}")))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let seen = joined.len() + buf.as_ref().map_or(0, Bytes::len) + data.len();
        if seen > limit {
            return Err(FetchError::TooLarge { limit });
        }
        // One frame (the common case for small pages) is kept without a copy.
        match buf.take() {
            None if joined.is_empty() => buf = Some(data),
            first => {
                if joined.is_empty() {
                    joined.reserve_exact(expect);
                }
                joined.extend_from_slice(&first.unwrap_or_default());
                joined.extend_from_slice(&data);
            }
        }
    }
    Ok(buf.unwrap_or_else(|| Bytes::from(joined)))
}

/// Decompresses gzip, capped at `limit` decompressed bytes (a gzip bomb is `TooLarge`).
pub fn gunzip(raw: &[u8], limit: usize) -> Result<Bytes, FetchError> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(raw)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| FetchError::Decode(format!("bad gzip: {e}")))?;
    if out.len() > limit {
        return Err(FetchError::TooLarge { limit });
    }
    Ok(Bytes::from(out))
}

fn tls_config(ca_file: Option<&Path>) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    // Unreadable system certificates are skipped: an explicit CA file may be all that is needed.
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = ca_file {
        add_ca_file(&mut roots, path)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

fn add_ca_file(roots: &mut rustls::RootCertStore, path: &Path) -> Result<(), TlsError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let bad = |why: String| TlsError::CaFile {
        path: path.display().to_string(),
        why,
    };
    let certs = CertificateDer::pem_file_iter(path).map_err(|e| bad(e.to_string()))?;
    let mut added = 0;
    for cert in certs {
        let cert = cert.map_err(|e| bad(e.to_string()))?;
        roots
            .add(cert)
            .map_err(|e| bad(format!("not a CA certificate: {e}")))?;
        added += 1;
    }
    if added == 0 {
        return Err(bad("no PEM certificate in it".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gunzip_round_trips_and_caps_bombs() {
        let page = b"up 1\n".repeat(1000);
        assert_eq!(&gunzip(&gz(&page), 10_000).unwrap()[..], &page[..]);
        let bomb = gz(&vec![b'a'; 1_000_000]);
        assert!(bomb.len() < 10_000);
        assert_eq!(
            gunzip(&bomb, 100_000).unwrap_err(),
            FetchError::TooLarge { limit: 100_000 }
        );
        assert_eq!(
            gunzip(b"not gzip", 100).unwrap_err().kind(),
            FailureKind::Decode
        );
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_named() {
        let err = tls_config(Some(Path::new("/nonexistent/ca.pem"))).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "nothing here\n").unwrap();
        let err = tls_config(Some(&empty)).unwrap_err();
        assert!(err.to_string().contains("no PEM certificate"), "{err}");
    }

    #[test]
    fn errors_map_to_failure_kinds() {
        assert_eq!(
            FetchError::Timeout(Duration::from_secs(1)).kind(),
            FailureKind::Timeout
        );
        assert_eq!(FetchError::Connect("x".into()).kind(), FailureKind::Connect);
        assert_eq!(
            FetchError::Timeout(Duration::from_millis(800)).to_string(),
            "no answer within 800ms"
        );
    }
}
