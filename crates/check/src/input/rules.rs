//! Prometheus rule files (`groups: [{name, rules: [{alert|record, expr}]}]`) and
//! `PrometheusRule` manifests (`spec.groups`), several YAML documents per file allowed. Read
//! with `serde-saphyr`, whose errors and spans carry lines and columns. Names of recording
//! rules are returned so queries on them count as existing.

use super::{Query, Source, file_error};
use crate::finding::Location;
use crate::rules::Lint;
use serde::Deserialize;
use serde_saphyr::Spanned;

#[derive(Debug, Deserialize)]
struct Doc {
    #[serde(default)]
    groups: Vec<Group>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    spec: Option<Spec>,
}

#[derive(Debug, Deserialize)]
struct Spec {
    #[serde(default)]
    groups: Vec<Group>,
}

#[derive(Debug, Deserialize)]
struct Group {
    name: String,
    #[serde(default)]
    rules: Vec<RuleDef>,
}

#[derive(Debug, Deserialize)]
struct RuleDef {
    #[serde(default)]
    alert: Option<String>,
    #[serde(default)]
    record: Option<String>,
    expr: Spanned<String>,
}

/// Reads a rule file or a `PrometheusRule` manifest; failing those, a prometheus-adapter config
/// or a KEDA `ScaledObject`. A Helm template is read with its `{{ … }}` actions blanked out
/// (control lines emptied, inline actions replaced by a placeholder), lines kept.
pub fn read(file: &str, content: &str) -> Source {
    read_with(file, content, crate::rules::ALL)
}

/// [`read`]; the dashboards embedded in the file are judged by `rules` only.
pub(crate) fn read_with(file: &str, content: &str, rules: &[&dyn Lint]) -> Source {
    let templated = content.contains("{{");
    let (untemplated, actions) = helm(content);
    let content = untemplated.as_str();
    let mut src = read_rules(file, content, templated);
    if src.queries.is_empty() && src.errors.is_empty() {
        others(file, content, templated, &mut src);
    }
    if src.queries.is_empty() && src.errors.is_empty() {
        super::embedded::read_with(file, content, templated, rules, &mut src);
    }
    if !actions.is_empty() {
        set_aside_templated(&mut src, &actions);
    }
    src
}

/// What stands in for the `i`-th inline template action: a name PromQL reads in a label value
/// and as a metric name alike, and that no exporter uses.
fn placeholder(i: usize) -> String {
    format!("{PLACEHOLDER}{i}__")
}
const PLACEHOLDER: &str = "__helm_action_";

/// Moves the queries with a template action outside any quoted string (where PromQL expects a
/// number, a name or an operator) to [`Source::templated`], each with the first such action as
/// written. An action inside a label value stands for some value and is checked as one.
/// Every query's text and place are shown as written, the actions back in them.
fn set_aside_templated(src: &mut Source, actions: &[String]) {
    let queries = std::mem::take(&mut src.queries);
    for mut q in queries {
        q.text = as_written(&q.text, actions);
        q.location.context = q.location.context.map(|c| as_written(&c, actions));
        match bare_action(&q.parsed).and_then(|i| actions.get(i)) {
            Some(action) => src.templated.push((q, action.clone())),
            None => src.queries.push(q),
        }
    }
}

/// `text` with each placeholder replaced by the action it stands for.
fn as_written(text: &str, actions: &[String]) -> String {
    if !text.contains(PLACEHOLDER) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(PLACEHOLDER) {
        out.push_str(&rest[..at]);
        let tail = &rest[at + PLACEHOLDER.len()..];
        let digits = tail.chars().take_while(char::is_ascii_digit).count();
        let action = tail[..digits]
            .parse::<usize>()
            .ok()
            .and_then(|i| actions.get(i));
        match (action, tail[digits..].strip_prefix("__")) {
            (Some(action), Some(after)) => {
                out.push_str(action);
                rest = after;
            }
            _ => {
                out.push_str(PLACEHOLDER);
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The index of the first placeholder in `expr` outside a string literal.
fn bare_action(expr: &str) -> Option<usize> {
    let code = crate::promql::dialect::outside_strings(expr);
    code.match_indices(PLACEHOLDER).find_map(|(at, _)| {
        let rest = &code[at + PLACEHOLDER.len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        rest[..digits].parse().ok()
    })
}

/// Several YAML documents; in a template, `if`/`else` branches may repeat a key: the last wins.
pub(super) fn documents<T: serde::de::DeserializeOwned>(
    content: &str,
    templated: bool,
) -> Result<Vec<T>, serde_saphyr::Error> {
    if templated {
        let options = serde_saphyr::options! {
            duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::LastWins,
        };
        serde_saphyr::from_multiple_with_options(content, options)
    } else {
        serde_saphyr::from_multiple(content)
    }
}

/// Blanks Helm/Go template actions, keeping every line where it was: a line that is one action
/// (`{{- if … }}`) is emptied, an inline action replaced by a [`placeholder`]. Returns the text
/// and the inline actions as written, in placeholder order.
fn helm(content: &str) -> (String, Vec<String>) {
    let mut actions = Vec::new();
    if !content.contains("{{") {
        return (content.to_owned(), actions);
    }
    let text = content
        .lines()
        .map(|line| {
            let t = line.trim();
            if t.starts_with("{{") && t.ends_with("}}") && !t[2..].contains("{{") {
                return String::new();
            }
            let mut out = String::with_capacity(line.len());
            let mut rest = line;
            while let Some(at) = rest.find("{{") {
                out.push_str(&rest[..at]);
                match action_end(&rest[at..]) {
                    Some(end) => {
                        out.push_str(&placeholder(actions.len()));
                        actions.push(
                            llmscope_core::safe::excerpt(&rest[at..at + end + 2], 200).into_owned(),
                        );
                        rest = &rest[at + end + 2..];
                    }
                    None => {
                        rest = &rest[at..];
                        break;
                    }
                }
            }
            out.push_str(rest);
            out
        })
        .collect::<Vec<_>>()
        .join("\n");
    (text, actions)
}

/// Where the template action starting `action` (at its `{{`) ends: the offset of its `}}`, past
/// the Go strings inside it — `{{`{{ $value }}`}}`, Helm's way to leave Prometheus's own template
/// text in an alert, holds a `}}` in a raw string.
fn action_end(action: &str) -> Option<usize> {
    let b = action.as_bytes();
    let mut i = 2;
    while i + 1 < b.len() {
        match b[i] {
            b'`' => i += 1 + action[i + 1..].find('`')? + 1,
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'}' if b[i + 1] == b'}' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// prometheus-adapter rules (`metricsQuery`, `seriesQuery`) and KEDA prometheus triggers.
fn others(file: &str, content: &str, templated: bool, src: &mut Source) {
    let Ok(docs) = documents::<serde_json::Value>(content, templated) else {
        return;
    };
    for doc in &docs {
        let kind = doc.get("kind").and_then(|k| k.as_str()).unwrap_or("");
        if matches!(kind, "ScaledObject" | "ScaledJob") {
            keda_triggers(doc, kind, file, content, src);
        } else {
            adapter_rules(doc, file, content, src);
        }
    }
}

/// The queries of a KEDA `ScaledObject`'s (or `ScaledJob`'s) prometheus triggers.
fn keda_triggers(doc: &serde_json::Value, kind: &str, file: &str, content: &str, src: &mut Source) {
    let name = doc
        .pointer("/metadata/name")
        .and_then(|n| n.as_str())
        .unwrap_or("?");
    for t in doc
        .pointer("/spec/triggers")
        .and_then(|t| t.as_array())
        .into_iter()
        .flatten()
    {
        if t.get("type").and_then(|x| x.as_str()) != Some("prometheus") {
            continue;
        }
        if let Some(q) = t.pointer("/metadata/query").and_then(|q| q.as_str()) {
            let context = format!("{kind} {name}, prometheus trigger");
            push(src, file, content, q, q, context);
        }
    }
}

/// The `metricsQuery` of every prometheus-adapter rule (custom, external, or a bare list).
fn adapter_rules(doc: &serde_json::Value, file: &str, content: &str, src: &mut Source) {
    let rules = doc.get("rules");
    let lists = [
        rules.and_then(|r| r.get("custom")),
        rules.and_then(|r| r.get("external")),
        rules.filter(|r| r.is_array()),
        doc.get("externalRules"),
    ];
    for rule in lists
        .into_iter()
        .flatten()
        .filter_map(|l| l.as_array())
        .flatten()
    {
        let Some(q) = rule.get("metricsQuery").and_then(|q| q.as_str()) else {
            continue;
        };
        let what = rule
            .pointer("/name/as")
            .and_then(|a| a.as_str())
            .unwrap_or("rule");
        let context = format!("prometheus-adapter rule {what}");
        push(src, file, content, q, &adapter_query(rule, q), context);
    }
}

/// A `metricsQuery` with the adapter's template variables filled: `<<.Series>>` is the metric
/// its `seriesQuery` names (a placeholder if it names none exactly), the matchers go, and the
/// grouping is a placeholder label.
fn adapter_query(rule: &serde_json::Value, q: &str) -> String {
    let series = rule
        .get("seriesQuery")
        .and_then(|q| q.as_str())
        .unwrap_or("");
    let name = series_name(series);
    q.replace(
        "<<.Series>>",
        name.as_deref().unwrap_or("__llmscope_var_series"),
    )
    .replace("<<.LabelMatchers>>", "")
    .replace("<<.GroupBy>>", "__llmscope_var_groupby")
}

/// The metric a prometheus-adapter `seriesQuery` names exactly (`{__name__=~"^x$"}`, `x{…}`).
fn series_name(series: &str) -> Option<String> {
    let t = series.trim();
    if let Some(at) = t.find("__name__=~\"^") {
        let rest = &t[at + 12..];
        let end = rest.find("$\"")?;
        let name = &rest[..end];
        return (!name.contains(['|', '.', '*', '(', '['])).then(|| name.to_owned());
    }
    let name: String = t
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':'))
        .collect();
    (!name.is_empty()).then_some(name)
}

fn push(src: &mut Source, file: &str, content: &str, text: &str, parsed: &str, context: String) {
    let line = content
        .find(text.lines().next().unwrap_or(text))
        .map(|at| crate::promql::parse::line_col(content, at).0);
    let mut q = Query::new(
        text.trim_end(),
        Location {
            file: file.to_owned(),
            context: Some(context),
            line,
            ..Location::default()
        },
    );
    q.parsed = parsed.trim_end().to_owned();
    q.scaler = true;
    src.queries.push(q);
}

pub(super) fn read_rules(file: &str, content: &str, templated: bool) -> Source {
    let docs: Vec<Doc> = match documents(content, templated) {
        Ok(d) => d,
        Err(e) => {
            let loc = e.location();
            let first = e.to_string().lines().next().unwrap_or_default().to_owned();
            return Source {
                errors: vec![file_error(
                    file,
                    loc.map(|l| l.line() as u32),
                    loc.map(|l| l.column() as u32),
                    format!("not a valid rule file: {first}"),
                )],
                ..Source::default()
            };
        }
    };
    let mut src = Source::default();
    for doc in docs {
        let is_manifest = doc.kind.as_deref() == Some("PrometheusRule");
        let groups = match (is_manifest, doc.spec) {
            (true, Some(spec)) => spec.groups,
            _ => doc.groups,
        };
        for g in groups {
            for r in g.rules {
                add_rule(&mut src, file, content, &g.name, r);
            }
        }
    }
    src
}

fn add_rule(src: &mut Source, file: &str, content: &str, group: &str, r: RuleDef) {
    let what = match (&r.alert, &r.record) {
        (Some(a), _) => format!("alert {a}"),
        (None, Some(rec)) => format!("record {rec}"),
        (None, None) => "rule".to_owned(),
    };
    if let Some(rec) = &r.record {
        src.recorded.push(rec.clone());
    }
    let (line, column) = expr_start(content, &r.expr);
    src.queries.push(Query::new(
        r.expr.value.trim_end(),
        Location {
            file: file.to_owned(),
            context: Some(format!("group {group}, {what}")),
            line: Some(line),
            column: Some(column),
            ..Location::default()
        },
    ));
}

/// Where the expression's text starts: on the next line for `|`/`>` block scalars.
fn expr_start(content: &str, expr: &Spanned<String>) -> (u32, u32) {
    let line = expr.referenced.line() as u32;
    let column = expr.referenced.column() as u32;
    let at = scalar_text(content, expr);
    if at.starts_with('|') || at.starts_with('>') {
        let next = content.lines().nth(line as usize).unwrap_or("");
        let indent = next.len() - next.trim_start().len();
        return (line + 1, indent as u32 + 1);
    }
    let quoted = at.starts_with('"') || at.starts_with('\'');
    (line, column + u32::from(quoted))
}

/// The file's text from where the scalar's span starts to the end of that line.
fn scalar_text(content: &str, value: &Spanned<String>) -> String {
    let line = value.referenced.line() as usize;
    let column = value.referenced.column() as usize;
    let text = content.lines().nth(line.saturating_sub(1)).unwrap_or("");
    text.chars().skip(column.saturating_sub(1)).collect()
}

/// Line and column of a literal block scalar's (`key: |`) first content character, if the value
/// is one: its lines are then the file's lines from there on, each indented as much as the first.
/// The span points at the `|` indicator or, as serde-saphyr 2.2 does, at the content itself.
pub(super) fn block_start(content: &str, value: &Spanned<String>) -> Option<(u32, u32)> {
    let line = value.referenced.line() as u32;
    let literal = |text: &str| {
        let indicator = text.trim_end().rsplit([':', ' ']).next().unwrap_or("");
        indicator.starts_with('|')
            && indicator[1..]
                .chars()
                .all(|c| c.is_ascii_digit() || c == '-' || c == '+')
    };
    if scalar_text(content, value).starts_with('|') {
        let next = content.lines().nth(line as usize).unwrap_or("");
        let indent = next.len() - next.trim_start().len();
        return Some((line + 1, indent as u32 + 1));
    }
    let before = content.lines().nth(line.checked_sub(2)? as usize)?;
    literal(before).then(|| (line, value.referenced.column() as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = "groups:
  - name: vllm
    rules:
      - alert: KvHigh
        expr: max by (pod) (vllm:kv_cache_usage_perc) > 0.85
        for: 5m
      - record: job:tokens:rate5m
        expr: |
          sum by (job) (rate(vllm:generation_tokens_total[5m]))
";

    #[test]
    fn a_template_action_ends_past_the_strings_inside_it() {
        // GaeaRuiW/kube-llmops' chart leaves Prometheus's `{{ $value }}` in an annotation so.
        let (text, actions) =
            helm("description: \"{{`{{ $value }}`}}s (threshold: 10s)\"\nx: {{ \"}}\" }} y");
        assert_eq!(
            text,
            "description: \"__helm_action_0__s (threshold: 10s)\"\nx: __helm_action_1__ y"
        );
        assert_eq!(actions, ["{{`{{ $value }}`}}", "{{ \"}}\" }}"]);
        assert_eq!(action_end("{{ unterminated `}}"), None);
    }

    #[test]
    fn rules_with_lines_and_recorded_names() {
        let s = read("r.yaml", RULES);
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        assert_eq!(s.queries.len(), 2);
        assert_eq!(
            (s.queries[0].location.line, s.queries[0].location.column),
            (Some(5), Some(15))
        );
        assert_eq!(
            (s.queries[1].location.line, s.queries[1].location.column),
            (Some(9), Some(11))
        );
        assert_eq!(s.recorded, vec!["job:tokens:rate5m".to_owned()]);
        assert_eq!(
            s.queries[0].location.context.as_deref(),
            Some("group vllm, alert KvHigh")
        );
    }

    #[test]
    fn prometheus_rule_manifests_and_several_documents() {
        let manifest = format!(
            "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: x\nspec:\n{}---\n{RULES}",
            RULES
                .lines()
                .map(|l| format!("  {l}\n"))
                .collect::<String>()
        );
        let s = read("m.yaml", &manifest);
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        assert_eq!(s.queries.len(), 4);
        assert_eq!(s.queries[0].location.line, Some(10));
    }

    #[test]
    fn broken_yaml_is_a_located_error() {
        let s = read("r.yaml", "groups:\n  - name: x\n    rules: [\n");
        assert_eq!(s.errors.len(), 1);
        assert!(s.errors[0].location.line.is_some(), "{:?}", s.errors[0]);
    }
}
