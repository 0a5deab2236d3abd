//! Every renderer on one synthetic batch-limited run, with hostile label text.
#![allow(clippy::print_stderr)] // a skipped test says why, outside CI

use llmscope_diagnosis::{Concept, EngineFacts, Input, LoadFacts, Signal, diagnose};
use llmscope_render::{Report, html, json, markdown, terminal};

mod chromium;
use chromium::{HOSTILE, chromium, has_data_path, headless, rendered, screenshot, svgs};

/// 20 s idle, 60 s with running pinned at 16 and 16 waiting, 20 s idle.
fn input() -> Input {
    let shape = |idle: f64, loaded: f64| -> Vec<(f64, f64)> {
        (0..100)
            .map(|t| {
                (
                    1_700_000_000.0 + t as f64,
                    if (20..80).contains(&t) { loaded } else { idle },
                )
            })
            .collect()
    };
    let mut i = Input {
        engine: EngineFacts {
            max_num_seqs: Some(16),
            ..EngineFacts::default()
        },
        load: LoadFacts {
            concurrency: Some(32),
            ..LoadFacts::default()
        },
        scrape_interval_s: Some(1.0),
        ..Input::default()
    };
    let src = "vllm <script>alert(1)</script> \"pod\"";
    i.signals
        .insert(Concept::Running, Signal::new(src, shape(0.0, 16.0)));
    i.signals
        .insert(Concept::Waiting, Signal::new(src, shape(0.0, 16.0)));
    i.signals
        .insert(Concept::KvUsage, Signal::new(src, shape(0.0, 0.022)));
    i.signals
        .insert(Concept::GpuUtil, Signal::new("dcgm", shape(0.0, 32.0)));
    i
}

fn report<'a>(
    d: &'a llmscope_diagnosis::Diagnosis,
    i: &'a Input,
    client: Option<&'a llmscope_core::outcome::ClientSummary>,
) -> Report<'a> {
    Report {
        title: "llmscope run <b>".to_owned(),
        run_id: Some("run-1".to_owned()),
        simulated: true,
        context: vec!["vllm 0.26 at http://127.0.0.1:1".to_owned()],
        diagnosis: d,
        input: i,
        client,
        interrupted: None,
        requests: &[],
    }
}

#[test]
fn json_has_the_contract_fields() {
    let i = input();
    let d = diagnose(&i);
    let v = json::contract(&report(&d, &i, None));
    assert_eq!(v["verdict"]["bottleneck"], "batch_limit");
    assert!(v["verdict"]["confidence"].as_f64().unwrap() > 0.5);
    assert!(v["evidence"].as_array().is_some_and(|e| !e.is_empty()));
    let recs = v["recommendations"].as_array().unwrap();
    assert!(
        recs.iter()
            .any(|r| r["action"].as_str().unwrap().contains("max-num-seqs")
                && r["reason"].is_string())
    );
    assert!(v["timeline"]["phases"]["steady"].is_array());
    assert!(v["window_stats"]["kv_usage"]["max"].is_number());
    assert_eq!(v["run_id"], "run-1");
    assert_eq!(v["decision_table"][2]["matched"], true);
}

#[test]
fn terminal_and_markdown_lead_with_the_verdict() {
    let i = input();
    let d = diagnose(&i);
    let mut client = llmscope_core::outcome::ClientSummary::default();
    let ttft = &mut client.latency_ms.ttft;
    (ttft.p50, ttft.p90, ttft.p95, ttft.p99) =
        (Some(4000.0), Some(4100.0), Some(4200.0), Some(4300.0));
    ttft.mean = Some(4010.0);
    client.throughput.requests_per_s = 3.9;
    client.throughput.output_tokens_per_s = 198.0;
    (client.requests.sent, client.requests.completed) = (10, 10);
    let mut out = Vec::new();
    terminal::write(&report(&d, &i, Some(&client)), &mut out, false).unwrap();
    let text = String::from_utf8(out).unwrap();
    let verdict_at = text.find("Verdict: batch_limit").unwrap();
    assert!(verdict_at < text.find("Evidence").unwrap());
    assert!(text.contains("→  low    low    yes"), "{text}");
    assert!(text.contains("TTFT"));
    let mut out = Vec::new();
    markdown::write(&report(&d, &i, Some(&client)), &mut out).unwrap();
    let md = String::from_utf8(out).unwrap();
    assert!(md.contains("## Verdict: `batch_limit`"));
    assert!(!md.contains("<script>"), "markdown escapes html");
}

#[test]
fn html_is_self_contained_and_escapes_everything() {
    let i = input();
    let d = diagnose(&i);
    let mut out = Vec::new();
    html::write(&report(&d, &i, None), &mut out).unwrap();
    let page = String::from_utf8(out).unwrap();
    assert!(page.starts_with("<!doctype html>"));
    assert!(page.contains("<svg") && page.contains("<path class=\"series\" d=\"M"));
    assert!(
        !page.contains("<script"),
        "no scripts, and label text is escaped"
    );
    assert!(page.contains("&lt;script&gt;"));
    assert!(!page.contains("<b>llmscope") && page.contains("llmscope run &lt;b&gt;"));
    assert!(
        !page.contains("http://") || page.contains("127.0.0.1"),
        "no external resources"
    );
    assert!(!page.contains("src=\"http"));
}

#[test]
fn empty_input_renders_without_panicking() {
    let i = Input::default();
    let d = diagnose(&i);
    let r = report(&d, &i, None);
    let mut out = Vec::new();
    terminal::write(&r, &mut out, true).unwrap();
    html::write(&r, &mut out).unwrap();
    markdown::write(&r, &mut out).unwrap();
    assert_eq!(json::contract(&r)["verdict"]["bottleneck"], "none");
}

/// The HTML report renders in a real browser (Debian's chromium, headless): a screenshot is made
/// and is not blank. In CI (`CI=true`) a missing chromium fails the test.
#[test]
fn html_renders_in_headless_chromium() {
    let Some(chromium) = chromium() else { return };
    let i = input();
    let d = diagnose(&i);
    let dir = std::env::temp_dir().join(format!("llmscope-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("report.html");
    let shot = dir.join("report.png");
    let mut out = Vec::new();
    html::write(&report(&d, &i, None), &mut out).unwrap();
    std::fs::write(&page, out).unwrap();
    headless(
        &chromium,
        &dir,
        &page,
        &[
            "--window-size=1200,1400".to_owned(),
            format!("--screenshot={}", shot.display()),
        ],
    );
    let png = std::fs::read(&shot).expect("a screenshot was written");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    assert!(
        png.len() > 20_000,
        "screenshot is suspiciously small ({} bytes): blank page?",
        png.len()
    );
    if let Ok(keep) = std::env::var("LLMSCOPE_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue 12: every request rejected — each renderer leads with `failing_requests` and quotes the
/// server, escaped.
#[test]
fn failing_requests_are_shown_with_the_servers_words_in_every_format() {
    use llmscope_core::outcome::{FailureKind, RequestOutcome};
    let mut i = input();
    let body = "This model's maximum context length is 4096 tokens <b>";
    i.load.requests = Some(RequestOutcome {
        sent: 812,
        ok: 0,
        failed: 812,
        kinds: vec![FailureKind {
            kind: "http_400".into(),
            status: Some(400),
            count: 812,
            bodies: vec![body.into()],
        }],
        stopped_early: Some("no request succeeded for 5 s".into()),
    });
    let d = diagnose(&i);
    let r = report(&d, &i, None);
    let mut text = Vec::new();
    terminal::write(&r, &mut text, false).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("Verdict: failing_requests"), "{text}");
    assert!(
        text.contains("812 of 812 requests failed (100%); stopped early")
            && text.contains(&format!("server said: {body}")),
        "{text}"
    );
    assert_eq!(
        text.matches("failing_requests:").count(),
        0,
        "not repeated: {text}"
    );
    let mut md = Vec::new();
    markdown::write(&r, &mut md).unwrap();
    let md = String::from_utf8(md).unwrap();
    assert!(md.contains("## Verdict: `failing_requests`") && md.contains("## Failed requests"));
    assert!(
        md.contains("server said: This model's maximum context length is 4096 tokens &lt;b&gt;"),
        "{md}"
    );
    let mut page = Vec::new();
    html::write(&r, &mut page).unwrap();
    let page = String::from_utf8(page).unwrap();
    assert!(page.contains("<h2>Failed requests</h2>") && page.contains("4096 tokens &lt;b&gt;"));
    assert!(!page.contains("4096 tokens <b>"));
    let v = json::contract(&r);
    assert_eq!(v["verdict"]["bottleneck"], "failing_requests");
    assert_eq!(v["requests"]["kinds"][0]["bodies"][0], body);
    assert!(
        v["verdict"]["summary"]
            .as_str()
            .unwrap()
            .contains("maximum context length")
    );
}

/// Issue 12 point 4: an interrupted run says so, with when and how far, in every format, before
/// the verdict; unknown progress is said to be unknown, not shown as 0.
#[test]
fn an_interrupted_run_says_so_in_every_format() {
    use llmscope_render::Interruption;
    let i = input();
    let d = diagnose(&i);
    let mut r = report(&d, &i, None);
    r.interrupted = Some(Interruption {
        at: "2026-05-01T10:00:12.000Z".into(),
        done_s: Some(12.4),
        planned_s: Some(30.0),
    });
    let says = "interrupted at 2026-05-01T10:00:12.000Z, 12 s of 30 s";
    let mut text = Vec::new();
    terminal::write(&r, &mut text, false).unwrap();
    let text = String::from_utf8(text).unwrap();
    let at = text.find(says).unwrap_or_else(|| panic!("{text}"));
    assert!(at < text.find("Verdict:").unwrap(), "{text}");
    let mut md = Vec::new();
    markdown::write(&r, &mut md).unwrap();
    let md = String::from_utf8(md).unwrap();
    assert!(
        md.find(says).unwrap() < md.find("## Verdict").unwrap(),
        "{md}"
    );
    let mut page = Vec::new();
    html::write(&r, &mut page).unwrap();
    let page = String::from_utf8(page).unwrap();
    assert!(page.find(says).unwrap() < page.find("Verdict:").unwrap());
    let v = json::contract(&r);
    assert_eq!(v["interrupted"]["notice"], says);
    assert_eq!(v["interrupted"]["done_s"], 12.4);
    let unknown = Interruption {
        at: "T".into(),
        done_s: None,
        planned_s: Some(30.0),
    };
    assert_eq!(
        unknown.notice(),
        "interrupted at T, how far into the planned 30 s is unknown"
    );
    assert!(json::contract(&report(&d, &i, None))["interrupted"].is_null());
}

/// Ten minutes of one-second scrapes.
const TEN_MINUTES: u32 = 600;

/// Ten minutes: 60 s idle, 480 s loaded, 60 s idle; `loaded` gives each concept's level.
fn ten_minutes(loaded: &[(Concept, f64)]) -> Input {
    let t0 = 1_700_000_000.0;
    let on = |t: u32| (60..540).contains(&t);
    let mut i = Input {
        scrape_interval_s: Some(1.0),
        ..Input::default()
    };
    i.engine.max_num_seqs = Some(16);
    i.load.concurrency = Some(32);
    i.load.window = Some((t0 + 60.0, t0 + 540.0));
    for &(c, level) in loaded {
        let points = (0..TEN_MINUTES)
            .map(|t| (t0 + f64::from(t), if on(t) { level } else { 0.0 }))
            .collect();
        let source = format!("vllm{{pod=\"{HOSTILE}\"}}");
        i.signals.insert(c, Signal::new(source, points));
    }
    // dcgm: every 30 s, 30 s late, with a two-minute hole where its scrapes failed.
    let gpu = loaded
        .iter()
        .find(|(c, _)| *c == Concept::GpuUtil)
        .map_or(30.0, |p| p.1);
    let dcgm = (0..TEN_MINUTES / 30)
        .map(|k| k * 30)
        .filter(|t| !(300..420).contains(t))
        .map(|t| {
            (
                t0 + f64::from(t),
                if on(t.saturating_sub(30)) && t >= 90 {
                    gpu
                } else {
                    0.0
                },
            )
        })
        .collect();
    i.signals
        .insert(Concept::GpuUtil, Signal::new("DCGM_FI_DEV_GPU_UTIL", dcgm));
    let tokens = (0..TEN_MINUTES).scan(0.0, |total, t| {
        *total += if on(t) { 180.0 } else { 0.0 };
        Some((t0 + f64::from(t), *total))
    });
    i.signals.insert(
        Concept::GeneratedTokens,
        Signal::new("gen", tokens.collect()),
    );
    i
}

/// A client that measured latencies.
fn client_summary() -> llmscope_core::outcome::ClientSummary {
    let mut c = llmscope_core::outcome::ClientSummary::default();
    let l = &mut c.latency_ms;
    for (s, base) in [
        (&mut l.ttft, 40.0),
        (&mut l.itl, 12.0),
        (&mut l.e2e, 4000.0),
    ] {
        (s.min, s.p50, s.p90, s.p95, s.p99, s.p999, s.max) = (
            Some(base / 2.0),
            Some(base),
            Some(base * 2.0),
            Some(base * 3.0),
            Some(base * 6.0),
            Some(base * 8.0),
            Some(base * 9.0),
        );
    }
    c.throughput.requests_per_s = 3.9;
    c.throughput.output_tokens_per_s = 180.0;
    (c.requests.sent, c.requests.completed) = (1870, 1870);
    c
}

/// One input per verdict kind the test can build, with the verdict it must give.
fn verdict_cases() -> Vec<(&'static str, Input)> {
    use Concept::{GpuUtil, KvUsage, Preemptions, Running, Waiting};
    let batch = ten_minutes(&[(Running, 16.0), (Waiting, 16.0), (KvUsage, 0.022)]);
    let mut kv = ten_minutes(&[
        (Running, 9.0),
        (Waiting, 20.0),
        (KvUsage, 0.97),
        (GpuUtil, 40.0),
    ]);
    let preempted = kv.signals[&Running].points.iter().enumerate();
    let preempted = preempted.map(|(k, p)| (p.0, k as f64 * 0.5)).collect();
    kv.signals
        .insert(Preemptions, Signal::new("preemptions", preempted));
    let gpu = ten_minutes(&[
        (Running, 12.0),
        (Waiting, 6.0),
        (KvUsage, 0.3),
        (GpuUtil, 97.0),
    ]);
    let mut idle = ten_minutes(&[(Running, 4.0), (Waiting, 0.0), (KvUsage, 0.01)]);
    idle.load.concurrency = Some(4);
    let mut failing = ten_minutes(&[(Running, 2.0), (Waiting, 0.0), (KvUsage, 0.01)]);
    failing.load.requests = Some(llmscope_core::outcome::RequestOutcome {
        sent: 900,
        ok: 0,
        failed: 900,
        kinds: vec![llmscope_core::outcome::FailureKind {
            kind: "http_400".into(),
            status: Some(400),
            count: 900,
            bodies: vec![format!("bad request {HOSTILE}")],
        }],
        stopped_early: None,
    });
    vec![
        ("batch_limit", batch),
        ("kv_cache_capacity", kv),
        ("gpu_compute", gpu),
        ("load_not_reached", idle),
        ("failing_requests", failing),
    ]
}

/// Issue 26: every verdict kind's report, as Chromium builds it, has charts with data (no empty
/// axes), the verdict's chart before anything else, hostile label text escaped and no script,
/// nothing fetched from off the page, and a ten-minute run's page under 2 MiB.
#[test]
fn every_verdicts_report_has_charts_with_data_in_chromium() {
    let Some(chromium) = chromium() else { return };
    let dir = std::env::temp_dir().join(format!("llmscope-dom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let client = client_summary();
    for (kind, input) in verdict_cases() {
        let d = diagnose(&input);
        assert_eq!(d.verdict.bottleneck.as_str(), kind, "{:?}", d.verdict);
        let mut r = report(&d, &input, Some(&client));
        r.title = format!("llmscope run {HOSTILE}");
        let mut html = Vec::new();
        html::write(&r, &mut html).unwrap();
        eprintln!("{kind}: a ten-minute run's page is {} bytes", html.len());
        assert!(html.len() < 2 * 1024 * 1024, "{kind}: {} bytes", html.len());
        let page = dir.join(format!("{kind}.html"));
        std::fs::write(&page, &html).unwrap();
        let dom = headless(&chromium, &dir, &page, &["--dump-dom".to_owned()]);
        check_dom(kind, &dom);
        if kind == "kv_cache_capacity" {
            screenshot(&chromium, &dir, &page);
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

fn check_dom(kind: &str, dom: &str) {
    assert!(
        dom.contains(&format!("Verdict: <b>{kind}</b>")),
        "{kind}: {dom}"
    );
    let charts = svgs(dom);
    assert!(charts.len() >= 8, "{kind}: only {} charts", charts.len());
    for (n, svg) in charts.iter().enumerate() {
        assert!(has_data_path(svg), "{kind}: chart {n} has no data: {svg}");
    }
    let verdict_at = dom.find("Verdict:").unwrap();
    let first_chart = dom.find("<svg").unwrap();
    assert!(verdict_at < first_chart, "{kind}: the verdict comes first");
    for later in ["What to change", "Dashboard", "Evidence"] {
        assert!(
            dom.find(later).is_none_or(|at| first_chart < at),
            "{kind}: chart before {later}"
        );
    }
    assert!(
        !dom.contains("<script"),
        "{kind}: a script element or unescaped label"
    );
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{kind}: escaped"
    );
    for attr in ["src=", "href=", "url(", "@import"] {
        assert!(!dom.contains(attr), "{kind}: {attr} would leave the page");
    }
}

/// Issue 25: two or more replicas are a table in every text format and `replicas` in JSON,
/// their pod names (label values from outside) escaped; one replica is no table and no key.
#[test]
fn replicas_are_shown_when_there_are_two_or_more() {
    use llmscope_diagnosis::{Bottleneck, ReplicaVerdict};
    let i = input();
    let mut d = diagnose(&i);
    let replica = |pod: &str, waiting| ReplicaVerdict {
        pod: pod.to_owned(),
        rank: Some("0".to_owned()),
        verdict: Bottleneck::BatchLimit,
        running: Some(16.0),
        waiting: Some(waiting),
        kv: Some(0.25),
        share_of_requests: Some(0.5),
        queue_s_per_request: None,
    };
    d.replicas = vec![replica("vllm-0|<b>\x1b[2J", 12.0)];
    let one = json::contract(&report(&d, &i, None));
    assert!(
        one.get("replicas").is_none(),
        "one replica is the deployment"
    );
    let mut text = Vec::new();
    terminal::write(&report(&d, &i, None), &mut text, false).unwrap();
    assert!(!String::from_utf8(text).unwrap().contains("Replicas"));

    d.replicas.push(replica("vllm-1", 0.0));
    let v = json::contract(&report(&d, &i, None));
    let reps = v["replicas"].as_array().unwrap();
    assert_eq!(reps.len(), 2);
    assert_eq!(reps[1]["pod"], "vllm-1");
    assert_eq!(reps[0]["verdict"], "batch_limit");
    assert_eq!(reps[0]["waiting"], 12.0);
    assert_eq!(reps[0]["share_of_requests"], 0.5);
    assert_eq!(reps[0]["rank"], "0");
    let mut text = Vec::new();
    terminal::write(&report(&d, &i, None), &mut text, false).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("Replicas"), "{text}");
    assert!(!text.contains('\x1b'), "{text:?}");
    let row = text.lines().find(|l| l.contains("vllm-1")).unwrap();
    assert!(
        row.contains("batch_limit") && row.contains("25.0%") && row.contains("50.0%"),
        "{row}"
    );
    let mut md = Vec::new();
    markdown::write(&report(&d, &i, None), &mut md).unwrap();
    let md = String::from_utf8(md).unwrap();
    assert!(md.contains("## Replicas"), "{md}");
    assert!(md.contains("vllm-0\\|&lt;b&gt;"), "{md}");
    assert!(
        md.contains("| vllm-1 | 0 | batch_limit | 16.0 | 0.0 | 25.0% | 50.0% |"),
        "{md}"
    );
}

/// Issue 26: `diagnose --prometheus` reports a window without a client: the verdict's chart, the
/// dashboard and the layers all have data, and no client chart is drawn empty.
#[test]
fn a_windows_report_has_charts_with_data_in_chromium() {
    let (_, input) = verdict_cases().remove(1);
    let d = diagnose(&input);
    let mut r = report(&d, &input, None);
    r.title = format!("llmscope diagnose {HOSTILE}");
    let mut html = Vec::new();
    html::write(&r, &mut html).unwrap();
    let Some((dom, dir)) = rendered("window", &html, 6) else {
        return;
    };
    let verdict_at = dom
        .find("Verdict: <b>kv_cache_capacity</b>")
        .expect("verdict");
    assert!(verdict_at < dom.find("<svg").unwrap(), "the verdict first");
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue 26: `compare A B C --html`: each run's verdict, what changed in the configuration (a
/// hostile line escaped), the deltas from the first run (absent as —, never 0), and the signals
/// and client latencies overlaid, one line per run, every chart with data.
#[test]
fn a_comparison_overlays_its_runs_in_chromium() {
    use llmscope_render::compare::{self, Row};
    let cases = verdict_cases();
    let inputs = [&cases[0].1, &cases[1].1, &cases[2].1];
    let ds: Vec<_> = inputs.iter().map(|i| diagnose(i)).collect();
    let client = client_summary();
    let runs: Vec<Report> = ds
        .iter()
        .zip(inputs)
        .enumerate()
        .map(|(n, (d, i))| {
            let mut r = report(d, i, (n != 2).then_some(&client));
            r.run_id = Some((n + 1).to_string());
            r.context.push(format!("--max-num-seqs {}", 16 << n));
            r
        })
        .collect();
    let mut runs = runs;
    runs[1].context.push(format!("model {HOSTILE}"));
    let rows = vec![
        Row {
            name: "output tok/s".into(),
            values: vec![Some(180.0), Some(360.0), None],
        },
        Row {
            name: format!("TTFT p99 ms {HOSTILE}"),
            values: vec![None, Some(90.0), Some(45.0)],
        },
    ];
    let mut html = Vec::new();
    compare::html(&format!("compare {HOSTILE}"), &runs, &rows, &mut html).unwrap();
    let Some((dom, dir)) = rendered("compare", &html, 7) else {
        return;
    };
    for verdict in ["batch_limit", "kv_cache_capacity", "gpu_compute"] {
        assert!(dom.contains(&format!("</b>: {verdict} (")), "{verdict}");
    }
    let changed = &dom[dom.find("What changed").unwrap()..dom.find("Compared").unwrap()];
    for line in [
        "--max-num-seqs 16",
        "--max-num-seqs 32",
        "--max-num-seqs 64",
    ] {
        assert!(changed.contains(line), "{line} changed");
    }
    assert!(
        !changed.contains("vllm 0.26"),
        "a line every run has did not change"
    );
    let table = &dom[dom.find("Compared").unwrap()..dom.find("<svg").unwrap()];
    let cells = "<td>180</td><td>360</td><td>—</td><td>+100.0%</td><td></td>";
    assert!(table.contains(cells), "{table}");
    assert!(table.contains("<td>—</td><td>90</td><td>45</td><td></td><td></td>"));
    for svg in svgs(&dom).iter().take(5) {
        assert!(
            svg.matches("class=\"series\"").count() >= 2,
            "overlaid: {svg}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A search against a batch cap of 16 (loads 1 … 32, then 12, 14, 15), goodput under an SLO,
/// the stage past the knee summarised with a hostile label.
fn capacity_answer() -> llmscope_diagnosis::capacity::answer::Answer {
    use llmscope_diagnosis::Bottleneck;
    use llmscope_diagnosis::capacity::answer::*;
    use llmscope_diagnosis::capacity::{Search, Served};
    let mut search = Search::new(1, 64);
    let stages = [1, 2, 4, 8, 16, 32, 12, 14, 15].map(|l: u32| {
        let (tok, x) = (100.0 * f64::from(l.min(16)), f64::from(l));
        let b = if l < 16 {
            Bottleneck::LoadNotReached
        } else {
            Bottleneck::BatchLimit
        };
        let goodput = if l <= 16 { x } else { 8.0 };
        let served = Served {
            output_tok_s: tok,
            goodput_rps: Some(goodput),
            saturated: false,
        };
        search.record(l, served);
        let p = |v: f64| Percentiles {
            p50: Some(v / 2.0),
            p95: Some(v),
        };
        Stage {
            load: Load::on(Axis::Concurrency, l),
            run_id: i64::from(l),
            output_tok_s: tok,
            req_s: tok / 100.0,
            goodput_rps: Some(goodput),
            goodput_fraction: Some(goodput / x),
            ttft_ms: p(if l <= 16 { 40.0 } else { 40.0 * x }),
            itl_ms: p(12.0),
            e2e_ms: p(if l <= 16 { 4000.0 } else { 9000.0 }),
            completed: 100,
            failed: 0,
            running_mean: Some(x.min(16.0)),
            waiting_mean: Some((x - 16.0).max(0.0)),
            seconds: 10.0,
            window: None,
            verdict: StageVerdict {
                bottleneck: b,
                confidence: 0.9,
                summary: format!("{} at {l} on pod {HOSTILE}", b.as_str()),
                evidence: Vec::new(),
            },
            client_limited: None,
            interrupted: false,
        }
    });
    let found = Ended::Found {
        stop: StopReason::Plateau,
    };
    let slo = Some("ttft=500ms,e2e=20s".to_owned());
    Answer::assemble(
        Axis::Concurrency,
        slo,
        stages.to_vec(),
        &search,
        found,
        (300.0, 100.0),
    )
}

/// Issue 26: `capacity --html`: throughput and goodput against load with the knee marked and
/// named with its cause, then latency against throughput with the SLO's limits and the knee's
/// stage ringed; every chart has data, the hostile label is escaped.
#[test]
fn a_capacity_page_has_its_charts_in_chromium() {
    let a = capacity_answer();
    let html = llmscope_render::capacity::html(&a, &format!("capacity {HOSTILE}"));
    let Some((dom, dir)) = rendered("capacity", html.as_bytes(), 2) else {
        return;
    };
    let charts = svgs(&dom);
    let (load, latency) = (charts[0], charts[1]);
    assert_eq!(load.matches("class=\"stage\"").count(), 9, "{load}");
    assert_eq!(load.matches("class=\"goodput\"").count(), 9, "{load}");
    assert!(load.contains("knee 16: batch_limit"), "{load}");
    assert_eq!(latency.matches("class=\"series\"").count(), 2, "{latency}");
    assert!(latency.contains("SLO ttft ≤ 500 ms") && latency.contains("SLO e2e ≤ 20000 ms"));
    assert_eq!(
        latency.matches("stroke-width=\"2.5\" r=\"7\"").count(),
        2,
        "the knee ringed"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue 26: the Markdown report's charts are SVG files Chromium opens on their own (well-formed
/// XML in the SVG namespace, with data), each linked once, the verdict's right under the verdict.
#[test]
fn markdown_links_its_charts_as_svg_files_that_open_alone() {
    let (_, input) = verdict_cases().remove(0);
    let d = diagnose(&input);
    let client = client_summary();
    let r = report(&d, &input, Some(&client));
    let charts = markdown::chart_files(&r);
    assert!(charts.len() >= 8, "{} charts", charts.len());
    let mut md = Vec::new();
    markdown::write_linked(&r, "run-charts", &charts, &mut md).unwrap();
    let md = String::from_utf8(md).unwrap();
    for c in &charts {
        let link = format!("(run-charts/{})", c.file);
        assert_eq!(md.matches(&link).count(), 1, "{link} in {md}");
    }
    let first = md.find(&charts[0].file).unwrap();
    assert!(md.find("## Verdict").unwrap() < first && first < md.find("## Evidence").unwrap());
    let Some(chromium) = chromium() else { return };
    let dir = std::env::temp_dir().join(format!("llmscope-svg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for c in &charts {
        let file = dir.join(&c.file);
        std::fs::write(&file, &c.svg).unwrap();
        let dom = headless(&chromium, &dir, &file, &["--dump-dom".to_owned()]);
        assert!(!dom.contains("parsererror"), "{}: {dom}", c.file);
        assert!(has_data_path(&dom), "{}: no data", c.file);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue 26: with the client's per-request records, TTFT p95, the client's completed requests
/// and failures by kind (each kind a line, the hostile one escaped) are drawn over time, with
/// data, in Chromium.
#[test]
fn the_clients_requests_are_charted_over_time_in_chromium() {
    use llmscope_render::RequestTiming;
    let (_, input) = verdict_cases().remove(0);
    let t0 = 1_700_000_000.0;
    let requests: Vec<RequestTiming> = (0..1920)
        .map(|k| {
            let sent = t0 + 60.0 + f64::from(k) * 0.25;
            let error = match k % 50 {
                0 => Some("http_503".to_owned()),
                1 => Some(format!("stall {HOSTILE}")),
                _ => None,
            };
            let ttft = 0.04 + f64::from(k % 7) * 0.01;
            RequestTiming {
                sent,
                end: sent + 4.0,
                ttft_s: error.is_none().then_some(ttft),
                error,
            }
        })
        .collect();
    let d = diagnose(&input);
    let client = client_summary();
    let mut r = report(&d, &input, Some(&client));
    r.requests = &requests;
    let mut html = Vec::new();
    html::write(&r, &mut html).unwrap();
    let Some((dom, dir)) = rendered("requests", &html, 10) else {
        return;
    };
    let figure = |title: &str| {
        let at = dom.find(title).unwrap_or_else(|| panic!("{title} drawn"));
        svgs(&dom[at..])[0]
    };
    let ttft = figure("TTFT p95 over time (the client's requests");
    assert!(has_data_path(ttft) && !dom.contains("no data: TTFT p95"));
    let failures = figure("Failures over time, by kind");
    assert_eq!(
        failures.matches("class=\"series\"").count(),
        2,
        "{failures}"
    );
    assert!(figure("Throughput over time").contains("client completed req/s"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Issues 25 and 26: a fleet whose replicas were kept apart — one pod queueing at its cap, one
/// idle — gets the routing imbalance's chart first and the seed's KV panel per pod, each pod a
/// line named by its label value (escaped), every chart with data.
#[test]
fn a_fleets_report_draws_each_pod_in_chromium() {
    use llmscope_core::series::{Labels, Point, Series, SeriesKey};
    let Some(chromium) = chromium() else { return };
    let series = |name: &str, pod: &str, loaded: f64| Series {
        key: SeriesKey::new(
            name,
            Labels::new(vec![
                ("namespace".to_owned(), "llm".to_owned()),
                ("pod".to_owned(), pod.to_owned()),
                ("engine".to_owned(), "0".to_owned()),
            ]),
        ),
        points: (0..600)
            .map(|k| {
                let t = 1_700_000_000.0 + f64::from(k);
                let on = (60..540).contains(&k);
                let v = if name.ends_with("_total") {
                    loaded * f64::from(k.clamp(60, 540) - 60)
                } else if on {
                    loaded
                } else {
                    0.0
                };
                Point { t, v }
            })
            .collect(),
    };
    let hot = format!("vllm-0{HOSTILE}");
    let mut all = Vec::new();
    for (pod, running, waiting, kv, rate) in [
        (hot.as_str(), 16.0, 12.0, 0.6, 4.0),
        ("vllm-1", 2.0, 0.0, 0.05, 0.5),
    ] {
        all.push(series("vllm:num_requests_running", pod, running));
        all.push(series("vllm:num_requests_waiting", pod, waiting));
        all.push(series("vllm:kv_cache_usage_perc", pod, kv));
        all.push(series("vllm:request_success_total", pod, rate));
    }
    let (mut input, _) = llmscope_diagnosis::build::signals_from_series(&all);
    input.engine.max_num_seqs = Some(16);
    input.scrape_interval_s = Some(1.0);
    let d = diagnose(&input);
    assert_eq!(
        d.verdict.bottleneck.as_str(),
        "routing_imbalance",
        "{:?}",
        d.verdict
    );
    let r = report(&d, &input, None);
    let mut html = Vec::new();
    html::write(&r, &mut html).unwrap();
    let dir = std::env::temp_dir().join(format!("llmscope-fleet-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("fleet.html");
    std::fs::write(&page, &html).unwrap();
    let dom = headless(&chromium, &dir, &page, &["--dump-dom".to_owned()]);
    std::fs::remove_dir_all(&dir).ok();
    let kv = dom
        .find("KV-cache usage per pod")
        .expect("the KV panel per pod");
    let panel = &dom[kv..];
    let panel = &panel[..panel.find("</svg>").unwrap_or(panel.len())];
    assert!(has_data_path(panel), "the KV panel has data: {panel}");
    assert!(panel.contains("vllm-1"), "{panel}");
    assert!(
        panel.contains("vllm-0&lt;script&gt;"),
        "the hot pod, escaped: {panel}"
    );
    let charts = svgs(&dom);
    assert!(
        charts.iter().all(|svg| has_data_path(svg)),
        "every chart has data"
    );
    assert!(
        !dom.contains("<script"),
        "a script element or an unescaped label"
    );
}
