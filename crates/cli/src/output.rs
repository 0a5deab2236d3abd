//! Where a diagnosed run goes: the store, the format on stdout, an HTML file, and the exit code
//! (`--format`, `--html`, `--fail-on`), shared by `run`, `diagnose` and `report`. The analysis
//! itself is `llmscope_ops::analysis`.

use anyhow::Result;
use llmscope_core::severity::FailOn;
use llmscope_diagnosis::Diagnosis;
use llmscope_ops::analysis::{Analysed, Format};
use std::io::IsTerminal;
use std::path::PathBuf;

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
    /// Also write the Markdown report here, its charts as SVG files in `<stem>-charts/` beside it.
    #[arg(long, value_name = "PATH", help_heading = "Output")]
    pub markdown: Option<PathBuf>,
    /// Exit 1 when a finding reaches this severity: never, info, warning, error or critical.
    #[arg(long, default_value = "never", value_parser = crate::args::fail_on, help_heading = "Output")]
    pub fail_on: FailOn,
}

impl ReportOutput {
    /// Refuses, before any work, an HTML path that is the store (or any database): written at
    /// the end, it would truncate every run after the minutes the run took.
    pub fn check(&self) -> Result<()> {
        let paths = [("--html", &self.html), ("--markdown", &self.markdown)];
        for (flag, path) in paths {
            let Some(path) = path else { continue };
            llmscope_store::guard::refuse_database(path)?;
            if path == &self.db {
                anyhow::bail!(
                    "refusing to write {}: it is the run store given by --db (an SQLite database); choose another {flag} path",
                    path.display()
                );
            }
        }
        Ok(())
    }

    /// Renders `a` under `title` and gives the exit code `--fail-on` asks for.
    pub fn finish(&self, a: &Analysed, title: &str) -> Result<std::process::ExitCode> {
        if let Some(path) = &self.html {
            a.write_html_file(title, path)?;
        }
        if let Some(path) = &self.markdown {
            a.write_markdown_file(title, path)?;
        }
        let stdout = std::io::stdout();
        let color = stdout.is_terminal();
        a.write(title, self.format.into(), &mut stdout.lock(), color)?;
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
