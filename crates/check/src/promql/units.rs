//! Units through an expression, and the `unit-mismatch` rule: a 0..1 fraction compared with a
//! percent-sized constant (`vllm:kv_cache_usage_perc > 85` never fires), a percent compared with
//! a fraction, and Grafana panel units that disagree with the query (`percent` over a 0..1
//! fraction, `ms` over seconds).

use super::analyze::Value;
use super::names::family_of;
use crate::finding::{Finding, Rule, Severity};
use llmscope_core::catalog::{Suffix, Unit, resolve};

/// The unit of a sample name, from the catalog (`_count` is a count, `_created` a timestamp).
pub fn of_name(name: &str) -> Option<Unit> {
    match resolve(name) {
        Some((_, Suffix::Count | Suffix::Bucket)) => Some(Unit::Count),
        Some((_, Suffix::Created)) => Some(Unit::Timestamp),
        Some((f, _)) => Some(f.unit),
        None => family_of(name).map(|f| f.unit),
    }
}

/// Units that survive `sum` (adding watts gives watts; adding fractions gives no fraction).
fn additive(u: Unit) -> bool {
    !matches!(
        u,
        Unit::Fraction | Unit::Percent | Unit::Celsius | Unit::Timestamp | Unit::Info
    )
}

pub fn through_aggregation(op: &str, u: Option<Unit>) -> Option<Unit> {
    match op {
        "max" | "min" | "avg" | "quantile" | "topk" | "bottomk" | "limitk" | "limit_ratio" => u,
        "sum" => u.filter(|u| additive(*u)),
        "count" | "count_values" => Some(Unit::Count),
        _ => None,
    }
}

pub fn through_function(func: &str, u: Option<Unit>) -> Option<Unit> {
    match func {
        "avg_over_time" | "min_over_time" | "max_over_time" | "last_over_time"
        | "quantile_over_time" | "abs" | "ceil" | "floor" | "round" | "clamp" | "clamp_min"
        | "clamp_max" | "sort" | "sort_desc" | "sort_by_label" | "sort_by_label_desc"
        | "scalar" | "label_replace" | "label_join" | "max_of" | "min_of" => u,
        "sum_over_time" => u.filter(|u| additive(*u)),
        _ => None,
    }
}

/// `x * 100`, `x / 100`, `a / b` of one unit.
pub(super) fn through_arithmetic(op: &str, l: &Value, r: &Value) -> Option<Unit> {
    let scale = |u: Option<Unit>, c: f64, op: &str| -> Option<Unit> {
        match (u?, op, c) {
            (Unit::Fraction, "*", 100.0) => Some(Unit::Percent),
            (Unit::Percent, "/", 100.0) => Some(Unit::Fraction),
            (Unit::Seconds, "*", 1000.0) => Some(Unit::Milliseconds),
            (Unit::Milliseconds, "/", 1000.0) => Some(Unit::Seconds),
            (u, "+" | "-", _) => Some(u),
            _ => None,
        }
    };
    match (l.scalar, r.scalar) {
        (None, Some(c)) => scale(l.unit, c, op),
        (Some(c), None) if op == "*" => scale(r.unit, c, op),
        (None, None) => match (l.unit, r.unit, op) {
            (Some(a), Some(b), "+" | "-") if a == b => Some(a),
            (Some(a), Some(b), "/") if a == b && a != Unit::Fraction => Some(Unit::Fraction),
            _ => None,
        },
        _ => None,
    }
}

/// A comparison whose two sides are on different scales.
pub(super) fn comparison_mismatch(l: &Value, r: &Value, op: &str) -> Option<Finding> {
    let (vector, constant) = match (l.scalar, r.scalar) {
        (None, Some(c)) => (l, c),
        (Some(c), None) => (r, c),
        (None, None) => return vector_mismatch(l, r, op),
        _ => return None,
    };
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
pub fn panel_mismatch(panel: &str, unit: Unit, name: Option<&str>) -> Option<Finding> {
    let expected = match panel {
        "percent" => Unit::Percent,
        "percentunit" => Unit::Fraction,
        "s" | "dtdurations" => Unit::Seconds,
        "ms" | "dtdurationms" => Unit::Milliseconds,
        // Grafana's IEC byte units: `bytes` is B, `mbytes` MiB (dcgm-exporter's FB_* are MiB).
        "bytes" | "decbytes" => Unit::Bytes,
        "mbytes" => Unit::MiB,
        _ => return None,
    };
    if unit == expected || dimension(unit).is_none() || dimension(unit) != dimension(expected) {
        return None;
    }
    let name = name.unwrap_or("the query");
    let right = match unit {
        Unit::Fraction => "percentunit",
        Unit::Percent => "percent",
        Unit::Seconds => "s",
        Unit::MiB => "mbytes",
        Unit::Bytes => "bytes",
        _ => "ms",
    };
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
        .suggest(format!("set the panel unit to `{right}`")),
    )
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
