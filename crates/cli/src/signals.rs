//! The process's only signal handling (issue 30): libraries never watch signals; the commands
//! here turn Ctrl-C (and, for the servers, SIGTERM) into what they hand down — a
//! [`Cancel`] token to `run` and `observe`, the load generator's `RunControl` to `load`, a
//! stop to `sim` and `watch` — and decide what a second Ctrl-C does.

use llmscope_ops::cancel::Cancel;
use tokio::task::JoinHandle;

/// Calls `press(1)`, `press(2)`, … at each Ctrl-C while it returns `true` (and the runtime
/// lives). Once installed, Ctrl-C no longer kills the process: `press` decides.
pub fn on_ctrl_c(mut press: impl FnMut(u32) -> bool + Send + 'static) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut presses = 0;
        while tokio::signal::ctrl_c().await.is_ok() {
            presses += 1;
            if !press(presses) {
                return;
            }
        }
    })
}

/// A token the first Ctrl-C cancels, after `first` (what to say); a later one calls `again`
/// (`None`: later presses are ignored).
pub fn cancel_on_ctrl_c(first: fn(), again: Option<fn()>) -> Cancel {
    let cancel = Cancel::new();
    let token = cancel.clone();
    on_ctrl_c(move |press| {
        if press == 1 {
            first();
            token.cancel();
            return again.is_some();
        }
        again.is_some_and(|again| {
            again();
            true
        })
    });
    cancel
}

/// A token cancelled at Ctrl-C or SIGTERM (what Kubernetes sends to stop a pod): how the
/// servers (`sim`, `watch`) are told to stop.
pub fn on_shutdown() -> Cancel {
    let cancel = Cancel::new();
    let token = cancel.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        token.cancel();
    });
    cancel
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
