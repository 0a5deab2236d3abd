//! The loop: evaluate every interval, keep the result in the shared [`State`], serve it.
//! An evaluation that fails leaves the previous one shown and is counted by kind; the next
//! interval tries again. Evaluations never overlap: one that outlasts the interval delays the
//! next instead of piling up.
//!
//! The HTTP side runs on a thread and runtime of its own, so `/healthz` answers while an
//! evaluation parses a Prometheus answer or judges a fleet: on one thread, a hostile answer
//! (100,000 points a name) held the probe for as long as the evaluation took.

use crate::WatchError;
use crate::evaluate::{Evaluation, Settings, evaluate};
use crate::serve::{self, Shared};
use crate::state::{Shown, State};
use llmscope_collect::prom::client::PromClient;
use llmscope_collect::time::unix_now;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::watch as signal;

/// What the loop tells its caller (the CLI prints it; tests collect it).
pub trait Reporter: Send {
    fn evaluated(&mut self, e: &Evaluation);
    fn failed(&mut self, e: &WatchError);
}

/// The service's configuration.
#[derive(Debug, Clone)]
pub struct Service {
    pub settings: Settings,
    pub interval: Duration,
    pub shown: Shown,
}

/// The end of the read window for an evaluation at `now`: aligned to the step, so replicas and
/// successive evaluations ask Prometheus the same ranges (its caches, and Thanos', hit).
pub fn window_end(now: f64, step: f64) -> f64 {
    if step > 0.0 {
        (now / step).floor() * step
    } else {
        now
    }
}

/// Evaluates once and records it in `state`.
pub async fn tick(client: &PromClient, svc: &Service, state: &Shared, reporter: &mut dyn Reporter) {
    let started = Instant::now();
    let at = window_end(unix_now(), svc.settings.step);
    match evaluate(client, &svc.settings, at).await {
        Ok(e) => {
            reporter.evaluated(&e);
            state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .record(e, unix_now());
        }
        Err(err) => {
            reporter.failed(&err);
            state.lock().unwrap_or_else(|p| p.into_inner()).failed(
                unix_now(),
                started.elapsed().as_secs_f64(),
                &err,
            );
        }
    }
}

/// Serves on `listener` and evaluates every interval until `stop` resolves.
pub async fn run(
    client: PromClient,
    svc: Service,
    listener: TcpListener,
    mut reporter: impl Reporter,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), WatchError> {
    let state: Shared = Arc::new(Mutex::new(State::new(svc.shown.clone())));
    let (stop_tx, mut stop_rx) = signal::channel(false);
    let server_stop = {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let server = serve_apart(listener, Arc::clone(&state), server_stop)?;
    tokio::spawn(async move {
        stop.await;
        let _ = stop_tx.send(true);
    });
    let mut every = tokio::time::interval(svc.interval);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => tick(&client, &svc, &state, &mut reporter).await,
            _ = stop_rx.wait_for(|s| *s) => break,
        }
    }
    match server.join() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(WatchError::Listen {
            addr: "the bound address".to_owned(),
            error,
        }),
        Err(_) => Err(WatchError::Input {
            what: "the HTTP server".to_owned(),
            why: "its thread panicked".to_owned(),
        }),
    }
}

/// Serves `state` on `listener` from a thread with a runtime of its own, until `stop`.
fn serve_apart(
    listener: TcpListener,
    state: Shared,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<std::thread::JoinHandle<std::io::Result<()>>, WatchError> {
    let listen_err = |error| WatchError::Listen {
        addr: "the bound address".to_owned(),
        error,
    };
    // A tokio listener belongs to the runtime that made it: handed over as a std one.
    let listener = listener.into_std().map_err(listen_err)?;
    std::thread::Builder::new()
        .name("llmscope-watch-http".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let listener = TcpListener::from_std(listener)?;
                serve::serve(listener, state, stop).await
            })
        })
        .map_err(listen_err)
}

impl Service {
    /// What to say once listening on `addr`.
    pub fn banner(&self, addr: std::net::SocketAddr) -> String {
        format!(
            "llmscope watch: serving http://{addr}/ (/metrics, /healthz, /readyz); every {:.0} s over the last {:.0} s of {}, shard {}",
            self.interval.as_secs_f64(),
            self.settings.window,
            self.shown.prometheus,
            self.settings.shard
        )
    }
}

/// One evaluation now (`watch --once`).
pub async fn once(client: &PromClient, svc: &Service) -> Result<Evaluation, WatchError> {
    let at = window_end(unix_now(), svc.settings.step);
    evaluate(client, &svc.settings, at).await
}

/// A line per evaluation to `out` (the CLI gives it stderr): how many deployments, their
/// verdicts, which are stalled; or why the evaluation failed.
#[derive(Debug)]
pub struct LineReporter<W>(pub W);

impl<W: std::io::Write + Send> Reporter for LineReporter<W> {
    fn evaluated(&mut self, e: &Evaluation) {
        let _ = writeln!(self.0, "watch: {}", e.summary_line());
    }

    fn failed(&mut self, e: &WatchError) {
        let text = e.to_string();
        let kept = llmscope_core::safe::excerpt(&text, llmscope_core::safe::ERROR_TEXT_KEPT);
        let said = llmscope_core::safe::redact(&kept).into_owned();
        let _ = writeln!(
            self.0,
            "watch: evaluation failed ({}): {}",
            e.kind(),
            llmscope_core::safe::terminal(&said)
        );
    }
}
