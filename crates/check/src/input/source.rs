//! What a source holds, as plain data: located [`Query`]s and the file's own findings. The rules
//! read these (`crate::rules::fact`) without reaching the readers that make them.

use crate::finding::{Finding, Location};

/// One expression to check, and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// As written in the source.
    pub text: String,
    /// What is parsed (Grafana variables substituted); equal to `text` elsewhere.
    pub parsed: String,
    /// File, panel/rule, and the line and column where `text` starts.
    pub location: Location,
    /// Drawn as a graph over time.
    pub graph: bool,
    pub panel_unit: Option<String>,
    /// Panel title and legend, where the query is shown.
    pub title: Option<String>,
    /// The panel's thresholds that show (colour a stat or gauge, or are drawn on a graph).
    pub thresholds: Vec<f64>,
    /// Feeds an autoscaler (a KEDA trigger, a prometheus-adapter rule), which divides the value
    /// by the replica count: a sum across pods is what it wants.
    pub scaler: bool,
}

impl Query {
    pub fn new(text: impl Into<String>, location: Location) -> Query {
        let text = text.into();
        Query {
            parsed: text.clone(),
            text,
            location,
            graph: false,
            panel_unit: None,
            title: None,
            thresholds: Vec::new(),
            scaler: false,
        }
    }
}

/// What a source file holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Source {
    /// The file read, when there is one.
    pub file: Option<String>,
    pub queries: Vec<Query>,
    /// Names its recording rules produce.
    pub recorded: Vec<String>,
    /// The file itself does not parse (as JSON, YAML, …).
    pub errors: Vec<Finding>,
    /// Expressions of a Helm/Go template with template text where PromQL expects an expression
    /// (`> {{ .Values.threshold }}`): what they render to is not known, so they are set aside,
    /// with that text, instead of checked.
    pub templated: Vec<(Query, String)>,
    /// What only the file as a whole shows (dashboard variables used by no panel, or by some).
    pub findings: Vec<Finding>,
}
