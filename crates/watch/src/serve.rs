//! watch's HTTP side: `/metrics`, `/healthz` (the process is alive and serving HTTP),
//! `/readyz` (an evaluation succeeded within three intervals) and the status page at `/`.

use crate::WatchError;
use crate::state::State;
use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use llmscope_collect::time::unix_now;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

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

/// What the handlers share: the state, and `/metrics` rendered once per evaluation.
#[derive(Clone)]
struct Served {
    state: Shared,
    page: Arc<Mutex<Page>>,
}

/// The `/metrics` page as rendered after evaluation `evaluations` (the state changes only when
/// an evaluation is recorded). Every reader is handed the same bytes: 100,000 deployments and
/// 20 slow readers took watch from 151 MB to 1.29 GB when each rendered and held its own copy.
#[derive(Default)]
struct Page {
    evaluations: Option<u64>,
    body: Bytes,
}

impl Served {
    /// The page for the state as it is now, rendered if an evaluation came in since.
    fn metrics_page(&self) -> Bytes {
        let state = lock(&self.state);
        let mut page = self.page.lock().unwrap_or_else(|p| p.into_inner());
        if page.evaluations != Some(state.evaluations) {
            page.body = Bytes::from(crate::expose::render(&state));
            page.evaluations = Some(state.evaluations);
        }
        page.body.clone()
    }
}

/// The router over `state`.
pub fn router(state: Shared) -> Router {
    let served = Served {
        state,
        page: Arc::default(),
    };
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .route("/", get(page))
        .with_state(served)
}

async fn metrics(axum::extract::State(s): axum::extract::State<Served>) -> Response {
    let body = s.metrics_page();
    ([(header::CONTENT_TYPE, crate::expose::CONTENT_TYPE)], body).into_response()
}

async fn ready(axum::extract::State(s): axum::extract::State<Served>) -> Response {
    match lock(&s.state).ready(unix_now()) {
        Ok(()) => "ready\n".into_response(),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        )
            .into_response(),
    }
}

async fn page(axum::extract::State(s): axum::extract::State<Served>) -> Html<String> {
    Html(crate::status_page::render(&lock(&s.state), unix_now()))
}

/// Connections served at once; one more is closed as soon as it is accepted. A liveness probe,
/// a few Prometheus replicas and people need a handful; 2,000 slowloris connections held every
/// file descriptor and `/healthz` stopped answering.
pub const MAX_CONNECTIONS: usize = 256;

/// Connections one peer address may hold at once: one client (a scraper gone wrong, an attacker
/// in the cluster) cannot take every place and lock the kubelet's liveness probe out.
pub const MAX_PER_PEER: usize = 64;

/// How long a client may take to send a request's headers (the first, and each on a kept-alive
/// connection): a client trickling them a byte at a time is cut off.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one connection may stay open, idle or busy: a kept-alive connection nobody uses, or
/// a reader that never drains the page, gives its place back.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(120);

/// What bounds the connections served.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub connections: usize,
    pub per_peer: usize,
    pub header_read: Duration,
    pub lifetime: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connections: MAX_CONNECTIONS,
            per_peer: MAX_PER_PEER,
            header_read: HEADER_READ_TIMEOUT,
            lifetime: CONNECTION_LIFETIME,
        }
    }
}

/// Serves `router` on `listener` until `stop` resolves, each connection bounded by
/// [`MAX_CONNECTIONS`], [`MAX_PER_PEER`], [`HEADER_READ_TIMEOUT`] and [`CONNECTION_LIFETIME`].
pub async fn serve(
    listener: TcpListener,
    state: Shared,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_within(listener, state, stop, Limits::default()).await
}

/// [`serve`] within `limits`.
pub async fn serve_within(
    listener: TcpListener,
    state: Shared,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
    limits: Limits,
) -> std::io::Result<()> {
    let app = router(state);
    let places = Arc::new(Semaphore::new(limits.connections));
    let peers = Arc::new(Peers::new(limits.per_peer));
    let mut stop = std::pin::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut stop => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of descriptors or a connection reset before it was taken: the listener
                // stands; try again shortly.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(peer_place) = Peers::take(&peers, peer.ip()) else {
            drop(stream);
            continue;
        };
        let Ok(place) = Arc::clone(&places).try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(limits.lifetime, conn).await;
            drop((place, peer_place));
        });
    }
}

/// Connections held per peer address.
struct Peers {
    held: Mutex<HashMap<IpAddr, usize>>,
    most: usize,
}

/// One connection's place in its peer's count, given back when dropped.
struct PeerPlace {
    peers: Arc<Peers>,
    ip: IpAddr,
}

impl Peers {
    fn new(most: usize) -> Peers {
        Peers {
            held: Mutex::default(),
            most,
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for one more connection from `ip`, unless it holds its most already.
    fn take(peers: &Arc<Peers>, ip: IpAddr) -> Option<PeerPlace> {
        let mut held = peers.held();
        let n = held.entry(ip).or_default();
        if *n >= peers.most {
            return None;
        }
        *n += 1;
        Some(PeerPlace {
            peers: Arc::clone(peers),
            ip,
        })
    }
}

impl Drop for PeerPlace {
    fn drop(&mut self) {
        let mut held = self.peers.held();
        if let Some(n) = held.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Shown;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    fn shown() -> Shown {
        Shown {
            prometheus: "http://127.0.0.1:9090".into(),
            interval_s: 30.0,
            window_s: 300.0,
            shard: "1/1".into(),
            drift_files: 0,
        }
    }

    /// Reads until the peer closes (true) or `limit` passes (false).
    async fn closed_within(c: &mut TcpStream, limit: Duration) -> bool {
        let mut buf = [0u8; 256];
        let read = async {
            loop {
                match c.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        };
        tokio::time::timeout(limit, read).await.is_ok()
    }

    /// Slowloris clients fill every place, the next connection is closed at once, the
    /// trickled headers are cut off after the header timeout, and `/healthz` answers again —
    /// polled to a deadline, on loopback.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_clients_are_cut_off_and_capped_and_healthz_comes_back() {
        let (listener, addr) = bind("127.0.0.1:0").await.unwrap();
        let limits = Limits {
            connections: 8,
            per_peer: 8,
            header_read: Duration::from_millis(1500),
            lifetime: Duration::from_secs(30),
        };
        let state: Shared = Arc::new(Mutex::new(State::new(shown())));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve_within(
            listener,
            state,
            async move {
                let _ = rx.await;
            },
            limits,
        ));
        let mut slow = Vec::new();
        for _ in 0..limits.connections {
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                .await
                .unwrap();
            slow.push(c);
        }
        // Every place is held: one more is closed without an answer (a short wait for the
        // server to have accepted the slow ones first).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let mut refused = false;
        while !refused && tokio::time::Instant::now() < deadline {
            let mut extra = TcpStream::connect(addr).await.unwrap();
            let _ = extra
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                .await;
            let mut answer = Vec::new();
            let _ =
                tokio::time::timeout(Duration::from_millis(200), extra.read_to_end(&mut answer))
                    .await;
            refused = answer.is_empty();
        }
        assert!(refused, "a connection past the cap was served");
        for c in &mut slow {
            assert!(
                closed_within(c, Duration::from_secs(5)).await,
                "a slow client kept its place"
            );
        }
        let mut ok = false;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !ok && tokio::time::Instant::now() < deadline {
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut answer = String::new();
            let _ =
                tokio::time::timeout(Duration::from_secs(1), c.read_to_string(&mut answer)).await;
            ok = answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok\n");
        }
        assert!(
            ok,
            "/healthz did not come back once the slow clients were cut off"
        );
        let _ = tx.send(());
        server.await.unwrap().unwrap();
    }

    /// From `ip` (any loopback address: all of 127/8 reaches this host), to `addr`.
    async fn connect_from(ip: &str, addr: SocketAddr) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{ip}:0").parse().unwrap()).unwrap();
        socket.connect(addr).await.unwrap()
    }

    /// One peer holding its most connections is refused one more, while another address (the
    /// kubelet's probe) is served at once — a client cannot lock the probe out.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_peer_cannot_take_every_place() {
        let (listener, addr) = bind("127.0.0.1:0").await.unwrap();
        let limits = Limits {
            connections: 16,
            per_peer: 4,
            header_read: Duration::from_secs(30),
            lifetime: Duration::from_secs(30),
        };
        let state: Shared = Arc::new(Mutex::new(State::new(shown())));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let stop = async move {
            let _ = rx.await;
        };
        let server = tokio::spawn(serve_within(listener, state, stop, limits));
        let mut slow = Vec::new();
        for _ in 0..limits.per_peer {
            let mut c = connect_from("127.0.0.2", addr).await;
            c.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
            slow.push(c);
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let mut refused = false;
        while !refused && tokio::time::Instant::now() < deadline {
            let mut extra = connect_from("127.0.0.2", addr).await;
            let _ = extra
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                .await;
            refused = closed_within(&mut extra, Duration::from_millis(500)).await;
        }
        assert!(refused, "a fifth connection from one peer was kept");
        let mut probe = connect_from("127.0.0.1", addr).await;
        probe
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        let read = probe.read_to_string(&mut answer);
        let _ = tokio::time::timeout(Duration::from_secs(5), read).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "the probe: {answer:?}");
        drop(slow);
        let _ = tx.send(());
        server.await.unwrap().unwrap();
    }

    /// Readers between two evaluations are handed the same bytes; an evaluation (here a failed
    /// one) renders the page once more.
    #[test]
    fn every_reader_shares_one_rendered_page_per_evaluation() {
        let state: Shared = Arc::new(Mutex::new(State::new(shown())));
        let served = Served {
            state: state.clone(),
            page: Arc::default(),
        };
        let (a, b) = (served.metrics_page(), served.metrics_page());
        assert_eq!(a.as_ptr(), b.as_ptr(), "a copy per reader");
        assert!(!a.is_empty());
        let error = WatchError::Listen {
            addr: "x".into(),
            error: std::io::Error::other("down"),
        };
        lock(&state).failed(1.0, 0.1, &error);
        let c = served.metrics_page();
        assert_ne!(
            a.as_ptr(),
            c.as_ptr(),
            "not rendered again after an evaluation"
        );
        assert_eq!(c.as_ptr(), served.metrics_page().as_ptr());
    }
}
