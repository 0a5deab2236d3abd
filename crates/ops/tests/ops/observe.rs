//! `observe` through the lifecycle on the in-process simulator: a live window recorded whole,
//! and one cancelled mid-window (stored `interrupted` where its sources stopped).

use crate::{DEADLINE, only_run, poll, simulator};
use llmscope_collect::time::unix_now;
use llmscope_ops::cancel::Cancel;
use llmscope_ops::observe::{ObserveRequest, Outcome, Ticker, execute};
use llmscope_sim::serve::SimHandle;
use llmscope_store::{RunStatus, Store};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

struct Quiet;

impl Ticker for Quiet {
    fn every(&self) -> Duration {
        Duration::from_millis(100)
    }
    fn tick(&self, _: Duration, _: Duration, _: u64) {}
    fn done(&self) {}
}

fn request(sim: &SimHandle, db: &Path, duration: Duration) -> ObserveRequest {
    ObserveRequest {
        scrape: vec![
            format!("vllm={}/metrics", sim.vllm_url()),
            format!("dcgm={}", sim.dcgm_url()),
        ],
        duration: Some(duration),
        interval: Duration::from_millis(250),
        body_limit: llmscope_collect::scrape::DEFAULT_BODY_LIMIT,
        openmetrics: true,
        gzip: true,
        db: db.to_path_buf(),
        ..ObserveRequest::default()
    }
}

async fn observe(request: ObserveRequest, cancel: &Cancel) -> Outcome {
    let plan = request.plan(unix_now()).unwrap();
    execute(&plan, Arc::new(Quiet), cancel).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observing_the_simulator_records_a_completed_run() {
    let sim = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("o.db");
    let before = unix_now();
    let o = observe(request(&sim, &db, Duration::from_secs(1)), &Cancel::new()).await;
    let after = unix_now();
    sim.shutdown().await;
    assert_eq!(o.status, RunStatus::Completed, "{:?}", o.findings);
    assert!(o.findings.is_empty(), "{:?}", o.findings);
    let (from, to) = o.window;
    assert!(
        before <= from && to <= after && to - from >= 0.95,
        "{:?}",
        o.window
    );
    let stored = only_run(&db).unwrap();
    assert_eq!((stored.id, stored.kind.as_str()), (o.run, "observe"));
    assert_eq!(
        (stored.status, stored.window),
        (RunStatus::Completed, Some(o.window))
    );
    assert_eq!((stored.planned_s, stored.interrupted_at), (Some(1.0), None));
    assert_eq!(stored.sources, ["vllm", "dcgm"]);
    assert_eq!(
        stored.samples,
        o.stats.iter().map(|s| s.samples).sum::<u64>()
    );
    assert!(
        o.stats
            .iter()
            .all(|s| s.samples > 0 && s.failed_scrapes == 0),
        "{:?}",
        o.stats
    );
    // The versions the sources told are stored, even none.
    assert_eq!(stored.server_versions, o.versions);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_observation_is_stored_interrupted_where_its_sources_stopped() {
    let sim = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("o.db");
    let cancel = Cancel::new();
    let work = observe(request(&sim, &db, Duration::from_secs(600)), &cancel);
    let watch = async {
        let seen = poll("samples stored", || only_run(&db).filter(|r| r.samples > 0)).await;
        assert!(cancel.cancel());
        seen
    };
    let (o, seen) = tokio::time::timeout(DEADLINE, async { tokio::join!(work, watch) })
        .await
        .expect("the cancelled observation ends");
    sim.shutdown().await;
    assert_eq!(o.status, RunStatus::Interrupted, "{:?}", o.findings);
    let stored = Store::open(&db).unwrap().run(o.run).unwrap();
    assert_eq!(stored.status, RunStatus::Interrupted);
    // Where the sources stopped: the end of what they delivered, its length how far.
    let (from, to) = o.window;
    assert_eq!(stored.interrupted_at, Some(to));
    assert_eq!(stored.done_s, Some(to - from));
    assert!(
        to >= cancel.at().unwrap() - 0.001,
        "{:?} {:?}",
        o.window,
        cancel.at()
    );
    assert!(
        stored.samples >= seen.samples && stored.planned_s == Some(600.0),
        "{stored:?}"
    );
    assert!(stored.ended_at.is_some());
}
