//! `parse-error`: PromQL that does not parse (and is in no other dialect), with the line and
//! column of the problem where [`crate::promql::parse`] could locate it.

use crate::finding::{Finding, Rule, Severity};
use crate::promql::parse::line_col;
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct ParseError;

impl RuleInfo for ParseError {
    const ID: &'static str = "parse-error";
    const SUMMARY: &'static str = "PromQL or a file that does not parse";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::Without(
        "every expression in the corpus and the fixtures parses; the hostile inputs do not",
    );
}

impl Lint for ParseError {
    fn check(&self, fact: &Fact<'_>, _: &Scope<'_>, out: &mut Hits) {
        let Fact::Unparsed(u) = fact else {
            return;
        };
        if u.foreign.is_some() {
            return;
        }
        if !u.refused && crate::promql::prom3::duration_expression(u.text) {
            let f = Finding::new(
                Rule::ParseError,
                Severity::Info,
                "a duration expression (`[5m * 2]`, `offset (1h - 5m)`): Prometheus reads it (from 3.4 behind --enable-feature=promql-duration-expr, by default from 3.14), llmscope's PromQL parser does not yet, so this expression is not checked",
            )
            .suggest("check it with promtool (`promtool check rules`), or write the duration out (`[10m]`)");
            out.push(f, None);
            return;
        }
        let at = u.error.offset.map(|o| {
            let (line, col) = line_col(u.text, o);
            format!(" at line {line}, column {col}")
        });
        let f = Finding::new(
            Rule::ParseError,
            Severity::Error,
            format!(
                "PromQL does not parse{}: {}",
                at.unwrap_or_default(),
                u.error.message
            ),
        );
        // The needle is the offset itself (`\0` and the number): the text may repeat there.
        let needle = u.error.offset.map(|o| format!("\u{0}{o}"));
        out.push(f, needle.as_deref());
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Rule;
    use crate::rules::testing::*;

    #[test]
    fn parse_error() {
        let f = only(
            "sum(rate(vllm:generation_tokens_total[5m])",
            false,
            Rule::ParseError,
        );
        assert!(f.message.contains("column 4"), "{}", f.message);
        only("vllm:num_requests_running +", false, Rule::ParseError);
        // Prometheus 3's duration expressions parse there; here those holding what only the
        // query knows are said as not checked (the others are written out and checked).
        let f = only(
            "rate(vllm:generation_tokens_total[step() * 2])",
            false,
            Rule::ParseError,
        );
        assert_eq!(f.severity, crate::finding::Severity::Info);
        clean("sum(rate(vllm:generation_tokens_total[5m]))", false);
    }
}
