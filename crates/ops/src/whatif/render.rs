//! `whatif`'s answer as text (a table a person reads: measured, predicted with its band,
//! confirmed), Markdown (the same tables) or JSON (the [`WhatIf`] itself).

use super::{Arrivals, Figures, StageFit, WhatIf};
use crate::OpsError;
use crate::analysis::Format;
use llmscope_core::number::thousands;
use std::io::Write;

/// Writes `w` in `format`.
pub fn write(w: &WhatIf, format: Format, out: &mut dyn Write) -> Result<(), OpsError> {
    match format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, w).map_err(std::io::Error::from)?;
            writeln!(out)?;
        }
        Format::Text => write_table(w, out, false)?,
        Format::Markdown => write_table(w, out, true)?,
    }
    Ok(out.flush()?)
}

fn load(a: &Arrivals) -> String {
    match a {
        Arrivals::Closed { concurrency } => format!("{concurrency} clients"),
        Arrivals::Open { rate, .. } => format!("{rate:.1} req/s"),
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or("—".to_owned(), |v| {
        if v >= 100.0 {
            thousands(v)
        } else {
            format!("{v:.1}")
        }
    })
}

fn pct(v: Option<f64>) -> String {
    v.map_or("—".to_owned(), |v| format!("{:+.0}%", v * 100.0))
}

/// Rows of cells, aligned (text) or piped (Markdown).
fn table(rows: &[Vec<String>], markdown: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (i, r) in rows.iter().enumerate() {
        if markdown {
            writeln!(out, "| {} |", r.join(" | "))?;
            if i == 0 {
                writeln!(out, "|{}", "---|".repeat(r.len()))?;
            }
        } else {
            let cells: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(c, s)| format!("{s:<w$}", w = width[c]))
                .collect();
            writeln!(out, "  {}", cells.join("  ").trim_end())?;
        }
    }
    writeln!(out)
}

fn write_table(w: &WhatIf, out: &mut dyn Write, markdown: bool) -> std::io::Result<()> {
    let b = &w.base;
    let changes: Vec<String> = w.changes.iter().map(ToString::to_string).collect();
    writeln!(
        out,
        "whatif: run {} ({}, {}-token prompts, {}-token answers{}, --max-num-seqs {}) with {}\n",
        b.run,
        load(&b.workload.arrivals),
        b.workload.prompt_tokens,
        b.workload.output_tokens,
        if b.workload.frontend_s >= 0.0005 {
            format!(
                ", {:.1} ms a request outside the engine",
                b.workload.frontend_s * 1e3
            )
        } else {
            String::new()
        },
        b.deployment.max_num_seqs,
        if changes.is_empty() {
            "no change (the fit replayed)".to_owned()
        } else {
            changes.join(", ")
        }
    )?;
    let m = &w.fit.model;
    writeln!(
        out,
        "fitted engine step: {:.2} ms + {:.3} ms per sequence + {:.4} ms per prompt token{} ({} intervals, {:.1}–{:.1} sequences per step, residual {:.1}%)\n",
        m.step_s * 1e3,
        m.seq_s * 1e3,
        m.prompt_token_s * 1e3,
        m.prompt_token_range
            .map_or(String::new(), |(lo, hi)| format!(
                " (the runs allow {:.4}–{:.4})",
                lo * 1e3,
                hi * 1e3
            )),
        m.intervals,
        m.batch_range.0,
        m.batch_range.1,
        m.residual * 100.0
    )?;
    if let Some(f) = w.fit.front_end {
        let applied = if f.contradicted_by.is_none() {
            "the most the replays let it stream"
        } else {
            "not applied: another run streamed more"
        };
        writeln!(
            out,
            "API server: held the load at {} output tok/s in run {} ({:.1} of {:.0} requests outside the engine) — {applied}\n",
            thousands(f.output_tok_s),
            f.run,
            f.outside.0,
            f.outside.1
        )?;
    }
    fit_table(&w.fit.stages, out, markdown)?;
    prediction_table(w, out, markdown)?;
    if !w.caveats.is_empty() {
        writeln!(out, "what the model leaves out here:")?;
        for c in &w.caveats {
            writeln!(out, "  - {c}")?;
        }
    }
    Ok(())
}

fn fit_table(stages: &[StageFit], out: &mut dyn Write, markdown: bool) -> std::io::Result<()> {
    writeln!(out, "each run replayed on the fitted engine:")?;
    let mut rows = vec![
        [
            "run", "load", "cap", "tok/s", "replayed", "error", "TTFT p50", "replayed", "error",
            "limit", "replayed",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for s in stages {
        rows.push(vec![
            s.run.to_string(),
            load(&s.load),
            s.max_num_seqs.to_string(),
            thousands(s.measured.output_tok_s),
            thousands(s.replayed.output_tok_s),
            pct(s.error.output_tok_s),
            ms(s.measured.ttft_ms.p50),
            ms(s.replayed.ttft_ms.p50),
            pct(s.error.ttft_p50),
            s.measured.bottleneck.clone(),
            s.replayed.limit(),
        ]);
    }
    table(&rows, markdown, out)
}

fn prediction_table(w: &WhatIf, out: &mut dyn Write, markdown: bool) -> std::io::Result<()> {
    let p = &w.predicted;
    let band = &p.band;
    let c = w.confirmed.as_ref();
    let mut head = vec![
        String::new(),
        format!("run {} (measured)", w.base.run),
        "predicted".to_owned(),
        "band".to_owned(),
    ];
    if let Some(c) = c {
        head.push(format!("run {} (confirmed)", c.run));
    }
    let row = |name: &str, f: &dyn Fn(&Figures) -> String, band: String| {
        let mut r = vec![name.to_owned(), f(&w.base.measured), f(&p.figures), band];
        if let Some(c) = c {
            r.push(f(&c.figures));
        }
        r
    };
    let rows = vec![
        head,
        row(
            "output tok/s",
            &|f| thousands(f.output_tok_s),
            format!(
                "{}–{}",
                thousands(band.output_tok_s.0),
                thousands(band.output_tok_s.1)
            ),
        ),
        row("req/s", &|f| format!("{:.2}", f.req_s), String::new()),
        row(
            "TTFT p50 ms",
            &|f| ms(f.ttft_ms.p50),
            band.ttft_p50_ms.map_or(String::new(), |(a, b)| {
                format!("{}–{}", ms(Some(a)), ms(Some(b)))
            }),
        ),
        row("TTFT p95 ms", &|f| ms(f.ttft_ms.p95), String::new()),
        row("ITL p50 ms", &|f| ms(f.itl_ms.p50), String::new()),
        row("limit", &|f| f.limit(), String::new()),
    ];
    writeln!(out, "predicted:")?;
    table(&rows, markdown, out)?;
    if let Some(c) = c {
        for t in &c.within {
            writeln!(out, "  {} {}", if t.met { "ok  " } else { "MISS" }, t.what)?;
        }
        writeln!(out)?;
    }
    Ok(())
}
