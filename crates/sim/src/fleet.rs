//! Several simulated replicas of one deployment (`llmscope sim --replicas N`), issue 25.
//!
//! Each replica is a whole [`crate::serve`] stack of its own — its engine thread, its
//! OpenAI-compatible port with `/metrics`, its dcgm-exporter page — named as a pod
//! (`vllm-0`, `vllm-1`, …) on its dcgm page, as dcgm-exporter `--kubernetes` names the pod
//! holding a GPU. Replicas get a GPU each, or with `--share-gpu` all time-slice **one** GPU
//! ([`SharedGpu`]): their steps' kernels take turns on it (each step's host part runs on its own
//! CPU, as two processes' would), so together they get one GPU's compute time, not N times it;
//! their KV pools must fit its memory together, and every replica's dcgm page
//! reads the same UUID and the GPU's combined activity — as time-sliced pods do on a real node.

use crate::serve::{SimConfig, SimError, SimHandle};
use crate::timeline::{GpuInterval, GpuTimeline};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One GPU time-sliced between engines: a turn for each step, and the activity of them all.
#[derive(Debug)]
pub struct SharedGpu {
    /// The common clock of the engines that share it (engine seconds count from here).
    pub(crate) epoch: Instant,
    /// When the GPU is next free, in seconds since `epoch`.
    free_at: Mutex<f64>,
    /// Every sharing engine's steps, for the dcgm pages.
    timeline: Mutex<GpuTimeline>,
    /// Framebuffer the sharing engines hold together (MiB).
    pub(crate) fb_used_mib: f64,
    /// The seed its UUID is drawn from (the first replica's), the same on every replica's page.
    pub(crate) uuid_seed: u64,
}

impl SharedGpu {
    pub fn new(fb_used_mib: f64, uuid_seed: u64) -> Self {
        Self {
            uuid_seed,
            epoch: Instant::now(),
            free_at: Mutex::new(0.0),
            timeline: Mutex::new(GpuTimeline::new(600.0)),
            fb_used_mib,
        }
    }

    /// Books the GPU for a step's kernels of `duration` wanted at `now`: they start when the
    /// GPU is free (at once, or after the kernels booked before them), and that start is
    /// returned. An engine books its next step only after its last one ended, so sharing
    /// engines alternate.
    pub fn take_turn(&self, now: f64, duration: f64) -> f64 {
        let mut free_at = self.free_at.lock().unwrap_or_else(|p| p.into_inner());
        let start = free_at.max(now);
        *free_at = start + duration;
        start
    }

    /// Records a step one of the sharing engines ran.
    pub fn record(&self, iv: GpuInterval) {
        self.timeline
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(iv);
    }

    /// Runs `f` on the combined timeline.
    pub fn with_timeline<T>(&self, f: impl FnOnce(&GpuTimeline) -> T) -> T {
        f(&self.timeline.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Why a fleet could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("--replicas must be at least 1")]
    NoReplicas,
    #[error(
        "{replicas} replicas sharing one {gpu} need {need_mib:.0} MiB of its {have_mib:.0} MiB \
         (each takes --gpu-memory-utilization {utilization} of it, plus its CUDA context and \
         graphs); give each --gpu-memory-utilization {fits:.2} or less"
    )]
    GpuMemory {
        replicas: u32,
        gpu: String,
        need_mib: f64,
        have_mib: f64,
        utilization: f64,
        fits: f64,
    },
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// The pod name of replica `i`: `vllm-<i>`.
pub fn pod_name(i: u32) -> String {
    format!("vllm-{i}")
}

/// Each replica's configuration: its own seed (so its own GPU UUID) and ports `port + i`
/// (0 stays 0: any free port), its pod named on its dcgm page, and with `share_gpu` one
/// [`SharedGpu`] for them all.
pub fn configs(
    base: &SimConfig,
    replicas: u32,
    share_gpu: bool,
) -> Result<Vec<SimConfig>, FleetError> {
    if replicas == 0 {
        return Err(FleetError::NoReplicas);
    }
    let gpu = if share_gpu && replicas > 1 {
        Some(Arc::new(shared_gpu(base, replicas)?))
    } else {
        None
    };
    let offset = |port: u16, i: u32| {
        if port == 0 {
            0
        } else {
            port.saturating_add(i as u16)
        }
    };
    Ok((0..replicas)
        .map(|i| {
            let mut c = base.clone();
            c.seed = base.seed.wrapping_add(u64::from(i));
            c.port = offset(base.port, i);
            c.dcgm_port = offset(base.dcgm_port, i);
            if replicas > 1 {
                c.pod = Some(["vllm".to_owned(), "default".to_owned(), pod_name(i)]);
            }
            c.gpu = gpu.clone();
            c
        })
        .collect())
}

/// The GPU the replicas share, refused when their memory does not fit it together.
fn shared_gpu(base: &SimConfig, replicas: u32) -> Result<SharedGpu, FleetError> {
    let engine = crate::engine::Engine::new(&base.preset, base.seed).map_err(SimError::from)?;
    let one = engine.memory.fb_used_mib;
    let have = base.preset.gpu.memory_mib;
    let need = one * f64::from(replicas);
    if need > have {
        let utilization = base.preset.engine.gpu_memory_utilization;
        let overhead = one - utilization * have;
        return Err(FleetError::GpuMemory {
            replicas,
            gpu: base.preset.gpu.model_name.to_owned(),
            need_mib: need,
            have_mib: have,
            utilization,
            fits: ((have / f64::from(replicas) - overhead) / have).max(0.0),
        });
    }
    Ok(SharedGpu::new(need, base.seed))
}

/// Starts every replica; on a failure the ones already started are stopped.
pub async fn start(cfgs: Vec<SimConfig>) -> Result<Vec<SimHandle>, SimError> {
    let mut up = Vec::with_capacity(cfgs.len());
    for cfg in cfgs {
        match crate::serve::start(cfg).await {
            Ok(h) => up.push(h),
            Err(e) => {
                for h in up {
                    h.shutdown().await;
                }
                return Err(e);
            }
        }
    }
    Ok(up)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_alternate_and_never_overlap() {
        let gpu = SharedGpu::new(0.0, 1);
        // Engine A books [0, 1); B, wanting the GPU at 0.5, waits for A's step to end.
        assert_eq!(gpu.take_turn(0.0, 1.0), 0.0);
        assert_eq!(gpu.take_turn(0.5, 1.0), 1.0);
        // A's next step, wanted when its first ended, comes after B's.
        assert_eq!(gpu.take_turn(1.0, 1.0), 2.0);
        // An idle GPU starts a step at once.
        assert_eq!(gpu.take_turn(10.0, 0.5), 10.0);
    }

    #[test]
    fn replicas_get_their_own_ports_seeds_and_pods_and_share_only_when_asked() {
        let mut base = SimConfig::new(crate::preset::preset("cpu-tiny").unwrap());
        base.port = 18000;
        let cfgs = configs(&base, 3, false).unwrap();
        let ports: Vec<u16> = cfgs.iter().map(|c| c.port).collect();
        assert_eq!(ports, [18000, 18001, 18002]);
        assert_eq!(cfgs[2].pod.as_ref().unwrap()[2], "vllm-2");
        assert!(cfgs.iter().all(|c| c.gpu.is_none()));
        assert_ne!(cfgs[0].seed, cfgs[1].seed);
        assert!(configs(&base, 0, false).is_err());
    }

    #[test]
    fn sharing_replicas_must_fit_the_gpu_together() {
        let mut base = SimConfig::new(crate::preset::preset("l4-qwen2.5-3b").unwrap());
        base.preset.engine.gpu_memory_utilization = 0.9;
        let err = configs(&base, 2, true).unwrap_err().to_string();
        assert!(err.contains("--gpu-memory-utilization"), "{err}");
        base.preset.engine.gpu_memory_utilization = 0.4;
        let cfgs = configs(&base, 2, true).unwrap();
        let gpu = cfgs[0].gpu.as_ref().unwrap();
        assert!(Arc::ptr_eq(gpu, cfgs[1].gpu.as_ref().unwrap()));
        assert!(gpu.fb_used_mib <= base.preset.gpu.memory_mib);
    }
}
