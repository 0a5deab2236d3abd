//! PromQL: [`parse`] (with located errors), the rules in [`analyze`], label-set propagation in
//! [`labels`], unit propagation in [`units`], and name findings and suggestions in [`names`].
//!
//! [`check_expr`] is the entry point: text in, [`Hit`]s out (a `parse-error`, or the rules'
//! findings), each with the text to underline so the caller can turn it into a line and column.

pub mod analyze;
pub mod labels;
pub mod names;
pub mod parse;
pub mod units;

pub use analyze::{Context, Hit};

use crate::finding::{Finding, Rule, Severity};
use crate::inventory::Inventories;

/// Parses and checks one expression.
pub fn check_expr(text: &str, inv: &Inventories, cx: Context<'_>) -> Vec<Hit> {
    match parse::parse(text) {
        Ok(expr) => analyze::check(&expr, inv, cx),
        Err(e) => {
            let at = e.offset.map(|o| {
                let (line, col) = parse::line_col(text, o);
                format!(" at line {line}, column {col}")
            });
            let f = Finding::new(
                Rule::ParseError,
                Severity::Error,
                format!(
                    "PromQL does not parse{}: {}",
                    at.unwrap_or_default(),
                    e.message
                ),
            );
            vec![Hit {
                finding: f,
                needle: e.offset.map(|o| format!("\u{0}{o}")),
            }]
        }
    }
}

/// Where a hit's needle is in `text`: a byte offset.
pub fn needle_offset(text: &str, needle: &str) -> Option<usize> {
    match needle.strip_prefix('\u{0}') {
        Some(offset) => offset.parse().ok(),
        None => text.find(needle),
    }
}

#[cfg(test)]
mod tests;
