//! `counter-without-rate`: a raw counter (it only grows, and resets on restart) drawn as a
//! graph, compared, or fed to `histogram_quantile`, without rate() or increase().

use crate::finding::{Finding, Rule, Severity};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::fact::Use;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct CounterWithoutRate;

impl RuleInfo for CounterWithoutRate {
    const ID: &'static str = "counter-without-rate";
    const SUMMARY: &'static str = "a raw counter in a graph or comparison";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/dynamo-composite.json");
}

impl Lint for CounterWithoutRate {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        let Fact::Raw(r) = fact else {
            return;
        };
        let how = match r.used {
            // A stat or gauge showing a lifetime total is usually meant; a graph of one is not.
            Use::Root if !scope.cx.graph => return,
            Use::Root => "is drawn as a graph".to_owned(),
            Use::Compared(op) => format!("is compared (`{op}`)"),
            Use::Quantile => {
                "feeds histogram_quantile (so the quantile covers all time since the process started)"
                    .to_owned()
            }
        };
        for name in r.names {
            let f = Finding::new(
                Rule::CounterWithoutRate,
                Severity::Warning,
                format!("`{name}` is a counter (it only grows, and resets on restart) and {how} without rate() or increase()"),
            )
            .metric(name)
            .suggest(format!("rate({name}[5m]) for a per-second rate, increase({name}[1h]) for a count per window"));
            out.push(f, Some(name));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Rule;
    use crate::rules::testing::*;

    #[test]
    fn counter_without_rate() {
        only(
            "vllm:generation_tokens_total",
            true,
            Rule::CounterWithoutRate,
        );
        only(
            "sum(vllm:generation_tokens_total) > 1000",
            false,
            Rule::CounterWithoutRate,
        );
        clean("vllm:generation_tokens_total", false);
        clean("sum(rate(vllm:generation_tokens_total[5m]))", true);
        clean("count(vllm:generation_tokens_total) > 0", false);
    }
}
