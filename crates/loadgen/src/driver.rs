//! The run: one dispatch loop for every schedule, request tasks, one aggregator.
//!
//! For each stage, `dispatch` takes the next intended send time from the stage's arrivals (none
//! for closed loop; from a pacer thread for open loop, which sleeps precisely instead of on the
//! event loop's 1 ms timer wheel) and the next free slot from its gate (a semaphore of
//! `concurrency` permits, opened gradually by a ramp-up; none for uncapped open loop), then
//! spawns the request. Closed loop falls out of this: a slot frees when a request ends, and the
//! next one is sent at once. Each request task sends exactly one [`RequestRecord`] to the stage's
//! channel — a drop guard sends an `internal` one if a task dies — and the aggregator in
//! `run_stage` folds records into [`StageStats`] and hands them in batches to the [`Observer`].
//! When sending stops (duration, request count, or [`RunControl::stop`]) requests in flight get
//! the grace period to finish; then they are cancelled and counted as `cancelled`.
//!
//! A server that rejects requests must not be flooded (issue 12: a closed loop re-sending each
//! rejected request at once sent 1.3 million requests in a minute). In closed loop each worker
//! slot carries its failure streak: after a failed request the slot is held for a backoff
//! ([`backoff`]: 10 ms doubling to 1 s, reset by a success) before the next send. Open-loop
//! schedules keep their schedule. In every mode the run stops early when requests keep failing
//! and none succeeds ([`GIVE_UP_FAILURES`] in a row over [`GIVE_UP_AFTER`]); the report says why
//! in [`LoadReport::stopped_early`].

use crate::clock::anchor;
use crate::http::{Client, ReadLimits};
use crate::monitor::{AssessInput, LoadReach, Monitor, assess};
use crate::plan::{LoadPlan, SessionPlan, StagePlan};
use crate::record::{ErrorKind, RequestRecord};
use crate::report::{ClientReport, LoadReport, StageReport};
use crate::response::Outcome;
use crate::reuse::ReuseShape;
use crate::schedule::{Mode, OpenArrivals, closed_ramp_offsets};
use crate::shard::{Shard, ShardInfo};
use crate::stats::{StageMeta, StageStats};
use bytes::Bytes;
use hyper::Uri;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::task::JoinHandle;

/// What the run has been told to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Run,
    /// Stop sending; let requests in flight finish within the grace period.
    Stop,
    /// Stop sending and cancel requests in flight now.
    Abort,
}

/// A handle to stop a run from outside: the caller's cancellation (the binary turns Ctrl-C
/// into [`RunControl::stop`], a second into [`RunControl::abort`]; the library watches no signal).
#[derive(Debug, Clone)]
pub struct RunControl {
    tx: Arc<watch::Sender<Signal>>,
}

impl Default for RunControl {
    fn default() -> Self {
        RunControl {
            tx: Arc::new(watch::channel(Signal::Run).0),
        }
    }
}

impl RunControl {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops sending; in-flight requests may finish within the grace period.
    pub fn stop(&self) {
        self.tx
            .send_if_modified(|s| (*s == Signal::Run).then(|| *s = Signal::Stop).is_some());
    }

    /// Stops sending and cancels what is in flight.
    pub fn abort(&self) {
        self.tx.send_replace(Signal::Abort);
    }

    pub fn signal(&self) -> Signal {
        *self.tx.borrow()
    }

    fn subscribe(&self) -> watch::Receiver<Signal> {
        self.tx.subscribe()
    }
}

/// Live figures for a progress display.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub stage: u32,
    pub stages: u32,
    pub label: String,
    pub elapsed: Duration,
    /// Planned measured duration of the stage (warmup excluded), if any.
    pub planned: Option<Duration>,
    pub in_flight: u64,
    pub completed: u64,
    pub failed: u64,
    pub output_tokens_per_s: f64,
    /// Sending has stopped; waiting for requests in flight.
    pub draining: bool,
}

impl Progress {
    /// `12s/30s  in flight 32  done 140  errors 0  480 tok/s`, and `draining` once sending stopped.
    pub fn line(&self) -> String {
        let of = self
            .planned
            .map_or(String::new(), |d| format!("/{:.0}s", d.as_secs_f64()));
        let state = if self.draining { "  draining" } else { "" };
        format!(
            "{:.0}s{of}  in flight {}  done {}  errors {}  {:.0} tok/s{state}",
            self.elapsed.as_secs_f64(),
            self.in_flight,
            self.completed,
            self.failed,
            self.output_tokens_per_s
        )
    }
}

/// Receives the run's events, from the aggregator task. All methods default to nothing.
pub trait Observer: Send {
    fn stage_started(&mut self, _index: u32, _plan: &StagePlan) {}
    /// A batch of finished requests (warmup ones included, flagged).
    fn records(&mut self, _batch: &[RequestRecord]) {}
    /// Called about five times a second.
    fn progress(&mut self, _p: &Progress) {}
    fn stage_finished(&mut self, _report: &StageReport) {}
    /// A stage's statistics, whole, with what the driver knew of it (a shard writes them for
    /// `llmscope merge`).
    fn stage_measured(&mut self, _stats: &StageStats, _meta: &StageMeta) {}
}

/// An observer that ignores everything.
impl Observer for () {}

/// Monotonic instants → Unix nanoseconds, through the process-wide anchor ([`crate::clock`]).
#[derive(Debug, Clone, Copy)]
struct Clock;

impl Clock {
    fn ns(&self, t: Instant) -> u64 {
        anchor().unix_ns(t)
    }
}

/// Shared by the dispatcher and the request tasks of one stage.
struct StageCtx {
    client: Arc<Client>,
    uri: Uri,
    bodies: Arc<[Bytes]>,
    /// A trace's send offsets: the k-th arrival sends body k.
    trace: Option<Arc<[Duration]>>,
    stream: bool,
    limits: ReadLimits,
    timeout: Duration,
    stage: u32,
    warmup_end: Instant,
    clock: Clock,
    tx: mpsc::UnboundedSender<RequestRecord>,
    gauge: Arc<Gauge>,
    abort: watch::Receiver<bool>,
    next_id: Arc<AtomicU64>,
    /// The shard this process drives (0/1 unsharded): its `k`-th request is the whole load's
    /// `shard.id(k)`.
    shard: Shard,
    /// Closed loop: failed requests hold their slot for a backoff.
    backoff: bool,
    /// Failure streaks of the worker slots not in use (one per free slot, at most).
    streaks: Arc<std::sync::Mutex<Vec<u32>>>,
    /// `--shared-prefix`: tokens and groups, to tag each request with its group.
    reuse: ReuseShape,
    /// `--turns`: each dispatch starts a session of several requests.
    sessions: Option<Arc<SessionPlan>>,
    /// A trace's repeated prompt tokens, per body.
    trace_repeated: Option<Arc<[u32]>>,
    /// Set when sending stops: sessions send no further turn.
    sending_over: AtomicBool,
}

impl StageCtx {
    /// The next request's number in the whole load.
    fn next_id(&self) -> u64 {
        self.shard.id(self.next_id.fetch_add(1, Ordering::Relaxed))
    }
}

/// The longest a closed-loop stage waits for its connections to open before it starts sending.
const PREWARM_WITHIN: Duration = Duration::from_secs(5);

/// The first backoff after a failure; it doubles with each failure in a row, up to the max.
const BACKOFF_FIRST: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// Failures in a row, with no success for [`GIVE_UP_AFTER`], that stop the run.
pub const GIVE_UP_FAILURES: u64 = 20;
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(5);

/// How long a worker waits before its next send after `streak` failures in a row.
pub fn backoff(streak: u32) -> Duration {
    match streak {
        0 => Duration::ZERO,
        n => (BACKOFF_FIRST * 2u32.pow((n - 1).min(10))).min(BACKOFF_MAX),
    }
}

/// Requests in flight and their peak.
#[derive(Debug, Default)]
struct Gauge {
    in_flight: AtomicU64,
    peak: AtomicU64,
    /// Text chunks received so far (output tokens of non-streamed answers), for progress.
    streamed: AtomicU64,
}

/// Runs every stage of `plan` and reports.
pub async fn run(plan: &LoadPlan, observer: &mut dyn Observer, control: &RunControl) -> LoadReport {
    let clock = Clock;
    let t0 = Instant::now();
    let monitor = Monitor::start();
    let next_id = Arc::new(AtomicU64::new(0));
    let mut done: Vec<(StageStats, StageMeta, StageReport)> = Vec::new();
    let mut stopped_early = None;
    for (i, sp) in plan.stages.iter().enumerate() {
        if control.signal() != Signal::Run {
            break;
        }
        observer.stage_started(i as u32, sp);
        let out = run_stage(
            plan,
            i as u32,
            sp,
            clock,
            next_id.clone(),
            observer,
            control,
        )
        .await;
        let mut report = out.stats.report(&out.meta, &plan.slo);
        attach_client(&mut report, &monitor, out.started, out.ended);
        observer.stage_finished(&report);
        observer.stage_measured(&out.stats, &out.meta);
        done.push((out.stats, out.meta, report));
        stopped_early = stopped_early.or(out.stopped_early);
    }
    let total = total_report(plan, &done, &monitor, t0);
    LoadReport {
        target: plan.target.to_string(),
        model: plan.model.clone(),
        endpoint: plan
            .endpoint
            .path()
            .trim_start_matches("/v1/")
            .replace('/', "_"),
        stream: plan.stream,
        started_unix_ns: clock.ns(t0),
        interrupted: control.signal() != Signal::Run && stopped_early.is_none(),
        stopped_early,
        shard: shard_info(plan, done.first().and_then(|(_, m, _)| m.started_unix_ns)),
        shards: None,
        total,
        stages: done.into_iter().map(|(_, _, r)| r).collect(),
    }
}

/// Waits until the wall clock reaches `at` (`--start-at`), or the run is stopped.
async fn hold_until(at: SystemTime, control: &RunControl) {
    let Ok(wait) = at.duration_since(SystemTime::now()) else {
        return;
    };
    let mut signal = control.subscribe();
    tokio::select! {
        _ = tokio::time::sleep(wait) => {}
        _ = signal.wait_for(|s| *s != Signal::Run) => {}
    }
}

/// How this process took part in a sharded load: when its first stage began, and how late
/// after `--start-at`.
fn shard_info(plan: &LoadPlan, started_unix_ns: Option<u64>) -> Option<ShardInfo> {
    let part = plan.shard.as_ref()?;
    let at = part.start_at.map(unix_ns);
    Some(ShardInfo {
        index: part.shard.index,
        count: part.shard.count,
        start_at_unix_ns: at,
        started_unix_ns: started_unix_ns.unwrap_or(0),
        // A shard stopped before its first stage began was not late: it did not start.
        late_ms: at
            .zip(started_unix_ns)
            .map(|(at, s)| s.saturating_sub(at) as f64 / 1e6),
        server_clock_offset_ms: part.server_clock_offset_ms,
    })
}

fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Adds the monitor's assessment to the client figures measured from the records.
fn attach_client(report: &mut StageReport, monitor: &Monitor, from: Instant, to: Instant) {
    let measured = std::mem::take(&mut report.client);
    report.client = ClientReport {
        receive_lag_ms: measured.receive_lag_ms,
        first_tokens_read_behind: measured.first_tokens_read_behind,
        ..client_report(monitor, report, from, to)
    };
}

fn client_report(monitor: &Monitor, r: &StageReport, from: Instant, to: Instant) -> ClientReport {
    let unit = if r.load.unit == "requests_per_s" {
        "req/s"
    } else {
        "concurrency"
    };
    let load = match (r.load.target, r.load.achieved) {
        (Some(target), Some(achieved)) => Some(LoadReach {
            target,
            achieved,
            unit,
        }),
        _ => None,
    };
    assess(&AssessInput {
        samples: monitor.between(from, to),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        load,
        schedule_lag_p99_ms: r.load.schedule_lag_ms.as_ref().and_then(|s| s.p99),
    })
}

/// The merge of all stages (a single stage is its own total).
fn total_report(
    plan: &LoadPlan,
    done: &[(StageStats, StageMeta, StageReport)],
    monitor: &Monitor,
    t0: Instant,
) -> StageReport {
    if let [(_, _, only)] = done {
        return only.clone();
    }
    let stages: Vec<_> = done.iter().map(|(s, m, _)| (s, m)).collect();
    let first = plan.stages.first().map_or("closed", |s| s.mode.name());
    let (stats, meta) = crate::stats::run_total(&stages, plan.reuse, first);
    let mut report = stats.report(&meta, &plan.slo);
    attach_client(&mut report, monitor, t0, Instant::now());
    report
}

struct StageOutcome {
    stats: StageStats,
    meta: StageMeta,
    started: Instant,
    ended: Instant,
    stopped_early: Option<String>,
}

/// Live counters of the aggregator, for progress.
#[derive(Default)]
struct Live {
    completed: u64,
    failed: u64,
    window: VecDeque<(Instant, u64)>,
}

impl Live {
    fn add(&mut self, r: &RequestRecord) {
        if r.ok() {
            self.completed += 1;
        } else {
            self.failed += 1;
        }
    }

    /// Tokens streamed per second over about the last second, from the running count
    /// `streamed` (so long answers show while they stream, not only when they end).
    fn rate(&mut self, now: Instant, streamed: u64) -> f64 {
        self.window.push_back((now, streamed));
        while self.window.len() > 6 {
            self.window.pop_front();
        }
        let (t, n) = self.window[0];
        let dt = now.duration_since(t).as_secs_f64();
        if dt > 0.0 {
            streamed.saturating_sub(n) as f64 / dt
        } else {
            0.0
        }
    }
}

async fn run_stage(
    plan: &LoadPlan,
    index: u32,
    sp: &StagePlan,
    clock: Clock,
    next_id: Arc<AtomicU64>,
    observer: &mut dyn Observer,
    control: &RunControl,
) -> StageOutcome {
    // A closed loop sends to all its streams at once: their connections are opened first, paced,
    // so that connecting is not timed as the server's first token.
    if let Mode::Closed { concurrency } = sp.mode
        && sp.ramp_up.is_zero()
    {
        plan.client
            .prewarm(concurrency as usize, PREWARM_WITHIN)
            .await;
    }
    if index == 0
        && let Some(at) = plan.shard.as_ref().and_then(|s| s.start_at)
    {
        hold_until(at, control).await;
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let (abort_tx, abort_rx) = watch::channel(false);
    let started = Instant::now();
    let gauge = Arc::new(Gauge::default());
    let ctx = Arc::new(StageCtx {
        client: plan.client.clone(),
        uri: plan.target.uri(plan.endpoint.path()),
        bodies: plan.bodies.clone(),
        trace: plan.trace.clone(),
        stream: plan.stream,
        limits: ReadLimits {
            first_token: plan.ttft_timeout,
            idle: plan.idle_timeout,
        },
        timeout: plan.timeout,
        stage: index,
        warmup_end: started + sp.warmup,
        clock,
        tx,
        gauge: gauge.clone(),
        abort: abort_rx,
        next_id,
        shard: plan.shard.as_ref().map_or_else(Shard::default, |s| s.shard),
        backoff: matches!(sp.mode, Mode::Closed { .. }),
        streaks: Arc::default(),
        reuse: plan.reuse,
        sessions: plan.sessions.clone(),
        trace_repeated: plan.trace_repeated.clone(),
        sending_over: AtomicBool::new(false),
    });
    // Shards draw independent arrivals (shard 0, and an unsharded load, keep the plain seed).
    let salt = u64::from(ctx.shard.index).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let seed = plan.seed.wrapping_add(u64::from(index)).wrapping_add(salt);
    let dispatcher = tokio::spawn(dispatch(ctx, sp.clone(), seed, control.subscribe()));
    let mut agg = Aggregator {
        plan,
        index,
        sp,
        started,
        gauge,
        abort: abort_tx,
        aborted: false,
        sending_ended: None,
        stats: StageStats::default(),
        live: Live::default(),
        streak: FailStreak::new(started),
        control: control.clone(),
        in_flight: InFlight {
            from: clock.ns(started + sp.warmup),
            to: None,
            busy_ns: 0,
        },
    };
    agg.collect(rx, dispatcher, control.subscribe(), observer)
        .await;
    agg.finish()
}

/// The one consumer of a stage's records: statistics, progress, the end of the stage.
struct Aggregator<'a> {
    plan: &'a LoadPlan,
    index: u32,
    sp: &'a StagePlan,
    started: Instant,
    gauge: Arc<Gauge>,
    abort: watch::Sender<bool>,
    aborted: bool,
    sending_ended: Option<Instant>,
    stats: StageStats,
    live: Live,
    streak: FailStreak,
    control: RunControl,
    in_flight: InFlight,
}

/// Failures since the last success, to give up on a server that rejects everything.
struct FailStreak {
    last_ok: Instant,
    failed: u64,
    /// Why the run was stopped, once it was.
    gave_up: Option<String>,
}

impl FailStreak {
    fn new(start: Instant) -> Self {
        FailStreak {
            last_ok: start,
            failed: 0,
            gave_up: None,
        }
    }

    fn add(&mut self, r: &RequestRecord, now: Instant) {
        match r.error {
            None => (self.last_ok, self.failed) = (now, 0),
            Some(ErrorKind::Cancelled) => {}
            Some(_) => self.failed += 1,
        }
    }

    /// Whether to give up now: enough failures in a row, and no success for long enough.
    fn hopeless(&self, now: Instant) -> bool {
        self.gave_up.is_none()
            && self.failed >= GIVE_UP_FAILURES
            && now.duration_since(self.last_ok) >= GIVE_UP_AFTER
    }
}

impl Aggregator<'_> {
    /// Folds records until every request of the stage has reported.
    async fn collect(
        &mut self,
        mut rx: mpsc::UnboundedReceiver<RequestRecord>,
        mut dispatcher: JoinHandle<Instant>,
        mut signals: watch::Receiver<Signal>,
        observer: &mut dyn Observer,
    ) {
        let mut batch = Vec::with_capacity(1024);
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        loop {
            tokio::select! {
                n = rx.recv_many(&mut batch, 4096) => {
                    if n == 0 {
                        return;
                    }
                    self.add(&batch);
                    observer.records(&batch);
                    batch.clear();
                }
                end = &mut dispatcher, if self.sending_ended.is_none() => {
                    self.sending_stopped(end.unwrap_or_else(|_| Instant::now()));
                }
                _ = signals.changed(), if !self.aborted => {
                    if *signals.borrow() == Signal::Abort {
                        self.cancel_in_flight();
                    }
                }
                now = tick.tick() => {
                    let now = now.into_std();
                    // The grace bounds the drain of a timed stage or of a stop asked for; a stage
                    // of N requests waits for all N (each still bounded by the request timeout):
                    // a deep queue is what it measures, not a reason to cancel.
                    let drain_bounded = self.sp.duration.is_some() || *signals.borrow() != Signal::Run;
                    if drain_bounded && self.sending_ended.is_some_and(|t| now.duration_since(t) >= self.plan.grace) {
                        self.cancel_in_flight();
                    }
                    self.give_up_if_hopeless(now);
                    observer.progress(&self.progress(now));
                }
            }
        }
    }

    fn add(&mut self, batch: &[RequestRecord]) {
        let now = Instant::now();
        for r in batch {
            self.stats.add(r, &self.plan.slo);
            self.live.add(r);
            self.in_flight.add(r);
            self.streak.add(r, now);
        }
    }

    /// Stops the run when requests keep failing and none succeeds.
    fn give_up_if_hopeless(&mut self, now: Instant) {
        if !self.streak.hopeless(now) {
            return;
        }
        let worst = self.stats.failures.iter().max_by_key(|(_, f)| f.count);
        let said = worst
            .and_then(|(_, f)| f.bodies.first())
            .map_or(String::new(), |b| format!("; the server said: {b}"));
        let kind = worst.map_or("?".to_owned(), |(k, _)| k.to_string());
        self.streak.gave_up = Some(format!(
            "no request succeeded for {:.0} s and the last {} failed (mostly {kind}){said} — stopped sending rather than flood a server that rejects every request",
            now.duration_since(self.streak.last_ok).as_secs_f64(),
            self.streak.failed
        ));
        self.control.stop();
    }

    fn sending_stopped(&mut self, at: Instant) {
        self.sending_ended = Some(at);
        self.in_flight.to = Some(anchor().unix_ns(at));
    }

    fn cancel_in_flight(&mut self) {
        if !self.aborted {
            self.aborted = true;
            let _ = self.abort.send(true);
        }
    }

    fn progress(&mut self, now: Instant) -> Progress {
        Progress {
            stage: self.index,
            stages: self.plan.stages.len() as u32,
            label: self.sp.label(),
            elapsed: now.duration_since(self.started),
            planned: self.sp.duration,
            in_flight: self.gauge.in_flight.load(Ordering::Relaxed),
            completed: self.live.completed,
            failed: self.live.failed,
            output_tokens_per_s: self
                .live
                .rate(now, self.gauge.streamed.load(Ordering::Relaxed)),
            draining: self.sending_ended.is_some(),
        }
    }

    fn finish(mut self) -> StageOutcome {
        let ended = Instant::now();
        let warmup_end = self.started + self.sp.warmup;
        let sending_ended = self.sending_ended.unwrap_or(ended);
        let send_window = sending_ended.saturating_duration_since(warmup_end);
        if !send_window.is_zero() {
            let ns = |t: Instant| anchor().unix_ns(t);
            self.stats
                .close_sending_window(ns(warmup_end), ns(sending_ended));
        }
        let meta = StageMeta {
            stage: Some(self.index),
            started_unix_ns: Some(anchor().unix_ns(self.started)),
            label: self.sp.label(),
            mode: Some(self.sp.mode),
            mode_name: self.sp.mode.name().into(),
            peak_concurrency: self.gauge.peak.load(Ordering::Relaxed),
            send_window_s: send_window.as_secs_f64(),
            sending_concurrency: (!send_window.is_zero())
                .then(|| self.in_flight.busy_ns as f64 / send_window.as_nanos() as f64),
            duration_s: ended.duration_since(self.started).as_secs_f64(),
            reuse: self.plan.reuse,
        };
        StageOutcome {
            stats: self.stats,
            meta,
            started: self.started,
            ended,
            stopped_early: self.streak.gave_up,
        }
    }
}

/// Time-weighted requests in flight while sending: Σ overlap of each request with the sending
/// window (end of warmup → end of sending), exact from the records.
struct InFlight {
    from: u64,
    /// Unknown until sending ends; records that arrive before that ended before it.
    to: Option<u64>,
    busy_ns: u128,
}

impl InFlight {
    fn add(&mut self, r: &RequestRecord) {
        let end = self.to.map_or(r.end_unix_ns, |to| r.end_unix_ns.min(to));
        self.busy_ns += u128::from(end.saturating_sub(r.sent_unix_ns.max(self.from)));
    }
}

/// Intended send times: none (closed loop) or from a pacer thread (open loop).
enum Arrivals {
    Closed,
    Open(mpsc::UnboundedReceiver<Instant>),
}

impl Arrivals {
    fn new(
        sp: &StagePlan,
        trace: Option<Arc<[Duration]>>,
        start: Instant,
        end: Option<Instant>,
        seed: u64,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        match (sp.mode, trace) {
            (Mode::Open { rate, arrival, .. }, _) => {
                let phase = sp.phase;
                let offsets =
                    OpenArrivals::new(rate, arrival, sp.ramp_up, seed).map(move |d| d + phase);
                std::thread::spawn(move || pace(offsets, start, end, tx));
            }
            (Mode::Trace { .. }, Some(trace)) => {
                std::thread::spawn(move || pace(trace.iter().copied(), start, end, tx));
            }
            _ => return Arrivals::Closed,
        }
        Arrivals::Open(rx)
    }

    /// The next send: `Some(None)` = now, with no intended time; `None` = no more.
    async fn next(&mut self) -> Option<Option<Instant>> {
        match self {
            Arrivals::Closed => Some(None),
            Arrivals::Open(rx) => rx.recv().await.map(Some),
        }
    }
}

/// Sleeps until each arrival and hands it over; stops at `end` or when the dispatcher is gone.
fn pace(
    offsets: impl IntoIterator<Item = Duration>,
    start: Instant,
    end: Option<Instant>,
    tx: mpsc::UnboundedSender<Instant>,
) {
    for offset in offsets {
        let t = start + offset;
        if end.is_some_and(|e| t >= e) {
            return;
        }
        loop {
            if tx.is_closed() {
                return;
            }
            let now = Instant::now();
            if t <= now {
                break;
            }
            std::thread::sleep((t - now).min(Duration::from_millis(50)));
        }
        if tx.send(t).is_err() {
            return;
        }
    }
}

/// Concurrency slots: a semaphore (opened gradually during a closed-loop ramp-up), or none.
struct Gate {
    slots: Option<Arc<Semaphore>>,
    ramp: Option<JoinHandle<()>>,
}

impl Gate {
    fn new(sp: &StagePlan, start: Instant) -> Self {
        let Some(n) = sp.mode.concurrency_limit() else {
            return Gate {
                slots: None,
                ramp: None,
            };
        };
        let ramping = matches!(sp.mode, Mode::Closed { .. }) && !sp.ramp_up.is_zero();
        if !ramping {
            return Gate {
                slots: Some(Arc::new(Semaphore::new(n as usize))),
                ramp: None,
            };
        }
        let slots = Arc::new(Semaphore::new(0));
        let (s, ramp) = (slots.clone(), sp.ramp_up);
        let task = tokio::spawn(async move {
            for offset in closed_ramp_offsets(n, ramp) {
                tokio::time::sleep_until((start + offset).into()).await;
                s.add_permits(1);
            }
        });
        Gate {
            slots: Some(slots),
            ramp: Some(task),
        }
    }

    /// A slot; `None` when unlimited. (The semaphore is never closed, so this never fails.)
    async fn acquire(&self) -> Option<OwnedSemaphorePermit> {
        match &self.slots {
            Some(s) => s.clone().acquire_owned().await.ok(),
            None => None,
        }
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        if let Some(t) = &self.ramp {
            t.abort();
        }
    }
}

/// `f`, unless the deadline passes or the run is told to stop first.
async fn unless_stopped<F: Future>(
    f: F,
    deadline: Option<Instant>,
    control: &mut watch::Receiver<Signal>,
) -> Option<F::Output> {
    let deadline = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        _ = control.wait_for(|s| *s != Signal::Run) => None,
        _ = deadline => None,
        v = f => Some(v),
    }
}

/// The one send loop, for every schedule. Returns when sending stopped.
async fn dispatch(
    ctx: Arc<StageCtx>,
    sp: StagePlan,
    seed: u64,
    mut control: watch::Receiver<Signal>,
) -> Instant {
    let start = ctx.warmup_end - sp.warmup;
    let deadline = sp.duration.map(|d| ctx.warmup_end + d);
    let mut arrivals = Arrivals::new(&sp, ctx.trace.clone(), start, deadline, seed);
    let gate = Gate::new(&sp, start);
    let (mut measured, mut sent) = (0u64, 0u64);
    while let Some(Some(intended)) = unless_stopped(arrivals.next(), deadline, &mut control).await {
        let Some(slot) = unless_stopped(gate.acquire(), deadline, &mut control).await else {
            break;
        };
        let now = Instant::now();
        let warmup = now < ctx.warmup_end;
        let streak = ctx
            .streaks
            .lock()
            .ok()
            .and_then(|mut s| s.pop())
            .unwrap_or(0);
        let worker = Worker { slot, streak };
        if let Some(sessions) = &ctx.sessions {
            // `--requests` counts requests: a session sends all its turns.
            tokio::spawn(session::run(
                ctx.clone(),
                sessions.clone(),
                intended,
                worker,
                ctx.shard.id(sent),
            ));
            measured += u64::from(!warmup) * u64::from(sessions.turns);
        } else {
            // A trace's k-th arrival sends the k-th request's body (its lengths and blocks).
            let body = ctx.trace.is_some().then_some(sent as usize);
            tokio::spawn(request(ctx.clone(), intended, worker, warmup, body));
            measured += u64::from(!warmup);
        }
        sent += 1;
        if sp.requests.is_some_and(|n| measured >= n) {
            // Every request is sent or belongs to a session under way: sessions finish.
            return Instant::now();
        }
    }
    // Stopped by the deadline or by the caller: sessions start no further turn.
    ctx.sending_over.store(true, Ordering::Release);
    Instant::now()
}

/// Sends the record of a request exactly once: on success, or from `Drop` if the task dies.
struct Pending {
    ctx: Arc<StageCtx>,
    record: Option<RequestRecord>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(mut r) = self.record.take() {
            r.error = Some(ErrorKind::Internal);
            r.end_unix_ns = self.ctx.clock.ns(Instant::now());
            self.ctx.gauge.in_flight.fetch_sub(1, Ordering::Relaxed);
            let _ = self.ctx.tx.send(r);
        }
    }
}

/// A concurrency slot and the failure streak of the worker that holds it.
struct Worker {
    slot: Option<OwnedSemaphorePermit>,
    streak: u32,
}

impl Worker {
    /// Closed loop: after a failure, holds the slot for the backoff (cut short by an abort), then
    /// frees it with the new streak for the next request.
    async fn release(mut self, ctx: Arc<StageCtx>, error: Option<ErrorKind>) {
        self.streak = match error {
            None => 0,
            Some(ErrorKind::Cancelled) => self.streak,
            Some(_) => self.streak.saturating_add(1),
        };
        let (mut abort, streaks) = (ctx.abort.clone(), ctx.streaks.clone());
        let wait = if ctx.backoff {
            backoff(self.streak)
        } else {
            Duration::ZERO
        };
        // The stage ends when every request has reported: do not hold its context while waiting.
        drop(ctx);
        if !wait.is_zero() {
            tokio::select! {
                _ = abort.wait_for(|a| *a) => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
        if let Ok(mut s) = streaks.lock() {
            s.push(self.streak);
        }
        drop(self.slot);
    }
}

/// One request, start to record, then its worker slot freed.
async fn request(
    ctx: Arc<StageCtx>,
    intended: Option<Instant>,
    worker: Worker,
    warmup: bool,
    body: Option<usize>,
) {
    let id = ctx.next_id();
    let body_index = body;
    let body = ctx.bodies[body.unwrap_or(id as usize) % ctx.bodies.len()].clone();
    let mut tags = Tags::default();
    if let (Some(groups), Some(tokens)) = (ctx.reuse.prefix_groups, ctx.reuse.shared_prefix_tokens)
    {
        // Bodies take the groups in turn; each group's first request has nothing to reuse.
        let index = id as usize % ctx.bodies.len();
        tags.prefix_group = Some(index as u32 % groups.max(1));
        tags.repeated_tokens = Some(if id < u64::from(groups) { 0 } else { tokens });
    }
    if let (Some(repeated), Some(k)) = (&ctx.trace_repeated, body_index) {
        tags.repeated_tokens = repeated.get(k).copied();
    }
    let sent = send(&ctx, id, intended, warmup, body, tags, Outcome::default()).await;
    worker.release(ctx, sent.error).await;
}

/// What a request is, for its record: its session and turn, its prefix group, what it repeats.
#[derive(Debug, Clone, Copy, Default)]
struct Tags {
    session: Option<u64>,
    turn: Option<u32>,
    prefix_group: Option<u32>,
    repeated_tokens: Option<u32>,
}

/// How one request ended: its error, its token counts, its answer when kept.
struct Sent {
    error: Option<ErrorKind>,
    prompt_tokens: Option<u32>,
    output_tokens: u32,
    text: Option<String>,
}

/// Sends one request and its record (exactly once). `out` asks for the answer text to be kept
/// when its `text` is `Some`.
async fn send(
    ctx: &Arc<StageCtx>,
    id: u64,
    intended: Option<Instant>,
    warmup: bool,
    body: Bytes,
    tags: Tags,
    mut out: Outcome,
) -> Sent {
    let n = ctx.gauge.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
    ctx.gauge.peak.fetch_max(n, Ordering::Relaxed);
    let sent = Instant::now();
    let mut pending = Pending {
        ctx: ctx.clone(),
        record: Some(RequestRecord {
            stage: ctx.stage,
            id,
            warmup,
            scheduled_unix_ns: intended.map(|t| ctx.clock.ns(t)),
            sent_unix_ns: ctx.clock.ns(sent),
            session: tags.session,
            turn: tags.turn,
            prefix_group: tags.prefix_group,
            repeated_tokens: tags.repeated_tokens,
            ..Default::default()
        }),
    };
    let mut abort = ctx.abort.clone();
    let result = tokio::select! {
        biased;
        _ = abort.wait_for(|a| *a) => Err(ErrorKind::Cancelled),
        r = tokio::time::timeout(ctx.timeout, ctx.client.execute(ctx.uri.clone(), body, ctx.stream, ctx.limits, &mut out, &ctx.gauge.streamed)) => {
            r.unwrap_or(Err(ErrorKind::Timeout))
        }
    };
    let end = Instant::now();
    let error = result.err();
    let text = out.text.take();
    let mut done = Sent {
        error,
        prompt_tokens: out.usage.prompt_tokens,
        output_tokens: 0,
        text,
    };
    if let Some(mut r) = pending.record.take() {
        fill(&mut r, &ctx.clock, out, error, end);
        done.output_tokens = r.tokens_out();
        ctx.gauge.in_flight.fetch_sub(1, Ordering::Relaxed);
        let _ = ctx.tx.send(r);
    }
    drop(pending);
    done
}

fn fill(
    r: &mut RequestRecord,
    clock: &Clock,
    out: Outcome,
    error: Option<ErrorKind>,
    end: Instant,
) {
    r.end_unix_ns = clock.ns(end);
    r.status = out.status;
    r.error = error;
    r.first_token_unix_ns = out.first_token.map(|t| clock.ns(t));
    r.first_output_unix_ns = out.first_output.map(|t| clock.ns(t));
    r.prompt_tokens = out.usage.prompt_tokens;
    r.output_tokens = out.usage.completion_tokens;
    r.cached_tokens = out.usage.cached_tokens();
    r.chunk_tokens = out.chunk_tokens;
    r.server_first_token_unix_ns = out.server_first_token_ns;
    r.first_token_behind = out.first_token_behind;
    r.first_token_rx_lag_us = out
        .first_token_rx_lag
        .map(|d| d.as_micros().min(u128::from(u32::MAX)) as u32);
    r.gaps_us = out.gaps_us;
    r.error_body = out.error_body.filter(|_| error.is_some());
}

mod session;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_10ms_to_1s() {
        let ms = |n| backoff(n).as_millis();
        assert_eq!(
            (0..10).map(ms).collect::<Vec<_>>(),
            vec![0, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]
        );
        assert_eq!(ms(u32::MAX), 1000);
    }

    #[test]
    fn a_streak_of_failures_without_success_gives_up() {
        let t0 = Instant::now();
        let mut s = FailStreak::new(t0);
        let failed = RequestRecord {
            error: Some(ErrorKind::Http(400)),
            ..Default::default()
        };
        for _ in 0..GIVE_UP_FAILURES {
            s.add(&failed, t0);
        }
        assert!(!s.hopeless(t0 + Duration::from_secs(1)), "too soon");
        assert!(s.hopeless(t0 + GIVE_UP_AFTER));
        s.add(&RequestRecord::default(), t0 + GIVE_UP_AFTER);
        assert!(!s.hopeless(t0 + GIVE_UP_AFTER * 3), "a success resets it");
        let cancelled = RequestRecord {
            error: Some(ErrorKind::Cancelled),
            ..Default::default()
        };
        for _ in 0..100 {
            s.add(&cancelled, t0);
        }
        assert!(
            !s.hopeless(t0 + GIVE_UP_AFTER * 4),
            "cancelled is not a failure"
        );
    }
}
