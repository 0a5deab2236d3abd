//! `unit-mismatch`: a 0..1 fraction compared with a percent-sized constant
//! (`vllm:kv_cache_usage_perc > 85` never fires), a percent compared with a fraction, a
//! fraction compared with a percent, and a Grafana panel unit that disagrees with the query
//! (`percent` over a 0..1 fraction, `ms` over seconds, `bytes` over MiB).

use crate::finding::{Finding, Rule, Severity};
use crate::promql::value::Value;
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};
use llmscope_catalog::Unit;

pub struct UnitMismatch;

impl RuleInfo for UnitMismatch {
    const ID: &'static str = "unit-mismatch";
    const SUMMARY: &'static str = "a 0..1 fraction compared with a percent (or the reverse)";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/k3s-gpu-dashboard.json");
}

impl Lint for UnitMismatch {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        match fact {
            Fact::Binary(b) if b.comparison => {
                if let Some(f) = comparison_mismatch(b.lhs, b.rhs, b.op) {
                    let needle = b.lhs.first_name().or(b.rhs.first_name());
                    out.push(f, needle);
                }
            }
            Fact::Root(root) => {
                if let (Some(panel), Some(unit)) = (scope.cx.panel_unit, root.unit)
                    && let Some(f) = panel_mismatch(panel, unit, root.first_name())
                {
                    out.push(f, None);
                }
            }
            _ => {}
        }
    }
}

/// A comparison whose two sides are on different scales.
fn comparison_mismatch(l: &Value, r: &Value, op: &str) -> Option<Finding> {
    match (l.scalar, r.scalar) {
        (None, Some(c)) => constant_mismatch(l, c, op),
        (Some(c), None) => constant_mismatch(r, c, op),
        (None, None) => vector_mismatch(l, r, op),
        _ => None,
    }
}

/// A fraction or a percent compared with a constant of the other scale.
fn constant_mismatch(vector: &Value, constant: f64, op: &str) -> Option<Finding> {
    let name = vector
        .sels
        .first()
        .map_or("the left side", |s| s.name.as_str());
    match vector.unit? {
        Unit::Fraction if constant > 1.0 => Some(
            Finding::new(
                Rule::UnitMismatch,
                Severity::Error,
                format!("`{name}` is a 0..1 fraction, but is compared `{op} {constant}` as if it were a percent: the comparison is {}", if op.contains('>') { "never true" } else { "always true" }),
            )
            .metric(name)
            .suggest(format!("compare with {} (or multiply the fraction by 100)", constant / 100.0)),
        ),
        Unit::Percent if constant > 0.0 && constant < 1.0 => Some(
            Finding::new(
                Rule::UnitMismatch,
                Severity::Warning,
                format!("`{name}` is a percent (0..100), but is compared `{op} {constant}` as if it were a 0..1 fraction"),
            )
            .metric(name)
            .suggest(format!("compare with {} (percent)", constant * 100.0)),
        ),
        _ => None,
    }
}

fn vector_mismatch(l: &Value, r: &Value, op: &str) -> Option<Finding> {
    let pair = (l.unit?, r.unit?);
    let mixed = matches!(
        pair,
        (Unit::Fraction, Unit::Percent) | (Unit::Percent, Unit::Fraction)
    );
    if !mixed {
        return None;
    }
    let names = |v: &Value| v.sels.first().map_or("?".to_owned(), |s| s.name.clone());
    Some(
        Finding::new(
            Rule::UnitMismatch,
            Severity::Error,
            format!(
                "`{}` ({}) is compared `{op}` with `{}` ({}): one is a 0..1 fraction, the other a percent",
                names(l),
                pair.0.name(),
                names(r),
                pair.1.name()
            ),
        )
        .metric(names(l))
        .suggest("scale the fraction by 100 (or the percent by 1/100) before comparing"),
    )
}

/// A Grafana panel unit that disagrees with what the query returns.
fn panel_mismatch(panel: &str, unit: Unit, name: Option<&str>) -> Option<Finding> {
    let expected = panel_unit(panel)?;
    if unit == expected || dimension(unit).is_none() || dimension(unit) != dimension(expected) {
        return None;
    }
    let name = name.unwrap_or("the query");
    Some(
        Finding::new(
            Rule::UnitMismatch,
            Severity::Error,
            format!(
                "the panel unit is `{panel}` ({}), but `{name}` gives {}: every value is shown {}",
                expected.name(),
                unit.name(),
                factor(unit, expected)
            ),
        )
        .metric(name)
        .suggest(format!("set the panel unit to `{}`", grafana_unit(unit))),
    )
}

/// The Grafana panel unit that shows `unit` as it is.
fn grafana_unit(unit: Unit) -> &'static str {
    match unit {
        Unit::Fraction => "percentunit",
        Unit::Percent => "percent",
        Unit::Seconds => "s",
        Unit::MiB => "mbytes",
        Unit::Bytes => "bytes",
        _ => "ms",
    }
}

/// The unit a Grafana panel unit shows values in, for the units a panel can mislabel.
fn panel_unit(panel: &str) -> Option<Unit> {
    Some(match panel {
        "percent" => Unit::Percent,
        "percentunit" => Unit::Fraction,
        "s" | "dtdurations" => Unit::Seconds,
        "ms" | "dtdurationms" => Unit::Milliseconds,
        // Grafana's IEC byte units: `bytes` is B, `mbytes` MiB (dcgm-exporter's FB_* are MiB).
        "bytes" | "decbytes" => Unit::Bytes,
        "mbytes" => Unit::MiB,
        _ => return None,
    })
}

/// What a unit measures, for the units a panel can mislabel: 0 shares, 1 durations, 2 sizes.
fn dimension(u: Unit) -> Option<u8> {
    match u {
        Unit::Percent | Unit::Fraction => Some(0),
        Unit::Seconds | Unit::Milliseconds => Some(1),
        Unit::MiB | Unit::Bytes => Some(2),
        _ => None,
    }
}

fn factor(actual: Unit, shown: Unit) -> &'static str {
    match (actual, shown) {
        (Unit::Fraction, Unit::Percent) => "100× too small (0.03 reads as 0.03%)",
        (Unit::Percent, Unit::Fraction) => "100× too large (30 reads as 3000%)",
        (Unit::Seconds, Unit::Milliseconds) => "1000× too small (1.2 s reads as 1.2 ms)",
        (Unit::MiB, Unit::Bytes) => "1,048,576× too small (9194 MiB reads as 9.0 KiB)",
        (Unit::Bytes, Unit::MiB) => "1,048,576× too large (9.6 GB of bytes reads as 9.2 PiB)",
        _ => "1000× too large (120 ms reads as 120 s)",
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::{Rule, Severity};
    use crate::rules::testing::*;

    #[test]
    fn unit_mismatch() {
        let f = only("vllm:kv_cache_usage_perc > 85", false, Rule::UnitMismatch);
        assert_eq!(f.severity, Severity::Error);
        assert!(f.suggestion.unwrap().contains("0.85"));
        let f = only("avg(DCGM_FI_DEV_GPU_UTIL) < 0.5", false, Rule::UnitMismatch);
        assert_eq!(f.severity, Severity::Warning);
        only(
            "max(vllm:kv_cache_usage_perc) > DCGM_FI_DEV_GPU_UTIL",
            false,
            Rule::UnitMismatch,
        );
        clean("max(vllm:kv_cache_usage_perc) * 100 > 85", false);
        clean("max by (pod) (vllm:kv_cache_usage_perc) >= 0.85", false);
        // dcgm-exporter's framebuffer gauges are MiB: under Grafana's `bytes` they read 2^20 too small.
        let dcgm = catalog("dcgm-exporter@4.5");
        let f = run_with(&dcgm, "DCGM_FI_DEV_FB_USED", true, Some("bytes"));
        assert_eq!(rules(&f), vec![Rule::UnitMismatch], "{f:#?}");
        assert!(
            f[0].suggestion.as_deref() == Some("set the panel unit to `mbytes`"),
            "{f:#?}"
        );
        assert!(run_with(&dcgm, "DCGM_FI_DEV_FB_USED", true, Some("mbytes")).is_empty());
        assert!(
            run_with(
                &dcgm,
                "DCGM_FI_DEV_FB_USED * 1024 * 1024",
                true,
                Some("bytes")
            )
            .is_empty()
        );
        let inv = inventories();
        let f = run_with(
            &inv,
            "max(vllm:kv_cache_usage_perc)",
            false,
            Some("percent"),
        );
        assert_eq!(rules(&f), vec![Rule::UnitMismatch]);
        assert!(
            run_with(
                &inv,
                "max(vllm:kv_cache_usage_perc)",
                false,
                Some("percentunit")
            )
            .is_empty()
        );
        let q = "histogram_quantile(0.5, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))";
        assert_eq!(
            rules(&run_with(&inv, q, false, Some("ms"))),
            vec![Rule::UnitMismatch]
        );
        assert!(run_with(&inv, q, false, Some("s")).is_empty());
    }

    #[test]
    fn a_quantile_of_an_uncatalogued_seconds_histogram_is_in_seconds() {
        let q = "histogram_quantile(0.9, sum by (le) (rate(vllm_e2e_request_latency_seconds_bucket[5m])))";
        let f = run_with(&inventories(), q, true, Some("ms"));
        assert!(f.iter().any(|f| f.rule == Rule::UnitMismatch), "{f:#?}");
        let f = run_with(&inventories(), q, true, Some("s"));
        assert!(!f.iter().any(|f| f.rule == Rule::UnitMismatch), "{f:#?}");
    }
}
