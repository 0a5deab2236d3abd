//! PromQL as Prometheus parses it: the expressions of Prometheus's own parser tests
//! (`tests/conformance/promql-parser.tsv`, cut from prometheus/prometheus
//! `promql/parser/parse_test.go`) and engine tests (`promql-testdata.tsv`, the `eval`
//! expressions of `promql/promqltest/testdata/*.test` not expected to fail), both cut by
//! `scripts/cut-promql-tests.py` (the source and commit are on each table's first line), each
//! with the outcome its test expects. An expression is *rejected* when
//! `check` says it does not parse (a `parse-error` or `other-dialect` at error severity), and
//! *accepted* otherwise — read, or said to be experimental or not checked. The bars are the
//! issue's (28): valid accepted ≥ 99.5 %, invalid rejected ≥ 95 %.
//!
//! `cargo test -p llmscope-check --test conformance -- --nocapture` prints the counts and every
//! case on the wrong side.

#![allow(clippy::print_stderr)]

use llmscope_check::inventory::engine::CatalogInventory;
use llmscope_check::promql::{Context, check_expr};
use llmscope_check::{Inventories, Rule, Severity};

fn cases(text: &str) -> Vec<(bool, String)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (outcome, input) = l.split_once('\t').expect("outcome<TAB>input");
            let input: String = serde_json::from_str(input).expect("a JSON string");
            (outcome == "valid", input)
        })
        .collect()
}

fn rejected(expr: &str, inv: &Inventories) -> bool {
    check_expr(expr, inv, Context::default()).iter().any(|h| {
        matches!(h.finding.rule, Rule::ParseError | Rule::OtherDialect)
            && h.finding.severity == Severity::Error
    })
}

/// Valid accepted, valid, invalid rejected, invalid, and the cases on the wrong side.
fn judge(cases: &[(bool, String)], inv: &Inventories) -> (usize, usize, usize, usize, Vec<String>) {
    let (mut valid, mut accepted, mut invalid, mut refused) = (0, 0, 0, 0);
    let mut wrong = Vec::new();
    for (ok, expr) in cases {
        let r = rejected(expr, inv);
        if *ok {
            valid += 1;
            accepted += usize::from(!r);
        } else {
            invalid += 1;
            refused += usize::from(r);
        }
        if *ok == r {
            let side = if *ok {
                "valid, refused:"
            } else {
                "invalid, accepted:"
            };
            wrong.push(format!("  {side} {expr:?}"));
        }
    }
    (accepted, valid, refused, invalid, wrong)
}

fn pct(a: usize, b: usize) -> f64 {
    100.0 * a as f64 / b.max(1) as f64
}

#[test]
fn prometheus_promql_tests_agree() {
    let mut inv = Inventories::new();
    inv.push(Box::new(CatalogInventory::new(
        "vllm@0.32".parse().unwrap(),
    )));
    let parser = judge(&cases(include_str!("conformance/promql-parser.tsv")), &inv);
    let engine = judge(
        &cases(include_str!("conformance/promql-testdata.tsv")),
        &inv,
    );
    for (name, (accepted, valid, refused, invalid, wrong)) in
        [("parser tests", &parser), ("engine tests", &engine)]
    {
        eprintln!(
            "promql conformance, {name}: valid accepted {accepted}/{valid} ({:.1} %), invalid rejected {refused}/{invalid} ({:.1} %)\n{}",
            pct(*accepted, *valid),
            pct(*refused, *invalid),
            wrong.join("\n")
        );
    }
    let (accepted, valid) = (parser.0 + engine.0, parser.1 + engine.1);
    let (refused, invalid) = (parser.2, parser.3);
    eprintln!(
        "promql conformance, all: valid accepted {accepted}/{valid} ({:.2} %), invalid rejected {refused}/{invalid} ({:.1} %)",
        pct(accepted, valid),
        pct(refused, invalid)
    );
    assert!(
        parser.1 > 150 && parser.3 > 100 && engine.1 > 1000,
        "a table was cut short"
    );
    assert!(pct(accepted, valid) >= 99.5, "valid accepted under 99.5 %");
    assert!(pct(refused, invalid) >= 95.0, "invalid rejected under 95 %");
}
