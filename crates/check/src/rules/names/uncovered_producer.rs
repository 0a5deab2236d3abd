//! `uncovered-producer`: a name of a producer (router, gateway, cache, exporter) that no
//! inventory covers, so it is not checked. Said once per producer and file: the file's check
//! ([`crate::input::check_source`]) folds the rest of the producer's names into the first.

use crate::finding::{Finding, Rule, Severity};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};

pub struct UncoveredProducer;

impl RuleInfo for UncoveredProducer {
    const ID: &'static str = "uncovered-producer";
    const SUMMARY: &'static str = "names of a producer (router, gateway, cache, exporter) that no inventory covers: not checked, said once";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/prodstack-lmcache-dashboard.json");
}

impl Lint for UncoveredProducer {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        let Fact::Selector(s) = fact else {
            return;
        };
        let Some(p) = s.uncovered else {
            // A catalogued exporter no inventory covers, or a producer nothing knows: the
            // verdict on the absent name says.
            s.say_absent(scope, Rule::UncoveredProducer, out);
            return;
        };
        let name = s.name;
        let f = Finding::new(
            Rule::UncoveredProducer,
            Severity::Warning,
            format!(
                "no inventory covers {} ({}), so `{name}` is not checked",
                p.name,
                scope.inv.sources()
            ),
        )
        .metric(name)
        .suggest(p.hint);
        out.push(f, Some(name));
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::{Finding, Rule, Severity};
    use crate::inventory::Inventories;
    use crate::inventory::prom::{PromInventory, PromMetric};
    use crate::promql::{Context, check_expr};
    use crate::rules::testing::*;

    #[test]
    fn a_producer_nothing_knows_is_uncovered_not_unknown() {
        // Neutree's own exporter (neutree-ai/neutree's dashboards query it beside vLLM's names).
        let f = only(
            "count(neutree_node_ready{cluster=\"a\"})",
            false,
            Rule::UncoveredProducer,
        );
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("`neutree_…` names"), "{}", f.message);
        // A namespace an inventory has or a misspelling stays an error; a recording rule is
        // unknown-metric too (an info where no Prometheus is asked: defined elsewhere).
        only("vllm_num_requests_running", false, Rule::UnknownMetric);
        only("DCGM_FI_DEV_FB_SIZE", false, Rule::UnknownMetric);
        only("job:neutree_ready:sum", false, Rule::UnknownMetric);
        // Where an inventory is a Prometheus, an absent name is absent, whoever exports it.
        let mut inv = Inventories::new();
        inv.push(Box::new(PromInventory::new(
            "http://p",
            "1h",
            [(
                "vllm:num_requests_running".to_owned(),
                PromMetric::default(),
            )]
            .into(),
            Some(15.0),
        )));
        let f = run_with(&inv, "neutree_node_ready", false, None);
        assert_eq!(rules(&f), vec![Rule::UnknownMetric], "{f:#?}");
    }

    #[test]
    fn an_exporter_no_inventory_covers_is_uncovered_not_unknown() {
        // userravs/digitalocean-nim-gpu-monitoring's H100 dashboard, checked against dcgm-exporter
        // only: its kube-state-metrics and HTTP panels cannot be judged, and say so once.
        let dcgm = catalog("dcgm-exporter@4.5");
        for expr in [
            "sum(kube_pod_status_ready{condition=\"true\"})",
            "sum(rate(http_requests_total[5m]))",
        ] {
            let f = run_with(&dcgm, expr, false, None);
            assert_eq!(rules(&f), vec![Rule::UncoveredProducer], "{expr}: {f:#?}");
            assert_eq!(f[0].severity, Severity::Warning);
            assert!(
                f[0].message.starts_with("no inventory covers "),
                "{}",
                f[0].message
            );
        }
        // What the catalog knows without a version is still said: a renamed name, a misspelling.
        let f = run_with(&dcgm, "vllm:gpu_cache_usage_perc", false, None);
        assert_eq!(rules(&f), vec![Rule::RenamedMetric], "{f:#?}");
        let f = run_with(&dcgm, "vllm:num_request_running", false, None);
        assert_eq!(rules(&f), vec![Rule::UnknownMetric], "{f:#?}");
        // With the exporter's inventory loaded, its absent names are errors again.
        let f = run_with(
            &catalog("kube-state-metrics@2.20"),
            "kube_pod_ready_typo_x",
            false,
            None,
        );
        assert_eq!(rules(&f), vec![Rule::UnknownMetric], "{f:#?}");
    }

    #[test]
    fn nims_unprefixed_names_mean_vllms() {
        // awslabs/data-on-eks' NIM dashboard: a stat of NIM's gpu_cache_usage_perc under
        // percentunit with Grafana's default step at 80.
        let cx = Context {
            graph: false,
            panel_unit: Some("percentunit"),
            title: None,
            thresholds: &[80.0],
            scaler: false,
        };
        let f: Vec<Finding> = check_expr("gpu_cache_usage_perc{}", &catalog("vllm@0.32"), cx)
            .into_iter()
            .map(|h| h.finding)
            .collect();
        assert_eq!(
            rules(&f),
            vec![Rule::UncoveredProducer, Rule::UnreachableThreshold],
            "{f:#?}"
        );
    }
}
