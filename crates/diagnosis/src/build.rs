//! From stored series to diagnosis [`Input`]: pick each concept's metric by the catalog,
//! aggregate its series per timestamp, and say which names were used.

mod fleet;

use super::signal::{Concept, Input, KvCacheConfig, Rejected, Signal};
use fleet::FleetFolds;
use llmscope_catalog::{self as catalog, Aggregate, MetricDef};
use llmscope_core::series::{Point, Series};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Which metric each concept was read from (for the report and for rename findings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resolution {
    pub used: Vec<(Concept, &'static str)>,
}

/// Builds the signals of `input` from `series`; facts other than the engine's own KV-cache
/// description are left for the caller to set.
/// Each replica is kept as well ([`SignalBuilder::per_replica`]): the series are all at hand.
pub fn signals_from_series(series: &[Series]) -> (Input, Resolution) {
    let mut b = SignalBuilder::per_replica();
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
    whole: Folds,
    kv_cache: Option<KvCacheConfig>,
    /// Each replica's folds, when asked for ([`SignalBuilder::per_replica`]).
    fleet: Option<FleetFolds>,
    /// The time axes the lone series share.
    axes: Axes,
}

/// Time axes (ms stamps) shared by the series kept as they are: one scrape stamps all of a
/// replica's series alike, and a Prometheus range query all of them, so most names of most
/// replicas hold the same axis — kept once, each series keeping only its values (8 bytes a
/// point instead of 16: `diagnose --prometheus` of 100 pods × 24 h at 15 s keeps ~800 such
/// series, 74 MB with their own stamps).
#[derive(Debug, Default)]
struct Axes(Vec<Arc<[u64]>>);

/// Axes kept for sharing at most: past them a series keeps its own (still correct, less shared).
const MAX_AXES: usize = 4096;

impl Axes {
    /// The axis equal to `t`, kept once.
    fn intern(&mut self, t: Vec<u64>) -> Arc<[u64]> {
        let same = |a: &&Arc<[u64]>| {
            a.len() == t.len() && a.first() == t.first() && a.last() == t.last() && a[..] == t[..]
        };
        if let Some(a) = self.0.iter().find(same) {
            return Arc::clone(a);
        }
        let a: Arc<[u64]> = Arc::from(t);
        if self.0.len() < MAX_AXES {
            self.0.push(Arc::clone(&a));
        }
        a
    }
}

/// One catalogued name's series folded per timestamp (ms): sum, max and count of finite values,
/// in time order.
#[derive(Debug, Default)]
struct Folded {
    by_t: Stamps,
    series: u32,
}

/// The folds of one name. Most of a replica's names hold one series, whose values are their
/// own sum, max and mean: those are kept as they are, 8 bytes a point on a shared time axis
/// ([`Axes`]) instead of a fold's 32 (`diagnose --prometheus` of 100 pods × 24 h at 15 s keeps
/// ~800 of them: 37 MB instead of 147). A second series, or a stamp twice in one, turns them
/// into folds.
#[derive(Debug)]
enum Stamps {
    /// One series' finite values on its axis, each stamp once (`t` and `v` of one length).
    One {
        t: Arc<[u64]>,
        v: Vec<f64>,
    },
    Many(Vec<(u64, Fold)>),
}

impl Default for Stamps {
    fn default() -> Stamps {
        Stamps::Many(Vec::new())
    }
}

impl Stamps {
    fn len(&self) -> usize {
        match self {
            Stamps::One { v, .. } => v.len(),
            Stamps::Many(v) => v.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn folds(&self) -> impl Iterator<Item = (u64, Fold)> + '_ {
        let (t, v, many): (&[u64], &[f64], &[(u64, Fold)]) = match self {
            Stamps::One { t, v } => (t, v, &[]),
            Stamps::Many(m) => (&[], &[], m),
        };
        let one = t.iter().zip(v).map(|(&ms, &v)| (ms, Fold::of(v)));
        one.chain(many.iter().copied())
    }
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
    fn merge(&mut self, points: &[llmscope_core::series::Point], axes: &mut Axes) {
        // Milliseconds as the join key: one scrape stamps all of its series alike.
        // Sized up front: collected through a filter, it would double its way to up to twice
        // the points, and a series kept as it is keeps that slack.
        let mut new: Vec<(u64, f64)> = Vec::with_capacity(points.len());
        new.extend(
            points
                .iter()
                .filter(|p| p.v.is_finite())
                .map(|p| ((p.t * 1000.0).round() as u64, p.v)),
        );
        if !new.is_sorted_by_key(|&(ms, _)| ms) {
            new.sort_by_key(|&(ms, _)| ms);
        }
        if self.by_t.is_empty() && new.windows(2).all(|w| w[0].0 < w[1].0) {
            let t = axes.intern(new.iter().map(|&(ms, _)| ms).collect());
            let v = new.iter().map(|&(_, v)| v).collect();
            self.by_t = Stamps::One { t, v };
            return;
        }
        let len = new.len();
        self.join(new.into_iter().map(|(ms, v)| (ms, Fold::of(v))), len);
    }

    /// Joins `n` folds in time order into this one's (one linear pass), adding those that
    /// share a stamp.
    fn join(&mut self, other: impl Iterator<Item = (u64, Fold)>, n: usize) {
        let old = std::mem::take(&mut self.by_t);
        // Sized for the common case, where the series share their stamps: no regrowth (a
        // doubling Vec holds up to twice what it needs, and the replicas keep many).
        let mut out: Vec<(u64, Fold)> = Vec::with_capacity(n.max(old.len()));
        let (mut a, mut b) = (old.folds().peekable(), other.peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0 <= y.0 => a.next(),
                (Some(_), None) => a.next(),
                (_, Some(_)) => b.next(),
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
        self.by_t = Stamps::Many(out);
    }

    /// Folds another fold of the same name in (a pod's GPU series into each of its replicas).
    fn absorb(&mut self, other: &Folded) {
        self.join(other.by_t.folds(), other.by_t.len());
        self.series += other.series;
    }
}

/// The folds of one set of series: the deployment's, or one replica's.
#[derive(Debug, Default)]
struct Folds {
    names: BTreeMap<&'static str, Folded>,
    /// Per catalogued name, the samples its unit cannot take, left out.
    rejected: BTreeMap<&'static str, Rejected>,
}

impl Folds {
    fn add(&mut self, def: &'static MetricDef, s: &Series, axes: &mut Axes) {
        let f = self.names.entry(def.name).or_default();
        f.series += 1;
        // NaN is the source's own word for "no value" (dropped by the fold), not bad data.
        let possible = |p: &Point| !p.v.is_finite() || def.unit.holds(p.v);
        if s.points.iter().all(possible) {
            f.merge(&s.points, axes);
            return;
        }
        let (kept, bad): (Vec<Point>, Vec<Point>) = s.points.iter().partition(|p| possible(p));
        f.merge(&kept, axes);
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

    fn absorb(&mut self, other: &Folds) {
        for (name, f) in &other.names {
            self.names.entry(name).or_default().absorb(f);
        }
        for (name, r) in &other.rejected {
            let mine = self.rejected.entry(name).or_insert(Rejected {
                count: 0,
                lowest: f64::INFINITY,
                highest: f64::NEG_INFINITY,
                ..r.clone()
            });
            mine.count += r.count;
            mine.lowest = mine.lowest.min(r.lowest);
            mine.highest = mine.highest.max(r.highest);
        }
    }

    /// The signals, each concept read from the first of its names (in the catalog's order)
    /// that had data.
    fn finish(&self) -> (Input, Resolution) {
        let mut input = Input {
            rejected: self.rejected.values().cloned().collect(),
            ..Input::default()
        };
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
            input
                .signals
                .insert(concept, Signal::new(def.name, folded.points(def.aggregate)));
            res.used.push((concept, def.name));
        }
        (input, res)
    }
}

impl Folded {
    /// One point per timestamp, aggregated as the catalog says.
    fn points(&self, aggregate: Aggregate) -> Vec<(f64, f64)> {
        self.by_t
            .folds()
            .map(|(ms, f)| {
                let v = match aggregate {
                    Aggregate::Sum => f.sum,
                    Aggregate::Max => f.max,
                    Aggregate::Mean => f.sum / f.n as f64,
                };
                (ms as f64 / 1000.0, v)
            })
            .collect()
    }
}

impl SignalBuilder {
    /// A builder that also keeps each replica's own signals ([`Input::replicas`]) and which
    /// serving pods share a GPU ([`Input::shared_gpus`]).
    pub fn per_replica() -> SignalBuilder {
        SignalBuilder {
            fleet: Some(FleetFolds::default()),
            ..SignalBuilder::default()
        }
    }

    /// Folds `series` in; names the catalog does not know are ignored.
    pub fn add(&mut self, series: &[Series]) {
        if self.kv_cache.is_none() {
            self.kv_cache = kv_cache_config(series);
        }
        for s in series.iter().filter(|s| !s.points.is_empty()) {
            let Some(def) = catalog::lookup(&s.key.name) else {
                continue;
            };
            self.whole.add(def, s, &mut self.axes);
            if let Some(fleet) = &mut self.fleet {
                fleet.add(def, s, &mut self.axes);
            }
        }
    }

    /// The signals, which name each was read from, and the engine's KV-cache description.
    pub fn finish(self) -> (Input, Resolution) {
        let (mut input, res) = self.whole.finish();
        input.engine.kv_cache = self.kv_cache;
        if let Some(fleet) = self.fleet {
            input.shared_gpus = fleet.shared_gpus();
            input.replicas = fleet.replicas(&input.engine.kv_cache);
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

    /// A series kept as it is (the first of its name) must still fold a stamp it holds twice,
    /// and a second series must fold into it: sums add, maxima and means hold.
    #[test]
    fn a_lone_series_folds_a_repeated_stamp_and_the_next_series_in() {
        let twice = [(1.0, 3.0), (1.0, 4.0), (2.0, 1.0)];
        let (input, _) = signals_from_series(&[s("vllm:num_requests_running", "a", &twice)]);
        assert_eq!(
            input.signals[&Concept::Running].points,
            vec![(1.0, 7.0), (2.0, 1.0)]
        );
        let (input, _) = signals_from_series(&[
            s("vllm:kv_cache_usage_perc", "a", &[(1.0, 0.2), (2.0, 0.5)]),
            s("vllm:kv_cache_usage_perc", "b", &[(2.0, 0.1), (3.0, 0.4)]),
        ]);
        assert_eq!(
            input.signals[&Concept::KvUsage].points,
            vec![(1.0, 0.2), (2.0, 0.5), (3.0, 0.4)]
        );
        let per_replica = &input.replicas;
        assert_eq!(per_replica.len(), 2);
        assert_eq!(
            per_replica[1].input.signals[&Concept::KvUsage].points,
            vec![(2.0, 0.1), (3.0, 0.4)]
        );
    }

    /// Two replicas' lone series on one grid (a range query's steps) keep one time axis
    /// between them; a series on other stamps keeps its own. Their signals are as before.
    #[test]
    fn lone_series_on_one_grid_share_their_time_axis() {
        let grid = [(1.0, 2.0), (2.0, 3.0), (3.0, 4.0)];
        let mut b = SignalBuilder::per_replica();
        b.add(&[
            s("vllm:num_requests_running", "a", &grid),
            s("vllm:num_requests_waiting", "a", &grid),
            s("vllm:num_requests_running", "b", &grid),
            s("vllm:num_requests_waiting", "b", &[(1.5, 1.0), (2.5, 0.0)]),
        ]);
        let axis = |k: &str, name: &str| {
            let fleet = b.fleet.as_ref().unwrap();
            let key = fleet::engine_key(&s(name, k, &[]).key.labels);
            match &fleet.engines_of(&key).names[name].by_t {
                Stamps::One { t, .. } => Some(Arc::clone(t)),
                Stamps::Many(_) => None,
            }
        };
        let a = axis("a", "vllm:num_requests_running").unwrap();
        assert!(Arc::ptr_eq(
            &a,
            &axis("a", "vllm:num_requests_waiting").unwrap()
        ));
        assert!(Arc::ptr_eq(
            &a,
            &axis("b", "vllm:num_requests_running").unwrap()
        ));
        let own = axis("b", "vllm:num_requests_waiting").unwrap();
        assert!(!Arc::ptr_eq(&a, &own) && own[..] == [1500, 2500]);
        let (input, _) = b.finish();
        assert_eq!(
            input.signals[&Concept::Running].points,
            vec![(1.0, 4.0), (2.0, 6.0), (3.0, 8.0)]
        );
        assert_eq!(
            input.replicas[1].input.signals[&Concept::Waiting].points,
            vec![(1.5, 1.0), (2.5, 0.0)]
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

    fn labelled(name: &str, labels: &[(&str, &str)], pts: &[(f64, f64)]) -> Series {
        let pairs = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        Series {
            key: SeriesKey::new(name, Labels::new(pairs)),
            points: pts.iter().map(|&(t, v)| Point { t, v }).collect(),
        }
    }

    fn replica<'a>(input: &'a Input, pod: &str, rank: Option<&str>) -> &'a Input {
        let key = crate::signal::ReplicaKey {
            pod: pod.to_owned(),
            rank: rank.map(str::to_owned),
        };
        &input.replicas.iter().find(|r| r.key == key).unwrap().input
    }

    /// vLLM behind kube-prometheus-stack: the ServiceMonitor's target labels
    /// (`namespace,pod,container,job,instance`, `shared/reference/gpu-kueue-prom.md` on the
    /// relabel collision) and vLLM's own `engine` rank (`serving-metrics.md`, the example page:
    /// `vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"}`).
    #[test]
    fn each_pod_and_data_parallel_rank_is_a_replica_beside_the_sum() {
        let vllm = |pod, engine| {
            [
                ("namespace", "llm"),
                ("pod", pod),
                ("container", "vllm"),
                ("job", "llm/vllm"),
                ("instance", "10.0.0.7:8000"),
                ("engine", engine),
                ("model_name", "Qwen/Qwen2.5-3B-Instruct"),
            ]
        };
        let running = "vllm:num_requests_running";
        let series = vec![
            labelled(running, &vllm("vllm-a", "0"), &[(1.0, 3.0), (2.0, 4.0)]),
            labelled(running, &vllm("vllm-a", "1"), &[(1.0, 1.0), (2.0, 1.0)]),
            labelled(running, &vllm("vllm-b", "0"), &[(1.0, 5.0), (2.0, 6.0)]),
            labelled(
                "vllm:kv_cache_usage_perc",
                &vllm("vllm-b", "0"),
                &[(1.0, 0.4)],
            ),
        ];
        let (input, _) = signals_from_series(&series);
        assert_eq!(
            input.signals[&Concept::Running].points,
            vec![(1.0, 9.0), (2.0, 11.0)],
            "the deployment is still the sum"
        );
        assert_eq!(input.engines, 3);
        assert_eq!(input.replicas.len(), 3);
        let a1 = replica(&input, "vllm-a", Some("1"));
        assert_eq!(
            a1.signals[&Concept::Running].points,
            vec![(1.0, 1.0), (2.0, 1.0)]
        );
        assert_eq!(a1.engines, 1);
        let b0 = replica(&input, "vllm-b", Some("0"));
        assert_eq!(b0.signals[&Concept::KvUsage].points, vec![(1.0, 0.4)]);
        assert!(
            !replica(&input, "vllm-a", Some("0"))
                .signals
                .contains_key(&Concept::KvUsage)
        );
    }

    /// A direct scrape knows no pods: the scrape's `instance` names the replica.
    #[test]
    fn instance_names_the_replica_where_no_pod_does() {
        let running = "vllm:num_requests_running";
        let series = vec![
            labelled(running, &[("instance", "127.0.0.1:8001")], &[(1.0, 2.0)]),
            labelled(running, &[("instance", "127.0.0.1:8002")], &[(1.0, 7.0)]),
        ];
        let (input, _) = signals_from_series(&series);
        let keys: Vec<String> = input.replicas.iter().map(|r| r.key.to_string()).collect();
        assert_eq!(keys, ["127.0.0.1:8001", "127.0.0.1:8002"]);
    }

    /// One replica is the deployment: no fleet is kept, and the builder `watch` uses keeps none.
    #[test]
    fn one_replica_or_the_plain_builder_keeps_no_fleet() {
        let (one, _) = signals_from_series(&[s("vllm:num_requests_running", "a", &[(1.0, 2.0)])]);
        assert!(one.replicas.is_empty());
        let mut b = SignalBuilder::default();
        b.add(&[
            s("vllm:num_requests_running", "a", &[(1.0, 2.0)]),
            s("vllm:num_requests_running", "b", &[(1.0, 2.0)]),
        ]);
        assert!(b.finish().0.replicas.is_empty());
    }

    /// dcgm-exporter through a ServiceMonitor without `honorLabels`: the target's `pod` is the
    /// exporter's, the workload's is `exported_pod` (`gpu-kueue-prom.md`: "the workload labels
    /// are renamed exported_namespace, exported_pod, exported_container"). Scraped directly
    /// with pod mapping, dcgm writes the workload as `pod` (its sample line with
    /// `pod="openclaw-llm-6d8485c99f-vfdkm"`). Either joins that pod's replica; a GPU series
    /// naming only the exporter stays the deployment's.
    #[test]
    fn dcgm_series_join_the_replica_whose_pod_they_name() {
        let gpu = |uuid: &'static str, pod: &'static str, exported: Option<&'static str>| {
            let mut l = vec![
                ("gpu", "0"),
                ("UUID", uuid),
                ("device", "nvidia0"),
                ("modelName", "NVIDIA L4"),
                ("Hostname", "node-a"),
                ("namespace", "monitoring"),
                ("pod", pod),
                ("container", "exporter"),
                ("instance", "10.0.1.9:9400"),
            ];
            if let Some(w) = exported {
                l.extend([("exported_namespace", "llm"), ("exported_pod", w)]);
            }
            l
        };
        let util = "DCGM_FI_DEV_GPU_UTIL";
        let running = "vllm:num_requests_running";
        let series = vec![
            labelled(running, &[("pod", "vllm-a")], &[(1.0, 2.0)]),
            labelled(running, &[("pod", "vllm-b")], &[(1.0, 2.0)]),
            labelled(running, &[("pod", "vllm-c")], &[(1.0, 2.0)]),
            labelled(
                util,
                &gpu("GPU-a", "dcgm-exporter-x", Some("vllm-a")),
                &[(1.0, 40.0)],
            ),
            labelled(util, &gpu("GPU-b", "vllm-b", None), &[(1.0, 60.0)]),
            labelled(util, &gpu("GPU-c", "dcgm-exporter-x", None), &[(1.0, 90.0)]),
        ];
        let (input, _) = signals_from_series(&series);
        assert_eq!(input.replicas.len(), 3, "the exporter's pod is no replica");
        let util_of = |pod| {
            replica(&input, pod, None)
                .signals
                .get(&Concept::GpuUtil)
                .map(|s| s.points.clone())
        };
        assert_eq!(util_of("vllm-a"), Some(vec![(1.0, 40.0)]));
        assert_eq!(util_of("vllm-b"), Some(vec![(1.0, 60.0)]));
        assert_eq!(util_of("vllm-c"), None);
        assert_eq!(
            input.signals[&Concept::GpuUtil].points,
            vec![(1.0, (40.0 + 60.0 + 90.0) / 3.0)],
            "the deployment keeps every GPU"
        );
        assert!(input.shared_gpus.is_empty());
    }

    /// One UUID behind two serving pods is a shared GPU; the exporter's own pod on a GPU is
    /// not a second workload; without a UUID, `gpu` on `Hostname` names the GPU.
    #[test]
    fn a_gpu_behind_two_serving_pods_is_shared() {
        let util = "DCGM_FI_DEV_GPU_UTIL";
        let on = |uuid: &'static str, label: &'static str, pod: &'static str| {
            vec![
                ("UUID", uuid),
                ("gpu", "0"),
                ("Hostname", "node-a"),
                (label, pod),
            ]
        };
        let series = vec![
            labelled(
                "vllm:num_requests_running",
                &[("pod", "vllm-a")],
                &[(1.0, 1.0)],
            ),
            labelled(
                "vllm:num_requests_running",
                &[("pod", "vllm-b")],
                &[(1.0, 1.0)],
            ),
            labelled(util, &on("GPU-1", "exported_pod", "vllm-a"), &[(1.0, 50.0)]),
            labelled(util, &on("GPU-1", "exported_pod", "vllm-b"), &[(1.0, 50.0)]),
            labelled(util, &on("GPU-2", "exported_pod", "vllm-a"), &[(1.0, 50.0)]),
            labelled(util, &on("GPU-2", "pod", "dcgm-exporter-x"), &[(1.0, 50.0)]),
            labelled(
                util,
                &[("gpu", "3"), ("Hostname", "node-b"), ("pod", "vllm-a")],
                &[(1.0, 9.0)],
            ),
            labelled(
                util,
                &[("gpu", "3"), ("hostname", "node-b"), ("pod", "vllm-b")],
                &[(1.0, 9.0)],
            ),
        ];
        let (input, _) = signals_from_series(&series);
        let shared: Vec<(&str, Vec<&str>)> = input
            .shared_gpus
            .iter()
            .map(|g| (g.gpu.as_str(), g.pods.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            shared,
            [
                ("GPU-1", vec!["vllm-a", "vllm-b"]),
                ("gpu 3 on node-b", vec!["vllm-a", "vllm-b"]),
            ]
        );
    }

    #[test]
    fn absent_metrics_make_no_signal() {
        let (input, _) = signals_from_series(&[s("vllm:num_requests_running", "a", &[])]);
        assert!(input.signals.is_empty());
    }
}
