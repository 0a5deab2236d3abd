//! The real-engine tier: `llmscope` against a real vLLM 0.32.0 (its CPU build, a tiny
//! random-weight model; `scripts/real-vllm.sh`), on loopback.
//!
//! Each server configuration starts once (start-up costs ~40–80 s) and its regimes run one after
//! the other on it, with short windows. The tests share a lock: one engine at a time, because the
//! engine takes both cores. This binary is apart from `tests/cli` so that no other test shares the
//! cores with the engine while it is measured.
//!
//! Without the install (`scripts/real-vllm.sh install`) the tests say they skipped; with
//! `CI=true` they fail, naming the command that installs it.
#![allow(clippy::print_stderr)] // a tier's verdicts and skips are said on stderr

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
        server.warm_up();
        server
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
            "8s",
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

/// One regime, measured once more when the first measurement itself says the machine starved
/// the engine: no verdict, with a `front_end_queue` or `contended-machine` finding. The engine,
/// its API server and the load share 2 cores; in about 1 of 4 fresh CI runs the 32-client
/// regime saw a third of its requests queue in front of the scheduler and the engine empty in a
/// sixth of the scrapes. A second measurement must still give the verdict asked; a wrong verdict
/// on data the tool calls clean is never re-measured.
fn run(server: &Server, db: &Path, load: &[&str]) -> (Value, Output) {
    let (r, out) = measure(server, db, load);
    let starved = |r: &Value| {
        r["findings"].as_array().is_some_and(|fs| {
            fs.iter().any(|f| {
                matches!(
                    f["id"].as_str(),
                    Some("front_end_queue" | "contended-machine")
                )
            })
        })
    };
    if verdict(&r).0 == "none" && starved(&r) {
        eprintln!(
            "  {load:?}: no verdict and the machine starved the engine ({}); measured once more",
            r["verdict"]["summary"].as_str().unwrap_or("")
        );
        return measure(server, db, load);
    }
    (r, out)
}

/// One regime: `llmscope run --target` with short windows, its JSON report.
fn measure(server: &Server, db: &Path, load: &[&str]) -> (Value, Output) {
    let url = server.url();
    let db = db.to_string_lossy();
    let mut args = vec![
        "run",
        "--target",
        &url,
        "--db",
        &db,
        "--format",
        "json",
        "--baseline",
        "3s",
        "--duration",
        "20s",
        "--interval",
        "1s",
    ];
    if !load.contains(&"--max-tokens") {
        args.extend_from_slice(&["--max-tokens", "64"]);
    }
    args.extend_from_slice(load);
    let out = llmscope(&args);
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("run {load:?}: stdout is not JSON ({e})\n{}", text(&out)));
    (report, out)
}

fn verdict(report: &Value) -> (&str, f64) {
    (
        report["verdict"]["bottleneck"].as_str().unwrap_or("?"),
        report["verdict"]["confidence"].as_f64().unwrap_or(-1.0),
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

    fn verdict(&mut self, regime: &str, report: &Value, out: &Output, want: &str) {
        let (got, confidence) = verdict(report);
        let summary = report["verdict"]["summary"].as_str().unwrap_or("");
        eprintln!("  {regime}: {got} ({confidence:.2}) — {summary}");
        self.expect(&format!("{regime}: verdict {want}"), got == want, || {
            format!("got {got} ({confidence:.2}) — {summary}\n{}", text(out))
        });
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

/// `--max-num-seqs 16`: batch limit at 32 clients; load not reached at 16 (as many as the cap)
/// and 8 (fewer, with 500-token prompts sized on the server's tokenizer); requests turned away
/// by `--max-num-queued-reqs 40` at 64 clients; what `inventory` and `check` say about the live
/// page.
#[test]
fn a_real_vllm_with_max_num_seqs_16() {
    if !installed("a_real_vllm_with_max_num_seqs_16") {
        return;
    }
    let _one_engine = ENGINE.lock().unwrap_or_else(|e| e.into_inner());
    let server = Server::start(
        "s16",
        &["--max-num-seqs", "16", "--", "--max-num-queued-reqs", "40"],
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let mut checks = Checks::default();

    let (r, out) = run(
        &server,
        &db,
        // 128-token answers: half the request turnover of 64, so the API server — which shares
        // the 2 cores with the engine — keeps the scheduler fed. With 64, a fresh CI machine twice
        // saw a third of the requests queue in front of the scheduler (front_end_queue) and the
        // engine empty in 6 of 17 scrapes: no pinned batch to judge.
        &[
            "--concurrency",
            "32",
            "--max-num-seqs",
            "16",
            "--max-tokens",
            "128",
        ],
    );
    checks.verdict("32 clients, cap 16", &r, &out, "batch_limit");
    let recs = recommendations(&r);
    checks.expect(
        "32 clients, cap 16: advice raises --max-num-seqs from 16",
        recs.contains("Raise --max-num-seqs from 16 to 32"),
        || recs.clone(),
    );
    checks.expect(
        "32 clients, cap 16: the missing GPU layer is named",
        r["verdict"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("no GPU")),
        || r["verdict"].to_string(),
    );

    // The 8-client run also sizes its prompts on the server's own tokenizer (POST /tokenize).
    for (clients, prompt) in [("16", None), ("8", Some("500"))] {
        let mut load = vec!["--concurrency", clients, "--max-num-seqs", "16"];
        if let Some(n) = prompt {
            load.extend(["--input-tokens", n]);
        }
        let (r, out) = run(&server, &db, &load);
        let regime = format!("{clients} clients, cap 16");
        checks.verdict(&regime, &r, &out, "load_not_reached");
        if prompt.is_some() {
            let mean = r["client"]["tokens"]["prompt_mean"].as_f64().unwrap_or(0.0);
            checks.expect(
                &format!("{regime}: --input-tokens 500 lands within ±2 % on vLLM's tokenizer"),
                (490.0..=510.0).contains(&mean),
                || format!("mean prompt tokens (usage.prompt_tokens) {mean}"),
            );
        }
        let recs = recommendations(&r);
        checks.expect(
            &format!("{regime}: advice raises the concurrency above the cap"),
            recs.contains("concurrency above --max-num-seqs 16"),
            || recs.clone(),
        );
    }

    // 64 clients against a queue limit of 40 (running + waiting): vLLM answers the rest 503.
    let (r, out) = run(
        &server,
        &db,
        &["--concurrency", "64", "--max-num-seqs", "16"],
    );
    checks.verdict("64 clients, queue limit 40", &r, &out, "failing_requests");
    let all = serde_json::to_string(&r).unwrap_or_default();
    checks.expect(
        "64 clients, queue limit 40: the server's own words are in the report",
        all.contains("currently busy and cannot accept new requests"),
        || text(&out),
    );
    let sent = r["client"]["requests"]["sent"].as_u64().unwrap_or(u64::MAX);
    checks.expect(
        "64 clients, queue limit 40: rejected requests are not re-sent in a tight loop",
        sent < 5_000,
        || format!("{sent} requests sent in 20 s"),
    );

    let metrics = format!("{}/metrics", server.url());
    let inv = llmscope(&["inventory", &metrics]);
    let inv_text = String::from_utf8_lossy(&inv.stdout).to_string();
    checks.expect(
        "inventory names vLLM 0.32.0 exactly",
        inv.status.success() && inv_text.contains("0.32.0"),
        || text(&inv),
    );
    checks.expect(
        "inventory does not call e2e_request_latency_seconds removed",
        !inv_text.contains("e2e_request_latency_seconds: removed"),
        || text(&inv),
    );
    let check = llmscope(&[
        "check",
        "--metrics-url",
        &metrics,
        "--format",
        "json",
        "--expr",
        "max by (pod) (vllm:gpu_cache_usage_perc)",
    ]);
    let check_text = String::from_utf8_lossy(&check.stdout).to_string();
    checks.expect(
        "check flags vllm:gpu_cache_usage_perc with vllm:kv_cache_usage_perc as the fix",
        check.status.code() == Some(1)
            && check_text.contains("vllm:gpu_cache_usage_perc")
            && check_text.contains("vllm:kv_cache_usage_perc"),
        || text(&check),
    );
    checks.expect(
        "check's message does not name an older version",
        !check_text.contains("vllm 0.25") && !check_text.contains("vllm 0.26"),
        || text(&check),
    );
    drop(server);
    checks.done();
}

/// A KV cache far too small (4 MiB = 2,048 tokens for 16 sequences; vLLM refuses a pool that
/// cannot hold one --max-model-len request, hence 1,024): KV-cache capacity, with the
/// knob this engine has (`--kv-cache-memory-bytes`), sized from what the engine reports.
#[test]
fn a_real_vllm_with_a_kv_cache_far_too_small() {
    if !installed("a_real_vllm_with_a_kv_cache_far_too_small") {
        return;
    }
    let _one_engine = ENGINE.lock().unwrap_or_else(|e| e.into_inner());
    let server = Server::start(
        "kv4m",
        &[
            "--max-num-seqs",
            "16",
            "--kv-bytes",
            "4194304",
            "--max-model-len",
            "1024",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let mut checks = Checks::default();
    let (r, out) = run(
        &server,
        &db,
        &["--concurrency", "32", "--max-num-seqs", "16"],
    );
    checks.verdict("32 clients, KV 4 MiB", &r, &out, "kv_cache_capacity");
    let recs = recommendations(&r);
    let first = r["recommendations"][0]["action"].as_str().unwrap_or("");
    checks.expect(
        "KV 4 MiB: the first advice is the engine's own KV knob, sized",
        first.contains("--kv-cache-memory-bytes from 4 MiB to at least"),
        || recs.clone(),
    );
    checks.expect(
        "KV 4 MiB: the advice cites the pool the engine reported (2,048 tokens)",
        recs.contains("2,048 tokens"),
        || recs.clone(),
    );
    drop(server);
    checks.done();
}
