//! [`Signals`]: the exact family names a stack exposes for every concept the dashboard and the
//! rules read, picked from the catalog. For each concept the families of that concept the
//! version exposes by default are candidates; a present name wins over a deprecated one (so
//! vLLM 0.10 reads `kv_cache_usage_perc`, 0.8 `gpu_cache_usage_perc`). A concept the version
//! lacks (e2e latency in vLLM 0.26) is `None`, and the panel or rule that needs it is left out —
//! never pointed at a name the version does not expose.

use crate::stack::{GenerateError, Stack};
use llmscope_catalog::{EngineSpec, Family, Status, family};
use llmscope_diagnosis::Concept;
use std::collections::BTreeSet;

/// Names read from the serving engine.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineSignals {
    pub running: &'static Family,
    pub waiting: &'static Family,
    pub kv_usage: &'static Family,
    pub generation_tokens: &'static Family,
    pub prompt_tokens: Option<&'static Family>,
    pub ttft: Option<&'static Family>,
    pub itl: Option<&'static Family>,
    pub e2e: Option<&'static Family>,
    pub queue_time: Option<&'static Family>,
    /// Engine steps: a histogram of tokens per step whose `_count` counts steps.
    pub steps: Option<&'static Family>,
    pub inference_time: Option<&'static Family>,
    pub preemptions: Option<&'static Family>,
    pub prefix_hits: Option<&'static Family>,
    pub prefix_queries: Option<&'static Family>,
}

/// Names read from dcgm-exporter.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSignals {
    pub util: Option<&'static Family>,
    pub mem_copy_util: Option<&'static Family>,
    pub gr_engine_active: Option<&'static Family>,
    pub tensor_active: Option<&'static Family>,
    pub dram_active: Option<&'static Family>,
    pub fb_used: Option<&'static Family>,
    pub fb_free: Option<&'static Family>,
    pub power: Option<&'static Family>,
}

/// Names read from Kueue and kube-state-metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerSignals {
    pub pending: Option<&'static Family>,
    pub admitted: Option<&'static Family>,
    pub evicted: Option<&'static Family>,
    /// Per-team (LocalQueue, namespace) reservation, else per ClusterQueue.
    pub reservation: Option<&'static Family>,
    pub namespace_labels: Option<&'static Family>,
}

/// Every name the generated artefacts read, for one stack.
#[derive(Debug, Clone, PartialEq)]
pub struct Signals {
    pub engine: EngineSignals,
    pub gpu: Option<GpuSignals>,
    pub scheduler: Option<SchedulerSignals>,
}

/// Picks names for one source.
struct Picker<'a> {
    spec: EngineSpec,
    exposed: Option<&'a BTreeSet<String>>,
}

impl Picker<'_> {
    /// Whether the version exposes `f` by default (and the inventory has it, when known).
    fn usable(&self, f: &Family) -> Option<Status> {
        let status = self.spec.status(f);
        let seen = self
            .exposed
            .is_none_or(|names| f.sample_names().iter().any(|n| names.contains(n)));
        (status.is_exposed() && seen).then_some(status)
    }

    /// The family of `concept` this version exposes, present before deprecated.
    fn concept(&self, concept: Concept) -> Option<&'static Family> {
        let mut found: Vec<(&'static Family, Status)> = self
            .spec
            .families()
            .filter(|(f, _)| f.concept == Some(concept))
            .filter_map(|(f, _)| self.usable(f).map(|s| (f, s)))
            .collect();
        found.sort_by_key(|(_, s)| *s != Status::Present);
        found.first().map(|(f, _)| *f)
    }

    /// The first of `names` this version exposes.
    fn named(&self, names: &[&str]) -> Option<&'static Family> {
        names
            .iter()
            .filter_map(|n| family(n))
            .find(|f| self.usable(f).is_some())
    }
}

impl Signals {
    /// Resolves every name for `stack`; the engine's scheduler state, KV usage and token
    /// counter are required, everything else is optional.
    pub fn resolve(stack: &Stack) -> Result<Signals, GenerateError> {
        let picker = |spec| Picker {
            spec,
            exposed: stack.exposed.as_ref(),
        };
        Ok(Signals {
            engine: engine(&picker(stack.engine))?,
            gpu: stack.gpu.map(|g| gpu(&picker(g))),
            scheduler: stack.scheduler.map(|k| {
                let ksm = stack.kube_state_metrics.map(picker);
                scheduler(&picker(k), ksm.as_ref())
            }),
        })
    }
}

fn required(
    p: &Picker,
    concept: Concept,
    what: &'static str,
) -> Result<&'static Family, GenerateError> {
    p.concept(concept).ok_or_else(|| GenerateError::Missing {
        spec: p.spec.to_string(),
        what,
        needed_by: "the Serving row and its alerts",
    })
}

fn engine(p: &Picker) -> Result<EngineSignals, GenerateError> {
    Ok(EngineSignals {
        running: required(p, Concept::Running, "running requests")?,
        waiting: required(p, Concept::Waiting, "waiting requests")?,
        kv_usage: required(p, Concept::KvUsage, "KV-cache usage")?,
        generation_tokens: required(p, Concept::GeneratedTokens, "generated tokens")?,
        prompt_tokens: p.concept(Concept::PromptTokens),
        ttft: p.concept(Concept::Ttft),
        itl: p.concept(Concept::Itl),
        e2e: p.concept(Concept::E2eLatency),
        queue_time: p.concept(Concept::QueueTime),
        steps: p.concept(Concept::TokensPerStep),
        inference_time: p.named(&["vllm:request_inference_time_seconds"]),
        preemptions: p.concept(Concept::Preemptions),
        prefix_hits: p.concept(Concept::PrefixCacheHits),
        prefix_queries: p.concept(Concept::PrefixCacheQueries),
    })
}

fn gpu(p: &Picker) -> GpuSignals {
    GpuSignals {
        util: p.concept(Concept::GpuUtil),
        mem_copy_util: p.concept(Concept::MemCopyUtil),
        gr_engine_active: p.concept(Concept::GrEngineActive),
        tensor_active: p.concept(Concept::TensorActive),
        dram_active: p.concept(Concept::DramActive),
        fb_used: p.concept(Concept::FbUsed),
        fb_free: p.concept(Concept::FbFree),
        power: p.concept(Concept::PowerWatts),
    }
}

fn scheduler(p: &Picker, ksm: Option<&Picker>) -> SchedulerSignals {
    SchedulerSignals {
        pending: p.named(&["kueue_pending_workloads"]),
        admitted: p.named(&["kueue_admitted_workloads_total"]),
        evicted: p.named(&["kueue_evicted_workloads_total"]),
        reservation: p.named(&[
            "kueue_local_queue_resource_reservation",
            "kueue_cluster_queue_resource_reservation",
        ]),
        namespace_labels: ksm.and_then(|k| k.named(&["kube_namespace_labels"])),
    }
}

impl EngineSignals {
    /// Every family read, in a stable order.
    pub fn all(&self) -> Vec<&'static Family> {
        let required = [
            self.running,
            self.waiting,
            self.kv_usage,
            self.generation_tokens,
        ];
        let optional = [
            self.prompt_tokens,
            self.ttft,
            self.itl,
            self.e2e,
            self.queue_time,
            self.steps,
            self.inference_time,
            self.preemptions,
            self.prefix_hits,
            self.prefix_queries,
        ];
        required
            .into_iter()
            .chain(optional.into_iter().flatten())
            .collect()
    }
}

impl GpuSignals {
    /// Every family read, in a stable order.
    pub fn all(&self) -> Vec<&'static Family> {
        [
            self.util,
            self.mem_copy_util,
            self.gr_engine_active,
            self.tensor_active,
            self.dram_active,
            self.fb_used,
            self.fb_free,
            self.power,
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

impl SchedulerSignals {
    /// Every family read, in a stable order.
    pub fn all(&self) -> Vec<&'static Family> {
        [
            self.pending,
            self.admitted,
            self.evicted,
            self.reservation,
            self.namespace_labels,
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signals(engine: &str) -> Signals {
        let stack = Stack::new(engine.parse().unwrap())
            .unwrap()
            .with_gpu("dcgm-exporter@4.5".parse().unwrap())
            .unwrap();
        Signals::resolve(&stack).unwrap()
    }

    #[test]
    fn each_version_reads_its_own_names() {
        let new = signals("vllm@0.26").engine;
        assert_eq!(new.kv_usage.name, "vllm:kv_cache_usage_perc");
        assert_eq!(new.itl.unwrap().name, "vllm:inter_token_latency_seconds");
        assert!(new.e2e.is_none(), "0.26 has no e2e histogram");
        let mid = signals("vllm@0.10").engine;
        assert_eq!(
            mid.kv_usage.name, "vllm:kv_cache_usage_perc",
            "present beats deprecated"
        );
        assert_eq!(mid.itl.unwrap().name, "vllm:time_per_output_token_seconds");
        assert_eq!(
            mid.prefix_hits.unwrap().name,
            "vllm:prefix_cache_hits_total"
        );
        let old = signals("vllm@0.8").engine;
        assert_eq!(old.kv_usage.name, "vllm:gpu_cache_usage_perc");
        assert_eq!(
            old.prefix_hits.unwrap().name,
            "vllm:gpu_prefix_cache_hits_total"
        );
        assert_eq!(old.e2e.unwrap().name, "vllm:e2e_request_latency_seconds");
    }

    #[test]
    fn an_inventory_limits_the_names_to_what_it_exposes() {
        let mut stack = Stack::new("vllm@0.10".parse().unwrap()).unwrap();
        let names = [
            "vllm:num_requests_running",
            "vllm:num_requests_waiting",
            "vllm:gpu_cache_usage_perc",
            "vllm:generation_tokens_total",
        ];
        stack.exposed = Some(names.map(String::from).into());
        let s = Signals::resolve(&stack).unwrap().engine;
        assert_eq!(s.kv_usage.name, "vllm:gpu_cache_usage_perc");
        assert!(s.ttft.is_none());
        stack.exposed = Some(BTreeSet::new());
        assert!(matches!(
            Signals::resolve(&stack),
            Err(GenerateError::Missing { .. })
        ));
    }

    #[test]
    fn gpu_and_scheduler_names_come_from_their_catalogs() {
        let gpu = signals("vllm@0.26").gpu.unwrap();
        assert_eq!(gpu.util.unwrap().name, "DCGM_FI_DEV_GPU_UTIL");
        assert_eq!(gpu.all().len(), 8);
        let stack = Stack::new("vllm@0.26".parse().unwrap())
            .unwrap()
            .with_scheduler("kueue@0.19".parse().unwrap())
            .unwrap();
        let k = Signals::resolve(&stack).unwrap().scheduler.unwrap();
        assert_eq!(
            k.reservation.unwrap().name,
            "kueue_local_queue_resource_reservation"
        );
        assert_eq!(k.namespace_labels.unwrap().name, "kube_namespace_labels");
        let old = Stack::new("vllm@0.26".parse().unwrap())
            .unwrap()
            .with_scheduler("kueue@0.6".parse().unwrap())
            .unwrap();
        let k = Signals::resolve(&old).unwrap().scheduler.unwrap();
        assert_eq!(
            k.reservation.unwrap().name,
            "kueue_cluster_queue_resource_reservation"
        );
    }
}
