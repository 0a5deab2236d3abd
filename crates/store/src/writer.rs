//! The store writer thread: collectors send [`Batch`]es, the load generator its completed
//! request records and progress, on one channel; one thread owns the [`Store`] and commits
//! whatever has queued up.
//!
//! A commit takes the first message and whatever else arrives within [`LINGER`] (100 ms), so the
//! commit rate stays at most ~10/s however many targets are scraped, and a killed process loses
//! at most the last 100 ms. Each commit is also the run's heartbeat (with the latest progress), so
//! a run whose process died is marked interrupted at its last commit. Sending never blocks (the
//! channel is unbounded), so async scrape loops and load workers never wait for the disk.
//!
//! A database error (a full disk, above all) stops the writer at once: the channel closes, so
//! every sender learns it at its next send (scrapers and the load generator stop on it), the
//! `on_stop` hook given to [`spawn_with`] fires from the writer thread, and [`Writer::finish`]
//! hands the store back with the error ([`Stopped`]) so the run can still be marked failed —
//! what was committed before stays (issue 31, point 4: before, the writer died 2 s into a run
//! on a full disk while the load went on for 72 s and its report was lost).

use crate::{RequestRow, RunId, Store, StoreError, WriteStats};
use llmscope_core::series::Batch;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

/// The most batches one transaction takes.
pub const MAX_COALESCED: usize = 4096;

/// How long a commit waits for more batches after the first. Bounds the commit rate (each
/// commit has a fixed cost in SQLite, measured as the main cost of scraping 1,000 targets) and
/// so the data a killed process can lose.
pub const LINGER: Duration = Duration::from_millis(100);

/// Totals over a writer's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterTotals {
    pub samples: u64,
    pub series: u64,
    pub health: u64,
    pub requests: u64,
    pub commits: u64,
}

/// What the writer is sent.
#[derive(Debug)]
enum Msg {
    Batch(Batch),
    Requests(Vec<RequestRow>),
    /// Seconds of the run's timed part done.
    Progress(f64),
}

/// Where collectors send batches (and the load generator its records). Cheap to clone; sending
/// fails only once the writer stopped.
#[derive(Debug, Clone)]
pub struct BatchSender(Sender<Msg>);

impl BatchSender {
    /// Queues a batch; `false` when the writer has stopped (after a database error).
    pub fn send(&self, batch: Batch) -> bool {
        self.0.send(Msg::Batch(batch)).is_ok()
    }

    /// Queues completed request records.
    pub fn send_requests(&self, rows: Vec<RequestRow>) -> bool {
        rows.is_empty() || self.0.send(Msg::Requests(rows)).is_ok()
    }

    /// Queues how many seconds of the run's timed part are done (kept with the next heartbeat).
    pub fn send_progress(&self, done_s: f64) -> bool {
        self.0.send(Msg::Progress(done_s)).is_ok()
    }
}

/// A running writer thread.
#[derive(Debug)]
pub struct Writer {
    tx: BatchSender,
    committed: Arc<AtomicU64>,
    thread: JoinHandle<(Store, Result<WriterTotals, StoreError>)>,
}

/// Why a writer ended without committing everything it was sent.
#[derive(Debug, thiserror::Error)]
pub enum Stopped {
    /// A database error stopped it; the store is handed back as it stands (everything before
    /// the failed commit is in it).
    #[error("{error}")]
    Failed {
        store: Box<Store>,
        error: StoreError,
    },
    /// The writer thread panicked; the store went with it.
    #[error(transparent)]
    Gone(StoreError),
}

/// Starts the writer thread for `run`.
pub fn spawn(store: Store, run: RunId) -> Result<Writer, StoreError> {
    spawn_with(store, run, || {})
}

/// Starts the writer thread for `run`; `on_stop` is called (from the writer thread) the moment
/// a database error stops it, so whoever feeds it can stop at once rather than at its next send.
pub fn spawn_with(
    store: Store,
    run: RunId,
    on_stop: impl FnOnce() + Send + 'static,
) -> Result<Writer, StoreError> {
    let (tx, rx) = channel();
    let committed = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&committed);
    let thread = std::thread::Builder::new()
        .name("llmscope-store".into())
        .spawn(move || {
            let mut store = store;
            let out = drain(&mut store, run, rx, &counter);
            if out.is_err() {
                on_stop();
            }
            (store, out)
        })
        .map_err(StoreError::Thread)?;
    Ok(Writer {
        tx: BatchSender(tx),
        committed,
        thread,
    })
}

impl Writer {
    pub fn sender(&self) -> BatchSender {
        self.tx.clone()
    }

    /// Samples committed so far (for progress lines).
    pub fn committed_samples(&self) -> u64 {
        self.committed.load(Ordering::Relaxed)
    }

    /// The shared count of committed samples, for a progress task that outlives a borrow.
    pub fn progress_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.committed)
    }

    /// Waits until every sender is dropped and everything queued is committed; gives the store
    /// back — with the error, when one stopped the writer.
    pub fn finish(self) -> Result<(Store, WriterTotals), Stopped> {
        drop(self.tx);
        match self.thread.join() {
            Ok((store, Ok(totals))) => Ok((store, totals)),
            Ok((store, Err(error))) => Err(Stopped::Failed {
                store: Box::new(store),
                error,
            }),
            Err(_) => Err(Stopped::Gone(StoreError::WriterGone)),
        }
    }
}

/// What queued up for one commit.
#[derive(Default)]
struct Pending {
    batches: Vec<Batch>,
    rows: Vec<RequestRow>,
    progress: Option<f64>,
    messages: usize,
}

impl Pending {
    fn push(&mut self, m: Msg) {
        self.messages += 1;
        match m {
            Msg::Batch(b) => self.batches.push(b),
            Msg::Requests(r) => self.rows.extend(r),
            Msg::Progress(p) => self.progress = Some(p),
        }
    }
}

/// Commits what arrives until every sender is gone, or until a commit fails: then `rx` is
/// dropped with the error, so the next send anywhere fails.
fn drain(
    store: &mut Store,
    run: RunId,
    rx: Receiver<Msg>,
    committed: &AtomicU64,
) -> Result<WriterTotals, StoreError> {
    let mut totals = WriterTotals::default();
    while let Ok(first) = rx.recv() {
        let mut pending = Pending::default();
        pending.push(first);
        gather(&rx, &mut pending);
        if !pending.batches.is_empty() {
            let stats = store.write(run, &pending.batches)?;
            add(&mut totals, stats);
            committed.fetch_add(stats.samples, Ordering::Relaxed);
        }
        if !pending.rows.is_empty() {
            store.add_requests(run, &pending.rows)?;
            totals.requests += pending.rows.len() as u64;
        }
        store.heartbeat(run, unix_now(), pending.progress)?;
        totals.commits += 1;
    }
    Ok(totals)
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Takes what else arrives within [`LINGER`] of the first message (up to [`MAX_COALESCED`]).
///
/// Sleeps through the linger and then takes what queued, rather than waking for each batch:
/// at 1,000 targets a second the wake-ups cost more than the inserts.
fn gather(rx: &Receiver<Msg>, pending: &mut Pending) {
    std::thread::sleep(LINGER);
    while pending.messages < MAX_COALESCED {
        match rx.try_recv() {
            Ok(m) => pending.push(m),
            Err(_) => break,
        }
    }
}

fn add(totals: &mut WriterTotals, s: WriteStats) {
    totals.samples += s.samples;
    totals.series += s.new_series;
    totals.health += s.health;
}
