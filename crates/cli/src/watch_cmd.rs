//! `llmscope watch`: parses the flags and runs `llmscope_watch::service`.

use crate::prom_flags::PromConnection;
use anyhow::Result;
use llmscope_watch::options::WatchOptions;
use llmscope_watch::service::{self, LineReporter};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  llmscope watch --prometheus http://prometheus:9090 --rules alerts.yaml --dashboards vllm.json
  llmscope watch --prometheus http://mimir/prometheus --header 'X-Scope-OrgID: llm' --shard 0/3
  llmscope watch --prometheus http://127.0.0.1:9090 --once --window 30m")]
pub struct WatchArgs {
    /// Prometheus-compatible server URL, with any path prefix (Mimir: …/prometheus).
    #[arg(long, value_name = "URL")]
    prometheus: String,
    #[command(flatten)]
    conn: PromConnection,
    #[command(flatten)]
    opts: WatchOptions,
}

pub fn run(args: WatchArgs) -> Result<ExitCode> {
    let svc = args
        .opts
        .plan(llmscope_collect::url::redact(&args.prometheus))?;
    let client = args.conn.client(&args.prometheus)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if args.opts.once {
        let e = rt.block_on(service::once(&client, &svc))?;
        e.write(&args.opts.format, &mut std::io::stdout().lock())?;
        return Ok(ExitCode::from(u8::from(e.needs_attention())));
    }
    rt.block_on(async {
        let (listener, addr) = llmscope_watch::serve::bind(&args.opts.listen).await?;
        eprintln!("{}", svc.banner(addr));
        let lines = LineReporter(std::io::stderr());
        // Ctrl-C or SIGTERM (what Kubernetes sends to stop a pod).
        let stop = crate::signals::on_shutdown();
        service::run(client, svc, listener, lines, async move {
            stop.cancelled().await
        })
        .await
    })?;
    Ok(ExitCode::SUCCESS)
}
