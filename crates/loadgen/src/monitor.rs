//! The client watching itself: CPU, event-loop lag, and whether the load it asked for was reached.
//!
//! [`Monitor`] samples every 100 ms, in its own task: the run-queue delay of a task that yields
//! (how late the event loop polls work that is ready), and every 500 ms the CPU time of the load
//! generator's own threads (those named [`THREAD_NAME`], from `/proc/self/task/*/stat`; the whole
//! process when no thread has that name) and the machine's busy time (`/proc/stat`). Only the
//! load generator's threads count: `llmscope run` shares its process with the simulator, the
//! scrapers and the store writer, whose work is not the client's.
//!
//! [`assess`] is pure: from a stage's samples, target and achieved load it decides two things.
//! *Limited*: the client failed to keep the load it was asked for (achieved < 95 % of target)
//! and says why (its CPU, its event loop, its threads starved of a core). *Contended*: the
//! machine was busy with other work while measuring — a data-quality fact that makes timings
//! less exact, not a bottleneck. The diagnosis weighs the first against the server's evidence.

use crate::report::{ClientReport, Summary};
use crate::stats::Hist;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The name of the load generator's threads (see [`runtime`]): the CPU the client reports is
/// theirs. Threads they spawn without a name inherit it (Linux copies `comm`).
pub const THREAD_NAME: &str = "llmscope-load";

/// A runtime whose threads are named [`THREAD_NAME`], so the client measures only itself.
pub fn runtime(worker_threads: Option<usize>) -> std::io::Result<tokio::runtime::Runtime> {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = worker_threads {
        b.worker_threads(n.max(1));
    }
    b.thread_name(THREAD_NAME).enable_all().build()
}

/// Linux's `USER_HZ`: the unit of utime/stime in `/proc` (100 on every mainstream platform).
const TICKS_PER_S: f64 = 100.0;

/// One sample.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub at: Instant,
    /// CPU seconds of the load generator's threads so far.
    pub cpu_s: Option<f64>,
    /// Machine (busy, total) ticks so far.
    pub host: Option<(u64, u64)>,
    /// Seconds this process's threads have waited for a core, so far (`schedstat`).
    pub runq_wait_s: Option<f64>,
    /// Run-queue delay of this sample's probe, µs.
    pub lag_us: u64,
}

/// The sampling task.
#[derive(Debug)]
pub struct Monitor {
    samples: Arc<Mutex<Vec<Sample>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Monitor {
    /// Starts sampling.
    pub fn start() -> Self {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn(sample_loop(samples.clone()));
        Monitor { samples, task }
    }

    /// The samples taken between `from` and `to`.
    pub fn between(&self, from: Instant, to: Instant) -> Vec<Sample> {
        let all = self.samples.lock().map(|s| s.clone()).unwrap_or_default();
        all.into_iter()
            .filter(|s| s.at >= from && s.at <= to)
            .collect()
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn sample_loop(samples: Arc<Mutex<Vec<Sample>>>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for n in 0u64.. {
        tick.tick().await;
        let probe = Instant::now();
        tokio::task::yield_now().await;
        let lag_us = probe.elapsed().as_micros() as u64;
        let proc = n % 5 == 0;
        let s = Sample {
            at: Instant::now(),
            cpu_s: if proc { own_threads(cpu_of) } else { None },
            host: if proc { host_ticks() } else { None },
            runq_wait_s: if proc {
                own_threads(runq_wait_of)
            } else {
                None
            },
            lag_us,
        };
        if let Ok(mut v) = samples.lock() {
            v.push(s);
        }
    }
}

/// Σ `per_thread` over the threads named [`THREAD_NAME`]; over every thread of the process when
/// none is (a client driven from someone else's runtime, e.g. in tests).
fn own_threads(per_thread: fn(&std::path::Path) -> Option<f64>) -> Option<f64> {
    let tasks: Vec<_> = std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .map(|t| t.path())
        .collect();
    let named = |t: &&std::path::PathBuf| {
        std::fs::read_to_string(t.join("comm")).is_ok_and(|c| c.trim_end() == THREAD_NAME)
    };
    let mine: Vec<_> = tasks.iter().filter(named).collect();
    let chosen: Vec<_> = if mine.is_empty() {
        tasks.iter().collect()
    } else {
        mine
    };
    let values: Vec<f64> = chosen.iter().filter_map(|t| per_thread(t)).collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// utime + stime of one thread, in seconds.
fn cpu_of(task: &std::path::Path) -> Option<f64> {
    parse_proc_stat(&std::fs::read_to_string(task.join("stat")).ok()?)
}

/// Run-queue wait of one thread, in seconds (`schedstat`'s second field, ns).
fn runq_wait_of(task: &std::path::Path) -> Option<f64> {
    let stat = std::fs::read_to_string(task.join("schedstat")).ok()?;
    let ns: u64 = stat.split_whitespace().nth(1)?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// Fields 14 and 15 of `/proc/self/stat`, counted after the `)` that ends the command name.
pub fn parse_proc_stat(stat: &str) -> Option<f64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some((utime + stime) as f64 / TICKS_PER_S)
}

fn host_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_host_stat(&stat)
}

/// (busy, total) ticks from the `cpu` line of `/proc/stat` (idle + iowait are not busy).
pub fn parse_host_stat(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4).unwrap_or(&0);
    Some((total - idle, total))
}

/// Load asked for and reached, in one unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadReach {
    pub target: f64,
    pub achieved: f64,
    /// `req/s` or `concurrency`.
    pub unit: &'static str,
}

/// Everything [`assess`] weighs.
#[derive(Debug, Clone, Default)]
pub struct AssessInput {
    pub samples: Vec<Sample>,
    pub cores: u32,
    pub load: Option<LoadReach>,
    /// Open loop: p99 of the send-schedule lag, ms.
    pub schedule_lag_p99_ms: Option<f64>,
}

/// Thresholds: a client this busy, this late, is the bottleneck.
const CPU_SATURATED: f64 = 0.85;
const LAG_LIMIT_MS: f64 = 10.0;
/// The share of its target a load must achieve to count as reached.
pub const REACHED: f64 = 0.95;
const HOST_BUSY: f64 = 90.0;
/// Run-queue wait, percent of wall time, beyond which the OS is starving the client.
const WAIT_LIMIT: f64 = 5.0;

/// Decides whether the client limited the result, and whether the machine was contended.
pub fn assess(input: &AssessInput) -> ClientReport {
    let (cpu_mean, cpu_max) = cpu_percent(&input.samples);
    let waited = runqueue_percent(&input.samples);
    let host = host_percent(&input.samples);
    let lag = event_loop_lag(&input.samples);
    let saturated = cpu_mean.filter(|c| *c >= CPU_SATURATED * capacity(input.cores));
    let own = own_limits(input, saturated);
    let others = others_work(lag.p99, waited, host, cpu_mean, saturated.is_some());
    let reached = input.load.map(|l| l.achieved >= REACHED * l.target);
    let limited = is_limited(reached, &own, &others);
    let contended = !others.is_empty() && saturated.is_none();
    let contention = contended.then(|| others.join("; "));
    let verdict = verdict(input, cpu_mean, host, reached, limited, &own, &others);
    ClientReport {
        cores: input.cores,
        cpu_percent_mean: cpu_mean.map(round1),
        cpu_percent_max: cpu_max.map(round1),
        host_cpu_percent_mean: host.map(round1),
        runqueue_wait_percent: waited.map(round1),
        event_loop_lag_ms: lag,
        load_reached: reached,
        limited,
        contended,
        contention,
        verdict,
        ..Default::default()
    }
}

/// Percent of one core, times the cores it has.
fn capacity(cores: u32) -> f64 {
    f64::from(cores.max(1)) * 100.0
}

fn event_loop_lag(samples: &[Sample]) -> Summary {
    let mut lag = Hist::default();
    samples.iter().for_each(|s| lag.record_us(s.lag_us));
    lag.summary()
}

/// Its own limits: its threads used the cores it has (`saturated`: its CPU then), or its sends
/// fell behind schedule.
fn own_limits(input: &AssessInput, saturated: Option<f64>) -> Vec<String> {
    let mut own = Vec::new();
    if let Some(c) = saturated {
        let plural = if input.cores == 1 { "" } else { "s" };
        own.push(format!(
            "client CPU {c:.0}% of {} core{plural}",
            input.cores
        ));
    }
    if let Some(p99) = input.schedule_lag_p99_ms.filter(|l| *l >= LAG_LIMIT_MS) {
        own.push(format!("sends p99 {p99:.1} ms behind schedule"));
    }
    own
}

/// Others' work on the same cores: it delays the client (event-loop lag `lag_p99`, run-queue
/// wait `waited`) without being the client's.
fn others_work(
    lag_p99: Option<f64>,
    waited: Option<f64>,
    host: Option<f64>,
    cpu_mean: Option<f64>,
    saturated: bool,
) -> Vec<String> {
    let mut others = Vec::new();
    if let Some(p99) = lag_p99.filter(|l| *l >= LAG_LIMIT_MS) {
        others.push(format!("event-loop lag p99 {p99:.1} ms"));
    }
    if let Some(w) = waited.filter(|w| *w >= WAIT_LIMIT) {
        others.push(format!(
            "its threads waited for a core {:.0} ms per second",
            w * 10.0
        ));
    }
    // Who else wants the cores, when the client was delayed by them.
    if let (false, Some(h), Some(c)) = (others.is_empty(), host, cpu_mean)
        && h >= HOST_BUSY
        && !saturated
    {
        others.push(format!(
            "machine CPU {h:.0}% busy, this client {c:.0}%: other processes compete for the cores"
        ));
    }
    others
}

/// Limited means the load asked for was not kept, for a reason on the client's side. A client
/// that kept its load was not the limit, however busy the machine.
fn is_limited(reached: Option<bool>, own: &[String], others: &[String]) -> bool {
    match reached {
        Some(false) => !own.is_empty() || !others.is_empty(),
        Some(true) => false,
        None => !own.is_empty(),
    }
}

fn verdict(
    input: &AssessInput,
    cpu: Option<f64>,
    host: Option<f64>,
    reached: Option<bool>,
    limited: bool,
    own: &[String],
    others: &[String],
) -> String {
    let achieved = input.load.map(|l| {
        let (achieved, target) = (fmt_num(l.achieved), fmt_num(l.target));
        format!("achieved {achieved} {} of {target}", l.unit)
    });
    if limited {
        let causes: Vec<&str> = own.iter().chain(others).map(String::as_str).collect();
        let s = achieved.map_or(String::new(), |s| format!("{s}; "));
        return format!("client-limited: {s}{}", causes.join("; "));
    }
    let cpu = cpu.map_or("client CPU unknown".to_owned(), |c| {
        format!("client CPU {c:.0}%")
    });
    let host = host.map_or(String::new(), |h| format!(", machine {h:.0}% busy"));
    let contended = contended_note(others);
    match (reached, achieved) {
        (Some(false), Some(s)) => {
            format!("load not reached: {s}; the client was not the limit ({cpu}{host}){contended}")
        }
        (Some(true), Some(s)) => {
            format!("not client-limited: {s} ({cpu}{host}){contended}")
        }
        _ => format!("not client-limited ({cpu}{host}){contended}"),
    }
}

/// `; the machine was contended (…)`, or nothing.
fn contended_note(others: &[String]) -> String {
    if others.is_empty() {
        String::new()
    } else {
        format!(
            "; the machine was contended ({}), so timings are less exact",
            others.join("; ")
        )
    }
}

fn fmt_num(v: f64) -> String {
    if v >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Mean and max process CPU over the samples, in percent of one core.
fn cpu_percent(samples: &[Sample]) -> (Option<f64>, Option<f64>) {
    let pts: Vec<(Instant, f64)> = samples
        .iter()
        .filter_map(|s| Some((s.at, s.cpu_s?)))
        .collect();
    let rate = |a: &(Instant, f64), b: &(Instant, f64)| {
        let dt = b.0.duration_since(a.0).as_secs_f64();
        (dt > 0.0).then(|| (b.1 - a.1) / dt * 100.0)
    };
    let mean = match (pts.first(), pts.last()) {
        (Some(a), Some(b)) => rate(a, b),
        _ => None,
    };
    let max = pts
        .windows(2)
        .filter_map(|w| rate(&w[0], &w[1]))
        .reduce(f64::max);
    (mean, max)
}

/// Run-queue wait over the samples, in percent of wall time.
fn runqueue_percent(samples: &[Sample]) -> Option<f64> {
    let pts: Vec<(Instant, f64)> = samples
        .iter()
        .filter_map(|s| Some((s.at, s.runq_wait_s?)))
        .collect();
    let (a, b) = (pts.first()?, pts.last()?);
    let dt = b.0.duration_since(a.0).as_secs_f64();
    (dt > 0.0).then(|| (b.1 - a.1).max(0.0) / dt * 100.0)
}

fn host_percent(samples: &[Sample]) -> Option<f64> {
    let pts: Vec<(u64, u64)> = samples.iter().filter_map(|s| s.host).collect();
    let (a, b) = (pts.first()?, pts.last()?);
    let total = b.1.checked_sub(a.1).filter(|t| *t > 0)?;
    Some(b.0.saturating_sub(a.0) as f64 * 100.0 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(cpu_per_s: f64, lag_us: u64) -> Vec<Sample> {
        let t0 = Instant::now();
        (0..20)
            .map(|i| Sample {
                at: t0 + Duration::from_millis(100 * i),
                cpu_s: Some(cpu_per_s * i as f64 / 10.0),
                host: Some((90 * i, 100 * i)),
                runq_wait_s: Some(0.001 * i as f64),
                lag_us,
            })
            .collect()
    }

    #[test]
    fn parses_proc_files() {
        let stat = "1234 (my (odd) name) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 4 0";
        assert_eq!(parse_proc_stat(stat), Some(3.0));
        let host = "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n";
        assert_eq!(parse_host_stat(host), Some((200, 1000)));
        assert_eq!(parse_proc_stat("garbage"), None);
    }

    #[test]
    fn a_saturated_client_says_so_with_numbers() {
        let input = AssessInput {
            samples: samples(1.96, 200),
            cores: 2,
            load: Some(LoadReach {
                target: 1000.0,
                achieved: 812.0,
                unit: "req/s",
            }),
            schedule_lag_p99_ms: Some(40.0),
        };
        let r = assess(&input);
        assert!(r.limited);
        assert_eq!(r.load_reached, Some(false));
        assert_eq!(r.cpu_percent_mean, Some(196.0));
        assert!(
            r.verdict.starts_with(
                "client-limited: achieved 812 req/s of 1000; client CPU 196% of 2 cores"
            ),
            "{}",
            r.verdict
        );
        assert!(r.verdict.contains("behind schedule"), "{}", r.verdict);
    }

    #[test]
    fn an_idle_client_that_missed_the_target_is_not_the_cause() {
        let input = AssessInput {
            samples: samples(0.1, 50),
            cores: 2,
            load: Some(LoadReach {
                target: 32.0,
                achieved: 20.0,
                unit: "concurrency",
            }),
            schedule_lag_p99_ms: None,
        };
        let r = assess(&input);
        assert!(!r.limited);
        assert!(
            r.verdict
                .starts_with("load not reached: achieved 20 concurrency of 32"),
            "{}",
            r.verdict
        );
        assert_eq!(r.host_cpu_percent_mean, Some(90.0));
    }

    fn reach(achieved: f64) -> Option<LoadReach> {
        Some(LoadReach {
            target: 32.0,
            achieved,
            unit: "concurrency",
        })
    }

    /// Event-loop lag from others' work is contention; it limits only a client that then missed
    /// its load.
    #[test]
    fn event_loop_lag_is_contention_unless_the_load_was_missed() {
        let lagging = assess(&AssessInput {
            samples: samples(0.2, 25_000),
            cores: 2,
            load: reach(31.9),
            ..Default::default()
        });
        assert!(!lagging.limited, "{}", lagging.verdict);
        assert!(lagging.contended);
        assert!(
            lagging
                .verdict
                .starts_with("not client-limited: achieved 31.9 concurrency of 32")
                && lagging.verdict.contains("event-loop lag")
                && lagging
                    .verdict
                    .contains("machine CPU 90% busy, this client 20%"),
            "{}",
            lagging.verdict
        );
        let missed = assess(&AssessInput {
            samples: samples(0.2, 25_000),
            cores: 2,
            load: reach(20.0),
            ..Default::default()
        });
        assert!(
            missed.limited && missed.verdict.contains("event-loop lag"),
            "{}",
            missed.verdict
        );
        let ok = assess(&AssessInput {
            samples: samples(0.2, 100),
            cores: 2,
            ..Default::default()
        });
        assert!(
            !ok.limited && !ok.contended && ok.verdict.starts_with("not client-limited"),
            "{}",
            ok.verdict
        );
    }

    #[test]
    fn a_client_kept_off_the_cores_is_limited_only_when_it_missed_its_load() {
        let mut s = samples(0.2, 100);
        for (i, x) in s.iter_mut().enumerate() {
            x.runq_wait_s = Some(0.02 * i as f64);
        }
        let starved = |load| {
            assess(&AssessInput {
                samples: s.clone(),
                cores: 2,
                load,
                ..Default::default()
            })
        };
        let r = starved(reach(25.0));
        assert_eq!(r.runqueue_wait_percent, Some(20.0));
        assert!(
            r.limited && r.verdict.contains("waited for a core 200 ms per second"),
            "{}",
            r.verdict
        );
        let kept = starved(reach(32.0));
        assert!(!kept.limited && kept.contended, "{}", kept.verdict);
        assert!(
            kept.contention
                .as_deref()
                .is_some_and(|c| c.contains("200 ms per second")),
            "{kept:?}"
        );
    }

    /// The CPU reported is the load generator's threads', not the process's: a busy thread of
    /// another name does not count.
    #[test]
    fn only_the_load_generators_threads_are_counted() {
        let rt = runtime(Some(1)).unwrap();
        let own = rt.block_on(async {
            tokio::task::spawn_blocking(|| own_threads(cpu_of))
                .await
                .unwrap()
        });
        let before = own.unwrap();
        // Burn CPU in a thread that is not the load generator's.
        let burner = std::thread::Builder::new()
            .name("not-the-client".into())
            .spawn(|| {
                let t = std::time::Instant::now();
                let mut x = 0u64;
                while t.elapsed() < Duration::from_millis(300) {
                    x = x.wrapping_mul(31).wrapping_add(7);
                }
                x
            })
            .unwrap();
        burner.join().unwrap();
        let after = rt
            .block_on(async {
                tokio::task::spawn_blocking(|| own_threads(cpu_of))
                    .await
                    .unwrap()
            })
            .unwrap();
        assert!(
            after - before < 0.2,
            "the client's CPU grew by {:.2} s while another thread burned 0.3 s",
            after - before
        );
        rt.shutdown_background();
    }

    #[test]
    fn no_samples_no_claims() {
        let r = assess(&AssessInput {
            cores: 2,
            ..Default::default()
        });
        assert!(!r.limited && r.cpu_percent_mean.is_none() && r.event_loop_lag_ms.count == 0);
    }
}
