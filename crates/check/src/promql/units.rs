//! Units through an expression: of a sample name, through aggregations, functions and
//! arithmetic (`x * 100` turns a 0..1 fraction into a percent). The rules that read them are
//! [`crate::rules::unit_mismatch`], [`crate::rules::fraction_as_percent`] and
//! [`crate::rules::unreachable_threshold`] (in `rules/units/`).

use super::names::family_of;
use super::value::Value;
use llmscope_catalog::{Suffix, Unit, resolve};

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
