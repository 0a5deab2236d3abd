//! Autoscaling objects from a measured capacity. The capacity search measures how many requests
//! in flight (running + waiting) one replica of the server carries within its latency SLO; from
//! that number this module writes what a platform team applies to scale the Deployment on it:
//!
//! - a KEDA [`ScaledObject`] (`keda.sh/v1alpha1`) with one `prometheus` trigger ([`scaled_object`]);
//! - or an `autoscaling/v2` [`HorizontalPodAutoscaler`] on one External metric ([`hpa`]), which
//!   prometheus-adapter serves from the `externalRules` of an [`AdapterConfig`] ([`adapter_rules`]).
//!
//! The two are alternatives, never both: KEDA makes an HPA of its own, and two autoscalers on one
//! Deployment fight (KEDA's admission webhook refuses a ScaledObject whose target already has an
//! HPA). Every file says so in its header.
//!
//! Flow: an [`AutoscalingSpec`] → [`AutoscalingSpec::validate`] → the serde models below (field
//! order as KEDA's, Kubernetes' and prometheus-adapter's documentation list them) → [`files`]:
//! YAML from [`output::yaml`] behind a comment header that carries the provenance. Pure: no I/O,
//! no clock.
//!
//! The scaling metric is the in-flight count summed over the Deployment's pods,
//! `sum(RUNNING{m}) + sum(WAITING{m})` ([`in_flight_query`]); both objects target it as an
//! *average value* per replica, so the HPA controller divides the sum by the replica count and
//! asks for `ceil(sum / per_replica_in_flight)` replicas.

use crate::output::{self, OutputError};
use crate::promql::{Sel, agg};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What to scale, on which gauges, and at what measured per-replica capacity.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AutoscalingSpec {
    /// The Deployment to scale (`scaleTargetRef.name`); the objects are named after it. A
    /// DNS-1123 subdomain, as a Deployment name is.
    pub name: String,
    /// The Deployment's namespace; without it the objects go where they are applied.
    pub namespace: Option<String>,
    /// Base URL of the Prometheus KEDA queries (the trigger's `serverAddress`), `http(s)://…`.
    pub prometheus: String,
    /// The engine's gauge of running requests, e.g. `vllm:num_requests_running`.
    pub running: String,
    /// The engine's gauge of waiting requests, e.g. `vllm:num_requests_waiting`.
    pub waiting: String,
    /// PromQL label matchers that select this Deployment's pods, each `label op "value"`
    /// (e.g. `namespace="llm"`, `pod=~"vllm-.*"`); may be empty.
    pub matchers: Vec<String>,
    /// Requests in flight (running + waiting) per replica that the SLO survives: the scaling
    /// target, at least 1. Headroom is the caller's choice: pass less than the knee to keep
    /// some (the HPA controller already tolerates 10 % above the target before it scales up).
    pub per_replica_in_flight: u32,
    /// The fewest replicas, at least 1 (see [`AutoscalingError::ScaleToZero`]).
    pub min_replicas: u32,
    /// The most replicas, at least `min_replicas`.
    pub max_replicas: u32,
    /// Lines saying what was measured (knee, SLO, date, run ids): written to the
    /// [`MEASURED_ANNOTATION`] annotation and as comments at the top of every file.
    pub provenance: Vec<String>,
}

/// Why no autoscaling objects can be written for a spec.
#[derive(Debug, thiserror::Error)]
pub enum AutoscalingError {
    #[error("the Deployment name is empty")]
    EmptyName,
    #[error(
        "`{0}` is not a valid Deployment name (a DNS-1123 subdomain: lowercase letters, digits, `-` and `.`, at most 253 characters, starting and ending alphanumeric)"
    )]
    InvalidName(String),
    #[error(
        "`{0}` is not a valid namespace (a DNS-1123 label: lowercase letters, digits and `-`, at most 63 characters, starting and ending alphanumeric)"
    )]
    InvalidNamespace(String),
    #[error("`{0}` is not a Prometheus base URL (`http://` or `https://` and a host)")]
    InvalidPrometheus(String),
    #[error("`{0}` is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)")]
    InvalidMetricName(String),
    #[error("label matcher `{text}`: {why} (expected `label op \"value\"`, op one of = != =~ !~)")]
    InvalidMatcher { text: String, why: &'static str },
    #[error(
        "per_replica_in_flight is 0: a replica that carries no request in flight cannot be a scaling target"
    )]
    ZeroTarget,
    #[error(
        "min_replicas is 0: the engine's gauges vanish with the last replica, so nothing would scale it back up (scale to zero needs a signal from outside the pods, such as a gateway's queue)"
    )]
    ScaleToZero,
    #[error("min_replicas {min} is above max_replicas {max}")]
    MinAboveMax { min: u32, max: u32 },
    #[error(
        "{field} {value} is above 2147483647, the largest replica count Kubernetes takes (int32)"
    )]
    TooManyReplicas { field: &'static str, value: u32 },
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// The annotation that carries [`AutoscalingSpec::provenance`], one line per entry.
pub const MEASURED_ANNOTATION: &str = "llmscope.dev/measured";
/// The file of [`scaled_object`] in [`files`].
pub const KEDA_FILE: &str = "keda-scaledobject.yaml";
/// The file of [`hpa`] in [`files`].
pub const HPA_FILE: &str = "hpa.yaml";
/// The file of [`adapter_rules`] in [`files`].
pub const ADAPTER_FILE: &str = "prometheus-adapter-rules.yaml";

/// How often KEDA's operator reads the trigger itself, in seconds (KEDA's default is 30). With
/// at least one replica the HPA controller reads the metric on its own sync period (15 s by
/// default); polling at the same pace keeps the ScaledObject's `Active` condition and its error
/// count as fresh as the scaling decisions.
pub const POLLING_INTERVAL_S: u32 = 15;
/// Scale-down stabilization, in seconds: the highest recommendation of the last five minutes
/// wins. It is the HPA default, written out so that the reader sees it next to the policy.
pub const SCALE_DOWN_WINDOW_S: u32 = 300;
/// At most this many replicas are removed per [`SCALE_DOWN_PERIOD_S`]. A vLLM replica takes
/// minutes to load its weights, so a lull must not drain the pool that a returning burst needs
/// (the default would allow removing every surplus replica at once). Scale-up keeps the HPA
/// default (no stabilization; double, or +4 pods, per 15 s): a queue past the knee costs latency
/// at once.
pub const SCALE_DOWN_PODS: u32 = 1;
/// The period of the scale-down policy, in seconds.
pub const SCALE_DOWN_PERIOD_S: u32 = 60;

impl AutoscalingSpec {
    /// Checks the spec; [`files`] calls it. The object builders do not, so call it first when
    /// using them directly.
    pub fn validate(&self) -> Result<(), AutoscalingError> {
        check_target(
            &self.name,
            self.namespace.as_deref(),
            &self.prometheus,
            &self.matchers,
        )?;
        for metric in [&self.running, &self.waiting] {
            if !is_metric_name(metric) {
                return Err(AutoscalingError::InvalidMetricName(metric.clone()));
            }
        }
        self.check_numbers()
    }

    fn check_numbers(&self) -> Result<(), AutoscalingError> {
        if self.per_replica_in_flight == 0 {
            return Err(AutoscalingError::ZeroTarget);
        }
        if self.min_replicas == 0 {
            return Err(AutoscalingError::ScaleToZero);
        }
        if self.min_replicas > self.max_replicas {
            return Err(AutoscalingError::MinAboveMax {
                min: self.min_replicas,
                max: self.max_replicas,
            });
        }
        if i32::try_from(self.max_replicas).is_err() {
            return Err(AutoscalingError::TooManyReplicas {
                field: "max_replicas",
                value: self.max_replicas,
            });
        }
        Ok(())
    }

    /// The matchers as written in queries (surrounding blanks dropped).
    fn label_matchers(&self) -> Vec<String> {
        self.matchers.iter().map(|m| m.trim().to_owned()).collect()
    }
}

/// What the objects will scale and read — the Deployment's name, its namespace, the Prometheus
/// address and the label matchers — checked on their own, so that a command can refuse them
/// before it measures anything (`capacity --autoscaling-out` did so only after its search).
pub fn check_target(
    name: &str,
    namespace: Option<&str>,
    prometheus: &str,
    matchers: &[String],
) -> Result<(), AutoscalingError> {
    check_name(name)?;
    if let Some(ns) = namespace.filter(|ns| !is_dns_label(ns)) {
        return Err(AutoscalingError::InvalidNamespace(ns.to_owned()));
    }
    check_prometheus(prometheus)?;
    for m in matchers {
        check_matcher(m).map_err(|why| AutoscalingError::InvalidMatcher {
            text: m.clone(),
            why,
        })?;
    }
    Ok(())
}

fn check_name(name: &str) -> Result<(), AutoscalingError> {
    if name.is_empty() {
        return Err(AutoscalingError::EmptyName);
    }
    match is_dns_subdomain(name) {
        true => Ok(()),
        false => Err(AutoscalingError::InvalidName(name.to_owned())),
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn is_dns_part(s: &str) -> bool {
    let ok = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            ok(first) && ok(last) && bytes.iter().all(|&b| ok(b) || b == b'-')
        }
        _ => false,
    }
}

/// A DNS-1123 label (namespace names).
fn is_dns_label(s: &str) -> bool {
    s.len() <= 63 && is_dns_part(s)
}

/// A DNS-1123 subdomain (Deployment, ScaledObject and HPA names).
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_part)
}

fn check_prometheus(url: &str) -> Result<(), AutoscalingError> {
    let host = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or("");
    let valid = !host.is_empty() && !host.starts_with('/') && !url.contains(char::is_whitespace);
    match valid {
        true => Ok(()),
        false => Err(AutoscalingError::InvalidPrometheus(url.to_owned())),
    }
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`
fn is_metric_name(s: &str) -> bool {
    let head = |c: char| c.is_ascii_alphabetic() || c == '_' || c == ':';
    s.starts_with(head) && s.chars().all(|c| head(c) || c.is_ascii_digit())
}

/// `label op "value"`, blanks allowed around `op`. The value is a double-quoted PromQL string.
fn check_matcher(text: &str) -> Result<(), &'static str> {
    let s = text.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    let (label, rest) = s.split_at(end);
    if label.is_empty() || label.starts_with(|c: char| c.is_ascii_digit()) {
        return Err("no label name before the operator");
    }
    if label == "__name__" {
        return Err("it selects the metric name, which `running` and `waiting` already give");
    }
    let rest = rest.trim_start();
    let op = ["=~", "!~", "!=", "="]
        .into_iter()
        .find(|op| rest.starts_with(op))
        .ok_or("no operator after the label name")?;
    check_quoted(rest[op.len()..].trim_start())
}

/// A double-quoted string and nothing after it.
fn check_quoted(value: &str) -> Result<(), &'static str> {
    let mut chars = value
        .strip_prefix('"')
        .ok_or("the value is not a double-quoted string")?
        .chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.next().is_none() => return Err("the value ends inside an escape"),
            '"' if chars.as_str().trim().is_empty() => return Ok(()),
            '"' => return Err("text after the value's closing quote"),
            '\n' => return Err("a line break inside the value"),
            _ => {}
        }
    }
    Err("the value has no closing quote")
}

// ------------------------------------------------------------------ the scaling metric

/// The in-flight count of the Deployment's pods: `sum(RUNNING{m}) + sum(WAITING{m})`. Each side is
/// summed first, so the two gauges need not share their label sets.
pub fn in_flight_query(spec: &AutoscalingSpec) -> String {
    in_flight_of(spec, &spec.label_matchers())
}

fn in_flight_of(spec: &AutoscalingSpec, matchers: &[String]) -> String {
    let side = |name: &str| agg("sum", &[], &Sel::named(name).with(matchers).to_string());
    format!("{} + {}", side(&spec.running), side(&spec.waiting))
}

/// The External metric's name, as prometheus-adapter serves it and the HPA asks for it:
/// `<name>_requests_in_flight` with `-` and `.` turned into `_`. It carries the Deployment's
/// name because each Deployment's rule holds its own matchers, and the adapter's rules must not
/// overlap.
pub fn metric_name(spec: &AutoscalingSpec) -> String {
    format!("{}_requests_in_flight", spec.name.replace(['-', '.'], "_"))
}

// ------------------------------------------------------------------ the models

/// Object metadata: what these objects set of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectMeta {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// The scaled workload: KEDA's `scaleTargetRef`, and the HPA's `CrossVersionObjectReference`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleTargetRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
}

/// `keda.sh/v1alpha1` `ScaledObject`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaledObject {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: ScaledObjectSpec,
}

/// A ScaledObject's spec (the fields set here, in the order of KEDA's specification).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaledObjectSpec {
    pub scale_target_ref: ScaleTargetRef,
    pub polling_interval: u32,
    pub min_replica_count: u32,
    pub max_replica_count: u32,
    pub advanced: Advanced,
    pub triggers: Vec<Trigger>,
}

/// `spec.advanced`: the behaviour KEDA passes to the HPA it makes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Advanced {
    pub horizontal_pod_autoscaler_config: HpaConfig,
}

/// `spec.advanced.horizontalPodAutoscalerConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HpaConfig {
    pub behavior: Behavior,
}

/// A KEDA trigger of type `prometheus`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trigger {
    #[serde(rename = "type")]
    pub type_: String,
    pub name: String,
    /// `AverageValue`: KEDA hands the HPA the query's value and the HPA divides it by the
    /// replica count before comparing with the threshold.
    pub metric_type: String,
    pub metadata: PrometheusTrigger,
}

/// The `prometheus` scaler's metadata. KEDA takes every value as a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusTrigger {
    pub server_address: String,
    pub query: String,
    pub threshold: String,
    /// `"false"`: an empty result is an error, not 0. With replicas running, an empty sum means
    /// a lost scrape or wrong matchers, and reading it as 0 would scale the Deployment down to
    /// its minimum; as an error the HPA keeps the replica count and the ScaledObject says why.
    pub ignore_null_values: String,
}

/// `autoscaling/v2` `HorizontalPodAutoscaler`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HorizontalPodAutoscaler {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: HpaSpec,
}

/// An HPA's spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HpaSpec {
    pub scale_target_ref: ScaleTargetRef,
    pub min_replicas: u32,
    pub max_replicas: u32,
    pub metrics: Vec<MetricSpec>,
    pub behavior: Behavior,
}

/// One metric of an HPA: here always `External`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricSpec {
    #[serde(rename = "type")]
    pub type_: String,
    pub external: ExternalMetricSource,
}

/// An External metric and its target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalMetricSource {
    pub metric: MetricIdentifier,
    pub target: MetricTarget,
}

/// The metric's name in the external metrics API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricIdentifier {
    pub name: String,
}

/// `type: AverageValue` and the per-replica value, a Kubernetes quantity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricTarget {
    #[serde(rename = "type")]
    pub type_: String,
    pub average_value: String,
}

/// HPA scaling behaviour (`autoscaling/v2` `HorizontalPodAutoscalerBehavior`); scale-up is left
/// at the default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Behavior {
    pub scale_down: ScalingRules,
}

/// `HPAScalingRules` for one direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScalingRules {
    pub stabilization_window_seconds: u32,
    pub policies: Vec<ScalingPolicy>,
}

/// `HPAScalingPolicy`: at most `value` pods (or percent) per `periodSeconds`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScalingPolicy {
    #[serde(rename = "type")]
    pub type_: String,
    pub value: u32,
    pub period_seconds: u32,
}

/// A prometheus-adapter configuration holding only `externalRules`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdapterConfig {
    pub external_rules: Vec<AdapterRule>,
}

/// One prometheus-adapter discovery rule (fields in the adapter's order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdapterRule {
    /// The series that make the metric exist (`/api/v1/series` selector): the running gauge.
    pub series_query: String,
    pub resources: AdapterResources,
    pub name: AdapterName,
    /// A Go template (`<<` `>>`): `<<.LabelMatchers>>` becomes the HPA's namespace matcher.
    pub metrics_query: String,
}

/// Which labels name Kubernetes resources: `namespace`, so that the adapter can add the HPA's
/// namespace to the query (external rules are namespaced by default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdapterResources {
    pub overrides: BTreeMap<String, GroupResource>,
}

/// A Kubernetes group-resource (the core group when `group` is absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupResource {
    pub resource: String,
}

/// The series name a rule matches and the name it is served as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdapterName {
    pub matches: String,
    #[serde(rename = "as")]
    pub as_: String,
}

// ------------------------------------------------------------------ the builders

fn metadata(spec: &AutoscalingSpec) -> ObjectMeta {
    let labels = BTreeMap::from([(
        "app.kubernetes.io/managed-by".to_owned(),
        "llmscope".to_owned(),
    )]);
    let mut annotations = BTreeMap::new();
    if !spec.provenance.is_empty() {
        annotations.insert(MEASURED_ANNOTATION.to_owned(), spec.provenance.join("\n"));
    }
    ObjectMeta {
        name: spec.name.clone(),
        namespace: spec.namespace.clone(),
        labels,
        annotations,
    }
}

fn target(spec: &AutoscalingSpec) -> ScaleTargetRef {
    ScaleTargetRef {
        api_version: "apps/v1".to_owned(),
        kind: "Deployment".to_owned(),
        name: spec.name.clone(),
    }
}

fn behavior() -> Behavior {
    Behavior {
        scale_down: ScalingRules {
            stabilization_window_seconds: SCALE_DOWN_WINDOW_S,
            policies: vec![ScalingPolicy {
                type_: "Pods".to_owned(),
                value: SCALE_DOWN_PODS,
                period_seconds: SCALE_DOWN_PERIOD_S,
            }],
        },
    }
}

/// The KEDA ScaledObject. Does not check the spec (see [`AutoscalingSpec::validate`]).
pub fn scaled_object(spec: &AutoscalingSpec) -> ScaledObject {
    let trigger = Trigger {
        type_: "prometheus".to_owned(),
        name: "requests-in-flight".to_owned(),
        metric_type: "AverageValue".to_owned(),
        metadata: PrometheusTrigger {
            server_address: spec.prometheus.clone(),
            query: in_flight_query(spec),
            threshold: spec.per_replica_in_flight.to_string(),
            ignore_null_values: "false".to_owned(),
        },
    };
    ScaledObject {
        api_version: "keda.sh/v1alpha1".to_owned(),
        kind: "ScaledObject".to_owned(),
        metadata: metadata(spec),
        spec: ScaledObjectSpec {
            scale_target_ref: target(spec),
            polling_interval: POLLING_INTERVAL_S,
            min_replica_count: spec.min_replicas,
            max_replica_count: spec.max_replicas,
            advanced: Advanced {
                horizontal_pod_autoscaler_config: HpaConfig {
                    behavior: behavior(),
                },
            },
            triggers: vec![trigger],
        },
    }
}

/// The `autoscaling/v2` HPA on [`metric_name`]. Does not check the spec.
pub fn hpa(spec: &AutoscalingSpec) -> HorizontalPodAutoscaler {
    let metric = MetricSpec {
        type_: "External".to_owned(),
        external: ExternalMetricSource {
            metric: MetricIdentifier {
                name: metric_name(spec),
            },
            target: MetricTarget {
                type_: "AverageValue".to_owned(),
                average_value: spec.per_replica_in_flight.to_string(),
            },
        },
    };
    HorizontalPodAutoscaler {
        api_version: "autoscaling/v2".to_owned(),
        kind: "HorizontalPodAutoscaler".to_owned(),
        metadata: metadata(spec),
        spec: HpaSpec {
            scale_target_ref: target(spec),
            min_replicas: spec.min_replicas,
            max_replicas: spec.max_replicas,
            metrics: vec![metric],
            behavior: behavior(),
        },
    }
}

/// The prometheus-adapter rule that serves [`metric_name`]: discovered from the running gauge,
/// queried as [`in_flight_query`] with the adapter's `<<.LabelMatchers>>` (the HPA's namespace)
/// added to each selector. Does not check the spec.
pub fn adapter_rules(spec: &AutoscalingSpec) -> AdapterConfig {
    let matchers = spec.label_matchers();
    let mut templated = matchers.clone();
    templated.push("<<.LabelMatchers>>".to_owned());
    let rule = AdapterRule {
        series_query: Sel::named(&spec.running).with(&matchers).to_string(),
        resources: AdapterResources {
            overrides: BTreeMap::from([(
                "namespace".to_owned(),
                GroupResource {
                    resource: "namespace".to_owned(),
                },
            )]),
        },
        name: AdapterName {
            // Metric names hold no regex metacharacter (`[a-zA-Z0-9_:]`), so none to escape.
            matches: format!("^{}$", spec.running),
            as_: metric_name(spec),
        },
        metrics_query: in_flight_of(spec, &templated),
    };
    AdapterConfig {
        external_rules: vec![rule],
    }
}

// ------------------------------------------------------------------ files

/// The three files, checked and written: ([`KEDA_FILE`], …), ([`HPA_FILE`], …),
/// ([`ADAPTER_FILE`], …). Each opens with comments: what it is, that KEDA and the HPA are
/// alternatives, and the provenance lines.
pub fn files(spec: &AutoscalingSpec) -> Result<Vec<(&'static str, String)>, AutoscalingError> {
    spec.validate()?;
    let keda = "Apply this file, or hpa.yaml with prometheus-adapter-rules.yaml; never both \
                (two autoscalers on one Deployment fight).";
    let hpa_use = "Apply with the rules of prometheus-adapter-rules.yaml in prometheus-adapter, \
                   or keda-scaledobject.yaml instead; never both.";
    let adapter = "prometheus-adapter externalRules for hpa.yaml: merge them into the adapter's \
                   configuration (its Helm chart's rules.external).";
    Ok(vec![
        (
            KEDA_FILE,
            header(spec, keda) + &output::yaml(&scaled_object(spec))?,
        ),
        (HPA_FILE, header(spec, hpa_use) + &output::yaml(&hpa(spec))?),
        (
            ADAPTER_FILE,
            header(spec, adapter) + &output::yaml(&adapter_rules(spec))?,
        ),
    ])
}

/// `# ` lines: what the file scales and on what, how to use it, and the provenance.
fn header(spec: &AutoscalingSpec, usage: &str) -> String {
    let mut lines = vec![
        format!(
            "Generated by llmscope: scales Deployment {} at {} requests in flight (running + waiting) per replica.",
            spec.name, spec.per_replica_in_flight
        ),
        usage.to_owned(),
    ];
    let measured = spec.provenance.iter().flat_map(|p| p.lines());
    lines.extend(measured.map(|l| format!("measured: {l}")));
    lines.iter().map(|l| format!("# {l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> AutoscalingSpec {
        AutoscalingSpec {
            name: "vllm-llama".into(),
            namespace: Some("llm".into()),
            prometheus: "http://prometheus.monitoring:9090".into(),
            running: "vllm:num_requests_running".into(),
            waiting: "vllm:num_requests_waiting".into(),
            matchers: vec!["namespace=\"llm\"".into(), " pod =~ \"vllm-.*\" ".into()],
            per_replica_in_flight: 16,
            min_replicas: 1,
            max_replicas: 4,
            provenance: vec!["knee 16 at p95 TTFT 2 s".into()],
        }
    }

    fn err(f: impl FnOnce(&mut AutoscalingSpec)) -> AutoscalingError {
        let mut s = spec();
        f(&mut s);
        s.validate().expect_err("the spec should be refused")
    }

    #[test]
    fn nonsense_numbers_are_refused() {
        assert!(matches!(
            err(|s| s.per_replica_in_flight = 0),
            AutoscalingError::ZeroTarget
        ));
        assert!(matches!(
            err(|s| s.min_replicas = 5),
            AutoscalingError::MinAboveMax { min: 5, max: 4 }
        ));
        assert!(matches!(
            err(|s| s.min_replicas = 0),
            AutoscalingError::ScaleToZero
        ));
        let e = err(|s| s.max_replicas = u32::MAX);
        assert!(matches!(e, AutoscalingError::TooManyReplicas { .. }), "{e}");
        assert!(spec().validate().is_ok());
    }

    #[test]
    fn names_must_be_dns_subdomains_and_namespaces_labels() {
        assert!(matches!(
            err(|s| s.name.clear()),
            AutoscalingError::EmptyName
        ));
        for bad in ["Vllm", "vllm_llama", "-vllm", "vllm-", "a..b", "vllm llama"] {
            let e = err(|s| s.name = bad.into());
            assert!(matches!(e, AutoscalingError::InvalidName(_)), "{bad}: {e}");
        }
        assert!(matches!(
            err(|s| s.name = "a".repeat(254)),
            AutoscalingError::InvalidName(_)
        ));
        for good in ["vllm", "vllm.llama-8b", "0a", &"a".repeat(253)] {
            let mut s = spec();
            s.name = good.to_owned();
            assert!(s.validate().is_ok(), "{good}");
        }
        for bad in ["LLM", "llm.prod", &"a".repeat(64)] {
            let e = err(|s| s.namespace = Some(bad.to_owned()));
            assert!(matches!(e, AutoscalingError::InvalidNamespace(_)), "{bad}");
        }
    }

    #[test]
    fn matchers_must_look_like_label_op_quoted_value() {
        let cases = [
            ("pod", "no operator"),
            ("=\"x\"", "no label name"),
            ("1pod=\"x\"", "no label name"),
            ("pod==\"x\"", "not a double-quoted"),
            ("pod=x", "not a double-quoted"),
            ("pod=\"x", "no closing quote"),
            ("pod=\"x\\", "inside an escape"),
            ("pod=\"x\" or", "after the value"),
            ("pod=\"x\"}", "after the value"),
            ("__name__=\"up\"", "metric name"),
        ];
        for (text, why) in cases {
            let e = err(|s| s.matchers = vec![text.into()]);
            assert!(
                matches!(&e, AutoscalingError::InvalidMatcher { why: w, .. } if w.contains(why)),
                "{text}: {e}"
            );
        }
        for good in ["pod!=\"\"", "a_b !~ \"x\\\"y\"", "model_name=~'x'"] {
            let r = check_matcher(good);
            assert_eq!(r.is_ok(), !good.contains('\''), "{good}: {r:?}");
        }
    }

    #[test]
    fn urls_and_metric_names_are_checked() {
        for bad in ["", "prometheus:9090", "http://", "http:///x", "http://a b"] {
            let e = err(|s| s.prometheus = bad.into());
            assert!(matches!(e, AutoscalingError::InvalidPrometheus(_)), "{bad}");
        }
        for bad in ["", "9vllm", "vllm-requests", "vllm:num requests"] {
            let e = err(|s| s.waiting = bad.into());
            assert!(matches!(e, AutoscalingError::InvalidMetricName(_)), "{bad}");
        }
    }

    #[test]
    fn the_query_sums_each_gauge_over_the_matchers() {
        assert_eq!(
            in_flight_query(&spec()),
            "sum(vllm:num_requests_running{namespace=\"llm\", pod =~ \"vllm-.*\"}) + \
             sum(vllm:num_requests_waiting{namespace=\"llm\", pod =~ \"vllm-.*\"})"
        );
        let bare = AutoscalingSpec {
            matchers: vec![],
            ..spec()
        };
        assert_eq!(
            in_flight_query(&bare),
            "sum(vllm:num_requests_running) + sum(vllm:num_requests_waiting)"
        );
        assert_eq!(metric_name(&bare), "vllm_llama_requests_in_flight");
    }

    #[test]
    fn files_refuse_a_bad_spec_and_comment_the_provenance() {
        let bad = AutoscalingSpec {
            per_replica_in_flight: 0,
            ..spec()
        };
        assert!(matches!(files(&bad), Err(AutoscalingError::ZeroTarget)));
        let mut s = spec();
        s.provenance = vec!["a\nb".into(), String::new()];
        let out = files(&s).unwrap();
        let names: Vec<&str> = out.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, [KEDA_FILE, HPA_FILE, ADAPTER_FILE]);
        for (_, text) in &out {
            assert!(text.contains("# measured: a\n# measured: b\n"), "{text}");
            assert!(text.starts_with("# Generated by llmscope"), "{text}");
        }
        assert_eq!(
            scaled_object(&s).metadata.annotations[MEASURED_ANNOTATION],
            "a\nb\n"
        );
    }
}
