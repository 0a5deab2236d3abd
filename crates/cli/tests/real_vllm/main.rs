//! The real-engine tier: `llmscope` against a real vLLM 0.32.0 (its CPU build, a tiny
//! random-weight model; `scripts/real-vllm.sh`), on loopback.
//!
//! The regime matrix of issue 22: each server configuration (`--max-num-seqs` 2…32, a small
//! token budget, a scarce KV pool) starts once (start-up costs ~40–80 s) and its cells — clients
//! at ½, 1, 2 and 4× the cap, short and long answers — run one after the other on it, with short
//! windows. Each cell's expected verdict comes from [`oracle`], which scrapes vLLM's own
//! `/metrics` beside the run and applies the method to the engine's numbers, never to llmscope's. The tests share a lock: one engine at a time, because the
//! engine takes both cores. This binary is apart from `tests/cli` so that no other test shares the
//! cores with the engine while it is measured.
//!
//! Without the install (`scripts/real-vllm.sh install`) the tests say they skipped; with
//! `CI=true` they fail, naming the command that installs it.
#![allow(clippy::print_stderr)] // a tier's verdicts and skips are said on stderr

#[path = "../balancer/mod.rs"]
mod balancer;
mod capacity;
mod fleet;
mod matrix;
mod oracle;
mod whatif;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

static ENGINE: Mutex<()> = Mutex::new(());

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/real-vllm.sh")
}

/// Whether the tier is installed; in CI its absence is a failure, elsewhere a skip.
fn installed(test: &str) -> bool {
    let status = Command::new("bash")
        .arg(script())
        .arg("status")
        .output()
        .expect("run scripts/real-vllm.sh status");
    if status.status.success() {
        return true;
    }
    let why = String::from_utf8_lossy(&status.stdout);
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "the real vLLM tier is not installed ({why}); `scripts/real-vllm.sh install` sets it up (.ci/run calls it)"
        );
    }
    eprintln!("skipped {test}: the real vLLM tier is not installed ({why})");
    false
}

/// A real vLLM server, stopped when dropped.
struct Server {
    name: String,
    port: u16,
}

impl Server {
    fn start(config: &str, args: &[&str]) -> Server {
        Server::start_with(config, args, &[])
    }

    /// [`Server::start`] with more environment for vLLM (`VLLM_CPU_OMP_THREADS_BIND`, …).
    fn start_with(config: &str, args: &[&str], env: &[(&str, &str)]) -> Server {
        let name = format!("t{}-{config}", std::process::id());
        // The script refuses a port that something already answers on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let out = Command::new("bash")
            .arg(script())
            .args(["start", &name, "--port", &port.to_string()])
            .args(args)
            .envs(env.iter().copied())
            .output()
            .expect("run scripts/real-vllm.sh start");
        assert!(
            out.status.success(),
            "vLLM ({config}) did not start:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
        let server = Server { name, port };
        server.deprioritise_engine();
        server.warm_up();
        server
    }

    /// Its engine's processes to nice 19 (`scripts/real-vllm.sh deprioritise`): the API server
    /// and the load client first, as on a host whose engine runs on a GPU. At equal priority on
    /// 2 cores the engine's spinning worker starved both: the client read first tokens 45–333 ms
    /// after they arrived, 6–10 of 16 requests waited in the API server beside an engine with
    /// room, and one load measured 700 or 1,700 tok/s a minute apart (docs/SOURCES.md §17).
    fn deprioritise_engine(&self) {
        let out = Command::new("bash")
            .arg(script())
            .args(["deprioritise", &self.name])
            .output()
            .expect("run scripts/real-vllm.sh deprioritise");
        assert!(
            out.status.success(),
            "deprioritise {}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
    }

    /// Load the fresh server once before any regime is measured, as every benchmark tool does
    /// (`--warmup`): on the CPU build the first seconds under load run cold (kernels chosen and
    /// cached, pages of a 5.5 GB install faulted in), and in a fresh CI machine that first
    /// regime saw the engine empty in 6 of 17 scrapes while 30 requests were in flight at the
    /// client — not the steady regime the test is about.
    fn warm_up(&self) {
        let url = self.url();
        let out = llmscope(&[
            "load",
            "--target",
            &url,
            "--concurrency",
            "16",
            "--duration",
            "6s",
            "--max-tokens",
            "32",
        ]);
        assert!(
            out.status.success(),
            "warming vLLM up failed:\n{}",
            text(&out)
        );
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .args(["stop", &self.name])
            .output();
    }
}

fn llmscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_llmscope"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("run llmscope")
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The regimes of one server, each judged and all reported before any assertion fails.
#[derive(Default)]
struct Checks(Vec<String>);

impl Checks {
    fn expect(&mut self, what: &str, ok: bool, detail: impl FnOnce() -> String) {
        eprintln!("{} {what}", if ok { "ok  " } else { "FAIL" });
        if !ok {
            self.0.push(format!("{what}\n{}", detail()));
        }
    }

    fn done(self) {
        assert!(self.0.is_empty(), "{}", self.0.join("\n\n"));
    }
}

fn recommendations(report: &Value) -> String {
    report["recommendations"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .map(|r| format!("{} ({})", r["action"], r["reason"]))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
