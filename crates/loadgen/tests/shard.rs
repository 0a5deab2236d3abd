//! Sharded load and its merge (issue 29): snapshots merge exactly; three shards driven against
//! the in-process fake server merge into one load whose percentiles are the records' own; a
//! merge refuses a set that is not one load, and names shards that did not keep up.

use llmscope_loadgen::fake::{self, FakeConfig};
use llmscope_loadgen::merge::{self, MergeError};
use llmscope_loadgen::records_file::RecordsFile;
use llmscope_loadgen::shard::{FORMAT, Shard, ShardFile, ShardStage};
use llmscope_loadgen::stats::{StageMeta, StageStats};
use llmscope_loadgen::{LoadSpec, Mode, Observer, RequestRecord, RunControl, Slo, resolve, run};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("llmscope-shard-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A deterministic record `i` of a made-up load: latencies spread over three decades.
fn record(i: u64) -> RequestRecord {
    let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
    let sent = 1_700_000_000_000_000_000 + i * 3_000_000;
    let ttft = 2_000_000 + (x % 900) * 1_100_000;
    let gaps: Vec<u32> = (0..(x % 40 + 2))
        .map(|g| 5_000 + (g as u32 * 977) % 30_000)
        .collect();
    let e2e = ttft + gaps.iter().map(|&g| u64::from(g) * 1_000).sum::<u64>();
    RequestRecord {
        stage: 0,
        id: i,
        warmup: i.is_multiple_of(50),
        sent_unix_ns: sent,
        first_token_unix_ns: Some(sent + ttft),
        first_output_unix_ns: Some(sent + ttft),
        end_unix_ns: sent + e2e,
        status: Some(200),
        prompt_tokens: Some(100 + (x % 50) as u32),
        output_tokens: Some(gaps.len() as u32 + 1),
        chunk_tokens: gaps.len() as u32 + 1,
        gaps_us: gaps,
        ..Default::default()
    }
}

fn meta() -> StageMeta {
    StageMeta {
        stage: Some(0),
        label: "closed-loop, concurrency 9".into(),
        mode: Some(Mode::Closed { concurrency: 9 }),
        mode_name: "closed".into(),
        ..Default::default()
    }
}

#[test]
fn snapshots_of_three_shards_merge_into_the_stats_of_all_their_records() {
    let slo = Slo::default();
    let records: Vec<RequestRecord> = (0..3_000).map(record).collect();
    let window = (records[0].sent_unix_ns, records[2_999].sent_unix_ns);
    let mut whole = StageStats::default();
    let mut shards = vec![StageStats::default(); 3];
    for r in &records {
        whole.add(r, &slo);
        shards[(r.id % 3) as usize].add(r, &slo);
    }
    whole.close_sending_window(window.0, window.1);
    let mut merged = StageStats::default();
    for mut s in shards {
        s.close_sending_window(window.0, window.1);
        // Through the shard file's JSON and back: the snapshot is lossless.
        let back: StageStats = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(
            format!("{:?}", back.report(&meta(), &slo)),
            format!("{:?}", s.report(&meta(), &slo))
        );
        merged.merge_concurrent(&back);
    }
    let (a, b) = (merged.report(&meta(), &slo), whole.report(&meta(), &slo));
    assert_eq!(a.requests, b.requests);
    assert_eq!(a.latency_ms, b.latency_ms);
    assert_eq!(a.throughput, b.throughput);
    assert_eq!(a.tokens, b.tokens);
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

/// Collects what `load --out` writes: the records, and each stage's statistics.
struct ShardObserver {
    records: RecordsFile,
    stages: Vec<ShardStage>,
}

impl Observer for ShardObserver {
    fn records(&mut self, batch: &[RequestRecord]) {
        self.records.write(batch);
    }
    fn stage_measured(&mut self, stats: &StageStats, meta: &StageMeta) {
        self.stages.push(ShardStage {
            meta: meta.clone(),
            stats: stats.clone(),
        });
    }
}

/// Runs shard `shard` of `spec` and writes its files into `dir`, as `load --shard --out` does.
async fn run_shard(spec: LoadSpec, shard: Shard, dir: &Path) {
    let spec = LoadSpec {
        shard: Some(shard),
        ..spec
    };
    let plan = resolve(&spec).await.expect("plan");
    let part = plan.shard.clone().expect("a sharded plan");
    let mut obs = ShardObserver {
        records: RecordsFile::create(&dir.join(ShardFile::records_name(shard))).unwrap(),
        stages: Vec::new(),
    };
    let report = run(&plan, &mut obs, &RunControl::new()).await;
    obs.records.finish().unwrap();
    let file = ShardFile {
        format: FORMAT.into(),
        shard: report.shard.expect("the shard's report says so"),
        slo: plan.slo,
        whole: part.whole,
        report,
        stages: obs.stages,
    };
    std::fs::write(
        dir.join(ShardFile::name(shard)),
        serde_json::to_vec(&file).unwrap(),
    )
    .unwrap();
}

async fn three_shards(name: &str, spec: LoadSpec) -> PathBuf {
    let dir = temp_dir(name);
    let shard = |index| Shard { index, count: 3 };
    tokio::join!(
        run_shard(spec.clone(), shard(0), &dir),
        run_shard(spec.clone(), shard(1), &dir),
        run_shard(spec.clone(), shard(2), &dir),
    );
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_shards_merge_into_one_load_as_the_records_say() {
    let server = fake::start(FakeConfig {
        token_interval: Duration::from_millis(2),
        ..FakeConfig::default()
    })
    .await;
    let spec = LoadSpec {
        target: server.url.clone(),
        concurrency: vec![7, 3],
        requests: Some(31),
        max_tokens: Some(8),
        start_at: Some(SystemTime::now() + Duration::from_millis(300)),
        ..Default::default()
    };
    let dir = three_shards("fake", spec).await;
    let shards = merge::read(std::slice::from_ref(&dir)).expect("one whole load");
    let mut report = merge::merge(&shards);
    let mut copy = Vec::new();
    let check = merge::check_records(&shards, &report, Some((&dir, &mut copy))).unwrap();
    // Every request of both stages once: 31 each, split 11/10/10; ids as one process numbers them.
    assert_eq!(report.stages.len(), 2);
    for s in &report.stages {
        assert_eq!(
            (s.requests.sent, s.requests.completed),
            (31, 31),
            "{}",
            s.label
        );
    }
    assert_eq!(report.stages[0].label, "closed-loop, concurrency 7");
    assert_eq!(report.stages[0].load.target, Some(7.0));
    assert_eq!(report.total.requests.sent, 62);
    let records: Vec<RequestRecord> = String::from_utf8(copy)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids = |stage| {
        let mut ids: Vec<u64> = records
            .iter()
            .filter(|r| r.stage == stage)
            .map(|r| r.id)
            .collect();
        ids.sort_unstable();
        ids
    };
    // The first stage's requests are numbered as one process numbers them; later stages keep
    // each shard's own count going, so their numbers stay unique but may leave gaps.
    assert_eq!(ids(0), (0..31).collect::<Vec<_>>());
    let mut all = [ids(0), ids(1)].concat();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 62);
    assert!(check.agree, "{check:#?}");
    assert_eq!((check.measured, check.completed), (62, 62));
    assert_eq!(check.percentiles.len(), 12);
    let shards_report = report.shards.take().unwrap();
    assert!(shards_report.agreed, "{:?}", shards_report.problems);
    let sent: Vec<u64> = shards_report
        .shards
        .iter()
        .map(|s| s.requests.sent)
        .collect();
    assert_eq!(sent, vec![22, 20, 20]);
    assert!(
        shards_report.shards.iter().all(|s| s.late_ms.is_some()),
        "{:?}",
        shards_report.shards
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_refuses_what_is_not_one_load_and_names_shards_that_fell_behind() {
    let server = fake::start(FakeConfig::default()).await;
    let spec = LoadSpec {
        target: server.url.clone(),
        concurrency: vec![3],
        requests: Some(6),
        max_tokens: Some(4),
        ..Default::default()
    };
    let dir = three_shards("refuse", spec).await;
    let file = |i: u32| dir.join(ShardFile::name(Shard { index: i, count: 3 }));

    // A shard missing.
    let err = merge::read(&[file(0), file(2)]).unwrap_err();
    assert!(matches!(err, MergeError::Missing { .. }), "{err}");
    assert!(
        err.to_string().contains("shard 1/3 (shard-1-of-3.json)"),
        "{err}"
    );
    // A shard twice.
    let err = merge::read(&[file(0), file(1), file(1), file(2)]).unwrap_err();
    assert!(
        matches!(err, MergeError::Duplicate { index: 1, .. }),
        "{err}"
    );
    // Not a shard file.
    let bogus = dir.join("shard-9-of-9.json");
    std::fs::write(&bogus, br#"{"format":"something else"}"#).unwrap();
    let err = merge::read(&[file(0), file(1), file(2), bogus.clone()]).unwrap_err();
    assert!(err.to_string().contains("format `something else`"), "{err}");
    std::fs::remove_file(&bogus).unwrap();
    // A shard of another load.
    let mut other: ShardFile = serde_json::from_slice(&std::fs::read(file(2)).unwrap()).unwrap();
    other.report.model = "another-model".into();
    std::fs::write(file(2), serde_json::to_vec(&other).unwrap()).unwrap();
    let err = merge::read(std::slice::from_ref(&dir)).unwrap_err();
    assert!(err.to_string().contains("another-model"), "{err}");

    // Late, and unable to keep its share: named, and the merged run is client-limited.
    other.report.model = serde_json::from_slice::<ShardFile>(&std::fs::read(file(0)).unwrap())
        .unwrap()
        .report
        .model;
    other.shard.late_ms = Some(4_200.0);
    // Its clock 3 s behind the others' (the server's Date read 3 s further ahead of it).
    let clock = other
        .shard
        .server_clock_offset_ms
        .expect("the fake server sends a Date header");
    assert!(clock.abs() < 1_600.0, "offset {clock} ms on one machine");
    other.shard.server_clock_offset_ms = Some(clock + 3_000.0);
    other.report.total.client.limited = true;
    other.report.total.client.verdict = "client-limited: sends 40 ms behind schedule".into();
    other.report.stages[0].client.limited = true;
    std::fs::write(file(2), serde_json::to_vec(&other).unwrap()).unwrap();
    let report = merge::merge(&merge::read(std::slice::from_ref(&dir)).unwrap());
    let s = report.shards.as_ref().unwrap();
    assert!(!s.agreed);
    let problems = s.problems.join("\n");
    assert!(
        problems.contains("shard 2/3 began 4.2 s after --start-at"),
        "{problems}"
    );
    assert!(
        problems.contains("shard 2/3 could not keep its share: client-limited: sends 40 ms"),
        "{problems}"
    );
    assert!(
        problems.contains("clock is") && problems.contains("s ahead of shard 2/3's"),
        "{problems}"
    );
    assert!(report.total.client.limited);
    assert!(
        report.total.client.verdict.contains("1 of 3 shards"),
        "{}",
        report.total.client.verdict
    );
}
