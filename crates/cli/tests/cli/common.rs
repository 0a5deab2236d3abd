//! What every CLI test needs: the binary as a child process, its JSON, free ports, children that
//! die with the test, and a real Prometheus that is known to have scraped before a test reads it.

pub use llmscope_collect::testing::{RealPrometheus, job};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

/// `llmscope ARGS…` to completion, without the developer's `OPENAI_API_KEY`.
pub fn llmscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_llmscope"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("run llmscope")
}

/// stdout as JSON, or a panic showing both streams.
pub fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A fresh directory under the system temp dir, unique to this process and `name`.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("llmscope-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Kills the child when the test ends, however it ends.
pub struct Reaper(pub Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// `llmscope sim ARGS…` in the background; killed on drop.
pub fn start_sim(args: &[&str]) -> Reaper {
    let child = Command::new(env!("CARGO_BIN_EXE_llmscope"))
        .arg("sim")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Reaper(child)
}

/// `llmscope sim` on free ports with dcgm collecting every `dcgm_interval` (and `extra` flags):
/// the child (killed on drop) and its vLLM and dcgm `host:port`s.
pub fn sim_on_free_ports(dcgm_interval: &str, extra: &[&str]) -> (Reaper, String, String) {
    let (vllm, dcgm) = (free_port().to_string(), free_port().to_string());
    let mut args = vec![
        "--dcgm-interval",
        dcgm_interval,
        "--port",
        &vllm,
        "--dcgm-port",
        &dcgm,
    ];
    args.extend_from_slice(extra);
    let child = start_sim(&args);
    (
        child,
        format!("127.0.0.1:{vllm}"),
        format!("127.0.0.1:{dcgm}"),
    )
}

/// `llmscope load` of `concurrency` closed-loop workers on the server at `host_port` for
/// `duration`; fails the test if the load fails.
pub fn put_load(host_port: &str, concurrency: &str, duration: &str) {
    let target = format!("http://{host_port}");
    let out = llmscope(&[
        "load",
        "--target",
        &target,
        "--concurrency",
        concurrency,
        "--duration",
        duration,
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A real Prometheus scraping `jobs` (see [`job`]), started and waited for by the one helper the
/// workspace's tests share; `None` (skip) only outside CI when none is installed.
pub fn prometheus(name: &str, jobs: &[String]) -> Option<RealPrometheus> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(RealPrometheus::start(name, jobs))
}

/// Waits (to a 20 s deadline) until something accepts connections on `host_port`.
pub fn wait_until_listening(host_port: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(host_port).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing listens on {host_port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
