//! Pages as their own format's test suites judge them, each case with the outcome its suite
//! states: a valid page is read without a warning, an invalid one gets one
//! ([`PageReport::warnings`]). Tables in `tests/conformance/` (their source and commit on their
//! first line):
//!
//! - `openmetrics.tsv`: the OpenMetrics 1.0 parser suite (prometheus/OpenMetrics
//!   `tests/testdata/parsers`, cut by `scripts/cut-openmetrics-tests.py`), read as OpenMetrics;
//!   the (28) bars: valid quiet ≥ 98 %, rejected warned ≥ 95 %. The suite's rules beyond a
//!   line's syntax are [`promtext::openmetrics`]'s.
//! - `promparse.tsv`: the text-format pages of Prometheus's own scrape parser tests
//!   (prometheus/prometheus `model/textparse/promparse_test.go`, cut by
//!   `scripts/cut-promql-tests.py --promparse`), read as text: every case agrees.
//! - `expfmt.tsv`: the pages of prometheus/common's text parser tests (`expfmt/text_parse_test.go`,
//!   the parser of `promtool check metrics` and the Pushgateway; cut by
//!   `scripts/cut-promql-tests.py --expfmt`): every case agrees except where Prometheus's scraper
//!   judges the page otherwise ([`SCRAPER_JUDGES`], each with why).
//! - `omparse.tsv`: the OpenMetrics pages of Prometheus's own parser tests
//!   (`model/textparse/openmetricsparse_test.go`, cut by `scripts/cut-promql-tests.py --omparse`),
//!   read as OpenMetrics: "Prometheus will reject this page" on exactly the pages it refuses.
//!
//! Where llmscope deliberately says more than a suite, the case is listed with why, and counted
//! apart. `cargo test -p promtext --test conformance -- --nocapture` prints the counts and every
//! case on the wrong side.

#![allow(clippy::print_stderr)]

use promtext::{Format, PageReport, ParseOptions, parse_families_with};

/// Valid pages llmscope warns about on purpose (a duplicate series), and why.
const SAYS_MORE: &[(&str, &str)] = &[
    (
        "duplicate_timestamps_1",
        "one series repeats with the same timestamp: it parses, but Prometheus keeps the first and drops the rest (prometheus_target_scrapes_sample_duplicate_timestamp_total), which llmscope says",
    ),
    (
        "TestPromParse",
        "it writes go_gc_duration_seconds{quantile=\"1.0\",a=\"b\"} four times with blanks in different places: Prometheus parses each and then drops three as duplicate samples for one timestamp, which llmscope says",
    ),
];

/// Counts of one table: valid, valid quiet, invalid, invalid warned; and the cases on the wrong
/// side.
struct Judged {
    valid: usize,
    quiet: usize,
    invalid: usize,
    warned: usize,
    wrong: Vec<String>,
}

/// What a table's invalid pages must get: any warning (the page breaks its format's rules), or
/// "Prometheus will reject this page" (Prometheus's own parser refuses it; its valid pages must
/// get no such claim, though another warning may stand).
#[derive(Clone, Copy, PartialEq)]
enum Bar {
    AnyWarning,
    Rejection,
}

fn judge(name: &str, table: &str, format: Format) -> Judged {
    judge_by(name, table, format, Bar::AnyWarning)
}

fn judge_by(name: &str, table: &str, format: Format, bar: Bar) -> Judged {
    let mut j = Judged {
        valid: 0,
        quiet: 0,
        invalid: 0,
        warned: 0,
        wrong: Vec::new(),
    };
    let mut wrong = Vec::new();
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let mut cols = line.splitn(3, '\t');
        let (case, outcome, page) = (
            cols.next().unwrap(),
            cols.next().unwrap(),
            cols.next().unwrap(),
        );
        let page: String = serde_json::from_str(page).expect("a JSON string");
        let options = ParseOptions::lenient().with_format(format);
        let (families, errors) = parse_families_with(page.as_bytes(), options);
        let mut said =
            PageReport::new_as(page.as_bytes(), format, &families, &errors).warnings("page");
        if let Some((_, why)) = SAYS_MORE.iter().find(|(c, _)| *c == case) {
            let only_duplicates = said.len() == 1 && said[0].contains("duplicate series");
            assert!(only_duplicates, "{case}: {why}; said {said:?}");
            continue;
        }
        if bar == Bar::Rejection {
            said.retain(|w| w.contains("Prometheus will reject this page"));
        }
        if outcome == "valid" {
            j.valid += 1;
            j.quiet += usize::from(said.is_empty());
            if !said.is_empty() {
                wrong.push(format!("  valid, warned: {case}: {}", said.join("; ")));
                j.wrong.push(case.to_owned());
            }
        } else {
            j.invalid += 1;
            j.warned += usize::from(!said.is_empty());
            if said.is_empty() {
                wrong.push(format!("  invalid, quiet: {case}: {page:?}"));
                j.wrong.push(case.to_owned());
            }
        }
    }
    eprintln!(
        "{name} conformance: valid quiet {}/{} ({:.1} %), invalid warned {}/{} ({:.1} %)\n{}",
        j.quiet,
        j.valid,
        pct(j.quiet, j.valid),
        j.warned,
        j.invalid,
        pct(j.warned, j.invalid),
        wrong.join("\n")
    );
    j
}

fn pct(a: usize, b: usize) -> f64 {
    100.0 * a as f64 / b.max(1) as f64
}

#[test]
fn the_openmetrics_suite_agrees() {
    let table = include_str!("conformance/openmetrics.tsv");
    let j = judge("openmetrics", table, Format::OpenMetrics);
    assert!(j.valid > 40 && j.invalid > 150, "the table was cut short");
    assert!(pct(j.quiet, j.valid) >= 98.0, "valid pages warned about");
    assert!(
        pct(j.warned, j.invalid) >= 95.0,
        "rejected pages passed quietly"
    );
}

#[test]
fn prometheus_text_parser_tests_agree() {
    let table = include_str!("conformance/promparse.tsv");
    let j = judge_by("promparse", table, Format::Text, Bar::Rejection);
    assert!(j.valid >= 4 && j.invalid >= 20, "the table was cut short");
    assert_eq!(j.quiet, j.valid, "valid pages warned about");
    assert_eq!(
        j.warned, j.invalid,
        "pages Prometheus rejects passed quietly"
    );
}

/// Where prometheus/common's parser and Prometheus's scraper (`model/textparse/promparse.go`,
/// `scrape/scrape.go`) judge a page apart, llmscope says what the scrape does; each such case of
/// `expfmt.tsv`, and why.
const SCRAPER_JUDGES: &[(&str, &str)] = &[
    (
        "testTextParse/0",
        "an empty page is valid, and llmscope says it is empty: a /metrics page with nothing on it is no live target",
    ),
    (
        "testTextParse/16",
        "`# TYPE … gauge_histogram` in the text format: prometheus/common tolerates it, the scraper fails the page (invalid metric type)",
    ),
    ("testTextParse/17", "the same gauge_histogram TYPE line"),
    (
        "testTextParseError/0",
        "no newline after the last line: the scraper adds one",
    ),
    (
        "testTextParseError/1",
        "`\\t` in a label value: the scraper's lexer takes any backslash escape",
    ),
    (
        "testTextParseError/36",
        "`\\x` in a quoted name: any backslash escape, as above",
    ),
    (
        "testTextParseError/38",
        "`\\t` in a quoted name: any backslash escape, as above",
    ),
    (
        "testTextParseError/7",
        "a summary's quantile label that is no number: the scraper keeps classic series' label values as text",
    ),
    (
        "testTextParseError/33",
        "a quantile written in hex: as above",
    ),
    (
        "testTextParseError/19",
        "a bucket's le that is no number: as above (read as a number only when converting to native histograms)",
    ),
    ("testTextParseError/32", "an le written in hex: as above"),
    (
        "testTextParseError/43",
        "a negative histogram count: the scraper stores classic series' values as given",
    ),
    ("testTextParseError/44", "a negative bucket count: as above"),
    (
        "testTextParseError/45",
        "a negative, fractional count: as above",
    ),
    (
        "testTextParseError/46",
        "a negative, fractional bucket count: as above",
    ),
];

#[test]
fn prometheus_common_text_parser_tests_agree_where_the_scraper_does() {
    let table = include_str!("conformance/expfmt.tsv");
    let j = judge("expfmt", table, Format::Text);
    assert!(j.valid >= 15 && j.invalid >= 40, "the table was cut short");
    let mut apart: Vec<&str> = SCRAPER_JUDGES.iter().map(|(c, _)| *c).collect();
    let mut wrong: Vec<&str> = j.wrong.iter().map(String::as_str).collect();
    apart.sort_unstable();
    wrong.sort_unstable();
    assert_eq!(
        wrong, apart,
        "llmscope and prometheus/common disagree on exactly the cases where Prometheus's scraper does"
    );
}

#[test]
fn prometheus_openmetrics_parser_tests_agree() {
    let table = include_str!("conformance/omparse.tsv");
    let j = judge_by("omparse", table, Format::OpenMetrics, Bar::Rejection);
    assert!(j.valid >= 5 && j.invalid >= 70, "the table was cut short");
    assert_eq!(j.quiet, j.valid, "valid pages warned about");
    assert_eq!(
        j.warned, j.invalid,
        "pages Prometheus rejects passed quietly"
    );
}
