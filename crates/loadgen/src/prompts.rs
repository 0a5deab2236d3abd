//! Prompt sources and the request bodies made from them.
//!
//! A prompt is plain text or a list of chat messages ([`Prompt`]). They come from `--prompt`,
//! from a file ([`parse_prompts`]: JSONL of `{"messages":[…]}` / `{"prompt":"…"}` lines, or a JSON
//! array of those or of ShareGPT `{"conversations":[…]}` entries), or are made up
//! ([`synthetic`]: `N±sd` words drawn from a list of common English words that tokenizers keep
//! as one token each, so `--input-tokens` is close to the server's count). [`build_bodies`]
//! serialises each prompt once into the exact JSON body sent, for either endpoint.

use crate::rng::Rng;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// One prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    Text(String),
    /// Chat messages, passed through as given (`content` may be a string or a list of parts).
    Messages(Vec<Value>),
}

/// Which OpenAI endpoint to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/completions`.
    Completions,
}

impl Endpoint {
    /// The path under the target's base URL.
    pub fn path(&self) -> &'static str {
        match self {
            Endpoint::Chat => "/v1/chat/completions",
            Endpoint::Completions => "/v1/completions",
        }
    }
}

/// A token count with an optional spread: `512`, `512±64` or `512+-64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenSpec {
    pub mean: u32,
    pub sd: u32,
}

/// Why a prompt source was rejected.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("cannot read the prompt file")]
    Read(#[from] llmscope_core::files::FileError),
    #[error("prompt file {}, line {line}, column {column}: {why}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        why: String,
    },
    #[error("prompt file {} has no prompts: write JSONL lines like {{\"prompt\":\"…\"}} or {{\"messages\":[…]}}, or a ShareGPT JSON array", path.display())]
    Empty { path: PathBuf },
    #[error("invalid token count `{0}`: write N or N±SD, e.g. 512 or 512±64")]
    TokenSpec(String),
}

impl FromStr for TokenSpec {
    type Err = PromptError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || PromptError::TokenSpec(s.to_owned());
        let (mean, sd) = match s.split_once('±').or_else(|| s.split_once("+-")) {
            Some((m, d)) => (m.trim(), d.trim()),
            None => (s.trim(), "0"),
        };
        let mean: u32 = mean.parse().map_err(|_| bad())?;
        let sd = sd.parse().map_err(|_| bad())?;
        if mean == 0 {
            return Err(bad());
        }
        Ok(TokenSpec { mean, sd })
    }
}

impl fmt::Display for TokenSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.sd {
            0 => write!(f, "{}", self.mean),
            sd => write!(f, "{}±{sd}", self.mean),
        }
    }
}

/// The largest prompt file read: 2 GiB (ShareGPT's cleaned split is about 670 MB).
pub const PROMPT_FILE_MAX_BYTES: u64 = 2 << 30;

/// Reads and parses a prompt file (a regular file, at most [`PROMPT_FILE_MAX_BYTES`]).
pub fn load_file(path: &Path) -> Result<Vec<Prompt>, PromptError> {
    let text = llmscope_core::files::read_text_bounded(
        path,
        PROMPT_FILE_MAX_BYTES,
        "a prompt file is read whole: keep the prompts the load needs in a smaller file",
    )?;
    let prompts = parse_prompts(&text).map_err(|(line, column, why)| PromptError::Parse {
        path: path.to_owned(),
        line,
        column,
        why,
    })?;
    if prompts.is_empty() {
        return Err(PromptError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(prompts)
}

/// Parses JSONL or a JSON array; errors are `(line, column, why)`.
pub fn parse_prompts(text: &str) -> Result<Vec<Prompt>, (usize, usize, String)> {
    if text.trim_start().starts_with('[') {
        let items: Vec<Value> =
            serde_json::from_str(text).map_err(|e| (e.line(), e.column(), e.to_string()))?;
        return Ok(items.iter().filter_map(prompt_of).collect());
    }
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value =
            serde_json::from_str(line).map_err(|e| (i + 1, e.column(), e.to_string()))?;
        let p = prompt_of(&v).ok_or_else(|| {
            (
                i + 1,
                1,
                "expected an object with \"prompt\" or \"messages\"".to_owned(),
            )
        })?;
        out.push(p);
    }
    Ok(out)
}

/// One entry: `prompt`, `messages`, or ShareGPT `conversations` (its first human turn).
fn prompt_of(v: &Value) -> Option<Prompt> {
    if let Some(p) = v.get("prompt").and_then(Value::as_str) {
        return Some(Prompt::Text(p.to_owned()));
    }
    if let Some(m) = v.get("messages").and_then(Value::as_array) {
        return (!m.is_empty()).then(|| Prompt::Messages(m.clone()));
    }
    let turns = v.get("conversations").and_then(Value::as_array)?;
    let human = turns.iter().find(|t| {
        matches!(
            t.get("from").and_then(Value::as_str),
            Some("human" | "user")
        )
    })?;
    human
        .get("value")
        .and_then(Value::as_str)
        .map(|s| Prompt::Text(s.to_owned()))
}

/// Common English words that BPE tokenizers (Llama, Qwen, GPT) encode as one token with their
/// leading space.
const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "for", "that", "with", "as", "on", "it", "by", "this",
    "be", "are", "from", "at", "or", "an", "was", "have", "not", "can", "all", "will", "more",
    "one", "about", "new", "time", "there", "which", "their", "has", "would", "what", "some",
    "other", "when", "like", "people", "first", "into", "only", "than", "over", "also", "after",
    "year", "work", "back", "could", "good", "well", "way", "even", "want", "because", "any",
    "these", "give", "day", "most", "city", "world", "water", "house", "music", "light", "system",
    "paper", "money", "point", "room", "story", "power", "line", "game", "market", "school",
];

/// How many words make a prompt of `t` tokens on the server: `(t − overhead) / per_word`.
/// [`TokenFit::WORDS`] (one word per token, no overhead) until measured ([`crate::calibrate`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenFit {
    /// Tokens the server adds around the text (chat template, BOS).
    pub overhead: f64,
    /// Server tokens per synthetic word.
    pub per_word: f64,
}

impl TokenFit {
    pub const WORDS: TokenFit = TokenFit {
        overhead: 0.0,
        per_word: 1.0,
    };

    /// Words for a prompt of `tokens` tokens (at least one).
    pub fn words(&self, tokens: f64) -> usize {
        ((tokens - self.overhead) / self.per_word.max(1e-3))
            .round()
            .max(1.0) as usize
    }
}

/// The target token count of each of `count` synthetic prompts (normal spread, at least 1).
pub fn targets(spec: TokenSpec, count: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    (0..count.max(1))
        .map(|_| {
            (f64::from(spec.mean) + f64::from(spec.sd) * rng.normal())
                .round()
                .max(1.0) as u32
        })
        .collect()
}

/// `count` prompts of `spec` words each (normal spread, at least one word).
pub fn synthetic(spec: TokenSpec, count: usize, seed: u64) -> Vec<Prompt> {
    synthetic_fit(&targets(spec, count, seed), TokenFit::WORDS, seed)
}

/// One prompt per target token count, its word count from `fit`.
pub fn synthetic_fit(targets: &[u32], fit: TokenFit, seed: u64) -> Vec<Prompt> {
    let mut rng = Rng::new(seed ^ 0x5EED);
    targets
        .iter()
        .map(|&t| {
            let n = fit.words(f64::from(t));
            let mut s = String::with_capacity(n * 6);
            push_words(&mut s, &mut rng, n);
            Prompt::Text(s)
        })
        .collect()
}

/// Appends `n` synthetic words to `s`, a blank before each but the text's first.
fn push_words(s: &mut String, rng: &mut Rng, n: usize) {
    for _ in 0..n {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(WORDS[rng.below(WORDS.len())]);
    }
}

/// The text of block `id`, `tokens` long by `fit`'s words per token (no template counted): the
/// same wherever the id appears.
pub fn block_text(id: u64, tokens: f64, fit: TokenFit) -> String {
    let mut s = String::new();
    push_block(&mut s, id, tokens, fit);
    s
}

fn push_block(s: &mut String, id: u64, tokens: f64, fit: TokenFit) {
    let words = TokenFit {
        overhead: 0.0,
        ..fit
    }
    .words(tokens);
    push_words(s, &mut Rng::new(id ^ 0xB10C), words);
}

/// A prompt of `tokens` tokens made of shared blocks (Mooncake's `hash_ids`): every block but the
/// last is `block_tokens` long and the same text wherever its id appears, so requests that share
/// ids share a prefix the engine's prefix cache can reuse; the last block fills up to `tokens`.
pub fn blocks(ids: &[u64], tokens: u32, block_tokens: u32, fit: TokenFit) -> Prompt {
    let mut s = String::new();
    let mut left = (f64::from(tokens) - fit.overhead).max(1.0);
    for (k, &id) in ids.iter().enumerate() {
        let t = if k + 1 == ids.len() {
            left
        } else {
            f64::from(block_tokens).min(left)
        };
        if t < 1.0 {
            break;
        }
        push_block(&mut s, id, t, fit);
        left -= t;
    }
    Prompt::Text(s)
}

/// What goes into every body besides the prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyOptions {
    pub endpoint: Endpoint,
    pub model: String,
    pub stream: bool,
    pub max_tokens: Option<u32>,
    pub ignore_eos: bool,
    /// Sent as `temperature` where given.
    pub temperature: Option<f64>,
}

/// The JSON body of each prompt, serialised once.
pub fn build_bodies(prompts: &[Prompt], o: &BodyOptions) -> Vec<Bytes> {
    prompts.iter().map(|p| build_body(p, o)).collect()
}

/// The JSON body of one prompt, serialised.
pub fn build_body(p: &Prompt, o: &BodyOptions) -> Bytes {
    Bytes::from(body(p, o).to_string())
}

/// The prompt part of a body: `messages` for chat, `prompt` for completions — also what
/// vLLM's `/tokenize` takes, so a prompt is counted as the server will see it.
pub fn prompt_fields(p: &Prompt, endpoint: Endpoint, model: &str) -> Value {
    let mut b = json!({ "model": model });
    match (endpoint, p) {
        (Endpoint::Chat, Prompt::Messages(m)) => b["messages"] = Value::Array(m.clone()),
        (Endpoint::Chat, Prompt::Text(t)) => {
            b["messages"] = json!([{"role": "user", "content": t}])
        }
        (Endpoint::Completions, p) => b["prompt"] = Value::String(as_text(p)),
    }
    b
}

fn body(p: &Prompt, o: &BodyOptions) -> Value {
    let mut b = prompt_fields(p, o.endpoint, &o.model);
    b["stream"] = json!(o.stream);
    if o.stream {
        b["stream_options"] = json!({ "include_usage": true });
    }
    if let Some(n) = o.max_tokens {
        b["max_tokens"] = json!(n);
    }
    if o.ignore_eos {
        b["ignore_eos"] = json!(true);
    }
    if let Some(t) = o.temperature {
        b["temperature"] = json!(t);
    }
    b
}

/// A chat prompt as completion text: the string contents, one per line.
fn as_text(p: &Prompt) -> String {
    match p {
        Prompt::Text(t) => t.clone(),
        Prompt::Messages(m) => m
            .iter()
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_blocks_give_shared_prefixes() {
        let fit = TokenFit::WORDS;
        let Prompt::Text(a) = blocks(&[7, 8, 9], 1100, 512, fit) else {
            panic!()
        };
        let Prompt::Text(b) = blocks(&[7, 8, 4], 1030, 512, fit) else {
            panic!()
        };
        let (wa, wb): (Vec<&str>, Vec<&str>) = (a.split(' ').collect(), b.split(' ').collect());
        assert_eq!((wa.len(), wb.len()), (1100, 1030));
        assert_eq!(wa[..1024], wb[..1024], "two shared blocks, the same text");
        assert_ne!(wa[1024..1030], wb[1024..1030], "the third block differs");
    }

    #[test]
    fn token_specs() {
        assert_eq!(
            "512".parse::<TokenSpec>().unwrap(),
            TokenSpec { mean: 512, sd: 0 }
        );
        assert_eq!(
            "512±64".parse::<TokenSpec>().unwrap(),
            TokenSpec { mean: 512, sd: 64 }
        );
        assert_eq!(
            "512+-64".parse::<TokenSpec>().unwrap().to_string(),
            "512±64"
        );
        for bad in ["", "x", "0", "5±", "-3"] {
            assert!(bad.parse::<TokenSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_jsonl_and_arrays_and_sharegpt() {
        let jsonl =
            "{\"prompt\":\"a\"}\n\n{\"messages\":[{\"role\":\"user\",\"content\":\"b\"}]}\n";
        let p = parse_prompts(jsonl).unwrap();
        assert_eq!(p[0], Prompt::Text("a".into()));
        assert!(matches!(&p[1], Prompt::Messages(m) if m.len() == 1));
        let share = r#"[{"conversations":[{"from":"system","value":"s"},{"from":"human","value":"hi"},{"from":"gpt","value":"yo"}]},{"conversations":[]}]"#;
        assert_eq!(
            parse_prompts(share).unwrap(),
            vec![Prompt::Text("hi".into())]
        );
    }

    #[test]
    fn parse_errors_carry_the_line() {
        let (line, _, why) = parse_prompts("{\"prompt\":\"a\"}\n{oops\n").unwrap_err();
        assert_eq!(line, 2, "{why}");
        let (line, _, _) = parse_prompts("{\"prompt\":\"a\"}\n{\"x\":1}\n").unwrap_err();
        assert_eq!(line, 2);
    }

    #[test]
    fn synthetic_prompts_have_the_asked_length() {
        let p = synthetic(TokenSpec { mean: 100, sd: 0 }, 3, 1);
        assert_eq!(p.len(), 3);
        assert!(
            p.iter()
                .all(|p| matches!(p, Prompt::Text(t) if t.split(' ').count() == 100))
        );
        assert_ne!(p[0], p[1]);
        let spread = synthetic(TokenSpec { mean: 100, sd: 30 }, 200, 2);
        let lens: Vec<usize> = spread
            .iter()
            .map(|p| match p {
                Prompt::Text(t) => t.split(' ').count(),
                _ => 0,
            })
            .collect();
        let mean = lens.iter().sum::<usize>() as f64 / 200.0;
        assert!(
            (mean - 100.0).abs() < 8.0 && lens.iter().any(|&l| l < 80),
            "{mean}"
        );
    }

    #[test]
    fn bodies_for_both_endpoints() {
        let mut o = BodyOptions {
            endpoint: Endpoint::Chat,
            model: "m".into(),
            stream: true,
            max_tokens: Some(8),
            ignore_eos: true,
            temperature: None,
        };
        let b: Value =
            serde_json::from_slice(&build_bodies(&[Prompt::Text("hi".into())], &o)[0]).unwrap();
        assert_eq!(b["messages"][0]["content"], "hi");
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(
            (b["max_tokens"].as_u64(), b["ignore_eos"].as_bool()),
            (Some(8), Some(true))
        );
        o.endpoint = Endpoint::Completions;
        o.stream = false;
        o.ignore_eos = false;
        let msgs = Prompt::Messages(vec![
            json!({"role":"user","content":"a"}),
            json!({"role":"user","content":"b"}),
        ]);
        let b: Value = serde_json::from_slice(&build_bodies(&[msgs], &o)[0]).unwrap();
        assert_eq!(b["prompt"], "a\nb");
        assert!(b.get("stream_options").is_none() && b.get("ignore_eos").is_none());
        assert!(b.get("temperature").is_none());
        o.temperature = Some(0.0);
        let b: Value =
            serde_json::from_slice(&build_bodies(&[Prompt::Text("hi".into())], &o)[0]).unwrap();
        assert_eq!(b["temperature"].as_f64(), Some(0.0));
    }
}
