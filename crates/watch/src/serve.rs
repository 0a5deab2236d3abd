//! watch's HTTP side: `/metrics`, `/healthz` (the process is alive and serving HTTP),
//! `/readyz` (an evaluation succeeded within three intervals) and the status page at `/`.

use crate::WatchError;
use crate::state::State;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use llmscope_collect::time::unix_now;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;

/// The state shared by the loop and the handlers.
pub type Shared = Arc<Mutex<State>>;

/// Binds `addr` (port 0: any free port); the bound address is what to print.
pub async fn bind(addr: &str) -> Result<(TcpListener, SocketAddr), WatchError> {
    let listen_err = |error| WatchError::Listen {
        addr: addr.to_owned(),
        error,
    };
    let l = TcpListener::bind(addr).await.map_err(listen_err)?;
    let bound = l.local_addr().map_err(listen_err)?;
    Ok((l, bound))
}

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, State> {
    // A handler that panicked holding the lock left a consistent state (every update is one
    // assignment), so the page keeps being served.
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// The router over `state`.
pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .route("/", get(page))
        .with_state(state)
}

async fn metrics(axum::extract::State(s): axum::extract::State<Shared>) -> Response {
    let body = crate::expose::render(&lock(&s));
    ([(header::CONTENT_TYPE, crate::expose::CONTENT_TYPE)], body).into_response()
}

async fn ready(axum::extract::State(s): axum::extract::State<Shared>) -> Response {
    match lock(&s).ready(unix_now()) {
        Ok(()) => "ready\n".into_response(),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        )
            .into_response(),
    }
}

async fn page(axum::extract::State(s): axum::extract::State<Shared>) -> Html<String> {
    Html(crate::status_page::render(&lock(&s), unix_now()))
}

/// Serves `router` on `listener` until `stop` resolves.
pub async fn serve(
    listener: TcpListener,
    state: Shared,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(stop)
        .await
}
