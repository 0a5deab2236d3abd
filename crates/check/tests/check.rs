//! The check crate end to end: engine detection on the simulator's pages of every vLLM
//! dialect, vLLM's own dashboards checked against those pages (golden findings, plus what a
//! human would say about each), and rule files and `.promql` files against the catalog.

use llmscope_catalog::{Exporter, Version};
use llmscope_check::input;
use llmscope_check::inventory::engine::CatalogInventory;
use llmscope_check::inventory::snapshot::Snapshot;
use llmscope_check::{Finding, Inventories, Rule, Severity};
use llmscope_sim::engine::Engine;
use llmscope_sim::metrics::{Dialect, render};
use std::path::PathBuf;

const DIALECTS: [&str; 5] = ["0.32", "0.26", "0.11", "0.10", "0.8"];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The simulator's vLLM page in `dialect` (offline, no sockets).
fn page(dialect: &str) -> String {
    let preset = llmscope_sim::preset::preset("l4-qwen2.5-3b").expect("preset");
    let engine = Engine::new(&preset, 1).expect("engine");
    render(&engine, Dialect::parse(dialect).expect("dialect"), 1.7e9)
}

fn sim_inventory(dialect: &str) -> Inventories {
    let mut inv = Inventories::new();
    let (snap, errors) =
        Snapshot::parse(format!("sim vLLM {dialect} page"), page(dialect).as_bytes());
    assert!(errors.is_empty(), "{errors:?}");
    inv.push(Box::new(snap));
    inv
}

fn check_file(name: &str, inv: &Inventories) -> Vec<Finding> {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture");
    let src = input::read(name, &text);
    assert!(src.errors.is_empty(), "{name}: {:?}", src.errors);
    input::check(&src.queries, inv)
}

#[test]
fn detects_the_version_of_every_dialect() {
    let expect: [(&str, Version, Option<Version>); 5] = [
        // What real 0.32.0 pages added over 0.26.0 dates a page only to after 0.26 (issue 11).
        ("0.32", Version::new(0, 27, 0), None),
        // 0.26.0 lacks what 0.32.0 pages added (and e2e latency, which came back).
        ("0.26", Version::new(0, 26, 0), Some(Version::new(0, 27, 0))),
        ("0.11", Version::new(0, 11, 0), Some(Version::new(0, 11, 1))),
        ("0.10", Version::new(0, 9, 2), Some(Version::new(0, 11, 0))),
        // The simulator's 0.8 page has V1's `engine` label, which V1 added in 0.8.3.
        ("0.8", Version::new(0, 8, 3), Some(Version::new(0, 9, 2))),
    ];
    for (dialect, min, below) in expect {
        let (snap, _) = Snapshot::parse("p", page(dialect).as_bytes());
        let d = &snap.detections()[0];
        assert_eq!(d.exporter, Exporter::Vllm);
        assert_eq!(
            (d.min, d.below),
            (min, below),
            "dialect {dialect}: {}",
            d.range()
        );
        assert!(d.unknown.is_empty(), "dialect {dialect}: {:?}", d.unknown);
    }
}

/// One line per finding, stable, for the golden file.
fn line(f: &Finding) -> String {
    format!(
        "{} {} {} @ {} | {}",
        f.severity,
        f.rule,
        f.metric.as_deref().unwrap_or("-"),
        f.location.context.as_deref().unwrap_or("-"),
        f.suggestion.as_deref().unwrap_or("-")
    )
}

#[test]
fn vllm_dashboards_against_the_simulator_golden() {
    let mut out = String::new();
    for dialect in DIALECTS {
        let mut inv = sim_inventory(dialect);
        inv.set_scrape_interval(15.0);
        for dash in [
            "vllm-grafana.json",
            "vllm-grafana-v0.11.0.json",
            "vllm-performance-statistics.json",
            "vllm-query-statistics.json",
        ] {
            out.push_str(&format!("## {dash} vs vLLM {dialect}\n"));
            let mut lines: Vec<String> = check_file(dash, &inv).iter().map(line).collect();
            lines.dedup();
            for l in lines {
                out.push_str(&l);
                out.push('\n');
            }
        }
    }
    let golden = fixture("vllm-dashboards.golden");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &out).expect("write golden");
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    if want != out {
        panic!(
            "findings differ from {} (UPDATE_GOLDEN=1 to accept):\n--- want\n{want}\n--- got\n{out}",
            golden.display()
        );
    }
}

fn has(findings: &[Finding], rule: Rule, metric: &str, context: &str) -> bool {
    findings.iter().any(|f| {
        f.rule == rule
            && f.metric.as_deref() == Some(metric)
            && f.location
                .context
                .as_deref()
                .is_some_and(|c| c.contains(context))
    })
}

#[test]
fn what_a_human_would_say_about_vllms_dashboards() {
    let v26 = sim_inventory("0.26");
    let f = check_file("vllm-grafana.json", &v26);
    // 0.26 no longer exposes e2e latency: the E2E panel is empty, and nothing else is wrong.
    assert!(has(
        &f,
        Rule::RenamedMetric,
        "vllm:e2e_request_latency_seconds_bucket",
        "E2E Request Latency"
    ));
    // No other error; the warnings are the dashboard's own meaning mistakes (rate(x_sum) alone
    // drawn as "Queue Time", issue 13).
    assert!(
        f.iter().filter(|x| x.severity == Severity::Error).all(|x| x
            .location
            .context
            .as_deref()
            .unwrap()
            .contains("E2E")),
        "{f:#?}"
    );
    // The v0.11.0 dashboard's KV panel is empty on 0.26: the name was renamed.
    let f = check_file("vllm-grafana-v0.11.0.json", &v26);
    let kv = f
        .iter()
        .find(|x| x.metric.as_deref() == Some("vllm:gpu_cache_usage_perc"))
        .expect("gpu_cache_usage_perc finding");
    assert_eq!(
        (kv.rule, kv.severity),
        (Rule::RenamedMetric, Severity::Error)
    );
    assert!(
        kv.suggestion
            .as_deref()
            .unwrap()
            .contains("vllm:kv_cache_usage_perc")
    );
    assert!(kv.location.line.is_some() && kv.location.column.is_some());
    // On 0.11 the same panel is empty too: the old name is hidden from 0.11.
    let f = check_file("vllm-grafana-v0.11.0.json", &sim_inventory("0.11"));
    assert!(has(
        &f,
        Rule::RenamedMetric,
        "vllm:gpu_cache_usage_perc",
        "Cache Utilization"
    ));
    // On 0.10, the current dashboard's ITL panel is empty: that version calls it time_per_output_token.
    let f = check_file("vllm-grafana.json", &sim_inventory("0.10"));
    let itl = f
        .iter()
        .find(|x| x.metric.as_deref() == Some("vllm:inter_token_latency_seconds_bucket"))
        .expect("ITL finding on 0.10");
    assert!(
        itl.suggestion
            .as_deref()
            .unwrap()
            .contains("vllm:time_per_output_token_seconds_bucket")
    );
    // On 0.8, the KV panel too.
    let f = check_file("vllm-grafana.json", &sim_inventory("0.8"));
    assert!(has(
        &f,
        Rule::UnknownMetric,
        "vllm:kv_cache_usage_perc",
        "Cache Utilization"
    ));
    // Query statistics shows seconds under an ms unit; performance statistics rates over $__interval.
    let f = check_file("vllm-query-statistics.json", &sim_inventory("0.11"));
    assert!(has(
        &f,
        Rule::UnitMismatch,
        "vllm:e2e_request_latency_seconds_bucket",
        "p99 Latency"
    ));
    let f = check_file("vllm-performance-statistics.json", &sim_inventory("0.11"));
    assert!(f.iter().any(|x| {
        x.rule == Rule::ShortRateWindow
            && x.location
                .context
                .as_deref()
                .unwrap()
                .contains("Generation TPS")
    }));
    assert!(
        !f.iter().any(|x| x.rule == Rule::ShortRateWindow
            && x.location.context.as_deref().unwrap().contains("P99")),
        "$__range is fine"
    );
}

#[test]
fn rule_files_against_the_catalog() {
    let mut inv = Inventories::new();
    for spec in [
        "vllm@0.26",
        "kueue@0.19",
        "kube-state-metrics@2.20",
        "dcgm-exporter@4.5",
    ] {
        inv.push(Box::new(CatalogInventory::new(spec.parse().unwrap())));
    }
    let text = std::fs::read_to_string(fixture("rules.yaml")).unwrap();
    let src = input::read("rules.yaml", &text);
    inv.add_recorded(src.recorded.clone());
    let f = input::check(&src.queries, &inv);
    let got: Vec<(Rule, &str, Option<u32>)> = f
        .iter()
        .map(|x| (x.rule, x.metric.as_deref().unwrap_or("-"), x.location.line))
        .collect();
    assert_eq!(
        got,
        vec![
            (Rule::RenamedMetric, "vllm:gpu_cache_usage_perc", Some(5)),
            (Rule::UnitMismatch, "vllm:gpu_cache_usage_perc", Some(5)),
            (Rule::MissingLabel, "kube_namespace_labels", Some(16)),
        ],
        "{f:#?}"
    );
    assert!(
        f[2].suggestion
            .as_deref()
            .unwrap()
            .starts_with("use `label_team`")
    );
}

/// Rules on names the vLLM 0.32.0 source registers behind a feature or connector, and on names
/// 0.33.0 added (`docs/SOURCES.md` §vllm-0.32-source): none is unknown where its version has it.
const NEW_VLLM_NAMES_RULES: &str = r#"groups:
  - name: vllm-paused-and-pd
    rules:
      - alert: VllmKvFetchStuck
        expr: sum by (pod) (vllm:num_requests_kv_fetch_by_stage{stage="waiting_to_start"}) > 0
        for: 5m
      - alert: VllmWeightSyncInFlight
        expr: sum by (operation) (vllm:rl_weight_update_operations_in_flight) > 0
        for: 10m
      - alert: VllmSleepOpInFlight
        expr: sum by (operation) (vllm:sleep_mode_operations_in_flight) > 0
        for: 10m
      - alert: VllmTierHitRateLow
        expr: |
          sum by (tier) (rate(vllm:kv_offload_tiering_chunk_hits_total[5m]))
            / sum by (tier) (rate(vllm:kv_offload_tiering_chunk_queries_total[5m])) < 0.1
        for: 15m
      - alert: VllmToolParserIdle
        expr: sum by (model_name) (rate(vllm:tool_call_parser_invocations_total{outcome="tool_call"}[5m])) == 0
        for: 30m
  - name: vllm-0.33
    rules:
      - alert: VllmTierPromotionSlow
        expr: histogram_quantile(0.99, sum by (le, tier) (rate(vllm:kv_offload_tiering_promotion_latency_seconds_bucket[5m]))) > 1
        for: 10m
      - alert: VllmMooncakeTransfersFailing
        expr: sum by (pod) (rate(vllm:mooncake_num_failed_transfers_total[5m])) > 0
        for: 5m
"#;

#[test]
fn names_of_the_0_32_source_and_0_33_are_known_to_the_catalog() {
    let added_0_33 = [
        "vllm:kv_offload_tiering_promotion_latency_seconds_bucket",
        "vllm:mooncake_num_failed_transfers_total",
    ];
    let src = input::read("rules.yaml", NEW_VLLM_NAMES_RULES);
    assert!(src.errors.is_empty(), "{:?}", src.errors);
    let check = |spec: &str| {
        let mut inv = Inventories::new();
        inv.push(Box::new(CatalogInventory::new(spec.parse().unwrap())));
        input::check(&src.queries, &inv)
    };
    // 0.33.0 has every name: no finding about a name at all.
    let f = check("vllm@0.33");
    let about_names: Vec<&Finding> = f
        .iter()
        .filter(|x| matches!(x.rule, Rule::UnknownMetric | Rule::RenamedMetric))
        .collect();
    assert!(about_names.is_empty(), "{about_names:#?}");
    // 0.32.0 has the names of its source; the two 0.33.0 added are there "not yet", said as such.
    let f = check("vllm@0.32");
    let unknown: Vec<(&str, &str)> = f
        .iter()
        .filter(|x| x.rule == Rule::UnknownMetric)
        .map(|x| (x.metric.as_deref().unwrap_or("-"), x.message.as_str()))
        .collect();
    assert_eq!(
        unknown.iter().map(|(m, _)| *m).collect::<Vec<_>>(),
        added_0_33,
        "{f:#?}"
    );
    for (metric, message) in unknown {
        assert!(
            message.contains("does not exist yet in vllm 0.32.0: it was added in 0.33.0"),
            "{metric}: {message}"
        );
    }
}

#[test]
fn promql_files_against_the_simulator_and_dcgm() {
    let mut inv = sim_inventory("0.26");
    inv.push(Box::new(CatalogInventory::new(
        "dcgm-exporter@4.5".parse().unwrap(),
    )));
    let f = check_file("queries.promql", &inv);
    let got: Vec<(Rule, Option<u32>)> = f.iter().map(|x| (x.rule, x.location.line)).collect();
    assert_eq!(
        got,
        vec![
            (Rule::ExporterAttribution, Some(8)),
            (Rule::BadHistogramQuantile, Some(11))
        ],
        "{f:#?}"
    );
}

/// The simulator's Kueue and kube-state-metrics pages: detected, and the cost join checked.
#[test]
fn kueue_and_kube_state_metrics_pages() {
    let teams = llmscope_sim::cluster::Teams::example();
    let mut inv = Inventories::new();
    for (name, text) in [
        ("kueue", llmscope_sim::cluster::kueue_page(&teams)),
        ("ksm", llmscope_sim::cluster::ksm_page(&teams)),
    ] {
        let (snap, errors) = Snapshot::parse(name, text.as_bytes());
        assert!(errors.is_empty(), "{errors:?}");
        let d = &snap.detections()[0];
        match name {
            "kueue" => {
                assert_eq!(d.exporter, Exporter::Kueue);
                assert!(
                    d.min >= Version::new(0, 16, 0),
                    "replica_role era: {}",
                    d.range()
                );
            }
            _ => assert_eq!(d.exporter, Exporter::KubeStateMetrics),
        }
        inv.push(Box::new(snap));
    }
    let join = |label: &str| {
        format!(
            r#"sum by ({label}) (kueue_local_queue_resource_reservation{{resource="nvidia.com/gpu"}} * on (namespace) group_left ({label}) kube_namespace_labels)"#
        )
    };
    let q = |text: &str| vec![input::text::expr(text)];
    assert!(input::check(&q(&join("label_team")), &inv).is_empty());
    let f = input::check(&q(&join("team")), &inv);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(
        (f[0].rule, f[0].metric.as_deref()),
        (Rule::MissingLabel, Some("kube_namespace_labels"))
    );
    let f = input::check(&q("sum(kueue_quota_reserved_resources)"), &inv);
    assert_eq!(f[0].rule, Rule::UnknownMetric);
    assert!(
        f[0].suggestion
            .as_deref()
            .unwrap()
            .contains("kueue_local_queue_resource_reservation")
    );
}

/// A real vLLM 0.32.0 page (issue 11), from the core crate's fixtures.
fn real_0_32_page(which: &str) -> Snapshot {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../catalog/tests/fixtures/vllm-0.32.0")
        .join(format!("vllm-0.32.0-cpu-{which}.prom"));
    let text = std::fs::read(&path).expect("capture");
    let (snap, errors) = Snapshot::parse(format!("snapshot {which}"), &text);
    assert!(errors.is_empty(), "{errors:?}");
    snap
}

#[test]
fn the_old_kv_name_on_a_real_0_32_page_is_renamed_and_the_message_names_0_32() {
    for reported in [false, true] {
        let mut snap = real_0_32_page("batch-limit");
        if reported {
            snap.set_reported_version(Exporter::Vllm, Version::new(0, 32, 0));
        }
        let mut inv = Inventories::new();
        inv.push(Box::new(snap));
        let src = input::read(
            "q.promql",
            "max(vllm:gpu_cache_usage_perc)\n\nhistogram_quantile(0.99, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))\n",
        );
        let f = input::check(&src.queries, &inv);
        assert_eq!(f.len(), 1, "e2e latency is on the 0.32 page: {f:#?}");
        let kv = &f[0];
        assert_eq!(
            (kv.rule, kv.severity, kv.metric.as_deref()),
            (
                Rule::RenamedMetric,
                Severity::Error,
                Some("vllm:gpu_cache_usage_perc")
            )
        );
        assert!(
            kv.message.contains("is not exposed (vllm 0.32.0)"),
            "reported={reported}: {}",
            kv.message
        );
        assert!(
            kv.suggestion
                .as_deref()
                .unwrap()
                .starts_with("use vllm:kv_cache_usage_perc"),
            "{:?}",
            kv.suggestion
        );
    }
}

#[test]
fn a_reported_version_is_the_one_check_names() {
    let mut snap = real_0_32_page("idle");
    // An older engine than the names say (a backport, a patched build): the messages follow it.
    snap.set_reported_version(Exporter::Vllm, Version::new(0, 10, 0));
    let mut inv = Inventories::new();
    inv.push(Box::new(snap));
    let src = input::read("q.promql", "sum(vllm:num_requests_swapped)\n");
    let f = input::check(&src.queries, &inv);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message.contains("vllm 0.10.0") && !f[0].message.contains("0.32"),
        "{}",
        f[0].message
    );
}
