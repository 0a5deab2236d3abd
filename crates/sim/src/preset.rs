//! Hardware, model and engine presets, and the model constants that turn them into step times.
//!
//! A preset is a [`GpuSpec`] + [`ModelSpec`] + [`EngineConfig`] + [`ModelConstants`]. GPU and model
//! figures are public datasheet / `config.json` values (sources in
//! `docs/SOURCES.md` §sim-model, §sim-l4). The constants are shared by every preset
//! ([`ModelConstants::default`]); a preset only overrides one where it reproduces a measured
//! deployment (the L4 reference case ran on a host that needed ~55 ms of CPU time per step).
//! Every constant is also a command-line flag, so a user can re-fit them to their own runs.

/// A GPU as the engine model and the dcgm emulation need it.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSpec {
    /// Short id used in preset names and price keys (`l4`, `h100`).
    pub id: &'static str,
    /// What dcgm-exporter prints as `modelName`.
    pub model_name: &'static str,
    /// Memory the CUDA runtime reports as total (MiB); DCGM FB_USED + FB_FREE.
    pub memory_mib: f64,
    /// DCGM FB_RESERVED (MiB): driver-reserved memory outside the total above.
    pub reserved_mib: f64,
    /// Peak memory bandwidth, bytes/s.
    pub bandwidth: f64,
    /// Peak dense bf16 tensor throughput, FLOP/s.
    pub peak_flops: f64,
    /// Board power limit (W).
    pub tdp_w: f64,
    /// Power with a model loaded and no kernels running (P0 idle), W.
    pub idle_w: f64,
    /// NVML utilisation sample period (s): between 1/6 s and 1 s depending on the product.
    pub nvml_window_s: f64,
    /// SM and memory clocks (MHz), reported as-is.
    pub sm_clock_mhz: f64,
    pub mem_clock_mhz: f64,
}

/// A decoder-only transformer, from its Hugging Face `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    /// Served model name (`/v1/models` id, `model_name` label).
    pub id: &'static str,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub intermediate: u32,
    pub vocab: u32,
    pub tied_embeddings: bool,
    /// q/k/v projections carry a bias (Qwen2).
    pub qkv_bias: bool,
    /// Tokens the chat template adds before the first message (Qwen injects a default system prompt).
    pub chat_template_tokens: u32,
    /// Tokens the template adds around each message.
    pub per_message_tokens: u32,
}

impl ModelSpec {
    /// Parameters excluding the embedding / LM-head matrices.
    pub fn non_embedding_params(&self) -> f64 {
        let (h, nh, nkv, d, i) = (
            self.hidden as f64,
            self.heads as f64,
            self.kv_heads as f64,
            self.head_dim as f64,
            self.intermediate as f64,
        );
        let attn = h * nh * d + 2.0 * h * nkv * d + nh * d * h;
        let bias = if self.qkv_bias {
            nh * d + 2.0 * nkv * d
        } else {
            0.0
        };
        let per_layer = attn + bias + 3.0 * h * i + 2.0 * h;
        self.layers as f64 * per_layer + h
    }

    /// All parameters (an untied LM head counts twice the embedding).
    pub fn params(&self) -> f64 {
        let emb = self.vocab as f64 * self.hidden as f64;
        self.non_embedding_params() + if self.tied_embeddings { emb } else { 2.0 * emb }
    }

    /// bf16 weight bytes: what every step streams from memory.
    pub fn weight_bytes(&self) -> f64 {
        2.0 * self.params()
    }

    /// KV-cache bytes per token over all layers (bf16 K and V).
    pub fn kv_bytes_per_token(&self) -> f64 {
        2.0 * self.layers as f64 * self.kv_heads as f64 * self.head_dim as f64 * 2.0
    }
}

/// vLLM engine arguments that shape scheduling and memory.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    /// `--max-num-seqs`: the cap on running requests.
    pub max_num_seqs: u32,
    /// `--max-num-batched-tokens`: the token budget of one step (chunked prefill).
    pub max_num_batched_tokens: u32,
    /// `--max-model-len`.
    pub max_model_len: u32,
    /// `--gpu-memory-utilization`.
    pub gpu_memory_utilization: f64,
    /// KV block size in tokens (16 on CUDA).
    pub block_size: u32,
    /// `--enable-prefix-caching` (on by default in V1).
    pub enable_prefix_caching: bool,
    /// `--async-scheduling`: host work overlaps GPU work (step = max instead of sum).
    pub async_scheduling: bool,
    /// `--stream-interval` (vLLM ≥ 0.12): tokens buffered per request before a stream chunk is
    /// sent; the first token always goes at once. 1 = every token.
    pub stream_interval: u32,
    /// `--kv-cache-memory-bytes`: the KV pool's size in bytes, instead of what memory
    /// utilisation leaves (on vLLM's CPU build `VLLM_CPU_KVCACHE_SPACE`, GiB, sets it too).
    pub kv_cache_memory_bytes: Option<u64>,
    /// `--max-num-queued-reqs`: requests in flight (running + waiting) past which the API server
    /// answers 503 before any engine sees the request; `None`, vLLM's default, is no limit.
    pub max_num_queued_reqs: Option<u32>,
}

/// The constants of the step-time, memory, output-length and power models.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConstants {
    /// Achieved fraction of peak memory bandwidth.
    pub eta_bw: f64,
    /// Achieved fraction of peak FLOP/s.
    pub eta_flops: f64,
    /// Fixed GPU time per step (s) and per layer (s).
    pub gpu_step_s: f64,
    pub gpu_layer_s: f64,
    /// Host (CPU) time per step, per scheduled sequence and per new token (s).
    pub host_step_s: f64,
    pub host_seq_s: f64,
    pub host_token_s: f64,
    /// API-server (front-end) time per streamed token (s): detokenising and sending each token
    /// costs the server process CPU on the cores the engine shares. When the front end cannot
    /// keep up, a step's tokens leave no faster than it streams them: a step lasts at least
    /// `frontend_token_s × sequences sampled`. 0 (a front end with cores of its own) by default.
    pub frontend_token_s: f64,
    /// Answer length when the model stops at EOS: lognormal with this mean (tokens) and log-sigma.
    pub output_mean_tokens: f64,
    pub output_sigma: f64,
    /// CUDA context (MiB) and CUDA-graph pool (MiB): in FB_USED but not charged to the KV budget.
    pub cuda_context_mib: f64,
    pub cuda_graph_mib: f64,
    /// Activation peak per batched token per hidden unit (bytes), charged against the KV budget.
    pub activation_bytes_per_token_hidden: f64,
    /// Non-torch allocations charged against the KV budget (MiB).
    pub non_torch_mib: f64,
    /// Power while kernels run: idle + (tdp − idle) × (base + span × compute share of the step).
    pub power_busy_base: f64,
    pub power_busy_span: f64,
    /// First-order lag of the power reading (s).
    pub power_tau_s: f64,
}

impl Default for ModelConstants {
    fn default() -> Self {
        Self {
            eta_bw: 0.85,
            eta_flops: 0.55,
            gpu_step_s: 0.0005,
            gpu_layer_s: 0.000_02,
            host_step_s: 0.003,
            host_seq_s: 0.000_03,
            host_token_s: 0.000_000_5,
            frontend_token_s: 0.0,
            output_mean_tokens: 50.0,
            output_sigma: 0.6,
            cuda_context_mib: 470.0,
            cuda_graph_mib: 150.0,
            activation_bytes_per_token_hidden: 64.0,
            non_torch_mib: 51.0,
            power_busy_base: 0.45,
            power_busy_span: 0.5,
            power_tau_s: 1.5,
        }
    }
}

/// A complete simulated deployment.
#[derive(Debug, Clone, PartialEq)]
pub struct Preset {
    pub name: &'static str,
    pub summary: &'static str,
    pub gpu: GpuSpec,
    pub model: ModelSpec,
    pub engine: EngineConfig,
    pub constants: ModelConstants,
}

pub const L4: GpuSpec = GpuSpec {
    id: "l4",
    model_name: "NVIDIA L4",
    memory_mib: 22565.0,
    reserved_mib: 469.0,
    bandwidth: 300e9,
    peak_flops: 121e12,
    tdp_w: 72.0,
    idle_w: 40.0,
    nvml_window_s: 1.0,
    sm_clock_mhz: 2040.0,
    mem_clock_mhz: 6251.0,
};

pub const H100: GpuSpec = GpuSpec {
    id: "h100",
    model_name: "NVIDIA H100 80GB HBM3",
    memory_mib: 81_079.0,
    reserved_mib: 480.0,
    bandwidth: 3350e9,
    peak_flops: 989e12,
    tdp_w: 700.0,
    idle_w: 110.0,
    nvml_window_s: 1.0 / 6.0,
    sm_clock_mhz: 1980.0,
    mem_clock_mhz: 2619.0,
};

pub const H200: GpuSpec = GpuSpec {
    id: "h200",
    model_name: "NVIDIA H200",
    memory_mib: 143_246.0,
    reserved_mib: 525.0,
    bandwidth: 4800e9,
    peak_flops: 989e12,
    tdp_w: 700.0,
    idle_w: 119.0,
    nvml_window_s: 1.0 / 6.0,
    sm_clock_mhz: 1980.0,
    mem_clock_mhz: 3201.0,
};

pub const QWEN25_3B: ModelSpec = ModelSpec {
    id: "Qwen/Qwen2.5-3B-Instruct",
    layers: 36,
    hidden: 2048,
    heads: 16,
    kv_heads: 2,
    head_dim: 128,
    intermediate: 11008,
    vocab: 151_936,
    tied_embeddings: true,
    qkv_bias: true,
    chat_template_tokens: 24,
    per_message_tokens: 4,
};

pub const QWEN25_7B: ModelSpec = ModelSpec {
    id: "Qwen/Qwen2.5-7B-Instruct",
    layers: 28,
    hidden: 3584,
    heads: 28,
    kv_heads: 4,
    head_dim: 128,
    intermediate: 18944,
    vocab: 152_064,
    tied_embeddings: false,
    qkv_bias: true,
    chat_template_tokens: 24,
    per_message_tokens: 4,
};

pub const LLAMA31_8B: ModelSpec = ModelSpec {
    id: "meta-llama/Llama-3.1-8B-Instruct",
    layers: 32,
    hidden: 4096,
    heads: 32,
    kv_heads: 8,
    head_dim: 128,
    intermediate: 14336,
    vocab: 128_256,
    tied_embeddings: false,
    qkv_bias: false,
    chat_template_tokens: 26,
    per_message_tokens: 5,
};

/// A ~110M-parameter model for load-generator benchmarks: tiny steps, huge batches.
pub const TINY: ModelSpec = ModelSpec {
    id: "llmscope/tiny-bench",
    layers: 12,
    hidden: 768,
    heads: 12,
    kv_heads: 2,
    head_dim: 64,
    intermediate: 3072,
    vocab: 32_000,
    tied_embeddings: true,
    qkv_bias: false,
    chat_template_tokens: 8,
    per_message_tokens: 2,
};

/// The tiny random-weight Qwen2 the real-engine tier serves on vLLM's CPU build
/// (`scripts/real-vllm.sh`: hidden 256, 4 layers, vocab 4,096, bf16, tied embeddings).
pub const TINY_QWEN2: ModelSpec = ModelSpec {
    id: "tiny",
    layers: 4,
    hidden: 256,
    heads: 4,
    kv_heads: 2,
    head_dim: 64,
    intermediate: 512,
    vocab: 4096,
    tied_embeddings: true,
    qkv_bias: true,
    // The tier's ChatML template: no system prompt; `<|im_start|>role\n … <|im_end|>\n` around
    // each message and `<|im_start|>assistant\n` to open the answer.
    chat_template_tokens: 3,
    per_message_tokens: 5,
};

/// Two x86 cores running vLLM's CPU build: "GPU" figures stand for the host. Step times on it
/// are host time; the roofline terms are small (the tiny model's weights are 7 MB).
pub const CPU2: GpuSpec = GpuSpec {
    id: "cpu",
    model_name: "CPU (vLLM CPU build, no GPU)",
    memory_mib: 24_576.0,
    reserved_mib: 0.0,
    bandwidth: 2.0e10,
    peak_flops: 1.0e12,
    tdp_w: 65.0,
    idle_w: 10.0,
    nvml_window_s: 1.0,
    sm_clock_mhz: 0.0,
    mem_clock_mhz: 0.0,
};

/// vLLM's API-server defaults for a GPU with less than 70 GiB (L4, A10G, A100-40G).
fn small_gpu_defaults(max_model_len: u32) -> EngineConfig {
    EngineConfig {
        max_num_seqs: 256,
        max_num_batched_tokens: 2048,
        max_model_len,
        gpu_memory_utilization: 0.9,
        block_size: 16,
        enable_prefix_caching: true,
        async_scheduling: false,
        stream_interval: 1,
        kv_cache_memory_bytes: None,
        max_num_queued_reqs: None,
    }
}

/// vLLM's API-server defaults for a GPU with 70 GiB or more (H100, H200).
fn large_gpu_defaults(max_model_len: u32) -> EngineConfig {
    EngineConfig {
        max_num_seqs: 1024,
        max_num_batched_tokens: 8192,
        ..small_gpu_defaults(max_model_len)
    }
}

/// Every built-in preset; the first is the default.
pub fn presets() -> Vec<Preset> {
    vec![
        Preset {
            name: "l4-qwen2.5-3b",
            summary: "NVIDIA L4 + Qwen2.5-3B-Instruct, --max-num-seqs 16: the reference case (batch-limited, host-bound)",
            gpu: L4,
            model: QWEN25_3B,
            engine: EngineConfig {
                max_num_seqs: 16,
                max_model_len: 4096,
                gpu_memory_utilization: 0.38,
                ..small_gpu_defaults(4096)
            },
            // Calibrated to the reference run: GPU util ≈ 32 % at batch 16 needs ~55 ms of host
            // time per step (`docs/SOURCES.md` §sim-l4). KV ≈ 2.2 % mean / 2.9 % max needs answers
            // of ~100 tokens on average: every client sends the same prompt, so prefix caching shares
            // its full blocks and each running request holds only its answer's blocks
            // (`cargo run -p llmscope-sim --example calibrate`).
            constants: ModelConstants {
                host_step_s: 0.055,
                output_mean_tokens: 100.0,
                ..ModelConstants::default()
            },
        },
        Preset {
            name: "h100-llama3.1-8b",
            summary: "NVIDIA H100 80GB + Llama-3.1-8B-Instruct with vLLM defaults and a healthy host",
            gpu: H100,
            model: LLAMA31_8B,
            engine: large_gpu_defaults(8192),
            constants: ModelConstants::default(),
        },
        Preset {
            name: "h200-qwen2.5-7b",
            summary: "NVIDIA H200 + Qwen2.5-7B-Instruct with vLLM defaults and a healthy host",
            gpu: H200,
            model: QWEN25_7B,
            engine: large_gpu_defaults(8192),
            constants: ModelConstants::default(),
        },
        Preset {
            name: "l4-llama3.1-8b",
            summary: "NVIDIA L4 + Llama-3.1-8B-Instruct at --max-model-len 8192: little KV room (KV-capacity bound)",
            gpu: L4,
            model: LLAMA31_8B,
            engine: small_gpu_defaults(8192),
            constants: ModelConstants::default(),
        },
        Preset {
            name: "cpu-tiny",
            summary: "vLLM 0.32's CPU build on 2 cores + the real-engine tier's tiny Qwen2, --max-num-seqs 16, 1 GiB KV: fitted to the real server (scripts/bench-real-vs-sim.sh)",
            gpu: CPU2,
            model: TINY_QWEN2,
            engine: EngineConfig {
                max_num_seqs: 16,
                // vLLM's CPU defaults for the API server: a 2,048-token step budget, 128-token
                // KV blocks, and a pool of VLLM_CPU_KVCACHE_SPACE (the tier sets 1 GiB).
                max_num_batched_tokens: 2048,
                block_size: 128,
                kv_cache_memory_bytes: Some(1 << 30),
                ..small_gpu_defaults(2048)
            },
            constants: cpu_tiny_constants(),
        },
        Preset {
            name: "bench-tiny",
            summary: "H100 + a 110M-parameter model, huge batches, near-zero host time: for load-generator benchmarks",
            gpu: H100,
            model: TINY,
            engine: EngineConfig {
                max_num_seqs: 16_384,
                max_num_batched_tokens: 65_536,
                ..large_gpu_defaults(4096)
            },
            constants: ModelConstants {
                host_step_s: 0.0005,
                host_seq_s: 0.000_001,
                host_token_s: 0.0,
                ..ModelConstants::default()
            },
        },
    ]
}

/// The step model of vLLM's CPU build serving the tiny model on 2 cores, fitted to the real
/// server (`scripts/bench-real-vs-sim.sh`, 2026-12-01): a decode step costs about 2 ms plus
/// 0.24 ms per running sequence and 20 µs per prefill token, all of it CPU time (one core runs
/// the engine). The API server streams at most ~2,270 tokens/s on the other core (0.44 ms a
/// token): the real server gives 2,127 tok/s at --max-num-seqs 16 and only 1,935 at 32, with ~9
/// of 32 requests held in front of the scheduler. Answers run to `max_tokens` (random weights rarely
/// emit EOS), so the EOS length is set far beyond any test's `max_tokens`.
fn cpu_tiny_constants() -> ModelConstants {
    ModelConstants {
        host_step_s: 0.0021,
        host_seq_s: 0.000_24,
        host_token_s: 0.000_02,
        frontend_token_s: 0.000_44,
        gpu_step_s: 0.0,
        gpu_layer_s: 0.0,
        output_mean_tokens: 100_000.0,
        output_sigma: 0.01,
        cuda_context_mib: 0.0,
        cuda_graph_mib: 0.0,
        ..ModelConstants::default()
    }
}

/// Finds a preset by name.
pub fn preset(name: &str) -> Option<Preset> {
    presets().into_iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qwen_3b_parameters_match_the_model_card() {
        // Model card: 3.09B parameters, 2.77B non-embedding; KV 36,864 B/token (36 KiB).
        let m = QWEN25_3B;
        assert!((m.params() / 1e9 - 3.086).abs() < 0.01, "{}", m.params());
        assert!((m.non_embedding_params() / 1e9 - 2.775).abs() < 0.01);
        assert_eq!(m.kv_bytes_per_token(), 36_864.0);
    }

    #[test]
    fn other_models_match_their_configs() {
        assert!(
            (LLAMA31_8B.params() / 1e9 - 8.03).abs() < 0.02,
            "{}",
            LLAMA31_8B.params()
        );
        assert_eq!(LLAMA31_8B.kv_bytes_per_token(), 131_072.0);
        assert!(
            (QWEN25_7B.params() / 1e9 - 7.616).abs() < 0.02,
            "{}",
            QWEN25_7B.params()
        );
        assert_eq!(QWEN25_7B.kv_bytes_per_token(), 57_344.0);
    }

    #[test]
    fn presets_have_unique_names_and_the_default_is_first() {
        let all = presets();
        assert_eq!(all[0].name, "l4-qwen2.5-3b");
        let mut names: Vec<_> = all.iter().map(|p| p.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert!(preset("h100-llama3.1-8b").is_some());
        assert!(preset("nope").is_none());
    }
}
