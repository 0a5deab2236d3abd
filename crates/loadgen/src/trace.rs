//! Request traces to replay (issue 27, point 1): when each request arrives, how long its prompt
//! and its answer are, and — in Mooncake's traces — which prompt blocks it shares with others.
//!
//! Data flow: a trace file's text → [`parse`] (one [`TraceRequest`] per line, in time order, or an
//! error naming the line) → [`Trace::window`] / [`Trace::scaled`] (a slice of it, faster or
//! slower) → the plan builds one body per request and hands the driver the offsets to send at.
//! Pure: no clock, no I/O.
//!
//! Formats (`--trace-format`), as their publishers write them:
//! - `mooncake`: JSON lines `{"timestamp": ms, "input_length", "output_length", "hash_ids": [...]}`
//!   (kvcache-ai/Mooncake's traces; each hash id names a 512-token block of the prompt).
//! - `burstgpt`: CSV `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`,
//!   timestamps in seconds (HPMLL/BurstGPT).
//! - `azure`: CSV `TIMESTAMP,ContextTokens,GeneratedTokens`, timestamps as UTC date-times
//!   (Azure/AzurePublicDataset's LLM inference traces).
//! - `jsonl`: llmscope's own, JSON lines `{"timestamp": seconds, "input_tokens", "output_tokens"}`
//!   with optional `hash_ids`.
//!
//! Offsets are from the first request: a trace may start at any time of day.

use serde_json::{Map, Value};
use std::time::Duration;

/// A trace file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TraceFormat {
    Mooncake,
    Burstgpt,
    Azure,
    Jsonl,
}

impl TraceFormat {
    fn name(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::Burstgpt => "burstgpt",
            TraceFormat::Azure => "azure",
            TraceFormat::Jsonl => "jsonl",
        }
    }

    /// A CSV format's columns: the time, the input and output token counts, and every column its
    /// files may have (BurstGPT 2.0 added `Session ID` and `Elapsed time`).
    fn columns(self) -> Option<([&'static str; 3], &'static [&'static str])> {
        match self {
            TraceFormat::Burstgpt => Some((
                ["Timestamp", "Request tokens", "Response tokens"],
                &[
                    "Timestamp",
                    "Session ID",
                    "Elapsed time",
                    "Model",
                    "Request tokens",
                    "Response tokens",
                    "Total tokens",
                    "Log Type",
                ],
            )),
            TraceFormat::Azure => Some((
                ["TIMESTAMP", "ContextTokens", "GeneratedTokens"],
                &["TIMESTAMP", "ContextTokens", "GeneratedTokens"],
            )),
            TraceFormat::Mooncake | TraceFormat::Jsonl => None,
        }
    }
}

/// The latest a request may come, in seconds after the first (about three years): a time beyond
/// it is a wrong unit or a wrong column, and no replay runs that long.
pub const MAX_OFFSET_S: f64 = 1e8;

/// The most tokens a trace request may ask for, prompt or answer: 2²¹ (2,097,152), past any
/// context a served model holds. A count beyond it is a wrong column or unit, and building its
/// prompt would take gigabytes (a line asking for 3,000,000,000 prompt tokens aborted `load`
/// allocating 24 GB, issue 50): it is a bad line, named with its number.
pub const MAX_REQUEST_TOKENS: u32 = 1 << 21;

/// Tokens per Mooncake hash block.
pub const MOONCAKE_BLOCK_TOKENS: u32 = 512;

/// One request of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// Seconds after the trace's first request.
    pub offset_s: f64,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// The prompt's blocks, by id: requests that share an id share that block of prompt.
    pub hash_ids: Vec<u64>,
    /// 1-based line in the file.
    pub line: usize,
}

/// A parsed trace, in time order.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub requests: Vec<TraceRequest>,
    /// Bad lines left out (only with `skip_bad`), and the first of them.
    pub skipped: usize,
    pub first_skipped: Option<TraceError>,
}

/// A bad line: where, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {why}")]
pub struct TraceError {
    pub line: usize,
    pub why: String,
}

fn bad(line: usize, why: impl Into<String>) -> TraceError {
    TraceError {
        line,
        why: why.into(),
    }
}

/// Parses `text` as `format`. A line that does not read is an error naming it, or, with
/// `skip_bad`, left out and counted. Timestamps must not go back: a trace out of order is an
/// error whatever `skip_bad` says (replaying it would reorder it silently).
pub fn parse(text: &str, format: TraceFormat, skip_bad: bool) -> Result<Trace, TraceError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let csv = match format.columns() {
        Some(_) => Some(read_header(&mut lines, format)?),
        None => None,
    };
    let mut trace = Trace {
        requests: Vec::new(),
        skipped: 0,
        first_skipped: None,
    };
    let mut first: Option<f64> = None;
    let mut last: Option<(f64, usize)> = None;
    for (n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let read = match &csv {
            None => json_line(line, format),
            Some(columns) => csv_line(line, format, columns),
        };
        let (at, input, output, hash_ids) = match read {
            Ok(r) => r,
            Err(why) if skip_bad => {
                trace.skipped += 1;
                trace.first_skipped.get_or_insert(bad(n, why));
                continue;
            }
            Err(why) => return Err(bad(n, why)),
        };
        if let Some((prev, prev_line)) = last
            && at < prev
        {
            return Err(bad(
                n,
                format!(
                    "its timestamp goes back before line {prev_line}'s: a trace is replayed in the order of its timestamps, so sort it first"
                ),
            ));
        }
        last = Some((at, n));
        let start = *first.get_or_insert(at);
        if at - start > MAX_OFFSET_S {
            return Err(bad(
                n,
                format!(
                    "it comes {:.0} days after the first request: is --trace-format right (its time unit)?",
                    (at - start) / 86_400.0
                ),
            ));
        }
        trace.requests.push(TraceRequest {
            offset_s: at - start,
            input_tokens: input,
            output_tokens: output,
            hash_ids,
            line: n,
        });
    }
    if trace.requests.is_empty() {
        let end = text.lines().count().max(1);
        return Err(bad(
            end,
            format!(
                "the trace ends without a request (read as {})",
                format.name()
            ),
        ));
    }
    Ok(trace)
}

/// Where a CSV trace keeps what is read of it: the time, input and output columns, and how many.
#[derive(Debug)]
struct Columns {
    at: [usize; 3],
    names: Vec<String>,
}

/// The first line, a CSV header with the format's three columns and no column it does not know.
fn read_header<'a>(
    lines: &mut impl Iterator<Item = (usize, &'a str)>,
    format: TraceFormat,
) -> Result<Columns, TraceError> {
    let (wanted, known) = format.columns().unwrap_or((["", "", ""], &[]));
    let Some((n, head)) = lines.next() else {
        return Err(bad(1, "the file is empty"));
    };
    let names: Vec<String> = head.split(',').map(|c| c.trim().to_owned()).collect();
    let hint = format!(
        "a {} trace's header is `{}`: is --trace-format right?",
        format.name(),
        known.join(",")
    );
    if let Some(c) = names.iter().find(|c| !known.contains(&c.as_str())) {
        return Err(bad(n, format!("unknown column `{c}`; {hint}")));
    }
    let mut at = [0; 3];
    for (slot, want) in at.iter_mut().zip(wanted) {
        *slot = names
            .iter()
            .position(|c| c == want)
            .ok_or_else(|| bad(n, format!("no `{want}` column; {hint}")))?;
    }
    Ok(Columns { at, names })
}

type Row = (f64, u32, u32, Vec<u64>);

/// One JSON line: Mooncake's (milliseconds) or llmscope's (seconds). Unknown fields are refused.
fn json_line(line: &str, format: TraceFormat) -> Result<Row, String> {
    let v: Value = serde_json::from_str(line)
        .map_err(|e| format!("not a JSON object ({e}); a truncated last line?"))?;
    let Value::Object(o) = v else {
        return Err("not a JSON object".into());
    };
    let (input, output, scale) = match format {
        TraceFormat::Mooncake => ("input_length", "output_length", 1e-3),
        _ => ("input_tokens", "output_tokens", 1.0),
    };
    let known = ["timestamp", input, output, "hash_ids"];
    if let Some(k) = o.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!(
            "unknown field `{k}` (a {} line has {})",
            format.name(),
            known.join(", ")
        ));
    }
    let at = number(&o, "timestamp")? * scale;
    let hash_ids = match o.get("hash_ids") {
        None => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|i| {
                i.as_u64()
                    .ok_or("`hash_ids` holds a value that is no block id")
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`hash_ids` is not a list".into()),
    };
    Ok((at, count(&o, input)?, count(&o, output)?, hash_ids))
}

fn number(o: &Map<String, Value>, key: &str) -> Result<f64, String> {
    let v = o
        .get(key)
        .ok_or_else(|| format!("no `{key}`"))?
        .as_f64()
        .ok_or_else(|| format!("`{key}` is not a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{key}` is {v}: a time must be 0 or more"));
    }
    Ok(v)
}

fn count(o: &Map<String, Value>, key: &str) -> Result<u32, String> {
    let v = o.get(key).ok_or_else(|| format!("no `{key}`"))?;
    let n = v
        .as_u64()
        .ok_or_else(|| format!("`{key}` is {v}, not a token count"))?;
    bounded(n, &format!("`{key}`"))
}

/// A token count within [`MAX_REQUEST_TOKENS`], or why not.
fn bounded(n: u64, what: &str) -> Result<u32, String> {
    u32::try_from(n)
        .ok()
        .filter(|&n| n <= MAX_REQUEST_TOKENS)
        .ok_or_else(|| {
            format!(
                "{what} is {n} tokens, more than the {} a trace request may ask for (a wrong column or unit?)",
                llmscope_core::number::thousands(f64::from(MAX_REQUEST_TOKENS))
            )
        })
}

/// One CSV row of BurstGPT or Azure.
fn csv_line(line: &str, format: TraceFormat, columns: &Columns) -> Result<Row, String> {
    let cells: Vec<&str> = line.split(',').map(str::trim).collect();
    if cells.len() != columns.names.len() {
        return Err(format!(
            "{} cells where the header has {}; a truncated last line?",
            cells.len(),
            columns.names.len()
        ));
    }
    let [t, i, o] = columns.at;
    let tokens = |k: usize| -> Result<u32, String> {
        let n = cells[k]
            .parse::<u64>()
            .map_err(|_| format!("`{}` ({}) is not a token count", cells[k], columns.names[k]))?;
        bounded(n, &format!("`{}`", columns.names[k]))
    };
    let at = match format {
        TraceFormat::Azure => llmscope_core::time::datetime_utc(cells[t]).ok_or_else(|| {
            format!(
                "`{}` is not a date-time like 2023-11-16 18:15:46.6805900",
                cells[t]
            )
        })?,
        _ => cells[t]
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("`{}` is not a time in seconds (0 or more)", cells[t]))?,
    };
    Ok((at, tokens(i)?, tokens(o)?, Vec::new()))
}

impl Trace {
    /// The requests from `from` to before `to` (seconds of the trace), their offsets from `from`.
    pub fn window(mut self, from: f64, to: Option<f64>) -> Trace {
        self.requests
            .retain(|r| r.offset_s >= from && to.is_none_or(|t| r.offset_s < t));
        for r in &mut self.requests {
            r.offset_s -= from;
        }
        self
    }

    /// Every gap multiplied by `factor` (0.5: twice as fast).
    pub fn scaled(mut self, factor: f64) -> Trace {
        for r in &mut self.requests {
            r.offset_s *= factor;
        }
        self
    }

    /// When each request is sent, from the stage start.
    pub fn offsets(&self) -> Vec<Duration> {
        self.requests
            .iter()
            .map(|r| Duration::from_secs_f64(r.offset_s))
            .collect()
    }

    /// The longest prompt plus answer, for the server's `max_model_len`.
    pub fn longest(&self) -> Option<(u32, u32)> {
        self.requests
            .iter()
            .map(|r| (r.input_tokens, r.output_tokens))
            .max_by_key(|(i, o)| i + o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mooncake_lines_in_milliseconds_with_their_blocks() {
        let text = "{\"timestamp\": 27482, \"input_length\": 6955, \"output_length\": 52, \"hash_ids\": [46, 47, 48]}\n{\"timestamp\": 30535, \"input_length\": 6472, \"output_length\": 26, \"hash_ids\": [46, 52]}\n";
        let t = parse(text, TraceFormat::Mooncake, false).unwrap();
        assert_eq!(t.requests.len(), 2);
        assert_eq!(t.requests[0].offset_s, 0.0);
        assert!((t.requests[1].offset_s - 3.053).abs() < 1e-9);
        assert_eq!(
            (t.requests[1].input_tokens, t.requests[1].output_tokens),
            (6472, 26)
        );
        assert_eq!(t.requests[1].hash_ids, [46, 52]);
    }

    #[test]
    fn burstgpt_and_azure_csv() {
        let b = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT,1087,0,1087,Conversation log\n";
        let t = parse(b, TraceFormat::Burstgpt, false).unwrap();
        assert_eq!(t.requests[1].offset_s, 40.0);
        assert_eq!(
            (t.requests[0].input_tokens, t.requests[1].output_tokens),
            (472, 0)
        );
        let a = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n";
        let t = parse(a, TraceFormat::Azure, false).unwrap();
        assert!((t.requests[1].offset_s - 4.314579).abs() < 1e-6);
        assert_eq!(t.requests[1].input_tokens, 396);
        // A count past the bound is a bad line in CSV too: named, or skipped and counted.
        let huge = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,3000000000,109\n";
        let e = parse(huge, TraceFormat::Azure, false).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.why.contains("`ContextTokens` is 3000000000 tokens"),
            "{e}"
        );
        let t = parse(huge, TraceFormat::Azure, true).unwrap();
        assert_eq!((t.requests.len(), t.skipped), (1, 1));
    }

    #[test]
    fn bad_lines_are_named_or_skipped_and_counted() {
        let text = "{\"timestamp\": 1, \"input_tokens\": 3, \"output_tokens\": 4}\n{\"timestamp\": 2, \"input_tok";
        let e = parse(text, TraceFormat::Jsonl, false).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.why.contains("truncated"), "{e}");
        let t = parse(text, TraceFormat::Jsonl, true).unwrap();
        assert_eq!((t.requests.len(), t.skipped), (1, 1));
        assert_eq!(t.first_skipped.unwrap().line, 2);
        for (line, says) in [
            (
                "{\"timestamp\": -1, \"input_tokens\": 3, \"output_tokens\": 4}",
                "0 or more",
            ),
            (
                "{\"timestamp\": 1, \"input_tokens\": 3, \"output_tokens\": 4, \"x\": 1}",
                "unknown field `x`",
            ),
            (
                "{\"timestamp\": 1, \"input_tokens\": 3.5, \"output_tokens\": 4}",
                "not a token count",
            ),
            (
                "{\"timestamp\": 1, \"output_tokens\": 4}",
                "no `input_tokens`",
            ),
            // Issue 50: 3,000,000,000 prompt tokens aborted the process building the prompt.
            (
                "{\"timestamp\": 1, \"input_tokens\": 3000000000, \"output_tokens\": 4}",
                "`input_tokens` is 3000000000 tokens, more than the 2,097,152",
            ),
            (
                "{\"timestamp\": 1, \"input_tokens\": 3, \"output_tokens\": 99999999999999}",
                "`output_tokens` is 99999999999999 tokens",
            ),
        ] {
            let e = parse(line, TraceFormat::Jsonl, false).unwrap_err();
            assert!(e.to_string().contains(says), "{line}: {e}");
        }
    }

    #[test]
    fn times_in_the_wrong_unit_and_empty_traces_are_named() {
        // Mooncake's milliseconds read as llmscope's seconds: four years after the first.
        let text = "{\"timestamp\": 0, \"input_tokens\": 3, \"output_tokens\": 4}\n{\"timestamp\": 126230400, \"input_tokens\": 3, \"output_tokens\": 4}\n";
        let e = parse(text, TraceFormat::Jsonl, false).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.why.contains("1461 days") && e.why.contains("--trace-format"),
            "{e}"
        );
        let e = parse("\n\n", TraceFormat::Jsonl, false).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.why.contains("without a request"), "{e}");
    }

    #[test]
    fn a_trace_out_of_order_is_refused_even_when_skipping() {
        let text = "{\"timestamp\": 5, \"input_tokens\": 3, \"output_tokens\": 4}\n{\"timestamp\": 2, \"input_tokens\": 3, \"output_tokens\": 4}\n";
        for skip in [false, true] {
            let e = parse(text, TraceFormat::Jsonl, skip).unwrap_err();
            assert_eq!(e.line, 2);
            assert!(e.why.contains("before line 1"), "{e}");
        }
    }

    #[test]
    fn a_wrong_header_names_the_format() {
        let e = parse(
            "TIMESTAMP,ContextTokens,GeneratedTokens\n",
            TraceFormat::Burstgpt,
            false,
        )
        .unwrap_err();
        assert_eq!(e.line, 1);
        assert!(
            e.why.contains("unknown column `TIMESTAMP`") && e.why.contains("--trace-format"),
            "{e}"
        );
        // BurstGPT 2.0's two more columns are known.
        let v2 = "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n0.5,7,0,ChatGPT,10,20,30,Conversation log\n";
        let t = parse(v2, TraceFormat::Burstgpt, false).unwrap();
        assert_eq!(
            (t.requests[0].input_tokens, t.requests[0].output_tokens),
            (10, 20)
        );
        let e = parse(
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472\n",
            TraceFormat::Burstgpt,
            false,
        )
        .unwrap_err();
        assert!(e.why.contains("3 cells"), "{e}");
    }

    #[test]
    fn windows_and_time_scale() {
        let text = (0..10)
            .map(|i| format!("{{\"timestamp\": {i}, \"input_tokens\": 1, \"output_tokens\": 1}}"))
            .collect::<Vec<_>>()
            .join("\n");
        let t = parse(&text, TraceFormat::Jsonl, false).unwrap();
        let w = t.clone().window(3.0, Some(6.0));
        let at: Vec<f64> = w.requests.iter().map(|r| r.offset_s).collect();
        assert_eq!(at, [0.0, 1.0, 2.0]);
        assert_eq!(w.requests[0].line, 4);
        let fast = t.scaled(0.5);
        assert_eq!(fast.offsets()[9], Duration::from_millis(4500));
    }
}
