//! What the server said when a request failed: its error body, reduced to the message, and the
//! first few distinct messages of each error kind.
//!
//! [`message`] takes the (already size-capped) body of a non-2xx answer or an in-band error event
//! and keeps the server's own words: vLLM answers `{"error":{"message":…}}` (≥ 0.10.1) or
//! `{"object":"error","message":…}` (older), FastAPI `{"detail":…}`; anything else is kept as
//! text. Control characters are replaced, whitespace collapsed and the result capped at
//! [`MAX_MESSAGE_BYTES`], so a body is safe to print, store and put in a report. [`Samples`] keeps
//! the first [`MAX_SAMPLES`] distinct messages of one kind, mergeable across stages.

use serde_json::Value;

/// Kept in `llmscope-core` with the rest of the client summary a run stores.
pub use llmscope_core::outcome::{MAX_SAMPLES, Samples};

/// Bytes of an error body read before the rest is discarded.
pub const MAX_READ_BYTES: usize = 16 << 10;
/// Bytes of a message kept.
pub const MAX_MESSAGE_BYTES: usize = 300;
/// The server's message in `body`, sanitised and capped; `None` for an empty body.
pub fn message(body: &[u8]) -> Option<String> {
    let text = match serde_json::from_slice::<Value>(body) {
        Ok(v) => json_message(&v).unwrap_or_else(|| v.to_string()),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    let clean = sanitise(&text);
    (!clean.is_empty()).then_some(clean)
}

/// `error.message`, `message`, `detail` or a string `error`, in that order.
fn json_message(v: &Value) -> Option<String> {
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    };
    if let Some(e) = v.get("error") {
        if let Some(m) = e.get("message").and_then(text) {
            return Some(m);
        }
        if let Value::String(s) = e {
            return Some(s.clone());
        }
    }
    ["message", "detail"]
        .iter()
        .find_map(|k| v.get(*k).and_then(text))
}

/// Control characters become spaces, runs of whitespace one space, and the text is cut at
/// [`MAX_MESSAGE_BYTES`] on a character boundary (marked with `…`).
/// Secrets are redacted first, so that the cut never leaves half of one.
pub fn sanitise(text: &str) -> String {
    let text = llmscope_core::safe::redact(text);
    let mut out = String::with_capacity(text.len().min(MAX_MESSAGE_BYTES + 4));
    for c in text.chars() {
        let c = if c.is_control() || c.is_whitespace() {
            ' '
        } else {
            c
        };
        if c == ' ' && (out.is_empty() || out.ends_with(' ')) {
            continue;
        }
        if out.len() + c.len_utf8() > MAX_MESSAGE_BYTES {
            out.push('…');
            return out;
        }
        out.push(c);
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_message_of_every_vllm_shape() {
        let new = br#"{"error":{"message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":"input_tokens","code":400}}"#;
        assert_eq!(
            message(new).as_deref(),
            Some("This model's maximum context length is 4096 tokens.")
        );
        let old = br#"{"object":"error","message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}"#;
        assert_eq!(
            message(old).as_deref(),
            Some("The model `x` does not exist.")
        );
        assert_eq!(
            message(br#"{"detail":"Not Found"}"#).as_deref(),
            Some("Not Found")
        );
        assert_eq!(
            message(b"<html>Bad Gateway</html>").as_deref(),
            Some("<html>Bad Gateway</html>")
        );
        assert_eq!(message(b" \r\n"), None);
    }

    #[test]
    fn strips_control_characters_and_caps_the_size() {
        assert_eq!(sanitise("a\u{1b}[31mred\n\n\tb\u{0}"), "a [31mred b");
        let long = "é".repeat(400);
        let s = sanitise(&long);
        assert!(
            s.len() <= MAX_MESSAGE_BYTES + '…'.len_utf8() && s.ends_with('…'),
            "{}",
            s.len()
        );
        assert!(s.chars().all(|c| c == 'é' || c == '…'));
    }

    #[test]
    fn samples_keep_the_first_distinct_bodies() {
        let mut s = Samples::default();
        for b in ["a", "a", "b", "c", "d"] {
            s.add(Some(b));
        }
        s.add(None);
        assert_eq!(
            (s.count, s.bodies.clone()),
            (6, vec!["a".into(), "b".into(), "c".into()])
        );
        let mut m = Samples::default();
        m.add(Some("z"));
        m.merge(&s);
        assert_eq!(
            (m.count, m.bodies),
            (7, vec!["z".into(), "a".into(), "b".into()])
        );
    }
}
