//! Where a diagnosed run goes: the store, the format on stdout, an HTML file, and the exit code
//! (`--format`, `--html`, `--fail-on`), shared by `run`, `diagnose` and `report`. The analysis
//! itself is `llmscope_ops::analysis`.

use anyhow::{Context, Result};
use llmscope_core::diagnose::Diagnosis;
use llmscope_core::severity::FailOn;
use llmscope_ops::analysis::{Analysed, Format};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Output formats of the reporting commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
    Markdown,
}

impl From<ReportFormat> for Format {
    fn from(f: ReportFormat) -> Format {
        match f {
            ReportFormat::Text => Format::Text,
            ReportFormat::Json => Format::Json,
            ReportFormat::Markdown => Format::Markdown,
        }
    }
}

/// Renders `a` to stdout in `format`, and to `html_path` if given.
pub fn render(
    a: &Analysed,
    title: &str,
    format: ReportFormat,
    html_path: Option<&Path>,
) -> Result<()> {
    if let Some(path) = html_path {
        let mut file = std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        );
        a.write_html(title, &mut file)
            .with_context(|| format!("writing {}", path.display()))?;
        file.flush()?;
    }
    let stdout = std::io::stdout();
    a.write(
        title,
        format.into(),
        &mut stdout.lock(),
        stdout.is_terminal(),
    )?;
    Ok(())
}

/// Where a diagnosed run goes, shared by `run`, `diagnose` and `report`: the store, the format on
/// stdout, an HTML file, and the exit code.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportOutput {
    /// Run store.
    #[arg(long, default_value = llmscope_store::DEFAULT_PATH, help_heading = "Output")]
    pub db: PathBuf,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text, help_heading = "Output")]
    pub format: ReportFormat,
    /// Also write a self-contained HTML report here.
    #[arg(long, help_heading = "Output")]
    pub html: Option<PathBuf>,
    /// Exit 1 when a finding reaches this severity: never, info, warning, error or critical.
    #[arg(long, default_value = "never", value_parser = crate::args::fail_on, help_heading = "Output")]
    pub fail_on: FailOn,
}

impl ReportOutput {
    /// Renders `a` under `title` and gives the exit code `--fail-on` asks for.
    pub fn finish(&self, a: &Analysed, title: &str) -> Result<std::process::ExitCode> {
        render(a, title, self.format, self.html.as_deref())?;
        Ok(exit_code(&a.diagnosis, self.fail_on))
    }
}

/// Exit 1 when a finding reaches `fail_on`.
pub fn exit_code(d: &Diagnosis, fail_on: FailOn) -> std::process::ExitCode {
    if fail_on.fails(d.findings.iter().map(|f| f.severity)) {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}
