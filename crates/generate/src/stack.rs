//! What the artefacts are generated for: a [`Stack`] of sources — the serving engine, and
//! optionally the GPU exporter, the scheduler (Kueue) and kube-state-metrics — each an
//! [`EngineSpec`] (exporter at a version). A stack comes from explicit specs or from the names an
//! inventory exposes ([`Stack::detect`]); in the latter case only names really exposed are used.

use llmscope_catalog::detect::detect;
use llmscope_catalog::{EngineSpec, Exporter};
use std::collections::BTreeSet;

/// Why nothing can be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    #[error("`{0}` is not a serving engine llmscope generates for (supported: vllm)")]
    UnsupportedEngine(String),
    #[error("`{spec}` given as {role}, but it is a {actual}")]
    WrongRole {
        spec: String,
        role: &'static str,
        actual: &'static str,
    },
    #[error("{spec} exposes no series for {what}; cannot generate {needed_by}")]
    Missing {
        spec: String,
        what: &'static str,
        needed_by: &'static str,
    },
    #[error("no vLLM engine detected among the {0} exposed names")]
    NothingDetected(usize),
}

/// The sources a dashboard or rule file is generated for.
#[derive(Debug, Clone, PartialEq)]
pub struct Stack {
    pub engine: EngineSpec,
    pub gpu: Option<EngineSpec>,
    pub scheduler: Option<EngineSpec>,
    pub kube_state_metrics: Option<EngineSpec>,
    /// Names a live inventory exposes; when set, only these are queried.
    pub exposed: Option<BTreeSet<String>>,
}

impl Stack {
    /// A stack of one engine (checked to be a supported serving engine).
    pub fn new(engine: EngineSpec) -> Result<Stack, GenerateError> {
        if engine.exporter != Exporter::Vllm {
            return Err(GenerateError::UnsupportedEngine(engine.to_string()));
        }
        Ok(Stack {
            engine,
            gpu: None,
            scheduler: None,
            kube_state_metrics: None,
            exposed: None,
        })
    }

    /// Adds the GPU exporter (dcgm-exporter).
    pub fn with_gpu(mut self, gpu: EngineSpec) -> Result<Stack, GenerateError> {
        self.gpu = Some(role(gpu, Exporter::DcgmExporter, "--gpu")?);
        Ok(self)
    }

    /// Adds the scheduler (Kueue) and kube-state-metrics for per-team attribution.
    pub fn with_scheduler(mut self, kueue: EngineSpec) -> Result<Stack, GenerateError> {
        self.scheduler = Some(role(kueue, Exporter::Kueue, "--scheduler")?);
        let ksm = Exporter::KubeStateMetrics;
        self.kube_state_metrics = Some(EngineSpec::new(ksm, ksm.newest()));
        Ok(self)
    }

    /// The stack an inventory's names come from: the detected vLLM version, and dcgm-exporter,
    /// Kueue and kube-state-metrics when their names are there.
    pub fn detect(names: &BTreeSet<String>) -> Result<Stack, GenerateError> {
        let found = detect(names.iter().map(String::as_str));
        let spec = |e: Exporter| found.iter().find(|d| d.exporter == e).map(|d| d.spec());
        let engine = spec(Exporter::Vllm).ok_or(GenerateError::NothingDetected(names.len()))?;
        let mut stack = Stack::new(engine)?;
        stack.gpu = spec(Exporter::DcgmExporter);
        stack.scheduler = spec(Exporter::Kueue);
        stack.kube_state_metrics = spec(Exporter::KubeStateMetrics);
        stack.exposed = Some(names.clone());
        Ok(stack)
    }

    /// `vllm@0.26.0 + dcgm-exporter@4.5.3`, for titles and descriptions.
    pub fn describe(&self) -> String {
        [Some(self.engine), self.gpu, self.scheduler]
            .iter()
            .flatten()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

fn role(spec: EngineSpec, want: Exporter, flag: &'static str) -> Result<EngineSpec, GenerateError> {
    if spec.exporter == want {
        return Ok(spec);
    }
    Err(GenerateError::WrongRole {
        spec: spec.to_string(),
        role: flag,
        actual: spec.exporter.name(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> EngineSpec {
        s.parse().unwrap()
    }

    #[test]
    fn only_vllm_engines_and_the_right_exporter_per_role() {
        assert!(Stack::new(spec("vllm@0.26")).is_ok());
        assert!(matches!(
            Stack::new(spec("tgi@3.3")),
            Err(GenerateError::UnsupportedEngine(_))
        ));
        let s = Stack::new(spec("vllm@0.26")).unwrap();
        assert!(matches!(
            s.clone().with_gpu(spec("kueue@0.19")),
            Err(GenerateError::WrongRole { .. })
        ));
        let s = s.with_gpu(spec("dcgm-exporter@4.5")).unwrap();
        assert_eq!(s.describe(), "vllm@0.26.0 + dcgm-exporter@4.5.0");
    }

    #[test]
    fn detection_reads_the_engine_from_exposed_names() {
        let names: BTreeSet<String> = [
            "vllm:num_requests_running",
            "vllm:gpu_cache_usage_perc",
            "vllm:time_per_output_token_seconds_bucket",
            "DCGM_FI_DEV_GPU_UTIL",
        ]
        .map(String::from)
        .into();
        let s = Stack::detect(&names).unwrap();
        assert_eq!(s.engine.exporter, Exporter::Vllm);
        assert!(s.gpu.is_some());
        assert!(s.exposed.is_some());
        let none = BTreeSet::from(["up".to_owned()]);
        assert_eq!(Stack::detect(&none), Err(GenerateError::NothingDetected(1)));
    }
}
