//! `per-process-sum`: `sum` or `avg` across the per-process copies of one gauge (`pid` in
//! prometheus_client's multiprocess mode). The copies are not parts of a whole: one process
//! holds the engine's value, the others 0 or a stale value; `max without (pid)` is meant.

use crate::finding::{Finding, Rule, Severity};
use crate::promql::value::Copies;
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct PerProcessSum;

impl RuleInfo for PerProcessSum {
    const ID: &'static str = "per-process-sum";
    const SUMMARY: &'static str = "sum or avg across the per-process copies of one gauge (`pid` in prometheus_client multiprocess mode): max without (pid) is meant";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/neutree-endpoint-cache.json");
}

impl Lint for PerProcessSum {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        let Fact::Aggregate(a) = fact else {
            return;
        };
        if !matches!(a.op, "sum" | "avg") {
            return;
        }
        for c in a.merged {
            summed_copies(a.op, c, scope, out);
        }
    }
}

fn summed_copies(op: &str, c: &Copies, scope: &Scope<'_>, out: &mut Hits) {
    let (name, label) = (&c.name, &c.label);
    let why = match c.when {
        Some(when) => format!(
            "{} exports `{name}` once per process, told apart by `{label}`, with {when}",
            scope.inv.sources()
        ),
        None => format!(
            "the series of `{name}` carry `{label}` on {}: one per process",
            scope.inv.sources()
        ),
    };
    let effect = match op {
        "avg" => "avg() divides the value by the number of processes",
        _ => "sum() adds copies of one value (and keeps a dead process's last one)",
    };
    let f = Finding::new(
        Rule::PerProcessSum,
        Severity::Warning,
        format!("{why}. The copies are not parts of a whole: one process holds the engine's value, the others 0 or a stale value from before a restart, so {effect}"),
    )
    .metric(name)
    .suggest(format!(
        "merge the copies first: max without ({label}) ({name}); then aggregate that, e.g. max by (pod) (max without ({label}) ({name})), or sum(max without ({label}) ({name})) for an autoscaler"
    ));
    out.push(f, Some(op));
}

#[cfg(test)]
mod tests {
    use crate::finding::{Finding, Rule, Severity};
    use crate::inventory::Inventories;
    use crate::inventory::snapshot::Snapshot;
    use crate::promql::{Context, check_expr};
    use crate::rules::testing::*;

    #[test]
    fn sums_over_per_process_copies() {
        // vLLM 0.9.2–0.11 exported vllm:kv_cache_usage_perc once per API-server process (`pid`)
        // with --api-server-count > 1.
        let old = catalog("vllm@0.10");
        let per = |f: &[Finding]| -> Vec<Finding> {
            f.iter()
                .filter(|f| f.rule == Rule::PerProcessSum)
                .cloned()
                .collect()
        };
        let f = per(&run_with(&old, "sum(vllm:kv_cache_usage_perc)", true, None));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message.contains("--api-server-count > 1"),
            "{}",
            f[0].message
        );
        assert!(
            f[0].suggestion
                .as_deref()
                .unwrap()
                .contains("max without (pid)"),
            "{f:#?}"
        );
        for fires in [
            "avg(vllm:kv_cache_usage_perc)",
            "sum by (pod) (vllm:kv_cache_usage_perc)",
            "sum without (pid) (vllm:kv_cache_usage_perc)",
            "sum(vllm:kv_cache_usage_perc) / count(vllm:kv_cache_usage_perc)",
        ] {
            assert_eq!(per(&run_with(&old, fires, true, None)).len(), 1, "{fires}");
        }
        for quiet in [
            "max(vllm:kv_cache_usage_perc)",
            "max without (pid) (vllm:kv_cache_usage_perc)",
            "sum(max without (pid) (vllm:kv_cache_usage_perc))",
            "sum by (pid) (vllm:kv_cache_usage_perc)",
            "vllm:kv_cache_usage_perc > 0.9",
            // Running/waiting were merged (`mostrecent`) from the start of multiprocess metrics.
            "sum(vllm:num_requests_running)",
        ] {
            assert!(
                per(&run_with(&old, quiet, true, None)).is_empty(),
                "{quiet}"
            );
        }
        // Merged again from 0.12.0 on.
        assert!(
            per(&run_with(
                &catalog("vllm@0.32"),
                "sum(vllm:kv_cache_usage_perc)",
                true,
                None
            ))
            .is_empty()
        );
        // An autoscaler wants the sum across pods, not across a pod's copies.
        let cx = Context {
            scaler: true,
            ..Context::default()
        };
        let f: Vec<Finding> = check_expr("sum(vllm:kv_cache_usage_perc)", &old, cx)
            .into_iter()
            .map(|h| h.finding)
            .collect();
        assert_eq!(rules(&f), vec![Rule::PerProcessSum], "{f:#?}");
        // A page decides by what it shows: `pid` seen is copies whatever the version, none is none.
        let page = "# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\",pid=\"273\"} 0.65
vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\",pid=\"274\"} 0.0
";
        let mut seen = Inventories::new();
        seen.push(Box::new(Snapshot::parse("page", page.as_bytes()).0));
        let f = per(&run_with(
            &seen,
            "sum(vllm:kv_cache_usage_perc)",
            true,
            None,
        ));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(f[0].message.contains("carry `pid`"), "{}", f[0].message);
        assert!(
            per(&run_with(
                &inventories(),
                "sum(vllm:kv_cache_usage_perc)",
                true,
                None
            ))
            .is_empty()
        );
    }
}
