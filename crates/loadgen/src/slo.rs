//! Service-level objectives for goodput: `--slo ttft=500ms,itl=50ms,tpot=40ms,e2e=20s`.
//!
//! A completed request is *good* when it meets every objective given: its TTFT, its mean
//! inter-token gap (`itl`), its TPOT and its end-to-end latency are each at or under the limit.
//! Failed requests are never good. Goodput = good requests per second.

use crate::record::RequestRecord;
use llmscope_core::duration::parse_duration;
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Latency limits in milliseconds (serialised as such).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_ms: Option<f64>,
}

/// Why an `--slo` value was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid SLO `{text}`: {why} (write e.g. ttft=500ms,itl=50ms,e2e=20s; keys: ttft, itl, tpot, e2e)"
)]
pub struct SloError {
    pub text: String,
    pub why: String,
}

impl FromStr for Slo {
    type Err = SloError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: String| SloError {
            text: text.to_owned(),
            why,
        };
        let mut slo = Slo::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("`{part}` has no `=`")))?;
            let d = parse_duration(value).map_err(|e| bad(e.to_string()))?;
            if d.is_zero() {
                // No request meets a limit of 0: goodput would be 0 and `capacity` would advise
                // scaling out at a concurrency of 1 (issue 50).
                return Err(bad(format!(
                    "`{part}`: no request meets a limit of 0; give one above 0 (e.g. {}=500ms)",
                    key.trim()
                )));
            }
            let ms = Some(d.as_secs_f64() * 1e3);
            match key.trim() {
                "ttft" => slo.ttft_ms = ms,
                "itl" => slo.itl_ms = ms,
                "tpot" => slo.tpot_ms = ms,
                "e2e" => slo.e2e_ms = ms,
                other => return Err(bad(format!("unknown key `{other}`"))),
            }
        }
        if slo.is_empty() {
            return Err(bad("no objective".into()));
        }
        Ok(slo)
    }
}

impl Slo {
    /// No objective set.
    pub fn is_empty(&self) -> bool {
        *self == Slo::default()
    }

    /// The request completed and met every objective.
    pub fn met(&self, r: &RequestRecord) -> bool {
        let ms = |ns: u64| ns as f64 / 1e6;
        let within =
            |limit: Option<f64>, v: Option<f64>| limit.is_none_or(|l| v.is_some_and(|v| v <= l));
        r.ok()
            && within(self.ttft_ms, r.ttft_ns().map(ms))
            && within(
                self.itl_ms,
                r.mean_itl_us().map(|us| us / 1e3).or(Some(0.0)),
            )
            && within(self.tpot_ms, r.tpot_ns().map(ms).or(Some(0.0)))
            && within(self.e2e_ms, Some(ms(r.e2e_ns())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let s: Slo = "ttft=500ms, itl=50ms,e2e=20s".parse().unwrap();
        assert_eq!(
            (s.ttft_ms, s.itl_ms, s.tpot_ms, s.e2e_ms),
            (Some(500.0), Some(50.0), None, Some(20_000.0))
        );
        for bad in ["", "ttft", "ttft=5", "speed=1s"] {
            assert!(bad.parse::<Slo>().is_err(), "{bad}");
        }
        // A limit of 0 no request meets (issue 50): refused, naming it.
        for zero in ["ttft=0", "ttft=500ms,itl=0s", "e2e=0ms"] {
            let e = zero.parse::<Slo>().unwrap_err().to_string();
            assert!(e.contains("no request meets a limit of 0"), "{zero}: {e}");
        }
    }

    #[test]
    fn judges_requests() {
        let slo: Slo = "ttft=10ms,itl=2ms,e2e=100ms".parse().unwrap();
        let good = RequestRecord {
            sent_unix_ns: 0,
            first_token_unix_ns: Some(5_000_000),
            end_unix_ns: 50_000_000,
            gaps_us: vec![1000, 2000],
            output_tokens: Some(3),
            ..Default::default()
        };
        assert!(slo.met(&good));
        assert!(!slo.met(&RequestRecord {
            first_token_unix_ns: Some(11_000_000),
            ..good.clone()
        }));
        assert!(!slo.met(&RequestRecord {
            gaps_us: vec![5000],
            ..good.clone()
        }));
        assert!(!slo.met(&RequestRecord {
            error: Some(crate::ErrorKind::Stall),
            ..good.clone()
        }));
        let no_ttft = RequestRecord {
            first_token_unix_ns: None,
            ..good
        };
        assert!(!slo.met(&no_ttft), "a TTFT objective needs a TTFT");
    }
}
