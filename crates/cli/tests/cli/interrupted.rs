//! Issue 12, points 4–6, through the binary: a `run` killed with SIGKILL or stopped with Ctrl-C
//! reads back as interrupted with what it completed; a dead or refusing Prometheus is an error,
//! never a number; inputs the CLI must refuse.

use crate::common::{llmscope, temp_dir};
use llmscope_store::{RunStatus, RunSummary, Store};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A generous deadline: the machine may be a loaded 2-core one.
const DEADLINE: Duration = Duration::from_secs(180);

/// `llmscope run` on the simulated stack for 30 s of load, output into files in `dir`.
fn spawn_run(dir: &Path) -> (Child, PathBuf) {
    let db = dir.join("runs.db");
    let child = Command::new(env!("CARGO_BIN_EXE_llmscope"))
        .args(["run", "--duration", "30s", "--baseline", "1s", "--format"])
        .args(["json", "--db", db.to_str().unwrap()])
        .env_remove("OPENAI_API_KEY")
        .stdout(File::create(dir.join("stdout")).unwrap())
        .stderr(File::create(dir.join("stderr")).unwrap())
        .spawn()
        .expect("start llmscope run");
    (child, db)
}

fn stderr_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("stderr")).unwrap_or_default()
}

/// Waits until the run has stored completed requests (the load is under way); the store is only
/// opened once the child said it loads, so both never create its tables at once.
fn wait_for_stored_requests(child: &mut Child, dir: &Path, db: &Path) -> RunSummary {
    let t = Instant::now();
    loop {
        assert!(
            t.elapsed() < DEADLINE,
            "no requests stored: {}",
            stderr_of(dir)
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended early: {}",
            stderr_of(dir)
        );
        if stderr_of(dir).contains("llmscope run: load:") {
            let runs = Store::open(db).and_then(|s| s.runs()).unwrap();
            if let Some(run) = runs.into_iter().next().filter(|r| r.requests > 0) {
                return run;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_exit(child: &mut Child, dir: &Path) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if t.elapsed() > DEADLINE {
            child.kill().ok();
            panic!("llmscope run did not exit: {}", stderr_of(dir));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn report_text(db: &Path, run: i64) -> String {
    let out = llmscope(&["report", &run.to_string(), "--db", db.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Before: the run stayed `running` for ever, and none of the requests it completed survived.
#[test]
fn a_run_killed_with_sigkill_reads_back_as_interrupted_with_its_requests() {
    let dir = temp_dir("run-sigkill");
    let (mut child, db) = spawn_run(&dir);
    let seen = wait_for_stored_requests(&mut child, &dir, &db);
    child.kill().unwrap(); // SIGKILL: no handler, no destructor
    child.wait().unwrap();
    let run = Store::open(&db).unwrap().run(seen.id).unwrap();
    assert_eq!(run.status, RunStatus::Interrupted, "{run:?}");
    assert!(run.requests >= seen.requests && run.requests > 0, "{run:?}");
    assert!(run.interrupted_at.is_some() && run.planned_s == Some(30.0));
    let text = report_text(&db, run.id);
    assert!(
        text.contains("interrupted at") && text.contains("of 30 s"),
        "{text}"
    );
    let out = llmscope(&["runs", "--db", db.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("interrupted at"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Before: a Ctrl-C'd run was stored `completed`, and its report showed a verdict with no notice.
#[test]
fn a_run_stopped_with_ctrl_c_is_stored_interrupted_and_says_so() {
    let dir = temp_dir("run-sigint");
    let (mut child, db) = spawn_run(&dir);
    let seen = wait_for_stored_requests(&mut child, &dir, &db);
    let pid = child.id().to_string();
    let kill = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(kill.success());
    let status = wait_exit(&mut child, &dir);
    assert!(status.success(), "{status}: {}", stderr_of(&dir));
    let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON report");
    let notice = v["interrupted"]["notice"].as_str().unwrap_or_default();
    assert!(
        notice.starts_with("interrupted at") && notice.ends_with("of 30 s"),
        "{v:#}"
    );
    let run = Store::open(&db).unwrap().run(seen.id).unwrap();
    assert_eq!(run.status, RunStatus::Interrupted, "{run:?}");
    let done = run.done_s.unwrap();
    assert!(done > 0.0 && done < 30.0, "{run:?}");
    assert!(run.requests >= seen.requests);
    let text = report_text(&db, run.id);
    assert!(text.contains("interrupted at"), "{text}");
    assert!(text.find("interrupted at").unwrap() < text.find("Verdict:").unwrap());
    std::fs::remove_dir_all(&dir).ok();
}
