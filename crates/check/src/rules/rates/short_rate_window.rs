//! `short-rate-window`: a rate window shorter than 4× the scrape interval (2× for irate and
//! idelta), which sees too few samples and returns nothing or jumps; and Grafana's
//! `$__interval` as a window, which drops to the scrape interval when zoomed in.

use crate::finding::{Finding, Rule, Severity};
use crate::promql::analyze::{INTERVAL_S, RANGE_S, RATE_INTERVAL_S};
#[cfg(test)]
use crate::rules::Fixture;
use crate::rules::{Fact, Hits, Lint, RuleInfo, Scope};
use std::time::Duration;

pub struct ShortRateWindow;

impl RuleInfo for ShortRateWindow {
    const ID: &'static str = "short-rate-window";
    const SUMMARY: &'static str = "a rate window shorter than 4x the scrape interval";
    #[cfg(test)]
    const FIXTURE: Fixture = Fixture::file("corpus/vllm-performance-statistics-51dacb5.json");
}

impl Lint for ShortRateWindow {
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
        let Fact::Call(c) = fact else {
            return;
        };
        let Some(range) = c.range else {
            return;
        };
        let secs = range.as_secs();
        if secs == RATE_INTERVAL_S || secs == RANGE_S {
            return;
        }
        let factor = match c.func {
            "rate" | "increase" | "delta" | "deriv" => 4.0,
            "irate" | "idelta" => 2.0,
            _ => return,
        };
        let Some(message) = too_short(c.func, range, factor, scope) else {
            return;
        };
        let f = Finding::new(Rule::ShortRateWindow, Severity::Warning, message)
            .suggest(suggestion(factor, scope));
        out.push(f, Some(c.func));
    }
}

/// What is wrong with `func` over `range`, needing `factor` scrape intervals, if anything.
fn too_short(func: &str, range: Duration, factor: f64, scope: &Scope<'_>) -> Option<String> {
    if range.as_secs() == INTERVAL_S {
        return Some(format!(
            "{func}() over [$__interval]: zoomed in, $__interval drops to the scrape interval and the graph goes empty or jumpy"
        ));
    }
    let scrape = scope.inv.scrape_interval_s()?;
    let secs = range.as_secs_f64();
    (secs < factor * scrape).then(|| {
        format!(
            "{func}() over [{}] sees fewer than {factor:.0} samples at a {} scrape interval: it returns nothing or jumps",
            fmt_secs(secs),
            fmt_secs(scrape)
        )
    })
}

/// Grafana's own rate window, or one of `factor` scrape intervals.
fn suggestion(factor: f64, scope: &Scope<'_>) -> String {
    match scope.inv.scrape_interval_s() {
        Some(s) => format!(
            "use [$__rate_interval] in Grafana, or at least [{}]",
            fmt_secs(factor * s)
        ),
        None => "use [$__rate_interval]".to_owned(),
    }
}

fn fmt_secs(s: f64) -> String {
    if s >= 60.0 && (s % 60.0).abs() < f64::EPSILON {
        format!("{}m", s / 60.0)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Rule;
    use crate::input::grafana::substitute;
    use crate::rules::testing::*;

    #[test]
    fn short_rate_window() {
        let mut inv = inventories();
        assert!(
            run_with(&inv, "rate(vllm:generation_tokens_total[30s])", false, None).is_empty(),
            "unknown interval"
        );
        inv.set_scrape_interval(15.0);
        let f = run_with(&inv, "rate(vllm:generation_tokens_total[30s])", false, None);
        assert_eq!(rules(&f), vec![Rule::ShortRateWindow]);
        assert!(f[0].suggestion.as_deref().unwrap().contains("1m"));
        assert!(run_with(&inv, "rate(vllm:generation_tokens_total[1m])", false, None).is_empty());
        assert!(
            run_with(
                &inv,
                "irate(vllm:generation_tokens_total[30s])",
                false,
                None
            )
            .is_empty()
        );
        let grafana = substitute("rate(vllm:generation_tokens_total[$__interval])");
        assert_eq!(
            rules(&run_with(&inv, &grafana, false, None)),
            vec![Rule::ShortRateWindow]
        );
        let grafana = substitute("rate(vllm:generation_tokens_total[$__rate_interval])");
        assert!(run_with(&inv, &grafana, false, None).is_empty());
    }
}
