//! dcgm-exporter emulation, the pure part: what each DCGM field reads at a collection instant.
//!
//! dcgm-exporter does no aggregation: every `--collect-interval` (30 s by default) it reads DCGM's
//! latest value of each field and serves that until the next collection
//! (`docs/SOURCES.md` §dcgm). The fields are derived from the engine's GPU
//! timeline the way NVML/DCGM define them (`docs/SOURCES.md` §sim-model):
//! - `GPU_UTIL`: % of the last NVML sample period (1/6–1 s) with a kernel running;
//! - `MEM_COPY_UTIL`: memory traffic over that period as % of peak bandwidth;
//! - `PROF_*` ratios (0..1) averaged over the collection interval;
//! - `POWER_USAGE`: idle + (TDP − idle) × activity, with a first-order lag; energy integrates it;
//! - `FB_USED`/`FB_FREE`: constant after start-up (vLLM preallocates its KV pool).
//!
//! Because values change only at collection instants, the lag between dcgm and vLLM edges in
//! scraped data *emerges* from the interval, as it does on real clusters.

use crate::engine::Engine;
use crate::timeline::GpuTimeline;

/// One collection of every emitted field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DcgmReading {
    pub gpu_util: i64,
    pub mem_copy_util: i64,
    pub gr_engine_active: f64,
    pub pipe_tensor_active: f64,
    pub dram_active: f64,
    pub power_w: f64,
    pub energy_mj: i64,
    pub fb_used_mib: i64,
    pub fb_free_mib: i64,
    pub fb_reserved_mib: i64,
    pub gpu_temp_c: i64,
    pub memory_temp_c: i64,
    pub sm_clock_mhz: i64,
    pub mem_clock_mhz: i64,
    pub pcie_tx_bytes: f64,
    pub pcie_rx_bytes: f64,
}

/// Power and energy carry state between collections.
#[derive(Debug, Clone, PartialEq)]
pub struct DcgmState {
    power_w: f64,
    energy_mj: f64,
    last_t: Option<f64>,
}

impl DcgmState {
    pub fn new(engine: &Engine) -> Self {
        Self {
            power_w: engine.gpu.idle_w,
            energy_mj: 0.0,
            last_t: None,
        }
    }

    /// Reads every field at engine time `now`, for a collection interval of `interval_s`.
    pub fn collect(&mut self, engine: &Engine, now: f64, interval_s: f64) -> DcgmReading {
        let fb = engine.memory.fb_used_mib;
        self.collect_on(engine, &engine.timeline, fb, now, interval_s)
    }

    /// [`DcgmState::collect`] for a GPU whose activity is `timeline` and whose framebuffer holds
    /// `fb_used_mib` — several engines' when they time-slice it (`crate::fleet::SharedGpu`).
    pub fn collect_on(
        &mut self,
        engine: &Engine,
        timeline: &GpuTimeline,
        fb_used_mib: f64,
        now: f64,
        interval_s: f64,
    ) -> DcgmReading {
        let g = &engine.gpu;
        let window = g.nvml_window_s;
        let short = timeline.activity(now - window, now);
        let long = timeline.activity(now - interval_s, now);
        let interval = interval_s.max(1e-9);
        self.advance_power(engine, timeline, now);
        let busy_frac = (short.busy_s / window).clamp(0.0, 1.0);
        let copy_frac = (short.bytes / (g.bandwidth * window)).clamp(0.0, 1.0);
        let fb_used = fb_used_mib.min(g.memory_mib).floor();
        DcgmReading {
            gpu_util: (busy_frac * 100.0).round() as i64,
            mem_copy_util: (copy_frac * 100.0).round() as i64,
            gr_engine_active: (long.busy_s / interval).clamp(0.0, 1.0),
            pipe_tensor_active: (long.flops / (g.peak_flops * interval)).clamp(0.0, 1.0),
            dram_active: (long.bytes / (g.bandwidth * interval)).clamp(0.0, 0.8),
            power_w: self.power_w,
            energy_mj: self.energy_mj as i64 + 1_000_000_000,
            fb_used_mib: fb_used as i64,
            fb_free_mib: (g.memory_mib - fb_used) as i64,
            fb_reserved_mib: g.reserved_mib as i64,
            gpu_temp_c: (32.0 + 38.0 * self.power_w / g.tdp_w).round() as i64,
            memory_temp_c: (30.0 + 40.0 * self.power_w / g.tdp_w).round() as i64,
            sm_clock_mhz: g.sm_clock_mhz as i64,
            mem_clock_mhz: g.mem_clock_mhz as i64,
            // Token ids in, sampled ids out: small but non-zero PCIe traffic while busy.
            pcie_tx_bytes: (long.busy_s / interval) * 2.0e6,
            pcie_rx_bytes: (long.busy_s / interval) * 4.0e6,
        }
    }

    /// Power at `now`: the instantaneous draw over the last second, smoothed by the sensor lag;
    /// energy integrates it since the last collection.
    fn advance_power(&mut self, engine: &Engine, timeline: &GpuTimeline, now: f64) {
        let (g, k) = (&engine.gpu, &engine.k);
        let sec = timeline.activity(now - 1.0, now);
        let target = g.idle_w
            + (g.tdp_w - g.idle_w)
                * (k.power_busy_base * sec.busy_s + k.power_busy_span * sec.compute_weighted_s);
        let dt = self.last_t.map_or(0.0, |t| (now - t).max(0.0));
        let prev = self.power_w;
        self.power_w = if self.last_t.is_none() {
            target
        } else {
            target + (prev - target) * (-dt / k.power_tau_s).exp()
        };
        self.energy_mj += (prev + self.power_w) / 2.0 * dt * 1000.0;
        self.last_t = Some(now);
    }
}
