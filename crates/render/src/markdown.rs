//! The Markdown report, for an issue or a pull request.

use crate::{Report, client_rows, num};
use llmscope_core::diagnose::DECISION_TABLE;
use std::io::{self, Write};

/// Escapes text for a Markdown table cell or line.
fn md(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\n', " ")
}

pub fn write(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let d = r.diagnosis;
    writeln!(out, "# {}\n", md(&r.title))?;
    if r.simulated {
        writeln!(
            out,
            "_Simulated stack (`llmscope sim`), not real hardware._\n"
        )?;
    }
    for line in &r.context {
        writeln!(out, "- {}", md(line))?;
    }
    if let Some(i) = &r.interrupted {
        writeln!(out, "\n> **Run {}**", md(&i.warning()))?;
    }
    writeln!(
        out,
        "\n## Verdict: `{}` (confidence {:.0}%)\n",
        d.verdict.bottleneck.as_str(),
        d.verdict.confidence * 100.0
    )?;
    writeln!(out, "{}\n", md(&d.verdict.summary))?;
    if !d.recommendations.is_empty() {
        writeln!(out, "## What to change\n")?;
        for (i, rec) in d.recommendations.iter().enumerate() {
            writeln!(
                out,
                "{}. **{}** — {}",
                i + 1,
                md(&rec.action),
                md(&rec.reason)
            )?;
        }
    }
    if let Some((head, kinds)) = crate::failures(r) {
        writeln!(out, "\n## Failed requests\n\n{}\n", md(&head))?;
        for (kind, bodies) in kinds {
            writeln!(out, "- `{kind}`")?;
            for body in bodies {
                writeln!(out, "  - server said: {}", md(body))?;
            }
        }
    }
    writeln!(
        out,
        "\n## Evidence\n\n| signal | statistic | value | test | source |\n|---|---|---|---|---|"
    )?;
    for ev in &d.evidence {
        let test = ev
            .threshold
            .map_or(String::new(), |t| format!("{} {}", ev.test, num(t)));
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            ev.signal,
            ev.statistic,
            num(ev.value),
            md(&test),
            md(&ev.source)
        )?;
    }
    writeln!(out, "\n## Findings\n")?;
    for f in &d.findings {
        writeln!(
            out,
            "- **{:?}** `{}`: {}",
            f.severity,
            f.rule,
            md(&f.message)
        )?;
    }
    writeln!(
        out,
        "\n## Steady-window statistics\n\n| signal | max | min≠0 | mean≠0 | headroom |\n|---|---|---|---|---|"
    )?;
    for (name, s) in &d.window_stats {
        let head = s
            .headroom
            .map_or(String::new(), |h| format!("{:.1}%", h * 100.0));
        writeln!(
            out,
            "| {name} | {} | {} | {} | {head} |",
            num(s.max),
            num(s.min_nonzero),
            num(s.mean_nonzero)
        )?;
    }
    writeln!(
        out,
        "\n## Decision table\n\n| | GPU | KV | waiting | bottleneck |\n|---|---|---|---|---|"
    )?;
    for (i, row) in DECISION_TABLE.iter().enumerate() {
        let mark = if d.verdict.row == Some(i) { "→" } else { "" };
        writeln!(
            out,
            "| {mark} | {} | {} | {} | {} |",
            row.gpu, row.kv, row.waiting, row.bottleneck
        )?;
    }
    if let Some(c) = r.client {
        writeln!(
            out,
            "\n## Client side (ms)\n\n| | p50 | p90 | p95 | p99 | mean |\n|---|---|---|---|---|---|"
        )?;
        for (name, qs) in client_rows(c) {
            let cells: Vec<String> = qs.iter().map(|q| q.map_or("—".to_owned(), num)).collect();
            writeln!(out, "| {name} | {} |", cells.join(" | "))?;
        }
    }
    Ok(())
}
