//! What one OpenAI response chunk says, read without allocating: how much content, reasoning and
//! completion text it carries, whether it finishes a choice, its `usage`, an in-band `error`, and
//! the simulator's emit timestamp (`llmscope_emit_unix_ns`, sent on `x-llmscope-timestamps: 1`).
//!
//! The same [`Chunk`] reads streamed chunks (`choices[].delta` / `choices[].text`) and whole
//! non-streamed responses (`choices[].message` / `choices[].text`). Text is only measured, never
//! kept: a `TextLen` visitor sees the string (escaped or not) and records its length.

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use std::fmt;

/// The parts of a chunk the load generator needs.
#[derive(Debug, Default, Deserialize)]
pub struct Chunk {
    #[serde(default)]
    pub choices: Choices,
    pub usage: Option<Usage>,
    pub error: Option<IgnoredAny>,
    pub llmscope_emit_unix_ns: Option<u64>,
}

/// Token counts reported by the server.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<u32>,
    pub completion_tokens: Option<u32>,
    /// `prompt_tokens_details.cached_tokens`: prompt tokens the server found in its prefix cache
    /// (vLLM with `--enable-prompt-tokens-details`; `null` or absent otherwise).
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
}

impl Usage {
    /// Prompt tokens the server said it found cached, when it said.
    pub fn cached_tokens(&self) -> Option<u32> {
        self.prompt_tokens_details.and_then(|d| d.cached_tokens)
    }
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct PromptDetails {
    pub cached_tokens: Option<u32>,
}

/// The choices of a chunk, folded into totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Choices {
    /// Bytes of answer text (`delta.content`, `message.content` or `text`).
    pub content: usize,
    /// Bytes of reasoning text (`reasoning`, or the older `reasoning_content`).
    pub reasoning: usize,
    /// A choice carried a non-null `finish_reason`.
    pub finished: bool,
}

impl Chunk {
    /// Parses one chunk.
    pub fn parse(json: &[u8]) -> Result<Chunk, serde_json::Error> {
        serde_json::from_slice(json)
    }

    /// The chunk carries generated text (answer or reasoning): it counts as a token.
    pub fn has_text(&self) -> bool {
        self.choices.content > 0 || self.choices.reasoning > 0
    }
}

#[derive(Deserialize)]
struct Choice {
    delta: Option<Message>,
    message: Option<Message>,
    text: Option<TextLen>,
    finish_reason: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Message {
    content: Option<TextLen>,
    reasoning: Option<TextLen>,
    reasoning_content: Option<TextLen>,
}

/// The length of a JSON string, without keeping it.
struct TextLen(usize);

fn len(t: &Option<TextLen>) -> usize {
    t.as_ref().map_or(0, |t| t.0)
}

impl Choices {
    fn add(&mut self, c: Choice) {
        for m in [&c.delta, &c.message].into_iter().flatten() {
            self.content += len(&m.content);
            self.reasoning += len(&m.reasoning) + len(&m.reasoning_content);
        }
        self.content += len(&c.text);
        self.finished |= c.finish_reason.is_some();
    }
}

impl<'de> Deserialize<'de> for TextLen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TextLen;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<TextLen, E> {
                Ok(TextLen(s.len()))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Choices {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Choices;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Choices, A::Error> {
                let mut out = Choices::default();
                while let Some(c) = seq.next_element::<Choice>()? {
                    out.add(c);
                }
                Ok(out)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Choices, E> {
                Ok(Choices::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// The most answer text kept for one request ([`append_answer`]).
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Appends the answer text of one chunk or whole response (`delta.content`, `message.content`
/// or `text` of the first choice) to `into`, up to [`MAX_ANSWER_BYTES`]: what a multi-turn
/// session sends back as the assistant's turn. Reasoning is not part of the conversation.
pub fn append_answer(json: &[u8], into: &mut String) {
    #[derive(Deserialize)]
    struct Answer {
        #[serde(default)]
        choices: Vec<AnswerChoice>,
    }
    #[derive(Deserialize)]
    struct AnswerChoice {
        delta: Option<AnswerText>,
        message: Option<AnswerText>,
        text: Option<String>,
    }
    #[derive(Deserialize)]
    struct AnswerText {
        content: Option<String>,
    }
    let Ok(a) = serde_json::from_slice::<Answer>(json) else {
        return;
    };
    let Some(c) = a.choices.into_iter().next() else {
        return;
    };
    let text = [c.delta, c.message]
        .into_iter()
        .flatten()
        .filter_map(|m| m.content)
        .chain(c.text);
    for t in text {
        let room = MAX_ANSWER_BYTES.saturating_sub(into.len());
        let mut cut = t.len().min(room);
        while !t.is_char_boundary(cut) {
            cut -= 1;
        }
        into.push_str(&t[..cut]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_chunk_has_no_text() {
        let c = Chunk::parse(br#"{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"prompt_token_ids":null}"#).unwrap();
        assert!(!c.has_text() && !c.choices.finished);
    }

    #[test]
    fn content_reasoning_text_finish_usage_error() {
        let c = Chunk::parse(
            br#"{"choices":[{"delta":{"content":"Hi\u00e9"},"finish_reason":"stop"}]}"#,
        )
        .unwrap();
        assert_eq!((c.choices.content, c.choices.finished), (4, true));
        let c = Chunk::parse(br#"{"choices":[{"delta":{"reasoning":"hmm"}}]}"#).unwrap();
        assert_eq!((c.choices.content, c.choices.reasoning), (0, 3));
        let c = Chunk::parse(br#"{"choices":[{"text":" a","finish_reason":null}]}"#).unwrap();
        assert_eq!(c.choices.content, 2);
        let c = Chunk::parse(br#"{"choices":[],"usage":{"prompt_tokens":12,"total_tokens":22,"completion_tokens":10},"llmscope_emit_unix_ns":5}"#).unwrap();
        let u = c.usage.unwrap();
        assert_eq!(
            (
                u.prompt_tokens,
                u.completion_tokens,
                c.llmscope_emit_unix_ns
            ),
            (Some(12), Some(10), Some(5))
        );
        assert_eq!(u.cached_tokens(), None);
        let c = Chunk::parse(br#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":8}}}"#).unwrap();
        assert_eq!(c.usage.unwrap().cached_tokens(), Some(8));
        let c = Chunk::parse(br#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":1,"prompt_tokens_details":null}}"#).unwrap();
        assert_eq!(c.usage.unwrap().cached_tokens(), None);
        let c = Chunk::parse(
            br#"{"error":{"message":"boom","type":"InternalServerError","param":null,"code":500}}"#,
        )
        .unwrap();
        assert!(c.error.is_some());
    }

    #[test]
    fn reads_a_whole_chat_response() {
        let c = Chunk::parse(br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","reasoning":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#).unwrap();
        assert_eq!((c.choices.content, c.choices.finished), (6, true));
    }

    #[test]
    fn answer_text_is_kept_from_deltas_messages_and_texts() {
        let mut s = String::new();
        append_answer(
            br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
            &mut s,
        );
        append_answer(
            br#"{"choices":[{"delta":{"content":"Hi \u00e9"}}]}"#,
            &mut s,
        );
        append_answer(br#"{"choices":[{"delta":{"reasoning":"hm"}}]}"#, &mut s);
        append_answer(br#"{"choices":[],"usage":{"prompt_tokens":1}}"#, &mut s);
        append_answer(br#"{"choices":[{"text":"!"}]}"#, &mut s);
        assert_eq!(s, "Hi é!");
        let mut w = String::new();
        append_answer(br#"{"choices":[{"message":{"content":"whole"}}]}"#, &mut w);
        assert_eq!(w, "whole");
        let mut full = "x".repeat(MAX_ANSWER_BYTES - 1);
        append_answer(
            br#"{"choices":[{"delta":{"content":"\u00e9\u00e9"}}]}"#,
            &mut full,
        );
        assert_eq!(full.len(), MAX_ANSWER_BYTES - 1, "a character never split");
    }

    #[test]
    fn invalid_json_is_an_error() {
        assert!(Chunk::parse(br#"{"choices":[{"delta":{"content":"x"#).is_err());
        assert!(Chunk::parse(b"not json").is_err());
    }
}
