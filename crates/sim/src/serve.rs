//! The simulator's HTTP servers: a vLLM-compatible API with `/metrics`, and a dcgm-exporter.
//!
//! Data flow: a handler decodes the request, counts prompt tokens and submits it over a channel
//! to the **engine thread**, which runs [`Engine`] in real time (schedule, sleep for the step's
//! duration, complete) and sends each produced token to the request's own channel. The handler
//! turns tokens into SSE chunks (coalescing tokens that queued up, as vLLM does when a client lags)
//! or one JSON body. A client that goes away closes its channel; the engine aborts the request.
//! `/metrics` renders the engine's stats on each scrape; the dcgm server serves a page that a
//! collector task refreshes every `dcgm_interval` from the engine's GPU timeline.

use crate::dcgm::DcgmState;
use crate::dcgm_text::{self, GpuIdentity};
use crate::engine::{Engine, EngineError, IdMap, NewRequest, ReqId};
use crate::faults::{FaultRateError, Faults, RequestFault, ScrapeFault};
use crate::fleet::SharedGpu;
use crate::metrics::{self, Dialect};
use crate::openai::{self, ChatRequest, ChunkHead, CompletionRequest, Endpoint};
use crate::preset::Preset;
use crate::rng::Rng;
use crate::stats::FinishReason;
use crate::tokenizer::{self, BlockHashes};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc as tmpsc, watch};

/// Everything needed to start the simulated stack.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub preset: Preset,
    pub seed: u64,
    pub listen: IpAddr,
    pub port: u16,
    pub dcgm_port: u16,
    pub dcgm_interval: Duration,
    pub dialect: Dialect,
    pub faults: Faults,
    /// `Hostname` label of the dcgm series (the node name).
    pub hostname: String,
    /// Teams whose Kueue and kube-state-metrics pages are served on `cluster_port`.
    pub cluster: Option<crate::cluster::Teams>,
    pub cluster_port: u16,
    /// The pod its dcgm page names as holding the GPU, `(container, namespace, pod)`
    /// (`sim --replicas`); else the first team's vLLM pod when teams are given.
    pub pod: Option<[String; 3]>,
    /// The GPU it time-slices with other replicas (`sim --replicas N --share-gpu`).
    pub gpu: Option<Arc<SharedGpu>>,
}

impl SimConfig {
    /// The default preset on 127.0.0.1 with free ports.
    pub fn new(preset: Preset) -> Self {
        Self {
            preset,
            seed: 1,
            listen: IpAddr::from([127, 0, 0, 1]),
            port: 0,
            dcgm_port: 0,
            dcgm_interval: Duration::from_secs(30),
            dialect: Dialect::DEFAULT,
            faults: Faults::default(),
            hostname: "llmscope-sim".to_owned(),
            cluster: None,
            cluster_port: 0,
            pod: None,
            gpu: None,
        }
    }

    /// One line on what will run: `preset … (model on GPU), --max-num-seqs N, metrics dialect D`.
    pub fn summary(&self) -> String {
        let p = &self.preset;
        format!(
            "preset {} ({} on {}), --max-num-seqs {}, metrics dialect {}",
            p.name, p.model.id, p.gpu.model_name, p.engine.max_num_seqs, self.dialect
        )
    }
}

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Fault(#[from] FaultRateError),
    #[error("--dcgm-interval must be at least 10ms")]
    DcgmInterval,
    #[error("cannot listen on {addr}: {source} (pick another port, or 0 for a free one)")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A running simulator; dropping it does not stop it, call [`SimHandle::shutdown`].
#[derive(Debug)]
pub struct SimHandle {
    pub vllm_addr: SocketAddr,
    pub dcgm_addr: SocketAddr,
    /// Kueue at `/kueue/metrics`, kube-state-metrics at `/ksm/metrics`, when teams were given.
    pub cluster_addr: Option<SocketAddr>,
    /// Its pod, as a replica of `sim --replicas`.
    pub pod: Option<String>,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    engine_thread: Option<std::thread::JoinHandle<()>>,
    servers: Vec<tokio::task::JoinHandle<()>>,
}

impl SimHandle {
    /// Base URL of the vLLM-compatible API (`http://127.0.0.1:PORT`).
    pub fn vllm_url(&self) -> String {
        format!("http://{}", self.vllm_addr)
    }

    /// URL of the dcgm-exporter page.
    pub fn dcgm_url(&self) -> String {
        format!("http://{}/metrics", self.dcgm_addr)
    }

    /// The engine's `num_gpu_blocks`, `fb_used` etc.
    pub fn memory(&self) -> crate::engine::MemoryPlan {
        lock(&self.shared.engine).memory
    }

    /// `KV cache N blocks (T tokens), FB used M MiB`.
    pub fn memory_summary(&self) -> String {
        let mem = self.memory();
        format!(
            "KV cache {} blocks ({} tokens), FB used {} MiB",
            mem.num_gpu_blocks,
            mem.kv_tokens,
            mem.fb_used_mib.floor()
        )
    }

    /// Every page it serves, one `NAME URL` line each (`vllm …`, `dcgm …`, `kueue …`, `ksm …`).
    /// A replica of `sim --replicas` adds its pod: `vllm URL pod=vllm-1`.
    pub fn write_endpoints(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let pod = self
            .pod
            .as_ref()
            .map_or(String::new(), |p| format!(" pod={p}"));
        writeln!(out, "vllm {}{pod}", self.vllm_url())?;
        writeln!(out, "dcgm {}{pod}", self.dcgm_url())?;
        if let Some(addr) = self.cluster_addr {
            writeln!(out, "kueue http://{addr}/kueue/metrics")?;
            writeln!(out, "ksm http://{addr}/ksm/metrics")?;
        }
        out.flush()
    }

    /// Stops the servers and the engine thread.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        let _ = self.shared.cmd.lock().map(|tx| tx.send(Cmd::Shutdown));
        for s in self.servers.drain(..) {
            let _ = s.await;
        }
        if let Some(t) = self.engine_thread.take() {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
    }
}

/// Wall-clock anchor: engine time is seconds since `start`.
#[derive(Debug, Clone, Copy)]
struct Clock {
    start: Instant,
}

impl Clock {
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn sleep_until(&self, t: f64) {
        let target = self.start + Duration::from_secs_f64(t.max(0.0));
        let now = Instant::now();
        if target > now {
            std::thread::sleep(target - now);
        }
    }
}

fn unix_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// A token for one request.
#[derive(Debug, Clone, Copy)]
struct Tok {
    index: u32,
    finish: Option<FinishReason>,
    /// Prompt tokens the prefix cache held.
    cached: u32,
}

enum Cmd {
    Submit {
        req: NewRequest,
        arrival: f64,
        tx: tmpsc::UnboundedSender<Tok>,
    },
    Shutdown,
}

#[derive(Debug)]
struct Shared {
    engine: Mutex<Engine>,
    clock: Clock,
    cmd: Mutex<mpsc::Sender<Cmd>>,
    model_id: String,
    stream_interval: u32,
    dialect: Dialect,
    faults: Faults,
    rng: Mutex<Rng>,
    created_unix: f64,
    next_id: AtomicU64,
    /// Requests the API server has admitted and not yet answered whole: what vLLM's
    /// `--max-num-queued-reqs` counts (running + waiting, as the API server sees them).
    in_flight: Arc<AtomicU64>,
    dcgm_text: Mutex<Arc<String>>,
    /// When the engine hangs (clock seconds), with `--fault-hang-after`.
    hang_at: Option<f64>,
    /// The GPU it time-slices with other replicas; its clock then starts at the GPU's epoch.
    gpu: Option<Arc<SharedGpu>>,
}

impl std::fmt::Debug for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Cmd::Submit { .. } => "Submit",
            Cmd::Shutdown => "Shutdown",
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts the engine thread and both servers.
pub async fn start(cfg: SimConfig) -> Result<SimHandle, SimError> {
    cfg.faults.validate()?;
    if cfg.dcgm_interval < Duration::from_millis(10) {
        return Err(SimError::DcgmInterval);
    }
    let engine = Engine::new(&cfg.preset, cfg.seed)?;
    let vllm_listener = bind(cfg.listen, cfg.port).await?;
    let dcgm_listener = bind(cfg.listen, cfg.dcgm_port).await?;
    let (cmd_tx, cmd_rx) = mpsc::channel();
    let identity = gpu_identity(&cfg);
    let shared = Arc::new(shared_state(&cfg, engine, cmd_tx));
    let engine_thread = spawn_engine(shared.clone(), cmd_rx)?;
    let (stop, stop_rx) = watch::channel(false);
    let vllm_addr = local_addr(&vllm_listener, cfg.listen, cfg.port)?;
    let dcgm_addr = local_addr(&dcgm_listener, cfg.listen, cfg.dcgm_port)?;
    let mut state = DcgmState::new(&lock(&shared.engine));
    refresh_dcgm(
        &shared,
        &mut state,
        &identity,
        cfg.dcgm_interval.as_secs_f64(),
    );
    let mut servers = vec![
        tokio::spawn(serve(
            vllm_listener,
            vllm_router(shared.clone()),
            stop_rx.clone(),
        )),
        tokio::spawn(serve(
            dcgm_listener,
            dcgm_router(shared.clone()),
            stop_rx.clone(),
        )),
    ];
    let cluster_addr = serve_cluster(&cfg, &mut servers, &stop_rx).await?;
    servers.push(tokio::spawn(dcgm_collector(
        shared.clone(),
        state,
        identity,
        cfg.dcgm_interval,
        stop_rx,
    )));
    Ok(SimHandle {
        vllm_addr,
        dcgm_addr,
        cluster_addr,
        pod: cfg.pod.as_ref().map(|p| p[2].clone()),
        shared,
        stop,
        engine_thread: Some(engine_thread),
        servers,
    })
}

/// What the HTTP handlers and the engine thread share.
fn shared_state(cfg: &SimConfig, engine: Engine, cmd_tx: mpsc::Sender<Cmd>) -> Shared {
    Shared {
        model_id: engine.model.id.to_owned(),
        stream_interval: engine.cfg.stream_interval.max(1),
        engine: Mutex::new(engine),
        clock: Clock {
            start: cfg.gpu.as_ref().map_or_else(Instant::now, |g| g.epoch),
        },
        cmd: Mutex::new(cmd_tx),
        dialect: cfg.dialect,
        faults: cfg.faults.clone(),
        rng: Mutex::new(Rng::new(cfg.seed ^ 0xFA17)),
        created_unix: unix_ns() as f64 / 1e9,
        next_id: AtomicU64::new(1),
        in_flight: Arc::new(AtomicU64::new(0)),
        dcgm_text: Mutex::new(Arc::new(String::new())),
        hang_at: cfg.faults.hang_after.map(|d| d.as_secs_f64()),
        gpu: cfg.gpu.clone(),
    }
}

/// The engine's own thread: it steps the model and answers the handlers' commands.
fn spawn_engine(
    shared: Arc<Shared>,
    cmd_rx: mpsc::Receiver<Cmd>,
) -> Result<std::thread::JoinHandle<()>, SimError> {
    std::thread::Builder::new()
        .name("llmscope-sim-engine".into())
        .spawn(move || engine_loop(&shared, &cmd_rx))
        .map_err(|source| SimError::Bind {
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            source,
        })
}

fn local_addr(
    listener: &tokio::net::TcpListener,
    ip: IpAddr,
    port: u16,
) -> Result<SocketAddr, SimError> {
    listener.local_addr().map_err(|source| SimError::Bind {
        addr: SocketAddr::new(ip, port),
        source,
    })
}

/// The Kueue / kube-state-metrics cluster page, when the config asks for one.
async fn serve_cluster(
    cfg: &SimConfig,
    servers: &mut Vec<tokio::task::JoinHandle<()>>,
    stop_rx: &watch::Receiver<bool>,
) -> Result<Option<SocketAddr>, SimError> {
    let Some(teams) = cfg.cluster.clone() else {
        return Ok(None);
    };
    let listener = bind(cfg.listen, cfg.cluster_port).await?;
    let addr = local_addr(&listener, cfg.listen, cfg.cluster_port)?;
    servers.push(tokio::spawn(serve(
        listener,
        cluster_router(teams),
        stop_rx.clone(),
    )));
    Ok(Some(addr))
}

async fn bind(ip: IpAddr, port: u16) -> Result<tokio::net::TcpListener, SimError> {
    let addr = SocketAddr::new(ip, port);
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| SimError::Bind { addr, source })
}

async fn serve(listener: tokio::net::TcpListener, router: Router, mut stop: watch::Receiver<bool>) {
    let shutdown = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    let _ = axum::serve(
        axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        }),
        router,
    )
    .with_graceful_shutdown(shutdown)
    .await;
}

fn gpu_identity(cfg: &SimConfig) -> GpuIdentity {
    GpuIdentity {
        uuid: gpu_uuid(cfg.gpu.as_ref().map_or(cfg.seed, |g| g.uuid_seed)),
        model_name: cfg.preset.gpu.model_name.to_owned(),
        hostname: cfg.hostname.clone(),
        driver_version: "580.126.09".to_owned(),
        has_nvlink: cfg.preset.gpu.id != "l4",
        // With a simulated cluster, the GPU serves the first team's vLLM pod, and the exporter
        // says so as the Helm chart's dcgm-exporter (`--kubernetes`) does.
        pod: cfg.pod.clone().or_else(|| {
            cfg.cluster.as_ref().and_then(|c| c.teams.first()).map(|t| {
                let pod = format!("vllm-{}-0", t.team);
                ["vllm".to_owned(), t.namespace.clone(), pod]
            })
        }),
    }
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, drawn from the seed.
fn gpu_uuid(seed: u64) -> String {
    let mut rng = Rng::new(seed ^ 0x6D5);
    let h = |rng: &mut Rng, n: usize| {
        let v = rng.next_u64();
        format!("{v:016x}")[..n].to_owned()
    };
    let parts = [
        h(&mut rng, 8),
        h(&mut rng, 4),
        h(&mut rng, 4),
        h(&mut rng, 4),
        h(&mut rng, 8),
        h(&mut rng, 4),
    ];
    format!(
        "GPU-{}-{}-{}-{}-{}{}",
        parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]
    )
}

// ---------------------------------------------------------------- engine thread

fn engine_loop(sh: &Shared, rx: &mpsc::Receiver<Cmd>) {
    let mut senders: IdMap<tmpsc::UnboundedSender<Tok>> = IdMap::default();
    let mut out = Vec::new();
    let mut last_prune = 0.0;
    loop {
        let idle = !lock(&sh.engine).has_work();
        if !take_commands(sh, rx, &mut senders, idle) {
            return;
        }
        // Clients that went away: checked a few times a second, not every step (cheap at 5k streams).
        if sh.clock.now() - last_prune > 0.05 {
            abort_closed(sh, &mut senders);
            last_prune = sh.clock.now();
        }
        step(sh, &mut out, &mut senders);
    }
}

/// Registers the queued commands, first waiting for one when the engine is `idle`; false means
/// shut down.
fn take_commands(
    sh: &Shared,
    rx: &mpsc::Receiver<Cmd>,
    senders: &mut IdMap<tmpsc::UnboundedSender<Tok>>,
    idle: bool,
) -> bool {
    if idle {
        match rx.recv() {
            Ok(cmd) => {
                if !accept(sh, cmd, senders) {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
    loop {
        match rx.try_recv() {
            Ok(cmd) => {
                if !accept(sh, cmd, senders) {
                    return false;
                }
            }
            Err(mpsc::TryRecvError::Empty) => return true,
            Err(mpsc::TryRecvError::Disconnected) => return false,
        }
    }
}

/// Runs one step in real time (schedule, sleep for its duration, complete) and delivers its
/// tokens; only sleeps a little when there is nothing to run or the engine hangs.
fn step(
    sh: &Shared,
    out: &mut Vec<crate::engine::Emitted>,
    senders: &mut IdMap<tmpsc::UnboundedSender<Tok>>,
) {
    let now = sh.clock.now();
    if sh.hang_at.is_some_and(|at| now >= at) {
        // Hung: requests are still accepted (they wait) and clients that leave are still
        // pruned, but no step is taken again.
        std::thread::sleep(Duration::from_millis(5));
        return;
    }
    let plan = lock(&sh.engine).schedule(now);
    let Some(mut plan) = plan else {
        std::thread::sleep(Duration::from_millis(1));
        return;
    };
    // On a time-sliced GPU the step's kernels wait for their turn, after the other engines'
    // booked kernels; its host part runs on its own CPU, as two processes' would.
    if let Some(gpu) = &sh.gpu {
        let offset = lock(&sh.engine).gpu_offset(&plan);
        plan.start = gpu.take_turn(now + offset, plan.t_gpu) - offset;
    }
    sh.clock.sleep_until(plan.start + plan.duration);
    let end = sh.clock.now();
    out.clear();
    let mut engine = lock(&sh.engine);
    engine.complete(&plan, end, out);
    if let (Some(gpu), Some(iv)) = (&sh.gpu, engine.timeline.last()) {
        gpu.record(iv);
    }
    drop(engine);
    deliver(sh, out, senders, end);
}

/// Registers a command; false means shut down.
fn accept(sh: &Shared, cmd: Cmd, senders: &mut IdMap<tmpsc::UnboundedSender<Tok>>) -> bool {
    match cmd {
        Cmd::Submit { req, arrival, tx } => {
            let id = lock(&sh.engine).add(arrival, req);
            senders.insert(id, tx);
            true
        }
        Cmd::Shutdown => false,
    }
}

fn abort_closed(sh: &Shared, senders: &mut IdMap<tmpsc::UnboundedSender<Tok>>) {
    let closed: Vec<ReqId> = senders
        .iter()
        .filter(|(_, tx)| tx.is_closed())
        .map(|(id, _)| *id)
        .collect();
    if closed.is_empty() {
        return;
    }
    abort_gone(sh, senders, closed, sh.clock.now());
}

/// Requests whose client went away: forgets their channels and aborts them at `now`.
fn abort_gone(
    sh: &Shared,
    senders: &mut IdMap<tmpsc::UnboundedSender<Tok>>,
    gone: Vec<ReqId>,
    now: f64,
) {
    let mut engine = lock(&sh.engine);
    for id in gone {
        senders.remove(&id);
        engine.abort(id, now);
    }
}

fn deliver(
    sh: &Shared,
    out: &[crate::engine::Emitted],
    senders: &mut IdMap<tmpsc::UnboundedSender<Tok>>,
    end: f64,
) {
    let mut gone = Vec::new();
    let interval = sh.stream_interval;
    for e in out {
        // `--stream-interval`: buffer tokens, but never the first or the last one.
        if e.index != 0 && e.finish.is_none() && (e.index + 1) % interval != 0 {
            continue;
        }
        let Some(tx) = senders.get(&e.id) else {
            continue;
        };
        if tx
            .send(Tok {
                index: e.index,
                finish: e.finish,
                cached: e.cached,
            })
            .is_err()
            && e.finish.is_none()
        {
            gone.push(e.id);
        }
        if e.finish.is_some() {
            senders.remove(&e.id);
        }
    }
    if !gone.is_empty() {
        abort_gone(sh, senders, gone, end);
    }
}

// ---------------------------------------------------------------- vLLM API

fn vllm_router(sh: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/models", get(models))
        .route("/tokenize", post(tokenize))
        .route("/health", get(|| async { StatusCode::OK }))
        .route("/version", get(version))
        .route("/metrics", get(vllm_metrics))
        .fallback(|| async { json_error(StatusCode::NOT_FOUND, "Not Found", "Not Found", None) })
        .with_state(sh)
}

/// `{"version":"0.32.0"}`, as vLLM answers: the version whose names the page shows.
async fn version(State(sh): State<Arc<Shared>>) -> Response {
    axum::Json(serde_json::json!({"version": sh.dialect.to_string()})).into_response()
}

fn json_error(status: StatusCode, message: &str, kind: &str, param: Option<&str>) -> Response {
    let body = openai::error_body(message, kind, param, status.as_u16());
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn bad_request(message: &str) -> Response {
    json_error(StatusCode::BAD_REQUEST, message, "BadRequestError", None)
}

async fn models(State(sh): State<Arc<Shared>>) -> Response {
    let max_model_len = lock(&sh.engine).cfg.max_model_len;
    let created = sh.created_unix as u64;
    let mut id = String::new();
    openai::json_str(&mut id, &sh.model_id);
    // Field order as vLLM's pydantic ModelCard prints it.
    let body = format!(
        "{{\"object\":\"list\",\"data\":[{{\"id\":{id},\"object\":\"model\",\"created\":{created},\"owned_by\":\"vllm\",\"root\":{id},\"parent\":null,\"max_model_len\":{max_model_len},\"permission\":[{{\"id\":\"modelperm-0123456789abcdef\",\"object\":\"model_permission\",\"created\":{created},\"allow_create_engine\":false,\"allow_sampling\":true,\"allow_logprobs\":true,\"allow_search_indices\":false,\"allow_view\":true,\"allow_fine_tuning\":false,\"organization\":\"*\",\"group\":null,\"is_blocking\":false}}]}}]}}"
    );
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn vllm_metrics(State(sh): State<Arc<Shared>>) -> Response {
    if let Some(r) = scrape_fault(&sh) {
        return r;
    }
    let text = metrics::render(&lock(&sh.engine), sh.dialect, sh.created_unix);
    exposition(text)
}

fn exposition(text: String) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

fn scrape_fault(sh: &Shared) -> Option<Response> {
    let fault = sh.faults.draw_scrape(&mut lock(&sh.rng));
    match fault {
        ScrapeFault::None => None,
        ScrapeFault::Down => Some((StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable").into_response()),
        ScrapeFault::Garbage => Some(exposition(
            "<html><body>502 Bad Gateway</body></html>\nvllm:num_requests_running{engine=\"0\" 1.0\n\u{1}\u{2}garbage 1 2 3 4\n"
                .to_owned(),
        )),
    }
}

/// A validated generation request, common to both endpoints.
struct Generation {
    endpoint: Endpoint,
    prompt_tokens: u32,
    template_tokens: u32,
    prompt_key: u64,
    /// The prompt's full blocks, keyed by their prefix (the engine's prefix cache).
    block_keys: std::sync::Arc<[u64]>,
    max_tokens: Option<u32>,
    ignore_eos: bool,
    stream: bool,
    include_usage: bool,
}

async fn chat(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let req: ChatRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return invalid_body(&e),
    };
    if let Some(r) = check_model(&sh, req.model.as_deref(), req.n) {
        return r;
    }
    if req.messages.is_empty() {
        return bad_request("messages must not be empty");
    }
    let (prompt, template, prompt_key, block_keys) = chat_prompt(&sh, &req.messages);
    let g = Generation {
        endpoint: Endpoint::Chat,
        prompt_tokens: prompt,
        template_tokens: template,
        prompt_key,
        block_keys,
        max_tokens: req.max_completion_tokens.or(req.max_tokens),
        ignore_eos: req.ignore_eos,
        stream: req.stream,
        include_usage: req.stream_options.is_some_and(|o| o.include_usage),
    };
    generate(sh, g, &headers).await
}

async fn completions(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let req: CompletionRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return invalid_body(&e),
    };
    if let Some(r) = check_model(&sh, req.model.as_deref(), req.n) {
        return r;
    }
    let Some(text) = prompt_text(&req.prompt) else {
        return bad_request("prompt must be a string (batched prompts are not simulated)");
    };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    // The BOS token, then the text.
    let mut blocks = BlockHashes::new(1, lock(&sh.engine).cfg.block_size);
    blocks.feed(&text);
    let g = Generation {
        endpoint: Endpoint::Completion,
        prompt_tokens: completion_prompt_tokens(&text),
        template_tokens: 0,
        prompt_key: hasher.finish(),
        block_keys: blocks.keys.into(),
        max_tokens: Some(req.max_tokens.unwrap_or(16)),
        ignore_eos: req.ignore_eos,
        stream: req.stream,
        include_usage: req.stream_options.is_some_and(|o| o.include_usage),
    };
    generate(sh, g, &headers).await
}

/// The 400 for a body that is not the request's JSON.
fn invalid_body(e: &serde_json::Error) -> Response {
    json_error(
        StatusCode::BAD_REQUEST,
        &format!("invalid request body: {e}"),
        "Bad Request",
        None,
    )
}

/// A chat prompt's tokens as the engine sees them: the chat template (or, with a system message,
/// its per-message share) plus each message's text and framing. Returns (prompt tokens, template
/// tokens, prefix-cache key).
fn chat_prompt(
    sh: &Shared,
    messages: &[openai::Message],
) -> (u32, u32, u64, std::sync::Arc<[u64]>) {
    let (per_msg, template, block_size) = {
        let e = lock(&sh.engine);
        (
            e.model.per_message_tokens,
            e.model.chat_template_tokens,
            e.cfg.block_size,
        )
    };
    let has_system = messages.iter().any(|m| m.role == "system");
    let template = if has_system { per_msg } else { template };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut prompt = template;
    let mut blocks = BlockHashes::new(template, block_size);
    for m in messages {
        let text = openai::content_text(&m.content);
        prompt += per_msg + tokenizer::count_tokens(&text);
        m.role.hash(&mut hasher);
        text.hash(&mut hasher);
        m.role.hash(&mut blocks.hasher);
        blocks.advance(per_msg);
        blocks.feed(&text);
    }
    (prompt, template, hasher.finish(), blocks.keys.into())
}

/// A completion prompt's tokens: its text and the BOS token.
fn completion_prompt_tokens(text: &str) -> u32 {
    tokenizer::count_tokens(text).max(1) + 1
}

/// A completion `prompt`: a string, or a list of exactly one string.
fn prompt_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(a) if a.len() == 1 => a[0].as_str().map(str::to_owned),
        _ => None,
    }
}

/// vLLM's `POST /tokenize`: the count the generation endpoints would charge for the same prompt
/// or messages, and `max_model_len`.
async fn tokenize(State(sh): State<Arc<Shared>>, body: Bytes) -> Response {
    let req: openai::TokenizeRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(&format!("invalid request body: {e}")),
    };
    if let Some(r) = check_model(&sh, req.model.as_deref(), None) {
        return r;
    }
    let (count, key) = match (&req.messages, &req.prompt) {
        (Some(m), None) if !m.is_empty() => {
            let (n, _, key, _) = chat_prompt(&sh, m);
            (n, key)
        }
        (None, Some(p)) => match prompt_text(p) {
            Some(t) => (completion_prompt_tokens(&t), t.len() as u64),
            None => return bad_request("prompt must be a string"),
        },
        _ => return bad_request("give either prompt or messages"),
    };
    let max_model_len = lock(&sh.engine).cfg.max_model_len;
    let body = openai::tokenize_response(count, max_model_len, key);
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A 404 for another model, a 400 for `n` ≠ 1; `None` when the request may go on.
fn check_model(sh: &Shared, model: Option<&str>, n: Option<u32>) -> Option<Response> {
    if let Some(m) = model
        && m != sh.model_id
    {
        return Some(json_error(
            StatusCode::NOT_FOUND,
            &format!("The model `{m}` does not exist."),
            "NotFoundError",
            Some("model"),
        ));
    }
    if n.is_some_and(|n| n != 1) {
        return Some(bad_request("the simulator serves n = 1 only"));
    }
    None
}

async fn generate(sh: Arc<Shared>, g: Generation, headers: &HeaderMap) -> Response {
    let (max_tokens, expected) = match token_budget(&sh, &g) {
        Ok(budget) => budget,
        Err(message) => return too_long(&message),
    };
    let fault = sh.faults.draw(&mut lock(&sh.rng), expected);
    if let Some(r) = fault_response(fault) {
        return r;
    }
    let Some(slot) = admit(&sh) else {
        return queue_full();
    };
    let seq = sh.next_id.fetch_add(1, Ordering::Relaxed);
    let id = response_id(g.endpoint, seq);
    let Some(rx) = submit(&sh, &g, max_tokens) else {
        return engine_down();
    };
    let head = ChunkHead::new(g.endpoint, &id, sh.created_unix as u64, &sh.model_id);
    if !g.stream {
        let body = full_body(rx, &head, &id, &sh, &g, seq).await;
        drop(slot);
        return body;
    }
    let timestamps = headers
        .get("x-llmscope-timestamps")
        .is_some_and(|v| v.as_bytes() == b"1");
    let mut stream = SseStream::new(&sh, &g, head, rx, seq, fault, timestamps);
    stream._slot = Some(slot);
    event_stream(stream)
}

/// One request counted in flight until its answer is done or dropped (a client that goes away
/// frees its slot, as vLLM's abort does).
struct Slot(Arc<AtomicU64>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// vLLM's admission check (`check_admission`): with `--max-num-queued-reqs`, a request that
/// would put more than that many in flight is refused and counted.
fn admit(sh: &Shared) -> Option<Slot> {
    let limit = lock(&sh.engine).cfg.max_num_queued_reqs;
    let before = sh.in_flight.fetch_add(1, Ordering::Relaxed);
    let slot = Slot(Arc::clone(&sh.in_flight));
    if limit.is_some_and(|l| before + 1 > u64::from(l)) {
        drop(slot);
        lock(&sh.engine).stats.admission_rejections += 1;
        return None;
    }
    Some(slot)
}

/// vLLM's 503 at `--max-num-queued-reqs` (`QueueOverflowError`), in its words.
fn queue_full() -> Response {
    json_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "The engine is currently busy and cannot accept new requests. Please try again later or on a different instance.",
        "ServiceUnavailableError",
        None,
    )
}

/// The engine's `max_tokens` for the request and the answer length it expects (what the fault
/// draw sizes a mid-stream fault by), or vLLM's message when the prompt does not fit.
fn token_budget(sh: &Shared, g: &Generation) -> Result<(u32, u32), String> {
    let (max_model_len, mean_out) = {
        let e = lock(&sh.engine);
        (e.cfg.max_model_len, e.k.output_mean_tokens)
    };
    if let Some(err) = length_error(g.prompt_tokens, g.max_tokens, max_model_len) {
        return Err(err);
    }
    let max_tokens = g.max_tokens.unwrap_or(max_model_len - g.prompt_tokens);
    let expected = if g.ignore_eos {
        max_tokens
    } else {
        max_tokens.min(mean_out as u32)
    };
    Ok((max_tokens, expected))
}

/// vLLM's 400 for a prompt that does not fit `max_model_len`.
fn too_long(message: &str) -> Response {
    json_error(
        StatusCode::BAD_REQUEST,
        message,
        "BadRequestError",
        Some("input_tokens"),
    )
}

/// The 503 once the engine thread has stopped.
fn engine_down() -> Response {
    json_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "engine is shut down",
        "ServiceUnavailable",
        None,
    )
}

/// The error answer of a fault drawn before streaming starts; `None` for the others.
fn fault_response(fault: RequestFault) -> Option<Response> {
    let (status, message, kind) = match fault {
        RequestFault::Http500 => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "simulated internal error",
            "InternalServerError",
        ),
        RequestFault::Http429 => (
            StatusCode::TOO_MANY_REQUESTS,
            "simulated rate limit: too many requests",
            "RateLimitError",
        ),
        RequestFault::Http400 => (
            StatusCode::BAD_REQUEST,
            "simulated rejection (--fault-400): the server refused this request",
            "BadRequestError",
        ),
        _ => return None,
    };
    Some(json_error(status, message, kind, None))
}

/// `chatcmpl-…` or `cmpl-…`: the sequence number, scrambled.
fn response_id(endpoint: Endpoint, seq: u64) -> String {
    match endpoint {
        Endpoint::Chat => format!("chatcmpl-{:016x}", seq.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        Endpoint::Completion => format!("cmpl-{:016x}", seq.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
    }
}

/// Hands the request to the engine thread; its tokens come back on the returned channel. `None`
/// when the engine thread has stopped.
fn submit(sh: &Shared, g: &Generation, max_tokens: u32) -> Option<tmpsc::UnboundedReceiver<Tok>> {
    let (tx, rx) = tmpsc::unbounded_channel();
    let req = NewRequest {
        prompt_tokens: g.prompt_tokens,
        template_tokens: g.template_tokens,
        prompt_key: g.prompt_key,
        block_keys: g.block_keys.clone(),
        max_tokens,
        max_tokens_param: g.max_tokens,
        ignore_eos: g.ignore_eos,
        n: 1,
    };
    let sent = lock(&sh.cmd).send(Cmd::Submit {
        req,
        arrival: sh.clock.now(),
        tx,
    });
    sent.is_ok().then_some(rx)
}

/// The `text/event-stream` response that `stream` writes.
fn event_stream(stream: SseStream) -> Response {
    let body = Body::from_stream(futures_util::stream::unfold(stream, SseStream::next));
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    resp
}

/// vLLM's 400 for prompts that do not fit `max_model_len`.
fn length_error(prompt: u32, max_tokens: Option<u32>, max_model_len: u32) -> Option<String> {
    let requested = max_tokens.unwrap_or(0);
    if prompt >= max_model_len || prompt + requested > max_model_len {
        return Some(format!(
            "This model's maximum context length is {max_model_len} tokens. However, you requested {requested} output tokens and your prompt contains {prompt} input tokens, for a total of {} tokens. Please reduce the length of the input prompt or the number of requested output tokens.",
            prompt + requested
        ));
    }
    None
}

async fn full_body(
    mut rx: tmpsc::UnboundedReceiver<Tok>,
    head: &ChunkHead,
    id: &str,
    sh: &Shared,
    g: &Generation,
    seed: u64,
) -> Response {
    let mut text = String::new();
    let mut n = 0;
    while let Some(t) = rx.recv().await {
        for i in n..=t.index {
            text.push_str(tokenizer::piece(seed, i));
        }
        n = t.index + 1;
        if let Some(f) = t.finish {
            let done = openai::Completed {
                text: &text,
                finish: f.as_str(),
                usage: openai::Usage {
                    prompt: g.prompt_tokens,
                    completion: n,
                    cached: t.cached,
                },
            };
            return completed(sh, head.endpoint, id, &done);
        }
    }
    json_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the engine stopped before the request finished",
        "InternalServerError",
        None,
    )
}

/// The JSON body of a finished non-streaming request.
fn completed(sh: &Shared, endpoint: Endpoint, id: &str, done: &openai::Completed) -> Response {
    let body = openai::full_response(endpoint, id, sh.created_unix as u64, &sh.model_id, done);
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Role,
    Tokens,
    Usage,
    Done,
    End,
}

/// State of one SSE response body.
struct SseStream {
    head: ChunkHead,
    rx: tmpsc::UnboundedReceiver<Tok>,
    phase: Phase,
    produced: u32,
    seed: u64,
    fault: RequestFault,
    stalled: bool,
    stall_for: Duration,
    include_usage: bool,
    timestamps: bool,
    prompt: u32,
    /// Prompt tokens the prefix cache held (from the engine's tokens).
    cached: u32,
    /// Its place among the requests in flight, given back when the stream is done or dropped.
    _slot: Option<Slot>,
}

type Chunk = Result<Bytes, std::io::Error>;

impl SseStream {
    /// A stream for request `seq` of `g`, reading tokens from `rx`; `fault` was drawn for it.
    fn new(
        sh: &Shared,
        g: &Generation,
        head: ChunkHead,
        rx: tmpsc::UnboundedReceiver<Tok>,
        seq: u64,
        fault: RequestFault,
        timestamps: bool,
    ) -> Self {
        SseStream {
            head,
            rx,
            phase: if g.endpoint == Endpoint::Chat {
                Phase::Role
            } else {
                Phase::Tokens
            },
            produced: 0,
            seed: seq,
            fault,
            stalled: false,
            stall_for: sh.faults.stall_for,
            include_usage: g.include_usage,
            timestamps,
            prompt: g.prompt_tokens,
            cached: 0,
            _slot: None,
        }
    }

    async fn next(mut self) -> Option<(Chunk, Self)> {
        let mut out = String::with_capacity(320);
        let stamp = |on: bool| on.then(unix_ns);
        match self.phase {
            Phase::Role => {
                self.head.role_event(&mut out, stamp(self.timestamps));
                self.phase = Phase::Tokens;
            }
            Phase::Tokens => {
                if let Some(err) = self.tokens(&mut out).await {
                    self.phase = Phase::End;
                    return Some((Err(err), self));
                }
            }
            Phase::Usage => {
                let usage = openai::Usage {
                    prompt: self.prompt,
                    completion: self.produced,
                    cached: self.cached,
                };
                self.head
                    .usage_event(&mut out, usage, stamp(self.timestamps));
                self.phase = Phase::Done;
            }
            Phase::Done => {
                out.push_str("data: [DONE]\n\n");
                self.phase = Phase::End;
            }
            Phase::End => return None,
        }
        Some((Ok(Bytes::from(out)), self))
    }

    /// Waits for the next token(s) and writes one content chunk; an error ends the connection.
    async fn tokens(&mut self, out: &mut String) -> Option<std::io::Error> {
        let Some(last) = self.recv_coalesced().await else {
            return Some(std::io::Error::other("engine stopped"));
        };
        let finish = last.finish;
        self.cached = last.cached;
        let text = self.text_through(last.index);
        let count = last.index + 1 - self.produced;
        let before = self.produced;
        self.produced += count;
        if let Some(err) = self.mid_stream_fault().await {
            return Some(err);
        }
        self.content_chunk(out, &text, finish, before);
        if finish.is_some() {
            self.phase = if self.include_usage {
                Phase::Usage
            } else {
                Phase::Done
            };
        }
        None
    }

    /// The next token; tokens that queued up while the client was slow come with it (the last
    /// of them is returned), as in vLLM. `None` when the engine stopped.
    async fn recv_coalesced(&mut self) -> Option<Tok> {
        let mut last = self.rx.recv().await?;
        while last.finish.is_none() {
            match self.rx.try_recv() {
                Ok(t) => last = t,
                Err(_) => break,
            }
        }
        Some(last)
    }

    /// The text of the tokens not yet sent, through token `index`.
    fn text_through(&self, index: u32) -> String {
        let mut text = String::new();
        for i in self.produced..=index {
            text.push_str(tokenizer::piece(self.seed, i));
        }
        text
    }

    /// A disconnect (the error that ends the connection) or a stall, once enough tokens went out.
    async fn mid_stream_fault(&mut self) -> Option<std::io::Error> {
        match self.fault {
            RequestFault::DisconnectAfter(k) if self.produced >= k => Some(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "simulated disconnect",
            )),
            RequestFault::StallAfter(k) if self.produced >= k && !self.stalled => {
                self.stalled = true;
                tokio::time::sleep(self.stall_for).await;
                None
            }
            _ => None,
        }
    }

    /// The content chunk of tokens `before..produced`, or the malformed event when the fault
    /// falls among them.
    fn content_chunk(
        &self,
        out: &mut String,
        text: &str,
        finish: Option<FinishReason>,
        before: u32,
    ) {
        if let RequestFault::MalformedAt(k) = self.fault
            && before < k
            && self.produced >= k
        {
            self.head.malformed_event(out);
        } else {
            let emit = self.timestamps.then(unix_ns);
            self.head
                .content_event(out, text, finish.map(FinishReason::as_str), emit);
        }
    }
}

// ---------------------------------------------------------------- Kueue + kube-state-metrics

/// Kueue's page is rendered per scrape: its counters move as the simulated workloads are
/// admitted and evicted ([`crate::cluster::Team::activity_at`]), [`crate::cluster::HISTORY_S`]
/// into Kueue's life when the simulator starts.
fn cluster_router(teams: crate::cluster::Teams) -> Router {
    let ksm = crate::cluster::ksm_page(&teams);
    let teams = Arc::new(teams);
    let started = Instant::now();
    let kueue = move || {
        let t = crate::cluster::HISTORY_S + started.elapsed().as_secs_f64();
        std::future::ready(exposition(crate::cluster::kueue_page_at(&teams, t)))
    };
    Router::new().route("/kueue/metrics", get(kueue)).route(
        "/ksm/metrics",
        get(move || std::future::ready(exposition(ksm.clone()))),
    )
}

// ---------------------------------------------------------------- dcgm-exporter

fn dcgm_router(sh: Arc<Shared>) -> Router {
    Router::new()
        .route("/metrics", get(dcgm_metrics))
        .route("/health", get(|| async { StatusCode::OK }))
        .with_state(sh)
}

async fn dcgm_metrics(State(sh): State<Arc<Shared>>) -> Response {
    if let Some(r) = scrape_fault(&sh) {
        return r;
    }
    let text = lock(&sh.dcgm_text).clone();
    exposition(String::clone(&text))
}

fn refresh_dcgm(sh: &Shared, state: &mut DcgmState, id: &GpuIdentity, interval_s: f64) {
    let text = {
        let e = lock(&sh.engine);
        let now = sh.clock.now();
        let r = match &sh.gpu {
            Some(gpu) => {
                gpu.with_timeline(|t| state.collect_on(&e, t, gpu.fb_used_mib, now, interval_s))
            }
            None => state.collect(&e, now, interval_s),
        };
        dcgm_text::render(id, &r)
    };
    *lock(&sh.dcgm_text) = Arc::new(text);
}

async fn dcgm_collector(
    sh: Arc<Shared>,
    mut state: DcgmState,
    id: GpuIdentity,
    interval: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => refresh_dcgm(&sh, &mut state, &id, interval.as_secs_f64()),
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}
