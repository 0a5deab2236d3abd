//! `llmscope cost`'s report: per team GPU-hours (reserved, busy, idle), cost, idle cost, output
//! tokens and cost per million tokens, with what to do — as a table, CSV or JSON. A value the
//! inputs do not give is shown as absent (`—`, or empty in CSV), never as 0; `-0.00` is never
//! printed. Team names and the server's warnings come from outside: control characters are
//! shown escaped and secrets redacted.

use llmscope_core::cost::{BusyBasis, CostReport, TeamCost};
use llmscope_core::safe::clean;
use llmscope_core::time::format_rfc3339;
use std::io::Write;

/// The formats of the cost report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Csv,
}

/// Writes the cost report in `format`.
pub fn write(r: &CostReport, format: Format, mut out: impl Write) -> std::io::Result<()> {
    match format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, r).map_err(std::io::Error::other)?;
            writeln!(out)?;
        }
        Format::Csv => csv(r, &mut out)?,
        Format::Text => text(r, &mut out)?,
    }
    out.flush()?;
    Ok(())
}

/// `v` with `d` decimals, `—` when absent; `+ 0.0` turns a -0.0 into 0.0: `-0.00` is never
/// printed.
fn fixed(v: Option<f64>, d: usize) -> String {
    v.map_or("—".to_owned(), |v| format!("{:.d$}", v + 0.0))
}

/// Whose utilisation a team's busy hours use; empty when unknown.
fn basis(t: &TeamCost) -> &'static str {
    match t.busy_basis {
        Some(BusyBasis::Workload) => "workload",
        Some(BusyBasis::Fleet) => "fleet",
        None => "",
    }
}

/// One row per team, then the totals; an absent value is an empty field.
fn csv(r: &CostReport, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "team,gpu_hours,busy_gpu_hours,busy_basis,idle_gpu_hours,cost,idle_cost,output_tokens,cost_per_million_tokens"
    )?;
    for t in r.teams.iter().chain([&r.totals]) {
        csv_row(t, out)?;
    }
    Ok(())
}

fn csv_row(t: &TeamCost, out: &mut impl Write) -> std::io::Result<()> {
    let c = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    writeln!(
        out,
        "{},{},{},{},{},{},{},{},{}",
        csv_field(&t.team),
        c(t.gpu_hours),
        c(t.busy_gpu_hours),
        basis(t),
        c(t.idle_gpu_hours),
        c(t.cost),
        c(t.idle_cost),
        c(t.output_tokens),
        c(t.cost_per_million_tokens)
    )
}

/// A CSV field, quoted as RFC 4180 says ([`crate::csv::field`]).
fn csv_field(text: &str) -> std::borrow::Cow<'_, str> {
    crate::csv::field(text)
}

/// The table, what to do per team, then the server's warnings.
fn text(r: &CostReport, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "GPU cost, {} … {}",
        format_rfc3339(r.from),
        format_rfc3339(r.to)
    )?;
    for m in &r.missing {
        writeln!(out, "partial: missing {}", clean(m))?;
    }
    if r.teams.is_empty() && !r.missing.is_empty() {
        writeln!(
            out,
            "GPU-hours unknown: the inputs above could not be read (not zero)"
        )?;
    } else if r.teams.is_empty() {
        writeln!(out, "no team held GPUs in the window (see the warnings)")?;
    }
    table(r, out)?;
    advice(r, out)?;
    for w in &r.warnings {
        writeln!(out, "warning: {}", clean(w))?;
    }
    Ok(())
}

/// One row per team, then the totals when there are teams.
fn table(r: &CostReport, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<14} {:>10} {:>10} {:>10} {:>10} {:>10} {:>12} {:>10}",
        "team", "GPU-h", "busy GPU-h", "idle GPU-h", "cost", "idle cost", "out tokens", "$/1M tok"
    )?;
    let totals = Some(&r.totals).filter(|_| !r.teams.is_empty());
    for t in r.teams.iter().chain(totals) {
        row(t, out)?;
    }
    Ok(())
}

fn row(t: &TeamCost, out: &mut impl Write) -> std::io::Result<()> {
    // Busy hours from the fleet average, not the team's own GPUs, are marked.
    let busy = match t.busy_basis {
        Some(BusyBasis::Fleet) => format!("{}*", fixed(t.busy_gpu_hours, 2)),
        _ => fixed(t.busy_gpu_hours, 2),
    };
    writeln!(
        out,
        "{:<14} {:>10} {busy:>10} {:>10} {:>10} {:>10} {:>12} {:>10}",
        clean(&t.team),
        fixed(t.gpu_hours, 2),
        fixed(t.idle_gpu_hours, 2),
        fixed(t.cost, 2),
        fixed(t.idle_cost, 2),
        fixed(t.output_tokens, 0),
        fixed(t.cost_per_million_tokens, 2)
    )
}

/// "What to do", per team, with the prices that applied.
fn advice(r: &CostReport, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "\nWhat to do")?;
    for t in &r.teams {
        writeln!(out, "  {}: {}{}", clean(&t.team), t.advice, priced(t))?;
    }
    if r.teams
        .iter()
        .any(|t| t.busy_basis == Some(BusyBasis::Fleet))
    {
        writeln!(out, "  * busy from the fleet-average utilisation")?;
    }
    Ok(())
}

/// ` (priced: a100=2, h100=4)`: which price applied to which flavor, when any did.
fn priced(t: &TeamCost) -> String {
    if t.prices.is_empty() {
        String::new()
    } else {
        format!(" (priced: {})", t.prices.join(", "))
    }
}
