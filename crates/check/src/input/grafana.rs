//! Grafana dashboards (classic JSON model): every target `expr` of every panel — rows, nested
//! and collapsed-row panels included — and every query variable in `templating`.
//!
//! Variables are substituted before parsing, outside quoted strings only (dashboard-linter's and
//! mimirtool's approach): `$__rate_interval`, `$__interval` and `$__range` become distinctive
//! durations the rules recognise; another variable becomes `5m` inside `[…]`, a placeholder
//! label in `by (…)`-like lists and before `{`, and `1` elsewhere. Label values such as
//! `{model_name="$model_name"}` stay as written and are not value-checked.
//! `label_values(q, l)` is checked as `count by (l) (q)`, so both the metric and the label are.

use super::{Query, Source, file_error};
use crate::finding::{Finding, Location};
use crate::inventory::Inventories;
use crate::promql::Context;
use crate::promql::analyze::{INTERVAL_S, RANGE_S, RATE_INTERVAL_S};
use crate::promql::labels::VAR_PREFIX;
use crate::rules::fact::VariableFact;
use crate::rules::{Fact, Hits, Lint, Scope};
use serde_json::Value;
use std::collections::HashMap;

/// Reads a dashboard (or a `{"dashboard": …}` export).
pub fn read(file: &str, content: &str) -> Source {
    read_with(file, content, crate::rules::ALL)
}

/// [`read`], the dashboard's variables judged by `rules`.
pub(crate) fn read_with(file: &str, content: &str, rules: &[&dyn Lint]) -> Source {
    let root: Value = match serde_json::from_str(content) {
        Ok(v) => v,
        Err(e) => {
            let msg = format!("not valid JSON: {e}");
            return unread(file_error(
                file,
                Some(e.line() as u32),
                Some(e.column() as u32),
                msg,
            ));
        }
    };
    let dash = root
        .get("dashboard")
        .filter(|d| d.is_object())
        .unwrap_or(&root);
    let queries = Reader::new(file, content).dashboard(dash);
    if queries.is_empty() && dash.get("panels").is_none() && dash.get("rows").is_none() {
        let msg = "not a Grafana dashboard: no panels, rows or templating".to_owned();
        return unread(file_error(file, None, None, msg));
    }
    let findings = variables(file, content, dash, &queries, rules);
    Source {
        queries,
        findings,
        ..Source::default()
    }
}

/// A file that could not be read as a dashboard.
fn unread(error: Finding) -> Source {
    Source {
        errors: vec![error],
        ..Source::default()
    }
}

/// Whether `text` refers to variable `name` (`$name`, `${name…}`, `[[name…]]`).
pub(crate) fn uses(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(&format!("${name}"))
        .any(|(i, m)| !text[i + m.len()..].starts_with(ident))
        || text.contains(&format!("${{{name}}}"))
        || text.contains(&format!("${{{name}:"))
        || text.contains(&format!("[[{name}]]"))
        || text.contains(&format!("[[{name}:"))
}

/// The dashboard's variables that panels can use, each a fact for `rules` (`unused-variable`,
/// `ignored-variable`): which panel queries use it, and whether another variable does. What a
/// file shows by itself is judged before any inventory is at hand.
fn variables(
    file: &str,
    content: &str,
    dash: &Value,
    queries: &[Query],
    rules: &[&dyn Lint],
) -> Vec<Finding> {
    let list: Vec<&Value> = templating(dash).collect();
    let panels: Vec<&Query> = queries.iter().filter(|q| of_panel(q)).collect();
    let none = Inventories::new();
    let scope = Scope::new(&none, Context::default());
    let mut hits = Hits::default();
    for name in list.iter().filter_map(|v| usable(v)) {
        let (using, others): (Vec<&Query>, Vec<&Query>) =
            panels.iter().copied().partition(|q| in_panel(q, name));
        let by_variables = list
            .iter()
            .any(|o| variable_name(o) != Some(name) && uses(&definition(o), name));
        let fact = VariableFact {
            name,
            using: &using,
            others: &others,
            by_variables,
            file,
            content,
        };
        crate::rules::judge(rules, &Fact::Variable(&fact), &scope, &mut hits);
    }
    hits.into_findings()
}

/// Whether a query is a panel's (not a variable's).
fn of_panel(q: &Query) -> bool {
    q.location
        .context
        .as_deref()
        .is_some_and(|c| c.starts_with("panel "))
}

fn variable_name(v: &Value) -> Option<&str> {
    v.get("name").and_then(Value::as_str)
}

/// The name of a variable a panel can use: a query, custom, textbox, constant or interval
/// variable, not a built-in `__…`.
fn usable(v: &Value) -> Option<&str> {
    let name = variable_name(v)?;
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    let usable = matches!(
        kind,
        "query" | "custom" | "textbox" | "constant" | "interval"
    );
    (usable && !name.starts_with("__")).then_some(name)
}

/// A variable's definition: its query and regex.
fn definition(v: &Value) -> String {
    let q = v.get("query");
    let q = q
        .and_then(|q| q.as_str().or_else(|| q.get("query")?.as_str()))
        .unwrap_or("");
    format!(
        "{q} {}",
        v.get("regex").and_then(Value::as_str).unwrap_or("")
    )
}

/// Whether a panel query uses variable `name`: in its text, its title or its panel's context.
fn in_panel(q: &Query, name: &str) -> bool {
    uses(&q.text, name)
        || q.title.as_deref().is_some_and(|t| uses(t, name))
        || q.location.context.as_deref().is_some_and(|c| uses(c, name))
}

/// The threshold values a panel shows: the steps of a stat, gauge or bar gauge (they colour the
/// value), or of a graph whose thresholds are drawn (`thresholdsStyle.mode` other than `off`), and
/// the old graph panel's `thresholds`. The base step (`null`) is no threshold.
fn shown_thresholds(p: &Value, kind: &str) -> Vec<f64> {
    let mut out = Vec::new();
    let colours = matches!(kind, "stat" | "gauge" | "bargauge" | "singlestat");
    let drawn = p
        .pointer("/fieldConfig/defaults/custom/thresholdsStyle/mode")
        .and_then(Value::as_str)
        .is_some_and(|m| m != "off");
    if colours || drawn {
        let steps = p
            .pointer("/fieldConfig/defaults/thresholds/steps")
            .and_then(Value::as_array);
        out.extend(
            steps
                .into_iter()
                .flatten()
                .filter_map(|s| s.get("value").and_then(Value::as_f64)),
        );
    }
    match p.get("thresholds") {
        Some(Value::Array(old)) => out.extend(
            old.iter()
                .filter_map(|s| s.get("value").and_then(Value::as_f64)),
        ),
        // The singlestat panel (Grafana < 7) keeps its colour steps as text: "80,90".
        Some(Value::String(text)) if kind == "singlestat" => out.extend(
            text.split(',')
                .filter_map(|t| t.trim().parse::<f64>().ok())
                .filter(|x| x.is_finite()),
        ),
        _ => {}
    }
    out
}

/// What every query of a panel shares.
struct Panel<'a> {
    title: &'a str,
    kind: &'a str,
    unit: Option<&'a str>,
    thresholds: Vec<f64>,
}

impl<'a> Panel<'a> {
    fn of(p: &'a Value) -> Panel<'a> {
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
        Panel {
            title: p
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or("(untitled)"),
            kind,
            unit: p
                .pointer("/fieldConfig/defaults/unit")
                .or_else(|| p.pointer("/yaxes/0/format"))
                .and_then(Value::as_str),
            thresholds: shown_thresholds(p, kind),
        }
    }
}

/// A target's PromQL: its `expr`, unless it is empty or the target's (or panel's) datasource
/// is Loki.
fn promql_expr<'a>(t: &'a Value, p: &Value) -> Option<&'a str> {
    let expr = t
        .get("expr")
        .and_then(Value::as_str)
        .filter(|e| !e.trim().is_empty())?;
    let loki = is_loki(t.get("datasource")) || is_loki(p.get("datasource"));
    (!loki).then_some(expr)
}

/// The dashboard's variables.
fn templating(dash: &Value) -> impl Iterator<Item = &Value> {
    dash.pointer("/templating/list")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

struct Reader<'a> {
    file: &'a str,
    content: &'a str,
    /// Where the last expression was found, so repeated expressions get their own lines.
    cursor: usize,
    places: Places<'a>,
    lines: Lines,
    queries: Vec<Query>,
}

impl<'a> Reader<'a> {
    fn new(file: &'a str, content: &'a str) -> Reader<'a> {
        Reader {
            file,
            content,
            cursor: 0,
            places: Places::new(content),
            lines: Lines::new(content),
            queries: Vec::new(),
        }
    }

    /// Every query of the dashboard: its panels, its rows' panels, and its query variables.
    fn dashboard(mut self, dash: &Value) -> Vec<Query> {
        self.panels(dash.get("panels"));
        for row in dash
            .get("rows")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.panels(row.get("panels"));
        }
        self.templating(dash);
        self.queries
    }

    fn panels(&mut self, panels: Option<&Value>) {
        for p in panels.and_then(Value::as_array).into_iter().flatten() {
            self.panel(p);
            self.panels(p.get("panels"));
        }
    }

    fn panel(&mut self, p: &Value) {
        let panel = Panel::of(p);
        for t in p
            .get("targets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(expr) = promql_expr(t, p) {
                self.target(&panel, t, expr);
            }
        }
    }

    fn target(&mut self, panel: &Panel<'_>, t: &Value, expr: &str) {
        let (title, kind) = (panel.title, panel.kind);
        let r = t.get("refId").and_then(Value::as_str).unwrap_or("?");
        let mut q = self.query(expr, format!("panel \"{title}\" ({kind}), query {r}"));
        q.graph = matches!(kind, "graph" | "timeseries" | "heatmap");
        q.panel_unit = panel.unit.map(str::to_owned);
        let legend = t.get("legendFormat").and_then(Value::as_str).unwrap_or("");
        q.title = Some(format!("{title} {legend}").trim().to_owned());
        q.thresholds = panel.thresholds.clone();
        self.queries.push(q);
    }

    fn templating(&mut self, dash: &Value) {
        for v in templating(dash) {
            if v.get("type").and_then(Value::as_str) != Some("query") {
                continue;
            }
            let raw = v
                .get("query")
                .and_then(|q| q.as_str().or_else(|| q.get("query")?.as_str()));
            let Some(raw) = raw else { continue };
            let Some(promql) = variable_query(raw) else {
                continue;
            };
            let name = v.get("name").and_then(Value::as_str).unwrap_or("?");
            let mut q = self.query(raw, format!("variable ${name}"));
            q.parsed = substitute(&promql);
            self.queries.push(q);
        }
    }

    fn query(&mut self, expr: &str, context: String) -> Query {
        let (line, column) = self.find(expr);
        let mut q = Query::new(
            expr,
            Location {
                file: self.file.to_owned(),
                context: Some(context),
                line,
                column,
                ..Location::default()
            },
        );
        q.parsed = substitute(expr);
        q
    }

    /// Line and column of the JSON string holding `expr` (columns count from its first character).
    fn find(&mut self, expr: &str) -> (Option<u32>, Option<u32>) {
        let Ok(quoted) = serde_json::to_string(expr) else {
            return (None, None);
        };
        let Some(at) = self.places.next_at(&quoted, self.cursor) else {
            return (None, None);
        };
        self.cursor = at + quoted.len();
        let (line, col) = self.lines.line_col(self.content, at + 1);
        (Some(line), Some(col))
    }
}

/// Where each `"expr"` and `"query"` string value is in the file, found in one pass, so that
/// locating every query is linear in the file's size (issue 17: searching the text from the
/// start for each query was quadratic; a 50 MB dashboard never finished).
struct Places<'a> {
    at: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Places<'a> {
    fn new(content: &'a str) -> Self {
        let bytes = content.as_bytes();
        let mut at: HashMap<&str, Vec<usize>> = HashMap::new();
        let (mut i, mut key): (usize, &str) = (0, "");
        while let Some(start) = memchr::memchr(b'"', &bytes[i..]).map(|o| o + i) {
            let mut end = start + 1;
            while end < bytes.len() && bytes[end] != b'"' {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            let end = end.min(bytes.len() - 1);
            let literal = &content[start..=end];
            let rest = &bytes[end + 1..];
            let next = rest.iter().find(|b| !b.is_ascii_whitespace());
            if next == Some(&b':') {
                key = literal;
            } else if matches!(key, "\"expr\"" | "\"query\"") {
                at.entry(literal).or_default().push(start);
            }
            i = end + 1;
        }
        Places { at }
    }

    /// The first place of `literal` at or after `cursor`, else its first place.
    fn next_at(&self, literal: &str, cursor: usize) -> Option<usize> {
        let places = self.at.get(literal)?;
        let i = places.partition_point(|&p| p < cursor);
        places.get(i).or(places.first()).copied()
    }
}

/// Line starts of the file, and the last position asked, so that columns are counted from there
/// when the next position is further on the same line (a minified dashboard is one line).
struct Lines {
    starts: Vec<usize>,
    last: Option<(usize, u32)>,
}

impl Lines {
    fn new(content: &str) -> Self {
        let nl = memchr::memchr_iter(b'\n', content.as_bytes()).map(|i| i + 1);
        Lines {
            starts: std::iter::once(0).chain(nl).collect(),
            last: None,
        }
    }

    /// 1-based line and column (in characters) of byte `offset`.
    fn line_col(&mut self, content: &str, offset: usize) -> (u32, u32) {
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let (from, col) = match self.last {
            Some((at, col)) if at >= start && at <= offset => (at, col),
            _ => (start, 1),
        };
        let col = col + content[from..offset].chars().count() as u32;
        self.last = Some((offset, col));
        (line as u32 + 1, col)
    }
}

fn is_loki(ds: Option<&Value>) -> bool {
    let text = match ds {
        Some(Value::String(s)) => s.as_str(),
        Some(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        None => "",
    };
    text.to_ascii_lowercase().contains("loki")
}

/// The PromQL inside a query variable's definition, if any.
fn variable_query(raw: &str) -> Option<String> {
    let t = raw.trim();
    if let Some(inner) = call_args(t, "label_values") {
        let (q, label) = inner.rsplit_once(',')?;
        let label = label.trim();
        return Some(format!("count by ({label}) ({})", q.trim()));
    }
    if let Some(inner) = call_args(t, "query_result") {
        return Some(inner.to_owned());
    }
    if t.starts_with("metrics(") || t.starts_with("label_names(") || t.is_empty() {
        return None;
    }
    Some(t.to_owned())
}

fn call_args<'a>(t: &'a str, func: &str) -> Option<&'a str> {
    t.strip_prefix(func)?
        .trim_start()
        .strip_prefix('(')?
        .strip_suffix(')')
}

/// Substitutes Grafana variables outside quoted strings.
pub fn substitute(expr: &str) -> String {
    let mut out = String::with_capacity(expr.len() + 16);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut rest = expr;
    while let Some(c) = rest.chars().next() {
        if let Some(q) = quote {
            out.push(c);
            rest = &rest[c.len_utf8()..];
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                _ if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        if let Some((name, len)) = variable_at(rest) {
            let after = rest[len..].trim_start();
            out.push_str(&replacement(name, &out, after));
            rest = &rest[len..];
            continue;
        }
        if matches!(c, '"' | '\'' | '`') {
            quote = Some(c);
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `$name`, `${name}`, `${name:fmt}` or `[[name]]` at the start of `s`: (name, length).
fn variable_at(s: &str) -> Option<(&str, usize)> {
    let ident = |t: &str| {
        t.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(t.len())
    };
    if let Some(t) = s.strip_prefix("${") {
        let end = t.find('}')?;
        let name = t[..end].split(':').next()?;
        return Some((name, end + 3));
    }
    if let Some(t) = s.strip_prefix("[[") {
        let end = t.find("]]")?;
        let name = t[..end].split(':').next()?;
        return (ident(name) == name.len() && !name.is_empty()).then_some((name, end + 4));
    }
    let t = s.strip_prefix('$')?;
    let n = ident(t);
    (n > 0).then_some((&t[..n], n + 1))
}

fn replacement(name: &str, before: &str, after: &str) -> String {
    match name {
        "__rate_interval" => return format!("{RATE_INTERVAL_S}s"),
        "__interval" => return format!("{INTERVAL_S}s"),
        "__range" => return format!("{RANGE_S}s"),
        "__interval_ms" | "__range_ms" | "__range_s" => return "60".to_owned(),
        _ => {}
    }
    let prev = before.trim_end().chars().last();
    if matches!(prev, Some('[' | ':')) {
        return "5m".to_owned();
    }
    if after.starts_with('{') || in_label_list(before) {
        return format!("{VAR_PREFIX}{name}");
    }
    "1".to_owned()
}

/// Whether the innermost open `(` of `before` follows `by`, `on`, `group_left`, ….
fn in_label_list(before: &str) -> bool {
    let mut depth = 0i32;
    for (i, c) in before.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' if depth > 0 => depth -= 1,
            '(' => {
                let word: String = before[..i]
                    .trim_end()
                    .chars()
                    .rev()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                return matches!(
                    word.as_str(),
                    "by" | "without" | "on" | "ignoring" | "group_left" | "group_right"
                );
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_outside_strings_only() {
        assert_eq!(
            substitute(r#"rate(x{model_name="$model_name"}[$__rate_interval])"#),
            format!(r#"rate(x{{model_name="$model_name"}}[{RATE_INTERVAL_S}s])"#)
        );
        assert_eq!(substitute("rate(x[$interval])"), "rate(x[5m])");
        assert_eq!(substitute("rate(x[[[interval]]])"), "rate(x[5m])");
        assert_eq!(
            substitute("sum by (${group}) (x) > $threshold"),
            format!("sum by ({VAR_PREFIX}group) (x) > 1")
        );
        assert_eq!(
            substitute("$metric{a=\"b\"}"),
            format!("{VAR_PREFIX}metric{{a=\"b\"}}")
        );
        assert_eq!(substitute("x[${__range}]"), format!("x[{RANGE_S}s]"));
    }

    #[test]
    fn shown_thresholds_of_each_panel_kind() {
        let panel = |v: serde_json::Value| v;
        let steps = panel(
            serde_json::json!({"fieldConfig": {"defaults": {"thresholds": {"steps": [
            {"color": "green", "value": null}, {"color": "red", "value": 80}]}}}}),
        );
        assert_eq!(shown_thresholds(&steps, "stat"), [80.0]);
        // A time series draws its steps only when asked to.
        assert!(shown_thresholds(&steps, "timeseries").is_empty());
        let old_graph = panel(serde_json::json!({"thresholds": [{"value": 0.9, "op": "gt"}]}));
        assert_eq!(shown_thresholds(&old_graph, "graph"), [0.9]);
        let singlestat = panel(serde_json::json!({"thresholds": "80, 90,"}));
        assert_eq!(shown_thresholds(&singlestat, "singlestat"), [80.0, 90.0]);
        assert!(
            shown_thresholds(&panel(serde_json::json!({"thresholds": ""})), "singlestat")
                .is_empty()
        );
    }

    #[test]
    fn label_values_becomes_a_grouping() {
        assert_eq!(
            variable_query("label_values(vllm:generation_tokens_total, model_name)").as_deref(),
            Some("count by (model_name) (vllm:generation_tokens_total)")
        );
        assert_eq!(variable_query("label_values(model_name)"), None);
        assert_eq!(variable_query("query_result(up)").as_deref(), Some("up"));
    }

    #[test]
    fn panels_rows_nested_and_lines() {
        let json = r#"{"dashboard": {"panels": [
  {"type": "row", "title": "R", "panels": [
    {"type": "timeseries", "title": "KV", "fieldConfig": {"defaults": {"unit": "percentunit"}},
     "targets": [{"refId": "A", "expr": "vllm:kv_cache_usage_perc"}]}]},
  {"type": "stat", "title": "S", "targets": [{"refId": "B", "expr": "up"}, {"expr": "{job=\"x\"}", "datasource": {"type": "loki"}}]}
], "rows": [{"panels": [{"type": "graph", "title": "Old", "targets": [{"expr": "x"}]}]}],
"templating": {"list": [{"type": "query", "name": "m", "query": {"query": "label_values(y, model_name)"}}]}}}"#;
        let s = read("d.json", json);
        assert!(s.errors.is_empty());
        let ctx: Vec<&str> = s
            .queries
            .iter()
            .map(|q| q.location.context.as_deref().unwrap())
            .collect();
        assert_eq!(
            ctx,
            [
                "panel \"KV\" (timeseries), query A",
                "panel \"S\" (stat), query B",
                "panel \"Old\" (graph), query ?",
                "variable $m"
            ]
        );
        assert_eq!(s.queries[0].location.line, Some(4));
        assert!(s.queries[0].graph && !s.queries[1].graph);
        assert_eq!(s.queries[0].panel_unit.as_deref(), Some("percentunit"));
        assert_eq!(s.queries[3].parsed, "count by (model_name) (y)");
    }

    fn variable_findings(panels: &[(&str, &str)]) -> Vec<String> {
        let panels: Vec<String> = panels
            .iter()
            .map(|(title, expr)| {
                format!(
                    r#"{{"type": "timeseries", "title": "{title}", "targets": [{{"expr": {}}}]}}"#,
                    serde_json::to_string(expr).unwrap()
                )
            })
            .collect();
        let json = format!(
            r#"{{"templating": {{"list": [{{"name": "ns", "type": "query", "query": "label_values(namespace)"}},
               {{"name": "other", "type": "query", "query": "label_values(namespace)"}}]}},
              "panels": [{}]}}"#,
            panels.join(",")
        );
        read("d.json", &json)
            .findings
            .iter()
            .map(|f| {
                let ctx = f.location.context.as_deref().unwrap_or("");
                format!("{} {ctx}: {}", f.rule, f.message)
            })
            .collect()
    }

    #[test]
    fn a_variable_some_panels_ignore_is_said_once() {
        let found = variable_findings(&[
            ("A", r#"vllm:num_requests_running{namespace="$ns"}"#),
            ("B", r#"vllm:num_requests_waiting{namespace="$ns"}"#),
            ("C", "vllm:num_requests_waiting"),
            ("D", r#"vllm:num_requests_waiting{namespace="$other"}"#),
        ]);
        // C ignores both; D, which matches `namespace` on `$other`, does not ignore `$ns`.
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].starts_with("ignored-variable variable $ns: 2 queries filter on `$ns`, but 1 over the same metrics ignore it (\"C\")"),
            "{found:?}"
        );
        assert!(
            found[1].starts_with("ignored-variable variable $other"),
            "{found:?}"
        );
    }

    #[test]
    fn two_variables_on_one_label_compare_and_ignore_nothing() {
        // One side of a comparison per variable: every panel matches `namespace`, on one or the other.
        let found = variable_findings(&[
            ("A", r#"sum(vllm:num_requests_running{namespace="$ns"})"#),
            ("A", r#"sum(vllm:num_requests_running{namespace="$other"})"#),
            ("B", r#"vllm:kv_cache_usage_perc{namespace="$ns"}"#),
            ("B", r#"vllm:kv_cache_usage_perc{namespace="$other"}"#),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn bad_json_is_a_located_error() {
        let s = read("d.json", "{\n  \"panels\": [,]\n}");
        assert_eq!(s.errors.len(), 1);
        assert_eq!(s.errors[0].location.line, Some(2));
    }
}
