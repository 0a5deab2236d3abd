//! From stored series to diagnosis [`Input`]: pick each concept's metric by the catalog,
//! aggregate its series per timestamp, and say which names were used.

use super::signal::{Concept, Input, KvCacheConfig, Rejected, Signal};
use llmscope_catalog::{self as catalog, Aggregate};
use llmscope_core::series::{Point, Series};
use std::collections::BTreeMap;

/// Which metric each concept was read from (for the report and for rename findings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resolution {
    pub used: Vec<(Concept, &'static str)>,
}

/// Builds the signals of `input` from `series`; facts other than the engine's own KV-cache
/// description are left for the caller to set.
pub fn signals_from_series(series: &[Series]) -> (Input, Resolution) {
    let mut b = SignalBuilder::default();
    b.add(series);
    b.finish()
}

/// The signals of a window built one group of series at a time, so a long window is never held
/// whole: each group is folded per timestamp into running sums kept per catalogued name (a few
/// numbers per step), and [`SignalBuilder::finish`] picks each concept's name in the catalog's
/// order. Adding the series of one name in several groups gives the same result as in one, as
/// long as no series is added twice.
#[derive(Debug, Default)]
pub struct SignalBuilder {
    names: BTreeMap<&'static str, Folded>,
    kv_cache: Option<KvCacheConfig>,
    /// Per catalogued name, the samples its unit cannot take, left out.
    rejected: BTreeMap<&'static str, Rejected>,
}

/// One catalogued name's series folded per timestamp (ms): sum, max and count of finite values,
/// in time order.
#[derive(Debug, Default)]
struct Folded {
    by_t: Vec<(u64, Fold)>,
    series: u32,
}

#[derive(Debug, Clone, Copy)]
struct Fold {
    sum: f64,
    max: f64,
    n: usize,
}

impl Fold {
    fn of(v: f64) -> Fold {
        Fold {
            sum: v,
            max: v,
            n: 1,
        }
    }
}

impl Folded {
    /// Merges one series in: both sides are in time order, so this is one linear pass (the
    /// series of one scrape share their stamps, so most steps just add to an existing fold).
    fn merge(&mut self, points: &[llmscope_core::series::Point]) {
        // Milliseconds as the join key: one scrape stamps all of its series alike.
        let mut new: Vec<(u64, f64)> = points
            .iter()
            .filter(|p| p.v.is_finite())
            .map(|p| ((p.t * 1000.0).round() as u64, p.v))
            .collect();
        if !new.is_sorted_by_key(|&(ms, _)| ms) {
            new.sort_by_key(|&(ms, _)| ms);
        }
        let old = std::mem::take(&mut self.by_t);
        let mut out: Vec<(u64, Fold)> = Vec::with_capacity(old.len().max(new.len()));
        let (mut a, mut b) = (old.into_iter().peekable(), new.into_iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0 <= y.0 => a.next(),
                (Some(_), None) => a.next(),
                (_, Some(_)) => b.next().map(|(ms, v)| (ms, Fold::of(v))),
                (None, None) => break,
            };
            let Some((ms, f)) = next else { break };
            match out.last_mut() {
                Some((last, acc)) if *last == ms => {
                    acc.sum += f.sum;
                    acc.max = acc.max.max(f.max);
                    acc.n += f.n;
                }
                _ => out.push((ms, f)),
            }
        }
        self.by_t = out;
    }
}

impl SignalBuilder {
    /// Folds `series` in; names the catalog does not know are ignored.
    pub fn add(&mut self, series: &[Series]) {
        if self.kv_cache.is_none() {
            self.kv_cache = kv_cache_config(series);
        }
        for s in series.iter().filter(|s| !s.points.is_empty()) {
            let Some(def) = catalog::lookup(&s.key.name) else {
                continue;
            };
            let f = self.names.entry(def.name).or_default();
            f.series += 1;
            // NaN is the source's own word for "no value" (dropped by the fold), not bad data.
            let possible = |p: &Point| !p.v.is_finite() || def.unit.holds(p.v);
            if s.points.iter().all(possible) {
                f.merge(&s.points);
                continue;
            }
            let (kept, bad): (Vec<Point>, Vec<Point>) = s.points.iter().partition(|p| possible(p));
            f.merge(&kept);
            let r = self.rejected.entry(def.name).or_insert(Rejected {
                name: def.name,
                concept: def.concept,
                count: 0,
                lowest: f64::INFINITY,
                highest: f64::NEG_INFINITY,
                domain: def.unit.domain(),
            });
            for p in bad {
                r.count += 1;
                r.lowest = r.lowest.min(p.v);
                r.highest = r.highest.max(p.v);
            }
        }
    }

    /// The signals, which name each was read from, and the engine's KV-cache description.
    pub fn finish(self) -> (Input, Resolution) {
        let mut input = Input::default();
        input.engine.kv_cache = self.kv_cache;
        input.rejected = self.rejected.into_values().collect();
        let mut res = Resolution::default();
        let mut concepts: Vec<Concept> = catalog::METRICS.iter().map(|m| m.concept).collect();
        concepts.dedup();
        for concept in concepts {
            let Some((def, folded)) =
                catalog::candidates(concept).find_map(|def| Some((def, self.names.get(def.name)?)))
            else {
                continue;
            };
            if concept == Concept::Running {
                input.engines = folded.series;
            }
            let points = folded
                .by_t
                .iter()
                .map(|&(ms, f)| {
                    let v = match def.aggregate {
                        Aggregate::Sum => f.sum,
                        Aggregate::Max => f.max,
                        Aggregate::Mean => f.sum / f.n as f64,
                    };
                    (ms as f64 / 1000.0, v)
                })
                .collect();
            input.signals.insert(concept, Signal::new(def.name, points));
            res.used.push((concept, def.name));
        }
        (input, res)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use llmscope_core::series::{Labels, Point, SeriesKey};

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

    /// A window read one name at a time (or one pod at a time) folds to the signals the whole
    /// window gives at once.
    #[test]
    fn folding_in_groups_equals_folding_at_once() {
        let series = vec![
            s("vllm:num_requests_running", "a", &[(1.0, 3.0), (2.0, 4.0)]),
            s(
                "vllm:kv_cache_usage_perc",
                "a",
                &[(1.0, 0.2), (2.0, f64::NAN)],
            ),
            s(
                "vllm:num_requests_running",
                "b",
                &[(3.0, 1.0), (1.0, 5.0), (0.5, 2.0)],
            ),
            s("vllm:kv_cache_usage_perc", "b", &[(1.0, 0.6)]),
            s("vllm:gpu_cache_usage_perc", "b", &[(1.0, 0.5)]),
            s("not_in_the_catalog", "b", &[(1.0, 9.0)]),
        ];
        let (whole, whole_res) = signals_from_series(&series);
        let mut b = SignalBuilder::default();
        for one in series.chunks(1).rev() {
            b.add(one);
        }
        let (grouped, grouped_res) = b.finish();
        assert_eq!(grouped.signals, whole.signals);
        assert_eq!(
            whole.signals[&Concept::Running].points,
            vec![(0.5, 2.0), (1.0, 8.0), (2.0, 4.0), (3.0, 1.0)],
            "summed per timestamp, in time order, whatever order a series came in"
        );
        assert_eq!(whole.signals[&Concept::KvUsage].points, vec![(1.0, 0.6)]);
        assert_eq!(grouped.engines, 2);
        assert_eq!(grouped_res, whole_res);
        assert_eq!(
            whole.signals[&Concept::KvUsage].source,
            "vllm:kv_cache_usage_perc",
            "the catalog's order decides, not the order the names arrived in"
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
    /// (`crates/catalog/tests/fixtures/vllm-0.32.0/`; how they were made: `docs/SOURCES.md`
    /// §real-vllm).
    #[test]
    fn reads_the_kv_pool_from_cache_config_info() {
        let line = include_str!(
            "../../catalog/tests/fixtures/vllm-0.32.0/vllm-0.32.0-cpu-kv-starved.prom"
        )
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
