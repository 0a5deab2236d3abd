//! The primary bottleneck of a run: the one answer every verdict, finding and report names.

use serde::{Deserialize, Serialize};

/// The primary bottleneck of a run (the contract's `verdict.bottleneck`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// A real share of the requests failed (issue 12): the verdict before any other.
    FailingRequests,
    /// Requests turned away by a configured admission limit (vLLM `--max-num-queued-reqs` /
    /// `--max-num-queued-tokens`, HTTP 503): load shed by configuration (issue 51).
    AdmissionLimit,
    GpuCompute,
    KvCacheCapacity,
    BatchLimit,
    Client,
    LoadNotReached,
    MemoryBandwidth,
    Host,
    TokenBudget,
    /// Requests queued in front of the scheduler — in the API server process — while the
    /// scheduler had room: the front end, not the engine, limits the deployment.
    FrontEnd,
    /// Some replicas (or data-parallel ranks) queue while others have room: the router, not
    /// the engines, limits the deployment (issue 25).
    RoutingImbalance,
    None,
}

impl Bottleneck {
    pub fn as_str(self) -> &'static str {
        match self {
            Bottleneck::FailingRequests => "failing_requests",
            Bottleneck::AdmissionLimit => "admission_limit",
            Bottleneck::GpuCompute => "gpu_compute",
            Bottleneck::KvCacheCapacity => "kv_cache_capacity",
            Bottleneck::BatchLimit => "batch_limit",
            Bottleneck::Client => "client",
            Bottleneck::LoadNotReached => "load_not_reached",
            Bottleneck::MemoryBandwidth => "memory_bandwidth",
            Bottleneck::Host => "host",
            Bottleneck::TokenBudget => "token_budget",
            Bottleneck::FrontEnd => "front_end",
            Bottleneck::RoutingImbalance => "routing_imbalance",
            Bottleneck::None => "none",
        }
    }
}
