//! From stored series to diagnosis [`Input`]: pick each concept's metric by the catalog,
//! aggregate its series per timestamp, and say which names were used.

use super::signal::{Concept, Input, KvCacheConfig, Signal};
use crate::catalog::{self, Aggregate};
use crate::series::Series;
use std::collections::BTreeMap;

/// Which metric each concept was read from (for the report and for rename findings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resolution {
    pub used: Vec<(Concept, &'static str)>,
}

/// Builds the signals of `input` from `series`; facts are left for the caller to set.
pub fn signals_from_series(series: &[Series]) -> (Input, Resolution) {
    let mut input = Input::default();
    let mut res = Resolution::default();
    let mut concepts: Vec<Concept> = catalog::METRICS.iter().map(|m| m.concept).collect();
    concepts.dedup();
    for concept in concepts {
        for def in catalog::candidates(concept) {
            let matching: Vec<&Series> = series
                .iter()
                .filter(|s| s.key.name == def.name && !s.points.is_empty())
                .collect();
            if matching.is_empty() {
                continue;
            }
            if concept == Concept::Running {
                input.engines = matching.len() as u32;
            }
            let points = aggregate(&matching, def.aggregate);
            input.signals.insert(concept, Signal::new(def.name, points));
            res.used.push((concept, def.name));
            break;
        }
    }
    (input, res)
}

/// The KV-cache pool as the engine describes itself: vLLM's `vllm:cache_config_info` info gauge
/// carries its configuration as labels (`block_size`, `num_gpu_blocks`, `kv_cache_size_tokens`,
/// `kv_cache_memory_bytes`, …; vLLM writes `None` for an unset value). The first replica's
/// series is read: replicas of one deployment share a configuration.
pub fn kv_cache_config(series: &[Series]) -> Option<KvCacheConfig> {
    let info = series
        .iter()
        .find(|s| s.key.name == "vllm:cache_config_info")?;
    let label = |k: &str| {
        info.key
            .labels
            .get(k)
            .filter(|v| !v.is_empty() && *v != "None")
    };
    let num = |k: &str| {
        label(k)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    let config = KvCacheConfig {
        block_size: num("block_size").map(|v| v as u32),
        num_blocks: num("num_gpu_blocks").map(|v| v as u64),
        size_tokens: num("kv_cache_size_tokens")
            .map(|v| v as u64)
            .or_else(|| Some(num("num_gpu_blocks")? as u64 * num("block_size")? as u64)),
        memory_bytes: num("kv_cache_memory_bytes").map(|v| v as u64),
        max_concurrency: num("kv_cache_max_concurrency"),
        gpu_memory_utilization: num("gpu_memory_utilization"),
        prefix_caching: label("enable_prefix_caching").map(|v| v.eq_ignore_ascii_case("true")),
    };
    (config != KvCacheConfig::default()).then_some(config)
}

/// Combines series point by point at equal timestamps (one scrape of one source).
fn aggregate(series: &[&Series], how: Aggregate) -> Vec<(f64, f64)> {
    let mut by_t: BTreeMap<u64, (f64, f64, usize)> = BTreeMap::new();
    for s in series {
        for p in s.points.iter().filter(|p| p.v.is_finite()) {
            // Milliseconds as the join key: one scrape stamps all of its series alike.
            let key = (p.t * 1000.0).round() as u64;
            let e = by_t.entry(key).or_insert((0.0, f64::NEG_INFINITY, 0));
            e.0 += p.v;
            e.1 = e.1.max(p.v);
            e.2 += 1;
        }
    }
    by_t.into_iter()
        .map(|(ms, (sum, max, n))| {
            let v = match how {
                Aggregate::Sum => sum,
                Aggregate::Max => max,
                Aggregate::Mean => sum / n as f64,
            };
            (ms as f64 / 1000.0, v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{Labels, Point, SeriesKey};

    fn s(name: &str, pod: &str, pts: &[(f64, f64)]) -> Series {
        Series {
            key: SeriesKey::new(name, Labels::new([("pod".to_owned(), pod.to_owned())])),
            points: pts.iter().map(|&(t, v)| Point { t, v }).collect(),
        }
    }

    #[test]
    fn sums_running_and_maxes_kv_across_pods() {
        let series = vec![
            s("vllm:num_requests_running", "a", &[(1.0, 3.0), (2.0, 4.0)]),
            s("vllm:num_requests_running", "b", &[(1.0, 5.0)]),
            s("vllm:kv_cache_usage_perc", "a", &[(1.0, 0.2)]),
            s("vllm:kv_cache_usage_perc", "b", &[(1.0, 0.6)]),
        ];
        let (input, res) = signals_from_series(&series);
        assert_eq!(
            input.signals[&Concept::Running].points,
            vec![(1.0, 8.0), (2.0, 4.0)]
        );
        assert_eq!(input.signals[&Concept::KvUsage].points, vec![(1.0, 0.6)]);
        assert_eq!(
            input.engines, 2,
            "two replicas behind the summed running gauge"
        );
        assert!(
            res.used
                .contains(&(Concept::KvUsage, "vllm:kv_cache_usage_perc"))
        );
    }

    #[test]
    fn falls_back_to_the_old_kv_name_and_says_so() {
        let (input, res) =
            signals_from_series(&[s("vllm:gpu_cache_usage_perc", "a", &[(1.0, 0.03)])]);
        assert_eq!(
            input.signals[&Concept::KvUsage].source,
            "vllm:gpu_cache_usage_perc"
        );
        assert_eq!(
            res.used,
            vec![(Concept::KvUsage, "vllm:gpu_cache_usage_perc")]
        );
    }

    /// The labels of a real vLLM 0.32.0's `vllm:cache_config_info` (CPU build, 4 MiB KV pool),
    /// (`tests/fixtures/vllm-0.32.0/`, from `shared/reference/captures/`).
    #[test]
    fn reads_the_kv_pool_from_cache_config_info() {
        let line = include_str!("../../tests/fixtures/vllm-0.32.0/vllm-0.32.0-cpu-kv-starved.prom")
            .lines()
            .find(|l| l.starts_with("vllm:cache_config_info{"))
            .expect("the capture has cache_config_info");
        let (labels, _) = promtext_free_labels(line);
        let series = vec![Series {
            key: SeriesKey::new("vllm:cache_config_info", Labels::new(labels)),
            points: vec![Point { t: 1.0, v: 1.0 }],
        }];
        let kv = kv_cache_config(&series).unwrap();
        assert_eq!(kv.block_size, Some(128));
        assert_eq!(kv.size_tokens, Some(2048));
        assert_eq!(kv.memory_bytes, Some(4 << 20));
        assert_eq!(kv.prefix_caching, Some(true));
        assert!(kv.num_blocks.is_some() && kv.max_concurrency.is_some());
        assert_eq!(kv_cache_config(&[]), None);
    }

    /// `name{a="x",b="y"} v` → label pairs (the capture's values hold no escapes or commas).
    fn promtext_free_labels(line: &str) -> (Vec<(String, String)>, &str) {
        let (head, value) = line.rsplit_once(' ').unwrap();
        let inner = &head[head.find('{').unwrap() + 1..head.len() - 1];
        let pairs = inner
            .split("\",")
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_owned(), v.trim_matches('"').to_owned())
            })
            .collect();
        (pairs, value)
    }

    #[test]
    fn absent_metrics_make_no_signal() {
        let (input, _) = signals_from_series(&[s("vllm:num_requests_running", "a", &[])]);
        assert!(input.signals.is_empty());
    }
}
