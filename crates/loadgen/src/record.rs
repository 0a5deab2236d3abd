//! Per-request records: what happened to each request, as plain data.
//!
//! Every dispatched request yields exactly one [`RequestRecord`] — completed, or failed with a
//! typed [`ErrorKind`] — so `sent = completed + failed` holds by construction. Times are Unix
//! nanoseconds taken from the run's monotonic clock and one wall-clock anchor, so records can be
//! lined up with server metrics. Chunk gaps travel with the record to the aggregator but are not
//! written to the records file.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Why a request failed. Counted by kind, never by message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The TCP connection could not be opened.
    Connect,
    /// The client itself ran out of file descriptors (EMFILE/ENFILE) opening a connection: the
    /// load generator's limit, not the server's doing (issue 12, point 6).
    ClientFds,
    /// The whole request took longer than the request timeout.
    Timeout,
    /// Tokens had begun to stream, then none came for longer than the idle timeout.
    Stall,
    /// No first token within the first-token limit (`--ttft-timeout`): the request was still
    /// queued (or in prefill) when the client gave up on it. Queueing is not stalling: a
    /// saturated server keeps a request queued for as long as it takes (issue 16).
    TtftTimeout,
    /// The server answered with a non-2xx status (429 and 5xx included).
    Http(u16),
    /// The connection closed before the response began.
    ConnectionClosed,
    /// The connection closed, or the body ended, before the stream finished.
    StreamCut,
    /// An event's data was not valid JSON.
    MalformedSse,
    /// The server sent an in-band `{"error":…}` event after answering 200.
    StreamError,
    /// The answer was not an OpenAI response (wrong content type, unreadable or oversized body).
    BadResponse,
    /// The run stopped the request (its end-of-run grace period ran out, or it was aborted).
    Cancelled,
    /// The request's task ended without a result (a bug; reported, never hidden).
    Internal,
}

impl ErrorKind {
    const NAMES: [(&'static str, ErrorKind); 12] = [
        ("connect", ErrorKind::Connect),
        ("client_fds", ErrorKind::ClientFds),
        ("timeout", ErrorKind::Timeout),
        ("stall", ErrorKind::Stall),
        ("ttft_timeout", ErrorKind::TtftTimeout),
        ("connection_closed", ErrorKind::ConnectionClosed),
        ("stream_cut", ErrorKind::StreamCut),
        ("malformed_sse", ErrorKind::MalformedSse),
        ("stream_error", ErrorKind::StreamError),
        ("bad_response", ErrorKind::BadResponse),
        ("cancelled", ErrorKind::Cancelled),
        ("internal", ErrorKind::Internal),
    ];
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let ErrorKind::Http(status) = self {
            return write!(f, "http_{status}");
        }
        let name = Self::NAMES
            .iter()
            .find(|(_, k)| k == self)
            .map_or("?", |(n, _)| n);
        f.write_str(name)
    }
}

/// An unknown error-kind name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown error kind `{0}`")]
pub struct UnknownErrorKind(pub String);

impl FromStr for ErrorKind {
    type Err = UnknownErrorKind;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(code) = s.strip_prefix("http_").and_then(|c| c.parse().ok()) {
            return Ok(ErrorKind::Http(code));
        }
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, k)| *k)
            .ok_or_else(|| UnknownErrorKind(s.to_owned()))
    }
}

impl Serialize for ErrorKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ErrorKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One request, start to end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Stage index (0-based).
    pub stage: u32,
    /// Dispatch order within the run.
    pub id: u64,
    /// Sent during the warmup: not in the statistics.
    pub warmup: bool,
    /// Open loop: when the schedule wanted it sent.
    pub scheduled_unix_ns: Option<u64>,
    /// When the client started it (connection checkout included in the latencies).
    pub sent_unix_ns: u64,
    /// First chunk carrying generated text (answer or reasoning).
    pub first_token_unix_ns: Option<u64>,
    /// First chunk carrying answer text (not reasoning).
    pub first_output_unix_ns: Option<u64>,
    /// When the response ended (or failed).
    pub end_unix_ns: u64,
    /// HTTP status, when a response began.
    pub status: Option<u16>,
    pub error: Option<ErrorKind>,
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u32>,
    /// `usage.completion_tokens`.
    pub output_tokens: Option<u32>,
    /// Chunks that carried generated text, as counted by the client.
    pub chunk_tokens: u32,
    /// The simulator's emit time of the first text chunk (`llmscope_emit_unix_ns`).
    pub server_first_token_unix_ns: Option<u64>,
    /// From the kernel receiving the first token to the client reading it, in microseconds.
    pub first_token_rx_lag_us: Option<u32>,
    /// The first token was read with more data queued behind it: the kernel, which merges queued
    /// segments, may have stamped it with a later segment's time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub first_token_behind: bool,
    /// `usage.prompt_tokens_details.cached_tokens`: prompt tokens the server found cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u32>,
    /// Prompt tokens this request repeats from an earlier one on purpose (its group's shared
    /// prefix after the group's first request; a later turn's conversation so far).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeated_tokens: Option<u32>,
    /// `--shared-prefix`: which of the `--prefix-groups` shared prefixes it carried (0-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_group: Option<u32>,
    /// `--turns`: the session it belongs to (dispatch order) and its turn in it (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// A failed request: the server's message (error body or in-band error), sanitised, ≤ 300 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_body: Option<String>,
    /// Gaps between consecutive text chunks, in microseconds (aggregated, not stored).
    #[serde(skip)]
    pub gaps_us: Vec<u32>,
}

impl RequestRecord {
    /// Completed without error.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// Output tokens: the server's count when it gave one, else the counted chunks.
    pub fn tokens_out(&self) -> u32 {
        self.output_tokens.unwrap_or(self.chunk_tokens)
    }

    /// Time to first token, in nanoseconds.
    pub fn ttft_ns(&self) -> Option<u64> {
        self.first_token_unix_ns
            .map(|t| t.saturating_sub(self.sent_unix_ns))
    }

    /// End-to-end latency, in nanoseconds.
    pub fn e2e_ns(&self) -> u64 {
        self.end_unix_ns.saturating_sub(self.sent_unix_ns)
    }

    /// Time per output token after the first: `(e2e − ttft) / (tokens − 1)`.
    pub fn tpot_ns(&self) -> Option<u64> {
        let n = u64::from(self.tokens_out());
        let ttft = self.ttft_ns()?;
        (n > 1).then(|| self.e2e_ns().saturating_sub(ttft) / (n - 1))
    }

    /// Mean gap between text chunks, in microseconds.
    pub fn mean_itl_us(&self) -> Option<f64> {
        let n = self.gaps_us.len();
        (n > 0).then(|| self.gaps_us.iter().map(|&g| f64::from(g)).sum::<f64>() / n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_names() {
        for k in [
            ErrorKind::Http(429),
            ErrorKind::Http(503),
            ErrorKind::StreamCut,
            ErrorKind::Connect,
            ErrorKind::ClientFds,
        ] {
            assert_eq!(k.to_string().parse::<ErrorKind>().unwrap(), k);
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(serde_json::from_str::<ErrorKind>(&json).unwrap(), k);
        }
        assert_eq!(ErrorKind::Http(429).to_string(), "http_429");
        assert!("nope".parse::<ErrorKind>().is_err());
        for (name, kind) in ErrorKind::NAMES {
            assert_eq!(kind.to_string(), name);
        }
    }

    #[test]
    fn derived_latencies() {
        let r = RequestRecord {
            sent_unix_ns: 1_000,
            first_token_unix_ns: Some(11_000),
            end_unix_ns: 101_000,
            output_tokens: Some(10),
            chunk_tokens: 9,
            gaps_us: vec![1, 3],
            ..Default::default()
        };
        assert_eq!(
            (r.ttft_ns(), r.e2e_ns(), r.tpot_ns()),
            (Some(10_000), 100_000, Some(10_000))
        );
        assert_eq!(r.tokens_out(), 10);
        assert_eq!(r.mean_itl_us(), Some(2.0));
        let one = RequestRecord {
            output_tokens: Some(1),
            ..r
        };
        assert_eq!(one.tpot_ns(), None);
    }
}
