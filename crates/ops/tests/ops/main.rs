//! `llmscope-ops` in-process: the recording lifecycle on its own, then `run` and `observe`
//! through it against the simulator (started here on free ports), completed and cancelled.
//! Waits poll to deadlines; nothing sleeps in place of an assertion.

mod capacity;
mod observe;
mod record;
mod run;

use llmscope_ops::run::{Narrator, RunRequest};
use llmscope_sim::options::EngineOptions;
use llmscope_store::{RunSummary, Store};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A generous deadline: the machine may be a loaded 2-core one.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Polls `check` every 50 ms until it gives a value; panics at [`DEADLINE`], naming `what`.
pub async fn poll<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let t = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(t.elapsed() < DEADLINE, "{what}: not within {DEADLINE:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The store's only run, as it reads now (opened afresh: another connection, as a reader).
pub fn only_run(db: &Path) -> Option<RunSummary> {
    let runs = Store::open(db).and_then(|s| s.runs()).ok()?;
    assert!(runs.len() <= 1, "{runs:?}");
    runs.into_iter().next()
}

/// The simulator's reference preset, dcgm collecting every 200 ms, on free ports.
pub async fn simulator() -> llmscope_sim::serve::SimHandle {
    let preset = llmscope_sim::preset::preset("l4-qwen2.5-3b").unwrap();
    let mut cfg = llmscope_sim::serve::SimConfig::new(preset);
    cfg.dcgm_interval = Duration::from_millis(200);
    llmscope_sim::serve::start(cfg).await.unwrap()
}

/// Keeps what an operation says, for the assertions.
#[derive(Default)]
pub struct Heard(pub Mutex<Vec<String>>);

impl Narrator for Heard {
    fn say(&self, line: &str) {
        self.0.lock().unwrap().push(line.to_owned());
    }
    fn warn(&self, line: &str) {
        self.say(&format!("warning: {line}"));
    }
    fn note(&self, line: &str) {
        self.say(&format!("note: {line}"));
    }
}

impl Heard {
    /// Whether a line said so far contains `part`.
    pub fn said(&self, part: &str) -> bool {
        self.count(part) > 0
    }

    /// How many lines said so far contain `part`.
    pub fn count(&self, part: &str) -> usize {
        let lines = self.0.lock().unwrap();
        lines.iter().filter(|l| l.contains(part)).count()
    }
}

/// A short run on the simulated stack (no target): 32 clients, short answers.
pub fn sim_request(db: &Path, duration: Duration) -> RunRequest {
    RunRequest {
        target: None,
        metrics_url: None,
        gpu_metrics: Vec::new(),
        matchers: Vec::new(),
        prometheus: None,
        engine: EngineOptions::default(),
        concurrency: 32,
        rate: None,
        duration,
        baseline: Duration::from_millis(300),
        prompt: None,
        input_tokens: None,
        output_tokens: None,
        max_tokens: 32,
        model: None,
        api_key: None,
        interval: Duration::from_millis(200),
        dcgm_interval: Some(Duration::from_millis(200)),
        drain_timeout: Duration::from_secs(30),
        db: db.to_path_buf(),
        workload: Default::default(),
    }
}
