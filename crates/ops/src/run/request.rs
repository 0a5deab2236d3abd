//! From what a user asked `run` to do to a [`RunPlan`]: where the load goes and where the
//! metrics come from — the simulated stack (started here) without a target, else Prometheus,
//! else the target's pages scraped directly — and the load itself, resolved before the run
//! starts so a bad flag, an unreachable target or a missing model fail before the baseline.

use super::{Narrator, RunPlan};
use crate::OpsError;
use llmscope_collect::prom::PromClient;
use llmscope_collect::scrape::ScrapeTarget;
use llmscope_collect::url::redact;
use llmscope_core::duration::format_duration;
use llmscope_loadgen::{LoadPlan, LoadSpec, Secret, TokenSpec, TraceSpec};
use llmscope_sim::metrics::Dialect;
use llmscope_sim::options::EngineOptions;
use llmscope_sim::preset::Preset;
use llmscope_sim::serve::{self, SimConfig, SimHandle};
use std::path::PathBuf;
use std::time::Duration;

/// The reference prompt of `docs/METHOD.md` (a short Korean chat prompt, ~30 tokens).
pub const REFERENCE_PROMPT: &str = "쿠버네티스 스케줄러가 Pod를 배치하는 과정을 자세히 설명해줘.";

/// What `run` was asked to do (`llmscope run`'s flags, or any front end's).
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Base URL of an OpenAI-compatible server; `None` starts the simulated stack.
    pub target: Option<String>,
    /// The engine's metrics URL [default: TARGET/metrics].
    pub metrics_url: Option<String>,
    /// GPU metrics (dcgm-exporter) URLs.
    pub gpu_metrics: Vec<String>,
    /// With `prometheus`: label matchers of the deployment under test.
    pub matchers: Vec<String>,
    /// Where the window is read after the load, with its URL as shown (secrets redacted).
    pub prometheus: Option<(PromClient, String)>,
    /// The simulated engine (preset and overrides); its engine flags also describe a real one.
    pub engine: EngineOptions,
    pub concurrency: u32,
    pub rate: Option<f64>,
    pub duration: Duration,
    pub baseline: Duration,
    /// Prompt text [default: the reference prompt], or synthetic prompts of `input_tokens`.
    pub prompt: Option<String>,
    pub input_tokens: Option<TokenSpec>,
    pub output_tokens: Option<u32>,
    pub max_tokens: u32,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub interval: Duration,
    /// dcgm-exporter's collect interval (the simulated one's, or the real one's).
    pub dcgm_interval: Option<Duration>,
    pub drain_timeout: Duration,
    pub db: PathBuf,
    /// How requests reuse prompts: a shared prefix, multi-turn sessions.
    pub workload: Workload,
}

/// The shape of a run's traffic beyond one prompt: shared prefixes and sessions
/// (`--shared-prefix`, `--prefix-groups`, `--turns`, `--think-time`: what the prefix cache sees),
/// or a trace replayed (`--trace`: its arrivals and lengths).
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub shared_prefix: Option<u32>,
    pub prefix_groups: u32,
    pub turns: Option<u32>,
    pub think_time: Duration,
    pub trace: Option<TraceSpec>,
    /// Sampling temperature sent with every request (`--temperature`); `None`: the server's.
    pub temperature: Option<f64>,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            shared_prefix: None,
            prefix_groups: 1,
            turns: None,
            think_time: Duration::ZERO,
            trace: None,
            temperature: None,
        }
    }
}

/// Where `run` sends load and reads metrics.
struct Targets {
    sim: Option<SimHandle>,
    target: String,
    scrape: Vec<ScrapeTarget>,
    max_num_seqs: Option<u32>,
    max_num_batched_tokens: Option<u32>,
    context: Vec<String>,
    after: Duration,
}

fn invalid(why: &str) -> OpsError {
    OpsError::Invalid(why.to_owned())
}

impl RunRequest {
    /// The plan `execute` carries out, and the simulated stack when it was started (shut it
    /// down when done). Refuses a load the open-file limit cannot carry.
    pub async fn resolve(
        &self,
        n: &dyn Narrator,
    ) -> Result<(RunPlan, Option<SimHandle>), OpsError> {
        self.warn_if_short(n);
        // Against the in-process simulator both ends of every connection are ours.
        let per_connection = if self.target.is_none() { 2 } else { 1 };
        fd_preflight(u64::from(self.concurrency), per_connection)?;
        let t = self.targets(n).await?;
        Ok(self.plan(t))
    }

    fn warn_if_short(&self, n: &dyn Narrator) {
        if self.duration < self.interval * 8 {
            n.warn(&format!(
                "--duration {} is under 8 scrape intervals ({}): scrapes miss short bursts; the steady window may be too short to judge",
                format_duration(self.duration),
                format_duration(self.interval * 8)
            ));
        }
    }

    /// The plan on `t`, and the simulated stack when it was started.
    fn plan(&self, t: Targets) -> (RunPlan, Option<SimHandle>) {
        let plan = RunPlan {
            kind: "run",
            config: self.config_json(&t),
            target: t.target,
            scrape: t.scrape,
            prom: self.prometheus.clone(),
            matchers: self.matchers.clone(),
            simulated: t.sim.is_some(),
            max_num_seqs: t.max_num_seqs,
            max_num_batched_tokens: t.max_num_batched_tokens,
            concurrency: self.concurrency,
            rate: self.rate,
            baseline: self.baseline,
            duration: self.duration,
            interval: self.interval,
            drain_timeout: self.drain_timeout,
            after: t.after,
            context: t.context,
            db: self.db.clone(),
        };
        (plan, t.sim)
    }

    /// The simulated stack without a target, else Prometheus, else the pages scraped.
    async fn targets(&self, n: &dyn Narrator) -> Result<Targets, OpsError> {
        // The engine flags are checked whatever the target (they describe the simulated one).
        let (preset, dialect) = self.engine.resolve()?;
        let Some(target) = &self.target else {
            return self.simulated(preset, dialect, n).await;
        };
        let base = target
            .trim_end_matches('/')
            .trim_end_matches("/v1")
            .to_owned();
        // dcgm values lag by up to one collect interval: observe long enough to see them fall.
        let after = self.dcgm_interval.unwrap_or(Duration::from_secs(30)) + Duration::from_secs(5);
        match &self.prometheus {
            Some((_, url)) => self.through_prometheus(base, url, after),
            None => self.scraped(base, after),
        }
    }

    /// No target: the simulated stack, started in-process.
    async fn simulated(
        &self,
        preset: Preset,
        dialect: Dialect,
        n: &dyn Narrator,
    ) -> Result<Targets, OpsError> {
        if self.prometheus.is_some() {
            return Err(invalid(
                "--prometheus reads a real deployment's window: give the server with --target (the simulated stack is scraped directly)",
            ));
        }
        let dcgm_interval = self.dcgm_interval.unwrap_or(Duration::from_secs(5));
        let sim = self
            .start_simulator(&preset, dialect, dcgm_interval)
            .await?;
        n.say(&format!(
            "no --target: running against the simulated stack at {} ({} on {}, --max-num-seqs {}, dcgm every {}) — simulated, not real hardware",
            sim.vllm_url(),
            preset.model.id,
            preset.gpu.model_name,
            preset.engine.max_num_seqs,
            format_duration(dcgm_interval)
        ));
        Ok(Targets {
            target: sim.vllm_url(),
            scrape: simulated_scrape(&sim)?,
            context: simulated_context(&sim, &preset, dialect),
            max_num_seqs: Some(preset.engine.max_num_seqs),
            max_num_batched_tokens: Some(preset.engine.max_num_batched_tokens),
            sim: Some(sim),
            // dcgm values lag by up to one collect interval: observe long enough to see them fall.
            after: (dcgm_interval * 2).max(Duration::from_secs(5)),
        })
    }

    /// The simulated stack, seeded as asked, its dcgm collecting every `dcgm_interval`.
    async fn start_simulator(
        &self,
        preset: &Preset,
        dialect: Dialect,
        dcgm_interval: Duration,
    ) -> Result<SimHandle, OpsError> {
        let mut cfg = SimConfig::new(preset.clone());
        cfg.seed = self.engine.seed;
        cfg.dialect = dialect;
        cfg.dcgm_interval = dcgm_interval;
        Ok(serve::start(cfg).await?)
    }

    /// Prometheus: nothing is scraped; the window is read from it after the load.
    fn through_prometheus(
        &self,
        base: String,
        url: &str,
        after: Duration,
    ) -> Result<Targets, OpsError> {
        if self.metrics_url.is_some() || !self.gpu_metrics.is_empty() {
            return Err(invalid(
                "with --prometheus the window is read from Prometheus: drop --metrics-url and --gpu-metrics (or drop --prometheus to scrape them directly)",
            ));
        }
        let mut context = vec![
            format!("target {base}"),
            format!(
                "series read from Prometheus {url} after the load, step {}",
                format_duration(self.interval)
            ),
        ];
        context.extend(self.matchers.iter().map(|m| format!("matchers {m}")));
        // Prometheus stores a scrape a moment after it happens: one more interval.
        Ok(self.real(base, Vec::new(), context, after + self.interval))
    }

    /// The target's own pages (and the GPU exporters'), scraped directly for the whole run.
    fn scraped(&self, base: String, after: Duration) -> Result<Targets, OpsError> {
        if !self.matchers.is_empty() {
            return Err(invalid(
                "--match narrows what is read from Prometheus: it needs --prometheus",
            ));
        }
        let metrics = self
            .metrics_url
            .clone()
            .unwrap_or_else(|| format!("{base}/metrics"));
        let scrape = self.scrape_targets(&metrics)?;
        let mut context = vec![
            format!("target {base}"),
            format!("engine metrics {metrics}"),
        ];
        if !self.gpu_metrics.is_empty() {
            return Ok(self.real(base, scrape, context, after));
        }
        context.push(NO_GPU_METRICS.to_owned());
        // Without a GPU exporter there is no dcgm lag to wait out: a few scrapes show the fall.
        let after = (self.interval * 5).max(Duration::from_secs(2));
        Ok(self.real(base, scrape, context, after))
    }

    /// A real server's targets: its engine flags as given.
    fn real(
        &self,
        target: String,
        scrape: Vec<ScrapeTarget>,
        context: Vec<String>,
        after: Duration,
    ) -> Targets {
        Targets {
            sim: None,
            target,
            scrape,
            max_num_seqs: self.engine.max_num_seqs,
            max_num_batched_tokens: self.engine.max_num_batched_tokens,
            context,
            after,
        }
    }

    /// The engine's page, then each GPU exporter's (`gpu0`, `gpu1`, …).
    fn scrape_targets(&self, metrics: &str) -> Result<Vec<ScrapeTarget>, OpsError> {
        let mut scrape = vec![target_arg(&format!("engine={metrics}"))?];
        for (i, g) in self.gpu_metrics.iter().enumerate() {
            scrape.push(target_arg(&format!("gpu{i}={g}"))?);
        }
        Ok(scrape)
    }

    /// The configuration as stored with the run: no secrets.
    fn config_json(&self, t: &Targets) -> serde_json::Value {
        let scrape: Vec<String> = t
            .scrape
            .iter()
            .map(|s| format!("{}={}", s.name, redact(&s.uri.to_string())))
            .collect();
        serde_json::json!({
            "target": t.target,
            "scrape": scrape,
            "simulated": t.sim.is_some(),
            "prometheus": self.prometheus.as_ref().map(|(_, url)| url),
            "match": self.matchers,
            "preset": self.engine.preset,
            "max_num_seqs": t.max_num_seqs,
            "concurrency": self.concurrency,
            "rate": self.rate,
            "duration_s": self.duration.as_secs_f64(),
            "baseline_s": self.baseline.as_secs_f64(),
            "interval_s": self.interval.as_secs_f64(),
            "max_tokens": self.max_tokens,
            "shared_prefix": self.workload.shared_prefix,
            "prefix_groups": self.workload.shared_prefix.map(|_| self.workload.prefix_groups),
            "turns": self.workload.turns,
            "think_time_s": self.workload.turns.map(|_| self.workload.think_time.as_secs_f64()),
            "temperature": self.workload.temperature,
            "trace": self.workload.trace.as_ref().map(|t| serde_json::json!({
                "path": t.path.display().to_string(),
                "format": format!("{:?}", t.format).to_lowercase(),
                "time_scale": t.time_scale,
                "from_s": t.from,
                "to_s": t.to,
            })),
            "api_key": self.api_key.as_ref().map(|_| "<redacted>"),
            "rerun": t.sim.is_some().then(|| self.rerun_json()),
        })
    }

    /// What the simulated stack and its load need beyond the fields above to run again
    /// (`whatif --confirm`): the engine options whole, the prompt and the token shapes.
    fn rerun_json(&self) -> serde_json::Value {
        serde_json::json!({
            "engine": self.engine,
            "prompt": self.prompt,
            "input_tokens": self.input_tokens.map(|t| t.to_string()),
            "output_tokens": self.output_tokens,
            "model": self.model,
            "dcgm_interval_s": self.dcgm_interval.map(|d| d.as_secs_f64()),
            "drain_timeout_s": self.drain_timeout.as_secs_f64(),
        })
    }

    /// The request a run on the simulated stack was made with, from its stored configuration,
    /// for the store at `db`; an error naming the run where it was not one.
    pub fn rerun(
        run: i64,
        config: &serde_json::Value,
        db: PathBuf,
    ) -> Result<RunRequest, OpsError> {
        let not = |why: &str| {
            invalid(&format!(
                "run {run} cannot be run again here ({why}): --confirm measures where llmscope runs the server, the simulated stack; against a real server make the change and `llmscope run` again, then `llmscope compare`"
            ))
        };
        let rerun = config
            .get("rerun")
            .filter(|r| r.is_object())
            .ok_or_else(|| {
                not("it did not run on the simulated stack, or an older llmscope stored it")
            })?;
        if config.get("trace").is_some_and(|t| !t.is_null()) {
            return Err(not("it replayed a trace"));
        }
        let engine: EngineOptions = serde_json::from_value(rerun["engine"].clone())
            .map_err(|e| not(&format!("its engine options do not read back: {e}")))?;
        let f = |k: &str| config.get(k).and_then(serde_json::Value::as_f64);
        let secs = |v: Option<f64>| v.map(Duration::from_secs_f64);
        let need = |k: &str| f(k).ok_or_else(|| not(&format!("its `{k}` is not stored")));
        let input_tokens = match rerun["input_tokens"].as_str() {
            Some(t) => Some(
                t.parse()
                    .map_err(|_| not("its --input-tokens do not read back"))?,
            ),
            None => None,
        };
        let turns = f("turns").map(|t| t as u32);
        Ok(RunRequest {
            target: None,
            metrics_url: None,
            gpu_metrics: Vec::new(),
            matchers: Vec::new(),
            prometheus: None,
            engine,
            concurrency: need("concurrency")? as u32,
            rate: f("rate"),
            duration: Duration::from_secs_f64(need("duration_s")?),
            baseline: Duration::from_secs_f64(need("baseline_s")?),
            prompt: rerun["prompt"].as_str().map(str::to_owned),
            input_tokens,
            output_tokens: rerun["output_tokens"].as_u64().map(|t| t as u32),
            max_tokens: need("max_tokens")? as u32,
            model: rerun["model"].as_str().map(str::to_owned),
            api_key: None,
            interval: Duration::from_secs_f64(need("interval_s")?),
            dcgm_interval: secs(rerun["dcgm_interval_s"].as_f64()),
            drain_timeout: secs(rerun["drain_timeout_s"].as_f64())
                .unwrap_or(Duration::from_secs(60)),
            db,
            workload: Workload {
                shared_prefix: f("shared_prefix").map(|p| p as u32),
                prefix_groups: f("prefix_groups").map_or(1, |g| g as u32),
                turns,
                think_time: secs(f("think_time_s")).unwrap_or(Duration::ZERO),
                trace: None,
                temperature: f("temperature"),
            },
        })
    }

    /// Resolves the load against `target` before the run starts; its notes go to `n`.
    pub async fn prepare_load(&self, target: &str, n: &dyn Narrator) -> Result<LoadPlan, OpsError> {
        let prompt = self
            .prompt
            .clone()
            .unwrap_or_else(|| REFERENCE_PROMPT.to_owned());
        let spec = LoadSpec {
            target: target.to_owned(),
            model: self.model.clone(),
            api_key: self.api_key.clone().map(Secret::new),
            concurrency: vec![self.concurrency],
            rate: self.rate.into_iter().collect(),
            duration: Some(self.duration),
            prompt: Some(prompt).filter(|_| self.input_tokens.is_none()),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            // --output-tokens sets max_tokens itself (with ignore_eos).
            max_tokens: self.output_tokens.is_none().then_some(self.max_tokens),
            seed: self.engine.seed,
            grace: Duration::from_secs(60),
            shared_prefix: self.workload.shared_prefix,
            prefix_groups: self.workload.prefix_groups,
            turns: self.workload.turns,
            think_time: self.workload.think_time,
            temperature: self.workload.temperature,
            ..LoadSpec::default()
        };
        let spec = match &self.workload.trace {
            // A trace says when each request comes and how long it is.
            Some(trace) => LoadSpec {
                trace: Some(trace.clone()),
                prompt: None,
                input_tokens: None,
                output_tokens: None,
                max_tokens: None,
                ..spec
            },
            None => spec,
        };
        let plan = llmscope_loadgen::resolve(&spec).await?;
        for note in &plan.notes {
            n.note(note);
        }
        Ok(plan)
    }
}

const NO_GPU_METRICS: &str = "no --gpu-metrics: GPU utilisation is unknown, so GPU-bound verdicts cannot be made (batch-limit, KV-cache and load verdicts still can)";

/// The simulated stack's pages, scraped for the whole run.
fn simulated_scrape(sim: &SimHandle) -> Result<Vec<ScrapeTarget>, OpsError> {
    Ok(vec![
        target_arg(&format!("vllm={}/metrics", sim.vllm_url()))?,
        target_arg(&format!("dcgm={}", sim.dcgm_url()))?,
    ])
}

/// What the report says of the simulated stack.
fn simulated_context(sim: &SimHandle, preset: &Preset, dialect: Dialect) -> Vec<String> {
    vec![
        format!(
            "simulated vLLM {dialect} ({}) at {}",
            preset.model.id,
            sim.vllm_url()
        ),
        format!(
            "simulated dcgm-exporter ({}) at {}",
            preset.gpu.model_name,
            sim.dcgm_url()
        ),
    ]
}

fn target_arg(text: &str) -> Result<ScrapeTarget, OpsError> {
    text.parse::<ScrapeTarget>()
        .map_err(|e| OpsError::Invalid(e.to_string()))
}

/// Raises the open-file limit to the hard limit and refuses `connections` (at `per_connection`
/// descriptors each) it cannot carry, with the numbers (issue 12, point 6: the client's own
/// exhaustion was counted as the server's connect errors).
pub fn fd_preflight(connections: u64, per_connection: u64) -> Result<(), OpsError> {
    use llmscope_loadgen::limits::{check_fds, raise_fd_limit};
    let limit = raise_fd_limit()?;
    check_fds(connections, per_connection, &limit)?;
    Ok(())
}
