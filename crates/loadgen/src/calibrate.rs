//! Prompts that fit the server: `--input-tokens N` means N tokens on the *server's* tokenizer,
//! chat template included (issue 12: prompts built as N words were longer on the server).
//!
//! A [`Meter`] counts a prompt as the server will: vLLM's `POST /tokenize` with the same
//! `messages` (chat) or `prompt` (completions) the body carries, else one request with
//! `max_tokens: 1` whose `usage.prompt_tokens` is read. [`calibrate`] fits
//! [`TokenFit`] — the server's overhead (a one-word prompt) and its tokens per synthetic word —
//! then rebuilds the prompts and re-measures a sample until its mean lands within
//! [`TOLERANCE`] of the target. The answer also names the model's `max_model_len` when the
//! server gives it, for the length pre-flight of [`crate::plan`].

use crate::http::{Client, Target};
use crate::prompts::{self, Endpoint, Prompt, TokenFit};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

/// Relative error of the measured sample mean accepted as converged (the load must land within
/// ±2 %; the sample is tighter).
pub const TOLERANCE: f64 = 0.01;
/// Prompts measured per round, and rounds at most.
const SAMPLE: usize = 4;
const ROUNDS: usize = 6;

/// How prompts are counted on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `POST /tokenize`.
    Tokenize,
    /// `usage.prompt_tokens` of a one-token request.
    Usage,
}

/// Counts prompts on the server.
pub struct Meter<'a> {
    pub client: &'a Client,
    pub target: &'a Target,
    pub model: &'a str,
    pub endpoint: Endpoint,
    pub method: Method,
}

#[derive(Deserialize)]
struct Tokenized {
    count: u32,
    #[serde(default)]
    max_model_len: Option<u32>,
}

#[derive(Deserialize)]
struct UsageOnly {
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: Option<u32>,
}

impl Meter<'_> {
    /// A meter using `/tokenize` when the server has it (it answers a count), else usage.
    pub async fn detect<'a>(
        client: &'a Client,
        target: &'a Target,
        model: &'a str,
        endpoint: Endpoint,
    ) -> Meter<'a> {
        let mut m = Meter {
            client,
            target,
            model,
            endpoint,
            method: Method::Tokenize,
        };
        if m.count(&Prompt::Text("the".into())).await.is_none() {
            m.method = Method::Usage;
        }
        m
    }

    /// The server's token count of `p`, and `max_model_len` when `/tokenize` gives it; `None`
    /// when the server would not say.
    pub async fn count(&self, p: &Prompt) -> Option<(u32, Option<u32>)> {
        let (path, bytes) = self.request(p);
        let (status, answer) = self
            .client
            .post_json(self.target.uri(path), bytes, Duration::from_secs(30))
            .await
            .ok()?;
        if status != 200 {
            return None;
        }
        self.read_count(&answer)
    }

    /// The path and body that count `p`: `/tokenize`, or a one-token request.
    fn request(&self, p: &Prompt) -> (&'static str, Bytes) {
        let mut body = prompts::prompt_fields(p, self.endpoint, self.model);
        let path = match self.method {
            Method::Tokenize => "/tokenize",
            Method::Usage => {
                body["max_tokens"] = json!(1);
                body["stream"] = json!(false);
                self.endpoint.path()
            }
        };
        (path, Bytes::from(body.to_string()))
    }

    /// The count (and `max_model_len`) in the server's answer.
    fn read_count(&self, answer: &[u8]) -> Option<(u32, Option<u32>)> {
        match self.method {
            Method::Tokenize => {
                let t: Tokenized = serde_json::from_slice(answer).ok()?;
                Some((t.count, t.max_model_len))
            }
            Method::Usage => {
                let u: UsageOnly = serde_json::from_slice(answer).ok()?;
                Some((u.usage?.prompt_tokens?, None))
            }
        }
    }
}

/// What calibration found.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibrated {
    pub prompts: Vec<Prompt>,
    pub fit: TokenFit,
    /// Mean server tokens of the last measured sample, and the mean target of that sample.
    pub measured: f64,
    pub target: f64,
    pub max_model_len: Option<u32>,
    pub method: Method,
}

/// Builds synthetic prompts for `targets` whose server-side length matches them; `None` when the
/// server would not count them or the sample did not converge within `ROUNDS`.
pub async fn calibrate(meter: &Meter<'_>, targets: &[u32], seed: u64) -> Option<Calibrated> {
    let (one, mut max_len) = meter.count(&Prompt::Text("the".into())).await?;
    let overhead = f64::from(one.saturating_sub(1));
    let mut fit = TokenFit {
        overhead,
        per_word: 1.0,
    };
    let sample = &targets[..targets.len().min(SAMPLE)];
    let target = sample.iter().map(|&t| f64::from(t)).sum::<f64>() / sample.len() as f64;
    let mut measured = 0.0;
    let mut converged = false;
    for _ in 0..ROUNDS {
        let prompts = prompts::synthetic_fit(sample, fit, seed);
        measured = mean_count(meter, &prompts, &mut max_len).await?;
        if (measured - target).abs() <= TOLERANCE * target {
            converged = true;
            break;
        }
        fit = refit(fit, measured, target);
    }
    // A count that does not follow the text (a fixed `usage`, a target below the template) is
    // no calibration.
    if !converged {
        return None;
    }
    Some(Calibrated {
        prompts: prompts::synthetic_fit(targets, fit, seed),
        fit,
        measured,
        target,
        max_model_len: max_len,
        method: meter.method,
    })
}

/// The mean server count of `prompts` (`max_len` is set from the first answer that gives it);
/// `None` when the server would not count one.
async fn mean_count(
    meter: &Meter<'_>,
    prompts: &[Prompt],
    max_len: &mut Option<u32>,
) -> Option<f64> {
    let mut sum = 0.0;
    for p in prompts {
        let (n, len) = meter.count(p).await?;
        sum += f64::from(n);
        *max_len = max_len.or(len);
    }
    Some(sum / prompts.len() as f64)
}

/// Scales tokens-per-word by how far the text part of the prompts missed.
fn refit(fit: TokenFit, measured: f64, target: f64) -> TokenFit {
    let got = (measured - fit.overhead).max(1.0);
    let want = (target - fit.overhead).max(1.0);
    TokenFit {
        per_word: (fit.per_word * got / want).clamp(0.05, 20.0),
        ..fit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refit_scales_the_text_part_only() {
        let fit = TokenFit {
            overhead: 24.0,
            per_word: 1.0,
        };
        // 1,000 words came out as 24 + 1,450 tokens: 1.45 tokens a word.
        let f = refit(fit, 1474.0, 1024.0);
        assert!((f.per_word - 1.45).abs() < 1e-9, "{f:?}");
        assert_eq!(f.words(1024.0), 690);
        assert_eq!(TokenFit::WORDS.words(0.0), 1);
    }
}
