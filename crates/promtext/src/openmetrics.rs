//! What OpenMetrics 1.0 requires beyond what a line says on its own: the values, structure and
//! placement rules of its families, as its own parser test suite (prometheus/OpenMetrics
//! `tests/testdata/parsers`) holds a page to them. A page that breaks one is not valid
//! OpenMetrics. Prometheus's OpenMetrics parser (`model/textparse/openmetricsparse.go` and its
//! lexer) fails the scrape over the line forms it cannot lex — blank lines, stray blanks,
//! comments, malformed metadata, an exemplar written otherwise — and over a unit the name does not
//! end with: those are [`Violation::fatal`]. The rest it ingests. Each is said as a warning, never
//! a reason to skip data.
//!
//! [`violations`] checks the families a page parsed into and the page's lines: counters and
//! counts that are negative or NaN, a histogram without its `+Inf` bucket, with buckets out of
//! order or decreasing, a `_count` that is not the `+Inf` bucket, a `_sum` without its `_count`
//! (or beside negative buckets); summary quantiles outside 0..1; stateset and info values;
//! exemplars where only counters and buckets may carry them, or over 128 characters; a series
//! repeated with and without a timestamp, or going back in time; and the line forms: blank lines,
//! comments, metadata that is malformed, after the family's samples, or a unit its name does not
//! end with, a trailing comma in a label set.

use crate::MetricType;
use crate::family::Family;
use crate::sample::{Sample, Suffix};
use std::collections::{HashMap, HashSet};

/// One rule a page breaks: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// 1-based line.
    pub line: u32,
    pub why: String,
    /// Prometheus's OpenMetrics parser fails the whole scrape over it.
    pub fatal: bool,
}

/// The rules `page` (OpenMetrics text) and its `families` break, in line order.
pub fn violations(page: &[u8], families: &[Family<'_>]) -> Vec<Violation> {
    let mut out = lines(page);
    for f in families {
        family(f, &mut out);
    }
    out.sort_by_key(|v| v.line);
    out
}

fn say(out: &mut Vec<Violation>, line: u32, why: impl Into<String>) {
    out.push(Violation {
        line,
        why: why.into(),
        fatal: false,
    });
}

/// A violation Prometheus's OpenMetrics parser fails the scrape over.
fn refuse(out: &mut Vec<Violation>, line: u32, why: impl Into<String>) {
    out.push(Violation {
        line,
        why: why.into(),
        fatal: true,
    });
}

/// The line forms: blank lines, comments that are no metadata, malformed metadata, metadata
/// after its family's samples, a unit the name does not end with, blanks out of place, a
/// trailing comma; and the families' order: names that clash, a family's samples apart.
fn lines(page: &[u8]) -> Vec<Violation> {
    let mut out = Vec::new();
    let text = String::from_utf8_lossy(page);
    let mut sampled: HashSet<String> = HashSet::new();
    let mut page_state = Page::default();
    let count = text.split('\n').count();
    for (i, line) in text.split('\n').enumerate() {
        let n = i as u32 + 1;
        if line.is_empty() {
            if i + 1 != count {
                refuse(&mut out, n, "a blank line");
            }
            continue;
        }
        if line.starts_with(' ') || line.starts_with('\t') {
            refuse(&mut out, n, "a line starting with a blank");
            continue;
        }
        if let Some(meta) = line.strip_prefix("# ") {
            metadata(meta, n, &sampled, &mut out);
            page_state.declare(meta, n, &mut out);
        } else if line.starts_with('#') {
            refuse(
                &mut out,
                n,
                "a comment: OpenMetrics has none, only # HELP, # TYPE, # UNIT and # EOF",
            );
        } else {
            sample_form(line, n, &mut out);
            let name: String = line
                .chars()
                .take_while(|c| !matches!(c, '{' | ' '))
                .collect();
            page_state.sampled(&name, n, &mut out);
            sampled.insert(name);
        }
    }
    out
}

/// The blanks of a sample line outside its quoted strings: one between its parts, none at its
/// end, and an exemplar written ` # {labels} value`; no trailing comma in a label set.
fn sample_form(line: &str, n: u32, out: &mut Vec<Violation>) {
    let mut code = String::with_capacity(line.len());
    let mut quoted = false;
    let mut escaped = false;
    for c in line.chars() {
        if quoted {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                quoted = false;
                code.push('"');
            }
            continue;
        }
        if c == '"' {
            quoted = true;
        }
        code.push(c);
    }
    if code.contains(",}") {
        say(out, n, "a trailing comma in a label set");
    }
    // The text format's lexer reads blanks in and before a label set, and pairs without a
    // comma; OpenMetrics has neither.
    let sample = code.split('#').next().unwrap_or("");
    // From the character before the `{` (a blank there is one of the things said).
    let set = sample.find('{').map_or("", |a| {
        let before = sample[..a].char_indices().last().map_or(a, |(i, _)| i);
        &sample[before..]
    });
    let set = set.split('}').next().unwrap_or("");
    if [" {", "{ ", " =", "= ", ", ", " ,", "\" "]
        .iter()
        .any(|b| set.contains(b))
    {
        refuse(out, n, "blanks in a label set, or pairs without a comma");
    }
    if code.ends_with([' ', '\t']) || code.contains("  ") || code.contains('\t') {
        refuse(
            out,
            n,
            "blanks out of place: one space between a sample's parts, none at its end",
        );
    }
    if let Some(at) = code.find('#') {
        let exemplar = &code[at..];
        let closed = exemplar.find('}').map(|c| &exemplar[c + 1..]);
        let spaced = code[..at].ends_with(' ') && closed.is_none_or(|r| r.starts_with(' '));
        if !exemplar.starts_with("# {") || !spaced {
            refuse(
                out,
                n,
                "an exemplar is written ` # {labels} value [timestamp]`",
            );
        }
    }
}

/// What the page declared so far: each family's type, which family each sample line joined.
#[derive(Default)]
struct Page {
    types: HashMap<String, MetricType>,
    /// The family of the last sample line, and the families already left behind.
    current: Option<String>,
    done: HashSet<String>,
}

impl Page {
    fn declare(&mut self, meta: &str, n: u32, out: &mut Vec<Violation>) {
        let mut parts = meta.splitn(3, ' ');
        let (kind, name, rest) = (parts.next(), parts.next(), parts.next());
        let (Some(name), Some(rest)) = (name, rest) else {
            return;
        };
        match kind {
            Some("TYPE") => {
                let Some(ty) = MetricType::from_word(rest.trim().as_bytes()) else {
                    return;
                };
                // A name this family's samples take, or a family whose samples take this name.
                let mine = SUFFIXES
                    .iter()
                    .map(|x| format!("{name}{x}"))
                    .find(|n| n != name && self.types.contains_key(n) && generates(name, ty, n));
                let theirs = SUFFIXES
                    .iter()
                    .filter_map(|x| name.strip_suffix(x))
                    .find(|m| {
                        *m != name && self.types.get(*m).is_some_and(|t| generates(m, *t, name))
                    });
                if let Some(other) = mine.or(theirs.map(str::to_owned)) {
                    say(
                        out,
                        n,
                        format!(
                            "family `{name}` clashes with `{other}`: one's samples would be named as the other"
                        ),
                    );
                }
                self.types.insert(name.to_owned(), ty);
            }
            Some("UNIT")
                if matches!(
                    self.types.get(name),
                    Some(MetricType::Info | MetricType::StateSet)
                ) =>
            {
                say(
                    out,
                    n,
                    format!("`{name}` is an info or stateset: it has no unit"),
                );
            }
            _ => {}
        }
    }

    /// A sample line of `sample`: its family's samples must be together.
    fn sampled(&mut self, sample: &str, n: u32, out: &mut Vec<Violation>) {
        // The declared family the name is, or is with a suffix cut (the longest such name).
        let family = SUFFIXES
            .iter()
            .filter_map(|x| sample.strip_suffix(x))
            .filter(|f| self.types.contains_key(*f))
            .max_by_key(|f| f.len())
            .unwrap_or(sample)
            .to_owned();
        if self.current.as_deref() == Some(family.as_str()) {
            return;
        }
        if self.done.contains(&family) {
            say(
                out,
                n,
                format!("the samples of `{family}` are not together"),
            );
        }
        if let Some(left) = self.current.replace(family) {
            self.done.insert(left);
        }
    }
}

/// Whether family `name` of type `ty` has a sample named `other`.
fn generates(name: &str, ty: MetricType, other: &str) -> bool {
    other.strip_prefix(name).is_some_and(|rest| {
        Suffix::from_suffix(rest)
            .is_some_and(|s| s != Suffix::None && Suffix::allowed(ty).contains(&s))
    })
}

/// One `# HELP|TYPE|UNIT|EOF` line (after `# `).
fn metadata(meta: &str, n: u32, sampled: &HashSet<String>, out: &mut Vec<Violation>) {
    if meta == "EOF" {
        return;
    }
    let mut parts = meta.splitn(3, ' ');
    let (kind, name, rest) = (parts.next().unwrap_or(""), parts.next(), parts.next());
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return refuse(out, n, format!("`# {kind}` without a metric name"));
    };
    let name = name.trim_end_matches(['\t']);
    // A quoted name (`"go.gc_duration_seconds"`) is the text between the quotes.
    let name = name
        .strip_prefix('"')
        .and_then(|n| n.strip_suffix('"'))
        .unwrap_or(name);
    match kind {
        "HELP" | "UNIT" | "TYPE" if rest.is_none() => {
            refuse(out, n, format!("`# {kind} {name}` without its text"));
        }
        "TYPE" if rest.is_some_and(|r| r.ends_with([' ', '\t'])) => {
            refuse(out, n, "a blank after the type");
        }
        "TYPE" if rest == Some("untyped") => {
            refuse(
                out,
                n,
                "`untyped` is the text format's; OpenMetrics says `unknown`",
            );
        }
        "UNIT" if rest.is_some_and(|u| !u.is_empty() && !name.ends_with(&format!("_{u}"))) => {
            refuse(
                out,
                n,
                format!(
                    "the unit `{}` does not end the name `{name}`",
                    rest.unwrap_or("")
                ),
            );
        }
        "HELP" | "UNIT" | "TYPE" => {}
        _ => return refuse(out, n, format!("`# {kind}` is no OpenMetrics metadata")),
    }
    if SUFFIXES
        .iter()
        .any(|x| sampled.contains(&format!("{name}{x}")))
    {
        say(
            out,
            n,
            format!("`# {kind} {name}` after the family's samples"),
        );
    }
}

/// What a sample's name may add to its family's.
const SUFFIXES: [&str; 9] = {
    let mut out = [""; 9];
    let mut i = 0;
    while i < 9 {
        out[i] = Suffix::ALL[i].as_str();
        i += 1;
    }
    out
};

/// A value counters, counts and buckets may not take.
fn not_a_count(v: f64) -> bool {
    v.is_nan() || v < 0.0
}

fn family(f: &Family<'_>, out: &mut Vec<Violation>) {
    let name = f.name.unescape();
    for s in &f.samples {
        exemplar(f.ty, s, out);
        match (f.ty, s.suffix) {
            (MetricType::Counter, Suffix::Total)
            | (MetricType::Histogram | MetricType::GaugeHistogram, Suffix::Bucket)
            | (MetricType::Histogram | MetricType::Summary, Suffix::Count)
            | (MetricType::GaugeHistogram, Suffix::GCount)
                if not_a_count(s.value) =>
            {
                say(
                    out,
                    s.line,
                    format!(
                        "{}{} is {}: a count cannot be",
                        name,
                        s.suffix.as_str(),
                        s.value_text
                    ),
                );
            }
            (MetricType::Summary, Suffix::Sum) if not_a_count(s.value) => {
                say(
                    out,
                    s.line,
                    format!("{name}_sum is {}: a summary's sum cannot be", s.value_text),
                );
            }
            (MetricType::Summary, Suffix::None) => quantile(&name, s, out),
            (MetricType::StateSet, _) => {
                if s.labels.get(&name).is_none() {
                    say(
                        out,
                        s.line,
                        format!("a stateset sample without the label `{name}`"),
                    );
                }
                if s.value != 0.0 && s.value != 1.0 {
                    say(
                        out,
                        s.line,
                        format!("a stateset value is 0 or 1, not {}", s.value_text),
                    );
                }
            }
            (MetricType::Info, _) if s.value != 1.0 => {
                say(
                    out,
                    s.line,
                    format!("an info value is 1, not {}", s.value_text),
                );
            }
            _ => {}
        }
    }
    contiguous(f, out);
    if matches!(f.ty, MetricType::Histogram | MetricType::GaugeHistogram) {
        for point in points(f).values() {
            histogram(&name, f.ty, point, out);
        }
    }
    repeats(f, out);
}

fn quantile(name: &str, s: &Sample<'_>, out: &mut Vec<Violation>) {
    let q = s.labels.get("quantile").map(|q| q.unescape().into_owned());
    match q.as_deref().map(str::parse::<f64>) {
        None => say(
            out,
            s.line,
            format!("a sample of summary `{name}` without a quantile"),
        ),
        Some(Ok(q)) if (0.0..=1.0).contains(&q) => {
            if s.value < 0.0 {
                say(
                    out,
                    s.line,
                    format!("a quantile of `{name}` is {}", s.value_text),
                );
            }
        }
        Some(_) => say(
            out,
            s.line,
            format!("quantile `{}` is no number in 0..1", q.unwrap_or_default()),
        ),
    }
}

fn exemplar(ty: MetricType, s: &Sample<'_>, out: &mut Vec<Violation>) {
    let Some(e) = &s.exemplar else { return };
    let allowed = matches!(
        (ty, s.suffix),
        (MetricType::Counter, Suffix::Total)
            | (
                MetricType::Histogram | MetricType::GaugeHistogram,
                Suffix::Bucket
            )
    );
    if !allowed {
        say(
            out,
            s.line,
            "an exemplar on a sample that cannot carry one (only counters' _total and buckets)",
        );
    }
    let chars: usize = e
        .labels
        .iter()
        .map(|l| l.name.chars().count() + l.value.chars().count())
        .sum();
    if chars > 128 {
        say(
            out,
            s.line,
            format!("an exemplar's labels hold {chars} characters, over 128"),
        );
    }
}

/// A family's samples by metric point: the labels other than `le` and `quantile`.
fn points<'f, 'a>(f: &'f Family<'a>) -> HashMap<String, Vec<&'f Sample<'a>>> {
    let mut by: HashMap<String, Vec<&Sample<'_>>> = HashMap::new();
    for s in &f.samples {
        by.entry(point(s)).or_default().push(s);
    }
    by
}

/// The metric point a sample belongs to: its labels but `le` and `quantile`, as one key.
fn point(s: &Sample<'_>) -> String {
    s.labels
        .iter()
        .filter(|l| l.name != "le" && l.name != "quantile")
        .map(|l| format!("{}={}", l.name.raw(), l.value.raw()))
        .collect::<Vec<_>>()
        .join(",")
}

/// Checks a point's buckets (le in order, counts cumulative); the `+Inf` bucket's count, if it
/// has one, and whether any bucket is negative. `None` where a bucket's `le` is no number.
fn buckets(
    name: &str,
    point: &[&Sample<'_>],
    out: &mut Vec<Violation>,
) -> Option<(Option<f64>, bool)> {
    let mut last: Option<(f64, f64)> = None;
    let mut inf = None;
    let mut negative = false;
    for b in point.iter().filter(|s| s.suffix == Suffix::Bucket) {
        let le_text = b.labels.get("le").map(|l| l.unescape().into_owned());
        let le = match le_text.as_deref() {
            Some("+Inf") => f64::INFINITY,
            Some(t) => match t.parse::<f64>() {
                Ok(v) if v.is_finite() => v,
                _ => {
                    say(
                        out,
                        b.line,
                        format!(
                            "a bucket of `{name}` with le=\"{t}\", no number (+Inf is written +Inf)"
                        ),
                    );
                    return None;
                }
            },
            None => {
                say(out, b.line, format!("a bucket of `{name}` without le"));
                return None;
            }
        };
        negative |= le < 0.0;
        if let Some((prev_le, prev_n)) = last {
            if le <= prev_le {
                say(
                    out,
                    b.line,
                    format!("the buckets of `{name}` are not in increasing le"),
                );
            }
            if b.value < prev_n {
                say(
                    out,
                    b.line,
                    format!("the buckets of `{name}` decrease: they are cumulative"),
                );
            }
        }
        last = Some((le, b.value));
        if le.is_infinite() {
            inf = Some(b.value);
        }
    }
    Some((inf, negative))
}

fn histogram(name: &str, ty: MetricType, point: &[&Sample<'_>], out: &mut Vec<Violation>) {
    let line = point.first().map_or(0, |s| s.line);
    let (count, sum) = match ty {
        MetricType::GaugeHistogram => (Suffix::GCount, Suffix::GSum),
        _ => (Suffix::Count, Suffix::Sum),
    };
    let of = |x: Suffix| point.iter().find(|s| s.suffix == x);
    let Some((inf, negative)) = buckets(name, point, out) else {
        return;
    };
    let Some(inf) = inf else {
        return say(
            out,
            line,
            format!("histogram `{name}` without its +Inf bucket"),
        );
    };
    match (of(count), of(sum)) {
        (Some(c), _) if c.value != inf => say(
            out,
            c.line,
            format!(
                "{name}{} is {}, the +Inf bucket {inf}: they are one count",
                count.as_str(),
                c.value_text
            ),
        ),
        (Some(_), None) | (None, Some(_)) => say(
            out,
            line,
            format!(
                "`{name}` has one of {} and {} without the other",
                count.as_str(),
                sum.as_str()
            ),
        ),
        _ => {}
    }
    if let Some(s) = of(sum) {
        if s.value.is_nan() || (s.value < 0.0 && !negative) {
            say(
                out,
                s.line,
                format!("{name}{} is {}", sum.as_str(), s.value_text),
            );
        } else if negative && ty == MetricType::Histogram {
            say(
                out,
                s.line,
                format!("`{name}` has negative buckets, so no _sum (it is no counter)"),
            );
        }
    }
}

/// A metric point's samples (its labels but `le` and `quantile`) are together.
fn contiguous(f: &Family<'_>, out: &mut Vec<Violation>) {
    let mut done: HashSet<String> = HashSet::new();
    let mut current: Option<String> = None;
    for s in &f.samples {
        let k = point(s);
        if current.as_deref() == Some(k.as_str()) {
            continue;
        }
        if done.contains(&k) {
            let name = f.name.raw();
            return say(
                out,
                s.line,
                format!("the samples of one `{name}` point are not together"),
            );
        }
        if let Some(left) = current.replace(k) {
            done.insert(left);
        }
    }
}

/// A series repeated with and without a timestamp, or with one that goes back.
fn repeats(f: &Family<'_>, out: &mut Vec<Violation>) {
    let mut last: HashMap<(&str, &str), Option<f64>> = HashMap::new();
    for s in &f.samples {
        let at = s.timestamp.map(|t| t.as_seconds());
        if let Some(prev) = last.insert((s.name.raw(), s.labels.raw()), at) {
            match (prev, at) {
                (Some(a), Some(b)) if b < a => say(out, s.line, "a series goes back in time"),
                (Some(_), Some(_)) => {}
                _ => say(out, s.line, "a series repeated without a timestamp on each"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::parse_families;

    fn said(page: &str) -> Vec<String> {
        let (families, _) = parse_families(page.as_bytes());
        violations(page.as_bytes(), &families)
            .into_iter()
            .map(|v| format!("{}: {}", v.line, v.why))
            .collect()
    }

    #[test]
    fn a_clean_page_is_quiet() {
        let page = "# TYPE vllm:num_requests_running gauge\n# HELP vllm:num_requests_running Running.\nvllm:num_requests_running{engine=\"0\"} 3.0\n# TYPE vllm:e2e_request_latency_seconds histogram\nvllm:e2e_request_latency_seconds_bucket{le=\"0.3\"} 1.0\nvllm:e2e_request_latency_seconds_bucket{le=\"+Inf\"} 2.0\nvllm:e2e_request_latency_seconds_count 2.0\nvllm:e2e_request_latency_seconds_sum 0.9\n# EOF\n";
        assert!(said(page).is_empty(), "{:?}", said(page));
    }

    #[test]
    fn each_rule_names_its_line() {
        let page = "# TYPE a counter\na_total -1\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_count 1\nh_sum 1\n# EOF\n";
        let s = said(page);
        assert!(s.iter().any(|l| l.starts_with("2: a_total is -1")), "{s:?}");
        assert!(
            s.iter()
                .any(|l| l.starts_with("5: the buckets of `h` decrease")),
            "{s:?}"
        );
    }

    #[test]
    fn what_the_text_format_allows_in_a_label_set_is_said() {
        for line in [
            "a {b=\"1\"} 1",
            "a{b = \"1\"} 1",
            "a{b=\"1\" c=\"2\"} 1",
            "a{ b=\"1\"} 1",
        ] {
            let s = said(&format!("{line}\n# EOF\n"));
            assert!(
                s.iter().any(|l| l.contains("blanks in a label set")),
                "{line}: {s:?}"
            );
        }
        // A name character of several bytes before the braces.
        assert!(
            said("é{b=\"1\"} 1\n# EOF\n")
                .iter()
                .all(|l| !l.contains("blanks"))
        );
        let clean = "# TYPE a counter\na_total{b=\"x y\",c=\"2\"} 1 # {t=\"1\"} 1\n# EOF\n";
        assert!(said(clean).is_empty(), "{:?}", said(clean));
    }

    #[test]
    fn many_families_stay_linear() {
        const N: usize = 20_000;
        // 20,000 families, each sampled once and then again at the end: every repeat is said,
        // through maps (lists, and a clash check over every family, took time quadratic in the
        // families: 10,000 took 4.6 s, now 0.5 s in a debug build).
        let mut page = String::new();
        for i in 0..N {
            page += &format!("# TYPE f{i} gauge\nf{i} 1\n");
        }
        for i in 0..N {
            page += &format!("f{i} 2\n");
        }
        page += "# EOF\n";
        let s = said(&page);
        assert!(s.len() >= N, "{}", s.len());
    }
}
