//! The one recording lifecycle that `run`, `observe` and `diagnose --prometheus` share (and
//! what comes next: a capacity search recording each stage as a stored run of its own, the
//! shards of a load writing into one run).
//!
//! 1. [`RunRecord::create`] opens the run in the store (its kind, configuration as stored,
//!    window and planned length when known) with its sources registered.
//! 2. [`RunRecord::record`] starts the live part, a [`Recording`] ([`Recording::begin`] does 1
//!    and 2 at once): the store's writer thread, which collectors ([`Recording::collect`]) and
//!    the load ([`Recording::sink`]) send to as they go, so a killed process keeps what
//!    completed.
//! 3. [`Recording::stop`] stops the collectors, waits until everything sent is committed and
//!    gives the [`RunRecord`] back with what each source reported. Where the store stopped
//!    taking writes on the way (a full disk), the collectors stopped at their next send, the
//!    token of [`Recording::stopping`] fired at once (the load stops on it), and `stop` marks
//!    the run `failed` with the reason as far as the store still lets it and answers
//!    [`OpsError::StoreStopped`].
//! 4. What is read after the live part is written directly ([`RunRecord::write`]: a window
//!    read from Prometheus), a stop before the end is recorded ([`RunRecord::interrupt`]), and
//!    the series are read back ([`RunRecord::series`]) to be judged.
//! 5. [`RunRecord::finish`] stores the findings (and the versions the sources told) and ends
//!    the run with its status.
//!
//! `diagnose --prometheus` has no live part: it creates the run when the first name answers
//! and writes name by name (steps 1, 4, 5), so memory stays one name's answer.

use crate::cancel::Cancel;
use crate::{Marked, OpsError, StoreStopped};
use llmscope_collect::time::unix_now;
use llmscope_collect::{Source, SourceError, SourceReport, Stop, StopHandle, Window};
use llmscope_core::series::{Batch, Series};
use llmscope_core::severity::Severity;
use llmscope_store::writer::{BatchSender, Stopped, Writer};
use llmscope_store::{Finding, NewRun, RunId, RunStatus, SourceSpec, Store};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use tokio::task::JoinSet;

/// A run as it is created.
#[derive(Debug, Clone)]
pub struct RunMeta {
    /// The command that records it (`run`, `observe`, `diagnose`).
    pub kind: &'static str,
    /// Unix seconds.
    pub started_at: f64,
    /// The window it covers, when known up front (a past window).
    pub window: Option<(f64, f64)>,
    /// The resolved configuration as stored (no secrets).
    pub config: serde_json::Value,
    /// Seconds its timed part is planned to take (a load, a live window).
    pub planned_s: Option<f64>,
}

impl RunMeta {
    /// A run of `kind` starting now, with `config` as stored.
    pub fn new(kind: &'static str, config: serde_json::Value) -> RunMeta {
        RunMeta {
            kind,
            started_at: unix_now(),
            window: None,
            config,
            planned_s: None,
        }
    }

    fn new_run(&self) -> NewRun {
        NewRun {
            kind: self.kind.to_owned(),
            started_at: self.started_at,
            window: self.window,
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            config: self.config.clone(),
            planned_s: self.planned_s,
        }
    }
}

/// A source as registered with a run.
pub fn source_spec(s: &dyn Source) -> SourceSpec {
    SourceSpec {
        name: s.name().to_owned(),
        kind: s.kind().to_owned(),
        url: s.url(),
    }
}

/// A Prometheus read after the fact (not a collector of the live part), at `url` as shown.
pub fn prometheus_spec(url: &str) -> SourceSpec {
    SourceSpec {
        name: "prometheus".to_owned(),
        kind: "prometheus".to_owned(),
        url: url.to_owned(),
    }
}

/// How a run ends.
#[derive(Debug, Clone, Copy)]
pub struct Ending<'a> {
    pub status: RunStatus,
    pub findings: &'a [Finding],
    /// The versions its sources told (`observe` stores them, even none).
    pub versions: Option<&'a BTreeMap<String, String>>,
    /// The window it covered, for a run created without one.
    pub window: Option<(f64, f64)>,
}

/// A run in the store, from its creation to its end.
#[derive(Debug)]
pub struct RunRecord {
    store: Store,
    run: RunId,
}

impl RunRecord {
    /// Creates the run in `store`, status `running`, with `sources` registered.
    pub fn create(
        mut store: Store,
        meta: &RunMeta,
        sources: &[SourceSpec],
    ) -> Result<RunRecord, OpsError> {
        let run = store.create_run(&meta.new_run())?;
        for s in sources {
            store.add_source(run, s)?;
        }
        Ok(RunRecord { store, run })
    }

    pub fn id(&self) -> RunId {
        self.run
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Starts the live part: the store's writer thread takes the store until
    /// [`Recording::stop`].
    pub fn record(self) -> Result<Recording, OpsError> {
        let halted = Cancel::new();
        let on_stop = halted.clone();
        let writer = llmscope_store::writer::spawn_with(self.store, self.run, move || {
            on_stop.cancel();
        })?;
        let (stop, stopped) = Stop::new();
        Ok(Recording {
            run: self.run,
            writer,
            halted,
            links: JoinSet::new(),
            stop,
            stopped,
            collectors: JoinSet::new(),
            started: 0,
            reports: Vec::new(),
        })
    }

    /// Stores `batch` at once, in one transaction (what is read after the live part).
    pub fn write(&mut self, batch: Batch) -> Result<(), OpsError> {
        self.store.write(self.run, &[batch])?;
        Ok(())
    }

    /// Records that the run stopped early at `at` (Unix seconds) with `done_s` seconds of its
    /// timed part done; it reads back `interrupted` from now on.
    pub fn interrupt(&mut self, at: f64, done_s: Option<f64>) -> Result<(), OpsError> {
        self.store.interrupt_run(self.run, at, done_s)?;
        Ok(())
    }

    /// Every series of the run, as stored.
    pub fn series(&self) -> Result<Vec<Series>, OpsError> {
        let series = self.store.series(self.run, None)?;
        Ok(series.into_iter().map(|(_, s)| s).collect())
    }

    /// Stores the findings (and versions) and ends the run; the store back.
    pub fn finish(mut self, end: Ending<'_>) -> Result<Store, OpsError> {
        self.store.add_findings(self.run, end.findings)?;
        if let Some(versions) = end.versions {
            self.store.set_server_versions(self.run, versions)?;
        }
        self.store
            .finish_run(self.run, end.status, unix_now(), end.window)?;
        Ok(self.store)
    }
}

/// What a source reported at the end of a recording, by its name.
pub type SourceResult = (String, Result<SourceReport, SourceError>);

/// The live part of a run: the store's writer and the collectors feeding it.
#[derive(Debug)]
pub struct Recording {
    run: RunId,
    writer: Writer,
    /// Cancelled the moment the store stops taking writes.
    halted: Cancel,
    /// The tasks joining `halted` to the tokens of [`Recording::stopping`].
    links: JoinSet<()>,
    stop: StopHandle,
    stopped: Stop,
    collectors: JoinSet<(usize, SourceResult)>,
    started: usize,
    reports: Vec<(usize, SourceResult)>,
}

impl Recording {
    /// Creates the run with its sources ([`RunRecord::create`]) and starts its live part.
    pub fn begin(
        store: Store,
        meta: &RunMeta,
        sources: &[SourceSpec],
    ) -> Result<Recording, OpsError> {
        RunRecord::create(store, meta, sources)?.record()
    }

    pub fn id(&self) -> RunId {
        self.run
    }

    /// Where what is recorded goes (series batches, request records, progress): the writer.
    /// Every clone must be gone before [`Recording::stop`] can end.
    pub fn sink(&self) -> BatchSender {
        self.writer.sender()
    }

    /// The count of samples committed so far, for progress lines.
    pub fn committed(&self) -> Arc<AtomicU64> {
        self.writer.progress_counter()
    }

    /// A token cancelled when `cancel` is or when the store stops taking writes (a full disk),
    /// whichever comes first: what feeds the recording (a load, a baseline) waits on it, so
    /// nothing goes on being measured that cannot be kept. `cancel` itself is left alone.
    pub fn stopping(&mut self, cancel: &Cancel) -> Cancel {
        let either = Cancel::new();
        let (user, halted, out) = (cancel.clone(), self.halted.clone(), either.clone());
        self.links.spawn(async move {
            tokio::select! {
                () = user.cancelled() => {}
                () = halted.cancelled() => {}
            }
            out.cancel();
        });
        either
    }

    /// The token cancelled the moment the store stops taking writes.
    pub fn halted(&self) -> Cancel {
        self.halted.clone()
    }

    /// Starts `source` reading `window` into the run, until the window ends or the recording
    /// stops.
    pub fn collect(&mut self, source: Arc<dyn Source>, window: Window) {
        let (tx, stop, i) = (self.sink(), self.stopped.clone(), self.started);
        self.started += 1;
        self.collectors.spawn(async move {
            let sink = move |b: Batch| tx.send(b);
            let report = source.collect(window, &sink, stop).await;
            (i, (source.name().to_owned(), report))
        });
    }

    /// Resolves once every collector ended by itself (its window over, or it failed).
    pub async fn collected(&mut self) {
        while let Some(done) = self.collectors.join_next().await {
            if let Ok(report) = done {
                self.reports.push(report);
            }
        }
    }

    /// Stops the collectors and waits until everything sent is committed: the run, and what
    /// each source reported, in the order they were started.
    pub async fn stop(mut self) -> Result<(RunRecord, Vec<SourceResult>), OpsError> {
        self.stop.stop();
        self.links.abort_all();
        self.collected().await;
        let mut reports = std::mem::take(&mut self.reports);
        reports.sort_by_key(|(i, _)| *i);
        let reports = reports.into_iter().map(|(_, r)| r).collect();
        let run = self.run;
        let store = committed(self.writer, run).await?;
        Ok((RunRecord { store, run }, reports))
    }
}

/// The store back once everything sent is committed: the writer ends when every sender is
/// gone (the collectors' went with them). Where a database error stopped it, the run is marked
/// `failed` with the reason, as far as the store still takes that.
async fn committed(writer: Writer, run: RunId) -> Result<Store, OpsError> {
    let finished = tokio::task::spawn_blocking(move || writer.finish())
        .await
        .map_err(|e| OpsError::Task(format!("the store writer: {e}")))?;
    match finished {
        Ok((store, _totals)) => Ok(store),
        Err(Stopped::Gone(e)) => Err(e.into()),
        Err(Stopped::Failed { mut store, error }) => {
            let error = error.to_string();
            let marked = mark_failed(&mut store, run, &error);
            Err(OpsError::StoreStopped(Box::new(StoreStopped {
                run,
                error,
                marked,
                db: None,
                report: None,
            })))
        }
    }
}

/// The run ended `failed` with why, in one finding; on a full disk this may fail too (then the
/// run reads `interrupted` at its last heartbeat).
fn mark_failed(store: &mut Store, run: RunId, error: &str) -> Marked {
    if let Err(e) = store.finish_run(run, RunStatus::Failed, unix_now(), None) {
        return Marked::Not(e.to_string());
    }
    let message = format!(
        "the store stopped taking writes during the recording: {error}; what was recorded before it is kept, the rest of the run was not measured"
    );
    let finding = Finding::new("store_stopped".to_owned(), Severity::Error, message).suggest(
        "free space where the store lives, or give --db a file on another disk, and run again",
    );
    match store.add_findings(run, &[finding]) {
        Ok(()) => Marked::WithReason,
        Err(e) => Marked::WithoutReason(e.to_string()),
    }
}
