//! `llmscope report RUN --export DIR`: a stored run for notebooks, as two CSV files —
//! `series.csv` (long format: `time,layer,metric,labels,value`, one row per sample; the layer is
//! the source the series was scraped from, the labels in Prometheus' `{a="1"}` form) and
//! `requests.csv` (one row per request the load generator sent: its stage, id, times, TTFT and
//! end-to-end latency in ms, status, error kind and token counts). Fields are quoted as RFC 4180
//! says (`llmscope_render::csv`); an absent value is an empty field, never 0.
//!
//! Parquet is left out: the lean crates that write it still pull in arrow's columnar stack, a
//! long build on two cores for what `pandas.read_csv` already reads.

use crate::OpsError;
use llmscope_render::csv::{number, record};
use llmscope_store::{RequestRow, RunId, Store};
use std::io::Write;
use std::path::Path;

/// What an export wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exported {
    pub samples: usize,
    pub requests: usize,
}

const SERIES_HEADER: [&str; 5] = ["time", "layer", "metric", "labels", "value"];
const REQUESTS_HEADER: [&str; 11] = [
    "stage",
    "id",
    "sent_unix_s",
    "end_unix_s",
    "ttft_ms",
    "e2e_ms",
    "status",
    "error",
    "prompt_tokens",
    "output_tokens",
    "ok",
];

/// Writes `run`'s series and requests into `dir` (created when missing; refused when it holds
/// anything, so an earlier export is never overwritten unseen).
pub fn export(store: &Store, run: RunId, dir: &Path) -> Result<Exported, OpsError> {
    prepare(dir)?;
    let series = store.series(run, None)?;
    let samples = crate::analysis::write_file(&dir.join("series.csv"), |out| {
        record(out, &SERIES_HEADER)?;
        for (layer, s) in &series {
            let labels = s.key.labels.to_string();
            for p in &s.points {
                let (t, v) = (number(Some(p.t)), number(Some(p.v)));
                record(out, &[&*t, layer, &s.key.name, &labels, &v])?;
            }
        }
        Ok(())
    });
    samples?;
    let requests = store.requests(run)?;
    crate::analysis::write_file(&dir.join("requests.csv"), |out| {
        record(out, &REQUESTS_HEADER)?;
        requests.iter().try_for_each(|r| request(r, out))
    })?;
    Ok(Exported {
        samples: series.iter().map(|(_, s)| s.points.len()).sum(),
        requests: requests.len(),
    })
}

/// Creates `dir`, or refuses one that holds anything.
fn prepare(dir: &Path) -> Result<(), OpsError> {
    let path = || dir.display().to_string();
    if let Ok(entries) = std::fs::read_dir(dir) {
        let entries = entries.count();
        if entries > 0 {
            return Err(OpsError::ExportDirNotEmpty {
                path: path(),
                entries,
            });
        }
    }
    std::fs::create_dir_all(dir).map_err(|source| OpsError::Create {
        path: path(),
        source,
    })
}

/// One request as a row: times in Unix seconds, latencies in ms, absent ones empty.
fn request(r: &RequestRow, out: &mut impl Write) -> std::io::Result<()> {
    let ms = |to: u64| to.checked_sub(r.sent_unix_ns).map(|d| d as f64 / 1e6);
    let whole = |v: Option<u32>| v.map_or(String::new(), |v| v.to_string());
    record(
        out,
        &[
            r.stage.to_string(),
            r.id.to_string(),
            unix_s(r.sent_unix_ns),
            unix_s(r.end_unix_ns),
            number(r.first_token_unix_ns.and_then(ms)),
            number(ms(r.end_unix_ns)),
            r.status.map_or(String::new(), |c| c.to_string()),
            r.error.clone().unwrap_or_default(),
            whole(r.prompt_tokens),
            whole(r.output_tokens),
            r.error.is_none().to_string(),
        ],
    )
}

/// Unix nanoseconds as seconds, exactly (an f64 holds 1.7e18 ns only to 256 ns).
fn unix_s(ns: u64) -> String {
    let (s, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        return s.to_string();
    }
    let frac = format!("{frac:09}");
    format!("{s}.{}", frac.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(error: Option<&str>, first: Option<u64>) -> RequestRow {
        RequestRow {
            stage: 0,
            id: 7,
            sent_unix_ns: 1_700_000_000_000_000_000,
            end_unix_ns: 1_700_000_000_250_000_000,
            first_token_unix_ns: first,
            status: Some(200),
            error: error.map(str::to_owned),
            prompt_tokens: Some(12),
            output_tokens: None,
            record: serde_json::Value::Null,
        }
    }

    #[test]
    fn a_request_is_a_row_with_its_latencies_and_absent_values_empty() {
        let mut out = Vec::new();
        request(&row(None, Some(1_700_000_000_040_000_000)), &mut out).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert_eq!(
            line,
            "0,7,1700000000,1700000000.25,40,250,200,,12,,true\r\n"
        );
        let mut out = Vec::new();
        request(&row(Some("http_500, \"overloaded\""), None), &mut out).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(
            line.contains(",,250,200,\"http_500, \"\"overloaded\"\"\",12,,false"),
            "{line}"
        );
    }

    #[test]
    fn a_directory_with_anything_in_it_is_refused() {
        let dir = std::env::temp_dir().join(format!("llmscope-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("series.csv"), "old").unwrap();
        let err = prepare(&dir).unwrap_err().to_string();
        assert!(
            err.contains("not empty") && err.contains("1 entries"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        prepare(&dir).unwrap();
        assert!(dir.is_dir());
        std::fs::remove_dir_all(&dir).ok();
    }
}
