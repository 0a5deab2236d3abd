//! Integration tests of collection: direct scrape of the simulator and of fakes (every fault
//! kind), the Prometheus client against a fake API, and a real Prometheus (Debian package)
//! scraping the simulator compared with direct scraping over the same window.
#![allow(clippy::print_stderr)]

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use llmscope_collect::prom::{
    Auth, ErrorType, PromClient, PromConfig, PromError, PromSource, Secret,
};
use llmscope_collect::scrape::{ScrapeConfig, ScrapeSource, ScrapeTarget};
use llmscope_collect::testing::{RealPrometheus, job, put_chat_load};
use llmscope_collect::{HttpClient, Source, SourceReport, Stop, Window};
use llmscope_core::series::{Batch, FailureKind, Series, group};
use llmscope_sim::faults::Faults;
use llmscope_sim::preset::preset;
use llmscope_sim::serve::{self, SimConfig, SimHandle};
use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// ------------------------------------------------------------------ helpers

fn http() -> HttpClient {
    HttpClient::new(None).unwrap()
}

async fn sim(faults: Faults) -> SimHandle {
    let mut cfg = SimConfig::new(preset("l4-qwen2.5-3b").unwrap());
    cfg.dcgm_interval = Duration::from_millis(200);
    cfg.faults = faults;
    serve::start(cfg).await.unwrap()
}

fn scrape_source(spec: &str, interval_ms: u64) -> ScrapeSource {
    let target: ScrapeTarget = spec.parse().unwrap();
    ScrapeSource::new(
        target,
        ScrapeConfig::new(Duration::from_millis(interval_ms)),
        http(),
    )
}

/// Runs a source over a window, keeping every batch it sends.
async fn collect(source: &dyn Source, window: Window) -> (Vec<Batch>, SourceReport) {
    let batches = Mutex::new(Vec::new());
    let sink = |b: Batch| {
        batches.lock().unwrap().push(b);
        true
    };
    let report = source.collect(window, &sink, Stop::never()).await.unwrap();
    (batches.into_inner().unwrap(), report)
}

fn live(ms: u64) -> Window {
    Window::Live {
        duration: Duration::from_millis(ms),
    }
}

fn series_of(batches: &[Batch]) -> Vec<Series> {
    group(batches.iter().flat_map(|b| &b.samples))
}

async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

fn text(body: impl Into<String>) -> Response {
    let ct = [(header::CONTENT_TYPE, "text/plain; version=0.0.4")];
    (ct, body.into()).into_response()
}

/// Exposition fakes: one route per behaviour.
async fn exposition_fake() -> SocketAddr {
    let hits = Arc::new(AtomicU64::new(0));
    let router = Router::new()
        .route("/big", get(|| async { text("x 1\n".repeat(600_000)) }))
        .route(
            "/gzip",
            get(|| async {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(b"# TYPE g gauge\ng{a=\"1\"} 7\n").unwrap();
                let hdrs = [
                    (header::CONTENT_TYPE, "text/plain"),
                    (header::CONTENT_ENCODING, "gzip"),
                ];
                (hdrs, e.finish().unwrap()).into_response()
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(3)).await;
                text("late 1\n")
            }),
        )
        .route(
            "/vanish",
            get(|hits: State<Arc<AtomicU64>>| async move {
                let n = hits.fetch_add(1, Ordering::SeqCst);
                let mut page = String::from("stays 1\n");
                if n < 3 {
                    page.push_str("gone{pod=\"a\"} 5\n");
                }
                text(page)
            }),
        )
        .route(
            "/dcgm",
            get(|| async {
                text(
                    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 31\n\
                     DCGM_FI_DEV_MEMORY_TEMP{gpu=\"0\"} 9223372036854775794\n\
                     DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\"} 140737488355328.000000\n",
                )
            }),
        )
        .route(
            "/openmetrics",
            get(|| async {
                let ct = [(
                    header::CONTENT_TYPE,
                    "application/openmetrics-text; version=1.0.0",
                )];
                (ct, "# TYPE c counter\nc_total 3\n# EOF\n").into_response()
            }),
        )
        .with_state(hits);
    serve(router).await
}

// ------------------------------------------------------------------ direct scrape

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrapes_the_simulated_vllm_and_dcgm() {
    let sim = sim(Faults::default()).await;
    let vllm = scrape_source(&format!("vllm={}/metrics", sim.vllm_url()), 100);
    let dcgm = scrape_source(&format!("dcgm={}", sim.dcgm_url()), 100);
    let ((vb, vr), (db, dr)) = tokio::join!(collect(&vllm, live(1000)), collect(&dcgm, live(1000)));
    for (batches, report) in [(&vb, &vr), (&db, &dr)] {
        assert!((4..=11).contains(&report.attempts), "{report:?}");
        assert_eq!(report.failures, 0, "{report:?}");
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert!(
            batches
                .iter()
                .all(|b| b.health.len() == 1 && b.health[0].up)
        );
        assert!(batches.iter().all(|b| b.health[0].bytes > 0));
    }
    let vs = series_of(&vb);
    assert!(vs.iter().any(|s| s.key.name == "vllm:num_requests_running"));
    assert!(
        vs.iter().all(|s| s.points.len() == vb.len()),
        "every scrape has every series"
    );
    let ds = series_of(&db);
    let util = ds
        .iter()
        .find(|s| s.key.name == "DCGM_FI_DEV_GPU_UTIL")
        .unwrap();
    assert!(
        util.key
            .labels
            .get("UUID")
            .is_some_and(|u| u.starts_with("GPU-"))
    );
    assert!(
        dr.version
            .as_deref()
            .is_some_and(|v| v.starts_with("dcgm driver"))
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_target_records_http_failures_and_no_samples() {
    let sim = sim(Faults {
        metrics_down: 1.0,
        ..Faults::default()
    })
    .await;
    let src = scrape_source(&format!("vllm={}/metrics", sim.vllm_url()), 100);
    let (batches, report) = collect(&src, live(500)).await;
    assert!(
        batches.iter().all(|b| b.samples.is_empty()),
        "no zeros for a down target"
    );
    assert_eq!(report.failures, report.attempts);
    let p = &report.problems[0];
    assert_eq!((p.kind, p.count), (FailureKind::Http, report.attempts));
    assert!(
        p.message.starts_with("vllm (http://127.0.0.1:") && p.message.contains("HTTP 503"),
        "{}",
        p.message
    );
    assert_eq!(batches[0].health[0].status, Some(503));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_page_is_a_parse_failure_naming_the_line() {
    let sim = sim(Faults {
        metrics_garbage: 1.0,
        ..Faults::default()
    })
    .await;
    let src = scrape_source(&format!("dcgm={}", sim.dcgm_url()), 100);
    let (batches, report) = collect(&src, live(400)).await;
    let p = &report.problems[0];
    assert_eq!(p.kind, FailureKind::Parse);
    assert!(
        p.message.contains("malformed line") && p.message.contains("line 1"),
        "{}",
        p.message
    );
    // The garbage page has no valid sample: nothing is kept, and the scrape is down.
    assert!(
        batches
            .iter()
            .all(|b| b.samples.is_empty() && !b.health[0].up)
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn an_unreachable_target_is_a_connect_failure() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let src = scrape_source(&format!("vllm=http://127.0.0.1:{port}/metrics"), 100);
    let (batches, report) = collect(&src, live(350)).await;
    assert!(report.attempts >= 2);
    assert_eq!(report.problems[0].kind, FailureKind::Connect);
    assert!(report.problems[0].message.contains(&port.to_string()));
    assert!(batches.iter().all(|b| b.samples.is_empty()));
}

#[tokio::test]
async fn oversized_slow_gzip_openmetrics_and_sentinel_pages() {
    let addr = exposition_fake().await;
    let big_cfg = ScrapeConfig {
        body_limit: 1 << 20,
        ..ScrapeConfig::new(Duration::from_millis(200))
    };
    let big = ScrapeSource::new(
        format!("big=http://{addr}/big").parse().unwrap(),
        big_cfg,
        http(),
    );
    let slow = scrape_source(&format!("slow=http://{addr}/slow"), 200);
    let gz = scrape_source(&format!("gz=http://{addr}/gzip"), 100);
    let om = scrape_source(&format!("om=http://{addr}/openmetrics"), 100);
    let dcgm = scrape_source(&format!("dcgm=http://{addr}/dcgm"), 100);
    let ((_, br), (_, sr), (gb, gr), (ob, _), (db, _)) = tokio::join!(
        collect(&big, live(300)),
        collect(&slow, live(300)),
        collect(&gz, live(250)),
        collect(&om, live(250)),
        collect(&dcgm, live(250)),
    );
    assert_eq!(br.problems[0].kind, FailureKind::TooLarge);
    assert!(
        br.problems[0].message.contains("1048576-byte limit"),
        "{}",
        br.problems[0].message
    );
    assert_eq!(sr.problems[0].kind, FailureKind::Timeout);
    assert!(
        sr.problems[0].message.contains("160ms"),
        "{}",
        sr.problems[0].message
    );
    assert!(gr.problems.is_empty(), "{:?}", gr.problems);
    let g = &series_of(&gb)[0];
    assert_eq!(
        (g.key.to_string().as_str(), g.points[0].v),
        ("g{a=\"1\"}", 7.0)
    );
    assert!(
        gb[0].health[0].bytes < 60,
        "wire bytes are the compressed size"
    );
    assert_eq!(series_of(&ob)[0].key.name, "c_total");
    let names: Vec<String> = series_of(&db).into_iter().map(|s| s.key.name).collect();
    assert_eq!(
        names,
        ["DCGM_FI_DEV_GPU_UTIL"],
        "sentinels are missing, not values"
    );
}

#[tokio::test]
async fn a_vanished_series_stays_absent() {
    let addr = exposition_fake().await;
    let src = scrape_source(&format!("v=http://{addr}/vanish"), 50);
    let (batches, report) = collect(&src, live(500)).await;
    assert!(report.attempts >= 4, "{report:?}");
    let series = series_of(&batches);
    let gone = series.iter().find(|s| s.key.name == "gone").unwrap();
    let stays = series.iter().find(|s| s.key.name == "stays").unwrap();
    assert_eq!(gone.points.len(), 3);
    assert!(gone.points.iter().all(|p| p.v == 5.0), "never a 0");
    assert_eq!(stays.points.len() as u64, report.attempts);
}

#[tokio::test]
async fn a_past_window_cannot_be_scraped() {
    let src = scrape_source("v=http://127.0.0.1:1/metrics", 100);
    let sink = |_: Batch| true;
    let err = src
        .collect(Window::Past { from: 0.0, to: 1.0 }, &sink, Stop::never())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("--prometheus"), "{err}");
}

#[tokio::test]
async fn stop_ends_a_live_scrape_early() {
    let addr = exposition_fake().await;
    let src = scrape_source(&format!("v=http://{addr}/gzip"), 50);
    let (handle, stop) = Stop::new();
    let sink = |_: Batch| true;
    let started = std::time::Instant::now();
    let (report, ()) = tokio::join!(src.collect(live(30_000), &sink, stop), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        handle.stop();
    });
    let report = report.unwrap();
    assert!(report.stopped && started.elapsed() < Duration::from_secs(5));
}

// ------------------------------------------------------------------ fake Prometheus API

#[derive(Default)]
struct FakeProm {
    flaky_calls: AtomicU64,
    max_points_seen: AtomicU64,
    range_calls: AtomicU64,
}

fn api_json(status: StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn api_error(status: StatusCode, kind: &str, msg: &str) -> Response {
    api_json(
        status,
        serde_json::json!({"status": "error", "errorType": kind, "error": msg}),
    )
}

async fn fake_range(
    State(st): State<Arc<FakeProm>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if headers.get("x-scope-orgid").is_none_or(|v| v != "team-a") {
        return (StatusCode::UNAUTHORIZED, "no org id").into_response();
    }
    st.range_calls.fetch_add(1, Ordering::SeqCst);
    let query = &q["query"];
    let (start, end, step): (f64, f64, f64) = (
        q["start"].parse().unwrap(),
        q["end"].parse().unwrap(),
        q["step"].parse().unwrap(),
    );
    let points = ((end - start) / step).floor() as u64 + 1;
    st.max_points_seen.fetch_max(points, Ordering::SeqCst);
    if points > 11_000 {
        let msg = "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)";
        return api_error(StatusCode::BAD_REQUEST, "bad_data", msg);
    }
    if query.contains("bad{") {
        return api_error(
            StatusCode::BAD_REQUEST,
            "bad_data",
            "invalid parameter \"query\": 1:5: parse error: unexpected end of input",
        );
    }
    if query.contains("flaky") && st.flaky_calls.fetch_add(1, Ordering::SeqCst) == 0 {
        return (StatusCode::BAD_GATEWAY, "<html>502 Bad Gateway</html>").into_response();
    }
    if query.contains("proxy") {
        return (StatusCode::FORBIDDEN, "<html>forbidden by proxy</html>").into_response();
    }
    let mut result = Vec::new();
    if !query.contains("nothing") {
        let values: Vec<serde_json::Value> = (0..points)
            .map(|i| {
                let v = if i == 1 {
                    "NaN".to_owned()
                } else {
                    i.to_string()
                };
                serde_json::json!([start + i as f64 * step, v])
            })
            .collect();
        result.push(serde_json::json!({"metric": {"__name__": "vllm:num_requests_waiting", "pod": "p"}, "values": values}));
        let blank = vec![
            serde_json::json!([start, "140737488355328"]),
            serde_json::json!([start + step, "3"]),
        ];
        result.push(serde_json::json!({"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0"}, "values": blank}));
    }
    let mut body = serde_json::json!({"status": "success", "data": {"resultType": "matrix", "result": result}});
    if query.contains("partial") {
        body["warnings"] = serde_json::json!(["partial response: store 10.0.0.1 unavailable"]);
    }
    api_json(StatusCode::OK, body)
}

async fn fake_prom() -> (SocketAddr, Arc<FakeProm>) {
    let st = Arc::new(FakeProm::default());
    let ok = |data: serde_json::Value| {
        api_json(
            StatusCode::OK,
            serde_json::json!({"status": "success", "data": data}),
        )
    };
    let router = Router::new()
        .route("/prometheus/api/v1/query_range", get(fake_range))
        .route(
            "/prometheus/api/v1/status/buildinfo",
            get(move || async move { ok(serde_json::json!({"version": "2.99.0-fake"})) }),
        )
        .route(
            "/prometheus/api/v1/series",
            get(move |Query(q): Query<Vec<(String, String)>>| async move {
                let n = q.iter().filter(|(k, _)| k == "match[]").count();
                ok(serde_json::json!([{"__name__": "up", "job": format!("{n} matchers")}]))
            }),
        )
        .route(
            "/prometheus/api/v1/label/__name__/values",
            get(move || async move { ok(serde_json::json!(["up", "vllm:num_requests_waiting"])) }),
        )
        .route(
            "/prometheus/api/v1/query",
            get(move || async move { ok(serde_json::json!({"resultType": "vector", "result": [{"metric": {"__name__": "up"}, "value": [1, "1"]}]})) }),
        )
        .with_state(Arc::clone(&st));
    (serve(router).await, st)
}

fn prom_client(addr: SocketAddr) -> PromClient {
    let mut cfg = PromConfig::new(format!("http://{addr}/prometheus").parse().unwrap());
    cfg.headers.push((
        header::HeaderName::from_static("x-scope-orgid"),
        header::HeaderValue::from_static("team-a"),
    ));
    cfg.auth = Some(Auth::Bearer(Secret::new("tok")));
    PromClient::new(cfg, http())
}

#[tokio::test]
async fn range_queries_split_under_the_points_limit_and_keep_nan() {
    let (addr, st) = fake_prom().await;
    let c = prom_client(addr);
    let r = c
        .query_range("vllm:num_requests_waiting", 0.0, 25_000.0, 1.0)
        .await
        .unwrap();
    assert!(st.max_points_seen.load(Ordering::SeqCst) <= 11_000);
    assert_eq!(st.range_calls.load(Ordering::SeqCst), 3);
    let s = r
        .data
        .iter()
        .find(|s| s.key.name == "vllm:num_requests_waiting")
        .unwrap();
    assert_eq!(s.points.len(), 25_001, "chunks join without duplicates");
    assert!(s.points.windows(2).all(|w| w[1].t - w[0].t == 1.0));
    assert!(s.points[1].v.is_nan());
}

#[tokio::test]
async fn api_errors_are_typed_and_retries_only_when_safe() {
    let (addr, st) = fake_prom().await;
    let c = prom_client(addr);
    match c.query_range("bad{", 0.0, 10.0, 1.0).await.unwrap_err() {
        PromError::Api {
            error_type,
            message,
        } => {
            assert_eq!(error_type, ErrorType::BadData);
            assert!(message.contains("parse error"));
        }
        other => panic!("{other:?}"),
    }
    // 502 from a proxy, then success: retried.
    assert!(c.query_range("flaky", 0.0, 10.0, 1.0).await.is_ok());
    assert_eq!(st.flaky_calls.load(Ordering::SeqCst), 2);
    // 403 is not retried and keeps the proxy's words.
    let before = st.range_calls.load(Ordering::SeqCst);
    let err = c.query_range("proxy", 0.0, 10.0, 1.0).await.unwrap_err();
    assert_eq!(st.range_calls.load(Ordering::SeqCst), before + 1);
    assert!(
        err.to_string().contains("HTTP 403") && err.to_string().contains("forbidden by proxy"),
        "{err}"
    );
    // Without the tenant header Mimir-like servers refuse.
    let bare = PromClient::new(
        PromConfig::new(format!("http://{addr}/prometheus").parse().unwrap()),
        http(),
    );
    assert!(matches!(
        bare.query_range("x", 0.0, 1.0, 1.0).await,
        Err(PromError::Http { status: 401, .. })
    ));
}

#[tokio::test]
async fn discovery_endpoints_decode() {
    let (addr, _) = fake_prom().await;
    let c = prom_client(addr);
    assert_eq!(c.buildinfo().await.unwrap(), "2.99.0-fake");
    let names = c
        .label_values("__name__", &[], Some((0.0, 1.0)))
        .await
        .unwrap();
    assert_eq!(names.data, ["up", "vllm:num_requests_waiting"]);
    let series = c.series(&["up", "vllm:x"], 0.0, 1.0).await.unwrap();
    assert_eq!(series.data[0].labels.get("job"), Some("2 matchers"));
    let q = c.query("up", None).await.unwrap();
    assert!(matches!(q.data, llmscope_collect::prom::QueryData::Vector(ref v) if v.len() == 1));
}

#[tokio::test]
async fn the_prometheus_source_reports_bad_selectors_empty_ranges_and_warnings() {
    let (addr, _) = fake_prom().await;
    let matchers = ["bad{", "nothing", "partial_ok"].map(String::from).to_vec();
    let src = PromSource::new(
        "prometheus",
        prom_client(addr),
        matchers,
        Duration::from_secs(1),
    );
    let (batches, report) = collect(
        &src,
        Window::Past {
            from: 100.0,
            to: 110.0,
        },
    )
    .await;
    assert_eq!((report.attempts, report.failures), (3, 1));
    assert_eq!(report.version.as_deref(), Some("2.99.0-fake"));
    let kinds: Vec<FailureKind> = report.problems.iter().map(|p| p.kind).collect();
    assert_eq!(kinds, [FailureKind::Api, FailureKind::NoData]);
    assert!(
        report.problems[0].message.contains("`bad{`"),
        "{}",
        report.problems[0].message
    );
    assert!(
        report.problems[1].message.contains("matched no series"),
        "{}",
        report.problems[1].message
    );
    assert!(
        report.warnings[0].contains("partial response"),
        "{:?}",
        report.warnings
    );
    let series = series_of(&batches);
    let dcgm = series
        .iter()
        .find(|s| s.key.name == "DCGM_FI_DEV_GPU_UTIL")
        .unwrap();
    assert_eq!(dcgm.points.len(), 1, "the 2^47 sentinel is missing");
    assert_eq!(batches.iter().map(|b| b.health.len()).sum::<usize>(), 3);
}

#[tokio::test]
async fn an_unreachable_prometheus_is_a_connect_problem() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut cfg = PromConfig::new(format!("http://127.0.0.1:{port}").parse().unwrap());
    cfg.retries = 0;
    let src = PromSource::new(
        "prom",
        PromClient::new(cfg, http()),
        vec!["up".into()],
        Duration::from_secs(1),
    );
    let (_, report) = collect(
        &src,
        Window::Past {
            from: 0.0,
            to: 10.0,
        },
    )
    .await;
    assert_eq!(report.problems[0].kind, FailureKind::Connect);
    assert!(
        report.problems[0]
            .message
            .starts_with(&format!("prom (http://127.0.0.1:{port}/)")),
        "{}",
        report.problems[0].message
    );
}

// ------------------------------------------------------------------ real Prometheus

/// Without job/instance (Prometheus adds them), for matching against direct scrapes.
fn bare(key: &llmscope_core::series::SeriesKey) -> String {
    let labels = key
        .labels
        .iter()
        .filter(|(n, _)| *n != "job" && *n != "instance");
    let l = llmscope_core::series::Labels::new(labels.map(|(n, v)| (n.to_owned(), v.to_owned())));
    llmscope_core::series::SeriesKey::new(key.name.clone(), l).to_string()
}

/// Counter check: a Prometheus value at `t` was scraped in `(t - 1.5 s, t]`, so it lies between
/// the direct value at or before `t - 1.5` and the direct value at or after `t`.
fn counter_points_agree(prom: &Series, direct: &Series) -> usize {
    let mut checked = 0;
    for p in &prom.points {
        let lo = direct.points.iter().rev().find(|d| d.t <= p.t - 1.5);
        let hi = direct.points.iter().find(|d| d.t >= p.t);
        if let (Some(lo), Some(hi)) = (lo, hi) {
            assert!(
                lo.v <= p.v && p.v <= hi.v,
                "{}: prometheus {p:?} outside direct [{lo:?}, {hi:?}]",
                prom.key
            );
            checked += 1;
        }
    }
    checked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_prometheus_query_range_matches_direct_scrape() {
    let mut cfg = SimConfig::new(preset("l4-qwen2.5-3b").unwrap());
    cfg.dcgm_interval = Duration::from_secs(1);
    let sim = serve::start(cfg).await.unwrap();
    let jobs = [
        job("vllm", &sim.vllm_addr.to_string(), "/metrics", ""),
        job("dcgm", &sim.dcgm_addr.to_string(), "/metrics", ""),
    ];
    let Some(prom) = RealPrometheus::start("collect", &jobs).await else {
        sim.shutdown().await;
        return;
    };
    let vllm = scrape_source(&format!("vllm={}/metrics", sim.vllm_url()), 1000);
    let dcgm = scrape_source(&format!("dcgm={}", sim.dcgm_url()), 1000);
    let ((vb, vr), (db, _), ()) = tokio::join!(
        collect(&vllm, live(12_000)),
        collect(&dcgm, live(12_000)),
        put_chat_load(sim.vllm_addr, 8, 9)
    );
    // Let Prometheus finish the scrapes of the window's last second (polled, not slept).
    prom.wait_until_scraped_after(llmscope_collect::time::unix_now() + 1.0)
        .await;
    let mut direct: HashMap<String, Series> = HashMap::new();
    for s in series_of(&vb).into_iter().chain(series_of(&db)) {
        direct.insert(s.key.to_string(), s);
    }
    let client = prom.client();
    let (from, to) = vr.window;
    let selector = r#"{__name__=~"vllm:(generation_tokens_total|prompt_tokens_total|request_success_total|num_requests_running|cache_config_info)|DCGM_FI_DEV_FB_USED"}"#;
    let r = client
        .query_range(selector, from.ceil(), to.floor(), 1.0)
        .await
        .unwrap();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let names: std::collections::BTreeSet<&str> =
        r.data.iter().map(|s| s.key.name.as_str()).collect();
    assert!(names.len() >= 6, "{names:?}");
    let mut counter_checks = 0;
    for ps in &r.data {
        let d = direct
            .get(&bare(&ps.key))
            .unwrap_or_else(|| panic!("{} is in Prometheus but was not scraped directly", ps.key));
        assert!(
            ps.points.len() >= 8,
            "{}: {:?} vs direct {:?} window {from}..{to}",
            ps.key,
            ps.points,
            d.points
        );
        if ps.key.name.ends_with("_total") {
            counter_checks += counter_points_agree(ps, d);
        } else if ps.key.name == "vllm:cache_config_info" || ps.key.name == "DCGM_FI_DEV_FB_USED" {
            let values: std::collections::BTreeSet<u64> = d
                .points
                .iter()
                .chain(&ps.points)
                .map(|p| p.v as u64)
                .collect();
            assert_eq!(values.len(), 1, "{}: constant on both sides", ps.key);
        } else {
            let mean = |s: &[llmscope_core::series::Point]| {
                s.iter().map(|p| p.v).sum::<f64>() / s.len() as f64
            };
            let (pm, dm) = (mean(&ps.points), mean(&d.points));
            assert!(
                (pm - dm).abs() <= 1.5,
                "{}: mean {pm} (prometheus) vs {dm} (direct)",
                ps.key
            );
        }
    }
    assert!(
        counter_checks >= 20,
        "only {counter_checks} counter points compared"
    );
    let targets = client.targets().await.unwrap();
    assert_eq!(targets.data.active.len(), 2);
    assert!(
        targets.data.active.iter().all(|t| t.health == "up"),
        "{:?}",
        targets.data.active
    );
    let md = client
        .metadata(Some("vllm:num_requests_running"))
        .await
        .unwrap();
    assert_eq!(md.data["vllm:num_requests_running"][0].metric_type, "gauge");
    assert!(client.buildinfo().await.unwrap().starts_with("2."));
    drop(prom);
    sim.shutdown().await;
}

#[tokio::test]
async fn https_goes_through_rustls() {
    // A plain-HTTP server spoken to over https: the TLS handshake (rustls, ring) must fail cleanly.
    let addr = exposition_fake().await;
    let src = scrape_source(&format!("tls=https://{addr}/gzip"), 200);
    let (batches, report) = collect(&src, live(250)).await;
    assert!(batches.iter().all(|b| b.samples.is_empty()));
    let p = &report.problems[0];
    assert_eq!(p.kind, FailureKind::Connect);
    assert!(
        p.message.starts_with(&format!("tls (https://{addr}/gzip)")),
        "{}",
        p.message
    );
}

// ------------------------------------------------------------------ /version

#[tokio::test]
async fn the_engine_names_its_version_beside_its_metrics() {
    let mut cfg = SimConfig::new(preset("l4-qwen2.5-3b").unwrap());
    cfg.dialect = llmscope_sim::metrics::Dialect::parse("0.11").unwrap();
    let sim = serve::start(cfg).await.unwrap();
    let metrics: hyper::Uri = format!("{}/metrics", sim.vllm_url()).parse().unwrap();
    let got = llmscope_collect::version::engine_version(&http(), &metrics).await;
    sim.shutdown().await;
    assert_eq!(got, Ok("0.11.0".to_owned()));
}

#[tokio::test]
async fn an_exporter_without_version_says_why_instead_of_failing() {
    use llmscope_collect::version::{VersionError, engine_version};
    let addr = serve(Router::new().route("/metrics", get(|| async { text("up 1\n") }))).await;
    let metrics: hyper::Uri = format!("http://{addr}/metrics").parse().unwrap();
    assert_eq!(
        engine_version(&http(), &metrics).await,
        Err(VersionError::Status(404))
    );
}
