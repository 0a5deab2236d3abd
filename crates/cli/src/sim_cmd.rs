//! `llmscope sim` (being built).
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct SimArgs {}

pub fn run(_args: SimArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("llmscope sim is not built yet")
}
