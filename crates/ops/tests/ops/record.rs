//! The lifecycle on its own: what is sent while recording, written after and judged is what
//! the store holds, and the run ends as told.

use llmscope_core::series::{Batch, Labels, Point, Series, SeriesKey};
use llmscope_core::severity::Severity;
use llmscope_ops::record::{Ending, RunMeta, RunRecord, prometheus_spec};
use llmscope_store::{Finding, RunStatus, SourceSpec, Store};

fn series(name: &str, t0: f64, n: usize) -> Series {
    Series {
        key: SeriesKey::new(name, Labels::default()),
        points: (0..n)
            .map(|i| Point {
                t: t0 + i as f64,
                v: i as f64,
            })
            .collect(),
    }
}

fn batch(source: &str, s: Series) -> Batch {
    let mut b = Batch::new(source);
    b.push_series(s);
    b
}

#[tokio::test]
async fn a_recording_keeps_what_was_sent_and_finishes_with_its_findings() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let mut meta = RunMeta::new("run", serde_json::json!({"k": 1}));
    meta.planned_s = Some(30.0);
    let engine = SourceSpec {
        name: "engine".to_owned(),
        kind: "scrape".to_owned(),
        url: "http://127.0.0.1:1/metrics".to_owned(),
    };
    let sources = [engine, prometheus_spec("http://127.0.0.1:2")];
    let record = RunRecord::create(Store::open(&db).unwrap(), &meta, &sources).unwrap();
    let run = record.id();
    let recording = record.record().unwrap();
    // Two senders, as the shards of a load would be.
    let (a, b) = (recording.sink(), recording.sink());
    assert!(a.send(batch("engine", series("running", 1000.0, 5))));
    assert!(b.send(batch("engine", series("waiting", 1000.0, 3))));
    drop((a, b));
    let (mut record, reports) = recording.stop().await.unwrap();
    assert!(reports.is_empty(), "no collector was started");
    record
        .write(batch("prometheus", series("gpu", 1000.0, 2)))
        .unwrap();
    record.interrupt(1003.0, Some(3.0)).unwrap();
    let mut names: Vec<String> = record
        .series()
        .unwrap()
        .into_iter()
        .map(|s| s.key.name)
        .collect();
    names.sort();
    assert_eq!(names, ["gpu", "running", "waiting"]);
    let judged = [Finding::new("a_rule".to_owned(), Severity::Warning, "said")];
    let store = record
        .finish(Ending {
            status: RunStatus::Interrupted,
            findings: &judged,
            versions: None,
            window: Some((1000.0, 1004.0)),
        })
        .unwrap();
    let r = store.run(run).unwrap();
    assert_eq!((r.kind.as_str(), r.status), ("run", RunStatus::Interrupted));
    assert_eq!((r.samples, r.series, r.findings), (10, 3, 1));
    assert_eq!(r.sources, ["engine", "prometheus"]);
    assert_eq!(
        (r.interrupted_at, r.done_s, r.planned_s),
        (Some(1003.0), Some(3.0), Some(30.0))
    );
    assert_eq!(r.window, Some((1000.0, 1004.0)));
    assert!(r.ended_at.is_some() && r.server_versions.is_empty());
    assert_eq!(store.findings(run).unwrap()[0].message, "said");
}
