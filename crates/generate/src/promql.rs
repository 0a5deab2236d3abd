//! Small PromQL builders, so every generated query is spelled one way: [`Sel`] (a series
//! selector), [`rate`], [`agg`] and [`quantile`] (the histogram recipe of
//! `docs/SOURCES.md` §buckets: keep `le`, add the split labels to the `by`).

use llmscope_catalog::{Family, Kind};
use std::fmt;

/// A series selector: a sample name and label matchers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sel {
    name: String,
    matchers: Vec<String>,
}

impl Sel {
    /// The sample name of a counter or gauge family.
    pub fn of(family: &Family) -> Sel {
        Sel::named(family.name)
    }

    /// The `_bucket` samples of a histogram family.
    pub fn bucket(family: &Family) -> Sel {
        debug_assert_eq!(family.kind, Kind::Histogram, "{}", family.name);
        Sel::named(&format!("{}_bucket", family.name))
    }

    pub fn named(name: &str) -> Sel {
        Sel {
            name: name.to_owned(),
            matchers: Vec::new(),
        }
    }

    /// Adds matchers (`model_name=~"$model_name"`, …).
    pub fn with(mut self, matchers: &[String]) -> Sel {
        self.matchers.extend(matchers.iter().cloned());
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for Sel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.matchers.is_empty() {
            write!(f, "{{{}}}", self.matchers.join(", "))?;
        }
        Ok(())
    }
}

/// `rate(sel[window])`.
pub fn rate(sel: &Sel, window: &str) -> String {
    format!("rate({sel}[{window}])")
}

/// `op by (labels) (inner)`, or `op(inner)` without labels.
pub fn agg(op: &str, labels: &[&str], inner: &str) -> String {
    if labels.is_empty() {
        return format!("{op}({inner})");
    }
    format!("{op} by ({}) ({inner})", labels.join(", "))
}

/// `histogram_quantile(q, sum by (le, labels…) (rate(bucket[window])))`.
pub fn quantile(q: f64, bucket: &Sel, labels: &[&str], window: &str) -> String {
    let by: Vec<&str> = std::iter::once("le")
        .chain(labels.iter().copied())
        .collect();
    format!(
        "histogram_quantile({q}, {})",
        agg("sum", &by, &rate(bucket, window))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmscope_catalog::family;

    #[test]
    fn builders_spell_the_recipes() {
        let ttft = family("vllm:time_to_first_token_seconds").unwrap();
        let b = Sel::bucket(ttft).with(&["model_name=~\"$model_name\"".into()]);
        assert_eq!(
            quantile(0.95, &b, &["model_name"], "5m"),
            "histogram_quantile(0.95, sum by (le, model_name) (rate(vllm:time_to_first_token_seconds_bucket{model_name=~\"$model_name\"}[5m])))"
        );
        let g = Sel::of(family("vllm:generation_tokens_total").unwrap());
        assert_eq!(
            agg("sum", &[], &rate(&g, "1m")),
            "sum(rate(vllm:generation_tokens_total[1m]))"
        );
    }
}
