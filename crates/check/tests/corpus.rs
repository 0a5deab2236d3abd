//! `check` on real files (issue 13): every file in `tests/corpus/` (cut from public repositories,
//! sources in `MANIFEST.tsv`) is checked against the catalog inventories its section of
//! `EXPECTED.txt` names, and compared with the findings a person expects there (written before
//! the linter ran). The bar: at least 95 % of the expected findings caught, and at most one
//! false-positive *error* per ten files checked. Expectations and sources may be split over
//! several files, `EXPECTED*.txt` and `MANIFEST*.tsv` (one pair per batch of sources), read as one.
//!
//! `cargo test -p llmscope-check --test corpus -- --nocapture` prints the figures per file.

#![allow(clippy::print_stderr)]

use llmscope_check::input;
use llmscope_check::inventory::engine::CatalogInventory;
use llmscope_check::{Finding, Inventories, Severity};
use std::path::PathBuf;

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name)
}

/// One expected finding.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Finding {
        rule: String,
        name: String,
        info_ok: bool,
    },
    Queries(usize),
}

/// One `[FILE SPEC…]` section.
#[derive(Debug)]
struct Section {
    file: String,
    specs: Vec<String>,
    expects: Vec<Expect>,
}

fn sections(source: &str, text: &str) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(head) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let mut words = head.split_whitespace().map(str::to_owned);
            let file = words.next().expect("a file in the section head");
            out.push(Section {
                file,
                specs: words.collect(),
                expects: Vec::new(),
            });
            continue;
        }
        let section = out
            .last_mut()
            .unwrap_or_else(|| panic!("{source}:{}: a line before any section", n + 1));
        let words: Vec<&str> = line.split_whitespace().collect();
        let expect = match words.as_slice() {
            ["clean"] => continue,
            ["queries", k] => Expect::Queries(k.parse().expect("queries N")),
            ["info", rule, name] => Expect::Finding {
                rule: (*rule).to_owned(),
                name: (*name).to_owned(),
                info_ok: true,
            },
            [rule, name] => Expect::Finding {
                rule: (*rule).to_owned(),
                name: (*name).to_owned(),
                info_ok: false,
            },
            _ => panic!("{source}:{}: cannot read `{line}`", n + 1),
        };
        section.expects.push(expect);
    }
    out
}

/// Every corpus file whose name starts with `prefix` and ends with `suffix`, in name order, with
/// its text.
fn batches(prefix: &str, suffix: &str) -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(corpus(""))
        .expect("corpus dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.ends_with(suffix))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no {prefix}*{suffix} in the corpus");
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(corpus(&n)).unwrap_or_else(|e| panic!("{n}: {e}"));
            (n, text)
        })
        .collect()
}

/// The checks of every `EXPECTED*.txt`.
fn all_sections() -> Vec<Section> {
    batches("EXPECTED", ".txt")
        .iter()
        .flat_map(|(name, text)| sections(name, text))
        .collect()
}

/// Every `MANIFEST*.tsv`, joined.
fn manifest() -> String {
    batches("MANIFEST", ".tsv")
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Expectation, manifest and notes files, not corpus files.
fn bookkeeping(name: &str) -> bool {
    name == "README.md"
        || (name.starts_with("EXPECTED") && name.ends_with(".txt"))
        || (name.starts_with("MANIFEST") && name.ends_with(".tsv"))
}

fn inventories(specs: &[String]) -> Inventories {
    let mut inv = Inventories::new();
    for s in specs {
        let spec = s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
        inv.push(Box::new(CatalogInventory::new(spec)));
    }
    inv
}

/// A histogram's samples stand for their family: `x_bucket` expects `x_sum` and `x_count` too.
fn family(name: &str) -> &str {
    ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name)
}

fn matches(f: &Finding, rule: &str, name: &str, info_ok: bool) -> bool {
    let severe = f.severity >= Severity::Warning || info_ok;
    let named = name == "-"
        || f.metric.as_deref().map(family) == Some(family(name))
        || f.message.contains(&format!("`{name}`"))
        || f.message.contains(&format!("${name}"));
    severe && f.rule.id() == rule && named
}

/// What one check gave.
struct Outcome {
    caught: usize,
    expected: usize,
    missed: Vec<String>,
    false_errors: Vec<String>,
}

fn run(section: &Section) -> Outcome {
    let path = corpus(&section.file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let src = input::read(&section.file, &text);
    let mut inv = inventories(&section.specs);
    inv.add_recorded(src.recorded.clone());
    let mut findings = src.errors.clone();
    findings.extend(input::check_source(&src, &inv));
    let mut caught = 0;
    let mut missed = Vec::new();
    for e in &section.expects {
        let ok = match e {
            Expect::Queries(n) => src.queries.len() >= *n,
            Expect::Finding {
                rule,
                name,
                info_ok,
            } => findings.iter().any(|f| matches(f, rule, name, *info_ok)),
        };
        if ok {
            caught += 1;
        } else {
            missed.push(match e {
                Expect::Queries(n) => format!("queries {n} (read {})", src.queries.len()),
                Expect::Finding { rule, name, .. } => format!("{rule} {name}"),
            });
        }
    }
    let false_errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .filter(|f| {
            !section.expects.iter().any(|e| match e {
                Expect::Finding { rule, name, .. } => matches(f, rule, name, true),
                Expect::Queries(_) => false,
            })
        })
        .map(|f| {
            format!(
                "{} {} ({}): {}",
                f.rule,
                f.metric.as_deref().unwrap_or("-"),
                f.location.context.as_deref().unwrap_or("-"),
                f.message
            )
        })
        .collect();
    Outcome {
        caught,
        expected: section.expects.len(),
        missed,
        false_errors,
    }
}

#[test]
fn the_corpus_meets_the_bar() {
    let manifest = manifest();
    let sections = all_sections();
    let (mut caught, mut expected, mut false_errors) = (0, 0, 0);
    for s in &sections {
        assert!(
            manifest
                .lines()
                .any(|l| l.split('\t').next() == Some(s.file.as_str())),
            "{} has no source in MANIFEST.tsv",
            s.file
        );
        let o = run(s);
        eprintln!(
            "{:<44} {:<26} caught {:>2}/{:<2} false errors {}",
            s.file,
            s.specs.join(","),
            o.caught,
            o.expected,
            o.false_errors.len()
        );
        for m in &o.missed {
            eprintln!("    missed: {m}");
        }
        for f in &o.false_errors {
            eprintln!("    false error: {f}");
        }
        caught += o.caught;
        expected += o.expected;
        false_errors += o.false_errors.len();
    }
    let checks = sections.len();
    eprintln!(
        "corpus: {caught}/{expected} expected findings caught ({:.0} %), {false_errors} false errors over {checks} checks",
        100.0 * caught as f64 / expected.max(1) as f64
    );
    assert!(
        caught * 20 >= expected * 19,
        "caught {caught} of {expected} expected findings, below 95 %"
    );
    assert!(
        false_errors * 10 <= checks,
        "{false_errors} false errors over {checks} checks: more than one per ten"
    );
}

#[test]
fn every_corpus_file_is_checked_and_has_a_source() {
    let manifest = manifest();
    let checked: Vec<String> = all_sections().into_iter().map(|s| s.file).collect();
    for entry in std::fs::read_dir(corpus("")).expect("corpus dir") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if bookkeeping(&name) {
            continue;
        }
        assert!(
            checked.contains(&name),
            "{name} is in no EXPECTED.txt section"
        );
        assert!(
            manifest
                .lines()
                .any(|l| l.split('\t').next() == Some(name.as_str())),
            "{name} has no MANIFEST.tsv line"
        );
    }
}
