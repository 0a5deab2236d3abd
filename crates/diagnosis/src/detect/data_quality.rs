use super::{Context, Finding, Severity, finding};
use crate::signal::Concept;

/// Data quality: absent signals, a missing steady phase, a window too short for the scrapes.
pub struct DataQuality;
impl DataQuality {
    pub fn all(&self, cx: &Context) -> Vec<Finding> {
        let scrape = cx.input.scrape_interval_s.unwrap_or(1.0);
        let mut out = missing_signals(cx);
        out.extend(impossible_values(cx));
        out.extend(contended(cx));
        out.extend(window(cx, scrape));
        out.extend(self.gaps(cx, scrape));
        out
    }

    fn gaps(&self, cx: &Context, scrape: f64) -> Option<Finding> {
        let s = cx.input.signal(Concept::Running)?;
        let gaps = s
            .points
            .windows(2)
            .filter(|w| w[1].0 - w[0].0 > 3.0 * scrape)
            .count();
        (gaps > 0).then(|| {
            quality(
                "scrape-gaps",
                format!(
                    "{gaps} gap(s) longer than 3 scrape intervals in {}: a target was down or slow",
                    s.source
                ),
            )
        })
    }
}

/// A warning of the data itself: no bottleneck, no evidence.
fn quality(rule: &'static str, message: String) -> Finding {
    finding(rule, Severity::Warning, None, 1.0, message, Vec::new())
}

/// The signals the decision table needs that have no samples (absent, never read as zero).
fn missing_signals(cx: &Context) -> Vec<Finding> {
    [
        (Concept::Running, "the engine's running-requests gauge"),
        (Concept::Waiting, "the engine's waiting-requests gauge"),
        (
            Concept::KvUsage,
            "KV-cache usage (vLLM ≥ 0.9.2: vllm:kv_cache_usage_perc; older: vllm:gpu_cache_usage_perc)",
        ),
        (
            Concept::GpuUtil,
            "GPU utilisation (dcgm-exporter DCGM_FI_DEV_GPU_UTIL)",
        ),
    ]
    .into_iter()
    .filter(|(c, _)| cx.input.signal(*c).is_none())
    .map(|(c, why)| {
        quality(
            "missing-signal",
            format!(
                "{} is absent (no samples — not zero): {why}; check the metric name and the scrape target",
                c.name()
            ),
        )
    })
    .collect()
}

/// Samples left out because their metric cannot take them (see [`crate::signal::Rejected`]).
fn impossible_values(cx: &Context) -> Vec<Finding> {
    cx.input
        .rejected
        .iter()
        .map(|r| {
            let seen = if r.lowest == r.highest {
                llmscope_core::number::short(r.lowest)
            } else {
                format!(
                    "{} … {}",
                    llmscope_core::number::short(r.lowest),
                    llmscope_core::number::short(r.highest)
                )
            };
            quality(
                "impossible-values",
                format!(
                    "{} sample(s) of {} were {seen}, but it is {}: left out of the verdict as bad data — check the exporter (a percent under a fraction's name, a gauge that went negative)",
                    r.count, r.name, r.domain
                ),
            )
        })
        .collect()
}

fn contended(cx: &Context) -> Option<Finding> {
    let c = cx.input.load.contention.as_deref()?;
    Some(quality(
        "contended-machine",
        format!(
            "the machine was contended while measuring ({c}): client-side timings are less exact and the verdict's confidence is lowered"
        ),
    ))
}

/// No steady loaded phase, or one too short for the scrape interval.
fn window(cx: &Context, scrape: f64) -> Option<Finding> {
    match cx.phases.steady {
        None => Some(quality(
            "no-steady-phase",
            "no steady loaded phase was found: the load never held (raise concurrency or duration)"
                .to_owned(),
        )),
        Some((a, b)) if b - a < 8.0 * scrape => Some(quality(
            "short-window",
            format!(
                "the steady window lasted {:.0}s, under 8 scrape intervals ({:.0}s): short bursts are missed by scrapes; run longer",
                b - a,
                8.0 * scrape
            ),
        )),
        _ => None,
    }
}
