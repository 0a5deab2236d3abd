//! The human summary of a [`LoadReport`], written to any `impl Write` (the CLI passes stdout).
//! What the server said (model name, error bodies, why a run stopped) is outside text: it is
//! shown through [`clean`] (secrets redacted, control characters escaped; issue 17).

use crate::merge::ShardsReport;
use crate::report::{LoadReport, StageReport, Summary};
use llmscope_core::number::thousands;
use llmscope_core::safe::clean;
use std::io::{self, Write};

/// Writes the summary table: one block per stage, then the total when there are several.
pub fn write_summary(r: &LoadReport, w: &mut impl Write) -> io::Result<()> {
    write_header(r, w)?;
    let n = r.stages.len();
    for s in &r.stages {
        writeln!(w)?;
        let idx = s.stage.map_or(0, |i| i + 1);
        writeln!(w, "stage {idx}/{n}: {} ({:.1} s)", s.label, s.duration_s)?;
        write_stage(s, w)?;
    }
    if n > 1 {
        writeln!(w)?;
        writeln!(w, "{} ({:.1} s)", r.total.label, r.total.duration_s)?;
        write_stage(&r.total, w)?;
    }
    if let Some(shards) = &r.shards {
        write_shards(shards, w)?;
    }
    Ok(())
}

/// A merged report's shards: each one's figures, what did not agree, the records check.
fn write_shards(s: &ShardsReport, w: &mut impl Write) -> io::Result<()> {
    writeln!(w)?;
    writeln!(w, "merged from {} shards", s.count)?;
    for f in &s.shards {
        let late = f.late_ms.map_or(String::new(), |ms| {
            format!("  began {ms:.0} ms after --start-at")
        });
        let load = match (f.load_target, f.load_achieved) {
            (Some(t), Some(a)) => format!("  load {a:.2} of {t:.2} {}", f.load_unit),
            _ => String::new(),
        };
        let clock = f.server_clock_offset_ms.map_or(String::new(), |ms| {
            format!("  server clock {:+.1} s", ms / 1e3)
        });
        let limited = if f.client_limited {
            "  CLIENT-LIMITED"
        } else {
            ""
        };
        writeln!(
            w,
            "  shard {}/{}  sent {}  completed {}  {} output tok/s{load}{late}{clock}{limited}",
            f.index,
            s.count,
            f.requests.sent,
            f.requests.completed,
            thousands(f.output_tokens_per_s)
        )?;
    }
    let spread: Vec<String> = s
        .stage_start_spread_ms
        .iter()
        .map(|ms| format!("{ms:.0} ms"))
        .collect();
    writeln!(
        w,
        "  stages began within {} of each other",
        spread.join(", ")
    )?;
    for p in &s.problems {
        writeln!(w, "  disagreement: {}", clean(p))?;
    }
    if let Some(c) = &s.records {
        let off: Vec<String> = c
            .percentiles
            .iter()
            .filter(|p| !p.agree)
            .map(|p| {
                format!(
                    "{} p{}: histogram {} ms, records {} ms",
                    p.metric,
                    p.quantile * 100.0,
                    ms(p.histogram_ms),
                    ms(p.records_ms)
                )
            })
            .collect();
        let verdict = if c.agree {
            format!(
                "{} percentiles agree with the records at the histograms' precision",
                c.percentiles.len()
            )
        } else if off.is_empty() {
            "the record counts differ from the merged counts".to_owned()
        } else {
            format!("DISAGREE: {}", off.join("; "))
        };
        writeln!(
            w,
            "  records     {} read from {} files ({} measured, {} completed): {verdict}",
            c.records, c.files, c.measured, c.completed
        )?;
    }
    Ok(())
}

/// Target, model and endpoint, and whether the run stopped early or was interrupted.
fn write_header(r: &LoadReport, w: &mut impl Write) -> io::Result<()> {
    let mode = if r.stream {
        "streaming"
    } else {
        "not streaming"
    };
    writeln!(
        w,
        "target  {}  model {}  {} ({mode})",
        clean(&r.target),
        clean(&r.model),
        r.endpoint
    )?;
    if let Some(sh) = r.shard.as_ref().filter(|s| s.count > 1) {
        let late = sh.late_ms.map_or(String::new(), |ms| {
            format!(", began {ms:.0} ms after --start-at")
        });
        writeln!(
            w,
            "shard   {}/{} of a sharded load{late}: merge the shards with `llmscope merge`",
            sh.index, sh.count
        )?;
    }
    if let Some(why) = &r.stopped_early {
        writeln!(w, "stopped early: {}", clean(why))?;
    }
    if r.interrupted {
        writeln!(
            w,
            "interrupted: the figures cover the requests that completed"
        )?;
    }
    Ok(())
}

fn write_stage(s: &StageReport, w: &mut impl Write) -> io::Result<()> {
    write_requests(s, w)?;
    write_failures(s, w)?;
    write_latencies(s, w)?;
    write_throughput(s, w)?;
    write_tokens(s, w)?;
    write_load(s, w)?;
    write_goodput(s, w)?;
    write_timing(s, w)?;
    write_client(s, w)
}

/// Sent, completed and failed (by kind), and the warmup requests left out.
fn write_requests(s: &StageReport, w: &mut impl Write) -> io::Result<()> {
    let q = &s.requests;
    let errors: Vec<String> = s.errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let errors = if errors.is_empty() {
        String::new()
    } else {
        format!("  ({})", errors.join(", "))
    };
    let warm = if q.warmup > 0 {
        format!("  (+{} warmup)", q.warmup)
    } else {
        String::new()
    };
    writeln!(
        w,
        "  requests    sent {}  completed {}  failed {}{errors}{warm}",
        q.sent, q.completed, q.failed
    )
}

fn write_throughput(s: &StageReport, w: &mut impl Write) -> io::Result<()> {
    let t = &s.throughput;
    writeln!(
        w,
        "  throughput  {:.2} req/s  {} output tok/s  {} total tok/s  over {:.1} s",
        t.requests_per_s,
        thousands(t.output_tokens_per_s),
        thousands(t.total_tokens_per_s),
        t.window_s
    )?;
    if let Some(sending) = t.sending_output_tokens_per_s {
        writeln!(
            w,
            "              {} output tok/s while sending (drain excluded)",
            thousands(sending)
        )?;
    }
    Ok(())
}

/// Requests that met `--slo`, when one was given.
fn write_goodput(s: &StageReport, w: &mut impl Write) -> io::Result<()> {
    if let Some(g) = &s.goodput {
        let pct = g
            .fraction
            .map_or("-".into(), |f| format!("{:.1}%", f * 100.0));
        writeln!(
            w,
            "  goodput     {} good ({pct})  {:.2} req/s",
            g.good, g.requests_per_s
        )?;
    }
    Ok(())
}

/// First-token delivery against the server's emit stamps, when it sent them.
fn write_timing(s: &StageReport, w: &mut impl Write) -> io::Result<()> {
    if let Some(t) = &s.timing {
        let d = &t.first_token_delivery_ms;
        writeln!(
            w,
            "  timing      first token arrived after server emit: p50 {} ms  p99 {} ms  max {} ms",
            ms(d.p50),
            ms(d.p99),
            ms(d.max)
        )?;
    }
    Ok(())
}

/// Whether the client kept up, with its event-loop lag and late first-token reads.
fn write_client(s: &StageReport, w: &mut impl Write) -> io::Result<()> {
    let c = &s.client;
    let lag = match c.event_loop_lag_ms.p99 {
        Some(p99) if !c.verdict.contains("event-loop lag") => {
            format!("; event-loop lag p99 {} ms", ms(Some(p99)))
        }
        _ => String::new(),
    };
    let behind = match c.first_tokens_read_behind {
        0 => String::new(),
        n => format!("; {n} first tokens read behind queued data (stamps may be late)"),
    };
    writeln!(w, "  client      {}{lag}{behind}", c.verdict)
}

fn write_latencies(s: &StageReport, w: &mut impl Write) -> io::Result<()> {
    let l = &s.latency_ms;
    writeln!(
        w,
        "  latency ms  {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "p50", "p90", "p95", "p99", "p99.9", "mean"
    )?;
    for (name, v) in latency_rows(s).into_iter().filter(|(_, v)| v.count > 0) {
        writeln!(
            w,
            "    {name:<8}  {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            ms(v.p50),
            ms(v.p90),
            ms(v.p95),
            ms(v.p99),
            ms(v.p999),
            ms(v.mean)
        )?;
    }
    if l.ttft_from_schedule.is_some() {
        writeln!(
            w,
            "    (* from the intended send time; lag = actual − intended send)"
        )?;
    }
    Ok(())
}

/// The latency rows: measured from the actual send, then (open loop) from the intended one.
fn latency_rows(s: &StageReport) -> Vec<(&str, &Summary)> {
    let l = &s.latency_ms;
    let mut rows: Vec<(&str, &Summary)> = vec![
        ("TTFT", &l.ttft),
        ("TTFO", &l.ttfo),
        ("ITL", &l.itl),
        ("TPOT", &l.tpot),
        ("e2e", &l.e2e),
    ];
    if let (Some(t), Some(e)) = (&l.ttft_from_schedule, &l.e2e_from_schedule) {
        rows.push(("TTFT*", t));
        rows.push(("e2e*", e));
    }
    if let Some(lag) = &s.load.schedule_lag_ms {
        rows.push(("lag*", lag));
    }
    rows
}

fn write_tokens(s: &StageReport, w: &mut impl Write) -> io::Result<()> {
    let t = &s.tokens;
    let mismatch = match t.mismatch_pct {
        Some(p) => format!(
            "; usage vs counted chunks: {} requests differ ({p:.2}%)",
            t.mismatched_requests
        ),
        None => String::new(),
    };
    let mean = t
        .prompt_mean
        .map_or(String::new(), |m| format!(" (mean {m:.1} per request)"));
    writeln!(
        w,
        "  tokens      prompt {}{mean}  output {}{mismatch}",
        thousands(t.prompt as f64),
        thousands(t.output as f64)
    )
}

/// Each error kind with the server's own words.
fn write_failures(s: &StageReport, w: &mut impl Write) -> io::Result<()> {
    for (kind, f) in &s.failures {
        writeln!(w, "  failed      {kind} × {}", f.count)?;
        for b in &f.bodies {
            writeln!(w, "                server said: {}", clean(b))?;
        }
    }
    Ok(())
}

fn write_load(s: &StageReport, w: &mut impl Write) -> io::Result<()> {
    let l = &s.load;
    let reach = match (l.target, l.achieved) {
        (Some(t), Some(a)) => format!("target {t} {}, achieved {a:.1}", l.unit.replace('_', " ")),
        _ => format!("mode {}", l.mode),
    };
    writeln!(
        w,
        "  load        {reach}  (mean in flight {:.1}, peak {}, sent {:.2}/s)",
        l.mean_concurrency, l.peak_concurrency, l.send_rate
    )
}

fn ms(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v >= 1.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.3}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::StageReport;

    #[test]
    fn formats_numbers() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(
            (
                ms(None),
                ms(Some(0.1234)),
                ms(Some(12.34)),
                ms(Some(1234.5))
            ),
            ("-".into(), "0.123".into(), "12.3".into(), "1234".into())
        );
    }

    #[test]
    fn writes_every_section() {
        let mut r = LoadReport {
            target: "http://x:1".into(),
            model: "m".into(),
            ..Default::default()
        };
        let stage = StageReport {
            stage: Some(0),
            label: "closed-loop, concurrency 2".into(),
            ..Default::default()
        };
        r.stages = vec![
            stage.clone(),
            StageReport {
                stage: Some(1),
                ..stage
            },
        ];
        let mut out = Vec::new();
        write_summary(&r, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for want in [
            "target  http://x:1",
            "stage 1/2",
            "stage 2/2",
            "requests    sent 0",
            "throughput",
            "client",
        ] {
            assert!(text.contains(want), "{want}:\n{text}");
        }
    }
}
