//! Findings out: [`human`] (grouped by file, one block per finding), [`json()`]
//! (`{"findings":[{rule, severity, metric, message, suggestion, location}]}`) and [`sarif`]
//! (SARIF 2.1.0, for code-scanning UIs). Writers take `impl Write`; nothing here prints.

use crate::finding::{Finding, Rule, Severity};
use serde_json::{Value, json};
use std::io::{self, Write};

/// Counts per severity.
pub fn summary(findings: &[Finding]) -> Value {
    let n = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    json!({"error": n(Severity::Error), "warning": n(Severity::Warning), "info": n(Severity::Info)})
}

/// The JSON contract.
pub fn json(w: &mut impl Write, findings: &[Finding], inventories: &str) -> io::Result<()> {
    let doc = json!({
        "findings": findings,
        "inventories": inventories,
        "summary": summary(findings),
    });
    serde_json::to_writer_pretty(&mut *w, &doc)?;
    writeln!(w)
}

/// Text for a terminal, grouped by file in first-seen order.
pub fn human(w: &mut impl Write, findings: &[Finding], inventories: &str) -> io::Result<()> {
    let mut files: Vec<&str> = Vec::new();
    for f in findings {
        if !files.contains(&f.location.file.as_str()) {
            files.push(&f.location.file);
        }
    }
    for file in files {
        writeln!(w, "{file}")?;
        for f in findings.iter().filter(|f| f.location.file == file) {
            finding_block(w, f)?;
        }
        writeln!(w)?;
    }
    let s = summary(findings);
    writeln!(
        w,
        "{} errors, {} warnings, {} infos (checked against: {inventories})",
        s["error"], s["warning"], s["info"]
    )
}

fn finding_block(w: &mut impl Write, f: &Finding) -> io::Result<()> {
    let mut at = String::new();
    if let Some(line) = f.location.line {
        at.push_str(&format!("{line}:"));
    }
    if let Some(col) = f.location.column {
        at.push_str(&format!("{col}: "));
    }
    writeln!(w, "  {at}{} [{}] {}", f.severity, f.rule, f.message)?;
    if let Some(c) = &f.location.context {
        writeln!(w, "      in {c}")?;
    }
    if let Some(e) = &f.location.expr {
        let one_line: String = e.split_whitespace().collect::<Vec<_>>().join(" ");
        writeln!(w, "      expr: {}", truncate(&one_line, 160))?;
    }
    if let Some(s) = &f.suggestion {
        writeln!(w, "      fix: {s}")?;
    }
    Ok(())
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// SARIF 2.1.0.
pub fn sarif(w: &mut impl Write, findings: &[Finding]) -> io::Result<()> {
    let rules: Vec<Value> = Rule::ALL
        .iter()
        .map(|r| json!({"id": r.id(), "shortDescription": {"text": r.summary()}}))
        .collect();
    let results: Vec<Value> = findings.iter().map(sarif_result).collect();
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "llmscope", "informationUri": "https://example.invalid/llmscope", "rules": rules}},
            "results": results,
        }],
    });
    serde_json::to_writer_pretty(&mut *w, &doc)?;
    writeln!(w)
}

fn sarif_result(f: &Finding) -> Value {
    let level = match f.severity {
        Severity::Error | Severity::Critical => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    };
    let text = match &f.suggestion {
        Some(s) => format!("{} Fix: {s}", f.message),
        None => f.message.clone(),
    };
    let mut region = serde_json::Map::new();
    if let Some(l) = f.location.line {
        region.insert("startLine".into(), json!(l));
    }
    if let Some(c) = f.location.column {
        region.insert("startColumn".into(), json!(c));
    }
    let mut physical = json!({"artifactLocation": {"uri": f.location.file}});
    if !region.is_empty() {
        physical["region"] = Value::Object(region);
    }
    let mut location = json!({"physicalLocation": physical});
    if let Some(c) = &f.location.context {
        location["logicalLocations"] = json!([{"name": c}]);
    }
    json!({
        "ruleId": f.rule.id(),
        "level": level,
        "message": {"text": text},
        "locations": [location],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Location;

    fn finding() -> Finding {
        let mut f = Finding::new(Rule::RenamedMetric, Severity::Error, "gone")
            .metric("vllm:gpu_cache_usage_perc")
            .suggest("use vllm:kv_cache_usage_perc");
        f.location = Location {
            file: "d.json".into(),
            context: Some("panel \"KV\"".into()),
            line: Some(3),
            column: Some(7),
            expr: Some("vllm:gpu_cache_usage_perc".into()),
        };
        f
    }

    #[test]
    fn json_has_the_contract_fields() {
        let mut out = Vec::new();
        json(&mut out, &[finding()], "x").unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        let f = &v["findings"][0];
        assert_eq!(f["rule"], "renamed-metric");
        assert_eq!(f["severity"], "error");
        assert_eq!(f["metric"], "vllm:gpu_cache_usage_perc");
        assert_eq!(f["suggestion"], "use vllm:kv_cache_usage_perc");
        assert_eq!(f["location"]["line"], 3);
        assert_eq!(v["summary"]["error"], 1);
    }

    #[test]
    fn sarif_results_have_rule_level_and_region() {
        let mut out = Vec::new();
        sarif(&mut out, &[finding()]).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        let r = &v["runs"][0]["results"][0];
        assert_eq!(r["ruleId"], "renamed-metric");
        assert_eq!(r["level"], "error");
        assert_eq!(
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            3
        );
        assert_eq!(
            v["runs"][0]["tool"]["driver"]["rules"]
                .as_array()
                .unwrap()
                .len(),
            Rule::ALL.len()
        );
    }

    #[test]
    fn human_groups_by_file() {
        let mut out = Vec::new();
        human(&mut out, &[finding()], "vllm@0.26.0 (catalog)").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("d.json\n  3:7: error [renamed-metric] gone"),
            "{text}"
        );
        assert!(text.contains("fix: use vllm:kv_cache_usage_perc"));
        assert!(text.contains("1 errors, 0 warnings"));
    }
}
