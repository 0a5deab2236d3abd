//! The HTTP/1.1 client: one small connection pool over hyper's connection API, plain `http://`.
//!
//! [`Target`] is the server's base URL. [`Client`] keeps idle keep-alive connections in a stack
//! (a closed-loop worker gets its connection back request after request), opens new ones with
//! `TCP_NODELAY`, and runs one request at a time per connection. [`Client::execute`] sends a body
//! and reads the response with an idle (stall) timer, handing each frame to the pure
//! [`StreamReader`] with the instant it arrived. Headers are built once; the API key is marked
//! sensitive and never appears in `Debug` output or errors.

use crate::clock::anchor;
use crate::net::{RxStamp, StampedIo};
use crate::record::ErrorKind;
use crate::response::{MAX_BODY_BYTES, Outcome, StreamReader, read_whole};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, Uri};
use std::net::SocketAddr;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// An `http://host:port[/prefix]` base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    host: String,
    port: u16,
    prefix: String,
}

/// Why a target URL was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid target `{text}`: {why} (write the server's base URL, e.g. http://127.0.0.1:8000)")]
pub struct TargetError {
    pub text: String,
    pub why: &'static str,
}

impl FromStr for Target {
    type Err = TargetError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        // `http://user:pw@host` → `http://***@host`: credentials never reach an error message.
        let bad = |why| TargetError {
            text: llmscope_core::safe::redact(text).into_owned(),
            why,
        };
        let uri: Uri = text.trim().parse().map_err(|_| bad("not a URL"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(bad(
                    "https is not supported yet; use http:// (e.g. through kubectl port-forward)",
                ));
            }
            _ => return Err(bad("missing http://")),
        }
        let auth = uri.authority().ok_or_else(|| bad("missing host"))?;
        if auth.as_str().contains('@') {
            return Err(bad(
                "credentials in the URL are not supported; use --api-key or --header",
            ));
        }
        let host = auth
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let prefix = uri.path().trim_end_matches('/');
        let prefix = prefix.strip_suffix("/v1").unwrap_or(prefix).to_owned();
        Ok(Target {
            host,
            port: auth.port_u16().unwrap_or(80),
            prefix,
        })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(f, "http://{host}:{}{}", self.port, self.prefix)
    }
}

impl Target {
    /// Resolves the host to socket addresses.
    pub async fn resolve(&self) -> std::io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((self.host.as_str(), self.port))
            .await?
            .collect())
    }

    /// The request URI (origin form) of `path` under this base.
    pub fn uri(&self, path: &str) -> Uri {
        format!("{}{path}", self.prefix)
            .parse()
            .unwrap_or_else(|_| Uri::from_static("/"))
    }

    fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{host}:{}", self.port)
    }
}

/// A secret (API key): never printed, never serialised (the one [`llmscope_core::safe::Secret`]).
pub use llmscope_core::safe::Secret;

/// Why a one-off GET failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{0}")]
    Connect(std::io::Error),
    #[error("timed out")]
    Timeout,
    #[error("connection failed: {0}")]
    Http(#[from] hyper::Error),
}

/// A pooled connection and the kernel receive stamp of its latest read.
struct Conn {
    send: SendRequest<Full<Bytes>>,
    stamp: RxStamp,
    /// When it was checked in, for a connection from the idle pool; `None` when new.
    idle_since: Option<Instant>,
}

/// An idle connection older than this is closed rather than reused. Servers close idle
/// keep-alive connections on their own schedule (uvicorn, which serves vLLM, after 5 s), and a
/// request written into a connection the server is closing fails before it is read.
const MAX_IDLE: Duration = Duration::from_secs(4);

/// Connections [`Client::prewarm`] opens at once: under common listen backlogs (128 and up), so
/// a server that keeps accepting does not drop a handshake.
const CONNECTS_AT_ONCE: usize = 64;

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Conn")
    }
}

/// Connection pool and request sender for one target.
#[derive(Debug)]
pub struct Client {
    addrs: Vec<SocketAddr>,
    headers: HeaderMap,
    idle: Mutex<Vec<Conn>>,
    connect_timeout: Duration,
}

impl Client {
    /// A client for `addrs` sending `headers` (host, auth, user headers) on every request.
    pub fn new(
        target: &Target,
        addrs: Vec<SocketAddr>,
        auth: Option<&Secret>,
        extra: &[(HeaderName, HeaderValue)],
    ) -> Self {
        let mut headers = HeaderMap::new();
        if let Ok(h) = HeaderValue::from_str(&target.authority()) {
            headers.insert(header::HOST, h);
        }
        headers.insert(
            header::USER_AGENT,
            HeaderValue::from_static("llmscope-loadgen"),
        );
        if let Some(Ok(mut v)) =
            auth.map(|s| HeaderValue::from_str(&format!("Bearer {}", s.expose())))
        {
            v.set_sensitive(true);
            headers.insert(header::AUTHORIZATION, v);
        }
        for (k, v) in extra {
            headers.insert(k.clone(), v.clone());
        }
        Client {
            addrs,
            headers,
            idle: Mutex::new(Vec::new()),
            connect_timeout: Duration::from_secs(10),
        }
    }

    async fn connect(&self) -> std::io::Result<Conn> {
        let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "no address for the host");
        for addr in &self.addrs {
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => {
                    stream.set_nodelay(true)?;
                    let (io, stamp) = StampedIo::new(stream);
                    let (send, conn) = http1::handshake(io).await.map_err(std::io::Error::other)?;
                    tokio::spawn(conn);
                    return Ok(Conn {
                        send,
                        stamp,
                        idle_since: None,
                    });
                }
                Ok(Err(e)) => last = e,
                Err(_) => {
                    last = std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out")
                }
            }
        }
        Err(last)
    }

    /// An idle connection that is still open, or a new one.
    async fn checkout(&self) -> std::io::Result<Conn> {
        loop {
            let idle = self.idle.lock().map(|mut v| v.pop()).unwrap_or(None);
            let Some(mut conn) = idle else { break };
            let fresh = conn.idle_since.is_some_and(|t| t.elapsed() < MAX_IDLE);
            if fresh && conn.send.ready().await.is_ok() {
                return Ok(conn);
            }
        }
        self.connect().await
    }

    /// Opens connections until `n` are idle in the pool, at most `CONNECTS_AT_ONCE` at a time,
    /// for at most `within`; stops at the first that fails (the requests then report why).
    /// A closed loop of N streams would otherwise connect N times at once, and a server whose
    /// accept queue overflows drops the excess handshakes: those wait a whole TCP retransmit
    /// (1 s) before their request is even sent, which TTFT would count.
    pub async fn prewarm(self: &Arc<Self>, n: usize, within: Duration) {
        let have = self.idle.lock().map_or(0, |v| v.len());
        let mut left = n.saturating_sub(have);
        let deadline = Instant::now() + within;
        let mut connecting = tokio::task::JoinSet::new();
        loop {
            while left > 0 && connecting.len() < CONNECTS_AT_ONCE {
                let c = self.clone();
                connecting.spawn(async move { c.connect().await });
                left -= 1;
            }
            let Ok(Some(done)) = tokio::time::timeout_at(deadline, connecting.join_next()).await
            else {
                break;
            };
            match done {
                Ok(Ok(conn)) => self.checkin(conn),
                _ => break,
            }
        }
        connecting.abort_all();
    }

    fn checkin(&self, mut conn: Conn) {
        conn.idle_since = Some(Instant::now());
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(conn);
        }
    }

    fn request(&self, method: Method, uri: Uri, body: Bytes) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = uri;
        *req.headers_mut() = self.headers.clone();
        req
    }

    /// GETs `uri` and returns status, content type and (capped) body.
    pub async fn get(
        &self,
        uri: Uri,
        timeout: Duration,
    ) -> Result<(u16, String, Bytes), FetchError> {
        let work = async {
            let mut conn = self.checkout().await.map_err(FetchError::Connect)?;
            let resp = conn
                .send
                .send_request(self.request(Method::GET, uri, Bytes::new()))
                .await?;
            let status = resp.status().as_u16();
            let ctype = content_type(&resp);
            let body = Limited::collect(resp.into_body(), MAX_BODY_BYTES).await?;
            self.checkin(conn);
            Ok((status, ctype, body))
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| FetchError::Timeout)?
    }

    /// How far the server's clock is ahead of this machine's (ms), by the `Date` header of a GET
    /// of `uri`: `Date` says the whole second, so the answer is within ±(500 ms + half the round
    /// trip). `None` when the server sends no `Date` (or none that reads) or does not answer.
    pub async fn server_clock_offset_ms(&self, uri: Uri, timeout: Duration) -> Option<f64> {
        let now = || llmscope_core::time::unix_now();
        let work = async {
            let mut conn = self.checkout().await.ok()?;
            let before = now();
            let resp = conn
                .send
                .send_request(self.request(Method::GET, uri, Bytes::new()))
                .await
                .ok()?;
            let after = now();
            let date = resp
                .headers()
                .get(header::DATE)
                .and_then(|v| v.to_str().ok())
                .and_then(llmscope_core::time::http_date);
            let _ = Limited::collect(resp.into_body(), MAX_BODY_BYTES).await;
            self.checkin(conn);
            Some((date? + 0.5 - (before + after) / 2.0) * 1e3)
        };
        tokio::time::timeout(timeout, work).await.ok().flatten()
    }

    /// POSTs a JSON `body` to `uri` and returns status and (capped) body.
    pub async fn post_json(
        &self,
        uri: Uri,
        body: Bytes,
        timeout: Duration,
    ) -> Result<(u16, Bytes), FetchError> {
        let work = async {
            let mut conn = self.checkout().await.map_err(FetchError::Connect)?;
            let mut req = self.request(Method::POST, uri, body);
            req.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            let resp = conn.send.send_request(req).await?;
            let status = resp.status().as_u16();
            let body = Limited::collect(resp.into_body(), MAX_BODY_BYTES).await?;
            self.checkin(conn);
            Ok((status, body))
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| FetchError::Timeout)?
    }

    /// Sends one completion request and reads its response; `streamed` counts text chunks as
    /// they arrive (output tokens when not streaming), for live progress.
    pub async fn execute(
        &self,
        uri: Uri,
        body: Bytes,
        stream: bool,
        limits: ReadLimits,
        out: &mut Outcome,
        streamed: &AtomicU64,
    ) -> Result<(), ErrorKind> {
        let started = Instant::now();
        // A server may hold the response head back until the first token: that wait is queueing.
        let (conn, resp) = tokio::time::timeout_at(
            started + limits.first_token,
            self.send_post(uri, body, stream),
        )
        .await
        .map_err(|_| ErrorKind::TtftTimeout)??;
        let status = resp.status();
        out.status = Some(status.as_u16());
        let is_sse = content_type(&resp).starts_with("text/event-stream");
        let body = Frames::new(resp.into_body(), limits, started, conn.stamp.clone());
        let result = if !status.is_success() {
            let read = read_error(body).await;
            out.error_body = read.as_deref().ok().and_then(crate::failure::message);
            read.and(Err(ErrorKind::Http(status.as_u16())))
        } else if stream && !is_sse {
            Err(ErrorKind::BadResponse)
        } else if stream {
            read_stream(body, out, streamed).await
        } else {
            let read = read_body(body, out).await;
            let tokens = out.usage.completion_tokens.unwrap_or(0);
            streamed.fetch_add(u64::from(tokens), Ordering::Relaxed);
            read
        };
        conn.stamp.set_precise(false);
        // A connection is reused only when its response was read to the end.
        if matches!(result, Ok(()) | Err(ErrorKind::Http(_))) {
            self.checkin(conn);
        }
        result
    }
}

impl Client {
    /// Sends a POST and waits for the response head. A pooled connection that the server closed
    /// while it sat idle fails before any byte of a response; the request is then sent once more
    /// on a new connection (as HTTP clients do for a connection the server closed while idle).
    /// `precise`: a streamed answer, whose first token is stamped as it arrives
    /// ([`RxStamp::set_precise`], asked for before the request is written).
    async fn send_post(
        &self,
        uri: Uri,
        body: Bytes,
        precise: bool,
    ) -> Result<(Conn, Response<Incoming>), ErrorKind> {
        let mut conn = self.checkout().await.map_err(|e| connect_error(&e))?;
        conn.stamp.set_precise(precise);
        let post = |uri: Uri, body: Bytes| {
            let mut req = self.request(Method::POST, uri, body);
            req.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            req
        };
        match conn
            .send
            .send_request(post(uri.clone(), body.clone()))
            .await
        {
            Ok(resp) => Ok((conn, resp)),
            Err(_) if conn.idle_since.is_some() => {
                let mut conn = self.connect().await.map_err(|e| connect_error(&e))?;
                conn.stamp.set_precise(precise);
                let resp = conn
                    .send
                    .send_request(post(uri, body))
                    .await
                    .map_err(|_| ErrorKind::ConnectionClosed)?;
                Ok((conn, resp))
            }
            Err(_) => Err(ErrorKind::ConnectionClosed),
        }
    }
}

/// A failed connect: the client's own descriptor exhaustion is not the server refusing.
fn connect_error(e: &std::io::Error) -> ErrorKind {
    use nix::errno::Errno;
    match e.raw_os_error().map(Errno::from_raw) {
        Some(Errno::EMFILE | Errno::ENFILE) => ErrorKind::ClientFds,
        _ => ErrorKind::Connect,
    }
}

/// How long a response may keep the client waiting: for its first token (the request may sit
/// in the server's queue that long), and between chunks once tokens flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// From sending the request to its first token ([`ErrorKind::TtftTimeout`]).
    pub first_token: Duration,
    /// Between two chunks after the first token ([`ErrorKind::Stall`]).
    pub idle: Duration,
}

/// A stall or first-token timer that fires later than this after its deadline fired late
/// because the client was not running; it is checked again once, [`RECHECK`] later, when the
/// client has had the chance to read what arrived while it was paused. Once only: a client whose
/// timers are always late (an overloaded runtime) still sees a real stall, 10 ms later.
const LATE_TIMER: Duration = Duration::from_millis(5);
const RECHECK: Duration = Duration::from_millis(10);

fn content_type(resp: &Response<Incoming>) -> String {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// A response body read frame by frame. Until the first token it may take up to
/// `limits.first_token` from the request's start ([`ErrorKind::TtftTimeout`]: queued is not
/// stalled); after it, a gap longer than `limits.idle` is a [`ErrorKind::Stall`]. The timer is
/// re-armed only when it fires, not on every frame: at hundreds of thousands of frames per
/// second, per-frame timer churn shows in profiles.
struct Frames {
    body: Incoming,
    limits: ReadLimits,
    /// When the request was sent.
    started: Instant,
    /// Tokens have begun to stream.
    tokens: bool,
    last: Instant,
    timer: Pin<Box<Sleep>>,
    stamp: RxStamp,
    /// The timer fired late and is being checked again (reset by the next frame).
    rechecking: bool,
}

/// A data frame, when its bytes reached the socket (kernel stamp, else our clock), and when the
/// client got to it.
struct Frame {
    data: Bytes,
    arrived: Instant,
    seen: Instant,
}

impl Frames {
    fn new(body: Incoming, limits: ReadLimits, started: Instant, stamp: RxStamp) -> Self {
        Frames {
            body,
            limits,
            started,
            tokens: false,
            last: Instant::now(),
            timer: Box::pin(tokio::time::sleep_until(started + limits.first_token)),
            stamp,
            rechecking: false,
        }
    }

    /// When waiting runs out, and what it is then.
    fn deadline(&self) -> (Instant, ErrorKind) {
        if self.tokens {
            (self.last + self.limits.idle, ErrorKind::Stall)
        } else {
            (
                self.started + self.limits.first_token,
                ErrorKind::TtftTimeout,
            )
        }
    }

    /// The first token arrived: from now on a gap is a stall.
    fn tokens_started(&mut self) {
        if !self.tokens {
            self.tokens = true;
            let (due, _) = self.deadline();
            self.timer.as_mut().reset(due);
        }
    }

    /// The kernel's receive time of the latest read, if it is plausible (not in the future).
    fn arrival(&self, seen: Instant) -> Instant {
        let kernel = self
            .stamp
            .get()
            .map(|ns| Instant::from_std(anchor().instant(ns)));
        kernel.filter(|t| *t <= seen).unwrap_or(seen)
    }

    /// The next data frame; `None` at the end of the body.
    async fn next(&mut self) -> Result<Option<Frame>, ErrorKind> {
        loop {
            let frame = tokio::select! {
                biased;
                f = self.body.frame() => f,
                _ = self.timer.as_mut() => {
                    let (due, kind) = self.deadline();
                    let now = Instant::now();
                    let late = now.saturating_duration_since(self.timer.deadline());
                    if now >= due && (late <= LATE_TIMER || self.rechecking) {
                        return Err(kind);
                    }
                    self.rechecking |= now >= due;
                    // A timer that fires late means the client was not running (its thread lost
                    // the core, or the runtime was busy): what arrived meanwhile is not read yet.
                    // Look again shortly rather than blame the server for the client's pause.
                    let next = if now >= due { now + RECHECK } else { due };
                    self.timer.as_mut().reset(next);
                    continue;
                }
            };
            let seen = Instant::now();
            self.last = seen;
            self.rechecking = false;
            match frame {
                None => return Ok(None),
                Some(Err(_)) => return Err(ErrorKind::StreamCut),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        let arrived = self.arrival(seen);
                        return Ok(Some(Frame {
                            data,
                            arrived,
                            seen,
                        }));
                    }
                }
            }
        }
    }
}

async fn read_stream(
    mut body: Frames,
    out: &mut Outcome,
    streamed: &AtomicU64,
) -> Result<(), ErrorKind> {
    let mut reader = StreamReader::new(out.text.is_some());
    let mut counted = 0;
    let mut lag = None;
    let mut behind = false;
    body.stamp.set_precise(true);
    let result = loop {
        match body.next().await {
            Ok(Some(f)) => {
                let fed = reader.feed(&f.data, f.arrived.into_std());
                let chunks = reader.outcome().chunk_tokens;
                if chunks > counted {
                    streamed.fetch_add(u64::from(chunks - counted), Ordering::Relaxed);
                    counted = chunks;
                }
                if let Err(e) = fed {
                    break Err(e);
                }
                if lag.is_none() && reader.outcome().first_token.is_some() {
                    body.tokens_started();
                    lag = Some(f.seen.saturating_duration_since(f.arrived));
                    behind = body.stamp.behind();
                    body.stamp.set_precise(false);
                }
            }
            Ok(None) => break reader.finish(),
            Err(e) => break Err(e),
        }
    };
    body.stamp.set_precise(false);
    let status = out.status;
    *out = reader.into_outcome();
    out.status = status;
    out.first_token_rx_lag = lag;
    out.first_token_behind = behind;
    result
}

async fn read_body(mut body: Frames, out: &mut Outcome) -> Result<(), ErrorKind> {
    // A whole (non-streamed) answer's head means the answer is ready: a gap from here is a stall.
    body.tokens_started();
    let mut buf = Vec::new();
    while let Some(Frame { data, .. }) = body.next().await? {
        if buf.len() + data.len() > MAX_BODY_BYTES {
            return Err(ErrorKind::BadResponse);
        }
        buf.extend_from_slice(&data);
    }
    read_whole(&buf, out)
}

/// Reads an error body to its end (capped), so the connection can be reused, keeping its first
/// [`crate::failure::MAX_READ_BYTES`].
async fn read_error(mut body: Frames) -> Result<Vec<u8>, ErrorKind> {
    // The server has answered: nothing is queued any more.
    body.tokens_started();
    let (mut seen, mut kept) = (0, Vec::new());
    while let Some(Frame { data, .. }) = body.next().await? {
        seen += data.len();
        if seen > MAX_BODY_BYTES {
            return Err(ErrorKind::BadResponse);
        }
        let room = crate::failure::MAX_READ_BYTES.saturating_sub(kept.len());
        kept.extend_from_slice(&data[..data.len().min(room)]);
    }
    Ok(kept)
}

/// Collects a body up to a size cap.
struct Limited;

impl Limited {
    async fn collect(mut body: Incoming, cap: usize) -> Result<Bytes, hyper::Error> {
        let mut buf = Vec::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                let room = cap.saturating_sub(buf.len());
                buf.extend_from_slice(&data[..data.len().min(room)]);
            }
        }
        Ok(Bytes::from(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Reads one request (head and `content-length` body) from `s`.
    async fn read_request(s: &mut TcpStream) -> std::io::Result<()> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = s.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&chunk[..n]);
            let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return Ok(());
            }
        }
    }

    /// A server whose first connection answers one request and then closes on the next one
    /// without answering — as uvicorn's keep-alive timeout fires on an idle connection while a
    /// request is on its way. Later connections answer every request.
    async fn closing_server() -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let mut first = true;
            while let Ok((mut s, _)) = listener.accept().await {
                let closes = std::mem::take(&mut first);
                tokio::spawn(async move {
                    let mut answered = 0;
                    while read_request(&mut s).await.is_ok() {
                        if closes && answered == 1 {
                            return;
                        }
                        let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#;
                        let resp = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if s.write_all(resp.as_bytes()).await.is_err() {
                            return;
                        }
                        answered += 1;
                    }
                });
            }
        });
        addr
    }

    /// A whole (non-streamed) answer whose body stops half-way is a stall after the idle limit,
    /// not a wait for the (much longer) first-token limit.
    #[tokio::test]
    async fn a_whole_answer_that_stops_half_way_is_a_stall() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            read_request(&mut s).await.unwrap();
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"choices\"";
            s.write_all(head.as_bytes()).await.unwrap();
            // Hold the connection open with the body unfinished.
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        let target: Target = format!("http://{addr}").parse().unwrap();
        let client = Client::new(&target, vec![addr], None, &[]);
        let limits = ReadLimits {
            first_token: Duration::from_secs(60),
            idle: Duration::from_millis(200),
        };
        let mut out = Outcome::default();
        let got = tokio::time::timeout(
            Duration::from_secs(20),
            client.execute(
                target.uri("/v1/completions"),
                Bytes::from_static(b"{}"),
                false,
                limits,
                &mut out,
                &AtomicU64::new(0),
            ),
        )
        .await
        .expect("the idle limit ends the wait, not the first-token limit");
        assert_eq!(got, Err(ErrorKind::Stall));
    }

    /// The client's own pause is not the server's stall: when the client's thread does not run
    /// for longer than the idle limit while the server keeps streaming, the response completes.
    /// (Here the runtime's one thread is blocked, as a thread that lost its core for that long.)
    #[tokio::test]
    async fn a_client_that_was_not_running_does_not_call_the_server_stalled() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            read_request(&mut s).await.unwrap();
            let ev = |text: &str, finish: &str| {
                format!(
                    "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":{finish}}}]}}\n\n"
                )
            };
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            s.write_all(format!("{head}{}", ev("Hi", "null")).as_bytes())
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(60)).await;
            let end = format!("{}data: [DONE]\n\n", ev("!", "\"stop\""));
            s.write_all(end.as_bytes()).await.unwrap();
        });
        // The client's thread stops running after the first token, for longer than the idle limit.
        tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            std::thread::sleep(Duration::from_millis(600));
        });
        let target: Target = format!("http://{addr}").parse().unwrap();
        let client = Client::new(&target, vec![addr], None, &[]);
        let limits = ReadLimits {
            first_token: Duration::from_secs(10),
            idle: Duration::from_millis(200),
        };
        let mut out = Outcome::default();
        let got = client
            .execute(
                target.uri("/v1/chat/completions"),
                Bytes::from_static(b"{}"),
                true,
                limits,
                &mut out,
                &AtomicU64::new(0),
            )
            .await;
        assert_eq!(got, Ok(()), "the server never paused for 200 ms");
        assert_eq!(out.chunk_tokens, 2);
    }

    /// A pooled keep-alive connection that the server closes as the next request arrives fails
    /// before any byte of a response: the request goes again on a new connection and succeeds.
    #[tokio::test]
    async fn a_connection_the_server_closed_while_idle_is_not_a_failed_request() {
        let addr = closing_server().await;
        let target: Target = format!("http://{addr}").parse().unwrap();
        let client = Client::new(&target, vec![addr], None, &[]);
        let body = Bytes::from_static(br#"{"model":"m","prompt":"x","max_tokens":1}"#);
        let idle = ReadLimits {
            first_token: Duration::from_secs(10),
            idle: Duration::from_secs(5),
        };
        let streamed = AtomicU64::new(0);
        let mut out = Outcome::default();
        let uri = target.uri("/v1/completions");
        client
            .execute(uri.clone(), body.clone(), false, idle, &mut out, &streamed)
            .await
            .expect("the first request");
        let mut out = Outcome::default();
        let second = client
            .execute(uri, body, false, idle, &mut out, &streamed)
            .await;
        assert_eq!(
            second,
            Ok(()),
            "the pooled connection was closed by the server"
        );
        assert_eq!(out.status, Some(200));
    }

    /// Prewarming opens the connections a closed loop will use, paced, and stops at a refusal.
    #[tokio::test]
    async fn prewarm_fills_the_pool_and_stops_at_a_refusal() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicU64::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((s, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::Relaxed);
                held.push(s);
            }
        });
        let target: Target = format!("http://{addr}").parse().unwrap();
        let client = Arc::new(Client::new(&target, vec![addr], None, &[]));
        client.prewarm(150, Duration::from_secs(10)).await;
        assert_eq!(client.idle.lock().unwrap().len(), 150);
        client.prewarm(150, Duration::from_secs(10)).await;
        assert_eq!(
            client.idle.lock().unwrap().len(),
            150,
            "tops up, never more"
        );
        let deadline = Instant::now() + Duration::from_secs(5);
        while accepted.load(Ordering::Relaxed) < 150 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(accepted.load(Ordering::Relaxed), 150);

        // Nothing listens on a port just freed: the first refusal ends it, quickly.
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let gone = free.local_addr().unwrap();
        drop(free);
        let target: Target = format!("http://{gone}").parse().unwrap();
        let client = Arc::new(Client::new(&target, vec![gone], None, &[]));
        let t = Instant::now();
        client.prewarm(1000, Duration::from_secs(10)).await;
        assert!(client.idle.lock().unwrap().is_empty());
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }

    #[test]
    fn the_clients_own_fd_exhaustion_is_not_a_connect_error() {
        let emfile = std::io::Error::from_raw_os_error(nix::errno::Errno::EMFILE as i32);
        let enfile = std::io::Error::from_raw_os_error(nix::errno::Errno::ENFILE as i32);
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(connect_error(&emfile), ErrorKind::ClientFds);
        assert_eq!(connect_error(&enfile), ErrorKind::ClientFds);
        assert_eq!(connect_error(&refused), ErrorKind::Connect);
    }

    #[test]
    fn parses_targets() {
        let t: Target = "http://127.0.0.1:18000".parse().unwrap();
        assert_eq!(t.to_string(), "http://127.0.0.1:18000");
        assert_eq!(t.uri("/v1/models"), "/v1/models");
        let t: Target = "http://localhost/v1/".parse().unwrap();
        assert_eq!(
            (t.to_string().as_str(), t.uri("/v1/models")),
            ("http://localhost:80", Uri::from_static("/v1/models"))
        );
        let t: Target = "http://[::1]:8000/proxy/v1".parse().unwrap();
        assert_eq!(t.to_string(), "http://[::1]:8000/proxy");
        assert_eq!(t.uri("/v1/completions"), "/proxy/v1/completions");
    }

    #[test]
    fn rejects_bad_targets() {
        for bad in [
            "",
            "127.0.0.1:8000",
            "https://x",
            "ftp://x",
            "http://user:pw@x",
        ] {
            let err = bad.parse::<Target>().unwrap_err();
            assert!(err.to_string().contains("invalid target"), "{bad}: {err}");
        }
        assert!(
            !"http://user:pw@x"
                .parse::<Target>()
                .unwrap_err()
                .to_string()
                .contains("pw@")
        );
    }

    #[test]
    fn secrets_do_not_print() {
        let s = Secret::new("sk-very-secret");
        assert!(!format!("{s:?}").contains("very"));
        let t: Target = "http://127.0.0.1:1".parse().unwrap();
        let c = Client::new(&t, vec![], Some(&s), &[]);
        assert!(!format!("{c:?}").contains("very"), "{c:?}");
    }

    /// `Secret::fits_a_header` (core, no HTTP crate) says what hyper's header check says.
    #[test]
    fn a_key_fits_a_header_exactly_when_hyper_takes_it() {
        for key in [
            "sk-ok-1234",
            "sk\tok-tab",
            "sk-cr\r\nX: 1",
            "sk-nul\0",
            "sk-del\x7f",
            "sk-é-ok",
        ] {
            let fits = HeaderValue::from_str(&format!("Bearer {key}")).is_ok();
            assert_eq!(Secret::new(key).fits_a_header(), fits, "{key:?}");
        }
    }
}
