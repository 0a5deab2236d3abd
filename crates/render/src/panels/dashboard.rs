//! The four panels that carry most of a dashboard's value (`docs/METHOD.md` step 11): output
//! tokens per second, KV-cache usage, GPU utilisation against waiting requests, TTFT p95 over
//! time.

use super::Page;
use crate::chart::{Axis, Panel, Rule, Side, no_data};
use llmscope_diagnosis::Concept;

/// The plot height (px) of each of the four.
const HEIGHT: f64 = 150.0;

/// The four panels, in order.
pub(crate) fn write(page: &Page, s: &mut String) {
    tokens(page).write(s);
    kv(page).write(s);
    gpu_vs_waiting(page, HEIGHT).write(s);
    ttft_p95(page, s);
}

/// Output tokens per second in all (left) and per running request (right), the client's mean as
/// a line.
fn tokens(page: &Page) -> Panel {
    let mut p = page.panel("Output tokens/s", HEIGHT, Axis::new("tok/s"));
    p.right = Some(Axis::new("tok/s per request"));
    let total = page.points(Concept::GeneratedTokens, 1.0);
    let running = page.points(Concept::Running, 1.0);
    let each = super::join(&total, &running, |tok, n| (n > 0.0).then(|| tok / n));
    p.line("in all", Side::Left, total);
    p.line("per running request", Side::Right, each);
    let client = page.r.client.map(|c| c.throughput.output_tokens_per_s);
    if let Some(tok) = client.filter(|t| *t > 0.0) {
        p.rules.push(Rule {
            label: format!("client mean {} tok/s", crate::num(tok)),
            value: tok,
            side: Side::Left,
            colour: "#868e96",
        });
    }
    p.missing = "the engine's generated-tokens counter".into();
    p
}

/// KV-cache usage against the alert level and the full pool: one line per pod where the input
/// kept its replicas apart (`diagnose --prometheus`, `run --prometheus`), else the deployment's
/// one signal — the fullest replica at each scrape.
fn kv(page: &Page) -> Panel {
    let replicas = &page.r.input.replicas;
    let per_pod = replicas.len() >= 2;
    let title = if per_pod {
        "KV-cache usage per pod"
    } else {
        "KV-cache usage (the fullest replica at each scrape)"
    };
    let mut p = page.panel(title, HEIGHT, Axis::percent());
    if per_pod {
        for r in replicas {
            let points = r
                .input
                .signals
                .get(&Concept::KvUsage)
                .map_or(Vec::new(), |s| {
                    s.points.iter().map(|&(t, v)| (t, v * 100.0)).collect()
                });
            p.line(r.key.to_string(), Side::Left, points);
        }
    } else {
        page.add(
            &mut p,
            Concept::KvUsage,
            "KV-cache usage",
            Side::Left,
            100.0,
        );
    }
    p.rules.extend(super::verdict::kv_rules());
    p.missing = "the KV-cache usage gauge".into();
    p
}

/// Waiting and running requests (left) with GPU utilisation and KV usage in percent (right).
pub(crate) fn gpu_vs_waiting(page: &Page, height: f64) -> Panel {
    let mut p = page.panel("GPU vs waiting", height, Axis::new("req"));
    p.right = Some(Axis::percent());
    page.add(&mut p, Concept::Waiting, "waiting", Side::Left, 1.0);
    page.add(&mut p, Concept::Running, "running", Side::Left, 1.0);
    page.add(
        &mut p,
        Concept::GpuUtil,
        "GPU utilisation",
        Side::Right,
        1.0,
    );
    page.add(
        &mut p,
        Concept::KvUsage,
        "KV-cache usage",
        Side::Right,
        100.0,
    );
    p.missing = "waiting, running, GPU utilisation and KV usage".into();
    p
}

/// TTFT p95 over time needs a distribution per moment: the client's per-request records when
/// the run store kept them; else the panel says what is missing, with the client's p95 over the
/// whole run when it has one.
fn ttft_p95(page: &Page, s: &mut String) {
    if !page.r.requests.is_empty() {
        return super::requests::ttft_p95(page, page.r.requests).write(s);
    }
    let whole = page.r.client.and_then(|c| c.latency_ms.ttft.p95);
    let whole = whole.map_or(String::new(), |p95| {
        format!(
            "; over the whole run the client measured TTFT p95 = {} ms",
            crate::num(p95)
        )
    });
    let missing = format!(
        "TTFT p95 over time needs the client's per-request records, and this run has none stored{whole}"
    );
    no_data("TTFT p95 over time", &missing, s);
}
