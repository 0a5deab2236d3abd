//! The answer of a capacity search (`llmscope capacity`) for people: [`text`] for a terminal,
//! [`html`] one self-contained page with inline SVG charts: output throughput and goodput against
//! load with the knee and its cause marked, then latency against throughput with the SLO's limits.
//!
//! Both say the same facts in the same order: the knee and what limits the deployment there,
//! why (the verdict just past the knee, its evidence, the run to open), the latency at the
//! knee, the most goodput under the SLO, the per-replica load for autoscaling, then every stage
//! in the order measured. Each fact is made once as a plain sentence or row (`headline`,
//! `cells`, …); the terminal makes it safe with `safe::clean`, the page with `safe::html` —
//! stage summaries, evidence and the server's words are outside text (issue 17).
//!
//! Absent figures are shown as "—", never as 0. The chart plots the stages the search counted
//! (the last at each load, neither interrupted nor client-limited); its scales live in `Plot`.

mod chart;
mod latency;

use crate::html::{STYLE, esc};
use crate::num;
use crate::terminal::test as evidence_test;
use llmscope_core::safe::clean;
use llmscope_diagnosis::capacity::answer::{
    Answer, Axis, Ended, KneeAnswer, Percentiles, Stage, StopReason, label,
};
use llmscope_diagnosis::{Bottleneck, Evidence};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

/// The answer as a terminal text: what an SRE reads first.
pub fn text(a: &Answer, out: &mut impl Write, color: bool) -> io::Result<()> {
    let bold = if color {
        ("\x1b[1m", "\x1b[0m")
    } else {
        ("", "")
    };
    writeln!(out, "{}{}{}", bold.0, clean(&headline(a)), bold.1)?;
    why_text(a, out)?;
    advice_text(a, out)?;
    if let Some(k) = &a.knee {
        latency_text(k, out, bold)?;
    }
    writeln!(out, "\n{}", clean(&goodput_line(a)))?;
    writeln!(out, "{}", clean(&per_replica_line(a)))?;
    stages_text(a, out, bold)?;
    writeln!(out, "\n{}", clean(&elapsed_line(a)))
}

/// One self-contained HTML page (no external resources, no scripts needed).
pub fn html(a: &Answer, title: &str) -> String {
    let mut s = String::with_capacity(32 * 1024);
    let title = esc(title);
    let _ = write!(
        s,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title><style>{STYLE}{EXTRA_STYLE}</style></head><body><h1>{title}</h1>"
    );
    let _ = write!(s, "<p class=\"verdict\">{}</p>", esc(&headline(a)));
    why_html(a, &mut s);
    advice_html(a, &mut s);
    s.push_str("<h2>Output throughput against load</h2>");
    chart::chart(a, &mut s);
    s.push_str("<h2>Latency against throughput</h2>");
    latency::chart(a, &mut s);
    if let Some(k) = &a.knee {
        latency_html(k, &mut s);
    }
    let (goodput, replica) = (goodput_line(a), per_replica_line(a));
    let _ = write!(
        s,
        "<h2>Goodput and autoscaling</h2><p>{}</p><p>{}</p>",
        esc(&goodput),
        esc(&replica)
    );
    stages_html(a, &mut s);
    let _ = writeln!(s, "<p>{}</p></body></html>", esc(&elapsed_line(a)));
    s
}

/// What the capacity page adds to the report's style: stages the search did not count, greyed.
const EXTRA_STYLE: &str = ".cut td{color:#868e96}.stages td:nth-last-child(-n+2){text-align:left}";

// ---- The facts, as plain text -------------------------------------------------------------

/// `Capacity: knee at concurrency 16 (15 < knee ≤ 16), 1,600 output tok/s, 16 req/s — limited
/// by …`; "at least …" when the search ended before the knee was pinned; "not found yet".
fn headline(a: &Answer) -> String {
    let Some(k) = &a.knee else {
        return format!("Capacity: knee not found yet — {}", ended(a));
    };
    let at = a.axis.describe(k.load.value());
    let (tok, req) = (tok(k.output_tok_s), num(k.req_s));
    if k.at_least {
        let why = ended(a);
        return format!(
            "Capacity: at least {at}, {tok} output tok/s, {req} req/s — knee not pinned: {why}"
        );
    }
    let (bracket, limit) = (bracket(a, k), label(k.bottleneck));
    format!(
        "Capacity: knee at {at} ({bracket}), {tok} output tok/s, {req} req/s — limited by {limit}"
    )
}

/// `15 < knee ≤ 16`, and why the bisection stopped when the bracket is wider than one unit.
fn bracket(a: &Answer, k: &KneeAnswer) -> String {
    let load = k.load.value();
    let Some(below) = k.below else {
        return format!("knee ≤ {load}: the first load measured");
    };
    let bracket = format!("{below} < knee ≤ {load}");
    if k.exact {
        bracket
    } else {
        format!("{bracket}, not bisected further: {}", ended(a))
    }
}

/// Why the search ended, in words.
fn ended(a: &Answer) -> String {
    match &a.ended {
        Ended::Found { stop } => stopped(a.axis, *stop).to_owned(),
        Ended::Budget { next: Some(n) } => {
            format!("the --budget ran out before {}", a.axis.describe(*n))
        }
        Ended::Budget { next: None } => "the --budget ran out".to_owned(),
        Ended::Interrupted => "the search was interrupted (Ctrl-C)".to_owned(),
        Ended::Failing { load, words } => {
            format!("requests failed at {}: {words}", a.axis.describe(*load))
        }
        Ended::ClientLimited { load, words } => format!(
            "the client could not keep {} (its limit, not the server's): {words}",
            a.axis.describe(*load)
        ),
        Ended::NoOutput => "no stage served any output".to_owned(),
    }
}

/// Why the ladder stopped climbing.
fn stopped(axis: Axis, stop: StopReason) -> &'static str {
    match (stop, axis) {
        (StopReason::Plateau, _) => "throughput stopped growing",
        (StopReason::GoodputFell, _) => "goodput under the SLO fell",
        (StopReason::Saturated, _) => {
            "the batch was held at --max-num-seqs (more load only queues)"
        }
        (StopReason::MaxLoad, Axis::Concurrency) => "--max-concurrency was reached",
        (StopReason::MaxLoad, Axis::Rate) => "--max-rate was reached",
    }
}

/// `vllm:num_requests_running max = 16 >= 16   [source]`, as the run report writes evidence.
fn evidence_line(ev: &Evidence) -> String {
    let (value, test) = (num(ev.value), evidence_test(ev));
    let (signal, statistic, source) = (&ev.signal, &ev.statistic, &ev.source);
    format!("{signal} {statistic} = {value}{test}   [{source}]")
}

/// `(run 32: llmscope report 32)`, and the verdict at the knee itself when it differs.
fn run_line(run_id: i64, at_knee: Option<Bottleneck>) -> String {
    let knee = at_knee.map_or(String::new(), |b| {
        format!("; at the knee itself: {}", label(b))
    });
    format!("(run {run_id}: llmscope report {run_id}{knee})")
}

/// The three latencies at the knee: (name, percentiles).
fn latencies(k: &KneeAnswer) -> [(&'static str, Percentiles); 3] {
    [("TTFT", k.ttft_ms), ("ITL", k.itl_ms), ("e2e", k.e2e_ms)]
}

/// The most goodput under the SLO and where, or why there is none.
fn goodput_line(a: &Answer) -> String {
    match (&a.max_goodput, &a.slo) {
        (Some(g), slo) => format!(
            "Max goodput: {} req/s at {} under the SLO {}",
            num(g.goodput_rps),
            a.axis.describe(g.load.value()),
            slo.as_deref().unwrap_or("—")
        ),
        (None, Some(slo)) => {
            format!("Max goodput: — (no counted stage measured goodput under the SLO {slo})")
        }
        (None, None) => "Max goodput: no --slo: goodput not measured".to_owned(),
    }
}

/// The load one replica holds (the autoscaling threshold), or why none is named.
fn per_replica_line(a: &Answer) -> String {
    let Some(load) = a.per_replica else {
        let why = match &a.knee {
            None => "no knee was found",
            Some(_) => "the knee is not pinned (the search ended early)",
        };
        return format!("Per replica: none named: {why}");
    };
    let binds = a.cause.as_ref().filter(|c| c.binds_from == Some(load));
    let from = match (a.max_goodput.is_some(), binds) {
        (true, _) => "where goodput peaked under the SLO".to_owned(),
        (false, Some(c)) if a.knee.as_ref().is_some_and(|k| k.load.value() != load) => {
            format!(
                "where {} starts to bind, below the knee",
                label(c.bottleneck)
            )
        }
        _ => "the knee".to_owned(),
    };
    let at = a.axis.describe(load);
    format!("Per replica: {at} — scale out above it ({from})")
}

/// `KV-cache capacity binds from concurrency 8`: where the cause's verdict first appears.
fn binds_line(a: &Answer) -> Option<String> {
    let c = a.cause.as_ref()?;
    let from = c.binds_from?;
    Some(format!(
        "{} binds from {} (the first stage it was the verdict of)",
        label(c.bottleneck),
        a.axis.describe(from)
    ))
}

/// `Elapsed 100 s of a 300 s budget, 9 stages; ended: throughput stopped growing`.
fn elapsed_line(a: &Answer) -> String {
    let (elapsed, budget, n) = (a.elapsed_s, a.budget_s, a.stages.len());
    let ended = ended(a);
    format!("Elapsed {elapsed:.0} s of a {budget:.0} s budget, {n} stages; ended: {ended}")
}

/// The stage the search counted at each load (the last measured there, neither interrupted nor
/// client-limited), by load.
fn counted(a: &Answer) -> BTreeMap<u32, &Stage> {
    let usable = a
        .stages
        .iter()
        .filter(|s| s.client_limited.is_none() && !s.interrupted);
    usable.map(|s| (s.load.value(), s)).collect()
}

/// Whether `s` is the stage counted at its load.
fn is_counted(counted: &BTreeMap<u32, &Stage>, s: &Stage) -> bool {
    counted
        .get(&s.load.value())
        .is_some_and(|c| std::ptr::eq(*c, s))
}

/// Whether `s` is the stage counted at the knee.
fn is_knee(a: &Answer, counted: &BTreeMap<u32, &Stage>, s: &Stage) -> bool {
    let at = a
        .knee
        .as_ref()
        .is_some_and(|k| k.load.value() == s.load.value());
    at && is_counted(counted, s)
}

/// What the table notes about a stage: the knee, interrupted, client-limited, measured again.
fn marks(a: &Answer, counted: &BTreeMap<u32, &Stage>, s: &Stage) -> Vec<String> {
    let mut out = Vec::new();
    match &a.knee {
        Some(k) if is_knee(a, counted, s) && k.at_least => out.push("knee ≥".to_owned()),
        Some(_) if is_knee(a, counted, s) => out.push("knee".to_owned()),
        _ => {}
    }
    if s.interrupted {
        out.push("interrupted".to_owned());
    }
    if let Some(w) = &s.client_limited {
        out.push(format!("client-limited: {w}"));
    }
    if !s.interrupted && s.client_limited.is_none() && !is_counted(counted, s) {
        out.push("measured again later".to_owned());
    }
    out
}

/// The stage table's heads.
fn heads(axis: Axis) -> [&'static str; 10] {
    let load = match axis {
        Axis::Concurrency => "concurrency",
        Axis::Rate => "rate",
    };
    [
        load,
        "out tok/s",
        "req/s",
        "goodput",
        "TTFT p50",
        "TTFT p95",
        "e2e p95",
        "verdict",
        "run",
        "secs",
    ]
}

/// Which column of the stage table is text (left-aligned).
const VERDICT_COLUMN: usize = 7;

/// One stage's cells, in the order of [`heads`] (the verdict's bottleneck is our own word).
fn cells(s: &Stage) -> [String; 10] {
    let v = &s.verdict;
    [
        s.load.value().to_string(),
        tok(s.output_tok_s),
        num(s.req_s),
        s.goodput_rps.map_or("—".to_owned(), num),
        ms(s.ttft_ms.p50),
        ms(s.ttft_ms.p95),
        ms(s.e2e_ms.p95),
        format!("{} {:.0}%", v.bottleneck.as_str(), v.confidence * 100.0),
        s.run_id.to_string(),
        format!("{:.0}", s.seconds),
    ]
}

/// Output tokens per second with thousands separators (`1,234`); small values keep decimals.
fn tok(v: f64) -> String {
    if v.is_finite() && v.abs() < 100.0 {
        num(v)
    } else {
        thousands(v)
    }
}

/// `v` rounded to a whole number, its thousands separated by commas; "—" when not finite.
fn thousands(v: f64) -> String {
    if !v.is_finite() {
        return "—".to_owned();
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if v < 0.0 && digits != "0" {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A latency in milliseconds; "—" when absent.
fn ms(v: Option<f64>) -> String {
    v.map_or("—".to_owned(), num)
}

// ---- Terminal -----------------------------------------------------------------------------

/// `Why: <sentence>`, the evidence, and the run to open.
fn why_text(a: &Answer, out: &mut impl Write) -> io::Result<()> {
    let Some(c) = &a.cause else {
        return Ok(());
    };
    writeln!(out, "Why: {}", clean(&c.sentence))?;
    if let Some(from) = binds_line(a) {
        writeln!(out, "  {from}")?;
    }
    for ev in &c.evidence {
        writeln!(out, "  {}", clean(&evidence_line(ev)))?;
    }
    let differs = (c.at_knee != c.bottleneck).then_some(c.at_knee);
    writeln!(out, "  {}", run_line(c.run_id, differs))
}

/// What to change about the cause, each change with what it is predicted to buy.
fn advice_text(a: &Answer, out: &mut impl Write) -> io::Result<()> {
    if a.advice.is_empty() {
        return Ok(());
    }
    writeln!(out, "What to change:")?;
    for r in &a.advice {
        writeln!(out, "  - {} — {}", clean(&r.action), clean(&r.reason))?;
        if let Some(p) = &r.predicted {
            writeln!(out, "    predicted: {}", clean(p))?;
        }
    }
    Ok(())
}

/// TTFT, ITL and e2e p50/p95 at the knee.
fn latency_text(k: &KneeAnswer, out: &mut impl Write, (b, e): (&str, &str)) -> io::Result<()> {
    writeln!(out, "\n{b}Latency at the knee{e} (ms)")?;
    writeln!(out, "  {:<6} {:>9} {:>9}", "", "p50", "p95")?;
    for (name, p) in latencies(k) {
        writeln!(out, "  {name:<6} {:>9} {:>9}", ms(p.p50), ms(p.p95))?;
    }
    Ok(())
}

/// Every stage in the order measured, aligned, each noted where it was not counted.
fn stages_text(a: &Answer, out: &mut impl Write, (b, e): (&str, &str)) -> io::Result<()> {
    writeln!(out, "\n{b}Stages, in the order measured{e} (latency in ms)")?;
    let heads = heads(a.axis).map(str::to_owned);
    let rows: Vec<[String; 10]> = a.stages.iter().map(cells).collect();
    let widths = widths(&heads, &rows);
    write_row(out, &heads, &widths, "")?;
    let counted = counted(a);
    for (s, row) in a.stages.iter().zip(&rows) {
        let marks = marks(a, &counted, s);
        let note = if marks.is_empty() {
            String::new()
        } else {
            format!("  ← {}", clean(&marks.join("; ")))
        };
        write_row(out, row, &widths, &note)?;
    }
    Ok(())
}

/// Each column's width: its widest cell or head, in characters.
fn widths(heads: &[String; 10], rows: &[[String; 10]]) -> [usize; 10] {
    let mut w = heads.clone().map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in w.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    w
}

/// One aligned row: numbers right, the verdict left, then `note`.
fn write_row(
    out: &mut impl Write,
    row: &[String; 10],
    w: &[usize; 10],
    note: &str,
) -> io::Result<()> {
    let mut line = String::from(" ");
    for (i, cell) in row.iter().enumerate() {
        let _ = if i == VERDICT_COLUMN {
            write!(line, "  {cell:<0$}", w[i])
        } else {
            write!(line, "  {cell:>0$}", w[i])
        };
    }
    writeln!(out, "{}{note}", line.trim_end())
}

// ---- HTML ---------------------------------------------------------------------------------

/// The cause: its sentence, its evidence as a table, the run to open.
fn why_html(a: &Answer, s: &mut String) {
    let Some(c) = &a.cause else {
        return;
    };
    let _ = write!(s, "<h2>Why</h2><p>{}</p>", esc(&c.sentence));
    if let Some(from) = binds_line(a) {
        let _ = write!(s, "<p>{}</p>", esc(&from));
    }
    if !c.evidence.is_empty() {
        s.push_str("<table><tr><th>signal</th><th>statistic</th><th>value</th><th>test</th><th>source</th></tr>");
        for ev in &c.evidence {
            let test = evidence_test(ev);
            let (signal, statistic, value) = (esc(&ev.signal), esc(&ev.statistic), num(ev.value));
            tr(
                s,
                "",
                &[
                    &signal,
                    &statistic,
                    &value,
                    &esc(test.trim()),
                    &esc(&ev.source),
                ],
            );
        }
        s.push_str("</table>");
    }
    let differs = (c.at_knee != c.bottleneck).then_some(c.at_knee);
    let _ = write!(s, "<p>{}</p>", esc(&run_line(c.run_id, differs)));
}

/// What to change about the cause, each change with what it is predicted to buy.
fn advice_html(a: &Answer, s: &mut String) {
    if a.advice.is_empty() {
        return;
    }
    s.push_str("<h2>What to change</h2><ul>");
    for r in &a.advice {
        let _ = write!(s, "<li><b>{}</b> — {}", esc(&r.action), esc(&r.reason));
        if let Some(p) = &r.predicted {
            let _ = write!(s, "<br><i>predicted:</i> {}", esc(p));
        }
        s.push_str("</li>");
    }
    s.push_str("</ul>");
}

/// TTFT, ITL and e2e p50/p95 at the knee.
fn latency_html(k: &KneeAnswer, s: &mut String) {
    s.push_str("<h2>Latency at the knee</h2><table><tr><th>ms</th><th>p50</th><th>p95</th></tr>");
    for (name, p) in latencies(k) {
        tr(s, "", &[&name, &ms(p.p50), &ms(p.p95)]);
    }
    s.push_str("</table>");
}

/// The stage table: the knee's row marked, stages the search did not count greyed.
fn stages_html(a: &Answer, s: &mut String) {
    s.push_str("<h2>Stages, in the order measured</h2><table class=\"stages\"><tr>");
    for h in heads(a.axis) {
        let _ = write!(s, "<th>{h}</th>");
    }
    s.push_str("<th>summary</th><th></th></tr>");
    let counted = counted(a);
    for st in &a.stages {
        let marks = marks(a, &counted, st);
        let class = match (is_counted(&counted, st), is_knee(a, &counted, st)) {
            (false, _) => " class=\"cut\"",
            (true, true) => " class=\"hit\"",
            (true, false) => "",
        };
        let c = cells(st).map(|c| esc(&c).into_owned());
        let (summary, note) = (
            esc(&st.verdict.summary),
            esc(&marks.join("; ")).into_owned(),
        );
        let row: Vec<&dyn std::fmt::Display> = c.iter().map(|c| c as _).collect();
        tr(s, class, &[row.as_slice(), &[&summary, &note]].concat());
    }
    s.push_str("</table>");
}

/// One table row, `<tr{attrs}>`, each cell already escaped where it came from outside.
fn tr(s: &mut String, attrs: &str, cells: &[&dyn std::fmt::Display]) {
    let _ = write!(s, "<tr{attrs}>");
    for cell in cells {
        let _ = write!(s, "<td>{cell}</td>");
    }
    s.push_str("</tr>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmscope_diagnosis::capacity::answer::{Load, StageVerdict};
    use llmscope_diagnosis::capacity::{Search, Served};

    const HOSTILE: &str = "<script>alert(1)</script>";

    fn stage(load: u32, tok: f64, b: Bottleneck, goodput: Option<f64>) -> Stage {
        let l = f64::from(load);
        Stage {
            load: Load::on(Axis::Concurrency, load),
            run_id: i64::from(load),
            output_tok_s: tok,
            req_s: tok / 100.0,
            goodput_rps: goodput,
            goodput_fraction: None,
            ttft_ms: Percentiles {
                p50: Some(10.0 * l),
                p95: Some(20.0 * l),
            },
            itl_ms: Percentiles {
                p50: Some(12.5),
                p95: None,
            },
            e2e_ms: Percentiles::default(),
            completed: 10,
            failed: 0,
            seconds: 10.0,
            window: None,
            running_mean: None,
            waiting_mean: None,
            verdict: StageVerdict {
                bottleneck: b,
                confidence: 0.9,
                summary: format!("{} at {load}", b.as_str()),
                evidence: Vec::new(),
            },
            client_limited: None,
            interrupted: false,
        }
    }

    fn running_evidence(source: &str) -> Evidence {
        Evidence {
            signal: "vllm:num_requests_running".into(),
            source: source.to_owned(),
            window: None,
            statistic: "max".into(),
            value: 16.0,
            test: ">=".into(),
            threshold: Some(16.0),
        }
    }

    /// The answer of a search against a batch cap of 16 (loads 1, 2, 4, 8, 16, 32, 12, 14, 15),
    /// with goodput under `slo` when given; the stage past the knee has evidence.
    fn capped(slo: Option<&str>) -> Answer {
        capped_with(slo, |_| {})
    }

    /// [`capped`], the stage past the knee (at 32) changed by `past` before the answer is read.
    fn capped_with(slo: Option<&str>, past: impl FnOnce(&mut Stage)) -> Answer {
        let mut past = Some(past);
        let mut search = Search::new(1, 64);
        let mut stages = Vec::new();
        for l in [1, 2, 4, 8, 16, 32, 12, 14, 15] {
            let tok = 100.0 * f64::from(l.min(16));
            let b = if l < 16 {
                Bottleneck::LoadNotReached
            } else {
                Bottleneck::BatchLimit
            };
            let goodput = slo.map(|_| if l <= 16 { f64::from(l) } else { 8.0 });
            let mut st = stage(l, tok, b, goodput);
            if l == 32 {
                st.verdict.evidence.push(running_evidence("prometheus"));
                if let Some(past) = past.take() {
                    past(&mut st);
                }
            }
            stages.push(st);
            let served = Served {
                output_tok_s: tok,
                goodput_rps: goodput,
                saturated: false,
            };
            search.record(l, served);
        }
        let found = Ended::Found {
            stop: StopReason::Plateau,
        };
        let slo = slo.map(str::to_owned);
        Answer::assemble(
            Axis::Concurrency,
            slo,
            stages,
            &search,
            found,
            (300.0, 100.0),
        )
    }

    /// Stages 1, 2, 4 measured, the one at 8 cut short by Ctrl-C.
    fn interrupted() -> Answer {
        let mut search = Search::new(1, 64);
        let mut stages = Vec::new();
        for l in [1, 2, 4] {
            let tok = 100.0 * f64::from(l);
            stages.push(stage(l, tok, Bottleneck::LoadNotReached, None));
            search.record(
                l,
                Served {
                    output_tok_s: tok,
                    goodput_rps: None,
                    saturated: false,
                },
            );
        }
        let mut cut = stage(8, 50.0, Bottleneck::LoadNotReached, None);
        cut.interrupted = true;
        stages.push(cut);
        let ended = Ended::Interrupted;
        Answer::assemble(
            Axis::Concurrency,
            None,
            stages,
            &search,
            ended,
            (300.0, 40.0),
        )
    }

    fn text_of(a: &Answer) -> String {
        let mut out = Vec::new();
        text(a, &mut out, false).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The `(attribute)` values of every element `<tag …` carrying `class="class"`.
    fn attrs(html: &str, class: &str, attr: &str) -> Vec<String> {
        let marker = format!("class=\"{class}\"");
        let needle = format!(" {attr}=\"");
        html.split('<')
            .filter(|el| el.contains(&marker))
            .filter_map(|el| {
                let from = el.find(&needle)? + needle.len();
                Some(el[from..].split('"').next()?.to_owned())
            })
            .collect()
    }

    #[test]
    fn the_headline_names_the_knee_its_bracket_its_throughput_and_its_limit() {
        let t = text_of(&capped(Some("ttft=1s")));
        let first = t.lines().next().unwrap();
        assert_eq!(
            first,
            "Capacity: knee at concurrency 16 (15 < knee ≤ 16), 1,600 output tok/s, 16 req/s — limited by the batch limit (--max-num-seqs)"
        );
    }

    #[test]
    fn why_is_the_cause_sentence_with_its_evidence_and_the_run_to_open() {
        let t = text_of(&capped(Some("ttft=1s")));
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[1],
            "Why: past concurrency 16 the batch limit (--max-num-seqs) holds: batch_limit at 32"
        );
        assert_eq!(
            lines[2],
            "  the batch limit (--max-num-seqs) binds from concurrency 16 (the first stage it was the verdict of)"
        );
        assert_eq!(
            lines[3],
            "  vllm:num_requests_running max = 16 >= 16   [prometheus]"
        );
        assert_eq!(lines[4], "  (run 32: llmscope report 32)");
    }

    /// The cause's advice follows the why, each change with its prediction; outside words
    /// are escaped on the page.
    #[test]
    fn what_to_change_follows_the_why_with_its_prediction() {
        let mut a = capped(None);
        a.advice = vec![llmscope_diagnosis::advice::Recommendation {
            action: "raise --max-num-seqs from 16 to 32".to_owned(),
            reason: "running is pinned <b>".to_owned(),
            setting: None,
            predicted: Some("2,100 output tok/s (1,900–2,300; now 1,500)".to_owned()),
        }];
        let t = text_of(&a);
        let lines: Vec<&str> = t.lines().collect();
        let at = lines
            .iter()
            .position(|l| *l == "What to change:")
            .expect(&t);
        assert_eq!(lines[at - 1], "  (run 32: llmscope report 32)");
        assert_eq!(
            lines[at + 1],
            "  - raise --max-num-seqs from 16 to 32 — running is pinned <b>"
        );
        assert_eq!(
            lines[at + 2],
            "    predicted: 2,100 output tok/s (1,900–2,300; now 1,500)"
        );
        let page = html(&a, "t");
        assert!(page.contains("<h2>What to change</h2>"), "{page}");
        assert!(page.contains("running is pinned &lt;b&gt;"), "{page}");
        assert!(
            page.contains("<i>predicted:</i> 2,100 output tok/s"),
            "{page}"
        );
        a.advice.clear();
        assert!(!text_of(&a).contains("What to change"));
    }

    #[test]
    fn absent_figures_show_as_a_dash_never_as_zero() {
        let t = text_of(&capped(None));
        let row = |name: &str| {
            let line = t
                .lines()
                .find(|l| l.trim_start().starts_with(name))
                .unwrap();
            line.split_whitespace().skip(1).collect::<Vec<_>>()
        };
        assert_eq!(row("TTFT"), ["160", "320"]);
        assert_eq!(row("ITL"), ["12.5", "—"]);
        assert_eq!(row("e2e"), ["—", "—"]);
        assert!(
            t.contains("Max goodput: no --slo: goodput not measured"),
            "{t}"
        );
        // Without an SLO every stage's goodput cell is "—" (column 4 of the table).
        let stage_rows = stage_rows(&t);
        assert!(
            stage_rows
                .iter()
                .all(|r| r.split_whitespace().nth(3) == Some("—")),
            "{t}"
        );
    }

    /// The stage table's rows, the head left out.
    fn stage_rows(t: &str) -> Vec<&str> {
        let lines = t
            .lines()
            .skip_while(|l| !l.starts_with("Stages, in the order measured"));
        let rows = lines.skip(2).take_while(|l| !l.is_empty());
        rows.collect()
    }

    #[test]
    fn the_stage_table_has_every_stage_in_the_order_measured() {
        let t = text_of(&capped(Some("ttft=1s")));
        let loads: Vec<&str> = stage_rows(&t)
            .iter()
            .filter_map(|r| r.split_whitespace().next())
            .collect();
        assert_eq!(
            loads,
            ["1", "2", "4", "8", "16", "32", "12", "14", "15"],
            "{t}"
        );
        let knee_row = stage_rows(&t)[4];
        assert!(knee_row.ends_with("← knee"), "{knee_row}");
        assert!(knee_row.contains("batch_limit 90%"), "{knee_row}");
        assert!(
            t.contains(
                "Elapsed 100 s of a 300 s budget, 9 stages; ended: throughput stopped growing"
            ),
            "{t}"
        );
        let h = html(&capped(Some("ttft=1s")), "capacity");
        let table = h.split("<table class=\"stages\">").nth(1).unwrap();
        let table = table.split("</table>").next().unwrap();
        assert_eq!(
            table.matches("<tr").count(),
            1 + 9,
            "a head and a row per stage"
        );
        assert_eq!(
            table.matches("<tr class=\"hit\"><td>16</td>").count(),
            1,
            "{table}"
        );
    }

    #[test]
    fn with_an_slo_the_max_goodput_and_the_replica_load_are_where_goodput_peaked() {
        let t = text_of(&capped(Some("ttft=1s")));
        assert!(
            t.contains("Max goodput: 16 req/s at concurrency 16 under the SLO ttft=1s"),
            "{t}"
        );
        assert!(t.contains("Per replica: concurrency 16 — scale out above it (where goodput peaked under the SLO)"), "{t}");
        let t = text_of(&capped(None));
        assert!(
            t.contains("Per replica: concurrency 16 — scale out above it (the knee)"),
            "{t}"
        );
    }

    #[test]
    fn an_interrupted_search_says_at_least_and_why_and_names_no_replica_load() {
        let t = text_of(&interrupted());
        let first = t.lines().next().unwrap();
        assert_eq!(
            first,
            "Capacity: at least concurrency 4, 400 output tok/s, 4 req/s — knee not pinned: the search was interrupted (Ctrl-C)"
        );
        assert!(
            t.contains("Per replica: none named: the knee is not pinned"),
            "{t}"
        );
        let rows = stage_rows(&t);
        assert_eq!(rows.len(), 4, "{t}");
        assert!(rows[2].ends_with("← knee ≥"), "{t}");
        assert!(rows[3].ends_with("← interrupted"), "{t}");
    }

    #[test]
    fn without_a_knee_it_says_not_found_yet_and_why() {
        let mut a = interrupted();
        a.knee = None;
        a.cause = None;
        a.per_replica = None;
        a.ended = Ended::ClientLimited {
            load: 8,
            words: "the client's CPU was saturated".into(),
        };
        let t = text_of(&a);
        assert!(t.starts_with("Capacity: knee not found yet — the client could not keep concurrency 8 (its limit, not the server's): the client's CPU was saturated\n"), "{t}");
        assert!(
            !t.contains("Why:") && !t.contains("Latency at the knee"),
            "{t}"
        );
        assert!(
            t.contains("Per replica: none named: no knee was found"),
            "{t}"
        );
        let h = html(&a, "capacity");
        assert!(!h.contains("class=\"knee\""), "no knee, no marker");
    }

    #[test]
    fn a_bisection_cut_short_shows_its_bracket_and_why() {
        // A cap of 12 climbed to 32; requests failed before the bisection between 8 and 16.
        let mut search = Search::new(1, 64);
        let mut stages = Vec::new();
        for l in [1, 2, 4, 8, 16, 32] {
            let tok = 100.0 * f64::from(l.min(12));
            stages.push(stage(l, tok, Bottleneck::GpuCompute, None));
            search.record(
                l,
                Served {
                    output_tok_s: tok,
                    goodput_rps: None,
                    saturated: false,
                },
            );
        }
        let failing = Ended::Failing {
            load: 12,
            words: "HTTP 500".into(),
        };
        let a = Answer::assemble(
            Axis::Concurrency,
            None,
            stages,
            &search,
            failing,
            (300.0, 90.0),
        );
        let first = text_of(&a).lines().next().unwrap().to_owned();
        assert!(first.starts_with("Capacity: knee at concurrency 16 (8 < knee ≤ 16, not bisected further: requests failed at concurrency 12: HTTP 500), 1,200 output tok/s"), "{first}");
    }

    #[test]
    fn outside_text_is_escaped_in_the_page_and_made_inert_in_the_terminal() {
        let a = capped_with(Some("ttft=1s"), |past| {
            past.verdict.summary = format!("{HOSTILE}\x1b]0;owned\x07");
            past.verdict.evidence = vec![running_evidence(HOSTILE)];
        });
        assert!(a.cause.as_ref().unwrap().sentence.contains(HOSTILE));
        let h = html(&a, &format!("capacity {HOSTILE}"));
        assert!(
            !h.to_lowercase().contains("<script"),
            "a raw script in the page"
        );
        let escaped = h.matches("&lt;script&gt;alert(1)&lt;/script&gt;").count();
        // the title twice, the cause sentence, the evidence source, the stage's summary cell and
        // its point's tooltip
        assert_eq!(escaped, 6, "{h}");
        let t = text_of(&a);
        assert!(!t.contains('\x1b'), "{t}");
        assert!(t.contains("\\x1b]0;owned\\x07"), "{t}");
    }

    #[test]
    fn the_chart_has_a_point_per_counted_stage_and_the_knee_at_its_x() {
        let h = html(&capped(Some("ttft=1s")), "capacity");
        let loads = attrs(&h, "stage", "data-load");
        assert_eq!(
            loads,
            ["1", "2", "4", "8", "12", "14", "15", "16", "32"],
            "sorted by load"
        );
        let knee_x = attrs(&h, "knee", "x1");
        let at_16 = h
            .split('<')
            .find(|el| el.contains("data-load=\"16\"") && el.contains("class=\"stage\""))
            .unwrap();
        assert_eq!(knee_x.len(), 1, "one knee marker");
        assert!(
            at_16.contains(&format!("cx=\"{}\"", knee_x[0])),
            "{at_16} vs {knee_x:?}"
        );
        // The interrupted stage is no point of the curve.
        let cut = html(&interrupted(), "capacity");
        assert_eq!(attrs(&cut, "stage", "data-load"), ["1", "2", "4"]);
        assert!(cut.contains("knee ≥ 4"), "{cut}");
    }

    #[test]
    fn goodput_gets_a_series_on_its_own_axis_only_with_an_slo() {
        let h = html(&capped(Some("ttft=1s")), "capacity");
        assert_eq!(attrs(&h, "goodput", "data-load").len(), 9, "{h}");
        assert!(h.contains(">goodput req/s</text>"));
        let h = html(&capped(None), "capacity");
        assert!(attrs(&h, "goodput", "data-load").is_empty());
        assert!(!h.contains("goodput req/s"));
        assert!(h.contains("no --slo: goodput not measured"));
    }

    #[test]
    fn the_page_is_self_contained() {
        let h = html(&capped(Some("ttft=1s")), "capacity");
        assert!(h.starts_with("<!doctype html>") && h.ends_with("</body></html>\n"));
        for outside in ["http://", "https://", "src=", "<script", "<link"] {
            assert!(!h.contains(outside), "{outside}");
        }
        assert!(h.contains("<svg") && h.contains("</svg>"));
    }

    #[test]
    fn thousands_are_separated_and_nonsense_is_a_dash() {
        assert_eq!(thousands(1_234_567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1_000.0), "1,000");
        assert_eq!(thousands(-12_345.0), "-12,345");
        assert_eq!(thousands(f64::NAN), "—");
        assert_eq!(tok(12.5), "12.5");
    }
}
