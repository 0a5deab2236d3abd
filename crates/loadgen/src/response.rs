//! Reading one response into an [`Outcome`]: the pure half of a request, no sockets.
//!
//! [`StreamReader`] takes each body frame with the instant it arrived (stamped before any parsing)
//! and applies the timing definitions: the first chunk with generated text (answer or reasoning;
//! role-only and empty chunks excluded) is the first token; the first with answer text is the
//! first output; every later text chunk adds a gap. A stream is complete at `data: [DONE]`, or at
//! a clean end of body after a `finish_reason`. [`read_whole`] does the same for a non-streamed
//! body.

use crate::chunk::{Chunk, Usage};
use crate::record::ErrorKind;
use crate::sse::{SseEvent, SseSplitter};
use std::time::Instant;

/// Largest SSE event or non-streamed body accepted.
pub const MAX_EVENT_BYTES: usize = 1 << 20;
pub const MAX_BODY_BYTES: usize = 16 << 20;

/// What a response said, as far as it got.
#[derive(Debug, Default)]
pub struct Outcome {
    pub status: Option<u16>,
    pub first_token: Option<Instant>,
    pub first_output: Option<Instant>,
    pub usage: Usage,
    pub chunk_tokens: u32,
    pub server_first_token_ns: Option<u64>,
    pub gaps_us: Vec<u32>,
    /// From the kernel receiving the first token to the client reading it.
    pub first_token_rx_lag: Option<std::time::Duration>,
    /// The first token was read from behind a backlog: its kernel stamp may be late.
    pub first_token_behind: bool,
    /// What the server said when it failed the request (error body or in-band error event),
    /// sanitised and capped ([`crate::failure::message`]).
    pub error_body: Option<String>,
    /// The answer text, kept only when asked for (`Some` before the request: a session's turns
    /// carry the conversation so far), capped at [`crate::chunk::MAX_ANSWER_BYTES`].
    pub text: Option<String>,
}

/// Streaming state of one response.
#[derive(Debug)]
pub struct StreamReader {
    splitter: SseSplitter,
    state: State,
}

#[derive(Debug, Default)]
struct State {
    last_token: Option<Instant>,
    done: bool,
    finished: bool,
    error: Option<ErrorKind>,
    outcome: Outcome,
}

impl Default for StreamReader {
    fn default() -> Self {
        StreamReader {
            splitter: SseSplitter::new(MAX_EVENT_BYTES),
            state: State::default(),
        }
    }
}

impl StreamReader {
    /// A reader that also keeps the answer text ([`Outcome::text`]) when `keep_text`.
    pub fn new(keep_text: bool) -> Self {
        let mut r = StreamReader::default();
        r.state.outcome.text = keep_text.then(String::new);
        r
    }

    /// Feeds bytes that arrived at `at`. An error ends the request.
    pub fn feed(&mut self, bytes: &[u8], at: Instant) -> Result<(), ErrorKind> {
        let state = &mut self.state;
        self.splitter
            .push(bytes, |ev| state.on_event(ev, at))
            .map_err(|_| ErrorKind::MalformedSse)?;
        state.error.map_or(Ok(()), Err)
    }

    /// The body ended cleanly: complete, or cut short.
    pub fn finish(&self) -> Result<(), ErrorKind> {
        let s = &self.state;
        if s.done || s.finished {
            Ok(())
        } else {
            Err(ErrorKind::StreamCut)
        }
    }

    /// `data: [DONE]` was seen.
    pub fn is_done(&self) -> bool {
        self.state.done
    }

    /// What was read so far.
    pub fn outcome(&self) -> &Outcome {
        &self.state.outcome
    }

    /// Takes what was read so far.
    pub fn into_outcome(self) -> Outcome {
        self.state.outcome
    }
}

impl State {
    fn on_event(&mut self, ev: SseEvent<'_>, at: Instant) {
        if self.error.is_some() {
            return;
        }
        let result = match ev {
            SseEvent::Done => {
                self.done = true;
                Ok(())
            }
            SseEvent::Data(d) => match Chunk::parse(d) {
                Ok(c) if c.error.is_some() => {
                    self.outcome.error_body = crate::failure::message(d);
                    Err(ErrorKind::StreamError)
                }
                Ok(c) => {
                    if let Some(text) = &mut self.outcome.text {
                        crate::chunk::append_answer(d, text);
                    }
                    self.on_chunk(&c, at)
                }
                Err(_) => Err(ErrorKind::MalformedSse),
            },
        };
        self.error = result.err();
    }

    fn on_chunk(&mut self, c: &Chunk, at: Instant) -> Result<(), ErrorKind> {
        if let Some(u) = c.usage {
            self.outcome.usage = u;
        }
        self.finished |= c.choices.finished;
        if !c.has_text() {
            return Ok(());
        }
        let o = &mut self.outcome;
        o.chunk_tokens += 1;
        if o.first_token.is_none() {
            o.first_token = Some(at);
            o.server_first_token_ns = c.llmscope_emit_unix_ns;
        }
        if c.choices.content > 0 && o.first_output.is_none() {
            o.first_output = Some(at);
        }
        if let Some(prev) = self.last_token {
            let gap = at.saturating_duration_since(prev).as_micros();
            o.gaps_us.push(gap.min(u128::from(u32::MAX)) as u32);
        }
        self.last_token = Some(at);
        Ok(())
    }
}

/// Reads a whole non-streamed response body.
pub fn read_whole(body: &[u8], out: &mut Outcome) -> Result<(), ErrorKind> {
    let c = Chunk::parse(body).map_err(|_| ErrorKind::BadResponse)?;
    if c.error.is_some() {
        out.error_body = crate::failure::message(body);
        return Err(ErrorKind::StreamError);
    }
    if !c.choices.finished && !c.has_text() {
        return Err(ErrorKind::BadResponse);
    }
    if let Some(u) = c.usage {
        out.usage = u;
    }
    if let Some(text) = &mut out.text {
        crate::chunk::append_answer(body, text);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const ROLE: &str = r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#;
    const HI: &str = r#"data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"llmscope_emit_unix_ns":42}"#;
    const THINK: &str =
        r#"data: {"choices":[{"index":0,"delta":{"reasoning":"hm"},"finish_reason":null}]}"#;
    const END: &str =
        r#"data: {"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}"#;
    const USAGE: &str = r#"data: {"choices":[],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2}}"#;

    fn ev(s: &str) -> String {
        format!("{s}\n\n")
    }

    #[test]
    fn times_a_vllm_stream() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut r = StreamReader::default();
        r.feed(ev(ROLE).as_bytes(), at(5)).unwrap();
        r.feed(ev(HI).as_bytes(), at(10)).unwrap();
        r.feed(ev(END).as_bytes(), at(13)).unwrap();
        r.feed((ev(USAGE) + "data: [DONE]\n\n").as_bytes(), at(14))
            .unwrap();
        assert!(r.is_done() && r.finish().is_ok());
        let o = r.outcome();
        assert_eq!(
            (o.first_token, o.first_output),
            (Some(at(10)), Some(at(10)))
        );
        assert_eq!((o.chunk_tokens, o.gaps_us.clone()), (2, vec![3000]));
        assert_eq!(
            (o.usage.completion_tokens, o.server_first_token_ns),
            (Some(2), Some(42))
        );
    }

    #[test]
    fn reasoning_counts_for_ttft_but_not_first_output() {
        let t0 = Instant::now();
        let mut r = StreamReader::default();
        r.feed(ev(THINK).as_bytes(), t0).unwrap();
        r.feed(ev(HI).as_bytes(), t0 + Duration::from_millis(7))
            .unwrap();
        let o = r.outcome();
        assert_eq!(o.first_token, Some(t0));
        assert_eq!(o.first_output, Some(t0 + Duration::from_millis(7)));
    }

    #[test]
    fn cut_malformed_and_in_band_errors() {
        let t = Instant::now();
        let mut r = StreamReader::default();
        r.feed(ev(HI).as_bytes(), t).unwrap();
        assert_eq!(r.finish(), Err(ErrorKind::StreamCut));
        assert_eq!(
            StreamReader::default().feed(b"data: {\"choices\":[{\n\n", t),
            Err(ErrorKind::MalformedSse)
        );
        let e = "data: {\"error\":{\"message\":\"x\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}\n\ndata: [DONE]\n\n";
        let mut r = StreamReader::default();
        assert_eq!(r.feed(e.as_bytes(), t), Err(ErrorKind::StreamError));
        assert_eq!(r.outcome().error_body.as_deref(), Some("x"));
    }

    #[test]
    fn finish_reason_then_clean_eof_is_complete() {
        let mut r = StreamReader::default();
        r.feed(ev(END).as_bytes(), Instant::now()).unwrap();
        assert!(r.finish().is_ok() && !r.is_done());
    }

    #[test]
    fn whole_bodies() {
        let mut o = Outcome::default();
        let ok = br#"{"choices":[{"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#;
        assert!(read_whole(ok, &mut o).is_ok());
        assert_eq!(o.usage.completion_tokens, Some(2));
        assert_eq!(read_whole(b"<html>", &mut o), Err(ErrorKind::BadResponse));
        assert_eq!(
            read_whole(br#"{"object":"list","data":[]}"#, &mut o),
            Err(ErrorKind::BadResponse)
        );
    }
}
