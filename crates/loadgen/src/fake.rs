//! A fake vLLM server for tests (feature `fake-server`): the OpenAI framing of vLLM
//! (`docs/SOURCES.md` §openai-http) and every fault the load generator must survive, on
//! `127.0.0.1:0`.
//!
//! It streams `data: <json>\n\n` events — role chunk, one chunk per token (optionally the first
//! ones as `reasoning`), a finishing chunk, the usage chunk with `"choices":[]` when asked, then
//! `data: [DONE]` — and serves `/v1/models`. Every `fault_every`-th request gets [`FakeConfig::fault`].
//! With `x-llmscope-timestamps: 1` each chunk carries `llmscope_emit_unix_ns`, like `llmscope sim`.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// A misbehaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// HTTP 500 with a vLLM error body.
    Http500,
    /// HTTP 429.
    Http429,
    /// The connection is closed mid-stream.
    Disconnect,
    /// The stream stops sending (for an hour).
    Stall,
    /// One event carries invalid JSON.
    Malformed,
    /// An in-band `{"error":…}` event, then `[DONE]`.
    InBandError,
}

/// How the fake behaves.
#[derive(Debug, Clone)]
pub struct FakeConfig {
    pub model: String,
    /// Tokens per answer when the request has no `max_tokens`.
    pub tokens: u32,
    /// How many of the first tokens are reasoning.
    pub reasoning_tokens: u32,
    pub ttft: Duration,
    pub token_interval: Duration,
    pub fault: Option<Fault>,
    /// The fault hits requests 1, 1 + n, 1 + 2n, … (counting from 1).
    pub fault_every: u64,
    /// `/v1/models` answers HTML, like a web server that is not an OpenAI API.
    pub not_openai: bool,
    /// Usage reports this many tokens more than were streamed.
    pub usage_skew: i64,
}

impl Default for FakeConfig {
    fn default() -> Self {
        FakeConfig {
            model: "fake/model".into(),
            tokens: 8,
            reasoning_tokens: 0,
            ttft: Duration::from_millis(5),
            token_interval: Duration::from_millis(1),
            fault: None,
            fault_every: 1,
            not_openai: false,
            usage_skew: 0,
        }
    }
}

/// What the fake saw.
#[derive(Debug, Default)]
pub struct Seen {
    pub requests: AtomicU64,
    pub last_body: Mutex<Option<Value>>,
    pub last_authorization: Mutex<Option<String>>,
}

/// A running fake.
#[derive(Debug)]
pub struct FakeServer {
    pub url: String,
    pub seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct App {
    cfg: Arc<FakeConfig>,
    seen: Arc<Seen>,
}

/// Starts a fake on `127.0.0.1:0`.
pub async fn start(cfg: FakeConfig) -> FakeServer {
    let seen = Arc::new(Seen::default());
    let app = App {
        cfg: Arc::new(cfg),
        seen: seen.clone(),
    };
    let router = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .with_state(app);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let url = format!("http://{}", listener.local_addr().expect("local addr"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    FakeServer { url, seen, task }
}

async fn models(State(app): State<App>) -> Response {
    if app.cfg.not_openai {
        return ([(header::CONTENT_TYPE, "text/html")], "<html>hello</html>").into_response();
    }
    Json(json!({"object":"list","data":[{"id":app.cfg.model,"object":"model","created":1,"owned_by":"vllm","root":app.cfg.model,"parent":null,"max_model_len":4096}]})).into_response()
}

async fn chat(State(app): State<App>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    complete(app, headers, body, true).await
}

async fn completions(
    State(app): State<App>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    complete(app, headers, body, false).await
}

fn error(status: StatusCode, kind: &str) -> Response {
    let body =
        json!({"error":{"message":"injected","type":kind,"param":null,"code":status.as_u16()}});
    (status, Json(body)).into_response()
}

async fn complete(app: App, headers: HeaderMap, body: Value, chat: bool) -> Response {
    let n = see(&app.seen, &headers, &body);
    let cfg = app.cfg.clone();
    let fault = cfg
        .fault
        .filter(|_| n.is_multiple_of(cfg.fault_every.max(1)));
    if let Some(r) = fault.and_then(http_error) {
        return r;
    }
    if body["model"] != cfg.model.as_str() {
        return error(StatusCode::NOT_FOUND, "NotFoundError");
    }
    let tokens = body["max_tokens"].as_u64().map_or(cfg.tokens, |m| m as u32);
    if body["stream"].as_bool() != Some(true) {
        tokio::time::sleep(cfg.ttft + cfg.token_interval * tokens).await;
        return Json(whole(&cfg, chat, tokens)).into_response();
    }
    let (stamps, usage) = stream_options(&headers, &body);
    event_stream(Plan {
        cfg,
        chat,
        tokens,
        stamps,
        usage,
        fault,
    })
}

/// Whether the client asked for emit stamps, and for the usage chunk.
fn stream_options(headers: &HeaderMap, body: &Value) -> (bool, bool) {
    let stamps = headers
        .get("x-llmscope-timestamps")
        .is_some_and(|v| v == "1");
    let usage = body["stream_options"]["include_usage"]
        .as_bool()
        .unwrap_or(false);
    (stamps, usage)
}

/// The answer of a fault that fails the request before it starts.
fn http_error(fault: Fault) -> Option<Response> {
    match fault {
        Fault::Http500 => Some(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
        )),
        Fault::Http429 => Some(error(StatusCode::TOO_MANY_REQUESTS, "RateLimitError")),
        _ => None,
    }
}

/// Counts the request and keeps its body and `Authorization`; returns how many came before it.
fn see(seen: &Seen, headers: &HeaderMap, body: &Value) -> u64 {
    let n = seen.requests.fetch_add(1, Ordering::SeqCst);
    *seen.last_body.lock().unwrap() = Some(body.clone());
    *seen.last_authorization.lock().unwrap() = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    n
}

fn event_stream(plan: Plan) -> Response {
    let stream = futures_util::stream::unfold((plan, 0u32), |(p, i)| async move {
        let item = p.event(i).await?;
        Some((item, (p, i + 1)))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream; charset=utf-8")
        .body(Body::from_stream(stream))
        .unwrap()
}

fn whole(cfg: &FakeConfig, chat: bool, tokens: u32) -> Value {
    let text = "x".repeat(tokens as usize);
    let usage = json!({"prompt_tokens":3,"total_tokens":3 + tokens,"completion_tokens":tokens});
    if chat {
        json!({"id":"chatcmpl-1","object":"chat.completion","model":cfg.model,"choices":[{"index":0,"message":{"role":"assistant","content":text},"finish_reason":"length"}],"usage":usage})
    } else {
        json!({"id":"cmpl-1","object":"text_completion","model":cfg.model,"choices":[{"index":0,"text":text,"finish_reason":"length"}],"usage":usage})
    }
}

/// The events of one streamed answer: 0 = role (chat), 1..=tokens, then usage, then `[DONE]`.
struct Plan {
    cfg: Arc<FakeConfig>,
    chat: bool,
    tokens: u32,
    stamps: bool,
    usage: bool,
    fault: Option<Fault>,
}

type Event = Result<Bytes, std::io::Error>;

impl Plan {
    async fn event(&self, i: u32) -> Option<Event> {
        let t = self.tokens;
        match (i, self.fault) {
            (0, _) => tokio::time::sleep(self.cfg.ttft).await,
            (i, _) if i <= t => tokio::time::sleep(self.cfg.token_interval).await,
            _ => {}
        }
        if let Some(injected) = self.inject(i).await {
            return injected;
        }
        if i == 0 {
            return self
                .chat
                .then(|| self.role())
                .or_else(|| Some(Ok(Bytes::new())));
        }
        if i <= t {
            return Some(Ok(self.token(i)));
        }
        match (i - t, self.usage) {
            (1, true) => Some(Ok(self.usage_chunk())),
            (1, false) | (2, true) => Some(Ok(Bytes::from_static(b"data: [DONE]\n\n"))),
            _ => None,
        }
    }

    /// The fault, in the middle of the answer: `Some` replaces event `i` (`Some(None)` ends the
    /// stream); a stall only delays it.
    async fn inject(&self, i: u32) -> Option<Option<Event>> {
        let mid = self.tokens / 2 + 1;
        match (i, self.fault) {
            (i, Some(Fault::Disconnect)) if i == mid => {
                Some(Some(Err(std::io::Error::other("injected disconnect"))))
            }
            (i, Some(Fault::Stall)) if i == mid => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                None
            }
            (i, Some(Fault::Malformed)) if i == mid => Some(Some(Ok(Bytes::from_static(
                b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"\n\n",
            )))),
            (i, Some(Fault::InBandError)) if i == mid => {
                let e = json!({"error":{"message":"injected","type":"InternalServerError","param":null,"code":500}});
                Some(Some(Ok(Bytes::from(format!(
                    "data: {e}\n\ndata: [DONE]\n\n"
                )))))
            }
            (i, Some(Fault::InBandError)) if i > mid => Some(None),
            _ => None,
        }
    }

    fn frame(&self, mut v: Value) -> Bytes {
        if self.stamps {
            let ns = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64;
            v["llmscope_emit_unix_ns"] = json!(ns);
        }
        Bytes::from(format!("data: {v}\n\n"))
    }

    fn role(&self) -> Event {
        Ok(self.frame(json!({"id":"chatcmpl-1","object":"chat.completion.chunk","model":self.cfg.model,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})))
    }

    fn token(&self, i: u32) -> Bytes {
        let finish = if i == self.tokens {
            json!("length")
        } else {
            Value::Null
        };
        let choice = if !self.chat {
            json!({"index":0,"text":" x","logprobs":null,"finish_reason":finish})
        } else if i <= self.cfg.reasoning_tokens {
            json!({"index":0,"delta":{"reasoning":"hm"},"logprobs":null,"finish_reason":finish})
        } else {
            json!({"index":0,"delta":{"content":" x"},"logprobs":null,"finish_reason":finish})
        };
        self.frame(json!({"id":"chatcmpl-1","object":"chat.completion.chunk","model":self.cfg.model,"choices":[choice]}))
    }

    fn usage_chunk(&self) -> Bytes {
        let out = (i64::from(self.tokens) + self.cfg.usage_skew).max(0);
        self.frame(json!({"id":"chatcmpl-1","object":"chat.completion.chunk","model":self.cfg.model,"choices":[],"usage":{"prompt_tokens":3,"total_tokens":3 + out,"completion_tokens":out}}))
    }
}
