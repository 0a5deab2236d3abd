//! Diagnosis cases cut from runs on a real vLLM 0.32.0 (`tests/fixtures/real-runs/*.tsv`, made
//! by `scripts/fixture-from-run.py` from what `llmscope run --target` stored): the series in, the
//! verdict a person expects out. They keep the real engine's quirks — scrapes that land between
//! two admission waves, gauges that lag on a starved host — in the loop without the engine.
//!
//! Format: `# facts: max_num_seqs=16 concurrency=32 achieved_concurrency=31.4 contended=false`,
//! optional `# cache_config_info: block_size=128,…`, `# expect: <bottleneck>`, any number of
//! `# advice: <text the first recommendation contains>`, any number of `# finding: <id>` (a
//! finding that must be among the run's), then a TSV with a `t` column and one
//! column per metric (an empty cell is no sample).

use super::build::{kv_cache_config, signals_from_series};
use super::{Bottleneck, Diagnosis, diagnose};
use crate::series::{Labels, Point, Series, SeriesKey};

struct Case {
    series: Vec<Series>,
    facts: Vec<(String, String)>,
    expect: String,
    advice: Vec<String>,
    findings: Vec<String>,
}

fn parse(text: &str) -> Case {
    let mut case = Case {
        series: Vec::new(),
        facts: Vec::new(),
        expect: String::new(),
        advice: Vec::new(),
        findings: Vec::new(),
    };
    let mut header: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(rest) = line.strip_prefix("# facts:") {
            case.facts = rest
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
        } else if let Some(rest) = line.strip_prefix("# cache_config_info:") {
            let labels = rest
                .trim()
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()));
            case.series.push(Series {
                key: SeriesKey::new("vllm:cache_config_info", Labels::new(labels)),
                points: vec![Point { t: 0.0, v: 1.0 }],
            });
        } else if let Some(rest) = line.strip_prefix("# expect:") {
            case.expect = rest.trim().to_owned();
        } else if let Some(rest) = line.strip_prefix("# advice:") {
            case.advice.push(rest.trim().to_owned());
        } else if let Some(rest) = line.strip_prefix("# finding:") {
            case.findings.push(rest.trim().to_owned());
        } else if line.starts_with('#') {
        } else if header.is_empty() {
            header = line.split('\t').map(str::to_owned).collect();
            for name in &header[1..] {
                case.series.push(Series {
                    key: SeriesKey::new(name.clone(), Labels::default()),
                    points: Vec::new(),
                });
            }
        } else {
            let cells: Vec<&str> = line.split('\t').collect();
            let t: f64 = cells[0].parse().expect("a time in the first column");
            let first = case.series.len() - (header.len() - 1);
            for (i, cell) in cells.iter().enumerate().skip(1) {
                if let Ok(v) = cell.parse::<f64>() {
                    case.series[first + i - 1].points.push(Point { t, v });
                }
            }
        }
    }
    case
}

fn fact<T: std::str::FromStr>(case: &Case, key: &str) -> Option<T> {
    case.facts
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.parse().ok())
}

fn run(case: &Case) -> Diagnosis {
    let (mut input, _) = signals_from_series(&case.series);
    input.engine.max_num_seqs = fact(case, "max_num_seqs");
    input.engine.kv_cache = kv_cache_config(&case.series);
    input.load.concurrency = fact(case, "concurrency");
    input.load.achieved_concurrency = fact(case, "achieved_concurrency");
    // The fixture keeps whether the client said the machine was contended, not its words.
    input.load.contention = fact(case, "contended")
        .filter(|c: &bool| *c)
        .map(|_| "recorded as contended when the run was cut".to_owned());
    input.scrape_interval_s = Some(1.0);
    diagnose(&input)
}

#[test]
fn real_runs_get_the_verdict_a_person_expects() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real-runs");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the real-runs fixtures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "tsv"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "fixtures in {}", dir.display());
    let mut wrong = Vec::new();
    for f in &files {
        let case = parse(&std::fs::read_to_string(f).unwrap());
        let d = run(&case);
        let got = d.verdict.bottleneck.as_str();
        let first = d
            .recommendations
            .first()
            .map(|r| format!("{} — {}", r.action, r.reason))
            .unwrap_or_default();
        let advice_ok = case.advice.iter().all(|a| first.contains(a.as_str()));
        let ids: Vec<&str> = d.findings.iter().map(|f| f.rule).collect();
        let findings_ok = case.findings.iter().all(|id| ids.contains(&id.as_str()));
        if got != case.expect
            || !advice_ok
            || !findings_ok
            || d.verdict.bottleneck == Bottleneck::None
        {
            wrong.push(format!(
                "{}: expected {} (advice {:?}, findings {:?}), got {got} ({:.2}): {}\n  findings: {ids:?}\n  first advice: {first}",
                f.display(),
                case.expect,
                case.advice,
                case.findings,
                d.verdict.confidence,
                d.verdict.summary
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
