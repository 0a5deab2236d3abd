//! Sources of PromQL, read into located [`Query`]s: an `--expr`, `.promql` files
//! ([`text`]), Grafana dashboards ([`grafana`]: panels, rows, nested panels, templating, with
//! variables substituted before parsing), and Prometheus rule files or `PrometheusRule`
//! manifests ([`rules`]), and dashboards inside `GrafanaDashboard` resources or sidecar
//! `ConfigMap`s ([`embedded`]). [`files`] opens them safely: regular files only, a size limit, a
//! directory walk that follows each symbolic link once. [`check`] runs the rules over every query and turns each finding's
//! underlined text into a file line and column.

pub mod embedded;
pub mod files;
pub mod grafana;
pub mod rules;
pub mod text;

use crate::finding::{Finding, Location, Rule, Severity};
use crate::inventory::Inventories;
use crate::promql::{self, Context, parse::line_col};
use crate::rules::{Fact, Hits, Lint, Scope};

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
    /// What only the file as a whole shows (dashboard variables used by no panel, or by some).
    pub findings: Vec<Finding>,
}

/// Reads a file by its extension: `.json` dashboards, `.yaml`/`.yml` rules, anything else PromQL.
pub fn read(file: &str, content: &str) -> Source {
    read_with(file, content, crate::rules::ALL)
}

/// [`read`], saying only what `rules` find in the file as a whole.
pub(crate) fn read_with(file: &str, content: &str, rules: &[&dyn Lint]) -> Source {
    let lower = file.to_ascii_lowercase();
    let mut src = if lower.ends_with(".json") {
        grafana::read_with(file, content, rules)
    } else if lower.ends_with(".yaml") || lower.ends_with(".yml") {
        self::rules::read_with(file, content, rules)
    } else {
        text::read(file, content)
    };
    src.file = Some(file.to_owned());
    src
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

/// Runs the rules over a whole source: every query, then what only the file as a whole shows.
/// Names of a producer no inventory covers are said once per producer, at its first use.
pub fn check_source(src: &Source, inv: &Inventories) -> Vec<Finding> {
    check_source_with(src, inv, crate::rules::ALL)
}

/// [`check_source`] with `rules` only.
pub(crate) fn check_source_with(
    src: &Source,
    inv: &Inventories,
    rules: &[&dyn Lint],
) -> Vec<Finding> {
    let mut findings = one_per_producer(check_with(&src.queries, inv, rules));
    findings.extend(src.findings.iter().cloned());
    let mut hits = Hits::default();
    let scope = Scope::new(inv, Context::default());
    crate::rules::judge(rules, &Fact::Source(src), &scope, &mut hits);
    findings.extend(hits.into_findings());
    findings
}

/// The findings with each producer's `uncovered-producer` said once, at its first name, which
/// lists the others.
fn one_per_producer(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    // Per producer: where its first finding is in `out`, and the names the file uses.
    let mut names: Vec<(String, usize, Vec<String>)> = Vec::new();
    for f in findings {
        let Some(p) = uncovered_producer(&f) else {
            out.push(f);
            continue;
        };
        let name = f.metric.clone().unwrap_or_default();
        match names.iter_mut().find(|(q, _, _)| *q == p) {
            Some((_, _, seen)) if !seen.contains(&name) => seen.push(name),
            Some(_) => {}
            None => {
                names.push((p, out.len(), vec![name]));
                out.push(f);
            }
        }
    }
    for (_, at, seen) in names {
        if seen.len() > 1 {
            list_names(&mut out[at], &seen);
        }
    }
    out
}

/// The producer of an `uncovered-producer` finding's name: a known producer by its name; one
/// nothing knows, by the namespace of its names.
fn uncovered_producer(f: &Finding) -> Option<String> {
    use llmscope_catalog::producers::{namespace_of, producer_of};
    let name = f
        .metric
        .as_deref()
        .filter(|_| f.rule == Rule::UncoveredProducer)?;
    producer_of(name)
        .map(|p| p.name.to_owned())
        .or_else(|| {
            let family = promql::names::family_of(name).map(|f| f.exporter);
            let exporter = family.or_else(|| llmscope_catalog::Exporter::of_name(name));
            exporter.map(|e| e.name().to_owned())
        })
        .or_else(|| namespace_of(name).map(str::to_owned))
}

/// Adds to a producer's finding the names of it the file uses.
fn list_names(f: &mut Finding, seen: &[String]) {
    let shown: Vec<&str> = seen.iter().take(6).map(String::as_str).collect();
    let more = seen.len().saturating_sub(6);
    f.message = format!(
        "{}; the file uses {} of its names: {}{}",
        f.message,
        seen.len(),
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    );
}

/// Runs the rules over every query, with located findings, in query order.
pub fn check(queries: &[Query], inv: &Inventories) -> Vec<Finding> {
    check_with(queries, inv, crate::rules::ALL)
}

/// [`check`] with `rules` only.
pub(crate) fn check_with(
    queries: &[Query],
    inv: &Inventories,
    rules: &[&dyn Lint],
) -> Vec<Finding> {
    let mut out = Vec::new();
    for q in queries {
        let cx = Context {
            graph: q.graph,
            panel_unit: q.panel_unit.as_deref(),
            title: q.title.as_deref(),
            thresholds: &q.thresholds,
            scaler: q.scaler,
        };
        for hit in promql::check_expr_with(&q.parsed, inv, cx, rules) {
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
