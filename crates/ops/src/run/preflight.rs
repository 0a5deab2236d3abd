//! Before minutes are spent on a run: the load design can show what it is meant to (a queue
//! can form), and the sources answer — the engine's metrics must (a run without them is
//! blind); the engine, its version and the exposed name each needed signal is read from are
//! said, and a needed signal none of whose names is exposed is warned about.

use super::{Narrator, RunPlan};
use crate::OpsError;
use crate::window::matcher_body;
use llmscope_catalog::{self as catalog, Exporter, detect};
use llmscope_check::inventory::snapshot::Snapshot;
use llmscope_collect::HttpClient;
use llmscope_collect::prom::PromClient;
use llmscope_collect::scrape::ScrapeTarget;
use llmscope_collect::time::unix_now;
use llmscope_diagnosis::Concept;

/// Checks the load design and the sources before spending minutes on them: the engine's
/// metrics must answer (a run without them is blind), and the engine and its version are named.
pub async fn preflight(
    plan: &RunPlan,
    http: &HttpClient,
    n: &dyn Narrator,
) -> Result<(), OpsError> {
    design_checks(plan, n)?;
    if plan.simulated {
        return Ok(());
    }
    if let Some((prom, url)) = &plan.prom {
        return prometheus_preflight(prom, url, &plan.matchers, n).await;
    }
    for t in &plan.scrape {
        page_preflight(t, http, n).await?;
    }
    Ok(())
}

/// One scraped page: what it is and what is read from it; an engine that does not answer is
/// refused, a GPU exporter warned about.
async fn page_preflight(
    t: &ScrapeTarget,
    http: &HttpClient,
    n: &dyn Narrator,
) -> Result<(), OpsError> {
    let url = llmscope_collect::url::redact(&t.uri.to_string());
    let engine = t.name == "engine";
    match crate::exporter_page::fetch_page(http, &t.uri).await {
        Ok(page) => {
            let snap = snapshot(http, t, &url, &page).await;
            n.say(&format!(
                "{} at {url}: {}",
                t.name,
                crate::exporter_page::name_versions(&snap)
            ));
            let names: Vec<&str> = snap.families().iter().map(|f| f.name.as_str()).collect();
            name_what_is_read(&names, if engine { &ENGINE_NEEDS } else { &GPU_NEEDS }, n);
        }
        Err(e) if engine => {
            return Err(OpsError::Refused(format!(
                "the engine's metrics at {url} do not answer ({e}): without them the run is blind. Check --metrics-url (default TARGET/metrics) and that the server exposes /metrics"
            )));
        }
        Err(e) => n.warn(&format!(
            "GPU metrics at {url} do not answer ({e}): GPU-bound verdicts need them"
        )),
    }
    Ok(())
}

/// What the page exposes, with the engine's own version when it tells.
async fn snapshot(http: &HttpClient, t: &ScrapeTarget, url: &str, page: &[u8]) -> Snapshot {
    let (mut snap, _) = Snapshot::parse(url.to_owned(), page);
    crate::exporter_page::ask_version(http, &t.uri, &mut snap).await;
    snap
}

/// What the verdict cannot do without, from the engine and from the GPU exporter.
const ENGINE_NEEDS: [(Concept, &str); 3] = [
    (Concept::Running, "running"),
    (Concept::Waiting, "waiting"),
    (Concept::KvUsage, "KV-cache usage"),
];
const GPU_NEEDS: [(Concept, &str); 1] = [(Concept::GpuUtil, "GPU utilisation")];

/// Says which exposed name each needed signal will be read from (an older version's name is
/// said as such), and warns for a signal none of whose names is there: its query would return
/// nothing, silently.
fn name_what_is_read(names: &[&str], needs: &[(Concept, &str)], n: &dyn Narrator) {
    let mut read = Vec::new();
    for (concept, what) in needs {
        let candidates: Vec<_> = catalog::candidates(*concept).collect();
        match candidates.iter().find(|d| names.contains(&d.name)) {
            Some(d) => read.push(read_from(what, d, &candidates)),
            None => n.warn(&none_exposed(what, &candidates)),
        }
    }
    if !read.is_empty() {
        n.say(&format!("reads {}", read.join("; ")));
    }
}

/// A needed signal none of whose names is exposed.
fn none_exposed(what: &str, candidates: &[&catalog::MetricDef]) -> String {
    let names: Vec<&str> = candidates.iter().map(|d| d.name).collect();
    format!(
        "no {what} series (looked for {}): the verdicts that need it cannot be made",
        names.join(", ")
    )
}

/// `running vllm:num_requests_running`, saying so when the name is an older version's.
fn read_from(what: &str, d: &catalog::MetricDef, candidates: &[&catalog::MetricDef]) -> String {
    // Candidates are newest first: the first of the same engine is its current name.
    let newest = candidates
        .iter()
        .find(|c| c.engine == d.engine)
        .copied()
        .unwrap_or(d);
    if std::ptr::eq(newest, d) {
        format!("{what} {}", d.name)
    } else {
        format!(
            "{what} {} (an older name; newer versions expose {})",
            d.name, newest.name
        )
    }
}

/// What a set of names says about its exporters: `vllm >=0.26.0, dcgm-exporter >=4.5.0`.
fn detected(ds: &[detect::Detection]) -> String {
    if ds.is_empty() {
        return "no catalogued exporter recognised (not vLLM, SGLang, TGI or dcgm-exporter?)"
            .to_owned();
    }
    let named: Vec<String> = ds
        .iter()
        .map(|d| format!("{} {}", d.exporter, d.range()))
        .collect();
    format!("{} (detected)", named.join(", "))
}

/// Before loading: does Prometheus hold the engine's series (under these matchers)?
async fn prometheus_preflight(
    prom: &PromClient,
    url: &str,
    matchers: &[String],
    n: &dyn Narrator,
) -> Result<(), OpsError> {
    let selectors: Vec<String> = matchers
        .iter()
        .map(|m| format!("{{{}}}", matcher_body(m)))
        .collect();
    let names = held_names(prom, &selectors).await?;
    let found = detect::detect(names.iter().map(String::as_str));
    n.say(&format!("Prometheus {url}: {}", detected(&found)));
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    name_what_is_read(&all, &ENGINE_NEEDS, n);
    name_what_is_read(&all, &GPU_NEEDS, n);
    let engine = |d: &detect::Detection| {
        matches!(
            d.exporter,
            Exporter::Vllm | Exporter::Sglang | Exporter::Tgi
        )
    };
    if !found.iter().any(engine) {
        return Err(not_scraped(url, &selectors));
    }
    if !found.iter().any(|d| d.exporter == Exporter::DcgmExporter) {
        n.warn(&no_gpu_series(selectors.is_empty()));
    }
    Ok(())
}

/// The metric names Prometheus held in the last 10 minutes under `selectors`.
async fn held_names(prom: &PromClient, selectors: &[String]) -> Result<Vec<String>, OpsError> {
    let now = unix_now();
    let refs: Vec<&str> = selectors.iter().map(String::as_str).collect();
    let names = prom
        .label_values("__name__", &refs, Some((now - 600.0, now)))
        .await
        .map_err(|source| OpsError::Prom {
            context: "asking Prometheus which metric names it holds".to_owned(),
            source,
        })?;
    Ok(names.data)
}

fn not_scraped(url: &str, selectors: &[String]) -> OpsError {
    let matching = if selectors.is_empty() {
        String::new()
    } else {
        format!(" matching {}", selectors.join(" or "))
    };
    OpsError::Refused(format!(
        "Prometheus at {url} has no vLLM, SGLang or TGI series in the last 10 minutes{matching}: the engine is not scraped (kube-prometheus-stack selects only ServiceMonitors/PodMonitors labelled release: <helm release>) or the matchers exclude it"
    ))
}

fn no_gpu_series(unmatched: bool) -> String {
    format!(
        "no dcgm-exporter series in Prometheus{}: GPU utilisation is unknown, so GPU-bound verdicts cannot be made",
        if unmatched {
            ""
        } else {
            " under these matchers (GPU series carry the exporter's labels, or exported_namespace: add a matcher for them)"
        }
    )
}

/// The load design: a queue must be able to form.
fn design_checks(plan: &RunPlan, n: &dyn Narrator) -> Result<(), OpsError> {
    if plan.concurrency == 0 {
        return Err(OpsError::Refused(
            "--concurrency must be at least 1".to_owned(),
        ));
    }
    match plan.max_num_seqs {
        Some(m) if plan.rate.is_none() && plan.concurrency <= m => n.warn(&format!(
            "--concurrency {} does not exceed --max-num-seqs {m}: no queue can form, so a batch limit cannot show (use e.g. --concurrency {})",
            plan.concurrency,
            m * 2
        )),
        None => n.note(
            "--max-num-seqs of the server is unknown; pass it so the batch-limit check can compare the running plateau with it",
        ),
        _ => {}
    }
    Ok(())
}
