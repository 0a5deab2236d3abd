//! `run` through the lifecycle on the in-process simulator: recorded end to end, and
//! cancelled mid-load (what was recorded is kept, diagnosed and stored `interrupted`).

use crate::{DEADLINE, Heard, only_run, poll, sim_request as request};
use llmscope_collect::HttpClient;
use llmscope_ops::analysis::interruption;
use llmscope_ops::cancel::Cancel;
use llmscope_ops::run::{self, RunOutcome, RunRequest};
use llmscope_sim::serve::SimHandle;
use llmscope_store::{RunStatus, Store};
use std::path::PathBuf;
use std::time::Duration;

/// Resolves and runs `request` until it ends or `cancel` fires; the simulator is shut down.
async fn run(request: RunRequest, cancel: Cancel, heard: &Heard) -> RunOutcome {
    let (mut plan, sim) = request.resolve(heard).await.unwrap();
    // The simulated dcgm's lag is 200 ms: no need to watch the fall for the default 5 s.
    plan.after = Duration::from_millis(400);
    let load = request.prepare_load(&plan.target, heard).await.unwrap();
    let http = HttpClient::new(None).unwrap();
    let outcome = run::execute(&plan, &load, &cancel, &http, heard).await;
    shut(sim).await;
    outcome.unwrap()
}

async fn shut(sim: Option<SimHandle>) {
    if let Some(sim) = sim {
        sim.shutdown().await;
    }
}

fn db_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("runs.db")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_recorded_end_to_end_through_the_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let heard = Heard::default();
    let outcome = run(request(&db, Duration::from_secs(2)), Cancel::new(), &heard).await;
    assert!(
        outcome.stopped_early.is_none(),
        "{:?}",
        outcome.stopped_early
    );
    assert!(outcome.analysed.interrupted.is_none());
    let stored = only_run(&db).expect("the run is stored");
    assert_eq!(stored.id, outcome.analysed.run);
    assert_eq!(
        (stored.kind.as_str(), stored.status),
        ("run", RunStatus::Completed)
    );
    assert_eq!(stored.sources, ["vllm", "dcgm"]);
    assert!(stored.samples > 0 && stored.requests > 0, "{stored:?}");
    assert_eq!((stored.planned_s, stored.interrupted_at), (Some(2.0), None));
    assert!(stored.ended_at.is_some_and(|t| t >= stored.started_at));
    // The facts and every finding of the diagnosis, stored with the run.
    let findings = Store::open(&db).unwrap().findings(stored.id).unwrap();
    assert_eq!(
        findings.len(),
        outcome.analysed.diagnosis.findings.len() + 1
    );
    assert_eq!(findings[0].rule, "run_facts");
    let facts = outcome.analysed.facts;
    assert!(facts.simulated && facts.load_window.is_some() && facts.client.is_some());
    for step in ["baseline:", "load:", "drain:"] {
        assert!(heard.said(step), "{step} {:?}", heard.0.lock().unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_keeps_what_it_recorded_and_reads_back_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let heard = Heard::default();
    let cancel = Cancel::new();
    let work = {
        let (request, cancel) = (request(&db, Duration::from_secs(600)), cancel.clone());
        let heard = &heard;
        async move { run(request, cancel, heard).await }
    };
    let watch = async {
        // Once the load is under way (requests stored), cancel: as a first Ctrl-C does.
        poll("requests stored", || {
            only_run(&db).filter(|r| heard.said("load:") && r.requests > 0)
        })
        .await;
        assert!(cancel.cancel());
    };
    let (outcome, ()) = tokio::time::timeout(DEADLINE, async { tokio::join!(work, watch) })
        .await
        .expect("the cancelled run ends");
    let at = cancel.at().unwrap();
    let stored = only_run(&db).unwrap();
    assert_eq!(stored.status, RunStatus::Interrupted, "{stored:?}");
    assert_eq!(stored.interrupted_at, Some(at));
    let done = stored.done_s.unwrap();
    assert!(done > 0.0 && done < 600.0, "{stored:?}");
    assert!(stored.requests > 0 && stored.samples > 0, "{stored:?}");
    assert!(stored.ended_at.is_some());
    // What was measured is diagnosed, and the report says it was interrupted.
    assert!(stored.findings >= 1);
    assert_eq!(outcome.analysed.interrupted, interruption(&stored));
    assert!(outcome.analysed.interrupted.is_some());
    assert!(
        !heard.said("drain:"),
        "a cancelled run does not wait for the drain"
    );
}
