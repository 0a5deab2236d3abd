//! [`Cancel`]: how an operation is told to stop early. The binary makes one, installs the only
//! signal handler (Ctrl-C cancels it) and hands it down; operations never watch signals
//! themselves (issue 30), so tests cancel them in-process and every front end decides what a
//! second Ctrl-C does.
//!
//! A cancelled `run` stops its load (requests in flight drain), cuts its baseline and drain
//! short and is stored `interrupted`, with when ([`Cancel::at`]); a cancelled `observe` stops
//! its sources and is stored `interrupted` where they stopped (issue 12, point 4: before, a
//! Ctrl-C'd run was stored `completed`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// A cancellation token: cheap to clone, every clone sees the same cancellation. Cancelled
/// once; when (Unix seconds) is kept.
#[derive(Debug, Clone)]
pub struct Cancel {
    at: Arc<watch::Sender<Option<f64>>>,
}

impl Default for Cancel {
    fn default() -> Self {
        Cancel {
            at: Arc::new(watch::channel(None).0),
        }
    }
}

impl Cancel {
    /// A token nobody has cancelled yet.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels, now; `true` the first time, `false` when it already was (the first time stays).
    pub fn cancel(&self) -> bool {
        let now = llmscope_collect::time::unix_now();
        self.at.send_if_modified(|at| {
            let first = at.is_none();
            if first {
                *at = Some(now);
            }
            first
        })
    }

    pub fn is_cancelled(&self) -> bool {
        self.at.borrow().is_some()
    }

    /// When it was cancelled (Unix seconds), if it was.
    pub fn at(&self) -> Option<f64> {
        *self.at.borrow()
    }

    /// Resolves once cancelled (at once if it already was).
    pub async fn cancelled(&self) {
        let mut rx = self.at.subscribe();
        // The sender lives as long as `self`: waiting cannot fail.
        let _ = rx.wait_for(Option::is_some).await;
    }

    /// Runs `work` until it ends or the token is cancelled; `None` when cancelled first.
    pub async fn race<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        tokio::select! {
            out = work => Some(out),
            () = self.cancelled() => None,
        }
    }

    /// Sleeps for `d`, or until cancelled.
    pub async fn sleep(&self, d: Duration) {
        self.race(tokio::time::sleep(d)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancelling_wakes_every_clone_once() {
        let cancel = Cancel::new();
        let other = cancel.clone();
        let waiter = tokio::spawn(async move { other.cancelled().await });
        assert!(!cancel.is_cancelled() && cancel.at().is_none());
        assert!(cancel.cancel(), "the first cancel");
        let at = cancel.at().expect("when");
        assert!(!cancel.cancel(), "the second is not the first");
        assert_eq!(cancel.at(), Some(at), "the first time stays");
        waiter.await.unwrap();
    }

    #[tokio::test]
    async fn race_and_sleep_end_at_cancel() {
        let cancel = Cancel::new();
        assert_eq!(cancel.race(async { 7 }).await, Some(7));
        let c = cancel.clone();
        let sleeper = tokio::spawn(async move { c.sleep(Duration::from_secs(3600)).await });
        cancel.cancel();
        sleeper.await.unwrap();
        assert_eq!(cancel.race(std::future::pending::<()>()).await, None);
    }
}
