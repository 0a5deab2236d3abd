//! Version drift: a deployment now exposes a name that the dashboards and rules it was given do
//! not use — the renamed-metric failure, caught the day the engine is upgraded instead of the
//! day someone notices a flat panel.
//!
//! The files are read once at start (`--dashboards`, `--rules`; the linter's readers). Each
//! catalogued name they select is paired with its renames in both directions (the catalog's
//! `successor` links: `vllm:gpu_cache_usage_perc` → `vllm:kv_cache_usage_perc`, and back).
//! Every evaluation asks Prometheus one instant query — which of those names each deployment
//! exposes now (`group by (__name__, <grouping>)`) — and a deployment drifts when a name the
//! files use is absent from it while one of its renames is present.

use crate::WatchError;
use crate::fleet::{DeploymentKey, Grouping};
use llmscope_catalog::{self as catalog, Family, Suffix};
use llmscope_check::input::{self, files};
use llmscope_collect::prom::api::QueryData;
use llmscope_collect::prom::client::PromClient;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

/// A name the given files use, and the names it was renamed from or to.
#[derive(Debug, Clone, PartialEq)]
pub struct Used {
    pub name: String,
    /// Files that use it (as given on the command line).
    pub files: Vec<String>,
    pub renames: Vec<String>,
}

/// What the files use, ready to compare with each deployment.
#[derive(Debug, Clone, Default)]
pub struct DriftWatch {
    pub files: Vec<String>,
    pub used: Vec<Used>,
}

/// One drifted name of one deployment.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Drift {
    /// What the dashboards/rules select, and the deployment no longer exposes.
    pub used: String,
    /// What it exposes instead.
    pub exposed: String,
    pub files: Vec<String>,
}

impl DriftWatch {
    /// Reads `paths` (dashboards `.json`, rules `.yaml`, PromQL otherwise) with the linter's
    /// readers; a file that cannot be read is an error naming it.
    pub fn load(paths: &[PathBuf], max_file_size: u64) -> Result<DriftWatch, WatchError> {
        let mut by_name: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut shown = Vec::new();
        for path in paths {
            let file = path.display().to_string();
            let text = files::read_text(path, max_file_size).map_err(|e| WatchError::Input {
                what: format!("--dashboards/--rules {file}"),
                why: e.to_string(),
            })?;
            let src = input::read(&file, &text);
            if let Some(e) = src.errors.first() {
                return Err(WatchError::Input {
                    what: format!("--dashboards/--rules {file}"),
                    why: e.message.clone(),
                });
            }
            for q in &src.queries {
                for name in llmscope_check::promql::metric_names(&q.parsed) {
                    by_name.entry(name).or_default().insert(file.clone());
                }
            }
            shown.push(file);
        }
        let used = by_name
            .into_iter()
            .filter_map(|(name, files)| {
                let renames = renames(&name);
                (!renames.is_empty()).then(|| Used {
                    name,
                    files: files.into_iter().collect(),
                    renames,
                })
            })
            .collect();
        Ok(DriftWatch { files: shown, used })
    }

    /// The instant query that says which of the names each deployment exposes; `None` when the
    /// files use no renamed name.
    pub fn query(&self, grouping: &Grouping) -> Option<String> {
        let mut names: BTreeSet<&str> = BTreeSet::new();
        for u in &self.used {
            names.insert(&u.name);
            names.extend(u.renames.iter().map(String::as_str));
        }
        if names.is_empty() {
            return None;
        }
        let names: Vec<&str> = names.into_iter().collect();
        Some(format!(
            "group by (__name__, {}) ({{__name__=~\"{}\"}})",
            grouping.labels().join(", "),
            names.join("|")
        ))
    }

    /// Which names each deployment exposes now.
    pub async fn exposed(
        &self,
        client: &PromClient,
        grouping: &Grouping,
    ) -> Result<HashMap<DeploymentKey, BTreeSet<String>>, WatchError> {
        let mut out: HashMap<DeploymentKey, BTreeSet<String>> = HashMap::new();
        let Some(q) = self.query(grouping) else {
            return Ok(out);
        };
        let r = client
            .query(&q, None)
            .await
            .map_err(|error| WatchError::Prom {
                context: "asking which renamed names each deployment exposes".to_owned(),
                error,
            })?;
        if let QueryData::Vector(v) = r.data {
            for (key, _) in v {
                if let Some(d) = grouping.key(&key.labels) {
                    out.entry(d).or_default().insert(key.name);
                }
            }
        }
        Ok(out)
    }

    /// The names `exposed` drifted from.
    pub fn judge(&self, exposed: &BTreeSet<String>) -> Vec<Drift> {
        self.used
            .iter()
            .filter(|u| !exposed.contains(&u.name))
            .filter_map(|u| {
                let now = u.renames.iter().find(|r| exposed.contains(*r))?;
                Some(Drift {
                    used: u.name.clone(),
                    exposed: now.clone(),
                    files: u.files.clone(),
                })
            })
            .collect()
    }
}

/// The sample names `name` was renamed from or to, by the catalog's successor links, with the
/// same sample suffix (a histogram's `_bucket` stays a `_bucket`).
fn renames(name: &str) -> Vec<String> {
    let Some((family, suffix)) = catalog::resolve(name) else {
        return Vec::new();
    };
    if suffix == Suffix::Created {
        return Vec::new();
    }
    let mut related: Vec<&'static Family> = Vec::new();
    let mut frontier = vec![family];
    while let Some(f) = frontier.pop() {
        let next = catalog::families().filter(|g| {
            g.exporter == f.exporter
                && (f.successor == Some(g.name) || g.successor == Some(f.name))
                && g.name != family.name
                && !related.iter().any(|r| r.name == g.name)
        });
        let next: Vec<&'static Family> = next.collect();
        related.extend(next.iter().copied());
        frontier.extend(next);
    }
    let mut out: Vec<String> = related
        .into_iter()
        .filter_map(|g| sample_name(g, suffix))
        .filter(|n| n != name)
        .collect();
    out.sort();
    out.dedup();
    out
}

fn sample_name(f: &Family, suffix: Suffix) -> Option<String> {
    use catalog::Kind;
    let hist = matches!(f.kind, Kind::Histogram | Kind::Summary);
    match suffix {
        Suffix::None if !hist => Some(f.name.to_owned()),
        Suffix::Bucket if f.kind == Kind::Histogram => Some(format!("{}_bucket", f.name)),
        Suffix::Sum if hist => Some(format!("{}_sum", f.name)),
        Suffix::Count if hist => Some(format!("{}_count", f.name)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_go_both_ways_and_keep_the_suffix() {
        assert!(
            renames("vllm:gpu_cache_usage_perc").contains(&"vllm:kv_cache_usage_perc".to_owned())
        );
        assert!(
            renames("vllm:kv_cache_usage_perc").contains(&"vllm:gpu_cache_usage_perc".to_owned())
        );
        assert!(renames("not_a_catalogued_name").is_empty());
    }

    #[test]
    fn a_deployment_drifts_when_it_exposes_the_rename_instead() {
        let dir = std::env::temp_dir().join(format!("llmscope-drift-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rules = dir.join("kv.yaml");
        std::fs::write(
            &rules,
            "groups:\n- name: kv\n  rules:\n  - alert: KvFull\n    expr: max(vllm:gpu_cache_usage_perc) > 0.9\n  - alert: Busy\n    expr: sum(vllm:num_requests_waiting) > 10\n",
        )
        .unwrap();
        let w = DriftWatch::load(std::slice::from_ref(&rules), 1 << 20).unwrap();
        assert_eq!(
            w.used.len(),
            1,
            "only the renamed name is watched: {:?}",
            w.used
        );
        let q = w.query(&Grouping::default()).unwrap();
        assert!(
            q.starts_with("group by (__name__, namespace, pod) ({__name__=~\""),
            "{q}"
        );
        assert!(
            q.contains("vllm:gpu_cache_usage_perc") && q.contains("vllm:kv_cache_usage_perc"),
            "{q}"
        );
        let new: BTreeSet<String> = ["vllm:kv_cache_usage_perc".to_owned()].into();
        let d = w.judge(&new);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].used, "vllm:gpu_cache_usage_perc");
        assert_eq!(d[0].exposed, "vllm:kv_cache_usage_perc");
        assert_eq!(d[0].files, vec![rules.display().to_string()]);
        // Still exposing the old name (or neither): no drift.
        let old: BTreeSet<String> = ["vllm:gpu_cache_usage_perc".to_owned()].into();
        assert!(w.judge(&old).is_empty());
        assert!(w.judge(&BTreeSet::new()).is_empty());
        let missing = DriftWatch::load(&[dir.join("absent.yaml")], 1 << 20).unwrap_err();
        assert!(missing.to_string().contains("absent.yaml"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
