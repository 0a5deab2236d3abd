//! Every metric family the vLLM 0.32.0 package registers, and the twelve vLLM 0.33.0 added, are
//! in the catalog with their type, exposed at the versions that have them
//! (`docs/SOURCES.md` §vllm-0.32-source).

use llmscope_catalog::{EngineSpec, Exporter, Kind, Status, Version, families, family, resolve};
use std::collections::BTreeSet;

/// `NAME TYPE` per family, as the installed 0.32.0 package registers them (how the list was made:
/// the file's header).
const SOURCE_0_32: &str = include_str!("fixtures/vllm-0.32.0-source-names.txt");

/// The families vLLM 0.33.0 added over 0.32.0, with their types (`docs/SOURCES.md`
/// §vllm-0.32-source says where each was read).
const ADDED_0_33: [(&str, Kind); 12] = [
    ("vllm:kv_offload_config_info", Kind::Gauge),
    (
        "vllm:kv_offload_tiering_promotion_latency_seconds",
        Kind::Histogram,
    ),
    ("vllm:mooncake_bytes_transferred", Kind::Histogram),
    ("vllm:mooncake_num_descriptors", Kind::Histogram),
    ("vllm:mooncake_num_failed_recvs_total", Kind::Counter),
    ("vllm:mooncake_num_failed_transfers_total", Kind::Counter),
    ("vllm:mooncake_num_kv_expired_reqs_total", Kind::Counter),
    ("vllm:mooncake_xfer_time_seconds", Kind::Histogram),
    ("vllm:umbp_transfer_bytes_total", Kind::Counter),
    ("vllm:umbp_transfer_completed_total", Kind::Counter),
    ("vllm:umbp_transfer_failed_total", Kind::Counter),
    ("vllm:umbp_transfer_submitted_total", Kind::Counter),
];

fn source_0_32() -> Vec<(&'static str, Kind)> {
    SOURCE_0_32
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (name, kind) = l.split_once(' ').expect("NAME TYPE");
            let kind = match kind {
                "counter" => Kind::Counter,
                "gauge" => Kind::Gauge,
                "histogram" => Kind::Histogram,
                other => panic!("{name}: unexpected type {other}"),
            };
            (name, kind)
        })
        .collect()
}

fn spec(version: &str) -> EngineSpec {
    version.parse().expect("engine spec")
}

/// The catalog has `name` as a vLLM family of `kind`, and each of its sample names resolves to it
/// (what `llmscope check` looks up for a name in a query).
fn assert_catalogued(name: &str, kind: Kind) {
    let f = family(name).unwrap_or_else(|| panic!("{name} is not in the catalog"));
    assert_eq!(f.exporter, Exporter::Vllm, "{name}");
    assert_eq!(f.kind, kind, "{name}: the catalog says {}", f.kind.name());
    for sample in f.sample_names() {
        let (resolved, _) = resolve(&sample).unwrap_or_else(|| panic!("{sample} does not resolve"));
        assert_eq!(resolved.name, name, "{sample}");
    }
}

#[test]
fn every_family_of_the_0_32_source_is_catalogued_and_exposed_by_0_32() {
    let names = source_0_32();
    assert_eq!(names.len(), 126, "the fixture lost or gained lines");
    let v032 = spec("vllm@0.32.0");
    for (name, kind) in names {
        assert_catalogued(name, kind);
        let status = v032.status(family(name).unwrap());
        assert!(status.is_exposed(), "{name} is {status:?} at 0.32.0");
    }
}

#[test]
fn the_catalog_claims_no_vllm_family_at_0_32_that_its_source_lacks() {
    let source: BTreeSet<&str> = source_0_32().into_iter().map(|(n, _)| n).collect();
    let v032 = spec("vllm@0.32.0");
    let extra: Vec<&str> = families()
        .filter(|f| f.exporter == Exporter::Vllm && f.name.starts_with("vllm:"))
        .filter(|f| v032.status(f).is_exposed())
        .map(|f| f.name)
        .filter(|n| !source.contains(n))
        .collect();
    assert!(extra.is_empty(), "not registered by 0.32.0: {extra:?}");
}

#[test]
fn the_families_0_33_added_are_catalogued_from_0_33_on() {
    let (v032, v033) = (spec("vllm@0.32.0"), spec("vllm@0.33.0"));
    let source: BTreeSet<&str> = source_0_32().into_iter().map(|(n, _)| n).collect();
    for (name, kind) in ADDED_0_33 {
        assert!(!source.contains(name), "{name} is in 0.32.0 already");
        assert_catalogued(name, kind);
        let f = family(name).unwrap();
        assert_eq!(f.since, Version::new(0, 33, 0), "{name}");
        assert_eq!(v032.status(f), Status::NotYet, "{name}");
        assert_eq!(v033.status(f), Status::Present, "{name}");
        assert!(f.condition.is_some(), "{name}: a connector family");
    }
}
