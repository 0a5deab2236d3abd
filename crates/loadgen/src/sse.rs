//! Server-sent events splitter: bytes as they arrive → complete `data:` payloads.
//!
//! [`SseSplitter::push`] takes whatever one TCP read delivered and calls back once per complete
//! event, so an event split across reads (or several events in one read) is handled. Events end at
//! a blank line (`\n\n` or `\r\n\r\n`); `data:` lines are joined with `\n` as the SSE spec says;
//! comments and `event:`/`id:`/`retry:` lines are ignored; `data: [DONE]` is [`SseEvent::Done`].
//! The caller stamps the arrival time before pushing, so parsing never delays a timestamp.

use memchr::memchr;

/// One complete event.
#[derive(Debug, PartialEq, Eq)]
pub enum SseEvent<'a> {
    /// The payload of the event's `data:` lines.
    Data(&'a [u8]),
    /// `data: [DONE]`, the OpenAI end-of-stream marker.
    Done,
}

/// An event grew past the size cap without ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("server-sent event larger than {cap} bytes")]
pub struct EventTooLarge {
    pub cap: usize,
}

/// Incremental splitter; keeps only the unfinished tail of the stream.
#[derive(Debug)]
pub struct SseSplitter {
    buf: Vec<u8>,
    joined: Vec<u8>,
    cap: usize,
}

impl SseSplitter {
    /// A splitter that rejects events over `cap` bytes.
    pub fn new(cap: usize) -> Self {
        SseSplitter {
            buf: Vec::with_capacity(1024),
            joined: Vec::new(),
            cap,
        }
    }

    /// Feeds `bytes`; calls `on_event` for each event completed by them.
    pub fn push(
        &mut self,
        bytes: &[u8],
        mut on_event: impl FnMut(SseEvent<'_>),
    ) -> Result<(), EventTooLarge> {
        self.buf.extend_from_slice(bytes);
        let consumed = self.split(&mut on_event);
        self.buf.drain(..consumed);
        if self.buf.len() > self.cap {
            return Err(EventTooLarge { cap: self.cap });
        }
        Ok(())
    }

    /// Emits the complete events in `buf`; returns how many bytes they used.
    fn split(&mut self, on_event: &mut impl FnMut(SseEvent<'_>)) -> usize {
        let (buf, joined) = (&self.buf, &mut self.joined);
        let (mut pos, mut event_start) = (0, 0);
        let mut data: Option<(usize, usize)> = None;
        let mut multi = false;
        while let Some(nl) = memchr(b'\n', &buf[pos..]) {
            let end = pos + nl;
            let line_end = if end > pos && buf[end - 1] == b'\r' {
                end - 1
            } else {
                end
            };
            let line = &buf[pos..line_end];
            if line.is_empty() {
                if let Some((s, e)) = data.take() {
                    emit(if multi { joined } else { &buf[s..e] }, on_event);
                }
                multi = false;
                joined.clear();
                event_start = end + 1;
            } else if let Some(rest) = line.strip_prefix(b"data:") {
                let skip = usize::from(rest.first() == Some(&b' '));
                let (s, e) = (line_end - rest.len() + skip, line_end);
                if let Some(previous) = data {
                    join(buf, joined, previous, (s, e), &mut multi);
                }
                data = Some((s, e));
            }
            pos = end + 1;
        }
        event_start
    }
}

/// A further `data:` line, payload `buf[s..e]`: appended to the event's payload in `joined`,
/// which starts as a copy of the first line's (`previous`) when the event was single-line so far.
fn join(
    buf: &[u8],
    joined: &mut Vec<u8>,
    previous: (usize, usize),
    (s, e): (usize, usize),
    multi: &mut bool,
) {
    if !*multi {
        joined.clear();
        joined.extend_from_slice(&buf[previous.0..previous.1]);
        *multi = true;
    }
    joined.push(b'\n');
    joined.extend_from_slice(&buf[s..e]);
}

fn emit(payload: &[u8], on_event: &mut impl FnMut(SseEvent<'_>)) {
    if payload == b"[DONE]" {
        on_event(SseEvent::Done);
    } else {
        on_event(SseEvent::Data(payload));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(parts: &[&[u8]]) -> Vec<String> {
        let mut s = SseSplitter::new(1 << 20);
        let mut out = Vec::new();
        for p in parts {
            s.push(p, |e| {
                out.push(match e {
                    SseEvent::Data(d) => String::from_utf8(d.to_vec()).unwrap(),
                    SseEvent::Done => "DONE".into(),
                })
            })
            .unwrap();
        }
        out
    }

    #[test]
    fn splits_vllm_framing() {
        let s = b"data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n";
        assert_eq!(split_all(&[s]), ["{\"a\":1}", "{\"b\":2}", "DONE"]);
    }

    #[test]
    fn handles_crlf_comments_fields_and_no_space() {
        let s = b": keep-alive\r\n\r\nevent: x\r\nid: 3\r\ndata:{\"a\":1}\r\n\r\n";
        assert_eq!(split_all(&[s]), ["{\"a\":1}"]);
    }

    #[test]
    fn joins_multi_line_data() {
        assert_eq!(split_all(&[b"data: a\ndata: b\n\n"]), ["a\nb"]);
    }

    #[test]
    fn waits_for_the_blank_line() {
        assert_eq!(split_all(&[b"data: {\"a\":1}\n"]), Vec::<String>::new());
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let s: &[u8] = b"data: {\"x\":\"\xc3\xa9\"}\r\n\r\ndata: two\n\ndata: [DONE]\n\n";
        let whole = split_all(&[s]);
        for i in 0..s.len() {
            for j in i..s.len() {
                assert_eq!(split_all(&[&s[..i], &s[i..j], &s[j..]]), whole, "{i} {j}");
            }
        }
    }

    #[test]
    fn caps_an_endless_event() {
        let mut s = SseSplitter::new(64);
        assert_eq!(s.push(&[b'x'; 100], |_| {}), Err(EventTooLarge { cap: 64 }));
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_chunking_is_invisible(
            bytes in proptest::collection::vec(proptest::sample::select(b"data: x\r\n[DONE]".to_vec()), 0..200),
            cut in 0usize..200,
        ) {
            let cut = cut.min(bytes.len());
            proptest::prop_assert_eq!(split_all(&[&bytes]), split_all(&[&bytes[..cut], &bytes[cut..]]));
        }
    }
}
