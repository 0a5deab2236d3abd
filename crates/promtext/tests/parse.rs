//! Integration tests for the parser: realistic fixtures, writer round-trips, every error kind with
//! its position, and property tests (arbitrary bytes never panic; generated pages round-trip).

use promtext::write::{FloatStyle, Writer};
use promtext::{
    ErrorKind, Event, Family, Format, MetricType, ParseError, ParseOptions, Parser, Sample, Suffix,
    parse_families, parse_families_with,
};
use proptest::prelude::*;
use std::collections::BTreeSet;

const VLLM: &str = include_str!("fixtures/vllm-0.26.prom");
const VLLM_NAMES: &str = include_str!("fixtures/vllm-0.26.0-metric-names.txt");
const DCGM: &str = include_str!("fixtures/dcgm-4.5.prom");

fn parse_ok(page: &str) -> Vec<Family<'_>> {
    let (families, errors) = parse_families(page.as_bytes());
    assert!(errors.is_empty(), "{errors:#?}");
    families
}

fn family<'f, 'a>(families: &'f [Family<'a>], name: &str) -> &'f Family<'a> {
    families
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no family {name}"))
}

fn labels_of(s: &Sample<'_>) -> Vec<(String, String)> {
    s.labels
        .iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect()
}

// ---- fixtures -------------------------------------------------------------------------------

#[test]
fn vllm_page_has_every_reference_name() {
    let families = parse_ok(VLLM);
    let seen: BTreeSet<String> = families
        .iter()
        .flat_map(|f| &f.samples)
        .map(|s| s.name.to_string())
        .collect();
    let missing: Vec<&str> = VLLM_NAMES.lines().filter(|n| !seen.contains(*n)).collect();
    assert!(missing.is_empty(), "missing: {missing:?}");
    assert_eq!(VLLM_NAMES.lines().count(), 92);
}

#[test]
fn vllm_iteration_tokens_total_is_a_histogram() {
    let families = parse_ok(VLLM);
    let hist = family(&families, "vllm:iteration_tokens_total");
    assert_eq!(hist.ty, MetricType::Histogram);
    assert_eq!(
        hist.help.unwrap(),
        "Histogram of number of tokens per engine_step."
    );
    // 2 engines x (13 buckets + +Inf + _count + _sum).
    assert_eq!(hist.samples.len(), 2 * 16);
    let suffixes: BTreeSet<_> = hist.samples.iter().map(|s| s.suffix.as_str()).collect();
    assert_eq!(suffixes, BTreeSet::from(["_bucket", "_count", "_sum"]));
    let inf = &hist.samples[13];
    assert_eq!(inf.labels.get("le").unwrap(), "+Inf");
    assert_eq!(labels_of(inf)[0], ("engine".into(), "0".into()));
    let created = family(&families, "vllm:iteration_tokens_total_created");
    assert_eq!((created.ty, created.samples.len()), (MetricType::Gauge, 2));
    assert_eq!(created.samples[0].value, 1747360800.123456);
}

#[test]
fn vllm_created_families_are_gauges_and_counters_keep_total() {
    let families = parse_ok(VLLM);
    let created: Vec<_> = families
        .iter()
        .filter(|f| f.name.raw().ends_with("_created"))
        .collect();
    assert_eq!(created.len(), VLLM.matches("_created gauge\n").count());
    assert!(created.len() > 30);
    assert!(
        created
            .iter()
            .all(|f| f.ty == MetricType::Gauge && !f.samples.is_empty())
    );
    let success = family(&families, "vllm:request_success_total");
    assert_eq!(success.ty, MetricType::Counter);
    let reasons: Vec<_> = success
        .samples
        .iter()
        .map(|s| s.labels.get("finished_reason").unwrap().to_string())
        .collect();
    assert_eq!(
        reasons[..5],
        ["stop", "length", "abort", "error", "repetition"]
    );
    assert!(success.samples.iter().all(|s| s.suffix == Suffix::None));
    let summary = family(&families, "http_request_size_bytes");
    assert_eq!(summary.ty, MetricType::Summary);
    let sfx: Vec<_> = summary.samples.iter().map(|s| s.suffix).collect();
    assert_eq!(
        sfx,
        [Suffix::Count, Suffix::Sum, Suffix::Count, Suffix::Sum]
    );
    let prompt = family(&families, "vllm:prompt_tokens_total");
    assert_eq!(prompt.samples[0].value_text, "826586.0");
}

#[test]
fn vllm_labels_are_sorted_and_borrowed() {
    let families = parse_ok(VLLM);
    let info = family(&families, "vllm:cache_config_info");
    let names: Vec<String> = info.samples[0]
        .labels
        .iter()
        .map(|l| l.name.to_string())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert_eq!(
        info.samples[1].labels.get("num_gpu_blocks").unwrap(),
        "26987"
    );
    let kv = family(&families, "vllm:kv_cache_usage_perc");
    assert_eq!(kv.samples[0].value, 0.4567164179104478);
    let raw = kv.samples[0].labels.raw();
    let page_range = VLLM.as_ptr() as usize..VLLM.as_ptr() as usize + VLLM.len();
    assert!(
        page_range.contains(&(raw.as_ptr() as usize)),
        "labels must borrow from the page"
    );
}

#[test]
fn dcgm_page_parses_with_template_label_order() {
    let families = parse_ok(DCGM);
    assert_eq!(families.len(), 25);
    assert!(families.iter().all(|f| f.samples.len() == 8));
    let power = family(&families, "DCGM_FI_DEV_POWER_USAGE");
    let order: Vec<String> = power.samples[0]
        .labels
        .iter()
        .map(|l| l.name.to_string())
        .collect();
    let want = [
        "gpu",
        "UUID",
        "pci_bus_id",
        "device",
        "modelName",
        "Hostname",
        "DCGM_FI_DRIVER_VERSION",
    ];
    assert_eq!(order[..7], want);
    assert_eq!(
        power.samples[0].labels.get("modelName").unwrap(),
        "NVIDIA H100 80GB HBM3"
    );
    assert_eq!(
        power.samples[0].value_text.split('.').nth(1).map(str::len),
        Some(6)
    );
    let energy = family(&families, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
    assert_eq!(energy.ty, MetricType::Counter);
    assert_eq!(energy.samples[0].int_value(), Some(48151623420));
}

#[test]
fn dcgm_blank_sentinel_parses_exactly() {
    let families = parse_ok(DCGM);
    let temp = family(&families, "DCGM_FI_DEV_MEMORY_TEMP");
    let gpu3 = temp
        .samples
        .iter()
        .find(|s| s.labels.get("gpu").unwrap() == "3")
        .unwrap();
    assert_eq!(gpu3.int_value(), Some(9223372036854775794));
    assert_eq!(gpu3.value, 9223372036854775794_i64 as f64);
    assert!(gpu3.int_value().unwrap() >= 0x7fff_ffff_ffff_fff0);
}

const OPENMETRICS: &str = r#"# HELP vllm:prompt_tokens Number of prefill tokens processed.
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="0"} 5052943.0 1747360860.5 # {trace_id="4bf92f"} 812.0 1747360859.25
vllm:prompt_tokens_created{engine="0"} 1747360800.123456
# TYPE request_latency_seconds histogram
# UNIT request_latency_seconds seconds
request_latency_seconds_bucket{le="0.5"} 3 # {trace_id="a\"b"} 0.25
request_latency_seconds_bucket{le="+Inf"} 4
request_latency_seconds_count 4
request_latency_seconds_sum 2.5
request_latency_seconds_created 1747360800
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.99"} 0.75
rpc_seconds_count 10
rpc_seconds_sum 3.5
# TYPE build info
build_info{version="0.26.0"} 1
# TYPE feature stateset
feature{feature="a"} 1
feature{feature="b"} 0
# TYPE queue_depth gaugehistogram
queue_depth_bucket{le="+Inf"} 7
queue_depth_gcount 7
queue_depth_gsum 12
# TYPE "my.dotted.metric" gauge
{"my.dotted.metric","zone.name"="eu"} 1.5
mystery 42
# EOF
"#;

#[test]
fn openmetrics_page_groups_every_type() {
    let families = parse_ok(OPENMETRICS);
    let shape: Vec<(String, MetricType, Vec<Suffix>)> = families
        .iter()
        .map(|f| {
            (
                f.name.to_string(),
                f.ty,
                f.samples.iter().map(|s| s.suffix).collect(),
            )
        })
        .collect();
    use Suffix as S;
    let want = [
        (
            "vllm:prompt_tokens",
            MetricType::Counter,
            vec![S::Total, S::Created],
        ),
        (
            "request_latency_seconds",
            MetricType::Histogram,
            vec![S::Bucket, S::Bucket, S::Count, S::Sum, S::Created],
        ),
        (
            "rpc_seconds",
            MetricType::Summary,
            vec![S::None, S::Count, S::Sum],
        ),
        ("build", MetricType::Info, vec![S::Info]),
        ("feature", MetricType::StateSet, vec![S::None, S::None]),
        (
            "queue_depth",
            MetricType::GaugeHistogram,
            vec![S::Bucket, S::GCount, S::GSum],
        ),
        ("my.dotted.metric", MetricType::Gauge, vec![S::None]),
        ("mystery", MetricType::Unknown, vec![S::None]),
    ];
    let want: Vec<(String, MetricType, Vec<Suffix>)> = want
        .into_iter()
        .map(|(n, t, s)| (n.to_string(), t, s))
        .collect();
    assert_eq!(shape, want);
    let counter = &families[0].samples[0];
    assert_eq!(
        counter.timestamp,
        Some(promtext::Timestamp::Seconds(1747360860.5))
    );
    let ex = counter.exemplar.expect("exemplar");
    assert_eq!((ex.value, ex.timestamp), (812.0, Some(1747360859.25)));
    assert_eq!(ex.labels.get("trace_id").unwrap(), "4bf92f");
    let hist = &families[1];
    assert_eq!(hist.unit, Some("seconds"));
    let ex = hist.samples[0].exemplar.expect("exemplar");
    assert_eq!(ex.labels.get("trace_id").unwrap().unescape(), "a\"b");
    assert_eq!(
        families[6].samples[0].labels.get("zone.name").unwrap(),
        "eu"
    );
}

// ---- writer round-trip ----------------------------------------------------------------------

fn same_value(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

#[test]
fn writer_output_reads_back_identically() {
    let values = [
        0.0,
        -0.0,
        1.0,
        0.1,
        5052943.0,
        1e6,
        1747360800.123456,
        1e-5,
        -2.5e-300,
        1.7976931348623157e308,
    ];
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
    for style in [FloatStyle::Python, FloatStyle::GoShortest] {
        let mut page = String::new();
        let mut w = Writer::new(&mut page, style);
        w.family(
            "x:y_total",
            "Help with \\ and\nnewline",
            MetricType::Counter,
        );
        for (i, v) in values.iter().chain(&specials).enumerate() {
            let idx = i.to_string();
            w.sample("x:y_total", &[("i", &idx), ("odd", "q\"x\\y\nz é")], *v);
        }
        let families = parse_ok(&page);
        assert_eq!(families.len(), 1);
        let fam = &families[0];
        assert_eq!(fam.help.unwrap().unescape(), "Help with \\ and\nnewline");
        for (i, (s, v)) in fam
            .samples
            .iter()
            .zip(values.iter().chain(&specials))
            .enumerate()
        {
            assert!(same_value(s.value, *v), "{style:?}: {} vs {v}", s.value);
            assert_eq!(
                labels_of(s),
                [
                    ("i".into(), i.to_string()),
                    ("odd".into(), "q\"x\\y\nz é".into())
                ]
            );
        }
    }
}

// ---- errors ---------------------------------------------------------------------------------

/// (page, expected kind, line, column). Every page continues with `after 2` on the next line.
const ERROR_CASES: &[(&[u8], ErrorKind, u32, u32)] = &[
    (b"before 1\nm{a=\"\xff\"} 1\n", ErrorKind::InvalidUtf8, 2, 6),
    (b"before 1\nbad-name 1\n", ErrorKind::InvalidName, 2, 4),
    (b"before 1\n{a=\"1\"} 1\n", ErrorKind::InvalidName, 2, 1),
    (
        b"before 1\nm{1a=\"x\"} 1\n",
        ErrorKind::InvalidLabelName,
        2,
        3,
    ),
    (
        b"before 1\nm{a=\"1\",a=\"2\"} 1\n",
        ErrorKind::DuplicateLabel,
        2,
        9,
    ),
    (
        b"before 1\nm{a=\"1} 1\n",
        ErrorKind::UnterminatedLabelValue,
        2,
        10,
    ),
    (
        b"before 1\n\"m 1\n",
        ErrorKind::UnterminatedQuotedName,
        2,
        5,
    ),
    (
        b"before 1\nm{a=\"1\"\n",
        ErrorKind::UnterminatedLabelSet,
        2,
        8,
    ),
    (
        // Prometheus's text lexer reads a value straight after `}`: `x` is that value.
        b"before 1\nm{a=\"1\"}x 1\n",
        ErrorKind::InvalidValue,
        2,
        9,
    ),
    (
        b"before 1\nm{a=\"1\"} 1 2 3\n",
        ErrorKind::UnexpectedCharacter,
        2,
        14,
    ),
    (b"before 1\nm 1 2 3\n", ErrorKind::UnexpectedCharacter, 2, 7),
    (b"before 1\nm{a=\"1\"}\n", ErrorKind::MissingValue, 2, 9),
    (b"before 1\nm 1,5\n", ErrorKind::InvalidValue, 2, 3),
    (b"before 1\nm 1 12:00\n", ErrorKind::InvalidTimestamp, 2, 5),
    (
        b"before 1\nm 1 # trace 1\n",
        ErrorKind::InvalidExemplar,
        2,
        7,
    ),
    (
        b"before 1\nm 1 # {a=\"b\"} x\n",
        ErrorKind::InvalidExemplar,
        2,
        15,
    ),
    (
        b"before 1\n# TYPE m gauges\n",
        ErrorKind::InvalidTypeWord,
        2,
        10,
    ),
    (
        b"# TYPE m gauge\n# TYPE m counter\n",
        ErrorKind::DuplicateType,
        2,
        8,
    ),
    (b"# HELP m x\n# HELP m y\n", ErrorKind::DuplicateHelp, 2, 8),
    (b"# UNIT m s\n# UNIT m s\n", ErrorKind::DuplicateUnit, 2, 8),
    (
        b"m_bucket{le=\"1\"} 1\n# TYPE m histogram\n",
        ErrorKind::TypeAfterSamples,
        2,
        8,
    ),
    (
        b"# TYPE h histogram\nh_bucket{a=\"1\"} 1\n",
        ErrorKind::BucketWithoutLe,
        2,
        1,
    ),
];

fn page_with_after(page: &[u8]) -> Vec<u8> {
    [page, b"after 2\n"].concat()
}

#[test]
fn every_error_kind_has_position_and_parsing_continues() {
    for (page, kind, line, column) in ERROR_CASES {
        let page = page_with_after(page);
        let opts = ParseOptions::lenient().with_format(Format::Text);
        let items: Vec<_> = Parser::new(&page, opts).collect();
        let errors: Vec<&ParseError> = items.iter().filter_map(|r| r.as_ref().err()).collect();
        let ctx = String::from_utf8_lossy(&page);
        assert_eq!(errors.len(), 1, "{ctx:?}: {errors:?}");
        let e = errors[0];
        assert_eq!(
            (e.kind, e.line, e.column),
            (*kind, *line, *column),
            "{ctx:?}"
        );
        assert!(!e.text.is_empty(), "{ctx:?}");
        let Some(Ok(Event::Sample(last))) = items.last() else {
            panic!("{ctx:?}: {items:?}")
        };
        assert_eq!(
            (last.name.raw(), last.value, last.line),
            ("after", 2.0, line + 1),
            "{ctx:?}"
        );
    }
}

#[test]
fn strict_mode_stops_at_each_error() {
    for (page, kind, _, _) in ERROR_CASES {
        let page = page_with_after(page);
        let opts = ParseOptions::strict().with_format(Format::Text);
        let items: Vec<_> = Parser::new(&page, opts).collect();
        let last = items.last().expect("at least the error");
        assert_eq!(last.as_ref().err().map(|e| e.kind), Some(*kind));
    }
}

#[test]
fn openmetrics_eof_errors() {
    let (families, errors) = parse_families(b"a 1\n# EOF\nb 2\nafter 3\n# EOF\n");
    let got: Vec<_> = errors.iter().map(|e| (e.kind, e.line, e.column)).collect();
    assert_eq!(got, [(ErrorKind::ContentAfterEof, 3, 1)]);
    assert_eq!(families.last().unwrap().name, "after");
    let opts = ParseOptions::lenient().with_format(Format::OpenMetrics);
    let (_, errors) = parse_families_with(b"a 1\n", opts);
    let got: Vec<_> = errors.iter().map(|e| (e.kind, e.line, e.column)).collect();
    assert_eq!(got, [(ErrorKind::MissingEof, 2, 1)]);
}

#[test]
fn long_lines_are_truncated_in_errors() {
    let page = format!("m{{a=\"{}\"}} oops\n", "x".repeat(1000));
    let (_, errors) = parse_families(page.as_bytes());
    assert_eq!(errors[0].kind, ErrorKind::InvalidValue);
    assert_eq!(errors[0].column, 1009);
    assert_eq!(errors[0].text.len(), promtext::error::MAX_LINE_TEXT);
}

// ---- oracle: the real Prometheus parser ---------------------------------------------------

/// Runs `promtool check metrics` (the Go text parser plus lints) on `page`. `None` if promtool is
/// not installed, which CI (CI=true) does not accept.
fn promtool(page: &[u8]) -> Option<(i32, String)> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert!(std::env::var_os("CI").is_none(), "CI must install promtool");
            return None;
        }
        Err(e) => panic!("promtool: {e}"),
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(page)
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool output");
    Some((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// promtool exits 1 on a parse error and 3 on lint findings only (e.g. `:` in vLLM names).
const PROMTOOL_PARSE_ERROR: i32 = 1;

#[test]
fn promtool_parses_what_we_parse() {
    let mut written = String::new();
    let mut w = Writer::new(&mut written, FloatStyle::Python);
    w.family("esc_total", "a \\ b\nc", MetricType::Counter);
    w.sample("esc_total", &[("v", "q\"x\\y\nz")], f64::NAN);
    for page in [VLLM, DCGM, written.as_str()] {
        let Some((code, stderr)) = promtool(page.as_bytes()) else {
            return;
        };
        assert_ne!(code, PROMTOOL_PARSE_ERROR, "{stderr}");
        assert!(parse_families(page.as_bytes()).1.is_empty());
    }
}

#[test]
fn promtool_rejects_the_same_lines_we_reject() {
    // Checks the Go text parser has no notion of; `# UNIT` is a plain comment in text 0.0.4.
    let ours_only = [
        ErrorKind::TypeAfterSamples,
        ErrorKind::BucketWithoutLe,
        ErrorKind::DuplicateUnit,
    ];
    for (page, kind, line, _) in ERROR_CASES.iter().filter(|c| !ours_only.contains(&c.1)) {
        let Some((code, stderr)) = promtool(&page_with_after(page)) else {
            return;
        };
        assert_eq!(code, PROMTOOL_PARSE_ERROR, "{kind:?}: {stderr}");
        assert!(
            stderr.contains(&format!("line {line}:")),
            "{kind:?}: {stderr}"
        );
    }
}

/// A NaN sample is never `==` to itself; the fuzz check must not call that a disagreement
/// between strict and lenient mode (it did, on any page with a NaN value).
#[test]
fn the_fuzz_check_accepts_nan_values() {
    promtext::fuzz_parse(b"a NaN\n");
    promtext::fuzz_parse(b"# TYPE a gauge\na{x=\"1\"} NaN 1700000000\n# EOF\n");
}

// ---- properties -----------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        promtext::fuzz_parse(&data);
    }

    #[test]
    fn mutated_real_pages_never_panic(
        start in 0usize..VLLM.len(),
        len in 0usize..3000,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..12),
    ) {
        let end = (start + len).min(VLLM.len());
        let mut data = VLLM.as_bytes()[start..end].to_vec();
        for (at, byte) in edits {
            if !data.is_empty() {
                let i = at.index(data.len());
                data[i] = byte;
            }
        }
        promtext::fuzz_parse(&data);
    }

    #[test]
    fn generated_pages_round_trip(spec in page_spec(), python in any::<bool>()) {
        let style = if python { FloatStyle::Python } else { FloatStyle::GoShortest };
        let mut page = String::new();
        write_page(&mut Writer::new(&mut page, style), &spec);
        let (families, errors) = parse_families(page.as_bytes());
        prop_assert!(errors.is_empty(), "{:?}\n{}", errors, page);
        check_round_trip(&spec, &families)?;
    }
}

/// A generated family: name, type (gauge, counter, untyped or histogram), help and series.
#[derive(Debug, Clone)]
struct FamilySpec {
    name: String,
    ty: MetricType,
    help: String,
    series: Vec<(Vec<(String, String)>, f64)>,
}

fn value_strategy() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        (-1_000_000i64..1_000_000).prop_map(|v| v as f64),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
    ]
}

fn page_spec() -> impl Strategy<Value = Vec<FamilySpec>> {
    let ty = prop::sample::select(vec![
        MetricType::Gauge,
        MetricType::Counter,
        MetricType::Untyped,
        MetricType::Histogram,
    ]);
    let labels = proptest::collection::vec(
        (
            "[a-zA-Z_][a-zA-Z0-9_]{0,6}",
            "[a-z \"\\\\\n\u{e9}\u{1F600}]{0,8}",
        ),
        0..4,
    );
    let series = proptest::collection::vec((labels, value_strategy()), 1..4);
    let fam = (
        "[a-zA-Z_:][a-zA-Z0-9_:]{0,10}",
        ty,
        "[ -~\n\\\\\u{e9}]{0,20}",
        series,
    );
    proptest::collection::vec(fam, 0..6).prop_map(|fams| {
        fams.into_iter()
            .enumerate()
            .map(|(i, (name, ty, help, series))| FamilySpec {
                name: format!("f{i}_{name}"),
                ty,
                help,
                series: series
                    .into_iter()
                    .map(|(l, v)| (dedup_labels(l), v))
                    .collect(),
            })
            .collect()
    })
}

/// Unique label names, none called `le` (the writer adds it to histogram buckets).
fn dedup_labels(labels: Vec<(String, String)>) -> Vec<(String, String)> {
    labels
        .into_iter()
        .enumerate()
        .map(|(i, (k, v))| (format!("l{i}_{k}"), v))
        .collect()
}

fn write_page(w: &mut Writer<'_>, spec: &[FamilySpec]) {
    for f in spec {
        w.family(&f.name, &f.help, f.ty);
        for (labels, value) in &f.series {
            let labels: Vec<(&str, &str)> = labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            if f.ty == MetricType::Histogram {
                let mut bucket = labels.clone();
                bucket.push(("le", "+Inf"));
                w.sample(&format!("{}_bucket", f.name), &bucket, 1.0);
                w.sample(&format!("{}_count", f.name), &labels, 1.0);
                w.sample(&format!("{}_sum", f.name), &labels, *value);
            } else {
                w.sample(&f.name, &labels, *value);
            }
        }
    }
}

fn check_round_trip(spec: &[FamilySpec], families: &[Family<'_>]) -> Result<(), TestCaseError> {
    prop_assert_eq!(spec.len(), families.len());
    for (want, got) in spec.iter().zip(families) {
        prop_assert!(got.name == want.name.as_str());
        prop_assert_eq!(got.ty, want.ty);
        prop_assert_eq!(got.help.map(|h| h.to_string()), Some(want.help.clone()));
        let per_series = if want.ty == MetricType::Histogram {
            3
        } else {
            1
        };
        prop_assert_eq!(got.samples.len(), want.series.len() * per_series);
        for (i, (labels, value)) in want.series.iter().enumerate() {
            let last = &got.samples[i * per_series + per_series - 1];
            prop_assert!(
                same_value(last.value, *value),
                "{} vs {}",
                last.value,
                value
            );
            prop_assert_eq!(&labels_of(last), labels);
        }
    }
    Ok(())
}
