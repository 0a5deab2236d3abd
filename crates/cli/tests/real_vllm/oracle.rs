//! The oracle: what vLLM's own `/metrics` says limited a window, read independently of llmscope.
//!
//! A [`Scraper`] thread reads the engine's page every 0.5 s while `llmscope run` loads it, with
//! its own few lines of parsing (no llmscope code). [`judge`] then applies the method of
//! `docs/METHOD.md` step 8 as a person would, to the engine's own numbers over the loaded window:
//!
//! - requests turned away at the admission limit (`vllm:admission_rejections_total` grew: vLLM's
//!   `--max-num-queued-reqs`/`--max-num-queued-tokens`) → `admission_limit`;
//! - a scheduler queue (mean waiting ≥ 0.5 by Little's law from
//!   `vllm:request_queue_time_seconds_sum`, or in the gauge) means something stopped admission.
//!   vLLM's scheduler admits a waiting request at its next step unless the KV pool cannot hold it
//!   (KV high, preemptions) → `kv_cache_capacity`; the step's token budget is spent (tokens per step
//!   at `--max-num-batched-tokens`) → `token_budget`; or the batch is full (running reached
//!   `--max-num-seqs`) → `batch_limit`;
//! - no scheduler queue with the client keeping more requests in flight than the cap, and those
//!   requests neither running nor waiting in the engine → they queued in front of it, in the API
//!   server → `front_end`;
//! - no queue and concurrency within the cap → `load_not_reached`;
//! - a mean queue between 0.3 and 0.8 is on the border, and a queue in one half of the window but
//!   not the other is two regimes: neither is judged (the cell is measured again).
//!
//! Counters, not the gauges, carry the time averages: vLLM 0.32's CPU build reads 0 running and
//! 0 waiting in most scrapes under load (its gauges are overwritten between steps), while the
//! per-request time histograms and token counters account for every request — once it finishes.
//! Where the requests finishing in the window lived more than half of it, the counters have not
//! seen the waits behind them yet, and the gauges' means speak beside them (the larger is taken:
//! a gauge can read low between two steps, never high).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The names the oracle reads (each summed over its label sets, so one value per scrape).
pub const NAMES: [&str; 21] = [
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:num_preemptions_total",
    "vllm:generation_tokens_total",
    "vllm:prompt_tokens_total",
    "vllm:iteration_tokens_total_sum",
    "vllm:iteration_tokens_total_count",
    "vllm:request_queue_time_seconds_sum",
    "vllm:request_inference_time_seconds_sum",
    "vllm:request_success_total",
    "vllm:admission_rejections_total",
    "vllm:prefix_cache_hits_total",
    "vllm:prefix_cache_queries_total",
    "vllm:time_to_first_token_seconds_count",
    "vllm:time_to_first_token_seconds_sum",
    "vllm:inter_token_latency_seconds_sum",
    "vllm:inter_token_latency_seconds_count",
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
];

/// One scrape: unix seconds and each name's value (absent names are absent).
#[derive(Debug, Clone)]
pub struct Scrape {
    pub t: f64,
    pub values: BTreeMap<&'static str, f64>,
}

/// Samples the page on a thread until stopped.
pub struct Scraper {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Scrape>>,
}

impl Scraper {
    pub fn start(port: u16) -> Scraper {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut out = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let began = Instant::now();
                if let Some(s) = scrape(port) {
                    out.push(s);
                }
                let left = Duration::from_millis(500).saturating_sub(began.elapsed());
                std::thread::sleep(left);
            }
            out
        });
        Scraper { stop, handle }
    }

    pub fn finish(self) -> Vec<Scrape> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One scrape of the engine's page now, for a before-and-after reading.
pub fn once(port: u16) -> Option<Scrape> {
    scrape(port)
}

impl Scrape {
    /// A name's value (summed over its label sets); 0 when absent.
    pub fn value(&self, name: &str) -> f64 {
        get(self, name)
    }
}

fn scrape(port: u16) -> Option<Scrape> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    let t = now();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    let mut values = BTreeMap::new();
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let name = &line[..name_end];
        let Some(known) = NAMES.iter().find(|n| **n == name) else {
            continue;
        };
        let Some(v) = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        *values.entry(*known).or_insert(0.0) += v;
    }
    values
        .contains_key("vllm:num_requests_running")
        .then_some(Scrape { t, values })
}

/// What the engine's numbers say about one window.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// The verdict the method gives, or `None` when the window did not form (no tokens flowed).
    pub expect: Option<&'static str>,
    /// Mean waiting and running over the window by Little's law (time in each state per second).
    pub waiting: f64,
    pub running: f64,
    /// The running gauge's highest reading, and the share of scrapes where it read 0 under load.
    pub running_max: f64,
    pub zero_share: f64,
    pub kv_max: f64,
    pub preemptions: f64,
    pub rejections: f64,
    pub tokens_per_step: f64,
    /// How far the window's edges can move `tokens_per_step`, either way.
    pub step_uncertainty: f64,
    pub output_tok_s: f64,
    pub prefix_hit: Option<f64>,
    /// Tokens the speculative drafter proposed and the target model accepted over the load
    /// (its first burst included), where the engine speculates.
    pub spec_drafted: f64,
    pub spec_accepted: f64,
    /// Mean time to first token and inter-token latency of the requests the window saw finish
    /// their first token / tokens (the KV-admission signature: TTFT grows, ITL does not).
    pub ttft: Option<f64>,
    pub itl: Option<f64>,
    /// Requests in flight at the client that were neither running nor waiting in the engine.
    pub outside: f64,
    /// A queue in one half of the window and none in the other: two regimes, not one.
    pub unsteady: bool,
    /// The window held two lifetimes of the requests finishing in it, so the time counters
    /// speak for it alone; else the gauges' means speak beside them.
    pub counters_cover: bool,
}

impl Reading {
    pub fn line(&self) -> String {
        format!(
            "waiting {:.1} running {:.1}{} (gauge max {:.0}, reads 0 in {:.0}% of scrapes) KV max {:.1}% preempt {:.0} rejected {:.0} tok/step {:.1}{} out {:.0} tok/s outside {:.1}{}",
            self.waiting,
            self.running,
            if self.counters_cover {
                ""
            } else {
                " with the gauges (requests outlive the window)"
            },
            self.running_max,
            self.zero_share * 100.0,
            self.kv_max * 100.0,
            self.preemptions,
            self.rejections,
            self.tokens_per_step,
            if self.step_uncertainty >= 0.05 {
                format!(" ±{:.1}", self.step_uncertainty)
            } else {
                String::new()
            },
            self.output_tok_s,
            self.outside,
            self.prefix_hit
                .map_or(String::new(), |h| format!(" prefix hits {:.0}%", h * 100.0)),
        ) + &match (self.ttft, self.itl) {
            (Some(t), Some(i)) => format!(" TTFT {:.0} ms ITL {:.1} ms", t * 1000.0, i * 1000.0),
            _ => String::new(),
        }
    }
}

/// The engine settings and load of a cell, as the test set them.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    pub cap: u32,
    pub clients: u32,
    pub budget: Option<u32>,
    /// How long the load ran (`--duration`), seconds.
    pub duration_s: f64,
}

fn get(s: &Scrape, name: &str) -> f64 {
    s.values.get(name).copied().unwrap_or(0.0)
}

/// The loaded window: from 1.5 s after tokens first flowed out of the idle baseline (the
/// counter stood still for at least a second before) to 0.5 s before the load's end. A window
/// whose baseline never fell idle (the cell before still draining) has no start.
fn window(scrapes: &[Scrape], duration_s: f64) -> Option<(usize, usize, usize)> {
    let tokens = |s: &Scrape| get(s, "vllm:generation_tokens_total");
    let start = (1..scrapes.len()).find(|&i| {
        let t = scrapes[i - 1].t;
        let flat = scrapes[..i]
            .iter()
            .filter(|s| s.t >= t - 1.0)
            .all(|s| tokens(s) == tokens(&scrapes[i - 1]));
        let idle_since = scrapes[..i].iter().any(|s| s.t <= t - 1.0);
        tokens(&scrapes[i]) > tokens(&scrapes[i - 1]) && flat && idle_since
    })?;
    let t0 = scrapes[start].t;
    let a = scrapes.iter().position(|s| s.t >= t0 + 1.5)?;
    let b = scrapes.iter().rposition(|s| s.t <= t0 + duration_s - 0.5)?;
    (b > a).then_some((start, a, b))
}

/// A histogram's mean over the window: growth of its `_sum` over growth of its `_count`.
fn mean_of(delta: &dyn Fn(&str) -> f64, histogram: &str) -> Option<f64> {
    let n = delta(&format!("{histogram}_count"));
    (n > 0.0).then(|| delta(&format!("{histogram}_sum")) / n)
}

/// Applies the method to the engine's numbers (see the module docs).
pub fn judge(scrapes: &[Scrape], set: Setting) -> Reading {
    let Some((start, a, b)) = window(scrapes, set.duration_s) else {
        return Reading::default();
    };
    let (first, last) = (&scrapes[a], &scrapes[b]);
    let dt = last.t - first.t;
    let delta = |n: &str| get(last, n) - get(first, n);
    let inside = &scrapes[a..=b];
    let over_load = |n: &str| get(&scrapes[scrapes.len() - 1], n) - get(&scrapes[start - 1], n);
    let steps = delta("vllm:iteration_tokens_total_count");
    let queries = delta("vllm:prefix_cache_queries_total");
    let mut r = Reading {
        waiting: delta("vllm:request_queue_time_seconds_sum") / dt,
        running: delta("vllm:request_inference_time_seconds_sum") / dt,
        running_max: inside
            .iter()
            .map(|s| get(s, "vllm:num_requests_running"))
            .fold(0.0, f64::max),
        zero_share: inside
            .iter()
            .filter(|s| get(s, "vllm:num_requests_running") == 0.0)
            .count() as f64
            / inside.len() as f64,
        kv_max: inside
            .iter()
            .map(|s| get(s, "vllm:kv_cache_usage_perc"))
            .fold(0.0, f64::max),
        preemptions: delta("vllm:num_preemptions_total"),
        // Turned away anywhere in the load, its first burst included.
        rejections: over_load("vllm:admission_rejections_total"),
        spec_drafted: over_load("vllm:spec_decode_num_draft_tokens_total"),
        spec_accepted: over_load("vllm:spec_decode_num_accepted_tokens_total"),
        tokens_per_step: if steps > 0.0 {
            delta("vllm:iteration_tokens_total_sum") / steps
        } else {
            0.0
        },
        step_uncertainty: 0.0,
        output_tok_s: delta("vllm:generation_tokens_total") / dt,
        prefix_hit: (queries > 0.0).then(|| delta("vllm:prefix_cache_hits_total") / queries),
        ttft: mean_of(&delta, "vllm:time_to_first_token_seconds"),
        itl: mean_of(&delta, "vllm:inter_token_latency_seconds"),
        ..Reading::default()
    };
    // A prompt's tokens enter the step counter whole, in the step its prefill completes, while
    // the chunked prefill spent them over the steps before. From the first scrape that saw a
    // prefill complete to the last, the count is off only by the prefill in flight at either
    // end: at most one prompt, and at most the steps of the half-second interval each
    // completion fell in — the reading's uncertainty.
    let prompts = |i: usize| get(&scrapes[i], "vllm:prompt_tokens_total");
    let completed: Vec<usize> = (a.max(1)..=b)
        .filter(|&i| prompts(i) > prompts(i - 1))
        .collect();
    let finished = delta("vllm:request_success_total");
    let prompt = if finished > 0.0 {
        delta("vllm:prompt_tokens_total") / finished
    } else {
        (a.max(1)..=b)
            .map(|i| prompts(i) - prompts(i - 1))
            .fold(0.0, f64::max)
    };
    r.step_uncertainty = if steps > 0.0 { prompt / steps } else { 0.0 };
    if let (Some(&j0), Some(&j1)) = (completed.first(), completed.last()) {
        let d = |n: &str| get(&scrapes[j1], n) - get(&scrapes[j0], n);
        let n = d("vllm:iteration_tokens_total_count");
        if n > 0.0 && j1 > j0 {
            r.tokens_per_step = d("vllm:iteration_tokens_total_sum") / n;
            let interval = r.tokens_per_step * steps / (b - a) as f64;
            r.step_uncertainty = prompt.min(interval) / n;
        }
    }
    // The time counters grow when a request finishes. Requests living half the window or more
    // are mostly not in them yet — those finishing inside it were admitted first, without a wait
    // (a starved host, cap 16, 32 clients: requests lived 9 s, 15 waited in every scrape while
    // the queue-time counter stood still). The gauges, read each scrape, then speak too: they
    // can read low between two steps, never high.
    let done = delta("vllm:request_success_total");
    let life = (done > 0.0).then(|| {
        (delta("vllm:request_queue_time_seconds_sum")
            + delta("vllm:request_inference_time_seconds_sum"))
            / done
    });
    r.counters_cover = life.is_some_and(|l| dt >= 2.0 * l);
    if !r.counters_cover {
        let mean = |n: &str| inside.iter().map(|s| get(s, n)).sum::<f64>() / inside.len() as f64;
        r.waiting = r.waiting.max(mean("vllm:num_requests_waiting"));
        r.running = r.running.max(mean("vllm:num_requests_running"));
    }
    r.outside = f64::from(set.clients) - r.running - r.waiting;
    // One regime through the window, or two: the mean queue of each half (a 4 MiB KV pool queued
    // 25 requests for its first 3 s, then the starved API server let one request at a time through).
    let mid = scrapes[a..=b]
        .iter()
        .position(|s| s.t >= first.t + dt / 2.0)
        .map_or(b, |i| a + i);
    let half = |x: &Scrape, y: &Scrape| {
        let span = y.t - x.t;
        (span > 0.0).then(|| {
            (get(y, "vllm:request_queue_time_seconds_sum")
                - get(x, "vllm:request_queue_time_seconds_sum"))
                / span
        })
    };
    // Where the counters do not cover the window, neither do they its halves: the gauge's.
    let gauge_half = |from: usize, to: usize| {
        let part = &scrapes[from..=to];
        Some(
            part.iter()
                .map(|s| get(s, "vllm:num_requests_waiting"))
                .sum::<f64>()
                / part.len() as f64,
        )
    };
    let halves = if r.counters_cover {
        (half(first, &scrapes[mid]), half(&scrapes[mid], last))
    } else {
        (gauge_half(a, mid), gauge_half(mid, b))
    };
    r.unsteady = matches!(halves, (Some(w1), Some(w2))
        if (w1 >= QUEUE_UNCLEAR.1 && w2 < QUEUE_UNCLEAR.0) || (w1 < QUEUE_UNCLEAR.0 && w2 >= QUEUE_UNCLEAR.1));
    r.expect = if r.output_tok_s <= 0.0 {
        None
    } else if (QUEUE_UNCLEAR.0..QUEUE_UNCLEAR.1).contains(&r.waiting) && r.rejections == 0.0 {
        Some("unexplained_borderline_queue")
    } else if r.unsteady && r.rejections == 0.0 {
        Some("unexplained_unsteady")
    } else {
        Some(verdict(&r, set))
    };
    r
}

/// Mean waiting (Little) between these is neither a queue nor its absence: a regime on the
/// border, which two observers scraping at different instants may read either way. Such a cell
/// is measured once more and, if still on the border, reported as not formed.
const QUEUE_UNCLEAR: (f64, f64) = (0.3, 0.8);

/// The method's KV verdict on the engine's own numbers: a queue (mean waiting ≥ 0.5), with
/// the pool full at its peak or requests preempted.
pub fn kv_binds(waiting: f64, kv_max: f64, preemptions: f64) -> bool {
    waiting >= 0.5 && (kv_max >= 0.9 || preemptions > 0.0)
}

fn verdict(r: &Reading, set: Setting) -> &'static str {
    let cap = f64::from(set.cap);
    if r.rejections > 0.0 {
        return "admission_limit";
    }
    if r.waiting >= 0.5 {
        if kv_binds(r.waiting, r.kv_max, r.preemptions) {
            return "kv_cache_capacity";
        }
        if let Some(full) = set.budget.map(|b| 0.9 * f64::from(b)) {
            if r.tokens_per_step - r.step_uncertainty >= full {
                return "token_budget";
            }
            // Within its uncertainty of the line, the budget is neither spent nor free.
            if r.tokens_per_step + r.step_uncertainty >= full {
                return "unexplained_borderline_budget";
            }
        }
        if r.running_max >= cap {
            return "batch_limit";
        }
        return "unexplained_queue";
    }
    if f64::from(set.clients) <= cap {
        return "load_not_reached";
    }
    if r.outside >= (0.15 * f64::from(set.clients)).max(2.0) {
        return "front_end";
    }
    "unexplained_no_queue"
}

/// The cell's scrapes as a diagnosis fixture (`crates/diagnosis/tests/fixtures/real-matrix`): the
/// format of `real-runs` (facts, the oracle's verdict as `# expect:`, a TSV of the page's numbers).
pub fn fixture(
    scrapes: &[Scrape],
    set: Setting,
    source: &str,
    reading: &Reading,
    achieved: Option<f64>,
    requests: Option<&serde_json::Value>,
) -> String {
    let mut out = format!("# source: {source}\n# oracle: {}\n", reading.line());
    if let Some(r) = requests {
        out += &format!("# requests: {r}\n");
    }
    out += &format!(
        "# facts: max_num_seqs={} concurrency={}{}{} scrape_interval=0.5 duration_s={}\n",
        set.cap,
        set.clients,
        achieved.map_or(String::new(), |a| format!(" achieved_concurrency={a:.2}")),
        set.budget
            .map_or(String::new(), |b| format!(" max_num_batched_tokens={b}")),
        set.duration_s
    );
    out += &format!("# expect: {}\n", reading.expect.unwrap_or("not_formed"));
    let present: Vec<&str> = NAMES
        .iter()
        .copied()
        .filter(|n| scrapes.iter().any(|s| s.values.contains_key(n)))
        .collect();
    out += &format!("t\t{}\n", present.join("\t"));
    for s in scrapes {
        out += &format!("{:.3}", s.t);
        for n in &present {
            match s.values.get(n) {
                Some(v) => out += &format!("\t{v}"),
                None => out += "\t",
            }
        }
        out.push('\n');
    }
    out
}

/// A fixture written by [`fixture`], read back: its scrapes and setting (for re-judging the
/// cells when the oracle changes, without the engine); `duration_s` where the facts do not say.
pub fn parse_fixture(text: &str, duration_s: f64) -> Option<(Vec<Scrape>, Setting)> {
    let facts: BTreeMap<&str, &str> = text
        .lines()
        .find_map(|l| l.strip_prefix("# facts:"))?
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let set = Setting {
        cap: facts.get("max_num_seqs")?.parse().ok()?,
        clients: facts.get("concurrency")?.parse().ok()?,
        budget: facts
            .get("max_num_batched_tokens")
            .and_then(|b| b.parse().ok()),
        duration_s: facts
            .get("duration_s")
            .and_then(|d| d.parse().ok())
            .unwrap_or(duration_s),
    };
    let mut rows = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&'static str> = rows
        .next()?
        .split('\t')
        .skip(1)
        .map(|h| NAMES.iter().copied().find(|n| *n == h))
        .collect::<Option<_>>()?;
    let scrapes = rows
        .filter_map(|row| {
            let mut cells = row.split('\t');
            let t = cells.next()?.parse().ok()?;
            let values = header
                .iter()
                .zip(cells)
                .filter_map(|(n, c)| Some((*n, c.parse().ok()?)))
                .collect();
            Some(Scrape { t, values })
        })
        .collect();
    Some((scrapes, set))
}
