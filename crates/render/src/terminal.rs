//! The terminal report: verdict first, then why, then the numbers. Text that came from outside
//! (context lines, findings, the server's words) goes through `safe::clean` (issue 17).
//!
//! The verdict's signals and the timeline's carry a sparkline each ([`crate::chart::sparkline`]),
//! all on the run's one time axis under a strip of its phases; a space in a sparkline is a
//! stretch with no sample, never a 0.

use crate::chart::{TimeAxis, sparkline};
use crate::panels::Page;
use crate::{REPLICA_HEAD, Report, client_rows, failures, num, rel, replica_rows, t0};
use llmscope_core::outcome::ClientSummary;
use llmscope_core::safe::clean;
use llmscope_diagnosis::{Concept, DECISION_TABLE, Evidence};

/// Characters a sparkline spans.
const SPARK_WIDTH: usize = 48;
use std::io::{self, Write};

/// Writes the report; `color` adds ANSI emphasis for a terminal.
pub fn write(r: &Report, out: &mut impl Write, color: bool) -> io::Result<()> {
    let bold = if color {
        Bold("\x1b[1m", "\x1b[0m")
    } else {
        Bold("", "")
    };
    head(r, out, bold)?;
    verdict(r, out, bold)?;
    replicas(r, out, bold)?;
    recommendations(r, out, bold)?;
    failed_requests(r, out, bold)?;
    evidence(r, out, bold)?;
    other_findings(r, out, bold)?;
    timeline(r, out)?;
    window_table(r, out)?;
    decision_table(r, out, bold)?;
    if let Some(c) = r.client {
        client(c, out, bold)?;
    }
    Ok(())
}

/// What a heading starts and ends with: ANSI bold, or nothing.
#[derive(Clone, Copy)]
struct Bold(&'static str, &'static str);

/// The title and what the run was (simulated, context, interrupted).
fn head(r: &Report, out: &mut impl Write, Bold(b, e): Bold) -> io::Result<()> {
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
    writeln!(out)
}

fn verdict(r: &Report, out: &mut impl Write, Bold(b, e): Bold) -> io::Result<()> {
    let v = &r.diagnosis.verdict;
    writeln!(
        out,
        "{b}Verdict: {}{e} (confidence {:.0}%)",
        v.bottleneck.as_str(),
        v.confidence * 100.0
    )?;
    writeln!(out, "  {}", clean(&v.summary))
}

/// Each replica's own verdict and levels, when there are two or more.
fn replicas(r: &Report, out: &mut impl Write, Bold(b, e): Bold) -> io::Result<()> {
    let rows: Vec<[String; 7]> = replica_rows(r)
        .into_iter()
        .map(|row| row.map(|cell| clean(&cell)))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n{b}Replicas{e} (mean over the steady window)")?;
    let widths: Vec<usize> = (0..7)
        .map(|i| {
            rows.iter()
                .map(|row| row[i].chars().count())
                .chain([REPLICA_HEAD[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("  {}", padded.join("  ").trim_end())
    };
    writeln!(out, "{}", line(&REPLICA_HEAD))?;
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        writeln!(out, "{}", line(&cells))?;
    }
    Ok(())
}

fn recommendations(r: &Report, out: &mut impl Write, Bold(b, e): Bold) -> io::Result<()> {
    let recs = &r.diagnosis.recommendations;
    if !recs.is_empty() {
        writeln!(out, "\n{b}What to change{e}")?;
    }
    for (i, rec) in recs.iter().enumerate() {
        let (action, reason) = (clean(&rec.action), clean(&rec.reason));
        writeln!(out, "  {}. {action}\n     why: {reason}", i + 1)?;
        if let Some(p) = &rec.predicted {
            writeln!(out, "     predicted: {p}")?;
        }
    }
    Ok(())
}

fn failed_requests(r: &Report, out: &mut impl Write, Bold(b, e): Bold) -> io::Result<()> {
    let Some((head, kinds)) = failures(r) else {
        return Ok(());
    };
    writeln!(out, "\n{b}Failed requests{e}\n  {head}")?;
    for (kind, bodies) in kinds {
        writeln!(out, "  {kind}")?;
        for body in bodies {
            writeln!(out, "    server said: {}", clean(body))?;
        }
    }
    Ok(())
}

fn evidence(r: &Report, out: &mut impl Write, Bold(b, e): Bold) -> io::Result<()> {
    let evidence = &r.diagnosis.evidence;
    if !evidence.is_empty() {
        writeln!(out, "\n{b}Evidence{e}")?;
    }
    for ev in evidence {
        let (value, test) = (num(ev.value), test(ev));
        let (signal, statistic, source) = (&ev.signal, &ev.statistic, clean(&ev.source));
        writeln!(out, "  {signal} {statistic} = {value}{test}   [{source}]")?;
    }
    verdict_sparklines(r, out)
}

/// One sparkline per signal the verdict's evidence names, under the run's phases.
fn verdict_sparklines(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let Some(page) = Page::of(r) else {
        return Ok(());
    };
    let mut named: Vec<Concept> = Vec::new();
    for ev in &r.diagnosis.evidence {
        let c = r.input.signals.keys().find(|c| c.name() == ev.signal);
        if let Some(&c) = c.filter(|c| !named.contains(*c)) {
            named.push(c);
        }
    }
    sparklines(r, &page, &named, out)
}

/// The phases, then one sparkline per concept; nothing when there are none.
fn sparklines(
    r: &Report,
    page: &Page,
    concepts: &[Concept],
    out: &mut impl Write,
) -> io::Result<()> {
    if concepts.is_empty() {
        return Ok(());
    }
    phase_strip(r, page.time, out)?;
    for &c in concepts {
        let (line, range) = spark(page, c);
        writeln!(out, "  {:<17} {line}  {range}", c.name())?;
    }
    Ok(())
}

/// `c`'s sparkline on the page's time axis and the range it spans (`0 … 16`; a counter per
/// second).
fn spark(page: &Page, c: Concept) -> (String, String) {
    let points = page.points(c, 1.0);
    let line = sparkline(&points, page.time, SPARK_WIDTH);
    let hi = points
        .iter()
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    let per_s = if c.is_counter() { "/s" } else { "" };
    let range = if hi.is_finite() {
        format!("0 … {}{per_s}", num(hi))
    } else {
        "no data".to_owned()
    };
    (line, range)
}

/// The run's phases along the sparklines' time axis: `.` baseline and after, `/` ramp, `=`
/// steady, `\` drain.
fn phase_strip(r: &Report, time: TimeAxis, out: &mut impl Write) -> io::Result<()> {
    let p = &r.diagnosis.phases;
    let spans = [
        (p.baseline, '.'),
        (p.ramp, '/'),
        (p.steady, '='),
        (p.drain, '\\'),
        (p.after, '.'),
    ];
    let slice = (time.to - time.from) / SPARK_WIDTH as f64;
    let strip: String = (0..SPARK_WIDTH)
        .map(|i| {
            let mid = time.from + (i as f64 + 0.5) * slice;
            let hit = spans
                .iter()
                .find(|(s, _)| s.is_some_and(|(a, b)| mid >= a && mid <= b));
            hit.map_or(' ', |(_, ch)| *ch)
        })
        .collect();
    writeln!(out, "  {:<17} {strip}", "phases")
}

/// ` < 0.5`: the test the value was put to, when it has one.
pub(crate) fn test(ev: &Evidence) -> String {
    match ev.threshold {
        Some(t) if !ev.test.is_empty() => format!(" {} {}", ev.test, num(t)),
        _ => String::new(),
    }
}

/// The findings but the one the verdict already said.
fn other_findings(r: &Report, out: &mut impl Write, Bold(b, e): Bold) -> io::Result<()> {
    let d = r.diagnosis;
    let said = d
        .findings
        .first()
        .is_some_and(|f| f.bottleneck.is_some() && f.bottleneck == Some(d.verdict.bottleneck));
    let others = &d.findings[usize::from(said)..];
    if !others.is_empty() {
        writeln!(out, "\n{b}Other findings{e}")?;
    }
    for f in others {
        let message = clean(&f.message);
        writeln!(out, "  [{:?}] {}: {message}", f.severity, f.rule)?;
    }
    Ok(())
}

/// The phases, when each signal rose and fell, and how far each lagged the load; times in
/// seconds from the first scrape.
fn timeline(r: &Report, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "\nTimeline (seconds from the first scrape)")?;
    let zero = t0(r);
    phases(r, out, zero)?;
    edges(r, out, zero)?;
    timeline_sparklines(r, out)?;
    offsets(r, out)
}

/// A sparkline for each signal that rose or fell, under the run's phases.
fn timeline_sparklines(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let Some(page) = Page::of(r) else {
        return Ok(());
    };
    let edges = r.diagnosis.edges.iter();
    let moved: Vec<Concept> = edges
        .filter(|e| e.rise.is_some() || e.fall.is_some())
        .map(|e| e.concept)
        .collect();
    sparklines(r, &page, &moved, out)
}

fn phases(r: &Report, out: &mut impl Write, zero: f64) -> io::Result<()> {
    let p = &r.diagnosis.phases;
    for (name, span) in [
        ("baseline", p.baseline),
        ("ramp", p.ramp),
        ("steady", p.steady),
        ("drain", p.drain),
        ("after", p.after),
    ] {
        if let Some((a, b)) = span {
            let (from, to) = (rel(a, zero), rel(b, zero));
            writeln!(out, "  {name:<9} {from} … {to}  ({:.0}s)", b - a)?;
        }
    }
    Ok(())
}

fn edges(r: &Report, out: &mut impl Write, zero: f64) -> io::Result<()> {
    let at = |t: Option<f64>| t.map_or("—".to_owned(), |t| rel(t, zero));
    let edges = r.diagnosis.edges.iter();
    for e in edges.filter(|e| e.rise.is_some() || e.fall.is_some()) {
        writeln!(
            out,
            "  {:<17} rises {:>6}  falls {:>6}",
            e.concept.name(),
            at(e.rise),
            at(e.fall)
        )?;
    }
    Ok(())
}

fn offsets(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let lag = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:+.0}s"));
    for o in &r.diagnosis.offsets {
        writeln!(
            out,
            "  {:<17} lag at rise {:>5}, at fall {:>5}: {:?}",
            o.concept.name(),
            lag(o.rise_lag_s),
            lag(o.fall_lag_s),
            o.kind
        )?;
    }
    Ok(())
}

/// The decision table, the verdict's row marked.
fn decision_table(r: &Report, out: &mut impl Write, Bold(b, e): Bold) -> io::Result<()> {
    writeln!(out, "\n{b}Decision table{e}")?;
    let (gpu, kv, waiting) = ("GPU", "KV", "waiting");
    writeln!(out, "     {gpu:<6} {kv:<6} {waiting:<8} bottleneck")?;
    for (i, d) in DECISION_TABLE.iter().enumerate() {
        let mark = if r.diagnosis.verdict.row == Some(i) {
            "  →"
        } else {
            "   "
        };
        let (gpu, kv, waiting) = (d.gpu, d.kv, d.waiting);
        writeln!(
            out,
            "{mark}  {gpu:<6} {kv:<6} {waiting:<8} {}",
            d.bottleneck
        )?;
    }
    Ok(())
}

/// Each signal's statistics over the steady window.
fn window_table(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let stats = &r.diagnosis.window_stats;
    if stats.is_empty() {
        return Ok(());
    }
    let rates = "Steady-window statistics (counters as per-second rates)";
    writeln!(out, "\n{rates}")?;
    let (max, min, mean, head) = ("max", "min≠0", "mean≠0", "headroom");
    writeln!(
        out,
        "  {:<17} {max:>10} {min:>10} {mean:>10} {head:>9}",
        "signal"
    )?;
    for (name, s) in stats {
        let head = s
            .headroom
            .map_or("".to_owned(), |h| format!("{:.1}%", h * 100.0));
        let (max, min, mean) = (num(s.max), num(s.min_nonzero), num(s.mean_nonzero));
        writeln!(out, "  {name:<17} {max:>10} {min:>10} {mean:>10} {head:>9}")?;
    }
    Ok(())
}

/// The client's latency percentiles, throughput, prompt size and request counts.
fn client(c: &ClientSummary, out: &mut impl Write, Bold(b, e): Bold) -> io::Result<()> {
    writeln!(out, "\n{b}Client side{e} (ms)")?;
    latencies(c, out)?;
    volume(c, out)
}

/// Throughput, the prompt's size (when the server said it) and the request counts.
fn volume(c: &ClientSummary, out: &mut impl Write) -> io::Result<()> {
    let t = &c.throughput;
    let (req, tok) = (t.requests_per_s, t.output_tokens_per_s);
    writeln!(out, "  {req:.2} req/s, {tok:.1} output tok/s")?;
    if let Some(p) = c.tokens.prompt_mean {
        let prompt = "tokens per request (server's usage.prompt_tokens)";
        writeln!(out, "  prompt {p:.1} {prompt}")?;
    }
    let q = &c.requests;
    let (sent, completed, failed) = (q.sent, q.completed, q.failed);
    writeln!(
        out,
        "  requests: {sent} sent, {completed} completed, {failed} failed"
    )
}

fn latencies(c: &ClientSummary, out: &mut impl Write) -> io::Result<()> {
    let (p50, p90, p95, p99, mean) = ("p50", "p90", "p95", "p99", "mean");
    writeln!(
        out,
        "  {:<6} {p50:>9} {p90:>9} {p95:>9} {p99:>9} {mean:>9}",
        ""
    )?;
    for (name, qs) in client_rows(c) {
        let [p50, p90, p95, p99, mean] = qs.map(|q| q.map_or("—".to_owned(), num));
        writeln!(
            out,
            "  {name:<6} {p50:>9} {p90:>9} {p95:>9} {p99:>9} {mean:>9}"
        )?;
    }
    Ok(())
}
