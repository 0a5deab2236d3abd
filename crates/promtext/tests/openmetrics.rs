//! The OpenMetrics 1.0 parser test suite (`tests/conformance/openmetrics.tsv`, cut from
//! prometheus/OpenMetrics `tests/testdata/parsers` by `scripts/cut-openmetrics-tests.py`; the
//! source and commit are on its first line): every page the suite says parses is read without a
//! warning, and every page it says must not parse gets one ([`PageReport::warnings`]), read as
//! OpenMetrics. The bars are the (28): valid quiet ≥ 98 %, rejected warned ≥ 95 %. The
//! suite's rules beyond a line's syntax are [`promtext::openmetrics`]'s.
//!
//! Where llmscope deliberately says more than the suite, the case is listed in [`SAYS_MORE`]
//! with why, and counted apart.
//!
//! `cargo test -p promtext --test openmetrics -- --nocapture` prints the counts and every case
//! on the wrong side.

#![allow(clippy::print_stderr)]

use promtext::{Format, PageReport, ParseOptions, parse_families_with};

/// Valid pages llmscope warns about on purpose, and why.
const SAYS_MORE: &[(&str, &str)] = &[(
    "duplicate_timestamps_1",
    "one series repeats with the same timestamp: it parses, but Prometheus keeps the first and drops the rest (prometheus_target_scrapes_sample_duplicate_timestamp_total), which llmscope says",
)];

fn warnings(page: &[u8]) -> Vec<String> {
    let options = ParseOptions::lenient().with_format(Format::OpenMetrics);
    let (families, errors) = parse_families_with(page, options);
    PageReport::new(page, &families, &errors).warnings("page")
}

#[test]
fn the_openmetrics_suite_agrees() {
    let table = include_str!("conformance/openmetrics.tsv");
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
        let said = warnings(page.as_bytes());
        if let Some((_, why)) = SAYS_MORE.iter().find(|(c, _)| *c == case) {
            assert!(!said.is_empty(), "{case} is listed as warned: {why}");
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
    let pct = |a: usize, b: usize| 100.0 * a as f64 / b.max(1) as f64;
    eprintln!(
        "openmetrics conformance: valid quiet {quiet}/{valid} ({:.1} %), invalid warned {warned}/{invalid} ({:.1} %)\n{}",
        pct(quiet, valid),
        pct(warned, invalid),
        wrong.join("\n")
    );
    assert!(valid > 40 && invalid > 150, "the table was cut short");
    eprintln!(
        "said more than the suite, on purpose: {}",
        SAYS_MORE
            .iter()
            .map(|(c, _)| *c)
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(pct(quiet, valid) >= 98.0, "valid pages warned about");
    assert!(
        pct(warned, invalid) >= 95.0,
        "rejected pages passed quietly"
    );
}
