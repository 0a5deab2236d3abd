//! Configuration, second stage: a [`LoadSpec`] (what was asked, unvalidated) is resolved into a
//! [`LoadPlan`] (what will run). Resolution is the only step that does I/O before the run: it
//! reads the prompt file, resolves the host, and asks the server's `/v1/models` for the model —
//! so an unreachable target, a non-OpenAI server, a wrong model or an empty prompt file fail here
//! with a [`PlanError`] that says what is wrong and how to fix it.

use crate::calibrate::{self, Calibrated, Meter, Method};
use crate::http::{Client, FetchError, Secret, Target, TargetError};
use crate::prompts::{self, BodyOptions, Endpoint, Prompt, PromptError, TokenFit, TokenSpec};
use crate::reuse::ReuseShape;
use crate::schedule::{Arrival, Mode};
use crate::shard::{Shard, WholeStage};
use crate::slo::Slo;
use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

mod replay;
pub use replay::TraceSpec;

/// Inter-arrival distribution as named on the command line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ArrivalKind {
    Constant,
    #[default]
    Poisson,
    Gamma,
}

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub target: String,
    pub endpoint: Endpoint,
    pub stream: bool,
    pub model: Option<String>,
    pub api_key: Option<Secret>,
    /// `Name: value` lines.
    pub headers: Vec<String>,
    /// Closed-loop stages, or the cap of open-loop stages when `rate` is given.
    pub concurrency: Vec<u32>,
    /// Open-loop stages, requests per second.
    pub rate: Vec<f64>,
    pub arrival: ArrivalKind,
    pub burstiness: Option<f64>,
    pub ramp_up: Duration,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub warmup: Duration,
    pub prompt: Option<String>,
    pub prompts_file: Option<PathBuf>,
    pub input_tokens: Option<TokenSpec>,
    pub output_tokens: Option<u32>,
    pub max_tokens: Option<u32>,
    /// Sampling temperature sent with every request; `None`: the server's default.
    pub temperature: Option<f64>,
    pub slo: Slo,
    pub timeout: Duration,
    /// Longest wait for a response's first token (queued, then prefill): `ttft_timeout`.
    pub ttft_timeout: Duration,
    /// Longest gap between chunks once tokens flow: `stall`.
    pub idle_timeout: Duration,
    pub grace: Duration,
    pub seed: u64,
    /// Replay a trace instead (`--trace`): its times and lengths.
    pub trace: Option<TraceSpec>,
    /// A shared system prompt of this many tokens before every prompt (`--shared-prefix`).
    pub shared_prefix: Option<u32>,
    /// How many different shared prefixes, given to requests in turn (`--prefix-groups`).
    pub prefix_groups: u32,
    /// Multi-turn sessions of this many turns (`--turns`).
    pub turns: Option<u32>,
    /// Pause between a session's answer and its next turn (`--think-time`).
    pub think_time: Duration,
    /// Drive only this shard's share of the load (`--shard I/N`).
    pub shard: Option<Shard>,
    /// Hold the first stage until this wall-clock time (`--start-at`), so shards line up.
    pub start_at: Option<SystemTime>,
}

impl Default for LoadSpec {
    fn default() -> Self {
        LoadSpec {
            target: "http://127.0.0.1:8000".into(),
            endpoint: Endpoint::Chat,
            stream: true,
            model: None,
            api_key: None,
            headers: Vec::new(),
            concurrency: Vec::new(),
            rate: Vec::new(),
            arrival: ArrivalKind::Poisson,
            burstiness: None,
            ramp_up: Duration::ZERO,
            duration: None,
            requests: None,
            warmup: Duration::ZERO,
            prompt: None,
            prompts_file: None,
            input_tokens: None,
            output_tokens: None,
            max_tokens: None,
            temperature: None,
            slo: Slo::default(),
            timeout: Duration::from_secs(600),
            // As long as the whole request may take: a saturated server queues that long.
            ttft_timeout: Duration::from_secs(600),
            idle_timeout: Duration::from_secs(30),
            grace: Duration::from_secs(30),
            seed: 1,
            trace: None,
            shared_prefix: None,
            prefix_groups: 1,
            turns: None,
            think_time: Duration::ZERO,
            shard: None,
            start_at: None,
        }
    }
}

/// One stage of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct StagePlan {
    pub mode: Mode,
    pub ramp_up: Duration,
    pub warmup: Duration,
    /// Measured sending time (after the warmup).
    pub duration: Option<Duration>,
    /// Measured requests to send.
    pub requests: Option<u64>,
    /// An open loop's first arrival comes this late (a shard's constant arrivals, phased so that
    /// the shards' union is evenly spaced).
    pub phase: Duration,
}

impl StagePlan {
    /// `closed-loop, 32 workers` / `open-loop, 10 req/s poisson, cap 64`.
    pub fn label(&self) -> String {
        match self.mode {
            Mode::Closed { concurrency } => format!("closed-loop, concurrency {concurrency}"),
            Mode::Open { rate, arrival, cap } => {
                let a = match arrival {
                    Arrival::Constant => "constant".to_owned(),
                    Arrival::Poisson => "poisson".to_owned(),
                    Arrival::Gamma { burstiness } => format!("gamma, burstiness {burstiness}"),
                };
                let cap = cap.map_or(String::new(), |c| format!(", cap {c}"));
                // A shard's share (8/3) reads as 2.667, not with every digit of the f64.
                let rate = (rate * 1e3).round() / 1e3;
                format!("open-loop, {rate} req/s ({a}){cap}")
            }
            Mode::Trace { rate, cap } => {
                let cap = cap.map_or(String::new(), |c| format!(", cap {c}"));
                format!(
                    "trace replay, {} requests ({rate:.2} req/s on average){cap}",
                    self.requests.unwrap_or(0)
                )
            }
        }
    }
}

/// What will run: validated, with the model known and every body built.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    pub target: Target,
    pub model: String,
    pub endpoint: Endpoint,
    pub stream: bool,
    pub stages: Vec<StagePlan>,
    pub bodies: Arc<[Bytes]>,
    /// A trace replay's send offsets, one per body, in order.
    pub trace: Option<Arc<[Duration]>>,
    pub slo: Slo,
    pub timeout: Duration,
    /// Longest wait for a response's first token (queued, then prefill): `ttft_timeout`.
    pub ttft_timeout: Duration,
    /// Longest gap between chunks once tokens flow: `stall`.
    pub idle_timeout: Duration,
    pub grace: Duration,
    pub seed: u64,
    /// Things the user should know about how the plan was resolved.
    pub notes: Vec<String>,
    /// How the load reuses prompts (`--shared-prefix`, `--turns`): request `i` (or session `i`)
    /// carries prefix group `i % prefix_groups`.
    pub reuse: ReuseShape,
    /// Multi-turn sessions, when `--turns` is given: each dispatch starts one.
    pub sessions: Option<Arc<SessionPlan>>,
    /// A trace replay's prompt tokens each request repeats from an earlier one (shared blocks).
    pub trace_repeated: Option<Arc<[u32]>>,
    /// A shard's part in a sharded load (`--shard`, `--start-at`).
    pub shard: Option<ShardPlan>,
    pub(crate) client: Arc<Client>,
}

/// A shard's part: which shard, when to start, and the whole load's stages (what the merged
/// report calls them).
#[derive(Debug, Clone)]
pub struct ShardPlan {
    pub shard: Shard,
    pub start_at: Option<SystemTime>,
    pub whole: Vec<WholeStage>,
    /// The server's clock against this machine's, by its `Date` header (ms): shards whose
    /// offsets differ by seconds do not share a clock.
    pub server_clock_offset_ms: Option<f64>,
}

/// Keeps shard `spec.shard`'s share of `stages` (all of them without `--shard`), and says what the
/// whole load was.
fn shard_stages(
    spec: &LoadSpec,
    stages: Vec<StagePlan>,
) -> Result<(Vec<StagePlan>, Option<ShardPlan>), PlanError> {
    if spec.shard.is_none() && spec.start_at.is_none() {
        return Ok((stages, None));
    }
    let shard = spec.shard.unwrap_or_default();
    let whole = stages.iter().map(WholeStage::of).collect();
    let stages = crate::shard::split(&shard, &stages)?;
    let part = ShardPlan {
        shard,
        start_at: spec.start_at,
        whole,
        server_clock_offset_ms: None,
    };
    Ok((stages, Some(part)))
}

/// Sessions of several turns (`--turns`): turn `t` of session `k` sends the conversation so far
/// (the shared prefix as a system message, every earlier prompt and the server's answer to it)
/// and then prompt `(k × turns + t) mod n` as the user's next message.
#[derive(Debug, Clone)]
pub struct SessionPlan {
    pub turns: u32,
    pub think: Duration,
    /// The user turns, in the order sessions take them.
    pub prompts: Vec<Prompt>,
    /// The shared prefixes, one per group (none without `--shared-prefix`), and their length.
    pub prefixes: Vec<String>,
    pub prefix_tokens: Option<u32>,
    pub options: BodyOptions,
}

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("invalid header `{0}`: write `Name: value`")]
    Header(String),
    #[error(
        "cannot reach {target}: {why}. Is the server running there? (`llmscope sim` starts a local one)"
    )]
    Unreachable { target: String, why: String },
    #[error(
        "{url} did not answer like an OpenAI-compatible server ({got}); --target must be the server's base URL, e.g. http://127.0.0.1:8000"
    )]
    NotOpenAi { url: String, got: String },
    #[error(
        "model `{model}` is not served by {target} (it serves: {served}); pass one of those with --model"
    )]
    ModelNotServed {
        model: String,
        target: String,
        served: String,
    },
    #[error("{target}/v1/models lists no model; pass --model")]
    NoModel { target: String },
    #[error(
        "prompts of up to {prompt} tokens (counted by the server) + max_tokens {max_tokens} = {} exceed the model's max_model_len {max_model_len}: the server would reject every request. Lower --input-tokens or --max-tokens (at most {} output tokens fit)",
        prompt + max_tokens,
        max_model_len.saturating_sub(*prompt)
    )]
    TooLong {
        prompt: u32,
        max_tokens: u32,
        max_model_len: u32,
    },
}

/// Refuses a load whose longest prompt plus `max_tokens` does not fit `max_model_len` (pure).
pub fn check_length(
    longest_prompt: Option<u32>,
    max_tokens: Option<u32>,
    max_model_len: Option<u32>,
) -> Result<(), PlanError> {
    let (Some(prompt), Some(max_model_len)) = (longest_prompt, max_model_len) else {
        return Ok(());
    };
    let max_tokens = max_tokens.unwrap_or(0);
    if prompt + max_tokens > max_model_len || prompt >= max_model_len {
        return Err(PlanError::TooLong {
            prompt,
            max_tokens,
            max_model_len,
        });
    }
    Ok(())
}

fn usage(msg: impl Into<String>) -> PlanError {
    PlanError::Usage(msg.into())
}

/// The stages the spec asks for (pure).
pub fn stages(spec: &LoadSpec) -> Result<Vec<StagePlan>, PlanError> {
    if spec.duration.is_none() && spec.requests.is_none() {
        return Err(usage(
            "say when to stop: --duration (e.g. 60s) and/or --requests N",
        ));
    }
    if spec.duration.is_some_and(|d| d.is_zero()) || spec.requests == Some(0) {
        return Err(usage("--duration and --requests must be more than 0"));
    }
    let modes = modes(spec)?;
    Ok(modes
        .into_iter()
        .map(|mode| StagePlan {
            mode,
            ramp_up: spec.ramp_up,
            warmup: spec.warmup,
            duration: spec.duration,
            requests: spec.requests,
            phase: Duration::ZERO,
        })
        .collect())
}

fn modes(spec: &LoadSpec) -> Result<Vec<Mode>, PlanError> {
    if spec.concurrency.contains(&0) {
        return Err(usage("--concurrency must be at least 1"));
    }
    if spec.rate.is_empty() {
        return closed_modes(spec);
    }
    if spec.rate.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(usage(
            "--rate must be a positive number of requests per second",
        ));
    }
    let cap = match spec.concurrency.as_slice() {
        [] => None,
        [c] => Some(*c),
        _ => {
            return Err(usage(
                "with --rate, --concurrency is one cap for every stage, not a list",
            ));
        }
    };
    let arrival = arrival(spec)?;
    Ok(spec
        .rate
        .iter()
        .map(|&rate| Mode::Open { rate, arrival, cap })
        .collect())
}

/// Closed loop: one stage per `--concurrency` (1 when none is given).
fn closed_modes(spec: &LoadSpec) -> Result<Vec<Mode>, PlanError> {
    if spec.burstiness.is_some() {
        return Err(usage("--burstiness shapes open-loop arrivals: add --rate"));
    }
    let c = if spec.concurrency.is_empty() {
        vec![1]
    } else {
        spec.concurrency.clone()
    };
    Ok(c.into_iter()
        .map(|concurrency| Mode::Closed { concurrency })
        .collect())
}

fn arrival(spec: &LoadSpec) -> Result<Arrival, PlanError> {
    match (spec.arrival, spec.burstiness) {
        (_, Some(b)) if !(b.is_finite() && b > 0.0) => Err(usage(
            "--burstiness must be a positive number (1 = Poisson)",
        )),
        (ArrivalKind::Constant, Some(_)) => {
            Err(usage("--burstiness needs --arrival gamma (or poisson)"))
        }
        (ArrivalKind::Constant, None) => Ok(Arrival::Constant),
        (ArrivalKind::Poisson, None) => Ok(Arrival::Poisson),
        (ArrivalKind::Gamma, None) => Err(usage(
            "--arrival gamma needs --burstiness B (1 = Poisson, < 1 burstier)",
        )),
        (_, Some(burstiness)) => Ok(Arrival::Gamma { burstiness }),
    }
}

/// `Name: value` → a header pair; values are marked sensitive (they may carry tokens).
pub fn parse_header(line: &str) -> Result<(HeaderName, HeaderValue), PlanError> {
    let (name, value) = line
        .split_once(':')
        .ok_or_else(|| PlanError::Header(header_name(line)))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| PlanError::Header(header_name(line)))?;
    let mut value =
        HeaderValue::from_str(value.trim()).map_err(|_| PlanError::Header(header_name(line)))?;
    value.set_sensitive(true);
    llmscope_core::safe::register_secret(value.to_str().unwrap_or_default());
    Ok((name, value))
}

/// The name part only: a header value may be a secret and never goes into an error.
fn header_name(line: &str) -> String {
    let line = line.trim_start();
    line.split(|c: char| c == ':' || c.is_whitespace())
        .next()
        .unwrap_or("")
        .chars()
        .take(64)
        .collect()
}

/// The prompts the spec asks for (reads the prompt file).
pub fn load_prompts(spec: &LoadSpec) -> Result<Vec<Prompt>, PlanError> {
    let given = [
        spec.prompt.is_some(),
        spec.prompts_file.is_some(),
        spec.input_tokens.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(usage(
            "give one prompt source: --prompt, --prompts or --input-tokens",
        ));
    }
    if let Some(p) = &spec.prompt {
        if p.trim().is_empty() {
            return Err(usage("--prompt is empty"));
        }
        return Ok(vec![Prompt::Text(p.clone())]);
    }
    if let Some(path) = &spec.prompts_file {
        return Ok(prompts::load_file(path)?);
    }
    let count = spec.requests.map_or(1024, |n| n.clamp(1, 1024) as usize);
    let input = spec.input_tokens.unwrap_or(TokenSpec { mean: 128, sd: 0 });
    Ok(prompts::synthetic(input, count, spec.seed))
}

#[derive(Deserialize)]
struct ModelList {
    data: Vec<ModelCard>,
}

#[derive(Deserialize)]
struct ModelCard {
    id: String,
    #[serde(default)]
    owned_by: Option<String>,
    /// vLLM lists each model's context length.
    #[serde(default)]
    max_model_len: Option<u32>,
}

/// The served models, or `None` when the server has no `/v1/models` (404).
async fn served_models(
    client: &Client,
    target: &Target,
) -> Result<Option<Vec<ModelCard>>, PlanError> {
    let url = format!("{target}/v1/models");
    let (status, ctype, body) = client
        .get(target.uri("/v1/models"), Duration::from_secs(10))
        .await
        .map_err(|e| fetch_error(e, target, &url))?;
    if status == 404 {
        return Ok(None);
    }
    let not_openai = |got: String| PlanError::NotOpenAi {
        url: url.clone(),
        got,
    };
    if status == 401 || status == 403 {
        return Err(not_openai(format!(
            "HTTP {status}: check --api-key / OPENAI_API_KEY"
        )));
    }
    if status != 200 {
        return Err(not_openai(format!("HTTP {status}")));
    }
    let list: ModelList = serde_json::from_slice(&body).map_err(|_| {
        not_openai(format!(
            "HTTP 200 but not a model list, content type `{ctype}`"
        ))
    })?;
    Ok(Some(list.data))
}

/// Why `/v1/models` could not be fetched: the target is unreachable, or no HTTP server.
fn fetch_error(e: FetchError, target: &Target, url: &str) -> PlanError {
    match e {
        FetchError::Connect(io) => PlanError::Unreachable {
            target: target.to_string(),
            why: io.to_string(),
        },
        FetchError::Timeout => PlanError::Unreachable {
            target: target.to_string(),
            why: "no answer within 10s".into(),
        },
        FetchError::Http(h) => PlanError::NotOpenAi {
            url: url.to_owned(),
            got: format!("HTTP error: {h}"),
        },
    }
}

/// Resolves a spec: validates it, reads prompts, checks the server and its model, builds bodies.
pub async fn resolve(spec: &LoadSpec) -> Result<LoadPlan, PlanError> {
    if let Some(ts) = &spec.trace {
        return replay::resolve(spec, ts).await;
    }
    let (stages, shard) = shard_stages(spec, stages(spec)?)?;
    check_sessions(spec)?;
    if spec.shared_prefix == Some(0) || spec.prefix_groups == 0 {
        return Err(usage(
            "--shared-prefix and --prefix-groups must be at least 1",
        ));
    }
    if spec.output_tokens.is_some() && spec.max_tokens.is_some() {
        return Err(usage(
            "give --output-tokens (exact length) or --max-tokens (a cap), not both",
        ));
    }
    let (target, headers) = target_and_headers(spec)?;
    let given = load_prompts(spec)?;
    let server = Server::find(spec, target, &headers).await?;
    let meter = Meter::detect(&server.client, &server.target, &server.model, spec.endpoint).await;
    let mut fitted = fit_prompts(spec, &meter, given).await;
    let prefixes = spec
        .shared_prefix
        .map(|tokens| prefix_texts(&fitted, tokens, spec.prefix_groups))
        .unwrap_or_default();
    if spec.turns.is_none() {
        shared_prefixes(&mut fitted, &prefixes, spec.shared_prefix.unwrap_or(0));
    }
    check_length(
        conversation_tokens(spec, fitted.longest),
        spec.output_tokens.or(spec.max_tokens),
        fitted.max_model_len.or(server.card_len),
    )?;
    let mut plan = plan(spec, stages, server, fitted, prefixes);
    plan.shard = shard;
    read_server_clock(&mut plan).await;
    Ok(plan)
}

/// A shard reads the server's clock against its own, for the merge to compare across shards.
async fn read_server_clock(plan: &mut LoadPlan) {
    if let Some(part) = plan.shard.as_mut() {
        let uri = plan.target.uri("/v1/models");
        part.server_clock_offset_ms = plan
            .client
            .server_clock_offset_ms(uri, Duration::from_secs(5))
            .await;
    }
}

/// `--turns` and `--think-time` as given: at least 2 turns, on the chat API (pure).
fn check_sessions(spec: &LoadSpec) -> Result<(), PlanError> {
    match spec.turns {
        None => Ok(()),
        Some(0 | 1) => Err(usage(
            "--turns must be at least 2 (one turn is a plain request: leave --turns out)",
        )),
        Some(_) if spec.endpoint != Endpoint::Chat => Err(usage(
            "--turns needs --endpoint chat: a conversation is a list of messages",
        )),
        Some(_) => Ok(()),
    }
}

/// The longest prompt a request sends: a session's last turn carries every earlier prompt and
/// answer, and the shared prefix.
fn conversation_tokens(spec: &LoadSpec, longest: Option<u32>) -> Option<u32> {
    let prompt = longest?;
    let Some(turns) = spec.turns else {
        return Some(prompt);
    };
    let answer = spec.output_tokens.or(spec.max_tokens).unwrap_or(0);
    let prefix = spec.shared_prefix.unwrap_or(0);
    Some(
        prompt
            .saturating_mul(turns)
            .saturating_add(answer.saturating_mul(turns - 1))
            .saturating_add(prefix),
    )
}

/// The target, and the extra headers (checked along with the API key, which goes in a header).
fn target_and_headers(
    spec: &LoadSpec,
) -> Result<(Target, Vec<(HeaderName, HeaderValue)>), PlanError> {
    let target: Target = spec.target.parse()?;
    if spec.api_key.as_ref().is_some_and(|k| !k.fits_a_header()) {
        return Err(usage(
            "--api-key (or OPENAI_API_KEY) holds a newline or another control character, which no HTTP header can carry: remove it (a key read from a file often ends with a newline: `$(tr -d '\\n' < key.txt)`)",
        ));
    }
    let headers = spec
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((target, headers))
}

/// The server found at the target: a client for it and the model to load.
struct Server {
    target: Target,
    client: Arc<Client>,
    model: String,
    /// It says it is vLLM (`owned_by: "vllm"`).
    vllm: bool,
    /// The model's context length as `/v1/models` lists it.
    card_len: Option<u32>,
}

impl Server {
    /// Resolves the host, asks `/v1/models`, and picks the model.
    async fn find(
        spec: &LoadSpec,
        target: Target,
        headers: &[(HeaderName, HeaderValue)],
    ) -> Result<Server, PlanError> {
        let addrs = target.resolve().await.map_err(|e| PlanError::Unreachable {
            target: target.to_string(),
            why: e.to_string(),
        })?;
        let client = Arc::new(Client::new(&target, addrs, spec.api_key.as_ref(), headers));
        let served = served_models(&client, &target).await?;
        let (model, vllm) = choose_model(spec, &target, served.as_deref())?;
        let card_len = served
            .iter()
            .flatten()
            .find(|c| c.id == model)
            .and_then(|c| c.max_model_len);
        Ok(Server {
            target,
            client,
            model,
            vllm,
            card_len,
        })
    }
}

/// The plan: the spec's settings, and a body for every prompt (sessions build theirs turn by
/// turn, from the prompts and prefixes).
fn plan(
    spec: &LoadSpec,
    stages: Vec<StagePlan>,
    server: Server,
    fitted: Fitted,
    prefixes: Vec<String>,
) -> LoadPlan {
    let mut notes = Vec::new();
    notes.extend(fitted.note);
    let opts = body_options(spec, &server, &mut notes);
    let bodies = prompts::build_bodies(&fitted.prompts, &opts).into();
    let mut plan = plan_with(spec, stages, server, bodies, notes);
    plan.reuse = ReuseShape {
        shared_prefix_tokens: spec.shared_prefix,
        prefix_groups: spec.shared_prefix.map(|_| spec.prefix_groups),
        turns: spec.turns,
        trace_blocks: false,
    };
    plan.sessions = spec.turns.map(|turns| {
        Arc::new(SessionPlan {
            turns,
            think: spec.think_time,
            prompts: fitted.prompts,
            prefixes,
            prefix_tokens: spec.shared_prefix,
            options: opts,
        })
    });
    plan
}

/// The plan of `stages` sending `bodies`.
fn plan_with(
    spec: &LoadSpec,
    stages: Vec<StagePlan>,
    server: Server,
    bodies: Arc<[Bytes]>,
    notes: Vec<String>,
) -> LoadPlan {
    LoadPlan {
        target: server.target,
        model: server.model,
        endpoint: spec.endpoint,
        stream: spec.stream,
        stages,
        bodies,
        trace: None,
        slo: spec.slo,
        timeout: spec.timeout,
        ttft_timeout: spec.ttft_timeout,
        idle_timeout: spec.idle_timeout,
        grace: spec.grace,
        seed: spec.seed,
        notes,
        reuse: ReuseShape::default(),
        sessions: None,
        trace_repeated: None,
        shard: None,
        client: server.client,
    }
}

/// How each body is built. `--output-tokens` is exact only on vLLM (`ignore_eos`); elsewhere a
/// note says answers may end early.
fn body_options(spec: &LoadSpec, server: &Server, notes: &mut Vec<String>) -> BodyOptions {
    let ignore_eos = spec.output_tokens.is_some() && server.vllm;
    if spec.output_tokens.is_some() && !server.vllm {
        notes.push("the server does not look like vLLM: sending max_tokens without ignore_eos, so answers may end early".into());
    }
    BodyOptions {
        endpoint: spec.endpoint,
        model: server.model.clone(),
        stream: spec.stream,
        max_tokens: spec.output_tokens.or(spec.max_tokens),
        ignore_eos,
        temperature: spec.temperature,
    }
}

/// Prompts as they will be sent, and what the server says of their length.
struct Fitted {
    prompts: Vec<Prompt>,
    /// Words per server token, when measured.
    fit: Option<TokenFit>,
    /// The longest prompt in server tokens, when known.
    longest: Option<u32>,
    max_model_len: Option<u32>,
    note: Option<String>,
}

/// The `groups` shared prefixes of `tokens` tokens each, fitted on the server's tokenizer.
fn prefix_texts(fitted: &Fitted, tokens: u32, groups: u32) -> Vec<String> {
    let fit = fitted.fit.unwrap_or(TokenFit::WORDS);
    (0..u64::from(groups))
        .map(|g| prompts::block_text(g ^ 0x5_EA7ED, f64::from(tokens), fit))
        .collect()
}

/// Puts the shared prefixes (of `tokens` tokens) before the prompts, in turn: as a system
/// message of a chat prompt, at the head of a text one. The prompts' longest grows by it.
fn shared_prefixes(fitted: &mut Fitted, prefixes: &[String], tokens: u32) {
    if prefixes.is_empty() {
        return;
    }
    for (i, p) in fitted.prompts.iter_mut().enumerate() {
        let prefix = &prefixes[i % prefixes.len()];
        match p {
            Prompt::Text(t) => *t = format!("{prefix} {t}"),
            Prompt::Messages(m) => m.insert(0, system_message(prefix)),
        }
    }
    fitted.longest = fitted.longest.map(|l| l + tokens);
}

/// A shared prefix as a chat system message.
pub(crate) fn system_message(prefix: &str) -> serde_json::Value {
    serde_json::json!({"role": "system", "content": prefix})
}

/// Synthetic prompts are calibrated on the server's tokenizer; given prompts are measured (the
/// first few, with `/tokenize` only: no load is sent to measure them).
async fn fit_prompts(spec: &LoadSpec, meter: &Meter<'_>, given: Vec<Prompt>) -> Fitted {
    let Some(input) = spec.input_tokens else {
        return measure_given(meter, given).await;
    };
    let targets = prompts::targets(input, given.len(), spec.seed);
    let longest = targets.iter().copied().max();
    match calibrate::calibrate(meter, &targets, spec.seed).await {
        Some(c) => Fitted {
            fit: Some(c.fit),
            note: Some(calibrated_note(input, &c)),
            prompts: c.prompts,
            longest,
            max_model_len: c.max_model_len,
        },
        None => Fitted {
            fit: None,
            note: Some(format!(
                "the server would not count prompts: --input-tokens {input} is in words, which its tokenizer may count differently"
            )),
            prompts: given,
            longest: None,
            max_model_len: None,
        },
    }
}

fn calibrated_note(input: TokenSpec, c: &Calibrated) -> String {
    format!(
        "--input-tokens {input} calibrated on the server's tokenizer ({}): a sample measured {:.1} tokens for {:.1} asked ({:.0} tokens of template, {:.2} tokens per word)",
        match c.method {
            Method::Tokenize => "POST /tokenize",
            Method::Usage => "usage.prompt_tokens of one-token requests",
        },
        c.measured,
        c.target,
        c.fit.overhead,
        c.fit.per_word
    )
}

async fn measure_given(meter: &Meter<'_>, given: Vec<Prompt>) -> Fitted {
    let (mut longest, mut max_model_len) = (None, None);
    if meter.method == Method::Tokenize {
        for p in given.iter().take(16) {
            if let Some((n, len)) = meter.count(p).await {
                longest = longest.max(Some(n));
                max_model_len = max_model_len.or(len);
            }
        }
    }
    Fitted {
        prompts: given,
        fit: None,
        longest,
        max_model_len,
        note: None,
    }
}

/// The model to use and whether the server is vLLM (`owned_by: "vllm"`).
fn choose_model(
    spec: &LoadSpec,
    target: &Target,
    served: Option<&[ModelCard]>,
) -> Result<(String, bool), PlanError> {
    let vllm = served.is_some_and(|s| s.iter().any(|m| m.owned_by.as_deref() == Some("vllm")));
    match (&spec.model, served) {
        (Some(m), None) => Ok((m.clone(), false)),
        (Some(m), Some(s)) if s.iter().any(|c| &c.id == m) => Ok((m.clone(), vllm)),
        (Some(m), Some(s)) => Err(PlanError::ModelNotServed {
            model: m.clone(),
            target: target.to_string(),
            served: s
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
        (None, Some([first, ..])) => Ok((first.id.clone(), vllm)),
        (None, _) => Err(PlanError::NoModel {
            target: target.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_need_two_turns_on_the_chat_api() {
        let with = |turns, endpoint| LoadSpec {
            turns,
            endpoint,
            ..LoadSpec::default()
        };
        assert!(check_sessions(&with(None, Endpoint::Completions)).is_ok());
        assert!(check_sessions(&with(Some(3), Endpoint::Chat)).is_ok());
        for (turns, endpoint, says) in [
            (0, Endpoint::Chat, "at least 2"),
            (1, Endpoint::Chat, "at least 2"),
            (3, Endpoint::Completions, "needs --endpoint chat"),
        ] {
            let e = check_sessions(&with(Some(turns), endpoint)).unwrap_err();
            assert!(e.to_string().contains(says), "{turns} turns: {e}");
        }
    }

    #[test]
    fn a_session_grows_by_every_earlier_prompt_and_answer() {
        let spec = LoadSpec {
            turns: Some(3),
            max_tokens: Some(50),
            shared_prefix: Some(200),
            ..LoadSpec::default()
        };
        assert_eq!(
            conversation_tokens(&spec, Some(100)),
            Some(3 * 100 + 2 * 50 + 200)
        );
        assert_eq!(
            conversation_tokens(&LoadSpec::default(), Some(100)),
            Some(100)
        );
        assert_eq!(conversation_tokens(&spec, None), None);
    }

    fn spec() -> LoadSpec {
        LoadSpec {
            duration: Some(Duration::from_secs(1)),
            ..Default::default()
        }
    }

    #[test]
    fn stage_shapes() {
        let s = LoadSpec {
            concurrency: vec![1, 8],
            ..spec()
        };
        assert_eq!(
            stages(&s)
                .unwrap()
                .iter()
                .map(|s| s.mode)
                .collect::<Vec<_>>(),
            vec![
                Mode::Closed { concurrency: 1 },
                Mode::Closed { concurrency: 8 }
            ]
        );
        let s = LoadSpec {
            rate: vec![5.0],
            concurrency: vec![4],
            arrival: ArrivalKind::Gamma,
            burstiness: Some(0.5),
            ..spec()
        };
        assert_eq!(
            stages(&s).unwrap()[0].mode,
            Mode::Open {
                rate: 5.0,
                arrival: Arrival::Gamma { burstiness: 0.5 },
                cap: Some(4)
            }
        );
        assert_eq!(
            stages(&spec()).unwrap()[0].mode,
            Mode::Closed { concurrency: 1 }
        );
        assert!(stages(&s).unwrap()[0].label().contains("cap 4"));
    }

    #[test]
    fn bad_shapes_say_how_to_fix() {
        let cases = [
            LoadSpec {
                duration: None,
                ..spec()
            },
            LoadSpec {
                concurrency: vec![0],
                ..spec()
            },
            LoadSpec {
                rate: vec![-1.0],
                ..spec()
            },
            LoadSpec {
                rate: vec![1.0],
                concurrency: vec![1, 2],
                ..spec()
            },
            LoadSpec {
                rate: vec![1.0],
                arrival: ArrivalKind::Gamma,
                ..spec()
            },
            LoadSpec {
                rate: vec![1.0],
                arrival: ArrivalKind::Constant,
                burstiness: Some(2.0),
                ..spec()
            },
            LoadSpec {
                burstiness: Some(2.0),
                ..spec()
            },
        ];
        for c in cases {
            let e = stages(&c).unwrap_err().to_string();
            assert!(e.contains("--"), "{e}");
        }
    }

    #[test]
    fn headers_never_echo_values() {
        let (n, v) = parse_header("X-Api-Token: abc").unwrap();
        assert_eq!((n.as_str(), v.is_sensitive()), ("x-api-token", true));
        let e = parse_header("Authorization secret-token")
            .unwrap_err()
            .to_string();
        assert!(
            !e.contains("secret-token") && e.contains("`Authorization`"),
            "{e}"
        );
        let e = parse_header("Bad Name: secret-value")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("secret-value"), "{e}");
    }

    #[test]
    fn prompt_sources() {
        let p = load_prompts(&LoadSpec {
            prompt: Some("hi".into()),
            ..spec()
        })
        .unwrap();
        assert_eq!(p, vec![Prompt::Text("hi".into())]);
        assert!(
            load_prompts(&LoadSpec {
                prompt: Some(" ".into()),
                ..spec()
            })
            .is_err()
        );
        let both = LoadSpec {
            prompt: Some("a".into()),
            input_tokens: Some(TokenSpec { mean: 3, sd: 0 }),
            ..spec()
        };
        assert!(load_prompts(&both).is_err());
        let syn = load_prompts(&LoadSpec {
            requests: Some(5),
            input_tokens: Some(TokenSpec { mean: 3, sd: 0 }),
            ..spec()
        })
        .unwrap();
        assert_eq!(syn.len(), 5);
    }

    #[test]
    fn prompt_plus_max_tokens_must_fit_max_model_len() {
        assert!(check_length(Some(3000), Some(512), Some(4096)).is_ok());
        let e = check_length(Some(3700), Some(512), Some(4096)).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("3700")
                && msg.contains("512 = 4212")
                && msg.contains("max_model_len 4096")
                && msg.contains("at most 396 output tokens"),
            "{msg}"
        );
        assert!(check_length(Some(4096), None, Some(4096)).is_err());
        assert!(check_length(None, Some(10_000), Some(4096)).is_ok());
        assert!(check_length(Some(10_000), Some(1), None).is_ok());
    }

    #[test]
    fn model_choice() {
        let t: Target = "http://127.0.0.1:1".parse().unwrap();
        let cards = [
            ModelCard {
                id: "a".into(),
                owned_by: Some("vllm".into()),
                max_model_len: Some(4096),
            },
            ModelCard {
                id: "b".into(),
                owned_by: None,
                max_model_len: None,
            },
        ];
        assert_eq!(
            choose_model(&spec(), &t, Some(&cards)).unwrap(),
            ("a".into(), true)
        );
        let b = LoadSpec {
            model: Some("b".into()),
            ..spec()
        };
        assert_eq!(choose_model(&b, &t, Some(&cards)).unwrap().0, "b");
        let e = choose_model(
            &LoadSpec {
                model: Some("zz".into()),
                ..spec()
            },
            &t,
            Some(&cards),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("zz") && e.contains("a, b") && e.contains("--model"),
            "{e}"
        );
        assert!(choose_model(&spec(), &t, None).is_err());
        assert_eq!(choose_model(&b, &t, None).unwrap(), ("b".into(), false));
    }
}
