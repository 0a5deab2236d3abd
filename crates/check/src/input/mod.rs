//! Sources of PromQL, read into located [`Query`]s: an `--expr`, `.promql` files
//! ([`text`]), Grafana dashboards ([`grafana`]: panels, rows, nested panels, templating, with
//! variables substituted before parsing), and Prometheus rule files or `PrometheusRule`
//! manifests ([`rules`]). [`files`] opens them safely: regular files only, a size limit, a
//! directory walk that follows each symbolic link once. [`check`] runs the rules over every query and turns each finding's
//! underlined text into a file line and column.

pub mod files;
pub mod grafana;
pub mod rules;
pub mod text;

use crate::finding::{Finding, Location, Rule, Severity};
use crate::inventory::Inventories;
use crate::promql::{self, Context, parse::line_col};

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
        }
    }
}

/// What a source file holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Source {
    pub queries: Vec<Query>,
    /// Names its recording rules produce.
    pub recorded: Vec<String>,
    /// The file itself does not parse (as JSON, YAML, …).
    pub errors: Vec<Finding>,
}

/// Reads a file by its extension: `.json` dashboards, `.yaml`/`.yml` rules, anything else PromQL.
pub fn read(file: &str, content: &str) -> Source {
    let lower = file.to_ascii_lowercase();
    if lower.ends_with(".json") {
        grafana::read(file, content)
    } else if lower.ends_with(".yaml") || lower.ends_with(".yml") {
        rules::read(file, content)
    } else {
        text::read(file, content)
    }
}

/// A file-level parse error.
pub fn file_error(file: &str, line: Option<u32>, column: Option<u32>, message: String) -> Finding {
    let mut f = Finding::new(Rule::ParseError, Severity::Error, message);
    f.location = Location {
        file: file.to_owned(),
        line,
        column,
        ..Location::default()
    };
    f
}

/// Runs the rules over every query, with located findings, in query order.
pub fn check(queries: &[Query], inv: &Inventories) -> Vec<Finding> {
    let mut out = Vec::new();
    for q in queries {
        let cx = Context {
            graph: q.graph,
            panel_unit: q.panel_unit.as_deref(),
        };
        for hit in promql::check_expr(&q.parsed, inv, cx) {
            let mut f = hit.finding;
            f.location = locate(q, hit.needle.as_deref());
            out.push(f);
        }
    }
    out
}

fn locate(q: &Query, needle: Option<&str>) -> Location {
    let mut loc = q.location.clone();
    loc.expr = Some(q.text.clone());
    let found = needle.and_then(|n| {
        if n.starts_with('\u{0}') {
            promql::needle_offset(&q.parsed, n).map(|o| line_col(&q.parsed, o))
        } else {
            promql::needle_offset(&q.text, n).map(|o| line_col(&q.text, o))
        }
    });
    if let Some((dl, dc)) = found {
        match (loc.line, loc.column) {
            (Some(line), Some(col)) if dl == 1 => {
                loc.line = Some(line);
                loc.column = Some(col + dc - 1);
            }
            (Some(line), _) => {
                loc.line = Some(line + dl - 1);
                loc.column = Some(dc);
            }
            (None, _) => loc.column = Some(dc),
        }
    }
    loc
}
