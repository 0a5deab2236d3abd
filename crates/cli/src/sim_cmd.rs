//! `llmscope sim`: runs the simulated serving stack until interrupted.
//!
//! [`SimArgs`] (clap) resolves into an `llmscope_sim::serve::SimConfig`: a preset, then any engine,
//! model-constant and fault flags layered on top. [`EngineFlags`] is shared with commands that start
//! the simulator in-process.

use anyhow::{Context, bail};
use llmscope_sim::faults::Faults;
use llmscope_sim::metrics::Dialect;
use llmscope_sim::preset::{self, Preset};
use llmscope_sim::serve::{self, SimConfig};
use std::io::Write;
use std::net::IpAddr;
use std::process::ExitCode;
use std::time::Duration;

/// Simulator engine settings: a preset and overrides of its vLLM flags and model constants.
#[derive(Debug, Clone, clap::Args)]
pub struct EngineFlags {
    /// Preset (GPU + model + vLLM settings); see --list-presets.
    #[arg(long, default_value = "l4-qwen2.5-3b")]
    pub preset: String,
    /// Seed of every random draw (output lengths, faults): same seed, same run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// vLLM --max-num-seqs: the cap on running requests.
    #[arg(long, help_heading = "vLLM engine")]
    pub max_num_seqs: Option<u32>,
    /// vLLM --max-num-batched-tokens: tokens per engine step (chunked prefill budget).
    #[arg(long, help_heading = "vLLM engine")]
    pub max_num_batched_tokens: Option<u32>,
    /// vLLM --max-model-len.
    #[arg(long, help_heading = "vLLM engine")]
    pub max_model_len: Option<u32>,
    /// vLLM --gpu-memory-utilization (0..1]: the share of GPU memory vLLM may take.
    #[arg(long, help_heading = "vLLM engine")]
    pub gpu_memory_utilization: Option<f64>,
    /// vLLM --kv-cache-memory-bytes: the KV pool's size in bytes, instead of what
    /// --gpu-memory-utilization leaves (e.g. 4194304 for a 4 MiB pool).
    #[arg(long, help_heading = "vLLM engine")]
    pub kv_cache_memory_bytes: Option<u64>,
    /// Turn vLLM's prefix caching off.
    #[arg(long, help_heading = "vLLM engine")]
    pub no_enable_prefix_caching: bool,
    /// vLLM --async-scheduling: host work overlaps GPU work.
    #[arg(long, help_heading = "vLLM engine")]
    pub async_scheduling: bool,
    /// vLLM --stream-interval: tokens buffered per request before a stream chunk is sent.
    #[arg(long, help_heading = "vLLM engine")]
    pub stream_interval: Option<u32>,
    /// Metric names of this vLLM version: 0.32 (newest), 0.26 (default), 0.11, 0.10, 0.8.
    #[arg(long, default_value = "0.26", help_heading = "vLLM engine")]
    pub metrics_dialect: String,
    /// Host (CPU) time per engine step, e.g. 55ms (the L4 preset's calibrated value).
    #[arg(long, value_parser = crate::args::duration, help_heading = "Model constants")]
    pub host_overhead: Option<Duration>,
    /// Host time per scheduled sequence per step, e.g. 30us.
    #[arg(long, value_parser = crate::args::duration, help_heading = "Model constants")]
    pub host_seq_overhead: Option<Duration>,
    /// Host time per new token per step, e.g. 500ns.
    #[arg(long, value_parser = crate::args::duration, help_heading = "Model constants")]
    pub host_token_overhead: Option<Duration>,
    /// API-server time per streamed token, e.g. 465us: a step lasts at least this × sequences
    /// sampled (a front end sharing the engine's cores).
    #[arg(long, value_parser = crate::args::duration, help_heading = "Model constants")]
    pub frontend_token_overhead: Option<Duration>,
    /// Fixed GPU time per step, e.g. 500us.
    #[arg(long, value_parser = crate::args::duration, help_heading = "Model constants")]
    pub gpu_step_overhead: Option<Duration>,
    /// Fixed GPU time per layer per step, e.g. 20us.
    #[arg(long, value_parser = crate::args::duration, help_heading = "Model constants")]
    pub gpu_layer_overhead: Option<Duration>,
    /// Achieved fraction of peak memory bandwidth (0..1].
    #[arg(long, help_heading = "Model constants")]
    pub eta_bw: Option<f64>,
    /// Achieved fraction of peak FLOP/s (0..1].
    #[arg(long, help_heading = "Model constants")]
    pub eta_flops: Option<f64>,
    /// Mean answer length (tokens) when the model stops at EOS.
    #[arg(long, help_heading = "Model constants")]
    pub output_mean: Option<f64>,
    /// Log-space sigma of the answer-length distribution.
    #[arg(long, help_heading = "Model constants")]
    pub output_sigma: Option<f64>,
}

impl EngineFlags {
    /// The preset with every override applied.
    pub fn resolve(&self) -> anyhow::Result<(Preset, Dialect)> {
        let Some(mut p) = preset::preset(&self.preset) else {
            let names: Vec<_> = preset::presets().iter().map(|p| p.name).collect();
            bail!(
                "unknown preset `{}`; choose one of: {}",
                self.preset,
                names.join(", ")
            );
        };
        let e = &mut p.engine;
        set(&mut e.max_num_seqs, self.max_num_seqs);
        set(&mut e.max_num_batched_tokens, self.max_num_batched_tokens);
        set(&mut e.max_model_len, self.max_model_len);
        set(&mut e.gpu_memory_utilization, self.gpu_memory_utilization);
        if self.kv_cache_memory_bytes.is_some() {
            e.kv_cache_memory_bytes = self.kv_cache_memory_bytes;
        }
        e.enable_prefix_caching &= !self.no_enable_prefix_caching;
        e.async_scheduling |= self.async_scheduling;
        set(&mut e.stream_interval, self.stream_interval);
        if e.stream_interval == 0 {
            bail!("--stream-interval must be at least 1");
        }
        let k = &mut p.constants;
        set(
            &mut k.host_step_s,
            self.host_overhead.map(|d| d.as_secs_f64()),
        );
        set(
            &mut k.host_seq_s,
            self.host_seq_overhead.map(|d| d.as_secs_f64()),
        );
        set(
            &mut k.host_token_s,
            self.host_token_overhead.map(|d| d.as_secs_f64()),
        );
        set(
            &mut k.frontend_token_s,
            self.frontend_token_overhead.map(|d| d.as_secs_f64()),
        );
        set(
            &mut k.gpu_step_s,
            self.gpu_step_overhead.map(|d| d.as_secs_f64()),
        );
        set(
            &mut k.gpu_layer_s,
            self.gpu_layer_overhead.map(|d| d.as_secs_f64()),
        );
        set(&mut k.eta_bw, self.eta_bw);
        set(&mut k.eta_flops, self.eta_flops);
        set(&mut k.output_mean_tokens, self.output_mean);
        set(&mut k.output_sigma, self.output_sigma);
        for (name, v) in [("--eta-bw", k.eta_bw), ("--eta-flops", k.eta_flops)] {
            if !(v > 0.0 && v <= 1.0) {
                bail!("{name} {v} is out of range; use a fraction in (0, 1], e.g. 0.85");
            }
        }
        let valid_lengths = k.output_mean_tokens >= 1.0 && k.output_sigma >= 0.0; // false for NaN too
        if !valid_lengths {
            bail!("--output-mean must be ≥ 1 and --output-sigma ≥ 0");
        }
        let Some(dialect) = Dialect::parse(&self.metrics_dialect) else {
            let known: Vec<_> = Dialect::KNOWN.iter().map(|(v, _)| *v).collect();
            bail!(
                "unknown --metrics-dialect `{}`; use one of {}",
                self.metrics_dialect,
                known.join(", ")
            );
        };
        Ok((p, dialect))
    }
}

fn set<T>(slot: &mut T, v: Option<T>) {
    if let Some(v) = v {
        *slot = v;
    }
}

/// Fault injection rates (probabilities 0..1), all off by default.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FaultFlags {
    /// Share of requests answered with HTTP 500.
    #[arg(
        long = "fault-500",
        default_value_t = 0.0,
        help_heading = "Fault injection"
    )]
    pub http_500: f64,
    /// Share of requests answered with HTTP 429.
    #[arg(
        long = "fault-429",
        default_value_t = 0.0,
        help_heading = "Fault injection"
    )]
    pub http_429: f64,
    /// Share of requests rejected with HTTP 400 and a vLLM-shaped error body.
    #[arg(
        long = "fault-400",
        default_value_t = 0.0,
        help_heading = "Fault injection"
    )]
    pub http_400: f64,
    /// Share of streams whose connection is closed mid-stream.
    #[arg(
        long = "fault-disconnect",
        default_value_t = 0.0,
        help_heading = "Fault injection"
    )]
    pub disconnect: f64,
    /// Share of streams that stop sending for --fault-stall-for.
    #[arg(
        long = "fault-stall",
        default_value_t = 0.0,
        help_heading = "Fault injection"
    )]
    pub stall: f64,
    /// How long a stalled stream sends nothing.
    #[arg(long = "fault-stall-for", default_value = "30s", value_parser = crate::args::duration, help_heading = "Fault injection")]
    pub stall_for: Duration,
    /// Share of streams with one malformed (invalid JSON) SSE event.
    #[arg(
        long = "fault-malformed",
        default_value_t = 0.0,
        help_heading = "Fault injection"
    )]
    pub malformed: f64,
    /// Share of scrapes of either /metrics answered 503.
    #[arg(
        long = "fault-metrics-down",
        default_value_t = 0.0,
        help_heading = "Fault injection"
    )]
    pub metrics_down: f64,
    /// Share of scrapes of either /metrics answered with garbage.
    #[arg(
        long = "fault-metrics-garbage",
        default_value_t = 0.0,
        help_heading = "Fault injection"
    )]
    pub metrics_garbage: f64,
    /// The engine hangs this long after start: no more steps while /health and /metrics keep
    /// answering (gauges frozen, counters still) — "alive but not serving".
    #[arg(long = "fault-hang-after", value_parser = crate::args::duration, help_heading = "Fault injection")]
    pub hang_after: Option<Duration>,
}

impl FaultFlags {
    pub fn resolve(&self) -> Faults {
        Faults {
            http_500: self.http_500,
            http_429: self.http_429,
            http_400: self.http_400,
            disconnect: self.disconnect,
            stall: self.stall,
            stall_for: self.stall_for,
            malformed: self.malformed,
            metrics_down: self.metrics_down,
            metrics_garbage: self.metrics_garbage,
            hang_after: self.hang_after,
        }
    }
}

/// Run the simulated serving stack: a vLLM-compatible server and a dcgm-exporter.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  llmscope sim
  llmscope sim --preset l4-qwen2.5-3b --port 18000 --dcgm-port 19400 --dcgm-interval 5s --seed 1
  llmscope sim --port 0 --dcgm-port 0 --max-num-seqs 64 --metrics-dialect 0.10
  llmscope sim --fault-500 0.01 --fault-disconnect 0.02
  llmscope sim --teams example          # + Kueue and kube-state-metrics pages for three teams
  llmscope sim --list-presets")]
pub struct SimArgs {
    #[command(flatten)]
    pub engine: EngineFlags,
    #[command(flatten)]
    pub faults: FaultFlags,
    /// Address to bind (loopback unless you need otherwise).
    #[arg(long, default_value = "127.0.0.1")]
    pub listen: IpAddr,
    /// Port of the vLLM-compatible API and its /metrics (0 = any free port).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Port of the dcgm-exporter /metrics (0 = any free port).
    #[arg(long, default_value_t = 9400)]
    pub dcgm_port: u16,
    /// How often the emulated dcgm-exporter collects (its -c flag; 30s by default, as the real one).
    #[arg(long, default_value = "30s", value_parser = crate::args::duration)]
    pub dcgm_interval: Duration,
    /// The `Hostname` label of dcgm series.
    #[arg(long, default_value = "llmscope-sim")]
    pub hostname: String,
    /// Also serve Kueue and kube-state-metrics pages for these teams (YAML file, or `example`);
    /// the dcgm series then carry the first team's vLLM pod (container, namespace, pod), as
    /// dcgm-exporter with `--kubernetes` does.
    #[arg(long, value_name = "FILE|example")]
    pub teams: Option<String>,
    /// Port of the Kueue (/kueue/metrics) and kube-state-metrics (/ksm/metrics) pages (0 = free port).
    #[arg(long, default_value_t = 0)]
    pub cluster_port: u16,
    /// List the presets and exit.
    #[arg(long)]
    pub list_presets: bool,
}

impl SimArgs {
    pub fn resolve(&self) -> anyhow::Result<SimConfig> {
        let (preset, dialect) = self.engine.resolve()?;
        Ok(SimConfig {
            preset,
            seed: self.engine.seed,
            listen: self.listen,
            port: self.port,
            dcgm_port: self.dcgm_port,
            dcgm_interval: self.dcgm_interval,
            dialect,
            faults: self.faults.resolve(),
            hostname: self.hostname.clone(),
            cluster: match self.teams.as_deref() {
                None => None,
                Some("example") => Some(llmscope_sim::cluster::Teams::example()),
                Some(path) => Some(llmscope_sim::cluster::Teams::load(std::path::Path::new(
                    path,
                ))?),
            },
            cluster_port: self.cluster_port,
        })
    }
}

pub fn run(args: SimArgs) -> anyhow::Result<ExitCode> {
    if args.list_presets {
        let mut out = std::io::stdout().lock();
        for p in preset::presets() {
            writeln!(out, "{:<18} {}", p.name, p.summary)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let cfg = args.resolve()?;
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        let summary = format!(
            "preset {} ({} on {}), --max-num-seqs {}, metrics dialect {}",
            cfg.preset.name,
            cfg.preset.model.id,
            cfg.preset.gpu.model_name,
            cfg.preset.engine.max_num_seqs,
            cfg.dialect
        );
        let sim = serve::start(cfg).await?;
        let mem = sim.memory();
        eprintln!(
            "llmscope sim: {summary}; KV cache {} blocks ({} tokens), FB used {} MiB",
            mem.num_gpu_blocks,
            mem.kv_tokens,
            mem.fb_used_mib.floor()
        );
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "vllm {}", sim.vllm_url())?;
            writeln!(out, "dcgm {}", sim.dcgm_url())?;
            if let Some(addr) = sim.cluster_addr {
                writeln!(out, "kueue http://{addr}/kueue/metrics")?;
                writeln!(out, "ksm http://{addr}/ksm/metrics")?;
            }
            out.flush()?;
        }
        serve::wait_for_signal().await;
        sim.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}
