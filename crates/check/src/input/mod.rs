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
mod source;
pub mod text;

pub use source::{Query, Source};

use crate::finding::{Finding, Location, Rule, Severity};
use crate::inventory::Inventories;
use crate::promql::{self, Context, parse::line_col};
use crate::rules::{Fact, Hits, Lint, Scope};

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
///
/// Producers and their names are looked up in hash maps: a file using 100,000 distinct unknown
/// names took 24 s when each was searched for in lists.
fn one_per_producer(findings: Vec<Finding>) -> Vec<Finding> {
    use std::collections::HashSet;
    use std::collections::hash_map::{Entry, HashMap};
    let mut out: Vec<Finding> = Vec::new();
    // Per producer: where its first finding is in `out`, and the names the file uses (in order,
    // and as a set).
    let mut producers: HashMap<String, (usize, Vec<String>, HashSet<String>)> = HashMap::new();
    for f in findings {
        let Some(p) = uncovered_producer(&f) else {
            out.push(f);
            continue;
        };
        let name = f.metric.clone().unwrap_or_default();
        match producers.entry(p) {
            Entry::Occupied(mut e) => {
                let (_, seen, set) = e.get_mut();
                if set.insert(name.clone()) {
                    seen.push(name);
                }
            }
            Entry::Vacant(e) => {
                e.insert((out.len(), vec![name.clone()], HashSet::from([name])));
                out.push(f);
            }
        }
    }
    for (at, seen, _) in producers.into_values() {
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

/// Bytes of an expression a finding carries: its location names the whole. A query with 10,000
/// label matchers (137 KB) copied into each of its findings took `check` to 2.7 GB and 1.58 GB
/// of JSON.
pub const EXPR_KEPT: usize = 2_000;

/// `text`, or its first [`EXPR_KEPT`] bytes (on a character boundary) saying how long it is.
fn excerpt(text: &str) -> String {
    llmscope_core::safe::excerpt(text, EXPR_KEPT).into_owned()
}

fn locate(q: &Query, needle: Option<&str>) -> Location {
    let mut loc = q.location.clone();
    loc.expr = Some(excerpt(&q.text));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn uncovered(name: &str) -> Finding {
        let mut f = Finding::new(Rule::UncoveredProducer, Severity::Warning, "uncovered");
        f.metric = Some(name.to_owned());
        f
    }

    /// One finding per producer, listing its names once each; 10× the names cost about 10× the
    /// time (the fastest of three runs each), where lists made it 100×.
    #[test]
    fn producers_are_grouped_in_linear_time() {
        let findings = |n: usize| -> Vec<Finding> {
            (0..n)
                .flat_map(|i| {
                    [
                        uncovered(&format!("acme_metric_{i}")),
                        uncovered(&format!("ns{i}_requests_total")),
                        uncovered("acme_metric_0"),
                    ]
                })
                .collect()
        };
        let out = one_per_producer(findings(1_000));
        assert_eq!(out.len(), 1 + 1_000, "one for acme, one per ns{{i}}");
        assert!(
            out[0].message.contains("uses 1000 of its names"),
            "{}",
            out[0].message
        );
        let fastest = |n: usize| {
            (0..3)
                .map(|_| {
                    let f = findings(n);
                    let t = std::time::Instant::now();
                    std::hint::black_box(one_per_producer(f));
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min)
        };
        let ratio = fastest(20_000) / fastest(2_000).max(1e-6);
        assert!(ratio < 40.0, "10x the names took {ratio:.0}x the time");
    }

    /// A finding carries at most [`EXPR_KEPT`] bytes of its expression, on a character
    /// boundary, and says how long the whole is.
    #[test]
    fn a_huge_expression_is_excerpted_not_copied() {
        let matchers: Vec<String> = (0..10_000).map(|i| format!("l{i}=\"é{i}\"")).collect();
        let expr = format!("up{{{}}}", matchers.join(","));
        let kept = excerpt(&expr);
        assert!(kept.len() < EXPR_KEPT + 100, "{}", kept.len());
        assert!(kept.starts_with("up{l0=\"é0\""));
        assert!(
            kept.contains(&format!("{} bytes in all", expr.len())),
            "{kept}"
        );
        assert_eq!(excerpt("rate(x[5m])"), "rate(x[5m])");
    }
}
