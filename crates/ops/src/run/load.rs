//! The load of a run: the load generator on its own runtime, stopped when the run is
//! cancelled (requests in flight drain), aborted when the store stops taking writes (nothing
//! more could be kept), its finished records and progress streamed to the recording's writer (so a killed
//! run keeps what completed), its progress lines said in turn.

use super::Narrator;
use crate::OpsError;
use crate::cancel::Cancel;
use llmscope_loadgen::{LoadPlan, LoadReport, Observer, Progress, RequestRecord, RunControl};
use llmscope_store::RequestRow;
use llmscope_store::writer::BatchSender;
use tokio::sync::mpsc;

/// Streams every finished record and the load's progress to the store writer, and says a
/// progress line every few seconds.
struct RunObserver<'a> {
    store: BatchSender,
    last_line: f64,
    narrator: &'a dyn Narrator,
}

impl Observer for RunObserver<'_> {
    fn records(&mut self, batch: &[RequestRecord]) {
        self.store
            .send_requests(batch.iter().map(request_row).collect());
    }

    fn progress(&mut self, p: &Progress) {
        let elapsed = p.elapsed.as_secs_f64();
        self.store.send_progress(elapsed);
        if elapsed - self.last_line >= 10.0 {
            self.last_line = elapsed;
            self.narrator.say(&format!(
                "load {elapsed:.0}s: {} in flight, {} done, {} failed, {:.0} output tok/s",
                p.in_flight, p.completed, p.failed, p.output_tokens_per_s
            ));
        }
    }
}

/// The load, on its own runtime: its threads are named for the load generator, so its
/// self-check measures the client alone, not the simulator or the scrapers beside it.
pub(super) async fn run_load(
    plan: &LoadPlan,
    cancel: &Cancel,
    halted: &Cancel,
    store: BatchSender,
    n: &dyn Narrator,
) -> Result<LoadReport, OpsError> {
    let rt = llmscope_loadgen::monitor::runtime(None).map_err(OpsError::Runtime)?;
    let (control, stop_on_cancel) = control(cancel, halted);
    // Progress lines are said from the load's runtime: they are gathered here and said in turn.
    let (lines_tx, lines_rx) = mpsc::unbounded_channel::<String>();
    let task = rt.spawn(load(plan.clone(), control, store, Forward(lines_tx)));
    let out = say_until_done(task, lines_rx, n).await;
    stop_on_cancel.abort();
    rt.shutdown_background();
    out.map_err(|e| OpsError::Task(format!("the load task failed: {e}")))
}

/// The load itself, its records to `store`, its progress lines to `lines`.
async fn load(
    plan: LoadPlan,
    control: RunControl,
    store: BatchSender,
    lines: Forward,
) -> LoadReport {
    let mut observer = RunObserver {
        store,
        last_line: 0.0,
        narrator: &lines,
    };
    llmscope_loadgen::run(&plan, &mut observer, &control).await
}

/// The load generator's control: stopped (sending ends; requests in flight drain) when `cancel`
/// fires, aborted (what is in flight cancelled too) when `halted` does — at once if one
/// already has.
fn control(cancel: &Cancel, halted: &Cancel) -> (RunControl, tokio::task::JoinHandle<()>) {
    let control = RunControl::new();
    if halted.is_cancelled() {
        control.abort();
    } else if cancel.is_cancelled() {
        control.stop();
    }
    let watch = tokio::spawn(stop_on(cancel.clone(), halted.clone(), control.clone()));
    (control, watch)
}

async fn stop_on(cancel: Cancel, halted: Cancel, control: RunControl) {
    tokio::select! {
        biased;
        () = halted.cancelled() => control.abort(),
        () = cancel.cancelled() => {
            control.stop();
            halted.cancelled().await;
            control.abort();
        }
    }
}

/// Says the lines as they come until `task` ends, then the rest.
async fn say_until_done<T>(
    task: tokio::task::JoinHandle<T>,
    mut lines: mpsc::UnboundedReceiver<String>,
    n: &dyn Narrator,
) -> Result<T, tokio::task::JoinError> {
    let mut task = std::pin::pin!(task);
    let out = loop {
        tokio::select! {
            Some(line) = lines.recv() => n.say(&line),
            done = &mut task => break done,
        }
    };
    while let Ok(line) = lines.try_recv() {
        n.say(&line);
    }
    out
}

/// A narrator that hands its lines to another task.
struct Forward(mpsc::UnboundedSender<String>);

impl Narrator for Forward {
    fn say(&self, line: &str) {
        let _ = self.0.send(line.to_owned());
    }
    fn warn(&self, line: &str) {
        let _ = self.0.send(format!("warning: {line}"));
    }
    fn note(&self, line: &str) {
        let _ = self.0.send(format!("note: {line}"));
    }
}

fn request_row(r: &RequestRecord) -> RequestRow {
    RequestRow {
        stage: r.stage,
        id: r.id,
        sent_unix_ns: r.sent_unix_ns,
        end_unix_ns: r.end_unix_ns,
        first_token_unix_ns: r.first_token_unix_ns,
        status: r.status,
        error: r.error.map(|e| e.to_string()),
        prompt_tokens: r.prompt_tokens,
        record: serde_json::to_value(r).unwrap_or_default(),
        output_tokens: r.output_tokens,
    }
}
