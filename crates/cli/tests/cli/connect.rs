//! Every command that reads Prometheus connects the same way: a real Prometheus served under a
//! path prefix (`--web.route-prefix`, as behind Mimir or an ingress) and reachable only through
//! a gate that refuses any request without the tenant header (as Mimir refuses one without
//! `X-Scope-OrgID`). With `--header` each command gets its answer; without it each fails and
//! says the server's 401 — so the test shows every command really went through the gate.

use crate::common::*;
use llmscope_collect::testing::job;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

const TENANT: &str = "X-Scope-OrgID: team-a";

/// A loopback gate in front of `upstream`: one request per connection; a request whose head
/// lacks `header` gets a 401, any other is forwarded with `Connection: close` and its answer
/// copied back.
fn header_gate(upstream: SocketAddr, header: &'static str) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || gate_one(conn, upstream, header));
        }
    });
    addr
}

fn gate_one(mut client: TcpStream, upstream: SocketAddr, header: &str) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match client.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > 1 << 16 {
            return;
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let squash = |l: &str| l.to_ascii_lowercase().replace(' ', "");
    if !text.split("\r\n").any(|l| squash(l) == squash(header)) {
        let body = "no tenant: send X-Scope-OrgID\n";
        let _ = write!(
            client,
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    let mut lines: Vec<&str> = text
        .split("\r\n")
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .collect();
    lines.insert(1, "Connection: close");
    let Ok(mut up) = TcpStream::connect(upstream) else {
        return;
    };
    if up.write_all(lines.join("\r\n").as_bytes()).is_ok() {
        let _ = std::io::copy(&mut up, &mut client);
    }
}

#[test]
fn every_prometheus_command_connects_through_a_prefix_and_a_required_header() {
    let (_sim, vllm, dcgm, cluster) = sim_with_cluster("1s", &["--teams", "example"]);
    let jobs = [
        job(
            "vllm",
            &vllm,
            "/metrics",
            ", labels: {namespace: llm-search}",
        ),
        job("dcgm", &dcgm, "/metrics", ""),
        job("kueue", &cluster, "/kueue/metrics", ""),
        job("ksm", &cluster, "/ksm/metrics", ""),
    ];
    let prefix = "/tenant/prometheus";
    let Some(prometheus) = prometheus_at("connect", &jobs, prefix) else {
        return;
    };
    put_load(&vllm, "8", "6s");
    let gate = header_gate(prometheus.addr, TENANT);
    let url = format!("http://{gate}{prefix}");
    let dir = temp_dir("connect");
    let db = dir.join("c.db");
    let db = db.to_str().unwrap();
    let commands: [(&str, Vec<&str>); 6] = [
        (
            "check",
            vec![
                "check",
                "--prometheus",
                &url,
                "--expr",
                "sum(vllm:num_requests_running)",
            ],
        ),
        (
            "targets",
            vec!["targets", "--prometheus", &url, "--format", "json"],
        ),
        ("dashboard", vec!["dashboard", "--prometheus", &url]),
        ("rules", vec!["rules", "--prometheus", &url]),
        (
            "cost",
            vec![
                "cost",
                "--prometheus",
                &url,
                "--from",
                "-10s",
                "--step",
                "1s",
                "--price",
                "nvidia-l4=0.80/h",
                "--format",
                "json",
            ],
        ),
        (
            "diagnose",
            vec![
                "diagnose",
                "--prometheus",
                &url,
                "--from",
                "-10s",
                "--step",
                "1s",
                "--db",
                db,
                "--format",
                "json",
            ],
        ),
    ];
    let mut diagnosed = None;
    for (name, args) in &commands {
        let mut with = args.clone();
        with.extend(["--header", TENANT]);
        let out = llmscope(&with);
        assert!(
            out.status.success(),
            "{name} through the prefix with the header: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(!out.stdout.is_empty(), "{name} printed nothing");
        let without = llmscope(args);
        let why = String::from_utf8_lossy(&without.stderr);
        assert!(
            !without.status.success() && why.contains("401"),
            "{name} without the header must fail with the server's 401 (it did not go through the gate otherwise): {why}"
        );
        if *name == "diagnose" {
            diagnosed = Some(json(&out));
        }
    }
    // What came through is the real data: the diagnosis read the engine's series.
    let v = diagnosed.expect("diagnose is one of the commands");
    assert!(
        v["window_stats"]["running"]["max"]
            .as_f64()
            .is_some_and(|r| r > 0.0),
        "{v:#}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
