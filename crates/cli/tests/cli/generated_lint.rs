//! The generated dashboard and rules lint clean against the stack they target (issue 15): made
//! for, and checked against, the pages of `llmscope sim --teams` — vLLM, dcgm-exporter, Kueue and
//! kube-state-metrics — through the binary, as a user runs `dashboard`, `rules` and `check`.
//! Before the simulated Kueue exported `kueue_admitted_workloads_total` and
//! `kueue_evicted_workloads_total` (as real Kueue does), `check` found those names in no inventory.

use crate::common::{json, llmscope, sim_with_cluster, temp_dir};
use std::path::Path;

/// The four pages of the simulated stack, as `--metrics-url` flags.
fn inventory_flags(vllm: &str, dcgm: &str, cluster: &str) -> Vec<String> {
    [
        format!("http://{vllm}/metrics"),
        format!("http://{dcgm}/metrics"),
        format!("http://{cluster}/kueue/metrics"),
        format!("http://{cluster}/ksm/metrics"),
    ]
    .into_iter()
    .flat_map(|u| ["--metrics-url".to_owned(), u])
    .collect()
}

/// Waits until the emulated dcgm-exporter has collected once (its page is empty before).
fn wait_for_dcgm_values(dcgm: &str) {
    let url = format!("http://{dcgm}/metrics");
    for _ in 0..60 {
        let out = llmscope(&["inventory", &url, "--format", "json"]);
        if String::from_utf8_lossy(&out.stdout).contains("DCGM_FI_DEV_GPU_UTIL") {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    panic!("dcgm-exporter at {url} never served DCGM_FI_DEV_GPU_UTIL");
}

fn generate(args: &[&str], out: &Path) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--output", out.to_str().unwrap()]);
    let done = llmscope(&all);
    assert!(
        done.status.success(),
        "llmscope {args:?}: {}",
        String::from_utf8_lossy(&done.stderr)
    );
}

/// `llmscope check` of `files` against the simulated stack: its error findings, and its summary.
fn check(inventory: &[String], files: &[&Path]) -> (Vec<String>, serde_json::Value) {
    let mut args: Vec<&str> = vec!["check", "--format", "json", "--fail-on", "never"];
    args.extend(inventory.iter().map(String::as_str));
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let report = json(&llmscope(&args));
    let errors = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| format!("{}: {}", f["location"]["file"], f["message"]))
        .collect();
    (errors, report["summary"].clone())
}

#[test]
fn generated_dashboards_and_rules_lint_clean_against_the_simulated_stack() {
    let (_sim, vllm, dcgm, cluster) = sim_with_cluster("1s", &["--teams", "example"]);
    wait_for_dcgm_values(&dcgm);
    let inventory = inventory_flags(&vllm, &dcgm, &cluster);
    let live: Vec<&str> = inventory.iter().map(String::as_str).collect();
    let dir = temp_dir("generated-lint");
    let file = |name: &str| dir.join(name);
    // From the catalog for the versions the simulator speaks (Kueue v0.19 by default for the
    // dashboard; --scheduler for the rules' Kueue guards and alerts)…
    generate(
        &["dashboard", "--engine", "vllm@0.26"],
        &file("catalog.json"),
    );
    let rules = [
        "rules",
        "--engine",
        "vllm@0.26",
        "--scheduler",
        "kueue@0.19",
    ];
    generate(&rules, &file("catalog-rules.yaml"));
    let crd = [&rules[..], &["--crd", "--release", "kube-prometheus-stack"]].concat();
    generate(&crd, &file("catalog-prometheusrule.yaml"));
    // …and detected from the live pages.
    generate(
        &[&["dashboard"], &live[..]].concat(),
        &file("detected.json"),
    );
    generate(
        &[&["rules"], &live[..]].concat(),
        &file("detected-rules.yaml"),
    );
    let files = [
        "catalog.json",
        "catalog-rules.yaml",
        "catalog-prometheusrule.yaml",
        "detected.json",
        "detected-rules.yaml",
    ]
    .map(file);
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    // The Kueue signals are really in the artefacts, so a clean check means something: the
    // dashboards chart admissions and evictions, the rules alert when admissions stop.
    for (f, text) in files.iter().zip(&texts) {
        let names: &[&str] = if f.extension().is_some_and(|x| x == "json") {
            &[
                "kueue_admitted_workloads_total",
                "kueue_evicted_workloads_total",
            ]
        } else {
            &["kueue_admitted_workloads_total", "KueueAdmissionStalled"]
        };
        for name in names {
            assert!(text.contains(name), "{} lacks {name}", f.display());
        }
    }
    let refs: Vec<&Path> = files.iter().map(|f| f.as_path()).collect();
    let (errors, summary) = check(&inventory, &refs);
    assert!(errors.is_empty(), "{summary}\n{}", errors.join("\n"));
    assert_eq!(summary["error"], 0, "{summary}");
    std::fs::remove_dir_all(&dir).ok();
}
