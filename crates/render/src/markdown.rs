//! The Markdown report, for an issue or a pull request: one function per section, in page
//! order; text from outside goes through `md`.
//!
//! [`write_linked`] is the same report with the HTML report's charts as SVG files beside it
//! ([`chart_files`]): the verdict's chart under the verdict, every other in a last section.

use crate::{REPLICA_HEAD, Report, client_rows, num, replica_rows};
use llmscope_core::outcome::ClientSummary;
use llmscope_diagnosis::DECISION_TABLE;
use std::io::{self, Write};

/// Escapes text for a Markdown table cell or line. Control characters (an escape sequence in a
/// server's error body or a label value) are shown escaped as a terminal shows them (`\x1b`),
/// never written raw: a report pasted into an issue or `cat` in a terminal runs none of them
/// (issue 50: 18 raw ESC reached `--markdown` output).
fn md(s: &str) -> String {
    let s = s.replace('\n', " ");
    llmscope_core::safe::terminal(&s)
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

pub fn write(r: &Report, out: &mut impl Write) -> io::Result<()> {
    write_linked(r, "", &[], out)
}

/// One chart of the report as the text of a standalone SVG file.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartFile {
    /// `01-output-tokens-s.svg`: its place on the page, then its title.
    pub file: String,
    pub title: String,
    pub svg: String,
}

/// Every chart the HTML report draws for `r`, in its order (the verdict's first), each made a
/// standalone SVG file (its namespace and the page's text style added). Panels with no data are
/// left out: the Markdown says nothing rather than link an empty chart.
pub fn chart_files(r: &Report) -> Vec<ChartFile> {
    let markup = crate::html::chart_markup(r);
    let figures = markup.split("<figure class=\"chart\"><figcaption>").skip(1);
    let files = figures.filter_map(|f| {
        let (title, rest) = f.split_once("</figcaption>")?;
        let svg = &rest[rest.find("<svg")?..rest.find("</svg>")? + "</svg>".len()];
        Some((title, svg))
    });
    files
        .enumerate()
        .map(|(n, (title, svg))| ChartFile {
            file: format!("{:02}-{}.svg", n + 1, slug(title)),
            title: title.to_owned(),
            svg: standalone(svg),
        })
        .collect()
}

/// An inline `<svg>` as a file of its own: the SVG namespace, and the page's style for text.
fn standalone(svg: &str) -> String {
    let body = svg.strip_prefix("<svg").unwrap_or(svg);
    format!("<svg xmlns=\"http://www.w3.org/2000/svg\"{body}").replacen(
        '>',
        "><style>text{font:12px system-ui,sans-serif}</style>",
        1,
    )
}

/// A title (HTML-escaped) as a file name: lower-case letters and digits, runs of anything else
/// (an entity such as `&#39;` included) one `-`.
fn slug(title: &str) -> String {
    let mut out = String::new();
    let mut entity = false;
    for c in title.chars() {
        entity = (entity || c == '&') && c != ';';
        if c.is_ascii_alphanumeric() && !entity {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out.trim_matches('-').chars().take(48).collect();
    out.trim_end_matches('-').to_owned()
}

/// The report with `charts` linked from `dir` (relative to the Markdown file): the first (the
/// verdict's) under the verdict, the others in a section of their own at the end.
pub fn write_linked(
    r: &Report,
    dir: &str,
    charts: &[ChartFile],
    out: &mut impl Write,
) -> io::Result<()> {
    let link = |c: &ChartFile, out: &mut dyn Write| {
        let alt = c.title.replace(['[', ']', '\n'], " ");
        writeln!(out, "![{alt}]({dir}/{})\n", c.file)
    };
    head(r, out)?;
    verdict(r, out)?;
    if let Some(first) = charts.first() {
        link(first, out)?;
    }
    replicas(r, out)?;
    recommendations(r, out)?;
    failed_requests(r, out)?;
    evidence(r, out)?;
    findings(r, out)?;
    window_stats(r, out)?;
    decision_table(r, out)?;
    if let Some(c) = r.client {
        client(c, out)?;
    }
    if charts.len() > 1 {
        writeln!(out, "## Charts\n")?;
        charts.iter().skip(1).try_for_each(|c| link(c, out))?;
    }
    Ok(())
}

/// The title and what the run was (simulated, context, interrupted).
fn head(r: &Report, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "# {}\n", md(&r.title))?;
    if r.simulated {
        let sim = "_Simulated stack (`llmscope sim`), not real hardware._";
        writeln!(out, "{sim}\n")?;
    }
    for line in &r.context {
        writeln!(out, "- {}", md(line))?;
    }
    if let Some(i) = &r.interrupted {
        writeln!(out, "\n> **Run {}**", md(&i.warning()))?;
    }
    Ok(())
}

fn verdict(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let v = &r.diagnosis.verdict;
    writeln!(
        out,
        "\n## Verdict: `{}` (confidence {:.0}%)\n",
        v.bottleneck.as_str(),
        v.confidence * 100.0
    )?;
    writeln!(out, "{}\n", md(&v.summary))
}

/// Each replica's own verdict and levels, when there are two or more.
fn replicas(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let rows = replica_rows(r);
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Replicas (mean over the steady window)\n")?;
    writeln!(
        out,
        "| {} |\n|{}",
        REPLICA_HEAD.join(" | "),
        "---|".repeat(7)
    )?;
    for cells in &rows {
        let cells: Vec<String> = cells.iter().map(|c| md(c)).collect();
        let shown: Vec<&dyn std::fmt::Display> =
            cells.iter().map(|c| c as &dyn std::fmt::Display).collect();
        row(out, &shown)?;
    }
    writeln!(out)
}

fn recommendations(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let recs = &r.diagnosis.recommendations;
    if !recs.is_empty() {
        writeln!(out, "## What to change\n")?;
    }
    for (i, rec) in recs.iter().enumerate() {
        let (action, reason) = (md(&rec.action), md(&rec.reason));
        writeln!(out, "{}. **{action}** — {reason}", i + 1)?;
        if let Some(p) = &rec.predicted {
            writeln!(out, "   *Predicted:* {}", md(p))?;
        }
    }
    Ok(())
}

fn failed_requests(r: &Report, out: &mut impl Write) -> io::Result<()> {
    let Some((head, kinds)) = crate::failures(r) else {
        return Ok(());
    };
    writeln!(out, "\n## Failed requests\n\n{}\n", md(&head))?;
    for (kind, bodies) in kinds {
        writeln!(out, "- `{kind}`")?;
        for body in bodies {
            writeln!(out, "  - server said: {}", md(body))?;
        }
    }
    Ok(())
}

fn evidence(r: &Report, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "\n## Evidence\n\n| signal | statistic | value | test | source |\n|---|---|---|---|---|"
    )?;
    for ev in &r.diagnosis.evidence {
        let test = ev
            .threshold
            .map_or(String::new(), |t| format!("{} {}", ev.test, num(t)));
        let (value, test, source) = (num(ev.value), md(&test), md(&ev.source));
        row(out, &[&ev.signal, &ev.statistic, &value, &test, &source])?;
    }
    Ok(())
}

/// One table row: `| a | b |`.
fn row(out: &mut impl Write, cells: &[&dyn std::fmt::Display]) -> io::Result<()> {
    write!(out, "|")?;
    for cell in cells {
        write!(out, " {cell} |")?;
    }
    writeln!(out)
}

fn findings(r: &Report, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "\n## Findings\n")?;
    for f in &r.diagnosis.findings {
        let message = md(&f.message);
        writeln!(out, "- **{:?}** `{}`: {message}", f.severity, f.rule)?;
    }
    Ok(())
}

fn window_stats(r: &Report, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "\n## Steady-window statistics\n\n| signal | max | min≠0 | mean≠0 | headroom |\n|---|---|---|---|---|"
    )?;
    for (name, s) in &r.diagnosis.window_stats {
        let head = s
            .headroom
            .map_or(String::new(), |h| format!("{:.1}%", h * 100.0));
        let (max, min, mean) = (num(s.max), num(s.min_nonzero), num(s.mean_nonzero));
        row(out, &[name, &max, &min, &mean, &head])?;
    }
    Ok(())
}

/// The decision table, the verdict's row marked.
fn decision_table(r: &Report, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "\n## Decision table\n\n| | GPU | KV | waiting | bottleneck |\n|---|---|---|---|---|"
    )?;
    for (i, d) in DECISION_TABLE.iter().enumerate() {
        let mark = if r.diagnosis.verdict.row == Some(i) {
            "→"
        } else {
            ""
        };
        row(out, &[&mark, &d.gpu, &d.kv, &d.waiting, &d.bottleneck])?;
    }
    Ok(())
}

fn client(c: &ClientSummary, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "\n## Client side (ms)\n\n| | p50 | p90 | p95 | p99 | mean |\n|---|---|---|---|---|---|"
    )?;
    for (name, qs) in client_rows(c) {
        let q = qs.map(|q| q.map_or("—".to_owned(), num));
        row(out, &[&name, &q[0], &q[1], &q[2], &q[3], &q[4]])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_slug_drops_entities_and_joins_the_rest() {
        let slug = super::slug("TTFT p95 (the client&#39;s requests, 1 s) &lt;b&gt;");
        assert_eq!(slug, "ttft-p95-the-client-s-requests-1-s-b");
    }

    /// Outside text: Markdown's specials escaped, newlines joined, control characters shown.
    #[test]
    fn outside_text_reaches_markdown_escaped_and_without_raw_controls() {
        let text = "busy\u{1b}[31m | <b>\nnext\u{7}\u{202e}";
        let shown = super::md(text);
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert_eq!(
            shown,
            "busy\\\\x1b[31m \\| &lt;b&gt; next\\\\x07\\\\u{202e}"
        );
    }
}
