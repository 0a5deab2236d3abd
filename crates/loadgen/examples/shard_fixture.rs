//! Writes the files of a sharded load of RECORDS made-up requests, as `load --shard I/N --out
//! DIR` would: for `scripts/bench-merge.sh`, which times `llmscope merge` on them.
//!
//!     cargo run --release -p llmscope-loadgen --example shard_fixture -- DIR SHARDS RECORDS

use llmscope_loadgen::records_file::RecordsFile;
use llmscope_loadgen::report::LoadReport;
use llmscope_loadgen::shard::{FORMAT, Shard, ShardFile, ShardInfo, ShardStage, WholeStage};
use llmscope_loadgen::stats::{StageMeta, StageStats};
use llmscope_loadgen::{Mode, RequestRecord, Slo};
use std::path::PathBuf;

/// Request `i`: sent every 20 µs, TTFT 20 ms to 2 s, 1 to 64 tokens 5 to 35 ms apart.
fn record(i: u64) -> RequestRecord {
    let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33;
    let sent = 1_790_000_000_000_000_000 + i * 20_000;
    let ttft = 20_000_000 + (x % 1_980) * 1_000_000;
    let gaps: Vec<u32> = (0..x % 64)
        .map(|g| 5_000 + ((x + g) % 30_000) as u32)
        .collect();
    let e2e = ttft + gaps.iter().map(|&g| u64::from(g) * 1_000).sum::<u64>();
    let tokens = gaps.len() as u32 + 1;
    RequestRecord {
        id: i,
        sent_unix_ns: sent,
        first_token_unix_ns: Some(sent + ttft),
        first_output_unix_ns: Some(sent + ttft),
        end_unix_ns: sent + e2e,
        status: Some(200),
        prompt_tokens: Some(200 + (x % 300) as u32),
        output_tokens: Some(tokens),
        chunk_tokens: tokens,
        gaps_us: gaps,
        ..Default::default()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, shards, records] = args.as_slice() else {
        panic!("usage: shard_fixture DIR SHARDS RECORDS");
    };
    let dir = PathBuf::from(dir);
    let (count, n): (u32, u64) = (shards.parse().unwrap(), records.parse().unwrap());
    std::fs::create_dir_all(&dir).unwrap();
    let mode = Mode::Closed { concurrency: 4_096 };
    let whole = WholeStage {
        label: "closed-loop, concurrency 4096".into(),
        mode,
    };
    let slo = Slo::default();
    for index in 0..count {
        let shard = Shard { index, count };
        let mut out = RecordsFile::create(&dir.join(ShardFile::records_name(shard))).unwrap();
        let mut stats = StageStats::default();
        let mut batch = Vec::with_capacity(1_024);
        for i in (u64::from(index)..n).step_by(count as usize) {
            let r = record(i);
            stats.add(&r, &slo);
            batch.push(r);
            if batch.len() == 1_024 {
                out.write(&batch);
                batch.clear();
            }
        }
        out.write(&batch);
        out.finish().unwrap();
        let span = (record(0).sent_unix_ns, record(n - 1).sent_unix_ns);
        stats.close_sending_window(span.0, span.1);
        let meta = StageMeta {
            stage: Some(0),
            started_unix_ns: Some(span.0),
            label: format!("closed-loop, concurrency {}", shard.share(4_096)),
            mode: Some(mode),
            mode_name: "closed".into(),
            send_window_s: (span.1 - span.0) as f64 / 1e9,
            ..Default::default()
        };
        let stage = stats.report(&meta, &slo);
        let info = ShardInfo {
            index,
            count,
            start_at_unix_ns: Some(span.0),
            started_unix_ns: span.0,
            late_ms: Some(0.0),
            server_clock_offset_ms: Some(0.0),
        };
        let file = ShardFile {
            format: FORMAT.into(),
            shard: info,
            slo,
            whole: vec![whole.clone()],
            report: LoadReport {
                target: "http://127.0.0.1:8000".into(),
                model: "fixture".into(),
                endpoint: "chat_completions".into(),
                stream: true,
                started_unix_ns: span.0,
                shard: Some(info),
                total: stage.clone(),
                stages: vec![stage],
                ..Default::default()
            },
            stages: vec![ShardStage { meta, stats }],
        };
        let path = dir.join(ShardFile::name(shard));
        std::fs::write(path, serde_json::to_vec(&file).unwrap()).unwrap();
    }
}
