//! What a user may change about the simulated stack before it starts: [`EngineOptions`] — a
//! preset by name, then overrides of its vLLM flags and model constants, and the metric names'
//! dialect — resolved by [`EngineOptions::resolve`] into a checked [`Preset`] and [`Dialect`].
//! With the `clap` feature these are the command line's flags (`llmscope sim`, `llmscope run`).

use crate::cluster::{Teams, TeamsError};
use crate::faults::Faults;
use crate::metrics::Dialect;
use crate::preset::{self, Preset};
use crate::serve::SimConfig;
use std::net::IpAddr;
use std::time::Duration;

#[cfg(feature = "clap")]
use llmscope_core::duration::parse_duration;

/// Why the engine options do not make a simulator.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("unknown preset `{name}`; choose one of: {known}")]
    UnknownPreset { name: String, known: String },
    #[error("--stream-interval must be at least 1")]
    StreamInterval,
    #[error("{flag} {value} is out of range; use a fraction in (0, 1], e.g. 0.85")]
    Fraction { flag: &'static str, value: f64 },
    #[error("--output-mean must be ≥ 1 and --output-sigma ≥ 0")]
    OutputLengths,
    #[error("unknown --metrics-dialect `{name}`; use one of {known}")]
    UnknownDialect { name: String, known: String },
    #[error(transparent)]
    Teams(#[from] TeamsError),
    #[error(transparent)]
    Fleet(#[from] crate::fleet::FleetError),
}

/// Simulator engine settings: a preset and overrides of its vLLM flags and model constants.
/// Stored with a run on the simulated stack, so `whatif --confirm` can start it again changed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct EngineOptions {
    /// Preset (GPU + model + vLLM settings); see --list-presets.
    #[cfg_attr(feature = "clap", arg(long, default_value = "l4-qwen2.5-3b"))]
    pub preset: String,
    /// Seed of every random draw (output lengths, faults): same seed, same run.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1))]
    pub seed: u64,
    /// vLLM --max-num-seqs: the cap on running requests.
    #[cfg_attr(feature = "clap", arg(long, help_heading = "vLLM engine"))]
    pub max_num_seqs: Option<u32>,
    /// vLLM --max-num-batched-tokens: tokens per engine step (chunked prefill budget).
    #[cfg_attr(feature = "clap", arg(long, help_heading = "vLLM engine"))]
    pub max_num_batched_tokens: Option<u32>,
    /// vLLM --max-model-len.
    #[cfg_attr(feature = "clap", arg(long, help_heading = "vLLM engine"))]
    pub max_model_len: Option<u32>,
    /// vLLM --gpu-memory-utilization (0..1]: the share of GPU memory vLLM may take.
    #[cfg_attr(feature = "clap", arg(long, help_heading = "vLLM engine"))]
    pub gpu_memory_utilization: Option<f64>,
    /// vLLM --kv-cache-memory-bytes: the KV pool's size in bytes, instead of what
    /// --gpu-memory-utilization leaves (e.g. 4194304 for a 4 MiB pool).
    #[cfg_attr(feature = "clap", arg(long, help_heading = "vLLM engine"))]
    pub kv_cache_memory_bytes: Option<u64>,
    /// vLLM --max-num-queued-reqs: requests in flight (running + waiting) past which new ones
    /// are refused with 503 (vLLM's admission limit; unset: none).
    #[cfg_attr(feature = "clap", arg(long, help_heading = "vLLM engine"))]
    pub max_num_queued_reqs: Option<u32>,
    /// Turn vLLM's prefix caching off.
    #[cfg_attr(feature = "clap", arg(long, help_heading = "vLLM engine"))]
    pub no_enable_prefix_caching: bool,
    /// vLLM --async-scheduling: host work overlaps GPU work.
    #[cfg_attr(feature = "clap", arg(long, help_heading = "vLLM engine"))]
    pub async_scheduling: bool,
    /// vLLM --stream-interval: tokens buffered per request before a stream chunk is sent.
    #[cfg_attr(feature = "clap", arg(long, help_heading = "vLLM engine"))]
    pub stream_interval: Option<u32>,
    /// Metric names of this vLLM version: 0.32 (newest), 0.26 (default), 0.11, 0.10, 0.8.
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value = "0.26", help_heading = "vLLM engine")
    )]
    pub metrics_dialect: String,
    /// Host (CPU) time per engine step, e.g. 55ms (the L4 preset's calibrated value).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_duration, help_heading = "Model constants"))]
    pub host_overhead: Option<Duration>,
    /// Host time per scheduled sequence per step, e.g. 30us.
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_duration, help_heading = "Model constants"))]
    pub host_seq_overhead: Option<Duration>,
    /// Host time per new token per step, e.g. 500ns.
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_duration, help_heading = "Model constants"))]
    pub host_token_overhead: Option<Duration>,
    /// API-server time per streamed token, e.g. 465us: a step lasts at least this × sequences
    /// sampled (a front end sharing the engine's cores).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_duration, help_heading = "Model constants"))]
    pub frontend_token_overhead: Option<Duration>,
    /// Fixed GPU time per step, e.g. 500us.
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_duration, help_heading = "Model constants"))]
    pub gpu_step_overhead: Option<Duration>,
    /// Fixed GPU time per layer per step, e.g. 20us.
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_duration, help_heading = "Model constants"))]
    pub gpu_layer_overhead: Option<Duration>,
    /// Achieved fraction of peak memory bandwidth (0..1].
    #[cfg_attr(feature = "clap", arg(long, help_heading = "Model constants"))]
    pub eta_bw: Option<f64>,
    /// Achieved fraction of peak FLOP/s (0..1].
    #[cfg_attr(feature = "clap", arg(long, help_heading = "Model constants"))]
    pub eta_flops: Option<f64>,
    /// Mean answer length (tokens) when the model stops at EOS.
    #[cfg_attr(feature = "clap", arg(long, help_heading = "Model constants"))]
    pub output_mean: Option<f64>,
    /// Log-space sigma of the answer-length distribution.
    #[cfg_attr(feature = "clap", arg(long, help_heading = "Model constants"))]
    pub output_sigma: Option<f64>,
}

impl Default for EngineOptions {
    /// The reference preset as it is, seed 1, vLLM 0.26's names.
    fn default() -> Self {
        EngineOptions {
            preset: "l4-qwen2.5-3b".to_owned(),
            seed: 1,
            max_num_seqs: None,
            max_num_batched_tokens: None,
            max_model_len: None,
            gpu_memory_utilization: None,
            kv_cache_memory_bytes: None,
            max_num_queued_reqs: None,
            no_enable_prefix_caching: false,
            async_scheduling: false,
            stream_interval: None,
            metrics_dialect: "0.26".to_owned(),
            host_overhead: None,
            host_seq_overhead: None,
            host_token_overhead: None,
            frontend_token_overhead: None,
            gpu_step_overhead: None,
            gpu_layer_overhead: None,
            eta_bw: None,
            eta_flops: None,
            output_mean: None,
            output_sigma: None,
        }
    }
}

impl EngineOptions {
    /// The preset with every override applied, checked, and the metric names' dialect.
    pub fn resolve(&self) -> Result<(Preset, Dialect), OptionsError> {
        let Some(mut p) = preset::preset(&self.preset) else {
            let names: Vec<_> = preset::presets().iter().map(|p| p.name).collect();
            return Err(OptionsError::UnknownPreset {
                name: self.preset.clone(),
                known: names.join(", "),
            });
        };
        self.apply_engine(&mut p)?;
        self.apply_constants(&mut p)?;
        let Some(dialect) = Dialect::parse(&self.metrics_dialect) else {
            let known: Vec<_> = Dialect::KNOWN.iter().map(|(v, _)| *v).collect();
            return Err(OptionsError::UnknownDialect {
                name: self.metrics_dialect.clone(),
                known: known.join(", "),
            });
        };
        Ok((p, dialect))
    }

    /// The vLLM flags.
    fn apply_engine(&self, p: &mut Preset) -> Result<(), OptionsError> {
        let e = &mut p.engine;
        set(&mut e.max_num_seqs, self.max_num_seqs);
        set(&mut e.max_num_batched_tokens, self.max_num_batched_tokens);
        set(&mut e.max_model_len, self.max_model_len);
        set(&mut e.gpu_memory_utilization, self.gpu_memory_utilization);
        if self.kv_cache_memory_bytes.is_some() {
            e.kv_cache_memory_bytes = self.kv_cache_memory_bytes;
        }
        if self.max_num_queued_reqs.is_some() {
            e.max_num_queued_reqs = self.max_num_queued_reqs;
        }
        e.enable_prefix_caching &= !self.no_enable_prefix_caching;
        e.async_scheduling |= self.async_scheduling;
        set(&mut e.stream_interval, self.stream_interval);
        if e.stream_interval == 0 {
            return Err(OptionsError::StreamInterval);
        }
        Ok(())
    }

    /// The model constants.
    fn apply_constants(&self, p: &mut Preset) -> Result<(), OptionsError> {
        let k = &mut p.constants;
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
        set(&mut k.host_step_s, secs(self.host_overhead));
        set(&mut k.host_seq_s, secs(self.host_seq_overhead));
        set(&mut k.host_token_s, secs(self.host_token_overhead));
        set(&mut k.frontend_token_s, secs(self.frontend_token_overhead));
        set(&mut k.gpu_step_s, secs(self.gpu_step_overhead));
        set(&mut k.gpu_layer_s, secs(self.gpu_layer_overhead));
        set(&mut k.eta_bw, self.eta_bw);
        set(&mut k.eta_flops, self.eta_flops);
        set(&mut k.output_mean_tokens, self.output_mean);
        set(&mut k.output_sigma, self.output_sigma);
        for (flag, value) in [("--eta-bw", k.eta_bw), ("--eta-flops", k.eta_flops)] {
            if !(value > 0.0 && value <= 1.0) {
                return Err(OptionsError::Fraction { flag, value });
            }
        }
        let valid_lengths = k.output_mean_tokens >= 1.0 && k.output_sigma >= 0.0; // false for NaN too
        if !valid_lengths {
            return Err(OptionsError::OutputLengths);
        }
        Ok(())
    }
}

/// Where and how the simulated stack serves (`llmscope sim`).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ServeOptions {
    /// Address to bind (loopback unless you need otherwise).
    #[cfg_attr(feature = "clap", arg(long, default_value = "127.0.0.1"))]
    pub listen: IpAddr,
    /// Port of the vLLM-compatible API and its /metrics (0 = any free port).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 8000))]
    pub port: u16,
    /// Port of the dcgm-exporter /metrics (0 = any free port).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 9400))]
    pub dcgm_port: u16,
    /// How often the emulated dcgm-exporter collects (its -c flag; 30s by default, as the real one).
    #[cfg_attr(feature = "clap", arg(long, default_value = "30s", value_parser = parse_duration))]
    pub dcgm_interval: Duration,
    /// The `Hostname` label of dcgm series.
    #[cfg_attr(feature = "clap", arg(long, default_value = "llmscope-sim"))]
    pub hostname: String,
    /// Also serve Kueue and kube-state-metrics pages for these teams (YAML file, or `example`);
    /// the dcgm series then carry the first team's vLLM pod (container, namespace, pod), as
    /// dcgm-exporter with `--kubernetes` does.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE|example"))]
    pub teams: Option<String>,
    /// Port of the Kueue (/kueue/metrics) and kube-state-metrics (/ksm/metrics) pages (0 = free port).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0))]
    pub cluster_port: u16,
    /// Replicas of the stack, each its own engine, API port (--port + i) and dcgm page
    /// (--dcgm-port + i; 0 = free ports), its pod `vllm-<i>` named on its dcgm page.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1))]
    pub replicas: u32,
    /// The replicas time-slice one GPU: their steps take turns, their dcgm pages share its UUID
    /// (give each a --gpu-memory-utilization that fits them all).
    #[cfg_attr(feature = "clap", arg(long, requires = "replicas"))]
    pub share_gpu: bool,
}

impl ServeOptions {
    /// The whole configuration: the engine resolved, the faults, the teams file read.
    pub fn config(
        &self,
        engine: &EngineOptions,
        faults: &Faults,
    ) -> Result<SimConfig, OptionsError> {
        let (preset, dialect) = engine.resolve()?;
        let cluster = match self.teams.as_deref() {
            None => None,
            Some("example") => Some(Teams::example()),
            Some(path) => Some(Teams::load(std::path::Path::new(path))?),
        };
        Ok(SimConfig {
            preset,
            seed: engine.seed,
            listen: self.listen,
            port: self.port,
            dcgm_port: self.dcgm_port,
            dcgm_interval: self.dcgm_interval,
            dialect,
            faults: faults.clone(),
            hostname: self.hostname.clone(),
            cluster,
            cluster_port: self.cluster_port,
            pod: None,
            gpu: None,
        })
    }

    /// Every replica's configuration (one unless `--replicas`), see [`crate::fleet::configs`].
    pub fn fleet(
        &self,
        engine: &EngineOptions,
        faults: &Faults,
    ) -> Result<Vec<SimConfig>, OptionsError> {
        let base = self.config(engine, faults)?;
        Ok(crate::fleet::configs(&base, self.replicas, self.share_gpu)?)
    }
}

fn set<T>(slot: &mut T, v: Option<T>) {
    if let Some(v) = v {
        *slot = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_and_bad_values_are_named() {
        let mut o = EngineOptions {
            max_num_seqs: Some(64),
            host_overhead: Some(Duration::from_millis(20)),
            ..EngineOptions::default()
        };
        let (p, _) = o.resolve().unwrap();
        assert_eq!(p.engine.max_num_seqs, 64);
        assert!((p.constants.host_step_s - 0.020).abs() < 1e-12);
        o.eta_bw = Some(1.5);
        assert!(
            o.resolve()
                .unwrap_err()
                .to_string()
                .contains("--eta-bw 1.5")
        );
        o.eta_bw = None;
        o.preset = "nope".into();
        assert!(matches!(
            o.resolve(),
            Err(OptionsError::UnknownPreset { .. })
        ));
    }
}
