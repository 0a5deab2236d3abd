//! The Prometheus rule-file model ([`RuleFile`] → [`Group`] → [`Rule`]) and the Prometheus
//! Operator's [`PrometheusRule`] manifest that wraps it. Field order is the order Prometheus
//! documents; labels and annotations are sorted maps, so the YAML is byte-stable.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A rule file (`rule_files:` entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleFile {
    pub groups: Vec<Group>,
}

/// A rule group, evaluated together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    pub rules: Vec<Rule>,
}

/// A recording rule (`record`) or an alerting rule (`alert`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert: Option<String>,
    pub expr: String,
    #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
    pub for_: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Rule {
    /// A recording rule.
    pub fn record(name: &str, expr: String) -> Rule {
        Rule {
            record: Some(name.to_owned()),
            alert: None,
            expr,
            for_: None,
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
        }
    }

    /// An alerting rule.
    pub fn alert(name: &str, expr: String, for_: &str) -> Rule {
        Rule {
            alert: Some(name.to_owned()),
            for_: Some(for_.to_owned()),
            ..Rule::record("", expr)
        }
        .no_record()
    }

    fn no_record(mut self) -> Rule {
        self.record = None;
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Rule {
        self.labels.insert(key.to_owned(), value.to_owned());
        self
    }

    pub fn annotate(mut self, key: &str, value: impl Into<String>) -> Rule {
        self.annotations.insert(key.to_owned(), value.into());
        self
    }
}

/// `monitoring.coreos.com/v1` `PrometheusRule`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusRule {
    pub api_version: String,
    pub kind: String,
    pub metadata: Metadata,
    pub spec: RuleFile,
}

/// Object metadata (what a `PrometheusRule` needs of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// How to wrap a rule file as a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CrdOptions {
    pub name: String,
    pub namespace: Option<String>,
    /// kube-prometheus-stack selects rules by `release: <helm release>`
    /// (`ruleSelectorNilUsesHelmValues`), so without it the rules are silently ignored.
    pub release: Option<String>,
}

impl PrometheusRule {
    pub fn wrap(spec: RuleFile, opts: &CrdOptions) -> PrometheusRule {
        let mut labels = BTreeMap::from([(
            "app.kubernetes.io/managed-by".to_owned(),
            "llmscope".to_owned(),
        )]);
        if let Some(r) = &opts.release {
            labels.insert("release".to_owned(), r.clone());
        }
        PrometheusRule {
            api_version: "monitoring.coreos.com/v1".to_owned(),
            kind: "PrometheusRule".to_owned(),
            metadata: Metadata {
                name: opts.name.clone(),
                namespace: opts.namespace.clone(),
                labels,
            },
            spec,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alerts_have_no_record_and_crds_carry_the_release_label() {
        let a = Rule::alert("X", "up == 0".into(), "5m").label("severity", "warning");
        assert_eq!((a.record.as_deref(), a.alert.as_deref()), (None, Some("X")));
        let file = RuleFile {
            groups: vec![Group {
                name: "g".into(),
                interval: None,
                rules: vec![a],
            }],
        };
        let opts = CrdOptions {
            name: "llmscope".into(),
            namespace: None,
            release: Some("kps".into()),
        };
        let crd = PrometheusRule::wrap(file, &opts);
        assert_eq!(crd.metadata.labels["release"], "kps");
        assert_eq!(crd.kind, "PrometheusRule");
    }
}
