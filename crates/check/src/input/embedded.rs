//! Grafana dashboards inside Kubernetes resources (issue 13: real deployments ship them so):
//! a grafana-operator `GrafanaDashboard` holds the dashboard JSON as the string `spec.json`, and
//! a `ConfigMap` for Grafana's dashboard sidecar holds one under each `data` key ending in `.json`,
//! and one mounted into a plain Prometheus holds a rule file under a `.yml`/`.yaml`/`.rules` key.
//!
//! The JSON is read by [`grafana::read`] as if it were its own file, and
//! every location is moved back into the YAML file: a block scalar (`json: |`) keeps the JSON's
//! lines, each indented by the block's indentation, so lines and columns map exactly; a quoted
//! scalar does not, and its queries are placed on the scalar's first line, without a column.

use super::rules::{block_start, documents};
use super::{Source, grafana};
use crate::finding::Location;
use crate::rules::Lint;
use serde::Deserialize;
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize)]
struct Resource {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    spec: Option<DashboardSpec>,
    #[serde(default)]
    data: Option<BTreeMap<String, Spanned<String>>>,
}

#[derive(Debug, Deserialize)]
struct DashboardSpec {
    #[serde(default)]
    json: Option<Spanned<String>>,
}

/// Reads the dashboards embedded in `content`'s documents into `src`. Documents that do not
/// deserialize as resources (rule files, adapter configs) hold none and are passed over.
pub fn read(file: &str, content: &str, templated: bool, src: &mut Source) {
    read_with(file, content, templated, crate::rules::ALL, src);
}

/// [`read`]; the dashboards' own findings are `rules`'.
pub(crate) fn read_with(
    file: &str,
    content: &str,
    templated: bool,
    rules: &[&dyn Lint],
    src: &mut Source,
) {
    let Ok(docs) = documents::<Resource>(content, templated) else {
        return;
    };
    for doc in docs {
        match doc.kind.as_deref() {
            Some("GrafanaDashboard") => {
                if let Some(json) = doc.spec.and_then(|s| s.json) {
                    let inner = grafana::read_with(file, &json.value, rules);
                    add(content, &json, inner, src);
                }
            }
            Some("ConfigMap") => {
                for (key, value) in doc.data.into_iter().flatten() {
                    // A sidecar ConfigMap may also carry other JSON; only dashboards are read.
                    if key.ends_with(".json") && looks_like_dashboard(&value.value) {
                        let inner = grafana::read_with(file, &value.value, rules);
                        add(content, &value, inner, src);
                    } else if looks_like_rule_file(&key, &value.value) {
                        // A plain Prometheus mounts its rule files from a ConfigMap.
                        let inner = super::rules::read_rules(file, &value.value, templated);
                        add(content, &value, inner, src);
                    }
                }
            }
            _ => {}
        }
    }
}

fn looks_like_dashboard(json: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(json).is_ok_and(|v| {
        let d = v.get("dashboard").unwrap_or(&v);
        d.get("panels").is_some() || d.get("rows").is_some()
    })
}

/// A `data` key holding a Prometheus rule file (`alerts.yml: |` with its `groups:`).
fn looks_like_rule_file(key: &str, text: &str) -> bool {
    [".yml", ".yaml", ".rules"].iter().any(|x| key.ends_with(x))
        && text.lines().any(|l| l.trim_start().starts_with("groups:"))
}

/// Adds what was read from the string `json` of the YAML file, its locations moved into the file.
fn add(content: &str, json: &Spanned<String>, inner: Source, src: &mut Source) {
    let at = block_start(content, json);
    let scalar_line = json.referenced.line() as u32;
    let moved = |loc: &mut Location| match (at, loc.line) {
        (Some((line, column)), Some(l)) => {
            loc.line = Some(line + l - 1);
            loc.column = loc.column.map(|c| c + column - 1);
        }
        _ => {
            loc.line = Some(scalar_line);
            loc.column = None;
        }
    };
    for mut q in inner.queries {
        moved(&mut q.location);
        src.queries.push(q);
    }
    for (mut q, text) in inner.templated {
        moved(&mut q.location);
        src.templated.push((q, text));
    }
    src.recorded.extend(inner.recorded);
    for (list, into) in [
        (inner.findings, &mut src.findings),
        (inner.errors, &mut src.errors),
    ] {
        for mut f in list {
            moved(&mut f.location);
            into.push(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::input::read;

    const DASHBOARD: &str = r#"apiVersion: grafana.integreatly.org/v1beta1
kind: GrafanaDashboard
metadata:
  name: vllm
spec:
  instanceSelector:
    matchLabels:
      dashboards: grafana
  json: |
    {
      "templating": {"list": [{"name": "unused", "type": "custom", "query": "a,b"}]},
      "panels": [
        {"type": "timeseries", "title": "KV", "fieldConfig": {"defaults": {"unit": "percentunit"}},
         "targets": [{"refId": "A", "expr": "sum(vllm:kv_cache_usage_perc)"}]}
      ]
    }
"#;

    #[test]
    fn a_grafana_dashboard_resource_is_read_with_yaml_lines_and_columns() {
        let s = read("d.yaml", DASHBOARD);
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        assert_eq!(s.queries.len(), 1);
        let q = &s.queries[0];
        assert_eq!(q.text, "sum(vllm:kv_cache_usage_perc)");
        assert_eq!(q.panel_unit.as_deref(), Some("percentunit"));
        // The expression's string starts on line 14 of the YAML file; its text, after the quote.
        let line = DASHBOARD.lines().nth(13).unwrap();
        let col = line.find("\"sum(").unwrap() as u32 + 2;
        assert_eq!((q.location.line, q.location.column), (Some(14), Some(col)));
        // File-level findings of the dashboard come along, moved too.
        assert_eq!(s.findings.len(), 1, "{:?}", s.findings);
        assert_eq!(s.findings[0].location.line, Some(11));
    }

    #[test]
    fn a_sidecar_config_map_and_a_quoted_dashboard_are_read() {
        let cm = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: dashboards
  labels:
    grafana_dashboard: "1"
data:
  settings.json: '{"theme": "dark"}'
  vllm.json: '{"panels": [{"type": "stat", "title": "Q", "targets": [{"expr": "vllm:num_requests_waiting"}]}]}'
"#;
        let s = read("cm.yaml", cm);
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        assert_eq!(s.queries.len(), 1, "settings.json is no dashboard");
        assert_eq!(s.queries[0].location.line, Some(9));
        assert_eq!(s.queries[0].location.column, None);
    }

    #[test]
    fn a_rule_file_mounted_from_a_config_map_is_read_with_yaml_lines() {
        // As zyvorai/gryvia's manifests/monitoring/alerts/gpu-alerts.yaml ships its GPU alerts.
        let cm = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: prometheus-rules
data:
  prometheus.yml: |
    global:
      scrape_interval: 15s
  gpu-alerts.yml: |
    groups:
      - name: gpu
        rules:
          - record: job:gpu_util:avg
            expr: avg by (job) (DCGM_FI_DEV_GPU_UTIL)
          - alert: GpuHot
            expr: DCGM_FI_DEV_GPU_TEMP > 85
"#;
        let s = read("cm.yaml", cm);
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        let lines: Vec<Option<u32>> = s.queries.iter().map(|q| q.location.line).collect();
        assert_eq!(
            lines,
            [Some(14), Some(16)],
            "prometheus.yml is no rule file"
        );
        assert_eq!(s.recorded, ["job:gpu_util:avg"]);
    }

    #[test]
    fn broken_embedded_json_is_an_error_in_the_yaml_file() {
        let bad = "kind: GrafanaDashboard\nspec:\n  json: |\n    {\n      \"panels\": [,]\n    }\n";
        let s = read("d.yaml", bad);
        assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
        assert_eq!(s.errors[0].location.line, Some(5));
    }
}
