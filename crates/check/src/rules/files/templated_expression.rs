//! `templated-expression`: an expression of a Helm/Go template with template text where PromQL
//! expects an expression (`… > {{ .Values.alerts.threshold }}`). What it renders to is not known
//! until the chart is rendered, so the expression is set aside by the reader and said here, one
//! info each, instead of reading the action as a metric name (an error on every threshold).

use crate::finding::{Finding, Rule, Severity};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct TemplatedExpression;

impl RuleInfo for TemplatedExpression {
    const ID: &'static str = "templated-expression";
    const SUMMARY: &'static str =
        "an expression with Helm/Go-template text outside a label value, not checked";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("fixtures/sapcc-memcached-alerts.yaml");
}

impl Lint for TemplatedExpression {
    fn check(&self, fact: &Fact<'_>, _: &Scope<'_>, out: &mut Hits) {
        let Fact::Source(src) = fact else {
            return;
        };
        for (query, action) in &src.templated {
            let mut f = Finding::new(
                Rule::TemplatedExpression,
                Severity::Info,
                format!(
                    "`{action}` stands where PromQL expects part of the expression: what it renders to is not known here, so this expression is not checked"
                ),
            )
            .suggest("check the rendered chart (`helm template … > rendered.yaml`, then check rendered.yaml)");
            f.location = query.location.clone();
            f.location.expr = Some(query.text.clone());
            out.push(f, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::{Rule, Severity};
    use crate::input;
    use crate::rules::testing::catalog;

    fn check(text: &str) -> Vec<crate::finding::Finding> {
        let src = input::read("alerts.yaml", text);
        input::check_source(&src, &catalog("vllm@0.32"))
    }

    #[test]
    fn an_action_where_an_expression_goes_is_said_not_read_as_a_name() {
        let found = check(
            "groups:\n- name: g\n  rules:\n  - alert: Queue\n    expr: sum(vllm:num_requests_waiting{namespace=\"{{ .Release.Namespace }}\"}) > {{ .Values.threshold }}\n",
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = &found[0];
        assert_eq!(
            (f.rule, f.severity),
            (Rule::TemplatedExpression, Severity::Info)
        );
        assert!(
            f.message.contains("`{{ .Values.threshold }}`"),
            "{}",
            f.message
        );
        assert_eq!(f.location.line, Some(5));
    }

    #[test]
    fn an_action_inside_a_label_value_is_checked_as_a_value() {
        // The label value stands for some namespace; the misspelt name is still found.
        let found = check(
            "groups:\n- name: g\n  rules:\n  - alert: Queue\n    expr: sum(vllm:num_request_waiting{namespace=\"{{ .Release.Namespace }}\", pod=~'{{ .Values.pod }}.*'}) > 5\n",
        );
        let rules: Vec<Rule> = found.iter().map(|f| f.rule).collect();
        assert_eq!(rules, [Rule::UnknownMetric], "{found:#?}");
    }

    #[test]
    fn a_file_of_templated_expressions_is_not_called_empty() {
        let found = check(
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up > {{ .Values.a }}\n  - alert: B\n    expr: '{{ .Values.expr }}'\n",
        );
        let rules: Vec<Rule> = found.iter().map(|f| f.rule).collect();
        assert_eq!(
            rules,
            [Rule::TemplatedExpression, Rule::TemplatedExpression]
        );
    }
}
