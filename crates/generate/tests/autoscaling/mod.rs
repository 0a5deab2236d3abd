//! Integration tests of `llmscope_generate::autoscaling`: golden files (full-text diffs;
//! `UPDATE_GOLDEN=1` rewrites them) parsed back, the objects validated against the real schemas
//! in `tests/fixtures/schemas/` (KEDA's ScaledObject CRD, Kubernetes' `autoscaling/v2` OpenAPI
//! components; sources in its README) by the strict OpenAPI v3 validator in [`openapi`], the
//! validator shown to bite, and the PromQL parsed by the project's own parser.
//!
//! When the manifest validator of `deploy/validate/` is installed (`deploy/validate/install.sh`),
//! the objects also go through it: a second, independent oracle. Without it that test skips and
//! says so, except under `CI=true`, where it fails.

use super::{dir, golden, run};
use llmscope_check::promql::{label_matchers, metric_names, parse::parse};
use llmscope_generate::autoscaling::{
    self, ADAPTER_FILE, AdapterConfig, AutoscalingSpec, HPA_FILE, HorizontalPodAutoscaler,
    KEDA_FILE, ScaledObject,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The spec of the goldens: a Deployment measured at 24 requests in flight per replica.
fn spec() -> AutoscalingSpec {
    AutoscalingSpec {
        name: "vllm-llama-8b".into(),
        namespace: Some("llm".into()),
        prometheus: "http://prometheus-operated.monitoring.svc:9090".into(),
        running: "vllm:num_requests_running".into(),
        waiting: "vllm:num_requests_waiting".into(),
        matchers: vec![
            "namespace=\"llm\"".into(),
            "pod=~\"vllm-llama-8b-.*\"".into(),
        ],
        per_replica_in_flight: 24,
        min_replicas: 2,
        max_replicas: 12,
        provenance: vec![
            "knee: 24 requests in flight per replica, p95 TTFT <= 2s and p95 ITL <= 80ms".into(),
            "capacity search run 2026-11-30T14:05Z, runs r-17..r-23 on 1x H100 80GB".into(),
        ],
    }
}

/// The other corner: no namespace, no matchers, no provenance, the largest replica count.
fn bare_spec() -> AutoscalingSpec {
    AutoscalingSpec {
        name: "vllm".into(),
        namespace: None,
        prometheus: "https://prometheus.example:9090/prom".into(),
        running: "vllm:num_requests_running".into(),
        waiting: "vllm:num_requests_waiting".into(),
        matchers: vec![],
        per_replica_in_flight: 1,
        min_replicas: 1,
        max_replicas: i32::MAX as u32,
        provenance: vec![],
    }
}

/// The generated files of a spec, by name.
fn file<'a>(files: &'a [(&'static str, String)], name: &str) -> &'a str {
    let found = files.iter().find(|(n, _)| *n == name);
    &found.unwrap_or_else(|| panic!("no {name}")).1
}

fn yaml_value(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{e}:\n{text}"))
}

#[test]
fn the_files_match_their_goldens_and_parse_back() {
    let s = spec();
    let files = autoscaling::files(&s).unwrap();
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, [KEDA_FILE, HPA_FILE, ADAPTER_FILE]);
    for (name, text) in &files {
        golden(&format!("autoscaling-{name}"), text);
        assert!(text.contains("# measured: knee: 24 requests"), "{name}");
    }
    let keda: ScaledObject = serde_saphyr::from_str(file(&files, KEDA_FILE)).unwrap();
    assert_eq!(keda, autoscaling::scaled_object(&s));
    let hpa: HorizontalPodAutoscaler = serde_saphyr::from_str(file(&files, HPA_FILE)).unwrap();
    assert_eq!(hpa, autoscaling::hpa(&s));
    let adapter: AdapterConfig = serde_saphyr::from_str(file(&files, ADAPTER_FILE)).unwrap();
    assert_eq!(adapter, autoscaling::adapter_rules(&s));
    let measured = &keda.metadata.annotations[autoscaling::MEASURED_ANNOTATION];
    assert_eq!(measured.lines().count(), 2, "{measured}");
}

#[test]
fn the_hpa_asks_for_the_metric_the_adapter_serves_at_the_measured_target() {
    let s = spec();
    let (hpa, adapter) = (autoscaling::hpa(&s), autoscaling::adapter_rules(&s));
    let rule = &adapter.external_rules[0];
    let external = &hpa.spec.metrics[0].external;
    assert_eq!(external.metric.name, rule.name.as_);
    assert_eq!(rule.name.as_, "vllm_llama_8b_requests_in_flight");
    assert_eq!(rule.name.matches, "^vllm:num_requests_running$");
    assert_eq!(
        (
            external.target.type_.as_str(),
            external.target.average_value.as_str()
        ),
        ("AverageValue", "24")
    );
    let keda = autoscaling::scaled_object(&s);
    let trigger = &keda.spec.triggers[0];
    assert_eq!(
        (
            trigger.metric_type.as_str(),
            trigger.metadata.threshold.as_str()
        ),
        ("AverageValue", "24")
    );
    // The adapter queries what KEDA queries, plus the HPA's namespace.
    let without = rule.metrics_query.replace(", <<.LabelMatchers>>", "");
    assert_eq!(without, trigger.metadata.query);
    assert_eq!(
        (hpa.spec.min_replicas, keda.spec.max_replica_count),
        (2, 12)
    );
}

// ------------------------------------------------------------------ PromQL

/// What prometheus-adapter puts in `<<.LabelMatchers>>` for an HPA in namespace `llm`.
const SAMPLE_MATCHERS: &str = "namespace=\"llm\"";

fn assert_parses_to_the_gauges(query: &str) {
    parse(query).unwrap_or_else(|e| panic!("{query}: {e}"));
    assert_eq!(
        metric_names(query),
        ["vllm:num_requests_running", "vllm:num_requests_waiting"],
        "{query}"
    );
}

#[test]
fn the_queries_parse_with_the_project_parser() {
    for s in [spec(), bare_spec()] {
        let keda = autoscaling::scaled_object(&s);
        assert_parses_to_the_gauges(&keda.spec.triggers[0].metadata.query);
        let rule = &autoscaling::adapter_rules(&s).external_rules[0];
        let query = rule
            .metrics_query
            .replace("<<.LabelMatchers>>", SAMPLE_MATCHERS);
        assert_parses_to_the_gauges(&query);
        assert!(label_matchers(&query).contains(&("namespace".into(), "llm".into())));
        parse(&rule.series_query).unwrap_or_else(|e| panic!("{}: {e}", rule.series_query));
        assert_eq!(
            metric_names(&rule.series_query),
            ["vllm:num_requests_running"]
        );
    }
    let query = autoscaling::in_flight_query(&spec());
    let pods = ("pod".to_owned(), "vllm-llama-8b-.*".to_owned());
    assert_eq!(
        label_matchers(&query)
            .iter()
            .filter(|m| **m == pods)
            .count(),
        2
    );
}

// ------------------------------------------------------------------ the schemas

fn schemas(name: &str) -> PathBuf {
    dir("fixtures/schemas").join(name)
}

/// KEDA's ScaledObject CRD.
fn keda_crd() -> Value {
    let text = std::fs::read_to_string(schemas("keda.sh_scaledobjects.yaml")).unwrap();
    yaml_value(&text)
}

/// Kubernetes' `autoscaling/v2` OpenAPI document (its HPA component schemas).
fn kubernetes() -> Value {
    let text = std::fs::read_to_string(schemas("autoscaling-v2-hpa-components.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

const HPA_SCHEMA: &str = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler";

/// The errors of a ScaledObject against the CRD (and its metadata against ObjectMeta).
fn scaled_object_errors(doc: &Value) -> Vec<String> {
    let report = openapi::check_custom(&keda_crd(), "v1alpha1", &kubernetes(), doc);
    assert!(report.unevaluated.is_empty(), "{:?}", report.unevaluated);
    report.errors
}

/// The errors of an HPA against Kubernetes' schema.
fn hpa_errors(doc: &Value) -> Vec<String> {
    let report = openapi::check_builtin(&kubernetes(), HPA_SCHEMA, doc);
    assert!(report.unevaluated.is_empty(), "{:?}", report.unevaluated);
    report.errors
}

#[test]
fn the_objects_are_valid_against_the_real_schemas() {
    for s in [spec(), bare_spec()] {
        let files = autoscaling::files(&s).unwrap();
        let keda = yaml_value(file(&files, KEDA_FILE));
        assert_eq!(
            scaled_object_errors(&keda),
            Vec::<String>::new(),
            "{keda:#}"
        );
        let hpa = yaml_value(file(&files, HPA_FILE));
        assert_eq!(hpa_errors(&hpa), Vec::<String>::new(), "{hpa:#}");
        let quantity = &hpa["spec"]["metrics"][0]["external"]["target"]["averageValue"];
        let q = quantity.as_str().unwrap_or_default();
        assert!(
            !q.is_empty() && q.bytes().all(|b| b.is_ascii_digit()),
            "{q}"
        );
    }
}

/// `doc` with `edit` applied, and the errors `check` finds in it, which must name `expect`.
fn bites(
    doc: &Value,
    edit: impl FnOnce(&mut Value),
    check: fn(&Value) -> Vec<String>,
    expect: &str,
) {
    let mut broken = doc.clone();
    edit(&mut broken);
    let errors = check(&broken);
    assert!(
        errors.iter().any(|e| e.contains(expect)),
        "expected an error naming `{expect}`, got {errors:?}"
    );
}

fn remove(v: &mut Value, key: &str) {
    v.as_object_mut().unwrap().remove(key);
}

fn rename(v: &mut Value, from: &str, to: &str) {
    let map = v.as_object_mut().unwrap();
    let moved = map.remove(from).unwrap();
    map.insert(to.to_owned(), moved);
}

#[test]
fn the_validator_rejects_what_the_api_server_would_in_a_scaled_object() {
    let doc = serde_json::to_value(autoscaling::scaled_object(&spec())).unwrap();
    let check = scaled_object_errors;
    bites(
        &doc,
        |d| rename(&mut d["spec"], "maxReplicaCount", "maxReplicasCount"),
        check,
        "spec: unknown field `maxReplicasCount`",
    );
    bites(
        &doc,
        |d| rename(&mut d["metadata"], "annotations", "annotation"),
        check,
        "metadata: unknown field `annotation`",
    );
    bites(
        &doc,
        |d| remove(&mut d["spec"], "scaleTargetRef"),
        check,
        "spec: missing required field `scaleTargetRef`",
    );
    bites(
        &doc,
        |d| remove(&mut d["spec"]["triggers"][0], "type"),
        check,
        "spec.triggers[0]: missing required field `type`",
    );
    // KEDA's trigger metadata is a map of strings: an unquoted threshold is refused.
    bites(
        &doc,
        |d| d["spec"]["triggers"][0]["metadata"]["threshold"] = json!(24),
        check,
        "spec.triggers[0].metadata.threshold: expected string, found 24",
    );
    bites(
        &doc,
        |d| d["spec"]["maxReplicaCount"] = json!(2_147_483_648u64),
        check,
        "spec.maxReplicaCount: 2147483648 is out of the int32 range",
    );
    bites(
        &doc,
        |d| d["apiVersion"] = json!("keda.sh/v1"),
        check,
        "apiVersion",
    );
    bites(
        &doc,
        |d| d["metadata"]["name"] = json!("Vllm_Llama"),
        check,
        "metadata.name",
    );
}

#[test]
fn the_validator_rejects_what_the_api_server_would_in_an_hpa() {
    let doc = serde_json::to_value(autoscaling::hpa(&spec())).unwrap();
    let check = hpa_errors;
    bites(
        &doc,
        |d| remove(&mut d["spec"], "maxReplicas"),
        check,
        "spec: missing required field `maxReplicas`",
    );
    bites(
        &doc,
        |d| d["spec"]["minReplicas"] = json!("2"),
        check,
        "spec.minReplicas: expected integer, found \"2\"",
    );
    bites(
        &doc,
        |d| d["spec"]["maxReplicas"] = json!(-2_147_483_649i64),
        check,
        "spec.maxReplicas: -2147483649 is out of the int32 range",
    );
    // Strictness reaches through `allOf: [$ref]` wrappers.
    bites(
        &doc,
        |d| {
            rename(
                &mut d["spec"]["metrics"][0]["external"]["metric"],
                "name",
                "nmae",
            )
        },
        check,
        "spec.metrics[0].external.metric: unknown field `nmae`",
    );
    bites(
        &doc,
        |d| d["spec"]["metrics"][0]["external"]["target"]["averageValue"] = json!(true),
        check,
        "averageValue: matches none of the 2 `oneOf` schemas",
    );
    bites(
        &doc,
        |d| d["spec"]["behavior"]["scaleDown"]["policies"][0]["periodSeconds"] = json!(1.5),
        check,
        "periodSeconds: expected integer, found 1.5",
    );
    bites(
        &doc,
        |d| d["kind"] = json!("HorizontalPodAutoscalr"),
        check,
        "kind",
    );
}

#[test]
fn the_validator_implements_each_keyword_it_meets() {
    let schema = json!({
        "type": "object",
        "required": ["mode"],
        "properties": {
            "mode": {"type": "string", "enum": ["a", "b"]},
            "count": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 5},
            "size": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "map": {"type": "object", "additionalProperties": {"type": "boolean"}},
            "list": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/item"}},
            "maybe": {"type": "string", "nullable": true},
            "rule": {"type": "object", "x-kubernetes-validations": [{"rule": "self.x > 0"}]}
        },
        "$defs": {"item": {"type": "object", "properties": {"x": {"type": "number"}}}}
    });
    let errors = |v: Value| openapi::check(&schema, &schema, &v).errors;
    let ok = json!({"mode": "a", "count": 3, "size": "1Gi", "free": {"any": {"thing": 1}},
        "map": {"k": true}, "list": [{"x": 1.5}], "maybe": null});
    assert_eq!(errors(ok), Vec::<String>::new());
    let cases = [
        (
            json!({"mode": "c"}),
            "mode: \"c\" is not one of [\"a\",\"b\"]",
        ),
        (
            json!({"mode": "a", "count": 0}),
            "count: 0 is below the minimum 1",
        ),
        (
            json!({"mode": "a", "count": 6}),
            "count: 6 is above the maximum 5",
        ),
        (
            json!({"mode": "a", "size": 1.5}),
            "size: expected an integer or a string",
        ),
        (
            json!({"mode": "a", "map": {"k": 1}}),
            "map.k: expected boolean",
        ),
        (
            json!({"mode": "a", "list": []}),
            "list: 0 items, fewer than 1",
        ),
        (
            json!({"mode": "a", "list": [{"y": 1}]}),
            "list[0]: unknown field `y`",
        ),
        (json!({"count": 1}), "(root): missing required field `mode`"),
    ];
    for (value, expect) in cases {
        let got = errors(value.clone());
        assert!(got.iter().any(|e| e.contains(expect)), "{value}: {got:?}");
    }
    let cel = openapi::check(&schema, &schema, &json!({"mode": "a", "rule": {}}));
    assert_eq!(cel.unevaluated, ["rule: self.x > 0"]);
}

#[test]
fn the_validator_refuses_a_schema_it_cannot_read() {
    let schema = json!({"type": "string", "pattern": "^a$"});
    let got = openapi::check(&schema, &schema, &json!("a")).errors;
    assert!(
        got.iter()
            .any(|e| e.contains("does not implement `pattern`")),
        "{got:?}"
    );
    let schema = json!({"$ref": "#/components/schemas/missing"});
    let got = openapi::check(&schema, &schema, &json!(1)).errors;
    assert!(got.iter().any(|e| e.contains("unresolved $ref")), "{got:?}");
}

// ------------------------------------------------------------------ the second oracle

/// The venv's python of `deploy/validate/install.sh`, or `None` (and a message).
fn manifest_validator() -> Option<PathBuf> {
    let home = std::env::var_os("LLMSCOPE_K8S_VALIDATE_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
            Some(cache.join("llmscope/kubernetes-validate-1.37.0"))
        })?;
    let python = home.join("venv/bin/python");
    if python.is_file() {
        return Some(python);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI needs the manifest validator at {}: run deploy/validate/install.sh",
        home.display()
    );
    eprintln!(
        "skipped: no manifest validator at {} (run deploy/validate/install.sh)",
        home.display()
    );
    None
}

/// Runs `deploy/validate/validate.py` (KEDA's CRD given) on `files`: (success, its report).
fn validate_py(python: &Path, files: &[PathBuf]) -> (bool, String) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cmd = Command::new(python);
    cmd.arg(repo.join("deploy/validate/validate.py"))
        .arg("--crd")
        .arg(schemas("keda.sh_scaledobjects.yaml"))
        .args(files);
    run(&mut cmd)
}

#[test]
fn the_manifest_validator_of_deploy_agrees() {
    let Some(python) = manifest_validator() else {
        return;
    };
    let out = std::env::temp_dir().join(format!("llmscope-autoscaling-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let files = autoscaling::files(&spec()).unwrap();
    let paths: Vec<PathBuf> = [KEDA_FILE, HPA_FILE]
        .iter()
        .map(|name| {
            let path = out.join(name);
            std::fs::write(&path, file(&files, name)).unwrap();
            path
        })
        .collect();
    let (ok, report) = validate_py(&python, &paths);
    assert!(ok, "{report}");
    assert!(
        report.contains("ScaledObject/vllm-llama-8b (against its CRD, strict)"),
        "{report}"
    );
    assert!(
        report.contains("HorizontalPodAutoscaler/vllm-llama-8b (against Kubernetes"),
        "{report}"
    );
    let misspelt = out.join("misspelt.yaml");
    let text = file(&files, KEDA_FILE).replace("maxReplicaCount:", "maxReplicasCount:");
    std::fs::write(&misspelt, text).unwrap();
    let (ok, report) = validate_py(&python, &[misspelt]);
    assert!(
        !ok && report.contains("'maxReplicasCount' was unexpected"),
        "{report}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

// ------------------------------------------------------------------ the validator

/// A structural validator for OpenAPI v3 schemas, strict the way the Kubernetes API server is
/// under `fieldValidation=Strict`: an object schema accepts only the fields it lists, unless it
/// has `additionalProperties` or `x-kubernetes-preserve-unknown-fields`. It implements `type`,
/// `format` (`int32`, `int64` ranges), `properties`, `required`, `additionalProperties`, `items`,
/// `enum`, `minimum`, `maximum`, `minItems`, `maxItems`, `minLength`, `maxLength`, `nullable`,
/// `$ref` (JSON pointers into the document), `allOf`, `anyOf`, `oneOf`,
/// `x-kubernetes-int-or-string` and `x-kubernetes-preserve-unknown-fields`; CEL rules
/// (`x-kubernetes-validations`) are listed as unevaluated, never passed silently. Any other
/// keyword is an error, so a newer schema cannot be half-read.
mod openapi {
    use serde_json::{Map, Value};

    /// Keywords that do not constrain a value.
    const INERT: [&str; 10] = [
        "description",
        "default",
        "example",
        "$defs",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-patch-merge-key",
        "x-kubernetes-patch-strategy",
        "x-kubernetes-group-version-kind",
    ];
    /// Keywords this validator checks.
    const CHECKED: [&str; 21] = [
        "type",
        "format",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "nullable",
        "$ref",
        "allOf",
        "anyOf",
        "oneOf",
        "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-validations",
    ];

    /// What a validation found.
    #[derive(Debug, Default)]
    pub struct Report {
        /// `path: message`, the path dotted from the document's root (`(root)` for it).
        pub errors: Vec<String>,
        /// `path: rule` of each CEL rule met and not evaluated.
        pub unevaluated: Vec<String>,
    }

    /// Validates `value` against `schema`, whose `$ref`s point into `root`.
    pub fn check(root: &Value, schema: &Value, value: &Value) -> Report {
        let mut v = Validator {
            root,
            report: Report::default(),
        };
        v.check(schema, value, "");
        v.report
    }

    /// A custom resource: `apiVersion` and `kind` as the CRD names them, `metadata` against
    /// Kubernetes' ObjectMeta (as the API server checks it), the rest against the served
    /// version's `openAPIV3Schema`.
    pub fn check_custom(crd: &Value, version: &str, kubernetes: &Value, doc: &Value) -> Report {
        let spec = &crd["spec"];
        let served = spec["versions"].as_array().into_iter().flatten();
        let found = served.clone().find(|v| v["name"] == version);
        let schema = &found.expect("the CRD serves the version")["schema"]["openAPIV3Schema"];
        let api_version = format!("{}/{version}", spec["group"].as_str().unwrap_or_default());
        let kind = spec["names"]["kind"].as_str().unwrap_or_default();
        let mut body = doc.clone();
        let metadata = body.as_object_mut().and_then(|m| m.remove("metadata"));
        let mut report = check(crd, schema, &body);
        identity(&mut report, doc, &api_version, kind);
        object_meta(&mut report, kubernetes, metadata.as_ref());
        report
    }

    /// A built-in kind: the component schema `name` of the Kubernetes OpenAPI document, whose
    /// `x-kubernetes-group-version-kind` gives `apiVersion` and `kind`.
    pub fn check_builtin(kubernetes: &Value, name: &str, doc: &Value) -> Report {
        let schema = &kubernetes["components"]["schemas"][name];
        let gvk = &schema["x-kubernetes-group-version-kind"][0];
        let group = gvk["group"].as_str().unwrap_or_default();
        let version = gvk["version"].as_str().unwrap_or_default();
        let api_version = match group {
            "" => version.to_owned(),
            g => format!("{g}/{version}"),
        };
        let mut report = check(kubernetes, schema, doc);
        identity(
            &mut report,
            doc,
            &api_version,
            gvk["kind"].as_str().unwrap_or_default(),
        );
        let name = doc["metadata"]["name"].as_str();
        check_name(&mut report, name);
        report
    }

    fn identity(report: &mut Report, doc: &Value, api_version: &str, kind: &str) {
        for (field, want) in [("apiVersion", api_version), ("kind", kind)] {
            if doc[field] != want {
                report
                    .errors
                    .push(format!("{field}: {} is not {want:?}", doc[field]));
            }
        }
    }

    fn object_meta(report: &mut Report, kubernetes: &Value, metadata: Option<&Value>) {
        let Some(metadata) = metadata else {
            report.errors.push("(root): missing metadata".into());
            return;
        };
        let schema =
            &kubernetes["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"];
        let found = check(kubernetes, schema, metadata);
        let prefix = |e: String| {
            format!(
                "metadata{}",
                e.strip_prefix("(root)").unwrap_or(&format!(".{e}"))
            )
        };
        report.errors.extend(found.errors.into_iter().map(prefix));
        check_name(report, metadata["name"].as_str());
    }

    /// The API server requires a name (no `generateName` here) that is a DNS-1123 subdomain.
    fn check_name(report: &mut Report, name: Option<&str>) {
        let part = |p: &str| {
            let ok = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
            let b = p.as_bytes();
            !b.is_empty() && ok(b[0]) && ok(b[b.len() - 1]) && b.iter().all(|&c| ok(c) || c == b'-')
        };
        match name {
            Some(n) if n.len() <= 253 && n.split('.').all(part) => {}
            other => report.errors.push(format!(
                "metadata.name: {other:?} is not a DNS-1123 subdomain"
            )),
        }
    }

    struct Validator<'a> {
        root: &'a Value,
        report: Report,
    }

    fn at(path: &str) -> &str {
        if path.is_empty() { "(root)" } else { path }
    }

    fn child(path: &str, key: &str) -> String {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    }

    impl Validator<'_> {
        fn error(&mut self, path: &str, message: impl std::fmt::Display) {
            self.report.errors.push(format!("{}: {message}", at(path)));
        }

        fn check(&mut self, schema: &Value, value: &Value, path: &str) {
            let Some(s) = schema.as_object() else {
                return self.error(path, "the schema is not an object");
            };
            for key in s.keys() {
                if !INERT.contains(&key.as_str()) && !CHECKED.contains(&key.as_str()) {
                    self.error(path, format!("the validator does not implement `{key}`"));
                }
            }
            if value.is_null() && s.get("nullable") == Some(&Value::Bool(true)) {
                return;
            }
            self.composition(s, value, path);
            self.scalar(s, value, path);
            match value {
                Value::Object(fields) if is_object_schema(s) => self.object(s, fields, path),
                Value::Array(items) => self.array(s, items, path),
                _ => {}
            }
            let rules = s.get("x-kubernetes-validations").and_then(Value::as_array);
            for rule in rules.into_iter().flatten() {
                let text = rule["rule"].as_str().unwrap_or_default();
                self.report
                    .unevaluated
                    .push(format!("{}: {text}", at(path)));
            }
        }

        /// `$ref`, `allOf`, `anyOf`, `oneOf`.
        fn composition(&mut self, s: &Map<String, Value>, value: &Value, path: &str) {
            if let Some(target) = s.get("$ref").and_then(Value::as_str) {
                match target.strip_prefix('#').and_then(|p| self.root.pointer(p)) {
                    Some(resolved) => self.check(resolved, value, path),
                    None => self.error(path, format!("unresolved $ref {target}")),
                }
            }
            for sub in s
                .get("allOf")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.check(sub, value, path);
            }
            for (key, exactly_one) in [("anyOf", false), ("oneOf", true)] {
                let Some(subs) = s.get(key).and_then(Value::as_array) else {
                    continue;
                };
                let passing = subs.iter().filter(|sub| self.passes(sub, value)).count();
                if passing == 0 || (exactly_one && passing > 1) {
                    let n = subs.len();
                    self.error(
                        path,
                        format!("matches {passing} of the {n} `{key}` schemas")
                            .replace("matches 0 of", "matches none of"),
                    );
                }
            }
        }

        fn passes(&self, schema: &Value, value: &Value) -> bool {
            let report = check(self.root, schema, value);
            report.errors.is_empty()
        }

        /// `type`, `x-kubernetes-int-or-string`, `format`, `enum`, bounds and lengths.
        fn scalar(&mut self, s: &Map<String, Value>, value: &Value, path: &str) {
            let int_or_string = s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
            let ty = s.get("type").and_then(Value::as_str);
            if int_or_string && !(is_integer(value) || value.is_string()) {
                let message = format!("expected an integer or a string, found {value}");
                return self.error(path, message);
            }
            if let Some(ty) = ty.filter(|ty| !int_or_string && !has_type(ty, value)) {
                return self.error(path, format!("expected {ty}, found {value}"));
            }
            if let Some(format) = s.get("format").and_then(Value::as_str) {
                self.format(format, value, path);
            }
            if let Some(options) = s.get("enum").and_then(Value::as_array)
                && !options.contains(value)
            {
                let list = Value::Array(options.clone());
                self.error(path, format!("{value} is not one of {list}"));
            }
            self.bounds(s, value, path);
        }

        fn format(&mut self, format: &str, value: &Value, path: &str) {
            let range = match format {
                "int32" => (i64::from(i32::MIN), i64::from(i32::MAX)),
                "int64" => (i64::MIN, i64::MAX),
                other => {
                    let message = format!("the validator does not implement format `{other}`");
                    return self.error(path, message);
                }
            };
            let Value::Number(n) = value else { return };
            let inside = n.as_i64().is_some_and(|i| (range.0..=range.1).contains(&i));
            if !inside {
                self.error(path, format!("{value} is out of the {format} range"));
            }
        }

        fn bounds(&mut self, s: &Map<String, Value>, value: &Value, path: &str) {
            let num = |key: &str| s.get(key).and_then(Value::as_f64);
            if let (Some(min), Some(v)) = (num("minimum"), value.as_f64())
                && v < min
            {
                let message = format!("{value} is below the minimum {}", s["minimum"]);
                self.error(path, message);
            }
            if let (Some(max), Some(v)) = (num("maximum"), value.as_f64())
                && v > max
            {
                let message = format!("{value} is above the maximum {}", s["maximum"]);
                self.error(path, message);
            }
            let len = match value {
                Value::Array(a) => Some((a.len(), "items")),
                Value::String(t) => Some((t.chars().count(), "characters")),
                _ => None,
            };
            let Some((n, what)) = len else { return };
            let limit = |key: &str| s.get(key).and_then(Value::as_u64).map(|l| l as usize);
            if let Some(min) = limit("minItems").or(limit("minLength")).filter(|&m| n < m) {
                self.error(path, format!("{n} {what}, fewer than {min}"));
            }
            if let Some(max) = limit("maxItems").or(limit("maxLength")).filter(|&m| n > m) {
                self.error(path, format!("{n} {what}, more than {max}"));
            }
        }

        /// `required`, `properties`, `additionalProperties`, strict about the rest.
        fn object(&mut self, s: &Map<String, Value>, fields: &Map<String, Value>, path: &str) {
            for name in s
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = name.as_str().unwrap_or_default();
                if !fields.contains_key(name) {
                    self.error(path, format!("missing required field `{name}`"));
                }
            }
            let properties = s.get("properties").and_then(Value::as_object);
            let preserve =
                s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
            for (key, value) in fields {
                let here = child(path, key);
                if let Some(schema) = properties.and_then(|p| p.get(key)) {
                    self.check(schema, value, &here);
                    continue;
                }
                match s.get("additionalProperties") {
                    Some(extra @ Value::Object(_)) => self.check(extra, value, &here),
                    Some(Value::Bool(true)) => {}
                    _ if preserve => {}
                    _ => self.error(path, format!("unknown field `{key}`")),
                }
            }
        }

        fn array(&mut self, s: &Map<String, Value>, items: &[Value], path: &str) {
            let Some(schema) = s.get("items") else { return };
            for (i, item) in items.iter().enumerate() {
                self.check(schema, item, &format!("{}[{i}]", at(path)));
            }
        }
    }

    /// A schema that describes an object's fields itself (a bare `allOf`/`$ref` wrapper leaves
    /// that to the schema it points to).
    fn is_object_schema(s: &Map<String, Value>) -> bool {
        s.contains_key("properties")
            || s.contains_key("additionalProperties")
            || s.get("type").and_then(Value::as_str) == Some("object")
    }

    fn is_integer(value: &Value) -> bool {
        value.is_i64() || value.is_u64()
    }

    fn has_type(ty: &str, value: &Value) -> bool {
        match ty {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => is_integer(value),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            _ => false,
        }
    }
}
