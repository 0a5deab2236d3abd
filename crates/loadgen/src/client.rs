//! The client watching itself: CPU, event-loop lag, and whether the load it asked for was reached.
//!
//! [`Monitor`] samples every 100 ms, in its own task: the run-queue delay of a task that yields
//! (how late the event loop polls work that is ready), and every 500 ms the process CPU time
//! (`/proc/self/stat` utime + stime) and the machine's busy time (`/proc/stat`). [`assess`] is
//! pure: from a stage's samples, target and achieved load it decides whether the client limited
//! the result and says so in one sentence — the `client` and `load not reached` verdicts of the
//! diagnosis rest on it.

use crate::report::ClientReport;
use crate::stats::Hist;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Linux's `USER_HZ`: the unit of utime/stime in `/proc` (100 on every mainstream platform).
const TICKS_PER_S: f64 = 100.0;

/// One sample.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub at: Instant,
    /// Process CPU seconds so far.
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
            cpu_s: if proc { process_cpu_s() } else { None },
            host: if proc { host_ticks() } else { None },
            runq_wait_s: if proc { runqueue_wait_s() } else { None },
            lag_us,
        };
        if let Ok(mut v) = samples.lock() {
            v.push(s);
        }
    }
}

/// utime + stime of this process, in seconds.
fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_proc_stat(&stat)
}

/// Fields 14 and 15 of `/proc/self/stat`, counted after the `)` that ends the command name.
pub fn parse_proc_stat(stat: &str) -> Option<f64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some((utime + stime) as f64 / TICKS_PER_S)
}

/// Σ run-queue wait of this process's threads, from `/proc/self/task/*/schedstat`.
fn runqueue_wait_s() -> Option<f64> {
    let mut ns = 0u64;
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        ns += stat
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    (ns > 0).then(|| ns as f64 / 1e9)
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
const REACHED: f64 = 0.95;
const HOST_BUSY: f64 = 90.0;
/// Run-queue wait, percent of wall time, beyond which the OS is starving the client.
const WAIT_LIMIT: f64 = 5.0;

/// Decides whether the client limited the result.
pub fn assess(input: &AssessInput) -> ClientReport {
    let (cpu_mean, cpu_max) = cpu_percent(&input.samples);
    let waited = runqueue_percent(&input.samples);
    let host = host_percent(&input.samples);
    let mut lag = Hist::default();
    input.samples.iter().for_each(|s| lag.record_us(s.lag_us));
    let lag = lag.summary();
    let capacity = f64::from(input.cores.max(1)) * 100.0;
    let mut causes = Vec::new();
    if let Some(c) = cpu_mean.filter(|c| *c >= CPU_SATURATED * capacity) {
        let plural = if input.cores == 1 { "" } else { "s" };
        causes.push(format!(
            "client CPU {c:.0}% of {} core{plural}",
            input.cores
        ));
    }
    if let Some(p99) = lag.p99.filter(|l| *l >= LAG_LIMIT_MS) {
        causes.push(format!("event-loop lag p99 {p99:.1} ms"));
    }
    if let Some(w) = waited.filter(|w| *w >= WAIT_LIMIT) {
        causes.push(format!(
            "its threads waited for a core {:.0} ms per second (other processes run on the cores)",
            w * 10.0
        ));
    }
    if let Some(p99) = input.schedule_lag_p99_ms.filter(|l| *l >= LAG_LIMIT_MS) {
        causes.push(format!("sends p99 {p99:.1} ms behind schedule"));
    }
    let reached = input.load.map(|l| l.achieved >= REACHED * l.target);
    let limited = !causes.is_empty();
    // A starved client is limited too: say who else wants the cores.
    if let (true, Some(h), Some(c)) = (limited, host, cpu_mean)
        && h >= HOST_BUSY
        && c < CPU_SATURATED * capacity
    {
        causes.push(format!(
            "machine CPU {h:.0}% busy, this client {c:.0}%: other processes compete for the cores"
        ));
    }
    let verdict = verdict(input, cpu_mean, host, reached, &causes);
    ClientReport {
        cores: input.cores,
        cpu_percent_mean: cpu_mean.map(round1),
        cpu_percent_max: cpu_max.map(round1),
        host_cpu_percent_mean: host.map(round1),
        runqueue_wait_percent: waited.map(round1),
        event_loop_lag_ms: lag,
        load_reached: reached,
        limited,
        verdict,
        ..Default::default()
    }
}

fn verdict(
    input: &AssessInput,
    cpu: Option<f64>,
    host: Option<f64>,
    reached: Option<bool>,
    causes: &[String],
) -> String {
    let shortfall = match (input.load, reached) {
        (Some(l), Some(false)) => Some(format!(
            "achieved {} {} of {}",
            fmt_num(l.achieved),
            l.unit,
            fmt_num(l.target)
        )),
        _ => None,
    };
    let cpu = cpu.map_or("client CPU unknown".to_owned(), |c| {
        format!("client CPU {c:.0}%")
    });
    let host = host.map_or(String::new(), |h| format!(", machine {h:.0}% busy"));
    match (causes.is_empty(), shortfall) {
        (false, s) => {
            let s = s.map_or(String::new(), |s| format!("{s}; "));
            format!("client-limited: {s}{}", causes.join("; "))
        }
        (true, Some(s)) => {
            format!("load not reached: {s}; the client was not the limit ({cpu}{host})")
        }
        (true, None) => format!("not client-limited ({cpu}{host})"),
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

    #[test]
    fn event_loop_lag_alone_limits() {
        let r = assess(&AssessInput {
            samples: samples(0.2, 25_000),
            cores: 2,
            ..Default::default()
        });
        assert!(
            r.limited && r.verdict.contains("event-loop lag"),
            "{}",
            r.verdict
        );
        assert!(
            r.verdict.contains("machine CPU 90% busy, this client 20%"),
            "{}",
            r.verdict
        );
        let ok = assess(&AssessInput {
            samples: samples(0.2, 100),
            cores: 2,
            ..Default::default()
        });
        assert!(
            !ok.limited && ok.verdict.starts_with("not client-limited"),
            "{}",
            ok.verdict
        );
    }

    #[test]
    fn a_client_kept_off_the_cores_is_limited() {
        let mut s = samples(0.2, 100);
        for (i, x) in s.iter_mut().enumerate() {
            x.runq_wait_s = Some(0.02 * i as f64);
        }
        let r = assess(&AssessInput {
            samples: s,
            cores: 2,
            ..Default::default()
        });
        assert_eq!(r.runqueue_wait_percent, Some(20.0));
        assert!(
            r.limited && r.verdict.contains("waited for a core 200 ms per second"),
            "{}",
            r.verdict
        );
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
