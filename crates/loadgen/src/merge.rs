//! `llmscope merge`: the shards of one load ([`crate::shard`]) as one report, in the form of a
//! single process's `load --format json`, with the shards' own figures beside it.
//!
//! [`read`] takes shard files (or directories holding them) and refuses a set that is not one
//! whole load: a shard missing or given twice, shards of different loads. [`merge`] adds each
//! stage's snapshots across shards (exact: counts and HDR buckets add, windows are their union),
//! then the stages one after the other as a single process does, and says where the shards did
//! not agree: one that started late, stages that began apart (clocks or schedules), one that
//! could not keep its share (the merged stage is then client-limited too). [`check_records`]
//! streams the shards' per-request records: their count must match, and every percentile of the
//! merged histograms must be the one the records give, at the histogram's precision.

use crate::monitor::REACHED;
use crate::record::RequestRecord;
use crate::report::{ClientReport, LoadReport, StageReport, Summary};
pub use crate::report::{PercentileCheck, RecordsCheck, ShardFigures, ShardsReport};
use crate::shard::{FORMAT, ShardFile, ShardInfo, ShardStage, WholeStage};
use crate::stats::{Hist, StageMeta, StageStats, run_total};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A shard that began more than this after `--start-at` is named.
pub const LATE_MS: f64 = 1_000.0;
/// Shards whose clocks, read against the server's `Date` header (each within about ±0.5 s),
/// differ by more than this are named: their `--start-at` was not one moment.
pub const CLOCK_MS: f64 = 1_500.0;
/// Stages whose starts across shards lie further apart than this (or 2 % of the stage's sending
/// window, if longer) are named.
pub const SPREAD_MS: f64 = 1_000.0;

/// Why shards could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A shard file that is not a regular file (a FIFO, a device) or is past its size limit.
    #[error(transparent)]
    File(#[from] llmscope_core::files::FileError),
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a shard file of llmscope load --shard ({why})")]
    Parse { path: String, why: String },
    #[error("{path}, line {line}: not a request record ({why})")]
    Record {
        path: String,
        line: u64,
        why: String,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "no shard files found in {0}: give the --out directories of `llmscope load --shard` (shard-I-of-N.json) or the files"
    )]
    NoShards(String),
    #[error(
        "{missing} missing: a merged report needs every shard of the load (found {found} of {count}); rerun the missing shard(s) or merge their files too"
    )]
    Missing {
        missing: String,
        found: usize,
        count: u32,
    },
    #[error("shard {index}/{count} is given twice: {a} and {b}")]
    Duplicate {
        index: u32,
        count: u32,
        a: String,
        b: String,
    },
    #[error(
        "{a} and {b} are shards of different loads ({what}: `{va}` vs `{vb}`); merge the shards of one load"
    )]
    Mismatch {
        a: String,
        b: String,
        what: &'static str,
        va: String,
        vb: String,
    },
}

/// A shard file as read, and where from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub path: PathBuf,
    pub file: ShardFile,
}

impl Loaded {
    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn label(&self) -> String {
        format!("shard {}/{}", self.file.shard.index, self.file.shard.count)
    }

    /// Its records file, beside it.
    pub fn records_path(&self) -> PathBuf {
        let s = self.file.shard;
        self.path
            .with_file_name(ShardFile::records_name(crate::shard::Shard {
                index: s.index,
                count: s.count,
            }))
    }
}

/// Reads the shard files named, or found in the directories named, sorted by index; the set must
/// be one whole load.
pub fn read(paths: &[PathBuf]) -> Result<Vec<Loaded>, MergeError> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            files.extend(shard_files_in(p)?);
        } else {
            files.push(p.clone());
        }
    }
    if files.is_empty() {
        let named: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(MergeError::NoShards(named.join(", ")));
    }
    let mut loaded = files
        .into_iter()
        .map(|path| read_one(&path).map(|file| Loaded { path, file }))
        .collect::<Result<Vec<_>, _>>()?;
    loaded.sort_by_key(|l| l.file.shard.index);
    check_whole(&loaded)?;
    Ok(loaded)
}

/// [`read`], waiting up to `wait` for shards still running (none written yet, or some missing;
/// a shard's file appears whole, when it has finished): what a merge Job started beside the
/// shards does. Other errors, and the last one at the deadline, are returned as they are.
pub fn read_waiting(paths: &[PathBuf], wait: Duration) -> Result<Vec<Loaded>, MergeError> {
    let deadline = Instant::now() + wait;
    loop {
        match read(paths) {
            Err(MergeError::NoShards(_) | MergeError::Missing { .. })
                if Instant::now() < deadline =>
            {
                std::thread::sleep(POLL.min(deadline - Instant::now()));
            }
            other => return other,
        }
    }
}

/// How often [`read_waiting`] looks again.
const POLL: Duration = Duration::from_secs(2);

fn shard_files_in(dir: &Path) -> Result<Vec<PathBuf>, MergeError> {
    let read_err = |source| MergeError::Read {
        path: dir.display().to_string(),
        source,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let path = entry.map_err(read_err)?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("shard-") && name.ends_with(".json") {
            out.push(path);
        }
    }
    Ok(out)
}

/// The largest shard file read: its report and each stage's histograms (tens of kB to a few MB;
/// its per-request records are in a file of their own, streamed).
pub const MAX_SHARD_FILE_BYTES: u64 = 256 << 20;

fn read_one(path: &Path) -> Result<ShardFile, MergeError> {
    // A regular file, bounded: a FIFO given as a shard hung `merge`, and a shard folder that
    // was a link to /dev/zero read 2 GB before failing (issue 50).
    let text = llmscope_core::files::read_bytes_bounded(
        path,
        MAX_SHARD_FILE_BYTES,
        "a shard file holds its report and histograms, never this much: is it a shard file?",
    )?;
    let parse = |why: String| MergeError::Parse {
        path: path.display().to_string(),
        why,
    };
    let v: serde_json::Value = serde_json::from_slice(&text).map_err(|e| parse(e.to_string()))?;
    let format = v.get("format").and_then(|f| f.as_str()).unwrap_or("none");
    if format != FORMAT {
        return Err(parse(format!("format `{format}`, expected `{FORMAT}`")));
    }
    serde_json::from_value(v).map_err(|e| parse(e.to_string()))
}

/// Every index of one count, once each, of one load.
fn check_whole(shards: &[Loaded]) -> Result<(), MergeError> {
    let first = &shards[0];
    let count = first.file.shard.count;
    for s in shards {
        let mismatch = |what, va: String, vb: String| MergeError::Mismatch {
            a: first.name(),
            b: s.name(),
            what,
            va,
            vb,
        };
        let (a, b) = (&first.file, &s.file);
        if b.shard.count != count {
            return Err(mismatch(
                "number of shards",
                count.to_string(),
                b.shard.count.to_string(),
            ));
        }
        let labels = |f: &ShardFile| {
            let l: Vec<&str> = f.whole.iter().map(|w| w.label.as_str()).collect();
            l.join("; ")
        };
        for (what, va, vb) in [
            ("target", a.report.target.clone(), b.report.target.clone()),
            ("model", a.report.model.clone(), b.report.model.clone()),
            (
                "endpoint",
                a.report.endpoint.clone(),
                b.report.endpoint.clone(),
            ),
            ("stages", labels(a), labels(b)),
        ] {
            if va != vb {
                return Err(mismatch(what, va, vb));
            }
        }
    }
    for pair in shards.windows(2) {
        if pair[0].file.shard.index == pair[1].file.shard.index {
            return Err(MergeError::Duplicate {
                index: pair[0].file.shard.index,
                count,
                a: pair[0].name(),
                b: pair[1].name(),
            });
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !shards.iter().any(|s| s.file.shard.index == *i))
        .map(|i| format!("shard {i}/{count} (shard-{i}-of-{count}.json)"))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing {
            missing: missing.join(", "),
            found: shards.len(),
            count,
        });
    }
    Ok(())
}

/// The shards as one report (`shards` says where they came from and how well they agreed).
pub fn merge(shards: &[Loaded]) -> LoadReport {
    let first = &shards[0].file;
    let mut problems = Vec::new();
    let mut merged: Vec<(StageStats, StageMeta, StageReport)> = Vec::new();
    let mut spreads = Vec::new();
    for (k, whole) in first.whole.iter().enumerate() {
        let parts: Vec<Part<'_>> = shards
            .iter()
            .filter_map(|l| Some((l, l.file.stages.get(k)?, l.file.report.stages.get(k)?)))
            .collect();
        if parts.is_empty() {
            break;
        }
        let (stats, meta) = merge_stage(k, whole, &parts);
        let spread = start_spread(&parts);
        let tolerance = SPREAD_MS.max(meta.send_window_s * 1e3 * 0.02);
        if spread > tolerance {
            problems.push(format!(
                "stage {}: the shards began it {:.1} s apart (more than {:.1} s): their clocks or schedules disagree, so the merged stage mixes different moments",
                k + 1,
                spread / 1e3,
                tolerance / 1e3
            ));
        }
        spreads.push(round1(spread));
        let mut report = stats.report(&meta, &first.slo);
        let clients: Vec<(&Loaded, &ClientReport)> =
            parts.iter().map(|(l, _, r)| (*l, &r.client)).collect();
        report.client = combine_clients(&clients, &report);
        merged.push((stats, meta, report));
    }
    for l in shards {
        shard_problems(l, first.whole.len(), &mut problems);
    }
    problems.extend(clock_problem(shards));
    let total = merged_total(shards, &merged);
    let figures = shards.iter().map(figures).collect();
    LoadReport {
        target: first.report.target.clone(),
        model: first.report.model.clone(),
        endpoint: first.report.endpoint.clone(),
        stream: first.report.stream,
        started_unix_ns: shards
            .iter()
            .map(|l| l.file.report.started_unix_ns)
            .min()
            .unwrap_or(0),
        interrupted: shards.iter().any(|l| l.file.report.interrupted),
        stopped_early: shards.iter().find_map(|l| {
            let why = l.file.report.stopped_early.as_ref()?;
            Some(format!("{}: {why}", l.label()))
        }),
        shard: None,
        shards: Some(ShardsReport {
            count: first.shard.count,
            shards: figures,
            stage_start_spread_ms: spreads,
            agreed: problems.is_empty(),
            problems,
            records: None,
        }),
        total,
        stages: merged.into_iter().map(|(_, _, r)| r).collect(),
    }
}

/// One shard's stage: the shard, its snapshot and its report of the stage.
type Part<'a> = (&'a Loaded, &'a ShardStage, &'a StageReport);

/// Stage `k` of every shard as one stage of the whole load.
fn merge_stage(k: usize, whole: &WholeStage, parts: &[Part<'_>]) -> (StageStats, StageMeta) {
    let mut stats = StageStats::default();
    let mut meta = StageMeta {
        stage: Some(k as u32),
        label: whole.label.clone(),
        mode: Some(whole.mode),
        mode_name: whole.mode.name().into(),
        reuse: parts[0].1.meta.reuse,
        ..Default::default()
    };
    let mut sending = None;
    for (_, part, _) in parts {
        let m = &part.meta;
        stats.merge_concurrent(&part.stats);
        // Shards' peaks need not coincide: their sum is the most the server can have seen.
        meta.peak_concurrency += m.peak_concurrency;
        meta.send_window_s = meta.send_window_s.max(m.send_window_s);
        meta.duration_s = meta.duration_s.max(m.duration_s);
        meta.started_unix_ns = match (meta.started_unix_ns, m.started_unix_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(c) = m.sending_concurrency {
            sending = Some(sending.unwrap_or(0.0) + c);
        }
    }
    meta.sending_concurrency = sending;
    (stats, meta)
}

/// How far apart (ms) the shards began a stage.
fn start_spread(parts: &[Part<'_>]) -> f64 {
    let starts: Vec<u64> = parts
        .iter()
        .filter_map(|(_, p, _)| p.meta.started_unix_ns)
        .collect();
    match (starts.iter().min(), starts.iter().max()) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e6,
        _ => 0.0,
    }
}

/// The stages one after the other, and the shards' whole-run client figures.
fn merged_total(shards: &[Loaded], merged: &[(StageStats, StageMeta, StageReport)]) -> StageReport {
    let first = &shards[0].file;
    if let [(_, _, only)] = merged {
        return only.clone();
    }
    let stages: Vec<_> = merged.iter().map(|(s, m, _)| (s, m)).collect();
    let reuse = merged.first().map(|(_, m, _)| m.reuse).unwrap_or_default();
    let mode = first.whole.first().map_or("closed", |w| w.mode.name());
    let (stats, meta) = run_total(&stages, reuse, mode);
    let mut report = stats.report(&meta, &first.slo);
    let clients: Vec<(&Loaded, &ClientReport)> = shards
        .iter()
        .map(|l| (l, &l.file.report.total.client))
        .collect();
    report.client = combine_clients(&clients, &report);
    report
}

/// The client side of a merged stage: the shards' machines together. It is limited when any
/// shard was (that shard could not keep its share, so neither could the whole load).
fn combine_clients(clients: &[(&Loaded, &ClientReport)], merged: &StageReport) -> ClientReport {
    let sum = |f: fn(&ClientReport) -> Option<f64>| -> Option<f64> {
        let v: Vec<f64> = clients.iter().filter_map(|(_, c)| f(c)).collect();
        (!v.is_empty()).then(|| round1(v.iter().sum()))
    };
    let max = |f: fn(&ClientReport) -> Option<f64>| -> Option<f64> {
        clients.iter().filter_map(|(_, c)| f(c)).reduce(f64::max)
    };
    let limited: Vec<String> = clients
        .iter()
        .filter(|(_, c)| c.limited)
        .map(|(l, c)| format!("{}: {}", l.label(), c.verdict))
        .collect();
    let contended = clients.iter().find(|(_, c)| c.contended);
    let worst_lag = clients
        .iter()
        .max_by(|a, b| lag_p99(a.1).total_cmp(&lag_p99(b.1)))
        .map(|(_, c)| c.event_loop_lag_ms.clone())
        .unwrap_or_default();
    let load = &merged.load;
    let reached = match (load.target, load.achieved) {
        (Some(t), Some(a)) if t > 0.0 => Some(a >= REACHED * t),
        _ => None,
    };
    let n = clients.len();
    let verdict = if limited.is_empty() {
        let cpu = max(|c| c.cpu_percent_max)
            .map_or(String::new(), |c| format!(" (busiest client CPU {c:.0}%)"));
        format!("not client-limited: each of the {n} shards kept its share{cpu}")
    } else {
        format!(
            "client-limited: {} of {n} shards could not keep their share ({})",
            limited.len(),
            limited.join("; ")
        )
    };
    ClientReport {
        cores: clients.iter().map(|(_, c)| c.cores).sum(),
        cpu_percent_mean: sum(|c| c.cpu_percent_mean),
        cpu_percent_max: sum(|c| c.cpu_percent_max),
        host_cpu_percent_mean: max(|c| c.host_cpu_percent_mean),
        runqueue_wait_percent: max(|c| c.runqueue_wait_percent),
        receive_lag_ms: merged.client.receive_lag_ms.clone(),
        first_tokens_read_behind: merged.client.first_tokens_read_behind,
        event_loop_lag_ms: worst_lag,
        load_reached: reached,
        limited: !limited.is_empty(),
        contended: contended.is_some(),
        contention: contended.and_then(|(l, c)| {
            c.contention
                .as_ref()
                .map(|why| format!("{}: {why}", l.label()))
        }),
        verdict,
    }
}

fn lag_p99(c: &ClientReport) -> f64 {
    c.event_loop_lag_ms.p99.unwrap_or(0.0)
}

/// A shard late, short of stages, or unable to keep its share.
fn shard_problems(l: &Loaded, stages: usize, problems: &mut Vec<String>) {
    let f = &l.file;
    if let Some(late) = f.shard.late_ms.filter(|ms| *ms > LATE_MS) {
        problems.push(format!(
            "{} began {:.1} s after --start-at: its first stage overlaps the others' less",
            l.label(),
            late / 1e3
        ));
    }
    if f.stages.len() < stages {
        problems.push(format!(
            "{} ran {} of the {stages} stages{}: the merged later stages lack its share",
            l.label(),
            f.stages.len(),
            f.report
                .stopped_early
                .as_ref()
                .map_or(String::new(), |why| format!(" (stopped early: {why})"))
        ));
    }
    if f.report.total.client.limited {
        problems.push(format!(
            "{} could not keep its share: {}",
            l.label(),
            f.report.total.client.verdict
        ));
    }
}

/// Shards whose clocks disagree by seconds, by the server's clock: their own timestamps (and
/// the stage starts compared above) cannot show it, each one started at `--start-at` as its own
/// clock read it.
fn clock_problem(shards: &[Loaded]) -> Option<String> {
    let offsets: Vec<(&Loaded, f64)> = shards
        .iter()
        .filter_map(|l| Some((l, l.file.shard.server_clock_offset_ms?)))
        .collect();
    let lo = offsets.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let hi = offsets.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let apart = hi.1 - lo.1;
    (apart > CLOCK_MS).then(|| {
        format!(
            "by the server's Date header, {}'s clock is {:.1} s ahead of {}'s (±1 s): the shards did not start together; sync the nodes' clocks (NTP)",
            lo.0.label(),
            apart / 1e3,
            hi.0.label()
        )
    })
}

fn figures(l: &Loaded) -> ShardFigures {
    let (f, t) = (&l.file, &l.file.report.total);
    let ShardInfo {
        index,
        started_unix_ns,
        late_ms,
        server_clock_offset_ms,
        ..
    } = f.shard;
    ShardFigures {
        index,
        file: l.name(),
        started_unix_ns,
        late_ms,
        server_clock_offset_ms,
        stages: f.stages.len(),
        requests: t.requests,
        output_tokens_per_s: round1(t.throughput.output_tokens_per_s),
        load_target: t.load.target,
        load_achieved: t.load.achieved,
        load_unit: t.load.unit.clone(),
        client_limited: t.client.limited,
        client_verdict: t.client.verdict.clone(),
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Reads one percentile of a summary.
type Pick = fn(&Summary) -> Option<f64>;

/// The quantiles checked.
const QUANTILES: [(f64, Pick); 4] = [
    (0.5, |s| s.p50),
    (0.9, |s| s.p90),
    (0.95, |s| s.p95),
    (0.99, |s| s.p99),
];

/// Per-request latencies (µs, as the histograms record them) of the measured, completed records.
#[derive(Default)]
struct Latencies {
    ttft: Vec<u64>,
    e2e: Vec<u64>,
    tpot: Vec<u64>,
}

impl Latencies {
    fn add(&mut self, r: &RequestRecord) {
        let us = |ns: u64| (ns + 500) / 1000;
        self.e2e.push(us(r.e2e_ns()));
        if let Some(t) = r.ttft_ns() {
            self.ttft.push(us(t));
        }
        if let Some(t) = r.tpot_ns() {
            self.tpot.push(us(t));
        }
    }
}

/// Reads every shard's records (streamed: memory is three numbers per request), copies them to
/// `out` when given, and checks the merged report against them.
pub fn check_records(
    shards: &[Loaded],
    report: &LoadReport,
    mut out: Option<(&Path, &mut dyn Write)>,
) -> Result<RecordsCheck, MergeError> {
    let mut lat = Latencies::default();
    let mut check = RecordsCheck::default();
    for l in shards {
        let path = l.records_path();
        let name = path.display().to_string();
        let file = File::open(&path).map_err(|source| MergeError::Read {
            path: name.clone(),
            source,
        })?;
        check.files += 1;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut line = String::new();
        let mut n = 0u64;
        loop {
            line.clear();
            let read = reader
                .read_line(&mut line)
                .map_err(|source| MergeError::Read {
                    path: name.clone(),
                    source,
                })?;
            if read == 0 {
                break;
            }
            n += 1;
            if line.trim().is_empty() {
                continue;
            }
            let r: RequestRecord = serde_json::from_str(&line).map_err(|e| MergeError::Record {
                path: name.clone(),
                line: n,
                why: e.to_string(),
            })?;
            if let Some((out_path, w)) = out.as_mut() {
                w.write_all(line.trim_end().as_bytes())
                    .and_then(|_| w.write_all(b"\n"))
                    .map_err(|source| MergeError::Write {
                        path: out_path.display().to_string(),
                        source,
                    })?;
            }
            check.records += 1;
            if r.warmup {
                continue;
            }
            check.measured += 1;
            if r.error.is_none() {
                check.completed += 1;
                lat.add(&r);
            }
        }
    }
    let latency = &report.total.latency_ms;
    for (metric, values, summary) in [
        ("ttft", &mut lat.ttft, &latency.ttft),
        ("e2e", &mut lat.e2e, &latency.e2e),
        ("tpot", &mut lat.tpot, &latency.tpot),
    ] {
        values.sort_unstable();
        for (q, pick) in QUANTILES {
            check
                .percentiles
                .push(percentile_check(metric, q, values, pick(summary)));
        }
    }
    let counts = &report.total.requests;
    check.agree = check.measured == counts.sent
        && check.completed == counts.completed
        && check.percentiles.iter().all(|p| p.agree);
    Ok(check)
}

/// The records' `q`-quantile (the value of rank ⌈q·n⌉, as HDR ranks) against the histogram's,
/// which must be that value's bucket read as its highest value.
fn percentile_check(metric: &str, q: f64, sorted: &[u64], hist_ms: Option<f64>) -> PercentileCheck {
    let exact = (!sorted.is_empty()).then(|| {
        let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
        sorted[rank.min(sorted.len()) - 1]
    });
    let agree = match (exact, hist_ms) {
        (Some(v), Some(h)) => {
            let h_us = (h * 1e3).round() as u64;
            v.min(crate::stats::MAX_US) <= h_us && h_us <= Hist::highest_equivalent_us(v)
        }
        (None, None) => true,
        _ => false,
    };
    PercentileCheck {
        metric: metric.into(),
        quantile: q,
        histogram_ms: hist_ms,
        records_ms: exact.map(|v| v as f64 / 1e3),
        agree,
    }
}
