//! The label names a PromQL value can carry, propagated through the expression: selectors start
//! with their metric's labels, `by (…)` keeps only those, `on (…)` keeps the matching labels,
//! `group_left (…)` adds the named ones from the other side, `label_replace` adds its target.

use crate::inventory::TARGET_LABELS;
use promql_parser::label::{MatchOp, Matcher};
use std::collections::BTreeSet;

/// Labels substituted for a Grafana variable start with this: never reported missing.
pub const VAR_PREFIX: &str = "__llmscope_var_";

/// What is known about a value's label names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelSet {
    /// Unknown (an unknown metric, a recording rule, `absent()`): nothing is reported.
    Any,
    /// Exactly these; `open` adds the scrape target labels a page cannot show.
    Known { names: BTreeSet<String>, open: bool },
}

impl LabelSet {
    /// No labels at all (a scalar, `vector(1)`, `sum()` without `by`).
    pub fn none() -> LabelSet {
        LabelSet::Known {
            names: BTreeSet::new(),
            open: false,
        }
    }

    pub fn of(names: impl IntoIterator<Item = String>, open: bool) -> LabelSet {
        LabelSet::Known {
            names: names.into_iter().collect(),
            open,
        }
    }

    /// Whether `label` may be present (always true when unknown).
    pub fn has(&self, label: &str) -> bool {
        match self {
            LabelSet::Any => true,
            LabelSet::Known { names, open } => {
                label == "__name__"
                    || label.starts_with(VAR_PREFIX)
                    || (*open && TARGET_LABELS.contains(&label))
                    || names.iter().any(|l| match l.strip_suffix('*') {
                        Some(prefix) => label.starts_with(prefix),
                        None => l == label,
                    })
            }
        }
    }

    /// Only `keep` (what `by (…)` and `on (…)` leave).
    pub fn only(&self, keep: &[String]) -> LabelSet {
        LabelSet::of(keep.iter().cloned(), false)
    }

    /// All but `drop` (`without (…)`, `ignoring (…)`, `histogram_quantile` dropping `le`).
    pub fn without(&self, drop: &[&str]) -> LabelSet {
        match self {
            LabelSet::Any => LabelSet::Any,
            LabelSet::Known { names, open } => LabelSet::Known {
                names: names
                    .iter()
                    .filter(|n| !drop.contains(&n.as_str()))
                    .cloned()
                    .collect(),
                open: *open,
            },
        }
    }

    /// Union (`or`, `group_left (…)`, `label_replace`).
    pub fn with(&self, other: &LabelSet) -> LabelSet {
        match (self, other) {
            (LabelSet::Known { names: a, open: oa }, LabelSet::Known { names: b, open: ob }) => {
                LabelSet::Known {
                    names: a.union(b).cloned().collect(),
                    open: *oa || *ob,
                }
            }
            _ => LabelSet::Any,
        }
    }

    /// The concrete names, for suggestions.
    pub fn names(&self) -> Vec<&str> {
        match self {
            LabelSet::Any => Vec::new(),
            LabelSet::Known { names, .. } => names.iter().map(String::as_str).collect(),
        }
    }
}

/// A matcher that must match a non-empty value (so a missing label means no series at all).
pub fn selects_something(m: &Matcher) -> bool {
    match &m.op {
        MatchOp::Equal => !m.value.is_empty(),
        MatchOp::Re(re) => !re.is_match(""),
        MatchOp::NotEqual | MatchOp::NotRe(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str], open: bool) -> LabelSet {
        LabelSet::of(names.iter().map(|s| (*s).to_owned()), open)
    }

    #[test]
    fn open_sets_allow_target_labels() {
        assert!(set(&["engine"], true).has("pod"));
        assert!(!set(&["engine"], false).has("pod"));
        assert!(LabelSet::Any.has("anything"));
        assert!(set(&["label_*"], false).has("label_team"));
        assert!(!set(&["label_*"], false).has("team"));
        assert!(set(&[], false).has("__llmscope_var_x"));
    }

    #[test]
    fn by_without_and_union() {
        let s = set(&["a", "b", "le"], true);
        assert!(!s.only(&["a".to_owned()]).has("b"));
        assert!(!s.without(&["le"]).has("le"));
        assert!(s.without(&["le"]).has("a"));
        assert!(set(&["a"], false).with(&set(&["x"], false)).has("x"));
        assert_eq!(set(&["a"], false).with(&LabelSet::Any), LabelSet::Any);
    }
}
