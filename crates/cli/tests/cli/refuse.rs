//! Issue 12, points 5–6, through the binary: a dead or refusing Prometheus is an error (exit 2,
//! naming it), never a number; inputs the CLI must refuse before doing anything.

use crate::common::{free_port, llmscope};
use std::io::{Read, Write};
use std::net::TcpListener;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Before: `total -0.00 …` on stdout and exit 0.
#[test]
fn cost_against_a_dead_prometheus_is_an_error_naming_it() {
    let url = format!("http://127.0.0.1:{}", free_port()); // bound, then closed: refuses
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

/// A server answering every request with 401, on a port of its own.
fn refusing_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { continue };
            let mut buf = [0u8; 8192];
            let _ = c.read(&mut buf);
            let _ = c.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 12\r\nConnection: close\r\n\r\nunauthorized",
            );
        }
    });
    format!("http://{addr}")
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
