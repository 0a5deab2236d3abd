//! Text out: JSON (two-space indent, struct field order) and YAML (`serde-saphyr`), each ending
//! in a newline. Deterministic: the models hold no maps with unstable order and no timestamps.

use serde::Serialize;

/// Why a model could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("writing JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("writing YAML: {0}")]
    Yaml(String),
}

/// Pretty JSON with a final newline.
pub fn json(value: &impl Serialize) -> Result<String, OutputError> {
    let mut s = serde_json::to_string_pretty(value)?;
    s.push('\n');
    Ok(s)
}

/// Block-style YAML with a final newline.
pub fn yaml(value: &impl Serialize) -> Result<String, OutputError> {
    // One line per scalar: folded `>-` blocks rewrap PromQL and templates, which reads worse in
    // review diffs than long lines.
    let mut opts = serde_saphyr::SerializerOptions::default();
    opts.prefer_block_scalars = false;
    let mut s = serde_saphyr::to_string_with_options(value, opts)
        .map_err(|e| OutputError::Yaml(e.to_string()))?;
    if !s.ends_with('\n') {
        s.push('\n');
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn yaml_quotes_what_needs_quoting() {
        let m = BTreeMap::from([
            ("expr", "a{b=\"c\"} > 0"),
            ("summary", "{{ $labels.pod }}: x"),
        ]);
        let y = yaml(&m).unwrap();
        assert!(y.ends_with('\n'));
        let back: BTreeMap<String, String> = serde_saphyr::from_str(&y).unwrap();
        assert_eq!(back["summary"], "{{ $labels.pod }}: x");
        assert_eq!(back["expr"], "a{b=\"c\"} > 0");
    }
}
