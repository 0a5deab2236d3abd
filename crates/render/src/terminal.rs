//! The terminal report: verdict first, then why, then the numbers. Text that came from outside
//! (context lines, findings, the server's words) goes through `safe::clean` (issue 17).

use crate::{Report, client_rows, failures, num, rel, t0};
use llmscope_core::client::ClientSummary;
use llmscope_core::diagnose::DECISION_TABLE;
use llmscope_core::safe::clean;
use std::io::{self, Write};

/// Writes the report; `color` adds ANSI emphasis for a terminal.
pub fn write(r: &Report, out: &mut impl Write, color: bool) -> io::Result<()> {
    let d = r.diagnosis;
    let (b, e) = if color {
        ("\x1b[1m", "\x1b[0m")
    } else {
        ("", "")
    };
    writeln!(out, "{b}{}{e}", r.title)?;
    if r.simulated {
        writeln!(out, "(simulated stack: llmscope sim, not real hardware)")?;
    }
    for line in &r.context {
        writeln!(out, "  {}", clean(line))?;
    }
    if let Some(i) = &r.interrupted {
        writeln!(out, "\n{b}Run {}{e}", i.warning())?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{b}Verdict: {}{e} (confidence {:.0}%)",
        d.verdict.bottleneck.as_str(),
        d.verdict.confidence * 100.0
    )?;
    writeln!(out, "  {}", d.verdict.summary)?;
    if !d.recommendations.is_empty() {
        writeln!(out, "\n{b}What to change{e}")?;
        for (i, rec) in d.recommendations.iter().enumerate() {
            writeln!(out, "  {}. {}\n     why: {}", i + 1, rec.action, rec.reason)?;
        }
    }
    if let Some((head, kinds)) = failures(r) {
        writeln!(out, "\n{b}Failed requests{e}\n  {head}")?;
        for (kind, bodies) in kinds {
            writeln!(out, "  {kind}")?;
            for body in bodies {
                writeln!(out, "    server said: {}", clean(body))?;
            }
        }
    }
    let zero = t0(r);
    if !d.evidence.is_empty() {
        writeln!(out, "\n{b}Evidence{e}")?;
        for ev in &d.evidence {
            let test = match ev.threshold {
                Some(t) if !ev.test.is_empty() => format!(" {} {}", ev.test, num(t)),
                _ => String::new(),
            };
            writeln!(
                out,
                "  {} {} = {}{test}   [{}]",
                ev.signal,
                ev.statistic,
                num(ev.value),
                ev.source
            )?;
        }
    }
    let others: Vec<_> = d
        .findings
        .iter()
        .skip(usize::from(d.findings.first().is_some_and(|f| {
            f.bottleneck.is_some() && f.bottleneck == Some(d.verdict.bottleneck)
        })))
        .collect();
    if !others.is_empty() {
        writeln!(out, "\n{b}Other findings{e}")?;
        for f in others {
            writeln!(
                out,
                "  [{:?}] {}: {}",
                f.severity,
                f.rule,
                clean(&f.message)
            )?;
        }
    }
    timeline(r, out, zero)?;
    window_table(r, out)?;
    writeln!(out, "\n{b}Decision table{e}")?;
    writeln!(
        out,
        "     {:<6} {:<6} {:<8} bottleneck",
        "GPU", "KV", "waiting"
    )?;
    for (i, row) in DECISION_TABLE.iter().enumerate() {
        let mark = if d.verdict.row == Some(i) {
            "  →"
        } else {
            "   "
        };
        writeln!(
            out,
            "{mark}  {:<6} {:<6} {:<8} {}",
            row.gpu, row.kv, row.waiting, row.bottleneck
        )?;
    }
    if let Some(c) = r.client {
        client(c, out, b, e)?;
    }
    Ok(())
}

fn timeline(r: &Report, out: &mut impl Write, zero: f64) -> io::Result<()> {
    let d = r.diagnosis;
    writeln!(out, "\nTimeline (seconds from the first scrape)")?;
    let p = &d.phases;
    for (name, span) in [
        ("baseline", p.baseline),
        ("ramp", p.ramp),
        ("steady", p.steady),
        ("drain", p.drain),
        ("after", p.after),
    ] {
        if let Some((a, b)) = span {
            writeln!(
                out,
                "  {name:<9} {} … {}  ({:.0}s)",
                rel(a, zero),
                rel(b, zero),
                b - a
            )?;
        }
    }
    for e in d
        .edges
        .iter()
        .filter(|e| e.rise.is_some() || e.fall.is_some())
    {
        let f = |t: Option<f64>| t.map_or("—".to_owned(), |t| rel(t, zero));
        writeln!(
            out,
            "  {:<17} rises {:>6}  falls {:>6}",
            e.concept.name(),
            f(e.rise),
            f(e.fall)
        )?;
    }
    for o in &d.offsets {
        let f = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:+.0}s"));
        writeln!(
            out,
            "  {:<17} lag at rise {:>5}, at fall {:>5}: {:?}",
            o.concept.name(),
            f(o.rise_lag_s),
            f(o.fall_lag_s),
            o.kind
        )?;
    }
    Ok(())
}

fn window_table(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let d = r.diagnosis;
    if d.window_stats.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\nSteady-window statistics (counters as per-second rates)"
    )?;
    writeln!(
        out,
        "  {:<17} {:>10} {:>10} {:>10} {:>9}",
        "signal", "max", "min≠0", "mean≠0", "headroom"
    )?;
    for (name, s) in &d.window_stats {
        let head = s
            .headroom
            .map_or("".to_owned(), |h| format!("{:.1}%", h * 100.0));
        writeln!(
            out,
            "  {name:<17} {:>10} {:>10} {:>10} {head:>9}",
            num(s.max),
            num(s.min_nonzero),
            num(s.mean_nonzero)
        )?;
    }
    Ok(())
}

fn client(c: &ClientSummary, out: &mut impl Write, b: &str, e: &str) -> io::Result<()> {
    writeln!(out, "\n{b}Client side{e} (ms)")?;
    writeln!(
        out,
        "  {:<6} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "", "p50", "p90", "p95", "p99", "mean"
    )?;
    for (name, qs) in client_rows(c) {
        let cells: Vec<String> = qs.iter().map(|q| q.map_or("—".to_owned(), num)).collect();
        writeln!(
            out,
            "  {name:<6} {:>9} {:>9} {:>9} {:>9} {:>9}",
            cells[0], cells[1], cells[2], cells[3], cells[4]
        )?;
    }
    let t = &c.throughput;
    writeln!(
        out,
        "  {:.2} req/s, {:.1} output tok/s",
        t.requests_per_s, t.output_tokens_per_s
    )?;
    if let Some(p) = c.tokens.prompt_mean {
        writeln!(
            out,
            "  prompt {p:.1} tokens per request (server's usage.prompt_tokens)"
        )?;
    }
    let q = &c.requests;
    writeln!(
        out,
        "  requests: {} sent, {} completed, {} failed",
        q.sent, q.completed, q.failed
    )?;
    Ok(())
}
