//! Producers of metric names that llmscope has no versioned catalog for, but that real
//! dashboards query beside the engines: the vLLM production-stack router (whose own names carry
//! the `vllm:` prefix), the Gateway API Inference Extension / llm-d endpoint picker, LMCache,
//! NVIDIA Dynamo, NIM's unprefixed vLLM names, llama.cpp, Ray Serve, Triton, KServe's re-export,
//! node-exporter and cAdvisor. A checker that meets one of their names without an inventory
//! covering that producer says so once ("no inventory covers …"), instead of calling every use an
//! unknown metric.
//!
//! Sources: production-stack `src/vllm_router/services/metrics_service/__init__.py` and
//! `routers/metrics_router.py` @`a6c01db0` (2026-08), and its router at `d5ebb35c` (2025-02);
//! gateway-api-inference-extension `tools/dashboards/inference_gateway.json` history
//! (`inference_model_*` renamed `inference_objective_*` 2025-09-10, PR #1567) and its metrics
//! docs; LMCache's names on production-stack's `lmcache-dashboard.json`;
//! `docs/SOURCES.md` §other-producers (Ray's `ray_vllm` prefix, llama.cpp, Triton,
//! trtllm-serve).

use super::family;

/// Someone who exposes names the engine catalogs do not cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Producer {
    /// As messages name it.
    pub name: &'static str,
    /// Names with these prefixes are its own.
    pub prefixes: &'static [&'static str],
    /// Exact names it exposes (for producers sharing another's prefix, like the router's `vllm:`).
    pub names: &'static [&'static str],
    /// Where its inventory comes from.
    pub hint: &'static str,
}

/// The vLLM production-stack router: its own `vllm:` gauges and counters (with a `server`
/// label), beside the engines' names. Several copy an engine's value under an engine name
/// (`vllm:gpu_cache_usage_perc`, `vllm:num_requests_swapped`, …); those stay engine names here.
pub const ROUTER: Producer = Producer {
    name: "the vLLM production-stack router",
    prefixes: &["router_", "vllm_router_", "vllm_pii_"],
    names: &[
        "vllm:current_qps",
        "vllm:avg_latency",
        "vllm:avg_itl",
        "vllm:avg_decoding_length",
        "vllm:num_prefill_requests",
        "vllm:num_decoding_requests",
        "vllm:num_incoming_requests_total",
        "vllm:healthy_pods_total",
        "vllm:input_tokens_total",
        "vllm:output_tokens_total",
        "vllm:request_errors_total",
        "vllm:request_latency_seconds_bucket",
        "vllm:request_latency_seconds_sum",
        "vllm:request_latency_seconds_count",
        "vllm:semantic_cache_hit_ratio",
        "vllm:semantic_cache_hits",
        "vllm:semantic_cache_misses",
        "vllm:semantic_cache_size",
        "vllm:semantic_cache_latency",
    ],
    hint: "scrape the router's /metrics (--snapshot router.prom) or check against Prometheus",
};

/// Every producer, most specific first.
pub const PRODUCERS: &[Producer] = &[
    ROUTER,
    Producer {
        name: "the Gateway API Inference Extension / llm-d endpoint picker (EPP)",
        prefixes: &[
            "inference_pool_",
            "inference_objective_",
            "inference_model_",
            "inference_extension_",
            "llm_d_epp_",
            "llm_d_inference_scheduler_",
            "bbr_",
        ],
        names: &[],
        hint: "scrape the EPP's metrics port or check against Prometheus",
    },
    Producer {
        name: "LMCache",
        prefixes: &["lmcache:", "lmcache_"],
        names: &[],
        hint: "scrape the vLLM pod running the LMCache connector, or check against Prometheus",
    },
    Producer {
        name: "NVIDIA Dynamo",
        // nv_llm_http_service_: its HTTP frontend's old default prefix (longer than Triton's nv_).
        prefixes: &["dynamo_", "dynamo:", "nv_llm_http_service_"],
        names: &[],
        hint: "scrape the Dynamo frontend and workers, or check against Prometheus",
    },
    Producer {
        name: "llama.cpp server",
        prefixes: &["llamacpp:"],
        names: &[],
        hint: "scrape llama-server --metrics",
    },
    Producer {
        name: "Ray Serve (vLLM re-exported with the ray_vllm prefix)",
        prefixes: &["ray_vllm:", "ray_vllm_", "ray_serve_"],
        names: &[],
        hint: "scrape Ray's metrics export port",
    },
    Producer {
        name: "KServe (vLLM re-exported with the kserve_ prefix)",
        prefixes: &["kserve_"],
        names: &[],
        hint: "check against Prometheus",
    },
    Producer {
        name: "NVIDIA Triton / TensorRT-LLM",
        prefixes: &["nv_", "trtllm_", "trtllm:"],
        names: &[],
        hint: "scrape Triton's metrics port",
    },
    Producer {
        name: "node-exporter",
        prefixes: &["node_"],
        names: &[],
        hint: "check against Prometheus",
    },
    Producer {
        name: "cAdvisor / the kubelet",
        prefixes: &["container_", "kubelet_", "machine_"],
        names: &[],
        hint: "check against Prometheus",
    },
];

/// NVIDIA NIM for LLMs exposes vLLM's names without the `vllm:` prefix.
pub const NIM: Producer = Producer {
    name: "NVIDIA NIM (vLLM names without the vllm: prefix)",
    prefixes: &[],
    names: &[],
    hint: "scrape the NIM container's /v1/metrics, or check against Prometheus",
};

/// Who produces `name`, when no engine catalog owns it.
pub fn producer_of(name: &str) -> Option<&'static Producer> {
    if let Some(p) = PRODUCERS.iter().find(|p| p.names.contains(&name)) {
        return Some(p);
    }
    // The longest prefix wins: Dynamo's nv_llm_http_service_ over Triton's nv_.
    let matched = |p: &Producer| {
        p.prefixes
            .iter()
            .filter(|x| name.starts_with(*x))
            .map(|x| x.len())
            .max()
    };
    if let Some(p) = PRODUCERS
        .iter()
        .filter_map(|p| matched(p).map(|len| (len, p)))
        .max_by_key(|(len, _)| *len)
        .map(|(_, p)| p)
    {
        return Some(p);
    }
    let stem = ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name);
    if !name.contains(':') && family(&format!("vllm:{stem}")).is_some() {
        return Some(&NIM);
    }
    None
}

/// The namespace of a name, with its separator: what comes before its first `:`, or else its
/// first `_` (`neutree_` of `neutree_node_ready`, `vllm:` of `vllm:num_requests_running`) —
/// Prometheus' naming convention puts the producer there; for a CamelCase name without either,
/// its first word (`Host` of HAMi's `HostGPUMemoryUsage`). `None` for a name with none of these.
pub fn namespace_of(name: &str) -> Option<&str> {
    if let Some(end) = name.find(':').or_else(|| name.find('_')) {
        return (end > 0).then(|| &name[..=end]);
    }
    let b = name.as_bytes();
    let word =
        (1..b.len()).find(|&i| b[i].is_ascii_uppercase() && b[i - 1].is_ascii_lowercase())?;
    b[0].is_ascii_uppercase().then(|| &name[..word])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_the_first_word_with_its_separator() {
        assert_eq!(namespace_of("neutree_node_ready"), Some("neutree_"));
        assert_eq!(namespace_of("vllm:num_requests_running"), Some("vllm:"));
        assert_eq!(namespace_of("ray_vllm:x_total"), Some("ray_vllm:"));
        assert_eq!(namespace_of("up"), None);
        assert_eq!(namespace_of("HostGPUMemoryUsage"), Some("Host"));
        assert_eq!(namespace_of("GPUUTIL"), None);
        assert_eq!(namespace_of("_x"), None);
    }

    #[test]
    fn router_epp_lmcache_and_nim_names_have_producers() {
        assert_eq!(producer_of("vllm:current_qps"), Some(&ROUTER));
        assert_eq!(producer_of("router_cpu_usage_percent"), Some(&ROUTER));
        assert!(producer_of("vllm:num_requests_running").is_none());
        assert!(
            producer_of("inference_objective_request_duration_seconds_bucket")
                .unwrap()
                .name
                .contains("EPP")
        );
        assert_eq!(
            producer_of("lmcache:num_hit_tokens_total").unwrap().name,
            "LMCache"
        );
        assert_eq!(producer_of("num_requests_running"), Some(&NIM));
        assert_eq!(
            producer_of("time_to_first_token_seconds_bucket"),
            Some(&NIM)
        );
        assert!(producer_of("up_and_away").is_none());
        assert_eq!(
            producer_of("nv_llm_http_service_requests_total")
                .unwrap()
                .name,
            "NVIDIA Dynamo"
        );
        assert!(
            producer_of("nv_inference_count")
                .unwrap()
                .name
                .contains("Triton")
        );
    }
}
