//! The contract every registered rule meets, each rule run alone through the real pipeline
//! (read a file, check its queries, then the file as a whole — `llmscope check`'s path, with
//! only that rule registered):
//! - the registry gives every unit its own id, and a unit says only its own id;
//! - hostile input does not make it panic: the inputs of the crate's hostile tests (brackets
//!   nested past the limit, an operator chain past it, the deepest tree within both, thousands
//!   of matchers, a long invalid expression), MetricsQL, Grafana variables, odd bytes, and
//!   broken or odd dashboards and YAML;
//! - every finding it makes is located: its file named, and an expression's finding on a line;
//! - it fires on its real fixture, declared in its own file ([`super::RuleInfo::FIXTURE`], a
//!   [`Fixture`]): a file of `tests/corpus`, whose source `MANIFEST.tsv` notes, checked against
//!   its `EXPECTED.txt` section's inventories; or a file of `tests/fixtures`, whose source its
//!   README notes. A rule without a real file says why, and must fire on the hostile inputs;
//! - it is silent — nothing at warning or error — on the clean corpus ([`CLEAN`]).

use super::{ALL, Lint};
use crate::finding::{Finding, Rule, Severity};
use crate::input;
use crate::inventory::Inventories;
use crate::inventory::engine::CatalogInventory;
use crate::promql::parse::{MAX_NESTING, MAX_OPERATORS};
use crate::promql::{self, Context};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Where a rule fires on a real file, declared in its own file ([`super::RuleInfo::FIXTURE`]).
#[derive(Debug, Clone, Copy)]
pub enum Fixture {
    /// A file under `tests/`: of `tests/corpus`, whose source `MANIFEST.tsv` notes, checked
    /// against its `EXPECTED.txt` section's inventories (`inventories` left empty); or of
    /// `tests/fixtures`, whose source its README notes, checked against `inventories`.
    File {
        path: &'static str,
        inventories: &'static [&'static str],
    },
    /// No real file to fire on, and why: the rule must fire on the hostile inputs instead.
    Without(&'static str),
}

impl Fixture {
    /// A corpus file (its inventories are its `EXPECTED.txt` section's).
    pub const fn file(path: &'static str) -> Fixture {
        Fixture::File {
            path,
            inventories: &[],
        }
    }
}

/// The clean corpus: real files a person found nothing wrong in (their `EXPECTED.txt` sections
/// expect no finding), every name in them covered by the section's inventories. Left out:
/// `prodstack-prom-adapter.yaml`, which also expects no finding but queries the production-stack
/// router's names, which its vLLM inventory does not cover (one `uncovered-producer` warning,
/// rightly).
const CLEAN: &[&str] = &[
    "vllm-speculative-decoding-2026.json",
    "prodstack-helm-scaledobject.yaml",
    "vllm-on-k8s-keda-kv-sum.yaml",
    "vllm-on-k8s-keda-scalingmodifiers.yaml",
    "vllm-on-k8s-keda-waiting.yaml",
    "vllm-on-k8s-keda-waiting-damped-off.yaml",
];

fn tests_dir(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(tests_dir(path)).unwrap_or_else(|e| panic!("tests/{path}: {e}"))
}

/// A corpus file's `EXPECTED.txt` section: its inventories, and whether it expects a finding.
fn section(file: &str) -> (Vec<String>, bool) {
    let expected = read("corpus/EXPECTED.txt");
    let mut lines = expected
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .skip_while(|l| {
            l.strip_prefix('[')
                .and_then(|h| h.split_whitespace().next())
                != Some(file)
        });
    let head = lines.next().unwrap_or_else(|| panic!("{file}: no section"));
    let specs = head.trim_matches(['[', ']']).split_whitespace().skip(1);
    let expects = lines
        .take_while(|l| !l.starts_with('['))
        .any(|l| l != "clean" && !l.starts_with("queries "));
    (specs.map(str::to_owned).collect(), expects)
}

fn inventories(specs: &[String]) -> Inventories {
    let mut inv = Inventories::new();
    for s in specs {
        let spec = s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
        inv.push(Box::new(CatalogInventory::new(spec)));
    }
    inv
}

/// The inventories a fixture is checked against.
fn fixture_inventories(path: &str, specs: &[&str]) -> Vec<String> {
    match path.strip_prefix("corpus/") {
        Some(file) => section(file).0,
        None => specs.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// Runs `rule` alone over a file as `llmscope check` does: read, every query, then the file
/// as a whole. What the file's reader says (a file that does not parse) is left out.
fn run_alone(rule: &dyn Lint, file: &str, content: &str, specs: &[String]) -> Vec<Finding> {
    let src = input::read_with(file, content, &[rule]);
    let mut inv = inventories(specs);
    inv.add_recorded(src.recorded.clone());
    let found = input::check_source_with(&src, &inv, &[rule]);
    for f in &found {
        assert_eq!(
            f.rule,
            rule.rule(),
            "{file}: a unit says only its own id: {f:#?}"
        );
    }
    found
}

/// Its file named, and an expression's finding on a line.
fn assert_located(findings: &[Finding], what: &str) {
    for f in findings {
        let l = &f.location;
        assert!(!l.file.is_empty(), "{what}: no file: {f:#?}");
        assert!(
            l.expr.is_none() || l.line.is_some(),
            "{what}: an expression's finding without a line: {f:#?}"
        );
    }
}

#[test]
fn every_registered_unit_has_its_own_id() {
    let ids: Vec<Rule> = ALL.iter().map(|l| l.rule()).collect();
    assert_eq!(
        ids,
        Rule::ALL,
        "the registry's units and rule ids, in one order"
    );
    let distinct: BTreeSet<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
    assert_eq!(distinct.len(), Rule::ALL.len(), "a rule id declared twice");
}

#[test]
fn every_rule_fires_on_its_real_fixture() {
    let manifest = read("corpus/MANIFEST.tsv");
    let fixtures_readme = read("fixtures/README.md");
    for unit in ALL {
        let Fixture::File { path, inventories } = unit.rule().fixture() else {
            continue;
        };
        let noted = match path.split_once('/') {
            Some(("corpus", file)) => manifest.lines().any(|l| l.split('\t').next() == Some(file)),
            Some(("fixtures", file)) => fixtures_readme.contains(&format!("`{file}`")),
            _ => false,
        };
        assert!(noted, "{path}: its source is noted nowhere");
        let specs = fixture_inventories(path, inventories);
        let found = run_alone(*unit, path, &read(path), &specs);
        assert!(!found.is_empty(), "{} does not fire on {path}", unit.rule());
        assert_located(&found, path);
    }
}

#[test]
fn every_rule_is_silent_on_the_clean_corpus() {
    for file in CLEAN {
        let (specs, expects) = section(file);
        assert!(
            !expects,
            "{file}: its EXPECTED.txt section expects a finding"
        );
        let path = format!("corpus/{file}");
        let content = read(&path);
        for unit in ALL {
            let found = run_alone(*unit, &path, &content, &specs);
            let loud: Vec<&Finding> = found
                .iter()
                .filter(|f| f.severity >= Severity::Warning)
                .collect();
            assert!(
                loud.is_empty(),
                "{} on clean {file}: {loud:#?}",
                unit.rule()
            );
            assert_located(&found, &path);
        }
    }
}

/// Expressions from the crate's hostile tests, and more of the same spirit.
fn hostile_expressions() -> Vec<String> {
    let chain = |n: usize| vec!["vllm:num_requests_running"; n].join(" + ");
    let mut out = vec![
        format!("{}up{}", "abs(".repeat(10_000), ")".repeat(10_000)),
        chain(7_400),
        format!(
            "{}{}{}",
            "abs(".repeat(MAX_NESTING),
            chain(MAX_OPERATORS + 1),
            ")".repeat(MAX_NESTING)
        ),
        format!("m{{{}}}", vec![r#"a!="x-y+z""#; 2_000].join(",")),
        format!("{} +{}", vec!["up"; 200].join(" or "), " ".repeat(60_000)),
        "sum(rate(vllm:generation_tokens_total[5m])".to_owned(),
        "sum(vllm:num_requests_running[5m]) by (pod)".to_owned(),
        r#"label_value(vllm:cache_config_info, "num_gpu_blocks")"#.to_owned(),
        "WITH (q = rate(x_total[5m])) q / 2".to_owned(),
        String::new(),
        " \t ".to_owned(),
        "\u{0}é{é=\"é\"}\u{feff}".to_owned(),
        r#"{__name__=~".*"} or {__name__=""}"#.to_owned(),
        "-(-(-vllm:generation_tokens_total)) offset 5m @ 1e9 > bool -0".to_owned(),
        "1/0 > NaN or Inf".to_owned(),
        "histogram_quantile(95, sum by (pod) (rate(vllm:time_to_first_token_seconds_bucket[30s]))) > 1e308".to_owned(),
        r#"vllm:kv_cache_usage_perc{pid=~".+"} or on() group_left(pid) DCGM_FI_DEV_FB_USED{pod="dcgm-exporter-1"}"#.to_owned(),
        "vllm:time_to_first_token_seconds_sum / vllm:time_to_first_token_seconds_count".to_owned(),
        "rate(x_bucket[5m]) / rate(x_bucket[5m]) * 100 > 85".to_owned(),
        "sum(avg without (pid) (gpu_cache_usage_perc)) / count(nothing_total[1m:30s])".to_owned(),
        "count_values(\"v\", label_replace(vllm:kv_cache_usage_perc, \"\", \"$1\", \"pod\", \"(.*)\"))".to_owned(),
        "vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc or sglang:token_usage or vllm:request_time_per_output_token_seconds_bucket".to_owned(),
    ];
    for grafana in [
        "sum by (${group}) (rate(x_bucket{le=~\"$le\"}[$__rate_interval])) > $threshold",
        "rate(vllm:iteration_tokens_total_count[$__interval]) ${x:raw}[[y]]$",
        "${v}[[v]]\"'\\é$__range",
    ] {
        out.push(input::grafana::substitute(grafana));
    }
    out
}

fn hostile_files() -> Vec<(&'static str, String)> {
    let expressions = hostile_expressions().join("\n\n");
    vec![
        ("hostile.promql", expressions),
        ("hostile.json", r#"{"templating": {"list": [{"name": "$", "type": "query"}, {"name": "", "type": "custom"}, {"name": "x(", "type": "custom", "query": {"query": 5}}, 5, null, {"type": "query"}]},
          "panels": [{"title": "${x(}", "targets": [{"expr": "${$}"}, {"expr": 5}, {"expr": "sum(\u0041)"}]}, {"panels": [{"panels": []}]}]}"#.to_owned()),
        ("hostile.json", r#"{"dashboard": {"rows": [{"panels": [{"type": "stat", "thresholds": "80,,x,1e400", "fieldConfig": {"defaults": {"unit": "percentunit", "thresholds": {"steps": [{"value": null}, {"value": "x"}, {"value": 1e300}]}}}, "targets": [{"expr": "vllm:kv_cache_usage_perc"}]}]}]}}"#.to_owned()),
        ("hostile.json", "[".repeat(10_000)),
        ("hostile.json", "{}".to_owned()),
        ("hostile.json", "\"x\"".to_owned()),
        ("hostile.yaml", "groups: [{name: g, rules: [{alert: a, expr: \"abs(abs(\"}, {record: 'r:x', expr: 'r:x'}]}]".to_owned()),
        ("hostile.yaml", "kind: GrafanaDashboard\nspec:\n  json: '{\"panels\": [{\"targets\": [{\"expr\": \"up\"}]}], \"templating\": {\"list\": [{\"name\": \"v\", \"type\": \"custom\"}]}}'\n".to_owned()),
        ("hostile.yaml", "{{ if .Values.x }}\n: : :\n- - -\n{{ end }}".to_owned()),
        ("hostile.yaml", "\u{feff}groups: []".to_owned()),
        ("hostile.yaml", String::new()),
    ]
}

#[test]
fn no_rule_panics_on_hostile_input_and_every_finding_is_located() {
    let mut with_interval = super::testing::inventories();
    with_interval.set_scrape_interval(15.0);
    let invs = [
        with_interval,
        Inventories::new(),
        super::testing::catalog("vllm@0.10"),
    ];
    let contexts = [
        Context {
            graph: true,
            panel_unit: Some("percentunit"),
            title: Some("Tokens %"),
            thresholds: &[80.0, -1.0, 1e300, f64::NAN],
            scaler: false,
        },
        Context {
            scaler: true,
            ..Context::default()
        },
    ];
    let expressions = hostile_expressions();
    for unit in ALL {
        let mut fired = false;
        for (inv, cx) in invs.iter().zip(contexts.iter().cycle()) {
            for text in &expressions {
                let hits = promql::check_expr_with(text, inv, *cx, &[*unit]);
                fired |= !hits.is_empty();
            }
        }
        for (file, content) in hostile_files() {
            let found = run_alone(*unit, file, &content, &["vllm@0.26".to_owned()]);
            fired |= !found.is_empty();
            if file.ends_with(".promql") {
                assert_located(&found, file);
            }
        }
        if let Fixture::Without(_) = unit.rule().fixture() {
            assert!(
                fired,
                "{} has no fixture and does not fire on hostile input",
                unit.rule()
            );
        }
    }
}

/// Any PromQL-ish text and any file content, through every rule at once.
mod no_panics {
    use crate::promql::{Context, check_expr};
    use crate::rules::testing::inventories;
    use proptest::prelude::*;

    /// PromQL-ish text: names, operators, brackets, quotes, Grafana variables.
    fn promqlish() -> impl Strategy<Value = String> {
        let atoms = prop::sample::select(vec![
            "vllm:kv_cache_usage_perc",
            "vllm:generation_tokens_total",
            "DCGM_FI_DEV_GPU_UTIL",
            "x_bucket",
            "sum",
            "by",
            "(",
            ")",
            "{",
            "}",
            "[",
            "]",
            "5m",
            "$__rate_interval",
            "${v}",
            "[[v]]",
            "\"",
            "'",
            "le",
            "=",
            "=~",
            "!=",
            ",",
            " ",
            "rate",
            "histogram_quantile",
            "0.9",
            "85",
            ">",
            "*",
            "on",
            "group_left",
            "\\",
            "é",
            "ignoring",
            "offset",
            "@",
            ":",
            "1e9",
            "-",
            "or",
        ]);
        prop::collection::vec(atoms, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn checking_any_text_never_panics(text in promqlish()) {
            let inv = inventories();
            let substituted = crate::input::grafana::substitute(&text);
            let _ = check_expr(&substituted, &inv, Context { graph: true, panel_unit: Some("percent"), title: None, thresholds: &[], scaler: false });
            let queries = vec![crate::input::Query::new(text.clone(), crate::Location::default())];
            let _ = crate::input::check(&queries, &inv);
        }

        #[test]
        fn reading_any_file_never_panics(text in "\\PC{0,200}") {
            for file in ["a.json", "a.yaml", "a.promql"] {
                let _ = crate::input::read(file, &text);
            }
        }
    }
}
