//! Integration tests of `llmscope-generate`: golden files (full-text diffs; `UPDATE_GOLDEN=1`
//! rewrites them), parse-back, and the real oracles — `promtool check rules`, `promtool test
//! rules` (unit tests in `tests/promtool/`), `llmscope check` against the simulator's inventory
//! for every metrics dialect, and a real Prometheus scraping the loaded simulator; the
//! autoscaling objects against the real schemas ([`autoscaling`]).
//!
//! Tests needing `promtool` or `prometheus` fail under `CI=true` when the binary is missing and
//! skip with a message otherwise.
#![allow(clippy::print_stderr)]

mod autoscaling;

use llmscope_check::inventory::snapshot::Snapshot;
use llmscope_check::{Inventories, Severity, input};
use llmscope_collect::HttpClient;
use llmscope_collect::testing::{RealPrometheus, job, put_chat_load};
use llmscope_generate::dashboard::{self, ConfigMap, DashboardOptions};
use llmscope_generate::grafana::Dashboard;
use llmscope_generate::promrules::{CrdOptions, PrometheusRule, RuleFile};
use llmscope_generate::rules::RulesOptions;
use llmscope_generate::{Signals, Stack, output, rules};
use llmscope_sim::cluster::Teams;
use llmscope_sim::metrics::Dialect;
use llmscope_sim::preset::preset;
use llmscope_sim::serve::{self, SimConfig, SimHandle};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The simulator's metrics dialects, as catalog specs.
const DIALECTS: [&str; 4] = ["0.26", "0.11", "0.10", "0.8"];

fn dir(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(sub)
}

fn stack(version: &str) -> Stack {
    Stack::new(format!("vllm@{version}").parse().unwrap())
        .unwrap()
        .with_gpu("dcgm-exporter@4.5".parse().unwrap())
        .unwrap()
}

/// The full stack the dashboard shows: engine, GPU and scheduler.
fn full_stack(version: &str) -> Stack {
    stack(version)
        .with_scheduler("kueue@0.19".parse().unwrap())
        .unwrap()
}

fn dashboard_of(version: &str) -> Dashboard {
    let st = full_stack(version);
    let s = Signals::resolve(&st).unwrap();
    dashboard::build(&st, &s, &DashboardOptions::default())
}

fn rule_file(version: &str) -> RuleFile {
    let st = stack(version);
    let s = Signals::resolve(&st).unwrap();
    rules::build(&st, &s, &RulesOptions::default())
}

/// The rules with the scheduler (Kueue v0.19): its absence guards and `KueueAdmissionStalled`.
fn full_rule_file(version: &str) -> RuleFile {
    let st = full_stack(version);
    let s = Signals::resolve(&st).unwrap();
    rules::build(&st, &s, &RulesOptions::default())
}

fn crd(version: &str) -> PrometheusRule {
    let opts = CrdOptions {
        name: "llmscope-vllm".into(),
        namespace: Some("monitoring".into()),
        release: Some("kube-prometheus-stack".into()),
    };
    PrometheusRule::wrap(rule_file(version), &opts)
}

// ------------------------------------------------------------------ golden files

/// A line diff (longest common subsequence), `-` golden, `+` generated.
fn diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push_str(&format!("-{:>5}: {}\n", i + 1, a[i]));
            i += 1;
        } else {
            out.push_str(&format!("+{:>5}: {}\n", j + 1, b[j]));
            j += 1;
        }
    }
    out
}

/// Compares `actual` with the golden file `name`, or rewrites it with `UPDATE_GOLDEN=1`.
fn golden(name: &str, actual: &str) {
    golden_at(&dir("golden").join(name), actual);
}

fn golden_at(path: &Path, actual: &str) {
    let name = path.display();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        expected == actual,
        "{name} differs from the generated text (UPDATE_GOLDEN=1 to accept):\n{}",
        diff(&expected, actual)
    );
}

fn rules_name(version: &str) -> String {
    format!("rules-vllm-{version}.yaml")
}

#[test]
fn rule_files_match_their_goldens_and_parse_back() {
    for v in DIALECTS {
        let file = rule_file(v);
        let text = output::yaml(&file).unwrap();
        golden(&rules_name(v), &text);
        let back: RuleFile = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back, file, "{v}");
    }
    let watch = llmscope_generate::watch::rules();
    let text = output::yaml(&watch).unwrap();
    golden("rules-watch.yaml", &text);
    assert_eq!(serde_saphyr::from_str::<RuleFile>(&text).unwrap(), watch);
    let full = full_rule_file("0.26");
    let text = output::yaml(&full).unwrap();
    golden("rules-vllm-0.26-kueue-0.19.yaml", &text);
    assert_eq!(serde_saphyr::from_str::<RuleFile>(&text).unwrap(), full);
    let manifest = crd("0.26");
    let text = output::yaml(&manifest).unwrap();
    golden("prometheusrule-vllm-0.26.yaml", &text);
    let back: PrometheusRule = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(back, manifest);
    assert_eq!(back.metadata.labels["release"], "kube-prometheus-stack");
}

#[test]
fn the_diff_names_changed_lines() {
    let d = diff("a\nb\nc\n", "a\nB\nc\nd\n");
    assert_eq!(d, "-    2: b\n+    2: B\n+    4: d\n");
}

// ------------------------------------------------------------------ promtool

/// A binary from `$<ENV>`, `PATH` or `/usr/bin`; `None` (with a message) when missing outside CI.
fn binary(name: &str, env: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::var_os(env)
        .map(PathBuf::from)
        .into_iter()
        .chain(std::env::split_paths(&path).map(|d| d.join(name)))
        .chain([PathBuf::from("/usr/bin").join(name)])
        .find(|p| p.is_file());
    if found.is_none() {
        let how = format!("this test needs `{name}`: apt-get install -y prometheus (or set {env})");
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{how}");
        eprintln!("skipped: {how}");
    }
    found
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn promtool_checks_every_generated_rule_file() {
    let Some(promtool) = binary("promtool", "PROMTOOL_BIN") else {
        return;
    };
    let tmp = tempdir();
    for v in DIALECTS {
        let path = tmp.join(rules_name(v));
        std::fs::write(&path, output::yaml(&rule_file(v)).unwrap()).unwrap();
        let (ok, text) = run(Command::new(&promtool).args(["check", "rules"]).arg(&path));
        assert!(ok, "promtool check rules {v}:\n{text}");
        assert!(text.contains("SUCCESS"), "{text}");
    }
    // With the scheduler: absence guards for Kueue and kube-state-metrics too.
    let st = full_stack("0.26");
    let full = rules::build(
        &st,
        &Signals::resolve(&st).unwrap(),
        &RulesOptions::default(),
    );
    assert!(
        output::yaml(&full)
            .unwrap()
            .contains("absent(kueue_local_queue_resource_reservation)")
    );
    let path = tmp.join("rules-full.yaml");
    std::fs::write(&path, output::yaml(&full).unwrap()).unwrap();
    let (ok, text) = run(Command::new(&promtool).args(["check", "rules"]).arg(&path));
    assert!(ok, "promtool check rules (with kueue):\n{text}");
    let watch = output::yaml(&llmscope_generate::watch::rules()).unwrap();
    let path = tmp.join("rules-watch.yaml");
    std::fs::write(&path, watch).unwrap();
    let (ok, text) = run(Command::new(&promtool).args(["check", "rules"]).arg(&path));
    assert!(
        ok && text.contains("SUCCESS"),
        "promtool check rules (watch):\n{text}"
    );
    // The manifest's spec is a rule file too.
    let spec = output::yaml(&crd("0.26").spec).unwrap();
    let path = tmp.join("crd-spec.yaml");
    std::fs::write(&path, spec).unwrap();
    let (ok, text) = run(Command::new(&promtool).args(["check", "rules"]).arg(&path));
    assert!(ok, "{text}");
}

#[test]
fn promtool_unit_tests_cover_every_alert() {
    let Some(promtool) = binary("promtool", "PROMTOOL_BIN") else {
        return;
    };
    let tests = dir("promtool");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&tests)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut covered = String::new();
    for f in &files {
        let (ok, text) = run(Command::new(&promtool)
            .args(["test", "rules"])
            .arg(f)
            .current_dir(&tests));
        assert!(ok, "promtool test rules {}:\n{text}", f.display());
        covered.push_str(&std::fs::read_to_string(f).unwrap());
    }
    let files = [
        rule_file("0.26"),
        full_rule_file("0.26"),
        llmscope_generate::watch::rules(),
    ];
    for g in files.iter().flat_map(|f| &f.groups) {
        for alert in g.rules.iter().filter_map(|r| r.alert.as_deref()) {
            assert!(
                covered.contains(&format!("alertname: {alert}")),
                "no promtool test for {alert}"
            );
        }
    }
}

/// The absence guards' unit tests, written from the rule model (one guard per dependency is
/// mechanical; hand-writing ~20 expectations would only copy them): all quiet while every
/// series exists, all firing when nothing is scraped, exactly one after a rename.
fn absence_tests(file: &RuleFile) -> serde_json::Value {
    use serde_json::json;
    let guards: Vec<_> = file
        .groups
        .iter()
        .flat_map(|g| &g.rules)
        .filter(|r| r.alert.as_deref() == Some("LlmscopeSeriesAbsent"))
        .collect();
    let series = |skip: &str| -> Vec<serde_json::Value> {
        let mut v: Vec<_> = guards
            .iter()
            .map(|r| r.labels["metric"].as_str())
            .filter(|m| *m != skip)
            .map(|m| {
                let le = if m.ends_with("_bucket") {
                    ", le=\"+Inf\""
                } else {
                    ""
                };
                json!({"series": format!("{m}{{pod=\"vllm-0\"{le}}}"), "values": "1x20"})
            })
            .collect();
        v.push(json!({"series": "up{job=\"other\"}", "values": "1x20"}));
        v
    };
    let expect = |only: Option<&str>| -> Vec<serde_json::Value> {
        guards
            .iter()
            .filter(|r| only.is_none_or(|m| r.labels["metric"] == m))
            .map(|r| json!({"exp_labels": r.labels, "exp_annotations": r.annotations}))
            .collect()
    };
    let renamed = "vllm:kv_cache_usage_perc";
    let case =
        |name: &str, input: Vec<serde_json::Value>, at: &str, exp: Vec<serde_json::Value>| {
            json!({"name": name, "interval": "1m", "input_series": input, "alert_rule_test": [
                {"eval_time": at, "alertname": "LlmscopeSeriesAbsent", "exp_alerts": exp}
            ]})
        };
    json!({
        "rule_files": ["../golden/rules-vllm-0.26.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            case("every guard stays quiet while its series exist", series(""), "15m", vec![]),
            case("no guard fires before 10m", series(renamed), "5m", vec![]),
            case("every guard fires when nothing is scraped", series("all"), "15m", expect(None))
                .as_object()
                .map(|o| {
                    let mut o = o.clone();
                    o["input_series"] = json!([{"series": "up{job=\"other\"}", "values": "1x20"}]);
                    serde_json::Value::Object(o)
                })
                .unwrap(),
            case("a renamed series is noticed, and only it", series(renamed), "15m", expect(Some(renamed))),
        ]
    })
}

#[test]
fn absence_unit_tests_are_current() {
    let text = output::yaml(&absence_tests(&rule_file("0.26"))).unwrap();
    let header = "# Generated by tests/generate.rs (absence_unit_tests_are_current); UPDATE_GOLDEN=1 rewrites it.\n";
    golden_at(
        &dir("promtool").join("absence-vllm-0.26.yaml"),
        &format!("{header}{text}"),
    );
}

fn tempdir() -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("llmscope-generate-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

// ------------------------------------------------------------------ dashboards

#[test]
fn dashboards_match_their_goldens_and_parse_back() {
    for v in DIALECTS {
        let d = dashboard_of(v);
        let text = output::json(&d).unwrap();
        golden(&format!("dashboard-vllm-{v}.json"), &text);
        let back: Dashboard = serde_json::from_str(&text).unwrap();
        assert_eq!(back, d, "{v}");
        let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(raw["panels"].as_array().is_some_and(|p| p.len() > 10));
        assert!(
            raw["templating"]["list"]
                .as_array()
                .is_some_and(|l| l.len() == 4)
        );
    }
    let fleet = llmscope_generate::watch::dashboard(&DashboardOptions::default());
    let text = output::json(&fleet).unwrap();
    golden("dashboard-watch.json", &text);
    assert_eq!(serde_json::from_str::<Dashboard>(&text).unwrap(), fleet);
    let json = output::json(&dashboard_of("0.26")).unwrap();
    let cm = ConfigMap::wrap("llmscope-vllm", Some("monitoring".into()), json.clone());
    let text = output::yaml(&cm).unwrap();
    golden("dashboard-configmap-vllm-0.26.yaml", &text);
    let back: ConfigMap = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(
        back.data["llmscope-vllm.json"], json,
        "the JSON survives YAML quoting"
    );
    assert_eq!(back.metadata.labels["grafana_dashboard"], "1");
}

/// Every (row, panel, expr) of a dashboard.
fn queries(d: &Dashboard) -> Vec<(String, String, String)> {
    let mut row = String::new();
    let mut out = Vec::new();
    for p in &d.panels {
        if p.kind == "row" {
            row.clone_from(&p.title);
        }
        for t in &p.targets {
            out.push((row.clone(), p.title.clone(), t.expr.clone()));
        }
    }
    out
}

#[test]
fn older_dialects_query_their_own_names() {
    // Queries only: descriptions may name what a version lacks.
    let text = |v| {
        let d = queries(&dashboard_of(v)).into_iter().map(|(_, _, e)| e);
        let r = rule_file(v)
            .groups
            .into_iter()
            .flat_map(|g| g.rules)
            .map(|r| r.expr);
        d.chain(r).collect::<Vec<_>>().join("\n")
    };
    let old = text("0.8");
    assert!(old.contains("vllm:gpu_cache_usage_perc") && !old.contains("vllm:kv_cache_usage_perc"));
    assert!(old.contains("vllm:time_per_output_token_seconds_bucket"));
    assert!(old.contains("vllm:gpu_prefix_cache_hits_total"));
    let new = text("0.26");
    assert!(!new.contains("vllm:gpu_cache_usage_perc") && !new.contains("e2e_request_latency"));
    assert!(new.contains("vllm:inter_token_latency_seconds_bucket"));
}

// ------------------------------------------------------------------ llmscope check oracle

fn http() -> HttpClient {
    HttpClient::new(None).unwrap()
}

async fn get(url: &str) -> String {
    let headers = Default::default();
    let got = http()
        .get(llmscope_collect::http::Get {
            uri: url.parse().unwrap(),
            headers: &headers,
            timeout: Duration::from_secs(5),
            body_limit: 64 << 20,
        })
        .await
        .unwrap();
    assert_eq!(got.status, 200, "{url}");
    String::from_utf8(got.body.to_vec()).unwrap()
}

async fn sim(dialect: &str) -> SimHandle {
    let mut cfg = SimConfig::new(preset("l4-qwen2.5-3b").unwrap());
    cfg.dialect = Dialect::parse(dialect).unwrap();
    cfg.dcgm_interval = Duration::from_millis(200);
    cfg.cluster = Some(Teams::example());
    serve::start(cfg).await.unwrap()
}

/// The simulator's pages for `dialect` (vLLM, dcgm-exporter, Kueue, kube-state-metrics): the
/// generated artefacts are checked against what the simulated stack really serves.
async fn sim_inventory(dialect: &str) -> Inventories {
    let sim = sim(dialect).await;
    let cluster = format!("http://{}", sim.cluster_addr.unwrap());
    let kueue = get(&format!("{cluster}/kueue/metrics")).await;
    let ksm = get(&format!("{cluster}/ksm/metrics")).await;
    let vllm = get(&format!("{}/metrics", sim.vllm_url())).await;
    let mut dcgm = get(&sim.dcgm_url()).await;
    for _ in 0..50 {
        if dcgm.contains("DCGM_FI_DEV_GPU_UTIL") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        dcgm = get(&sim.dcgm_url()).await;
    }
    sim.shutdown().await;
    let mut inv = Inventories::new();
    for (name, page) in [
        ("vllm", vllm),
        ("dcgm", dcgm),
        ("kueue", kueue),
        ("ksm", ksm),
    ] {
        let (snap, errors) = Snapshot::parse(name, page.as_bytes());
        assert!(errors.is_empty(), "{name}: {errors:?}");
        inv.push(Box::new(snap));
    }
    inv
}

fn errors_of(file: &str, text: &str, inv: &mut Inventories) -> Vec<String> {
    let source = input::read(file, text);
    let mut findings = source.errors;
    inv.add_recorded(source.recorded);
    assert!(!source.queries.is_empty(), "{file}: no queries read");
    findings.extend(input::check(&source.queries, inv));
    findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| format!("{f:?}"))
        .collect()
}

#[tokio::test]
async fn llmscope_check_finds_no_error_against_every_simulator_dialect() {
    for v in DIALECTS {
        let mut inv = sim_inventory(v).await;
        let d = output::json(&dashboard_of(v)).unwrap();
        let r = output::yaml(&rule_file(v)).unwrap();
        let crd = output::yaml(&crd(v)).unwrap();
        let mut errors = errors_of("dashboard.json", &d, &mut inv);
        errors.extend(errors_of("rules.yaml", &r, &mut inv));
        errors.extend(errors_of("prometheusrule.yaml", &crd, &mut inv));
        assert!(errors.is_empty(), "dialect {v}:\n{}", errors.join("\n"));
    }
}

#[tokio::test]
async fn llmscope_check_catches_a_dashboard_for_the_wrong_version() {
    // The oracle can fail: the 0.8 dashboard against a 0.26 simulator names removed metrics.
    let mut inv = sim_inventory("0.26").await;
    let d = output::json(&dashboard_of("0.8")).unwrap();
    let errors = errors_of("dashboard.json", &d, &mut inv);
    assert!(
        errors.iter().any(|e| e.contains("gpu_cache_usage_perc")),
        "{errors:?}"
    );
}

// ------------------------------------------------------------------ real Prometheus

/// Grafana's variables as "All" (`.*`) and `$__rate_interval` as a window of several scrapes.
fn as_grafana_runs_it(expr: &str) -> String {
    expr.replace("$__rate_interval", "10s")
        .replace("\"$model_name\"", "\".*\"")
        .replace("\"$pod\"", "\".*\"")
        .replace("\"$instance\"", "\".*\"")
}

fn now() -> f64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    t.unwrap().as_secs_f64()
}

/// Every dashboard query (Serving, GPU, Scheduling) and every
/// recording rule returns data from a real Prometheus scraping the loaded simulator and its
/// Kueue and kube-state-metrics pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_query_returns_data_from_a_real_prometheus() {
    let mut cfg = SimConfig::new(preset("l4-qwen2.5-3b").unwrap());
    cfg.dcgm_interval = Duration::from_secs(1);
    cfg.cluster = Some(Teams::example());
    let sim = serve::start(cfg).await.unwrap();
    let cluster = sim.cluster_addr.unwrap().to_string();
    let jobs = [
        job("vllm", &sim.vllm_addr.to_string(), "/metrics", ""),
        job("dcgm", &sim.dcgm_addr.to_string(), "/metrics", ""),
        job("kueue", &cluster, "/kueue/metrics", ""),
        job("kube-state-metrics", &cluster, "/ksm/metrics", ""),
    ];
    let Some(prom) = RealPrometheus::start("generate", &jobs).await else {
        sim.shutdown().await;
        return;
    };
    let from = now();
    put_chat_load(sim.vllm_addr, 24, 15).await;
    // Every target scraped once more after the load (polled, not slept).
    prom.wait_until_scraped_after(now() + 1.0).await;
    let to = now();
    let client = prom.client();
    let mut exprs: Vec<(String, String)> = queries(&dashboard_of("0.26"))
        .into_iter()
        .map(|(_, panel, e)| (panel, as_grafana_runs_it(&e)))
        .collect();
    let recorded = rule_file("0.26").groups.into_iter().flat_map(|g| g.rules);
    exprs.extend(recorded.filter_map(|r| Some((r.record?, r.expr))));
    assert!(exprs.len() > 30, "{}", exprs.len());
    let mut empty = Vec::new();
    for (what, expr) in &exprs {
        let r = client
            .query_range(expr, from.ceil(), to.floor(), 1.0)
            .await
            .unwrap();
        assert!(r.warnings.is_empty(), "{expr}: {:?}", r.warnings);
        let has_data = r
            .data
            .iter()
            .any(|s| s.points.iter().any(|p| p.v.is_finite()));
        if !has_data {
            empty.push(format!("{what}: {expr}"));
        }
    }
    // The check can fail: the old dialect's KV name has no data on a 0.26 simulator.
    let old = "max by (pod) (vllm:gpu_cache_usage_perc)";
    let r = client.query_range(old, from.ceil(), to.floor(), 1.0).await;
    assert!(r.unwrap().data.is_empty());
    sim.shutdown().await;
    assert!(
        empty.is_empty(),
        "queries without data:\n{}",
        empty.join("\n")
    );
}

// ------------------------------------------------------------------ purity

/// The generator stays pure: no async runtime, HTTP stack or database in its dependency tree.
#[test]
fn generate_depends_on_no_io_crates() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "llmscope-generate",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.contains("llmscope-generate"), "{tree}");
    for banned in ["tokio", "hyper", "reqwest", "rusqlite", "axum"] {
        let found = tree.lines().any(|l| l.starts_with(&format!("{banned} ")));
        assert!(!found, "llmscope-generate depends on {banned}:\n{tree}");
    }
}
