//! Resolving a trace replay (`--trace FILE`, issue 27): the trace file is read and cut
//! ([`crate::trace`]), the server found as for any load, its tokenizer fitted on a sample of the
//! trace's prompt lengths, and one body built per request — its prompt of the trace's input length
//! (Mooncake's shared blocks as shared text), its `max_tokens` the trace's output length. The one
//! stage sends the k-th body at the k-th offset.

use super::{
    LoadPlan, LoadSpec, PlanError, Server, ShardPlan, StagePlan, body_options, target_and_headers,
    usage,
};
use crate::calibrate::{self, Meter};
use crate::prompts::{self, TokenFit};
use crate::schedule::Mode;
use crate::shard::{Shard, WholeStage};
use crate::trace::{self, Trace, TraceFormat};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// `--trace FILE --trace-format F [--time-scale X] [--trace-window A..B] [--skip-bad-lines]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSpec {
    pub path: PathBuf,
    pub format: TraceFormat,
    /// Every gap multiplied by this (0.5: twice as fast).
    pub time_scale: f64,
    /// Trace seconds to start at, and to stop before.
    pub from: f64,
    pub to: Option<f64>,
    /// Leave out (and count) lines that do not read, and requests longer than the model takes.
    pub skip_bad: bool,
}

impl TraceSpec {
    pub fn new(path: PathBuf, format: TraceFormat) -> Self {
        TraceSpec {
            path,
            format,
            time_scale: 1.0,
            from: 0.0,
            to: None,
            skip_bad: false,
        }
    }
}

/// The largest trace file read.
const TRACE_MAX_BYTES: u64 = 1 << 30;

/// Reads, parses and cuts the trace: the window, the time scale, the first `--requests`.
pub fn read(spec: &LoadSpec, ts: &TraceSpec) -> Result<(Trace, Vec<String>), PlanError> {
    let conflicting = [
        (!spec.rate.is_empty(), "--rate"),
        (spec.concurrency.len() > 1, "a list of --concurrency"),
        (spec.prompt.is_some(), "--prompt"),
        (spec.prompts_file.is_some(), "--prompts"),
        (spec.input_tokens.is_some(), "--input-tokens"),
        (spec.output_tokens.is_some(), "--output-tokens"),
        (spec.max_tokens.is_some(), "--max-tokens"),
        (!spec.warmup.is_zero(), "--warmup"),
        (!spec.ramp_up.is_zero(), "--ramp-up"),
        (spec.shared_prefix.is_some(), "--shared-prefix"),
        (spec.turns.is_some(), "--turns"),
    ];
    if let Some((_, flag)) = conflicting.iter().find(|(c, _)| *c) {
        return Err(usage(format!(
            "--trace sets when requests arrive and how long they are: drop {flag} (--concurrency N caps requests in flight, --requests and --duration cut the replay)"
        )));
    }
    if !(ts.time_scale.is_finite() && ts.time_scale > 0.0) {
        return Err(usage(
            "--time-scale must be a positive factor (0.5 replays twice as fast)",
        ));
    }
    let text = llmscope_core::files::read_text_bounded(
        &ts.path,
        TRACE_MAX_BYTES,
        "a trace is read whole: cut the part to replay into a smaller file",
    )
    .map_err(|e| usage(format!("cannot read the trace {}: {e}", ts.path.display())))?;
    let parsed = trace::parse(&text, ts.format, ts.skip_bad)
        .map_err(|e| usage(format!("trace {}, {e}", ts.path.display())))?;
    let mut notes = Vec::new();
    if let Some(first) = &parsed.first_skipped {
        notes.push(format!(
            "--skip-bad-lines: {} line(s) of the trace left out (first: {first})",
            parsed.skipped
        ));
    }
    let mut cut = parsed.window(ts.from, ts.to).scaled(ts.time_scale);
    if let Some(n) = spec.requests {
        cut.requests
            .truncate(usize::try_from(n).unwrap_or(usize::MAX));
    }
    let Some(last) = cut.requests.last() else {
        return Err(usage(format!(
            "no request of the trace {} falls in --trace-window",
            ts.path.display()
        )));
    };
    if last.offset_s > trace::MAX_OFFSET_S {
        return Err(usage(format!(
            "trace {}, line {}: at --time-scale {} it would be sent {:.0} days in: shorten --trace-window or lower --time-scale",
            ts.path.display(),
            last.line,
            ts.time_scale,
            last.offset_s / 86_400.0
        )));
    }
    Ok((cut, notes))
}

/// The one stage: every request at its time, at most `--concurrency` in flight when given.
pub fn stage(spec: &LoadSpec, trace: &Trace) -> StagePlan {
    let n = trace.requests.len();
    let span = trace.requests.last().map_or(0.0, |r| r.offset_s);
    let rate = if span > 0.0 {
        n as f64 / span
    } else {
        n as f64
    };
    StagePlan {
        mode: Mode::Trace {
            rate,
            cap: spec.concurrency.first().copied(),
        },
        ramp_up: Duration::ZERO,
        warmup: Duration::ZERO,
        duration: spec.duration,
        requests: Some(n as u64),
        phase: Duration::ZERO,
    }
}

/// Resolves a trace replay: the server, the fitted prompts, a body per request.
pub async fn resolve(spec: &LoadSpec, ts: &TraceSpec) -> Result<LoadPlan, PlanError> {
    let (mut trace, mut notes) = read(spec, ts)?;
    let (target, headers) = target_and_headers(spec)?;
    let server = Server::find(spec, target, &headers).await?;
    let meter = Meter::detect(&server.client, &server.target, &server.model, spec.endpoint).await;
    let sample: Vec<u32> = trace
        .requests
        .iter()
        .take(256)
        .map(|r| r.input_tokens.max(1))
        .collect();
    let calibrated = calibrate::calibrate(&meter, &sample, spec.seed).await;
    let fit = calibrated.as_ref().map_or(TokenFit::WORDS, |c| c.fit);
    if calibrated.is_none() {
        notes.push("the server would not count prompts: the trace's input lengths are in words, which its tokenizer may count differently".into());
    }
    let max_len = calibrated.and_then(|c| c.max_model_len).or(server.card_len);
    drop_too_long(&mut trace, max_len, ts, &mut notes)?;
    // Blocks repeat across the whole trace, whichever shard sends the earlier request: the
    // server caches them all the same.
    let mut repeated = repeated_blocks(&trace);
    let whole = stage(spec, &trace);
    let shard = shard_rows(spec, &mut trace, repeated.as_mut())?;
    let stage = match shard {
        Some(s) => crate::shard::split(&s, &[stage(spec, &trace)])?.remove(0),
        None => stage(spec, &trace),
    };
    let mut opts = body_options(spec, &server, &mut notes);
    opts.ignore_eos = server.vllm;
    if !server.vllm {
        notes.push("the server does not look like vLLM: sending each request's output length as max_tokens without ignore_eos, so answers may end early".into());
    }
    let bodies = trace
        .requests
        .iter()
        .map(|r| {
            let prompt = if r.hash_ids.is_empty() {
                prompts::synthetic_fit(&[r.input_tokens.max(1)], fit, spec.seed ^ r.line as u64)
                    .remove(0)
            } else {
                prompts::blocks(
                    &r.hash_ids,
                    r.input_tokens,
                    trace::MOONCAKE_BLOCK_TOKENS,
                    fit,
                )
            };
            opts.max_tokens = Some(r.output_tokens.max(1));
            prompts::build_body(&prompt, &opts)
        })
        .collect::<Vec<_>>();
    let offsets: Arc<[Duration]> = trace.offsets().into();
    let mut plan = super::plan_with(spec, vec![stage], server, bodies.into(), notes);
    plan.shard = shard.map(|shard| ShardPlan {
        shard,
        start_at: spec.start_at,
        whole: vec![WholeStage::of(&whole)],
        server_clock_offset_ms: None,
    });
    super::read_server_clock(&mut plan).await;
    plan.trace = Some(offsets);
    plan.reuse.trace_blocks = repeated.is_some();
    plan.trace_repeated = repeated.map(Into::into);
    Ok(plan)
}

/// Keeps shard `spec.shard`'s rows of the trace (every N-th, at their own times) and their
/// repeated tokens; the shard, when the load is sharded (or only held to `--start-at`).
fn shard_rows(
    spec: &LoadSpec,
    trace: &mut Trace,
    repeated: Option<&mut Vec<u32>>,
) -> Result<Option<Shard>, PlanError> {
    if spec.shard.is_none() && spec.start_at.is_none() {
        return Ok(None);
    }
    let shard = spec.shard.unwrap_or_default();
    if trace.requests.len() < shard.count as usize {
        return Err(usage(format!(
            "the trace keeps {} requests to replay: too few for {} shards",
            trace.requests.len(),
            shard.count
        )));
    }
    deal(&shard, &mut trace.requests);
    if let Some(r) = repeated {
        deal(&shard, r);
    }
    Ok(Some(shard))
}

/// Keeps the items of `v` dealt to `shard` (item k when k mod N is its index), in order.
fn deal<T>(shard: &Shard, v: &mut Vec<T>) {
    let mut k = 0;
    v.retain(|_| {
        k += 1;
        shard.takes(k - 1)
    });
}

/// Prompt tokens each request repeats from an earlier one, in the trace's order: its leading
/// blocks (Mooncake `hash_ids`) that an earlier request already sent. Only full blocks count (a
/// prompt's last block is cut to its length, so its text is its own); `None` when the trace has
/// no block ids.
pub fn repeated_blocks(trace: &Trace) -> Option<Vec<u32>> {
    if trace.requests.iter().all(|r| r.hash_ids.is_empty()) {
        return None;
    }
    let mut seen = std::collections::HashSet::new();
    let repeated = trace
        .requests
        .iter()
        .map(|r| {
            let full = r.hash_ids.len().saturating_sub(1);
            let shared = r.hash_ids[..full]
                .iter()
                .take_while(|id| seen.contains(*id))
                .count() as u32;
            seen.extend(r.hash_ids.iter().copied());
            (shared * trace::MOONCAKE_BLOCK_TOKENS).min(r.input_tokens)
        })
        .collect();
    Some(repeated)
}

/// Requests whose prompt and answer exceed the model's context: an error naming the first, or,
/// with `--skip-bad-lines`, left out and counted.
fn drop_too_long(
    trace: &mut Trace,
    max_len: Option<u32>,
    ts: &TraceSpec,
    notes: &mut Vec<String>,
) -> Result<(), PlanError> {
    let Some(max_len) = max_len else {
        return Ok(());
    };
    let fits = |r: &trace::TraceRequest| r.input_tokens.saturating_add(r.output_tokens) <= max_len;
    let Some(first) = trace.requests.iter().find(|r| !fits(r)) else {
        return Ok(());
    };
    let why = format!(
        "trace {}, line {}: {} input + {} output tokens exceed the model's max_model_len {max_len}",
        ts.path.display(),
        first.line,
        first.input_tokens,
        first.output_tokens
    );
    if !ts.skip_bad {
        return Err(usage(format!(
            "{why}: the server would reject it. Serve a longer context, or pass --skip-bad-lines to leave such requests out"
        )));
    }
    let before = trace.requests.len();
    trace.requests.retain(fits);
    notes.push(format!(
        "--skip-bad-lines: {} request(s) longer than max_model_len {max_len} left out (first: {why})",
        before - trace.requests.len()
    ));
    if trace.requests.is_empty() {
        return Err(usage(format!(
            "{why}, and so does every other request of the window"
        )));
    }
    Ok(())
}
