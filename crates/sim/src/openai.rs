//! The OpenAI-compatible wire format as vLLM speaks it: request bodies in, JSON and SSE chunks out.
//!
//! Requests are decoded with serde into [`ChatRequest`] / [`CompletionRequest`] (unknown fields
//! ignored, as vLLM's pydantic models do for most). Responses are written by hand into `String`s in
//! vLLM's field order (`docs/SOURCES.md` §openai-http) — the stream path builds one small
//! string per chunk, so it stays cheap at hundreds of thousands of chunks per second.

use serde::Deserialize;
use std::fmt::Write as _;

#[derive(Debug, Clone, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub role: String,
    #[serde(default)]
    pub content: serde_json::Value,
}

/// `POST /v1/chat/completions`.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatRequest {
    pub model: Option<String>,
    pub messages: Vec<Message>,
    pub max_tokens: Option<u32>,
    pub max_completion_tokens: Option<u32>,
    #[serde(default)]
    pub stream: bool,
    pub stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub ignore_eos: bool,
    pub n: Option<u32>,
}

/// `POST /v1/completions`.
#[derive(Debug, Clone, Deserialize)]
pub struct CompletionRequest {
    pub model: Option<String>,
    pub prompt: serde_json::Value,
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub stream: bool,
    pub stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub ignore_eos: bool,
    pub n: Option<u32>,
}

/// `POST /tokenize` (vLLM): a completion `prompt` or chat `messages`, counted as the generation
/// endpoints count them.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenizeRequest {
    pub model: Option<String>,
    pub prompt: Option<serde_json::Value>,
    pub messages: Option<Vec<Message>>,
}

/// The body of a `/tokenize` answer: `{"count":N,"max_model_len":M,"tokens":[…]}` (the ids are
/// stand-ins: the simulator counts tokens, it has no vocabulary).
pub fn tokenize_response(count: u32, max_model_len: u32, key: u64) -> String {
    let mut out = String::with_capacity(48 + count as usize * 6);
    let _ = write!(
        out,
        "{{\"count\":{count},\"max_model_len\":{max_model_len},\"tokens\":["
    );
    for i in 0..u64::from(count) {
        if i > 0 {
            out.push(',');
        }
        let id = key.wrapping_add(i.wrapping_mul(0x9E37_79B9)) % 150_000;
        let _ = write!(out, "{id}");
    }
    out.push_str("]}");
    out
}

/// The text of a message `content`: a string, or an array of `{"type":"text","text":…}` parts.
pub fn content_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// Appends `s` as a JSON string literal.
pub fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Which endpoint a stream belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Chat,
    Completion,
}

/// Fixed parts of every chunk of one response.
#[derive(Debug, Clone)]
pub struct ChunkHead {
    pub endpoint: Endpoint,
    /// `{"id":"…","object":"…","created":…,"model":"…",` — shared prefix of every chunk.
    prefix: String,
}

impl ChunkHead {
    pub fn new(endpoint: Endpoint, id: &str, created: u64, model: &str) -> Self {
        let object = match endpoint {
            Endpoint::Chat => "chat.completion.chunk",
            Endpoint::Completion => "text_completion",
        };
        let mut prefix = String::with_capacity(128);
        push_head(&mut prefix, id, object, created, model);
        prefix.push(',');
        Self { endpoint, prefix }
    }

    /// `data: …` for the chat role chunk (chat only).
    pub fn role_event(&self, out: &mut String, emit_ns: Option<u128>) {
        out.push_str("data: ");
        out.push_str(&self.prefix);
        out.push_str("\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}],\"prompt_token_ids\":null");
        close(out, emit_ns);
    }

    /// `data: …` for a content chunk carrying `text`, finishing with `finish` if set.
    pub fn content_event(
        &self,
        out: &mut String,
        text: &str,
        finish: Option<&str>,
        emit_ns: Option<u128>,
    ) {
        out.push_str("data: ");
        out.push_str(&self.prefix);
        out.push_str("\"choices\":[{\"index\":0,");
        match self.endpoint {
            Endpoint::Chat => {
                out.push_str("\"delta\":{\"content\":");
                json_str(out, text);
                out.push_str("},\"logprobs\":null,");
                push_finish(out, finish);
                if finish.is_some() {
                    out.push_str(",\"stop_reason\":null");
                }
                out.push_str(",\"token_ids\":null}]");
            }
            Endpoint::Completion => {
                out.push_str("\"text\":");
                json_str(out, text);
                out.push_str(",\"logprobs\":null,");
                push_finish(out, finish);
                out.push_str(
                    ",\"stop_reason\":null,\"prompt_token_ids\":null,\"token_ids\":null}]",
                );
            }
        }
        close(out, emit_ns);
    }

    /// `data: …` for the final usage chunk (`stream_options.include_usage`).
    /// The prompt tokens found in the prefix cache are `prompt_tokens_details.cached_tokens`, as
    /// vLLM reports them with `--enable-prompt-tokens-details` (the simulator always does).
    pub fn usage_event(&self, out: &mut String, usage: Usage, emit_ns: Option<u128>) {
        out.push_str("data: ");
        out.push_str(&self.prefix);
        out.push_str("\"choices\":[],");
        push_usage(out, usage);
        close(out, emit_ns);
    }

    /// A truncated, invalid-JSON event (fault injection).
    pub fn malformed_event(&self, out: &mut String) {
        out.push_str("data: ");
        out.push_str(&self.prefix[..self.prefix.len() / 2]);
        out.push_str("\n\n");
    }
}

/// `{"id":…,"object":…,"created":…,"model":…`: how every response and chunk starts.
fn push_head(out: &mut String, id: &str, object: &str, created: u64, model: &str) {
    out.push_str("{\"id\":");
    json_str(out, id);
    let _ = write!(
        out,
        ",\"object\":\"{object}\",\"created\":{created},\"model\":"
    );
    json_str(out, model);
}

fn push_finish(out: &mut String, finish: Option<&str>) {
    out.push_str("\"finish_reason\":");
    match finish {
        Some(f) => json_str(out, f),
        None => out.push_str("null"),
    }
}

fn close(out: &mut String, emit_ns: Option<u128>) {
    if let Some(ns) = emit_ns {
        let _ = write!(out, ",\"llmscope_emit_unix_ns\":{ns}");
    }
    out.push_str("}\n\n");
}

/// What a finished non-streaming request produced.
#[derive(Debug, Clone, Copy)]
pub struct Completed<'a> {
    pub text: &'a str,
    pub finish: &'a str,
    pub usage: Usage,
}

/// Token counts of one answer: prompt, completion, and the prompt tokens found cached.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub prompt: u32,
    pub completion: u32,
    pub cached: u32,
}

/// `"usage":{…}` with vLLM's fields, `prompt_tokens_details.cached_tokens` included.
fn push_usage(out: &mut String, u: Usage) {
    let _ = write!(
        out,
        "\"usage\":{{\"prompt_tokens\":{},\"total_tokens\":{},\"completion_tokens\":{},\"prompt_tokens_details\":{{\"cached_tokens\":{}}}}}",
        u.prompt,
        u.prompt + u.completion,
        u.completion,
        u.cached
    );
}

/// The non-streaming response body.
pub fn full_response(
    endpoint: Endpoint,
    id: &str,
    created: u64,
    model: &str,
    done: &Completed,
) -> String {
    let Completed {
        text,
        finish,
        usage,
    } = *done;
    let mut out = String::with_capacity(256 + text.len());
    let object = match endpoint {
        Endpoint::Chat => "chat.completion",
        Endpoint::Completion => "text_completion",
    };
    push_head(&mut out, id, object, created, model);
    out.push_str(",\"choices\":[{\"index\":0,");
    push_answer(&mut out, endpoint, text);
    push_finish(&mut out, Some(finish));
    out.push_str(",\"stop_reason\":null}],");
    push_usage(&mut out, usage);
    out.push('}');
    out
}

/// The choice's answer: a chat `message`, or a completion's `text`.
fn push_answer(out: &mut String, endpoint: Endpoint, text: &str) {
    match endpoint {
        Endpoint::Chat => {
            out.push_str("\"message\":{\"role\":\"assistant\",\"content\":");
            json_str(out, text);
            out.push_str(",\"refusal\":null,\"annotations\":null,\"audio\":null,\"function_call\":null,\"tool_calls\":[],\"reasoning\":null},\"logprobs\":null,");
        }
        Endpoint::Completion => {
            out.push_str("\"text\":");
            json_str(out, text);
            out.push_str(",\"logprobs\":null,");
        }
    }
}

/// `{"error":{"message","type","param","code"}}` as vLLM ≥ 0.10.1 returns it.
pub fn error_body(message: &str, kind: &str, param: Option<&str>, code: u16) -> String {
    let mut out = String::with_capacity(128 + message.len());
    out.push_str("{\"error\":{\"message\":");
    json_str(&mut out, message);
    out.push_str(",\"type\":");
    json_str(&mut out, kind);
    out.push_str(",\"param\":");
    match param {
        Some(p) => json_str(&mut out, p),
        None => out.push_str("null"),
    }
    let _ = write!(out, ",\"code\":{code}}}}}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(event: &str) -> serde_json::Value {
        let json = event.strip_prefix("data: ").unwrap().trim_end();
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn chat_chunks_are_valid_vllm_json() {
        let head = ChunkHead::new(
            Endpoint::Chat,
            "chatcmpl-1",
            1747360800,
            "Qwen/Qwen2.5-3B-Instruct",
        );
        let mut s = String::new();
        head.role_event(&mut s, None);
        let v = parse(&s);
        assert_eq!(v["choices"][0]["delta"]["role"], "assistant");
        s.clear();
        head.content_event(&mut s, "a \"quote\"\n", Some("stop"), Some(42));
        assert!(s.ends_with("}\n\n"));
        let v = parse(&s);
        assert_eq!(v["choices"][0]["delta"]["content"], "a \"quote\"\n");
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        assert_eq!(v["llmscope_emit_unix_ns"], 42);
        s.clear();
        let usage = Usage {
            prompt: 55,
            completion: 10,
            cached: 32,
        };
        head.usage_event(&mut s, usage, None);
        let v = parse(&s);
        assert_eq!(v["usage"]["total_tokens"], 65);
        assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"], 32);
        assert_eq!(v["choices"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn completion_chunks_and_bodies_parse() {
        let head = ChunkHead::new(Endpoint::Completion, "cmpl-1", 1, "m");
        let mut s = String::new();
        head.content_event(&mut s, " hi", None, None);
        assert_eq!(parse(&s)["choices"][0]["text"], " hi");
        let done = Completed {
            text: "hello",
            finish: "length",
            usage: Usage {
                prompt: 5,
                completion: 2,
                cached: 0,
            },
        };
        let body = full_response(Endpoint::Chat, "chatcmpl-2", 1, "m", &done);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], "hello");
        assert_eq!(v["usage"]["completion_tokens"], 2);
        let err: serde_json::Value =
            serde_json::from_str(&error_body("x", "NotFoundError", Some("model"), 404)).unwrap();
        assert_eq!(err["error"]["code"], 404);
        assert_eq!(err["error"]["param"], "model");
    }

    #[test]
    fn tokenize_answers_count_and_ids() {
        let v: serde_json::Value = serde_json::from_str(&tokenize_response(3, 4096, 7)).unwrap();
        assert_eq!(
            (v["count"].as_u64(), v["max_model_len"].as_u64()),
            (Some(3), Some(4096))
        );
        assert_eq!(v["tokens"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn malformed_event_is_not_json() {
        let head = ChunkHead::new(Endpoint::Chat, "chatcmpl-1", 1, "m");
        let mut s = String::new();
        head.malformed_event(&mut s);
        let json = s.strip_prefix("data: ").unwrap().trim_end();
        assert!(serde_json::from_str::<serde_json::Value>(json).is_err());
    }

    #[test]
    fn content_accepts_strings_and_parts() {
        assert_eq!(content_text(&serde_json::json!("hi")), "hi");
        assert_eq!(
            content_text(
                &serde_json::json!([{"type":"text","text":"a"},{"type":"text","text":"b"}])
            ),
            "a b"
        );
    }
}
