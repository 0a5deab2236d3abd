//! Integration tests of the run store: round trips, the writer thread, and a writer killed with
//! SIGKILL (a child process running this same test binary).
#![allow(clippy::print_stdout)]

use llmscope_core::series::{Batch, FailureKind, Labels, Point, ScrapeHealth, SeriesKey};
use llmscope_core::severity::Severity;
use llmscope_store::{Finding, NewRun, RequestRow, RunStatus, SourceSpec, Store, writer};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn key(name: &str, pairs: &[(&str, &str)]) -> Arc<SeriesKey> {
    let labels = Labels::new(pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())));
    Arc::new(SeriesKey::new(name, labels))
}

/// A store file with one `running` run owned by `pid` started at `start_ticks` of this boot.
fn store_with_owner(dir: &tempfile::TempDir, pid: u32, start_ticks: u64) -> std::path::PathBuf {
    let path = dir.path().join("owned.db");
    let mut store = Store::open(&path).unwrap();
    let run = store.create_run(&new_run()).unwrap();
    store.heartbeat(run, 1005.0, Some(3.0)).unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE runs SET owner_pid = ?1, owner_start = ?2",
        rusqlite::params![pid, start_ticks as i64],
    )
    .unwrap();
    path
}

#[test]
fn a_run_whose_owner_is_alive_stays_running() {
    let Some(me) = llmscope_store::owner::Owner::current() else {
        return; // no /proc
    };
    let dir = tempfile::tempdir().unwrap();
    let path = store_with_owner(&dir, me.pid, me.start_ticks);
    let run = &Store::open(&path).unwrap().runs().unwrap()[0];
    assert_eq!((run.status, run.interrupted_at), (RunStatus::Running, None));
    assert_eq!((run.done_s, run.planned_s), (Some(3.0), Some(30.0)));
}

#[test]
fn a_run_whose_pid_was_reused_is_interrupted_at_its_heartbeat() {
    let Some(me) = llmscope_store::owner::Owner::current() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Our pid, another start time: the owner died and the pid went to this process.
    let path = store_with_owner(&dir, me.pid, me.start_ticks + 7);
    let mut store = Store::open(&path).unwrap();
    let run = store.runs().unwrap().remove(0);
    assert_eq!(run.status, RunStatus::Interrupted);
    assert_eq!(run.interrupted_at, Some(1005.0));
    assert_eq!((run.done_s, run.planned_s), (Some(3.0), Some(30.0)));
    assert!(store.mark_abandoned_runs().unwrap().is_empty(), "once");
}

#[test]
fn a_stopped_run_keeps_when_and_how_far() {
    let mut store = Store::open_in_memory().unwrap();
    let run = store.create_run(&new_run()).unwrap();
    store.interrupt_run(run, 1012.5, Some(12.0)).unwrap();
    store
        .finish_run(run, RunStatus::Interrupted, 1020.0, None)
        .unwrap();
    let r = store.run(run).unwrap();
    assert_eq!(r.status, RunStatus::Interrupted);
    assert_eq!((r.interrupted_at, r.ended_at), (Some(1012.5), Some(1020.0)));
    assert_eq!((r.done_s, r.planned_s), (Some(12.0), Some(30.0)));
    assert!(store.interrupt_run(99, 0.0, None).is_err());
}

#[test]
fn the_writer_stores_request_records_and_progress_as_they_come() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("req.db");
    let mut store = Store::open(&path).unwrap();
    let run = store.create_run(&new_run()).unwrap();
    let w = writer::spawn(store, run).unwrap();
    let tx = w.sender();
    let row = |id| RequestRow {
        stage: 0,
        id,
        sent_unix_ns: id,
        end_unix_ns: id + 1,
        first_token_unix_ns: None,
        status: Some(200),
        error: None,
        prompt_tokens: Some(3),
        output_tokens: Some(5),
        record: serde_json::json!({"id": id}),
    };
    assert!(tx.send_requests(vec![row(1), row(2)]));
    assert!(tx.send_progress(4.5));
    // Committed while the writer still runs: another connection sees them.
    let deadline = Instant::now() + Duration::from_secs(30);
    let seen = || Store::open(&path).unwrap().run(run).unwrap();
    while seen().requests < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = seen();
    assert_eq!((r.requests, r.done_s), (2, Some(4.5)));
    assert!(tx.send_requests(vec![row(3)]));
    drop(tx);
    let (store, totals) = w.finish().unwrap();
    assert_eq!(totals.requests, 3);
    assert_eq!(store.request_count(run).unwrap(), 3);
}

fn new_run() -> NewRun {
    NewRun {
        kind: "observe".into(),
        started_at: 1000.0,
        window: None,
        tool_version: "0.1.0".into(),
        config: serde_json::json!({"interval": "1s"}),
        planned_s: Some(30.0),
    }
}

fn source(name: &str) -> SourceSpec {
    SourceSpec {
        name: name.into(),
        kind: "scrape".into(),
        url: format!("http://127.0.0.1:1/{name}"),
    }
}

fn health(t: f64, up: bool) -> ScrapeHealth {
    ScrapeHealth {
        t,
        up,
        duration_s: 0.01,
        bytes: 100,
        samples: if up { 2 } else { 0 },
        failure: (!up).then_some(FailureKind::Http),
        status: Some(if up { 200 } else { 503 }),
        message: (!up).then(|| "HTTP 503".to_owned()),
    }
}

/// Two series over four scrapes: scrape 3 failed (a gap in `a`), `b` vanished after scrape 2.
fn scrape_batches() -> Vec<Batch> {
    let a = key("vllm:num_requests_waiting", &[("engine", "0")]);
    let b = key("DCGM_FI_DEV_GPU_UTIL", &[("gpu", "0"), ("UUID", "GPU-1")]);
    let mut out = Vec::new();
    for (i, t) in [1.0, 2.0, 3.0, 4.0].into_iter().enumerate() {
        let mut batch = Batch::new("vllm");
        let up = i != 2;
        batch.health.push(health(t, up));
        if up {
            let v = if i == 3 { f64::NAN } else { i as f64 };
            batch.samples.push((Arc::clone(&a), Point { t, v }));
        }
        if i < 2 {
            batch.samples.push((
                Arc::clone(&b),
                Point {
                    t,
                    v: f64::INFINITY,
                },
            ));
        }
        out.push(batch);
    }
    out
}

#[test]
fn a_run_round_trips_with_nan_inf_gaps_and_vanished_series() {
    let mut store = Store::open_in_memory().unwrap();
    let run = store.create_run(&new_run()).unwrap();
    store.add_source(run, &source("vllm")).unwrap();
    assert_eq!(
        store.add_source(run, &source("vllm")).unwrap(),
        1,
        "idempotent"
    );
    for b in scrape_batches() {
        store.write(run, &[b]).unwrap();
    }
    let series = store.series(run, Some("vllm")).unwrap();
    assert_eq!(series.len(), 2);
    let (_, dcgm) = &series[0];
    assert_eq!(dcgm.key.name, "DCGM_FI_DEV_GPU_UTIL");
    assert_eq!(dcgm.points.len(), 2, "vanished series are not filled");
    assert!(dcgm.points.iter().all(|p| p.v == f64::INFINITY));
    let (_, waiting) = &series[1];
    let ts: Vec<f64> = waiting.points.iter().map(|p| p.t).collect();
    assert_eq!(
        ts,
        [1.0, 2.0, 4.0],
        "the failed scrape is no point, not a 0"
    );
    assert!(waiting.points[2].v.is_nan(), "NaN comes back as NaN");
    let stats = store.source_stats(run, 1.0).unwrap();
    assert_eq!(
        (stats[0].series, stats[0].samples, stats[0].gaps),
        (2, 5, 1)
    );
    assert_eq!((stats[0].scrapes, stats[0].failed_scrapes), (4, 1));
    let h = store.health(run, "vllm").unwrap();
    assert_eq!(h[2].failure, Some(FailureKind::Http));
    assert_eq!(h[2].message.as_deref(), Some("HTTP 503"));
}

#[test]
fn an_unknown_source_is_refused_and_nothing_is_written() {
    let mut store = Store::open_in_memory().unwrap();
    let run = store.create_run(&new_run()).unwrap();
    store.add_source(run, &source("vllm")).unwrap();
    let mut batches = scrape_batches();
    batches[1].source = "nope".into();
    let err = store.write(run, &batches).unwrap_err();
    assert!(err.to_string().contains("`nope`"), "{err}");
    assert_eq!(store.run(run).unwrap().samples, 0);
}

#[test]
fn runs_list_findings_requests_and_status() {
    let mut store = Store::open_in_memory().unwrap();
    let first = store.create_run(&new_run()).unwrap();
    let run = store.create_run(&new_run()).unwrap();
    store.add_source(run, &source("vllm")).unwrap();
    store.add_source(run, &source("dcgm")).unwrap();
    store.write(run, &scrape_batches()).unwrap();
    let mut finding = Finding::new(
        "source_failed".to_owned(),
        Severity::Error,
        "dcgm: connection refused",
    );
    finding.source = Some("dcgm".into());
    finding.detail = Some(serde_json::json!({"failed_scrapes": 4}));
    store
        .add_findings(run, std::slice::from_ref(&finding))
        .unwrap();
    let row = RequestRow {
        stage: 0,
        id: 7,
        sent_unix_ns: 1,
        end_unix_ns: 2,
        first_token_unix_ns: None,
        status: Some(503),
        error: Some("http_503".into()),
        prompt_tokens: None,
        output_tokens: None,
        record: serde_json::json!({"id": 7}),
    };
    store.add_requests(run, &[row]).unwrap();
    let versions = [("vllm".to_owned(), "0.26.0".to_owned())].into();
    store.set_server_versions(run, &versions).unwrap();
    store
        .finish_run(run, RunStatus::Partial, 1020.0, Some((1000.0, 1020.0)))
        .unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), [run, first]);
    let r = &runs[0];
    assert_eq!((r.status, r.series, r.samples), (RunStatus::Partial, 2, 5));
    assert_eq!((r.requests, r.findings), (1, 1));
    assert_eq!(r.sources, ["vllm", "dcgm"]);
    assert_eq!(r.window, Some((1000.0, 1020.0)));
    assert_eq!(r.server_versions["vllm"], "0.26.0");
    assert_eq!(runs[1].status, RunStatus::Running);
    assert_eq!(store.findings(run).unwrap(), [finding]);
    assert!(
        store
            .finish_run(99, RunStatus::Completed, 0.0, None)
            .is_err()
    );
}

#[test]
fn the_writer_thread_commits_everything_sent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let mut store = Store::open(&path).unwrap();
    let run = store.create_run(&new_run()).unwrap();
    store.add_source(run, &source("vllm")).unwrap();
    let w = writer::spawn(store, run).unwrap();
    let tx = w.sender();
    let k = key("m", &[]);
    for i in 0..2000 {
        let mut b = Batch::new("vllm");
        b.samples.push((
            Arc::clone(&k),
            Point {
                t: i as f64,
                v: 1.0,
            },
        ));
        assert!(tx.send(b));
    }
    drop(tx);
    let (store, totals) = w.finish().unwrap();
    assert_eq!((totals.samples, totals.series), (2000, 1));
    // Sent at once: the writer coalesces them into a few commits.
    assert!(totals.commits >= 1 && totals.commits <= 10, "{totals:?}");
    // A second connection (another process in real life) sees it all.
    drop(store);
    let again = Store::open(&path).unwrap();
    assert_eq!(again.run(run).unwrap().samples, 2000);
}

#[test]
fn a_database_error_stops_the_writer_at_once_and_hands_the_store_back() {
    // Issue 31, point 4: a failed commit (a full disk in real life; here a batch from a source
    // the run never registered) must stop every sender at its next send, fire the hook at
    // once, and give the store back with what was committed before, so the run can be marked.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stop.db");
    let mut store = Store::open(&path).unwrap();
    let run = store.create_run(&new_run()).unwrap();
    store.add_source(run, &source("vllm")).unwrap();
    let (told, hook) = std::sync::mpsc::channel();
    let w = writer::spawn_with(store, run, move || told.send(()).unwrap()).unwrap();
    let tx = w.sender();
    let batch = |src: &str, t: f64| {
        let mut b = Batch::new(src);
        b.samples.push((key("m", &[]), Point { t, v: 1.0 }));
        b
    };
    assert!(tx.send(batch("vllm", 1.0)));
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.committed_samples() < 1 {
        assert!(
            Instant::now() < deadline,
            "the first batch was never committed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        tx.send(batch("nobody", 2.0)),
        "queued before the writer saw it"
    );
    hook.recv_timeout(Duration::from_secs(10))
        .expect("the hook fires when the commit fails");
    assert!(
        !tx.send(batch("vllm", 3.0)),
        "a send after the failure is refused"
    );
    drop(tx);
    let writer::Stopped::Failed { store, error } = w.finish().unwrap_err() else {
        panic!("the store must come back");
    };
    assert!(error.to_string().contains("nobody"), "{error}");
    assert_eq!(
        store.run(run).unwrap().samples,
        1,
        "what was committed stays"
    );
}

#[test]
fn a_repeated_sample_is_stored_once() {
    // A page repeating a sample with its own timestamp (honoured) must not double it.
    let mut store = Store::open_in_memory().unwrap();
    let run = store.create_run(&new_run()).unwrap();
    store.add_source(run, &source("vllm")).unwrap();
    let k = key("m", &[]);
    let mut b = Batch::new("vllm");
    b.samples.push((Arc::clone(&k), Point { t: 5.0, v: 1.0 }));
    store.write(run, &[b.clone()]).unwrap();
    // The same key content in a new allocation (as a Prometheus source sends it).
    b.samples[0].0 = key("m", &[]);
    store.write(run, &[b]).unwrap();
    let series = store.series(run, None).unwrap();
    assert_eq!((series.len(), series[0].1.points.len()), (1, 1));
    assert_eq!(store.run(run).unwrap().samples, 1, "counted once");
}

#[test]
fn the_schema_version_is_current_after_open() {
    let store = Store::open_in_memory().unwrap();
    assert_eq!(
        store.schema_version().unwrap(),
        llmscope_store::schema::CURRENT_VERSION
    );
}

const CHILD_ENV: &str = "LLMSCOPE_STORE_KILL_CHILD";
const PER_BATCH: usize = 50;

/// The child half of the SIGKILL test: writes batches forever (bounded), one commit each, and
/// says so on stdout after each commit.
fn kill_child_writer(path: &str) {
    let mut store = Store::open(path).unwrap();
    let run = store.create_run(&new_run()).unwrap();
    store.add_source(run, &source("vllm")).unwrap();
    let mut out = std::io::stdout();
    for i in 0..20_000 {
        let mut b = Batch::new("vllm");
        for s in 0..PER_BATCH {
            let k = key("m", &[("s", &s.to_string())]);
            b.samples.push((
                k,
                Point {
                    t: i as f64,
                    v: 1.0,
                },
            ));
        }
        store.write(run, &[b]).unwrap();
        store
            .heartbeat(run, 2000.0 + i as f64, Some(i as f64 + 1.0))
            .unwrap();
        writeln!(out, "committed {}", i + 1).unwrap();
        out.flush().unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Re-runs this test binary on this test with the child's variable set: that process is the
/// child (it writes until killed), this one the parent.
#[test]
fn a_killed_writer_leaves_every_committed_batch_readable() {
    if let Ok(path) = std::env::var(CHILD_ENV) {
        return kill_child_writer(&path);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_killed_writer_leaves_every_committed_batch_readable",
            "--nocapture",
        ])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut committed = 0;
    while committed < 30 && Instant::now() < deadline {
        let line = lines.next().expect("child ended early").unwrap();
        if let Some(n) = line.strip_prefix("committed ") {
            committed = n.parse().unwrap();
        }
    }
    child.kill().unwrap(); // SIGKILL on Unix: no destructor, no checkpoint.
    child.wait().unwrap();
    assert!(committed >= 30, "the child never got going");
    let store = Store::open(&path).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        run.status,
        RunStatus::Interrupted,
        "a run whose process is gone is interrupted"
    );
    let (at, done) = (run.interrupted_at.unwrap(), run.done_s.unwrap());
    assert!(done >= committed as f64, "{done} < {committed}");
    assert_eq!(at, 2000.0 + done - 1.0, "at the last heartbeat");
    assert_eq!(run.ended_at, Some(at));
    let samples = run.samples as usize;
    assert!(
        samples >= committed * PER_BATCH,
        "{samples} < {committed} batches"
    );
    assert_eq!(samples % PER_BATCH, 0, "a batch is all there or not at all");
    assert_eq!(run.series, PER_BATCH as u64);
}

const OPEN_CHILD_ENV: &str = "LLMSCOPE_STORE_OPEN_CHILD";

/// The child half of the concurrent-open test: waits for the parent's "go" file (so every child
/// opens at the same moment), opens the store and reports the outcome on stdout.
fn open_child(path: &str) {
    let go = std::path::PathBuf::from(format!("{path}.go"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !go.exists() && Instant::now() < deadline {
        std::thread::yield_now();
    }
    match Store::open(path) {
        Ok(store) => println!("opened v{}", store.schema_version().unwrap()),
        Err(e) => println!("failed {e}"),
    }
}

/// Issue 17: two processes opening one new store at once used to race (`table runs already
/// exists`, `database is locked`) because the schema version was read outside the migration's
/// transaction. Several processes open each of several fresh stores at the same moment.
#[test]
fn processes_opening_one_fresh_store_at_once_all_succeed() {
    if let Ok(path) = std::env::var(OPEN_CHILD_ENV) {
        return open_child(&path);
    }
    let dir = tempfile::tempdir().unwrap();
    for round in 0..5 {
        let path = dir.path().join(format!("fresh-{round}.db"));
        let children: Vec<_> = (0..6)
            .map(|_| {
                Command::new(std::env::current_exe().unwrap())
                    .args([
                        "--exact",
                        "processes_opening_one_fresh_store_at_once_all_succeed",
                        "--nocapture",
                        "--quiet",
                    ])
                    .env(OPEN_CHILD_ENV, &path)
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::fs::write(format!("{}.go", path.display()), b"").unwrap();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let want = format!("opened v{}", llmscope_store::schema::CURRENT_VERSION);
            assert!(text.contains(&want), "round {round}: {text}");
        }
    }
}

/// Issue 17: an upstream body that echoes the bearer token (registered where the client got it)
/// or carries a token in a URL query is stored redacted — in findings, evidence, scrape messages
/// and source URLs.
#[test]
fn secrets_in_outside_text_are_redacted_before_they_are_stored() {
    llmscope_core::safe::register_secret("SECRET-store-test-42");
    let mut store = Store::open_in_memory().unwrap();
    let run = store.create_run(&new_run()).unwrap();
    let mut src = source("prometheus");
    src.url = "http://127.0.0.1:9090/?access_token=tok-in-url-1".into();
    store.add_source(run, &src).unwrap();
    let body = "401: bad token Bearer SECRET-store-test-42 for org";
    let mut finding = Finding::new("source_failed".to_owned(), Severity::Error, body);
    finding.source = Some("prometheus".into());
    finding.detail = Some(serde_json::json!({"body": body}));
    store.add_findings(run, &[finding]).unwrap();
    let mut b = Batch::new("prometheus");
    let mut h = health(1.0, false);
    h.message = Some(body.into());
    b.health.push(h);
    store.write(run, &[b]).unwrap();
    let stored = &store.findings(run).unwrap()[0];
    assert_eq!(stored.message, "401: bad token Bearer *** for org");
    let detail = stored.detail.as_ref().unwrap();
    assert_eq!(detail["body"], "401: bad token Bearer *** for org");
    let dump: Vec<String> = store
        .health(run, "prometheus")
        .unwrap()
        .into_iter()
        .filter_map(|h| h.message)
        .collect();
    assert_eq!(dump, ["401: bad token Bearer *** for org"]);
    let url = &store.sources(run).unwrap()[0].url;
    assert_eq!(url, "http://127.0.0.1:9090/?access_token=***");
}

/// A store that cannot be written is read as it stands: its runs, series and points come back
/// through a read-only connection (and through `immutable=1` where SQLite could not even make
/// its WAL index), and a write is refused instead of touching the file. Root ignores file modes,
/// so the read-only connection is opened directly; `open_for_reading` falls back to it.
#[test]
fn a_store_that_cannot_be_written_is_read_as_it_stands() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.db");
    let run = {
        let mut store = Store::open(&path).unwrap();
        let run = store.create_run(&new_run()).unwrap();
        store.add_source(run, &source("vllm")).unwrap();
        for b in scrape_batches() {
            store.write(run, &[b]).unwrap();
        }
        run
    };
    let before = std::fs::read(&path).unwrap();
    let mut ro = Store::open_read_only(&path).unwrap();
    assert_eq!(ro.runs().unwrap().len(), 1);
    let series = ro.series(run, Some("vllm")).unwrap();
    assert_eq!(series.len(), 2);
    assert_eq!(series[1].1.points.len(), 3);
    let err = ro.create_run(&new_run()).unwrap_err().to_string();
    assert!(
        err.contains("readonly") || err.contains("read-only"),
        "{err}"
    );
    drop(ro);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file was written"
    );
    assert_eq!(
        Store::open_for_reading(&path)
            .unwrap()
            .runs()
            .unwrap()
            .len(),
        1
    );
    // Where SQLite cannot make the WAL index (here a folder stands in its place, as a read-only
    // folder would refuse it), writing and plain read-only opening both fail: the file is read
    // as it stands.
    let shm = dir.path().join("ro.db-shm");
    let _ = std::fs::remove_file(&shm);
    std::fs::create_dir(&shm).unwrap();
    assert!(Store::open(&path).is_err());
    let ro = Store::open_for_reading(&path).unwrap();
    assert_eq!(ro.series(run, Some("vllm")).unwrap().len(), 2);
}
