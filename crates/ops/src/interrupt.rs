//! Ctrl-C during `llmscope run`: the first stops the load (in-flight requests drain), cuts the
//! baseline and drain short and has the run stored as `interrupted`, with when; a second exits
//! at once (the store then marks the run interrupted when next opened: its process is gone).
//!
//! Issue 12, point 4: before this, a Ctrl-C'd run was stored `completed`.

use llmscope_loadgen::RunControl;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::watch;

/// The run's Ctrl-C state, shared by the phases of the run.
#[derive(Debug, Clone)]
pub struct Interrupt {
    at: Arc<OnceLock<f64>>,
    rx: watch::Receiver<bool>,
    /// Stops the load generator.
    pub control: RunControl,
}

impl Interrupt {
    /// Starts watching for Ctrl-C; `say` tells the user what happens. Ends with the runtime.
    pub fn watch(say: fn(&str)) -> Interrupt {
        let (tx, rx) = watch::channel(false);
        let me = Interrupt {
            at: Arc::new(OnceLock::new()),
            rx,
            control: RunControl::new(),
        };
        let (at, control) = (Arc::clone(&me.at), me.control.clone());
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if at.set(llmscope_collect::time::unix_now()).is_err() {
                    say("second Ctrl-C: exiting now; the run reads back as interrupted");
                    std::process::exit(130);
                }
                say(
                    "Ctrl-C: stopping the run; in-flight requests drain, then what was measured is diagnosed and stored as interrupted (Ctrl-C again to exit at once)",
                );
                control.stop();
                tx.send_replace(true);
            }
        });
        me
    }

    /// When Ctrl-C came (Unix seconds), if it did.
    pub fn at(&self) -> Option<f64> {
        self.at.get().copied()
    }

    /// Runs `work` until it ends or Ctrl-C comes; `None` when interrupted.
    pub async fn race<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        let mut rx = self.rx.clone();
        let stopped = async move {
            if rx.wait_for(|stopped| *stopped).await.is_err() {
                // The watcher ended (no signal handling here): no Ctrl-C will come.
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            out = work => Some(out),
            () = stopped => None,
        }
    }

    /// Sleeps for `d`, or until Ctrl-C.
    pub async fn sleep(&self, d: Duration) {
        self.race(tokio::time::sleep(d)).await;
    }
}

/// Seconds of the load done at `at`: from the load's start, within `0..=planned`.
pub fn load_done_s(at: f64, load_started: f64, planned: Duration) -> f64 {
    (at - load_started).clamp(0.0, planned.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_done_is_clamped_to_the_plan() {
        let planned = Duration::from_secs(30);
        assert_eq!(load_done_s(112.0, 100.0, planned), 12.0);
        assert_eq!(
            load_done_s(90.0, 100.0, planned),
            0.0,
            "during the baseline"
        );
        assert_eq!(load_done_s(190.0, 100.0, planned), 30.0, "during the drain");
    }
}
