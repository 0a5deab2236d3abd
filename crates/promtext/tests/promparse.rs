//! The text format as Prometheus's scraper reads it: the pages of Prometheus's own text-parser
//! tests (`tests/conformance/promparse.tsv`, cut from prometheus/prometheus
//! `model/textparse/promparse_test.go` by `scripts/cut-promql-tests.py --promparse`; the source
//! and commit are on its first line) — the page `TestPromParse` reads whole, and the cases of
//! `TestPromParseErrors` and `TestPromNullByteHandling`, invalid where they expect an error.
//! A valid page is read without a warning, an invalid one gets one ([`PageReport::warnings`]).
//!
//! `cargo test -p promtext --test promparse -- --nocapture` prints the counts and every case on
//! the wrong side.

#![allow(clippy::print_stderr)]

use promtext::{Format, PageReport, ParseOptions, parse_families_with};

/// Valid pages llmscope warns about on purpose, and why.
const SAYS_MORE: &[(&str, &str)] = &[(
    "TestPromParse",
    "it writes go_gc_duration_seconds{quantile=\"1.0\",a=\"b\"} four times with blanks in different places: Prometheus parses each and then drops three as duplicate samples for one timestamp, which llmscope says",
)];

#[test]
fn prometheus_text_parser_tests_agree() {
    let table = include_str!("conformance/promparse.tsv");
    let (mut valid, mut quiet, mut invalid, mut warned) = (0, 0, 0, 0);
    let mut wrong = Vec::new();
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let mut cols = line.splitn(3, '\t');
        let (case, outcome, page) = (
            cols.next().unwrap(),
            cols.next().unwrap(),
            cols.next().unwrap(),
        );
        let page: String = serde_json::from_str(page).expect("a JSON string");
        let options = ParseOptions::lenient().with_format(Format::Text);
        let (families, errors) = parse_families_with(page.as_bytes(), options);
        let said = PageReport::new(page.as_bytes(), &families, &errors).warnings("page");
        if let Some((_, why)) = SAYS_MORE.iter().find(|(c, _)| *c == case) {
            let only_duplicates = said.len() == 1 && said[0].contains("duplicate series");
            assert!(only_duplicates, "{case}: {why}; said {said:?}");
            continue;
        }
        if outcome == "valid" {
            valid += 1;
            quiet += usize::from(said.is_empty());
            if !said.is_empty() {
                wrong.push(format!("  valid, warned: {case}: {}", said.join("; ")));
            }
        } else {
            invalid += 1;
            warned += usize::from(!said.is_empty());
            if said.is_empty() {
                wrong.push(format!("  invalid, quiet: {case}: {page:?}"));
            }
        }
    }
    eprintln!(
        "promparse conformance: valid quiet {quiet}/{valid}, invalid warned {warned}/{invalid}\n{}",
        wrong.join("\n")
    );
    assert!(valid >= 4 && invalid >= 20, "the table was cut short");
    assert_eq!(quiet, valid, "valid pages warned about");
    assert_eq!(warned, invalid, "pages Prometheus rejects passed quietly");
}
