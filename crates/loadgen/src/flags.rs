//! The flags of a load (`llmscope load`, and what `run` shares of them), as clap arguments behind
//! the `clap` feature, and the [`LoadSpec`] they describe.

use crate::trace::TraceFormat;
use crate::{ArrivalKind, Endpoint, LoadSpec, Secret, Slo, TokenSpec, TraceSpec};
use std::path::PathBuf;
use std::time::Duration;

/// What to load and how: target, API, shape, prompts, objectives and limits.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct LoadFlags {
    /// Base URL of the server (http://host:port; a trailing /v1 is accepted).
    #[cfg_attr(feature = "clap", arg(long, default_value = "http://127.0.0.1:8000"))]
    pub target: String,
    /// API to load.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = Endpoint::Chat))]
    pub endpoint: Endpoint,
    /// Ask for whole responses instead of streams (no TTFT/ITL then).
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_stream: bool,
    /// Model name [default: the first one in /v1/models].
    #[cfg_attr(feature = "clap", arg(long))]
    pub model: Option<String>,
    /// API key, sent as a bearer token; never printed or stored.
    #[cfg_attr(
        feature = "clap",
        arg(long, env = "OPENAI_API_KEY", hide_env_values = true)
    )]
    pub api_key: Option<String>,
    /// Extra request header, `Name: value` (repeatable).
    #[cfg_attr(feature = "clap", arg(long = "header", value_name = "NAME: VALUE"))]
    pub headers: Vec<String>,
    /// Closed-loop workers; a list runs one stage each (1,8,32). With --rate: the in-flight cap.
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ','))]
    pub concurrency: Vec<u32>,
    /// Open-loop requests per second; a list runs one stage each.
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ','))]
    pub rate: Vec<f64>,
    /// Open-loop inter-arrival distribution.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = ArrivalKind::Poisson))]
    pub arrival: ArrivalKind,
    /// Gamma shape of the arrivals: 1 = Poisson, < 1 burstier, > 1 smoother.
    #[cfg_attr(feature = "clap", arg(long))]
    pub burstiness: Option<f64>,
    /// Grow concurrency (or rate) linearly from zero over this time.
    #[cfg_attr(feature = "clap", arg(long, value_parser = llmscope_core::duration::parse_duration, default_value = "0"))]
    pub ramp_up: Duration,
    /// Measured sending time per stage (after the warmup) [default: 30s without --requests].
    #[cfg_attr(feature = "clap", arg(long, value_parser = llmscope_core::duration::parse_duration))]
    pub duration: Option<Duration>,
    /// Measured requests per stage.
    #[cfg_attr(feature = "clap", arg(long))]
    pub requests: Option<u64>,
    /// Load sent first and left out of the statistics, per stage.
    #[cfg_attr(feature = "clap", arg(long, value_parser = llmscope_core::duration::parse_duration, default_value = "0"))]
    pub warmup: Duration,
    /// One prompt for every request.
    #[cfg_attr(feature = "clap", arg(long))]
    pub prompt: Option<String>,
    /// Prompt file: JSONL of {"prompt":…} or {"messages":[…]}, or a ShareGPT JSON array.
    #[cfg_attr(feature = "clap", arg(long = "prompts", value_name = "FILE"))]
    pub prompts_file: Option<PathBuf>,
    /// Synthetic prompts of N (±SD) tokens [default: 128].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N[±SD]"))]
    pub input_tokens: Option<TokenSpec>,
    /// Exact answer length: sets max_tokens and, on vLLM, ignore_eos.
    #[cfg_attr(feature = "clap", arg(long, value_name = "M"))]
    pub output_tokens: Option<u32>,
    /// Cap on answer length (max_tokens).
    #[cfg_attr(feature = "clap", arg(long, value_name = "M"))]
    pub max_tokens: Option<u32>,
    /// Sampling temperature sent with every request (0 = greedy); unset, the server's default.
    #[cfg_attr(feature = "clap", arg(long, value_name = "T", value_parser = temperature))]
    pub temperature: Option<f64>,
    /// Objectives for goodput, e.g. ttft=500ms,itl=50ms,tpot=40ms,e2e=20s.
    #[cfg_attr(feature = "clap", arg(long))]
    pub slo: Option<Slo>,
    /// Limit for one whole request.
    #[cfg_attr(feature = "clap", arg(long, value_parser = llmscope_core::duration::parse_duration, default_value = "10m"))]
    pub timeout: Duration,
    /// Limit for the wait before a response's first token — queued on the server, then prefill
    /// (counted as `ttft_timeout`). Generous on purpose: a saturated server keeps a request
    /// queued as long as it takes, and that queue is what a test measures.
    #[cfg_attr(feature = "clap", arg(long, value_parser = llmscope_core::duration::parse_duration, default_value = "10m"))]
    pub ttft_timeout: Duration,
    /// Limit for a pause between chunks once tokens flow (counted as `stall`).
    #[cfg_attr(feature = "clap", arg(long, value_parser = llmscope_core::duration::parse_duration, default_value = "30s"))]
    pub idle_timeout: Duration,
    /// After sending stops, how long requests in flight may take before they are cancelled.
    #[cfg_attr(feature = "clap", arg(long, value_parser = llmscope_core::duration::parse_duration, default_value = "30s"))]
    pub grace: Duration,
    /// Seed of arrivals and synthetic prompts.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1))]
    pub seed: u64,
    /// Ask `llmscope sim` for its emit timestamps and report first-token delivery error.
    #[cfg_attr(feature = "clap", arg(long))]
    pub check_timing: bool,
    /// A shared system prompt of N tokens before every prompt (the prefix cache's case).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub shared_prefix: Option<u32>,
    /// How many different shared prefixes (requests take them in turn) [default: 1].
    #[cfg_attr(
        feature = "clap",
        arg(
            long,
            value_name = "N",
            requires = "shared_prefix",
            default_value_t = 1
        )
    )]
    pub prefix_groups: u32,
    /// Multi-turn sessions of K turns: each turn sends the conversation so far (earlier prompts
    /// and the server's answers) plus the next prompt; sessions in flight = --concurrency (with
    /// --rate, sessions start at that rate); --requests counts requests.
    #[cfg_attr(feature = "clap", arg(long, value_name = "K"))]
    pub turns: Option<u32>,
    /// Pause between a session's answer and its next turn (a user reading and typing).
    #[cfg_attr(feature = "clap", arg(long, value_parser = llmscope_core::duration::parse_duration, default_value = "0", requires = "turns"))]
    pub think_time: Duration,
    #[cfg_attr(feature = "clap", command(flatten))]
    pub replay: TraceFlags,
}

/// `--trace FILE` and its settings: `load` and `run` take the same.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct TraceFlags {
    /// Replay a request trace: each request at its time, with its input and output lengths.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "FILE", help_heading = "Trace replay")
    )]
    pub trace: Option<PathBuf>,
    /// The trace's format.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = TraceFormat::Mooncake, help_heading = "Trace replay"))]
    pub trace_format: TraceFormat,
    /// Multiply the trace's gaps by this (0.5 replays twice as fast).
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value_t = 1.0, help_heading = "Trace replay")
    )]
    pub time_scale: f64,
    /// The part of the trace to replay, in trace time: `10m..20m`, `90s..`, `..1h`.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FROM..TO", value_parser = parse_window, help_heading = "Trace replay"))]
    pub trace_window: Option<(Duration, Option<Duration>)>,
    /// Leave out (and count) trace lines that do not read, and requests longer than the model takes.
    #[cfg_attr(feature = "clap", arg(long, help_heading = "Trace replay"))]
    pub skip_bad_lines: bool,
}

impl TraceFlags {
    /// `--trace` and its settings, when a trace is given.
    pub fn spec(&self) -> Option<TraceSpec> {
        let path = self.trace.clone()?;
        let (from, to) = self.trace_window.unwrap_or((Duration::ZERO, None));
        Some(TraceSpec {
            time_scale: self.time_scale,
            from: from.as_secs_f64(),
            to: to.map(|t| t.as_secs_f64()),
            skip_bad: self.skip_bad_lines,
            ..TraceSpec::new(path, self.trace_format)
        })
    }
}

/// `FROM..TO` in trace time, either side optional.
pub fn parse_window(s: &str) -> Result<(Duration, Option<Duration>), String> {
    let (from, to) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}`: write FROM..TO, e.g. 10m..20m, 90s.. or ..1h"))?;
    let side = |t: &str| -> Result<Option<Duration>, String> {
        if t.trim().is_empty() {
            return Ok(None);
        }
        llmscope_core::duration::parse_duration(t.trim())
            .map(Some)
            .map_err(|e| format!("`{t}`: {e}"))
    };
    let (from, to) = (side(from)?.unwrap_or(Duration::ZERO), side(to)?);
    if to.is_some_and(|t| t <= from) {
        return Err(format!("`{s}`: the window ends before it starts"));
    }
    Ok((from, to))
}

impl LoadFlags {
    /// The load these flags describe.
    pub fn spec(&self) -> LoadSpec {
        LoadSpec {
            target: self.target.clone(),
            endpoint: self.endpoint,
            stream: !self.no_stream,
            model: self.model.clone(),
            api_key: self.api_key(),
            headers: self.headers(),
            concurrency: self.concurrency.clone(),
            rate: self.rate.clone(),
            arrival: self.arrival,
            burstiness: self.burstiness,
            ramp_up: self.ramp_up,
            duration: self.duration(),
            requests: self.requests,
            warmup: self.warmup,
            prompt: self.prompt.clone(),
            prompts_file: self.prompts_file.clone(),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            slo: self.slo.unwrap_or_default(),
            timeout: self.timeout,
            ttft_timeout: self.ttft_timeout,
            idle_timeout: self.idle_timeout,
            grace: self.grace,
            seed: self.seed,
            trace: self.replay.spec(),
            shared_prefix: self.shared_prefix,
            prefix_groups: self.prefix_groups,
            turns: self.turns,
            think_time: self.think_time,
            shard: None,
            start_at: None,
        }
    }

    /// `--api-key`; an empty one is none.
    fn api_key(&self) -> Option<Secret> {
        self.api_key
            .clone()
            .filter(|k| !k.is_empty())
            .map(Secret::new)
    }

    /// `--header`s, and the simulator's timestamp header with `--check-timing`.
    fn headers(&self) -> Vec<String> {
        let mut headers = self.headers.clone();
        if self.check_timing {
            headers.push("x-llmscope-timestamps: 1".into());
        }
        headers
    }

    /// `--duration`; 30 s when neither it nor `--requests` nor a trace says when to stop.
    fn duration(&self) -> Option<Duration> {
        match (self.duration, self.requests) {
            (None, None) if self.replay.trace.is_none() => Some(Duration::from_secs(30)),
            (d, _) => d,
        }
    }
}

/// `--temperature`: a finite number from 0 to 2 (OpenAI's range; vLLM takes the same).
#[cfg(feature = "clap")]
pub fn temperature(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if (0.0..=2.0).contains(&t) => Ok(t),
        _ => Err(format!(
            "`{s}` is not a temperature: give a number from 0 (greedy) to 2, e.g. --temperature 0"
        )),
    }
}
