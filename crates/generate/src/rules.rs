//! The rule file for a stack: recording rules for throughput and latency quantiles, the alerts
//! of `docs/METHOD.md` steps 8 and 11 (KV ≥ 0.85 / ≥ 0.95, sustained waiting, the batch-limit
//! pattern, TTFT p95 above the SLO, preemptions) and absence guards — an `absent()` alert for every
//! series the dashboard and the rules read, and one for dcgm values that are not real — so a
//! rename is noticed the day it happens. Every alert names the llmscope verdict it corresponds
//! to in its `runbook` annotation.

use crate::promql::{Sel, agg, quantile, rate};
use crate::promrules::{Group, Rule, RuleFile};
use crate::signals::{GpuSignals, Signals};
use crate::stack::Stack;
use crate::stall;
use llmscope_catalog::{Family, Kind, dcgm};
use llmscope_diagnosis::detect::Bottleneck;

/// Labels alerts and recorded series keep: one per serving pod and model.
pub const SPLIT: &[&str] = &["namespace", "pod", "model_name"];
const WINDOW: &str = "5m";
const QUANTILES: [f64; 3] = [0.5, 0.95, 0.99];

/// Knobs of the generated rules.
#[derive(Debug, Clone, PartialEq)]
pub struct RulesOptions {
    /// TTFT p95 objective, seconds.
    pub slo_ttft_s: f64,
    /// Queue-time p95 above which `VllmQueueTimeHigh` fires, seconds.
    pub queue_time_s: f64,
}

impl Default for RulesOptions {
    fn default() -> Self {
        RulesOptions {
            slo_ttft_s: 2.0,
            queue_time_s: 5.0,
        }
    }
}

/// The rule file for `stack`.
pub fn build(stack: &Stack, s: &Signals, opts: &RulesOptions) -> RuleFile {
    let alerts = [engine_alerts(s, opts), gpu_alerts(s)].concat();
    let mut groups = vec![
        group("llmscope-vllm-recording", recording(s)),
        group("llmscope-vllm-alerts", alerts),
    ];
    if let Some(kueue) = stall::admission(s) {
        groups.push(group("llmscope-kueue-alerts", vec![kueue]));
    }
    groups.push(group("llmscope-absence", absence(stack, s)));
    RuleFile { groups }
}

fn group(name: &str, rules: Vec<Rule>) -> Group {
    Group {
        name: name.to_owned(),
        interval: None,
        rules,
    }
}

/// Every family the generated dashboard and rules read (the absence guards' list), but Kueue's
/// workload event counters: client_golang prints a counter vector's series only after its first
/// event, so `kueue_evicted_workloads_total` is rightly absent from a Kueue that never evicted,
/// and `kueue_admitted_workloads_total` from one that has admitted nothing since it started
/// (`KueueAdmissionStalled` covers that case while workloads wait). A guard on them would fire
/// on a healthy, quiet cluster.
pub fn dependencies(s: &Signals) -> Vec<&'static Family> {
    let mut all = s.engine.all();
    all.extend(s.gpu.iter().flat_map(GpuSignals::all));
    let events = s.scheduler.iter().flat_map(|k| [k.admitted, k.evicted]);
    let events: Vec<&'static Family> = events.flatten().collect();
    let scheduler = s.scheduler.iter().flat_map(|k| k.all());
    all.extend(scheduler.filter(|f| !events.contains(f)));
    all
}

fn sum_rate(f: &Family) -> String {
    agg("sum", SPLIT, &rate(&Sel::of(f), WINDOW))
}

fn recording(s: &Signals) -> Vec<Rule> {
    let e = &s.engine;
    let mut out = vec![Rule::record(
        "llmscope:vllm_generation_tokens:rate5m",
        sum_rate(e.generation_tokens),
    )];
    if let Some(p) = e.prompt_tokens {
        out.push(Rule::record(
            "llmscope:vllm_prompt_tokens:rate5m",
            sum_rate(p),
        ));
    }
    out.push(Rule::record(
        "llmscope:vllm_generation_tokens_per_running_request:rate5m",
        per_running_request(s),
    ));
    for (short, f) in latency_histograms(s) {
        out.extend(quantile_rules(short, f));
    }
    if let (Some(h), Some(q)) = (e.prefix_hits, e.prefix_queries) {
        let ratio = format!("{} / {}", sum_rate(h), sum_rate(q));
        out.push(Rule::record(
            "llmscope:vllm_prefix_cache_hit_ratio:rate5m",
            ratio,
        ));
    }
    out
}

/// Generated tokens per second per running request: a counter's rate over a gauge's mean —
/// never a `rate()` of the gauge.
fn per_running_request(s: &Signals) -> String {
    let running = format!("avg_over_time({}[{WINDOW}])", Sel::of(s.engine.running));
    format!(
        "{} / ({} > 0)",
        sum_rate(s.engine.generation_tokens),
        agg("sum", SPLIT, &running)
    )
}

/// The latency histograms the version exposes, with their short names.
pub fn latency_histograms(s: &Signals) -> Vec<(&'static str, &'static Family)> {
    let e = &s.engine;
    [
        ("ttft", e.ttft),
        ("itl", e.itl),
        ("e2e", e.e2e),
        ("queue_time", e.queue_time),
    ]
    .into_iter()
    .filter_map(|(short, f)| f.map(|f| (short, f)))
    .collect()
}

fn quantile_rules(short: &str, f: &Family) -> Vec<Rule> {
    let name = format!("llmscope:vllm_{short}_seconds:histogram_quantile_rate5m");
    QUANTILES
        .iter()
        .map(|q| {
            Rule::record(&name, quantile(*q, &Sel::bucket(f), SPLIT, WINDOW))
                .label("quantile", &q.to_string())
        })
        .collect()
}

/// An alert with severity, summary, description and the verdict hint.
pub(crate) fn alert(
    name: &str,
    expr: String,
    for_: &str,
    severity: &str,
    text: [&str; 2],
    verdict: &str,
) -> Rule {
    Rule::alert(name, expr, for_)
        .label("severity", severity)
        .annotate("summary", text[0])
        .annotate("description", text[1])
        .annotate("runbook", verdict)
}

pub(crate) fn verdict(b: Bottleneck, what: &str) -> String {
    format!(
        "llmscope verdict `{}`: {what} Confirm with `llmscope diagnose --prometheus URL --since 1h`.",
        b.as_str()
    )
}

fn engine_alerts(s: &Signals, opts: &RulesOptions) -> Vec<Rule> {
    let kv = agg("max", SPLIT, &Sel::of(s.engine.kv_usage).to_string());
    let waiting = agg("sum", SPLIT, &Sel::of(s.engine.waiting).to_string());
    let mut out = kv_alerts(&kv);
    out.push(waiting_alert(&waiting));
    out.extend(batch_limit(s, &waiting, &kv));
    out.extend(ttft_slo(s, opts));
    out.extend(preemptions(s));
    out.extend(stall::engine(s, opts));
    out
}

/// KV ≥ 0.85 for 5m (the alert level of `docs/METHOD.md` step 8) and ≥ 0.95 (preemption risk).
fn kv_alerts(kv: &str) -> Vec<Rule> {
    let kv_verdict = verdict(
        Bottleneck::KvCacheCapacity,
        "raise --gpu-memory-utilization or --max-model-len headroom, shorten prompts, or add replicas on separate GPUs.",
    );
    vec![
        alert(
            "VllmKvCacheHigh",
            format!("{kv} >= 0.85"),
            "5m",
            "warning",
            [
                "KV cache of {{ $labels.pod }} is at least 85% full",
                "vLLM {{ $labels.model_name }} on {{ $labels.pod }} has used at least 85% of its KV cache for 5 minutes (the metric is a 0..1 fraction). Near 0.9 the engine preempts requests.",
            ],
            &kv_verdict,
        ),
        alert(
            "VllmKvCacheCritical",
            format!("{kv} >= 0.95"),
            "2m",
            "critical",
            [
                "KV cache of {{ $labels.pod }} is at least 95% full",
                "vLLM {{ $labels.model_name }} on {{ $labels.pod }} has used at least 95% of its KV cache for 2 minutes: requests are being preempted or will be.",
            ],
            &kv_verdict,
        ),
    ]
}

/// Waiting > 0 sustained: throughput below the arrival rate.
fn waiting_alert(waiting: &str) -> Rule {
    alert(
        "VllmRequestsWaiting",
        format!("{waiting} > 0"),
        "5m",
        "warning",
        [
            "Requests have been waiting on {{ $labels.pod }} for 5 minutes",
            "vLLM {{ $labels.model_name }} on {{ $labels.pod }} has had requests waiting for 5 minutes: its throughput is below the arrival rate.",
        ],
        &verdict(
            Bottleneck::GpuCompute,
            "or kv_cache_capacity / batch_limit, by GPU utilisation and KV usage while it waits.",
        ),
    )
}

/// Waiting while KV and the GPU are both low: the batch is capped, not the hardware. GPU
/// utilisation is the fleet mean (`on ()`): through Prometheus, dcgm series carry the
/// exporter's pod labels, not the serving pod's (`docs/METHOD.md` step 10).
fn batch_limit(s: &Signals, waiting: &str, kv: &str) -> Option<Rule> {
    let util = s.gpu.as_ref()?.util?;
    let expr = format!(
        "({waiting} > 0) and on ({on}) ({kv} < 0.5) and on () (avg({util}) < 50)",
        on = SPLIT.join(", "),
        util = Sel::of(util),
    );
    Some(alert(
        "VllmBatchLimit",
        expr,
        "5m",
        "warning",
        [
            "{{ $labels.pod }} queues requests with KV cache and GPU mostly idle",
            "vLLM {{ $labels.model_name }} on {{ $labels.pod }} has had requests waiting for 5 minutes while its KV cache is below 50% and mean GPU utilisation below 50%: the running batch is capped by --max-num-seqs (or the client limits concurrency).",
        ],
        &verdict(
            Bottleneck::BatchLimit,
            "raise --max-num-seqs, then re-measure KV usage.",
        ),
    ))
}

fn ttft_slo(s: &Signals, opts: &RulesOptions) -> Option<Rule> {
    let ttft = s.engine.ttft?;
    let p95 = quantile(0.95, &Sel::bucket(ttft), SPLIT, WINDOW);
    let slo = opts.slo_ttft_s;
    Some(alert(
        "VllmTtftSloBreach",
        format!("{p95} > {slo}"),
        "5m",
        "warning",
        [
            "TTFT p95 of {{ $labels.pod }} is above the SLO",
            &format!(
                "vLLM {{{{ $labels.model_name }}}} on {{{{ $labels.pod }}}} has had a time-to-first-token p95 above {slo} s for 5 minutes (TTFT includes queue time)."
            ),
        ],
        &verdict(
            Bottleneck::GpuCompute,
            "or batch_limit / kv_cache_capacity when requests queue; see the queue-time panel.",
        ),
    ))
}

fn preemptions(s: &Signals) -> Option<Rule> {
    let p = s.engine.preemptions?;
    Some(alert(
        "VllmPreemptions",
        format!("{} > 0", sum_rate(p)),
        "5m",
        "warning",
        [
            "{{ $labels.pod }} keeps preempting requests",
            "vLLM {{ $labels.model_name }} on {{ $labels.pod }} has preempted requests for 5 minutes: the KV cache cannot hold the running batch, and preempted requests are recomputed.",
        ],
        &verdict(
            Bottleneck::KvCacheCapacity,
            "lower --max-num-seqs or give the KV cache more memory.",
        ),
    ))
}

/// dcgm-exporter serving blank sentinels or a zero power reading: the GPU is not really
/// measured (a pod can run while its metrics are empty, `docs/METHOD.md` step 1).
fn gpu_alerts(s: &Signals) -> Vec<Rule> {
    let Some(power) = s.gpu.as_ref().and_then(|g| g.power) else {
        return Vec::new();
    };
    let by = ["instance", "gpu"];
    let p = agg("max", &by, &Sel::of(power).to_string());
    let mut expr = format!("({p} <= 0) or ({p} >= {})", dcgm::BLANK_FP64);
    if let Some(util) = s.gpu.as_ref().and_then(|g| g.util) {
        expr.push_str(&format!(
            " or ({} > 100)",
            agg("max", &by, &Sel::of(util).to_string())
        ));
    }
    vec![alert(
        "DcgmValuesNotReal",
        expr,
        "10m",
        "warning",
        [
            "dcgm-exporter on {{ $labels.instance }} serves no real values for GPU {{ $labels.gpu }}",
            "Power is 0 or a DCGM blank sentinel, or GPU utilisation is above 100%: the exporter runs but does not read the GPU (e.g. a missing runtimeClassName: nvidia, or an unsupported field).",
        ],
        "llmscope verdict: collection is not verified, so no verdict can be trusted. Run `llmscope targets` to check values, not just `up`.",
    )]
}

/// The sample name an `absent()` guard watches for a family.
pub fn watched_sample(f: &Family) -> String {
    match f.kind {
        Kind::Histogram => format!("{}_bucket", f.name),
        _ => f.name.to_owned(),
    }
}

fn absence(stack: &Stack, s: &Signals) -> Vec<Rule> {
    let engine = stack.engine.to_string();
    dependencies(s)
        .into_iter()
        .map(|f| {
            let sample = watched_sample(f);
            let source = if f.exporter == stack.engine.exporter {
                engine.clone()
            } else {
                f.exporter.name().to_owned()
            };
            alert(
                "LlmscopeSeriesAbsent",
                format!("absent({sample})"),
                "10m",
                "warning",
                [
                    &format!("{sample} has no series"),
                    &format!("No series of {sample} for 10 minutes. The llmscope dashboard and rules generated for {source} read it: either the exporter is down or not scraped, or its version renamed the metric (run `llmscope inventory` and regenerate)."),
                ],
                "llmscope verdict: none possible without this series. Run `llmscope check --prometheus URL` on the dashboards and rules.",
            )
            .label("metric", &sample)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(engine: &str) -> RuleFile {
        let stack = Stack::new(engine.parse().unwrap())
            .unwrap()
            .with_gpu("dcgm-exporter@4.5".parse().unwrap())
            .unwrap();
        let s = Signals::resolve(&stack).unwrap();
        build(&stack, &s, &RulesOptions::default())
    }

    fn exprs(f: &RuleFile) -> String {
        f.groups
            .iter()
            .flat_map(|g| &g.rules)
            .map(|r| r.expr.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn every_alert_is_annotated_and_names_a_verdict() {
        for g in &file("vllm@0.26").groups {
            for r in g.rules.iter().filter(|r| r.alert.is_some()) {
                for key in ["summary", "description", "runbook"] {
                    assert!(r.annotations.contains_key(key), "{:?} lacks {key}", r.alert);
                }
                assert!(r.annotations["runbook"].contains("llmscope verdict"));
                assert!(r.labels.contains_key("severity"));
            }
        }
    }

    #[test]
    fn older_versions_use_their_own_names() {
        let new = exprs(&file("vllm@0.26"));
        assert!(new.contains("vllm:kv_cache_usage_perc"));
        assert!(
            !new.contains("e2e_request_latency"),
            "0.26 has no e2e histogram"
        );
        let old = exprs(&file("vllm@0.8"));
        assert!(old.contains("vllm:gpu_cache_usage_perc"));
        assert!(old.contains("vllm:time_per_output_token_seconds_bucket"));
        assert!(!old.contains("vllm:kv_cache_usage_perc"));
    }

    #[test]
    fn every_dependency_has_an_absence_guard() {
        let f = file("vllm@0.26");
        let guards = &f.groups[2].rules;
        assert!(
            guards
                .iter()
                .any(|r| r.expr == "absent(vllm:kv_cache_usage_perc)")
        );
        assert!(
            guards
                .iter()
                .any(|r| r.expr == "absent(vllm:time_to_first_token_seconds_bucket)")
        );
        assert!(
            guards
                .iter()
                .any(|r| r.expr == "absent(DCGM_FI_DEV_GPU_UTIL)")
        );
        let metrics: std::collections::BTreeSet<_> =
            guards.iter().map(|r| &r.labels["metric"]).collect();
        assert_eq!(metrics.len(), guards.len(), "one guard per series");
    }

    #[test]
    fn kueue_event_counters_get_no_absence_guard_but_admissions_alert() {
        let stack = Stack::new("vllm@0.26".parse().unwrap())
            .unwrap()
            .with_scheduler("kueue@0.19".parse().unwrap())
            .unwrap();
        let s = Signals::resolve(&stack).unwrap();
        let f = build(&stack, &s, &RulesOptions::default());
        let all = exprs(&f);
        assert!(all.contains("absent(kueue_pending_workloads)"));
        assert!(
            !all.contains("absent(kueue_evicted_workloads_total)"),
            "a quiet cluster never evicted"
        );
        assert!(!all.contains("absent(kueue_admitted_workloads_total)"));
        let stalled = f.groups.iter().flat_map(|g| &g.rules);
        let stalled: Vec<_> = stalled
            .filter(|r| r.alert.as_deref() == Some("KueueAdmissionStalled"))
            .collect();
        assert_eq!(stalled.len(), 1);
        assert!(stalled[0].expr.contains("unless on (cluster_queue)"));
        assert!(
            stalled[0].expr.contains(
                "increase(kueue_admitted_workloads_total{replica_role!=\"follower\"}[15m])"
            )
        );
        // Without Kueue there is nothing to alert on.
        assert!(!exprs(&file("vllm@0.26")).contains("kueue_"));
    }

    #[test]
    fn no_progress_reads_the_versions_own_counters_and_each_has_a_guard() {
        for v in ["vllm@0.8", "vllm@0.26"] {
            let f = file(v);
            let rule = f.groups[1]
                .rules
                .iter()
                .find(|r| r.alert.as_deref() == Some("VllmNoProgress"))
                .unwrap();
            assert!(
                rule.expr
                    .contains("rate(vllm:generation_tokens_total[5m])) == 0")
            );
            assert!(
                rule.expr
                    .contains("rate(vllm:iteration_tokens_total_count[5m])) == 0")
            );
            let guards = exprs(&f);
            for sample in [
                "vllm:generation_tokens_total",
                "vllm:iteration_tokens_total_bucket",
                "vllm:num_requests_running",
                "vllm:num_requests_waiting",
            ] {
                assert!(
                    guards.contains(&format!("absent({sample})")),
                    "{v}: {sample}"
                );
            }
        }
    }
}
