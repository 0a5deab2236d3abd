//! Metric and label names that are not there: `unknown-metric` and `renamed-metric` findings,
//! with suggestions from the rename table first (the catalog's successors, misnomers and label
//! hints), then the nearest names the inventories do have.

use crate::finding::{Finding, Rule, Severity};
use crate::inventory::{Absence, Inventories, MetricInfo};
use llmscope_catalog::{
    self as catalog, EngineSpec, Exporter, Family, LABEL_HINTS, Status, Suffix, misnomer, resolve,
};

/// Names Prometheus makes up itself: they exist wherever something is scraped or alerts.
const SYNTHETIC: &[&str] = &[
    "up",
    "scrape_duration_seconds",
    "scrape_samples_scraped",
    "scrape_samples_post_metric_relabeling",
    "scrape_series_added",
    "ALERTS",
    "ALERTS_FOR_STATE",
];

pub fn is_synthetic(name: &str) -> bool {
    SYNTHETIC.contains(&name)
}

fn suffix_text(s: Suffix) -> &'static str {
    match s {
        Suffix::Bucket => "_bucket",
        Suffix::Sum => "_sum",
        Suffix::Count => "_count",
        Suffix::Created => "_created",
        Suffix::None => "",
    }
}

/// The inventories' version of `exporter` (the newest one, if several).
pub(crate) fn inventory_spec(inv: &Inventories, exporter: Exporter) -> Option<EngineSpec> {
    inv.engines()
        .into_iter()
        .filter(|e| e.exporter == exporter)
        .max_by_key(|e| e.version)
}

/// A name of a catalogued exporter that no inventory covers — checked against pages and
/// catalogs only (a Prometheus sees every scraped name: there an absent name is absent). Without
/// that exporter's inventory the name cannot be judged; a name the catalog knows as renamed or
/// removed is judged by the catalog instead (the caller's concern).
fn uncovered_exporter(inv: &Inventories, name: &str, exporter: Exporter) -> Option<Finding> {
    if !inv.all_partial() || inventory_spec(inv, exporter).is_some() {
        return None;
    }
    let owned =
        |n: &String| exporter.owns(n) || family_of(n).is_some_and(|f| f.exporter == exporter);
    if inv.names().iter().any(owned) {
        return None;
    }
    Some(
        Finding::new(
            Rule::UncoveredProducer,
            Severity::Warning,
            format!(
                "no inventory covers {exporter} ({}), so `{name}` is not checked",
                inv.sources()
            ),
        )
        .metric(name)
        .suggest(format!(
            "add --engine {exporter}@VERSION (or its page: --metrics-url, --snapshot), or check against the Prometheus that scrapes it (--prometheus)"
        )),
    )
}

/// A name whose producer nothing here knows: no catalog owns the name or its prefix, no known
/// producer claims it, no inventory has a name in its namespace or one it could be a misspelling
/// of, and no inventory sees every scraped name (only a Prometheus does: there an absent name is
/// absent). A name with a colon is a recording rule's (Prometheus reserves colons for them), which
/// must be defined somewhere checked — unless it is written `engine:metric` ([`engine_shaped`]).
fn unknown_producer(inv: &Inventories, name: &str) -> Option<Finding> {
    if family_of(name).is_some()
        || (name.contains(':') && !engine_shaped(name))
        || Exporter::of_name(name).is_some()
        || llmscope_catalog::producers::producer_of(name).is_some()
        || !inv.all_partial()
    {
        return None;
    }
    let namespace = llmscope_catalog::producers::namespace_of(name)?;
    if engine_namespace_misspelt(namespace) {
        return None;
    }
    let known = inv.names().iter().any(|n| n.starts_with(namespace));
    let misspelt =
        misnomer(name).is_some() || catalogued_near(name).is_some() || nearest(inv, name).is_some();
    if known || misspelt {
        return None;
    }
    Some(
        Finding::new(
            Rule::UncoveredProducer,
            Severity::Warning,
            format!(
                "no inventory covers the producer of `{namespace}…` names ({}), so `{name}` is not checked",
                inv.sources()
            ),
        )
        .metric(name)
        .suggest("check against the Prometheus that scrapes it (--prometheus), or add its exporter's page (--metrics-url, --snapshot)"),
    )
}

/// The finding for a name no inventory has: an error, or — where the inventories cannot judge
/// the name's producer — one `uncovered-producer` warning.
pub fn absent_name(inv: &Inventories, name: &str) -> Finding {
    if let Some(f) = unknown_producer(inv, name) {
        return f;
    }
    if let Some(m) = misnomer(name) {
        return Finding::new(
            Rule::UnknownMetric,
            Severity::Error,
            format!("`{name}` does not exist: it {}", m.note),
        )
        .metric(name)
        .suggest(format!("use {}", m.use_instead.join(" or ")));
    }
    let absence = match inv.absence(name) {
        Absence::LastPresent { ago_s } => format!(", and was last present {} ago", ago(ago_s)),
        Absence::NeverPresent => String::new(),
    };
    match resolve(name) {
        Some((family, suffix)) => catalogued_absent(inv, name, family, suffix, &absence),
        None => uncatalogued_absent(inv, name, &absence),
    }
}

/// A name no catalog has either: unknown, with the name it most likely misspells; or, for an
/// exporter no inventory covers, not judged.
fn uncatalogued_absent(inv: &Inventories, name: &str, absence: &str) -> Finding {
    if inv.all_partial() && recording_shaped(name) {
        return defined_elsewhere(inv, name);
    }
    if let Some(e) = Exporter::of_name(name)
        && (!e.catalogued_whole() || catalogued_near(name).is_none())
        && let Some(f) = uncovered_exporter(inv, name, e)
    {
        return f;
    }
    let finding = Finding::new(
        Rule::UnknownMetric,
        Severity::Error,
        format!(
            "no inventory has `{name}` ({}){absence}: the query returns nothing, with no error",
            inv.sources()
        ),
    )
    .metric(name);
    if let Some((family, sample)) = catalogued_near(name) {
        return finding.suggest(catalogued_hint(inv, family, &sample));
    }
    match nearest(inv, name) {
        Some(s) => finding.suggest(format!("did you mean {s}?")),
        None => finding,
    }
}

/// Whether `name` is written as a recording rule's output (`level:metric:operations`, Prometheus's
/// naming practice): a colon, and a first part that is no exporter's own namespace or a typo of
/// one (`vllm:` names are vLLM's; `vlm:num_requests_running` misspells one of them).
fn recording_shaped(name: &str) -> bool {
    let Some((level, _)) = name.split_once(':') else {
        return false;
    };
    Exporter::of_name(name).is_none()
        && !engine_shaped(name)
        && !level.is_empty()
        && Exporter::ALL.into_iter().all(|e| {
            let own = e.name().split('-').next().unwrap_or("");
            !(e.owns(&format!("{own}:x")) && same_producer(level, own))
        })
}

/// Whether `namespace` is a wholly catalogued engine's with the other separator (`vllm_` for
/// `vllm:`): vLLM exports no `vllm_…` name, so such a name is judged as a name of vLLM's, missing
/// or misspelt, not as a producer nothing knows.
fn engine_namespace_misspelt(namespace: &str) -> bool {
    let (word, sep) = namespace.split_at(namespace.len() - 1);
    let other = match sep {
        "_" => ':',
        ":" => '_',
        _ => return false,
    };
    Exporter::ALL
        .into_iter()
        .any(|e| e.catalogued_whole() && e.owns(&format!("{word}{other}x")))
}

/// Whether `name` is written as a serving engine writes its own names, `engine:metric` — one colon,
/// a first part of one word that no recording rule takes as its level (`lmdeploy:`,
/// `xinference:`, as vLLM and SGLang write theirs) — rather than `level:metric:operations`.
fn engine_shaped(name: &str) -> bool {
    /// Aggregation levels recording rules are named by: the labels they keep.
    const LEVELS: [&str; 14] = [
        "job",
        "instance",
        "cluster",
        "namespace",
        "node",
        "pod",
        "container",
        "service",
        "code",
        "handler",
        "method",
        "model",
        "tenant",
        "deployment",
    ];
    let mut parts = name.split(':');
    let (Some(level), Some(metric), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    !level.is_empty()
        && !metric.is_empty()
        && level
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && !LEVELS.contains(&level)
}

/// A recording rule's output that no file given defines, checked where no inventory evaluates
/// rules (a page or a catalog has no recorded names): it is not known to be missing, only
/// defined elsewhere — one info, not an error (`llmkube:inference:ttft_seconds:p95_5m`).
fn defined_elsewhere(inv: &Inventories, name: &str) -> Finding {
    Finding::new(
        Rule::UnknownMetric,
        Severity::Info,
        format!(
            "`{name}` is named like a recording rule's output and no file given records it: defined outside the files given, it cannot be checked against {}",
            inv.sources()
        ),
    )
    .metric(name)
    .suggest("give the rule file that records it as well, or check against a Prometheus that evaluates it (--prometheus)")
}

fn catalogued_absent(
    inv: &Inventories,
    name: &str,
    family: &Family,
    suffix: Suffix,
    absence: &str,
) -> Finding {
    let spec = inventory_spec(inv, family.exporter);
    if spec.is_none()
        && family.successor.is_none()
        && family.removed.is_none()
        && let Some(f) = uncovered_exporter(inv, name, family.exporter)
    {
        return f;
    }
    let status = spec.map(|s| s.status(family));
    let at = spec.map_or_else(
        || format!("no {} inventory is loaded", family.exporter),
        |s| format!("{} {}", s.exporter, s.version),
    );
    match status {
        Some(Status::Removed | Status::Hidden) | None
            if family.successor.is_some() || family.removed.is_some() =>
        {
            let message = format!(
                "`{name}` is not exposed ({at}){absence}: {} ({})",
                what_happened(family, status),
                family.lifetime()
            );
            renamed(name, family, suffix, message)
        }
        Some(Status::NotYet) => not_yet(inv, name, family, suffix, &at),
        _ => conditional_absent(inv, name, family, &at, absence),
    }
}

/// A name its version renamed or removed: an error, pointing at its successor.
fn renamed(name: &str, family: &Family, suffix: Suffix, message: String) -> Finding {
    let successor = family
        .successor
        .map(|s| format!("{s}{}", suffix_text(suffix)));
    let mut f = Finding::new(Rule::RenamedMetric, Severity::Error, message).metric(name);
    f.suggestion = Some(match &successor {
        Some(s) => with_note(format!("use {s}"), family.note),
        None if !family.note.is_empty() => family.note.to_owned(),
        None => "remove the query: the metric has no replacement".to_owned(),
    });
    f
}

/// A name newer than the inventory's version; its predecessor, if that version has one.
fn not_yet(inv: &Inventories, name: &str, family: &Family, suffix: Suffix, at: &str) -> Finding {
    let f = Finding::new(
        Rule::UnknownMetric,
        Severity::Error,
        format!(
            "`{name}` does not exist yet in {at}: it was added in {}",
            family.since
        ),
    )
    .metric(name);
    let older = catalog::families()
        .filter(|p| p.successor == Some(family.name))
        .map(|p| format!("{}{}", p.name, suffix_text(suffix)))
        .find(|p| inv.metric(p).is_some());
    match older {
        Some(p) => f.suggest(format!("this version exposes it as {p}")),
        None => f.suggest(format!(
            "upgrade to {} {} or later, or drop the query",
            family.exporter, family.since
        )),
    }
}

fn what_happened(family: &Family, status: Option<Status>) -> String {
    let renamed = match family.successor {
        Some(s) => format!("renamed to `{s}`"),
        None => "removed without a replacement".to_owned(),
    };
    match status {
        Some(Status::Hidden) => format!(
            "{renamed}; hidden from {} unless --show-hidden-metrics-for-version is set",
            family.hidden.map(|h| h.to_string()).unwrap_or_default()
        ),
        _ => renamed,
    }
}

fn conditional_absent(
    inv: &Inventories,
    name: &str,
    family: &Family,
    at: &str,
    absence: &str,
) -> Finding {
    let base = Finding::new(
        Rule::UnknownMetric,
        if family.condition.is_some() {
            Severity::Warning
        } else {
            Severity::Error
        },
        match family.condition {
            Some(c) => format!(
                "no inventory has `{name}` ({}){absence}: {at} exposes it only with {c}",
                inv.sources()
            ),
            None => format!("no inventory has `{name}` ({}){absence}", inv.sources()),
        },
    )
    .metric(name);
    match (family.condition, nearest(inv, name)) {
        (Some(c), _) => base.suggest(format!("enable {c}, or drop the query")),
        (None, Some(s)) => base.suggest(format!("did you mean {s}?")),
        (None, None) => base,
    }
}

fn with_note(s: String, note: &str) -> String {
    if note.is_empty() {
        s
    } else {
        format!("{s} ({note})")
    }
}

/// A name the inventory has but whose version deprecated it (or shows it only behind a flag).
pub fn deprecated_name(inv: &Inventories, name: &str) -> Option<Finding> {
    let (family, suffix) = resolve(name)?;
    let spec = inventory_spec(inv, family.exporter)?;
    let status = spec.status(family);
    if !matches!(status, Status::Deprecated | Status::Hidden) {
        return None;
    }
    let successor = family
        .successor
        .map(|s| format!("{s}{}", suffix_text(suffix)));
    let f = Finding::new(
        Rule::RenamedMetric,
        Severity::Warning,
        format!(
            "`{name}` is deprecated in {} {} ({}); queries on it go empty when it is removed",
            spec.exporter,
            spec.version,
            family.lifetime()
        ),
    )
    .metric(name);
    Some(match successor {
        Some(s) => f.suggest(with_note(format!("use {s}"), family.note)),
        None => f.suggest(family.note),
    })
}

/// `3d`, `5h`, `12m`.
pub fn ago(seconds: f64) -> String {
    let s = seconds.max(0.0);
    match s {
        s if s >= 86400.0 => format!("{:.0}d", s / 86400.0),
        s if s >= 3600.0 => format!("{:.0}h", s / 3600.0),
        s if s >= 60.0 => format!("{:.0}m", s / 60.0),
        s => format!("{s:.0}s"),
    }
}

/// The catalogued name (of any version, whatever the inventories hold) that `name` most likely
/// misspells: `vllm:spec_decode_accepted_tokens_total` → `vllm:spec_decode_num_accepted_tokens_total`.
/// Only names of `name`'s own exporter, close in spelling and sharing its meaning.
pub(super) fn catalogued_near(name: &str) -> Option<(&'static Family, String)> {
    let exporter = Exporter::of_name(name)?;
    catalog::families()
        .filter(|f| f.exporter == exporter)
        .flat_map(|f| f.sample_names().into_iter().map(move |s| (f, s)))
        .filter(|(_, s)| s != name && shares_meaning(name, s))
        .map(|(f, s)| (similarity(name, &s), f, s))
        .filter(|(score, _, _)| *score >= 0.75)
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.2.cmp(&a.2)))
        .map(|(_, f, s)| (f, s))
}

/// "did you mean X?", with what the catalog knows of X: behind which switch it is exposed, and
/// whether the inventory's version has it.
fn catalogued_hint(inv: &Inventories, family: &Family, sample: &str) -> String {
    let mut hint = format!("did you mean {sample}?");
    if let Some(c) = family.condition {
        hint.push_str(&format!(" ({} exposes it only when {c})", family.exporter));
    }
    if let Some(spec) = inventory_spec(inv, family.exporter) {
        match spec.status(family) {
            Status::NotYet => hint.push_str(&format!(
                "; {} {} does not have it yet (added in {})",
                spec.exporter, spec.version, family.since
            )),
            Status::Removed => hint.push_str(&format!(
                "; {} {} no longer has it ({})",
                spec.exporter,
                spec.version,
                family.lifetime()
            )),
            _ => {}
        }
    }
    hint
}

/// Words of a name that carry no meaning of their own (units, sample suffixes, prefixes).
const GENERIC_WORDS: &[&str] = &[
    "vllm", "sglang", "tgi", "total", "count", "sum", "bucket", "seconds", "second", "ms", "bytes",
    "num", "number", "tokens", "token", "requests", "request", "perc", "percent", "usage", "time",
    "per", "info", "created", "of", "by",
];

/// Whether `candidate` is about what `name` is about: some word of `name` that is not generic
/// (`spec`, `decode`, `accepted`, `running`, `cache`) is in `candidate` too. A name of generic
/// words only matches anything.
fn shares_meaning(name: &str, candidate: &str) -> bool {
    let words = |s: &str| -> Vec<String> {
        s.split([':', '_'])
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect()
    };
    let theirs = words(candidate);
    let mut distinctive = words(name)
        .into_iter()
        .filter(|w| !GENERIC_WORDS.contains(&w.as_str()))
        .peekable();
    distinctive.peek().is_none() || distinctive.any(|w| theirs.contains(&w))
}

/// Whether `candidate` comes from the producer `name` names in its first word (`kube`, `vllm`,
/// `DCGM`), or one a typo away: `neutree_node_ready` misspells no `kube_node_*` name, whatever
/// words they share, while `kub_node_role` may misspell `kube_node_role`.
fn same_producer(name: &str, candidate: &str) -> bool {
    let first = |s: &str| {
        s.split([':', '_'])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase()
    };
    let (a, b) = (first(name), first(candidate));
    let longest = a.chars().count().max(b.chars().count()).max(1) as f64;
    // At most two edits: `ollama` is three from `vllm`, and half as long again.
    let edits = levenshtein(&a, &b);
    edits <= 2 && 1.0 - edits as f64 / longest >= 0.5
}

/// Up to three inventory names close to `name`, as `a, b or c`.
pub fn nearest(inv: &Inventories, name: &str) -> Option<String> {
    let wants_suffix = ["_bucket", "_sum", "_count"]
        .iter()
        .any(|s| name.ends_with(s));
    let prefix = Exporter::of_name(name);
    let mut scored: Vec<(f64, String)> = inv
        .names()
        .into_iter()
        .filter(|n| !n.ends_with("_created"))
        .filter(|n| wants_suffix || !["_bucket", "_sum", "_count"].iter().any(|s| n.ends_with(s)))
        .filter(|n| prefix.is_none_or(|e| e.owns(n)))
        .filter(|n| same_producer(name, n))
        .filter(|n| shares_meaning(name, n))
        .map(|n| (similarity(name, &n), n))
        .filter(|(s, _)| *s >= 0.5)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let best = scored.first().map_or(0.0, |s| s.0);
    let top: Vec<String> = scored
        .into_iter()
        .take_while(|(s, _)| *s >= best - 0.1)
        .take(3)
        .map(|(_, n)| n)
        .collect();
    match top.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        [rest @ .., last] => Some(format!("{} or {last}", rest.join(", "))),
    }
}

/// 0..1: the better of edit-distance similarity and shared name words.
pub fn similarity(a: &str, b: &str) -> f64 {
    let (a, b) = strip_common_prefix(a, b);
    let words = |s: &str| -> std::collections::BTreeSet<String> {
        s.split([':', '_'])
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect()
    };
    let (wa, wb) = (words(a), words(b));
    let shared = wa.intersection(&wb).count() as f64;
    let jaccard = if wa.is_empty() && wb.is_empty() {
        1.0
    } else {
        shared / wa.union(&wb).count() as f64
    };
    let longest = a.chars().count().max(b.chars().count()).max(1) as f64;
    let edit = 1.0 - levenshtein(&a.to_ascii_lowercase(), &b.to_ascii_lowercase()) as f64 / longest;
    edit.max(jaccard)
}

fn strip_common_prefix<'a>(a: &'a str, b: &'a str) -> (&'a str, &'a str) {
    for p in [
        "vllm:",
        "sglang:",
        "DCGM_FI_DEV_",
        "DCGM_FI_PROF_",
        "kueue_",
        "kube_",
        "tgi_",
    ] {
        if let (Some(x), Some(y)) = (a.strip_prefix(p), b.strip_prefix(p)) {
            return (x, y);
        }
    }
    (a, b)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// What to use instead of a missing label `label` on a metric with `info`.
pub fn label_suggestion(
    name: &str,
    label: &str,
    info: Option<&MetricInfo>,
    have: &[&str],
) -> Option<String> {
    let exporter = resolve(name)
        .map(|(f, _)| f.exporter)
        .or_else(|| Exporter::of_name(name));
    if let Some(h) = LABEL_HINTS.iter().find(|h| {
        h.wrong == label
            && (Some(h.exporter) == exporter || info.is_some_and(|i| i.has_label(h.right)))
    }) {
        return Some(format!("use `{}`: {}", h.right, h.note));
    }
    let candidates = [
        format!("label_{label}"),
        format!("exported_{label}"),
        label.to_ascii_lowercase(),
    ];
    let close = have
        .iter()
        .find(|h| candidates.iter().any(|c| c == *h) || h.eq_ignore_ascii_case(label))
        .or_else(|| {
            have.iter()
                .find(|h| levenshtein(h, label) <= 2 && h.len() > 2)
        });
    match close {
        Some(h) => Some(format!("use `{h}`")),
        None if !have.is_empty() => Some(format!("its labels are: {}", have.join(", "))),
        None => None,
    }
}

/// The catalog family of a name, for its exporter (attribution) and unit.
pub fn family_of(name: &str) -> Option<&'static Family> {
    resolve(name)
        .map(|(f, _)| f)
        .or_else(|| catalog::family(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::engine::CatalogInventory;

    fn inv(spec: &str) -> Inventories {
        let mut i = Inventories::new();
        i.push(Box::new(CatalogInventory::new(spec.parse().unwrap())));
        i
    }

    #[test]
    fn removed_names_point_at_the_successor() {
        let f = absent_name(&inv("vllm@0.26"), "vllm:gpu_cache_usage_perc");
        assert_eq!(f.rule, Rule::RenamedMetric);
        assert!(
            f.suggestion
                .as_deref()
                .unwrap()
                .contains("vllm:kv_cache_usage_perc"),
            "{f:?}"
        );
        assert!(f.message.contains("0.12.0"), "{}", f.message);
        let f = absent_name(
            &inv("vllm@0.26"),
            "vllm:time_per_output_token_seconds_bucket",
        );
        assert!(
            f.suggestion
                .unwrap()
                .contains("vllm:inter_token_latency_seconds_bucket")
        );
    }

    #[test]
    fn hidden_names_say_so_and_new_names_say_when_they_came() {
        let f = absent_name(&inv("vllm@0.11"), "vllm:gpu_cache_usage_perc");
        assert!(f.message.contains("hidden"), "{}", f.message);
        let f = absent_name(&inv("vllm@0.10"), "vllm:inter_token_latency_seconds_bucket");
        assert_eq!(f.rule, Rule::UnknownMetric);
        assert!(f.message.contains("added in 0.11.0"), "{}", f.message);
        assert_eq!(
            f.suggestion.as_deref(),
            Some("this version exposes it as vllm:time_per_output_token_seconds_bucket")
        );
    }

    #[test]
    fn misnomers_and_typos() {
        let f = absent_name(&inv("kueue@0.19"), "kueue_quota_reserved_resources");
        assert_eq!(f.rule, Rule::UnknownMetric);
        assert!(
            f.suggestion
                .unwrap()
                .contains("kueue_local_queue_resource_reservation")
        );
        let f = absent_name(&inv("vllm@0.26"), "vllm:num_request_running");
        assert_eq!(
            f.suggestion.as_deref(),
            Some("did you mean vllm:num_requests_running?")
        );
        // Nothing near: no "did you mean" (a name in vLLM's namespace; a bare `zzz_qqq` is a
        // producer nothing knows, an uncovered-producer warning).
        let f = absent_name(&inv("vllm@0.26"), "vllm:zzz_qqq");
        assert_eq!(f.rule, Rule::UnknownMetric);
        assert!(f.suggestion.is_none());
        let f = absent_name(&inv("vllm@0.26"), "zzz_qqq");
        assert_eq!(f.rule, Rule::UncoveredProducer);
    }

    /// Against a live page without speculative decoding, a misspelt spec-decode name gets the
    /// real spec-decode name and the switch it needs, never a nearby name of another meaning.
    #[test]
    fn a_recording_rule_defined_elsewhere_is_an_info_where_no_prometheus_is_asked() {
        let vllm = inv("vllm@0.32");
        for name in [
            "llmkube:inference:ttft_seconds:p95_5m",
            "job:neutree_ready:sum",
        ] {
            let f = absent_name(&vllm, name);
            assert_eq!(
                (f.rule, f.severity),
                (Rule::UnknownMetric, Severity::Info),
                "{name}"
            );
            assert!(
                f.message.contains("defined outside the files given"),
                "{}",
                f.message
            );
        }
        // A serving engine no catalog knows writes `engine:metric`: its producer is uncovered.
        for name in [
            "lmdeploy:e2e_request_latency_seconds_bucket",
            "xinference:model_request_total",
        ] {
            let f = absent_name(&vllm, name);
            assert_eq!(
                (f.rule, f.severity),
                (Rule::UncoveredProducer, Severity::Warning),
                "{name}"
            );
        }
        // Ollama's exporter is no misspelt vLLM, though `ollama` and `vllm` share letters.
        let f = absent_name(&vllm, "ollama_load_time_seconds_bucket");
        assert_eq!(
            (f.rule, f.severity),
            (Rule::UncoveredProducer, Severity::Warning)
        );
        // vLLM's namespace with the wrong separator is vLLM's: a name it does not export.
        let f = absent_name(&vllm, "vllm_gpu_oom_total");
        assert_eq!((f.rule, f.severity), (Rule::UnknownMetric, Severity::Error));
        // So is one whose names are CamelCase words (HAMi's `HostGPUMemoryUsage`).
        let f = absent_name(&vllm, "HostGPUMemoryUsage");
        assert_eq!(
            (f.rule, f.severity),
            (Rule::UncoveredProducer, Severity::Warning)
        );
        // An exporter's own colon names, and typos of them, are judged as names.
        for name in [
            "vllm:num_request_running",
            "vlm:num_requests_running",
            "sglang:num_runing_reqs",
        ] {
            assert_eq!(absent_name(&vllm, name).severity, Severity::Error, "{name}");
        }
        // A Prometheus evaluates the rules: a recorded name it does not have is missing.
        let mut prom = Inventories::new();
        prom.push(Box::new(crate::inventory::prom::PromInventory::new(
            "http://p",
            "1h",
            [(
                "up".to_owned(),
                crate::inventory::prom::PromMetric::default(),
            )]
            .into(),
            None,
        )));
        let f = absent_name(&prom, "job:neutree_ready:sum");
        assert_eq!(f.severity, Severity::Error);
    }

    #[test]
    fn did_you_mean_never_crosses_producers() {
        // kube-state-metrics' names share words with many producers' (`node`, `pod`, `ready`).
        let ksm = inv("kube-state-metrics@2.20");
        assert_eq!(nearest(&ksm, "neutree_node_ready"), None);
        assert_eq!(nearest(&ksm, "karpenter_pods_state"), None);
        let typo = nearest(&ksm, "kub_pod_container_status_restarts_total").unwrap_or_default();
        assert!(
            typo.contains("kube_pod_container_status_restarts_total"),
            "{typo}"
        );
    }

    #[test]
    fn did_you_mean_never_crosses_meaning() {
        let page = "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 5\n# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 5\n";
        let mut live = Inventories::new();
        live.push(Box::new(
            crate::inventory::snapshot::Snapshot::parse("page", page.as_bytes()).0,
        ));
        for inv in [live, inv("vllm@0.26"), Inventories::new()] {
            let f = absent_name(&inv, "vllm:spec_decode_accepted_tokens_total");
            let s = f.suggestion.unwrap_or_default();
            assert!(
                s.starts_with("did you mean vllm:spec_decode_num_accepted_tokens_total?"),
                "{s}"
            );
            assert!(s.contains("speculative decoding"), "{s}");
            assert!(!s.contains("prompt_tokens"), "{s}");
        }
        // A misspelling with no catalogued twin gets no suggestion of another meaning either.
        let mut live = Inventories::new();
        live.push(Box::new(
            crate::inventory::snapshot::Snapshot::parse("page", page.as_bytes()).0,
        ));
        let f = absent_name(&live, "vllm:spec_decode_bonus_tokens_total");
        assert!(
            !f.suggestion.unwrap_or_default().contains("prompt_tokens"),
            "crossed meaning"
        );
    }

    #[test]
    fn deprecated_but_present() {
        let f =
            deprecated_name(&inv("vllm@0.11"), "vllm:time_per_output_token_seconds_sum").unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.suggestion
                .unwrap()
                .contains("vllm:inter_token_latency_seconds_sum")
        );
        assert!(deprecated_name(&inv("vllm@0.26"), "vllm:kv_cache_usage_perc").is_none());
    }

    #[test]
    fn label_hints_come_first() {
        let s = label_suggestion("kube_namespace_labels", "team", None, &["namespace"]).unwrap();
        assert!(s.starts_with("use `label_team`"), "{s}");
        let s = label_suggestion("foo", "Pod", None, &["pod", "x"]).unwrap();
        assert_eq!(s, "use `pod`");
        assert_eq!(ago(3.0 * 86400.0), "3d");
    }
}
