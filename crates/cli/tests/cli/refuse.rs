//! Issue 12, points 5–6, through the binary: a dead or refusing Prometheus is an error (exit 2,
//! naming it), never a number; inputs the CLI must refuse before doing anything.

use crate::common::{closed_port, llmscope, temp_dir};
use std::io::{Read, Write};
use std::net::TcpListener;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Before: `total -0.00 …` on stdout and exit 0.
#[test]
fn cost_against_a_dead_prometheus_is_an_error_naming_it() {
    let url = format!("http://127.0.0.1:{}", closed_port()); // bound, then closed: refuses
    let out = llmscope(&["cost", "--prometheus", &url, "--from", "-1h"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&url) && err.contains("cannot connect"),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("-0.00") && !stdout.contains("total"),
        "{stdout}"
    );
}

/// A server on a port of its own answering each request with `answer(request line)`:
/// a status line's tail and a body.
fn fake_server(answer: fn(&str) -> (&'static str, &'static str)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { continue };
            let mut buf = vec![0u8; 65536];
            let n = c.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let (status, body) = answer(head.lines().next().unwrap_or(""));
            let _ = write!(
                c,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}")
}

/// A server answering every request with 401.
fn refusing_server() -> String {
    fake_server(|_| ("401 Unauthorized", "unauthorized"))
}

#[test]
fn cost_refused_with_401_is_an_error_saying_how_to_authenticate() {
    let url = refusing_server();
    let out = llmscope(&[
        "cost",
        "--prometheus",
        &url,
        "--from",
        "-1h",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&url) && err.contains("401"), "{err}");
    assert!(err.contains("--bearer-token"), "{err}");
    assert!(out.stdout.is_empty(), "no report from missing data");
}

/// Before: exit 0, nothing on stderr, and an empty `failed` run in the store.
#[test]
fn observe_for_0_s_is_refused_before_any_run_is_stored() {
    let dir = temp_dir("observe-0");
    let db = dir.join("runs.db");
    let out = llmscope(&[
        "observe",
        "--scrape",
        &format!("http://127.0.0.1:{}/metrics", closed_port()),
        "--duration",
        "0",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--duration must be above 0"),
        "{}",
        stderr(&out)
    );
    let runs = if db.exists() {
        llmscope_store::Store::open(&db)
            .unwrap()
            .runs()
            .unwrap()
            .len()
    } else {
        0
    };
    assert_eq!(runs, 0, "no run is stored");
    std::fs::remove_dir_all(&dir).ok();
}

/// Before: the client hit its descriptor limit and counted that as the server's `connect`
/// errors. Under `ulimit -n 256` (soft and hard), 1,000,000 connections are refused up front.
#[test]
fn load_beyond_the_descriptor_limit_is_refused_with_the_numbers() {
    let bin = env!("CARGO_BIN_EXE_llmscope");
    let url = format!("http://127.0.0.1:{}", closed_port());
    let out = std::process::Command::new("bash")
        .args(["-c", r#"ulimit -n 256 && exec "$0" "$@""#, bin])
        .args([
            "load",
            "--target",
            &url,
            "--concurrency",
            "1000000",
            "--duration",
            "1s",
        ])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("1000000 concurrent connections")
            && err.contains("may open 256")
            && err.contains("at most 192"),
        "{err}"
    );
    // Within the limit it gets as far as the (absent) server: a different error.
    let out = std::process::Command::new("bash")
        .args(["-c", r#"ulimit -n 256 && exec "$0" "$@""#, bin])
        .args([
            "load",
            "--target",
            &url,
            "--concurrency",
            "100",
            "--duration",
            "1s",
        ])
        .output()
        .unwrap();
    assert!(
        !stderr(&out).contains("file descriptors"),
        "{}",
        stderr(&out)
    );
}

/// A Prometheus that rejects every query naming Kueue (422, `bad_data`, as a PromQL error
/// answers) and answers the others with no series.
fn kueue_rejecting_server() -> String {
    fake_server(|request| {
        if request.contains("kueue") {
            (
                "422 Unprocessable Entity",
                r#"{"status":"error","errorType":"bad_data","error":"1:1: parse error: unknown function"}"#,
            )
        } else {
            (
                "200 OK",
                r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#,
            )
        }
    })
}

/// Issue 31: the reservation queries failed, and `cost` printed `gpu_hours: 0.0`, "no team held
/// GPUs" and exited 0. Now the report is written with the failure named and the GPU-hours
/// unknown, and the exit status says the answer is partial.
#[test]
fn cost_whose_reservation_queries_failed_is_partial_never_zero() {
    let url = kueue_rejecting_server();
    let args = ["cost", "--prometheus", &url, "--from", "-1h"];
    let out = llmscope(&[&args[..], &["--format", "json"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("partial answer"), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the report, in full");
    assert!(v["totals"]["gpu_hours"].is_null(), "{v}");
    let missing = v["missing"].to_string();
    assert!(
        missing.contains("Kueue LocalQueue GPU reservations") && missing.contains("bad_data"),
        "{missing}"
    );
    let out = llmscope(&args);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("GPU-hours unknown") && !text.contains("no team held GPUs"),
        "{text}"
    );
}
