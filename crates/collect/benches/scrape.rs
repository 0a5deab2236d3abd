//! Bench: direct scrape of many dcgm-size targets into the SQLite store, and the CPU it costs.
//!
//! `cargo bench -p llmscope-collect --bench scrape -- [TARGETS] [SECONDS] [INTERVAL_MS] [discard]`
//! (defaults 1000, 20, 1000; `discard` drops batches instead of storing them, to split the CPU
//! between scraping and the store). The bench re-runs itself as a child process that serves the
//! pages (one axum server, one path per target, each page a copy of the simulator's dcgm page
//! with its own GPU UUID), so the parent's CPU time (from /proc/self/stat) is the scraper's
//! alone: HTTP, parsing, series keys, the channel and SQLite. Loopback only.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use llmscope_collect::scrape::{ScrapeConfig, ScrapeSource};
use llmscope_collect::{HttpClient, Source, Stop, Window};
use llmscope_core::series::Batch;
use llmscope_store::{NewRun, SourceSpec, Store, writer};
use std::io::{BufRead, BufReader};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SERVE_FLAG: &str = "--serve-pages";

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some(SERVE_FLAG) {
        let n = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
        return serve_pages(n);
    }
    let arg = |i: usize, d: u64| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (targets, secs, interval_ms) = (arg(0, 1000) as usize, arg(1, 20), arg(2, 1000));
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([SERVE_FLAG, &targets.to_string()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let (addr, page_bytes) = line.trim().split_once(' ').unwrap();
    println!("serving {targets} pages of {page_bytes} bytes at {addr} (child process)");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let discard = args.get(3).is_some_and(|a| a == "discard");
    let interval = Duration::from_millis(interval_ms);
    rt.block_on(scrape(addr, targets, secs, interval, discard));
    let _ = child.kill();
    let _ = child.wait();
}

async fn scrape(addr: &str, targets: usize, secs: u64, interval: Duration, discard: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("bench.db")).unwrap();
    let run = store.create_run(&new_run()).unwrap();
    let http = HttpClient::new(None).unwrap();
    let cfg = ScrapeConfig::new(interval);
    let mut sources: Vec<Arc<dyn Source>> = Vec::new();
    for i in 0..targets {
        let target = format!("t{i}=http://{addr}/t/{i}").parse().unwrap();
        let src = ScrapeSource::new(target, cfg.clone(), http.clone());
        let spec = SourceSpec {
            name: src.name().to_owned(),
            kind: "scrape".into(),
            url: src.url(),
        };
        store.add_source(run, &spec).unwrap();
        sources.push(Arc::new(src));
    }
    let w = writer::spawn(store, run).unwrap();
    let tx = w.sender();
    let sink: Arc<dyn llmscope_collect::Sink> = if discard {
        drop(tx); // else the writer waits for this sender forever
        Arc::new(|_: Batch| true)
    } else {
        Arc::new(move |b: Batch| tx.send(b))
    };
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    // Steady state: from the end of the third interval, when every target's series are
    // registered in the store, to the end; the first scrapes also insert 24 new series each.
    let warm = interval * 3;
    let steady = tokio::spawn(async move {
        tokio::time::sleep(warm).await;
        (cpu_seconds(), Instant::now())
    });
    let mut tasks = tokio::task::JoinSet::new();
    for s in sources {
        let sink = Arc::clone(&sink);
        let window = Window::Live {
            duration: Duration::from_secs(secs),
        };
        tasks.spawn(async move { s.collect(window, &*sink, Stop::never()).await.unwrap() });
    }
    drop(sink);
    let (mut scrapes, mut failures) = (0, 0);
    while let Some(r) = tasks.join_next().await {
        let r = r.unwrap();
        scrapes += r.attempts;
        failures += r.failures;
    }
    let (_, totals) = w.finish().unwrap();
    let (cpu1, t1) = (cpu_seconds(), Instant::now());
    let (cpu, wall) = (cpu1 - cpu0, (t1 - t0).as_secs_f64());
    let (cpu_warm, t_warm) = steady.await.unwrap();
    let steady_pct = 100.0 * (cpu1 - cpu_warm) / (t1 - t_warm).as_secs_f64();
    println!(
        "{targets} targets{}, interval {interval:?}, {wall:.1}s: {scrapes} scrapes ({:.0}/s), {failures} failed, \
         {} samples stored ({:.0}/s), {} commits; scraper CPU {cpu:.2}s = {:.1}% of one core \
         (steady state after {warm:?}: {steady_pct:.1}%)",
        if discard {
            " (batches discarded, not stored)"
        } else {
            ""
        },
        scrapes as f64 / wall,
        totals.samples,
        totals.samples as f64 / wall,
        totals.commits,
        100.0 * cpu / wall
    );
}

fn new_run() -> NewRun {
    NewRun {
        kind: "bench".into(),
        started_at: 0.0,
        window: None,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        config: serde_json::json!({}),
        planned_s: None,
    }
}

/// utime + stime of this process, from /proc/self/stat (clock ticks of 1/100 s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields after the command: state is 0, utime is 11, stime is 12.
    (ticks(11) + ticks(12)) / 100.0
}

/// The child: one dcgm page per target, each with its own UUID, on /t/{i}.
fn serve_pages(n: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let page = dcgm_page().await;
        let uuid = page
            .split("UUID=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap()
            .to_owned();
        let pages: Arc<Vec<bytes::Bytes>> = Arc::new(
            (0..n)
                .map(|i| bytes::Bytes::from(page.replace(&uuid, &format!("GPU-bench-{i:06}"))))
                .collect(),
        );
        let app = axum::Router::new().route(
            "/t/{i}",
            axum::routing::get(move |axum::extract::Path(i): axum::extract::Path<usize>| {
                let pages = Arc::clone(&pages);
                async move {
                    let body = pages.get(i).cloned().unwrap_or_default();
                    (
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "text/plain; version=0.0.4",
                        )],
                        body,
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{} {}", listener.local_addr().unwrap(), page.len());
        axum::serve(listener, app).await.unwrap();
    });
}

/// The simulator's dcgm page, taken once from an in-process simulator.
async fn dcgm_page() -> String {
    let mut cfg =
        llmscope_sim::serve::SimConfig::new(llmscope_sim::preset::preset("l4-qwen2.5-3b").unwrap());
    cfg.dcgm_interval = Duration::from_millis(50);
    let sim = llmscope_sim::serve::start(cfg).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let http = HttpClient::new(None).unwrap();
    let headers = Default::default();
    let get = llmscope_collect::http::Get {
        uri: sim.dcgm_url().parse().unwrap(),
        headers: &headers,
        timeout: Duration::from_secs(5),
        body_limit: 1 << 20,
    };
    let page = String::from_utf8(http.get(get).await.unwrap().body.to_vec()).unwrap();
    sim.shutdown().await;
    page
}
