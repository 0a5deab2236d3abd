//! `steps-as-tokens`: `rate(vllm:iteration_tokens_total_count)` shown as tokens per second. The
//! histogram observes once per engine step, so its `_count` counts steps (also spelled
//! `vllm_iteration_tokens_total_count`, as a pipeline that turns `:` into `_` writes it).

use crate::finding::{Finding, Rule, Severity};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct StepsAsTokens;

impl RuleInfo for StepsAsTokens {
    const ID: &'static str = "steps-as-tokens";
    const SUMMARY: &'static str =
        "rate(vllm:iteration_tokens_total_count) shown as tokens/s: it counts engine steps";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/vllm-performance-statistics-51dacb5.json");
}

const SPELLINGS: [&str; 2] = [
    "vllm:iteration_tokens_total_count",
    "vllm_iteration_tokens_total_count",
];

impl Lint for StepsAsTokens {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        let Fact::Root(root) = fact else {
            return;
        };
        let Some(name) = root
            .sels
            .iter()
            .map(|s| s.name.as_str())
            .find(|n| SPELLINGS.contains(n))
        else {
            return;
        };
        if !root.raw.is_empty() || !shown_as_tokens(scope) {
            return;
        }
        let f = Finding::new(
            Rule::StepsAsTokens,
            Severity::Warning,
            format!("`{name}` counts engine steps (one observation per step), but it is shown as tokens per second"),
        )
        .metric(name)
        .suggest("tokens per second is rate(vllm:iteration_tokens_total_sum[5m]) (or prompt + generation token rates); keep _count for steps per second");
        out.push(f, Some(name));
    }
}

/// Whether the panel's title, legend or unit says tokens.
fn shown_as_tokens(scope: &Scope<'_>) -> bool {
    let said = format!(
        "{} {}",
        scope.cx.title.unwrap_or_default(),
        scope.cx.panel_unit.unwrap_or_default()
    )
    .to_ascii_lowercase();
    said.contains("tok") || said.contains("tps") || said.contains("throughput")
}

#[cfg(test)]
mod tests {
    use crate::finding::Rule;
    use crate::rules::testing::*;

    #[test]
    fn steps_as_tokens_in_either_spelling() {
        for name in [
            "vllm:iteration_tokens_total_count",
            "vllm_iteration_tokens_total_count",
        ] {
            let f = run_titled(&format!("rate({name}[5m])"), "Overall Iteration TPS", None);
            assert!(
                f.iter()
                    .any(|f| f.rule == Rule::StepsAsTokens && f.metric.as_deref() == Some(name)),
                "{name}: {f:#?}"
            );
            let f = run_titled(
                &format!("rate({name}[5m])"),
                "Engine steps per second",
                None,
            );
            assert!(!f.iter().any(|f| f.rule == Rule::StepsAsTokens), "{f:#?}");
        }
    }
}
