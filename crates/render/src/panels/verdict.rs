//! The verdict's own chart: the signals the verdict was read from, against the limit it names,
//! with its evidence values marked.

use super::Page;
use crate::chart::{Axis, Mark, Panel, Rule, Side};
use llmscope_diagnosis::{Bottleneck, Concept};

/// The verdict chart's plot height (px): taller than the small multiples below it.
const HEIGHT: f64 = 240.0;

/// The panel that shows the verdict.
pub(crate) fn panel(page: &Page) -> Panel {
    match page.r.diagnosis.verdict.bottleneck {
        Bottleneck::BatchLimit => batch_limit(page),
        Bottleneck::RoutingImbalance => replicas(page),
        Bottleneck::KvCacheCapacity => kv_capacity(page),
        Bottleneck::GpuCompute | Bottleneck::MemoryBandwidth | Bottleneck::Host => gpu(page),
        Bottleneck::TokenBudget => token_budget(page),
        Bottleneck::Client
        | Bottleneck::LoadNotReached
        | Bottleneck::FrontEnd
        | Bottleneck::FailingRequests
        | Bottleneck::AdmissionLimit => sent_vs_ran(page),
        Bottleneck::None => super::dashboard::gpu_vs_waiting(page, HEIGHT),
    }
}

/// Running pinned at the cap, and the queue in front of it.
fn batch_limit(page: &Page) -> Panel {
    let title = "Batch limit: running requests against the --max-num-seqs cap, and waiting";
    let mut p = page.panel(title, HEIGHT, Axis::new("req"));
    page.add_marked(&mut p, Concept::Running, "running", Side::Left, 1.0);
    page.add_marked(&mut p, Concept::Waiting, "waiting", Side::Left, 1.0);
    if let Some(rule) = cap_rule(page) {
        p.rules.push(rule);
    }
    p.missing = "the engine's running and waiting gauges".into();
    p
}

/// Routing imbalance: each replica's queue side by side (the sum hides which one holds it),
/// and its running batch against one engine's cap.
fn replicas(page: &Page) -> Panel {
    let title = "Routing imbalance: each replica's waiting and running requests";
    let mut p = page.panel(title, HEIGHT, Axis::new("req"));
    for r in &page.r.input.replicas {
        let s = |c: Concept| r.input.signals.get(&c).map(|s| s.points.clone());
        p.line(
            format!("{} waiting", r.key),
            Side::Left,
            s(Concept::Waiting).unwrap_or_default(),
        );
        p.line(
            format!("{} running", r.key),
            Side::Left,
            s(Concept::Running).unwrap_or_default(),
        );
    }
    if let Some(m) = page.r.input.engine.max_num_seqs {
        p.rules.push(limit(
            format!("--max-num-seqs {m} (one replica)"),
            f64::from(m),
        ));
    }
    p.missing = "each replica's running and waiting gauges".into();
    p
}

/// `--max-num-seqs` × replicas as a line, when known.
fn cap_rule(page: &Page) -> Option<Rule> {
    let m = page.r.input.engine.max_num_seqs?;
    let engines = page.r.input.engines.max(1);
    let label = match engines {
        1 => format!("--max-num-seqs {m}"),
        n => format!("--max-num-seqs {m} × {n} replicas"),
    };
    Some(limit(label, f64::from(m) * f64::from(engines)))
}

/// An engine setting's limit as a red line on the left axis.
fn limit(label: String, value: f64) -> Rule {
    Rule {
        label,
        value,
        side: Side::Left,
        colour: "#c92a2a",
    }
}

/// KV usage against the alert level and the full pool, preemptions on the right.
fn kv_capacity(page: &Page) -> Panel {
    let title = "KV-cache capacity: usage against 0.85 and 1.0, and preemptions";
    let mut p = page.panel(title, HEIGHT, Axis::percent());
    p.right = Some(Axis::new("/s"));
    page.add_marked(
        &mut p,
        Concept::KvUsage,
        "KV-cache usage",
        Side::Left,
        100.0,
    );
    page.add_marked(
        &mut p,
        Concept::Preemptions,
        "preemptions/s",
        Side::Right,
        1.0,
    );
    p.rules.extend(kv_rules());
    p.missing = "the KV-cache usage gauge".into();
    p
}

/// The alert level (0.85) and the full pool (1.0), in percent.
pub(super) fn kv_rules() -> [Rule; 2] {
    let rule = |label: &str, value: f64, colour| Rule {
        label: label.into(),
        value,
        side: Side::Left,
        colour,
    };
    [
        rule("alert 0.85", 85.0, "#e8590c"),
        rule("full 1.0", 100.0, "#c92a2a"),
    ]
}

/// GPU utilisation and the engine-activity ratios, requests running on the right.
fn gpu(page: &Page) -> Panel {
    let title = "GPU: utilisation and engine activity, and requests running";
    let mut p = page.panel(title, HEIGHT, Axis::percent());
    p.right = Some(Axis::new("req"));
    page.add_marked(&mut p, Concept::GpuUtil, "GPU utilisation", Side::Left, 1.0);
    page.add_marked(
        &mut p,
        Concept::GrEngineActive,
        "engine active",
        Side::Left,
        100.0,
    );
    let extra = [
        (Concept::TensorActive, "tensor pipes active", 100.0),
        (Concept::DramActive, "memory interface active", 100.0),
        (Concept::MemCopyUtil, "memory copy utilisation", 1.0),
    ];
    for (c, label, k) in extra {
        if page.r.input.signal(c).is_some() {
            page.add_marked(&mut p, c, label, Side::Left, k);
        }
    }
    page.add_marked(&mut p, Concept::Running, "running", Side::Right, 1.0);
    p.missing = "the GPU exporter's utilisation and the engine's running gauge".into();
    p
}

/// Tokens scheduled per engine step against `--max-num-batched-tokens`.
fn token_budget(page: &Page) -> Panel {
    let title = "Token budget: tokens per engine step against --max-num-batched-tokens";
    let mut p = page.panel(title, HEIGHT, Axis::new("tok"));
    p.right = Some(Axis::new("req"));
    p.line("tokens per step", Side::Left, tokens_per_step(page));
    page.add_marked(&mut p, Concept::Running, "running", Side::Right, 1.0);
    if let Some(m) = page.r.input.engine.max_num_batched_tokens {
        p.rules
            .push(limit(format!("--max-num-batched-tokens {m}"), f64::from(m)));
    }
    p.missing = "the engine's step counters (tokens scheduled and steps)".into();
    p
}

/// Tokens per step between scrapes: the rate of tokens scheduled over the rate of steps.
fn tokens_per_step(page: &Page) -> Vec<(f64, f64)> {
    let steps = page.points(Concept::StepCount, 1.0);
    let tokens = page.points(Concept::StepTokensSum, 1.0);
    super::join(&tokens, &steps, |tok, n| (n > 0.0).then(|| tok / n))
}

/// What the client sent (its concurrency, when it sent) against what the engine ran.
fn sent_vs_ran(page: &Page) -> Panel {
    let title = "What the client sent against what the engine ran";
    let mut p = page.panel(title, HEIGHT, Axis::new("req"));
    p.right = Some(Axis::new("req/s"));
    page.add_marked(&mut p, Concept::Running, "engine running", Side::Left, 1.0);
    page.add_marked(&mut p, Concept::Waiting, "engine waiting", Side::Left, 1.0);
    let finished = "engine finished req/s";
    page.add_marked(
        &mut p,
        Concept::RequestsFinished,
        finished,
        Side::Right,
        1.0,
    );
    p.rules.extend(client_rules(page));
    p.marks.extend(sending_marks(page));
    p.missing = "the engine's running and waiting gauges".into();
    p
}

/// The client's concurrency asked and kept (left), its mean request rate (right).
fn client_rules(page: &Page) -> Vec<Rule> {
    let load = &page.r.input.load;
    let rule = |label: String, value: f64, side, colour| Rule {
        label,
        value,
        side,
        colour,
    };
    let asked = load.concurrency.map(|c| {
        let label = format!("client concurrency {c}");
        rule(label, f64::from(c), Side::Left, "#5f3dc4")
    });
    let kept = load.achieved_concurrency.map(|c| {
        let label = format!("client kept {} in flight", crate::num(c));
        rule(label, c, Side::Left, "#0c8599")
    });
    let rate = page.r.client.map(|c| c.throughput.requests_per_s);
    let rate = rate.filter(|r| *r > 0.0).map(|r| {
        let label = format!("client mean {} req/s", crate::num(r));
        rule(label, r, Side::Right, "#868e96")
    });
    [asked, kept, rate].into_iter().flatten().collect()
}

/// When the client started and stopped sending.
fn sending_marks(page: &Page) -> Vec<Mark> {
    let Some((a, b)) = page.r.input.load.sending else {
        return Vec::new();
    };
    let mark = |t, label: &str| Mark {
        t,
        label: label.into(),
        colour: "#5f3dc4",
    };
    vec![mark(a, "client starts"), mark(b, "client stops")]
}
