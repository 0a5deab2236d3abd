//! The store writer thread: collectors send [`Batch`]es on a channel; one thread owns the
//! [`Store`] and commits whatever has queued up as one transaction.
//!
//! A commit takes the first batch and whatever else arrives within [`LINGER`] (100 ms), so the
//! commit rate stays at most ~10/s however many targets are scraped, and a killed process loses
//! at most the last 100 ms. Sending never blocks (the channel is unbounded), so async scrape
//! loops never wait for the disk.

use crate::{RunId, Store, StoreError, WriteStats};
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
    pub commits: u64,
}

/// Where collectors send batches. Cheap to clone; sending fails only once the writer stopped.
#[derive(Debug, Clone)]
pub struct BatchSender(Sender<Batch>);

impl BatchSender {
    /// Queues a batch; `false` when the writer has stopped (after a database error).
    pub fn send(&self, batch: Batch) -> bool {
        self.0.send(batch).is_ok()
    }
}

/// A running writer thread.
#[derive(Debug)]
pub struct Writer {
    tx: BatchSender,
    committed: Arc<AtomicU64>,
    thread: JoinHandle<Result<(Store, WriterTotals), StoreError>>,
}

/// Starts the writer thread for `run`.
pub fn spawn(store: Store, run: RunId) -> Result<Writer, StoreError> {
    let (tx, rx) = channel();
    let committed = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&committed);
    let thread = std::thread::Builder::new()
        .name("llmscope-store".into())
        .spawn(move || drain(store, run, rx, &counter))
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

    /// Waits until every sender is dropped and everything queued is committed; gives the store back.
    pub fn finish(self) -> Result<(Store, WriterTotals), StoreError> {
        drop(self.tx);
        self.thread.join().map_err(|_| StoreError::WriterGone)?
    }
}

fn drain(
    mut store: Store,
    run: RunId,
    rx: Receiver<Batch>,
    committed: &AtomicU64,
) -> Result<(Store, WriterTotals), StoreError> {
    let mut totals = WriterTotals::default();
    let mut pending = Vec::new();
    while let Ok(first) = rx.recv() {
        pending.push(first);
        gather(&rx, &mut pending);
        let stats = store.write(run, &pending)?;
        pending.clear();
        add(&mut totals, stats);
        committed.fetch_add(stats.samples, Ordering::Relaxed);
    }
    Ok((store, totals))
}

/// Takes what else arrives within [`LINGER`] of the first batch (up to [`MAX_COALESCED`]).
///
/// Sleeps through the linger and then takes what queued, rather than waking for each batch:
/// at 1,000 targets a second the wake-ups cost more than the inserts.
fn gather(rx: &Receiver<Batch>, pending: &mut Vec<Batch>) {
    std::thread::sleep(LINGER);
    while pending.len() < MAX_COALESCED {
        match rx.try_recv() {
            Ok(b) => pending.push(b),
            Err(_) => break,
        }
    }
}

fn add(totals: &mut WriterTotals, s: WriteStats) {
    totals.samples += s.samples;
    totals.series += s.new_series;
    totals.health += s.health;
    totals.commits += 1;
}
