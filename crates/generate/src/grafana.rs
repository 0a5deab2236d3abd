//! The Grafana classic dashboard JSON model (schemaVersion 39), as serde structs: only the
//! fields an importable dashboard needs, in the order Grafana itself writes them. A datasource
//! variable (`${datasource}`) is used by every panel and query variable, so the dashboard
//! imports into any Grafana without editing.

use serde::{Deserialize, Serialize};

/// The datasource every panel and variable uses: the `datasource` variable.
pub fn datasource() -> Datasource {
    Datasource {
        kind: "prometheus".to_owned(),
        uid: "${datasource}".to_owned(),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dashboard {
    pub annotations: Annotations,
    pub description: String,
    pub editable: bool,
    /// 1: shared crosshair, so GPU and engine panels line up in time.
    pub graph_tooltip: u8,
    pub panels: Vec<Panel>,
    pub refresh: String,
    pub schema_version: u32,
    pub tags: Vec<String>,
    pub templating: Templating,
    pub time: TimeRange,
    pub timezone: String,
    pub title: String,
    pub uid: String,
    pub version: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Annotations {
    pub list: Vec<Annotation>,
}

/// The built-in "Annotations & Alerts" annotation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotation {
    pub built_in: u8,
    pub datasource: Datasource,
    pub enable: bool,
    pub hide: bool,
    pub icon_color: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
}

impl Annotation {
    pub fn builtin() -> Annotation {
        Annotation {
            built_in: 1,
            datasource: Datasource {
                kind: "grafana".to_owned(),
                uid: "-- Grafana --".to_owned(),
            },
            enable: true,
            hide: true,
            icon_color: "rgba(0, 211, 255, 1)".to_owned(),
            name: "Annotations & Alerts".to_owned(),
            kind: "dashboard".to_owned(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Datasource {
    #[serde(rename = "type")]
    pub kind: String,
    pub uid: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeRange {
    pub from: String,
    pub to: String,
}

/// A panel: a `row` (title bar of the panels after it) or a `timeseries` graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Panel {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collapsed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datasource: Option<Datasource>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_config: Option<FieldConfig>,
    pub grid_pos: GridPos,
    pub id: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<PanelOptions>,
    /// Rows only: the panels of a collapsed row (always empty here: rows are open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub panels: Option<Vec<Panel>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<Target>,
    pub title: String,
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GridPos {
    pub h: u32,
    pub w: u32,
    pub x: u32,
    pub y: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldConfig {
    pub defaults: FieldDefaults,
    pub overrides: Vec<Override>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldDefaults {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<Custom>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Value mappings (state timelines: 1 → "stalled").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mappings: Option<Vec<ValueMapping>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<Thresholds>,
    /// A Grafana unit id: `percentunit` for 0..1 fractions, `percent` for 0..100, `s`, `watt`,
    /// `mbytes` (MiB), `short`.
    pub unit: String,
}

/// A `value` mapping: exact values shown as a text in a colour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValueMapping {
    pub options: std::collections::BTreeMap<String, MappedValue>,
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MappedValue {
    pub color: String,
    pub index: u32,
    pub text: String,
}

impl ValueMapping {
    /// Maps each (value, text, colour).
    pub fn values(m: &[(f64, &str, &str)]) -> ValueMapping {
        let options = m
            .iter()
            .zip(0..)
            .map(|((v, text, color), index)| {
                let mapped = MappedValue {
                    color: (*color).to_owned(),
                    index,
                    text: (*text).to_owned(),
                };
                (v.to_string(), mapped)
            })
            .collect();
        ValueMapping {
            options,
            kind: "value".to_owned(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Custom {
    pub thresholds_style: ThresholdsStyle,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdsStyle {
    /// `line`: draw the thresholds as lines on the graph.
    pub mode: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    pub mode: String,
    pub steps: Vec<Step>,
}

/// A threshold step; the first has `value: null` (the base colour).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub color: String,
    pub value: Option<f64>,
}

/// Field overrides, for a second axis in an overlay panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Override {
    pub matcher: Matcher,
    pub properties: Vec<Property>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matcher {
    /// `byFrameRefID`: the series of one query.
    pub id: String,
    pub options: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Property {
    pub id: String,
    pub value: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PanelOptions {
    /// State timelines: where a band's text sits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub align_value: Option<String>,
    pub legend: Legend,
    /// State timelines: adjacent equal values drawn as one band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_values: Option<bool>,
    /// State timelines: band height, 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_height: Option<f64>,
    /// State timelines: `auto`, `always` or `never`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub show_value: Option<String>,
    pub tooltip: Tooltip,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Legend {
    pub display_mode: String,
    pub placement: String,
    pub show_legend: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tooltip {
    pub mode: String,
    pub sort: String,
}

impl PanelOptions {
    /// A state timeline's: merged bands labelled by their mapped text.
    pub fn state_timeline() -> PanelOptions {
        PanelOptions {
            align_value: Some("left".to_owned()),
            merge_values: Some(true),
            row_height: Some(0.9),
            show_value: Some("auto".to_owned()),
            ..PanelOptions::standard()
        }
    }

    pub fn standard() -> PanelOptions {
        PanelOptions {
            align_value: None,
            merge_values: None,
            row_height: None,
            show_value: None,
            legend: Legend {
                display_mode: "list".to_owned(),
                placement: "bottom".to_owned(),
                show_legend: true,
            },
            tooltip: Tooltip {
                mode: "multi".to_owned(),
                sort: "desc".to_owned(),
            },
        }
    }
}

/// One PromQL query of a panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    pub datasource: Datasource,
    pub expr: String,
    pub legend_format: String,
    pub ref_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Templating {
    pub list: Vec<Variable>,
}

/// A dashboard variable: the `datasource` picker or a `label_values` query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Variable {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datasource: Option<Datasource>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub definition: String,
    pub hide: u8,
    pub include_all: bool,
    pub label: String,
    pub multi: bool,
    pub name: String,
    pub query: String,
    pub refresh: u8,
    pub regex: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<u8>,
    #[serde(rename = "type")]
    pub kind: String,
}

impl Variable {
    /// The Prometheus datasource picker.
    pub fn datasource() -> Variable {
        Variable {
            all_value: None,
            datasource: None,
            definition: String::new(),
            hide: 0,
            include_all: false,
            label: "Data source".to_owned(),
            multi: false,
            name: "datasource".to_owned(),
            query: "prometheus".to_owned(),
            refresh: 1,
            regex: String::new(),
            sort: None,
            kind: "datasource".to_owned(),
        }
    }

    /// A multi-value `label_values(...)` variable whose "All" is `.*` (so it also matches series
    /// without the label, e.g. no `pod` when Prometheus scrapes a target directly).
    pub fn label_values(name: &str, label: &str, query: String) -> Variable {
        Variable {
            all_value: Some(".*".to_owned()),
            datasource: Some(datasource()),
            definition: query.clone(),
            include_all: true,
            label: label.to_owned(),
            multi: true,
            name: name.to_owned(),
            query,
            refresh: 2,
            sort: Some(1),
            kind: "query".to_owned(),
            ..Variable::datasource()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_and_datasources_serialise_as_grafana_spells_them() {
        let v = Variable::label_values("pod", "Pod", "label_values(up, pod)".into());
        let j = serde_json::to_value(&v).unwrap();
        assert_eq!(j["allValue"], ".*");
        assert_eq!(j["type"], "query");
        assert_eq!(j["datasource"]["uid"], "${datasource}");
        let step = serde_json::to_string(&Step {
            color: "green".into(),
            value: None,
        })
        .unwrap();
        assert_eq!(step, r#"{"color":"green","value":null}"#);
    }
}
